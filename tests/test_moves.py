"""The move rules (moves.py) on hand-set positions, under both lowerings.

Each test sets a position on the mover's view board (tests/positions.py), derives the legal
move pairs by hand from the rule it names (docs/rules.md, "Moves", and its quirks), and
checks the engine lists exactly those: the legal Move actions, each decoded to its pair
(from1, to1, from2, to2; 0 = none or borne off). The opponent holds 2 checkers on field 24
(or field 1 when the mover bears off): too few to fill a quarter, so the opponent's-quarter
rule never applies unless a test says so.
"""
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.positions import LOWERINGS, legal_actions, legal_pairs, rules, view
from trictrac_jax import moves
from trictrac_jax.lowering import forced

FAR = {24: 2}  # an opponent who can fill no quarter


@pytest.fixture(params=LOWERINGS)
def lowering(request):
    return request.param


def test_both_dice_one_after_the_other_or_on_one_checker(lowering):
    """Two checkers on field 1, 3-1: each die on one checker, in both die orders, or both
    dice on one checker (tout d'une), in both orders."""
    assert legal_pairs(lowering, view({1: 2}, FAR), (3, 1)) == {
        (1, 4, 1, 2), (1, 2, 1, 4), (1, 4, 4, 5), (1, 2, 2, 5)}


def test_a_field_holding_an_opponent_checker_is_closed(lowering):
    """An opponent checker on 4 closes it: with 3-1 only 1 -> 2 -> 5 plays both dice."""
    assert legal_pairs(lowering, view({1: 2}, {4: 1, 24: 2}), (3, 1)) == {(1, 2, 2, 5)}


def test_the_bigger_die_when_only_one_die_can_be_played(lowering):
    """One checker on 1, 6-3, field 10 closed: 1 -> 7 or 1 -> 4, neither continues to 10.
    Only one die can be played: the bigger one."""
    assert legal_pairs(lowering, view({1: 1}, {10: 2, 24: 2}), (6, 3)) == {(1, 7, 0, 0)}


def test_the_smaller_die_when_the_bigger_cannot_be_played(lowering):
    """Fields 7 and 10 closed: with 6-3 the 6 cannot be played, 1 -> 4 alone is legal."""
    assert legal_pairs(lowering, view({1: 1}, {7: 2, 10: 2, 24: 2}), (6, 3)) == {(1, 4, 0, 0)}


def test_no_legal_move_leaves_the_empty_action(lowering):
    """Both dice blocked: no Move action is legal, and the decision's mask holds the empty
    action of the die order (the bigger die first when the first die is the bigger)."""
    board = view({1: 1}, {5: 2, 4: 2, 24: 2})
    assert legal_pairs(lowering, board, (4, 3)) == set()
    for dice, empty in (((4, 3), moves.FIRST_MOVE), ((3, 4), moves.FIRST_MOVE + 256)):
        mask = np.asarray(moves.decision_mask(np.array(dice), np.zeros(514, bool), False, False))
        assert set(np.flatnonzero(mask)) == {empty}


def test_in_hold_or_go_the_move_actions_and_go_without_the_empty_action():
    """HoldOrGoChoice: Go is legal, the legal moves too, and no empty action when there is
    none (quirk 16)."""
    moves_mask = np.zeros(514, bool)
    moves_mask[256] = True
    mask = np.asarray(moves.decision_mask(np.array([4, 3]), moves_mask, True, True))
    assert set(np.flatnonzero(mask)) == {moves.GO, 256}
    mask = np.asarray(moves.decision_mask(np.array([4, 3]), np.zeros(514, bool), False, True))
    assert set(np.flatnonzero(mask)) == {moves.GO}


def test_the_corner_by_effect_with_a_double_needs_one_checker():
    """The empty own corner is reachable directly with an own checker 12 - d away for each
    die; with a double the one checker on 6 counts for both dice (quirk 13)."""
    assert bool(moves.can_take_corner_by_effect(view({6: 1}), np.array([6, 6])))
    assert not bool(moves.can_take_corner_by_effect(view({6: 1}), np.array([6, 5])))
    assert bool(moves.can_take_corner_by_effect(view({6: 1, 7: 1}), np.array([6, 5])))
    assert not bool(moves.can_take_corner_by_effect(view({6: 1, 7: 1, 12: 2}), np.array([6, 5])))


