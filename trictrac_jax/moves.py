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

import jax
import jax.numpy as jnp

from trictrac_jax import board as B

NUM_PASSES, NUM_FIRST = 2, 15
CHAINED_SLOT, EMPTY_SLOT = NUM_FIRST, NUM_FIRST + 1  # second slots after the 15 own fields
NUM_SLOTS = NUM_FIRST + 2
PASS_SIZE = NUM_FIRST * NUM_SLOTS + 1  # + the puissance candidate of the pass
NUM_CANDIDATES = NUM_PASSES * PASS_SIZE
# The reference's loop runs over 24 second fields + "none" per first field, then puissance.
REFERENCE_PASS_SIZE = NUM_FIRST * 25 + 1
NO_ORDER = 2**15 - 1  # after every `Candidates.order` (int16)


def _pick(onehot, values):
    """Sum (or any, for bools) of `values` where `onehot`, over the last axis."""
    if values.dtype == jnp.bool_:
        return jnp.any(onehot & values, axis=-1)
    return jnp.sum(jnp.where(onehot, values, 0), axis=-1, dtype=values.dtype)


def other_pass(x):
    """[N] -> [N]: each candidate's value at its twin, the same slots in the other pass."""
    return x.reshape(NUM_PASSES, PASS_SIZE)[::-1].reshape(x.shape)


def _transposed(grid):
    """[2, 15, 17] -> [2, 15, 17]: the value of the candidate with first and second slots
    swapped (False for second slots >= 15, which are no first slot)."""
    inner = jnp.swapaxes(grid[:, :, :NUM_FIRST], 1, 2)
    return jnp.pad(inner, ((0, 0), (0, 0), (0, NUM_SLOTS - NUM_FIRST)))


class Candidates(NamedTuple):
    """Every candidate move pair of one position and roll; arrays are [..., NUM_CANDIDATES]."""

    # Pairs are component-major, [4, N] (rows from1, to1, from2, to2; 0 = none / borne
    # off): each component is then a contiguous row, which vectorises well on CPU.
    pair: jnp.ndarray  # int8[..., 4, N]: the pair as generated
    listed: jnp.ndarray  # int8[..., 4, N]: the pair as the reference lists it (swapped)
    first_ok: jnp.ndarray  # bool: first move possible (exceeding numbers allowed)
    second_ok: jnp.ndarray  # bool: second move possible after the first (idem)
    exceeding: jnp.ndarray  # bool: a move bears off with an exceeding number
    rules_ok: jnp.ndarray  # bool: corner and opponent-quarter rules, puissance by effect
    fills: jnp.ndarray  # bool: after the pair a quarter is filled
    has_exit: jnp.ndarray  # bool: a move bears off
    exit_outside_ok: jnp.ndarray  # bool: bear-off rule, all checkers in the last quarter
    exit_farthest_ok: jnp.ndarray  # bool: bear-off rule, exceeding numbers on the farthest
    is_full: jnp.ndarray  # bool: two moves (or the puissance pair)
    # Which candidates list the same pair (see `_same_listed`):
    twin_same: jnp.ndarray  # bool: the twin (same slots, other pass) lists the same pair
    double_exit: jnp.ndarray  # bool: both moves bear off (listed lower field first)
    swapped: jnp.ndarray  # bool: listed != pair (a double exit listed in the other order)
    first_field: jnp.ndarray  # int8[..., 15]: field of each first-move slot
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


def _pair_rules(board, pair):
    """Rules on a pair that do not depend on other sequences: bool[...]."""
    f0, t0, f1, t1 = pair
    corner = jnp.abs(B.at_field(board, B.OWN_CORNER))
    # Own corner: taken with two checkers at once, left with its last two at once.
    bad = (t0 == 12) | (t1 == 12)
    bad &= (t0 != t1) & (corner == 0)
    bad |= ((f0 == 12) | (f1 == 12)) & (f0 != f1) & (corner == 2) & (t0 != 12) & (t1 != 12)
    # Opponent's corner: never a destination, except as the rest of a tout d'une.
    bad |= (t1 == 13) | ((t0 == 13) & (t0 != f1))
    # No play in a quarter the opponent can still fill (a tout d'une only rests on its end).
    opp_fillable = B.opp_fillable_quarters(board)  # only quarters 3 and 4 (fields 13-24) count
    in_fillable = lambda t: (t > 12) & jnp.where(t > 18, opp_fillable[3], opp_fillable[2])
    chained = (f1 != 0) & (t0 == f1)
    bad |= (~chained & in_fillable(t0)) | in_fillable(t1)
    # (Taking the corner par puissance when it can be taken by effect is excluded by
    # `_puissance_pair`: no other candidate is a puissance move.)
    return ~bad


