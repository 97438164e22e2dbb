"""The action index: the legal sequences of the lists as the reference's Move actions.

Actions: 0 Roll, 1 Go, then the Move actions FIRST_MOVE + ORDER_ACTIONS x (smaller die
first) + CHECKERS x (first checker) + second checker.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax import board as B
from trictrac_jax.board import NUM_FIELDS, OPP_CORNER, OWN_CORNER
from trictrac_jax.lowering import current, game_minor, kernel_boundary, materialised
from trictrac_jax.moves.candidates import CandidateRows, Candidates
from trictrac_jax.moves.layout import (BELOW_ROW, CHAINED_SLOT, FIRST_SLOTS, NO_SECOND,
                                       NO_SECOND_MOVE, NUM_FIRST, PUISSANCE_ROW, ROW_BIT, U32,
                                       RowWords, against, keep, lanes_of, transposed)
from trictrac_jax.moves.lists import MoveLists, move_lists
from trictrac_jax.state import NUM_ACTIONS

GO, FIRST_MOVE = 1, 2
CHECKERS = 16  # checker numbers 0..15 (0: no move)
ORDER_ACTIONS = CHECKERS * CHECKERS


def encode(dice, pair, ordinal):
    """Action index int32[...] of move pairs int[4, ...] (component-major) with dice
    int[2, *lanes]; `ordinal` int[2, ...]: the own checkers on fields up to each move's
    origin (`CandidateTable.listed_ordinal`).

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


def _by_ordinal(word, ordinal_bits):
    """uint32[...]: for each bit k < 15 set in `word`, the bit `ordinal_bits[k]` ([15,
    *lanes]: one bit a slot, per game)."""
    out = U32(0)
    for k in range(NUM_FIRST):
        out |= keep((word >> k) & 1 == 1, ordinal_bits[k])
    return out


@materialised
def _second_checkers(c: Candidates, legal: RowWords):
    """uint32[2, 15, *lanes]: per die order and first slot, the legal sequences' second
    checkers as bits (bit n: checker n).

    A legal candidate's action is (order, first checker, second checker): the order is the
    pass's die order except for a first move bearing off alone (the bigger die's) and two
    bear-offs (the bigger die's, the smaller's from one field); a double exit listed
    swapped is the transposed candidate's action (`encode`)."""
    r = c.rows
    lanes = lanes_of(legal)
    v0 = r.dice[0]
    hi, lo = jnp.maximum(r.dice[0], r.dice[1]), jnp.minimum(r.dice[0], r.dice[1])
    die_a = jnp.stack([hi, lo])  # each pass's first die
    row_bit, below_row = against(ROW_BIT, lanes), against(BELOW_ROW, lanes)
    double = legal & c.double_exit
    double = (double & ~c.swapped) | transposed(double & c.swapped)
    first_exits = (r.to == 0) & (r.field > 0)
    alone_exit = keep(first_exits, NO_SECOND) & legal & ~c.double_exit
    normal = legal & ~c.double_exit & ~alone_exit
    # The second checker's number is its slot's ordinal, one less from the first move's
    # slot up (its checker left) except from the first move's destination up (one arrived:
    # no slot below the first move's lies there). So a row's bits go to their ordinals
    # (`_by_ordinal`), those of one range shifted down by one.
    at_or_above = FIRST_SLOTS & ~below_row  # slots k >= i
    one_less = at_or_above & ~keep(r.to > 0, FIRST_SLOTS & ~r.below_to)
    ordinal_bits = U32(1) << r.ordinal[:NUM_FIRST].astype(U32)

    orders = []
    for order in (0, 1):
        in_order = lambda die: (die != v0) == bool(order)
        single = (keep(in_order(die_a)[:, None], normal)
                  | keep(in_order(hi), alone_exit))
        two_exits = keep(in_order(hi), double & ~row_bit) | keep(in_order(lo), double & row_bit)
        word = single | two_exits  # (disjoint; two bear-offs have no destination, so from
        # the first move's slot up every second checker is one less)
        shifted = (single & one_less) | (two_exits & at_or_above)
        chained = keep((word >> CHAINED_SLOT) & 1 == 1, U32(1) << r.chained_ordinal.astype(U32))
        chained |= (word >> NO_SECOND_MOVE) & 1  # no second move: checker 0
        # (a slot's ordinal is the same in both passes: their words are ORed first)
        either = lambda x: x[0, :NUM_FIRST] | x[1, :NUM_FIRST]
        orders.append(_by_ordinal(either(word & ~shifted), ordinal_bits)
                      | (_by_ordinal(either(word & shifted), ordinal_bits) >> 1)
                      | either(chained))
    return jnp.stack(orders)


