"""The scoring rules (scoring.py) on hand-set positions, under both lowerings.

Each test sets a roll on the roller's view board (tests/positions.py), derives by hand from
the rule it names (docs/rules.md, "Scoring" and its quirks) the jans made, their ways and
the points [roller, opponent], and checks the engine finds exactly those.
"""
import numpy as np
import pytest

from tests.positions import LOWERINGS, jans, legal_pairs, view
from trictrac_jax import scoring

FAR = {24: 2}  # an opponent who can fill no quarter, far from the roller's checkers


@pytest.fixture(params=LOWERINGS)
def lowering(request):
    return request.param


def test_a_true_hit_in_the_small_jan(lowering):
    """A single opponent checker on 4 and a 3 from field 1: one way (4 points)."""
    assert jans(lowering, view({1: 2}, {4: 1, 24: 2}), (3, 1)) == (
        {"TrueHitSmallJan": 1}, (4, 0))


def test_hits_count_per_field_and_die(lowering):
    """The checker on 4 hit from 1 with the 3 and from 2 with the 2: two ways (8 points)."""
    assert jans(lowering, view({1: 2, 2: 1}, {4: 1, 24: 2}), (3, 2)) == (
        {"TrueHitSmallJan": 2}, (8, 0))


def test_a_double_hits_once_and_scores_its_double_value(lowering):
    """2-2 from 1 onto a single checker on 3: the two dice are one move, one way, worth 6
    (the checker on 2 plays the roll: 2 -> 4 -> 6)."""
    assert jans(lowering, view({1: 2, 2: 1}, {3: 1, 24: 2}), (2, 2)) == (
        {"TrueHitSmallJan": 1}, (6, 0))


def test_a_true_hit_in_the_big_jan(lowering):
    """5 + 4 onto a single checker on 9 (fields 7-18 are the big jan): 2 points."""
    assert jans(lowering, view({5: 1}, {9: 1, 24: 2}), (4, 2)) == ({"TrueHitBigJan": 1}, (2, 0))


def test_a_tout_d_une_hit_through_an_open_field_is_true(lowering):
    """1 + 4 + 3 onto a single checker on 8, field 4 closed and 5 open: a true big-jan hit.
    Landing on 8 is closed (its checker), so only the 4 can be played: the 3 is never
    played, HelplessMan for the opponent (2 points: some sequence is playable)."""
    assert jans(lowering, view({1: 1}, {4: 2, 8: 1, 24: 2}), (4, 3)) == (
        {"TrueHitBigJan": 1, "HelplessMan": 1}, (2, 2))


def test_a_tout_d_une_hit_through_two_closed_fields_is_false(lowering):
    """The same with 5 closed too: a false hit (2 points to the opponent), and no sequence
    at all is playable: HelplessMan worth its double value whatever the dice (quirk 1)."""
    assert jans(lowering, view({1: 1}, {4: 2, 5: 2, 8: 1, 24: 2}), (4, 3)) == (
        {"FalseHitBigJan": 1, "HelplessMan": 1}, (0, 2 + 4))


def test_a_tout_d_une_never_hits_on_a_rest_corner(lowering):
    """A single opponent checker on 13 (his corner), 1 + 6 + 6: no hit; the corner cannot be
    taken (6 -> 12 alone), 1 -> 7 -> 13 ends there, so the roll is helpless."""
    made, _ = jans(lowering, view({1: 1}, {13: 1, 24: 2}), (6, 6))
    assert not {"TrueHitBigJan", "FalseHitBigJan"} & set(made)


def test_a_corner_checker_hits_though_it_may_not_leave(lowering):
    """The own corner holds 2: 12 + 3 onto a single checker on 15 is a hit, though a
    checker may not leave the corner alone (quirk 12)."""
    assert jans(lowering, view({1: 2, 12: 2}, {15: 1, 24: 2}), (3, 1)) == (
        {"TrueHitBigJan": 1}, (2, 0))


def test_the_corner_taken_par_puissance_plays_neither_die(lowering):
    """Checkers on 7 and 8, 6-5, fields 14, 18 and 19 closed: taking the corner par
    puissance is the only legal sequence, and it moves each checker one field short of its
    die: neither die is played, HelplessMan (2 points, some sequence exists; quirk 2)."""
    board = view({7: 1, 8: 1}, {14: 2, 18: 2, 19: 2})
    assert legal_pairs(lowering, board, (6, 5)) == {(7, 12, 8, 12)}
    assert jans(lowering, board, (6, 5)) == ({"HelplessMan": 1}, (0, 2))


def test_filling_a_quarter_with_its_last_checker_counts_one_way_per_origin(lowering):
    """Fields 1-5 hold 2 or more, field 6 one: with 5-2 only a checker from 1 fills 6, in
    two sequences (either die first): one origin, one way (quirk 4)."""
    board = view({1: 3, 2: 2, 3: 2, 4: 2, 5: 2, 6: 1, 15: 1}, FAR)
    assert jans(lowering, board, (5, 2)) == ({"FilledQuarter": 1}, (4, 0))


