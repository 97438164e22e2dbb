"""Tree search with the simulator itself as the model (mctx).

Embeddings in the tree are engine `State`s. Two searches (config `search.algorithm`):

* `stochastic`: `mctx.stochastic_muzero_policy`. Decision nodes are decision States; the
  decision function is `env.step_deterministic` (afterstates are chance nodes over the 36
  ordered dice, with their true probabilities); the chance function is `env.chance_step`.
* `gumbel`: `mctx.gumbel_muzero_policy`; one recurrent step is `step_deterministic` followed
  by `chance_step` with dice sampled from the simulation's key.

Values are the expected utility for the player to move at the node, minus the part of it
already known there (`baseline`: 0, or the current score margin for the `points` target, in
which case every transition's reward is the margin it adds: the points of a move and a
roll). mctx backs up `value(parent) = reward + discount * value(child)`, so the discount
carries the sign:
-1 when the player to move changes, +1 when the same player moves again (after Go, or after
bearing off his last checker), 0 once the game is over. Illegal actions are masked at every
node: their prior logit is `MASKED_LOGIT` and, in the PUCT search, their score too.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx
from flax import struct

from trictrac_jax import network as N
from trictrac_jax import scoring
from trictrac_jax.env import NUM_CHANCE_OUTCOMES, Trictrac, sample_outcome
from trictrac_jax.state import State


class SearchOutput(NamedTuple):
    action: jax.Array  # int32[B], the move to play
    policy: jax.Array  # float32[B, 514], the search policy (training target)
    value: jax.Array  # float32[B], the root value (mover's view)
    tree: mctx.Tree  # the search tree (decision part), for inspection


@struct.dataclass
class Afterstate:
    """A chance node: the State after a decision, and the colour that took it (the
    perspective of the node's value)."""

    state: State
    mover: jax.Array  # int32
    base: jax.Array  # float32, the mover's baseline at the decision


def score_margin(state: State, player):
    """float32[...]: `player`'s lead in 12 * holes + points."""
    score = scoring.total_score(state).astype(jnp.float32)
    own = jnp.take_along_axis(score, player[..., None], -1)[..., 0]
    return 2 * own - score.sum(-1)


def utility(state: State, rewards, player, value_target: str, margin_scale: float):
    """float32[...]: `player`'s utility of a game that has just ended in `state`, `rewards`
    being the rewards (by colour) of the transitions that ended it.

    outcome: +1 won / -1 lost / 0 truncated; margin: the score margin / margin_scale,
    clipped to [-1, 1]; points: the same, not clipped (values are learnt relative to the
    `baseline`, and clipped there)."""
    if value_target == "outcome":
        return jnp.take_along_axis(rewards, player[..., None], -1)[..., 0]
    margin = score_margin(state, player) / margin_scale
    return margin if value_target == "points" else jnp.clip(margin, -1.0, 1.0)


def baseline(state: State, player, value_target: str, margin_scale: float):
    """float32[...]: the part of `player`'s utility already known at `state`, which values
    leave out: the current score margin / margin_scale for `points`, else 0. The value
    target of a state is then the margin still to come (the sum of the points differences
    of the rolls and moves ahead)."""
    if value_target == "points":
        return score_margin(state, player) / margin_scale
    return jnp.zeros(jnp.shape(player), jnp.float32)


def _done(state: State):
    return state.terminated | state.truncated


class Model:
    """The simulator plus the network, as the recurrent functions mctx calls (batched [B])."""

    def __init__(self, env: Trictrac, net: N.PolicyValueNet, value_target: str,
                 margin_scale: float):
        self.env, self.net = env, net
        self.utility = functools.partial(utility, value_target=value_target,
                                         margin_scale=margin_scale)
        self.baseline = functools.partial(baseline, value_target=value_target,
                                          margin_scale=margin_scale)

    def evaluate(self, params, states: State):
        """Masked logits [B, 514] and value [B] (the view of each state's player to move)."""
        return N.apply(self.net, params, states.observation, states.legal_action_mask)

    def root(self, params, states: State) -> mctx.RootFnOutput:
        logits, value = self.evaluate(params, states)
        return mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states)

    def outcome(self, params, after: State, nxt: State, mover, base):
        """RecurrentFnOutput of the transition decision -> `after` -> `nxt` for `mover`,
        whose baseline at the decision was `base`."""
        logits, value = self.evaluate(params, nxt)
        ended_before, ended = _done(after), _done(nxt)
        # A game ended by the decision itself: chance_step is then a no-op with zero rewards,
        # so the decision's rewards are read from the afterstate.
        reward = jnp.where(ended_before, self.utility(after, after.rewards, mover),
                           jnp.where(ended, self.utility(nxt, nxt.rewards, mover),
                                     self.baseline(nxt, mover))) - base
        same = nxt.current_player == mover
        discount = jnp.where(ended, 0.0, jnp.where(same, 1.0, -1.0))
        return mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits,
                                      value=jnp.where(ended, 0.0, value))

    # --- stochastic MuZero: decision and chance functions --------------------------------

    def afterstate(self, params, action, states: State):
        """(afterstate, its value [B] for the mover relative to the mover's baseline at the
        decision, that baseline [B]) of playing `action` [B] in `states` [B]."""
        after = jax.vmap(self.env.step_deterministic)(states, action)
        mover = states.current_player
        base = self.baseline(states, mover)
        _, value = self.evaluate(params, after)  # the afterstate's player-to-roll view
        value = jnp.where(after.current_player == mover, value, -value)
        value += self.baseline(after, mover)  # baselines are antisymmetric, as utilities
        value = jnp.where(_done(after), self.utility(after, after.rewards, mover), value) - base
        return after, value, base

    def decision_fn(self, params, key, action, states: State):
        after, value, base = self.afterstate(params, action, states)
        # mctx visits chance outcomes by argmax(prob / (visits + 1)): with 36 equal
        # probabilities that is index order (1-1, 1-2, ...) at every node. A jitter far
        # below the probabilities' scale randomises the order of ties only.
        jitter = 1e-4 * jax.random.uniform(key, (action.shape[0], NUM_CHANCE_OUTCOMES))
        chance_logits = jnp.log(self.env.chance_probs) + jitter
        out = mctx.DecisionRecurrentFnOutput(chance_logits=chance_logits,
                                             afterstate_value=value)
        return out, Afterstate(after, states.current_player, base)

    def chance_fn(self, params, key, outcome, afterstate: Afterstate):
        del key
        nxt = jax.vmap(self.env.chance_step)(afterstate.state, outcome)
        o = self.outcome(params, afterstate.state, nxt, afterstate.mover, afterstate.base)
        out = mctx.ChanceRecurrentFnOutput(action_logits=o.prior_logits, value=o.value,
                                           reward=o.reward, discount=o.discount)
        return out, nxt

    # --- Gumbel MuZero: one recurrent step with sampled dice ------------------------------

    def sampled_fn(self, params, key, action, states: State):
        after = jax.vmap(self.env.step_deterministic)(states, action)
        outcome = jax.vmap(sample_outcome)(jax.random.split(key, action.shape[0]))
        nxt = jax.vmap(self.env.chance_step)(after, outcome)
        mover = states.current_player
        return self.outcome(params, after, nxt, mover, self.baseline(states, mover)), nxt


