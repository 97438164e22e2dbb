"""The champion-3 relay: a training run carried on across GPU sessions, one leg a session,
each leg's network, metrics and report committed in the repository's `relay/` with a ledger.

    python -m trictrac_jax.tools.relay                    # the ledger and the next leg's plan
    python -m trictrac_jax.tools.relay adopt OUT          # a session's leg into relay/
    python -m trictrac_jax.tools.relay evaluate           # the newest leg on the CPU, the rule

    relay/ledger.jsonl                  one JSON line per event: a leg, an evaluation
    relay/leg-NN/network.msgpack        the leg's network (the champion's format)
    relay/leg-NN/metrics.jsonl          one record per iteration
    relay/leg-NN/report.md              the run in a page (train/gpu_run.py)

A leg (benchmarks/gpu_session.py runs it) starts from the newest leg's network, or
`champion:2` for the first, and carries it on with champion 2's recipe (train/gpu_run.py's
`CARRY_ON`) at base.yaml's size, evaluated against `champion:2` as it runs; its learning
rate comes from the ledger (`next_leg`). Between sessions the CPU evaluates the newest leg
against `champion:2` (`EVAL_GAMES` games, both seats, both valuing their 32 likeliest moves
over the rolls) and on the position benchmark, and applies the rule by which a network
ships as champion 3 (`ships`; docs/training.md, "Toward champion 3").
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import shutil
import sys
import time
from typing import NamedTuple

ROOT = pathlib.Path(__file__).resolve().parents[2]  # the repository's (a checkout's) root
RELAY = ROOT / "relay"
LEDGER = "ledger.jsonl"
LEG_FILES = ("network.msgpack", "metrics.jsonl", "report.md")
YARDSTICK = "champion:2"  # the first leg's network and every leg's opponent
EVAL_GAMES, EVAL_PLAY = 1000, "rolls:32"
SHIP_RATE, SHIP_LOW = 0.60, 0.55  # the win rate and its 95% interval's lower bound to ship
# The learning rate (next_leg): the first leg's is champion 2's recipe's; a leg whose win
# rate is not GAIN above the best before it (champion 2's own 0.5 to begin with) halves it
# for the next, down to MIN_RATE.
FIRST_RATE, MIN_RATE, GAIN = 3e-4, 3e-5, 0.02
EVAL_SEED = 1000  # a leg's evaluation uses seed EVAL_SEED + its number: no earlier match's


class LegPlan(NamedTuple):
    """The settings of the relay's next leg."""

    number: int
    init_from: str  # a network spec: champion:2 or the newest leg's network file
    learning_rate: float
    seed: int
    why: str  # the rule's reading of the ledger


def leg_name(number: int) -> str:
    return f"leg-{number:02d}"


# --- the ledger -----------------------------------------------------------------------------

def read_ledger(relay: pathlib.Path = RELAY) -> list[dict]:
    """The ledger's events, oldest first ([] where there is none). Raises ValueError naming
    the file and the line that is not a JSON object."""
    path = pathlib.Path(relay) / LEDGER
    if not path.is_file():
        return []
    events = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            event = json.loads(line)
            if not isinstance(event, dict) or "event" not in event:
                raise ValueError("no event")
        except ValueError as e:
            raise ValueError(f"{path}, line {n}: not a ledger event ({e})") from None
        events.append(event)
    return events


def append(relay: pathlib.Path, event: dict):
    relay.mkdir(parents=True, exist_ok=True)
    with (relay / LEDGER).open("a") as f:
        f.write(json.dumps(event, sort_keys=True) + "\n")


def legs(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "leg"]


def evaluation_of(events: list[dict], number: int) -> dict | None:
    """The latest CPU evaluation of leg `number`, or None."""
    found = [e for e in events if e["event"] == "evaluation" and e["leg"] == number]
    return found[-1] if found else None


