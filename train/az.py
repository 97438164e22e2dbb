"""AlphaZero-style training of a Trictrac player by self-play with tree search.

    python train/az.py --config configs/quick.yaml
    python train/az.py --config configs/base.yaml --set search.num_simulations=64
    python train/az.py --resume runs/quick          # continue a killed run

Writes RUN_DIR/config.yaml, RUN_DIR/metrics.jsonl (one record per iteration), TensorBoard
events when tensorboardX or torch is installed, and orbax checkpoints in RUN_DIR/checkpoints.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout

import jax  # noqa: E402
import yaml  # noqa: E402

from trictrac_jax import checkpoint as C  # noqa: E402
from trictrac_jax import config as config_lib  # noqa: E402
from trictrac_jax import players  # noqa: E402
from trictrac_jax import training as T  # noqa: E402
from trictrac_jax.evaluation import summarise  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", help="YAML config (keys as in configs/base.yaml)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set search.num_simulations=64")
    p.add_argument("--resume", nargs="?", const="", metavar="RUN_DIR",
                   help="continue from the last checkpoint of RUN_DIR (default: run.dir); "
                        "the run's saved config is used, updated by --set")
    return p.parse_args(argv)


def resolve_config(args) -> tuple[dict, tuple | None]:
    """(config, (checkpoints directory, iteration) to resume from, or None)."""
    if args.resume is None:
        if args.config is None:
            raise config_lib.ConfigError("--config: required unless --resume is given")
        config = config_lib.load_config(args.config, args.set)
        if (pathlib.Path(config["run"]["dir"]) / "checkpoints").is_dir():
            raise config_lib.ConfigError(
                f"run.dir: {config['run']['dir']} already holds checkpoints; "
                f"use --resume, or set another run.dir")
        return config, None
    run_dir = args.resume or config_lib.load_config(args.config, args.set)["run"]["dir"]
    directory, step = C.resolve(run_dir, "latest")
    saved = T.saved_config(directory, step)
    return config_lib.load_config(None, args.set, base=saved), (directory, step)


def open_tensorboard(run_dir: pathlib.Path):
    """A SummaryWriter if tensorboardX or torch is installed, else None."""
    for module in ("tensorboardX", "torch.utils.tensorboard"):
        try:
            return __import__(module, fromlist=["SummaryWriter"]).SummaryWriter(str(run_dir))
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


def iterate(trainer: T.Trainer, state, actors, buffer, min_size: int):
    """Self-play, then training once enough targets are known. Returns (state, actors,
    buffer, metrics)."""
    t0 = time.time()
    key, k_play, k_train = jax.random.split(state.key, 3)
    state = state.replace(key=key)
    actors, buffer, stats = trainer.selfplay(state.params, actors, buffer, k_play)
    record = {k: v.item() for k, v in jax.device_get(stats).items()}
    if record["ready"] >= min_size:
        state, metrics = trainer.train(state, buffer, k_train)
        record.update({k: float(v) for k, v in jax.device_get(metrics).items()})
    dt = time.time() - t0
    record.update(updates=int(state.step), iteration_s=dt,
                  decisions_per_s=record["decisions"] / dt, games_per_s=record["games"] / dt)
    return state, actors, buffer, record


def train(config: dict, resume_from=None, log=print):
    """Run the loop described by `config` (validated); returns the last metrics record."""
    T.maybe_init_distributed()
    config_lib.check_devices(config, jax.device_count())
    run_dir = pathlib.Path(config["run"]["dir"])
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    trainer = T.trainer_for(config)
    if resume_from is None:
        state, start = trainer.init_state(jax.random.PRNGKey(config["run"]["seed"])), 0
    else:
        state, start = C.restore_state(*resume_from, trainer.abstract_state()), resume_from[1]
        log(f"resumed {resume_from[0] / str(start)} (iteration {start}, "
            f"{int(state.step)} updates)")
    ev, iterations = config["evaluation"], config["training"]["iterations"]
    evaluators = {opp: players.evaluator(trainer, opp, ev["games"], ev["num_simulations"],
                                         ev["lookahead"])
                  for opp in ev["opponents"]}
    writer = open_tensorboard(run_dir) if config["logging"]["tensorboard"] else None
    key, k_games = jax.random.split(state.key)
    actors, buffer = trainer.init_games(k_games)  # self-play restarts on resume
    state = state.replace(key=key)

    checkpoints = C.Checkpointer(run_dir, config["checkpoint"]["keep_last"])
    score, record, t_start = -1.0, {}, time.time()
    try:
        for it in range(start + 1, iterations + 1):
            state, actors, buffer, metrics = iterate(trainer, state, actors, buffer,
                                                     config["replay"]["min_size"])
            record = {"iteration": it, **metrics, "elapsed_s": time.time() - t_start}
            if evaluators and (it % ev["every"] == 0 or it == iterations):
                record.update(evaluate(evaluators, state.params,
                                       jax.random.fold_in(state.key, it)))
                score = record[f"vs_{ev['opponents'][0]}"]
            if jax.process_index() == 0:
                with open(run_dir / "metrics.jsonl", "a") as f:
                    f.write(json.dumps(record) + "\n")
                if writer is not None:
                    for name, value in record.items():
                        writer.add_scalar(name, value, it)
                    writer.flush()
                log(progress_line(record, iterations, ev["opponents"]))
            if it % config["checkpoint"]["every"] == 0 or it == iterations:
                checkpoints.save(it, state, config, score)
    finally:  # a pending (asynchronous) save completes even if interrupted
        checkpoints.close()
    return record


def main(argv=None):
    args = parse_args(argv)
    try:
        config, resume_from = resolve_config(args)
        train(config, resume_from, log=lambda line: print(line, flush=True))
    except (config_lib.ConfigError, C.CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: continue with --resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
