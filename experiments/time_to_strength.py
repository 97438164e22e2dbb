"""Time to strength: train several settings for the same wall-clock and rate each one's
network at fixed marks against one opponent.

    python -m experiments.time_to_strength --minutes 10,20,30 --games 1000 --out runs/tts
    python -m experiments.time_to_strength --setting base=configs/base.yaml \\
        --setting g16=configs/base.yaml,search.num_simulations=16

Each setting (NAME=CONFIG[,KEY=VALUE...]) trains in its own process with
`training.max_minutes` = the last mark and `checkpoint.snapshot_minutes` = the marks (the
clock starts with the run: compilation and the run's own evaluations count). Each snapshot
then plays `--games` games against `--opponent`, both seats equally, with the 1-ply
`--lookahead` (0: the raw policy). Writes OUT/time_to_strength.md and .json.

Supports docs/training.md, "Choosing base.yaml" (strength per GPU minute, measured on a GPU).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time

import jax

from trictrac_jax import devices
from trictrac_jax.az import champion
from trictrac_jax.league import network_agents
from experiments.recipes import SEARCHES, TD

ROOT = pathlib.Path(__file__).resolve().parents[1]  # train.az runs from here

# The candidates for base.yaml on one GPU (docs/training.md "Choosing base.yaml"): base.yaml
# (Gumbel, 8 simulations), the stochastic search it had before, Gumbel at 16, and the
# lookahead over the 21 distinct rolls with TD targets (champion 2's recipe, 8 moves).
def on_base(name: str, *more: str) -> str:
    """The setting NAME=configs/base.yaml with the search `SEARCHES[name]` and `more`."""
    return ",".join([f"{name}=configs/base.yaml", *SEARCHES[name], *more])


DEFAULT_SETTINGS = ("base=configs/base.yaml", on_base("stochastic64"), on_base("gumbel16"),
                    on_base("lookahead8-21", *TD))


def parse_setting(text: str) -> tuple[str, str, list[str]]:
    """'NAME=CONFIG[,KEY=VALUE...]' -> (name, config path, overrides)."""
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest:
        raise ValueError(f"--setting {text!r}: expected NAME=CONFIG[,KEY=VALUE...]")
    config, *overrides = rest.split(",")
    return name, config, overrides


def train_setting(name: str, config: str, overrides: list[str], minutes: list[float],
                  out: pathlib.Path) -> pathlib.Path:
    """Train one setting for max(minutes) in a fresh process; its run directory."""
    run_dir = out / name
    marks = "[" + ",".join(f"{m:g}" for m in minutes) + "]"
    command = [sys.executable, "-m", "train.az",
               "--config", str(pathlib.Path(config).resolve()),
               "--set", f"run.dir={run_dir.resolve()}",
               "--set", "training.iterations=1000000",
               "--set", f"training.max_minutes={max(minutes):g}",
               "--set", f"checkpoint.snapshot_minutes={marks}"]
    for override in overrides:
        command += ["--set", override]
    print(f"[{name}] {' '.join(command)}", flush=True)
    subprocess.run(command, check=True, cwd=ROOT)  # train.az: the checkout's
    return run_dir


def rate(path: pathlib.Path, opponent: str, games: int, lookahead: int, seed: int) -> dict:
    """A snapshot's match against `opponent`: its provenance, win rate and 95% interval.
    Snapshots of one setting share its compiled match."""
    params, config, provenance = champion.load(path)
    match = network_agents.evaluator(config, opponent, games,
                              network_agents.Play(lookahead=lookahead))
    result = match(params, jax.random.PRNGKey(seed))
    lo, hi = result.interval()
    return {**provenance, "win_rate": result.win_rate, "lo": lo, "hi": hi,
            "games": result.games, "summary": result.summary()}


def table(rows: list[dict], opponent: str, lookahead: int) -> str:
    plays = (f"the 1-ply lookahead over its {lookahead} likeliest moves" if lookahead
             else "its raw policy")
    head = (f"Device: {jax.devices()[0].device_kind} ({jax.default_backend()}). Opponent: "
            f"`{opponent}`, both seats equally; the network plays {plays}.\n\n"
            "| setting | minutes | iteration | win rate [95% CI] | games |\n|---|---|---|---|---|\n")
    return head + "".join(
        f"| {r['setting']} | {r['minutes']:g} | {r['iteration']} | {100 * r['win_rate']:.1f}% "
        f"[{100 * r['lo']:.1f}, {100 * r['hi']:.1f}] | {r['games']} |\n" for r in rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--setting", action="append", metavar="NAME=CONFIG[,KEY=VALUE...]",
                   help=f"repeatable (default: {len(DEFAULT_SETTINGS)} GPU candidates, see the "
                        f"script)")
    p.add_argument("--minutes", default="10,20,30", help="wall-clock marks (default: 10,20,30)")
    p.add_argument("--opponent", default="greedy")
    p.add_argument("--games", type=int, default=1000, help="games per snapshot (even)")
    p.add_argument("--lookahead", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/time_to_strength")
    args = p.parse_args(argv)
    try:
        settings = [parse_setting(s) for s in (args.setting or DEFAULT_SETTINGS)]
        minutes = [float(m) for m in args.minutes.split(",")]
        network_agents.load_agent(args.opponent)  # a bad opponent stops here, before any training
    except ValueError as e:
        p.error(str(e))
    if args.games < 2 or args.games % 2:
        p.error(f"--games: must be an even number >= 2, got {args.games}")
    out = pathlib.Path(args.out)
    rows = []
    for name, config, overrides in settings:
        run_dir = train_setting(name, config, overrides, minutes, out)
        for m in minutes:
            snapshot = run_dir / "snapshots" / f"{m:g}min.msgpack"
            if not snapshot.is_file():  # the run ended before this mark
                print(f"[{name}] no snapshot at {m:g} min", flush=True)
                continue
            t0 = time.time()
            row = {"setting": name, **rate(snapshot, args.opponent, args.games,
                                           args.lookahead, args.seed)}
            print(f"[{name}] {m:g} min (iteration {row['iteration']}): {row['summary']}, "
                  f"{time.time() - t0:.0f}s", flush=True)
            rows.append(row)
    out.mkdir(parents=True, exist_ok=True)
    (out / "time_to_strength.json").write_text(json.dumps(rows, indent=1))
    (out / "time_to_strength.md").write_text(table(rows, args.opponent, args.lookahead))
    print(table(rows, args.opponent, args.lookahead))
    return 0


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