def can_take_corner_by_effect(board, dice):
    """The empty own corner is reachable directly: an own checker at 12 - d for each die."""
    src = B.at_field(board, 12 - dice)
    return (B.at_field(board, 12) == 0) & jnp.all(src > 0, axis=-1)


def _puissance_pair(board, dice):
    """The canonical puissance pair (lower field first) and whether it exists: [..., 4]."""
    src = 13 - dice  # fields one step short of the opponent's corner
    counts = B.at_field(board, src)
    double = dice[..., 0] == dice[..., 1]
    exists = jnp.where(double, counts[..., 0] >= 2, jnp.all(counts >= 1, axis=-1))
    exists &= (B.at_field(board, 12) == 0) & (B.at_field(board, 13) == 0)
    lo, hi = jnp.min(src, -1), jnp.max(src, -1)
    twelve = jnp.full_like(lo, 12)
    return jnp.stack([lo, twelve, hi, twelve], -1), exists & ~can_take_corner_by_effect(board, dice)


def _to_flat(per_slot, per_pass):
    """[2, 15, 17] per (pass, first slot, second slot) + [2] per pass -> [N]."""
    per_pass = jnp.broadcast_to(per_pass, (2,)).astype(per_slot.dtype)
    body = per_slot.reshape(2, NUM_FIRST * NUM_SLOTS)
    return jnp.concatenate([body, per_pass[:, None]], axis=-1).reshape(NUM_CANDIDATES)


def _to_slots(flat):
    """Inverse of `_to_flat`: [N] -> ([2, 15, 17], [2])."""
    per_pass = flat.reshape(2, PASS_SIZE)
    return per_pass[:, :-1].reshape(2, NUM_FIRST, NUM_SLOTS), per_pass[:, -1]


