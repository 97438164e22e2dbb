"""AlphaZero-style training of a Trictrac player by self-play with tree search.

    python train/az.py --config configs/quick.yaml
    python train/az.py --config configs/base.yaml --set search.num_simulations=64
    python train/az.py --resume runs/quick          # continue a killed run
    python train/az.py --config configs/quick.yaml --init-from champion   # warm start

Writes RUN_DIR/config.yaml, RUN_DIR/metrics.jsonl (one record per iteration), TensorBoard
events when tensorboardX or torch is installed, and orbax checkpoints in RUN_DIR/checkpoints.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time
from typing import NamedTuple

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout

import jax  # noqa: E402
import yaml  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

from trictrac_jax import devices  # noqa: E402
from trictrac_jax.az import champion  # noqa: E402
from trictrac_jax.az import checkpoint as C  # noqa: E402
from trictrac_jax.az import config as config_lib  # noqa: E402
from trictrac_jax.az import players  # noqa: E402
from trictrac_jax.az import training as T  # noqa: E402
from trictrac_jax.az.evaluation import summarise  # noqa: E402


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


def parse_args(argv=None):
    p = run_parser(__doc__.split("\n")[0], "configs/base.yaml", "search.num_simulations=64")
    p.add_argument("--init-from", metavar="NETWORK",
                   help="start a new run from this network with a fresh optimiser: champion, "
                        "a network file (*.msgpack, the champion's format), a run directory "
                        "(its best checkpoint) or a checkpoint (sets run.init_from)")
    return p.parse_args(argv)


class Resumed(NamedTuple):
    """What a resumed run continues from."""
    state: T.TrainState
    iteration: int  # of the checkpoint
    metrics: list[str]  # the lines of metrics.jsonl up to `iteration`
    elapsed_s: float  # training time up to `iteration`, from those lines


def new_config(args) -> config_lib.Config:
    if args.config is None:
        raise config_lib.ConfigError("--config: required unless --resume is given")
    overrides = list(args.set) + ([f"run.init_from={args.init_from}"] if args.init_from else [])
    config = config_lib.load_config(args.config, overrides)
    if (pathlib.Path(config.run.dir) / "checkpoints").is_dir():
        raise config_lib.ConfigError(
            f"run.dir: {config.run.dir} already holds checkpoints; "
            f"use --resume, or set another run.dir")
    return config


def warm_start(config: config_lib.Config, log) -> T.TrainState:
    """A new run's state with the network of `run.init_from`, a fresh optimiser and the
    run's own seed. The network must have the config's width, and its number of blocks or
    fewer: a deeper config starts its extra blocks as the identity, so the run starts from
    what the network plays."""
    spec = config.run.init_from
    try:
        params, source = players.load_network(spec)
    except (OSError, ValueError) as e:  # a network file that is missing or not one
        raise config_lib.ConfigError(f"run.init_from: {e}") from None
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


def resume(args, log) -> tuple[config_lib.Config, Resumed]:
    """The config and state of the run to resume, from its newest intact checkpoint. Writes
    nothing: a resume that fails leaves the run as it was."""
    run_dir = pathlib.Path(args.resume or
                           config_lib.load_config(args.config, args.set).run.dir)
    directory = run_dir / "checkpoints"
    if not directory.is_dir():
        raise C.CheckpointError(f"{run_dir}: not a run directory (no checkpoints/ in it)")

    def load(step):
        saved = T.saved_config(directory, step)
        config = resumed_config(saved, args.set, run_dir)
        config_lib.check_devices(config, jax.device_count())
        return saved, config, T.restore_state(directory, step, config)
    step, (saved, config, state) = C.first_intact(directory, load, log)
    log(f"resumed {C.describe(directory, step, saved)}, {int(state.step)} updates")
    lines, elapsed = metrics_until(run_dir / "metrics.jsonl", step)
    return config, Resumed(state, step, lines, elapsed)


def resumed_config(saved: config_lib.Config, overrides, run_dir: pathlib.Path
                   ) -> config_lib.Config:
    """The saved config updated by --set, its run.dir `run_dir`: a run continues where it is
    resumed, whatever run.dir it was saved with (a copied run writes into the copy)."""
    base = saved.replace(run=saved.run.replace(dir=str(run_dir)))
    config = config_lib.load_config(None, overrides, base=base)
    if pathlib.Path(config.run.dir).resolve() != run_dir.resolve():
        raise config_lib.ConfigError(
            f"run.dir: --resume continues {run_dir} in place, got {config.run.dir} "
            f"(copy the run directory to continue it elsewhere)")
    return config.replace(run=config.run.replace(dir=str(run_dir)))


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


def write_atomically(path: pathlib.Path, lines: list[str]):
    """Replace `path` by `lines` at once: a kill leaves the old file or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines))
    os.replace(tmp, path)


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


