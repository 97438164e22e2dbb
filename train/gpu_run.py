"""One unattended training run for a fixed time, bringing back a network, its metrics and a
report in one directory.

    python train/gpu_run.py --minutes 8 --out runs/gpu                    # base.yaml, scratch
    python train/gpu_run.py --minutes 8 --init-from champion:2 --out runs/champion3-gpu
    python train/az.py --resume runs/gpu --set training.max_minutes=20    # carry a run on

On a GPU or a TPU the run is configs/base.yaml's, on a CPU configs/quick.yaml's (`--config`
picks another). `--init-from NETWORK` carries that network on with champion 2's recipe
(`CARRY_ON`: the lookahead over 8 moves valued over the rolls, TD targets), evaluated
against it when it is a shipped champion. The run ends within `--minutes` of the end of its
compilation, its last evaluation included; a watchdog ends the process if anything holds it
past that. OUT receives, each file under 16 MB:

* network.msgpack: the best network by the run's evaluation so far (the champion's format,
  with its provenance), the latest until the first evaluation; replaced atomically, so a
  killed run leaves the last one written;
* metrics.jsonl: one record per iteration (docs/training.md, "What a run writes");
* report.md: what ran, on what, for how long, the best network's win rate with its 95%
  interval and the commands to check it; rewritten with the network;
* config.yaml and checkpoints/ (`python train/az.py --resume OUT` continues the run).

`--copy-to DIR` keeps a copy of the first three in DIR, renewed after every iteration: a
folder that must come back whole from a lent machine, without the checkpoints
(benchmarks/gpu_session.py).
"""
from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import shlex
import shutil
import sys
import threading

import jax

from trictrac_jax import devices
from trictrac_jax.az import champion
from trictrac_jax.az import config as config_lib
from trictrac_jax.az import run
from trictrac_jax.league import network_agents, runs

CONFIGS = pathlib.Path(__file__).resolve().parents[1] / "configs"
# Champion 2's recipe (docs/journal/champion-2.md; docs/training.md, "Toward champion 3"), carried on
# until the clock stops it: the learning rate stays at its peak (a cosine would be cut short
# wherever the clock falls).
CARRY_ON = ["search.algorithm=lookahead", "search.max_num_considered_actions=8",
            "search.worth_temperature=0.01", "replay.bootstrap=0.8",
            "training.learning_rate=0.0003", "training.warmup_updates=50",
            "training.schedule=constant", "training.iterations=1000000",
            "evaluation.lookahead=32", "evaluation.rolls=true", "evaluation.games=256",
            "evaluation.every=20", "checkpoint.every=20", "checkpoint.keep_last=4"]
