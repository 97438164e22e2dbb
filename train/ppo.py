"""PPO training of a Trictrac player, against a fixed opponent or its own past networks.

    python train/ppo.py --config configs/ppo.yaml
    python train/ppo.py --config configs/ppo.yaml --set env.opponent=random --set run.dir=runs/ppo-random
    python train/ppo.py --resume runs/ppo          # continue a killed run
    python train/ppo.py --config configs/ppo.yaml --h100   # its H100 program, compiled here

The algorithm is `trictrac_jax.az.ppo` (`training.updates_per_call` whole updates in one
jitted call, compiled before the first). Writes RUN_DIR/config.yaml, RUN_DIR/metrics.jsonl
(one record per call: `iteration`, the PPO updates done, each a rollout of ppo.num_envs x
ppo.num_steps learner steps then its epochs, the log's "update"; `updates`, the network's
gradient steps, ppo.update_epochs x ppo.num_minibatches per PPO update, as train/az.py's;
`steps_per_s`, the call's learner steps per second, compilation excluded),
TensorBoard events when tensorboardX or torch is installed, orbax checkpoints in
RUN_DIR/checkpoints and the network at `checkpoint.snapshot_minutes` in RUN_DIR/snapshots, as
train/az.py does; the run's networks load as agents (`python train/eval.py --checkpoint
RUN_DIR`, `players.load_agent`).
"""
from __future__ import annotations

import functools
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # train/az.py's run helpers

import jax  # noqa: E402
import yaml  # noqa: E402

from az import (Resumed, evaluate, exit_code, metrics_until,  # noqa: E402
                open_tensorboard, run_parser, save_snapshot, write_atomically)
from trictrac_jax import devices  # noqa: E402
from trictrac_jax.az import checkpoint as C  # noqa: E402
from trictrac_jax.az import players  # noqa: E402
from trictrac_jax.az import ppo  # noqa: E402
from trictrac_jax.az.config import ConfigError, to_dict  # noqa: E402


def parse_args(argv=None):
    p = run_parser(__doc__.split("\n")[0], "configs/ppo.yaml", "env.opponent=random")
    p.add_argument("--h100", action="store_true",
                   help="train nothing: compile one call of the config's updates for an H100 "
                        "on this machine (no GPU needed, trictrac_jax/tools/gpu_program.py) "
                        "and print its kernels, host syncs and estimated steps/s")
    return p.parse_args(argv)


def new_config(args) -> ppo.PPOConfig:
    if args.config is None:
        raise ConfigError("--config: required unless --resume is given")
    config = ppo.load_config(args.config, args.set)
    if (pathlib.Path(config.run.dir) / "checkpoints").is_dir():
        raise ConfigError(f"run.dir: {config.run.dir} already holds checkpoints; use "
                          f"--resume, or set another run.dir")
    return config


def resume(args, log) -> tuple[ppo.PPOConfig, Resumed]:
    """The config and state of the run to resume, from its newest intact checkpoint."""
    run_dir = pathlib.Path(args.resume or ppo.load_config(args.config, args.set).run.dir)
    directory = run_dir / "checkpoints"
    if not directory.is_dir():
        raise C.CheckpointError(f"{run_dir}: not a run directory (no checkpoints/ in it)")

    def load(step):
        saved = ppo.saved_config(directory, step)
        # a run continues where it is resumed, whatever run.dir it was saved with
        config = ppo.load_config(None, args.set, base=saved.replace(
            run=saved.run.replace(dir=str(run_dir))))
        return saved, config, ppo.restore_state(directory, step, config)
    step, (saved, config, state) = C.first_intact(directory, load, log)
    log(f"resumed {C.describe(directory, step, saved)}, {int(state.updates)} updates")
    lines, elapsed = metrics_until(run_dir / "metrics.jsonl", step)
    return config, Resumed(state, step, lines, elapsed)


