"""The action index: the legal sequences of the lists as the reference's Move actions.

Actions: 0 Roll, 1 Go, then the Move actions FIRST_MOVE + ORDER_ACTIONS x (smaller die
first) + CHECKERS x (first checker) + second checker.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import board as B
from trictrac_jax.board import NUM_FIELDS, OPP_CORNER, OWN_CORNER
from trictrac_jax.lowering import game_minor, materialised
from trictrac_jax.moves.layout import NUM_CANDIDATES, lanes_of
from trictrac_jax.moves.lists import MoveLists, move_lists
from trictrac_jax.state import NUM_ACTIONS

GO, FIRST_MOVE = 1, 2
CHECKERS = 16  # checker numbers 0..15 (0: no move)
ORDER_ACTIONS = CHECKERS * CHECKERS


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


@materialised
def _listed_actions(lists: MoveLists, dropped) -> jax.Array:
    """int32[N, *lanes]: the action index of each legal candidate, `dropped` for the
    others. Materialised: fused into the scatter's flat index loop, it ran element by
    element on the CPU; apart, over [N, games], it vectorises."""
    c = lists.candidates
    return jnp.where(lists.legal, encode(c.dice, c.listed, c.listed_ordinal), dropped)


def move_actions(board, dice, lists: MoveLists):
    """bool[514, *lanes]: the Move actions of the legal sequences in `lists`.

    The scatter writes games first (one flat index per candidate; out of range, dropped,
    for those not listed), as the state's mask is laid out: the transpose back to games
    last here and `game_minor`'s transpose to games first cancel, where a mask written
    games last is transposed by a kernel of its own."""
    lanes = lanes_of(board, 1)
    games = int(np.prod(lanes))
    action = _listed_actions(lists, NUM_ACTIONS * games).reshape(NUM_CANDIDATES, games)
    flat = action + NUM_ACTIONS * jnp.arange(games)
    mask = jnp.zeros(games * NUM_ACTIONS, bool).at[flat.ravel()].set(
        True, mode="drop", wrap_negative_indices=False)
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
