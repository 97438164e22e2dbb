"""Scoring: the jans of a roll, their points, and marking points into holes.

A roll is scored on the roller's view board (see board.py) right after the dice are thrown.
Each jan is worth a value per way of making it; positive jans score for the roller, negative
ones ("contre" jans, false hits, the helpless man) for his opponent.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax import board as B
from trictrac_jax import moves as M
from trictrac_jax.lanes import game_minor, lookup

# The reference's Jan enum, in its declaration order.
JANS = ("FilledQuarter", "TrueHitSmallJan", "TrueHitBigJan", "TrueHitOpponentCorner",
        "FirstPlayerToExit", "SixTables", "TwoTables", "Mezeas", "FalseHitSmallJan",
        "FalseHitBigJan", "ContreTwoTables", "ContreMezeas", "HelplessMan")
(FILLED_QUARTER, TRUE_HIT_SMALL, TRUE_HIT_BIG, TRUE_HIT_CORNER, FIRST_TO_EXIT, SIX_TABLES,
 TWO_TABLES, MEZEAS, FALSE_HIT_SMALL, FALSE_HIT_BIG, CONTRE_TWO_TABLES, CONTRE_MEZEAS,
 HELPLESS_MAN) = range(13)
# Points per way: [jan, double roll?].
JAN_VALUES = np.array([[4, 6], [4, 6], [2, 4], [4, 6], [4, 6], [4, 6], [4, 6], [4, 6],
                       [-4, -6], [-2, -4], [-4, -6], [-4, -6], [-2, -4]], np.int32)
HIT_JANS = (TRUE_HIT_SMALL, TRUE_HIT_BIG, FALSE_HIT_SMALL, FALSE_HIT_BIG)  # see `_hits`
# Jans made by a single move pair (their `pairs` row in RollJans).
PAIR_JANS = (TRUE_HIT_CORNER, FIRST_TO_EXIT, SIX_TABLES, TWO_TABLES, MEZEAS,
             CONTRE_TWO_TABLES, CONTRE_MEZEAS, HELPLESS_MAN)


class RollJans(NamedTuple):
    """The jans of one roll. `ways[j]` is the number of ways jan j is made. Arrays have the
    board's trailing game axes (none for one position, see moves.py)."""

    ways: jnp.ndarray  # int32[13]
    points: jnp.ndarray  # int32[2]: [roller, opponent]
    # Details, on the view board (for checking against the reference and for display):
    hit_jan: jnp.ndarray  # int32[24, 3]: hit jan of the move from field f with die 0, die 1,
    #                       both dice (tout d'une); -1 where none
    hit_to: jnp.ndarray  # int8[24, 3]: its destination field
    fill_ways: jnp.ndarray  # int32[N]: ways the candidate's listed pair counts as FilledQuarter
    pairs: jnp.ndarray  # int32[13, 4]: the single pair of each jan in PAIR_JANS
    helpless_double: jnp.ndarray  # bool: HelplessMan without any playable sequence


def _hits(board, dice):
    """Hits ("battre"): an own checker could land on a field holding one opponent checker.

    With one die the hit is true. With both dice on one checker (tout d'une) it is true
    when one of the two intermediate fields is open (fewer than 2 opponent checkers), false
    when both are blocked; a tout d'une never hits on a rest corner. Hits on fields 1-6 and
    19-24 are small-jan hits, the others big-jan hits.
    """
    lanes = board.shape[1:]
    const = lambda values: A.leading([values], len(lanes))  # [1, 3, *lanes]
    board, dice = board.astype(jnp.int8), dice.astype(jnp.int8)  # narrow [24, 3] arrays
    v0, v1 = dice[0], dice[1]
    steps = jnp.stack([v0, v1, v0 + v1])  # [3, *lanes]
    to = A.leading(B.FIELDS, 1 + len(lanes)) + steps[None]  # [24, 3, *lanes]
    target = B.ahead(board, steps, max_steps=12)  # [24, 3, *lanes]
    hit = (board[:, None] > 0) & (to <= 24) & (target == -1)
    hit &= const([True, False, True]) | (v0 != v1)  # a double's two dice: one move
    hit &= const([True, True, False]) | ((to != 12) & (to != 13))
    true_hit = const([True, True, False]) | jnp.any(target[:, :2] > -2, axis=1)[:, None]
    small = (to < 7) | (to > 18)
    jan = jnp.where(true_hit, jnp.where(small, TRUE_HIT_SMALL, TRUE_HIT_BIG),
                    jnp.where(small, FALSE_HIT_SMALL, FALSE_HIT_BIG))
    return jnp.where(hit, jan, -1), to