def test_the_own_corner_is_taken_with_two_checkers_at_once(lowering):
    """Checkers on 6 and 7, 6-5: both reach the empty corner 12 (6 -> 12 and 7 -> 12, in
    either die order); one alone may not take it, nor pass through it in a tout d'une
    (6 -> 12 -> 17); the opponent's corner 13 is no destination (7 -> 13), but a tout d'une
    may rest there (7 -> 13 -> 18)."""
    assert legal_pairs(lowering, view({6: 1, 7: 1}, FAR), (6, 5)) == {
        (6, 12, 7, 12), (7, 12, 6, 12), (7, 13, 13, 18), (6, 11, 11, 17)}


def test_the_own_corner_is_left_by_its_last_two_checkers_at_once(lowering):
    """The corner holds 2, a checker on 1, 3-2: the corner's checkers leave together or not
    at all."""
    assert legal_pairs(lowering, view({12: 2, 1: 1}, FAR), (3, 2)) == {
        (1, 4, 4, 6), (1, 3, 3, 6), (12, 15, 12, 14), (12, 14, 12, 15)}


def test_the_corner_taken_par_puissance(lowering):
    """Checkers on 7 and 8 (one field short of the opponent's empty corner with 6 and 5),
    both corners empty, the corner not reachable directly: the two go to 12 "par
    puissance" (decoded as 7 -> 12, 8 -> 12); the rest as the corner rules allow. In
    either die order: the action is then in the other order's half of the Move actions."""
    for dice in ((6, 5), (5, 6)):
        assert legal_pairs(lowering, view({7: 1, 8: 1}, FAR), dice) == {
            (7, 12, 8, 12), (7, 13, 13, 18), (8, 13, 13, 19), (8, 14, 14, 19)}


def test_no_puissance_when_the_corner_can_be_taken_by_effect(lowering):
    """The same with a checker on 6: 6 -> 12 and 7 -> 12 take the corner directly, so the
    corner is not taken par puissance."""
    pairs = legal_pairs(lowering, view({6: 1, 7: 1, 8: 1}, FAR), (6, 5))
    assert (6, 12, 7, 12) in pairs and (7, 12, 6, 12) in pairs
    assert (7, 12, 8, 12) not in pairs


def test_no_play_in_a_quarter_the_opponent_can_still_fill(lowering):
    """With 12 opponent checkers on 24 the opponent can still fill 13-18 and 19-24: no move
    may end there (10 -> 14 is legal only when he cannot)."""
    own = {1: 2, 10: 1}
    assert legal_pairs(lowering, view(own, {24: 12}), (4, 3)) == {
        (1, 5, 1, 4), (1, 5, 5, 8), (1, 4, 1, 5), (1, 4, 4, 8)}
    assert (10, 14, 1, 4) in legal_pairs(lowering, view(own, FAR), (4, 3))


def test_a_quarter_must_be_filled_when_it_can_be(lowering):
    """Fields 1-5 hold 2 or more, field 6 one: with 5-2, 1 -> 6 fills the quarter 1-6, so
    only the sequences that do are legal (the 2 played by the checker on 15)."""
    board = view({1: 3, 2: 2, 3: 2, 4: 2, 5: 2, 6: 1, 15: 1}, FAR)
    assert legal_pairs(lowering, board, (5, 2)) == {(1, 6, 15, 17), (15, 17, 1, 6)}


def test_a_filled_quarter_must_be_kept_when_it_can_be(lowering):
    """The quarter 1-6 filled with exactly 2 a field: with 2-1 only the checkers on 15 may
    move (any move from the quarter empties one of its fields)."""
    board = view({1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 15: 2}, FAR)
    assert legal_pairs(lowering, board, (2, 1)) == {
        (15, 17, 15, 16), (15, 16, 15, 17), (15, 17, 17, 18), (15, 16, 16, 18)}


