"""The search: output shapes, illegal actions masked at every node, value signs when the
same player moves twice, terminal utilities, action columns (the same search as over the 514
actions, truncation to the likeliest)."""
import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

import trictrac_jax as tt
from trictrac_jax.az import model as M
from trictrac_jax.az import search as S
from trictrac_jax.agents import random_agent
from trictrac_jax.az.base import Model
from trictrac_jax.az.config import SearchConfig
from trictrac_jax.lowering import forced
from trictrac_jax.state import TS_HOLD_OR_GO, TS_MOVE, score_lead

ENV = tt.Trictrac(max_steps=1000)


class ConstNet:
    """Stands in for the network: uniform logits, the same value everywhere."""

    def __init__(self, value):
        self.value = value

    def apply(self, variables, obs):
        del variables
        return jnp.zeros(obs.shape[:-1] + (tt.NUM_ACTIONS,)), jnp.full(obs.shape[:-1],
                                                                        self.value)


def take(states, idx):
    return jax.tree.map(lambda x: x[jnp.asarray(idx)], states)


@functools.partial(jax.jit, static_argnums=(1, 2))
def random_play(key, games=32, steps=60):
    """Decision states of random play, State [steps, games] (shared by the test modules so
    that it compiles once)."""
    state = jax.vmap(ENV.init)(jax.random.split(key, games))

    def body(state, key):
        ka, ks = jax.random.split(key)
        action = jax.vmap(random_agent)(jax.random.split(ka, games), state)
        nxt = jax.vmap(ENV.step)(state, action, jax.random.split(ks, games))
        return nxt, state
    return jax.lax.scan(body, state, jax.random.split(key, steps))[1]


@pytest.fixture(scope="module")
def positions():
    """Live decision states of random play, flattened: State [N]."""
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]),
                        random_play(jax.random.PRNGKey(0)))
    return take(flat, np.nonzero(~np.asarray(flat.terminated))[0])


def first_where(states, condition):
    return int(np.nonzero(np.asarray(condition))[0][0])


@pytest.fixture(scope="module")
def cases(positions):
    """Six positions: a hold-or-go decision, a move decision, then varied ones."""
    hold_or_go = first_where(positions, positions._turn_stage == TS_HOLD_OR_GO)
    move = first_where(positions, (positions._turn_stage == TS_MOVE)
                       & (positions.legal_action_mask[:, 2:].any(-1)))
    return take(positions, [hold_or_go, move, 37, 74, 111, 148])


ALGORITHMS = ("stochastic", "gumbel", "gumbel_stochastic")  # the trees


def search_config(algorithm, sims, max_actions=None):
    return SearchConfig(algorithm=algorithm, num_simulations=sims, max_num_considered_actions=4,
                        max_actions=max_actions or SearchConfig().max_actions)


def make_search(model, config, explore=True):
    return functools.partial(S.search, model=model, config=config, explore=explore)


def tree_nodes(tree, algorithm):
    """The decision-node embeddings of a search tree: Node [B, nodes]."""
    return tree.embeddings if algorithm == "gumbel" else tree.embeddings.state_embedding


@pytest.fixture(scope="module")
def searched(cases):
    """SearchOutput of the tree searches on `cases` (uniform prior, value +0.5 for the mover)."""
    model = Model(ENV, ConstNet(0.5), "outcome", 72.0)
    return {algorithm: jax.jit(make_search(model, search_config(algorithm, 32)))(
        None, jax.random.PRNGKey(1), cases) for algorithm in ALGORITHMS}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_search_shapes_and_masking(cases, searched, algorithm):
    out = searched[algorithm]
    mask = np.asarray(cases.legal_action_mask)
    policy = np.asarray(out.policy)
    assert out.action.shape == (6,) and policy.shape == (6, tt.NUM_ACTIONS)
    assert out.value.shape == (6,)
    assert np.allclose(policy.sum(-1), 1.0, atol=1e-5)
    assert (policy[~mask] == 0).all()
    assert mask[np.arange(6), np.asarray(out.action)].all()
    # every expanded decision node of the tree, not only the root, visits legal actions only
    tree = out.tree
    nodes = tree_nodes(tree, algorithm)
    decision = np.asarray(tree.node_visits) > 0
    if algorithm != "gumbel":
        decision &= np.asarray(tree.embeddings.is_decision_node)
    assert decision[:, 1:].any()  # some interior decision nodes were expanded
    column_legal = np.take_along_axis(np.asarray(nodes.state.legal_action_mask),
                                    np.asarray(nodes.actions), -1)[decision]  # [nodes, K]
    visits = np.asarray(tree.children_visits)[decision]
    assert (visits[~column_legal] == 0).all()
    # the columns: each node's legal actions in ascending order, then UNUSED_COLUMN
    for mask, actions in zip(np.asarray(nodes.state.legal_action_mask)[decision],
                             np.asarray(nodes.actions)[decision]):
        legal = np.nonzero(mask)[0]
        assert list(actions) == list(legal) + [S.UNUSED_COLUMN] * (len(actions) - len(legal))


