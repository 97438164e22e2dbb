"""A training run on the host: its command line, its directory (config, metrics, checkpoints,
snapshots, TensorBoard events), resuming it, its exit status, and the AlphaZero loop
(`train`), which `trictrac_jax.league.runs.train_az` starts with the run's evaluation
matches and the network it starts from. PPO's loop (`trictrac_jax.rl.loop`) uses the same
parts.

    RUN_DIR/config.yaml        the run's config, as resumed
    RUN_DIR/metrics.jsonl      one record per iteration (`write_record`, `load_records`)
    RUN_DIR/checkpoints/N      orbax checkpoints (`checkpoint.Checkpointer`)
    RUN_DIR/snapshots/Mmin.msgpack   the network at a wall-clock mark (`save_snapshot`)

Evaluation takes at most `evaluation.max_share` of the wall clock (`evaluation_fits`).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any, Callable, NamedTuple

import jax
import yaml
from jax.experimental import multihost_utils

from trictrac_jax.az import champion
from trictrac_jax.az import checkpoint
from trictrac_jax.az import config as config_lib
from trictrac_jax.az import training as T


# --- the command line and the run's config ------------------------------------------------

def run_parser(description: str, example_config: str, example_set: str):
    """The options every training script takes: --config, --set, --resume."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--config", help=f"YAML config (keys as in {example_config})")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help=f"override a config key, e.g. --set {example_set}")
    p.add_argument("--resume", nargs="?", const="", metavar="RUN_DIR",
                   help="continue RUN_DIR (default: run.dir) from its newest intact "
                        "checkpoint, writing only there; the run's saved config is used, "
                        "updated by --set")
    return p


class RunKind(NamedTuple):
    """How a kind of run (AlphaZero's, PPO's) reads its config and its checkpoints."""

    load_config: Callable  # (path, overrides, base=None) -> a validated config
    saved_config: Callable  # (checkpoints directory, step) -> the checkpoint's config
    restore_state: Callable  # (checkpoints directory, step, config) -> its state
    updates: Callable[[Any], int]  # a state's optimiser updates, as `resume` reports them


AZ_RUN = RunKind(config_lib.load_config, T.saved_config, T.restore_state, lambda s: int(s.step))


class Resumed(NamedTuple):
    """What a resumed run continues from."""

    state: Any  # the checkpoint's state
    iteration: int  # of the checkpoint
    metrics: list[str]  # the lines of metrics.jsonl up to `iteration`
    elapsed_s: float  # wall clock up to `iteration`, from those lines
    eval_s: float = 0.0  # of it evaluating, from those lines


def new_config(args, kind: RunKind = AZ_RUN, overrides=()):
    """The config of a new run: --config, then --set and `overrides`. Refuses a run.dir that
    holds checkpoints already (a run to resume)."""
    if args.config is None:
        raise config_lib.ConfigError("--config: required unless --resume is given")
    config = kind.load_config(args.config, [*args.set, *overrides])
    if (pathlib.Path(config.run.dir) / "checkpoints").is_dir():
        raise config_lib.ConfigError(
            f"run.dir: {config.run.dir} already holds checkpoints; "
            f"use --resume, or set another run.dir")
    return config


def resume(args, log, kind: RunKind = AZ_RUN) -> tuple[Any, Resumed]:
    """The config and state of the run to resume (--resume RUN_DIR, or --config's run.dir),
    from its newest intact checkpoint. Writes nothing: a resume that fails leaves the run as
    it was."""
    run_dir = pathlib.Path(args.resume or kind.load_config(args.config, args.set).run.dir)
    directory = run_dir / "checkpoints"
    if not directory.is_dir():
        raise checkpoint.CheckpointError(
            f"{run_dir}: not a run directory (no checkpoints/ in it)")

    def load(step):
        saved = kind.saved_config(directory, step)
        config = resumed_config(saved, args.set, run_dir, kind)
        return saved, config, kind.restore_state(directory, step, config)
    step, (saved, config, state) = checkpoint.first_intact(directory, load, log)
    log(f"resumed {checkpoint.describe(directory, step, saved)}, {kind.updates(state)} updates")
    lines, elapsed = metrics_until(run_dir / "metrics.jsonl", step)
    return config, Resumed(state, step, lines, elapsed, evaluation_seconds(lines))


