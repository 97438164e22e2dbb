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
the first move's destination when it was empty, and k = 16 (`EMPTY_SLOT`) is "no second
move"; 512 candidates instead of the 752 of a second slot per field. Each pass ends with
one extra candidate for taking the rest corner "par puissance". `Candidates.order` is the
position of each candidate in the reference's loop order: "first in the list" is a
minimum over it.

Per-candidate arrays are int8 (fields, counts and dice are small): narrow arrays are what
makes this fast on CPU, where the cost is proportional to the elements touched.

Games are laid out *game-minor*: every array has the structure axes first (fields,
candidates, ...) and then `lanes`, trailing axes shared by all arguments: none for one
position, or one axis of games. Under `jax.vmap`, `legal_moves` and
`scoring.roll_outcome` move the batch axis there (`lanes.game_minor`): XLA's CPU loops
then run along contiguous games, whereas with the batch first they run along the short
structure axes and mostly do not vectorise. For the same reason candidate masks are bytes
(`_mask`). What every candidate reads about the position (`Position`), the candidates and
each list are materialised once (`lanes.computed_once`).

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

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax import board as B
from trictrac_jax.lanes import append, computed_once, game_minor, lookup

NUM_PASSES, NUM_FIRST = 2, 15
CHAINED_SLOT, EMPTY_SLOT = NUM_FIRST, NUM_FIRST + 1  # second slots after the 15 own fields
NUM_SLOTS = NUM_FIRST + 2
GRID = (NUM_PASSES, NUM_FIRST, NUM_SLOTS)  # (pass, first slot, second slot)
PASS_SIZE = NUM_FIRST * NUM_SLOTS + 1  # + the puissance candidate of the pass
NUM_CANDIDATES = NUM_PASSES * PASS_SIZE
# The reference's loop runs over 24 second fields + "none" per first field, then puissance.
REFERENCE_PASS_SIZE = NUM_FIRST * 25 + 1
NO_ORDER = 2**15 - 1  # after every `Candidates.order` (int16)


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


def _single_moves(field, count, die, landing, forbid, guard_corner):
    """The move of a checker from `field` with `die`. Returns (ok, dest, exceeding).

    All arguments broadcast together: `count` own checkers on `field` (none: no move),
    `landing` the checkers on field + `die`. `guard_corner` forbids leaving the own corner
    while it holds exactly 2 checkers (second move only: the pair rules check the first).
    """
    raw = field + die
    dest = jnp.where(raw >= 25, 0, raw)
    exceeding = raw > 25
    ok = (count > 0) & ~((dest == 0) & forbid)
    ok &= landing >= 0  # an opponent checker blocks the field
    if guard_corner:
        ok &= ~((field == B.OWN_CORNER) & (count == 2))
    return ok, dest, exceeding


def _pair_rules(p: Position, pair):
    """Rules on a pair that do not depend on other sequences: bool[N, *lanes]."""
    f0, t0, f1, t1 = pair
    corner = p.corner
    # Own corner: taken with two checkers at once, left with its last two at once.
    bad = (t0 == 12) | (t1 == 12)
    bad &= (t0 != t1) & (corner == 0)
    bad |= ((f0 == 12) | (f1 == 12)) & (f0 != f1) & (corner == 2) & (t0 != 12) & (t1 != 12)
    # Opponent's corner: never a destination, except as the rest of a tout d'une.
    bad |= (t1 == 13) | ((t0 == 13) & (t0 != f1))
    # No play in a quarter the opponent can still fill (a tout d'une only rests on its end).
    # (only quarters 3 and 4, fields 13-24, can be fillable by the opponent there)
    in_fillable = lambda t: (t > 12) & jnp.where(t > 18, p.opp_fillable[3], p.opp_fillable[2])
    chained = (f1 != 0) & (t0 == f1)
    bad |= (~chained & in_fillable(t0)) | in_fillable(t1)
    # (Taking the corner par puissance when it can be taken by effect is excluded by
    # `_puissance_pair`: no other candidate is a puissance move.)
    return ~bad


