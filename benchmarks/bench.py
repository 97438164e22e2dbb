"""Throughput benchmark: random self-play, pgx backgammon as the peer, the cost of a step,
and self-play with tree search.

    python -m benchmarks.bench           # full run, writes docs/benchmarks.md
    python -m benchmarks.bench --quick   # batches 1, 64, 256 and shorter runs
    python -m benchmarks.bench --gpu     # the GPU figures, on any device (bench_gpu.py)

One step is one `env.step` call per game: a decision (uniform over the legal mask) and the
dice roll that follows. The loop runs inside `jax.lax.scan` under `jit`, and finished games
(terminated or truncated) are re-initialised from a key. Each (environment, batch) pair is
compiled and timed in a fresh process, so that its peak memory is its own. pgx is optional
(`pip install pgx==2.6.0`); without it the peer is skipped.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
from pathlib import Path

import jax
import numpy as np

import trictrac_jax as tt
from trictrac_jax import devices
from trictrac_jax.agents import random_agent
from trictrac_jax.az.run import code_version
from benchmarks import bench_gpu, gpu_report
from benchmarks.measure import (BACKGAMMON, COMPILE_GAMES, STEP_ROW, TRICTRAC, available_envs,
                                compile_rows, compile_table, components, fastest_calls,
                                game_lengths, in_fresh_process, log, make_env, measure_search,
                                measure_selfplay, mid_game_inputs, table)

FULL_BATCHES = (1, 64, 256, 1024, 4096, 16384)
QUICK_BATCHES = (1, 64, 256)
# The GPU of the roofline estimate: H100 SXM, HBM3 bandwidth and dense FP32 (non-tensor) peak.
GPU_NAME, GPU_BYTES_PER_S, GPU_FLOPS = "H100 SXM", 3.35e12, 67e12
SPLIT_SECONDS_FACTOR = 5  # the split's timed calls last this many times a self-play row's
THROUGHPUT_COLUMNS = ("env", "batch", "compile s", "steps/s", "games/s", "steps/game",
                      "peak MiB", "state bytes")
# Self-play with search: (algorithm, simulations), in games of the quick config's size.
FULL_SEARCHES = (("gumbel", 4), ("gumbel", 8), ("gumbel", 16), ("gumbel", 32),
                 ("stochastic", 8), ("stochastic", 32))
QUICK_SEARCHES = (("gumbel", 2),)


# --- the sections of the report ---

def throughput(names, batches, steps, min_seconds, max_seconds, lengths):
    """Rows of the throughput table, and notes on what was skipped."""
    rows, notes = [], []
    for name in names:
        previous = None
        for batch in batches:
            if previous is not None:
                call = batch * steps / previous["steps_per_s"]
                estimate = previous["compile_s"] + call + max(call, min_seconds)
                if estimate > max_seconds:
                    notes.append(f"{name}, batch {batch} and above: skipped (about "
                                 f"{estimate:.0f} s estimated > --max-seconds {max_seconds:g}).")
                    break
            log(f"self-play: {name}, batch {batch}")
            result = in_fresh_process(measure_selfplay, name, batch, steps, min_seconds)
            if result is None:
                notes.append(f"{name}, batch {batch}: the process died (out of memory?).")
                break
            rows.append({"env": name, "batch": batch, **result,
                         "games_per_s": result["steps_per_s"] / lengths[name],
                         "steps_per_game": lengths[name]})
            previous = result
    return rows, notes


def cost_row(name, compiled, batch, seconds):
    """XLA's cost analysis of one batched step, with the measured and the estimated rates."""
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost  # a list of one dict in older jax
    flops, bytes_accessed = cost.get("flops", 0.0), cost.get("bytes accessed", 0.0)
    gpu_seconds = max(bytes_accessed / GPU_BYTES_PER_S, flops / GPU_FLOPS)
    return {"env": name, "flops": flops, "bytes": bytes_accessed, "cpu": batch / seconds,
            "gpu": batch / gpu_seconds}


# --- markdown ---


def throughput_section(rows, notes):
    notes = "\n".join(f"* {n}" for n in notes)
    body = table(THROUGHPUT_COLUMNS, [
        (r["env"], r["batch"], f"{r['compile_s']:.1f}", f"{r['steps_per_s']:,.0f}",
         f"{r['games_per_s']:,.1f}", f"{r['steps_per_game']:.1f}", f"{r['peak_mib']:,.0f}",
         r["state_bytes"]) for r in rows])
    return "\n\n".join(s for s in ("## Random self-play", body, notes) if s)