def resumed_config(saved, overrides, run_dir: pathlib.Path, kind: RunKind = AZ_RUN):
    """The saved config updated by --set, its run.dir `run_dir`: a run continues where it is
    resumed, whatever run.dir it was saved with (a copied run writes into the copy)."""
    base = saved.replace(run=saved.run.replace(dir=str(run_dir)))
    config = kind.load_config(None, overrides, base=base)
    if pathlib.Path(config.run.dir).resolve() != run_dir.resolve():
        raise config_lib.ConfigError(
            f"run.dir: --resume continues {run_dir} in place, got {config.run.dir} "
            f"(copy the run directory to continue it elsewhere)")
    return config.replace(run=config.run.replace(dir=str(run_dir)))


def exit_code(start: Callable, *args) -> int:
    """`start(*args)` as a training script's exit status: 0, 2 with the config's or a
    checkpoint's error on stderr, or 130 after Ctrl-C (the run resumable)."""
    try:
        start(*args)
    except (config_lib.ConfigError, checkpoint.CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: continue with --resume", file=sys.stderr)
        return 130
    return 0


# Where a copy of the tree has no git (the copy sent to a lent GPU machine), the version that
# the sender recorded (benchmarks/gpu_session.py exports it).
CODE_VERSION_ENV = "TRICTRAC_CODE_VERSION"


def code_version() -> str:
    """`git describe` of this checkout ("-dirty": tracked files changed), else
    $TRICTRAC_CODE_VERSION, else "unknown"."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, cwd=pathlib.Path(__file__).resolve().parent)
        described = done.stdout.strip()
    except OSError:
        described = ""
    return described or os.environ.get(CODE_VERSION_ENV) or "unknown"


# --- the run's directory ----------------------------------------------------------------

def metrics_until(path: pathlib.Path, iteration: int) -> tuple[list[str], float]:
    """The lines of metrics.jsonl up to `iteration`, and their latest elapsed_s. A line
    that does not parse is dropped: only a kill while writing it makes one, after the
    last checkpoint."""
    lines, elapsed = [], 0.0
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record["iteration"] <= iteration:
            lines.append(line)
            elapsed = max(elapsed, record["elapsed_s"])
    return lines, elapsed


def evaluation_seconds(lines: list[str]) -> float:
    """The seconds spent evaluating in these lines of metrics.jsonl (their eval_s)."""
    return sum(json.loads(line).get("eval_s", 0.0) for line in lines)


def load_records(run_dir: pathlib.Path) -> list[dict]:
    """metrics.jsonl, one record per iteration: after a resume the later record wins."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no metrics (is {run_dir} a training run?)")
    by_iteration = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            by_iteration[record["iteration"]] = record
    return [by_iteration[i] for i in sorted(by_iteration)]