def can_take_corner_by_effect(board, dice):
    """The empty own corner is reachable directly: an own checker at 12 - d for each die."""
    src = B.at_field(board, 12 - dice)
    return (B.at_field(board, 12) == 0) & (src[0] > 0) & (src[1] > 0)


def _puissance_pair(board, dice):
    """The canonical puissance pair (lower field first) and whether it exists: [4, *lanes]."""
    src = 13 - dice  # fields one step short of the opponent's corner
    counts = B.at_field(board, src)
    double = dice[0] == dice[1]
    exists = jnp.where(double, counts[0] >= 2, (counts[0] >= 1) & (counts[1] >= 1))
    exists &= (B.at_field(board, 12) == 0) & (B.at_field(board, 13) == 0)
    lo, hi = jnp.minimum(src[0], src[1]), jnp.maximum(src[0], src[1])
    twelve = jnp.full_like(lo, 12)
    return jnp.stack([lo, twelve, hi, twelve]), exists & ~can_take_corner_by_effect(board, dice)


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


class Position(NamedTuple):
    """What the candidates read about the position and roll, per game ([..., *lanes]).

    Materialised before the candidates are built (`lanes.computed_once`): XLA would
    otherwise recompute each of these values, and read the board through the transpose
    that brought it into the lanes layout, in every loop over candidates that uses them.
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
    # own checkers (25: none)
    # Own fields by slot (slot k: the k-th own field from field 1). Slots 15 and 16 are
    # never occupied, so per-slot arrays have the 17 entries of a second slot.
    in_slot: jnp.ndarray  # bool[17, 24]: field f is the field of slot k
    slot_field: jnp.ndarray  # int8[17]: the field of each slot, 0 for unused slots
    slot_count: jnp.ndarray  # int8[17]: own checkers on it


def position(board, dice) -> Position:
    """The `Position` of view board int[24, *lanes] and dice int[2, *lanes], in int8 where
    a value is a field number, a checker count or a die."""
    board, dice = board.astype(jnp.int8), dice.astype(jnp.int8)
    d_max, d_min = jnp.maximum(dice[0], dice[1]), jnp.minimum(dice[0], dice[1])
    die_a, die_b = jnp.stack([d_max, d_min]), jnp.stack([d_min, d_max])
    lanes = board.ndim - 1
    occupied = board > 0
    outside = occupied & (A.leading(B.FIELDS, lanes) < 19)
    slot_of = A.prefix_sum(occupied.astype(jnp.int8)) - 1
    in_slot = occupied & (slot_of == A.leading(np.arange(NUM_SLOTS)[:, None], lanes))
    pick = lambda per_field: jnp.sum(jnp.where(in_slot, per_field, 0), axis=1, dtype=jnp.int8)
    spare = board > 2
    lowest_spare = B.lowest_field(spare)
    next_spare = B.lowest_field(spare & (A.leading(B.FIELDS, lanes) > lowest_spare))
    return Position(board=board, dice=dice, die_a=die_a, die_b=die_b,
                    in_slot=in_slot, slot_field=pick(A.leading(B.FIELDS, lanes)),
                    slot_count=pick(board),
                    ahead_a=B.ahead(board, die_a), ahead_b=B.ahead(board, die_b),
                    forbid=B.forbid_exits(board, dice),
                    corner=jnp.abs(B.at_field(board, B.OWN_CORNER)),
                    opp_fillable=B.opp_fillable_quarters(board),
                    outside=jnp.sum(outside, axis=0), farthest=B.exit_farthest(board),
                    short=jnp.sum(B.quarters(board) < 2, axis=1, dtype=jnp.int8),
                    spare=jnp.stack([lowest_spare, next_spare]).astype(jnp.int8))


def candidates(board, dice) -> Candidates:
    """All candidates for view board int[24, *lanes] and dice int[2, *lanes]."""
    once = computed_once(board)
    p = once(lambda: position(board, dice))
    board, dice, die_a, die_b, forbid = p.board, p.dice, p.die_a, p.die_b, p.forbid
    in_slot, slot_field, slot_count = p.in_slot, p.slot_field, p.slot_count
    lanes = _lanes(board, 1)
    const = lambda values: A.leading(values, len(lanes))
    first_field, first_count = slot_field[:NUM_FIRST], slot_count[:NUM_FIRST]
    # [24, 2, *lanes] per field and pass -> [2, 17, *lanes] per pass and slot
    at_slots = lambda per_field: jnp.swapaxes(jnp.sum(
        jnp.where(in_slot[:, :, None], per_field[None], 0), axis=1, dtype=jnp.int8), 0, 1)

    # First moves [2, 15, *lanes] from each own field, materialised like the `Position`:
    # every second move reads them.
    moved_from = jnp.broadcast_to(first_field, (2,) + first_field.shape)

    def first_moves():
        landing_a = at_slots(p.ahead_a)[:, :NUM_FIRST]
        ok0, to0, exc0 = _single_moves(first_field, first_count, die_a[:, None], landing_a,
                                       forbid, guard_corner=False)
        moved_to = jnp.where(ok0, to0, 0)
        return (landing_a, ok0, to0, exc0, moved_to,
                *_after_first(p, moved_from, jnp.broadcast_to(first_count, moved_from.shape),
                              moved_to, landing_a))

    landing_a, ok0, to0, exc0, moved_to, short1, far1 = once(first_moves)
    # The destination is a second slot of its own (CHAINED_SLOT) when it was empty.
    new_field = (moved_to > 0) & (landing_a == 0)
    landing0 = p.ahead_b

    # Second moves [2, 15, 17, *lanes] from each second slot after each first move: the
    # field, its checkers and those where it lands, from the board's corrected by the first
    # move (cheaper than reading them off the 30 boards after a first move). The empty slot
    # has no field, hence no move.
    col = lambda x: x[:, :, None]  # [2, 15, *lanes] -> [2, 15, 1, *lanes]
    per_second = lambda x: x[:, None]  # [2, 17, *lanes] -> [2, 1, 17, *lanes]
    chained = const(np.arange(NUM_SLOTS) == CHAINED_SLOT)
    is_empty = const(np.arange(NUM_SLOTS) == EMPTY_SLOT)
    moved = col(moved_from > 0)
    arrived = moved & (slot_field == col(moved_to)) & (slot_field > 0)
    left = moved & const(np.eye(NUM_FIRST, NUM_SLOTS, dtype=bool))
    from1 = jnp.where(chained, col(jnp.where(new_field, moved_to, 0)), slot_field)
    count1 = jnp.where(chained, col(new_field), slot_count - left + arrived).astype(jnp.int8)
    landing_at_to = jnp.sum(jnp.where(A.leading(B.FIELDS, 2 + len(lanes)) == moved_to[None],
                                      landing0[:, :, None], 0), axis=0, dtype=jnp.int8)
    land_before = jnp.where(chained, col(landing_at_to), per_second(at_slots(landing0)))
    land = from1 + die_b[:, None, None]
    landing1 = (land_before - (moved & (land == col(moved_from)))
                + (moved & (land == col(moved_to))))
    ok1, to1, exc1 = _single_moves(from1, count1, die_b[:, None, None], landing1, forbid,
                                   guard_corner=True)
    to1 = jnp.where(from1 > 0, to1, 0)
    second_ok = ok1 | is_empty

    grid = GRID + lanes
    first = lambda x: jnp.broadcast_to(col(x), grid)
    puis_pair, puis_ok = _puissance_pair(board, dice)
    pair = jnp.stack([_to_flat(first(moved_from), puis_pair[0]), _to_flat(first(to0), puis_pair[1]),
                      _to_flat(from1, puis_pair[2]), _to_flat(to1, puis_pair[3])])
    f0, t0, f1, t1 = pair
    double_exit = (t0 == 0) & (t1 == 0) & (f0 != 0) & (f1 != 0)
    swapped = double_exit & (f1 < f0)
    listed = jnp.where(swapped, jnp.stack([f1, t1, f0, t0]), pair)
    cum = B.cumulative_checkers(board).astype(jnp.int8)
    slot_ordinal = lookup(cum, slot_field)  # [17, *lanes]
    ordinal = jnp.stack([
        _to_flat(first(jnp.broadcast_to(slot_ordinal[:NUM_FIRST], moved_from.shape)),
                 lookup(cum, puis_pair[0])),
        _to_flat(jnp.where(chained, col(lookup(cum, moved_to)), slot_ordinal),
                 lookup(cum, puis_pair[2]))])
    listed_ordinal = jnp.where(swapped, ordinal[::-1], ordinal)
    pass_start = np.arange(2, dtype=np.int16) * REFERENCE_PASS_SIZE
    first_slot = np.arange(NUM_FIRST, dtype=np.int16)[:, None]
    reference = const(pass_start[:, None, None] + first_slot * 25)
    order = _to_flat(reference + jnp.where(is_empty, 24, from1.astype(jnp.int16) - 1),
                     const(pass_start + REFERENCE_PASS_SIZE - 1))

    far_after_first = _to_flat(first(far1), 0)
    single_first = _to_flat(first(jnp.broadcast_to(first_count == 1, moved_from.shape)),
                            B.at_field(board, puis_pair[0]) == 1)
    outside_ok, farthest_ok = _exit_rules(p, pair, single_first, far_after_first)
    masks = dict(
        possible=_to_flat(first(ok0) & second_ok, puis_ok) & _pair_rules(p, pair),
        exceeding=_to_flat(col(exc0) | exc1, False),
        has_exit=((t0 == 0) & (f0 != 0)) | ((t1 == 0) & (f1 != 0)),
        exit_outside_ok=outside_ok, exit_farthest_ok=farthest_ok,
        is_full=_to_flat(jnp.broadcast_to(~is_empty, grid), True),
        fills=_fills(board, short1, from1, count1, landing1, second_ok, to1, puis_pair),
        # (the chained slots of the two passes start from the same field only for doubles,
        # where t0 is the same too)
        twin_same=(other_pass(t0) == t0) & (other_pass(t1) == t1),
        double_exit=double_exit, swapped=swapped)
    return Candidates(pair=pair, listed=listed, order=order, listed_ordinal=listed_ordinal,
                      **{name: _mask(x) for name, x in masks.items()})


def _quarter_of(field):
    """bool[4, ...]: the quarter of each field (none for 0), by comparisons (no division)."""
    starts = A.leading(6 * np.arange(4), field.ndim).astype(field.dtype)
    return (field[None] > starts) & (field[None] <= starts + 6)


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
    none = jnp.int8(25)
    arrival = lambda holds: jnp.where(arrives & holds, to, none)
    # the lowest own field: the origin is vacated when it is the lowest and held one checker
    vacated = (field == p.slot_field[0]) & (count == 1)
    lowest = jnp.where(vacated, p.slot_field[1], p.slot_field[0])
    lowest = jnp.minimum(jnp.where(lowest > 0, lowest, none), arrival(True))
    # the lowest field holding more than 2 (used when a quarter is filled)
    spare = jnp.where((field == p.spare[0]) & (count == 3), p.spare[1], p.spare[0])
    spare = jnp.minimum(spare, arrival(landing >= 2))
    filled = A.fold(jnp.logical_or, short == 0)
    return short, jnp.where(filled & (spare < none), spare, lowest)


def _fills(board, short, from1, count1, landing1, second_ok, to1, puis_pair):
    """bool[N, *lanes]: a quarter is filled after the candidate's pair.

    Counted per quarter as fields holding fewer than 2 checkers after the first move
    (`short`, [4, 2, 15, *lanes]); the second move can only make its origin short (from 2
    checkers) or its destination full (from 1 checker). This avoids building a board per
    candidate.
    """
    quarter = _quarter_of
    leaves = (count1 == 2)[None] & quarter(from1)
    arrives = ((landing1 == 1) & (to1 > 0))[None] & quarter(to1)
    after2 = short[:, :, :, None] + leaves - arrives  # [4, 2, 15, 17, *lanes]
    full = A.fold(jnp.logical_or, after2 == 0) & second_ok
    puissance_board = B.apply_move(B.apply_move(board, puis_pair[0], puis_pair[1]),
                                   puis_pair[2], puis_pair[3])
    return _to_flat(full, A.fold(jnp.logical_or, B.quarter_filled(puissance_board)))


def _exit_rules(p: Position, pair, single_first, far_after_first):
    """The parts of the bear-off rule that look at the pair alone: two bool[N, *lanes].

    * every own checker must be in the last quarter, except a single checker that the
      first move brings there;
    * a checker borne off with an exceeding number must be the farthest one (checked on
      the board before the first move for the first, after it for the second), in one of
      the two die orders.
    """
    f0, t0, f1, t1 = pair
    carried_in = (f0 < 19) & single_first & (t0 > 18)
    outside_ok = p.outside - carried_in == 0

    far0, far1 = p.farthest, far_after_first
    dist0 = jnp.where(t0 == 0, 25, t0) - f0
    dist1 = jnp.where(t1 == 0, 25, t1) - f1

    def not_farthest(die0, die1):
        exceed0 = (dist0 != 0) & (dist0 < die0)
        exceed1 = (dist1 != 0) & (dist1 < die1)
        return (exceed0 & (f0 != far0)) | (exceed1 & (f1 != far1))

    farthest_ok = ~(not_farthest(p.dice[0], p.dice[1]) & not_farthest(p.dice[1], p.dice[0]))
    return outside_ok, farthest_ok


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
    to_flat = lambda grid: _to_flat(grid, 0) & c.double_exit
    return same | to_flat(exit_same), earlier | to_flat(exit_earlier)


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


def _first_pass(like):
    """uint8[N, 1, ...]: the candidates of the first pass (bigger die first), to broadcast
    against `like` [N, *lanes]."""
    return _mask(A.leading(np.arange(NUM_CANDIDATES) < PASS_SIZE, like.ndim - 1))


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


class MoveLists(NamedTuple):
    """The reference's three sequence lists for one position and roll, as candidate masks."""

    candidates: Candidates
    filling: jnp.ndarray  # uint8[N, *lanes]: quarter-filling sequences (exit/quarter rules ignored)
    exact: jnp.ndarray  # uint8[N, *lanes]: sequences without exceeding numbers (exit rule ignored)
    legal: jnp.ndarray  # uint8[N, *lanes]: the legal sequences
    some: jnp.ndarray  # bool[*lanes]: some sequence is legal
    found: Found  # what `move_lists`' probes found


