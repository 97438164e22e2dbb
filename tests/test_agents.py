"""Baseline agents: legal, jit/vmap-able; the greedy agent prefers the better score, over
every legal action; `network_agents.load_agent` specs and errors; `agents` imports the engine
only."""
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import trictrac_jax as tt
from trictrac_jax import lowering
from trictrac_jax.agents import (first_agent, greedy_agent, greedy_worth, random_agent,
                                 uniform_legal)
from trictrac_jax.az import search as S
from trictrac_jax.az.checkpoint import CheckpointError
from trictrac_jax.az.model import model_from_config, rolled_worth
from trictrac_jax.league.network_agents import (Play, checkpoint_agent, load_agent, load_network,
                                            split_spec)
from trictrac_jax.env import has_choice
from trictrac_jax.state import NUM_ACTIONS, TS_HOLD_OR_GO
from trictrac_jax.ranking import candidate_worths
from tests.test_search import random_play

ENV = tt.Trictrac(max_steps=1000)


@pytest.fixture(scope="module")
def positions():
    """Random play, [60, 32] decision states, with the actions of the random and first
    agents."""
    states = random_play(jax.random.PRNGKey(3))
    keys = jax.random.split(jax.random.PRNGKey(4), states.current_player.size).reshape(
        *states.current_player.shape, 2)
    chosen = {name: jax.jit(jax.vmap(jax.vmap(agent)))(keys, states)
              for name, agent in (("random", random_agent), ("first", first_agent))}
    return states, chosen


def test_agents_choose_legal_actions(positions):
    states, chosen = positions
    live = ~np.asarray(states.terminated)
    mask = np.asarray(states.legal_action_mask)
    for name, actions in chosen.items():
        legal = np.take_along_axis(mask, np.asarray(actions)[..., None], -1)[..., 0]
        assert legal[live].all(), name
    first = np.asarray(chosen["first"])
    assert (first[live] == np.argmax(mask, -1)[live]).all()


def test_uniform_legal_draws_every_legal_action_equally_often_under_each_lowering():
    """A hand-set mask of 514 actions with 7 legal ones (the first and last among them):
    35,000 draws take only those, each about 5,000 times (a chi-square of 6 degrees of
    freedom below its 0.1% tail, 22.5), the same keys the same draws under both lowerings
    (a running count with the games last, words with the games first) and one game at a
    time; a mask with none legal draws A (as at a chance node)."""
    legal = np.array([0, 3, 4, 100, 257, 400, 513])
    mask = jnp.zeros(NUM_ACTIONS, bool).at[legal].set(True)
    keys = jax.random.split(jax.random.PRNGKey(7), 35_000)
    drawn = {}
    for name in ("cpu", "gpu"):
        with lowering.forced(name):
            jax.clear_caches()
            draw = jax.jit(jax.vmap(uniform_legal, (0, None)))
            drawn[name] = np.asarray(draw(keys, mask))
            assert (np.asarray(draw(keys[:4], jnp.zeros(NUM_ACTIONS, bool))) == NUM_ACTIONS).all()
            assert int(jax.jit(uniform_legal)(keys[5], mask)) == drawn[name][5]
    jax.clear_caches()
    assert np.array_equal(drawn["cpu"], drawn["gpu"])
    assert np.isin(drawn["cpu"], legal).all()
    counts = np.array([(drawn["cpu"] == a).sum() for a in legal])
    expected = len(keys) / len(legal)
    assert ((counts - expected) ** 2 / expected).sum() < 22.5, counts