def _checker_words(seconds, ordinal):
    """uint32[32, *lanes]: per (die order, first checker), the second checkers of the legal
    sequences as bits: each first slot's word at its first checker (a sum: the slots' first
    checkers are distinct, and a slot with no legal bit adds nothing)."""
    lanes = ordinal.shape[1:]
    checkers = A.leading(np.arange(CHECKERS), 1 + len(lanes)).astype(ordinal.dtype)
    at = jnp.where(ordinal[None, :NUM_FIRST] == checkers, seconds[:, None], U32(0))
    return jnp.sum(at, axis=2, dtype=U32).reshape((2 * CHECKERS,) + lanes)


@materialised
def _move_words(seconds, r: CandidateRows, legal: RowWords):
    """uint32[32, *lanes]: the legal Move actions as `_checker_words`' bits (of the second
    checkers `seconds`), the puissance pair's among them: its action's (die order, first
    checker) names the word, its second checker the bit (so the mask's entries are these
    bits alone)."""
    words = _checker_words(seconds, r.ordinal)
    puissance = ((legal[0, PUISSANCE_ROW] | legal[1, PUISSANCE_ROW]) & 1) == 1
    code = encode(r.dice, r.puis_pair, r.puis_ordinal) - FIRST_MOVE
    at = against(np.arange(2 * CHECKERS), lanes_of(legal)) == code // CHECKERS
    return words | keep(puissance & at, U32(1) << (code % CHECKERS).astype(U32))


def move_actions(lists: MoveLists):
    """bool[514, *lanes]: the Move actions of the legal sequences of `lists`: each row's
    legal bits moved to their second checkers' places, one 16-bit word a die order and
    first checker, then the bits as the mask.

    Under the CPU lowering the mask is built games first, as the state's is laid out: the
    transpose back to games last here and `game_minor`'s to games first cancel, where a
    mask built games last is transposed by a loop of its own (`Lowering.mask_games_first`)."""
    c, legal = lists.candidates, lists.legal
    lanes = lanes_of(legal)
    # apart: fused into the mask's kernel, each of its 514 entries a game recomputed them
    words = kernel_boundary(_move_words(_second_checkers(c, legal), c.rows, legal))
    checkers = np.arange(CHECKERS, dtype=np.uint32)
    if current().mask_games_first:
        moves = ((jnp.moveaxis(words, 0, -1)[..., None] >> checkers) & 1) == 1  # [*lanes, 32, 16]
        mask = jnp.concatenate([jnp.zeros(lanes + (FIRST_MOVE,), bool),
                                moves.reshape(lanes + (2 * ORDER_ACTIONS,))], axis=-1)
        return jnp.moveaxis(mask, -1, 0)
    moves = ((words[:, None] >> against(checkers, lanes)) & 1) == 1  # [32, 16, *lanes]
    return jnp.concatenate([jnp.zeros((FIRST_MOVE,) + lanes, bool),
                            moves.reshape((2 * ORDER_ACTIONS,) + lanes)])


@game_minor
def legal_moves(board, dice):
    """bool[514]: the Move actions of the legal sequences of view board int[24] with dice
    int[2] (the decision's mask before `decision_mask`), and whether there is one."""
    lists = move_lists(board, dice)
    return move_actions(lists), lists.some


@materialised
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
    own = [jnp.maximum(board[f], 0) for f in range(NUM_FIELDS)]  # field by field, as below
    from1 = B.checker_field(own, code // CHECKERS)
    to1 = jnp.where(from1 + die_first > NUM_FIELDS, 0, from1 + die_first)
    # the own checkers a field after the first move (one leaves from1, one arrives), field
    # by field: on a GPU no array of its own between the two searches
    moved = from1 > 0
    own = [own[f] - (moved & (from1 == f + 1)) + (moved & (to1 > 0) & (to1 == f + 1))
           for f in range(NUM_FIELDS)]
    from2 = B.checker_field(own, code % CHECKERS)
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
