"""The sampler's share of the plain random loop on this CPU: the loop that `bench` times
(`measure.plain_loop`: an action drawn by `agents.uniform_legal`, then `env.step`) against
the same draws alone over the same states' masks, for trictrac (514 actions) and pgx
backgammon (156).

    python -m experiments.sampler_share                 # 1,024 games, 16 steps a call
    python -m experiments.sampler_share --games 4096 --seconds 5

For each environment: the loop's steps per CPU-second, the sampler's draws per CPU-second
alone, and what the step takes without the sampler (the loop's time less the draws'), each
the best of calls over at least `--seconds` (CPU time of this process, `time.process_time`,
which other processes on the machine disturb less than the wall clock). Supports
docs/journal/engine-speed.md, issue 51.
"""
from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

from benchmarks.measure import BACKGAMMON, PLAIN, TRICTRAC, make_env, random_loop
from trictrac_jax.agents import uniform_legal


def sampler_loop(steps):
    """(states, key) -> int32[B]: `steps` draws of `uniform_legal` over the states' masks,
    each draw's key its own (the sum keeps every draw)."""
    def run(states, key):
        mask = states.legal_action_mask
        def body(total, k):
            keys = jax.random.split(k, mask.shape[0])
            return total + jax.vmap(uniform_legal)(keys, mask), None
        return jax.lax.scan(body, jnp.zeros(mask.shape[0], jnp.int32),
                            jax.random.split(key, steps))[0]
    return run


def best_seconds(fn, args, seconds):
    """The fewest CPU seconds of one call of compiled `fn(*args)`, over at least `seconds`."""
    jax.block_until_ready(fn(*args))
    best, spent = float("inf"), 0.0
    while spent < seconds or best == float("inf"):
        start = time.process_time()
        jax.block_until_ready(fn(*args))
        took = time.process_time() - start
        best, spent = min(best, took), spent + took
    return best


def share(name, games, steps, seconds):
    env = make_env(name)
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(0), games))
    key = jax.random.PRNGKey(1)
    loop = best_seconds(jax.jit(random_loop(env, PLAIN, steps)), (states, key), seconds)
    draws = best_seconds(jax.jit(sampler_loop(steps)), (states, key), seconds)
    n = games * steps
    return {"env": name, "actions": states.legal_action_mask.shape[-1],
            "loop": n / loop, "sampler": n / draws, "step": n / max(loop - draws, 1e-9),
            "sampler_share": draws / loop}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=1024)
    p.add_argument("--steps", type=int, default=16, help="steps (or draws) a call")
    p.add_argument("--seconds", type=float, default=3.0, help="CPU seconds of calls timed")
    args = p.parse_args(argv)
    print(f"plain random loop, {args.games:,} games from new games, {args.steps} steps a call, "
          f"per CPU-second of this process (best call over {args.seconds:g} s)")
    print("| env | actions | loop steps/s | sampler draws/s | step without the sampler, steps/s "
          "| sampler's share of the loop |")
    print("|---|---|---|---|---|---|")
    for name in (TRICTRAC, BACKGAMMON):
        r = share(name, args.games, args.steps, args.seconds)
        print(f"| {r['env']} | {r['actions']} | {r['loop']:,.0f} | {r['sampler']:,.0f} | "
              f"{r['step']:,.0f} | {r['sampler_share']:.0%} |")


if __name__ == "__main__":
    main()
