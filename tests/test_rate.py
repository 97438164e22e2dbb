"""The position benchmark and `tools.rate`: the shipped file's size and kinds, its records
restoring the positions they describe, values reproduced by `expectimax`, mirrored rolls
scoring alike (what the evaluation's 21 rolls assume), and the rate tool's figures, intervals
and errors."""
import gzip

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from trictrac_jax.agents import first_agent
from trictrac_jax.az import expectimax as X
from trictrac_jax.league import network_agents
from trictrac_jax.az.model import model_from_config
from trictrac_jax.env import CHANCE_DICE, DISTINCT_OUTCOMES, Trictrac, dice_to_outcome
from trictrac_jax.state import TS_HOLD_OR_GO
from trictrac_jax.tools import positions, rate

ENV = Trictrac(max_steps=None)
SMALL = 96  # decisions the agents play in these tests


@pytest.fixture(scope="module")
def bench():
    return positions.load()


@pytest.fixture(scope="module")
def small(bench):
    """Every few decisions of the benchmark, SMALL of them, and their states."""
    picked = positions.Benchmark(bench.header, bench.decisions[::len(bench) // SMALL][:SMALL])
    return picked, positions.states(picked)


def test_benchmark_size_and_kinds(bench):
    assert len(bench) >= 1000
    stages = np.array([d["record"]["turn_stage"] for d in bench.decisions])
    assert np.mean(stages == TS_HOLD_OR_GO) >= 0.02  # hold-or-go choices, a few percent
    sources = {d["source"] for d in bench.decisions}
    assert len(sources) >= 4 and any("greedy" in s for s in sources) and any(
        "web" in s for s in sources)
    place = np.array([d["decision"] / d["length"] for d in bench.decisions])
    assert place.min() < 0.1 and place.max() > 0.9  # early and late in games
    assert all(len(d["actions"]) > 1 for d in bench.decisions)
    for key in ("value", "rollout", "rollout_se"):
        values = bench.values(key)
        assert np.isfinite(values[~np.isnan(values)]).all() and (
            np.isnan(values) == (bench.actions() < 0)).all(), key


def test_records_restore_the_legal_actions(bench):
    states = positions.states(bench)
    mask = np.asarray(states.legal_action_mask)
    for d, row in zip(bench.decisions, mask):
        assert np.flatnonzero(row).tolist() == d["actions"]
    assert not np.asarray(states.is_chance | states.terminated).any()


def test_values_are_reproduced(bench):
    """The two-ply values of the decision with the fewest moves of different values,
    recomputed."""
    i = min((i for i, d in enumerate(bench.decisions) if len(set(d["value"])) > 1),
            key=lambda i: len(bench.decisions[i]["actions"]))
    one = positions.Benchmark(bench.header, bench.decisions[i:i + 1])
    params, config = network_agents.load_network(bench.header["network"])
    model = model_from_config(config)
    actions = jnp.asarray(one.decisions[0]["actions"], jnp.int32)
    states = jax.tree.map(lambda x: jnp.repeat(x, actions.size, 0), positions.states(one))
    values = jax.jit(lambda s, a: X.two_ply_worths(model, params, s, a,
                                                   bench.header["top_k"]))(states, actions)
    np.testing.assert_allclose(np.asarray(values) * model.margin_scale,
                               one.decisions[0]["value"], atol=2e-3)


def test_mirrored_rolls_score_alike(small):
    """A roll and its mirror (2-1, 1-2) give the same scores and the same positions to
    choose from, in positions after the benchmark's best moves."""
    picked, states = small
    best = picked.actions()[np.arange(len(picked)), np.nanargmax(picked.values(), -1)]
    after = jax.vmap(ENV.step_deterministic)(states, jnp.asarray(best))
    low = DISTINCT_OUTCOMES[CHANCE_DICE[DISTINCT_OUTCOMES, 0] < CHANCE_DICE[DISTINCT_OUTCOMES, 1]]
    high = dice_to_outcome(CHANCE_DICE[low][:, ::-1])
    roll = jax.jit(jax.vmap(jax.vmap(ENV.chance_step, in_axes=(None, 0)), in_axes=(0, None)))
    a, b = roll(after, jnp.asarray(low)), roll(after, jnp.asarray(high))
    for field in ("_dice_points", "_points", "_holes", "_turn_stage", "_can_bredouille"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    boards = jax.jit(jax.vmap(ENV.step_deterministic, in_axes=(None, 0)))
    for g, k in ((0, 0), (1, 5), (2, 14), (3, 9)):
        reach = []
        for rolled in (a, b):
            one = jax.tree.map(lambda x: x[g, k], rolled)
            board = np.asarray(boards(one, jnp.arange(one.legal_action_mask.size))._board)
            legal = np.flatnonzero(np.asarray(one.legal_action_mask))
            reach.append({board[i].tobytes() + bytes([int(i == 1)]) for i in legal})
        assert reach[0] == reach[1]


def oracle(bench: positions.Benchmark, states):
    """An agent playing the benchmark's best move in each of its positions (found by the
    position's fields), and the first legal action elsewhere."""
    key = lambda s: jnp.concatenate([jnp.atleast_1d(getattr(s, f)).astype(jnp.int32)
                                     for f in ("current_player", "_turn_stage", "_board",
                                               "_dice", "_points", "_holes",
                                               "_dice_roll_count", "_dice_points")], -1)
    table = jax.vmap(key)(states)
    best = jnp.asarray(bench.actions()[np.arange(len(bench)), np.nanargmax(bench.values(), -1)])

    def agent(_, state):
        hit = jnp.all(table == key(state), -1)
        return jnp.where(hit.any(), best[jnp.argmax(hit)],
                         jnp.argmax(state.legal_action_mask)).astype(jnp.int32)
    return agent


def test_rate_oracle_and_first(small):
    picked, states = small
    best = rate.rate("oracle", oracle(picked, states), picked, states)
    assert best.mean_loss.value == 0 and best.best.value == 1 and best.blunders.value == 0
    first = rate.rate("first", first_agent, picked, states)
    assert first.decisions == SMALL and first.mean_loss.value > 0 and first.best.value < 1
    for r in (best, first):
        for i in (r.mean_loss, r.blunders, r.best):
            assert i.low <= i.value <= i.high


def test_losses_reject_an_illegal_action(small):
    picked, _ = small
    chosen = picked.actions()[:, 0].copy()
    chosen[3] = 0  # Roll: never legal at a decision
    with pytest.raises(ValueError, match="decision 3"):
        rate.losses(picked, chosen)


def test_agent_specs():
    assert rate.agent_spec("champion:1") == "champion:1@rolls:32"
    assert rate.agent_spec("champion:1@policy") == "champion:1@policy"
    assert rate.agent_spec("greedy:32") == "greedy:32"


@pytest.mark.parametrize("argv", [["nonsense"], ["greedy", "champion:1@bogus"], ["greedy:x"],
                                  ["champion:9"]])
def test_bad_agent_is_a_clear_error(argv, capsys):
    assert rate.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_bad_benchmark_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl.gz"
    with gzip.open(bad, "wt") as f:
        f.write('{"no header": 1}\n')
    assert rate.main(["first", "--benchmark", str(bad)]) == 2
    assert "not a benchmark file" in capsys.readouterr().err
    assert rate.main(["first", "--benchmark", str(tmp_path / "missing.gz")]) == 2
    with pytest.raises(SystemExit) as e:
        rate.main(["first", "--blunder", "-1"])
    assert e.value.code == 2