def ratio_section(rows):
    rate = {(r["env"], r["batch"]): r["steps_per_s"] for r in rows}
    both = [b for (name, b) in rate if name == TRICTRAC and (BACKGAMMON, b) in rate]
    if not both:
        return ""
    ratios = [(b, f"{rate[TRICTRAC, b]:,.0f}", f"{rate[BACKGAMMON, b]:,.0f}",
               f"{rate[TRICTRAC, b] / rate[BACKGAMMON, b]:.3f}") for b in both]
    headline = (f"Headline: at batch {both[-1]}, trictrac runs **{ratios[-1][3]}x** the steps/s "
                "of pgx backgammon.")
    return "\n\n".join(["## Trictrac / pgx backgammon",
                        table(("batch", "trictrac steps/s", "pgx backgammon steps/s", "ratio"),
                              ratios), headline])


def search_section(rows):
    body = table(("search", "simulations", "games", "compile s", "moves/s"), [
        (r["algorithm"], r["simulations"], r["games"], f"{r['compile_s']:.1f}",
         f"{r['moves_per_s']:,.0f}") for r in rows])
    return "\n\n".join([
        "## Self-play with search",
        "Moves per second of `training.selfplay_step` (mctx search with the engine as model, no "
        "network updates): the quick config's network (128 x 2, untrained), 32 moves per "
        "call in each game, the fastest of at least 3 calls after compilation. `gumbel` is "
        "Gumbel MuZero with sampled dice, `stochastic` stochastic MuZero with the dice as "
        "chance nodes; each simulation costs about one engine step.", body])


def split_section(rows, batch, mid_steps):
    step_seconds = dict(rows)[STEP_ROW]
    body = table(("component", "ms per call", "µs per game", "states/s", "% of env.step"), [
        (name, f"{s * 1e3:,.1f}", f"{s * 1e6 / batch:,.1f}", f"{batch / s:,.0f}",
         f"{100 * s / step_seconds:.0f}") for name, s in rows])
    return "\n\n".join([
        "## Where a step's time goes (trictrac)",
        f"Each component jitted and vmapped on the same batch of {batch} decision states, "
        f"reached by {mid_steps} random steps from new games; the fastest of at least 3 "
        "calls each, the components called in turn. "
        "The first three rows overlap (the mask and the jans both need the move lists); the "
        "self-play loop costs about agent + step + reset.", body])


def cost_section(rows, batch):
    body = table(("env.step of", "GFLOP", "GB accessed", "CPU steps/s (measured)",
                  "H100 steps/s, H100 estimate (compiled program, model in docs/gpu-program.md): "
                  "roofline bound"), [
        (r["env"], f"{r['flops'] / 1e9:.2f}", f"{r['bytes'] / 1e9:.2f}", f"{r['cpu']:,.0f}",
         f"{r['gpu']:,.0f}") for r in rows])
    peer = " (pgx on its initial states)" if len(rows) > 1 else ""
    return "\n\n".join([
        f"## XLA cost analysis of one batched step (batch {batch})", body,
        f"The estimate is a roofline bound, not a measurement: batch / max(bytes accessed / "
        f"{GPU_BYTES_PER_S / 1e12:g} TB/s, flops / {GPU_FLOPS / 1e12:g} TFLOP/s) of an "
        f"{GPU_NAME}, from the CPU-compiled program (a GPU build fuses differently, and "
        "kernel launches and partial bandwidth use make real runs slower). The model fitted "
        "to the H100's measurements, and its estimates of the H100's own program, are in "
        "[gpu-program.md](gpu-program.md); the H100 measured, in "
        "[speed.md](speed.md#measured-on-one-h100). The measured CPU "
        f"rate is that of this call alone{peer}."])


def compile_section(rows):
    return "\n\n".join([
        "## Compile time",
        f"Seconds from the first trace of the random loop ({COMPILE_GAMES:,} new games, then "
        "the timed calls' steps; `plain` and `with resets` as in `--gpu`) until it is "
        "compiled for this CPU, in a fresh process as a user meets it: one-time setup on the "
        "way (the engine's first positions) counted (`measure.compile_seconds`).",
        compile_table(rows)])


