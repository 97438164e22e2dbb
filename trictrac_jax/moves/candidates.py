"""The candidate set: every move pair the reference's loops could list for one position and
roll, with the facts about it that the lists read (`Candidates`).

What every candidate reads about the position (`position`) and the first moves are
`lowering.materialised`, as are the candidates themselves: computed once, not in each loop
that reads them. Everything is on the mover's view board (board.py).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax import board as B
from trictrac_jax.board import LAST_QUARTER, NO_FIELD, NUM_FIELDS, OFF, OPP_CORNER, OWN_CORNER
from trictrac_jax.lowering import lookup, materialised, materialising
from trictrac_jax.moves.layout import (CHAINED_SLOT, GRID, NO_ORDER, NO_SECOND_MOVE, NUM_FIRST,
                                       NUM_PASSES, NUM_ROWS, NUM_SLOTS, PUISSANCE_ROW,
                                       REFERENCE_PASS_SIZE, REFERENCE_SECONDS,
                                       CandidateMask, Pairs, PerCandidate, PerFirstMove, PerSlot,
                                       as_mask, each_second, lanes_of, other_pass, per_first,
                                       per_second, to_flat)


def _quarter_of(field):
    """bool[4, ...]: the quarter of each field (none for 0), by comparisons (no division)."""
    starts = A.leading(6 * np.arange(4), field.ndim).astype(field.dtype)
    return (field[None] > starts) & (field[None] <= starts + 6)


# --- what the candidates read about the position ---

class Position(NamedTuple):
    """What the candidates read about the position and roll, per game ([..., *lanes]).

    Materialised before the candidates are built: XLA would otherwise recompute each of
    these values, and read the board through the transpose that brought it into the lanes
    layout, in every loop over candidates that uses them.
    """

    board: jnp.ndarray  # int8[24]: the view board
    dice: jnp.ndarray  # int8[2]
    die_a: jnp.ndarray  # int8[2]: the die of the first move, per pass (bigger die first)
    die_b: jnp.ndarray  # int8[2]: the die of the second move
    ahead_a: jnp.ndarray  # int8[24, 2]: the checkers on field + die_a, per field and pass
    ahead_b: jnp.ndarray  # int8[24, 2]: on field + die_b
    forbid: jnp.ndarray  # bool: no bearing off this roll (`board.forbid_exits`)
    corner: jnp.ndarray  # int8: checkers on the own corner
    opp_fillable: jnp.ndarray  # bool[4]: quarters the opponent can still fill
    outside: jnp.ndarray  # int32: own fields outside the last quarter
    farthest: jnp.ndarray  # int32: `board.exit_farthest`
    short: jnp.ndarray  # int8[4]: fields of each quarter holding fewer than 2 own checkers
    spare: jnp.ndarray  # int8[2]: the lowest and second lowest fields holding more than 2
    # own checkers (NO_FIELD: none)
    # Own fields by slot (slot k: the k-th own field from field 1). Slots 15 and 16 are
    # never occupied, so per-slot arrays have the 17 entries of a second slot.
    in_slot: jnp.ndarray  # bool[17, 24]: field f is the field of slot k
    slot_field: jnp.ndarray  # int8[17]: the field of each slot, 0 for unused slots
    slot_count: jnp.ndarray  # int8[17]: own checkers on it


def _slot_value(in_slot, per_field):
    """int8[17, *lanes]: the value of `per_field` [24, *lanes] at each slot's field."""
    return jnp.sum(jnp.where(in_slot, per_field, 0), axis=1, dtype=jnp.int8)


def _at_slots(in_slot, per_field):
    """[24, 2, *lanes] per field and pass -> int8[2, 17, *lanes] per pass and slot."""
    return jnp.swapaxes(jnp.sum(jnp.where(in_slot[:, :, None], per_field[None], 0), axis=1,
                                dtype=jnp.int8), 0, 1)


