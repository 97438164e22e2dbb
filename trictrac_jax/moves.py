"""Move rules: the move sequences the reference engine allows, and their action indices.

The reference builds its list of legal move pairs by nested loops: for each die order
(bigger die first, then smaller die first), each own checker field for the first move and
each own field for the second move (or no second move), then checks each pair against the
rules. We evaluate all of those loop iterations at once as a fixed array of *candidates*:

    candidate (pass p, first slot i, second slot k)   p in {0, 1}, i in 0..14, k in 0..16

where first slot i is the (i + 1)-th field holding own checkers (counted from field 1; at
most 15 such fields). A second move can only start from a field that holds own checkers
after the first move: one of those same fields, or the first move's destination when it
was empty. So second slot k < 15 is the field of first slot k, k = 15 (`CHAINED_SLOT`) is
the first move's destination when it was empty, and k = 16 (`NO_SECOND_MOVE`) is "no
second move"; 512 candidates instead of the 752 of a second slot per field. Each pass ends
with one extra candidate for taking the rest corner "par puissance". `Candidates.order` is
the position of each candidate in the reference's loop order: "first in the list" is a
minimum over it.

Per-candidate arrays are int8 (fields, counts and dice are small): narrow arrays are what
makes this fast on CPU, where the cost is proportional to the elements touched.

Games are laid out *game-minor*: every array has the structure axes first (fields,
candidates, ...) and then `lanes`, trailing axes shared by all arguments: none for one
position, or one axis of games. Under `jax.vmap`, `legal_moves` and
`scoring.roll_outcome` move the batch axis there (`lowering.game_minor`): XLA's CPU loops
then run along contiguous games, whereas with the batch first they run along the short
structure axes and mostly do not vectorise. For the same reason candidate masks are bytes
(`_mask`). What every candidate reads about the position (`position`), the first moves,
the candidates and each list are `lowering.materialised`: computed once, not in each loop
that reads them.

Rules of the form "if any sequence does X, only those are allowed" become reductions over
candidates. The reference builds three lists, each one using the previous ones:

* `filling`: sequences (with exceeding numbers, ignoring the exit and quarter rules) after
  which a quarter is filled; when there is one, only those are allowed (fill or keep a
  filled quarter);
* `exact`: sequences without exceeding numbers (ignoring the exit rule), which are the
  bear-offs that must be preferred to exceeding numbers;
* `legal`: all rules.

Everything is on the mover's view board (see board.py).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax import board as B
from trictrac_jax.board import LAST_QUARTER, NO_FIELD, NUM_FIELDS, OFF, OPP_CORNER, OWN_CORNER
from trictrac_jax.lowering import (append, game_minor, lookup, materialised, materialising,
                                reduce_candidates)
from trictrac_jax.state import NUM_ACTIONS

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
# Actions: 0 Roll, 1 Go, then the Move actions FIRST_MOVE + ORDER_ACTIONS * (smaller die
# first) + CHECKERS * (first checker) + second checker.
GO, FIRST_MOVE = 1, 2
CHECKERS = 16  # checker numbers 0..15 (0: no move)
ORDER_ACTIONS = CHECKERS * CHECKERS


# --- candidate arrays ---

def _lanes(x, structure_ndim):
    return x.shape[structure_ndim:]


def _mask(x):
    """A candidate mask as uint8 0/1. Masks stay bytes from here on (combined with & | ^,
    reduced with max): XLA's CPU loops vectorise byte arrays, not bool ones."""
    return jnp.asarray(x).astype(jnp.uint8)


def _not(mask):
    return mask ^ 1


def other_pass(x):
    """[N, *lanes]: each candidate's value at its twin, the same slots in the other pass."""
    per_pass = x.reshape((NUM_PASSES, PASS_SIZE) + x.shape[1:])
    return per_pass[::-1].reshape(x.shape)


def _transposed(grid):
    """[2, 15, 17, *lanes] -> the same: the value of the candidate with first and second
    slots swapped (False for second slots >= 15, which are no first slot)."""
    inner = jnp.swapaxes(grid[:, :, :NUM_FIRST], 1, 2)
    pad = [(0, 0)] * grid.ndim
    pad[2] = (0, NUM_SLOTS - NUM_FIRST)
    return jnp.pad(inner, pad)


