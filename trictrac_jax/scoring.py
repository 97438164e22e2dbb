"""Scoring: the jans of a roll, their points, and marking points into holes.

A roll is scored on the roller's view board (see board.py) right after the dice are thrown.
Each jan is worth a value per way of making it; positive jans score for the roller, negative
ones ("contre" jans, false hits, the helpless man) for his opponent. `JAN_TABLE` lists the
jans in the reference's order with their points and the rule that finds each.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax import board as B
from trictrac_jax import moves
from trictrac_jax.board import NUM_FIELDS, OFF, OPP_CORNER, OWN_CORNER
from trictrac_jax.lowering import game_minor, kernel_boundary, lookup, materialised
from trictrac_jax.moves.layout import (ALL, CHAINED, IS_PUISSANCE_ROW, against,
                                       second_move_word, slot_bit)

# Jan indices, in the reference's declaration order (the rows of `JAN_TABLE`).
(FILLED_QUARTER, TRUE_HIT_SMALL, TRUE_HIT_BIG, TRUE_HIT_CORNER, FIRST_TO_EXIT, SIX_TABLES,
 TWO_TABLES, MEZEAS, FALSE_HIT_SMALL, FALSE_HIT_BIG, CONTRE_TWO_TABLES, CONTRE_MEZEAS,
 HELPLESS_MAN) = range(13)
NUM_JANS = 13
HIT_JANS = (TRUE_HIT_SMALL, TRUE_HIT_BIG, FALSE_HIT_SMALL, FALSE_HIT_BIG)  # see `_hits`
TALON = 13  # checkers on field 1 for two tables and mezeas ("talon de 13")
POINTS_PER_HOLE = 12


class RollJans(NamedTuple):
    """The jans of one roll. `ways[j]` is the number of ways jan j is made. Arrays have the
    board's trailing game axes (none for one position, see the moves package)."""

    ways: jnp.ndarray  # int32[13]
    points: jnp.ndarray  # int32[2]: [roller, opponent]
    # Details, on the view board (for checking against the reference and for display):
    hit_jan: jnp.ndarray  # int8[24, 3]: hit jan of the move from field f with die 0, die 1,
    #                       both dice (tout d'une); -1 where none
    hit_to: jnp.ndarray  # int8[24, 3]: its destination field
    fill_ways: jnp.ndarray  # int32[N]: ways the candidate's listed pair counts as FilledQuarter
    pairs: jnp.ndarray  # int32[13, 4]: the single pair of each jan in PAIR_JANS
    helpless_double: jnp.ndarray  # bool: HelplessMan without any playable sequence


def _per_move(values, lanes):
    """bool[1, 3, *lanes (as 1s)]: one value for each of the three moves of a field (die 0,
    die 1, both dice)."""
    return A.leading([values], len(lanes))


def _hits(board, dice):
    """Hits ("battre"): an own checker could land on a field holding one opponent checker.

    With one die the hit is true. With both dice on one checker (tout d'une) it is true
    when one of the two intermediate fields is open (fewer than 2 opponent checkers), false
    when both are blocked; a tout d'une never hits on a rest corner. Hits on fields 1-6 and
    19-24 are small-jan hits, the others big-jan hits.
    """
    lanes = board.shape[1:]
    board, dice = board.astype(jnp.int8), dice.astype(jnp.int8)  # narrow [24, 3] arrays
    v0, v1 = dice[0], dice[1]
    steps = A.stack_rows([v0, v1, v0 + v1])  # [3, *lanes]
    to = A.leading(B.FIELDS, 1 + len(lanes)) + steps[None]  # [24, 3, *lanes]
    target = B.ahead(board, steps, max_distance=12)  # [24, 3, *lanes]
    hit = (board[:, None] > 0) & (to <= NUM_FIELDS) & (target == -1)
    hit &= _per_move([True, False, True], lanes) | (v0 != v1)  # a double's two dice: one move
    hit &= _per_move([True, True, False], lanes) | ((to != OWN_CORNER) & (to != OPP_CORNER))
    true_hit = (_per_move([True, True, False], lanes)
                | jnp.any(target[:, :2] > -2, axis=1)[:, None])
    small = (to < 7) | (to > 18)
    jan = jnp.where(true_hit, jnp.where(small, TRUE_HIT_SMALL, TRUE_HIT_BIG),
                    jnp.where(small, FALSE_HIT_SMALL, FALSE_HIT_BIG))
    return jnp.where(hit, jan, -1).astype(jnp.int8), to  # a jan index: a byte


