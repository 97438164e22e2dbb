"""The candidates' layout: their grid, its flat order, and the shapes of their arrays.

A candidate is (pass p, first slot i, second slot k), p in {0, 1}, i in 0..14, k in 0..16
(see the package's docstring); each pass ends with the puissance candidate. Arrays over the
candidates are [N, *lanes] in the flat order (pass, then first slot, then second slot, then
puissance), or [2, 15, 17, *lanes] on the grid; `lanes` are the trailing game axes.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax.board import NUM_FIELDS
from trictrac_jax.lowering import append

# Shape-named types of the candidates' arrays (all `jax.Array`; `lanes`: the games).
PerGame = jax.Array  # [*lanes]: one value a game
PerCandidate = jax.Array  # [N, *lanes]: one value a candidate, in the flat order
CandidateMask = jax.Array  # uint8[N, *lanes]: 0/1 a candidate (`as_mask`)
PerSlot = jax.Array  # [2, 15, 17, *lanes]: one value a (pass, first slot, second slot)
PerFirstMove = jax.Array  # [2, 15, *lanes]: one value a (pass, first slot)
Pairs = jax.Array  # int8[4, N, *lanes]: (from1, to1, from2, to2) a candidate, 0 = none / off

NUM_PASSES, NUM_FIRST = 2, 15
CHAINED_SLOT, NO_SECOND_MOVE = NUM_FIRST, NUM_FIRST + 1  # second slots after the 15 own fields
NUM_SLOTS = NUM_FIRST + 2
GRID = (NUM_PASSES, NUM_FIRST, NUM_SLOTS)  # (pass, first slot, second slot)
PASS_SIZE = NUM_FIRST * NUM_SLOTS + 1  # + the puissance candidate of the pass
NUM_CANDIDATES = NUM_PASSES * PASS_SIZE
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
    """[2, 15, 17, *lanes] -> the same: the value of the candidate with first and second
    slots swapped (False for second slots >= 15, which are no first slot)."""
    inner = jnp.swapaxes(grid[:, :, :NUM_FIRST], 1, 2)
    pad = [(0, 0)] * grid.ndim
    pad[2] = (0, NUM_SLOTS - NUM_FIRST)
    return jnp.pad(inner, pad)


def to_flat(per_slot: PerSlot, per_pass) -> PerCandidate:
    """[2, 15, 17, *lanes] per (pass, first slot, second slot) + per pass ([2, *lanes] or
    broadcasting to it) -> [N, *lanes]."""
    lanes = lanes_of(per_slot, 3)
    per_pass = jnp.broadcast_to(per_pass, (2,) + lanes).astype(per_slot.dtype)
    body = per_slot.reshape((2, NUM_FIRST * NUM_SLOTS) + lanes)
    return append(body, per_pass[:, None], axis=1).reshape((NUM_CANDIDATES,) + lanes)


def to_slots(flat: PerCandidate) -> tuple[PerSlot, jax.Array]:
    """Inverse of `to_flat`: [N, *lanes] -> ([2, 15, 17, *lanes], [2, *lanes])."""
    lanes = lanes_of(flat, 1)
    per_pass = flat.reshape((2, PASS_SIZE) + lanes)
    return per_pass[:, :-1].reshape(GRID + lanes), per_pass[:, -1]


def per_first(x):
    """[2, 15, *lanes] per first move -> [2, 15, 1, *lanes], against the second slots."""
    return x[:, :, None]


def each_second(x: PerFirstMove, lanes) -> PerSlot:
    """[2, 15, *lanes] per first move -> [2, 15, 17, *lanes]: the same for each second slot."""
    return jnp.broadcast_to(per_first(x), GRID + lanes)


def per_second(x):
    """[2, 17, *lanes] per second slot -> [2, 1, 17, *lanes], against the first moves."""
    return x[:, None]


def in_first_pass(like):
    """uint8[N, 1, ...]: the candidates of the first pass (bigger die first), to broadcast
    against `like` [N, *lanes]."""
    return as_mask(A.leading(np.arange(NUM_CANDIDATES) < PASS_SIZE, like.ndim - 1))

