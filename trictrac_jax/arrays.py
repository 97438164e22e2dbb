"""Array helpers shared by the rules, written for XLA's CPU loops (no rules here).

Arrays have a structure axis first (fields, passes, ...) and trailing `lanes` axes (none
for one position, the games when the rules run game-minor: see lowering.py).

Substitutes for what XLA's CPU backend runs slowly, kept under every lowering (the GPU
program was measured and estimated with them; lowering.py switches what differs by backend).
On game-minor arrays, on the CPU:

* `jnp.cumsum` is a reduce-window there, quadratic in the axis' length: `prefix_sum`;
* `jnp.argmax` is a two-operand reduction, slower than a min over field numbers:
  `board.lowest_field`, `board.highest_field`;
* a gather is slower than a select over the possible shifts (the checkers 1..6 fields
  ahead, per die): `board.ahead`;
* a small reduction read by several fusions becomes an array of its own: `fold`.

On a GPU, with the games first, an array of a game's few values (24 fields, a stack of two
or three) is often a kernel of its own, one thread a game: values that a game's thread can
compute in its reader's kernel are written field by field (running counts in
`board.checker_field`, `kth_true_by_words`; `stack_rows`).

A random index (the dice's) is one 32-bit draw (`uniform_below`): `jax.random.randint`
hashes three times a draw, kernels of their own on a GPU at large batches.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def leading(values, ndim):
    """`values` with `ndim` trailing unit axes, to broadcast over that many trailing (game)
    axes."""
    values = jnp.asarray(values)
    return values.reshape(values.shape + (1,) * ndim)


def spread(table, index):
    """`table` [n, *lanes] as [n, 1, ..., 1, *lanes] against `index` [..., *lanes]."""
    extra = index.ndim - (table.ndim - 1)
    return table.reshape(table.shape[:1] + (1,) * extra + table.shape[1:])


def fold(op, x, axis: int = 0):
    """`x` reduced along `axis` by the associative binary `op`, unrolled into elementwise
    operations on its slices rather than a reduction: halves combined, then halves of the
    result, ... (about 2 log2(n) operations to trace and compile, not 2n). For the small
    axes of one game's values: XLA fuses elementwise operations into whatever reads them,
    where a reduction's result often becomes an array (and a GPU kernel) of its own."""
    part = lambda start, stop: jax.lax.slice_in_dim(x, start, stop, axis=axis)
    leftovers = []
    while x.shape[axis] > 1:
        n, half = x.shape[axis], x.shape[axis] // 2
        if n % 2:
            leftovers.append(part(n - 1, n))
        x = op(part(0, half), part(half, 2 * half))
    for rest in leftovers:
        x = op(x, rest)
    return jnp.squeeze(x, axis)


# Longest axis that `prefix_sum` sums as a triangle: the 24 fields.
TRIANGLE_MAX = 24


def prefix_sum(values, axis: int = 0):
    """The sum of values[..0..i..] along `axis` for each i (an inclusive `jnp.cumsum`).

    An axis of up to TRIANGLE_MAX entries (the fields) is summed over a triangle, one
    elementwise select and sum that XLA fuses into the loops reading it; a longer one (514
    actions, a batch's games) by an associative scan, since the triangle grows as the
    square of the length (at the fields' 24 entries both run about as fast).
    """
    n = values.shape[axis]
    if n > TRIANGLE_MAX:
        return jax.lax.associative_scan(jnp.add, values, axis=axis)
    values = jnp.moveaxis(values, axis, 0)
    below = leading(np.tril(np.ones((n, n), bool)), values.ndim - 1)  # [i, j]: j <= i
    summed = jnp.sum(jnp.where(below, values[None], 0), axis=1, dtype=values.dtype)
    return jnp.moveaxis(summed, 0, axis)


def kth_true_counted(mask, k):
    """int32[*lanes]: the index of the (k + 1)-th True of bool[n, *lanes] along its first
    axis (n if there is none), k int32[*lanes]: the running count of Trues, then the
    entries where it has not passed k (it never decreases)."""
    count = prefix_sum(mask.astype(jnp.int16), axis=0)
    return jnp.sum(count <= k, axis=0).astype(jnp.int32)


WORD_BITS = 32


def word_of(bits, axis):
    """uint32[...]: bool `bits` packed along `axis` (bit k = entry k; at most 32)."""
    shape = [1] * bits.ndim
    shape[axis] = bits.shape[axis]
    weights = (np.uint32(1) << jnp.arange(bits.shape[axis], dtype=jnp.uint32)).reshape(shape)
    return jnp.sum(jnp.where(bits, weights, np.uint32(0)), axis=axis, dtype=jnp.uint32)


