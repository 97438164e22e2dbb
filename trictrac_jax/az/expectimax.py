"""Deep evaluations of a decision's moves, deeper than any agent plays: the position
benchmark's values (`scripts/benchmark_positions.py`, docs/position-benchmark.md).

    two_ply_worths(model, params, states, actions, top_k)          float32[P], exact over dice
    rollout_worths(model, params, states, actions, keys, max_decisions)   float32[P], sampled

Both value the move `actions` [P] in decision `states` [P] for its mover, relative to his
banked margin at the decision (`model.banked`), in the value network's units (for the
`points` target: the score margin still to come / `margin_scale`), so that the moves of one
decision compare directly.

`two_ply_worths` is an expectimax two decisions deep: the move, each roll after it, the next
decision's best move among the policy's `top_k` likeliest (that is the opponent's reply, or
the same player's next move after Go or after bearing off), each valued by
`model.rolled_worth` (the 36 rolls after it, then the value network). The first ply's rolls
are the 21 distinct pairs of dice, each weighted by its probability: a roll and its mirror
(1-2 and 2-1) score the same and allow the same positions (checked on 3,600 positions and
rolls), and the reply chosen is that of the lower die first.

`rollout_worths` plays the move, then both sides' raw policy (greedy over the masked
logits) with dice drawn from `keys` until the end of the setting (the next pick-up, the
game's end, or `max_decisions` later), and adds the value network's view of where it
stopped: one sample of the points the move is worth, for a second, independent estimate.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from trictrac_jax.az import model as M
from trictrac_jax.az import network
from trictrac_jax.az import search as S
from trictrac_jax.az.base import Model, Params
from trictrac_jax.arrays import select_tree
from trictrac_jax.env import DISTINCT_PROBS
from trictrac_jax.ranking import candidate_worths
from trictrac_jax.state import State


def reply_worth(model: Model, params: Params, states: State, top_k: int):
    """float32[B]: the worth, to the player to move in decision `states` [B] and relative to
    his banked margin, of his best move among the policy's `top_k` likeliest legal moves,
    each valued by `model.rolled_worth`; 0 in finished games (nothing is to come)."""
    actions, legal, _ = S.likeliest(model, params, states, top_k)
    ended = states.done
    worth = candidate_worths(states, actions, legal & ~ended[:, None],
                             lambda s, a: M.rolled_worth(model, params, a, s))
    return jnp.where(ended, 0.0, jnp.max(worth, -1))


def two_ply_worths(model: Model, params: Params, states: State, actions, top_k: int):
    """float32[P]: the mover's worth of `actions` int32[P] in decision `states` [P] (module
    docstring), exact over the dice: the mean over the rolls after the move of the roll's
    reward plus the discounted `reply_worth` of the decision it leads to."""
    o, rolled = M.rolled_transitions(model, params, actions, states, distinct=True)
    backed_up = o.reward + o.discount * reply_worth(model, params, rolled, top_k)
    return backed_up.reshape(-1, DISTINCT_PROBS.size) @ DISTINCT_PROBS


def rollout_worths(model: Model, params: Params, states: State, actions, keys,
                   max_decisions: int):
    """float32[P]: one rollout of each move `actions` int32[P] in decision `states` [P]
    (module docstring), its dice drawn from `keys` [P]: the same key gives the same dice
    sequence whatever the move (common random numbers across a decision's moves). The
    score margin it gains for the mover until it stops, plus the network's value there."""
    env = model.env
    mover = states.current_player
    banked_before = M.banked(model, states, mover)
    dice = lambda t: jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, t)  # keys [P]
    first = jax.vmap(env.step)(states, actions, dice(0))

    def new_setting(s: State):
        # roll counts only grow within a setting: one roll in all is a new setting's first
        return jnp.sum(s._dice_roll_count, -1) == 1

    def going(carry):
        s, t = carry
        return jnp.any(~(s.done | new_setting(s))) & (t < max_decisions)

    def decide(carry):
        s, t = carry
        logits, _ = network.apply(model.net, params, s.observation, s.legal_action_mask)
        stopped = s.done | new_setting(s)
        nxt = jax.vmap(env.step)(s, jnp.argmax(logits, -1).astype(jnp.int32), dice(t))
        return select_tree(stopped, s, nxt), t + 1

    end, _ = jax.lax.while_loop(going, decide, (first, jnp.int32(1)))
    value = M.evaluate(model, params, end).value
    value = jnp.where(end.current_player == mover, value, -value)
    # a game that ended: rewards of its last step, still in the state (stepping stops there)
    value = jnp.where(end.done, M.utility(model, end, end.rewards, mover),
                      value + M.banked(model, end, mover))
    return value - banked_before
