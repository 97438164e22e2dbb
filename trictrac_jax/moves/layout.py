"""The candidates' layout: their grid, its flat order, and the shapes of their arrays.

A candidate is (pass p, first slot i, second slot k), p in {0, 1}, i in 0..14, k in 0..16
(see the package's docstring), or the puissance candidate of a pass. The grid has one row
more than the first slots: row 15 (`PUISSANCE_ROW`), a first slot that never holds a
checker, whose entry at second slot 0 is the pass's puissance candidate (its other entries
are never possible). Arrays over the candidates are [N, *lanes], the grid's [2, 16, 17,
*lanes] reshaped (pass, then row, then second slot); `lanes` are the trailing game axes.

The flat array is the grid reshaped so that a kernel reading both loads the same bytes at
the same index, four games a load: a puissance entry joined to each pass by a pad and a
select (or a concatenation) made XLA's GPU kernels read every flat array a byte at a time,
its address computed for each (`python -m experiments.move_kernels --joins`).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax.board import NUM_FIELDS

# Shape-named types of the candidates' arrays (all `jax.Array`; `lanes`: the games).
PerGame = jax.Array  # [*lanes]: one value a game
PerCandidate = jax.Array  # [N, *lanes]: one value a candidate, in the flat order
CandidateMask = jax.Array  # uint8[N, *lanes]: 0/1 a candidate (`as_mask`)
PerSlot = jax.Array  # [2, 16, 17, *lanes]: one value a (pass, row, second slot)
PerFirstMove = jax.Array  # [2, 16, *lanes]: one value a (pass, row): the first slots and
# the puissance row
Pairs = jax.Array  # int8[4, N, *lanes]: (from1, to1, from2, to2) a candidate, 0 = none / off

NUM_PASSES, NUM_FIRST = 2, 15
CHAINED_SLOT, NO_SECOND_MOVE = NUM_FIRST, NUM_FIRST + 1  # second slots after the 15 own fields
NUM_SLOTS = NUM_FIRST + 2
PUISSANCE_ROW = NUM_FIRST  # the grid's row after the first slots: the puissance candidate
NUM_ROWS = NUM_FIRST + 1
GRID = (NUM_PASSES, NUM_ROWS, NUM_SLOTS)  # (pass, row, second slot)
PASS_SIZE = NUM_ROWS * NUM_SLOTS
NUM_CANDIDATES = NUM_PASSES * PASS_SIZE
# The pass of each candidate in the flat order, and the puissance candidates on the grid.
PASS_OF = np.repeat(np.arange(NUM_PASSES), PASS_SIZE)
IS_PUISSANCE = np.zeros(GRID, bool)
IS_PUISSANCE[:, PUISSANCE_ROW, 0] = True
# The reference's loop runs over 24 second fields + "none" per first field, then puissance.
REFERENCE_SECONDS = NUM_FIELDS + 1
REFERENCE_PASS_SIZE = NUM_FIRST * REFERENCE_SECONDS + 1
NO_ORDER = 2**15 - 1  # after every `Candidates.order` (int16)


def lanes_of(x, structure_ndim):
    return x.shape[structure_ndim:]


def as_mask(x) -> CandidateMask:
    """A candidate mask as uint8 0/1. Masks stay bytes from here on (combined with & | ^,
    reduced with max): XLA's CPU loops vectorise byte arrays, not bool ones."""
    return jnp.asarray(x).astype(jnp.uint8)


def mask_not(mask):
    return mask ^ 1


def other_pass(x: PerCandidate) -> PerCandidate:
    """[N, *lanes]: each candidate's value at its twin, the same slots in the other pass."""
    per_pass = x.reshape((NUM_PASSES, PASS_SIZE) + x.shape[1:])
    return per_pass[::-1].reshape(x.shape)


def transposed(grid: PerSlot) -> PerSlot:
    """[2, 16, 17, *lanes] -> the same: the value of the candidate with first and second
    slots swapped (False where either is no first slot: second slots >= 15, the puissance
    row)."""
    inner = jnp.swapaxes(grid[:, :NUM_FIRST, :NUM_FIRST], 1, 2)
    pad = [(0, 0)] * grid.ndim
    pad[1], pad[2] = (0, NUM_ROWS - NUM_FIRST), (0, NUM_SLOTS - NUM_FIRST)
    return jnp.pad(inner, pad)


def to_flat(per_slot: PerSlot, per_pass) -> PerCandidate:
    """[2, 16, 17, *lanes] per (pass, row, second slot) + per pass ([2, *lanes] or
    broadcasting to it: the puissance candidates' values) -> [N, *lanes]."""
    lanes = lanes_of(per_slot, 3)
    per_pass = jnp.broadcast_to(per_pass, (NUM_PASSES,) + lanes).astype(per_slot.dtype)
    grid = jnp.where(A.leading(IS_PUISSANCE, len(lanes)), per_pass[:, None, None], per_slot)
    return grid.reshape((NUM_CANDIDATES,) + lanes)


def to_slots(flat: PerCandidate) -> tuple[PerSlot, jax.Array]:
    """Inverse of `to_flat`: [N, *lanes] -> ([2, 16, 17, *lanes], [2, *lanes])."""
    grid = flat.reshape(GRID + lanes_of(flat, 1))
    return grid, grid[:, PUISSANCE_ROW, 0]


def per_first(x):
    """[2, 16, *lanes] per row -> [2, 16, 1, *lanes], against the second slots."""
    return x[:, :, None]


def each_second(x: PerFirstMove, lanes) -> PerSlot:
    """[2, 16, *lanes] per row -> [2, 16, 17, *lanes]: the same for each second slot."""
    return jnp.broadcast_to(per_first(x), GRID + lanes)


def per_second(x):
    """[2, 17, *lanes] per second slot -> [2, 1, 17, *lanes], against the rows."""
    return x[:, None]


def in_first_pass(like):
    """uint8[N, 1, ...]: the candidates of the first pass (bigger die first), to broadcast
    against `like` [N, *lanes]."""
    return as_mask(A.leading(PASS_OF == 0, like.ndim - 1))