def _first_true(masks, none):
    """Index of the first True among `masks` (bool arrays of one shape), `none` where none
    is: elementwise over the list, which a GPU kernel fuses into its readers."""
    n = len(masks)
    first = functools.reduce(jnp.minimum, [jnp.where(m, k, n) for k, m in enumerate(masks)])
    return jnp.where(first < n, first, none)


@materialised
def _missing_for_quarter(board):
    """The reference's quarter-filling candidate: (number of checkers missing 0..2, or 3 for
    none; first missing field).

    Quarters are scanned in order; an opponent checker restarts the count within its
    quarter; the first quarter missing fewer than 3 checkers is taken, and counts as
    missing none when the mover can no longer fill it.
    """
    # quarter by quarter, field by field: per-game values, which a GPU computes with one
    # thread a game in one kernel (arrays over the quarters were kernels of their own)
    # apart on a GPU: fused with the quarters below and the roll's other per-game values, one
    # thread a game spilled registers at 131,072 games
    fillable = kernel_boundary(B.own_fillable_quarters(board))
    n, found = 3, False
    for quarter in range(4):
        fields = [board[6 * quarter + k] for k in range(6)]
        # the fields after the quarter's last opponent checker (no opponent from there on)
        after = [fields[5] >= 0]
        for k in range(4, -1, -1):
            after.insert(0, after[0] & (fields[k] >= 0))
        missing = sum(jnp.where(a, jnp.clip(2 - f, 0, 2), 0) for a, f in zip(after, fields))
        first = 6 * quarter + 1 + _first_true([a & (f < 2) for a, f in zip(after, fields)],
                                              none=0)
        if quarter == 0:  # when no quarter is taken: 3 missing, quarter 0's first field
            dest, fill = first, fillable[0]
        take = ~found & (missing < 3)
        n = jnp.where(take, missing, n)
        dest, fill = jnp.where(take, first, dest), jnp.where(take, fillable[quarter], fill)
        found |= missing < 3
    return jnp.where((n > 0) & (n < 3) & ~fill, 0, n), dest


def _origins(dice, dest):
    """The possible origins of a checker reaching `dest` (int8[*lanes]), and whether each
    is a field not listed before it: with one die, both (tout d'une) or one short of a die
    (puissance). Five values each (dice v0 == v1 repeat some)."""
    v0, v1 = dice[0].astype(jnp.int8), dice[1].astype(jnp.int8)
    origins = [dest - v for v in (v0, v1, v0 + v1, v0 - 1, v1 - 1)]
    # elementwise, not stacked: a GPU kernel fuses it into the rules, a stack is its own
    distinct = [(origin > 0) & ~functools.reduce(
        jnp.logical_or, [origin == before for before in origins[:k]], jnp.bool_(False))
        for k, origin in enumerate(origins)]
    return origins, distinct


def _pair_words(r: moves.CandidateRows, first, second, puissance) -> moves.RowWords:
    """The candidates whose pair has a move with a fact: the first move (`first`, bool[2,
    16, *lanes]), the second (`second`, its word: `layout.second_move_word`), the
    puissance pair (`puissance`, bool[*lanes])."""
    lanes = r.occupied_fields.shape
    words = moves.keep(first, ALL) | second
    return jnp.where(against(IS_PUISSANCE_ROW, lanes), moves.keep(puissance, np.uint32(1)),
                     words & ALL)


def _plays(r: moves.CandidateRows, die) -> moves.RowWords:
    """The candidates whose pair has a move that plays `die` (exactly, or bearing off with
    it)."""
    def plays(frm, to, moved):
        return moved & (((to == 0) & (OFF - frm <= die)) | ((frm < to) & (to - frm == die)))
    f1, pp = r.second_field[None], r.puis_pair
    return _pair_words(r, plays(r.field, r.to, r.field > 0),
                       second_move_word(plays(f1, r.second_to, f1 > 0),
                                        r.new_field & plays(r.moved_to, r.chained_to, True)),
                       plays(pp[0], pp[1], True) | plays(pp[2], pp[3], True))


