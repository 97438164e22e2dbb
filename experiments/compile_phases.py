"""Where the random loop's compile time goes: JAX's trace of the program, its lowering to
StableHLO and XLA's compile, timed apart (`measure.compile_phases`), trictrac against pgx
backgammon, each program in a fresh process as `bench` times it, rounds interleaved.

    python -m experiments.compile_phases                  # this CPU's programs, 2 rounds
    python -m experiments.compile_phases --target H100 --rounds 3
    python -m experiments.compile_phases --rounds 1 --equations 20   # and the programs' sizes
    TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_VMODULE=cpu_compiler=2 python -m experiments.compile_phases \\
        --only trictrac --rounds 1 2>&1 | grep "cpu_compiler"   # XLA's own phases (CPU)

Prints each phase's seconds (the fastest of the rounds) and trictrac's total over pgx's: issue
51 asks at most 1.25x, and the split says what would have to shrink (XLA's compile of a
smaller program, or the trace of fewer operations). Supports docs/journal/engine-speed.md.
"""
from __future__ import annotations

import argparse
import collections
import os

from benchmarks import measure

PHASES = ("trace", "lower", "compile")


def phases(names, loops, games, steps, target, rounds) -> dict[tuple[str, str], dict]:
    """(environment, loop) -> phase -> the fastest of `rounds` fresh processes' seconds."""
    best = {}
    for _ in range(rounds):
        for loop in loops:
            for name in names:
                seconds = measure.in_fresh_process(measure.compile_phases, name, loop, games,
                                                   steps, target)
                if seconds is None:
                    raise SystemExit(f"the process compiling {name} ({loop}) died")
                kept = best.setdefault((name, loop), seconds)
                for phase in PHASES:
                    kept[phase] = min(kept[phase], seconds[phase])
    return best


def equations(name, loop, games, steps, target) -> tuple[int, collections.Counter]:
    """(the jaxpr equations of the random loop's program, "module.function" of the
    innermost trictrac_jax frame -> its equations; "?" for none): what XLA is given."""
    import jax
    from jax._src import source_info_util

    os.environ["TRICTRAC_LOWERING"] = "gpu" if target else "cpu"  # read when tracing
    run = measure.new_games_then(measure.make_env(name), loop, games, steps)
    counts = collections.Counter()

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            inner = [p.jaxpr if hasattr(p, "jaxpr") else p
                     for value in eqn.params.values()
                     for p in (value if isinstance(value, (list, tuple)) else [value])
                     if hasattr(p, "jaxpr") or hasattr(p, "eqns")]
            for sub in inner:
                walk(sub)
            if inner:
                continue
            frames = source_info_util.user_frames(eqn.source_info.traceback) \
                if eqn.source_info.traceback else []
            rule = next((f"{os.path.basename(f.file_name)[:-3]}.{f.function_name.split('.')[0]}"
                         for f in frames if "trictrac_jax" in f.file_name), "?")
            counts[rule] += 1

    walk(jax.make_jaxpr(run)(jax.random.PRNGKey(0)).jaxpr)
    return sum(counts.values()), counts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", default=None, choices=["H100", "TPU v5e"],
                   help="compile for this device (the GPU lowering) instead of this CPU")
    p.add_argument("--games", type=int, default=measure.COMPILE_GAMES)
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--only", choices=[measure.TRICTRAC, "trictrac", "backgammon"],
                   help="one environment (e.g. with XLA's log on)")
    p.add_argument("--equations", type=int, metavar="TOP", default=0,
                   help="also the plain loop's jaxpr equations of each environment, and "
                        "trictrac's TOP rules by their equations (with --target H100: the "
                        "CPU's lowering traces the rules inside its batching rules)")
    args = p.parse_args(argv)
    names = [measure.TRICTRAC, measure.BACKGAMMON]
    if args.only:
        names = [measure.BACKGAMMON if args.only == "backgammon" else measure.TRICTRAC]
    loops = [measure.PLAIN, measure.WITH_RESETS]
    best = phases(names, loops, args.games, args.steps, args.target, args.rounds)
    where = args.target or "this CPU"
    print(f"compile of the random loop, {args.games:,} games, {args.steps} steps, for {where} "
          f"(seconds, the fastest of {args.rounds} fresh processes each):")
    print(f"{'environment':16s} {'loop':12s} " + " ".join(f"{p:>8s}" for p in PHASES)
          + f" {'total':>8s}")
    for (name, loop), seconds in best.items():
        print(f"{name:16s} {loop:12s} " + " ".join(f"{seconds[p]:8.2f}" for p in PHASES)
              + f" {sum(seconds.values()):8.2f}")
    for name in names if args.equations else []:
        total, counts = measure.in_fresh_process(equations, name, measure.PLAIN, args.games,
                                                 args.steps, args.target)
        print(f"{name}: {total:,} jaxpr equations (the plain loop)")
        if name == measure.TRICTRAC:
            print("    " + ", ".join(f"{rule} {n}" for rule, n in
                                     counts.most_common(args.equations)))
    if len(names) == 2:
        for loop in loops:
            ours, theirs = best[(measure.TRICTRAC, loop)], best[(measure.BACKGAMMON, loop)]
            print(f"{loop}: trictrac / pgx {sum(ours.values()) / sum(theirs.values()):.2f}x "
                  f"in all; XLA's compile alone {ours['compile'] / sum(theirs.values()):.2f}x "
                  f"pgx's whole")


if __name__ == "__main__":
    main()
