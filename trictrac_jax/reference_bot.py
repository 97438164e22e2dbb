# SPDX-License-Identifier: GPL-3.0-only
# A port of mmai/trictrac's clients/web/src/game/trictrac/bot_local.rs (commit ba9c9f6), by
# Henri Bourcereau and contributors, GPL-3.0: this module alone is under the GPL-3.0, version
# 3 only (LICENSES/GPL-3.0-only.txt); the rest of the package is Apache-2.0 (NOTICE).
"""The reference web client's bot (mmai/trictrac, `clients/web`, commit ba9c9f6) as an agent.

The page on which a person plays the reference engine in a browser puts them against a
hand-written bot. It looks one move ahead, with no dice: each legal move sequence is valued
by a score of the mover's position after it (`position_score`), and the best one is played.
It never goes at hold-or-go (it always plays a move there) and it never looks at the score.

Exact to the Rust original on every position of tests/data/web_bot.jsonl.gz (see
docs/agents.md), quirks included:

* the score is accumulated in float32, term after term in the original's order (its ties
  and near-ties come out of that rounding, so every addition here is one float32 addition
  in the same order, of terms rounded as the original rounds them);
* among equally scored sequences the original plays the last one of the reference engine's
  list of legal sequences (`moves.move_lists`, in its loop order `CandidateTable.order`);
* with no legal sequence it plays the empty move: the Move stage's only action. At
  hold-or-go with no legal sequence the original still sends the empty move (which the
  reference's `GameState` accepts as holding); no action index means that (the reference's
  own action list is Go alone), so this agent goes there.

Engine imports only. Under `jax.vmap` the 544 candidate sequences of every game are scored
together, game-minor (see lowering.py): no engine step per action.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax import board as B
from trictrac_jax.moves import candidate_table, encode, first_listed, move_lists, unpack
from trictrac_jax.arrays import leading
from trictrac_jax.lowering import game_minor
from trictrac_jax.state import NUM_CHECKERS

# The original's terms, each a float32 as it computes them.
FILLED_QUARTER = np.float32(8.0)  # a quarter 1-6, 7-12 or 19-24 filled
POINT_THREE = np.float32(0.3)  # per field towards a quarter, and per checker on 19-24
EXPOSED_SINGLE = np.float32(0.5)  # penalty per exposed single checker
# k x 0.3 rounded to float32 (the original multiplies a count by 0.3f and rounds before
# adding): a table, so that no multiply-add can be fused into the sum below.
_TIMES_POINT_THREE = np.arange(16, dtype=np.float32) * POINT_THREE
SCORED_QUARTERS = (0, 1, 3)  # fields 1-6, 7-12, 19-24: 13-18 holds the opponent's corner


def _table(k):
    """float32[...]: `_TIMES_POINT_THREE[k]` for small non-negative ints `k`, by selects."""
    out = jnp.zeros(k.shape, jnp.float32)
    for n in range(1, len(_TIMES_POINT_THREE)):
        out = jnp.where(k == n, _TIMES_POINT_THREE[n], out)
    return out


class Fixed(NamedTuple):
    """What the score reads of a position that the mover's own move cannot change."""

    # bool[24, *lanes]: an opponent checker on the field or a later one of its quarter
    opponent_ahead: jnp.ndarray
    opponent_last: jnp.ndarray  # int8[*lanes]: the opponent's highest field, 0 if none


def fixed_facts(board) -> Fixed:
    """The `Fixed` facts of view boards int[24, *lanes]."""
    seen, ahead = jnp.zeros(board.shape[1:], bool), [None] * 24
    for f in reversed(range(24)):
        seen = (seen & (f % 6 != 5)) | (board[f] < 0)  # restarts at each quarter's end
        ahead[f] = seen
    return Fixed(jnp.stack(ahead), B.highest_field(board < 0).astype(jnp.int8))


def fields_to_fill(board, upto, opponent_ahead):
    """int32[*lanes]: the reference's count of checkers missing to fill the quarter it
    would fill next (`Board::get_quarter_filling_candidate`), on view boards
    int[24, *lanes] with their `board.checkers_upto` and `Fixed.opponent_ahead`.

    Per quarter, in order, each field counts 2 when empty and 1 with a single own checker,
    the count restarting after every field held by the opponent. The first quarter counting
    fewer than 3 gives the answer (0 if the mover could not fill it: the rule of
    `board.own_fillable_quarters`); when none does, the last quarter's count.
    """
    i8 = np.int8
    short = jnp.where(opponent_ahead, i8(0), jnp.where(board == 0, i8(2), (board == 1).astype(i8)))
    count = jnp.sum(B.quarters(short), axis=1, dtype=jnp.int8)  # [4, *lanes]
    needed = leading((2 * (np.arange(24) % 6 + 1)).astype(np.int8), board.ndim - 1)
    fillable = A.fold(jnp.logical_and, B.quarters(upto >= needed), axis=1)  # [4, *lanes]
    answer = count[3]
    for k in (3, 2, 1, 0):  # the first quarter under 3 wins: folded from the last
        can = fillable[k] if k != 2 else False  # 13-18 holds the opponent's corner
        answer = jnp.where(count[k] < 3, jnp.where(can, count[k], 0), answer)
    return answer


