"""Two lowerings of this engine (`trictrac_jax/lowering.py`) timed side by side on this
machine's default device: random play in the plain loop, one process, the two programs'
calls interleaved so that a burst of load falls on both.

    python -m experiments.lowering_ab                                  # gpu against gpu-games-last
    python -m experiments.lowering_ab --lowerings gpu,gpu-tiles        # the lists' kernel
    python -m experiments.lowering_ab --batches 1024,8192 --out DIR    # rows.jsonl in DIR, row by row

For each batch: both programs compiled (a `lax.scan` of `env.step` over 64 steps from the
same new games, one sampler uniform over the legal mask: `measure.plain_loop`; whether they
end in the same states is printed: the same rules play the same games), then called
in turns, A B A B ..., at least `--calls` calls each and `--seconds` together; the fastest
call of each is its rate. A lowering is chosen at trace time from `$TRICTRAC_LOWERING`, set
here before each program is traced. Supports issue 51 (which lowering the GPU gets); on a
CPU it runs at small sizes as a rehearsal.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

STEPS = 64
RESULT = "lowering ab:"  # begins each result line (a GPU session records them)


def compiled_loop(env, lowering: str, states, key):
    """The plain loop traced and compiled under `lowering`, and its seconds to compile."""
    import jax

    from benchmarks.measure import PLAIN, random_loop
    from trictrac_jax.lowering import forced
    with forced(lowering):
        jax.clear_caches()  # jit's traces of `env.step` are keyed by arguments, not lowering
        start = time.perf_counter()
        run = jax.jit(random_loop(env, PLAIN, STEPS)).lower(states, key).compile()
        return run, time.perf_counter() - start


def compare(lowerings: list[str], batch: int, calls: int, seconds: float) -> list[dict]:
    """One row a lowering: its compile seconds and steps a second at `batch` games."""
    import jax

    from benchmarks.measure import TRICTRAC, make_env
    env = make_env(TRICTRAC)
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(1), batch))
    key = jax.random.PRNGKey(2)
    programs = [compiled_loop(env, name, states, key) for name in lowerings]
    ends = [jax.block_until_ready(run(states, key)) for run, _ in programs]
    # the same rules: every lowering plays the same games from the same states and key
    same = [all(bool((a == b).all()) for a, b in zip(jax.tree.leaves(ends[0]),
                                                       jax.tree.leaves(end))) for end in ends]
    best = [float("inf")] * len(programs)
    start, made = time.perf_counter(), 0
    while made < calls or time.perf_counter() - start < seconds:
        for i, (run, _) in enumerate(programs):
            t = time.perf_counter()
            jax.block_until_ready(run(states, key))
            best[i] = min(best[i], time.perf_counter() - t)
        made += 1
    device = jax.devices()[0]
    return [{"lowering": name, "batch": batch, "compile_s": round(compiled, 2),
             "steps_per_s": batch * STEPS / fastest, "calls": made, "same_games": agrees,
             "device": device.device_kind, "platform": device.platform, "jax": jax.__version__}
            for name, (_, compiled), fastest, agrees in zip(lowerings, programs, best, same)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lowerings", default="gpu,gpu-games-last")
    parser.add_argument("--batches", default="1024,8192,32768,131072")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--out", type=Path, help="a folder for rows.jsonl, written row by row")
    args = parser.parse_args(argv)
    lowerings = args.lowerings.split(",")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    for batch in (int(b) for b in args.batches.split(",")):
        rows = compare(lowerings, batch, args.calls, args.seconds)
        for row in rows:
            print(f"{RESULT} {row['batch']:,} games, {row['lowering']} on {row['device']}: "
                  f"{row['steps_per_s']:,.0f} steps/s, compile {row['compile_s']:.1f} s, "
                  f"the same games as {lowerings[0]}: {row['same_games']}", flush=True)
            if args.out:
                with open(args.out / "rows.jsonl", "a") as f:
                    f.write(json.dumps(row) + "\n")
        print(f"{RESULT} {batch:,} games, {lowerings[1]} / {lowerings[0]}: "
              f"{rows[1]['steps_per_s'] / rows[0]['steps_per_s']:.3f}", flush=True)


if __name__ == "__main__":
    main()
