"""The candidates' layout: one 32-bit word a (pass, row), bit k for second slot k.

A candidate is (pass p, row i, second slot k), p in {0, 1}, i in 0..15, k in 0..16 (see
the package's docstring); row 15 (`PUISSANCE_ROW`), a first slot that never holds a
checker, holds each pass's puissance candidate at bit 0 (its other bits are never set).
A set of candidates, or a fact about them, is a `RowWords`, uint32[2, 16, *lanes]: bit k
of word (p, i) is candidate (p, i, k)'s. So a set is 128 bytes a game where a byte a
candidate is 544, sets combine with & | ~, "some candidate of a set" is an OR of its 32
words, and the reference's loop order is the rows' order, then the slots' within a row.

Constants here are numpy arrays over the structure axes only; `against(x, lanes)` gives
them the trailing unit axes of `lanes` (the games) to broadcast.

Tools that read candidates one at a time unpack a set (`unpack`) to the flat order
(pass, row, second slot): [N, *lanes], N = 544 (`moves.table`).
"""
from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax.board import NUM_FIELDS
from trictrac_jax.arrays import word_of
from trictrac_jax.lowering import any_nonzero

# Shape-named types (all `jax.Array`; `lanes`: the games' trailing axes, none for one).
RowWords = jax.Array  # uint32[2, 16, *lanes]: bit k of (p, i) is candidate (p, i, k)
PerRow = jax.Array  # [2, 16, *lanes]: one value a (pass, row)
PerSlot = jax.Array  # [15, *lanes]: one value a second slot that is an own field
PerGame = jax.Array  # [*lanes]
CandidateMask = jax.Array  # bool[N, *lanes]: one entry a candidate, flat order (tools)
Pairs = jax.Array  # int8[4, N, *lanes]: (from1, to1, from2, to2) a candidate, 0 = none / off

U32 = jnp.uint32
NUM_PASSES, NUM_FIRST = 2, 15
CHAINED_SLOT, NO_SECOND_MOVE = NUM_FIRST, NUM_FIRST + 1  # second slots after the 15 own fields
NUM_SLOTS = NUM_FIRST + 2
PUISSANCE_ROW = NUM_FIRST  # the row after the first slots: the puissance candidate (bit 0)
NUM_ROWS = NUM_FIRST + 1
GRID = (NUM_PASSES, NUM_ROWS, NUM_SLOTS)  # (pass, row, second slot)
PASS_SIZE = NUM_ROWS * NUM_SLOTS
NUM_CANDIDATES = NUM_PASSES * PASS_SIZE
PASS_OF = np.repeat(np.arange(NUM_PASSES), PASS_SIZE)  # each candidate's pass, flat order
# The reference's loop runs over 24 second fields + "none" per first field, then puissance.
REFERENCE_SECONDS = NUM_FIELDS + 1
REFERENCE_PASS_SIZE = NUM_FIRST * REFERENCE_SECONDS + 1
NO_ORDER = 2**15 - 1  # after every candidate's place in the reference's loop (int16)

# Words over the structure axes (numpy: no JAX computation at import).
ALL = np.uint32((1 << NUM_SLOTS) - 1)  # every second slot
FIRST_SLOTS = np.uint32((1 << NUM_FIRST) - 1)  # the second slots that are own fields
CHAINED = np.uint32(1 << CHAINED_SLOT)
NO_SECOND = np.uint32(1 << NO_SECOND_MOVE)
_ROWS = np.arange(NUM_ROWS)
IS_PUISSANCE_ROW = _ROWS == PUISSANCE_ROW  # [16]
ROW_BIT = np.where(_ROWS < NUM_FIRST, 1 << np.minimum(_ROWS, 31), 0).astype(np.uint32)  # [16]:
# the bit of the row's own field as a second slot
BELOW_ROW = np.where(ROW_BIT > 0, ROW_BIT - 1, 0).astype(np.uint32)  # [16]: slots k < i
FULL = np.where(IS_PUISSANCE_ROW, 1, ALL & ~NO_SECOND).astype(np.uint32)  # [16]: two moves
# (every slot but "no second move"; the puissance pair)
SINGLE = np.where(IS_PUISSANCE_ROW, 0, NO_SECOND).astype(np.uint32)  # [16]: a move alone
FIRST_PASS = np.array([[ALL], [0]], np.uint32)  # [2, 1]: the bigger die first
IS_FULL = ((np.broadcast_to(FULL, GRID[:2])[:, :, None] >> np.arange(NUM_SLOTS)) & 1
           ).reshape(-1) == 1  # bool[N]: FULL, one entry a candidate


