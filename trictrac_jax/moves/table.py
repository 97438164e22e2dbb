"""The candidates one by one, for the programs that read each candidate's pair (the
reference's bot, the jans' pairs, the reasons a move is not allowed): unpacked from the
candidates' rows, outside the game's step.

Arrays are over the candidates in the flat order (pass, row, second slot) of `layout`:
[N, *lanes], N = 544; masks come from words with `layout.unpack`.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax.board import NUM_FIELDS
from trictrac_jax.moves.candidates import Candidates
from trictrac_jax.moves.lists import MoveLists
from trictrac_jax.moves.layout import (GRID, IS_PUISSANCE_ROW, NO_ORDER,
                                       NO_SECOND_MOVE, NUM_CANDIDATES, NUM_FIRST, NUM_PASSES,
                                       NUM_ROWS, NUM_SLOTS, PUISSANCE_ROW, REFERENCE_PASS_SIZE,
                                       REFERENCE_SECONDS, Pairs, against, unpack)


class CandidateTable(NamedTuple):
    """Each candidate's pair, one entry a candidate ([..., N, *lanes])."""

    pair: Pairs  # int8[4, N]: (from1, to1, from2, to2) as generated (0 = none / off)
    listed: Pairs  # int8[4, N]: as the reference lists it (a double exit lower field first)
    # int8[2, N]: for each move of the listed pair, the own checkers on fields up to its
    # origin before the pair (the reference numbers checkers by that count; `encode`)
    listed_ordinal: jax.Array
    order: jax.Array  # int16[N]: its place in the reference's loop (unique among valid ones)


PUISSANCE_CANDIDATE = np.zeros(GRID, bool)  # each pass's puissance candidate on the grid
PUISSANCE_CANDIDATE[:, PUISSANCE_ROW, 0] = True


def _flat(per_slot, at_puissance, lanes):
    """[2, 16, 17, *lanes] (or broadcasting to it) with the puissance candidates' values
    (broadcasting to [2, *lanes]) -> [N, *lanes]."""
    grid = jnp.broadcast_to(per_slot, GRID + lanes)
    at = jnp.broadcast_to(at_puissance, (NUM_PASSES,) + lanes).astype(grid.dtype)
    grid = jnp.where(against(PUISSANCE_CANDIDATE, lanes), at[:, None, None], grid)
    return grid.reshape((NUM_CANDIDATES,) + lanes)


def _seconds(first_move, chained, lanes):
    """[2, 16, 17, *lanes]: per (pass, row, slot) the second move's value: `first_move`
    [2, 15, *lanes] or [15, *lanes] per slot, `chained` [2, 16, *lanes] at the chained
    slot, 0 for "no second move"."""
    per_slot = jnp.broadcast_to(first_move, (NUM_PASSES, NUM_FIRST) + lanes)[:, None]
    per_slot = jnp.broadcast_to(per_slot, (NUM_PASSES, NUM_ROWS, NUM_FIRST) + lanes)
    return jnp.concatenate([per_slot.astype(chained.dtype), chained[:, :, None],
                            jnp.zeros((NUM_PASSES, NUM_ROWS, 1) + lanes, chained.dtype)], axis=2)


def candidate_table(c: Candidates) -> CandidateTable:
    """The `CandidateTable` of candidates `c` (`moves.candidates`)."""
    r = c.rows
    lanes = r.field.shape[1:]
    per_row = lambda x: jnp.broadcast_to(x, (NUM_PASSES, NUM_ROWS) + lanes)[:, :, None]
    chained_from = jnp.where(r.new_field, r.moved_to, 0).astype(jnp.int8)
    f1 = _seconds(r.second_field, chained_from, lanes)
    t1 = _seconds(r.second_to, r.chained_to.astype(jnp.int8), lanes)
    f0, t0 = per_row(r.field), per_row(r.to)
    pp = r.puis_pair.astype(jnp.int8)
    pair = jnp.stack([_flat(x, pp[k], lanes) for k, x in enumerate((f0, t0, f1, t1))])
    swapped = unpack(c.swapped)
    listed = jnp.where(swapped, pair[jnp.array([2, 3, 0, 1])], pair)
    ordinal0 = per_row(r.ordinal[:NUM_ROWS])
    ordinal1 = _seconds(r.ordinal[:NUM_FIRST], r.chained_ordinal, lanes)
    ordinal = jnp.stack([_flat(ordinal0, r.puis_ordinal[0], lanes),
                         _flat(ordinal1, r.puis_ordinal[1], lanes)]).astype(jnp.int8)
    return CandidateTable(pair, listed, jnp.where(swapped, ordinal[::-1], ordinal),
                          _reference_order(f1, lanes))


def _reference_order(second_field, lanes):
    """int16[N, *lanes]: each candidate's place in the reference's loop: per pass, per
    first slot, the second fields 1..24 then "no second move", and the puissance pair (the
    puissance row's other entries, never possible: NO_ORDER)."""
    pass_start = np.arange(NUM_PASSES, dtype=np.int16) * REFERENCE_PASS_SIZE
    first_slot = np.arange(NUM_ROWS, dtype=np.int16)[:, None]
    reference = against(pass_start[:, None, None] + first_slot * REFERENCE_SECONDS, lanes)
    no_second = against(np.arange(NUM_SLOTS) == NO_SECOND_MOVE, lanes)
    second = jnp.where(no_second, NUM_FIELDS, second_field.astype(jnp.int16) - 1)
    in_row = against(~IS_PUISSANCE_ROW[:, None], lanes)
    at_puissance = against(pass_start + REFERENCE_PASS_SIZE - 1, lanes)
    return _flat(jnp.where(in_row, reference + second, jnp.int16(NO_ORDER)), at_puissance, lanes)


def earliest_pair(lists: MoveLists) -> jax.Array:
    """int8[4, *lanes]: the listed pair of the first legal sequence in the reference's loop
    (zeros when none): what the helpless man's jan names."""
    table = candidate_table(lists.candidates)
    legal = unpack(lists.legal)
    first = legal & (table.order == jnp.min(jnp.where(legal, table.order, NO_ORDER), axis=0))
    return jnp.sum(jnp.where(first, table.listed, 0), axis=1, dtype=jnp.int8)