def _masked_puct_qtransform(tree, node_index):
    """mctx's PUCT Q-transform, with illegal actions (masked prior) scored out of reach:
    the plain transform gives unvisited actions the lowest Q, so an illegal action could tie
    with a visited legal one and be picked by the tie-breaking noise."""
    q = mctx.qtransform_by_parent_and_siblings(tree, node_index)
    return jnp.where(tree.children_prior_logits[node_index] <= N.MASKED_LOGIT / 2,
                     N.MASKED_LOGIT, q)


def model_from_config(config: dict) -> Model:
    """A run's model: its env, network and value target."""
    sp = config["selfplay"]
    return Model(Trictrac(max_steps=config["env"]["max_steps"]), N.make_network(config),
                 sp["value_target"], sp["margin_scale"])


def make_lookahead(model: Model, top_k: int):
    """`lookahead(params, key, states[B]) -> int32[B]`: a 1-ply search. Among the policy's
    `top_k` most likely legal actions it plays the one whose afterstate (the position after
    the move, before the next roll) the value network rates best for the mover: an
    expectation over the 36 rolls learned in training, where a Gumbel MuZero simulation
    sees one sampled roll. Costs top_k network evaluations and decision steps per move."""

    def lookahead(params, key, states: State):
        del key  # deterministic
        logits, _ = model.evaluate(params, states)
        top_logits, actions = jax.lax.top_k(logits, top_k)  # [B, K]
        repeated = jax.tree.map(lambda x: jnp.repeat(x, top_k, axis=0), states)
        _, value, _ = model.afterstate(params, actions.reshape(-1).astype(jnp.int32), repeated)
        value = value.reshape(actions.shape)
        value = jnp.where(top_logits > N.MASKED_LOGIT / 2, value, -jnp.inf)  # legal only
        best = jnp.argmax(value, axis=-1)
        return jnp.take_along_axis(actions, best[:, None], axis=-1)[:, 0].astype(jnp.int32)
    return lookahead


def make_search(model: Model, search_config: dict, explore: bool = True):
    """`search(params, key, states[B]) -> SearchOutput`.

    `explore`: Dirichlet noise and visit-count sampling (stochastic) or Gumbel noise
    (gumbel) for self-play; without it the search plays its best action (evaluation)."""
    s = search_config

    def search(params, key, states: State) -> SearchOutput:
        root = model.root(params, states)
        invalid = ~states.legal_action_mask
        if s["algorithm"] == "stochastic":
            out = mctx.stochastic_muzero_policy(
                params, key, root, model.decision_fn, model.chance_fn,
                num_simulations=s["num_simulations"], invalid_actions=invalid,
                qtransform=_masked_puct_qtransform,
                dirichlet_fraction=s["dirichlet_fraction"] if explore else 0.0,
                dirichlet_alpha=s["dirichlet_alpha"], pb_c_init=s["pb_c_init"],
                temperature=s["temperature"] if explore else 0.0)
        else:
            out = mctx.gumbel_muzero_policy(
                params, key, root, model.sampled_fn, num_simulations=s["num_simulations"],
                invalid_actions=invalid,
                max_num_considered_actions=s["max_num_considered_actions"],
                gumbel_scale=1.0 if explore else 0.0)
        root_value = out.search_tree.node_values[:, mctx.Tree.ROOT_INDEX]
        return SearchOutput(out.action.astype(jnp.int32), out.action_weights, root_value,
                            out.search_tree)

    return search