def test_values_keep_their_sign_when_the_same_player_moves_again(cases, searched):
    """After Go the same player rolls again: his afterstate value is +v and the discount +1;
    after a move the opponent rolls: -v and -1. An illegal action loses: the afterstate is
    worth -1 to its mover and the chance edge rewards -1 and ends the game (discount 0)."""
    states = take(cases, [0, 1, 1])
    mover = np.asarray(states.current_player)
    move = int(np.argmax(np.asarray(states.legal_action_mask[1, 2:]))) + 2
    actions = jnp.array([1, move, 0])  # Go, a move, Roll (never legal)
    model = Model(ENV, ConstNet(0.5), "outcome", 72.0)
    key = jax.random.PRNGKey(0)
    out, after = jax.jit(functools.partial(M.decision_fn, model))(None, key, actions, states)
    assert list(np.asarray(after.state.current_player) == mover) == [True, False, True]
    assert list(np.asarray(after.state.terminated)) == [False, False, True]
    assert np.allclose(out.afterstate_value, [0.5, -0.5, -1.0])
    chance, nxt = jax.jit(functools.partial(M.chance_fn, model))(None, key, jnp.array([7, 30, 5]), after)
    assert np.allclose(chance.discount, [1.0, -1.0, 0.0])
    assert np.allclose(chance.reward, [0.0, 0.0, -1.0])
    assert np.allclose(chance.value, [0.5, 0.5, 0.0])  # the next mover's view; 0 once over
    assert not np.asarray(nxt.is_chance).any()

    # through the whole search the signs hold: Go keeps the +0.5 of the mover's next
    # decision, a move gives him -0.5. (Deeper nodes mix in the other sign: a constant value
    # is not self-consistent, so only the signs are exact, not the magnitudes.)
    tree = searched["stochastic"].tree
    q = np.asarray(tree.qvalues(jnp.zeros(6, jnp.int32)))[0]  # by column
    visited = np.asarray(tree.children_visits)[0, 0] > 0
    actions = np.asarray(tree.embeddings.state_embedding.actions)[0, 0]
    go, move = actions == 1, actions >= 2
    assert visited[go].all() and visited[move].any()
    assert q[go][0] > 0.25 and (q[move & visited] < -0.25).all(), q[visited]


def test_margin_utility():
    state = tt.new_game().replace(_holes=jnp.array([5, 2]), _points=jnp.array([4, 10]))
    rewards = jnp.array([1.0, -1.0])
    margin = (12 * 5 + 4) - (12 * 2 + 10)
    for player, sign in ((0, 1), (1, -1)):
        got = M.utility(Model(ENV, None, "margin", 72.0), state, rewards, jnp.int32(player))
        assert np.isclose(got, sign * margin / 72.0)
        outcome = M.utility(Model(ENV, None, "outcome", 72.0), state, rewards, jnp.int32(player))
        assert outcome == sign
    assert M.utility(Model(ENV, None, "margin", 10.0), state, rewards, jnp.int32(0)) == 1.0


