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

The trees are K = `search.max_actions` actions wide, not 514: mctx's bookkeeping grows with
the width of its action axis. Each decision node (`Node`) carries the table of its K *slots*:
its legal actions in ascending index order, then `EMPTY_SLOT` in the slots left over. A node
with more than K legal actions keeps the K with the highest prior logits (ordered by
descending logit). The recurrent functions map slot -> action, priors are gathered into the
slots, and the root policy is scattered back to the 514 actions. With K above every node's
number of legal actions, slots only relabel the actions (order kept), and the search is the
514-wide one (tests/test_search.py says how exactly).
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import mctx
from flax import struct

from trictrac_jax.az import network as N
from trictrac_jax import scoring
from trictrac_jax.env import NUM_CHANCE_OUTCOMES, Trictrac, has_choice, sample_outcome
from trictrac_jax.worths import best_candidates, candidate_worths
from trictrac_jax.state import NUM_ACTIONS, State

# The action of an empty slot: Roll, never legal at a decision (taking it forfeits the game),
# never chosen by the search (empty slots are masked as illegal actions are).
EMPTY_SLOT = 0


class SearchOutput(NamedTuple):
    action: jax.Array  # int32[B], the move to play
    policy: jax.Array  # float32[B, 514], the search policy (training target)
    value: jax.Array  # float32[B], the root value (mover's view, minus his baseline)
    tree: mctx.Tree | None  # the search tree (decision part, K slots wide), for inspection


def _done(state: State):
    return state.terminated | state.truncated


@struct.dataclass
class Node:
    """A decision node of the tree: its State and the actions of its K slots."""

    state: State
    actions: jax.Array  # int32[K]: slot -> action index, EMPTY_SLOT where unused


def slot_actions(mask, logits, k: int):
    """int32[B, k]: the slot table of nodes with legal actions bool[B, 514] and prior logits
    float32[B, 514]: the legal actions in ascending index order, EMPTY_SLOT after them; a
    node with more than k legal actions gets the k with the highest logits instead (by
    descending logit, ties by index). One top_k ranks both cases: by -index, or by logit."""
    fits = mask.sum(-1, keepdims=True) <= k
    rank = jnp.where(fits, -jnp.arange(NUM_ACTIONS, dtype=jnp.float32), logits)
    top, actions = jax.lax.top_k(jnp.where(mask, rank, -jnp.inf), k)
    return jnp.where(top > -jnp.inf, actions, EMPTY_SLOT).astype(jnp.int32)


def to_slots(logits, actions):
    """float32[B, K]: the logits [B, 514] of each slot's action, MASKED_LOGIT in empty
    slots."""
    valid = actions != EMPTY_SLOT
    return jnp.where(valid, jnp.take_along_axis(logits, actions, -1), N.MASKED_LOGIT)


def from_slots(weights, actions):
    """float32[B, 514]: slot weights [B, K] scattered to their actions (0 elsewhere, and
    the weight of empty slots dropped)."""
    rows = jnp.arange(actions.shape[0])[:, None]
    target = jnp.where(actions != EMPTY_SLOT, actions, NUM_ACTIONS)  # out of range: dropped
    return jnp.zeros((actions.shape[0], NUM_ACTIONS), weights.dtype).at[rows, target].set(
        weights, mode="drop")


def decision_node(states: State, logits, k: int):
    """(slot logits float32[B, k], Node [B]) of decision `states` [B] with prior logits
    [B, 514]. A finished game has no slots: nothing below it is backed up (discount 0), and
    its all-True mask would otherwise fill every slot."""
    mask = states.legal_action_mask & ~_done(states)[:, None]
    actions = slot_actions(mask, logits, k)
    return to_slots(logits, actions), Node(states, actions)


def _slot_action(slot, nodes: Node):
    """int32[B]: the action of `slot` [B] at each node."""
    return jnp.take_along_axis(nodes.actions, slot[:, None].astype(jnp.int32), -1)[:, 0]


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


class Model:
    """The simulator plus the network, as mctx recurrent functions over the 514 actions with
    States as embeddings (batched [B]); `slotted` narrows them to the trees' K slots."""

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


def rolled_worth(model: Model, params, action, states: State):
    """float32[B]: the mover's worth of playing `action` [B] in `states` [B], relative to his
    baseline: the mean over the 36 rolls of the roll's reward plus the discounted value of
    the position it leads to (a stochastic search's backup one ply below the afterstate)."""
    afters, rolled = model.env.every_roll(jax.vmap(model.env.step_deterministic)(states, action))
    mover = states.current_player
    each = lambda x: jnp.repeat(x, NUM_CHANCE_OUTCOMES, axis=0)
    o = model.outcome(params, afters, rolled, each(mover), each(model.baseline(states, mover)))
    backed_up = (o.reward + o.discount * o.value).reshape(-1, NUM_CHANCE_OUTCOMES)
    return backed_up @ model.env.chance_probs


def likeliest(model: Model, params, states: State, top_k: int):
    """(actions int32[B, K], legal bool[B, K], value float32[B]): the policy's `top_k`
    likeliest actions by descending logit, which of them are legal, and the network's
    value of `states` [B] (the candidates of both lookaheads)."""
    logits, value = model.evaluate(params, states)
    top_logits, actions = jax.lax.top_k(logits, top_k)
    return actions.astype(jnp.int32), top_logits > N.MASKED_LOGIT / 2, value


