"""PPO training of a Trictrac player, against a fixed opponent or its own past networks.

    python train/ppo.py --config configs/ppo.yaml
    python train/ppo.py --config configs/ppo.yaml --set env.opponent=random --set run.dir=runs/ppo-random
    python train/ppo.py --resume runs/ppo          # continue a killed run
    python train/ppo.py --config configs/ppo.yaml --h100   # its H100 program, compiled here

The algorithm is `trictrac_jax.rl.ppo` (`training.updates_per_call` whole updates in one
jitted call, compiled before the first). Writes RUN_DIR/config.yaml, RUN_DIR/metrics.jsonl
(one record per call: `iteration`, the PPO updates done, each a rollout of ppo.num_envs x
ppo.num_steps learner steps then its epochs, the log's "update"; `updates`, the network's
gradient steps, ppo.update_epochs x ppo.num_minibatches per PPO update, as train/az.py's;
`steps_per_s`, the call's learner steps per second, compilation excluded),
TensorBoard events when tensorboardX or torch is installed, orbax checkpoints in
RUN_DIR/checkpoints and the network at `checkpoint.snapshot_minutes` in RUN_DIR/snapshots, as
train/az.py does; the run's networks load as agents (`python train/eval.py --checkpoint
RUN_DIR`, `network_agents.load_agent`).
"""
from __future__ import annotations

import functools
import os
import pathlib
import sys
import time

import jax

from trictrac_jax import devices
from trictrac_jax.az import checkpoint as C
from trictrac_jax.az import network_agents
from trictrac_jax.az import run
from trictrac_jax.az.config import ConfigError
from trictrac_jax.rl import ppo

# PPO's configs and checkpoints, for the run's shared parts (`run.new_config`, `run.resume`)
PPO_RUN = run.RunKind(ppo.load_config, ppo.saved_config, ppo.restore_state,
                      lambda state: int(state.updates))


def parse_args(argv=None):
    p = run.run_parser(__doc__.split("\n")[0], "configs/ppo.yaml", "env.opponent=random")
    p.add_argument("--h100", action="store_true",
                   help="train nothing: compile one call of the config's updates for an H100 "
                        "on this machine (no GPU needed, trictrac_jax/tools/gpu_program.py) "
                        "and print its kernels, host syncs and estimated steps/s")
    return p.parse_args(argv)


@functools.lru_cache(maxsize=2)
def env_for(config: ppo.PPOConfig):
    """The run's environment, with the opponent of `env.opponent`; one per config in the
    process, so that a resumed run reuses its compiled functions (the env is static)."""
    if config.env.opponent == ppo.SELF:
        return ppo.make_env(config)
    try:
        return ppo.make_env(config, network_agents.load_agent(config.env.opponent))
    except (OSError, ValueError, C.CheckpointError) as e:
        raise ConfigError(f"env.opponent: {e}") from None


# The run's device functions, compiled once per environment and config (static).
new_state_jit = jax.jit(ppo.new_state, static_argnums=0)
start_jit = jax.jit(ppo.start, static_argnums=(0, 1))
updates_jit = jax.jit(ppo.updates, static_argnums=(0, 1), donate_argnums=(2, 3))


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


def train(config: ppo.PPOConfig, resumed: run.Resumed | None = None, log=print) -> dict:
    """Run the loop `config` describes, from scratch or from `resumed`; returns the last
    metrics record."""
    env = env_for(config)
    if resumed is None:
        resumed = run.Resumed(new_state_jit(config, jax.random.PRNGKey(config.run.seed)), 0, [],
                              0.0)
    state, start = resumed.state, resumed.iteration
    agent = ppo.agent_config(config)
    ev, t = config.evaluation, config.training
    play = network_agents.Play(lookahead=ev.lookahead, simulations=ev.num_simulations)
    evaluators = {opp: network_agents.evaluator(agent, opp, ev.games, play)
                  for opp in ev.opponents}
    # the games restart on resume
    actors = start_jit(env, config, state, jax.random.fold_in(state.train.key, start))

    run_dir = pathlib.Path(config.run.dir)
    run.prepare_run_dir(config, resumed, log)
    writer = run.tensorboard_writer(config, start, log)
    checkpoints = C.Checkpointer(run_dir, config.checkpoint.keep_last)
    score, record, t_start = -1.0, {}, time.time() - resumed.elapsed_s
    marks = sorted(m for m in config.checkpoint.snapshot_minutes if 60 * m > resumed.elapsed_s)
    steps = t.updates_per_call * config.ppo.num_steps * config.ppo.num_envs
    t0 = time.time()  # compiled ahead, so that no call's steps/s counts the compilation
    call = updates_jit.lower(env, config, state, actors).compile()
    log(f"compiled a call of {t.updates_per_call} updates in {time.time() - t0:.0f} s")
    try:
        for it in range(start + t.updates_per_call, t.updates + 1, t.updates_per_call):
            t0 = time.time()
            state, actors, metrics = call(state, actors)
            metrics = jax.device_get(metrics)  # waits for the call
            record = {"iteration": it, **call_record(metrics, steps, time.time() - t0),
                      "updates": int(state.train.step), "elapsed_s": time.time() - t_start}
            while marks and record["elapsed_s"] >= 60 * marks[0]:
                path = run.save_snapshot(run_dir, marks.pop(0), state.train.params, agent, record)
                log(f"snapshot {path}")
            last = it == t.updates or 0 < 60 * t.max_minutes <= record["elapsed_s"]
            if evaluators and (it % ev.every == 0 or last):
                record.update(run.win_rates(evaluators, state.train.params,
                                            jax.random.fold_in(state.train.key, it)))
                score = record[f"vs_{ev.opponents[0]}"]
            run.write_record(run_dir, record, writer)
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
    os.environ["TRICTRAC_LOWERING"] = "gpu"  # the engine's accelerator rules, read when tracing
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

    def work():
        if args.h100:
            return print_h100_program(ppo.load_config(args.config, args.set), log)
        log(f"running on {devices.describe()}")
        config, resumed = (run.new_config(args, PPO_RUN), None) if args.resume is None else \
            run.resume(args, log, PPO_RUN)
        train(config, resumed, log)
    return run.exit_code(work)


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