def _to_flat(per_slot, per_pass):
    """[2, 15, 17, *lanes] per (pass, first slot, second slot) + per pass ([2, *lanes] or
    broadcasting to it) -> [N, *lanes]."""
    lanes = _lanes(per_slot, 3)
    per_pass = jnp.broadcast_to(per_pass, (2,) + lanes).astype(per_slot.dtype)
    body = per_slot.reshape((2, NUM_FIRST * NUM_SLOTS) + lanes)
    return append(body, per_pass[:, None], axis=1).reshape((NUM_CANDIDATES,) + lanes)


def _to_slots(flat):
    """Inverse of `_to_flat`: [N, *lanes] -> ([2, 15, 17, *lanes], [2, *lanes])."""
    lanes = _lanes(flat, 1)
    per_pass = flat.reshape((2, PASS_SIZE) + lanes)
    return per_pass[:, :-1].reshape(GRID + lanes), per_pass[:, -1]


def _per_first(x):
    """[2, 15, *lanes] per first move -> [2, 15, 1, *lanes], against the second slots."""
    return x[:, :, None]


def _each_second(x, lanes):
    """[2, 15, *lanes] per first move -> [2, 15, 17, *lanes]: the same for each second slot."""
    return jnp.broadcast_to(_per_first(x), GRID + lanes)


def _per_second(x):
    """[2, 17, *lanes] per second slot -> [2, 1, 17, *lanes], against the first moves."""
    return x[:, None]


def _first_pass(like):
    """uint8[N, 1, ...]: the candidates of the first pass (bigger die first), to broadcast
    against `like` [N, *lanes]."""
    return _mask(A.leading(np.arange(NUM_CANDIDATES) < PASS_SIZE, like.ndim - 1))


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
    """The first move from each own field, per pass and first slot: [2, 15, *lanes]."""

    landing: jnp.ndarray  # int8: the checkers where it lands, before it
    ok: jnp.ndarray  # bool: the move is possible
    to: jnp.ndarray  # int8: its destination (0: borne off)
    exceeding: jnp.ndarray  # bool: it bears off with an exceeding number
    moved_to: jnp.ndarray  # int8: the destination of a possible move, 0 otherwise
    short: jnp.ndarray  # int8[4, ...]: after it, the fields of each quarter holding fewer
    #                     than 2 own checkers
    farthest: jnp.ndarray  # int8: after it, `board.exit_farthest`


