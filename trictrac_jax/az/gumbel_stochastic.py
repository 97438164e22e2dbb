"""Gumbel MuZero's root over Stochastic MuZero's chance nodes, as an mctx policy.

    gumbel_stochastic_muzero_policy(params, rng_key, root, decision_recurrent_fn,
                                    chance_recurrent_fn, num_simulations, ...) -> PolicyOutput

The arguments are `mctx.stochastic_muzero_policy`'s (decision and chance functions) with
`mctx.gumbel_muzero_policy`'s settings (`max_num_considered_actions`, `gumbel_scale`,
`qtransform`); it returns an `mctx.PolicyOutput` whose `action_weights` are Gumbel MuZero's
improved policy. It is written on mctx's own pieces: `mctx.search` over the tree of
`stochastic_muzero_policy` (A actions then C chance outcomes on one action axis, embeddings
wrapped in `StochasticRecurrentState`), with Gumbel's action selection at decision nodes:

* the root: Gumbel top-k and sequential halving over the `max_num_considered_actions`
  actions (`gumbel_muzero_root_action_selection`); the action played is the best of the most
  visited by `gumbel + logits + sigma(completed Q)`, and the action weights are
  softmax(logits + sigma(completed Q)), as in `gumbel_muzero_policy`;
* interior decision nodes: Gumbel MuZero's deterministic selection (visits tracking
  softmax(logits + sigma(completed Q))), as in `gumbel_muzero_policy`;
* chance nodes: Stochastic MuZero's choice, argmax(prob / (visits + 1)): the outcome
  furthest below its share of the visits, so that after n visits each outcome has been
  visited about n * prob times (with equal probabilities, as the 36 rolls have, none twice
  before each once).

Values through a chance node are mctx's visit-weighted means (`mctx.search`'s backup):
the afterstate's own value (the network's expectation over the outcomes) counted once,
and each visited outcome's `reward + discount * value` once a visit. Since the visits
follow the probabilities, the mean is a stratified estimate of the expectation over the
outcomes; with the afterstate value as its first term, one visit to an action values it by
the expectation the network learnt, not by one outcome drawn at random (as
`gumbel_muzero_policy` with the chance inside `recurrent_fn` does, and every later visit
through that action then stays below that one outcome). Weighting the visited outcomes by
their probabilities instead, the unvisited mass by the afterstate value, would need a
backup other than `mctx.search`'s.

As in `stochastic_muzero_policy`, every expansion calls both recurrent functions and keeps
the one the node's kind needs. Unlike it, the root's afterstate placeholder is zeros of the
decision function's output shape (`jax.eval_shape`), not a decision function call.
"""
from __future__ import annotations

import functools
from typing import Optional

import chex
import jax
import jax.numpy as jnp
import mctx
from mctx._src import action_selection, base, policies, seq_halving


def _decision_root_selection(root_selection_fn, num_actions: int):
    """A root action selection that sees only the decision part (the first `num_actions`)
    of the A + C action axis: the root is a decision node."""
    def select(rng_key, tree, node_index):
        return root_selection_fn(rng_key, policies._mask_tree(tree, num_actions, "decision"),
                                 node_index)
    return select


