"""The simulator itself as MuZero's model: the network's evaluation of states, utilities,
and the recurrent functions mctx calls (batched [B], States as embeddings).

Values are the expected utility for the player to move at a node, minus the part of it
already known there (`banked`: 0, or the current score margin for the `points` target, in
which case every transition's reward is the margin it adds: the points of a move and a
roll). mctx backs up `value(parent) = reward + discount * value(child)`, so the discount
carries the sign: -1 when the player to move changes, +1 when the same player moves again
(after Go, or after bearing off his last checker), 0 once the game is over.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import mctx
from flax import struct

from trictrac_jax.az import network
from trictrac_jax.az.base import Model, NetworkOutput, Params
from trictrac_jax.az.config import Config
from trictrac_jax.env import (NUM_CHANCE_OUTCOMES, Trictrac, chance_step, every_roll, roll_probs,
                              step, step_deterministic)
from trictrac_jax.state import State, score_lead


def model_from_config(config: Config) -> Model:
    """A run's model: its env, network and value target."""
    return Model(env=Trictrac(max_steps=config.env.max_steps),
                 net=network.make_network(config.network,
                                          jnp.dtype(config.network.inference_dtype)),
                 value_target=config.selfplay.value_target,
                 margin_scale=config.selfplay.margin_scale)


def evaluate(model: Model, params: Params, states: State) -> NetworkOutput:
    """The network's masked logits [B, 514] and value [B] of `states` [B]."""
    return NetworkOutput(*network.apply(model.net, params, states.observation,
                               states.legal_action_mask))


def play_action(model: Model, states: State, action) -> State:
    """The afterstates [B] of `action` [B] in `states` [B] (`env.step_deterministic`)."""
    return jax.vmap(step_deterministic, (0, 0, None))(states, action, model.env.max_steps)


def throw_dice(model: Model, afters: State, outcome) -> State:
    """The positions [B] after the dice `outcome` [B] at `afters` [B] (`env.chance_step`)."""
    return jax.vmap(chance_step, (0, 0, None))(afters, outcome, model.env.max_steps)


def play_and_roll(model: Model, states: State, action, keys) -> State:
    """The positions [B] after `action` [B] in `states` [B] and the dice drawn with `keys` [B]
    (`env.step`: observed once, its rewards those of the decision and the roll)."""
    return jax.vmap(step, (0, 0, 0, None))(states, action, keys, model.env.max_steps)


def utility(model: Model, state: State, rewards, player):
    """float32[...]: `player`'s utility of a game that has just ended in `state`, `rewards`
    being the rewards (by colour) of the transitions that ended it.

    outcome: +1 won / -1 lost / 0 truncated; margin: the score margin / margin_scale,
    clipped to [-1, 1]; points: the same, not clipped (values are learnt relative to the
    `banked` margin, and clipped there)."""
    if model.value_target == "outcome":
        return jnp.take_along_axis(rewards, player[..., None], -1)[..., 0]
    margin = score_lead(state, player) / model.margin_scale
    return margin if model.value_target == "points" else jnp.clip(margin, -1.0, 1.0)


def banked(model: Model, state: State, player):
    """float32[...]: the part of `player`'s utility already banked at `state`, which values
    leave out: the current score margin / margin_scale for `points`, else 0. The value
    target of a state is then the margin still to come (the sum of the points differences
    of the rolls and moves ahead)."""
    if model.value_target == "points":
        return score_lead(state, player) / model.margin_scale
    return jnp.zeros(jnp.shape(player), jnp.float32)


def transition(model: Model, params: Params, nxt: State, rewards, mover, banked_before
               ) -> mctx.RecurrentFnOutput:
    """The transition decision -> dice -> `nxt` for `mover`, whose banked margin at the
    decision was `banked_before`, `rewards` [B, 2] those of the decision and the dice
    together: its reward, discount, and the network's view of `nxt`. (A game ended by the
    decision itself is `nxt` too: the dice are then a no-op.)"""
    logits, value = evaluate(model, params, nxt)
    ended = nxt.done
    reward = jnp.where(ended, utility(model, nxt, rewards, mover),
                       banked(model, nxt, mover)) - banked_before
    same = nxt.current_player == mover
    discount = jnp.where(ended, 0.0, jnp.where(same, 1.0, -1.0))
    return mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits,
                                  value=jnp.where(ended, 0.0, value))


