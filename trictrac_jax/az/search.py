"""Searches with the simulator as the model (`model.py`): mctx's trees and the lookahead.

    search(params, key, states, *, model, config, explore) -> SearchOutput

dispatches on `config.algorithm` (a `SearchConfig`):

* `stochastic`: `mctx.stochastic_muzero_policy`. Decision nodes are decision States; the
  decision function is `env.step_deterministic` (afterstates are chance nodes over the 36
  ordered dice, with their true probabilities); the chance function is `env.chance_step`.
* `gumbel`: `mctx.gumbel_muzero_policy`; one recurrent step is `step_deterministic` followed
  by `chance_step` with dice sampled from the simulation's key.
* `gumbel_stochastic`: `gumbel_stochastic.gumbel_stochastic_muzero_policy`, Gumbel's root and
  interior selection over the chance nodes of `stochastic` (its decision and chance functions).
* `lookahead`: no tree: the policy's likeliest moves, each valued over the 36 rolls after it.

Illegal actions are masked at every node: their prior logit is `MASKED_LOGIT` and, in the
PUCT search, their score too.

The trees are K = `config.max_actions` actions wide, not 514: mctx's bookkeeping grows with
the width of its action axis. Each decision node (`Node`) carries the table of its K *columns*:
its legal actions in ascending index order, then `UNUSED_COLUMN` in the columns left over. A node
with more than K legal actions keeps the K with the highest prior logits (ordered by
descending logit). The recurrent functions map column -> action, priors are gathered into the
columns, and the root policy is scattered back to the 514 actions. With K above every node's
number of legal actions, columns only relabel the actions (order kept), and the search is the
514-wide one (tests/test_search.py says how exactly).

mctx keeps the embeddings `pack`ed (packed.py): the small fields of a node in one array of
words, one write a simulation instead of one a field. The tree a search returns embeds them
unpacked.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
from flax import struct

from trictrac_jax import lowering
from trictrac_jax.az import model as M
from trictrac_jax.az import network
from trictrac_jax.az.base import Model, Params, SearchOutput
from trictrac_jax.az.config import SearchConfig
from trictrac_jax.az.gumbel_stochastic import gumbel_stochastic_muzero_policy
from trictrac_jax.az.packed import Packed, pack, unpack
from trictrac_jax.env import has_choice
from trictrac_jax.ranking import best_candidates, candidate_worths
from trictrac_jax.state import NUM_ACTIONS, State

# The action of an unused column: Roll, never legal at a decision (taking it forfeits the
# game), never chosen by the search (unused columns are masked as illegal actions are).
UNUSED_COLUMN = 0


@struct.dataclass
class Node:
    """A decision node of the tree: its State and the actions of its K columns."""

    state: State
    actions: jax.Array  # int32[K]: column -> action index, UNUSED_COLUMN where unused


def column_actions(mask, logits, k: int):
    """int32[B, k]: the column table of nodes with legal actions bool[B, 514] and prior logits
    float32[B, 514]: the legal actions in ascending index order, UNUSED_COLUMN after them; a
    node with more than k legal actions gets the k with the highest logits instead (by
    descending logit, ties by index). One top_k ranks both cases: by -index, or by logit."""
    fits = mask.sum(-1, keepdims=True) <= k
    rank = jnp.where(fits, -jnp.arange(NUM_ACTIONS, dtype=jnp.float32), logits)
    top, actions = lowering.top_k(jnp.where(mask, rank, -jnp.inf), k)
    return jnp.where(top > -jnp.inf, actions, UNUSED_COLUMN).astype(jnp.int32)


def to_columns(logits, actions):
    """float32[B, K]: the logits [B, 514] of each column's action, MASKED_LOGIT in unused
    columns."""
    valid = actions != UNUSED_COLUMN
    return jnp.where(valid, jnp.take_along_axis(logits, actions, -1), network.MASKED_LOGIT)


def from_columns(weights, actions):
    """float32[B, 514]: column weights [B, K] scattered to their actions (0 elsewhere, and
    the weight of unused columns dropped)."""
    rows = jnp.arange(actions.shape[0])[:, None]
    target = jnp.where(actions != UNUSED_COLUMN, actions, NUM_ACTIONS)  # out of range: dropped
    return jnp.zeros((actions.shape[0], NUM_ACTIONS), weights.dtype).at[rows, target].set(
        weights, mode="drop")


def decision_node(states: State, logits, k: int):
    """(column logits float32[B, k], Node [B]) of decision `states` [B] with prior logits
    [B, 514]. A finished game has no columns: nothing below it is backed up (discount 0), and
    its all-True mask would otherwise fill every column."""
    # the step's mask read from memory: fused into the count of legal actions, the kernel
    # that builds it from the rules' words spilled registers on a GPU (base.yaml's 2,048)
    mask = lowering.kernel_boundary(states.legal_action_mask) & ~states.done[:, None]
    actions = column_actions(mask, logits, k)
    return to_columns(logits, actions), Node(states, actions)


def column_action(column, nodes: Node):
    """int32[B]: the action of `column` [B] at each node."""
    return jnp.take_along_axis(nodes.actions, column[:, None].astype(jnp.int32), -1)[:, 0]


# The model's recurrent functions over K columns; mctx calls them as
# `functools.partial(fn, model, k)`. Decision nodes embed a `Node`, chance nodes an
# `Afterstate`, each `pack`ed: mctx writes an embedding leaf by leaf at each expansion.

def column_root(model: Model, k: int, params: Params, states: State
                ) -> tuple[mctx.RootFnOutput, Node]:
    """The root of a tree over states [B] (column priors, the network's value, the packed
    Nodes), and its Nodes."""
    logits, value = M.evaluate(model, params, states)
    column_logits, nodes = decision_node(states, logits, k)
    return mctx.RootFnOutput(prior_logits=column_logits, value=value,
                             embedding=pack(nodes)), nodes


def column_decision_fn(model: Model, k: int, params: Params, key, column, nodes: Packed):
    """`model.decision_fn` of the action in `column`, the Afterstate packed."""
    nodes = unpack(nodes)
    out, after = M.decision_fn(model, params, key, column_action(column, nodes), nodes.state)
    return out, pack(after)


def column_chance_fn(model: Model, k: int, params: Params, key, outcome, after: Packed):
    """`model.chance_fn`, the rolled State as a packed Node with its column priors."""
    out, nxt = M.chance_fn(model, params, key, outcome, unpack(after))
    column_logits, nodes = decision_node(nxt, out.action_logits, k)
    return out.replace(action_logits=column_logits), pack(nodes)


def column_sampled_fn(model: Model, k: int, params: Params, key, column, nodes: Packed):
    """`model.sampled_fn` of the action in `column`, the next State as a packed Node."""
    nodes = unpack(nodes)
    out, nxt = M.sampled_fn(model, params, key, column_action(column, nodes), nodes.state)
    column_logits, nodes = decision_node(nxt, out.prior_logits, k)
    return out.replace(prior_logits=column_logits), pack(nodes)


def _masked_puct_qtransform(tree, node_index):
    """mctx's PUCT Q-transform, with illegal actions (masked prior) scored out of reach:
    the plain transform gives unvisited actions the lowest Q, so an illegal action could tie
    with a visited legal one and be picked by the tie-breaking noise."""
    q = mctx.qtransform_by_parent_and_siblings(tree, node_index)
    return jnp.where(tree.children_prior_logits[node_index] <= network.MASKED_LOGIT / 2,
                     network.MASKED_LOGIT, q)


def tree_search(params: Params, key, states: State, *, model: Model, config: SearchConfig,
                explore: bool) -> SearchOutput:
    """mctx's stochastic or Gumbel MuZero search, or Gumbel's over chance nodes, over
    `config.max_actions` columns.

    `explore`: Dirichlet noise and visit-count sampling (stochastic) or Gumbel noise
    (gumbel, gumbel_stochastic) for self-play; without it the search plays its best action."""
    k = config.max_actions
    root, nodes = column_root(model, k, params, states)
    invalid = nodes.actions == UNUSED_COLUMN
    if config.algorithm == "stochastic":
        out = mctx.stochastic_muzero_policy(
            params, key, root, functools.partial(column_decision_fn, model, k),
            functools.partial(column_chance_fn, model, k),
            num_simulations=config.num_simulations, invalid_actions=invalid,
            qtransform=_masked_puct_qtransform,
            dirichlet_fraction=config.dirichlet_fraction if explore else 0.0,
            dirichlet_alpha=config.dirichlet_alpha, pb_c_init=config.pb_c_init,
            temperature=config.temperature if explore else 0.0)
    elif config.algorithm == "gumbel_stochastic":
        out = gumbel_stochastic_muzero_policy(
            params, key, root, functools.partial(column_decision_fn, model, k),
            functools.partial(column_chance_fn, model, k),
            num_simulations=config.num_simulations, invalid_actions=invalid,
            max_num_considered_actions=config.max_num_considered_actions,
            gumbel_scale=1.0 if explore else 0.0)
    else:
        out = mctx.gumbel_muzero_policy(
            params, key, root, functools.partial(column_sampled_fn, model, k),
            num_simulations=config.num_simulations, invalid_actions=invalid,
            max_num_considered_actions=config.max_num_considered_actions,
            gumbel_scale=1.0 if explore else 0.0)
    root_value = out.search_tree.node_values[:, mctx.Tree.ROOT_INDEX]
    # the tree returned embeds Nodes (and Afterstates), as unpacked as its reader expects
    # (computed only if read)
    is_packed = lambda x: isinstance(x, Packed)
    tree = out.search_tree.replace(embeddings=jax.tree.map(
        lambda x: unpack(x) if is_packed(x) else x, out.search_tree.embeddings,
        is_leaf=is_packed))
    return SearchOutput(column_action(out.action, nodes),
                        from_columns(out.action_weights, nodes.actions), root_value, tree)


def likeliest(model: Model, params: Params, states: State, top_k: int):
    """(actions int32[B, K], legal bool[B, K], value float32[B]): the policy's `top_k`
    likeliest actions by descending logit, which of them are legal, and the network's
    value of `states` [B] (the candidates of both lookaheads)."""
    logits, value = M.evaluate(model, params, states)
    top_logits, actions = lowering.top_k(logits, top_k)
    return actions.astype(jnp.int32), top_logits > network.MASKED_LOGIT / 2, value


def lookahead(params: Params, key, states: State, *, model: Model, top_k: int,
              rolls: bool = False):
    """int32[B]: a 1-ply search. Among the policy's `top_k` most likely legal actions it
    plays the one whose afterstate (the position after the move, before the next roll) is
    worth most to the mover; ties go to the more likely.

    Without `rolls` the afterstate's worth is the value network's view of it: an expectation
    over the 36 rolls learned in training (one network evaluation a candidate). With `rolls`
    it is `model.rolled_worth`, the mean over the 36 rolls, the network seeing only positions
    after a roll, as in training (36 evaluations a candidate). Only games with a choice to
    make have candidates, scored a bounded pass at a time (`ranking.best_candidates`); the
    others play their first legal action."""
    del key  # deterministic
    actions, legal, _ = likeliest(model, params, states, top_k)
    if rolls:
        worth = lambda s, a: M.rolled_worth(model, params, a, s)
    else:
        worth = lambda s, a: M.afterstate(model, params, a, s)[1]
    return best_candidates(states, actions, legal & has_choice(states)[:, None],
                           jnp.argmax(states.legal_action_mask, -1), worth)


def lookahead_search(params: Params, key, states: State, *, model: Model,
                     config: SearchConfig, explore: bool) -> SearchOutput:
    """The 1-ply lookahead over the rolls as a search (`search.algorithm: lookahead`): the
    policy's `config.max_num_considered_actions` likeliest legal moves, each worth its
    `model.rolled_worth`. The policy is softmax(worth / `config.worth_temperature`) over
    them, the move is drawn from it (`explore`) or the best (ties to the likelier), and the
    value is the best worth: a one-step expectimax backup of the value network, the target
    that `replay.bootstrap` learns from. `config.distinct_rolls`: over the 21 distinct
    rolls rather than the 36 ordered ones. No tree (`tree` is None)."""
    actions, legal, value = likeliest(model, params, states, config.max_num_considered_actions)
    worth = candidate_worths(states, actions, legal, lambda s, a: M.rolled_worth(
        model, params, a, s, config.distinct_rolls))
    scaled = worth / config.worth_temperature
    column = jax.random.categorical(key, scaled) if explore else jnp.argmax(worth, -1)
    best = jnp.max(worth, -1)
    return SearchOutput(jnp.take_along_axis(actions, column[:, None], -1)[:, 0],
                        from_columns(jax.nn.softmax(scaled, -1), actions),
                        jnp.where(best > -jnp.inf, best, value), None)


def search(params: Params, key, states: State, *, model: Model, config: SearchConfig,
           explore: bool = True) -> SearchOutput:
    """The search `config.algorithm` names, for states [B]. `explore` adds self-play's
    noise (see `tree_search`, `lookahead_search`); without it the search plays its best."""
    if config.algorithm == "lookahead":
        return lookahead_search(params, key, states, model=model, config=config,
                                explore=explore)
    return tree_search(params, key, states, model=model, config=config, explore=explore)
