"""Strength per self-play decision: each candidate self-play recipe trained from scratch for
the same number of self-play decisions and updates, its network rated at the same marks.

    python -m experiments.strength_per_decision --jobs 2 --out runs/spd
    python -m experiments.strength_per_decision --recipe gumbel8 --recipe lookahead8 --iterations 60

Every recipe is configs/quick.yaml's size (a 128 x 2 network; an iteration: 128 games each
advanced 32 decisions, then 32 updates of 256) with its own search (`RECIPES`), so an
iteration is the same number of decisions and updates for all. Each trains from scratch in
its own process (`--jobs` at once), checkpointing every `--every` iterations. Each mark's
network is then rated on the position benchmark (points lost per decision, `tools.rate`)
playing its raw policy and its lookahead over the rolls, and at the last mark in `--games`
games against `--opponent`, both seats, with the 1-ply lookahead over its 32 likeliest
moves. Writes OUT/strength.md and .json; marks already in the .json are not rated again
(`--rate-only`: rate the runs in OUT, train nothing).

Supports docs/training.md, "Choosing base.yaml" (the strength a self-play decision buys).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import subprocess
import sys
import time

import jax

from trictrac_jax import devices
from trictrac_jax.league import network_agents
from trictrac_jax.tools import positions, rate
from experiments.recipes import SEARCHES, TD

ROOT = pathlib.Path(__file__).resolve().parents[1]
BASE_CONFIG = "configs/quick.yaml"
# name -> quick.yaml's overrides: the searches of `recipes.SEARCHES` (the lookahead with TD
# targets), and the lookahead without them
RECIPES = {name: (*search, *TD) if name.startswith("lookahead") else search
           for name, search in SEARCHES.items() if not name.endswith("bf16")}
RECIPES["lookahead16-outcome"] = (*SEARCHES["lookahead16"], "replay.bootstrap=0")
PLAYS = ("policy", "rolls:32")  # how each network plays the benchmark


def train(name: str, out: pathlib.Path, iterations: int, every: int, seed: int) -> float:
    """Train recipe `name` from scratch in a fresh process; its wall-clock seconds."""
    command = [sys.executable, "-m", "train.az",
               "--config", str(ROOT / BASE_CONFIG), "--set", f"run.dir={out.resolve() / name}",
               "--set", f"run.seed={seed}", "--set", f"training.iterations={iterations}",
               "--set", f"checkpoint.every={every}", "--set", "checkpoint.keep_last=1000",
               "--set", f"evaluation.every={iterations + 1}", "--set", "logging.tensorboard=false"]
    for override in RECIPES[name]:
        command += ["--set", override]
    start = time.time()
    with open(out / f"{name}.log", "w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    return time.time() - start


def rate_mark(name: str, checkpoint: pathlib.Path, bench, states, last: bool, args) -> dict:
    """The network at `checkpoint` on the benchmark (each of PLAYS), and at the last mark
    in a match against `args.opponent`."""
    row = {"recipe": name, "iteration": int(checkpoint.name)}
    params, config = network_agents.load_network(str(checkpoint))
    for play in PLAYS:
        agent = network_agents.checkpoint_agent(params, config, network_agents.parse_play(play))
        row[play] = rate.as_json(rate.rate(play, agent, bench, states))["mean_loss"]
    if last:
        match = network_agents.evaluator(config, args.opponent, args.games,
                                         network_agents.Play(lookahead=32))
        result = match(params, jax.random.PRNGKey(args.seed))
        lo, hi = result.interval()
        row["match"] = {"win_rate": result.win_rate, "lo": lo, "hi": hi, "games": result.games}
    return row


def table(rows: list[dict], args) -> str:
    """The ratings as a markdown table."""
    games, updates = 128 * 32, 32  # quick.yaml: decisions and updates an iteration
    head = (f"| recipe (quick.yaml +) | iteration | self-play decisions | updates | loss a "
            f"decision, raw policy [95%] | loss a decision, lookahead over the rolls [95%] | "
            f"vs `{args.opponent}`, {args.games} games [95%] |\n"
            + "|---|---|---|---|---|---|---|\n")
    interval = lambda i: f"{i['value']:.3f} [{i['low']:.3f}, {i['high']:.3f}]"
    lines = []
    for r in rows:
        m = r.get("match")
        match = (f"{100 * m['win_rate']:.1f}% [{100 * m['lo']:.1f}, {100 * m['hi']:.1f}]"
                 if m else "")
        lines.append(f"| {r['recipe']} | {r['iteration']} | {r['iteration'] * games:,} | "
                     f"{r['iteration'] * updates:,} | {interval(r['policy'])} | "
                     f"{interval(r['rolls:32'])} | {match} |")
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--recipe", action="append", choices=sorted(RECIPES),
                   help="a recipe to train (repeatable; default: all)")
    p.add_argument("--iterations", type=int, default=120)
    p.add_argument("--every", type=int, default=40, help="iterations between rated marks")
    p.add_argument("--jobs", type=int, default=1, help="recipes trained at once")
    p.add_argument("--opponent", default="greedy")
    p.add_argument("--games", type=int, default=400, help="games of the last mark's match")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/strength_per_decision")
    step = p.add_mutually_exclusive_group()
    step.add_argument("--train-only", action="store_true", help="train, rate later")
    step.add_argument("--rate-only", action="store_true",
                      help="rate the recipes' runs already in OUT")
    args = p.parse_args(argv)
    if args.games < 2 or args.games % 2:
        p.error(f"--games: must be an even number >= 2, got {args.games}")
    if args.every < 1 or args.iterations % args.every:
        p.error(f"--iterations ({args.iterations}) must be a multiple of --every ({args.every})")
    names = args.recipe or list(RECIPES)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.rate_only:
        names = [n for n in names if (out / n / "checkpoints" / str(args.iterations)).is_dir()]
    else:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for n, run in [(n, pool.submit(train, n, out, args.iterations, args.every,
                                           args.seed)) for n in names]:
                print(f"[{n}] trained in {run.result():.0f}s", flush=True)
        if args.train_only:
            return 0
    bench = positions.load(positions.PATH)
    states = positions.states(bench)
    # the marks rated before (same opponent and games) are kept, not rated again
    saved = out / "strength.json"
    rated = {(r["recipe"], r["iteration"]): r
             for r in (json.loads(saved.read_text())["rows"] if saved.is_file() else [])
             if r.get("opponent", args.opponent) == args.opponent
             and r.get("games", args.games) == args.games}
    rows = []
    for n in names:
        for iteration in range(args.every, args.iterations + 1, args.every):
            last = iteration == args.iterations
            row = rated.get((n, iteration))
            if row is None or (last and "match" not in row):
                row = {**rate_mark(n, out / n / "checkpoints" / str(iteration), bench, states,
                                   last, args), "opponent": args.opponent, "games": args.games}
                print(json.dumps(row), flush=True)
            rows.append(row)
    kept = [r for k, r in rated.items() if k[0] not in names]  # other recipes' rows
    rows = kept + rows
    saved.write_text(json.dumps({"rows": rows}, indent=1))
    (out / "strength.md").write_text(table(rows, args))
    print(table(rows, args))
    return 0


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