def test_no_bearing_off_with_a_checker_outside_the_last_quarter(lowering):
    """A checker on 10, one on 22, 3-2: 22 + 3 would bear off exactly, but 10 is outside
    the last quarter and no die brings it in; the only sequence is the tout d'une
    10 -> 13 -> 15 (10 -> 12 would take the corner alone)."""
    assert legal_pairs(lowering, view({10: 1, 22: 1}, {1: 2}), (3, 2)) == {(10, 13, 13, 15)}


def test_the_first_move_may_bring_the_last_checker_in_before_a_bear_off(lowering):
    """Checkers on 17 and 22, 3-3: 17 -> 20 brings the last one in, then 22 bears off with
    its exact number; bearing off first, with 17 still outside, is not allowed (quirk 14)."""
    assert legal_pairs(lowering, view({17: 1, 22: 1}, {1: 2}), (3, 3)) == {
        (17, 20, 22, 0), (17, 20, 20, 23)}


def test_exact_numbers_before_exceeding_numbers(lowering):
    """Checkers on 20 and 23, 5-2: both bear off with their exact numbers (20 + 5, 23 + 2),
    so no sequence with an exceeding number (23 + 5, or 20 -> 22 then 22 + 5) is legal;
    the pair is listed lower field first."""
    assert legal_pairs(lowering, view({20: 1, 23: 1}, {1: 2}), (5, 2)) == {(20, 0, 23, 0)}


def test_an_exceeding_number_bears_off_the_farthest_checker(lowering):
    """Checkers on 20 and 23, 6-4, no exact number: an exceeding number must bear off the
    farthest checker: 20 (then 23), or after 20 -> 24 the one on 23, never the one on 24."""
    assert legal_pairs(lowering, view({20: 1, 23: 1}, {1: 2}), (6, 4)) == {
        (20, 0, 23, 0), (20, 24, 23, 0)}


def test_the_action_index_of_a_pair(lowering):
    """Move actions: 2 + 256 x (the smaller die first) + 16 x (first checker) + second
    checker, checkers numbered by the count of own checkers up to their field (the second
    on the board after the first move). The opening 6-5: 1 -> 7 then 1 -> 6 moves checker
    15 then checker 14 (15 - the one gone): 2 + 240 + 14, and 256 more for the 5 first;
    whichever die was rolled first."""
    start = view({1: 15}, {24: 15})
    assert legal_actions(lowering, start, (6, 5)) == {256, 512}
    assert legal_actions(lowering, start, (5, 6)) == {256, 512}
    decode = rules(lowering)[2]
    pairs = decode(start, np.array([6, 5], np.int32))
    assert tuple(pairs[256 - moves.FIRST_MOVE]) == (1, 7, 1, 6)
    assert tuple(pairs[512 - moves.FIRST_MOVE]) == (1, 6, 1, 7)


def test_encode_inverts_decode_on_every_legal_action(lowering):
    """`encode` of each decoded legal pair gives its action back (ordinals: own checkers on
    fields up to each origin, before the pair)."""
    board, dice = view({1: 3, 2: 2, 3: 2, 4: 2, 5: 2, 6: 1, 15: 1}, FAR), np.array([5, 2])
    actions = legal_actions(lowering, board, dice)
    pairs = rules(lowering)[2](board, dice.astype(np.int32))
    cumulative = np.concatenate([[0], np.cumsum(np.maximum(board, 0))])
    for action in actions:
        pair = pairs[action - moves.FIRST_MOVE]
        ordinal = np.array([cumulative[pair[0]], cumulative[pair[2]]])
        assert int(moves.encode(dice, pair, ordinal)) == action


def test_any_set_is_the_or_of_the_words_under_each_lowering(lowering):
    """`layout.any_set` (`lowering.any_nonzero`: the OR written out with the games last, a
    reduction with the games first): a game's bit anywhere in its 32 words, the last one
    included, and nothing for a game with none."""
    from trictrac_jax.moves import layout as L
    words = np.zeros((2, 16, 4), np.uint32)
    words[1, 15, 0] = 1 << 31  # the last bit of the last word
    words[0, 0, 1] = 1  # the first bit of the first word
    words[0, 9, 3] = 0b100
    with forced(lowering):
        got = jax.vmap(L.any_set, in_axes=2)(jnp.asarray(words))
    assert np.asarray(got).tolist() == [True, True, False, True]


