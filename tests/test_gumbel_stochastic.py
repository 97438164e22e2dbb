"""The expected search tree of `gumbel_stochastic_muzero_policy` on a hand-built model, for
1, 2, 4 and 8 simulations, computed here by hand from the rules of Gumbel MuZero (the root's
sequential halving, the completed Q of its Appendix D) and of Stochastic MuZero (chance
outcomes by argmax(prob / (visits + 1)), values as visit-weighted means); and where mctx's
`gumbel_muzero_policy` (the chance drawn inside the model) and `stochastic_muzero_policy`
(PUCT, visit counts as the policy) differ from it on the same model."""
import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from trictrac_jax.az.gumbel_stochastic import gumbel_stochastic_muzero_policy

# The model: a root decision (node id 0) of 4 actions, the last one invalid; after action a,
# an afterstate (id 1 + a) with its value for the mover; its chance node of 3 outcomes with
# probabilities P leads to the opponent's decision (id 10 + 3a + o), with a reward for the
# mover and the opponent's value (discount -1). Nodes deeper are worth 0 (id GENERIC).
P = np.array([0.4, 0.35, 0.25])
LOGITS = np.array([0.0, 0.5, -0.5, 0.0])
INVALID = np.array([False, False, False, True])
ROOT_VALUE = 0.05
AFTER_VALUE = np.array([0.3, -0.2, 0.1])
REWARD = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.1, 0.0, 0.0]])
NEXT_VALUE = np.array([[0.5, 0.4, 0.6], [0.1, 0.0, 0.3], [-0.1, -0.3, 0.0]])
GENERIC = 99
A, C = LOGITS.size, P.size


def table(entries):
    """float32[100]: a value by node id, 0 for ids not in `entries`."""
    values = np.zeros(100, np.float32)
    for node, value in entries.items():
        values[node] = value
    return jnp.asarray(values)


AFTER_TABLE = table({1 + a: AFTER_VALUE[a] for a in range(3)})
REWARD_TABLE = table({10 + 3 * a + o: REWARD[a, o] for a in range(3) for o in range(C)})
VALUE_TABLE = table({10 + 3 * a + o: NEXT_VALUE[a, o] for a in range(3) for o in range(C)})


def backed(a, o):
    """What one visit to outcome o of action a backs up to the afterstate: the reward plus
    the discounted (-1) value of the opponent's decision."""
    return REWARD[a, o] - NEXT_VALUE[a, o]


def afterstate_of(action, node):
    return jnp.where(node == 0, 1 + action, GENERIC)


def rolled(outcome, after):
    return jnp.where((after >= 1) & (after <= 3), 10 + 3 * (after - 1) + outcome, GENERIC)


def decision_fn(params, key, action, node):
    after = afterstate_of(action, node)
    return mctx.DecisionRecurrentFnOutput(
        chance_logits=jnp.broadcast_to(jnp.log(jnp.asarray(P, jnp.float32)), (node.size, C)),
        afterstate_value=AFTER_TABLE[after]), after


def chance_fn(params, key, outcome, after):
    nxt = rolled(outcome, after)
    return mctx.ChanceRecurrentFnOutput(
        action_logits=jnp.zeros((nxt.size, A)), value=VALUE_TABLE[nxt],
        reward=REWARD_TABLE[nxt], discount=-jnp.ones(nxt.size)), nxt


def sampled_fn(params, key, action, node):
    """gumbel's recurrent function: the decision, then an outcome drawn with `key`."""
    outcome = jax.random.categorical(key, jnp.log(jnp.asarray(P, jnp.float32)),
                                     shape=node.shape)
    nxt = rolled(outcome, afterstate_of(action, node))
    return mctx.RecurrentFnOutput(reward=REWARD_TABLE[nxt], discount=-jnp.ones(nxt.size),
                                  prior_logits=jnp.zeros((nxt.size, A)),
                                  value=VALUE_TABLE[nxt]), nxt


ROOT = mctx.RootFnOutput(prior_logits=jnp.asarray(LOGITS[None], jnp.float32),
                         value=jnp.array([ROOT_VALUE], jnp.float32),
                         embedding=jnp.zeros(1, jnp.int32))
KEY = jax.random.PRNGKey(0)


@functools.lru_cache(maxsize=None)
def compiled(name, simulations):
    """The policy `name` ("gumbel_stochastic", or mctx's "gumbel" or "stochastic") over the
    model, jitted once per simulation count: a function of the Gumbel noise's scale."""
    invalid = jnp.asarray(INVALID[None])
    if name == "gumbel_stochastic":
        return jax.jit(lambda scale: gumbel_stochastic_muzero_policy(
            None, KEY, ROOT, decision_fn, chance_fn, simulations, invalid,
            max_num_considered_actions=4, gumbel_scale=scale))
    if name == "gumbel":
        return jax.jit(lambda scale: mctx.gumbel_muzero_policy(
            None, KEY, ROOT, sampled_fn, simulations, invalid, max_num_considered_actions=4,
            gumbel_scale=scale))
    return jax.jit(lambda scale: mctx.stochastic_muzero_policy(
        None, KEY, ROOT, decision_fn, chance_fn, simulations, invalid,
        dirichlet_fraction=0.0, temperature=0.0))


