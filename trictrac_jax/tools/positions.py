"""The position benchmark's file: decisions (positions and dice) with every legal move
valued, for `python -m trictrac_jax.tools.rate` (docs/position-benchmark.md).

The file (`PATH`, package data; made by `scripts/benchmark_positions.py`) is gzip JSON lines:
a first line `{"header": {...}}` (how it was made: games, sampling, evaluations, seed,
cost), then one decision a line:

    record      the position as the reference's golden state object (`io.state_to_record`):
                the string id alone lacks the roll counts and the points the last roll
                gave the opponent, which the engine needs
    source      the games it comes from ("champion:2@rolls:32 vs greedy", ...)
    game, decision, length   game number in its source, decision number in the game (0:
                White's first), the game's number of decisions
    agent       the agent that played that decision in its game
    actions     its legal actions, ascending (more than one)
    value       each action's value for the mover, points to come: the main evaluation
    rollout, rollout_se   each action's value by the second evaluation, and its standard error
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import pathlib

import jax
import numpy as np

from trictrac_jax import io
from trictrac_jax.env import Trictrac
from trictrac_jax.state import State

PATH = pathlib.Path(__file__).resolve().parent / "data" / "positions.jsonl.gz"
FIELDS = ("record", "source", "game", "decision", "length", "agent", "actions", "value",
          "rollout", "rollout_se")


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """A benchmark's decisions [D], each with its legal actions and their values."""

    header: dict
    decisions: tuple[dict, ...]  # one dict of FIELDS each, lists as read

    def __len__(self) -> int:
        return len(self.decisions)

    def values(self, key: str = "value") -> np.ndarray:
        """float64[D, A]: `key` ('value', 'rollout' or 'rollout_se') of each decision's
        legal actions, padded with NaN to the longest list."""
        width = max(len(d["actions"]) for d in self.decisions)
        out = np.full((len(self), width), np.nan)
        for i, d in enumerate(self.decisions):
            out[i, :len(d[key])] = d[key]
        return out

    def actions(self) -> np.ndarray:
        """int32[D, A]: each decision's legal actions, padded with -1."""
        width = max(len(d["actions"]) for d in self.decisions)
        out = np.full((len(self), width), -1, np.int32)
        for i, d in enumerate(self.decisions):
            out[i, :len(d["actions"])] = d["actions"]
        return out


def write(path, header: dict, decisions) -> pathlib.Path:
    """Write a benchmark file: `header`, then `decisions` (dicts of FIELDS), one a line."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(json.dumps({"header": header}, sort_keys=True) + "\n")
        for d in decisions:
            f.write(json.dumps({k: d[k] for k in FIELDS}, separators=(",", ":")) + "\n")
    return path


def load(path=PATH) -> Benchmark:
    """The benchmark in `path` (default: the shipped one). Raises OSError for a missing or
    unreadable file and ValueError for one that is not a benchmark, naming the file."""
    path = pathlib.Path(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except OSError as e:
        raise OSError(f"{path}: cannot read the benchmark ({e.strerror or e})") from None
    except ValueError as e:
        raise ValueError(f"{path}: not a benchmark file ({e})") from None
    if not lines or "header" not in lines[0]:
        raise ValueError(f"{path}: not a benchmark file (no header line)")
    decisions = tuple(lines[1:])
    for n, d in enumerate(decisions, start=2):
        missing = [k for k in FIELDS if k not in d]
        if missing or not len(d["actions"]) == len(d["value"]) > 1:
            raise ValueError(f"{path}, line {n}: not a benchmark decision "
                             f"({'missing ' + str(missing) if missing else 'actions and values'})")
    if not decisions:
        raise ValueError(f"{path}: no decisions")
    return Benchmark(lines[0]["header"], decisions)


def states(bench: Benchmark) -> State:
    """State[D]: the benchmark's decisions as engine states (restored from their records:
    legal actions and observation recomputed), batched."""
    restore = jax.jit(jax.vmap(Trictrac(max_steps=None).restore))
    return restore(io.states_from_records([d["record"] for d in bench.decisions]))