def _reaching(r: moves.CandidateRows, dest, origin) -> moves.RowWords:
    """The candidates whose pair brings a checker to `dest` from `origin`. A tout d'une
    counts its start: a second move from the first move's destination (its slot's bit,
    `continues`) starts where the first move did."""
    f0, t0 = r.field, r.to
    lands = r.second_to == dest  # [2, 15, *lanes]
    from_slot = moves.word_of(lands & (r.second_field[None] == origin), 1)[:, None]
    continues = slot_bit(r.occupied_fields, t0)  # [2, 16, *lanes]
    second = ((from_slot & ~continues)
              | (continues & moves.keep(f0 == origin, moves.word_of(lands, 1)[:, None]))
              | moves.keep(r.new_field & (r.chained_to == dest) & (f0 == origin), CHAINED))
    pp = r.puis_pair
    tout_dune = pp[1] == pp[2]
    puissance = (((pp[1] == dest) & (pp[0] == origin))
                 | ((pp[3] == dest) & (jnp.where(tout_dune, pp[0], pp[2]) == origin)))
    return _pair_words(r, (t0 == dest) & (f0 == origin), second, puissance)


def _filling_reaches(board, dice, lists: moves.MoveLists):
    """(missing, seqs, reaching): the checkers missing from the quarter being filled
    (`_missing_for_quarter`), the quarter-filling sequences (each listed pair once), and
    for each distinct origin of a checker that can reach the missing field, (those of
    `seqs` that bring one from it, bool[*lanes]: the origin counts)."""
    # per game, read by kernels over the candidates' words: computed once (fused into them
    # on a GPU, each thread summed the fields for the fillable quarters again)
    missing, dest = _missing_for_quarter(board)
    missing, dest = kernel_boundary((missing, dest.astype(jnp.int8)))  # narrow, as the rows
    seqs = lists.filling_first
    r = lists.candidates.rows
    origins, distinct = _origins(dice, dest)
    return missing, seqs, [(seqs & _reaching(r, dest, origin), counts)
                           for origin, counts in zip(origins, distinct)]


def _filled_quarter_total(reaches):
    """int32[*lanes]: the ways of FilledQuarter, from `_filling_reaches`. Filling the last 2
    missing checkers: every filling sequence counts. The last one: one way per distinct
    origin of a checker reaching the missing field (on the first sequence that brings one
    from it). Keeping a filled quarter: one way (the reference lists its last sequence)."""
    missing, seqs, reaching = reaches
    one_missing = sum((moves.any_set(reaches) & counts).astype(jnp.int32)
                      for reaches, counts in reaching)
    return jnp.select([missing == 0, missing == 1, missing == 2],
                      [moves.any_set(seqs).astype(jnp.int32), one_missing,
                       moves.count_set(seqs)], 0)


def _filled_quarter_ways(reaches, lists: moves.MoveLists):
    """int32[N, *lanes]: on which candidates `_filled_quarter_total`'s ways are counted,
    how many on each (for display and checking; not in the game's step)."""
    missing, words, reaching = reaches
    seqs = moves.unpack(words)
    order = moves.candidate_table(lists.candidates).order  # unique among `seqs`
    one_missing = jnp.zeros(seqs.shape, jnp.int32)
    for reach_words, counts in reaching:
        reaches = moves.unpack(reach_words) & counts
        first_seen = jnp.min(jnp.where(reaches, order, jnp.int16(moves.NO_ORDER)), axis=0)
        one_missing += reaches & (order == first_seen)
    last = seqs & (order == jnp.max(jnp.where(seqs, order, jnp.int16(-1)), axis=0))
    ways = jnp.select([missing == 0, missing == 1, missing == 2],
                      [last, one_missing, seqs], jnp.zeros_like(seqs))
    return ways.astype(jnp.int32)


# --- the jans made by a single move pair ---

class Roll(NamedTuple):
    """What the single-pair jans read about a roll, per game ([..., *lanes])."""

    board: jnp.ndarray  # int[24]: the roller's view board
    roll_count: jnp.ndarray  # int: this roll's number since the board was set
    v0: jnp.ndarray  # int: the first die
    v1: jnp.ndarray  # int: the second die
    hi: jnp.ndarray  # int: the bigger die
    lo: jnp.ndarray  # int: the smaller die
    own: jnp.ndarray  # int[24]: the own checkers on each field
    corner: jnp.ndarray  # int: checkers on the own corner
    opp_corner: jnp.ndarray  # int: checkers on the opponent's corner


def _roll(board, dice, roll_count) -> Roll:
    """The `Roll` of view board int[24, *lanes] and dice int[2, *lanes]."""
    v0, v1 = dice[0], dice[1]
    return Roll(board, roll_count, v0, v1, jnp.maximum(v0, v1), jnp.minimum(v0, v1),
                jnp.maximum(board, 0), jnp.abs(B.at_field(board, OWN_CORNER)),
                jnp.abs(B.at_field(board, OPP_CORNER)))