@struct.dataclass
class Afterstate:
    """A chance node: the State after a decision, and the colour that took it (the
    perspective of the node's value)."""

    state: State
    mover: jax.Array  # int32
    banked: jax.Array  # float32, the mover's banked margin at the decision


def afterstate(model: Model, params: Params, action, states: State):
    """(Afterstate [B], its value [B] for the mover relative to his banked margin
    at the decision) of playing `action` [B] in `states` [B]."""
    after = play_action(model, states, action)
    mover = states.current_player
    banked_before = banked(model, states, mover)
    value = evaluate(model, params, after).value  # the player to roll's view
    value = jnp.where(after.current_player == mover, value, -value)
    value += banked(model, after, mover)  # banked margins are antisymmetric, as utilities
    value = jnp.where(after.done, utility(model, after, after.rewards, mover), value)
    value -= banked_before
    return Afterstate(after, mover, banked_before), value


def decision_fn(model: Model, params: Params, key, action, states: State):
    """Stochastic MuZero's decision function: (DecisionRecurrentFnOutput, Afterstate)."""
    after, value = afterstate(model, params, action, states)
    # mctx visits chance outcomes by argmax(prob / (visits + 1)): with 36 equal
    # probabilities that is index order (1-1, 1-2, ...) at every node. A jitter far
    # below the probabilities' scale randomises the order of ties only.
    jitter = 1e-4 * jax.random.uniform(key, (action.shape[0], NUM_CHANCE_OUTCOMES))
    chance_logits = jnp.log(model.env.chance_probs) + jitter
    return mctx.DecisionRecurrentFnOutput(chance_logits=chance_logits,
                                          afterstate_value=value), after


def chance_fn(model: Model, params: Params, key, outcome, after: Afterstate):
    """Stochastic MuZero's chance function: (ChanceRecurrentFnOutput, the State rolled)."""
    del key
    nxt = throw_dice(model, after.state, outcome)
    o = transition(model, params, nxt, after.state.rewards + nxt.rewards, after.mover,
                   after.banked)
    return mctx.ChanceRecurrentFnOutput(action_logits=o.prior_logits, value=o.value,
                                        reward=o.reward, discount=o.discount), nxt


def sampled_fn(model: Model, params: Params, key, action, states: State):
    """Gumbel MuZero's recurrent function: the decision, then dice sampled with `key`."""
    nxt = play_and_roll(model, states, action, jax.random.split(key, action.shape[0]))
    mover = states.current_player
    return transition(model, params, nxt, nxt.rewards, mover, banked(model, states, mover)), nxt


def rolled_worth(model: Model, params: Params, action, states: State, distinct: bool = False):
    """float32[B]: the mover's worth of playing `action` [B] in `states` [B], relative to his
    banked margin: the mean over the rolls of the roll's reward plus the discounted value of
    the position it leads to (a stochastic search's backup one ply below the afterstate).
    The rolls: the 36 ordered ones, or if `distinct` the 21 distinct ones weighted by their
    probabilities (the same positions; the network sees the lower die first)."""
    o, _ = rolled_transitions(model, params, action, states, distinct)
    probs = roll_probs(distinct)
    return (o.reward + o.discount * o.value).reshape(-1, probs.size) @ probs


def rolled_transitions(model: Model, params: Params, action, states: State,
                       distinct: bool = False):
    """(`transition` [B * R], the rolled states [B * R]): `action` [B] played in `states`
    [B], then each of the R rolls (`env.every_roll`), for the mover of `states`."""
    afters, rolled = every_roll(play_action(model, states, action), model.env.max_steps,
                                distinct)
    mover = states.current_player
    each = lambda x: jnp.repeat(x, roll_probs(distinct).size, axis=0)
    return transition(model, params, rolled, afters.rewards + rolled.rewards, each(mover),
                      each(banked(model, states, mover))), rolled