def position_score(board, upto=None, facts: Fixed | None = None):
    """float32[*lanes]: the bot's value of view boards int[24, *lanes] (the mover's view);
    `upto` (`board.checkers_upto`) and `facts` (`fixed_facts`) are computed when not given.

    Summed in float32 in this order, as the original does:
    1. for each of the quarters 1-6, 7-12 and 19-24: 8 if it is filled, else 0.3 x
       (6 - `fields_to_fill`, at most 6): the same value for each quarter not filled;
    2. -0.5 for each own single checker lying on a lower field than the opponent's highest
       (one subtraction per checker: only their number matters);
    3. +0.3 x the own checkers on each field 19-24, field by field.
    """
    upto = B.checkers_upto(board) if upto is None else upto
    facts = fixed_facts(board) if facts is None else facts
    lanes = board.ndim - 1
    filled = B.quarter_filled(board)
    missing = fields_to_fill(board, upto, facts.opponent_ahead)
    partial = _table(6 - jnp.minimum(missing, 6))
    score = jnp.zeros(board.shape[1:], jnp.float32)
    for k in SCORED_QUARTERS:
        score = score + jnp.where(filled[k], FILLED_QUARTER, partial)
    exposed = (board == 1) & (leading(B.FIELDS, lanes) < facts.opponent_last[None])
    singles = jnp.sum(exposed, axis=0, dtype=jnp.int8)
    for k in range(NUM_CHECKERS):
        score = score - jnp.where(singles > k, EXPOSED_SINGLE, np.float32(0))
    for f in range(18, 24):
        score = score + _table(jnp.maximum(board[f], 0))
    return score


def _after(board, upto, pair):
    """The view boards after candidate pairs int8[4, N, *lanes] on view board
    int8[24, *lanes], and their `board.checkers_upto`: both int8[24, N, *lanes]. A move
    takes one checker from its origin (0: none) to its destination (0: borne off), so the
    checkers up to a field lose one per origin at or below it and gain one per destination
    there (rather than a prefix sum per board)."""
    fields = leading(B.FIELDS, pair.ndim - 1)
    at_or_below = lambda field: ((field[None] > 0) & (fields >= field[None])).astype(jnp.int8)
    after = B.apply_move(B.apply_move(board, pair[0], pair[1]), pair[2], pair[3])
    upto = (A.spread(upto, pair[0]) - at_or_below(pair[0]) + at_or_below(pair[1])
            - at_or_below(pair[2]) + at_or_below(pair[3]))
    return after, upto


@game_minor
def choose_move(board, dice):
    """The bot's move on view board int[24] with dice int[2]: (action int32, whether there
    is a legal sequence).

    Every candidate sequence of `moves.move_lists` that the reference lists (deduplicated:
    `moves.first_listed`) is scored on the board after it; the best score wins, and among
    equal scores the one listed last.
    """
    board = board.astype(jnp.int8)
    lists = move_lists(board, dice)
    c = candidate_table(lists.candidates)
    listed = unpack(first_listed(lists.legal, lists.candidates))  # [N, *lanes]
    after, upto = _after(board, B.checkers_upto(board), c.listed)
    facts = fixed_facts(board)
    facts = Fixed(facts.opponent_ahead[:, None], facts.opponent_last[None])  # per candidate
    score = position_score(after, upto, facts)  # [N, *lanes]
    best = jnp.max(jnp.where(listed, score, -jnp.inf), axis=0)
    top = listed & (score == best)
    last = jnp.max(jnp.where(top, c.order, -1), axis=0)
    pick = top & (c.order == last)
    action = encode(dice, c.listed, c.listed_ordinal)
    return jnp.sum(jnp.where(pick, action, 0), axis=0), jnp.any(listed, axis=0)


@jax.jit  # called on one state outside `jit`, it would otherwise run op by op (seconds)
def web_agent(key, state):
    """The reference web client's bot: the legal move whose resulting position it scores
    best (`position_score`), never Go while it has a move; without a legal sequence, the
    one legal action (the empty move, or Go at hold-or-go)."""
    del key
    view = B.view_board(state._board, state.current_player)
    action, some = choose_move(view, state._dice)
    return jnp.where(some, action, jnp.argmax(state.legal_action_mask)).astype(jnp.int32)