def score(events: list[dict], leg: dict) -> tuple[float | None, str]:
    """A leg's win rate against the yardstick and where it comes from: the CPU evaluation's
    when there is one, else the run's own (fewer games, its best evaluation), else None."""
    evaluation = evaluation_of(events, leg["leg"])
    if evaluation is not None:
        return evaluation["win_rate"], f"{evaluation['games']} games on the CPU"
    if leg.get("win_rate") is not None:
        return leg["win_rate"], f"{leg['games']} games in its run"
    return None, "not evaluated"


def next_leg(relay: pathlib.Path = RELAY) -> LegPlan:
    """The next leg: from the newest leg's network (champion:2 for the first), at the
    newest leg's learning rate, halved (down to MIN_RATE) when that leg's win rate is not
    GAIN above the best of the legs before it (champion 2's own 0.5 to begin with); kept
    when it is, or when the leg has no win rate."""
    relay = pathlib.Path(relay)
    events = read_ledger(relay)
    done = legs(events)
    if not done:
        return LegPlan(1, YARDSTICK, FIRST_RATE, 1, f"the first leg, from {YARDSTICK} at its "
                                                    "recipe's rate")
    newest = done[-1]
    number, rate = newest["leg"] + 1, newest["learning_rate"]
    init_from = display(relay / leg_name(newest["leg"]) / "network.msgpack")
    rate_now, source = score(events, newest)
    before = [s for s, _ in (score(events, leg) for leg in done[:-1]) if s is not None]
    best = max([0.5, *before])
    if rate_now is None:
        why = f"leg {newest['leg']} has no win rate: its rate kept"
    elif rate_now >= best + GAIN:
        why = (f"leg {newest['leg']} won {rate_now:.3f} ({source}), at least {GAIN:g} above "
               f"the best before it ({best:.3f}): its rate kept")
    else:
        rate = max(rate / 2, MIN_RATE)
        why = (f"leg {newest['leg']} won {rate_now:.3f} ({source}), not {GAIN:g} above the "
               f"best before it ({best:.3f}): its rate halved")
    return LegPlan(number, init_from, rate, number, why)


def leg_overrides(plan: LegPlan) -> list[str]:
    """The config overrides of a leg, after gpu_run.py's recipe."""
    return [f"training.learning_rate={plan.learning_rate:g}", f"run.seed={plan.seed}",
            f"evaluation.opponents=[{YARDSTICK}]"]


def display(path: pathlib.Path) -> str:
    """`path` relative to the repository's root when under it (the spec of a network that
    the session's children, started there, load), else absolute."""
    path = pathlib.Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


# --- a leg's line, adopting a session's leg -------------------------------------------------

def leg_record(leg_dir: pathlib.Path, number: int) -> dict:
    """The ledger line of the leg in `leg_dir`, read from its network's record and its
    metrics: commit, device, minutes (its wall clock, compilation included), self-play
    moves, and the network's win rate against its run's opponent. Raises ValueError naming
    what is missing."""
    from trictrac_jax.az import champion
    leg_dir = pathlib.Path(leg_dir)
    missing = [n for n in LEG_FILES if not (leg_dir / n).is_file()]
    if missing:
        raise ValueError(f"{leg_dir}: no {', '.join(missing)}: not a finished leg")
    _, config, provenance = champion.load(leg_dir / "network.msgpack")
    records = [json.loads(line) for line in (leg_dir / "metrics.jsonl").read_text()
               .splitlines() if line.strip()]
    opponent = config.evaluation.opponents[0] if config.evaluation.opponents else None
    chosen = next((r for r in records if r["iteration"] == provenance.get("iteration")), {})
    key = f"vs_{opponent}"
    return {"event": "leg", "leg": number, "commit": provenance.get("code", "unknown"),
            "device": provenance.get("hardware", "unknown"),
            "minutes": round(records[-1]["elapsed_s"] / 60, 2) if records else 0.0,
            "iterations": records[-1]["iteration"] if records else 0,
            "moves": sum(r["decisions"] for r in records),
            "network_iteration": provenance.get("iteration"),
            "init_from": config.run.init_from, "learning_rate": config.training.learning_rate,
            "seed": config.run.seed, "opponent": opponent,
            "win_rate": chosen.get(key), "low": chosen.get(f"{key}_lo"),
            "high": chosen.get(f"{key}_hi"), "games": chosen.get(f"{key}_games")}