def candidates(board, dice) -> Candidates:
    """All candidates for view board int32[24] and dice int32[2] (one position).

    Computed in int8: every value is a field number, a checker count or a die.
    """
    board, dice = board.astype(jnp.int8), dice.astype(jnp.int8)
    d_max, d_min = jnp.max(dice), jnp.min(dice)
    die_a = jnp.stack([d_max, d_min])  # int32[2]: die of the first move, per pass
    die_b = jnp.stack([d_min, d_max])
    forbid = B.forbid_exits(board, dice)

    # First moves [2, 15] from each own field (slot k: the k-th own field from field 1).
    occupied = board > 0
    slot_of = (jnp.cumsum(occupied) - 1).astype(jnp.int8)
    in_slot = occupied & (slot_of == jnp.arange(NUM_FIRST, dtype=jnp.int8)[:, None])  # [15, 24]
    first_field = _pick(in_slot, B.FIELDS)  # [15], 0 for unused slots
    first_count = _pick(in_slot, board)
    boards = jnp.broadcast_to(board, (2, 24))
    at_slots = lambda per_field: _pick(in_slot, per_field[:, None, :])  # [2, 24] -> [2, 15]
    landing_a = at_slots(B.ahead(boards, die_a))
    ok0, to0, exc0 = _single_moves(first_field, first_count, die_a[:, None], landing_a, forbid,
                                   guard_corner=False)
    moved_from = jnp.broadcast_to(first_field, (2, NUM_FIRST))
    moved_to = jnp.where(ok0, to0, 0)
    # The destination is a second slot of its own when it was empty.
    new_field = (moved_to > 0) & (landing_a == 0)
    landing0 = B.ahead(boards, die_b)  # [2, 24]
    # Small per-pass and per-slot arrays, computed once: without the barrier XLA would
    # recompute them inside the [2, 15, 17] loops that broadcast them.
    moved_from, moved_to, new_field, landing0, forbid = jax.lax.optimization_barrier(
        (moved_from, moved_to, new_field, landing0, forbid))
    after1 = B.apply_move(board[None, None], moved_from, moved_to)  # [2, 15, 24]

    # Second moves [2, 15, 16] from each second slot after each first move: the field, its
    # checkers and those where it lands, from the board's corrected by the first move
    # (cheaper than reading them off the 30 boards after a first move).
    slot_grid = (2, NUM_FIRST, NUM_FIRST)  # [pass, first slot, second slot < 15]
    moved = (moved_from > 0)[..., None]
    arrived = moved & (first_field == moved_to[..., None]) & (first_field > 0)  # [2, 15, 15]
    from1 = jnp.concatenate([jnp.broadcast_to(first_field, slot_grid),
                             jnp.where(new_field, moved_to, 0)[..., None]], -1)
    count1 = jnp.concatenate([first_count - (moved & jnp.eye(NUM_FIRST, dtype=bool)) + arrived,
                              new_field[..., None]], -1).astype(jnp.int8)
    land_before = jnp.concatenate([
        jnp.broadcast_to(at_slots(landing0)[:, None, :], slot_grid),
        _pick(moved_to[..., None] == B.FIELDS, landing0[:, None])[..., None]], -1)
    land = from1 + die_b[:, None, None]
    landing1 = (land_before - (moved & (land == moved_from[..., None]))
                + (moved & (land == moved_to[..., None])))
    ok1, to1, exc1 = _single_moves(from1, count1, die_b[:, None, None], landing1, forbid,
                                   guard_corner=True)

    shape = (2, NUM_FIRST, NUM_SLOTS)
    first = lambda x: jnp.broadcast_to(x[:, :, None], shape)
    second = lambda x, empty: jnp.concatenate([x, jnp.full((2, NUM_FIRST, 1), empty, x.dtype)], -1)
    puis_pair, puis_ok = _puissance_pair(board, dice)
    pair = jnp.stack([
        _to_flat(first(first_field[None, :]), puis_pair[0]), _to_flat(first(to0), puis_pair[1]),
        _to_flat(second(from1, 0), puis_pair[2]), _to_flat(second(to1, 0), puis_pair[3])])
    pair = jax.lax.optimization_barrier(pair)  # read by many loops below: computed once
    f0, t0, f1, t1 = pair
    double_exit = (t0 == 0) & (t1 == 0) & (f0 != 0) & (f1 != 0)
    swapped = double_exit & (f1 < f0)
    listed = jnp.where(swapped, jnp.stack([f1, t1, f0, t0]), pair)
    reference = jnp.arange(2, dtype=jnp.int16)[:, None, None] * REFERENCE_PASS_SIZE + \
        jnp.arange(NUM_FIRST, dtype=jnp.int16)[:, None] * 25
    order = _to_flat(reference + second(from1.astype(jnp.int16) - 1, 24),
                     jnp.arange(2, dtype=jnp.int16) * REFERENCE_PASS_SIZE + REFERENCE_PASS_SIZE - 1)

    far_after_first = _to_flat(first(B.exit_farthest(after1)), 0)
    single_first = _to_flat(first(_pick(in_slot, board == 1)[None, :]),
                            B.at_field(board, puis_pair[0]) == 1)
    outside_ok, farthest_ok = _exit_rules(board, dice, pair, single_first, far_after_first)
    return Candidates(
        pair=pair, listed=listed,
        first_ok=_to_flat(first(ok0), puis_ok),
        second_ok=_to_flat(second(ok1, True), puis_ok),
        exceeding=_to_flat(first(exc0) | second(exc1, False), False),
        has_exit=((t0 == 0) & (f0 != 0)) | ((t1 == 0) & (f1 != 0)),
        exit_outside_ok=outside_ok, exit_farthest_ok=farthest_ok,
        is_full=_to_flat(second(jnp.ones(ok1.shape, bool), False), True),
        rules_ok=_pair_rules(board, pair),
        fills=_fills(board, after1, from1, count1, landing1, ok1, to1, puis_pair),
        # (the chained slots of the two passes start from the same field only for doubles,
        # where t0 is the same too)
        twin_same=(other_pass(t0) == t0) & (other_pass(t1) == t1),
        double_exit=double_exit, swapped=swapped,
        first_field=first_field, order=order)


