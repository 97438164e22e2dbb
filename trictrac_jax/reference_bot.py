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
  list of legal sequences (`moves.move_lists`, in its loop order `Candidates.order`);
* with no legal sequence it plays the empty move: the Move stage's only action. At
  hold-or-go with no legal sequence the original still sends the empty move (which the
  reference's `GameState` accepts as holding); no action index means that (the reference's
  own action list is Go alone), so this agent goes there.

Engine imports only. Under `jax.vmap` the 512 candidate sequences of every game are scored
together, game-minor (see lanes.py): no engine step per action.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from trictrac_jax import board as B
from trictrac_jax import moves as M
from trictrac_jax.arrays import leading
from trictrac_jax.lanes import game_minor

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


def _opponent_at_or_after(q):
    """bool[4, 6, *lanes]: an opponent checker on this field or a later one of its quarter,
    for quarters int[4, 6, *lanes] (`board.quarters`)."""
    seen, out = jnp.zeros_like(q[:, 0], bool), [None] * 6
    for j in reversed(range(6)):
        seen = seen | (q[:, j] < 0)
        out[j] = seen
    return jnp.stack(out, axis=1)


def fields_to_fill(board):
    """int32[*lanes]: the reference's count of checkers missing to fill the quarter it
    would fill next (`Board::get_quarter_filling_candidate`), on view boards
    int[24, *lanes].

    Per quarter, in order, each field counts 2 when empty and 1 with a single own checker,
    the count restarting after every field held by the opponent. The first quarter counting
    fewer than 3 gives the answer (0 if the mover could not fill it: see
    `board.own_fillable_quarters`); when none does, the last quarter's count.
    """
    q = B.quarters(board)  # [4, 6, *lanes]
    short = jnp.where(q == 0, 2, jnp.where(q == 1, 1, 0))
    count = jnp.sum(jnp.where(_opponent_at_or_after(q), 0, short), axis=1)  # [4, *lanes]
    fillable = B.own_fillable_quarters(board)
    answer = count[3]
    for k in (3, 2, 1, 0):  # the first quarter under 3 wins: folded from the last
        answer = jnp.where(count[k] < 3, jnp.where(fillable[k], count[k], 0), answer)
    return answer


def position_score(board):
    """float32[*lanes]: the bot's value of view boards int[24, *lanes] (the mover's view).

    Summed in float32 in this order, as the original does:
    1. for each of the quarters 1-6, 7-12 and 19-24: 8 if it is filled, else 0.3 x
       (6 - `fields_to_fill`, at most 6) — the same value for each quarter not filled;
    2. -0.5 for each own single checker (field by field from 1) lying before the opponent's
       farthest-advanced checker, that is on a lower field than the opponent's highest;
    3. +0.3 x the own checkers on each field 19-24, field by field.
    """
    lanes = board.ndim - 1
    filled = B.quarter_filled(board)
    partial = _table(6 - jnp.minimum(fields_to_fill(board), 6))
    score = jnp.zeros(board.shape[1:], jnp.float32)
    for k in SCORED_QUARTERS:
        score = score + jnp.where(filled[k], FILLED_QUARTER, partial)
    opponent_last = B.highest_field(board < 0)  # 0 when the opponent has no checker
    exposed = (board == 1) & (leading(B.FIELDS, lanes) < opponent_last[None])
    for f in range(24):
        score = score - jnp.where(exposed[f], EXPOSED_SINGLE, np.float32(0))
    home = _table(jnp.maximum(board, 0))
    for f in range(18, 24):
        score = score + home[f]
    return score


@game_minor
def choose_move(board, dice):
    """The bot's move on view board int[24] with dice int[2]: (action int32, whether there
    is a legal sequence).

    Every candidate sequence of `moves.move_lists` that the reference lists (deduplicated:
    `moves.first_listed`) is scored on the board after it; the best score wins, and among
    equal scores the one listed last.
    """
    board = board.astype(jnp.int8)
    lists = M.move_lists(board, dice)
    c = lists.candidates
    listed = M.first_listed(lists.legal, c) > 0  # [N, *lanes]
    f0, t0, f1, t1 = c.listed
    after = B.apply_move(B.apply_move(board, f0, t0), f1, t1)  # [24, N, *lanes]
    score = position_score(after)  # [N, *lanes]
    best = jnp.max(jnp.where(listed, score, -jnp.inf), axis=0)
    top = listed & (score == best)
    last = jnp.max(jnp.where(top, c.order, -1), axis=0)
    pick = top & (c.order == last)
    action = M.encode(dice, c.listed, c.listed_ordinal)
    return jnp.sum(jnp.where(pick, action, 0), axis=0), jnp.any(listed, axis=0)


def web_agent(key, state):
    """The reference web client's bot: the legal move whose resulting position it scores
    best (`position_score`), never Go while it has a move; without a legal sequence, the
    one legal action (the empty move, or Go at hold-or-go)."""
    del key
    view = B.view_board(state._board, state.current_player)
    action, some = choose_move(view, state._dice)
    return jnp.where(some, action, jnp.argmax(state.legal_action_mask)).astype(jnp.int32)