def test_points_rewards_add_up_to_the_score_margin():
    """`points`: each transition's reward is the margin it adds for its mover, so along
    whole games the rewards (signed for White) add up to White's final lead, and the
    values the search sees are relative to the current lead."""
    scale = 144.0
    model = Model(ENV, ConstNet(0.0), "points", scale)
    games = 16
    start = jax.vmap(ENV.init)(jax.random.split(jax.random.PRNGKey(3), games))

    @jax.jit
    def play(state, key):
        def body(carry, key):
            state, total, alive = carry
            ka, ks = jax.random.split(key)
            action = jax.vmap(random_agent)(jax.random.split(ka, games), state)
            out, nxt = M.sampled_fn(model, None, ks, action, state)
            white = jnp.where(state.current_player == 0, 1.0, -1.0)
            total += jnp.where(alive, white * out.reward, 0.0)
            alive &= out.discount != 0
            return (nxt, total, alive), None
        carry = (state, jnp.zeros(games), jnp.ones(games, bool))
        return jax.lax.scan(body, carry, jax.random.split(key, 400))[0]

    final, total, alive = play(start, jax.random.PRNGKey(4))
    ended = np.asarray(~alive)
    assert ended.sum() >= games // 2  # most random games end within 400 decisions
    white = jnp.zeros(games, jnp.int32)
    lead = np.asarray(score_lead(final, white) - score_lead(start, white)) / scale
    assert np.allclose(np.asarray(total)[ended], lead[ended], atol=1e-5)
    assert np.abs(lead[ended]).max() > 0.5  # the games did score
    assert np.allclose(M.banked(model, final, white), score_lead(final, white) / scale)
    margin = Model(ENV, None, "margin", scale)
    assert (np.asarray(M.banked(margin, final, white)) == 0).all()


class ObsNet:
    """Stands in for the network: logits and value fixed random functions of the observation."""

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.w_logits = jax.random.normal(k1, (tt.OBS_SIZE, tt.NUM_ACTIONS))
        self.w_value = jax.random.normal(k2, (tt.OBS_SIZE,))

    def apply(self, variables, obs):
        del variables
        return obs @ self.w_logits, jnp.tanh(obs @ self.w_value)


def policy_top(net, state, top_k: int) -> list:
    """The legal actions among the `top_k` highest logits of `net` in `state`, best first."""
    mask = np.asarray(state.legal_action_mask)
    logits = np.where(mask, np.asarray(net.apply(None, state.observation)[0]), -np.inf)
    return [a for a in np.argsort(-logits, kind="stable")[:top_k] if mask[a]]


def test_lookahead_plays_the_best_afterstate_among_the_policy_top_k(cases):
    net, top_k = ObsNet(jax.random.PRNGKey(3)), 6
    model = Model(ENV, net, "outcome", 72.0)
    lookahead = functools.partial(S.lookahead, model=model, top_k=top_k)
    actions = np.asarray(jax.jit(lookahead)(None, jax.random.PRNGKey(4), cases))
    for b in range(len(actions)):
        state = take(cases, b)
        top = policy_top(net, state, top_k)

        def value(action):  # the mover's value of the afterstate, computed move by move
            after = ENV.step_deterministic(state, action)
            if bool(after.terminated):
                return float(after.rewards[state.current_player])
            v = float(net.apply(None, after.observation)[1])
            return v if int(after.current_player) == int(state.current_player) else -v
        assert actions[b] in top
        assert value(actions[b]) == pytest.approx(max(value(a) for a in top), abs=1e-5)


ROLLED_TOP_K = 4


@pytest.fixture(scope="module")
def rolled(cases):
    """The lookahead over the rolls of a fixed random network (top 4) on `cases`, each
    program compiled once: (net, model, each case's policy top 4 (`policy_top`), the moves
    the lookahead plays, worths[distinct] [6, 4]: `rolled_worth` of each case's top actions
    over the 36 rolls or the 21 distinct ones, all cases in one batch; columns past a case's
    top are padding)."""
    net = ObsNet(jax.random.PRNGKey(5))
    model = Model(ENV, net, "outcome", 72.0)
    played = jax.jit(functools.partial(S.lookahead, model=model, top_k=ROLLED_TOP_K,
                                       rolls=True))(None, None, cases)
    tops = [policy_top(net, take(cases, b), ROLLED_TOP_K) for b in range(len(cases.observation))]
    actions = jnp.array([(top * ROLLED_TOP_K)[:ROLLED_TOP_K] for top in tops], jnp.int32)
    batch = jax.tree.map(lambda x: jnp.repeat(x, ROLLED_TOP_K, 0), cases)  # each case 4 times
    worth = jax.jit(lambda a, s, distinct: M.rolled_worth(model, None, a, s, distinct),
                    static_argnums=2)
    worths = {d: np.asarray(worth(actions.reshape(-1), batch, d)).reshape(actions.shape)
              for d in (False, True)}
    return net, model, tops, np.asarray(played), worths