def _first_true(mask, axis, none):
    """Index of the first True of `mask` along `axis` (`none` if there is none)."""
    n = mask.shape[axis]
    index = np.arange(n).reshape((-1,) + (1,) * (mask.ndim - axis - 1))
    first = A.fold(jnp.minimum, jnp.where(mask, index, n), axis)
    return jnp.where(first < n, first, none)


def _missing_for_quarter(board):
    """The reference's quarter-filling candidate: (number of checkers missing 0..2, or 3 for
    none; first missing field).

    Quarters are scanned in order; an opponent checker restarts the count within its
    quarter; the first quarter missing fewer than 3 checkers is taken, and counts as
    missing none when the mover can no longer fill it.
    """
    q = B.quarters(board)  # [4, 6, *lanes]
    # the fields after the quarter's last opponent checker (no opponent from there on)
    after = [q[:, 5] >= 0]
    for k in range(4, -1, -1):
        after.insert(0, after[0] & (q[:, k] >= 0))
    after = jnp.stack(after, axis=1)  # [4, 6, *lanes]
    missing = A.fold(jnp.add, jnp.where(after, jnp.clip(2 - q, 0, 2), 0), axis=1)  # [4, *lanes]
    first = _first_true(after & (q < 2), axis=1, none=0)  # [4, *lanes]
    found = missing < 3
    quarter = _first_true(found, axis=0, none=4)
    n = jnp.where(quarter < 4, lookup(missing, quarter), 3)
    quarter = jnp.where(quarter < 4, quarter, 0)
    fillable = lookup(B.own_fillable_quarters(board), quarter)
    n = jnp.where((n > 0) & (n < 3) & ~fillable, 0, n)
    return n, 6 * quarter + lookup(first, quarter) + 1


def _reaching(board, dice, c: M.Candidates):
    """(missing, reaching): the checkers missing from the quarter being filled
    (`_missing_for_quarter`), and 5 masks uint8[N, *lanes]: the candidate's listed pair
    brings a checker to the missing field from the k-th possible origin (each distinct
    origin once)."""
    listed = c.listed
    n, dest = _missing_for_quarter(board)
    dest = dest.astype(jnp.int8)  # narrow per-candidate arrays (see moves.py)
    # Origins of checkers reaching `dest`, per listed pair (a tout d'une counts its start).
    chained = listed[1] == listed[2]
    origin_a = jnp.where(listed[1] == dest, listed[0], 0)
    origin_b = jnp.where(listed[3] == dest, jnp.where(chained, listed[0], listed[2]), 0)
    # A checker reaches `dest` with one die, both (tout d'une) or one short of a die
    # (puissance): these are the only possible origins.
    v0, v1 = dice[0].astype(jnp.int8), dice[1].astype(jnp.int8)
    possible = dest - jnp.stack([v0, v1, v0 + v1, v0 - 1, v1 - 1])  # [5, *lanes]
    # each distinct origin once (v0 == v1 repeats some), fields only
    earlier = A.leading(np.tril(np.ones((5, 5), bool), -1), board.ndim - 1)
    distinct = (possible > 0) & ~jnp.any(earlier & (possible[:, None] == possible[None]), axis=1)
    return n, [(((origin_a == origin) | (origin_b == origin)) & counts).astype(jnp.uint8)
               for origin, counts in zip(possible, distinct)]