def adopt(source: pathlib.Path, relay: pathlib.Path = RELAY) -> dict:
    """Copy the leg that a session brought back (`source`: the session's folder, or the
    leg's) into `relay` as its next leg, and append its ledger line. Raises ValueError when
    it is not the next leg or not finished."""
    source, relay = pathlib.Path(source), pathlib.Path(relay)
    found = sorted((source / "relay").glob("leg-*")) if (source / "relay").is_dir() \
        else [source]
    if len(found) != 1 or not found[0].name.startswith("leg-") \
            or not found[0].name[4:].isdigit():
        raise ValueError(f"{source}: expected one folder relay/leg-NN or a leg-NN folder")
    number = int(found[0].name[4:])
    expected = next_leg(relay).number
    if number != expected:
        raise ValueError(f"{found[0]}: leg {number}, but the relay's next leg is {expected}")
    record = leg_record(found[0], number)
    target = relay / leg_name(number)
    target.mkdir(parents=True)
    for name in LEG_FILES:
        shutil.copyfile(found[0] / name, target / name)
    append(relay, record)
    return record


# --- the CPU's evaluation and the rule ------------------------------------------------------

def ships(event: dict) -> tuple[bool, str]:
    """Whether an evaluation makes its leg champion 3, and why: at least SHIP_RATE of the
    games won, the 95% interval's lower bound above SHIP_LOW, and less lost per decision
    on the position benchmark than the yardstick."""
    reasons = []
    if event["win_rate"] < SHIP_RATE:
        reasons.append(f"won {event['win_rate']:.3f} < {SHIP_RATE:g}")
    if event["low"] <= SHIP_LOW:
        reasons.append(f"interval's lower bound {event['low']:.3f} <= {SHIP_LOW:g}")
    if event["loss"] >= event["yardstick_loss"]:
        reasons.append(f"loses {event['loss']:.3f} a decision, not less than "
                       f"{event['yardstick_loss']:.3f}")
    return not reasons, "; ".join(reasons) or "all three met"


def evaluate(relay: pathlib.Path = RELAY, number: int | None = None, games: int = EVAL_GAMES,
             seed: int | None = None, play: str = EVAL_PLAY, opponent: str = YARDSTICK,
             benchmark: pathlib.Path | None = None, log=print) -> dict:
    """Evaluate leg `number` (default the newest) on this machine: `games` games against
    `opponent`, both seats, both playing `play`, and both on the position benchmark; append
    the evaluation to the ledger with the rule's verdict, and return it."""
    import jax
    from trictrac_jax.az.run import code_version
    from trictrac_jax.league import network_agents
    from trictrac_jax.tools import positions, rate

    relay = pathlib.Path(relay)
    done = legs(read_ledger(relay))
    if not done:
        raise ValueError(f"{relay}: no leg in the ledger to evaluate")
    number = done[-1]["leg"] if number is None else number
    if number not in [leg["leg"] for leg in done]:
        raise ValueError(f"{relay}: no leg {number} in the ledger")
    path = relay / leg_name(number) / "network.msgpack"
    network = str(path.resolve())
    seed = EVAL_SEED + number if seed is None else seed
    how = network_agents.parse_play(play)
    params, config = network_agents.load_network(network)
    t0 = time.time()
    log(f"leg {number}: {games} games against {opponent}, both playing {play}, seed {seed}")
    match = network_agents.evaluator(config, opponent, games, how)
    result = match(params, jax.random.PRNGKey(seed))
    log(f"leg {number} vs {opponent}: {result.summary()}, 95% Wilson interval")
    bench = positions.load(benchmark or positions.PATH)
    states = positions.states(bench)
    ratings = [rate.rate(f"{name}@{play}", network_agents.load_agent(spec, how), bench, states)
               for name, spec in ((display(path), network), (opponent, opponent))]
    lo, hi = result.interval()
    event = {"event": "evaluation", "leg": number, "opponent": opponent, "play": play,
             "games": result.games, "seed": seed, "wins": result.wins,
             "losses": result.losses, "draws": result.draws,
             "win_rate": result.win_rate, "low": lo, "high": hi,
             "loss": ratings[0].mean_loss.value, "loss_interval": list(ratings[0].mean_loss[1:]),
             "yardstick_loss": ratings[1].mean_loss.value,
             "decisions": ratings[0].decisions, "commit": code_version(),
             "seconds": round(time.time() - t0),
             "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")}
    event["ships"], event["verdict"] = ships(event)
    append(relay, event)
    return event


