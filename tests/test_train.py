"""The training stack on tiny configs: config errors, a short run, resume after a kill,
checkpoint errors, evaluation, plotting, and data parallelism over 4 CPU devices."""
import argparse
import json
import logging
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import pytest
import yaml

from trictrac_jax.az import champion
from trictrac_jax.league import network_agents
from trictrac_jax.az import run as az_run  # (`run`: the fixture)
from trictrac_jax.az import checkpoint as checkpoint_lib
from trictrac_jax.az import network
from trictrac_jax.az import training as T
from trictrac_jax.az.config import ConfigError, load_config, to_dict
from trictrac_jax.league import runs
from trictrac_jax.league.matches import wilson
from trictrac_jax.state import OBS_SIZE
from train import az, gpu_run, plot
from train import eval as eval_script
from tests.fresh import xla_flags

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Games are truncated after 6 decisions so that value targets arrive in every iteration.
TINY = {
    "env": {"max_steps": 6},
    "network": {"width": 16, "blocks": 1},
    "search": {"algorithm": "gumbel", "num_simulations": 2, "max_num_considered_actions": 2},
    "selfplay": {"batch_size": 4, "steps_per_iteration": 8},
    "replay": {"capacity": 64, "min_size": 8},
    "training": {"iterations": 3, "updates_per_iteration": 2, "batch_size": 8,
                 "warmup_updates": 1},
    "evaluation": {"every": 1, "games": 4, "opponents": ["random"], "max_share": 1.0},
    "checkpoint": {"every": 1, "keep_last": 2},
    "logging": {"tensorboard": False},
}


FOUR_DEVICES = textwrap.dedent("""
    import json, sys
    import jax
    from tests.test_train import tiny_config
    from trictrac_jax.az import config as config_lib, training as T
    config = config_lib.load_config(None, ["selfplay.steps_per_iteration=16"],
                           base=tiny_config(sys.argv[1]))
    config_lib.check_devices(config, jax.device_count())
    state = T.init_state(config, jax.random.PRNGKey(0))
    games, buffer = jax.jit(T.start_games, static_argnums=0)(config, jax.random.PRNGKey(1))
    games, buffer, stats = jax.jit(T.selfplay_step, static_argnums=0)(
        config, state.params, games, buffer, T.replicate(jax.random.PRNGKey(2)))
    state, metrics = jax.jit(T.train_step, static_argnums=0)(
        config, state, buffer, T.replicate(jax.random.PRNGKey(3)))
    obs = games.states.observation
    print(json.dumps({
        "devices": jax.device_count(),
        "games_devices": len(obs.sharding.device_set),
        "games_shard": obs.addressable_shards[0].data.shape[0],
        "buffer_shard": buffer.steps.obs.addressable_shards[0].data.shape[0],
        "params_devices": len(jax.tree.leaves(state.params)[0].sharding.device_set),
        "ready": int(stats["ready"]), "loss": float(metrics["loss"])}))
""")