class PassTile:
    """A set's words inside a kernel (`moves.tiles`) over a tile of games: one value a pass,
    uint32[games, 16] (row i in column i), or what broadcasts to it (a game's flag
    [games, 1], a rows' constant [1, 16], a scalar). The kernel's threads share a pass's
    words, so the lists' rules read as on `RowWords`: `&`, `|`, `~` per pass, and the
    helpers below (`other_pass`, `pass_rows`, ...) swap or pick whole values."""

    __array_ufunc__ = None  # numpy operands defer to PassTile's operators

    def __init__(self, first, second):
        self.passes = (first, second)

    @classmethod
    def constant(cls, x) -> "PassTile":
        """A structure-axes constant (a scalar, [16] rows, [2, 1] or [2, 16] a pass's)."""
        x = np.asarray(x)
        if x.ndim == 2:
            return cls(*(_rows_value(x[p]) for p in range(NUM_PASSES)))
        return cls(*(_rows_value(x),) * NUM_PASSES)

    def map(self, fn, *others) -> "PassTile":
        """`fn` pass by pass over this tile and `others` (tiles, flags or scalars)."""
        return PassTile(*(fn(*(_pass_value(x, p) for x in (self, *others)))
                          for p in range(NUM_PASSES)))


def _pass_value(x, p: int):
    """Pass `p`'s value of a tile; a flag or scalar is the same for both passes."""
    return x.passes[p] if isinstance(x, PassTile) else x


def _rows_value(values: np.ndarray):
    """uint32[1, 16] of a [16] numpy constant built in the kernel (which captures no
    arrays): a select on a bit mask of its rows for each distinct value; a scalar as is."""
    values = values.astype(np.uint32) if values.dtype.kind in "ui" else values
    if values.ndim == 0 or values.shape[0] == 1:
        return values.reshape(())[()]
    row = jax.lax.broadcasted_iota(U32, (1, values.shape[0]), 1)
    out = jnp.zeros((1, values.shape[0]), values.dtype)
    for value in np.unique(values[values != 0]):
        rows = np.uint32(sum(1 << int(j) for j in np.flatnonzero(values == value)))
        out = jnp.where(((rows >> row) & 1) == 1, value, out)
    return out


for _name in ("and", "or", "xor", "rshift", "lshift", "ne", "eq"):
    _op = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(PassTile, f"__{_name}__", (lambda op: lambda s, o: s.map(op, o))(_op))
    if _name not in ("ne", "eq"):
        setattr(PassTile, f"__r{_name}__", (lambda op: lambda s, o: s.map(
            lambda a, b: op(b, a), o))(_op))
PassTile.__invert__ = lambda s: s.map(operator.invert)
IN_TILE = ("tile",)  # `lanes_of` a PassTile: constants `against` it are PassTiles


def against(x, lanes):
    """A structure-axes constant `x` with the unit axes of `lanes` after it (a PassTile's
    constant in a tile)."""
    if lanes == IN_TILE:
        return PassTile.constant(x)
    return A.leading(np.asarray(x), len(lanes))


def lanes_of(words: RowWords):
    return IN_TILE if isinstance(words, PassTile) else words.shape[2:]


def select(cond, a: RowWords, b: RowWords) -> RowWords:
    """Words `a` where `cond` (a game's flag), else `b`."""
    if isinstance(a, PassTile) or isinstance(b, PassTile):
        return PassTile(*(jnp.where(cond, _pass_value(a, p), _pass_value(b, p))
                          for p in range(NUM_PASSES)))
    return jnp.where(cond, a, b)


def other_pass(words: RowWords) -> RowWords:
    """The words of each candidate's twin: the same rows and slots in the other pass."""
    if isinstance(words, PassTile):
        return PassTile(*words.passes[::-1])
    return words[::-1]


def pass_rows(words: RowWords, p: int) -> RowWords:
    """Pass `p`'s words against both passes ([1, 16, *lanes])."""
    if isinstance(words, PassTile):
        return PassTile(words.passes[p], words.passes[p])
    return words[p][None]


def by_pass(first: RowWords, second: RowWords) -> RowWords:
    """uint32[2, 16, *lanes]: pass 0's words from `first`, pass 1's from `second` (each
    [1, 16, *lanes], `pass_rows`). A stack of rows written as selects (`arrays.stack_rows`):
    on a GPU a stack is a kernel of its own."""
    if isinstance(first, PassTile):
        return PassTile(first.passes[0], second.passes[0])
    return A.stack_rows([first[0], second[0]])