@functools.lru_cache(maxsize=2)
def env_for(config: ppo.PPOConfig):
    """The run's environment, with the opponent of `env.opponent`; one per config in the
    process, so that a resumed run reuses its compiled functions (the env is static)."""
    if config.env.opponent == ppo.SELF:
        return ppo.make_env(config)
    try:
        return ppo.make_env(config, players.load_agent(config.env.opponent))
    except (OSError, ValueError, C.CheckpointError) as e:
        raise ConfigError(f"env.opponent: {e}") from None


# The run's device functions, compiled once per environment and config (static).
new_state = jax.jit(ppo.new_state, static_argnums=0)
start_actors = jax.jit(ppo.start, static_argnums=(0, 1))
run_updates = jax.jit(ppo.updates, static_argnums=(0, 1), donate_argnums=(2, 3))


def progress_line(record: dict, updates: int, opponents) -> str:
    parts = [f"update {record['iteration']:>5}/{updates} ({record['updates']} gradient steps)",
             time.strftime("%H:%M:%S", time.gmtime(record["elapsed_s"])),
             f"{record['steps_per_s']:7.0f} steps/s",
             f"loss {record['loss']:.3f} (pi {record['policy_loss']:.3f} "
             f"v {record['value_loss']:.3f} H {record['entropy']:.2f})"]
    if record["episodes"]:
        parts.append(f"won {record['win_rate']:.2f} of {record['episodes']} games, return "
                     f"{record['mean_return']:+.3f}")
    parts += [f"vs {o} {record[f'vs_{o}']:.3f} [{record[f'vs_{o}_lo']:.2f},"
              f"{record[f'vs_{o}_hi']:.2f}]" for o in opponents if f"vs_{o}" in record]
    return " | ".join(parts)


def call_record(metrics: dict, steps: int, seconds: float) -> dict:
    """The metrics of one call, with episode means and its speed."""
    record = {k: v.item() for k, v in metrics.items()}
    episodes = max(record["episodes"], 1)
    record.update(win_rate=record.pop("wins") / episodes,
                  mean_return=record.pop("return_sum") / episodes,
                  mean_length=record.pop("length_sum") / episodes,
                  steps=steps, call_s=seconds, steps_per_s=steps / seconds)
    return record