@pytest.mark.parametrize("lanes", [(), (3,)])
def test_the_kth_true_by_words_is_the_counted_one(lanes):
    """`arrays.kth_true_by_words` against `kth_true_counted` and a plain count, on hand-set
    masks of 514 entries (Trues at the words' edges 31/32 and 511..513, a full mask, an
    empty one) for every k up to one past the last True, one game and three games last."""
    from trictrac_jax.arrays import kth_true_by_words, kth_true_counted
    masks = np.zeros((4, 514), bool)
    masks[0, [0, 31, 32, 63, 64, 300, 511, 512, 513]] = True
    masks[1] = True
    masks[3, [5, 6, 7, 200, 480]] = True
    for k in range(515):
        if lanes:
            mask, ks = jnp.asarray(masks[[0, 1, 3]].T), jnp.full(lanes, k, jnp.int32)
        else:
            mask, ks = jnp.asarray(masks[k % 4]), jnp.int32(k)
        by_words, counted = kth_true_by_words(mask, ks), kth_true_counted(mask, ks)
        rows = masks[[0, 1, 3]] if lanes else masks[[k % 4]]
        plain = [np.flatnonzero(r)[k] if k < r.sum() else 514 for r in rows]
        assert np.array_equal(np.ravel(by_words), plain) and np.array_equal(np.ravel(counted), plain)


@jax.jit
def lead_after(state, action, outcome):
    """The mover's score lead after `action` and the roll `outcome`, one at a time."""
    after = ENV.step_deterministic(state, action)
    rolled = ENV.chance_step(after, outcome)
    return greedy_worth(rolled, after.rewards + rolled.rewards, state.current_player)


def test_greedy_maximises_the_expected_lead(positions):
    states, _ = positions
    mask = np.asarray(states.legal_action_mask)
    several = np.argwhere(~np.asarray(states.terminated) & (mask.sum(-1) >= 3)
                          & (mask.sum(-1) <= 32))
    t, g = several[len(several) // 2]
    state = jax.tree.map(lambda x: x[t, g], states)
    leads = {int(a): np.mean([float(lead_after(state, a, k)) for k in range(36)])
             for a in np.nonzero(mask[t, g])[0]}
    assert len(set(np.round(list(leads.values()), 4))) > 1  # the choice matters here
    choice = int(jax.jit(greedy_agent)(jax.random.PRNGKey(0), state))
    assert np.isclose(leads[choice], max(leads.values()), atol=1e-4)


def test_greedy_goes_to_wipe_the_opponents_points_and_holds_its_own(positions):
    """Hold-or-go: Go starts a new setting with everybody's points at 0. With the opponent
    at 11 points (any point makes him a hole) Go is better; with his own 11 points, holding
    is."""
    states, _ = positions
    mask = np.asarray(states.legal_action_mask)
    choice = (np.asarray(states._turn_stage) == TS_HOLD_OR_GO) & mask[..., 2:].any(-1)
    t, g = np.argwhere(choice)[0]
    state = jax.tree.map(lambda x: x[t, g], states)
    mover = int(state.current_player)
    greedy = jax.jit(greedy_agent)
    key = jax.random.PRNGKey(0)
    threatened = state.replace(_points=jnp.zeros(2, jnp.int32).at[1 - mover].set(11))
    assert int(greedy(key, threatened)) == 1
    leading = state.replace(_points=jnp.zeros(2, jnp.int32).at[mover].set(11))
    assert int(greedy(key, leading)) >= 2


# A golden position (game 0) with 112 legal actions, whose best by the score is the 42nd.
MANY_ACTIONS = "PAk0NyAABxkTFwgBASIMEigC"


def expected_leads(state):
    """float32[514]: 36 x the expected lead after each action (-inf where illegal), one
    position, every action scored at once."""
    leads = jax.vmap(jax.vmap(lead_after, (None, None, 0)), (None, 0, None))(
        state, jnp.arange(NUM_ACTIONS), jnp.arange(36))
    return jnp.where(state.legal_action_mask, leads.sum(-1), -jnp.inf)


def test_full_greedy_looks_beyond_the_32nd_legal_action():
    state = tt.Trictrac(max_steps=None).restore(tt.from_string_id(MANY_ACTIONS))
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    assert len(legal) > 32
    choice = int(jax.jit(greedy_agent)(jax.random.PRNGKey(0), state))
    assert choice == int(np.argmax(np.asarray(jax.jit(expected_leads)(state))))
    assert list(legal).index(choice) >= 32
    assert int(jax.jit(load_agent("greedy:32"))(jax.random.PRNGKey(0), state)) in legal[:32]


def mixed_batch(positions, live: int):
    """`live` live games with 8+ legal actions, then 4 forced moves and 4 finished games:
    (State [live + 8], their legal counts)."""
    states, _ = positions
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), states)
    count = np.asarray(flat.legal_action_mask).sum(-1)
    done = np.asarray(flat.terminated)
    picked = np.concatenate([np.flatnonzero(~done & (count >= 8))[:live],
                             np.flatnonzero(~done & (count == 1))[:4], np.flatnonzero(done)[:4]])
    assert len(picked) == live + 8
    return jax.tree.map(lambda x: x[picked], flat), count[picked]