def _filled_quarter_ways(board, dice, lists: M.MoveLists):
    """int32[N, *lanes]: how many times each quarter-filling sequence is counted.

    Filling the last 2 missing checkers: every filling sequence counts. The last one: one
    way per distinct origin of a checker reaching the missing field, counted on the first
    sequence that brings a checker from it. Keeping a filled quarter: one way (the reference
    lists its last sequence).
    """
    seqs = M.first_listed(lists.filling, lists.candidates)
    missing, reaching = _reaching(board, dice, lists.candidates)
    order = lists.candidates.order  # the reference's list order: unique among `seqs`
    one_missing = jnp.zeros(seqs.shape, jnp.int32)
    for reaches in reaching:  # 5 reductions over [N, *lanes]
        first_seen = jnp.min(jnp.where(seqs & reaches, order, jnp.int16(M.NO_ORDER)), axis=0)
        one_missing += seqs & (order == first_seen)
    last = seqs & (order == jnp.max(jnp.where(seqs, order, jnp.int16(-1)), axis=0))
    ways = jnp.select([missing == 0, missing == 1, missing == 2],
                      [last, one_missing, seqs], jnp.zeros_like(seqs))
    return ways.astype(jnp.int32)


def _filling_probes(board, dice, c: M.Candidates, filling):
    """What `_filled_quarter_total` needs of the filling sequences (each listed pair once):
    whether there is one, whether one reaches the missing field from each origin, and how
    many there are."""
    seqs = M.first_listed(filling, c)
    return [seqs] + [seqs & reaches for reaches in _reaching(board, dice, c)[1]], seqs


def _filled_quarter_total(board, found: M.Found):
    """int32[*lanes]: the sum over the sequences of `_filled_quarter_ways`, without finding
    which sequence each way is counted on (what scoring needs), from what
    `_filling_probes` found."""
    missing, _ = _missing_for_quarter(board)
    some_seq, *reached = found.any
    one_missing = sum(r.astype(jnp.int32) for r in reached)
    return jnp.select([missing == 0, missing == 1, missing == 2],
                      [some_seq.astype(jnp.int32), one_missing, found.count], 0)


def _plays(seq, die):
    """uint8[N, *lanes]: a move of the listed pairs `seq` int8[4, N, *lanes] plays `die`."""
    frm, to = seq[0::2], seq[1::2]  # [2, N, *lanes]: both moves of each pair
    doable = ((to == 0) & (25 - frm <= die)) | ((frm < to) & (to - frm == die))
    return jnp.any(doable, axis=0).astype(jnp.uint8)


def roll_lists(board, dice) -> M.MoveLists:
    """The move lists of view board int[24, *lanes] and dice int[2, *lanes], as `roll_jans`
    reads them: whether some legal sequence plays each die, and the filling sequences'
    `_filling_probes`, found in the lists' last pass over the candidates."""
    v0, v1 = dice[0].astype(jnp.int8), dice[1].astype(jnp.int8)

    def probes(c, filling):
        any_masks, count = _filling_probes(board, dice, c, filling)
        return M.Probes(in_legal=(_plays(c.listed, v0), _plays(c.listed, v1)),
                        any=tuple(any_masks), count=count)
    return M.move_lists(board, dice, probes)