def write_atomically(path: pathlib.Path, lines: list[str]):
    """Replace `path` by `lines` at once: a kill leaves the old file or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines))
    os.replace(tmp, path)


def prepare_run_dir(config, resumed: Resumed, log):
    """Write the config, keep the metrics up to the resumed iteration (the later ones are
    played again) and set aside the checkpoints after it."""
    run_dir = pathlib.Path(config.run.dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config_lib.to_dict(config),
                                                        sort_keys=False))
    write_atomically(run_dir / "metrics.jsonl", resumed.metrics)
    for path, target, why in checkpoint.set_aside(run_dir / "checkpoints", resumed.iteration):
        if why:  # an earlier checkpoint orbax would stop at
            log(f"skipped {why}")
        log(f"moved {path} to {target}")


def write_record(run_dir: pathlib.Path, record: dict, writer):
    """Append `record` to metrics.jsonl, and to TensorBoard's events when `writer`."""
    with open(run_dir / "metrics.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
    if writer is not None:
        for name, value in record.items():
            writer.add_scalar(name, value, record["iteration"])
        writer.flush()


def open_tensorboard(run_dir: pathlib.Path, iteration: int):
    """A SummaryWriter if tensorboardX or torch is installed, else None. A run resumed after
    `iteration` plays the later iterations again: `purge_step` has TensorBoard drop their
    earlier points, so each iteration shows once."""
    for module in ("tensorboardX", "torch.utils.tensorboard"):
        try:
            writer = __import__(module, fromlist=["SummaryWriter"]).SummaryWriter
            return writer(str(run_dir), purge_step=iteration + 1 if iteration else None)
        except ImportError:
            continue
    return None


def tensorboard_writer(config, iteration: int, log):
    """The run's SummaryWriter when `logging.tensorboard` asks for one and a library that
    writes events is installed; else None, saying why when one was asked for."""
    if not config.logging.tensorboard:
        return None
    writer = open_tensorboard(pathlib.Path(config.run.dir), iteration)
    if writer is None:
        log("TensorBoard: off, neither tensorboardX nor torch is installed (pip install "
            "tensorboardX to write events; --set logging.tensorboard=false to say nothing)")
    return writer


def save_snapshot(run_dir: pathlib.Path, minutes, params, config: config_lib.Config,
                  record: dict):
    """The network at a wall-clock mark, as RUN_DIR/snapshots/<minutes>min.msgpack."""
    path = run_dir / "snapshots" / f"{minutes:g}min.msgpack"
    if jax.process_index() == 0:
        champion.save(jax.device_get(params), config,
                      {"minutes": minutes, "iteration": record["iteration"],
                       "elapsed_s": record["elapsed_s"], "run_dir": str(run_dir)}, path)
    return path


def best_checkpoint(run_dir: pathlib.Path) -> int | None:
    """The iteration of the run's best intact checkpoint (as train/eval.py loads it)."""
    try:
        step, _ = checkpoint.first_intact(run_dir / "checkpoints", lambda s: None,
                                          lambda line: None, "best")
    except checkpoint.CheckpointError:
        return None
    return step


# --- evaluation -----------------------------------------------------------------------------

def win_rates(matches: dict, params, key) -> dict:
    """Win rates with 95% Wilson intervals against each opponent, as metrics. `matches`:
    opponent -> a `league.matches.Match`, `(params, key) -> MatchResult`."""
    record = {}
    for i, (opp, match) in enumerate(matches.items()):
        result = match(params, jax.random.fold_in(key, i))
        lo, hi = result.interval()
        record.update({f"vs_{opp}": result.win_rate, f"vs_{opp}_lo": lo, f"vs_{opp}_hi": hi,
                       f"vs_{opp}_games": result.games})
    return record


def evaluation_fits(spent_s: float, elapsed_s: float, expected_s: float, share: float) -> bool:
    """Whether an evaluation expected to take `expected_s` seconds keeps the run's evaluating
    (`spent_s` seconds so far) within `share` of its wall clock (`elapsed_s` so far, plus
    the evaluation's)."""
    return spent_s + expected_s <= share * (elapsed_s + expected_s)


# --- the AlphaZero loop ---------------------------------------------------------------------

def warm_start(config: config_lib.Config, network: tuple, log) -> T.TrainState:
    """A new run's state with `network`, (params, config) of the network `run.init_from`
    names (`league.runs.init_network`), a fresh optimiser and the run's own seed. The
    network must have the config's width, and its number of blocks or fewer: a deeper
    config starts its extra blocks as the identity, so the run starts from what the network
    plays."""
    spec, (params, source) = config.run.init_from, network
    have, want = source.network, config.network
    if have.width != want.width:
        raise config_lib.ConfigError(
            f"network.width: {spec} has {have.width}, the config {want.width}; set "
            f"network.width={have.width}")
    if have.blocks > want.blocks:
        raise config_lib.ConfigError(
            f"network.blocks: {spec} has {have.blocks}, the config {want.blocks}; set "
            f"network.blocks={have.blocks} or more")
    state = T.init_state(config, jax.random.PRNGKey(config.run.seed))
    extra = want.blocks - have.blocks
    log(f"warm start from {spec}" + (f" ({have.blocks} blocks, {extra} more as the "
                                      f"identity)" if extra else ""))
    return T.warm_state(config, state, params)


def progress_legend(config: config_lib.Config) -> str:
    """What the progress line's columns are, said once before the first."""
    opponents = config.evaluation.opponents
    return ("columns: it = iteration/iterations | wall clock since the start, compilation "
            "included | games finished and self-play decisions (moves) a second, the "
            "updates' time included | ready = decisions in the replay buffer whose game has "
            f"ended, so with a value target (the updates start at replay.min_size = "
            f"{config.replay.min_size:,}) | loss (pi = policy, v = value) | eval = share of "
            f"the wall clock spent evaluating so far (at most evaluation.max_share = "
            f"{config.evaluation.max_share:.0%})"
            + (f" | vs {opponents[0]} = win rate [95% interval] in "
               f"{config.evaluation.games} games, both seats" if opponents else ""))


def progress_line(record: dict, iterations: int, opponents, eval_share: float) -> str:
    parts = [f"it {record['iteration']:>4}/{iterations}",
             time.strftime("%H:%M:%S", time.gmtime(record["elapsed_s"])),
             f"{record['games_per_s']:6.1f} games/s {record['decisions_per_s']:7.0f} moves/s",
             f"ready {record['ready']:>7}"]
    if "loss" in record:
        parts.append(f"loss {record['loss']:.3f} (pi {record['policy_loss']:.3f} "
                     f"v {record['value_loss']:.3f})")
    parts.append(f"eval {eval_share:4.0%}")
    for opp in opponents:
        if f"vs_{opp}" in record:
            parts.append(f"vs {opp} {record[f'vs_{opp}']:.3f} "
                         f"[{record[f'vs_{opp}_lo']:.2f},{record[f'vs_{opp}_hi']:.2f}]")
    return " | ".join(parts)


# The run's device functions (new games, then each iteration's two), compiled once per
# `T.device_config(config)` (static); the games and the buffer are updated in place.
@functools.partial(jax.jit, static_argnums=0)
def start_games(config: config_lib.Config, key):
    """`T.start_games`, compiled."""
    return T.start_games(config, key)


@functools.partial(jax.jit, static_argnums=0, donate_argnums=(2, 3))
def selfplay_step(config: config_lib.Config, params, games, buffer, key):
    """`T.selfplay_step`, compiled: the games and the buffer updated in place."""
    return T.selfplay_step(config, params, games, buffer, key)


@functools.partial(jax.jit, static_argnums=0, donate_argnums=(1,))
def train_step(config: config_lib.Config, state, buffer, key):
    """`T.train_step`, compiled: the state updated in place."""
    return T.train_step(config, state, buffer, key)


def iterate(config: config_lib.Config, state, games, buffer):
    """Self-play, then training once enough targets are known. Returns (state, games,
    buffer, metrics)."""
    t0 = time.time()
    config = T.device_config(config)
    key, k_play, k_train = jax.random.split(state.key, 3)
    state = state.replace(key=key)
    games, buffer, stats = selfplay_step(config, state.params, games, buffer,
                                         T.replicate(k_play))
    record = {k: v.item() for k, v in jax.device_get(stats).items()}
    if record["ready"] >= config.replay.min_size:
        state, metrics = train_step(config, state, buffer, T.replicate(k_train))
        record.update({k: float(v) for k, v in jax.device_get(metrics).items()})
    dt = time.time() - t0
    record.update(updates=int(state.step), iteration_s=dt,
                  decisions_per_s=record["decisions"] / dt, games_per_s=record["games"] / dt)
    return state, games, buffer, record


# Seconds that compiling a run's programs (self-play, the updates and one evaluator) takes,
# as the first announcement says, by backend: what it took for the config named.
COMPILE_S = {"gpu": (32, "configs/base.yaml on one H100"),
             "cpu": (35, "configs/quick.yaml on a 2-core CPU")}


def compiling_note() -> str:
    known = COMPILE_S.get(jax.default_backend())
    about = f"about {known[0]} s for {known[1]}" if known else "not timed on this platform yet"
    cache = jax.config.jax_compilation_cache_dir  # devices.use_compilation_cache
    kept = f"; what an earlier run compiled is read from {cache}" if cache else ""
    return f"compiling self-play, the updates and the evaluation ({about}{kept})"


# Self-play decisions an iteration from which a config is sized for an accelerator (quick.yaml
# plays 4,096, tpu.yaml 65,536, base.yaml 131,072), and base.yaml's pace, decisions a second
# with the updates, on the 2-core CPU shared with other jobs: how long such a config would
# take there.
ACCELERATOR_DECISIONS = 32768
BASE_CPU_MOVES_PER_S = 722


def cpu_warning(config: config_lib.Config) -> str | None:
    """A warning when a config sized for a GPU starts on a CPU, with how long it would take."""
    sp = config.selfplay
    per_iteration = sp.batch_size * sp.steps_per_iteration
    if jax.default_backend() != "cpu" or per_iteration < ACCELERATOR_DECISIONS:
        return None
    minutes = config.training.iterations * per_iteration / BASE_CPU_MOVES_PER_S / 60
    duration = f"{minutes / 60:.0f} h" if minutes >= 90 else f"{minutes:.0f} min"
    return (f"warning: this config is sized for a GPU ({per_iteration:,} self-play decisions "
            f"an iteration) and runs on a CPU: its {config.training.iterations} iterations "
            f"would take about {duration} at base.yaml's pace on a busy 2-core CPU "
            f"({BASE_CPU_MOVES_PER_S:,} moves/s). configs/quick.yaml is sized for a CPU.")


def compile_programs(config: config_lib.Config, state, games, buffer, matches: dict
                     ) -> float:
    """Compile the iteration's programs and the matches before the first iteration, so
    that every iteration and evaluation is timed running. Returns the matches' seconds."""
    key, config = T.replicate(state.key), T.device_config(config)
    selfplay_step.lower(config, state.params, games, buffer, key).compile()
    train_step.lower(config, state, buffer, key).compile()
    t0 = time.time()
    for match in matches.values():
        match.compile(state.params, state.key)
    return time.time() - t0


def finished(config: config_lib.Config, resumed: Resumed) -> str | None:
    """Why a resumed run has nothing left to train, or None."""
    tc = config.training
    if resumed.iteration >= tc.iterations:
        return f"iteration {resumed.iteration} of training.iterations = {tc.iterations}"
    if 0 < 60 * tc.max_minutes <= resumed.elapsed_s:
        return (f"{resumed.elapsed_s / 60:.1f} minutes, past training.max_minutes = "
                f"{tc.max_minutes:g}")
    return None


def new_state(config: config_lib.Config, init_network: tuple | None, log) -> T.TrainState:
    """A new run's state: from `init_network` (`warm_start`) when `run.init_from` names
    one, else a fresh network."""
    if not config.run.init_from:
        return T.init_state(config, jax.random.PRNGKey(config.run.seed))
    if init_network is None:
        raise config_lib.ConfigError(f"run.init_from: {config.run.init_from} is not loaded "
                                     f"(start the run with league.runs.train_az)")
    return warm_start(config, init_network, log)


def open_run_dir(config, resumed: Resumed, log):
    """`prepare_run_dir`, then the run's TensorBoard writer (`tensorboard_writer`)."""
    prepare_run_dir(config, resumed, log)
    return tensorboard_writer(config, resumed.iteration, log)


def az_loop(config: config_lib.Config, resumed: Resumed | None = None, log=print,
          budget_s: float | None = None, on_iteration=None, *, matches: dict,
          init_network: tuple | None = None) -> dict:
    """Run the loop described by `config` (validated), from scratch or from `resumed`;
    returns the last metrics record. `matches`: the evaluation's, opponent -> a
    `league.matches.Match` (`league.runs.evaluation_matches`); `init_network`: (params,
    config) of the network `run.init_from` names, for a new run
    (`league.runs.init_network`). `budget_s`: seconds from the end of compilation within
    which the run ends, its last evaluation included (the iteration after which the next
    one and an evaluation would pass it is the last). `on_iteration(record, state)` is
    called after each iteration's record and checkpoint."""
    T.maybe_init_distributed()
    config_lib.check_devices(config, jax.device_count())
    warning = cpu_warning(config)
    if warning:
        log(warning)
    if resumed is None:
        resumed = Resumed(new_state(config, init_network, log), 0, [], 0.0)
    state, start = resumed.state, resumed.iteration
    ev, iterations = config.evaluation, config.training.iterations
    run_dir = pathlib.Path(config.run.dir)
    lead = jax.process_index() == 0  # writes the run's files; all processes save checkpoints
    writer = open_run_dir(config, resumed, log) if lead else None
    if jax.process_count() > 1:  # the others list the checkpoints after the set-aside
        multihost_utils.sync_global_devices("run directory ready")
    checkpoints = checkpoint.Checkpointer(run_dir, config.checkpoint.keep_last)

    log(compiling_note())
    t_compile = time.time()
    # elapsed_s goes on from the checkpoint's
    t_start = t_compile - resumed.elapsed_s
    key, k_games = jax.random.split(state.key)
    # self-play restarts on resume
    games, buffer = start_games(T.device_config(config), k_games)
    state = state.replace(key=key)
    pending_s = compile_programs(config, state, games, buffer, matches)
    compile_s = time.time() - t_compile
    log(f"compiled in {compile_s:.0f} s (the evaluation's: {pending_s:.0f} s)")
    log(progress_legend(config))
    deadline = None if budget_s is None else time.time() + budget_s
    # seconds evaluating, the matches' compilation included (in the first row's eval_s)
    spent = resumed.eval_s + pending_s
    expected = 0.0  # seconds the next evaluation should take: the last one's
    evaluations = 0  # by this process
    max_s = 60 * config.training.max_minutes
    marks = sorted(m for m in config.checkpoint.snapshot_minutes
                   if 60 * m > resumed.elapsed_s)
    record = {}
    try:
        for it in range(start + 1, iterations + 1):
            state, games, buffer, metrics = iterate(config, state, games, buffer)
            elapsed = time.time() - t_start
            record = {"iteration": it, **metrics}
            while marks and elapsed >= 60 * marks[0]:
                path = save_snapshot(run_dir, marks.pop(0), state.params, config,
                                     record | {"elapsed_s": elapsed})
                log(f"snapshot {path}")
            last = it == iterations or 0 < max_s <= elapsed or (
                deadline is not None
                and time.time() + metrics["iteration_s"] + expected > deadline)
            # the last iteration is evaluated anyway when nothing else was: the matches
            # are compiled, and the run gets a ranked network
            evaluated = bool(matches) and (it % ev.every == 0 or last) and (
                evaluation_fits(spent, elapsed, expected, ev.max_share)
                or (last and evaluations == 0))
            eval_s = pending_s
            if evaluated:
                evaluations += 1
                t0 = time.time()
                record.update(win_rates(matches, state.params,
                                        jax.random.fold_in(state.key, it)))
                expected = time.time() - t0
                eval_s += expected
                spent += expected
            record.update(eval_s=eval_s, elapsed_s=time.time() - t_start)
            if it == start + 1:  # this process's compilation, before its first iteration
                record["compile_s"] = compile_s
            pending_s = 0.0
            if lead:
                write_record(run_dir, record, writer)
                log(progress_line(record, iterations, ev.opponents,
                                  spent / record["elapsed_s"]))
            if it % config.checkpoint.every == 0 or evaluated or last:
                # a checkpoint not evaluated is never the best
                score = record[f"vs_{ev.opponents[0]}"] if evaluated else -1.0
                checkpoints.save(it, state, config, score)
            if on_iteration is not None:
                on_iteration(record, state)
            if last:
                break
    finally:  # a pending (asynchronous) save completes even if interrupted
        checkpoints.close()
    if lead:
        for line in summary(config, load_records(run_dir)):
            log(line)
    return record


def summary(config: config_lib.Config, records: list[dict]) -> list[str]:
    """The closing lines: the clock, the best checkpoint with its win rate, what to run next."""
    run_dir, ev = pathlib.Path(config.run.dir), config.evaluation
    lines = []
    if records:
        last = records[-1]
        spent = sum(r.get("eval_s", 0.0) for r in records)
        lines.append(f"done: iteration {last['iteration']} of {config.training.iterations}, "
                     f"{last['elapsed_s'] / 60:.1f} min of wall clock, "
                     f"{spent / max(last['elapsed_s'], 1e-9):.0%} of it evaluating")
    step = best_checkpoint(run_dir)
    if step is None:
        return lines + [f"no checkpoint in {run_dir}"]
    record = next((r for r in records if r["iteration"] == step), {})
    opp = ev.opponents[0] if ev.opponents else None
    if opp is not None and f"vs_{opp}" in record:
        rate, lo, hi, games = (record[f"vs_{opp}{part}"] for part in ("", "_lo", "_hi", "_games"))
        rank = (f"vs {opp} {rate:.3f} [{lo:.3f}, {hi:.3f}] in {games} games, both seats, "
                f"95% Wilson interval")
    else:
        rank = "not evaluated: the latest"
    how = (f" --lookahead {ev.lookahead}" if ev.lookahead else "") + \
        (" --rolls" if ev.rolls else "")
    yardstick = opp or "greedy"
    best = run_dir / "checkpoints" / str(step)
    return lines + [
        f"best checkpoint: {best} ({rank})",
        "next:",
        f"  python train/eval.py --checkpoint {run_dir} --opponent {yardstick} --games 400"
        f"{how}   # evaluate its best checkpoint",
        f"  python train/plot.py {run_dir}   # the learning curve",
        f"  python -m trictrac_jax.tools.play --opponent {run_dir}   # play against it"]
