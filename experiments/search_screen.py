"""The self-play searches screened from `champion:1`: each search carries champion 1's network
on for the same H100-estimated self-play cost, then each result plays `champion:1`.

    python -m experiments.search_screen --out runs/search_screen
    python -m experiments.search_screen --search gumbel8 --search gumbel_stochastic8 --iterations 20

Every run is configs/quick.yaml's size, champion 1's own (a 128 x 2 network; an iteration:
128 games each advanced 32 decisions, then 32 updates of 256), warm-started from `champion:1`
with a fresh optimiser at a carry-on learning rate (`CARRY_ON`), with its own search
(`SCREEN`). The budget is equal cost on the GPU the searches are chosen for: `--iterations`
is gumbel8's, and each other search gets the iterations whose self-play decisions cost the
same H100 estimate (`H100_COST`), rounded. Each trains in its own process, one after the
other; then each result's raw policy plays `--games` games against champion 1's raw policy,
both seats, from the same key (the first row: champion 1 itself, the screen's zero). Writes
OUT/screen.md and .json; a run already trained in OUT is not trained again.

Supports docs/training.md, "Gumbel over the chance nodes".
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import time

import jax

from trictrac_jax import devices
from trictrac_jax.league import network_agents
from experiments.recipes import SEARCHES

ROOT = pathlib.Path(__file__).resolve().parents[1]
BASE_CONFIG = "configs/quick.yaml"
OPPONENT = "champion:1"
SCREEN = {name: SEARCHES[name] for name in ("gumbel8", "gumbel_stochastic8", "stochastic16")}
# Champion 2's carry-on learning rate and warm-up (docs/training.md, "Toward champion 3"):
# champion 1 ended its cosine near 0, and 1e-3 from a fresh optimiser would first undo it.
CARRY_ON = ("training.learning_rate=0.0003", "training.warmup_updates=50")
# Seconds of a base.yaml self-play decision relative to gumbel8's, H100 estimate (compiled
# program, model in docs/gpu-program.md), each ratio from one commit's `experiments.recipes_h100`:
# moves/s 465,862 / 341,124 (docs/training.md, "Gumbel over the chance nodes", code at
# 6d27122) and 390,198 / 143,156 (docs/journal/choosing-base-yaml.md).
H100_COST = {"gumbel8": 1.0, "gumbel_stochastic8": 465_862 / 341_124,
             "stochastic16": 390_198 / 143_156}


def iterations_at_equal_cost(iterations: int, names) -> dict[str, int]:
    """Each search's iterations whose self-play costs what `iterations` of gumbel8's do."""
    return {n: max(1, round(iterations / H100_COST[n])) for n in names}


def train(name: str, out: pathlib.Path, iterations: int, seed: int) -> dict:
    """Carry champion 1 on with search `name` in a fresh process; its wall-clock and CPU
    seconds."""
    command = [sys.executable, "-m", "train.az", "--config", str(ROOT / BASE_CONFIG),
               "--init-from", OPPONENT, "--set", f"run.dir={out.resolve() / name}",
               "--set", f"run.seed={seed}", "--set", f"training.iterations={iterations}",
               "--set", f"checkpoint.every={iterations}", "--set", "evaluation.opponents=[]",
               "--set", "logging.tensorboard=false"]
    for override in (*CARRY_ON, *SCREEN[name]):
        command += ["--set", override]
    start, cpu = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out / f"{name}.log", "w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall_s": time.time() - start,
            "cpu_s": used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime}


def match(spec: str, games: int, seed: int) -> dict:
    """The raw policy of the network `spec` against champion 1's, `games` games, both seats."""
    params, config = network_agents.load_network(spec)
    result = network_agents.evaluator(config, OPPONENT, games)(params, jax.random.PRNGKey(seed))
    lo, hi = result.interval()
    return {"win_rate": result.win_rate, "lo": lo, "hi": hi, "games": result.games,
            "draws": result.draws}


def table(rows: list[dict]) -> str:
    """The screen as a markdown table."""
    decisions = 128 * 32  # quick.yaml: self-play decisions an iteration
    head = ("| search (quick.yaml + carry-on, from champion:1) | iterations | self-play "
            "decisions | self-play cost in gumbel8 iterations, H100 estimate (compiled "
            "program, model in docs/gpu-program.md) | CPU minutes, compilation included "
            f"(wall) | vs `{OPPONENT}`, raw policies, both seats [95%] |\n"
            "|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        m = r["match"]
        cost = (f"{r['iterations'] * H100_COST[r['search']]:.1f}"
                if r["search"] in H100_COST else "0")
        minutes = (f"{r['cpu_s'] / 60:.1f} ({r['wall_s'] / 60:.1f})" if "cpu_s" in r else "")
        lines.append(f"| {r['search']} | {r['iterations']} | {r['iterations'] * decisions:,} | "
                     f"{cost} | {minutes} | {100 * m['win_rate']:.1f}% [{100 * m['lo']:.1f}, "
                     f"{100 * m['hi']:.1f}] in {m['games']} |")
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--search", action="append", choices=sorted(SCREEN),
                   help="a search to screen (repeatable; default: all)")
    p.add_argument("--iterations", type=int, default=64,
                   help="gumbel8's iterations; the others' cost the same (H100 estimate)")
    p.add_argument("--games", type=int, default=400, help="games of each match")
    p.add_argument("--seed", type=int, default=0, help="every run's seed and the matches' key")
    p.add_argument("--out", default="runs/search_screen")
    args = p.parse_args(argv)
    if args.games < 2 or args.games % 2:
        p.error(f"--games: must be an even number >= 2, got {args.games}")
    if args.iterations < 1:
        p.error(f"--iterations: must be >= 1, got {args.iterations}")
    names = args.search or list(SCREEN)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    saved = out / "screen.json"
    done = {r["search"]: r for r in
            (json.loads(saved.read_text())["rows"] if saved.is_file() else [])}
    rows = [{"search": OPPONENT, "iterations": 0, "match": match(OPPONENT, args.games,
                                                                    args.seed)}]
    print(json.dumps(rows[0]), flush=True)
    for name, iterations in iterations_at_equal_cost(args.iterations, names).items():
        checkpoint = out / name / "checkpoints" / str(iterations)
        row = done.get(name, {})
        if not checkpoint.is_dir() or row.get("iterations") != iterations:
            row = {"search": name, "iterations": iterations,
                   **train(name, out, iterations, args.seed)}
        row["match"] = match(str(checkpoint), args.games, args.seed)
        print(json.dumps(row), flush=True)
        rows.append(row)
        saved.write_text(json.dumps({"rows": rows, "games": args.games, "seed": args.seed},
                                    indent=1))
    (out / "screen.md").write_text(table(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