def test_filling_a_quarter_with_its_last_two_checkers_counts_every_sequence(lowering):
    """Fields 5 and 6 one checker each, 4 holds 3: 4 -> 6 and 4 -> 5 fill both, in two die
    orders: two ways (8 points)."""
    board = view({1: 2, 2: 2, 3: 2, 4: 4, 5: 1, 6: 1}, FAR)
    assert jans(lowering, board, (2, 1)) == ({"FilledQuarter": 2}, (8, 0))


def test_keeping_a_filled_quarter_counts_one_way(lowering):
    """The quarter 1-6 filled and kept by moving the checkers on 15: one way (quirk 5)."""
    board = view({1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 15: 2}, FAR)
    assert jans(lowering, board, (2, 1)) == ({"FilledQuarter": 1}, (4, 0))


def test_first_to_bear_off_all_checkers(lowering):
    """Checkers on 22 and 24, 3-2: both dice take them off: 4 points."""
    assert jans(lowering, view({22: 1, 24: 1}, {1: 2}), (3, 2)) == (
        {"FirstPlayerToExit": 1}, (4, 0))


def test_first_to_exit_counts_a_checker_landing_on_24(lowering):
    """One checker on 21 with 3-1: 21 + 3 lands on 24, which the reference counts as borne
    off ("beyond field 23", quirk 3)."""
    made, _ = jans(lowering, view({21: 1}, {1: 2}), (3, 1))
    assert made.get("FirstPlayerToExit") == 1


def test_six_tables_on_the_third_roll(lowering):
    """Single checkers on 2-5, 7 and 6 empty, 5-6 reaches both from 1 on the third roll:
    SixTables; on the fourth roll, nothing."""
    board = view({1: 11, 2: 1, 3: 1, 4: 1, 5: 1}, {24: 15})
    assert jans(lowering, board, (5, 6), roll_count=3) == ({"SixTables": 1}, (4, 0))
    assert jans(lowering, board, (5, 6), roll_count=4) == ({}, (0, 0))


def test_two_tables_and_contre_two_tables(lowering):
    """A talon of 13 on 1, checkers on 8 and 7, 4-6 takes both corners at once: TwoTables
    for the roller while the opponent's corner is empty, ContreTwoTables (his) while he
    holds it."""
    own = {1: 13, 7: 1, 8: 1}
    assert jans(lowering, view(own, {24: 15}), (4, 6)) == ({"TwoTables": 1}, (4, 0))
    assert jans(lowering, view(own, {13: 2, 24: 13}), (4, 6)) == (
        {"ContreTwoTables": 1}, (0, 4))


def test_mezeas_and_contre_mezeas(lowering):
    """A talon of 13 on 1, the own corner held, and a 1 rolled: Mezeas, or ContreMezeas
    while the opponent holds his corner."""
    own = {1: 13, 12: 2}
    assert jans(lowering, view(own, {24: 15}), (1, 4)) == ({"Mezeas": 1}, (4, 0))
    assert jans(lowering, view(own, {13: 2, 24: 13}), (1, 4)) == ({"ContreMezeas": 1}, (0, 4))


def test_a_true_hit_on_the_opponents_empty_corner(lowering):
    """Holding one's corner, checkers on 9 and 10 reach the opponent's empty corner with
    4-3: TrueHitOpponentCorner."""
    made, points = jans(lowering, view({12: 2, 9: 1, 10: 1}, FAR), (4, 3))
    assert made == {"TrueHitOpponentCorner": 1} and points == (4, 0)


def test_a_hole_per_12_points_two_while_the_scorer_can_bredouille():
    """10 + 4 points: a hole and 2 points left; two holes while the scorer can bredouille;
    the opponent loses the right and, as a hole was won, his points (rule and quirk 8)."""
    points, holes = np.array([10, 5]), np.array([3, 1])
    for bredouille, won in ((False, 1), (True, 2)):
        marked = scoring.mark_points(points, holes, np.array([bredouille, True]), 0, 4, 1)
        new_points, new_holes, can_bredouille, new_hole = (np.asarray(x) for x in marked)
        assert new_points.tolist() == [2, 0] and new_holes.tolist() == [3 + won, 1]
        assert bool(new_hole) and can_bredouille.tolist() == [True, True]


def test_points_below_a_hole_only_cost_the_opponent_his_bredouille():
    points, holes = np.array([3, 5]), np.array([0, 0])
    marked = scoring.mark_points(points, holes, np.array([True, True]), 0, 4, 1)
    new_points, new_holes, can_bredouille, new_hole = (np.asarray(x) for x in marked)
    assert new_points.tolist() == [7, 5] and new_holes.tolist() == [0, 0]
    assert not bool(new_hole) and can_bredouille.tolist() == [True, False]