# Seconds kept, out of --minutes, to write the network and the report after the last
# checkpoint; and those the watchdog allows past --minutes (the run's set-up: loading the
# network, starting the games).
FINISH_S = 10.0
GRACE_S = 30.0
MAX_FILE_BYTES = 16 * 2**20
BROUGHT_BACK = ("network.msgpack", "metrics.jsonl", "report.md")  # what --copy-to copies


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, required=True,
                   help="minutes of training after compilation, the last evaluation included")
    p.add_argument("--out", required=True, help="the run's directory (a new one)")
    p.add_argument("--init-from", metavar="NETWORK",
                   help="carry this network on (champion:2, a network file, a run) with "
                        "champion 2's recipe, at the network's width and depth")
    p.add_argument("--config", help="default: configs/base.yaml on a GPU or TPU, "
                                    "configs/quick.yaml on a CPU")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (after the recipe's), e.g. --set run.seed=3")
    p.add_argument("--copy-to", type=pathlib.Path, metavar="DIR",
                   help="keep a copy of network.msgpack, metrics.jsonl and report.md in DIR, "
                        "renewed after every iteration (no checkpoints)")
    args = p.parse_args(argv)
    if args.minutes <= 0:
        p.error(f"--minutes: must be > 0, got {args.minutes:g}")
    return args


def default_config() -> pathlib.Path:
    return CONFIGS / ("quick.yaml" if jax.default_backend() == "cpu" else "base.yaml")


def carry_on(spec: str) -> list[str]:
    """The overrides that carry network `spec` on: its shape, champion 2's recipe, and the
    evaluation against it when it is a shipped champion (else against greedy)."""
    try:
        _, source = network_agents.load_network(spec)
    except (OSError, ValueError) as e:
        raise config_lib.ConfigError(f"--init-from: {e}") from None
    opponent = spec if champion.is_name(spec) else "greedy"
    return [f"run.init_from={spec}", f"network.width={source.network.width}",
            f"network.blocks={source.network.blocks}", *CARRY_ON,
            f"evaluation.opponents=[{opponent}]"]


def run_config(args) -> tuple[config_lib.Config, list[str]]:
    """The run's config and the overrides that made it from its file."""
    # metrics.jsonl is the run's record: no TensorBoard events beside it
    overrides = ["logging.tensorboard=false"] + \
        (carry_on(args.init_from) if args.init_from else []) + list(args.set) + \
        [f"run.dir={args.out}"]
    path = args.config or default_config()
    config = config_lib.load_config(path, overrides)
    if (pathlib.Path(args.out) / "checkpoints").is_dir():
        raise config_lib.ConfigError(f"--out: {args.out} already holds a run; continue it "
                                     f"with python train/az.py --resume {args.out}")
    return config, [str(path), *overrides]


class Watchdog:
    """Calls `stop()` once `seconds` have passed since `arm`, unless `disarm`ed first."""

    def __init__(self, stop):
        self.stop, self.timer = stop, None

    def arm(self, seconds: float):
        self.timer = threading.Timer(seconds, self.stop)
        self.timer.daemon = True
        self.timer.start()

    def disarm(self):
        if self.timer is not None:
            self.timer.cancel()


def write_bytes_atomically(path: pathlib.Path, data: bytes):
    tmp = path.with_name(f"{path.name}.{threading.get_ident()}.tmp")  # the watchdog's apart
    tmp.write_bytes(data)
    os.replace(tmp, path)


def copy_out(out: pathlib.Path, to: pathlib.Path | None):
    """Copy OUT's `BROUGHT_BACK` files that exist into `to` (each replaced at once)."""
    if to is None:
        return
    to.mkdir(parents=True, exist_ok=True)
    for name in BROUGHT_BACK:
        if (out / name).is_file():
            tmp = to / f"{name}.{threading.get_ident()}.tmp"
            shutil.copyfile(out / name, tmp)
            os.replace(tmp, to / name)


def export(out: pathlib.Path, params, config: config_lib.Config, provenance: dict):
    """OUT/network.msgpack, replaced at once (written beside it, then renamed)."""
    tmp = champion.save(jax.device_get(params), config, provenance, out / "network.tmp")
    os.replace(tmp, out / "network.msgpack")


def win_rate(record: dict, opponent: str) -> str:
    return (f"{record[f'vs_{opponent}']:.3f} [{record[f'vs_{opponent}_lo']:.3f}, "
            f"{record[f'vs_{opponent}_hi']:.3f}] in {record[f'vs_{opponent}_games']} games")


def report(out: pathlib.Path, config: config_lib.Config, made_by: list[str], facts: dict,
           records: list[dict], best: dict | None, status: str) -> str:
    """report.md: the run in a page."""
    ev = config.evaluation
    opp = ev.opponents[0] if ev.opponents else None
    last = records[-1] if records else {}
    spent = sum(r.get("eval_s", 0.0) for r in records)
    elapsed = last.get("elapsed_s", 0.0)
    compiled = sum(r.get("compile_s", 0.0) for r in records)
    rates = sorted(r["decisions_per_s"] for r in records)
    play = (f"lookahead over its {ev.lookahead} likeliest moves" if ev.lookahead else
            "raw policy") + (", each valued over the rolls" if ev.rolls else "")
    flags = (f" --lookahead {ev.lookahead}" if ev.lookahead else "") + \
        (" --rolls" if ev.rolls else "")
    lines = [f"# Training run {out}", "",
             f"Status: {status}.", "",
             f"- command: `{facts['command']}`",
             f"- config: {made_by[0]} with {' '.join(made_by[1:]) or 'no override'}",
             f"- code at {facts['code']}, jax {jax.__version__}; {facts['device']}; "
             f"started {facts['started']}",
             f"- iteration {last.get('iteration', 0)}, {last.get('updates', 0):,} updates; "
             f"wall clock {elapsed / 60:.1f} min: compilation {compiled:.0f} s, evaluation "
             f"{spent:.0f} s ({spent / max(elapsed, 1e-9):.0%}, the evaluators' compilation "
             f"included)",
             f"- self-play: median {rates[len(rates) // 2] if rates else 0:,.0f} moves/s "
             f"(decisions a second, the updates included)", ""]
    if best is not None and opp is not None and f"vs_{opp}" in best:
        lines += [f"**network.msgpack** is iteration {best['iteration']} "
                  f"({best['elapsed_s'] / 60:.1f} min): against {opp} "
                  f"{win_rate(best, opp)}, both seats, the network playing its {play}; 95% "
                  f"Wilson interval.", ""]
    else:
        lines += [f"**network.msgpack** is the latest network (iteration "
                  f"{last.get('iteration', 0)}): not evaluated.", ""]
    evaluated = [r for r in records if opp is not None and f"vs_{opp}" in r]
    if evaluated:
        lines += [f"| iteration | minutes | vs {opp} [95%] |", "|---|---|---|"]
        lines += [f"| {r['iteration']} | {r['elapsed_s'] / 60:.1f} | {win_rate(r, opp)} |"
                  for r in evaluated]
        lines.append("")
    net = out / "network.msgpack"
    yardstick = opp or "greedy"
    lines += ["Next:", "", "```bash",
              f"python train/eval.py --checkpoint {net} --opponent {yardstick} --games 1000"
              f"{flags}",
              f"python train/plot.py {out}",
              f"python -m trictrac_jax.tools.play --opponent {net}",
              f"python train/az.py --resume {out} --set training.max_minutes=M   # to M min",
              "```", ""]
    if opp is not None and champion.is_name(opp):
        lines += [f"It succeeds {opp} if it wins at least 60% of those 1,000 games, the "
                  f"interval's lower bound above 55%, and loses less a decision on the "
                  f"position benchmark (`python -m trictrac_jax.tools.rate {net} {opp}`; "
                  f"docs/training.md, \"Toward champion 3\").", ""]
    return "\n".join(lines)


def train_for_minutes(args, command: str, log=print, stop=None):
    """The run of `args` (`command` is how it was started, for the report); `stop` (default:
    exit at once with status 124) is what the watchdog calls."""
    config, made_by = run_config(args)
    out = pathlib.Path(config.run.dir)
    log(f"running on {devices.describe()}: {made_by[0]} for {args.minutes:g} min into {out}")
    facts = {"command": command, "code": run.code_version(), "device": devices.describe(),
             "started": datetime.datetime.now(datetime.timezone.utc).strftime(
                 "%Y-%m-%d %H:%M UTC")}
    opponent = config.evaluation.opponents[0] if config.evaluation.opponents else None
    records, best = [], {"record": None}

    def write_report(status: str):
        text = report(out, config, made_by, facts, records, best["record"], status)
        write_bytes_atomically(out / "report.md", text.encode())

    def out_of_time():
        log(f"out of time: stopping; {out / 'network.msgpack'} holds the last network written")
        write_report("stopped by the watchdog, past --minutes")
        copy_out(out, args.copy_to)
        (stop or (lambda: os._exit(124)))()

    watchdog = Watchdog(out_of_time)

    def on_iteration(record: dict, state):
        records.append(record)
        if len(records) == 1:  # the clock started after compilation, an iteration ago
            watchdog.arm(60 * args.minutes + GRACE_S - record["iteration_s"])
        scored = opponent is not None and f"vs_{opponent}" in record
        if scored and (best["record"] is None or record[f"vs_{opponent}"]
                       >= best["record"][f"vs_{opponent}"]):
            best["record"] = record
        elif best["record"] is not None or record["iteration"] % config.checkpoint.every:
            copy_out(out, args.copy_to)
            return
        provenance = {"command": facts["command"], "code": facts["code"],
                      "hardware": facts["device"], "iteration": record["iteration"],
                      "elapsed_s": record["elapsed_s"],
                      "evaluation": win_rate(record, opponent) if scored else "not evaluated"}
        export(out, state.params, config, provenance)
        write_report(f"running (written at iteration {record['iteration']})")
        copy_out(out, args.copy_to)

    try:
        runs.train_az(config, log=log, budget_s=60 * args.minutes - FINISH_S,
                      on_iteration=on_iteration)
    finally:
        watchdog.disarm()
    if not (out / "network.msgpack").exists() and records:  # ended before any export
        params, _ = network_agents.load_network(str(out))
        export(out, params, config, {"command": facts["command"], "code": facts["code"],
                                     "iteration": records[-1]["iteration"],
                                     "evaluation": "not evaluated"})
    write_report("finished")
    copy_out(out, args.copy_to)
    too_big = [f"{p} ({p.stat().st_size:,} bytes)" for p in out.rglob("*")
               if p.is_file() and p.stat().st_size > MAX_FILE_BYTES]
    log(f"wrote {out / 'network.msgpack'}, {out / 'metrics.jsonl'}, {out / 'report.md'}")
    if too_big:
        log(f"warning: files over 16 MB: {', '.join(too_big)}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    command = shlex.join(["python", "train/gpu_run.py", *argv])
    return run.exit_code(train_for_minutes, args, command)


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
