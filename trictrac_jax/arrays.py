"""Array helpers shared by the rules, written for XLA's CPU loops (no rules here).

Arrays have a structure axis first (fields, candidates, ...) and trailing `lanes` axes (none
for one position, the games when the rules run game-minor: see lanes.py).
"""
from __future__ import annotations

import functools

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
    """`x` reduced along `axis` by the binary `op`, unrolled: n - 1 elementwise operations
    on its slices rather than a reduction. For the small axes of one game's values: XLA
    fuses elementwise operations into whatever reads them, where a reduction's result
    often becomes an array (and a GPU kernel) of its own."""
    index = lambda i: (slice(None),) * axis + (i,)
    return functools.reduce(op, [x[index(i)] for i in range(x.shape[axis])])


def prefix_sum(values):
    """values [n, *lanes] -> [n, *lanes]: the sum of values[0..i] for each i.

    A sum over a triangle rather than `cumsum`, which XLA's CPU backend runs as a slow
    reduce-window.
    """
    n = values.shape[0]
    below = leading(np.tril(np.ones((n, n), bool)), values.ndim - 1)  # [i, j]: j <= i
    return jnp.sum(jnp.where(below, values[None], 0), axis=1, dtype=values.dtype)


def any_each(masks):
    """For each of up to 32 masks [N, *lanes] (bool or 0/1 integers), whether any of its N
    entries is set: bool[*lanes] each, from one pass over N (mask k is bit k of an
    unsigned integer, OR-reduced) where separate reductions would each read N again."""
    dtype = next(t for t in (jnp.uint8, jnp.uint16, jnp.uint32)
                 if len(masks) <= 8 * jnp.dtype(t).itemsize)
    bits = sum(m.astype(dtype) << dtype(k) for k, m in enumerate(masks))
    found = jax.lax.reduce(bits, dtype(0), jax.lax.bitwise_or, (0,))
    return [(found >> dtype(k)) & 1 != 0 for k in range(len(masks))]


def select_tree(pred, on_true, on_false):
    """The pytree `on_true` where `pred`, else `on_false`: `pred` bool[*batch] against leaves
    [*batch, ...] (a scalar for one game, [B] for a batch)."""
    pred = jnp.asarray(pred)
    pick = lambda x, y: jnp.where(pred.reshape(pred.shape + (1,) * (x.ndim - pred.ndim)), x, y)
    return jax.tree.map(pick, on_true, on_false)