def _needed(field, base):
    """The checkers that `field` must hold beyond `base` for one to leave it: 2 more on the
    own corner, which keeps its last two."""
    return jnp.where(field == OWN_CORNER, base + 2, base)


def _true_hit_corner(r: Roll, lists: moves.MoveLists):
    """Hit the opponent's empty corner with both dice while holding one's own."""
    src0, src1 = OPP_CORNER - r.v0, OPP_CORNER - r.v1
    at = functools.partial(B.at_field, r.board)
    ok = jnp.where(src0 == src1, at(src0) > _needed(src0, 1),
                   (at(src0) > _needed(src0, 0)) & (at(src1) > _needed(src1, 0)))
    ok &= (r.corner != 0) & (r.opp_corner == 0) & (at(src0) > 0) & (at(src1) > 0)
    return ok, (src0, OPP_CORNER, src1, OPP_CORNER)


def _first_to_exit(r: Roll, lists: moves.MoveLists):
    """First to bear off all checkers: fewer than 3 left and both dice take them off (the
    reference's test is "beyond field 23", so landing on 24 counts). With 2 checkers left
    the second is the lowest one: one reduction, not two in a row."""
    total = jnp.sum(r.own, axis=0)
    occupied = r.own > 0
    high = B.highest_field(occupied, none=NUM_FIELDS)
    second = jnp.where(total > 1, B.lowest_field(occupied), NUM_FIELDS)
    ok = (total < 3) & (high + r.hi > 23) & (second + r.lo > 23)
    return ok, (high, 0, jnp.where(total > 1, second, 0), 0)


def _six_tables(r: Roll, lists: moves.MoveLists):
    """Six tables on the third roll: 4 single checkers, fields 2..7 missing exactly the two
    fields that the dice reach from field 1."""
    lanes = r.board.ndim - 1
    six = A.leading(jnp.arange(2, 8), lanes)
    missing6 = r.own[1:7] == 0
    m0 = jnp.where(jnp.any(missing6, axis=0), jnp.min(jnp.where(missing6, six, 8), axis=0), 2)
    m1 = jnp.where(jnp.any(missing6, axis=0), jnp.max(jnp.where(missing6, six, 1), axis=0), 7)
    ok = ((r.roll_count == 3) & (jnp.sum(r.own == 1, axis=0) == 4)
          & (jnp.sum(missing6, axis=0) == 2))
    ok &= (r.lo + 1 == m0) & (r.hi + 1 == m1)
    return ok, (1, m0, 1, m1)


def _talon(r: Roll):
    """(talon, fa, fb): a talon of 13 checkers on field 1 and two checkers out, on fields
    fa >= fb (only read with the talon, which leaves two)."""
    out = jnp.where(A.leading(B.FIELDS.astype(jnp.int32), r.board.ndim - 1) > 1, r.own, 0)
    talon = (r.own[0] == TALON) & (jnp.sum(out, axis=0) == 2)
    return talon, B.highest_field(out > 0, none=NUM_FIELDS), B.lowest_field(out > 0)


def _lands(r: Roll, fa, fb, x, y):
    """bool[*lanes]: the dice, one each, bring the checkers on `fa` and `fb` to `x` and `y`."""
    return (((fa + r.v0 == x) & (fb + r.v1 == y)) | ((fa + r.v1 == x) & (fb + r.v0 == y)))


def _both_corners(r: Roll):
    """Two tables, own or contre: from the talon, the two checkers out take both corners at
    once. Returns (made, pair)."""
    talon, fa, fb = _talon(r)
    to_a = jnp.where(_lands(r, fa, fb, OWN_CORNER, OPP_CORNER), OWN_CORNER, OPP_CORNER)
    made = talon & (_lands(r, fa, fb, OWN_CORNER, OPP_CORNER)
                    | _lands(r, fa, fb, OPP_CORNER, OWN_CORNER))
    return made, (fa, to_a, fb, OWN_CORNER + OPP_CORNER - to_a)


def _on_own_corner_with_ace(r: Roll):
    """Mezeas, own or contre: from the talon, both checkers out on the own corner and a 1
    rolled. Returns (made, pair)."""
    talon, fa, fb = _talon(r)
    made = talon & (fa == OWN_CORNER) & (fb == OWN_CORNER) & ((r.v0 == 1) | (r.v1 == 1))
    return made, (OWN_CORNER, OWN_CORNER + r.v0, OWN_CORNER, OWN_CORNER + r.v1)


