"""The candidate set: every move pair the reference's loops could list for one position and
roll, with the facts about it that the lists read, as words (`Candidates`).

A fact about candidate (p, i, k) is bit k of word (p, i) (layout.py). What a second move
reads is per (pass, second slot) on the position's board, corrected per row only where the
first move changes it:

* its own checkers: the first move's origin loses one (its bit cleared when it held one),
  its destination gains one; the own corner's guard (leaving it with exactly two) holds
  per row from the corner's count after the first move;
* where it lands: the first move's origin loses an own checker and its destination gains
  one, neither of which makes a field the opponent's, so "not blocked" is per pass;
* the chained slot (the first move's destination when it was empty) and "no second move"
  are per row;
* the pair rules, the exits and the twins combine the first move's facts (per row) with
  the second's (per pass and slot) by word operations; "the second move starts where the
  first ended" is one bit a row (`layout.slot_bit`).

The position (`position`), the first moves and the candidates are `lowering.materialised`:
computed once, not in each loop that reads them. Everything is on the mover's view board
(board.py).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax import board as B
from trictrac_jax.board import LAST_QUARTER, NO_FIELD, NUM_FIELDS, OFF, OPP_CORNER, OWN_CORNER
from trictrac_jax.lowering import lookup, materialised
from trictrac_jax.moves.layout import (ALL, BELOW_ROW, CHAINED, IS_PUISSANCE_ROW, NO_SECOND,
                                       NUM_FIRST, NUM_PASSES, NUM_ROWS, NUM_SLOTS, ROW_BIT, U32,
                                       PerGame, PerRow, PerSlot, RowWords, against, keep,
                                       second_move_word, slot_bit, slots_below, word_of)


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
    slot_field: jnp.ndarray  # int8[17]: the field of each slot, 0 for unused slots
    slot_count: jnp.ndarray  # int8[17]: own checkers on it


def _landing(board, field, die):
    """int8[2, S, *lanes]: the checkers on `field` + `die` per pass (`field` int8[S,
    *lanes], 0 for none; `die` int8[2, *lanes]), 0 beyond field 24 or without a field.

    Looked up on the board (`lowering.lookup`: on a GPU a gather fused into its readers),
    where the board shifted by each die and summed over each slot's field took a GPU
    kernel a reduction."""
    to = field[None] + die[:, None]
    return B.at_field(board, jnp.where((field[None] > 0) & (to <= NUM_FIELDS), to, 0))


@materialised
def position(board, dice) -> Position:
    """The `Position` of view board int[24, *lanes] and dice int[2, *lanes], in int8 where
    a value is a field number, a checker count or a die."""
    board, dice = board.astype(jnp.int8), dice.astype(jnp.int8)
    # the dice or their reverse, not a stack of the bigger and the smaller: on a GPU a stack
    # of a game's two values is a kernel of its own
    die_a = jnp.where(dice[0] >= dice[1], dice, dice[::-1])
    die_b = die_a[::-1]
    fields = A.leading(B.FIELDS, board.ndim - 1)
    occupied = board > 0
    outside = occupied & (fields < LAST_QUARTER)
    slot_of = A.prefix_sum(occupied.astype(jnp.int8)) - 1
    in_slot = occupied & (slot_of == A.leading(np.arange(NUM_SLOTS)[:, None], board.ndim - 1))
    spare = board > 2
    lowest_spare = B.lowest_field(spare)
    next_spare = B.lowest_field(spare & (fields > lowest_spare))
    slot_field = jnp.sum(jnp.where(in_slot, fields, 0), axis=1, dtype=jnp.int8)  # [17]
    return Position(board=board, dice=dice, die_a=die_a, die_b=die_b,
                    slot_field=slot_field,
                    slot_count=B.at_field(board, slot_field),
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
def first_moves(p: Position, field, count) -> FirstMoves:
    """The first move from each own field `field` int8[16, *lanes] (the first slots' and the
    puissance row's, which holds no checker) holding `count`, with the first die of each
    pass. Materialised like the `Position`: every second move reads them."""
    moved_from = jnp.broadcast_to(field, (NUM_PASSES,) + field.shape)
    landing = _landing(p.board, field, p.die_a)
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


# --- the puissance pair ---

def _in_opp_fillable(p: Position, field):
    """bool[...]: `field` is in a quarter the opponent can still fill (only quarters 3 and
    4, fields 13-24, can be so on the mover's side of them)."""
    return (field > OWN_CORNER) & jnp.where(field > LAST_QUARTER - 1, p.opp_fillable[3],
                                            p.opp_fillable[2])


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


# --- the second moves, per pass and second slot ---

class SecondSlots(NamedTuple):
    """The second move from each second slot that is an own field, on the position's
    board: [2, 15, *lanes] (pass, slot) unless said."""

    field: PerSlot  # int8[15]: the slot's field (0: none)
    to: jax.Array  # int8: its destination (0: none or borne off)
    raw: jax.Array  # int8: field + die (OFF and beyond: borne off)
    landing: jax.Array  # int8: the checkers where it lands
    reachable: jax.Array  # bool: not blocked, and not a bear-off this roll forbids


def _second_slots(p: Position) -> SecondSlots:
    field = p.slot_field[:NUM_FIRST]
    raw = field[None] + p.die_b[:, None]
    landing = _landing(p.board, field, p.die_b)
    reachable = (landing >= 0) & ~((raw >= OFF) & p.forbid) & (field[None] > 0)
    return SecondSlots(field, jnp.where((field[None] > 0) & (raw < OFF), raw, 0), raw, landing,
                       reachable)


class Chained(NamedTuple):
    """The chained slot's second move, per pass and row: [2, 16, *lanes]."""

    new_field: PerRow  # bool: the first move arrived on an empty field (the slot's origin)
    raw: PerRow  # int8: its destination + die
    landing: PerRow  # int8: the checkers there (on the position's board)
    ok: PerRow  # bool: possible
    to: PerRow  # int8: its destination (0: none or borne off)


def _chained(p: Position, first: FirstMoves) -> Chained:
    new_field = (first.moved_to > 0) & (first.landing == 0)
    raw = first.moved_to + p.die_b[:, None]
    landing = B.at_field(p.board, jnp.where(raw < OFF, raw, 0))
    ok = new_field & jnp.where(raw >= OFF, ~p.forbid, landing >= 0)
    return Chained(new_field, raw, landing, ok, jnp.where(new_field & (raw < OFF), raw, 0))


def _second_possible(p: Position, first: FirstMoves, second: SecondSlots, chained: Chained,
                     count, occupied_fields) -> RowWords:
    """The second move is possible after the first (or there is none): from a slot still
    holding an own checker, not the own corner left with exactly two."""
    lanes = p.board.shape[1:]
    row_bit = against(ROW_BIT, lanes)
    occupied = word_of(p.slot_count[:NUM_FIRST] > 0, 0)
    emptied = keep(count == 1, row_bit)
    corner_bit = slot_bit(occupied_fields, jnp.full(lanes, OWN_CORNER))
    field = p.slot_field[:NUM_ROWS]
    corner_after = (p.corner - (field == OWN_CORNER).astype(jnp.int8)
                    + (first.moved_to == OWN_CORNER))
    guarded = keep(corner_after == 2, corner_bit)
    from_slots = word_of(second.reachable, 1)[:, None] & occupied & ~emptied & ~guarded
    return from_slots | keep(chained.ok, CHAINED) | NO_SECOND


def _breaks_pair_rules(p: Position, first: FirstMoves, second: SecondSlots, chained: Chained,
                       occupied_fields) -> RowWords:
    """The rules on a pair that no other sequence changes: the own corner taken other than
    with two checkers at once or left other than with its last two at once; a move ending on
    the opponent's corner, other than as the rest of a tout d'une; a move ending in a
    quarter the opponent can still fill (a tout d'une only rests on its way)."""
    to, field = first.to, p.slot_field[:NUM_ROWS]
    t0_12, t0_13 = to == OWN_CORNER, to == OPP_CORNER
    f0_12 = jnp.broadcast_to(field == OWN_CORNER, to.shape)
    f1, t1 = second.field, second.to
    lands = lambda field: second_move_word(t1 == field, chained.to == field)
    leaves = lambda field: second_move_word(
        f1 == field, chained.new_field & (first.moved_to == field))
    lands_12, lands_13 = lands(OWN_CORNER), lands(OPP_CORNER)
    leaves_12, leaves_13 = leaves(OWN_CORNER), leaves(OPP_CORNER)
    in_opp = second_move_word(_in_opp_fillable(p, t1), _in_opp_fillable(p, chained.to))
    continues = slot_bit(occupied_fields, to) | keep(chained.new_field, CHAINED)
    flip = lambda cond, word: jnp.where(cond, ~word, word)
    bad = keep(p.corner == 0, flip(t0_12, lands_12))
    bad |= keep((p.corner == 2) & ~t0_12, flip(f0_12, leaves_12) & ~lands_12)
    bad |= lands_13 | keep(t0_13, ~leaves_13)
    return bad | keep(_in_opp_fillable(p, to), ~continues) | in_opp


def _fills(p: Position, first: FirstMoves, second: SecondSlots, chained: Chained, count,
           occupied_fields) -> RowWords:
    """A quarter is filled after the pair: per quarter, the second moves that leave one of
    its fields short (from 2 checkers after the first move) and those that fill one (onto
    1), against the fields the first move left short (`first.short`); filled when they
    cancel out."""
    lanes = p.board.shape[1:]
    row_bit = against(ROW_BIT, lanes)
    field = p.slot_field[:NUM_ROWS]
    moved_from = jnp.broadcast_to(field, first.to.shape)
    die_b = p.die_b[:, None]
    two = word_of(p.slot_count[:NUM_FIRST] == 2, 0)
    dest_bit = slot_bit(occupied_fields, first.moved_to)
    two_after = ((two & ~row_bit & ~dest_bit) | keep(count == 3, row_bit)
                 | keep(first.landing == 1, dest_bit))
    one = word_of(second.landing == 1, 1)[:, None]  # lands on a single own checker
    from_origin = slot_bit(occupied_fields, moved_from - die_b)
    onto_dest = slot_bit(occupied_fields, first.moved_to - die_b)
    one_after = ((one & ~from_origin & ~onto_dest) | keep(count == 2, from_origin)
                 | keep(first.landing == 0, onto_dest))
    from_q, to_q, chained_q = (_quarter_of(second.field), _quarter_of(second.to),
                               _quarter_of(chained.to))
    fills = U32(0)
    for q in range(4):
        leaves = two_after & word_of(from_q[q], 0)
        arrives = ((one_after & word_of(to_q[q], 1)[:, None])
                   | keep(chained_q[q] & (chained.landing == 1), CHAINED))
        short = first.short[q]
        fills |= keep(short == 0, ~(leaves ^ arrives)) | keep(short == 1, arrives & ~leaves)
    return fills


class Exits(NamedTuple):
    """What the bear-off rules read, as words (unmasked)."""

    exceeding: RowWords  # a move bears off with an exceeding number
    has_exit: RowWords  # a move bears off
    both_exit: RowWords  # both moves bear off
    outside_ok: RowWords  # every own checker in the last quarter, except a single checker
    # that the first move brings there
    farthest_ok: RowWords  # a checker borne off with an exceeding number is the farthest
    # (before the first move for the first, after it for the second), in one die order


def _exits(p: Position, first: FirstMoves, second: SecondSlots, chained: Chained, count,
           occupied_fields) -> Exits:
    field, to = p.slot_field[:NUM_ROWS], first.to
    f1, t1 = second.field, second.to
    moves = f1[None] > 0
    second_exits = second_move_word((second.raw >= OFF) & moves,
                                    chained.new_field & (chained.raw >= OFF))
    first_exits = (to == 0) & (field > 0)
    exceeding = keep(first.exceeding, ALL) | second_move_word(
        (second.raw > OFF) & moves, chained.new_field & (chained.raw > OFF))
    carried_in = (field < LAST_QUARTER) & (count == 1) & (to > LAST_QUARTER - 1)
    dist0 = jnp.where(to == 0, OFF, to) - field
    dist1 = jnp.where(t1 == 0, OFF, t1) - f1[None]  # (no field: 25, never short)
    chained_dist = jnp.where(chained.to == 0, OFF, chained.to) - first.moved_to
    far_bit = (slot_bit(occupied_fields, first.farthest)
               | keep(chained.new_field & (first.farthest == first.moved_to), CHAINED))
    not_farthest = []
    for die0, die1 in ((p.dice[0], p.dice[1]), (p.dice[1], p.dice[0])):
        short0 = (dist0 != 0) & (dist0 < die0) & (field != p.farthest)
        short1 = second_move_word((dist1 != 0) & (dist1 < die1[None]),
                                  chained.new_field & (chained_dist != 0) & (chained_dist < die1))
        not_farthest.append(keep(short0, ALL) | (short1 & ~far_bit))
    return Exits(exceeding, keep(first_exits, ALL) | second_exits,
                 keep(first_exits, second_exits), keep(p.outside - carried_in == 0, ALL),
                 ~(not_farthest[0] & not_farthest[1]))


def _twin_same(first: FirstMoves, second: SecondSlots, chained: Chained) -> RowWords:
    """uint32[1, 16, *lanes]: the candidate and its twin (same slots, the other pass) list
    the same pair: both moves land on the same fields (the chained slots of the two passes
    start from the same field only for doubles, where the first moves land alike too)."""
    to, t1 = first.to, second.to
    same_t1 = (word_of(t1[0] == t1[1], 0) | keep(chained.to[0] == chained.to[1], CHAINED)
               | NO_SECOND)
    return keep(to[0] == to[1], same_t1)[None]


class CandidateRows(NamedTuple):
    """What names each candidate's pair and action: its first move is its row's, its second
    its slot's (the chained slot's per row) ([..., *lanes])."""

    dice: jax.Array  # int8[2]
    field: jax.Array  # int8[16]: each row's first field (0: none, the puissance row)
    to: PerRow  # int8: the first move's destination (0: borne off)
    moved_to: PerRow  # int8: the destination of a possible first move, 0 otherwise
    new_field: PerRow  # bool: it arrived on an empty field, the chained slot's origin
    chained_to: PerRow  # int8: the chained slot's destination (0: none or borne off)
    second_field: PerSlot  # int8[15]: the field of each second slot that is an own field
    second_to: jax.Array  # int8[2, 15]: its destination per pass (0: none or borne off)
    ordinal: jax.Array  # int8[17]: own checkers up to each slot's field (0: no field)
    chained_ordinal: PerRow  # int8: own checkers up to the first move's destination
    below_to: PerRow  # uint32: the slots whose field is below the first move's destination
    occupied_fields: PerGame  # uint32: bit f - 1 for each own field f
    puis_pair: jax.Array  # int8[4]: the puissance pair (lower field first)
    puis_ordinal: jax.Array  # int8[2]: own checkers up to each of its origins


class Candidates(NamedTuple):
    """Every candidate move pair of one position and roll: the facts that the lists read,
    words uint32[2, 16, *lanes] (bit k of (p, i): candidate (p, i, k)), each kept where the
    lists read it; and the rows that name the pairs."""

    possible: RowWords  # both moves possible (exceeding numbers allowed), and the corner
    # and opponent-quarter rules hold (one set: every list reads the three together)
    fills: RowWords  # after the pair a quarter is filled (where possible)
    exceeding: RowWords  # a move bears off with an exceeding number (where possible)
    has_exit: RowWords  # a move bears off (where possible)
    exit_outside_ok: RowWords  # bear-off rule: all checkers in the last quarter (where
    # possible and bearing off)
    exit_farthest_ok: RowWords  # bear-off rule: exceeding numbers on the farthest (where
    # possible and bearing off)
    # Which candidates list the same pair (`lists.same_listed`):
    twin_same: RowWords  # the twin lists the same pair (where both are possible)
    double_exit: RowWords  # both moves bear off, listed lower field first (where possible)
    swapped: RowWords  # a double exit listed in the other order (where possible)
    rows: CandidateRows


class Puissance(NamedTuple):
    """The pair that takes the own corner par puissance, per game."""

    pair: jax.Array  # int8[4, *lanes]: lower field first
    possible: PerGame  # uint32: 1 when it is (bit 0 of the puissance row)
    fills: PerGame  # uint32: 1 when it is and fills a quarter


def _puissance(p: Position) -> Puissance:
    """(The pair rules always hold for it: it takes the empty own corner with two checkers
    at once from fields below 12, and lands in no quarter the opponent can fill.)"""
    pair, ok = _puissance_pair(p.board, p.dice)
    possible = keep(ok, U32(1))
    after = B.apply_move(B.apply_move(p.board, pair[0], pair[1]), pair[2], pair[3])
    return Puissance(pair, possible, keep(A.fold(jnp.logical_or, B.quarter_filled(after)),
                                          possible))


def _candidate_rows(p: Position, first: FirstMoves, second: SecondSlots, chained: Chained,
                    occupied_fields, puis_pair) -> CandidateRows:
    cum = B.cumulative_checkers(p.board)
    to = first.to
    return CandidateRows(
        dice=p.dice, field=p.slot_field[:NUM_ROWS], to=to, moved_to=first.moved_to,
        new_field=chained.new_field, chained_to=chained.to, second_field=second.field,
        second_to=second.to,
        ordinal=jnp.where(p.slot_field > 0, A.prefix_sum(p.slot_count), jnp.int8(0)),
        chained_ordinal=lookup(cum, first.moved_to),
        below_to=jnp.where(to > 0, slots_below(occupied_fields, to), ALL),
        occupied_fields=occupied_fields, puis_pair=puis_pair,
        puis_ordinal=jnp.stack([lookup(cum, puis_pair[0]), lookup(cum, puis_pair[2])]))


@materialised
def candidates(board, dice) -> Candidates:
    """All candidates for view board int[24, *lanes] and dice int[2, *lanes]; materialised:
    each list reads them."""
    p = position(board, dice)
    lanes = p.board.shape[1:]
    field, count = p.slot_field[:NUM_ROWS], p.slot_count[:NUM_ROWS]
    first = first_moves(p, field, count)
    second = _second_slots(p)
    chained = _chained(p, first)
    occupied_fields = word_of(p.board > 0, 0)
    second_ok = _second_possible(p, first, second, chained, count, occupied_fields)
    bad = _breaks_pair_rules(p, first, second, chained, occupied_fields)
    possible = keep(first.ok, second_ok & ~bad) & ALL
    fills = _fills(p, first, second, chained, count, occupied_fields) & possible
    exits = _exits(p, first, second, chained, count, occupied_fields)
    has_exit = exits.has_exit & possible
    double_exit = exits.both_exit & possible
    puissance = _puissance(p)
    row_is_puissance = against(IS_PUISSANCE_ROW, lanes)
    in_rows = lambda word, at_puissance=U32(0): jnp.where(row_is_puissance, at_puissance, word)
    at_puissance = puissance.possible[None, None]
    possible = in_rows(possible, at_puissance)
    twin_same = _twin_same(first, second, chained) & possible & possible[::-1]
    return Candidates(
        possible=possible, fills=in_rows(fills, puissance.fills[None, None]),
        exceeding=in_rows(exits.exceeding & possible), has_exit=in_rows(has_exit),
        exit_outside_ok=in_rows(exits.outside_ok & has_exit),
        exit_farthest_ok=in_rows(exits.farthest_ok & has_exit),
        twin_same=in_rows(twin_same, at_puissance),
        double_exit=in_rows(double_exit),
        swapped=in_rows(double_exit & against(BELOW_ROW, lanes)),
        rows=_candidate_rows(p, first, second, chained, occupied_fields, puissance.pair))
