"""Trictrac where the JAX RL ecosystem's code expects it: pgx's own API checks on
`tt.make("trictrac")`, PureJaxRL's own ppo.py with the lines docs/api.md lists changed
(examples/run_purejaxrl.py), and the PureJaxRL-style example (examples/purejaxrl_ppo.py),
training on `gymnax.make("Trictrac-v1")`. (gymnax's wrappers on it: tests/test_wrappers.py;
the engine importing neither: tests/test_layout.py.)"""
import importlib.util
import pathlib
import sys
from typing import Literal, get_args

import jax
import numpy as np
import pytest

import trictrac_jax as tt

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_pgx_api_checks(monkeypatch):
    """pgx's `api_test` (init, random games to their end, one at a time and in a batch, the
    states' dtypes, public fields, rewards, step counts and masks, the last states drawn by
    their `save_svg`), with two of pgx's own defects patched, nothing of ours."""
    pgx = pytest.importorskip("pgx")  # the test extra installs it
    from pgx._src import api_test
    env = tt.make("trictrac", max_steps=None)  # pgx's checks play every game to its end
    assert isinstance(env, pgx.Env)
    # pgx's defects: its list of ids is closed, its own games' (the first check of
    # `_validate_state`) ...
    monkeypatch.setattr(api_test, "EnvId", Literal[get_args(api_test.EnvId) + ("trictrac",)])
    # ... and pgx 2.6's `act_randomly` samples along axis 1, which this jax refuses for one
    # game's mask (pgx's own tic_tac_toe fails alike): one game's is sampled as a batch of one
    act = api_test.act_randomly
    monkeypatch.setattr(api_test, "act_randomly", lambda key, mask: (
        act(key, mask[None])[0] if mask.ndim == 1 else act(key, mask)))
    api_test.api_test(env, num=1)
    with pytest.raises(ValueError, match="the key rolls the dice"):
        env.step(env.init(jax.random.PRNGKey(0)), 1)


def load_example(name: str, monkeypatch):
    """examples/<name>.py as a module (registered: its dataclasses look it up there)."""
    pytest.importorskip("gymnax")  # the test extra installs it
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, example)
    spec.loader.exec_module(example)
    return example


TINY = ["--set", "NUM_ENVS=2", "--set", "NUM_STEPS=8", "--set", "TOTAL_TIMESTEPS=32", "--set",
        "UPDATE_EPOCHS=1", "--set", "NUM_MINIBATCHES=2", "--seed", "0"]


def test_purejaxrl_ppo_runs_with_the_documented_lines(capsys, monkeypatch):
    """PureJaxRL's own ppo.py with docs/api.md's diff applied (mask-unaware, illegal actions
    replaced): two updates of a tiny config, in one jit; its metrics count the illegal
    actions; four games of the trained policy against random, two in each seat."""
    example = load_example("run_purejaxrl", monkeypatch)
    out = example.main([*TINY, "--games", "4"])
    assert not {"distrax", "brax", "navix", "wrappers"} & set(sys.modules)  # stood in, gone
    printed = capsys.readouterr().out
    assert "won against random" in printed and "illegal actions, by tenth" in printed
    assert "of 4 games (2 as White, 2 as Black" in printed
    evaluation = out["evaluation"]
    assert evaluation["outcome"].shape == (4,) and set(evaluation["outcome"]) <= {-1, 0, 1}
    assert 4 <= evaluation["actions"] and 0 < evaluation["illegal"] <= evaluation["actions"]
    train_state, metrics = out["runner_state"][0], out["metrics"]
    assert int(train_state.step) == 2 * 1 * 2  # updates x epochs x minibatches
    assert "timestep" in metrics  # PureJaxRL's LogWrapper's
    assert metrics["illegal_action"].shape == (2, 8, 2)
    # an untrained network that ignores the mask: most of its 514 actions are illegal
    assert metrics["illegal_action"].mean() > 0.5
    assert metrics["final_observation"].shape == (2, 8, 2)  # no final observation kept
    with pytest.raises(ValueError, match="occur 0 times"):
        example.apply_diff("import gymnax\n", "@@ -1 +1 @@\n-import gymnax as gx\n+import x\n")
    with pytest.raises(SystemExit):
        example.main(["--set", "NUM_ENV=2"])
    assert "unknown key 'NUM_ENV'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        example.main(["--games", "3"])
    assert "--games: an even number" in capsys.readouterr().err


def test_purejaxrl_example_trains(capsys, monkeypatch):
    """examples/purejaxrl_ppo.py: two updates of a tiny config, in one jit."""
    example = load_example("purejaxrl_ppo", monkeypatch)
    out = example.main(TINY)
    assert "won against random, by tenth of the updates:" in capsys.readouterr().out
    train_state, metrics = out["runner_state"][0], out["metrics"]
    assert int(train_state.step) == 2 * 1 * 2  # updates x epochs x minibatches
    assert all(np.isfinite(x).all() for x in jax.tree.leaves(train_state.params))
    assert metrics["returned_episode"].shape == (2, 8, 2)  # [updates, steps, envs]
    assert all(np.shape(x) == (2, 8, 2) for x in jax.tree.leaves(metrics))  # scalars only
    with pytest.raises(SystemExit, match="unknown key 'NUM_ENV'"):
        example.parse_config(["NUM_ENV=2"])
