"""The board rules (board.py) on hand-set positions (tests/positions.py), each outcome derived
by hand from the rule it names (docs/rules.md)."""
import numpy as np
import pytest

from tests.positions import LOWERINGS, lowering, view
from trictrac_jax import board as B


def _np(x):
    return np.asarray(x).tolist()


def test_the_view_of_black_is_the_mirrored_board_with_colours_swapped():
    """`view[i] = -board[23 - i]` for Black; White sees the board as it is; the mirror
    is its own inverse."""
    board = np.zeros(24, np.int8)
    board[0], board[5], board[23], board[12] = 3, 1, -2, -4  # White on 1, 6; Black on 24, 13
    black = B.view_board(board, 1)
    assert _np(black[:1]) == [2] and int(black[11]) == 4 and int(black[18]) == -1
    assert int(black[23]) == -3 and _np(B.view_board(board, 0)) == _np(board)
    assert _np(B.real_board(black, 1)) == _np(board)


@pytest.mark.parametrize("name", LOWERINGS)
def test_at_field_reads_a_field_and_zero_for_field_0(name):
    board = view({3: 2, 12: 5}, {20: 1})
    with lowering(name):
        assert _np(B.at_field(board, np.array([3, 12, 20, 0, 4]))) == [2, 5, -1, 0, 0]
        assert int(B.at_field(board, 12)) == 5 and int(B.at_field(board, 0)) == 0


def test_ahead_shifts_the_board_by_a_die_and_reads_nothing_beyond_24():
    board = view({1: 2, 20: 3}, {5: 1})
    assert _np(B.ahead(board, 4)[:2]) == [-1, 0]  # fields 1 and 2 read 5 and 6
    assert int(B.ahead(board, 4)[15]) == 3 and int(B.ahead(board, 6)[19]) == 0


def test_lowest_and_highest_field():
    mask = np.zeros(24, bool)
    assert int(B.lowest_field(mask)) == B.NO_FIELD and int(B.highest_field(mask, none=7)) == 7
    mask[[4, 17]] = True
    assert int(B.lowest_field(mask)) == 5 and int(B.highest_field(mask)) == 18


def test_a_quarter_is_filled_when_each_of_its_fields_holds_two():
    """Fields 19-24 hold 2 each and 1-6 miss one checker on 6; the opponent's 2 on each of
    7-12 fill that quarter for him."""
    own = {f: 2 for f in range(19, 25)} | {f: 2 for f in range(1, 6)} | {6: 1}
    board = view(own, {f: 2 for f in range(7, 13)})
    assert _np(B.quarter_filled(board)) == [False, False, False, True]
    assert _np(B.opp_quarter_filled(board)) == [False, True, False, False]


@pytest.mark.parametrize("name", LOWERINGS)
def test_the_quarters_the_mover_can_still_fill(name):
    """A quarter is fillable when each of its fields, at position k in it, has 2k own
    checkers on fields 1..field. 12 on field 1: 1-6 (12 needed on 1..6) and 7-12 (2k on
    fields up to 7..12) and 19-24 (at most 12 on fields up to 24);
    13-18 holds the opponent's corner: never. 11 checkers: each quarter's last field needs
    12. One checker on 1 and 11 on 2: field 1 needs 2 on field 1, the others are met. (The
    CPU's prefix sums and the GPU's running count, each lowering's.)"""
    with lowering(name):
        assert _np(B.own_fillable_quarters(view({1: 12}))) == [True, True, False, True]
        assert _np(B.own_fillable_quarters(view({1: 11}))) == [False, False, False, False]
        assert _np(B.own_fillable_quarters(view({1: 1, 2: 11}))) == [False, True, False, True]


def test_the_quarters_the_opponent_can_still_fill():
    """Mirrored: 2k of his checkers on fields field..24 for a field k from the quarter's
    end; 7-12 holds the mover's corner, never his."""
    assert _np(B.opp_fillable_quarters(view({}, {24: 12}))) == [True, False, True, True]
    assert _np(B.opp_fillable_quarters(view({}, {24: 11}))) == [False, False, False, False]
    assert _np(B.opp_fillable_quarters(view({}, {18: 12}))) == [True, False, True, False]


def test_bearing_off_needs_every_checker_in_the_last_quarter():
    """Bearing off is forbidden while a checker is outside 19-24, unless it is a single
    checker that the bigger die brings in."""
    dice = np.array([3, 2])
    assert not bool(B.forbid_exits(view({19: 1, 24: 3}), dice))
    assert bool(B.forbid_exits(view({15: 1, 24: 3}), dice))  # 15 + 3 = 18: still outside
    assert not bool(B.forbid_exits(view({16: 1, 24: 3}), dice))  # 16 + 3 = 19: in
    assert bool(B.forbid_exits(view({16: 2, 24: 3}), dice))  # two outside


def test_the_checker_an_exceeding_number_bears_off():
    """The farthest (lowest) own checker, except that with a filled quarter the lowest
    field holding more than 2 is taken when there is one."""
    assert int(B.exit_farthest(view({20: 1, 23: 4}))) == 20
    filled = {f: 2 for f in range(19, 25)}
    assert int(B.exit_farthest(view(filled | {23: 3}))) == 23
    assert int(B.exit_farthest(view(filled))) == 19
    assert int(B.exit_farthest(view({}))) == B.NO_FIELD


def test_checkers_are_numbered_from_field_1():
    """Checker ordinals count own checkers up to each field: with 2 on 3 and 1 on 7,
    checkers 1 and 2 are on 3, checker 3 on 7, checker 4 nowhere (0)."""
    board = view({3: 2, 7: 1}, {5: 2})
    own = np.maximum(board, 0)
    assert [int(B.checker_field(own, n)) for n in range(5)] == [0, 3, 3, 7, 0]
    assert _np(B.checker_field(own[:, None], np.arange(5))) == [0, 3, 3, 7, 0]  # games last
    assert _np(np.asarray(B.cumulative_checkers(board))[[0, 3, 7, 24]]) == [0, 2, 3, 3]


def test_checker_ordinals_fit_a_byte_with_all_fifteen_on_one_field():
    """The ordinals are stored as int8 (15 checkers at most): all 15 on field 24 count
    15 there, none below, and the sums do not wrap."""
    board = view({24: 15}, {1: 15})
    upto = B.checkers_upto(board)
    assert upto.dtype == np.int8
    assert _np(np.asarray(upto)[[0, 22, 23]]) == [0, 0, 15]
    cumulative = np.asarray(B.cumulative_checkers(view({1: 15}, {24: 15})))
    assert _np(cumulative[[0, 1, 24]]) == [0, 15, 15]


def test_apply_move_moves_one_checker_or_bears_it_off():
    board = view({3: 2, 7: 1})
    assert _np(B.apply_move(board, 3, 5)) == _np(view({3: 1, 5: 1, 7: 1}))
    assert _np(B.apply_move(board, 7, 0)) == _np(view({3: 2}))  # borne off
    assert _np(B.apply_move(board, 0, 0)) == _np(board)  # the empty move