@materialised
def position(board, dice) -> Position:
    """The `Position` of view board int[24, *lanes] and dice int[2, *lanes], in int8 where
    a value is a field number, a checker count or a die."""
    board, dice = board.astype(jnp.int8), dice.astype(jnp.int8)
    d_max, d_min = jnp.maximum(dice[0], dice[1]), jnp.minimum(dice[0], dice[1])
    die_a, die_b = jnp.stack([d_max, d_min]), jnp.stack([d_min, d_max])
    fields = A.leading(B.FIELDS, board.ndim - 1)
    occupied = board > 0
    outside = occupied & (fields < LAST_QUARTER)
    slot_of = A.prefix_sum(occupied.astype(jnp.int8)) - 1
    in_slot = occupied & (slot_of == A.leading(np.arange(NUM_SLOTS)[:, None], board.ndim - 1))
    spare = board > 2
    lowest_spare = B.lowest_field(spare)
    next_spare = B.lowest_field(spare & (fields > lowest_spare))
    return Position(board=board, dice=dice, die_a=die_a, die_b=die_b,
                    in_slot=in_slot, slot_field=_slot_value(in_slot, fields),
                    slot_count=_slot_value(in_slot, board),
                    ahead_a=B.ahead(board, die_a), ahead_b=B.ahead(board, die_b),
                    forbid=B.forbid_exits(board, dice),
                    corner=jnp.abs(B.at_field(board, OWN_CORNER)),
                    opp_fillable=B.opp_fillable_quarters(board),
                    outside=jnp.sum(outside, axis=0), farthest=B.exit_farthest(board),
                    short=jnp.sum(B.quarters(board) < 2, axis=1, dtype=jnp.int8),
                    spare=jnp.stack([lowest_spare, next_spare]).astype(jnp.int8))


# --- single moves ---

def _single_moves(field, count, die, landing, forbid, guard_corner):
    """The move of a checker from `field` with `die`. Returns (ok, dest, exceeding).

    All arguments broadcast together: `count` own checkers on `field` (none: no move),
    `landing` the checkers on field + `die`. `guard_corner` forbids leaving the own corner
    while it holds exactly 2 checkers (second move only: the pair rules check the first).
    """
    raw = field + die
    dest = jnp.where(raw >= OFF, 0, raw)
    exceeding = raw > OFF
    ok = (count > 0) & ~((dest == 0) & forbid)
    ok &= landing >= 0  # an opponent checker blocks the field
    if guard_corner:
        ok &= ~((field == OWN_CORNER) & (count == 2))
    return ok, dest, exceeding


class FirstMoves(NamedTuple):
    """The first move from each own field, per pass and row (the first slots, then the
    puissance row): [2, 16, *lanes]."""

    landing: jnp.ndarray  # int8: the checkers where it lands, before it
    ok: jnp.ndarray  # bool: the move is possible
    to: jnp.ndarray  # int8: its destination (0: borne off)
    exceeding: jnp.ndarray  # bool: it bears off with an exceeding number
    moved_to: jnp.ndarray  # int8: the destination of a possible move, 0 otherwise
    short: jnp.ndarray  # int8[4, ...]: after it, the fields of each quarter holding fewer
    #                     than 2 own checkers
    farthest: jnp.ndarray  # int8: after it, `board.exit_farthest`


@materialised
def first_moves(p: Position, field, count, moved_from: PerFirstMove) -> FirstMoves:
    """The first move from each own field `field` int8[16, *lanes] (the first slots' and the
    puissance row's, which holds no checker) holding `count`, with the first die of each
    pass (`moved_from`: `field` per pass). Materialised like the `Position`: every second
    move reads them."""
    landing = _at_slots(p.in_slot, p.ahead_a)[:, :NUM_ROWS]
    ok, to, exceeding = _single_moves(field, count, p.die_a[:, None], landing, p.forbid,
                                      guard_corner=False)
    moved_to = jnp.where(ok, to, 0)
    short, farthest = _after_first(p, moved_from, jnp.broadcast_to(count, moved_from.shape),
                                   moved_to, landing)
    return FirstMoves(landing, ok, to, exceeding, moved_to, short, farthest)


def _arrival(arrives, holds, to):
    """int8[...]: the destination `to` where a move arrives on a field that `holds`;
    NO_FIELD elsewhere (a candidate for a lowest field)."""
    return jnp.where(arrives & holds, to, jnp.int8(NO_FIELD))


