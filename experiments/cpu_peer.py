"""Trictrac against pgx backgammon on this CPU in one process, wall clock: issue 51's CPU
criterion (random play from new games, 64 steps a call, the same process).

    python -m experiments.cpu_peer                        # 1,024 games, both loops
    python -m experiments.cpu_peer --batches 1,64,1024,4096 --calls 8

Both environments' loops (`measure.random_loop`: `plain` and `with resets`, the one sampler
`agents.uniform_legal`) are compiled for the same new games, then called in turn, round
after round, so that a burst of load from other processes falls on both; each prints its
fastest call. Supports docs/journal/engine-speed.md, issue 51.
"""
from __future__ import annotations

import argparse
import time

import jax

from benchmarks.measure import BACKGAMMON, PLAIN, TRICTRAC, WITH_RESETS, make_env, random_loop

STEPS = 64


def compiled_loops(batch: int, loop: str) -> dict:
    """Environment name -> (compiled loop of STEPS steps, its new games, its key)."""
    out = {}
    for name in (TRICTRAC, BACKGAMMON):
        env = make_env(name)
        states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(1), batch))
        key = jax.random.PRNGKey(2)
        run = jax.jit(random_loop(env, loop, STEPS)).lower(states, key).compile()
        jax.block_until_ready(run(states, key))
        out[name] = (run, states, key)
    return out


def fastest_rates(loops: dict, batch: int, calls: int) -> dict:
    """Environment name -> steps/s of its fastest of `calls` calls, the environments in turn."""
    best = dict.fromkeys(loops, float("inf"))
    for _ in range(calls):
        for name, (run, states, key) in loops.items():
            start = time.perf_counter()
            jax.block_until_ready(run(states, key))
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: batch * STEPS / seconds for name, seconds in best.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", default="1024", help="comma-separated game counts")
    p.add_argument("--calls", type=int, default=8, help="timed calls of each loop")
    args = p.parse_args(argv)
    if make_env(BACKGAMMON) is None:
        raise SystemExit("pgx is not installed: pip install pgx")
    print(f"random play from new games, {STEPS} steps a call, the fastest of {args.calls} "
          "calls, wall clock")
    print(f"| loop | games | {TRICTRAC} steps/s | {BACKGAMMON} steps/s | ratio |")
    print("|---|---|---|---|---|")
    for loop in (PLAIN, WITH_RESETS):
        for batch in (int(b) for b in args.batches.split(",")):
            rates = fastest_rates(compiled_loops(batch, loop), batch, args.calls)
            print(f"| {loop} | {batch:,} | {rates[TRICTRAC]:,.0f} | {rates[BACKGAMMON]:,.0f} | "
                  f"{rates[TRICTRAC] / rates[BACKGAMMON]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