# --- the ledger as a table ------------------------------------------------------------------

def status(relay: pathlib.Path = RELAY) -> str:
    """The ledger as a markdown table, and the next leg's plan."""
    events = read_ledger(relay)
    lines = ["| leg | commit | device | minutes | moves | from | learning rate | vs "
             f"{YARDSTICK} in its run | vs {YARDSTICK} on the CPU [95%] | loss a decision "
             "(its, the yardstick's) | ships |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for leg in legs(events):
        run = "" if leg["win_rate"] is None else (
            f"{leg['win_rate']:.3f} [{leg['low']:.3f}, {leg['high']:.3f}] in {leg['games']}")
        e = evaluation_of(events, leg["leg"])
        cpu = loss = verdict = ""
        if e is not None:
            cpu = (f"{e['wins']}-{e['losses']}, {e['win_rate']:.3f} [{e['low']:.3f}, "
                   f"{e['high']:.3f}] in {e['games']}")
            loss = f"{e['loss']:.3f}, {e['yardstick_loss']:.3f}"
            verdict = "yes" if e["ships"] else f"no: {e['verdict']}"
        lines.append(f"| {leg['leg']} | {leg['commit']} | {leg['device']} | {leg['minutes']} "
                     f"| {leg['moves']:,} | {leg['init_from']} | {leg['learning_rate']:g} | "
                     f"{run} | {cpu} | {loss} | {verdict} |")
    plan = next_leg(relay)
    return "\n".join([*lines, "", f"next: leg {plan.number} from {plan.init_from}, learning "
                                  f"rate {plan.learning_rate:g}, seed {plan.seed} ({plan.why})"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m trictrac_jax.tools.relay",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--relay", type=pathlib.Path, default=RELAY,
                   help=f"the relay's folder (default {RELAY})")
    sub = p.add_subparsers(dest="command")
    a = sub.add_parser("adopt", help="a session's leg (its OUT, or OUT/relay/leg-NN) into the "
                                     "relay, with its ledger line")
    a.add_argument("source", type=pathlib.Path)
    e = sub.add_parser("evaluate", help="a leg against champion:2 and on the position "
                                        "benchmark; the verdict into the ledger")
    e.add_argument("--leg", type=int, help="default: the newest")
    e.add_argument("--games", type=int, default=EVAL_GAMES)
    e.add_argument("--seed", type=int, help=f"default {EVAL_SEED} + the leg's number")
    args = p.parse_args(argv)
    try:
        if args.command == "adopt":
            record = adopt(args.source, args.relay)
            print(f"leg {record['leg']} adopted into {args.relay / leg_name(record['leg'])}")
        elif args.command == "evaluate":
            if args.games < 2 or args.games % 2:
                p.error(f"--games: must be an even number >= 2, got {args.games}")
            event = evaluate(args.relay, args.leg, args.games, args.seed)
            print(f"leg {event['leg']}: {'ships as champion 3' if event['ships'] else 'does not ship'}"
                  f" ({event['verdict']})")
        print(status(args.relay))
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from trictrac_jax import devices
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