def roll_jans(board, dice, roll_count, lists: M.MoveLists) -> RollJans:
    """Jans of view board int[24, *lanes] rolled `dice` int[2, *lanes]; `roll_count` counts
    this roll.

    `lists` are the move lists of the same board and dice (`roll_lists`, shared with the
    legal mask).
    """
    lanes = board.shape[1:]
    v0, v1 = dice[0], dice[1]
    hi, lo = jnp.maximum(v0, v1), jnp.minimum(v0, v1)
    own = jnp.maximum(board, 0)
    at = lambda f: B.at_field(board, f)
    fields = A.leading(B.FIELDS.astype(jnp.int32), len(lanes))
    corner, opp_corner = jnp.abs(at(12)), jnp.abs(at(13))
    made = {}  # jan -> (made?, its pair)

    # Hit the opponent's empty corner with both dice while holding one's own.
    src0, src1 = 13 - v0, 13 - v1
    need = lambda f, base: jnp.where(f == 12, base + 2, base)
    ok = jnp.where(src0 == src1, at(src0) > need(src0, 1),
                   (at(src0) > need(src0, 0)) & (at(src1) > need(src1, 0)))
    ok &= (corner != 0) & (opp_corner == 0) & (at(src0) > 0) & (at(src1) > 0)
    made[TRUE_HIT_CORNER] = ok, (src0, 13, src1, 13)

    # First to bear off all checkers: fewer than 3 left and both dice take them off
    # (the reference's test is "beyond field 23", so landing on 24 counts).
    # (With 2 checkers left the second is the lowest one: one reduction, not two in a row.)
    total = jnp.sum(own, axis=0)
    occupied = own > 0
    high = B.highest_field(occupied, none=24)
    second = jnp.where(total > 1, B.lowest_field(occupied), 24)
    ok = (total < 3) & (high + hi > 23) & (second + lo > 23)
    made[FIRST_TO_EXIT] = ok, (high, 0, jnp.where(total > 1, second, 0), 0)

    # Six tables on the third roll: 4 single checkers, fields 2..7 missing exactly the two
    # fields that the dice reach from field 1.
    six = A.leading(jnp.arange(2, 8), len(lanes))
    missing6 = own[1:7] == 0
    m0 = jnp.where(jnp.any(missing6, axis=0), jnp.min(jnp.where(missing6, six, 8), axis=0), 2)
    m1 = jnp.where(jnp.any(missing6, axis=0), jnp.max(jnp.where(missing6, six, 1), axis=0), 7)
    ok = (roll_count == 3) & (jnp.sum(own == 1, axis=0) == 4) & (jnp.sum(missing6, axis=0) == 2)
    ok &= (lo + 1 == m0) & (hi + 1 == m1)
    made[SIX_TABLES] = ok, (1, m0, 1, m1)

    # Talon of 13 and two checkers out: two tables (both corners at once) and mezeas
    # (both checkers on the corner, a 1 rolled); "contre" when the opponent holds his corner.
    out = jnp.where(fields > 1, own, 0)
    talon = (own[0] == 13) & (jnp.sum(out, axis=0) == 2)
    # the fields of the two checkers out (only read with the talon, which leaves two)
    fa, fb = B.highest_field(out > 0, none=24), B.lowest_field(out > 0)
    lands = lambda x, y: ((fa + v0 == x) & (fb + v1 == y)) | ((fa + v1 == x) & (fb + v0 == y))
    to_a = jnp.where(lands(12, 13), 12, 13)
    two = talon & (lands(12, 13) | lands(13, 12))
    contre = opp_corner != 0
    pair = (fa, to_a, fb, 25 - to_a)
    made[TWO_TABLES] = two & ~contre, pair
    made[CONTRE_TWO_TABLES] = two & contre, pair
    mezeas = talon & (fa == 12) & (fb == 12) & ((v0 == 1) | (v1 == 1))
    pair = (12, 12 + v0, 12, 12 + v1)
    made[MEZEAS] = mezeas & ~contre, pair
    made[CONTRE_MEZEAS] = mezeas & contre, pair

    # Helpless man: a die that no legal sequence plays (puissance moves play neither);
    # `lists.found`: whether some legal sequence plays each die (`roll_lists`).
    none = ~lists.some
    seq = lists.candidates.listed
    first = M.earliest(lists.legal, lists.candidates)
    first_seq = jnp.sum(jnp.where(first, seq, 0), axis=1, dtype=seq.dtype)  # [4, *lanes]
    ok = none | ~lists.found.in_legal[0] | ~lists.found.in_legal[1]
    made[HELPLESS_MAN] = ok, tuple(jnp.where(none, 0, first_seq))

    row = lambda pair: jnp.stack([jnp.broadcast_to(jnp.asarray(x, jnp.int32), lanes) for x in pair])
    pairs = jnp.stack([row(made[j][1] if j in made else (0,) * 4) for j in range(13)])
    present = jnp.stack([made[j][0] if j in made else jnp.zeros(lanes, bool) for j in range(13)])

    hit_jan, hit_to = _hits(board, dice)
    fill_ways = _filled_quarter_ways(board, dice, lists)
    jan = A.leading(jnp.arange(13), len(lanes))
    ways = present.astype(jnp.int32)
    # The hits of the 4 hit jans counted in one reduction: jan k's count in byte k of an
    # int32 (at most 72 hits a jan), where 4 sums would each read the hits again. The 3
    # moves from a field are added first: a GPU kernel sums fewer than 32 elements inline,
    # 72 in a reduction kernel of its own.
    counted = sum(jnp.where(hit_jan == j, 1 << (8 * k), 0) for k, j in enumerate(HIT_JANS))
    packed = jnp.sum(counted[:, 0] + counted[:, 1] + counted[:, 2], axis=0, dtype=jnp.int32)
    hits = {j: (packed >> (8 * k)) & 0xFF for k, j in enumerate(HIT_JANS)}
    ways += jnp.stack([hits.get(j, jnp.zeros(lanes, jnp.int32)) for j in range(13)])
    ways += jnp.where(jan == FILLED_QUARTER, _filled_quarter_total(board, lists.found), 0)
    double = jnp.where(jan == HELPLESS_MAN, none, v0 == v1)
    values = jnp.where(double, A.leading(JAN_VALUES[:, 1], len(lanes)),
                       A.leading(JAN_VALUES[:, 0], len(lanes))) * ways
    points = jnp.stack([jnp.sum(jnp.maximum(values, 0), axis=0),
                        jnp.sum(jnp.maximum(-values, 0), axis=0)])
    return RollJans(ways, points, hit_jan, hit_to, fill_ways, pairs, none)