def gumbel_stochastic_muzero_policy(
        params: base.Params,
        rng_key: chex.PRNGKey,
        root: mctx.RootFnOutput,
        decision_recurrent_fn: base.DecisionRecurrentFn,
        chance_recurrent_fn: base.ChanceRecurrentFn,
        num_simulations: int,
        invalid_actions: Optional[chex.Array] = None,
        max_depth: Optional[int] = None,
        loop_fn: mctx.LoopFn = jax.lax.fori_loop,
        *,
        qtransform: base.QTransform = mctx.qtransform_completed_by_mix_value,
        max_num_considered_actions: int = 16,
        gumbel_scale: chex.Numeric = 1.0,
) -> mctx.PolicyOutput[mctx.GumbelMuZeroExtraData]:
    """Runs Gumbel MuZero's search over a tree with chance nodes.

    Args are those of `mctx.stochastic_muzero_policy` (`root.prior_logits` [B, A],
    `decision_recurrent_fn(params, key, action, state_embedding)` ->
    (DecisionRecurrentFnOutput with chance_logits [B, C], afterstate_embedding),
    `chance_recurrent_fn(params, key, outcome, afterstate_embedding)` ->
    (ChanceRecurrentFnOutput, state_embedding), `invalid_actions` bool[B, A] at the root)
    and of `mctx.gumbel_muzero_policy` (`qtransform`, `max_num_considered_actions`,
    `gumbel_scale`: 0 for no noise).

    Returns the `PolicyOutput`: the action, the improved policy softmax(logits +
    completed Q) as `action_weights` [B, A], and the search tree restricted to its decision
    part ([..., A]) with the root's Gumbel noise in `extra_data.root_gumbel` [B, A].
    """
    batch_size, num_actions = root.prior_logits.shape
    if invalid_actions is None:
        invalid_actions = jnp.zeros((batch_size, num_actions), bool)
    root = root.replace(prior_logits=policies._mask_invalid_actions(root.prior_logits,
                                                                    invalid_actions))
    rng_key, gumbel_rng = jax.random.split(rng_key)
    gumbel = gumbel_scale * jax.random.gumbel(gumbel_rng, root.prior_logits.shape,
                                              root.prior_logits.dtype)

    # The tree's action axis is A actions then C chance outcomes (stochastic_muzero_policy's).
    dummy_action = jnp.zeros((batch_size,), jnp.int32)
    dummy_output, afterstate_shape = jax.eval_shape(
        decision_recurrent_fn, params, rng_key, dummy_action, root.embedding)
    num_chance_outcomes = dummy_output.chance_logits.shape[-1]
    wrapped_root = root.replace(
        prior_logits=jnp.concatenate(
            [root.prior_logits,
             jnp.full((batch_size, num_chance_outcomes), -jnp.inf, root.prior_logits.dtype)],
            axis=-1),
        embedding=base.StochasticRecurrentState(
            state_embedding=root.embedding,
            afterstate_embedding=jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype),
                                              afterstate_shape),
            is_decision_node=jnp.ones((batch_size,), bool)))
    recurrent_fn = policies._make_stochastic_recurrent_fn(
        decision_node_fn=decision_recurrent_fn, chance_node_fn=chance_recurrent_fn,
        num_actions=num_actions, num_chance_outcomes=num_chance_outcomes)

    root_selection = _decision_root_selection(functools.partial(
        action_selection.gumbel_muzero_root_action_selection,
        num_simulations=num_simulations,
        max_num_considered_actions=max_num_considered_actions,
        qtransform=qtransform), num_actions)
    interior_selection = policies._make_stochastic_action_selection_fn(
        functools.partial(action_selection.gumbel_muzero_interior_action_selection,
                          qtransform=qtransform), num_actions)
    tree = mctx.search(
        params=params, rng_key=rng_key, root=wrapped_root, recurrent_fn=recurrent_fn,
        root_action_selection_fn=root_selection,
        interior_action_selection_fn=interior_selection,
        num_simulations=num_simulations, max_depth=max_depth,
        invalid_actions=invalid_actions,
        extra_data=mctx.GumbelMuZeroExtraData(root_gumbel=gumbel), loop_fn=loop_fn)
    tree = policies._mask_tree(tree, num_actions, "decision")

    # gumbel_muzero_policy's action and improved policy, over the decision part.
    visit_counts = tree.summary().visit_counts
    considered_visit = jnp.max(visit_counts, axis=-1, keepdims=True)
    completed_qvalues = jax.vmap(qtransform, in_axes=[0, None])(tree, tree.ROOT_INDEX)
    to_argmax = seq_halving.score_considered(considered_visit, gumbel, root.prior_logits,
                                             completed_qvalues, visit_counts)
    action = action_selection.masked_argmax(to_argmax, invalid_actions)
    action_weights = jax.nn.softmax(policies._mask_invalid_actions(
        root.prior_logits + completed_qvalues, invalid_actions))
    return mctx.PolicyOutput(action=action, action_weights=action_weights, search_tree=tree)
