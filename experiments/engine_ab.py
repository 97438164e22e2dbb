"""Two engines' random loops on this CPU, side by side: this checkout's and another commit's,
each timed in processes of its own, interleaved round after round.

    git worktree add ../before c18b1d2                      # the other engine
    python -m experiments.engine_ab --other ../before       # 2 rounds, 1,024 and 4,096 games
    python -m experiments.engine_ab --other ../before --batches 1,64,1024,4096 --rounds 3

A round runs the other engine's process, then this one's: `measure.random_loop` in both
loops (`plain`: a `lax.scan` of `env.step` from new games, one sampler uniform over the
legal mask; `with resets`: the benchmark's), 64 steps a call from the same new games, the
fastest of at least 3 calls and 3 seconds a configuration, and the seconds to compile it.
Interleaving puts a burst of load from other processes on both engines rather than one;
each engine's best round is printed. Supports docs/journal/engine-speed.md, issue 51.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

STEPS = 64


def measure(batches: list[int]) -> list[dict]:
    """This process's engine (the `trictrac_jax` on its path): one row a loop and batch."""
    import jax

    from benchmarks.measure import PLAIN, TRICTRAC, WITH_RESETS, make_env, random_loop
    env = make_env(TRICTRAC)
    rows = []
    for loop in (PLAIN, WITH_RESETS):
        for batch in batches:
            states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(1), batch))
            key = jax.random.PRNGKey(2)
            start = time.perf_counter()
            run = jax.jit(random_loop(env, loop, STEPS)).lower(states, key).compile()
            compile_s = time.perf_counter() - start
            jax.block_until_ready(run(states, key))
            best, total, calls = float("inf"), 0.0, 0
            while calls < 3 or total < 3.0:
                start = time.perf_counter()
                jax.block_until_ready(run(states, key))
                seconds = time.perf_counter() - start
                best, total, calls = min(best, seconds), total + seconds, calls + 1
            rows.append({"loop": loop, "batch": batch, "compile_s": compile_s,
                         "steps_per_s": batch * STEPS / best})
    return rows


def run_in(root: Path, batches: list[int]) -> list[dict]:
    """`measure` in a fresh process whose engine and benchmarks are those under `root` (this
    file run as a script: its folder first on the path, then `root`)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, __file__, "--measure", ",".join(map(str, batches))],
                         cwd=root, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--other", type=Path, help="the root of the other engine's checkout")
    p.add_argument("--batches", default="1024,4096")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--measure", metavar="BATCHES", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.measure:
        print(json.dumps(measure([int(b) for b in args.measure.split(",")])))
        return
    if args.other is None:
        p.error("--other: the other engine's checkout")
    batches = [int(b) for b in args.batches.split(",")]
    here = Path(__file__).resolve().parents[1]
    best = {"other": {}, "this": {}}
    for round_ in range(args.rounds):
        for name, root in (("other", args.other.resolve()), ("this", here)):
            for row in run_in(root, batches):
                key = (row["loop"], row["batch"])
                print(f"round {round_ + 1} {name}: {row['loop']}, {row['batch']:,} games: "
                      f"{row['steps_per_s']:,.0f} steps/s, compiled in {row['compile_s']:.1f} s",
                      flush=True)
                if row["steps_per_s"] > best[name].get(key, {}).get("steps_per_s", 0):
                    best[name][key] = row
    print("\n| loop | games | other steps/s | this steps/s | this / other | compile s other / this |")
    print("|---|---|---|---|---|---|")
    for key, other in best["other"].items():
        this = best["this"][key]
        print(f"| {key[0]} | {key[1]:,} | {other['steps_per_s']:,.0f} | "
              f"{this['steps_per_s']:,.0f} | {this['steps_per_s'] / other['steps_per_s']:.2f} | "
              f"{other['compile_s']:.1f} / {this['compile_s']:.1f} |")


if __name__ == "__main__":
    main()