def progress_line(record: dict, iterations: int, opponents) -> str:
    parts = [f"it {record['iteration']:>4}/{iterations}",
             time.strftime("%H:%M:%S", time.gmtime(record["elapsed_s"])),
             f"{record['games_per_s']:6.1f} games/s {record['decisions_per_s']:7.0f} moves/s",
             f"ready {record['ready']:>7}"]
    if "loss" in record:
        parts.append(f"loss {record['loss']:.3f} (pi {record['policy_loss']:.3f} "
                     f"v {record['value_loss']:.3f})")
    for opp in opponents:
        if f"vs_{opp}" in record:
            parts.append(f"vs {opp} {record[f'vs_{opp}']:.3f} "
                         f"[{record[f'vs_{opp}_lo']:.2f},{record[f'vs_{opp}_hi']:.2f}]")
    return " | ".join(parts)


def evaluate(evaluators: dict, params, key) -> dict:
    """Win rates with 95% Wilson intervals against each opponent, as metrics."""
    record = {}
    for i, (opp, match) in enumerate(evaluators.items()):
        result = summarise(match(params, jax.random.fold_in(key, i)))
        lo, hi = result.interval()
        record.update({f"vs_{opp}": result.win_rate, f"vs_{opp}_lo": lo, f"vs_{opp}_hi": hi,
                       f"vs_{opp}_games": result.games})
    return record


# The iteration's two device functions, compiled once per config (static); the games and the
# buffer are updated in place.
selfplay_step = jax.jit(T.selfplay_step, static_argnums=0, donate_argnums=(2, 3))
train_step = jax.jit(T.train_step, static_argnums=0, donate_argnums=(1,))


def iterate(config: config_lib.Config, state, actors, buffer):
    """Self-play, then training once enough targets are known. Returns (state, actors,
    buffer, metrics)."""
    t0 = time.time()
    key, k_play, k_train = jax.random.split(state.key, 3)
    state = state.replace(key=key)
    actors, buffer, stats = selfplay_step(config, state.params, actors, buffer,
                                          T.replicate(k_play))
    record = {k: v.item() for k, v in jax.device_get(stats).items()}
    if record["ready"] >= config.replay.min_size:
        state, metrics = train_step(config, state, buffer, T.replicate(k_train))
        record.update({k: float(v) for k, v in jax.device_get(metrics).items()})
    dt = time.time() - t0
    record.update(updates=int(state.step), iteration_s=dt,
                  decisions_per_s=record["decisions"] / dt, games_per_s=record["games"] / dt)
    return state, actors, buffer, record


def save_snapshot(run_dir: pathlib.Path, minutes, params, config: config_lib.Config,
                  record: dict):
    """The network at a wall-clock mark, as RUN_DIR/snapshots/<minutes>min.msgpack."""
    path = run_dir / "snapshots" / f"{minutes:g}min.msgpack"
    if jax.process_index() == 0:
        champion.save(jax.device_get(params), config,
                      {"minutes": minutes, "iteration": record["iteration"],
                       "elapsed_s": record["elapsed_s"], "run_dir": str(run_dir)}, path)
    return path