def test_lookahead_over_rolls_plays_the_best_mean_over_the_36_rolls(cases, rolled):
    """The worths, computed roll by roll, and the best of them played; with `distinct`
    rolls, each roll counted as its mirror with the lower die first."""
    net, _, tops, actions, worths = rolled
    step, roll = jax.jit(ENV.step_deterministic), jax.jit(ENV.chance_step)
    value_of = jax.jit(lambda obs: net.apply(None, obs)[1])
    for b in range(0, len(actions), 2):
        state = take(cases, b)
        mover = int(state.current_player)
        top = tops[b]

        def value(action, distinct=False):  # the mover's mean over the rolls, roll by roll
            after = step(state, action)
            if bool(after.terminated):
                return float(after.rewards[mover])
            total = 0.0
            for outcome in range(36):
                if distinct:  # a roll's mirror counts as the roll with the lower die first
                    outcome = int(tt.dice_to_outcome(np.sort(tt.CHANCE_DICE[outcome])))
                nxt = roll(after, outcome)
                if bool(nxt.done):
                    total += float(nxt.rewards[mover])
                else:
                    v = float(value_of(nxt.observation))
                    total += v if int(nxt.current_player) == mover else -v
            return total / 36
        values = {a: value(a) for a in top}
        np.testing.assert_allclose(worths[False][b, :len(top)], [values[a] for a in top],
                                   atol=1e-5)
        np.testing.assert_allclose(worths[True][b, :len(top)], [value(a, True) for a in top],
                                   atol=1e-5)
        assert actions[b] in top
        assert values[actions[b]] == pytest.approx(max(values.values()), abs=1e-5)


def test_lookahead_search_is_the_lookahead_over_the_rolls(cases, rolled):
    """search.algorithm lookahead: without exploration it plays what the lookahead over the
    rolls plays; its value is the best worth, its policy the softmax of the worths over the
    policy's top K; with exploration its moves are drawn from that policy."""
    _, model, tops, played, worths = rolled
    config = search_config("lookahead", 1).replace(max_num_considered_actions=ROLLED_TOP_K,
                                                   worth_temperature=0.05)
    out = jax.jit(make_search(model, config, explore=False))(None, jax.random.PRNGKey(1),
                                                                cases)
    np.testing.assert_array_equal(out.action, played)
    policy = np.asarray(out.policy)
    np.testing.assert_allclose(policy.sum(-1), 1, atol=1e-5)
    for b in range(policy.shape[0]):
        top = tops[b]
        assert set(np.nonzero(policy[b])[0]) <= set(top)
        worth = worths[False][b, :len(top)]
        assert float(out.value[b]) == pytest.approx(worth.max(), abs=1e-5)
        weights = np.exp((worth - worth.max()) / 0.05)
        np.testing.assert_allclose(policy[b, top], weights / weights.sum(), atol=1e-5)
    explore = jax.jit(jax.vmap(make_search(model, config, explore=True), (None, 0, None)))
    drawn = np.asarray(explore(None, jax.random.split(jax.random.PRNGKey(2), 200), cases).action)
    for b in range(policy.shape[0]):
        freq = np.bincount(drawn[:, b], minlength=tt.NUM_ACTIONS) / len(drawn)
        assert np.abs(freq - policy[b]).max() < 0.15


@pytest.mark.parametrize("lowering, k", [("cpu", 24), ("gpu", 16)])
def test_column_tables_hold_the_legal_actions_or_the_top_k_by_prior(positions, lowering, k):
    """Under the GPU lowering, k <= 16: the row padded to XLA's TopK kernel's 1,024 entries."""
    states = take(positions, np.arange(0, positions.current_player.shape[0], 3))
    mask = np.asarray(states.legal_action_mask)
    logits = np.asarray(jax.random.normal(jax.random.PRNGKey(5), mask.shape))
    with forced(lowering):
        actions = np.asarray(jax.jit(S.column_actions, static_argnums=2)(mask, logits, k))
    counts = mask.sum(-1)
    assert (counts <= k).any() and (counts > k).any()
    for row, columns, scores in zip(mask, actions, logits):
        legal = np.nonzero(row)[0]
        if len(legal) <= k:  # ascending, then empty columns
            assert list(columns) == list(legal) + [S.UNUSED_COLUMN] * (k - len(legal))
        else:  # the k likeliest legal actions, likeliest first
            assert list(columns) == list(legal[np.argsort(-scores[legal], kind="stable")][:k])