@pytest.fixture(scope="module", autouse=True)
def four_devices(tmp_path_factory):
    """One self-play iteration and one training step with the batch split over 4 CPU devices,
    in a subprocess (the device count is fixed when JAX starts), started before this
    module's other tests so that its compilation runs beside theirs."""
    env = {**os.environ, "XLA_FLAGS": xla_flags("--xla_force_host_platform_device_count=4"),
           "JAX_PLATFORMS": "cpu"}
    proc = subprocess.Popen(
        [sys.executable, "-c", FOUR_DEVICES, str(tmp_path_factory.mktemp("four"))], cwd=ROOT,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield proc
    proc.kill()
    proc.communicate()


@pytest.mark.parametrize("override, key", [
    ("netwrk.width=8", "netwrk"),
    ("network.depth=8", "network.depth"),
    ("network.width=wide", "network.width"),
    ("network.width=1.5", "network.width"),
    ("search.num_simulations=0", "search.num_simulations"),
    ("search.algorithm=alphabeta", "search.algorithm"),
    ("search.max_actions=0", "search.max_actions"),
    ("search.max_actions=515", "search.max_actions"),
    ("evaluation.opponents=[random, nobody]", "evaluation.opponents"),
    ("evaluation.opponents=[greedy:0]", "evaluation.opponents"),
    ("evaluation.games=7", "evaluation.games"),
    ("evaluation.lookahead=515", "evaluation.lookahead"),
    ("evaluation.opponents=[champion:two]", "evaluation.opponents"),
    ("evaluation.rolls=true", "evaluation.rolls"),  # without a lookahead
    ("evaluation.max_share=0", "evaluation.max_share"),
    ("replay.capacity=100", "replay.capacity"),  # less than one iteration of self-play
    ("logging.tensorboard=maybe", "logging.tensorboard"),
])
def test_bad_config_is_reported_by_key(override, key, tmp_path, capsys):
    with pytest.raises(ConfigError, match=f"^{key}:"):
        load_config(None, [override])
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"run": {"dir": str(tmp_path / "run")}}))
    assert az.main(["--config", str(config), "--set", override]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {key}:") and "Traceback" not in err


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_are_valid(path):
    from trictrac_jax.rl import ppo  # configs/ppo.yaml is train/ppo.py's, with its own keys
    load = ppo.load_config if path.name == "ppo.yaml" else load_config
    assert load(path).run.dir  # validated on loading: a bad key raises


def test_opponents_are_baselines_greedy_k_or_champions():
    from trictrac_jax.az import config as config_lib
    opponents = ["greedy", "greedy:8", "random", "first", "champion", "champion:1",
                 "champion:2@rolls:32"]
    config = config_lib.load_config(base={"evaluation": {"opponents": opponents}})
    assert config.evaluation.opponents == tuple(opponents)


def test_an_opponent_that_is_not_shipped_is_named_and_nothing_written(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**TINY, "run": {"dir": str(tmp_path / "run")},
                                      "evaluation": {"opponents": ["champion:99"]}}))
    assert az.main(["--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: evaluation.opponents: unknown champion 'champion:99'")
    assert not (tmp_path / "run").exists()


def test_one_evaluation_search_at_a_time():
    with pytest.raises(ConfigError, match="^evaluation.lookahead:"):
        load_config(None, ["evaluation.num_simulations=8", "evaluation.lookahead=8"])


def test_config_file_and_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("search:\n  num_simulations: 8\ntraining:\n  learning_rate: 1\n")
    config = load_config(path, ["search.num_simulations=64", "training.schedule=constant"])
    assert config.search.num_simulations == 64
    assert config.training.learning_rate == 1.0  # int accepted for a float
    assert config.training.schedule == "constant"
    changed = config.replace(search=config.search.replace(num_simulations=8))
    assert changed.search.num_simulations == 8 and config.search.num_simulations == 64
    with pytest.raises(ConfigError, match="^num_simulations:"):
        config.search.replace(num_simulations=0)  # a section checks its changes too
    path.write_text("search: [1, 2]\n")
    with pytest.raises(ConfigError, match="^search:"):
        load_config(path)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def tiny_config(run_dir, *overrides):
    """TINY in `run_dir`, with `overrides` ('key=value')."""
    return load_config(None, [f"run.dir={run_dir}", *overrides], base=TINY)


class Killed(Exception):
    pass


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A 3-iteration run killed while logging iteration 3 (before its checkpoint).
    Returns (run_dir, killed records)."""
    run_dir = tmp_path_factory.mktemp("runs") / "tiny"
    config = tiny_config(run_dir)

    def kill_at_3(line):
        if line.startswith("it    3/"):
            raise Killed
    with pytest.raises(Killed):
        runs.train_az(config, log=kill_at_3)
    killed = az_run.load_records(run_dir)
    return run_dir, killed


def test_run_logs_metrics_and_checkpoints(run):
    run_dir, killed = run
    assert [r["iteration"] for r in killed] == [1, 2, 3]
    assert killed[-1]["updates"] > 0 and killed[-1]["loss"] > 0  # targets arrived, trained
    assert 0 <= killed[-1]["vs_random_lo"] <= killed[-1]["vs_random"] <= \
        killed[-1]["vs_random_hi"] <= 1
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["1", "2"]
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["network"]["width"] == 16
    # every row says what evaluating cost; the first, with the evaluator's compilation
    assert all(r["eval_s"] > 0 for r in killed) and "compile_s" in killed[0]
    assert not any("compile_s" in r for r in killed[1:])


def test_resume_continues_from_the_last_checkpoint(run, capsys, caplog):
    run_dir, killed = run
    assert az.main(["--resume", str(run_dir)]) == 0
    out, err = capsys.readouterr()
    # nothing from orbax: no parse errors, no warnings
    assert err == "" and [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert f"resumed {run_dir / 'checkpoints' / '2'} (vs random " in out
    assert f"), {killed[1]['updates']} updates\n" in out
    # compilation announced, the columns named once, then a closing summary
    assert out.count("compiling self-play, the updates and the evaluation (about ") == 1
    assert out.count("columns: it = iteration/iterations") == 1 and "ready = " in out
    best = re.search(r"^best checkpoint: (.*)/(\d+) \(vs random (\d\.\d{3}) "
                     r"\[(\d\.\d{3}), (\d\.\d{3})\] in 4 games", out, re.M)
    assert best and best[1] == str(run_dir / "checkpoints"), out
    assert float(best[4]) <= float(best[3]) <= float(best[5])
    for command in ("python train/eval.py --checkpoint ", "python train/plot.py ",
                    "python -m trictrac_jax.tools.play --opponent "):
        assert f"  {command}{run_dir}" in out
    # the resumed iteration 3 replaces the killed one, its clock going on from iteration 2's
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    assert [r["iteration"] for r in records] == [1, 2, 3]
    assert records[-1]["elapsed_s"] >= killed[1]["elapsed_s"]
    assert records[-1]["updates"] == killed[1]["updates"] + 2
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["2", "3"]
    # starting again without --resume would overwrite the run: refused
    config = run_dir / "again.yaml"
    config.write_text(yaml.safe_dump({"run": {"dir": str(run_dir)}}))
    assert az.main(["--config", str(config)]) == 2
    assert "run.dir" in capsys.readouterr().err


def test_resuming_a_finished_run_says_so_and_writes_nothing(run, capsys):
    run_dir, _ = run
    before = snapshot(run_dir)
    assert az.main(["--resume", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert f"{run_dir} is complete (iteration 3 of training.iterations = 3): nothing to " \
           f"train. To train on: --resume {run_dir} --set training.iterations=N" in out
    assert "best checkpoint: " in out and "compiling" not in out
    assert snapshot(run_dir) == before


def test_tensorboard_is_off_with_a_note_without_its_library(tmp_path, monkeypatch):
    for module in ("tensorboardX", "torch", "torch.utils.tensorboard"):
        monkeypatch.setitem(sys.modules, module, None)  # importing it fails
    said = []
    config = tiny_config(tmp_path, "logging.tensorboard=true")
    assert az_run.tensorboard_writer(config, 0, said.append) is None
    assert len(said) == 1 and "pip install tensorboardX" in said[0]
    assert az_run.tensorboard_writer(tiny_config(tmp_path), 0, said.append) is None
    assert len(said) == 1  # not asked for: nothing to say


def test_a_gpu_sized_config_on_a_cpu_is_announced_with_its_duration():
    warning = az_run.cpu_warning(load_config(ROOT / "configs" / "base.yaml"))
    assert warning.startswith("warning: this config is sized for a GPU (131,072 self-play")
    assert re.search(r"its 500 iterations would take about \d+ h", warning)
    assert az_run.cpu_warning(load_config(ROOT / "configs" / "quick.yaml")) is None


def test_an_evaluation_waits_until_it_fits_its_share():
    """evaluation.max_share: spent + expected <= share x (elapsed + expected)."""
    fits = lambda spent, elapsed, expected: az_run.evaluation_fits(spent, elapsed, expected, 0.1)
    assert fits(0.0, 10.0, 1.0) and not fits(0.0, 8.0, 1.0)  # 1 <= 1.1; 1 > 0.9
    assert not fits(30.0, 299.0, 0.0) and fits(30.0, 300.0, 0.0)  # the compilation first
    assert az_run.evaluation_fits(50.0, 60.0, 5.0, 1.0)  # share 1: whenever due


def test_evaluations_over_budget_are_skipped_and_never_best(run, tmp_path, monkeypatch):
    """No evaluation fits its share: none until the last iteration, evaluated anyway so
    that the run ranks a network; the checkpoints not evaluated score -1 and are never the
    best."""
    monkeypatch.setattr(az_run, "evaluation_fits", lambda *args: False)
    config = tiny_config(tmp_path / "thrifty", "checkpoint.keep_last=3")
    runs.train_az(config, log=lambda line: None)
    records = az_run.load_records(tmp_path / "thrifty")
    assert ["vs_random" in r for r in records] == [False, False, True]
    directory = tmp_path / "thrifty" / "checkpoints"
    assert [checkpoint_lib.score(directory, s) for s in (1, 2)] == [-1.0, -1.0]
    assert checkpoint_lib.score(directory, 3) == records[2]["vs_random"]
    assert az_run.best_checkpoint(tmp_path / "thrifty") == 3


def test_resumed_tensorboard_drops_the_points_played_again(tmp_path, monkeypatch):
    """A run resumed after iteration 2 plays iteration 3 again: its SummaryWriter purges
    the points from step 3 on (tensorboardX and torch take `purge_step`)."""
    opened = []
    writer = lambda logdir, purge_step=None: opened.append((logdir, purge_step))
    monkeypatch.setitem(sys.modules, "tensorboardX", type(sys)("tensorboardX"))
    sys.modules["tensorboardX"].SummaryWriter = writer
    az_run.open_tensorboard(tmp_path, 0)
    az_run.open_tensorboard(tmp_path, 2)
    assert opened == [(str(tmp_path), None), (str(tmp_path), 3)]


def test_same_seed_same_iteration(run):
    """Self-play and training are deterministic (the run's functions are already compiled)."""
    config = T.device_config(tiny_config(run[0]))

    def one_iteration():
        state = T.init_state(config, jax.random.PRNGKey(5))
        games, buffer = az_run.start_games(config, jax.random.PRNGKey(6))
        games, buffer, _ = az_run.selfplay_step(config, state.params, games, buffer,
                                                T.replicate(jax.random.PRNGKey(7)))
        state, _ = az_run.train_step(config, state, buffer, T.replicate(jax.random.PRNGKey(8)))
        return jax.device_get((state.params, buffer.steps.policy))
    first, second = one_iteration(), one_iteration()
    assert all(jax.tree.leaves(jax.tree.map(lambda a, b: (a == b).all(), first, second)))


def snapshot(directory: pathlib.Path) -> dict:
    return {p.relative_to(directory): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def corrupt(checkpoint: pathlib.Path):
    """Truncate the data files of a checkpoint's state, as a full disk would."""
    for f in (checkpoint / "state").rglob("d/*"):
        f.write_bytes(f.read_bytes()[:5])


@pytest.mark.parametrize("override", ["training.iterations=0", "run.dir=elsewhere"])
def test_failed_resume_writes_nothing(run, override, capsys):
    run_dir, _ = run
    before = snapshot(run_dir)
    assert az.main(["--resume", str(run_dir), "--set", override]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {override.split('=')[0]}:")
    assert snapshot(run_dir) == before


def test_no_intact_checkpoint_lists_those_tried(run, tmp_path, capsys):
    run_dir, _ = run
    broken = tmp_path / "broken"
    shutil.copytree(run_dir, broken)
    checkpoints = sorted((broken / "checkpoints").iterdir(), key=lambda p: -int(p.name))
    for checkpoint in checkpoints:
        corrupt(checkpoint)
    before = snapshot(broken)
    assert az.main(["--resume", str(broken)]) == 2
    out, err = capsys.readouterr()
    first, *lines = out.splitlines()
    assert first.startswith("running on ")
    for line, checkpoint in zip(lines, checkpoints, strict=True):
        assert line.startswith(f"skipped {checkpoint}: cannot restore the training state "
                               f"(corrupt or truncated file: state/d/")
    assert err.startswith(f"error: {broken / 'checkpoints'}: no intact checkpoint; tried:")
    assert all(str(c) in err for c in checkpoints) and "Traceback" not in err
    assert snapshot(broken) == before
    assert eval_script.main(["--checkpoint", str(tmp_path / "nowhere"), "--games", "2"]) == 2
    assert str(tmp_path / "nowhere") in capsys.readouterr().err


def garble(path: pathlib.Path):
    path.write_text("garbage{")


def empty(checkpoint: pathlib.Path):
    shutil.rmtree(checkpoint)
    checkpoint.mkdir()


# Each way a checkpoint can be damaged, and the start of the reason a resume gives for it.
DAMAGE = {
    "state": (corrupt, "cannot restore the training state (corrupt or truncated file: state/d/"),
    "state metadata": (lambda c: garble(c / "state" / "_METADATA"),
                       "cannot restore the training state (JSONDecodeError: "),
    "missing state": (lambda c: shutil.rmtree(c / "state"),
                      "cannot restore the training state (FileNotFoundError: "),
    "metrics": (lambda c: garble(c / "metrics" / "metrics"),
                "cannot read metrics/metrics (JSONDecodeError: "),
    "missing metrics": (lambda c: (c / "metrics" / "metrics").unlink(),
                        "missing file metrics/metrics"),
    "config": (lambda c: garble(c / "config" / "metadata"),
               "cannot read its config (JSONDecodeError: "),
    "missing config": (lambda c: (c / "config" / "metadata").unlink(),
                       "cannot read its config (FileNotFoundError: "),
    "orbax metadata": (lambda c: garble(c / "_CHECKPOINT_METADATA"),
                       "cannot read _CHECKPOINT_METADATA (JSONDecodeError: "),
    "missing orbax metadata": (lambda c: (c / "_CHECKPOINT_METADATA").unlink(),
                               "missing file _CHECKPOINT_METADATA"),
    "empty directory": (empty, "empty directory"),
}
# What orbax and tensorstore print when they meet a damaged file: not the user's business.
NOISE = ("Traceback", ":absl:", "Failed to json parse", "Metadata file", "pybind11",
         "bound method", "Event loop")


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_newest_checkpoint_is_skipped(run, kind, tmp_path, capfd, caplog):
    """Whatever file of the newest checkpoint is damaged, a resume continues from the one
    before it, and loading the run's best checkpoint (eval, play, load_agent) falls back to
    it, each with one line naming the skipped checkpoint and why, and nothing else."""
    copy = tmp_path / "copy"
    shutil.copytree(run[0], copy)
    newest, previous = sorted((copy / "checkpoints").iterdir(), key=lambda p: -int(p.name))[:2]
    (newest / "metrics" / "metrics").write_text('{"score": 1.0}')  # the best, too
    damage, why = DAMAGE[kind]
    damage(newest)
    capfd.readouterr()
    lines = []
    _, resumed = az_run.resume(argparse.Namespace(resume=str(copy), config=None, set=[]),
                           lines.append)
    assert resumed.iteration == int(previous.name)
    assert len(lines) == 2 and lines[0].startswith(f"skipped {newest}: {why}"), lines
    assert lines[1].startswith(f"resumed {previous} (")
    network_agents.load_network(str(copy))
    out, err = capfd.readouterr()
    assert err.startswith(f"skipped {newest}: {why}") and len(err.splitlines()) == 2, err
    assert err.splitlines()[1].startswith(f"loaded {previous} (best: ")
    assert out == "" and not any(noise in err for noise in NOISE)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_damaged_earlier_checkpoint_is_set_aside(run, tmp_path):
    """orbax's manager reads the metrics and metadata of every checkpoint: a resume moves an
    earlier one whose files do not read out of its way, as it does the skipped ones."""
    copy = tmp_path / "copy"
    shutil.copytree(run[0], copy)
    directory = copy / "checkpoints"
    newest, earlier = sorted(directory.iterdir(), key=lambda p: -int(p.name))[:2]
    garble(earlier / "metrics" / "metrics")
    moved = checkpoint_lib.set_aside(directory, int(newest.name))
    assert [(path, target) for path, target, _ in moved] == \
        [(earlier, copy / "skipped_checkpoints" / earlier.name)]
    assert moved[0][2].startswith(f"{earlier}: cannot read metrics/metrics (JSONDecodeError")
    checkpointer = checkpoint_lib.Checkpointer(copy, 2)  # which reads the metrics of those left
    assert checkpointer.manager.all_steps() == [int(newest.name)]
    checkpointer.close()


def test_resume_of_a_copy_with_a_damaged_latest_checkpoint(run, tmp_path, capfd, caplog):
    """A copied run resumes from its newest intact checkpoint (the latest's metrics, which
    orbax's manager reads, are damaged) and writes only into the copy; all the output a user
    sees (stdout and stderr, Python's and the libraries') is checked. In this process, whose
    programs `run` compiled: the copy trains to its config's iterations."""
    run_dir, _ = run
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    original = snapshot(run_dir)
    latest = max((copy / "checkpoints").iterdir(), key=lambda p: int(p.name))
    garble(latest / "metrics" / "metrics")
    step, iterations = int(latest.name), TINY["training"]["iterations"]
    capfd.readouterr()
    assert az.main(["--resume", str(copy)]) == 0
    out, err = capfd.readouterr()
    first, *lines = out.splitlines()
    assert first.startswith("running on ")
    assert lines[0].startswith(f"skipped {latest}: cannot read metrics/metrics "
                               f"(JSONDecodeError: ")
    assert lines[1].startswith(f"resumed {latest.parent / str(step - 1)} (vs random ")
    assert lines[2] == f"moved {latest} to {copy / 'skipped_checkpoints' / str(step)}"
    assert lines[3].startswith("compiling self-play") and lines[4].startswith("compiled in ")
    assert lines[5].startswith("columns: ")
    replayed = range(step, iterations + 1)
    end = 6 + len(replayed)
    assert [line.split(" | ")[0] for line in lines[6:end]] == [f"it {i:>4}/{iterations}"
                                                               for i in replayed]
    assert lines[end].startswith("done: ") and lines[end + 1].startswith("best checkpoint: ")
    assert not any(noise in out + err for noise in NOISE), err
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert snapshot(run_dir) == original
    records = [json.loads(line) for line in (copy / "metrics.jsonl").open()]
    assert [r["iteration"] for r in records] == list(range(1, iterations + 1))
    elapsed = [r["elapsed_s"] for r in records]
    assert elapsed == sorted(elapsed)
    assert yaml.safe_load((copy / "config.yaml").read_text())["run"]["dir"] == str(copy)
    # the replayed iteration's checkpoint is saved anew, by the resumed run
    _, config = T.load_params(copy / "checkpoints" / str(step), log=lambda line: None)
    assert config.run.dir == str(copy)


def test_eval_and_plot_commands(run, capsys):
    run_dir, _ = run
    # the opponent and games of the run's own evaluation: its compiled match is reused
    assert eval_script.main(["--checkpoint", str(run_dir), "--opponent", "random", "--games",
                          "4"]) == 0
    out, err = capsys.readouterr()
    assert "vs random: win rate" in out and "in 4 games" in out
    loaded = re.search(rf"^loaded {re.escape(str(run_dir / 'checkpoints'))}/(\d+) "
                       rf"\(best: vs random (\d\.\d\d\d)\)$", err, re.M)
    assert loaded, err
    records = {r["iteration"]: r for r in az_run.load_records(run_dir)}
    assert loaded[2] == f"{records[int(loaded[1])]['vs_random']:.3f}"
    # a checkpoint opponent goes through the same evaluator (here the run against itself,
    # both sides with the 1-ply lookahead)
    assert eval_script.main(["--checkpoint", str(run_dir), "--opponent", str(run_dir),
                          "--games", "2", "--lookahead", "4"]) == 0
    assert f"vs {run_dir}: win rate" in capsys.readouterr().out
    assert plot.main([str(run_dir), "--text"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| iter") and len(lines) == 2 + 3


def test_plot_keeps_the_last_record_of_an_iteration(tmp_path):
    """Files written before resuming replaced the replayed records hold duplicates."""
    rows = [(1, 10.0), (2, 20.0), (3, 30.0), (2, 5.0), (3, 12.0)]
    (tmp_path / "metrics.jsonl").write_text(
        "".join(json.dumps({"iteration": i, "elapsed_s": t}) + "\n" for i, t in rows))
    records = az_run.load_records(tmp_path)
    assert [(r["iteration"], r["elapsed_s"]) for r in records] == [(1, 10.0), (2, 5.0),
                                                                     (3, 12.0)]


def test_wilson_interval():
    assert wilson(0, 10)[0] == 0.0 and wilson(0, 10)[1] == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson(70, 100)
    assert lo == pytest.approx(0.6042, abs=1e-4) and hi == pytest.approx(0.7810, abs=1e-4)
    assert wilson(30, 100) == pytest.approx((1 - hi, 1 - lo))


def test_data_parallel_over_four_devices(four_devices):
    out, err = four_devices.communicate(timeout=600)
    assert four_devices.returncode == 0, err[-3000:]
    got = json.loads(out.strip().splitlines()[-1])
    assert got["devices"] == 4 and got["games_devices"] == 4 and got["games_shard"] == 1
    assert got["buffer_shard"] == 16 and got["params_devices"] == 4
    assert got["ready"] > 0 and got["loss"] == got["loss"]  # trained on finished games


def test_bfloat16_inference_evaluates_the_same_parameters():
    """network.inference_dtype=bfloat16: the model's evaluations (search, evaluation, play)
    compute the float32 parameters in bfloat16, within its precision of float32's; the
    training step's network computes in float32."""
    from trictrac_jax.az.model import evaluate, model_from_config
    from trictrac_jax.env import Trictrac
    config = load_config(ROOT / "configs" / "quick.yaml", ["network.inference_dtype=bfloat16"])
    params = T.new_state(config, jax.random.PRNGKey(0)).params
    assert all(x.dtype == np.float32 for x in jax.tree.leaves(params))
    keys = jax.random.split(jax.random.PRNGKey(1), 32)
    states = jax.vmap(Trictrac().init)(keys)
    half = evaluate(model_from_config(config), params, states)
    full = evaluate(model_from_config(config.replace(
        network=config.network.replace(inference_dtype="float32"))), params, states)
    legal = np.asarray(states.legal_action_mask)
    assert half.value.dtype == full.value.dtype == np.float32
    assert not np.array_equal(half.value, full.value)
    np.testing.assert_allclose(half.value, full.value, atol=0.03)
    np.testing.assert_allclose(np.asarray(half.logits)[legal], np.asarray(full.logits)[legal],
                               atol=0.1)
    assert network.make_network(config.network).dtype == np.float32  # as `T.train_step` makes it


def test_warm_start_deepens_a_network_then_a_lookahead_run_learns_its_values(run, tmp_path):
    """A config with more blocks than the network starts the extra ones as the identity:
    the deeper network's logits and values are the source's. It then trains them in a run
    of the lookahead search with replay.bootstrap 1 (one compilation for both facts):
    self-play plays the lookahead over the rolls, and the value head learns its backed-up
    values."""
    run_dir, _ = run
    source, source_config = network_agents.load_network(str(run_dir))
    config = tiny_config(tmp_path / "deep", f"network.blocks={source_config.network.blocks + 2}",
                         f"run.init_from={run_dir}", "training.iterations=1",
                         "search.algorithm=lookahead", "search.max_num_considered_actions=3",
                         "replay.bootstrap=1.0",
                         "evaluation.opponents=[]")  # no match to compile
    lines = []
    state = az_run.warm_start(config, runs.init_network(config), log=lines.append)
    assert lines == [f"warm start from {run_dir} (1 blocks, 2 more as the identity)"]
    obs = jax.random.uniform(jax.random.PRNGKey(3), (64, OBS_SIZE))
    shallow = network.make_network(source_config.network).apply({"params": source}, obs)
    deep = network.make_network(config.network).apply({"params": state.params}, obs)
    for a, b in zip(shallow, deep):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)
    record = runs.train_az(config, log=lambda line: None)
    assert record["updates"] > 0 and np.isfinite(record["value_loss"])
    assert record["policy_loss"] == record["policy_loss"]
    params, _ = network_agents.load_network(str(tmp_path / "deep"))
    new_block = params["ResidualBlock_2"]["Dense_1"]["kernel"]
    assert np.abs(np.asarray(new_block)).max() > 0  # the identity blocks learn


TWO_PROCESSES = textwrap.dedent("""
    import hashlib, json, pathlib, sys
    import jax
    import numpy as np
    from jax.experimental import multihost_utils
    from train import az
    from trictrac_jax.az import checkpoint, run
    config, run_dir = sys.argv[1], pathlib.Path(sys.argv[2])
    seen = {"codes": [], "saved": [[], []], "games": [[], []]}
    save, selfplay = checkpoint.Checkpointer.save, run.selfplay_step

    def record_save(self, iteration, state, config, score):
        leaves = jax.tree.leaves(state.params)
        local = b"".join(np.asarray(x.addressable_data(0)).tobytes() for x in leaves)
        seen["saved"][len(seen["codes"])].append({
            "iteration": iteration, "updates": int(state.step),
            "params": hashlib.sha256(local).hexdigest(),
            "params_devices": len(leaves[0].sharding.device_set)})
        save(self, iteration, state, config, score)

    def record_selfplay(*args):
        games = seen["games"][len(seen["codes"])]
        if not seen["codes"] and len(games) == 2:  # Ctrl-C in the first run's iteration 3
            raise KeyboardInterrupt
        played, buffer, stats = selfplay(*args)
        obs = played.states.observation
        games.append([len(obs.sharding.device_set), obs.addressable_shards[0].data.shape[0]])
        return played, buffer, stats
    record_selfplay.lower = selfplay.lower  # compiled before the first iteration
    checkpoint.Checkpointer.save, run.selfplay_step = record_save, record_selfplay
    seen["codes"].append(az.main(["--config", config]))
    seen["after_first"] = {
        "checkpoints": sorted(p.name for p in (run_dir / "checkpoints").iterdir()),
        "metrics": [json.loads(line)["iteration"]
                    for line in (run_dir / "metrics.jsonl").open()]}
    if jax.process_index() == 0:  # the latest checkpoint damaged, then a resume
        (run_dir / "checkpoints" / "2" / "metrics" / "metrics").write_text("garbage{")
    multihost_utils.sync_global_devices("damaged")
    seen["codes"].append(az.main(["--resume", str(run_dir)]))
    print(json.dumps({"process": jax.process_index(), "processes": jax.process_count(),
                      **seen}))
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_processes(n: int, args: list[str], logs: pathlib.Path, timeout: float = 480
                  ) -> list[dict]:
    """TWO_PROCESSES (`train/az.py` started, interrupted and resumed) with `args` as `n`
    processes of one CPU device each, joined through a coordinator on localhost; each one's
    report. Their output goes to files in `logs` (a full pipe would stall one, and with it
    the other); all are killed after `timeout` seconds together, or when one fails."""
    port, procs = free_port(), []
    logs.mkdir(exist_ok=True)
    for i in range(n):
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": xla_flags(),
               "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}", "JAX_NUM_PROCESSES": str(n),
               "JAX_PROCESS_ID": str(i)}
        with open(logs / f"{i}.out", "w") as out, open(logs / f"{i}.err", "w") as err:
            procs.append(subprocess.Popen([sys.executable, "-c", TWO_PROCESSES, *args], cwd=ROOT,
                                          env=env, stdout=out, stderr=err))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            codes = [proc.poll() for proc in procs]
            if None not in codes or any(codes):  # all done, or one failed
                break
            time.sleep(1)
    finally:  # jax.distributed catches SIGTERM: kill
        for proc in procs:
            proc.kill()
            proc.wait()
    for i, proc in enumerate(procs):
        assert proc.returncode == 0, (logs / f"{i}.err").read_text()[-3000:]
    return [json.loads((logs / f"{i}.out").read_text().strip().splitlines()[-1])
            for i in range(n)]


def test_two_processes_train_one_model(tmp_path):
    """2 processes x 1 CPU device (jax.distributed, gloo): the games are split over both,
    the gradients reduced across them, so that both hold the same parameters after each
    update; the run's files are written once; interrupted (Ctrl-C) in its third iteration
    and its latest checkpoint damaged, the run resumed in the same processes (its programs
    compiled once) goes on with both from the checkpoint before."""
    run_dir = tmp_path / "run"
    config = tmp_path / "tiny.yaml"
    # Games end after 6 of the 8 decisions an iteration plays: 24 of the first iteration's
    # 32 decisions are ready, too few to train on; the second one trains. So the first
    # checkpoint holds the state as made at the start.
    config.write_text(yaml.safe_dump({**TINY, "evaluation": {"opponents": []},
                                      "replay": {**TINY["replay"], "min_size": 32},
                                      "run": {"dir": str(run_dir)}}))
    reports = run_processes(2, [str(config), str(run_dir)], tmp_path / "logs")
    assert [(r["codes"], r["process"], r["processes"]) for r in reports] == \
        [([130, 0], 0, 2), ([130, 0], 1, 2)]
    batch, updates = TINY["selfplay"]["batch_size"], TINY["training"]["updates_per_iteration"]
    for r in reports:  # each process plays half of the games of a mesh over both
        assert r["games"] == [[[2, batch // 2]] * 2] * 2
        assert [s["params_devices"] for s in r["saved"][0] + r["saved"][1]] == [2] * 4
        # interrupted before iteration 3's self-play: its record and checkpoint not written
        assert r["after_first"] == {"checkpoints": ["1", "2"], "metrics": [1, 2]}
    (first, resumed), (first_1, resumed_1) = (r["saved"] for r in reports)
    assert [(s["iteration"], s["updates"]) for s in first] == [(1, 0), (2, updates)]
    assert first == first_1  # the same parameters on both, after each iteration
    assert first[0]["params"] != first[1]["params"]  # and trained between them
    assert resumed_1 == resumed
    # from checkpoint 1: iteration 2 again (self-play restarts: no training yet), then 3
    assert [(s["iteration"], s["updates"]) for s in resumed] == [(2, 0), (3, updates)]
    assert resumed[0]["params"] == first[0]["params"]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["2", "3"]
    assert sorted(p.name for p in (run_dir / "skipped_checkpoints").iterdir()) == ["2"]
    assert [json.loads(line)["iteration"] for line in (run_dir / "metrics.jsonl").open()] \
        == [1, 2, 3]
    skipped = f"skipped {run_dir / 'checkpoints' / '2'}: cannot read metrics/metrics"
    assert [(tmp_path / "logs" / f"{i}.out").read_text().count(skipped) for i in (0, 1)] \
        == [1, 0]  # said once
    assert all((tmp_path / "logs" / f"{i}.err").read_text().count(
        "interrupted: continue with --resume") == 1 for i in (0, 1))


COORDINATED = {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "2",
               "JAX_PROCESS_ID": "1"}


@pytest.mark.parametrize("environ, expected", [
    ({}, None),
    ({"SLURM_STEP_NUM_TASKS": "1", "SLURM_NTASKS": "8"}, None),  # a batch script's process
    ({"SLURM_STEP_NUM_TASKS": "8"}, {}),  # srun's: jax reads the rest
    ({"OMPI_COMM_WORLD_SIZE": "2"}, {}),
    (COORDINATED, {"coordinator_address": "10.0.0.1:1234", "num_processes": 2,
                   "process_id": 1}),
])
def test_processes_join_from_the_environment(environ, expected):
    assert T.distributed_args(environ) == expected


@pytest.mark.parametrize("change, key", [
    ({"JAX_NUM_PROCESSES": None}, "JAX_NUM_PROCESSES"),
    ({"JAX_PROCESS_ID": "one"}, "JAX_PROCESS_ID"),
    ({"JAX_PROCESS_ID": "2"}, "JAX_PROCESS_ID"),  # of 2: 0 or 1
])
def test_a_bad_process_variable_is_reported_by_name(change, key, monkeypatch, capsys):
    environ = {k: v for k, v in {**COORDINATED, **change}.items() if v is not None}
    with pytest.raises(ConfigError, match=f"^{key}: "):
        T.distributed_args(environ)
    for name in COORDINATED:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert az.main(["--config", "unused.yaml"]) == 2  # before joining anything
    assert capsys.readouterr().err.startswith(f"error: {key}: ")


def test_replay_targets_are_the_final_utility_minus_the_banked_margin():
    import jax.numpy as jnp
    import numpy as np
    from trictrac_jax.az import replay as R
    buffer = R.empty(capacity=8, games=2)
    T_, G = 2, 2
    zeros = jax.tree.map(lambda x: jnp.zeros((T_, G, *x.shape[1:]), x.dtype), buffer.steps)
    steps = zeros.replace(
        mover=jnp.array([[0, 1], [1, 0]], jnp.int32), after_player=jnp.ones((T_, G), jnp.int32),
        banked=jnp.array([[0.25, -0.5], [0.1, 0.0]]), after_banked=jnp.full((T_, G), 0.2),
        game=jnp.array([[0, 1], [0, 1]], jnp.int32), after_valid=jnp.ones((T_, G), bool))
    done = jnp.array([[False, False], [True, True]])
    utility = jnp.array([[[0, 0], [0, 0]], [[0.5, -0.5], [-1.5, 1.5]]], jnp.float32)
    buffer = R.add(buffer, steps, done, utility)
    sampled, z, z_after = R.sample(buffer, jax.random.PRNGKey(0), (64,))
    final = np.array([[0.5, -0.5], [-1.5, 1.5]])  # [game, colour]
    game, mover = np.asarray(sampled.game), np.asarray(sampled.mover)
    expected = np.clip(final[game, mover] - np.asarray(sampled.banked), -1, 1)
    assert np.allclose(z, expected)
    assert np.allclose(z_after, np.clip(final[game, 1] - 0.2, -1, 1))
    assert {(round(float(a), 4), int(g)) for a, g in zip(z, game)} == \
        {(0.25, 0), (-0.6, 0), (1.0, 1), (-1.0, 1)}  # every decision, clipped at +-1
    # bootstrap: the search's value weighs in, the afterstates keep the outcome
    buffer = R.add(R.empty(capacity=8, games=2),
                   steps.replace(value=jnp.array([[0.4, -0.2], [0.8, 0.6]])), done, utility)
    for bootstrap in (0.25, 1.0):
        sampled, z, z_after = R.sample(buffer, jax.random.PRNGKey(0), (64,), bootstrap)
        game, mover = np.asarray(sampled.game), np.asarray(sampled.mover)
        outcome = np.clip(final[game, mover] - np.asarray(sampled.banked), -1, 1)
        mixed = bootstrap * np.asarray(sampled.value) + (1 - bootstrap) * outcome
        assert np.allclose(z, np.clip(mixed, -1, 1))
        assert np.allclose(z_after, np.clip(final[game, 1] - 0.2, -1, 1))
    assert sorted({round(float(v), 4) for v in z}) == [-0.2, 0.4, 0.6, 0.8]  # every one


def test_time_to_strength_stops_on_the_clock_and_rates_snapshots(tmp_path):
    """A run with a wall-clock budget stops after the iteration that passes it, far short of
    its iterations, and writes the network at each mark; each snapshot is then rated."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(to_dict(tiny_config(tmp_path / "unused",
                                                         "training.iterations=50"))))
    from experiments import time_to_strength as tts
    out = tmp_path / "tts"
    # no evaluation in the run (none compiled): the snapshots are rated after it
    assert tts.main([f"--setting=tiny={config},evaluation.opponents=[]", "--minutes=0.001,0.002",
                     "--opponent=random", "--games=4", "--lookahead=0", f"--out={out}"]) == 0
    rows = json.loads((out / "time_to_strength.json").read_text())
    assert [r["minutes"] for r in rows] == [0.001, 0.002]
    assert all(r["games"] == 4 and 0 <= r["lo"] <= r["win_rate"] <= r["hi"] <= 1 for r in rows)
    metrics = [json.loads(line) for line in (out / "tiny" / "metrics.jsonl").read_text()
               .splitlines()]
    assert len(metrics) < 50 and metrics[-1]["elapsed_s"] >= 0.002 * 60
    assert "| tiny | 0.002 |" in (out / "time_to_strength.md").read_text()


def test_search_screen_gives_each_search_the_same_h100_cost():
    """experiments.search_screen: gumbel8 gets the iterations asked; every other search the
    iterations whose H100-estimated self-play cost is nearest gumbel8's (within half of one
    of its own iterations), so a costlier search gets fewer."""
    from experiments import search_screen as screen
    for asked in (1, 7, 64):
        given = screen.iterations_at_equal_cost(asked, screen.SCREEN)
        assert given["gumbel8"] == asked
        for name, iterations in given.items():
            cost = screen.H100_COST[name]
            assert abs(iterations * cost - asked) <= cost / 2 or iterations == 1
    assert screen.H100_COST["stochastic16"] > screen.H100_COST["gumbel_stochastic8"] > 1


def test_warm_start_from_a_network_file_and_a_run(run, tmp_path, capsys):
    """--init-from: a new run starts from another run's network (its best checkpoint, or
    that network exported to a file in the champion's format) with a fresh optimiser; a
    network of another shape is refused, naming the key."""
    run_dir, _ = run
    source, _ = network_agents.load_network(str(run_dir))
    exported = tmp_path / "net.msgpack"
    assert champion.main(["--export", str(run_dir), "--out", str(exported)]) == 0
    for spec in (str(exported), str(run_dir)):
        # TINY's sizes and iterations: the programs that `run` compiled
        config = tiny_config(tmp_path / f"warm{len(spec)}", f"run.init_from={spec}")
        state = az_run.warm_start(config, runs.init_network(config), log=lambda line: None)
        assert int(state.step) == 0
        assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(state.params),
                                                        jax.tree.leaves(source)))
        fresh = T.init_state(config, jax.random.PRNGKey(0))
        assert jax.tree.structure(state.opt_state) == jax.tree.structure(fresh.opt_state)
        assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(state.opt_state),
                                                        jax.tree.leaves(fresh.opt_state)))
    runs.train_az(config, log=lambda line: None)  # and a run trains from there
    saved = yaml.safe_load((pathlib.Path(config.run.dir) / "config.yaml").read_text())
    assert saved["run"]["init_from"] == spec
    wide = tmp_path / "wide.yaml"
    wide.write_text(yaml.safe_dump({**TINY, "network": {"width": 32, "blocks": 1},
                                    "run": {"dir": str(tmp_path / "wide")}}))
    assert az.main(["--config", str(wide), "--init-from", str(exported)]) == 2
    assert "network.width: " in capsys.readouterr().err
    shallow = tmp_path / "shallow.yaml"
    shallow.write_text(yaml.safe_dump({**TINY, "network": {"width": 16, "blocks": 0},
                                       "run": {"dir": str(tmp_path / "shallow")}}))
    assert az.main(["--config", str(shallow), "--init-from", str(exported)]) == 2
    assert "network.blocks: " in capsys.readouterr().err
    assert az.main(["--config", str(wide), "--init-from", str(tmp_path / "none.msgpack")]) == 2
    assert "run.init_from: " in capsys.readouterr().err