def _after_first(p: Position, field, count, to, landing):
    """After each first move [2, 16, *lanes] (from `field` holding `count` own checkers to
    `to`, 0 for none or borne off, which held `landing`): the fields of each quarter
    holding fewer than 2 own checkers, int8[4, 2, 16, *lanes], and `board.exit_farthest`,
    int8[2, 16, *lanes]. From the position's per-game values (a move changes two fields),
    not from 30 boards: each would be read by several reductions over the fields.

    As on the board after the move: the origin always loses a checker (a slot whose first
    move is not possible is read as bearing off: never a legal candidate).
    """
    arrives = to > 0
    short = (p.short[:, None, None] + ((count == 2)[None] & _quarter_of(field))
             - ((arrives & (landing == 1))[None] & _quarter_of(to))).astype(jnp.int8)
    none = jnp.int8(NO_FIELD)
    # the lowest own field: the origin is vacated when it is the lowest and held one checker
    vacated = (field == p.slot_field[0]) & (count == 1)
    lowest = jnp.where(vacated, p.slot_field[1], p.slot_field[0])
    lowest = jnp.minimum(jnp.where(lowest > 0, lowest, none), _arrival(arrives, True, to))
    # the lowest field holding more than 2 (used when a quarter is filled)
    spare = jnp.where((field == p.spare[0]) & (count == 3), p.spare[1], p.spare[0])
    spare = jnp.minimum(spare, _arrival(arrives, landing >= 2, to))
    filled = A.fold(jnp.logical_or, short == 0)
    return short, jnp.where(filled & (spare < none), spare, lowest)


class SecondMoves(NamedTuple):
    """The second move from each second slot after each first move: [2, 16, 17, *lanes]."""

    field: jnp.ndarray  # int8: its origin (0: none)
    count: jnp.ndarray  # int8: the own checkers there after the first move
    landing: jnp.ndarray  # int8: the checkers where it lands, after the first move
    ok: jnp.ndarray  # bool: possible, or no second move (NO_SECOND_MOVE)
    to: jnp.ndarray  # int8: its destination (0: none or borne off)
    exceeding: jnp.ndarray  # bool: it bears off with an exceeding number


def _slot_is(slot, lanes):
    """bool[17, *lanes (as 1s)]: the second slot is `slot`."""
    return A.leading(np.arange(NUM_SLOTS) == slot, len(lanes))


def _second_origins(p: Position, first: FirstMoves, moved, new_field, chained):
    """(field, count) int8[2, 16, 17, *lanes]: where each second move starts and its own
    checkers after the first move (`moved`: the first move moved a checker; `new_field`:
    it arrived on an empty field, the chained slot's origin)."""
    lanes = lanes_of(p.board, 1)
    arrived = moved & (p.slot_field == per_first(first.moved_to)) & (p.slot_field > 0)
    left = moved & A.leading(np.eye(NUM_ROWS, NUM_SLOTS, dtype=bool), len(lanes))
    field = jnp.where(chained, per_first(jnp.where(new_field, first.moved_to, 0)),
                      p.slot_field)
    count = jnp.where(chained, per_first(new_field),
                      p.slot_count - left + arrived).astype(jnp.int8)
    return field, count


def _second_landing(p: Position, first: FirstMoves, moved_from, moved, field, chained):
    """int8[2, 16, 17, *lanes]: the checkers where each second move from `field` lands:
    from the board's shifted by its die, corrected by the first move (cheaper than
    reading them off the 30 boards after a first move)."""
    lanes = lanes_of(p.board, 1)
    landing_at_to = jnp.sum(
        jnp.where(A.leading(B.FIELDS, 2 + len(lanes)) == first.moved_to[None],
                  p.ahead_b[:, :, None], 0), axis=0, dtype=jnp.int8)
    before = jnp.where(chained, per_first(landing_at_to),
                       per_second(_at_slots(p.in_slot, p.ahead_b)))
    land = field + p.die_b[:, None, None]
    return (before - (moved & (land == per_first(moved_from)))
            + (moved & (land == per_first(first.moved_to))))


def second_moves(p: Position, first: FirstMoves, moved_from: PerFirstMove) -> SecondMoves:
    """The second move from each second slot after each first move: the field, its checkers
    and those where it lands, from the position corrected by the first move. The slot
    NO_SECOND_MOVE has no field, hence no move."""
    lanes = lanes_of(p.board, 1)
    new_field = (first.moved_to > 0) & (first.landing == 0)
    chained = _slot_is(CHAINED_SLOT, lanes)
    moved = per_first(moved_from > 0)
    field, count = _second_origins(p, first, moved, new_field, chained)
    landing = _second_landing(p, first, moved_from, moved, field, chained)
    ok, to, exceeding = _single_moves(field, count, p.die_b[:, None, None], landing,
                                      p.forbid, guard_corner=True)
    to = jnp.where(field > 0, to, 0)
    return SecondMoves(field, count, landing, ok | _slot_is(NO_SECOND_MOVE, lanes), to,
                       exceeding)


# --- rules on a pair ---