def move_lists(board, dice, probes=lambda c, filling: Probes()) -> MoveLists:
    """The three lists (see the module's docstring) of view board int[24, *lanes] with dice
    int[2, *lanes].

    Each list is "the candidates passing its rules" (`ok`) cut by `_listed`'s two per-game
    flags. The flags of `filling` and `exact`, and whether each is empty, follow from the
    candidates alone (each case written out), so one reduction finds them all; `legal`'s
    flags and what `probes(c, filling)` asks for are a second: two passes over the
    candidates where the lists built one after the other took seven.
    """
    once = computed_once(board)
    c = once(lambda: candidates(board, dice))
    possible, full = c.possible, c.is_full
    single = _not(full)
    first_pass = _first_pass(possible)
    fills = possible & c.fills
    # `exact` lists full pairs only (no move alone without exceeding numbers); when
    # `filling` holds single moves only, no full pair lists one of its pairs, and `exact`
    # is empty.
    no_excess = possible & _not(c.exceeding) & full
    (any_full, any_first, fills_full, fills_first_single, fills_single, exact_filled,
     exact_free) = once(lambda: A.any_each([
         possible & full, possible & first_pass, fills & full,
         fills & single & first_pass, fills & single,
         no_excess & member(fills & full, c), no_excess]))
    any_filling = jnp.where(any_full, fills_full,
                            fills_first_single | (~any_first & fills_single))
    any_exact = jnp.where(any_filling, any_full & exact_filled, exact_free)

    filling = once(lambda: c.fills & _listed(possible, any_full, any_first, c))
    allowed = once(lambda: _not(_mask(any_filling)) | member(filling, c))  # the filling rule
    exact = once(lambda: no_excess & allowed)
    exit_ok = c.exit_outside_ok & (member(exact, c) | (_mask(~any_exact) & c.exit_farthest_ok))
    ok = once(lambda: possible & allowed & (_not(c.has_exit) | exit_ok))

    def last_pass():
        # Whether some legal sequence is in a mask `q`, per case of `_listed`.
        asked = probes(c, filling)
        masks = [ok & full, ok & first_pass, ok & single] + [
            ok & m & q for q in asked.in_legal for m in (full, single & first_pass, single)]
        flags = A.any_each(masks + list(asked.any))
        count = None if asked.count is None else jnp.sum(asked.count, axis=0, dtype=jnp.int32)
        return flags[:len(masks)], flags[len(masks):], count

    flags, found_any, count = once(last_pass)
    legal_full, legal_first, some_single = flags[:3]
    in_legal = [jnp.where(legal_full, f_full, f_first | (~legal_first & f_single))
                for f_full, f_first, f_single in zip(*[iter(flags[3:])] * 3)]
    legal = _listed(ok, legal_full, legal_first, c)
    return MoveLists(c, filling, exact, legal, legal_full | some_single,
                     Found(in_legal, found_any, count))


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
    die1 += (b == 12) & (d == 12) & (hi + jnp.minimum(a, c) != 12)
    checker1 = ordinal[0].astype(jnp.int32)
    checker2 = ordinal[1] - ((a > 0) & (c >= a)) + ((a > 0) & (b > 0) & (c >= b))
    return jnp.where(die1 == v0, 2, 258) + 16 * checker1 + checker2.astype(jnp.int32)


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
    flat = jnp.where(lists.legal.reshape(action.shape), action + 514 * jnp.arange(games),
                     514 * games)
    mask = jnp.zeros(games * 514, bool).at[flat.ravel()].set(True, mode="drop")
    return jnp.moveaxis(mask.reshape(lanes + (514,)), -1, 0) if lanes else mask


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
    code = action - 2
    die_first = jnp.where(code < 256, dice[0], dice[1])
    die_second = jnp.where(code < 256, dice[1], dice[0])
    code = code % 256
    upto = B.checkers_upto(board)
    from1 = B.checker_field(upto, code // 16)
    to1 = jnp.where(from1 + die_first > 24, 0, from1 + die_first)
    # the checkers up to each field after the first move (one leaves from1, one arrives)
    fields = jnp.arange(1, 25)
    moved = from1 > 0
    upto = upto - (moved & (fields >= from1)) + (moved & (to1 > 0) & (fields >= to1))
    from2 = B.checker_field(upto, code % 16)
    to2 = jnp.where(from2 + die_second > 24, 0, from2 + die_second)
    puissance = (to1 == 13) & (to2 == 13)
    to1, to2 = jnp.where(puissance, 12, to1), jnp.where(puissance, 12, to2)
    return jnp.stack([from1, jnp.where(from1 > 0, to1, 0), from2, jnp.where(from2 > 0, to2, 0)])


def legal_action_mask(board, dice, hold_or_go):
    """bool[514] for a decision on view board int32[24] with dice int32[2]."""
    return decision_mask(dice, *legal_moves(board, dice), hold_or_go)


def decision_mask(dice, moves, some_move, hold_or_go):
    """bool[514]: the legal actions of a decision whose legal Move actions are `moves`
    (`some_move`: there is one).

    In the Move stage an empty list means the empty action; in HoldOrGoChoice, Go (1) is
    added and there is no empty fallback.
    """
    hold_or_go = jnp.asarray(hold_or_go, bool)
    actions = jnp.arange(514)
    empty_action = jnp.where(dice[0] >= dice[1], 2, 258)
    moves |= (actions == empty_action) & ~some_move & ~hold_or_go
    return jnp.where(actions == 1, hold_or_go, moves)