def assert_batch_plays_as_each_state(agent, batch):
    """`agent` under vmap over `batch` chooses as it does one state at a time (legal moves);
    returns the batch's actions."""
    keys = jax.random.split(jax.random.PRNGKey(0), batch.current_player.shape[0])
    actions = np.asarray(jax.jit(jax.vmap(agent))(keys, batch))
    live = ~np.asarray(batch.terminated)
    assert np.asarray(batch.legal_action_mask)[np.arange(len(actions)), actions][live].all()
    one = jax.jit(agent)
    for i in np.flatnonzero(live):
        assert int(one(keys[i], jax.tree.map(lambda x: x[i], batch))) == actions[i]
    return actions


def test_greedy_of_a_batch_is_greedy_of_each_state(positions):
    """The batch's candidates are scored as one list cut into passes: the same choices, ties
    included, as one state at a time, for live games split across passes, finished games
    and forced moves; and greedy:K with K covering every legal action is the full greedy."""
    batch, count = mixed_batch(positions, 40)
    assert count[:40].sum() > lowering.LOWERINGS["cpu"].candidates_per_pass
    full = assert_batch_plays_as_each_state(greedy_agent, batch)
    covering = jax.jit(jax.vmap(load_agent(f"greedy:{count.max()}")))(
        jax.random.split(jax.random.PRNGKey(0), len(count)), batch)
    np.testing.assert_array_equal(full, covering)


@pytest.mark.parametrize("rolls", [False, True])
def test_lookahead_of_a_batch_is_lookahead_of_each_state(positions, rolls):
    """The champion's lookahead under vmap is one lookahead of the whole batch (its
    candidates in passes): the choices of one state at a time."""
    batch, count = mixed_batch(positions, 24)
    top_k = 16
    per_game = lowering.LOWERINGS["cpu"].candidates_per_game
    assert np.minimum(count[:24], top_k).sum() > per_game * len(count)
    spec = f"champion@{'rolls' if rolls else 'lookahead'}:{top_k}"
    assert_batch_plays_as_each_state(load_agent(spec), batch)