def machine_section(command, loads):
    """The title, the command, the machine and what the figures mean."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                .splitlines() if line.startswith("model name")), platform.processor())
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text()
                  .splitlines() if line.startswith("MemTotal"))
    try:
        import pgx
        pgx_version = pgx.__version__
    except ImportError:
        pgx_version = "not installed"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join([
        "# Benchmarks", "",
        f"Measured on {now} with `{command}` (code at git {code_version()}).", "",
        f"* Machine: {cpu}, {os.cpu_count()} cores, {mem_kb / 2**20:.0f} GiB memory",
        f"* Python {platform.python_version()}, jax {jax.__version__}, devices "
        f"{', '.join(str(d) for d in jax.devices())}, pgx {pgx_version}",
        f"* Load average (1 min) at the start and the end of the run: {loads[0]:.1f} and "
        f"{loads[1]:.1f} (a load above the {os.cpu_count()} cores means that other processes "
        "competed for them: the rates are then lower than on an idle machine)",
        "* One step = one `env.step` call per game: a decision uniform over the legal mask "
        "(`agents.random_agent`) and the dice that follow. A pgx backgammon step moves one "
        "checker by one die, so a backgammon turn takes about two steps (four on doubles), "
        "whereas a trictrac step plays both dice.",
        "* steps/s and games/s are after compilation, from the fastest of the timed calls "
        "(repeated for at least a few seconds; the least disturbed by other processes); games/s = steps/s / steps/game, the "
        "mean length of complete random games measured in the same run; peak MiB is the "
        "process's peak resident memory on CPU (device peak bytes in use on GPU), measured "
        "in a fresh process per row; state bytes is the size of one game's state.",
        "* Measured GPU figures (random play, the split of a search, self-play): "
        "`python -m benchmarks.bench --gpu` on a GPU machine "
        "([speed.md](speed.md#measured-on-one-h100))."])


# --- entry point ---

def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch-sizes", type=lambda s: [int(b) for b in s.split(",")],
                   help=f"comma-separated (default {','.join(map(str, FULL_BATCHES))})")
    p.add_argument("--steps", type=int, help="scanned steps per timed call (default 16)")
    p.add_argument("--quick", action="store_true",
                   help="batches 1,64,256, 8 steps, 16 games for lengths, split batch 256")
    p.add_argument("--no-pgx", action="store_true", help="skip the pgx backgammon peer")
    p.add_argument("--throughput-only", action="store_true",
                   help="random self-play only: skip the cost split, XLA's cost analysis "
                        "and self-play with search")
    p.add_argument("--split-batch", type=int, help="batch of the cost split (default 1024)")
    p.add_argument("--no-search", action="store_true", help="skip self-play with search")
    p.add_argument("--search-games", type=int, default=128,
                   help="parallel games of self-play with search (default 128)")
    p.add_argument("--max-seconds", type=float, default=90.0,
                   help="skip a batch size whose run is estimated to take longer (default 90)")
    p.add_argument("--gpu", action="store_true",
                   help="the GPU figures instead, on whatever device JAX runs on (see "
                        "trictrac_jax/bench_gpu.py; sized for it, --quick: the smallest); "
                        "uses --quick, --no-pgx, --out, --output, --budget-seconds only")
    p.add_argument("--h100", action="store_true",
                   help="the program an H100 would run, compiled and read on this machine (no "
                        "GPU needed; gpu_report.py): random play, a base.yaml search and "
                        "training iteration; writes docs/gpu-program.md and .json; uses "
                        "--no-pgx, --output, --h100-*, --no-compile-time only")
    p.add_argument("--h100-games", type=lambda s: [int(b) for b in s.split(",")],
                   help="--h100: random play's game counts (default 1024,8192,32768,131072)")
    p.add_argument("--h100-loops", type=lambda s: s.split(","),
                   help="--h100: random play's loops (default 'plain,with resets')")
    p.add_argument("--h100-calibration", type=Path, metavar="PATH",
                   help="--h100: also write random play's H100 kernels to PATH (the model's "
                        "calibration data, gpu_report.CALIBRATION_DATA, made at the code "
                        "measured on an H100)")
    p.add_argument("--h100-random-only", action="store_true",
                   help="--h100: random play and the model only (minutes, not an hour); "
                        "the compile times, base.yaml's decision and iteration and the TPU "
                        "carried from the report it rewrites, which says so")
    p.add_argument("--no-compile-time", action="store_true",
                   help="skip the compile times (fresh processes, about a minute each)")
    p.add_argument("--budget-seconds", type=float, default=480.0,
                   help="--gpu: seconds for the whole run (default 480: with the start, "
                        "under 9 minutes on a GPU); a row starts only if it is expected to "
                        "end within them (the longest row of its kind so far, or a guess)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="--gpu: write everything into DIR: bench-gpu.md and .json (the "
                        "step's kernels in it) and the step's profile (trace.tar, under "
                        "16 MiB)")
    p.add_argument("--output", type=Path,
                   help="default docs/benchmarks.md (--gpu: docs/benchmarks-<platform>.md "
                        "and .json)")
    args = p.parse_args(argv)
    quick = args.quick
    args.batch_sizes = args.batch_sizes or list(QUICK_BATCHES if quick else FULL_BATCHES)
    args.steps = args.steps or (8 if quick else 16)
    args.split_batch = args.split_batch or (256 if quick else 1024)
    args.length_games = 16 if quick else 64
    args.min_seconds = 0.5 if quick else 2.0
    args.searches = [] if args.no_search or args.throughput_only else list(QUICK_SEARCHES if quick else FULL_SEARCHES)
    return args


def mean_game_lengths(names, games):
    """Name -> mean steps of `games` complete random games."""
    lengths = {}
    for name in names:
        log(f"game lengths: {name}, {games} games")
        played = jax.jit(game_lengths, static_argnums=(0, 1))(make_env(name), games,
                                                              jax.random.PRNGKey(1))
        lengths[name] = float(np.mean(played))
    return lengths


def split_and_cost_sections(names, batch, mid_steps, min_seconds):
    """The cost split of a trictrac step, then XLA's cost analysis of both envs' steps."""
    env = tt.Trictrac()
    log(f"split: gathering {batch} states after {mid_steps} random steps")
    inputs = mid_game_inputs(env, batch, mid_steps, jax.random.PRNGKey(2))
    calls = {}
    for name, fn in components(env).items():
        log(f"split: compiling {name}")
        calls[name] = (jax.jit(jax.vmap(fn)).lower(inputs).compile(), (inputs,))
    if BACKGAMMON in names:
        peer = make_env(BACKGAMMON)
        states = jax.jit(jax.vmap(peer.init))(inputs.keys)
        args = (states, jax.vmap(random_agent)(inputs.keys, states), inputs.keys)
        calls[BACKGAMMON] = (jax.jit(jax.vmap(peer.step)).lower(*args).compile(), args)
    log("split: timing")
    seconds = dict(zip(calls, fastest_calls(list(calls.values()), min_seconds)))
    costs = [cost_row(TRICTRAC, calls[STEP_ROW][0], batch, seconds[STEP_ROW])]
    if BACKGAMMON in calls:
        costs.append(cost_row(BACKGAMMON, calls[BACKGAMMON][0], batch, seconds[BACKGAMMON]))
    split = [(name, seconds[name]) for name in calls if name != BACKGAMMON]
    return [split_section(split, batch, mid_steps), cost_section(costs, batch)]


def main(argv=None):
    """Run the benchmark, print the report and write it to `--output`; returns its text."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    command = shlex.join(["python", "-m", "benchmarks.bench", *argv])
    if args.gpu:
        return bench_gpu.run(args, command)
    if args.h100:
        return gpu_report.run(args, command)
    load_at_start = os.getloadavg()[0]
    names, notes = available_envs(args.no_pgx)
    lengths = mean_game_lengths(names, args.length_games)
    rows, skipped = throughput(names, args.batch_sizes, args.steps, args.min_seconds,
                               args.max_seconds, lengths)
    sections = [throughput_section(rows, notes + skipped), ratio_section(rows)]
    if not args.throughput_only:
        mid_steps = max(1, round(lengths[TRICTRAC] / 2))
        sections += split_and_cost_sections(names, args.split_batch, mid_steps,
                                            SPLIT_SECONDS_FACTOR * args.min_seconds)
    if not (args.throughput_only or args.no_compile_time):
        sections.append(compile_section(compile_rows(names, COMPILE_GAMES, args.steps)))
    if args.searches:
        log("self-play with search")
        rows = [in_fresh_process(measure_search, alg, sims, args.search_games, args.min_seconds)
                for alg, sims in args.searches]
        sections.append(search_section([r for r in rows if r is not None]))
    sections.insert(0, machine_section(command, (load_at_start, os.getloadavg()[0])))
    text = "\n\n".join(s for s in sections if s) + "\n"
    print(text)
    output = args.output or Path("docs/benchmarks.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    return text


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    main()