def policy(name, simulations, gumbel_scale=0.0):
    return compiled(name, simulations)(jnp.float32(gumbel_scale))


# --- Gumbel MuZero's rules, by hand --------------------------------------------------------

PRIOR = np.exp(LOGITS - LOGITS.max()) * ~INVALID
PRIOR /= PRIOR.sum()


def sigma(q, visits):
    """sigma(completed Q) at the root (Appendix D, mctx's defaults: c_visit 50, c_scale 0.1,
    Q rescaled to [0, 1]): unvisited actions (the invalid one too) get the mixed value
    (v + N * sum_visited(prior * q) / sum_visited(prior)) / (N + 1)."""
    visited = visits > 0
    n = visits.sum()
    mixed = ROOT_VALUE
    if n:
        mixed = (ROOT_VALUE + n * (PRIOR[visited] @ q[visited]) / PRIOR[visited].sum()) / (n + 1)
    completed = np.where(visited, q, mixed)
    spread = max(completed.max() - completed.min(), 1e-8)
    return (50 + visits.max()) * 0.1 * (completed - completed.min()) / spread


def score(q, visits, gumbel):
    """The root's ranking: gumbel + logits + sigma(completed Q)."""
    return gumbel + LOGITS - LOGITS.max() + sigma(q, visits)


# The trees by hand, without Gumbel noise. Sequential halving over the 3 valid actions
# visits each action once (sims 1-3, in the prior's order: a1, a0, a2; with no visits or
# equal Q the logits decide), then the best 2 (sims 4-5, best first), then those 2 again
# (sims 6-7), then the best (sim 8); at 4 simulations only the best gets a second visit.
# A first visit values an action by its afterstate; each later one goes through its chance
# node to the outcome furthest below its share: o0 (0.4), o1 (0.35 > 0.4 / 2), o2 (0.25 >
# 0.4 / 2, 0.35 / 2). Q then drops below the afterstate value for a0 (whose outcomes are
# bad) and rises above it for a2.
TRACES = {
    1: [(1, None)],
    2: [(1, None), (0, None)],
    4: [(1, None), (0, None), (2, None), (0, 0)],
    8: [(1, None), (0, None), (2, None), (0, 0), (2, 0), (2, 1), (0, 1), (2, 2)],
}
SEQUENCES = {1: [0], 2: [0, 0], 4: [0, 0, 0, 1], 8: [0, 0, 0, 1, 1, 2, 2, 3]}


def replay(trace, sequence, gumbel=np.zeros(A)):
    """(visits int[A], Q float[A], outcomes visited [A][C], root leaf values) of a trace,
    each step checked against the rules: the action is the best-ranked among those with the
    visit count sequential halving considers; the outcome has the highest prob / (visits +
    1)."""
    visits, q = np.zeros(A, int), np.zeros(A)
    samples = [[] for _ in range(A)]  # the values backed up to each afterstate
    outcomes = np.zeros((A, C), int)
    leaves = []
    for (action, outcome), considered in zip(trace, sequence):
        ranked = np.where((visits == considered) & ~INVALID, score(q, visits, gumbel), -np.inf)
        assert action == np.argmax(ranked), (trace, ranked)
        if outcome is None:
            assert visits[action] == 0
            value = AFTER_VALUE[action]
        else:
            assert outcome == np.argmax(P / (outcomes[action] + 1))
            outcomes[action, outcome] += 1
            value = backed(action, outcome)
        samples[action].append(value)
        visits[action] += 1
        q[action] = np.mean(samples[action])
        leaves.append(value)
    return visits, q, outcomes, leaves


def improved_policy(q, visits):
    logits = np.where(INVALID, -np.inf, LOGITS + sigma(q, visits))
    return np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()


def chosen_action(q, visits, gumbel=np.zeros(A)):
    """The best of the most visited by gumbel + logits + sigma."""
    return int(np.argmax(np.where(visits == visits.max(), score(q, visits, gumbel), -np.inf)))


def root_children(tree):
    """Node index of each root action's child (-1: unvisited), batch element 0."""
    return np.asarray(tree.children_index)[0, 0, :A]


def outcome_visits(tree):
    """int[A, C]: visits of each root action's chance outcomes, read from the decision nodes
    below them (node id 10 + 3a + o)."""
    ids = np.asarray(tree.embeddings.state_embedding)[0]
    visits = np.asarray(tree.node_visits)[0]
    counts = np.zeros((A, C), int)
    for a in range(3):
        for o in range(C):
            counts[a, o] = visits[ids == 10 + 3 * a + o].sum()
    return counts