def _talon_jan(shape, r: Roll, lists: moves.MoveLists, *, contre: bool):
    """A talon jan of `shape` (`_both_corners`: two tables, `_on_own_corner_with_ace`:
    mezeas): the roller's while the opponent's corner is empty, the opponent's ("contre")
    while he holds it."""
    made, pair = shape(r)
    held = r.opp_corner != 0
    return made & (held if contre else ~held), pair


def _helpless_man(r: Roll, lists: moves.MoveLists):
    """Helpless man: a die that no legal sequence plays (puissance moves play neither).
    Its pair is the first legal sequence."""
    rows = lists.candidates.rows
    plays = [moves.some_legal_in(lists, _plays(rows, die)) for die in (rows.dice[0], rows.dice[1])]
    ok = ~lists.some | ~plays[0] | ~plays[1]
    return ok, tuple(moves.earliest_pair(lists))


class Jan(NamedTuple):
    """A row of `JAN_TABLE`."""

    name: str  # the reference's name
    points: tuple  # (simple, double): points per way; negative ones for the opponent
    # (Roll, MoveLists) -> (made bool[*lanes], pair (4 x int[*lanes])) for a jan made by a
    # single move pair; None for a counted one (comment: the function that counts it)
    found_by: Callable | None


# The jans in the reference's order (its Jan enum).
JAN_TABLE = (
    Jan("FilledQuarter", (4, 6), None),  # `_filled_quarter_total`
    Jan("TrueHitSmallJan", (4, 6), None),  # `_hits`, `_hit_ways`
    Jan("TrueHitBigJan", (2, 4), None),  # `_hits`, `_hit_ways`
    Jan("TrueHitOpponentCorner", (4, 6), _true_hit_corner),
    Jan("FirstPlayerToExit", (4, 6), _first_to_exit),
    Jan("SixTables", (4, 6), _six_tables),
    Jan("TwoTables", (4, 6), functools.partial(_talon_jan, _both_corners, contre=False)),
    Jan("Mezeas", (4, 6), functools.partial(_talon_jan, _on_own_corner_with_ace, contre=False)),
    Jan("FalseHitSmallJan", (-4, -6), None),  # `_hits`, `_hit_ways`
    Jan("FalseHitBigJan", (-2, -4), None),  # `_hits`, `_hit_ways`
    Jan("ContreTwoTables", (-4, -6), functools.partial(_talon_jan, _both_corners, contre=True)),
    Jan("ContreMezeas", (-4, -6),
        functools.partial(_talon_jan, _on_own_corner_with_ace, contre=True)),
    Jan("HelplessMan", (-2, -4), _helpless_man),
)
JANS = tuple(jan.name for jan in JAN_TABLE)
JAN_VALUES = np.array([jan.points for jan in JAN_TABLE], np.int32)  # [jan, double roll?]
# Jans made by a single move pair (their `pairs` row in RollJans).
PAIR_JANS = tuple(j for j, jan in enumerate(JAN_TABLE) if jan.found_by is not None)


# --- assembly ---

def _pair_row(pair, lanes):
    """int32[4, *lanes]: a jan's pair (fields or arrays) as one array."""
    return jnp.stack([jnp.broadcast_to(jnp.asarray(x, jnp.int32), lanes) for x in pair])


def _single_pair_jans(r: Roll, lists: moves.MoveLists):
    """(made bool[13, *lanes], pairs int32[13, 4, *lanes]) of the single-pair jans (False
    and zeros for the counted ones)."""
    lanes = r.board.shape[1:]
    made = {j: jan.found_by(r, lists) for j, jan in enumerate(JAN_TABLE) if j in PAIR_JANS}
    pairs = jnp.stack([_pair_row(made[j][1] if j in made else (0,) * 4, lanes)
                       for j in range(NUM_JANS)])
    present = jnp.stack([made[j][0] if j in made else jnp.zeros(lanes, bool)
                         for j in range(NUM_JANS)])
    return present, pairs