def _breaks_own_corner(p: Position, pair: Pairs) -> PerCandidate:
    """bool[N, *lanes]: the own corner is taken other than with two checkers at once, or
    left other than with its last two at once."""
    f0, t0, f1, t1 = pair
    bad = (t0 == OWN_CORNER) | (t1 == OWN_CORNER)
    bad &= (t0 != t1) & (p.corner == 0)
    return bad | (((f0 == OWN_CORNER) | (f1 == OWN_CORNER)) & (f0 != f1) & (p.corner == 2)
                  & (t0 != OWN_CORNER) & (t1 != OWN_CORNER))


def _on_opp_corner(pair: Pairs) -> PerCandidate:
    """bool[N, *lanes]: a move ends on the opponent's corner, other than as the rest of a
    tout d'une."""
    f0, t0, f1, t1 = pair
    return (t1 == OPP_CORNER) | ((t0 == OPP_CORNER) & (t0 != f1))


def _in_opp_fillable(p: Position, field):
    """bool[...]: `field` is in a quarter the opponent can still fill (only quarters 3 and
    4, fields 13-24, can be so on the mover's side of them)."""
    return (field > OWN_CORNER) & jnp.where(field > LAST_QUARTER - 1, p.opp_fillable[3],
                                            p.opp_fillable[2])


def _plays_in_opp_quarter(p: Position, pair: Pairs) -> PerCandidate:
    """bool[N, *lanes]: a move ends in a quarter the opponent can still fill (a tout d'une
    only rests on its way)."""
    f0, t0, f1, t1 = pair
    chained = (f1 != 0) & (t0 == f1)
    return (~chained & _in_opp_fillable(p, t0)) | _in_opp_fillable(p, t1)


def _pair_rules(p: Position, pair: Pairs) -> PerCandidate:
    """bool[N, *lanes]: the rules on a pair that do not depend on other sequences: the two
    corners and the opponent's quarters. (Taking the corner par puissance when it can be
    taken by effect is excluded by `_puissance_pair`: no other candidate is a puissance
    move.)"""
    bad = _breaks_own_corner(p, pair) | _on_opp_corner(pair)
    return ~(bad | _plays_in_opp_quarter(p, pair))


def can_take_corner_by_effect(board, dice):
    """The empty own corner is reachable directly: an own checker at 12 - d for each die."""
    src = B.at_field(board, OWN_CORNER - dice)
    return (B.at_field(board, OWN_CORNER) == 0) & (src[0] > 0) & (src[1] > 0)


def _puissance_pair(board, dice):
    """The canonical puissance pair (lower field first) and whether it exists: [4, *lanes]."""
    src = OPP_CORNER - dice  # fields one step short of the opponent's corner
    counts = B.at_field(board, src)
    double = dice[0] == dice[1]
    exists = jnp.where(double, counts[0] >= 2, (counts[0] >= 1) & (counts[1] >= 1))
    exists &= (B.at_field(board, OWN_CORNER) == 0) & (B.at_field(board, OPP_CORNER) == 0)
    lo, hi = jnp.minimum(src[0], src[1]), jnp.maximum(src[0], src[1])
    twelve = jnp.full_like(lo, OWN_CORNER)
    return jnp.stack([lo, twelve, hi, twelve]), exists & ~can_take_corner_by_effect(board, dice)


def _fills(board, short, second: SecondMoves, puis_pair) -> PerCandidate:
    """bool[N, *lanes]: a quarter is filled after the candidate's pair.

    Counted per quarter as fields holding fewer than 2 checkers after the first move
    (`short`, [4, 2, 15, *lanes]); the second move can only make its origin short (from 2
    checkers) or its destination full (from 1 checker). This avoids building a board per
    candidate.
    """
    leaves = (second.count == 2)[None] & _quarter_of(second.field)
    arrives = ((second.landing == 1) & (second.to > 0))[None] & _quarter_of(second.to)
    after2 = short[:, :, :, None] + leaves - arrives  # [4, 2, 15, 17, *lanes]
    full = A.fold(jnp.logical_or, after2 == 0) & second.ok
    puissance_board = B.apply_move(B.apply_move(board, puis_pair[0], puis_pair[1]),
                                   puis_pair[2], puis_pair[3])
    return to_flat(full, A.fold(jnp.logical_or, B.quarter_filled(puissance_board)))