def test_the_words_layout_packs_the_grid_with_a_puissance_row():
    """moves.layout: bit k of word (p, i) is candidate (p, i, k), the flat order the grid
    [2, 16, 17] reshaped (`unpack` and `pack` are inverse); `transposed` swaps the first and
    second slots of the own fields (nothing elsewhere). On a position where the corner is
    taken par puissance, that candidate (row 15, bit 0) is the one the puissance pair
    lists, and the last of its pass in the reference's order."""
    from trictrac_jax.moves import layout as L
    rng = np.random.default_rng(0)
    mask = rng.random((L.NUM_CANDIDATES, 3)) < 0.3
    words = np.asarray(L.pack(jnp.asarray(mask)))
    assert words.shape == (2, 16, 3) and words.dtype == np.uint32
    assert np.array_equal(np.asarray(L.unpack(jnp.asarray(words))), mask)
    p, i, k, g = 1, 3, 7, 2
    assert bool(words[p, i, g] >> k & 1) == mask[(p * 16 + i) * 17 + k, g]
    swapped = np.asarray(L.transposed(jnp.asarray(words)))
    assert (swapped[1, 3] >> 7 & 1).tolist() == (words[1, 7] >> 3 & 1).tolist()
    assert not swapped[:, 15].any() and not (swapped >> 15).any()
    assert np.asarray(L.any_set(jnp.asarray(words))).tolist() == mask.any(axis=0).tolist()
    assert np.asarray(L.count_set(jnp.asarray(words))).tolist() == mask.sum(axis=0).tolist()

    c = moves.candidates(view({7: 1, 8: 1}, FAR), np.array([6, 5]))
    table = moves.candidate_table(c)
    puissance = np.flatnonzero(np.asarray(L.unpack(c.possible & L.against(
        np.where(L.IS_PUISSANCE_ROW, 1, 0).astype(np.uint32), ()))))
    assert list(puissance) == [15 * 17, L.PASS_SIZE + 15 * 17]
    pair = np.asarray(table.pair)[:, puissance].T
    assert [tuple(p) for p in pair] == [(7, 12, 8, 12)] * 2
    order = np.asarray(table.order)
    for p, at in enumerate(puissance):
        in_pass = order[(L.PASS_OF == p) & (order < L.NO_ORDER)]
        assert order[at] == in_pass.max() == (p + 1) * L.REFERENCE_PASS_SIZE - 1



def test_the_position_numbers_own_fields_and_orders_the_dice(lowering):
    """Own checkers on 2 (3), 4 (1), 20 (2) and 24 (1), the opponent's on 7 (1) and 22 (2),
    2-5: slots 0..3 are fields 2, 4, 20, 24 with their counts (the others none), the first
    pass plays the 5 first and the second the 2, and each slot's move with a pass's die
    lands where the board says: the opponent's 7 and 22, the own 4, nothing beyond 24 or
    from an unused slot."""
    C = importlib.import_module("trictrac_jax.moves.candidates")  # the module, not the function
    board = view({2: 3, 4: 1, 20: 2, 24: 1}, {7: 1, 22: 2})
    with forced(lowering):
        p = jax.jit(C.position)(jnp.asarray(board), jnp.asarray([2, 5]))
        landing = np.asarray(jax.jit(C._landing)(p.board, p.slot_field, p.die_a))
    assert list(np.asarray(p.slot_field)) == [2, 4, 20, 24] + [0] * 13
    assert list(np.asarray(p.slot_count)) == [3, 1, 2, 1] + [0] * 13
    assert list(np.asarray(p.die_a)) == [5, 2] and list(np.asarray(p.die_b)) == [2, 5]
    # with the 5: 2 -> 7, 4 -> 9, 20 and 24 beyond 24; with the 2: 2 -> 4, 4 -> 6, 20 -> 22,
    # 24 beyond 24
    assert landing.shape == (2, 17)
    assert list(landing[0, :4]) == [-1, 0, 0, 0] and list(landing[1, :4]) == [1, 0, -2, 0]
    assert not landing[:, 4:].any()