@materialised
def first_moves(p: Position, field, count, moved_from) -> FirstMoves:
    """The first move from each own field `field` int8[15, *lanes] holding `count`, with the
    first die of each pass (`moved_from`: `field` per pass). Materialised like the
    `Position`: every second move reads them."""
    landing = _at_slots(p.in_slot, p.ahead_a)[:, :NUM_FIRST]
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
    """After each first move [2, 15, *lanes] (from `field` holding `count` own checkers to
    `to`, 0 for none or borne off, which held `landing`): the fields of each quarter
    holding fewer than 2 own checkers, int8[4, 2, 15, *lanes], and `board.exit_farthest`,
    int8[2, 15, *lanes]. From the position's per-game values (a move changes two fields),
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
    """The second move from each second slot after each first move: [2, 15, 17, *lanes]."""

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
    """(field, count) int8[2, 15, 17, *lanes]: where each second move starts and its own
    checkers after the first move (`moved`: the first move moved a checker; `new_field`:
    it arrived on an empty field, the chained slot's origin)."""
    lanes = _lanes(p.board, 1)
    arrived = moved & (p.slot_field == _per_first(first.moved_to)) & (p.slot_field > 0)
    left = moved & A.leading(np.eye(NUM_FIRST, NUM_SLOTS, dtype=bool), len(lanes))
    field = jnp.where(chained, _per_first(jnp.where(new_field, first.moved_to, 0)),
                      p.slot_field)
    count = jnp.where(chained, _per_first(new_field),
                      p.slot_count - left + arrived).astype(jnp.int8)
    return field, count


def _second_landing(p: Position, first: FirstMoves, moved_from, moved, field, chained):
    """int8[2, 15, 17, *lanes]: the checkers where each second move from `field` lands:
    from the board's shifted by its die, corrected by the first move (cheaper than
    reading them off the 30 boards after a first move)."""
    lanes = _lanes(p.board, 1)
    landing_at_to = jnp.sum(
        jnp.where(A.leading(B.FIELDS, 2 + len(lanes)) == first.moved_to[None],
                  p.ahead_b[:, :, None], 0), axis=0, dtype=jnp.int8)
    before = jnp.where(chained, _per_first(landing_at_to),
                       _per_second(_at_slots(p.in_slot, p.ahead_b)))
    land = field + p.die_b[:, None, None]
    return (before - (moved & (land == _per_first(moved_from)))
            + (moved & (land == _per_first(first.moved_to))))


def second_moves(p: Position, first: FirstMoves, moved_from) -> SecondMoves:
    """The second move from each second slot after each first move: the field, its checkers
    and those where it lands, from the position corrected by the first move. The slot
    NO_SECOND_MOVE has no field, hence no move."""
    lanes = _lanes(p.board, 1)
    new_field = (first.moved_to > 0) & (first.landing == 0)
    chained = _slot_is(CHAINED_SLOT, lanes)
    moved = _per_first(moved_from > 0)
    field, count = _second_origins(p, first, moved, new_field, chained)
    landing = _second_landing(p, first, moved_from, moved, field, chained)
    ok, to, exceeding = _single_moves(field, count, p.die_b[:, None, None], landing,
                                      p.forbid, guard_corner=True)
    to = jnp.where(field > 0, to, 0)
    return SecondMoves(field, count, landing, ok | _slot_is(NO_SECOND_MOVE, lanes), to,
                       exceeding)


# --- rules on a pair ---

def _breaks_own_corner(p: Position, pair):
    """bool[N, *lanes]: the own corner is taken other than with two checkers at once, or
    left other than with its last two at once."""
    f0, t0, f1, t1 = pair
    bad = (t0 == OWN_CORNER) | (t1 == OWN_CORNER)
    bad &= (t0 != t1) & (p.corner == 0)
    return bad | (((f0 == OWN_CORNER) | (f1 == OWN_CORNER)) & (f0 != f1) & (p.corner == 2)
                  & (t0 != OWN_CORNER) & (t1 != OWN_CORNER))


def _on_opp_corner(pair):
    """bool[N, *lanes]: a move ends on the opponent's corner, other than as the rest of a
    tout d'une."""
    f0, t0, f1, t1 = pair
    return (t1 == OPP_CORNER) | ((t0 == OPP_CORNER) & (t0 != f1))


def _in_opp_fillable(p: Position, field):
    """bool[...]: `field` is in a quarter the opponent can still fill (only quarters 3 and
    4, fields 13-24, can be so on the mover's side of them)."""
    return (field > OWN_CORNER) & jnp.where(field > LAST_QUARTER - 1, p.opp_fillable[3],
                                            p.opp_fillable[2])


def _plays_in_opp_quarter(p: Position, pair):
    """bool[N, *lanes]: a move ends in a quarter the opponent can still fill (a tout d'une
    only rests on its way)."""
    f0, t0, f1, t1 = pair
    chained = (f1 != 0) & (t0 == f1)
    return (~chained & _in_opp_fillable(p, t0)) | _in_opp_fillable(p, t1)


def _pair_rules(p: Position, pair):
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


def _fills(board, short, second: SecondMoves, puis_pair):
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
    return _to_flat(full, A.fold(jnp.logical_or, B.quarter_filled(puissance_board)))


def _not_farthest(p: Position, pair, far_after_first, die0, die1):
    """bool[N, *lanes]: with `die0` for the first move and `die1` for the second, a checker
    borne off with an exceeding number is not the farthest (before the first move for the
    first, after it for the second)."""
    f0, t0, f1, t1 = pair
    dist0 = jnp.where(t0 == 0, OFF, t0) - f0
    dist1 = jnp.where(t1 == 0, OFF, t1) - f1
    exceed0 = (dist0 != 0) & (dist0 < die0)
    exceed1 = (dist1 != 0) & (dist1 < die1)
    return (exceed0 & (f0 != p.farthest)) | (exceed1 & (f1 != far_after_first))


def _exit_rules(p: Position, pair, single_first, far_after_first):
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
    Masks are uint8 0/1 (see `_mask`)."""

    # Pairs are component-major, [4, N, *lanes] (rows from1, to1, from2, to2; 0 = none /
    # borne off).
    pair: jnp.ndarray  # int8[4, N, *lanes]: the pair as generated
    listed: jnp.ndarray  # int8[4, N, *lanes]: the pair as the reference lists it (swapped)
    # uint8: both moves possible (exceeding numbers allowed), and the corner and
    # opponent-quarter rules hold (one mask: every list reads the three together)
    possible: jnp.ndarray
    exceeding: jnp.ndarray  # uint8: a move bears off with an exceeding number
    fills: jnp.ndarray  # uint8: after the pair a quarter is filled
    has_exit: jnp.ndarray  # uint8: a move bears off
    exit_outside_ok: jnp.ndarray  # uint8: bear-off rule, all checkers in the last quarter
    exit_farthest_ok: jnp.ndarray  # uint8: bear-off rule, exceeding numbers on the farthest
    is_full: jnp.ndarray  # uint8: two moves (or the puissance pair)
    # Which candidates list the same pair (see `_same_listed`):
    twin_same: jnp.ndarray  # uint8: the twin (same slots, other pass) lists the same pair
    double_exit: jnp.ndarray  # uint8: both moves bear off (listed lower field first)
    swapped: jnp.ndarray  # uint8: listed != pair (a double exit listed in the other order)
    # int8[2, N, *lanes]: for each move of the listed pair, the own checkers on fields up to
    # its origin before the pair (the reference numbers checkers by that count)
    listed_ordinal: jnp.ndarray
    order: jnp.ndarray  # int16: position in the reference's loop (unique among valid ones)


def _pairs(first: FirstMoves, second: SecondMoves, moved_from, puis_pair):
    """int8[4, N, *lanes]: each candidate's pair (from1, to1, from2, to2)."""
    lanes = _lanes(moved_from, 2)
    return jnp.stack([_to_flat(_each_second(moved_from, lanes), puis_pair[0]),
                      _to_flat(_each_second(first.to, lanes), puis_pair[1]),
                      _to_flat(second.field, puis_pair[2]), _to_flat(second.to, puis_pair[3])])


def _ordinals(p: Position, first: FirstMoves, moved_from, puis_pair, chained):
    """int8[2, N, *lanes]: for each move of each pair, the own checkers on fields up to its
    origin (the second on the board after the first move)."""
    cum = B.cumulative_checkers(p.board).astype(jnp.int8)
    slot_ordinal = lookup(cum, p.slot_field)  # [17, *lanes]
    first_ordinal = jnp.broadcast_to(slot_ordinal[:NUM_FIRST], moved_from.shape)
    return jnp.stack([
        _to_flat(_each_second(first_ordinal, _lanes(moved_from, 2)), lookup(cum, puis_pair[0])),
        _to_flat(jnp.where(chained, _per_first(lookup(cum, first.moved_to)), slot_ordinal),
                 lookup(cum, puis_pair[2]))])


def _reference_order(second_field, no_second):
    """int16[N, *lanes]: each candidate's position in the reference's loop: per pass, per
    first slot, the second fields 1..24 then "no second move", and the puissance pair."""
    lanes = _lanes(second_field, 3)
    pass_start = np.arange(2, dtype=np.int16) * REFERENCE_PASS_SIZE
    first_slot = np.arange(NUM_FIRST, dtype=np.int16)[:, None]
    reference = A.leading(pass_start[:, None, None] + first_slot * REFERENCE_SECONDS, len(lanes))
    second = jnp.where(no_second, NUM_FIELDS, second_field.astype(jnp.int16) - 1)
    return _to_flat(reference + second,
                    A.leading(pass_start + REFERENCE_PASS_SIZE - 1, len(lanes)))


def _candidate_masks(p: Position, first: FirstMoves, second: SecondMoves, pair, count,
                     moved_from, puis_pair, puis_ok):
    """The rule masks of `Candidates` (as bool, by field name) of the pairs `pair`; `count`:
    own checkers on each first move's field."""
    lanes = _lanes(moved_from, 2)
    f0, t0, f1, t1 = pair
    far_after_first = _to_flat(_each_second(first.farthest, lanes), 0)
    single_first = _to_flat(_each_second(jnp.broadcast_to(count == 1, moved_from.shape), lanes),
                            B.at_field(p.board, puis_pair[0]) == 1)
    outside_ok, farthest_ok = _exit_rules(p, pair, single_first, far_after_first)
    return dict(
        possible=(_to_flat(_each_second(first.ok, lanes) & second.ok, puis_ok)
                  & _pair_rules(p, pair)),
        exceeding=_to_flat(_per_first(first.exceeding) | second.exceeding, False),
        has_exit=((t0 == 0) & (f0 != 0)) | ((t1 == 0) & (f1 != 0)),
        exit_outside_ok=outside_ok, exit_farthest_ok=farthest_ok,
        is_full=_to_flat(jnp.broadcast_to(~_slot_is(NO_SECOND_MOVE, lanes), GRID + lanes),
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
    lanes = _lanes(p.board, 1)
    first_field, first_count = p.slot_field[:NUM_FIRST], p.slot_count[:NUM_FIRST]
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
                      listed_ordinal=jnp.where(swapped, ordinal[::-1], ordinal),
                      **{name: _mask(x) for name, x in masks.items()})


# --- the lists ---

def _exits_flat(grid, c: Candidates):
    """uint8[N, *lanes]: a [2, 15, 17, *lanes] mask of double exits, flat."""
    return _to_flat(grid, 0) & c.double_exit


def _same_listed(in_set, c: Candidates):
    """Two masks uint8[N, *lanes]: some candidate in `in_set` lists the same pair as this
    candidate; an earlier one (in the reference's loop order) does.

    Two candidates list the same pair when they move checkers from the same fields to the
    same fields: twins whose moves land on the same fields (doubles, bear-offs, the
    puissance pair), and two bear-offs whichever checker goes first, since those are
    listed lower field first. Bear-offs from the fields of slots i < k are thus listed by
    up to four candidates, in the order (pass 0, i then k), (0, k then i), (1, i then k),
    (1, k then i): the candidate and its transpose (slots swapped) in both passes.
    """
    lanes = _lanes(in_set, 1)
    twin = c.twin_same & other_pass(in_set)
    in_second_pass = _mask(A.leading(np.arange(NUM_CANDIDATES) >= PASS_SIZE, len(lanes)))
    same, earlier = in_set | twin, twin & in_second_pass
    exits = _to_slots(in_set & c.double_exit)[0]
    swapped = _transposed(exits)  # [2, 15, 17, *lanes]: the transpose lists the same pair
    either = exits | swapped
    later_slot_first = _mask(A.leading(np.arange(NUM_FIRST)[:, None] > np.arange(NUM_SLOTS),
                                       len(lanes)))
    exit_same = jnp.broadcast_to(either[0] | either[1], either.shape)
    exit_earlier = jnp.stack([later_slot_first & swapped[0],
                              either[0] | (later_slot_first & swapped[1])])
    return same | _exits_flat(exit_same, c), earlier | _exits_flat(exit_earlier, c)


def earliest(in_set, c: Candidates):
    """uint8[N, *lanes]: the candidate of `in_set` that the reference lists first (none if
    empty)."""
    return in_set & (c.order == jnp.min(jnp.where(in_set, c.order, NO_ORDER), axis=0))


def member(in_set, c: Candidates):
    """uint8[N, *lanes]: whether each candidate's generated pair is listed by a candidate in
    `in_set` (never for a swapped pair, which no candidate lists in that order)."""
    return _not(c.swapped) & _same_listed(in_set, c)[0]


def first_listed(in_set, c: Candidates):
    """uint8[N, *lanes]: candidates in `in_set` whose listed pair no earlier candidate lists
    (dedup)."""
    return in_set & _not(_same_listed(in_set, c)[1])


def _listed(ok, any_full, any_first_pass, c: Candidates):
    """uint8[N, *lanes]: the sequences one call of the reference's generator lists (before
    dedup) when `ok` are the candidates that pass its rules (exceeding numbers allowed).

    Pairs with a single move are dropped when any pair has two (`any_full`: some full
    candidate is `ok`); without one, a first move alone is listed when no second move goes
    with it, which then holds for all of them, and in the second pass only when the first
    pass listed nothing (`any_first_pass`: some `ok` candidate in the first pass). Both
    flags are per game, so a list costs one reduction over the candidates, not three.
    """
    full = c.is_full
    alone = ok & _not(full) & (_first_pass(ok) | _not(any_first_pass))
    return jnp.where(any_full, ok & full, alone)


def _some_listed(any_full, any_first_pass, in_full, in_first_single, in_single):
    """bool[*lanes]: `_listed` lists some candidate of a set, given its two flags and
    whether some candidate passing its rules is in the set as a full pair, as a single move
    of the first pass, as a single move."""
    return jnp.where(any_full, in_full, in_first_single | (~any_first_pass & in_single))


class ListFlags(NamedTuple):
    """bool[*lanes]: what the first pass over the candidates finds (`_list_flags`), from
    which `filling`'s and `exact`'s flags of `_listed`, and whether each is empty, follow."""

    any_full: jnp.ndarray  # some possible full pair
    any_first: jnp.ndarray  # some possible candidate in the first pass
    fills_full: jnp.ndarray  # some possible full pair fills a quarter
    fills_first_single: jnp.ndarray  # some possible single move of the first pass fills one
    fills_single: jnp.ndarray  # some possible single move fills one
    # (`exact` lists full pairs only: no move alone without exceeding numbers)
    exact_filled: jnp.ndarray  # some exact full pair is a filling full pair
    exact_free: jnp.ndarray  # some exact full pair


@materialised
def _list_flags(c: Candidates, single, first_pass, fills, no_excess) -> ListFlags:
    """The `ListFlags` of the candidates, in one reduction (`fills`: possible and filling,
    `no_excess`: possible full pairs without exceeding numbers)."""
    possible, full = c.possible, c.is_full
    return ListFlags(*A.any_each([
        possible & full, possible & first_pass, fills & full,
        fills & single & first_pass, fills & single,
        no_excess & member(fills & full, c), no_excess], reduce=reduce_candidates))


@materialised
def _filling(c: Candidates, any_full, any_first):
    """uint8[N, *lanes]: the `filling` list: what the generator lists of the possible
    candidates (exit and quarter rules ignored), kept where a quarter is filled."""
    return c.fills & _listed(c.possible, any_full, any_first, c)


@materialised
def _filling_rule(any_filling, filling, c: Candidates):
    """uint8[N, *lanes]: the filling rule: when some sequence fills a quarter, only the
    pairs of `filling` are allowed."""
    return _not(_mask(any_filling)) | member(filling, c)


@materialised
def _exact(no_excess, allowed):
    """uint8[N, *lanes]: the `exact` list: full pairs without exceeding numbers that the
    filling rule allows."""
    return no_excess & allowed


def _exit_rule(c: Candidates, exact, any_exact):
    """uint8[N, *lanes]: the bear-off rule: all checkers in the last quarter, and an
    exceeding number only when no exact sequence exists, on the farthest checker (or the
    pair is exact)."""
    return c.exit_outside_ok & (member(exact, c) | (_mask(~any_exact) & c.exit_farthest_ok))


@materialised
def _legal_candidates(c: Candidates, allowed, exit_ok):
    """uint8[N, *lanes]: the candidates that pass every rule (`allowed` by the filling rule,
    `exit_ok` by the bear-off rule when they bear off)."""
    return c.possible & allowed & (_not(c.has_exit) | exit_ok)


class Probes(NamedTuple):
    """Masks uint8[N, *lanes] that `move_lists` reduces in its last pass over the
    candidates, as `Found`."""

    in_legal: tuple = ()  # whether some legal sequence is in each
    any: tuple = ()  # whether some candidate is in each
    count: jnp.ndarray | None = None  # how many candidates are in it


class Found(NamedTuple):
    """What `Probes` found, per game: bool[*lanes] per mask, and int32[*lanes] counted."""

    in_legal: list
    any: list
    count: jnp.ndarray | None


def no_probes(c: Candidates, filling) -> Probes:
    """Nothing to find in the last pass."""
    return Probes()


def _cases(ok, q, full, single, first_pass):
    """uint8 masks [3][N, *lanes]: the candidates of `ok` in `q` in each case of `_listed`:
    full pairs, single moves of the first pass, single moves."""
    return [ok & case & q for case in (full, single & first_pass, single)]


class LastPass(NamedTuple):
    """What the last pass over the candidates finds (`_last_pass`), per game."""

    legal_full: jnp.ndarray  # bool: some legal full pair
    legal_first: jnp.ndarray  # bool: some legal candidate in the first pass
    some_single: jnp.ndarray  # bool: some legal single move
    in_legal: list  # per probe, [3] bool: some legal candidate in it, per case (`_cases`)
    any: list  # bool per probe of `Probes.any`
    count: jnp.ndarray | None  # int32: `Probes.count` counted


@materialised
def _last_pass(c: Candidates, ok, filling, single, first_pass, probes) -> LastPass:
    """The `legal` list's flags of `_listed`, whether it is empty, and what `probes(c,
    filling)` asks, in one reduction over the candidates."""
    asked = probes(c, filling)
    full = c.is_full
    masks = [ok & full, ok & first_pass, ok & single]
    for q in asked.in_legal:
        masks += _cases(ok, q, full, single, first_pass)
    flags = A.any_each(masks + list(asked.any), reduce=reduce_candidates)
    in_legal = [flags[k:k + 3] for k in range(3, len(masks), 3)]
    count = (None if asked.count is None else
             reduce_candidates(asked.count, jax.lax.add, 0, jnp.int32))
    return LastPass(*flags[:3], in_legal, flags[len(masks):], count)


class MoveLists(NamedTuple):
    """The reference's three sequence lists for one position and roll, as candidate masks."""

    candidates: Candidates
    filling: jnp.ndarray  # uint8[N, *lanes]: quarter-filling sequences (exit/quarter rules ignored)
    exact: jnp.ndarray  # uint8[N, *lanes]: sequences without exceeding numbers (exit rule ignored)
    legal: jnp.ndarray  # uint8[N, *lanes]: the legal sequences
    some: jnp.ndarray  # bool[*lanes]: some sequence is legal
    found: Found  # what `move_lists`' probes found


@materialising
def move_lists(board, dice,
               probes: Callable[[Candidates, jnp.ndarray], Probes] = no_probes) -> MoveLists:
    """The three lists (see the module's docstring) of view board int[24, *lanes] with dice
    int[2, *lanes].

    Each list is "the candidates passing its rules" cut by `_listed`'s two per-game flags.
    The flags of `filling` and `exact`, and whether each is empty, follow from the
    candidates alone, so one reduction finds them all (`_list_flags`); `legal`'s flags and
    what `probes(c, filling)` asks for are a second (`_last_pass`): two passes over the
    candidates where the lists built one after the other took seven.
    """
    c = candidates(board, dice)
    single, first_pass = _not(c.is_full), _first_pass(c.possible)
    fills = c.possible & c.fills
    no_excess = c.possible & _not(c.exceeding) & c.is_full
    flags = _list_flags(c, single, first_pass, fills, no_excess)
    any_filling = _some_listed(flags.any_full, flags.any_first, flags.fills_full,
                               flags.fills_first_single, flags.fills_single)
    any_exact = jnp.where(any_filling, flags.any_full & flags.exact_filled, flags.exact_free)
    filling = _filling(c, flags.any_full, flags.any_first)
    allowed = _filling_rule(any_filling, filling, c)
    exact = _exact(no_excess, allowed)
    ok = _legal_candidates(c, allowed, _exit_rule(c, exact, any_exact))
    last = _last_pass(c, ok, filling, single, first_pass, probes)
    in_legal = [_some_listed(last.legal_full, last.legal_first, *found)
                for found in last.in_legal]
    return MoveLists(c, filling, exact, _listed(ok, last.legal_full, last.legal_first, c),
                     last.legal_full | last.some_single, Found(in_legal, last.any, last.count))


# --- actions ---

def encode(dice, pair, ordinal):
    """Action index int32[...] of move pairs int[4, ...] (component-major) with dice
    int[2, *lanes]; `ordinal` int[2, ...]: the own checkers on fields up to each move's
    origin (`Candidates.listed_ordinal`).

    The reference infers which die the first move used from the pair: the distance of a
    normal move, the other die when only the second move is normal, and for two bear-offs
    the bigger die when the first checker is the lower one. A puissance move is one short of
    its die. Checkers are numbered by cumulative count; the second on the board after the
    first move.
    """
    # int8 until the final index: fields, dice and checker ordinals are small
    a, b, c, d = (pair[k].astype(jnp.int8) for k in range(4))
    v0, v1 = dice[0].astype(jnp.int8), dice[1].astype(jnp.int8)
    hi, lo = jnp.maximum(v0, v1), jnp.minimum(v0, v1)
    two_exits = jnp.where((a < c) | (c == 0), hi, lo)
    die1 = jnp.where(b > 0, b - a, jnp.where(d > 0, jnp.where(d - c == v0, v1, v0), two_exits))
    die1 += (b == OWN_CORNER) & (d == OWN_CORNER) & (hi + jnp.minimum(a, c) != OWN_CORNER)
    checker1 = ordinal[0].astype(jnp.int32)
    checker2 = ordinal[1] - ((a > 0) & (c >= a)) + ((a > 0) & (b > 0) & (c >= b))
    return (jnp.where(die1 == v0, FIRST_MOVE, FIRST_MOVE + ORDER_ACTIONS) + CHECKERS * checker1
            + checker2.astype(jnp.int32))


def move_actions(board, dice, lists: MoveLists):
    """bool[514, *lanes]: the Move actions of the legal sequences in `lists`.

    The scatter writes games first (one flat index per candidate; out of range, dropped,
    for those not listed), as the state's mask is laid out: the transpose back to games
    last here and `game_minor`'s transpose to games first cancel, where a mask written
    games last is transposed by a kernel of its own."""
    lanes = _lanes(board, 1)
    games = int(np.prod(lanes))
    c = lists.candidates
    action = encode(dice, c.listed, c.listed_ordinal).reshape(NUM_CANDIDATES, games)
    flat = jnp.where(lists.legal.reshape(action.shape),
                     action + NUM_ACTIONS * jnp.arange(games), NUM_ACTIONS * games)
    mask = jnp.zeros(games * NUM_ACTIONS, bool).at[flat.ravel()].set(True, mode="drop")
    return jnp.moveaxis(mask.reshape(lanes + (NUM_ACTIONS,)), -1, 0) if lanes else mask


@game_minor
def legal_moves(board, dice):
    """bool[514]: the Move actions of the legal sequences of view board int[24] with dice
    int[2] (the decision's mask before `decision_mask`), and whether there is one."""
    lists = move_lists(board, dice)
    return move_actions(board, dice, lists), lists.some


def decode(board, dice, action):
    """Move pair int32[4] of a Move action index (2..513) on view board int32[24].

    As the reference: the first checker's field plus its die (beyond 24: borne off), then
    the second checker counted on the board after the first move; both moves ending on the
    opponent's corner means the own corner taken par puissance.
    """
    code = action - FIRST_MOVE
    die_first = jnp.where(code < ORDER_ACTIONS, dice[0], dice[1])
    die_second = jnp.where(code < ORDER_ACTIONS, dice[1], dice[0])
    code = code % ORDER_ACTIONS
    upto = B.checkers_upto(board)
    from1 = B.checker_field(upto, code // CHECKERS)
    to1 = jnp.where(from1 + die_first > NUM_FIELDS, 0, from1 + die_first)
    # the checkers up to each field after the first move (one leaves from1, one arrives)
    fields = jnp.arange(1, NUM_FIELDS + 1)
    moved = from1 > 0
    upto = upto - (moved & (fields >= from1)) + (moved & (to1 > 0) & (fields >= to1))
    from2 = B.checker_field(upto, code % CHECKERS)
    to2 = jnp.where(from2 + die_second > NUM_FIELDS, 0, from2 + die_second)
    puissance = (to1 == OPP_CORNER) & (to2 == OPP_CORNER)
    to1, to2 = jnp.where(puissance, OWN_CORNER, to1), jnp.where(puissance, OWN_CORNER, to2)
    return jnp.stack([from1, jnp.where(from1 > 0, to1, 0), from2, jnp.where(from2 > 0, to2, 0)])


def legal_action_mask(board, dice, hold_or_go):
    """bool[514] for a decision on view board int32[24] with dice int32[2]."""
    return decision_mask(dice, *legal_moves(board, dice), hold_or_go)


def decision_mask(dice, moves, some_move, hold_or_go):
    """bool[514]: the legal actions of a decision whose legal Move actions are `moves`
    (`some_move`: there is one).

    In the Move stage an empty list means the empty action; in HoldOrGoChoice, Go is added
    and there is no empty fallback.
    """
    hold_or_go = jnp.asarray(hold_or_go, bool)
    actions = jnp.arange(NUM_ACTIONS)
    empty_action = jnp.where(dice[0] >= dice[1], FIRST_MOVE, FIRST_MOVE + ORDER_ACTIONS)
    moves |= (actions == empty_action) & ~some_move & ~hold_or_go
    return jnp.where(actions == GO, hold_or_go, moves)