def train(config: config_lib.Config, resumed: Resumed | None = None, log=print):
    """Run the loop described by `config` (validated), from scratch or from `resumed`;
    returns the last metrics record."""
    T.maybe_init_distributed()
    config_lib.check_devices(config, jax.device_count())
    if resumed is None:
        state = warm_start(config, log) if config.run.init_from else \
            T.init_state(config, jax.random.PRNGKey(config.run.seed))
        resumed = Resumed(state, 0, [], 0.0)
    state, start = resumed.state, resumed.iteration
    ev, iterations = config.evaluation, config.training.iterations
    play = players.Play(lookahead=ev.lookahead, simulations=ev.num_simulations)
    evaluators = {opp: players.evaluator(config, opp, ev.games, play)
                  for opp in ev.opponents}
    key, k_games = jax.random.split(state.key)
    # self-play restarts on resume
    actors, buffer = jax.jit(T.start_games, static_argnums=0)(config, k_games)
    state = state.replace(key=key)

    run_dir = pathlib.Path(config.run.dir)
    lead = jax.process_index() == 0  # writes the run's files; all processes save checkpoints
    if lead:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(config_lib.to_dict(config),
                                                            sort_keys=False))
        # the iterations after the checkpoint are played again
        write_atomically(run_dir / "metrics.jsonl", resumed.metrics)
        for path, target, why in C.set_aside(run_dir / "checkpoints", start):
            if why:  # an earlier checkpoint orbax would stop at
                log(f"skipped {why}")
            log(f"moved {path} to {target}")
    if jax.process_count() > 1:  # the others list the checkpoints after the set-aside
        multihost_utils.sync_global_devices("run directory ready")
    writer = open_tensorboard(run_dir, start) \
        if lead and config.logging.tensorboard else None
    checkpoints = C.Checkpointer(run_dir, config.checkpoint.keep_last)
    # elapsed_s goes on from the checkpoint's
    score, record, t_start = -1.0, {}, time.time() - resumed.elapsed_s
    max_s = 60 * config.training.max_minutes
    marks = sorted(m for m in config.checkpoint.snapshot_minutes
                   if 60 * m > resumed.elapsed_s)
    try:
        for it in range(start + 1, iterations + 1):
            state, actors, buffer, metrics = iterate(config, state, actors, buffer)
            record = {"iteration": it, **metrics, "elapsed_s": time.time() - t_start}
            while marks and record["elapsed_s"] >= 60 * marks[0]:
                path = save_snapshot(run_dir, marks.pop(0), state.params, config, record)
                log(f"snapshot {path}")
            last = it == iterations or 0 < max_s <= record["elapsed_s"]
            if evaluators and (it % ev.every == 0 or last):
                record.update(evaluate(evaluators, state.params,
                                       jax.random.fold_in(state.key, it)))
                score = record[f"vs_{ev.opponents[0]}"]
            if lead:
                with open(run_dir / "metrics.jsonl", "a") as f:
                    f.write(json.dumps(record) + "\n")
                if writer is not None:
                    for name, value in record.items():
                        writer.add_scalar(name, value, it)
                    writer.flush()
                log(progress_line(record, iterations, ev.opponents))
            if it % config.checkpoint.every == 0 or last:
                checkpoints.save(it, state, config, score)
            if last:
                break
    finally:  # a pending (asynchronous) save completes even if interrupted
        checkpoints.close()
    return record


def main(argv=None):
    args = parse_args(argv)
    if args.init_from and args.resume is not None:
        print("error: --init-from starts a new run; --resume continues one", file=sys.stderr)
        return 2
    def run():
        T.maybe_init_distributed()  # a resume restores onto all the devices
        # one process reports; errors come from each
        log = (lambda line: print(line, flush=True)) if jax.process_index() == 0 else \
            (lambda line: None)
        log(f"running on {devices.describe()}")
        config, resumed = (new_config(args), None) if args.resume is None else \
            resume(args, log)
        train(config, resumed, log)
    return exit_code(run)


def exit_code(run) -> int:
    """`run()` as a training script's exit status: 0, 2 with the config's or a checkpoint's
    error on stderr, or 130 after Ctrl-C (the run resumable)."""
    try:
        run()
    except (config_lib.ConfigError, C.CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: continue with --resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