def _not_farthest(p: Position, pair: Pairs, far_after_first: PerCandidate, die0,
                  die1) -> PerCandidate:
    """bool[N, *lanes]: with `die0` for the first move and `die1` for the second, a checker
    borne off with an exceeding number is not the farthest (before the first move for the
    first, after it for the second)."""
    f0, t0, f1, t1 = pair
    dist0 = jnp.where(t0 == 0, OFF, t0) - f0
    dist1 = jnp.where(t1 == 0, OFF, t1) - f1
    exceed0 = (dist0 != 0) & (dist0 < die0)
    exceed1 = (dist1 != 0) & (dist1 < die1)
    return (exceed0 & (f0 != p.farthest)) | (exceed1 & (f1 != far_after_first))


def _exit_rules(p: Position, pair: Pairs, single_first: PerCandidate,
                far_after_first: PerCandidate) -> tuple[PerCandidate, PerCandidate]:
    """The parts of the bear-off rule that look at the pair alone: two bool[N, *lanes].

    * every own checker must be in the last quarter, except a single checker that the
      first move brings there;
    * a checker borne off with an exceeding number must be the farthest one, in one of
      the two die orders.
    """
    f0, t0, f1, t1 = pair
    carried_in = (f0 < LAST_QUARTER) & single_first & (t0 > LAST_QUARTER - 1)
    outside_ok = p.outside - carried_in == 0
    farthest_ok = ~(_not_farthest(p, pair, far_after_first, p.dice[0], p.dice[1])
                    & _not_farthest(p, pair, far_after_first, p.dice[1], p.dice[0]))
    return outside_ok, farthest_ok


# --- the candidates ---

class Candidates(NamedTuple):
    """Every candidate move pair of one position and roll; arrays are [..., N, *lanes].
    Masks are uint8 0/1 (see `as_mask`)."""

    # Pairs are component-major, [4, N, *lanes] (rows from1, to1, from2, to2; 0 = none /
    # borne off).
    pair: Pairs  # int8[4, N, *lanes]: the pair as generated
    listed: Pairs  # int8[4, N, *lanes]: the pair as the reference lists it (swapped)
    # uint8: both moves possible (exceeding numbers allowed), and the corner and
    # opponent-quarter rules hold (one mask: every list reads the three together)
    possible: CandidateMask
    exceeding: CandidateMask  # uint8: a move bears off with an exceeding number
    fills: CandidateMask  # uint8: after the pair a quarter is filled
    has_exit: CandidateMask  # uint8: a move bears off
    exit_outside_ok: CandidateMask  # uint8: bear-off rule, all checkers in the last quarter
    exit_farthest_ok: CandidateMask  # uint8: bear-off rule, exceeding numbers on the farthest
    is_full: CandidateMask  # uint8: two moves (or the puissance pair)
    # Which candidates list the same pair (see `_same_listed`):
    twin_same: CandidateMask  # uint8: the twin (same slots, other pass) lists the same pair
    double_exit: CandidateMask  # uint8: both moves bear off (listed lower field first)
    swapped: CandidateMask  # uint8: listed != pair (a double exit listed in the other order)
    # int8[2, N, *lanes]: for each move of the listed pair, the own checkers on fields up to
    # its origin before the pair (the reference numbers checkers by that count)
    listed_ordinal: jax.Array
    order: PerCandidate  # int16: position in the reference's loop (unique among valid ones)
    dice: jax.Array  # int8[2, *lanes]: the roll, game-minor (`Position.dice`)


def _pairs(first: FirstMoves, second: SecondMoves, moved_from: PerFirstMove,
           puis_pair) -> Pairs:
    """int8[4, N, *lanes]: each candidate's pair (from1, to1, from2, to2)."""
    lanes = lanes_of(moved_from, 2)
    return jnp.stack([to_flat(each_second(moved_from, lanes), puis_pair[0]),
                      to_flat(each_second(first.to, lanes), puis_pair[1]),
                      to_flat(second.field, puis_pair[2]), to_flat(second.to, puis_pair[3])])


def _ordinals(p: Position, first: FirstMoves, moved_from: PerFirstMove, puis_pair,
              chained) -> jax.Array:
    """int8[2, N, *lanes]: for each move of each pair, the own checkers on fields up to its
    origin (the second on the board after the first move)."""
    cum = B.cumulative_checkers(p.board).astype(jnp.int8)
    slot_ordinal = lookup(cum, p.slot_field)  # [17, *lanes]
    first_ordinal = jnp.broadcast_to(slot_ordinal[:NUM_ROWS], moved_from.shape)
    return jnp.stack([
        to_flat(each_second(first_ordinal, lanes_of(moved_from, 2)), lookup(cum, puis_pair[0])),
        to_flat(jnp.where(chained, per_first(lookup(cum, first.moved_to)), slot_ordinal),
                 lookup(cum, puis_pair[2]))])