@game_minor
def roll_outcome(board, dice, roll_count):
    """What a roll gives on view board int[24] with dice int[2] (`roll_count`: this roll's
    number): int32[2] points for [roller, opponent], bool[514] the legal Move actions and
    bool whether there is one (see `moves.decision_mask`)."""
    lists = roll_lists(board, dice)
    jans = roll_jans(board, dice, roll_count, lists)
    return jans.points, M.move_actions(board, dice, lists), lists.some


def mark_points(points, holes, can_bredouille, scorer, n, opponent):
    """Mark `n` points for colour `scorer`; returns (points, holes, can_bredouille, new_hole).

    Every 12 points make a hole, two while the scorer "can bredouille" (nobody else scored
    since his last hole). When points are marked, `opponent` loses that right, and if a hole
    was won his points are wiped and the right comes back. As in the reference, `opponent`
    is the scorer himself when the scorer is not the player to move (marking after the
    mover bore off all his checkers), so the scorer then loses his own points.
    """
    # Per-colour selects rather than `.at[colour].set`: under `vmap` those become scatters,
    # each a kernel of its own on a GPU, where selects fuse with the rest of the step.
    colours = jnp.arange(2)
    is_scorer, is_opponent = colours == scorer, colours == opponent
    total = points[scorer] + n
    games = total // 12
    won = jnp.where(games == 0, 0, jnp.where(can_bredouille[scorer], 2 * games, 2 * games - 1))
    new_hole = won > 0
    points = jnp.where(is_scorer, total % 12, points)
    holes = holes + jnp.where(is_scorer, won, 0)
    can_bredouille = jnp.where(is_scorer, can_bredouille | new_hole, can_bredouille)
    scored = n > 0
    can_bredouille = jnp.where(is_opponent & scored, new_hole, can_bredouille)
    points = jnp.where(is_opponent & scored & new_hole, 0, points)
    return points, holes, can_bredouille, new_hole


def roll_details(state, dice):
    """Jans of rolling `dice` in `state` (whose player is to roll), on his view, and the
    candidates' listed pairs int[N, 4]."""
    view = B.view_board(state._board, state.current_player)
    count = state._dice_roll_count[state.current_player] + 1
    return _roll_details(view, dice, count)


@game_minor
def _roll_details(view, dice, count):
    lists = roll_lists(view, dice)
    return roll_jans(view, dice, count, lists), jnp.moveaxis(lists.candidates.listed, 0, 1)
