"""PPO's loop on the host, with the run parts of the AlphaZero stack's (`az.run`: the
command line, resume, metrics rows, snapshots, exit codes), which
`trictrac_jax.league.runs.train_ppo` starts with the run's environment and evaluation
matches.

A call is `training.updates_per_call` PPO updates in one jitted function (`updates`),
compiled before the first. RUN_DIR/metrics.jsonl holds one record per call: `iteration`,
the PPO updates done, each a rollout of ppo.num_envs x ppo.num_steps learner steps then its
epochs (the log's "update"); `updates`, the network's gradient steps, ppo.update_epochs x
ppo.num_minibatches per PPO update, as the AlphaZero loop's; `steps_per_s`, the call's
learner steps per second, compilation excluded.
"""
from __future__ import annotations

import functools
import pathlib
import time

import jax

from trictrac_jax import wrappers
from trictrac_jax.az import checkpoint
from trictrac_jax.az import run
from trictrac_jax.rl import ppo

# PPO's configs and checkpoints, for the run's shared parts (`run.new_config`, `run.resume`)
PPO_RUN = run.RunKind(ppo.load_config, ppo.saved_config, ppo.restore_state,
                      lambda state: int(state.updates))


# The run's device functions, compiled once per environment and config (static).
@functools.partial(jax.jit, static_argnums=0)
def new_state(config: ppo.PPOConfig, key) -> ppo.PPOState:
    """`ppo.new_state`, compiled."""
    return ppo.new_state(config, key)


@functools.partial(jax.jit, static_argnums=(0, 1))
def start(env: wrappers.SingleAgent, config: ppo.PPOConfig, state: ppo.PPOState, key
          ) -> ppo.Envs:
    """`ppo.start`, compiled."""
    return ppo.start(env, config, state, key)


@functools.partial(jax.jit, static_argnums=(0, 1), donate_argnums=(2, 3))
def updates(env: wrappers.SingleAgent, config: ppo.PPOConfig, state: ppo.PPOState,
            envs: ppo.Envs):
    """`ppo.updates`, compiled: the state and the environments updated in place."""
    return ppo.updates(env, config, state, envs)


def progress_line(record: dict, total: int, opponents) -> str:
    parts = [f"update {record['iteration']:>5}/{total} ({record['updates']} gradient steps)",
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


def ppo_loop(config: ppo.PPOConfig, resumed: run.Resumed | None = None, log=print, *,
          env: wrappers.SingleAgent, matches: dict) -> dict:
    """Run the loop `config` describes, from scratch or from `resumed`, in `env` (the
    opponent of `env.opponent`: `league.runs.ppo_env`), evaluated by `matches` (opponent
    -> a `league.matches.Match` of the run's networks); returns the last metrics record."""
    if resumed is None:
        resumed = run.Resumed(new_state(config, jax.random.PRNGKey(config.run.seed)), 0, [],
                              0.0)
    state, first = resumed.state, resumed.iteration
    agent = ppo.agent_config(config)
    ev, t = config.evaluation, config.training
    # the games restart on resume
    envs = start(env, config, state, jax.random.fold_in(state.train.key, first))

    run_dir = pathlib.Path(config.run.dir)
    run.prepare_run_dir(config, resumed, log)
    writer = run.tensorboard_writer(config, first, log)
    checkpoints = checkpoint.Checkpointer(run_dir, config.checkpoint.keep_last)
    score, record, t_start = -1.0, {}, time.time() - resumed.elapsed_s
    marks = sorted(m for m in config.checkpoint.snapshot_minutes if 60 * m > resumed.elapsed_s)
    steps = t.updates_per_call * config.ppo.num_steps * config.ppo.num_envs
    t0 = time.time()  # compiled ahead, so that no call's steps/s counts the compilation
    call = updates.lower(env, config, state, envs).compile()
    log(f"compiled a call of {t.updates_per_call} updates in {time.time() - t0:.0f} s")
    try:
        for it in range(first + t.updates_per_call, t.updates + 1, t.updates_per_call):
            t0 = time.time()
            state, envs, metrics = call(state, envs)
            metrics = jax.device_get(metrics)  # waits for the call
            record = {"iteration": it, **call_record(metrics, steps, time.time() - t0),
                      "updates": int(state.train.step), "elapsed_s": time.time() - t_start}
            while marks and record["elapsed_s"] >= 60 * marks[0]:
                path = run.save_snapshot(run_dir, marks.pop(0), state.train.params, agent, record)
                log(f"snapshot {path}")
            last = it == t.updates or 0 < 60 * t.max_minutes <= record["elapsed_s"]
            if matches and (it % ev.every == 0 or last):
                record.update(run.win_rates(matches, state.train.params,
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