def _fills(board, after1, from1, count1, landing1, ok1, to1, puis_pair):
    """bool[N]: a quarter is filled after the candidate's pair.

    Counted per quarter as fields holding fewer than 2 checkers after the first move; the
    second move can only make its origin short (from 2 checkers) or its destination full
    (from 1 checker). This avoids building a board per candidate.
    """
    short = jnp.sum(B.quarters(after1) < 2, axis=-1)  # [2, 15, 4]
    # [..., 4]: the quarter of field f (none for 0), by comparisons (no integer division)
    quarter = lambda f: (f[..., None] > 6 * jnp.arange(4, dtype=f.dtype)) & (
        f[..., None] <= 6 * jnp.arange(1, 5, dtype=f.dtype))
    leaves = (count1 == 2)[..., None] & quarter(from1)
    arrives = ((landing1 == 1) & (to1 > 0))[..., None] & quarter(to1)
    after2 = short[:, :, None, :] + leaves - arrives  # [2, 15, 16, 4]
    full = jnp.any(after2 == 0, axis=-1) & ok1
    alone = jnp.any(short == 0, axis=-1)[..., None]
    puissance_board = B.apply_move(B.apply_move(board, puis_pair[0], puis_pair[1]),
                                   puis_pair[2], puis_pair[3])
    return _to_flat(jnp.concatenate([full, alone], axis=-1),
                    jnp.any(B.quarter_filled(puissance_board)))


def _exit_rules(board, dice, pair, single_first, far_after_first):
    """The parts of the bear-off rule that look at the pair alone: two bool[N].

    * every own checker must be in the last quarter, except a single checker that the
      first move brings there;
    * a checker borne off with an exceeding number must be the farthest one (checked on
      the board before the first move for the first, after it for the second), in one of
      the two die orders.
    """
    f0, t0, f1, t1 = pair
    outside = jnp.sum((board > 0) & (B.FIELDS < 19))
    carried_in = (f0 < 19) & single_first & (t0 > 18)
    outside_ok = outside - carried_in == 0

    far0, far1 = B.exit_farthest(board), far_after_first
    dist0 = jnp.where(t0 == 0, 25, t0) - f0
    dist1 = jnp.where(t1 == 0, 25, t1) - f1

    def not_farthest(die0, die1):
        exceed0 = (dist0 != 0) & (dist0 < die0)
        exceed1 = (dist1 != 0) & (dist1 < die1)
        return (exceed0 & (f0 != far0)) | (exceed1 & (f1 != far1))

    farthest_ok = ~(not_farthest(dice[0], dice[1]) & not_farthest(dice[1], dice[0]))
    return outside_ok, farthest_ok


def _same_listed(in_set, c: Candidates):
    """Two bool[N]: some candidate in `in_set` lists the same pair as this candidate; an
    earlier one (in the reference's loop order) does.

    Two candidates list the same pair when they move checkers from the same fields to the
    same fields: twins whose moves land on the same fields (doubles, bear-offs, the
    puissance pair), and two bear-offs whichever checker goes first, since those are
    listed lower field first. Bear-offs from the fields of slots i < k are thus listed by
    up to four candidates, in the order (pass 0, i then k), (0, k then i), (1, i then k),
    (1, k then i): the candidate and its transpose (slots swapped) in both passes.
    """
    twin = c.twin_same & other_pass(in_set)
    in_second_pass = jnp.arange(NUM_CANDIDATES) >= PASS_SIZE
    same, earlier = in_set | twin, twin & in_second_pass
    exits = _to_slots(in_set & c.double_exit)[0]
    swapped = _transposed(exits)  # [2, 15, 17]: the transpose lists the same pair
    either = exits | swapped
    later_slot_first = jnp.arange(NUM_FIRST)[:, None] > jnp.arange(NUM_SLOTS)  # [15, 17]
    exit_same = jnp.broadcast_to(either[0] | either[1], either.shape)
    exit_earlier = jnp.stack([later_slot_first & swapped[0],
                              either[0] | (later_slot_first & swapped[1])])
    to_flat = lambda grid: _to_flat(grid, False) & c.double_exit
    return same | to_flat(exit_same), earlier | to_flat(exit_earlier)


def earliest(in_set, c: Candidates):
    """bool[N]: the candidate of `in_set` that the reference lists first (none if empty)."""
    return in_set & (c.order == jnp.min(jnp.where(in_set, c.order, NO_ORDER)))


def member(in_set, c: Candidates):
    """bool[N]: whether each candidate's generated pair is listed by a candidate in `in_set`
    (never for a swapped pair, which no candidate lists in that order)."""
    return ~c.swapped & _same_listed(in_set, c)[0]


def first_listed(in_set, c: Candidates):
    """bool[N]: candidates in `in_set` whose listed pair no earlier candidate lists (dedup)."""
    return in_set & ~_same_listed(in_set, c)[1]