@pytest.mark.parametrize("simulations", [1, 2, 4, 8])
def test_the_expected_tree(simulations):
    visits, q, outcomes, leaves = replay(TRACES[simulations], SEQUENCES[simulations])
    out = policy("gumbel_stochastic", simulations)
    tree = out.search_tree
    np.testing.assert_array_equal(tree.summary().visit_counts[0], visits)
    np.testing.assert_array_equal(outcome_visits(tree), outcomes)
    root_q = np.asarray(tree.qvalues(jnp.zeros(1, jnp.int32)))[0]
    np.testing.assert_allclose(root_q[visits > 0], q[visits > 0], atol=1e-6)
    # the root's value: its own and every simulation's leaf value, as seen from the root
    assert float(tree.node_values[0, 0]) == pytest.approx(
        (ROOT_VALUE + sum(leaves)) / (simulations + 1), abs=1e-6)
    np.testing.assert_allclose(out.action_weights[0], improved_policy(q, visits), atol=1e-6)
    assert int(out.action[0]) == chosen_action(q, visits)


def test_the_hand_trees_say_what_the_search_does():
    """The figures the trees above stand on, stated: at 8 simulations a2 (lowest prior) is
    played on the mean of its afterstate and its three outcomes, a0 falls from 0.3 to the
    mean of its afterstate and two bad outcomes; at 4 the only action visited twice, a0,
    is played though its Q has fallen below a2's (sequential halving commits)."""
    visits, q, _, _ = replay(TRACES[8], SEQUENCES[8])
    assert list(visits) == [3, 1, 4, 0] and chosen_action(q, visits) == 2
    assert q[2] == pytest.approx((0.1 + 0.2 + 0.3 + 0.0) / 4)
    assert q[0] == pytest.approx((0.3 - 0.5 - 0.4) / 3)
    visits, q, _, _ = replay(TRACES[4], SEQUENCES[4])
    assert chosen_action(q, visits) == 0 and q[0] < q[2]
    assert np.argmax(improved_policy(q, visits)) == 2


def test_gumbel_noise_read_back():
    """With Gumbel noise (a fixed key), the noise in the tree's extra data ranks the first
    visits and the action, not the improved policy."""
    out = policy("gumbel_stochastic", 2, gumbel_scale=1.0)
    gumbel = np.asarray(out.search_tree.extra_data.root_gumbel)[0]
    order = np.argsort(-np.where(INVALID, -np.inf, gumbel + LOGITS), kind="stable")
    trace = [(int(order[0]), None), (int(order[1]), None)]
    visits, q, _, _ = replay(trace, SEQUENCES[2], gumbel)
    np.testing.assert_array_equal(out.search_tree.summary().visit_counts[0], visits)
    np.testing.assert_allclose(out.action_weights[0], improved_policy(q, visits), atol=1e-6)
    assert int(out.action[0]) == chosen_action(q, visits, gumbel)


# (mctx's searches at two of the four sizes: each size compiles anew, seconds apiece)
@pytest.mark.parametrize("simulations", [1, 8])
def test_gumbel_values_an_action_by_one_drawn_outcome(simulations):
    """mctx's gumbel (the outcome drawn inside the model) on the same model: the root is the
    same Gumbel root, but an action's first visit backs up one drawn outcome's value, not
    the afterstate's, and every later visit stays below that one outcome (where
    `test_the_expected_tree` spreads them over the chance node)."""
    out = policy("gumbel", simulations)
    tree = out.search_tree
    visits = np.asarray(tree.summary().visit_counts[0])
    ids = np.asarray(tree.embeddings)[0]
    children = root_children(tree)
    root_q = np.asarray(tree.qvalues(jnp.zeros(1, jnp.int32)))[0]
    for a in np.nonzero(visits)[0]:
        drawn = ids[children[a]] - 10 - 3 * a  # the one outcome below action a
        assert 0 <= drawn < C
        if visits[a] == 1:
            assert root_q[a] == pytest.approx(backed(a, drawn), abs=1e-6)
            assert root_q[a] != pytest.approx(AFTER_VALUE[a])


@pytest.mark.parametrize("simulations", [2, 8])
def test_stochastic_trains_on_visit_counts(simulations):
    """mctx's stochastic (PUCT) on the same model: its policy is the visit fractions, 0 for
    a valid action it did not visit; Gumbel's improved policy gives every valid action a
    share. Its first two simulations visit by the prior (a1, then a0: sqrt(2) * c *
    prior(a0) / 1 > sqrt(2) * c * prior(a1) / 2, their normalised Q being equal)."""
    out = policy("stochastic", simulations)
    visits = np.asarray(out.search_tree.summary().visit_counts[0])
    np.testing.assert_allclose(out.action_weights[0], visits / simulations, atol=1e-6)
    if simulations <= 2:
        assert list(visits) == [int(simulations == 2), 1, 0, 0]
    ours = np.asarray(policy("gumbel_stochastic", simulations).action_weights[0])
    assert (ours[~INVALID] > 0).all()