def make_lookahead(model: Model, top_k: int, rolls: bool = False):
    """`lookahead(params, key, states[B]) -> int32[B]`: a 1-ply search. Among the policy's
    `top_k` most likely legal actions it plays the one whose afterstate (the position after
    the move, before the next roll) is worth most to the mover; ties go to the more likely.

    Without `rolls` the afterstate's worth is the value network's view of it: an expectation
    over the 36 rolls learned in training (one network evaluation a candidate). With `rolls`
    it is `rolled_worth`, the mean over the 36 rolls, the network seeing only positions
    after a roll, as in training (36 evaluations a candidate). Only games with a choice to
    make have candidates, scored a bounded pass at a time (`worths.best_candidates`); the
    others play their first legal action."""
    def lookahead(params, key, states: State):
        del key  # deterministic
        actions, legal, _ = likeliest(model, params, states, top_k)
        worth = (lambda s, a: rolled_worth(model, params, a, s)) if rolls else (
            lambda s, a: model.afterstate(params, a, s)[1])
        return best_candidates(states, actions, legal & has_choice(states)[:, None],
                               jnp.argmax(states.legal_action_mask, -1), worth)
    return lookahead


def make_lookahead_search(model: Model, top_k: int, temperature: float, explore: bool):
    """`search(params, key, states[B]) -> SearchOutput` of the 1-ply lookahead over the rolls
    (`search.algorithm: lookahead`): the policy's `top_k` likeliest legal moves, each worth
    its `rolled_worth`. The policy is softmax(worth / `temperature`) over them, the move is
    drawn from it (`explore`) or the best (ties to the likelier), and the value is the best
    worth: a one-step expectimax backup of the value network, the target that
    `replay.bootstrap` learns from. No tree (`tree` is None)."""
    def search(params, key, states: State) -> SearchOutput:
        actions, legal, value = likeliest(model, params, states, top_k)
        worth = candidate_worths(states, actions, legal,
                                 lambda s, a: rolled_worth(model, params, a, s))
        scaled = worth / temperature
        slot = jax.random.categorical(key, scaled) if explore else jnp.argmax(worth, -1)
        best = jnp.max(worth, -1)
        return SearchOutput(jnp.take_along_axis(actions, slot[:, None], -1)[:, 0],
                            from_slots(jax.nn.softmax(scaled, -1), actions),
                            jnp.where(best > -jnp.inf, best, value), None)
    return search


class Slots(NamedTuple):
    """A Model's functions for mctx over K slots: decision nodes embed a `Node`."""

    root: Callable  # (params, states[B]) -> RootFnOutput
    decision_fn: Callable  # stochastic: (params, key, slot, Node) -> (out, Afterstate)
    chance_fn: Callable  # stochastic: (params, key, outcome, Afterstate) -> (out, Node)
    sampled_fn: Callable  # gumbel: (params, key, slot, Node) -> (out, Node)


def slotted(model: Model, k: int) -> Slots:
    """`model`'s recurrent functions with actions in K = `k` slots per decision node."""

    def root(params, states: State):
        logits, value = model.evaluate(params, states)
        slot_logits, nodes = decision_node(states, logits, k)
        return mctx.RootFnOutput(prior_logits=slot_logits, value=value, embedding=nodes)

    def decision_fn(params, key, slot, nodes: Node):
        return model.decision_fn(params, key, _slot_action(slot, nodes), nodes.state)

    def chance_fn(params, key, outcome, afterstate: Afterstate):
        out, nxt = model.chance_fn(params, key, outcome, afterstate)
        slot_logits, nodes = decision_node(nxt, out.action_logits, k)
        return out.replace(action_logits=slot_logits), nodes

    def sampled_fn(params, key, slot, nodes: Node):
        out, nxt = model.sampled_fn(params, key, _slot_action(slot, nodes), nodes.state)
        slot_logits, nodes = decision_node(nxt, out.prior_logits, k)
        return out.replace(prior_logits=slot_logits), nodes

    return Slots(root, decision_fn, chance_fn, sampled_fn)


def make_search(model: Model, search_config: dict, explore: bool = True):
    """`search(params, key, states[B]) -> SearchOutput`, over `search.max_actions` slots.

    `explore`: Dirichlet noise and visit-count sampling (stochastic), Gumbel noise (gumbel)
    or moves drawn from the softmax of their worths (lookahead) for self-play; without it
    the search plays its best action (evaluation)."""
    s = search_config
    if s["algorithm"] == "lookahead":
        return make_lookahead_search(model, s["max_num_considered_actions"],
                                     s["worth_temperature"], explore)
    fns = slotted(model, s["max_actions"])

    def search(params, key, states: State) -> SearchOutput:
        root = fns.root(params, states)
        invalid = root.embedding.actions == EMPTY_SLOT
        if s["algorithm"] == "stochastic":
            out = mctx.stochastic_muzero_policy(
                params, key, root, fns.decision_fn, fns.chance_fn,
                num_simulations=s["num_simulations"], invalid_actions=invalid,
                qtransform=_masked_puct_qtransform,
                dirichlet_fraction=s["dirichlet_fraction"] if explore else 0.0,
                dirichlet_alpha=s["dirichlet_alpha"], pb_c_init=s["pb_c_init"],
                temperature=s["temperature"] if explore else 0.0)
        else:
            out = mctx.gumbel_muzero_policy(
                params, key, root, fns.sampled_fn, num_simulations=s["num_simulations"],
                invalid_actions=invalid,
                max_num_considered_actions=s["max_num_considered_actions"],
                gumbel_scale=1.0 if explore else 0.0)
        root_value = out.search_tree.node_values[:, mctx.Tree.ROOT_INDEX]
        return SearchOutput(_slot_action(out.action, root.embedding),
                            from_slots(out.action_weights, root.embedding.actions),
                            root_value, out.search_tree)

    return search