def either_pass(words: RowWords) -> RowWords:
    """[1, 16, *lanes]: a candidate's bit set in either pass, against both passes."""
    if isinstance(words, PassTile):
        both = words.passes[0] | words.passes[1]
        return PassTile(both, both)
    return (words[0] | words[1])[None]


def keep(cond, word):
    """`word` where `cond`, else 0 (they broadcast together)."""
    return jnp.where(cond, word, U32(0))


def any_set(words: RowWords) -> PerGame:
    """bool[*lanes]: some bit of `words` is set (over the 32 words as the lowering reduces
    them: `lowering.any_nonzero`; in a tile, [games, 1])."""
    if isinstance(words, PassTile):
        first, second = (jnp.max(jnp.broadcast_to(w, (jnp.shape(w)[0], NUM_ROWS)), axis=1,
                                  keepdims=True) for w in words.passes)
        return (first | second) != 0
    return any_nonzero(words.reshape((-1,) + lanes_of(words)))


def count_set(words: RowWords) -> PerGame:
    """int32[*lanes]: how many bits of `words` are set."""
    return jnp.sum(jax.lax.population_count(words), axis=(0, 1), dtype=jnp.int32)


def transposed(words: RowWords) -> RowWords:
    """uint32[2, 16, *lanes]: bit k of row i is bit i of row k, for own fields i, k < 15
    (the candidate with its first and second slots swapped; nothing elsewhere). In a tile,
    a sum over [games, 16 (i), 16 (k)] bits: a kernel moves no value across its threads
    but by a reduction."""
    if isinstance(words, PassTile):
        i = jax.lax.broadcasted_iota(U32, (1, NUM_ROWS, 1), 1)
        k = jax.lax.broadcasted_iota(U32, (1, 1, NUM_ROWS), 2)
        own = (i < NUM_FIRST) & (k < NUM_FIRST)
        return PassTile(*(jnp.sum(jnp.where(own, ((w[:, None, :] >> i) & 1) << k, U32(0)),
                                  axis=2) for w in words.passes))
    lanes = lanes_of(words)
    shifts = jnp.arange(NUM_FIRST, dtype=U32).reshape((1, 1, NUM_FIRST) + (1,) * len(lanes))
    bits = (words[:, :NUM_FIRST, None] >> shifts) & 1  # [2, 15 (k), 15 (i), *lanes]
    rows = word_of(bits > 0, 1)  # [2, 15 (i), *lanes]
    return jnp.pad(rows, [(0, 0), (0, NUM_ROWS - NUM_FIRST)] + [(0, 0)] * len(lanes))


def second_move_word(per_slot, at_chained):
    """uint32[2, 16 or 1, *lanes]: the candidates whose second move has a fact: bit k < 15
    from `per_slot`, bool[2, 15, *lanes] (per pass) or [15, *lanes] (both passes); bit 15
    (the chained slot) from `at_chained`, bool[2, 16, *lanes] (per row)."""
    lanes = at_chained.shape[2:]
    word = word_of(per_slot, per_slot.ndim - 1 - len(lanes))
    if word.ndim > len(lanes):  # per pass: against the rows
        word = word[:, None]
    return word | keep(at_chained, CHAINED)


def slot_bit(occupied_fields, field):
    """uint32[...]: the bit of the second slot holding `field` (int, 0..24), 0 when no own
    checker is there; `occupied_fields`: bit f - 1 set for each own field f."""
    f = jnp.clip(field, 1, NUM_FIELDS).astype(U32)
    below = occupied_fields & ((U32(1) << f - 1) - 1)
    held = (field > 0) & (((occupied_fields >> (f - 1)) & 1) == 1)
    return keep(held, U32(1) << jax.lax.population_count(below))


def slots_below(occupied_fields, field):
    """uint32[...]: the bits of the second slots whose field is below `field` (1..24)."""
    f = jnp.clip(field, 1, NUM_FIELDS).astype(U32)
    return (U32(1) << jax.lax.population_count(occupied_fields & ((U32(1) << f - 1) - 1))) - 1


def unpack(words: RowWords) -> CandidateMask:
    """bool[N, *lanes]: the candidates of `words`, in the flat order (pass, row, slot)."""
    lanes = lanes_of(words)
    shifts = jnp.arange(NUM_SLOTS, dtype=U32).reshape((1, 1, NUM_SLOTS) + (1,) * len(lanes))
    return ((words[:, :, None] >> shifts) & 1).reshape((NUM_CANDIDATES,) + lanes) == 1


def pack(mask: CandidateMask) -> RowWords:
    """uint32[2, 16, *lanes]: the inverse of `unpack`."""
    return word_of(mask.reshape(GRID + mask.shape[1:]) > 0, 2)
