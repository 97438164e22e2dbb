"""Rate agents on the position benchmark: the value each loses per decision against the
benchmark's deep evaluation (docs/position-benchmark.md).

    python -m trictrac_jax.tools.rate greedy champion:2
    python -m trictrac_jax.tools.rate random first greedy:32 web champion:1@search:64 --json

An AGENT is any `network_agents.load_agent` spec: random, first, greedy, greedy:K, web,
champion, champion:N, a network file or a run directory, with @PLAY (policy, lookahead:K,
rolls:K, search:N, gumbel:N, gumbel_stochastic:N); a network named without @PLAY plays
`DEFAULT_PLAY` (as the terminal game does). For each agent: the mean value lost per decision
(the best move's value minus the value of the move played, in points) with its 95% bootstrap
interval, the share of decisions lost by more than `--blunder` points and the share where it
plays a best move (within `TIE` points of the best), each with its 95% Wilson interval, and
the number of decisions.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import devices
from trictrac_jax import agents
from trictrac_jax.league import network_agents
from trictrac_jax.az.checkpoint import CheckpointError
from trictrac_jax.league.matches import wilson
from trictrac_jax.tools import positions

DEFAULT_PLAY = "rolls:32"  # a network without @PLAY: its lookahead over the rolls
BLUNDER = 2.0  # points lost in one decision that make a blunder (docs: the distribution)
TIE = 1e-3  # points: a move this close to the best counts as best
BATCH = 128  # decisions per compiled call
BOOTSTRAP = 10_000  # resamples of the mean loss's interval


class Interval(NamedTuple):
    """An estimate with its 95% interval."""

    value: float
    low: float
    high: float


class Rating(NamedTuple):
    """An agent's record on the benchmark."""

    agent: str
    decisions: int
    mean_loss: Interval  # points per decision
    blunders: Interval  # share of decisions losing more than the threshold
    best: Interval  # share of decisions playing a best move
    seconds: float  # wall-clock to choose all the moves, compilation included


def agent_spec(spec: str) -> str:
    """The name of the agent `spec` loads: a network named without @PLAY plays DEFAULT_PLAY."""
    name, play = network_agents.split_spec(spec)
    return spec if play is not None or agents.baseline(name) is not None \
        else f"{spec}@{DEFAULT_PLAY}"


def choices(agent, states, key) -> np.ndarray:
    """int32[D]: the agent's action in each of states [D], BATCH decisions a call (the last
    batch padded by repeating its first decision)."""
    decide = jax.jit(jax.vmap(agent))
    count, out = states.current_player.shape[0], []
    for start in range(0, count, BATCH):
        index = np.arange(start, start + BATCH)
        batch = jax.tree.map(lambda x: x[jnp.asarray(np.where(index < count, index, start))],
                             states)
        keys = jax.random.split(jax.random.fold_in(key, start), BATCH)
        out.append(np.asarray(decide(keys, batch))[:min(BATCH, count - start)])
    return np.concatenate(out)


def losses(bench: positions.Benchmark, chosen) -> np.ndarray:
    """float64[D]: the points lost in each decision by playing `chosen` int[D]. Raises
    ValueError if an action is not among the decision's legal ones."""
    actions, values = bench.actions(), bench.values()
    hit = actions == np.asarray(chosen)[:, None]
    if not hit.any(-1).all():
        bad = int(np.flatnonzero(~hit.any(-1))[0])
        raise ValueError(f"decision {bad}: action {int(chosen[bad])} is not legal there")
    return np.nanmax(values, -1) - values[hit]


def bootstrap_mean(x: np.ndarray, seed: int = 0) -> Interval:
    """The mean of `x` with its 95% percentile bootstrap interval (BOOTSTRAP resamples)."""
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, (BOOTSTRAP, x.size))].mean(-1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Interval(float(x.mean()), float(low), float(high))


def share(hits: np.ndarray) -> Interval:
    """The share of True in `hits` with its 95% Wilson interval."""
    n, k = hits.size, int(hits.sum())
    return Interval(k / n, *wilson(k, n))


def summarise(agent: str, lost: np.ndarray, blunder: float, seconds: float) -> Rating:
    """The Rating of `lost` float[D], the points lost per decision."""
    return Rating(agent, int(lost.size), bootstrap_mean(lost), share(lost > blunder),
                  share(lost <= TIE), seconds)


def rate(name: str, agent, bench: positions.Benchmark, states, blunder: float = BLUNDER,
         seed: int = 0) -> Rating:
    """The Rating of `agent` (`(key, state) -> action`, called `name`) on `bench`, whose
    `states` [D] it decides."""
    start = time.time()
    chosen = choices(agent, states, jax.random.PRNGKey(seed))
    return summarise(name, losses(bench, chosen), blunder, time.time() - start)


def table(ratings: list[Rating], blunder: float) -> str:
    """A markdown table of `ratings`."""
    pct = lambda i: f"{100 * i.value:.1f}% [{100 * i.low:.1f}, {100 * i.high:.1f}]"
    lines = [f"| agent | decisions | mean loss, points [95%] | lost > {blunder:g} points "
             f"[95%] | best move [95%] | seconds |", "|---|---|---|---|---|---|"]
    for r in ratings:
        m = r.mean_loss
        lines.append(f"| {r.agent} | {r.decisions} | {m.value:.3f} [{m.low:.3f}, "
                     f"{m.high:.3f}] | {pct(r.blunders)} | {pct(r.best)} | {r.seconds:.0f} |")
    return "\n".join(lines)


def as_json(r: Rating) -> dict:
    """`r` as a JSON-ready dict, intervals as {value, low, high}."""
    rounded = lambda i: {k: round(x, 4) for k, x in i._asdict().items()}
    return {k: rounded(v) if isinstance(v, Interval) else v for k, v in r._asdict().items()}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m trictrac_jax.tools.rate",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("agents", nargs="+", metavar="AGENT",
                   help=f"network_agents.load_agent specs; a network without @PLAY plays {DEFAULT_PLAY}")
    p.add_argument("--benchmark", default=str(positions.PATH), metavar="FILE",
                   help="the benchmark file (default: the shipped one)")
    p.add_argument("--blunder", type=float, default=BLUNDER, metavar="POINTS",
                   help=f"points lost that make a blunder (default {BLUNDER:g})")
    p.add_argument("--seed", type=int, default=0, help="random agents' key (default 0)")
    p.add_argument("--json", action="store_true", help="one JSON object per agent")
    args = p.parse_args(argv)
    if not (args.blunder > 0 and math.isfinite(args.blunder)):
        p.error(f"--blunder: must be a positive number of points, got {args.blunder}")
    return args


def main(argv=None) -> int:
    """Rates the agents named in `argv` (default: the command line) on the position
    benchmark and prints their table (or JSON lines); returns the exit status."""
    args = parse_args(argv)
    try:
        # all loaded (and their specs checked) before any plays
        loaded = [network_agents.load_agent(spec, network_agents.parse_play(DEFAULT_PLAY))
                  for spec in args.agents]
        names = [agent_spec(spec) for spec in args.agents]
        bench = positions.load(args.benchmark)
        states = positions.states(bench)
        ratings = []
        for name, agent in zip(names, loaded):
            ratings.append(rate(name, agent, bench, states, args.blunder, args.seed))
            if args.json:
                print(json.dumps(as_json(ratings[-1])), flush=True)
            else:
                print(f"{ratings[-1].agent}: {ratings[-1].mean_loss.value:.3f} points lost "
                      f"per decision", file=sys.stderr, flush=True)
    except (ValueError, OSError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not args.json:
        print(table(ratings, args.blunder))
    return 0


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