def wide_search(model, config, params, key, states):
    """The search over all 514 actions (as before columns), without exploration noise: mctx
    called with the Model's 514-wide recurrent functions and States as embeddings."""
    logits, value = M.evaluate(model, params, states)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states)
    invalid = ~states.legal_action_mask
    if config.algorithm == "stochastic":
        return mctx.stochastic_muzero_policy(
            params, key, root, functools.partial(M.decision_fn, model),
            functools.partial(M.chance_fn, model),
            num_simulations=config.num_simulations, invalid_actions=invalid,
            qtransform=S._masked_puct_qtransform, dirichlet_fraction=0.0,
            dirichlet_alpha=config.dirichlet_alpha, pb_c_init=config.pb_c_init,
            temperature=0.0)
    return mctx.gumbel_muzero_policy(
        params, key, root, functools.partial(M.sampled_fn, model),
        num_simulations=config.num_simulations, invalid_actions=invalid,
        max_num_considered_actions=config.max_num_considered_actions, gumbel_scale=0.0)


@pytest.mark.parametrize("algorithm", ["stochastic", "gumbel"])
def test_columns_relabel_the_514_wide_search(cases, algorithm):
    """Without exploration noise, and with K leaving an empty column at every node of the
    tree, the narrow search is the 514-wide one: the same tree (node by node: visits,
    values), root policy and action. K is set to the most legal actions of any live node of
    the wide tree, plus one: the narrowest such K."""
    model = Model(ENV, ObsNet(jax.random.PRNGKey(6)), "points", 144.0)
    key = jax.random.PRNGKey(7)
    config = search_config(algorithm, 16)
    wide = jax.jit(functools.partial(wide_search, model, config))(None, key, cases)
    states = tree_nodes(wide.search_tree, algorithm)  # State [B, nodes]
    live = (np.asarray(wide.search_tree.node_visits) > 0) & ~np.asarray(states.done)
    if algorithm == "stochastic":
        live &= np.asarray(wide.search_tree.embeddings.is_decision_node)
    k = int(np.asarray(states.legal_action_mask)[live].sum(-1).max()) + 1
    assert k < tt.NUM_ACTIONS // 2  # the narrow trees are much narrower
    out = jax.jit(make_search(model, config.replace(max_actions=k), explore=False))(
        None, key, cases)

    assert np.array_equal(out.tree.node_visits, wide.search_tree.node_visits)
    assert np.allclose(out.tree.node_values, wide.search_tree.node_values, atol=1e-5)
    assert np.allclose(out.policy, wide.action_weights, atol=1e-6)
    assert np.allclose(out.value, wide.search_tree.node_values[:, 0], atol=1e-5)
    if algorithm == "gumbel":
        assert np.array_equal(out.action, wide.action)
    else:
        # temperature 0 breaks ties between the most visited actions with noise drawn per
        # action, which differs with the width: the action is one of the most visited
        policy = np.asarray(out.policy)
        best = policy == policy.max(-1, keepdims=True)
        assert best[np.arange(6), np.asarray(out.action)].all()
        unique = best.sum(-1) == 1
        assert unique.any()
        assert np.array_equal(np.asarray(out.action)[unique], np.asarray(wide.action)[unique])


@pytest.mark.parametrize("algorithm", ["stochastic", "gumbel"])
def test_nodes_with_more_legal_actions_than_columns_keep_the_likeliest(cases, algorithm):
    net, k = ObsNet(jax.random.PRNGKey(8)), 3
    model = Model(ENV, net, "outcome", 72.0)
    mask = np.asarray(cases.legal_action_mask)
    assert (mask.sum(-1) > k).sum() >= 4
    out = jax.jit(make_search(model, search_config(algorithm, 8, max_actions=k)))(
        None, jax.random.PRNGKey(9), cases)
    policy = np.asarray(out.policy)
    assert policy.shape == (6, tt.NUM_ACTIONS)
    assert np.allclose(policy.sum(-1), 1.0, atol=1e-5)
    logits = np.where(mask, np.asarray(net.apply(None, cases.observation)[0]), -np.inf)
    likeliest = np.argsort(-logits, -1, kind="stable")[:, :k]
    kept = np.zeros_like(mask)
    np.put_along_axis(kept, likeliest, True, -1)
    kept &= mask
    assert (policy[~kept] == 0).all()
    assert kept[np.arange(6), np.asarray(out.action)].all()