def _hit_ways(hit_jan, lanes):
    """int32[13, *lanes]: the ways of each hit jan (0 for the others), from the hit jan of
    each field and move (`_hits`).

    The 4 hit jans counted in one reduction: jan k's count in byte k of an int32 (at most
    72 hits a jan), where 4 sums would each read the hits again. The 3 moves from a field
    are added first: a GPU kernel sums fewer than 32 elements inline, 72 in a reduction
    kernel of its own.
    """
    counted = sum(jnp.where(hit_jan == j, 1 << (8 * k), 0) for k, j in enumerate(HIT_JANS))
    packed = jnp.sum(counted[:, 0] + counted[:, 1] + counted[:, 2], axis=0, dtype=jnp.int32)
    hits = {j: (packed >> (8 * k)) & 0xFF for k, j in enumerate(HIT_JANS)}
    return jnp.stack([hits.get(j, jnp.zeros(lanes, jnp.int32)) for j in range(NUM_JANS)])


def _points(ways, double, lanes):
    """int32[2, *lanes]: the points of `ways` int32[13, *lanes] for [roller, opponent];
    `double` bool[13, *lanes]: each jan is worth its double roll's points."""
    values = jnp.where(double, A.leading(JAN_VALUES[:, 1], len(lanes)),
                       A.leading(JAN_VALUES[:, 0], len(lanes))) * ways
    # folded: a reduction over 13 jans would be a GPU kernel of its own
    return jnp.stack([A.fold(jnp.add, jnp.maximum(values, 0)),
                      A.fold(jnp.add, jnp.maximum(-values, 0))])


def roll_jans(board, dice, roll_count, lists: moves.MoveLists) -> RollJans:
    """Jans of view board int[24, *lanes] rolled `dice` int[2, *lanes]; `roll_count` counts
    this roll.

    `lists` are the move lists of the same board and dice (`moves.move_lists`, shared with
    the legal mask).
    """
    lanes = board.shape[1:]
    r = _roll(board, dice, roll_count)
    present, pairs = _single_pair_jans(r, lists)
    hit_jan, hit_to = _hits(board, dice)
    jan = A.leading(jnp.arange(NUM_JANS), len(lanes))
    ways = present.astype(jnp.int32) + _hit_ways(hit_jan, lanes)
    reaches = _filling_reaches(board, dice, lists)
    ways += jnp.where(jan == FILLED_QUARTER, _filled_quarter_total(reaches), 0)
    double = jnp.where(jan == HELPLESS_MAN, ~lists.some, r.v0 == r.v1)
    # The jans with their doubles in GPU kernels apart from what reads them: fused, one
    # thread a game held more live values than its registers (the games-last program
    # spilled at 8,192 and 131,072 games).
    ways, double = kernel_boundary((ways, double))
    return RollJans(ways, _points(ways, double, lanes), hit_jan, hit_to,
                    _filled_quarter_ways(reaches, lists), pairs, ~lists.some)


@game_minor
def roll_outcome(board, dice, roll_count):
    """What a roll gives on view board int[24] with dice int[2] (`roll_count`: this roll's
    number): int32[2] points for [roller, opponent], bool[514] the legal Move actions and
    bool whether there is one (see `moves.decision_mask`)."""
    lists = moves.move_lists(board, dice)
    jans = roll_jans(board, dice, roll_count, lists)
    return jans.points, moves.move_actions(lists), lists.some


def mark_points(points, holes, can_bredouille, scorer, n, opponent):
    """Mark `n` points for colour `scorer`; returns (points, holes, can_bredouille, new_hole).

    Every 12 points make a hole, two while the scorer "can bredouille" (nobody else scored
    since his last hole). When points are marked, `opponent` loses that right, and if a hole
    was won his points are wiped and the right comes back. As in the reference, `opponent`
    is the scorer himself when the scorer is not the player to move (marking after the
    mover bore off all his checkers), so the scorer then loses his own points.
    """
    # Per-colour selects rather than `.at[colour].set` and `[colour]`: under `vmap` those
    # become scatters and gathers, kernels of their own on a GPU, where selects fuse with
    # the rest of the step.
    colours = jnp.arange(2)
    is_scorer, is_opponent = colours == scorer, colours == opponent
    total = A.of_colour(points, scorer) + n
    games = total // POINTS_PER_HOLE
    won = jnp.where(games == 0, 0, jnp.where(A.of_colour(can_bredouille, scorer), 2 * games,
                                             2 * games - 1))
    new_hole = won > 0
    points = jnp.where(is_scorer, total % POINTS_PER_HOLE, points)
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
    count = A.of_colour(state._dice_roll_count, state.current_player) + 1
    return _roll_details(view, dice, count)


@game_minor
def _roll_details(view, dice, count):
    lists = moves.move_lists(view, dice)
    listed = moves.candidate_table(lists.candidates).listed
    return roll_jans(view, dice, count, lists), jnp.moveaxis(listed, 0, 1)
