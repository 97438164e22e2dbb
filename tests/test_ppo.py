"""PPO (`trictrac_jax.rl.ppo`, `train/ppo.py`): a tiny self-play run trains in one jit per
call, writes metrics, checkpoints and a snapshot, resumes, and its networks load as agents;
its config names a wrong key. (A PureJaxRL-style PPO through gymnax's interface, all of
training in one jit, is notebooks/rl.ipynb, run by tests/test_notebooks.py.)"""
import json
import pathlib

import jax
import numpy as np
import pytest
import yaml

import trictrac_jax as tt
from trictrac_jax.az import network
from train import ppo as train_ppo
from trictrac_jax.league import network_agents
from trictrac_jax.az import run as az_run  # (`run`: the fixture)
from trictrac_jax.rl import ppo
from trictrac_jax.rl import loop
from trictrac_jax.league import runs
from tests.fresh import run_fresh

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Games truncated after 12 decisions: episodes end, and auto-reset runs, in every call.
TINY = ["env.max_steps=12", "network.width=8", "network.blocks=1", "ppo.num_envs=4",
        "ppo.num_steps=4", "ppo.update_epochs=1", "ppo.num_minibatches=2",
        "training.updates=4", "training.updates_per_call=2", "selfplay.pool_size=2",
        "selfplay.pool_every=1", "evaluation.every=2", "evaluation.opponents=[]",
        "checkpoint.every=2",
        "checkpoint.snapshot_minutes=[0.001]", "logging.tensorboard=false"]


class Killed(Exception):
    pass


def killed_and_resumed(run_dir: str) -> tuple[list[dict], list[str]]:
    """A 4-update run in `run_dir` killed while logging update 4 (before its checkpoint),
    then resumed: (the killed run's records, the resumed run's log)."""
    config = ppo.load_config(ROOT / "configs" / "ppo.yaml", TINY + [f"run.dir={run_dir}"])

    def kill_at_4(line):
        if line.startswith("update     4/"):
            raise Killed
    try:
        runs.train_ppo(config, log=kill_at_4)
        raise AssertionError("the run was not killed at update 4")
    except Killed:
        pass
    killed = [json.loads(line) for line in (pathlib.Path(run_dir) / "metrics.jsonl").open()]
    log = []
    config, resumed = az_run.resume(train_ppo.parse_args(["--resume", str(run_dir)]), log.append,
                                    loop.PPO_RUN)
    runs.train_ppo(config, resumed, log.append)
    return killed, log


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """`killed_and_resumed` in a new process (which compiles unoptimised: tests/fresh.py).
    Returns (run_dir, the killed run's records, the resumed run's log)."""
    run_dir = tmp_path_factory.mktemp("runs") / "ppo"
    code, out, err = run_fresh(["-c", "import json, sys; from tests.test_ppo import "
                                "killed_and_resumed; print(json.dumps(killed_and_resumed("
                                "sys.argv[1])))", str(run_dir)], environ={"JAX_PLATFORMS": "cpu"})
    assert code == 0, err[-3000:]
    killed, log = json.loads(out.splitlines()[-1])
    return run_dir, killed, log


def test_a_run_trains_writes_metrics_and_checkpoints_and_resumes(run):
    run_dir, killed, log = run
    assert [r["iteration"] for r in killed] == [2, 4]
    first = killed[0]
    assert first["updates"] == 2 * 1 * 2  # updates x epochs x minibatches
    assert first["episodes"] > 0 and np.isfinite(first["loss"]) and first["entropy"] > 0
    assert 0 <= first["win_rate"] <= 1 and first["steps_per_s"] > 0
    assert (run_dir / "snapshots" / "0.001min.msgpack").is_file()
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["ppo"]["num_envs"] == 4
    # resumed from checkpoint 2: update 4 played again, its clock going on
    assert log[0] == f"resumed {run_dir / 'checkpoints' / '2'} (not evaluated), 2 updates"
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    assert [r["iteration"] for r in records] == [2, 4]
    assert records[1]["updates"] == 8 and records[1]["elapsed_s"] >= first["elapsed_s"]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["2", "4"]
    # the pool of past networks is checkpointed: one entry per update
    state = ppo.restore_state(run_dir / "checkpoints", 4, ppo.saved_config(
        run_dir / "checkpoints", 4))
    assert int(state.updates) == 4 and int(state.pool_entries) == 4
    newest = jax.tree.map(lambda pool: pool[1], state.pool)  # the 4th entry went to index 1
    assert jax.tree.all(jax.tree.map(np.array_equal, newest, state.train.params))


def test_its_networks_load_as_agents(run):
    run_dir, _, _ = run
    state = tt.Trictrac().init(jax.random.PRNGKey(0))
    for spec in (str(run_dir), str(run_dir / "checkpoints" / "4"),
                 str(run_dir / "snapshots" / "0.001min.msgpack")):
        params, config = network_agents.load_network(spec)
        assert (config.network.width, config.network.blocks) == (8, 1)
        assert config.selfplay.value_target == "points"  # configs/ppo.yaml's reward
        action = network_agents.load_agent(spec)(jax.random.PRNGKey(1), state)
        assert state.legal_action_mask[action]
        expected = network.policy_action(network.make_network(config.network), params, state)
        assert action == expected
    # a directory without PPO checkpoints is not taken for a PPO run
    assert ppo.is_run(run_dir) and not ppo.is_run(ROOT / "configs")


def test_a_wrong_key_is_named(tmp_path, capsys):
    assert train_ppo.main(["--config", str(ROOT / "configs" / "ppo.yaml"),
                           "--set", "ppo.clip=0.1", "--set", f"run.dir={tmp_path}"]) == 2
    assert "ppo.clip: unknown key" in capsys.readouterr().err
    with pytest.raises(ppo.ConfigError, match="ppo.num_minibatches: must divide"):
        ppo.load_config(None, ["ppo.num_envs=3", "ppo.num_steps=1", "ppo.num_minibatches=2"])
    with pytest.raises(ppo.ConfigError, match="env.reward: must be one of"):
        ppo.load_config(None, ["env.reward=margin"])