def train(config: ppo.PPOConfig, resumed: Resumed | None = None, log=print) -> dict:
    """Run the loop `config` describes, from scratch or from `resumed`; returns the last
    metrics record."""
    env = env_for(config)
    if resumed is None:
        resumed = Resumed(new_state(config, jax.random.PRNGKey(config.run.seed)), 0, [], 0.0)
    state, start = resumed.state, resumed.iteration
    agent = ppo.agent_config(config)
    ev, t = config.evaluation, config.training
    play = players.Play(lookahead=ev.lookahead, simulations=ev.num_simulations)
    evaluators = {opp: players.evaluator(agent, opp, ev.games, play) for opp in ev.opponents}
    # the games restart on resume
    actors = start_actors(env, config, state, jax.random.fold_in(state.train.key, start))

    run_dir = pathlib.Path(config.run.dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
    write_atomically(run_dir / "metrics.jsonl", resumed.metrics)
    for path, target, why in C.set_aside(run_dir / "checkpoints", start):
        if why:
            log(f"skipped {why}")
        log(f"moved {path} to {target}")
    writer = open_tensorboard(run_dir, start) if config.logging.tensorboard else None
    checkpoints = C.Checkpointer(run_dir, config.checkpoint.keep_last)
    score, record, t_start = -1.0, {}, time.time() - resumed.elapsed_s
    marks = sorted(m for m in config.checkpoint.snapshot_minutes if 60 * m > resumed.elapsed_s)
    steps = t.updates_per_call * config.ppo.num_steps * config.ppo.num_envs
    t0 = time.time()  # compiled ahead, so that no call's steps/s counts the compilation
    call = run_updates.lower(env, config, state, actors).compile()
    log(f"compiled a call of {t.updates_per_call} updates in {time.time() - t0:.0f} s")
    try:
        for it in range(start + t.updates_per_call, t.updates + 1, t.updates_per_call):
            t0 = time.time()
            state, actors, metrics = call(state, actors)
            metrics = jax.device_get(metrics)  # waits for the call
            record = {"iteration": it, **call_record(metrics, steps, time.time() - t0),
                      "updates": int(state.train.step), "elapsed_s": time.time() - t_start}
            while marks and record["elapsed_s"] >= 60 * marks[0]:
                path = save_snapshot(run_dir, marks.pop(0), state.train.params, agent, record)
                log(f"snapshot {path}")
            last = it == t.updates or 0 < 60 * t.max_minutes <= record["elapsed_s"]
            if evaluators and (it % ev.every == 0 or last):
                record.update(evaluate(evaluators, state.train.params,
                                       jax.random.fold_in(state.train.key, it)))
                score = record[f"vs_{ev.opponents[0]}"]
            with open(run_dir / "metrics.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
            if writer is not None:
                for name, value in record.items():
                    writer.add_scalar(name, value, it)
                writer.flush()
            log(progress_line(record, t.updates, ev.opponents))
            if it % config.checkpoint.every == 0 or last:
                checkpoints.save(it, state, config, score)
            if last:
                break
    finally:  # a pending (asynchronous) save completes even if interrupted
        checkpoints.close()
    return record


def h100_program(config: ppo.PPOConfig) -> dict:
    """One call of `config`'s jitted updates (`ppo.updates`) compiled for an H100 on this
    CPU, as read by `gpu_program`: kernels, host syncs (a lower bound), bytes, device memory
    and the H100 estimate of its time (`gpu_program.H100_MODEL`; no GPU runs it)."""
    os.environ["TRICTRAC_LANES"] = "gpu"  # the engine's accelerator rules, read when tracing
    from trictrac_jax.tools import gpu_program as G
    jax.config.update("jax_platforms", "cpu")  # compile-only devices need no GPU backend
    env = env_for(config)
    state = jax.eval_shape(functools.partial(ppo.new_state, config), jax.random.PRNGKey(0))
    actors = jax.eval_shape(functools.partial(ppo.start, env, config), state,
                            jax.random.PRNGKey(1))
    program = G.read(G.compile_for(G.H100, functools.partial(ppo.updates, env, config), state,
                                   actors, donate_argnums=(0, 1)))
    seconds = G.H100_MODEL.seconds(program)
    steps = config.training.updates_per_call * config.ppo.num_steps * config.ppo.num_envs
    return {"kernels": program.kernels, "host_syncs": program.host_syncs,
            "bytes": program.bytes, "memory_gb": program.memory_bytes / 1e9,
            "estimated_s": seconds, "steps": steps, "estimated_steps_per_s": steps / seconds}


def print_h100_program(config: ppo.PPOConfig, log) -> None:
    p = h100_program(config)
    log(f"one call of {config.training.updates_per_call} updates of {p['steps']:,} "
        f"steps ({config.ppo.num_envs} environments x {config.ppo.num_steps}): "
        f"{p['kernels']:,.0f} kernels, {p['host_syncs']:,.0f} host syncs (at least), "
        f"{p['bytes'] / 1e9:.2f} GB read and written (estimate), "
        f"{p['memory_gb']:.2f} GB device memory; H100 estimate (compiled program, "
        f"model in docs/gpu-program.md): {p['estimated_s']:.3f} s, "
        f"{p['estimated_steps_per_s']:,.0f} steps/s")


def main(argv=None):
    args = parse_args(argv)
    log = lambda line: print(line, flush=True)

    def run():
        if args.h100:
            return print_h100_program(ppo.load_config(args.config, args.set), log)
        log(f"running on {devices.describe()}")
        config, resumed = (new_config(args), None) if args.resume is None else \
            resume(args, log)
        train(config, resumed, log)
    return exit_code(run)


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