def _reference_order(second_field: PerSlot, no_second) -> PerCandidate:
    """int16[N, *lanes]: each candidate's position in the reference's loop: per pass, per
    first slot, the second fields 1..24 then "no second move", and the puissance pair
    (the puissance row's other entries, never possible: NO_ORDER)."""
    lanes = lanes_of(second_field, 3)
    pass_start = np.arange(2, dtype=np.int16) * REFERENCE_PASS_SIZE
    first_slot = np.arange(NUM_ROWS, dtype=np.int16)[:, None]
    reference = A.leading(pass_start[:, None, None] + first_slot * REFERENCE_SECONDS, len(lanes))
    second = jnp.where(no_second, NUM_FIELDS, second_field.astype(jnp.int16) - 1)
    in_row = A.leading(np.arange(NUM_ROWS)[:, None] != PUISSANCE_ROW, len(lanes))
    return to_flat(jnp.where(in_row, reference + second, jnp.int16(NO_ORDER)),
                   A.leading(pass_start + REFERENCE_PASS_SIZE - 1, len(lanes)))


def _candidate_masks(p: Position, first: FirstMoves, second: SecondMoves, pair, count,
                     moved_from, puis_pair, puis_ok):
    """The rule masks of `Candidates` (as bool, by field name) of the pairs `pair`; `count`:
    own checkers on each first move's field."""
    lanes = lanes_of(moved_from, 2)
    f0, t0, f1, t1 = pair
    far_after_first = to_flat(each_second(first.farthest, lanes), 0)
    single_first = to_flat(each_second(jnp.broadcast_to(count == 1, moved_from.shape), lanes),
                            B.at_field(p.board, puis_pair[0]) == 1)
    outside_ok, farthest_ok = _exit_rules(p, pair, single_first, far_after_first)
    return dict(
        possible=(to_flat(each_second(first.ok, lanes) & second.ok, puis_ok)
                  & _pair_rules(p, pair)),
        exceeding=to_flat(per_first(first.exceeding) | second.exceeding, False),
        has_exit=((t0 == 0) & (f0 != 0)) | ((t1 == 0) & (f1 != 0)),
        exit_outside_ok=outside_ok, exit_farthest_ok=farthest_ok,
        is_full=to_flat(jnp.broadcast_to(~_slot_is(NO_SECOND_MOVE, lanes), GRID + lanes),
                         True),
        fills=_fills(p.board, first.short, second, puis_pair),
        # (the chained slots of the two passes start from the same field only for doubles,
        # where t0 is the same too)
        twin_same=(other_pass(t0) == t0) & (other_pass(t1) == t1))


@materialised
@materialising
def candidates(board, dice) -> Candidates:
    """All candidates for view board int[24, *lanes] and dice int[2, *lanes]; materialised:
    each list reads them."""
    p = position(board, dice)
    lanes = lanes_of(p.board, 1)
    # the first slots' fields and counts, and the puissance row's (slot 15: none)
    first_field, first_count = p.slot_field[:NUM_ROWS], p.slot_count[:NUM_ROWS]
    moved_from = jnp.broadcast_to(first_field, (NUM_PASSES,) + first_field.shape)
    first = first_moves(p, first_field, first_count, moved_from)
    second = second_moves(p, first, moved_from)
    puis_pair, puis_ok = _puissance_pair(p.board, p.dice)
    pair = _pairs(first, second, moved_from, puis_pair)
    f0, t0, f1, t1 = pair
    double_exit = (t0 == 0) & (t1 == 0) & (f0 != 0) & (f1 != 0)
    swapped = double_exit & (f1 < f0)
    ordinal = _ordinals(p, first, moved_from, puis_pair, _slot_is(CHAINED_SLOT, lanes))
    masks = _candidate_masks(p, first, second, pair, first_count, moved_from, puis_pair,
                             puis_ok)
    masks.update(double_exit=double_exit, swapped=swapped)
    return Candidates(pair=pair, listed=jnp.where(swapped, jnp.stack([f1, t1, f0, t0]), pair),
                      order=_reference_order(second.field, _slot_is(NO_SECOND_MOVE, lanes)),
                      listed_ordinal=jnp.where(swapped, ordinal[::-1], ordinal), dice=p.dice,
                      **{name: as_mask(x) for name, x in masks.items()})