def true_words(mask):
    """uint32[ceil(n / 32), *lanes]: bool[n, *lanes] packed 32 entries a word."""
    n, lanes = mask.shape[0], mask.shape[1:]
    num_words = -(-n // WORD_BITS)
    bits = jnp.pad(mask, [(0, num_words * WORD_BITS - n)] + [(0, 0)] * len(lanes))
    return word_of(bits.reshape((num_words, WORD_BITS) + lanes), 1)


def count_true_by_words(mask):
    """int32[*lanes]: the Trues of bool[n, *lanes], counted on its `true_words`."""
    counts = jax.lax.population_count(true_words(mask)).astype(jnp.int32)
    return fold(jnp.add, counts)


def kth_true_by_words(mask, k):
    """`kth_true_counted` through words of 32 entries: the mask packed into ceil(n / 32)
    words, the word holding the wanted True found by a running count of their set bits,
    word by word, then its bit by halving the word five times. A few operations a game on
    17 words (514 entries), which a GPU runs with one thread a game in one kernel, where a
    running count over the n entries takes a scan."""
    n, lanes = mask.shape[0], mask.shape[1:]
    words = true_words(mask)
    num_words = words.shape[0]
    k = jnp.asarray(k, jnp.int32)
    shape = jnp.broadcast_shapes(lanes, k.shape)
    index, rank = jnp.full(shape, num_words, jnp.int32), k
    word, seen = jnp.zeros(shape, jnp.uint32), jnp.zeros(shape, jnp.int32)
    for w in range(num_words):
        count = jax.lax.population_count(words[w]).astype(jnp.int32)
        here = (index == num_words) & (seen + count > k)  # the first word reaching past k
        index, rank = jnp.where(here, w, index), jnp.where(here, k - seen, rank)
        word, seen = jnp.where(here, words[w], word), seen + count
    bit = jnp.zeros_like(index)
    for width in (16, 8, 4, 2, 1):
        low = (word >> bit.astype(jnp.uint32)) & np.uint32((1 << width) - 1)
        low = jax.lax.population_count(low).astype(jnp.int32)
        beyond = rank >= low
        bit, rank = bit + jnp.where(beyond, width, 0), rank - jnp.where(beyond, low, 0)
    return jnp.where(index < num_words, index * WORD_BITS + bit, n).astype(jnp.int32)


def stack_rows(values):
    """`jnp.stack(values)` [n, *lanes] of arrays of one shape, written as selects on the row
    number: XLA fuses them into each kernel that reads a row, where on a GPU a stack of a
    game's few values is a kernel of its own (one thread a game)."""
    values = [jnp.asarray(v) for v in values]
    shape = jnp.broadcast_shapes(*(v.shape for v in values))
    row = leading(np.arange(len(values)), len(shape))
    out = jnp.broadcast_to(values[-1], shape)[None]
    for i in range(len(values) - 2, -1, -1):
        out = jnp.where(row == i, values[i][None], out)
    return out


def of_colour(values, colour):
    """`values[colour]` of a per-colour pair `values` [2, ...] and a colour 0 or 1, as a
    select: under `jax.vmap` an index read is a gather, whose indices XLA's GPU backend
    builds in a kernel of their own; a select fuses into the kernels that read it."""
    return jnp.where(colour == 0, values[0], values[1])


def select_tree(pred, on_true, on_false):
    """The pytree `on_true` where `pred`, else `on_false`: `pred` bool[*batch] against leaves
    [*batch, ...] (a scalar for one game, [B] for a batch)."""
    pred = jnp.asarray(pred)
    pick = lambda x, y: jnp.where(pred.reshape(pred.shape + (1,) * (x.ndim - pred.ndim)), x, y)
    return jax.tree.map(pick, on_true, on_false)


def uniform_below(key, n):
    """int32: an integer uniform over 0..n-1 (0 if n is 0), from one 32-bit draw of `key`:
    the high word of draw x n, in 16-bit halves (n below 2**16), each outcome's probability
    within 2**-32 of 1 / n."""
    return _high_word_of_product(jax.random.bits(key, (), jnp.uint32), n)


def _high_word_of_product(draw, n):
    """int32: floor(draw x n / 2**32) of uint32 `draw` and n below 2**16, in 32 bits."""
    n = jnp.asarray(n).astype(jnp.uint32)
    high = (draw >> 16) * n + (((draw & 0xFFFF) * n) >> 16)
    return (high >> 16).astype(jnp.int32)