# --- the words' own rules: the chained slot, dedup, the first legal pair, a set's probe ---

def _lists(board, dice):
    lists = moves.move_lists(jnp.asarray(board), jnp.asarray(dice))
    return lists, moves.candidate_table(lists.candidates)


def test_the_chained_slot_is_the_first_moves_empty_destination():
    """One checker on 1, 3-1, field 4 closed: only 1 -> 2 -> 5 plays both dice. It is
    candidate (pass 1: the smaller die first, row 0: field 1, slot 15: the chained slot),
    the one legal bit, and the table names its pair."""
    from trictrac_jax.moves import layout as L
    lists, table = _lists(view({1: 1}, {4: 2, 24: 2}), (3, 1))
    legal = np.asarray(moves.unpack(lists.legal))
    at = L.PASS_SIZE + 0 * L.NUM_SLOTS + L.CHAINED_SLOT
    assert list(np.flatnonzero(legal)) == [at]
    assert tuple(np.asarray(table.listed)[:, at]) == (1, 2, 2, 5)


@pytest.mark.parametrize("own, dice", [({22: 1, 23: 1}, (3, 2)), ({20: 2, 22: 2}, (4, 4)),
                                       ({1: 3, 5: 2}, (4, 2)), ({19: 1, 21: 1, 24: 1}, (6, 5))])
def test_first_listed_keeps_the_earliest_candidate_of_each_listed_pair(own, dice):
    """Two bear-offs (listed lower field first, by up to four candidates), doubles (twins
    list the same pair), a plain roll: `first_listed` keeps one candidate a distinct listed
    pair of the legal list, the earliest in the reference's loop; `member` holds for each
    candidate listing a legal pair as generated."""
    lists, table = _lists(view(own, {13: 2}), dice)
    legal = np.asarray(moves.unpack(lists.legal))
    kept = np.asarray(moves.unpack(moves.first_listed(lists.legal, lists.candidates)))
    listed, order = np.asarray(table.listed), np.asarray(table.order)
    pairs = {}
    for k in np.flatnonzero(legal):
        pair = tuple(listed[:, k])
        pairs[pair] = min(pairs.get(pair, (moves.NO_ORDER, k)), (order[k], k))
    assert sorted(np.flatnonzero(kept)) == sorted(k for _, k in pairs.values())
    member = np.asarray(moves.unpack(moves.member(lists.legal, lists.candidates)))
    generated = np.asarray(table.pair)
    possible = np.asarray(moves.unpack(lists.candidates.possible))
    for k in np.flatnonzero(possible):
        assert member[k] == (tuple(generated[:, k]) in pairs), k


@pytest.mark.parametrize("own, opp, dice", [({1: 1}, {4: 2, 24: 2}, (3, 1)),
                                            ({1: 3, 5: 2}, {13: 2}, (4, 2)),
                                            ({23: 1, 24: 1}, {13: 2}, (2, 1)),
                                            ({1: 1}, {5: 2, 4: 2, 24: 2}, (4, 3))])
def test_the_earliest_pair_and_a_sets_probe(own, opp, dice):
    """`earliest_pair` is the listed pair of the legal candidate first in the reference's
    loop (zeros when none); `some_legal_in(q)` is "some legal candidate is in q", for q
    each row's words in turn."""
    lists, table = _lists(view(own, opp), dice)
    legal = np.asarray(moves.unpack(lists.legal))
    order = np.where(legal, np.asarray(table.order), moves.NO_ORDER)
    first = tuple(np.asarray(table.listed)[:, order.argmin()]) if legal.any() else (0,) * 4
    assert tuple(np.asarray(moves.earliest_pair(lists))) == first
    for row in range(16):
        q = jnp.zeros((2, 16), jnp.uint32).at[:, row].set(0x1FFFF)
        in_q = legal.reshape(2, 16, 17)[:, row].any()
        assert bool(moves.some_legal_in(lists, q)) == in_q, row