def test_candidate_passes_of_both_lowerings_agree(positions, monkeypatch):
    """The champion's worths of its 16 likeliest moves over the rolls are the same under the
    CPU lowering (the valid candidates, in passes while any remain) and the GPU lowering
    (every (game, column) pair in a fixed number of passes, the last padded), on live games,
    finished games and forced moves. (Greedy's every action keeps the CPU's form, in
    larger passes on the GPU: the greedy tests above split it across passes.)"""
    batch, count = mixed_batch(positions, 12)
    params, config = load_network("champion")
    model = model_from_config(config)

    def lookahead_worths(params, states):
        actions, legal, _ = S.likeliest(model, params, states, 16)
        return candidate_worths(states, actions, legal & has_choice(states)[:, None],
                                lambda s, a: rolled_worth(model, params, a, s))

    def run(name: str):  # traced anew under the lowering `name`
        monkeypatch.setenv(lowering.LOWERING_VARIABLE, name)
        jax.clear_caches()  # the env's methods are jitted: no trace of the other lowering
        return np.asarray(jax.jit(lookahead_worths)(params, batch))

    cpu = run("cpu")
    # 128 pairs a pass: the 20 games x 16 columns in 3 passes, the last padded
    monkeypatch.setitem(lowering.LOWERINGS, "gpu",
                        lowering.LOWERINGS["gpu"]._replace(candidates_per_pass=128))
    gpu = run("gpu")
    jax.clear_caches()
    assert np.isfinite(cpu).sum() > 128 and not np.isfinite(cpu[-8:]).any()
    # the same candidates scored; the network's sums may round apart with the pass's shape
    np.testing.assert_array_equal(np.isfinite(cpu), np.isfinite(gpu))
    np.testing.assert_allclose(cpu[np.isfinite(cpu)], gpu[np.isfinite(gpu)], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(np.argmax(cpu, -1), np.argmax(gpu, -1))


def test_agents_import_the_engine_only():
    code = ("import sys, trictrac_jax.agents; "
            "print(sorted(m for m in ('trictrac_jax.az.training', 'trictrac_jax.az.search', "
            "'trictrac_jax.league.network_agents', 'trictrac_jax.az.network', 'mctx', 'optax', "
            "'orbax.checkpoint') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_load_agent_specs(tmp_path):
    assert load_agent("random") is random_agent and load_agent("first") is first_agent
    assert load_agent("greedy") is greedy_agent
    assert load_agent("greedy:4").keywords == {"top_k": 4}
    for bad in ("nobody", "greedy:x", "greedy:0", "random:3"):
        with pytest.raises(ValueError, match="agent"):
            load_agent(bad)
    missing = tmp_path / "no_run"
    with pytest.raises(CheckpointError, match=str(missing)):
        load_agent(str(missing))
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_agent(str(tmp_path))


@pytest.mark.parametrize("sims, lookahead, rolls, message", [
    (0, 515, False, "lookahead: must be in"), (0, -1, False, "lookahead: must be in"),
    (8, 8, False, "one search, not both"), (0, 0, True, "rolls: .*needs lookahead"),
    (8, 0, True, "rolls: .*needs lookahead"), (-1, 0, False, "simulations: must be")])
def test_checkpoint_agent_rejects_a_bad_search(sims, lookahead, rolls, message):
    from trictrac_jax.az.config import Config
    with pytest.raises(ValueError, match=message):
        checkpoint_agent(None, Config(),
                         Play(lookahead=lookahead, rolls=rolls, simulations=sims))


def test_agent_specs_say_how_a_network_plays():
    assert split_spec("champion") == ("champion", None)
    assert split_spec("champion:1@rolls:32") == ("champion:1", Play(lookahead=32, rolls=True))
    assert split_spec("runs/a/checkpoints/5@search:64") == (
        "runs/a/checkpoints/5", Play(simulations=64, algorithm="stochastic", max_actions=32))
    assert split_spec("champion:2@gumbel_stochastic:8") == (
        "champion:2", Play(simulations=8, algorithm="gumbel_stochastic", max_actions=32))
    assert split_spec("champion@gumbel:4")[1].algorithm == "gumbel"
    assert split_spec("x.msgpack@lookahead:8") == ("x.msgpack", Play(lookahead=8))
    assert split_spec("champion@policy") == ("champion", Play())
    for bad in ("policy:3", "rolls", "rolls:0", "search:x", "search:-2", "think:4", ""):
        with pytest.raises(ValueError, match="play"):
            split_spec(f"champion@{bad}")
    with pytest.raises(ValueError, match="only networks"):
        load_agent("greedy@rolls:4")


def test_champions_by_number():
    from trictrac_jax.az import champion
    n = champion.count()
    assert n >= 1 and champion.file_of("champion") == champion.numbered(n) == champion.PATH
    assert champion.file_of("champion:1").name == "champion1.msgpack"
    for bad in ("champion:0", f"champion:{n + 1}", "champion:x"):
        with pytest.raises(ValueError, match=f"champion:1 to champion:{n}"):
            champion.file_of(bad)
        with pytest.raises(ValueError, match="unknown champion"):
            load_agent(bad)