def test_gpu_run_ends_on_its_clock_and_brings_back_its_best_network(run, tmp_path):
    """train/gpu_run.py on the CPU with a tiny --minutes: the clock ends the run (its first
    iteration is its last), and OUT holds the best network (the best checkpoint's), the
    metrics and the report, each file under 16 MB. A run killed after its first network
    leaves that network whole, and its copy (--copy-to) too."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(to_dict(tiny_config(tmp_path / "unused"))))
    out = tmp_path / "gpu"
    assert gpu_run.main(["--minutes", "0.01", "--config", str(config), "--out",
                         str(out)]) == 0
    records = az_run.load_records(out)
    assert [r["iteration"] for r in records] == [1]  # of 3: the clock ended it
    params, _, provenance = champion.load(out / "network.msgpack")
    best, _ = network_agents.load_network(str(out))
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(params),
                                                    jax.tree.leaves(best)))
    assert provenance["iteration"] == 1 and provenance["evaluation"].endswith("in 4 games")
    report = (out / "report.md").read_text()
    assert "Status: finished." in report
    assert "**network.msgpack** is iteration 1 (" in report and "against random " in report
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {"network.msgpack", "metrics.jsonl", "report.md"} <= {p.name for p in files}
    assert all(p.stat().st_size < 16 * 2**20 for p in files)

    def kill_at_2(line):
        if line.startswith("it    2/"):
            raise Killed
    killed, copy = tmp_path / "killed", tmp_path / "copy"
    args = gpu_run.parse_args(["--minutes", "1", "--config", str(config), "--out",
                               str(killed), "--copy-to", str(copy)])
    with pytest.raises(Killed):
        gpu_run.train_for_minutes(args, "test", log=kill_at_2)
    assert champion.load(killed / "network.msgpack")[2]["iteration"] == 1
    assert "Status: running (written at iteration 1)." in (killed / "report.md").read_text()
    # --copy-to: the three files as after iteration 1, no checkpoint
    assert sorted(p.name for p in copy.iterdir()) == sorted(gpu_run.BROUGHT_BACK)
    assert (copy / "network.msgpack").read_bytes() == (killed / "network.msgpack").read_bytes()
    assert [r["iteration"] for r in az_run.load_records(copy)] == [1]


def test_the_gpu_runs_watchdog_stops_a_run_past_its_time():
    import threading
    stopped, calm = threading.Event(), threading.Event()
    gpu_run.Watchdog(stopped.set).arm(0.01)
    assert stopped.wait(10)
    dog = gpu_run.Watchdog(calm.set)
    dog.arm(0.2)
    dog.disarm()
    assert not calm.wait(0.5)


def test_gpu_run_carries_champion_2_on_with_its_recipe(tmp_path):
    args = gpu_run.parse_args(["--minutes", "8", "--init-from", "champion:2", "--out",
                               str(tmp_path / "c3")])
    config, made_by = gpu_run.run_config(args)
    assert made_by[0].endswith("quick.yaml")  # on a CPU: quick.yaml's sizes
    assert (config.network.width, config.network.blocks) == (128, 4)  # champion 2's
    assert config.search.algorithm == "lookahead" and config.replay.bootstrap == 0.8
    ev = config.evaluation
    assert ev.opponents == ("champion:2",) and ev.lookahead == 32 and ev.rolls
    assert config.run.init_from == "champion:2" and not config.logging.tensorboard