def _sequences(c: Candidates, with_excess: bool, filling=None, exact=None):
    """bool[N]: the candidates the reference lists (before dedup) for one call of its
    sequence generator.

    `filling`: the quarter-filling set that restricts the list (None: rule ignored).
    `exact`: the sequences without exceeding numbers, for the bear-off rule (None: ignored).
    """
    ok = c.first_ok & c.second_ok & c.rules_ok
    if not with_excess:
        ok &= ~c.exceeding
    if filling is not None:
        ok &= ~jnp.any(filling) | member(filling, c)
    if exact is not None:
        exit_ok = c.exit_outside_ok & (member(exact, c)
                                       | (~jnp.any(exact) & c.exit_farthest_ok))
        ok &= ~c.has_exit | exit_ok
    # A first move alone is listed when no second move goes with it (exceeding numbers
    # allowed only), and in the second pass only when the first pass listed nothing.
    per_slot, per_pass = _to_slots(ok)
    if with_excess:
        alone = ~jnp.any(per_slot[:, :, :EMPTY_SLOT], axis=-1)  # [2, 24]
        first_pass_empty = ~jnp.any(per_slot[0]) & ~per_pass[0]
        alone &= jnp.stack([True, first_pass_empty])[:, None]
    else:
        alone = jnp.zeros((2, NUM_FIRST), bool)
    per_slot = per_slot.at[:, :, EMPTY_SLOT].set(per_slot[:, :, EMPTY_SLOT] & alone)
    ok = _to_flat(per_slot, per_pass)
    # Pairs with a single move are dropped when any pair has two.
    return jnp.where(jnp.any(ok & c.is_full), ok & c.is_full, ok)


class MoveLists(NamedTuple):
    """The reference's three sequence lists for one position and roll, as candidate masks."""

    candidates: Candidates
    filling: jnp.ndarray  # bool[N]: quarter-filling sequences (rules on exits/quarters ignored)
    exact: jnp.ndarray  # bool[N]: sequences without exceeding numbers (exit rule ignored)
    legal: jnp.ndarray  # bool[N]: the legal sequences


def move_lists(board, dice) -> MoveLists:
    """Legal sequences of view board int32[24] with dice int32[2]."""
    c = candidates(board, dice)
    filling = _sequences(c, with_excess=True) & c.fills
    exact = _sequences(c, with_excess=False, filling=filling)
    legal = _sequences(c, with_excess=True, filling=filling, exact=exact)
    return MoveLists(c, filling, exact, legal)


def encode(board, dice, pair):
    """Action index of move pairs int[4, ...] (component-major) on view board int32[24].

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
    cum = B.cumulative_checkers(board).astype(jnp.int8)
    checker1 = B.lookup(cum, a).astype(jnp.int32)
    checker2 = B.lookup(cum, c) - ((a > 0) & (c >= a)) + ((a > 0) & (b > 0) & (c >= b))
    return jnp.where(die1 == v0, 2, 258) + 16 * checker1 + checker2.astype(jnp.int32)


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
    from1 = B.checker_field(board, code // 16)
    to1 = jnp.where(from1 + die_first > 24, 0, from1 + die_first)
    after = B.apply_move(board, from1, to1)
    from2 = B.checker_field(after, code % 16)
    to2 = jnp.where(from2 + die_second > 24, 0, from2 + die_second)
    puissance = (to1 == 13) & (to2 == 13)
    to1, to2 = jnp.where(puissance, 12, to1), jnp.where(puissance, 12, to2)
    return jnp.stack([from1, jnp.where(from1 > 0, to1, 0), from2, jnp.where(from2 > 0, to2, 0)])


def legal_action_mask(board, dice, hold_or_go):
    """bool[514] for a decision on view board int32[24] with dice int32[2].

    In the Move stage an empty list means the empty action; in HoldOrGoChoice, Go (1) is
    added and there is no empty fallback.
    """
    lists = move_lists(board, dice)
    return mask_from_lists(board, dice, lists, hold_or_go)


def mask_from_lists(board, dice, lists: MoveLists, hold_or_go):
    """bool[514] from already computed move lists (see `legal_action_mask`)."""
    hold_or_go = jnp.asarray(hold_or_go, bool)
    index = encode(board, dice, lists.candidates.listed)
    mask = jnp.zeros(514, bool).at[jnp.where(lists.legal, index, 514)].set(True, mode="drop")
    empty_action = jnp.where(dice[0] >= dice[1], 2, 258)
    mask = mask.at[empty_action].set(mask[empty_action] | (~jnp.any(lists.legal) & ~hold_or_go))
    return mask.at[1].set(hold_or_go)
