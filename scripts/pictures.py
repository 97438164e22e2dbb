"""The pictures of README.md and docs/how-to-play.md, drawn by `trictrac_jax.render.svg` from
one game of `agents.greedy_agent` against itself (seed 3; the same game on every CPU):

    python -m scripts.pictures    # writes docs/images/{start,hit,quarter,hole,midgame}.svg

Each picture is the first position of that game showing what its caption says; the script
prints each roll's report (as the terminal game writes it) beside the file it drew.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Callable, NamedTuple

import jax

from trictrac_jax import agents, devices, render
from trictrac_jax.env import new_game
from trictrac_jax.state import State
from trictrac_jax.tools import notation

ROOT = pathlib.Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"  # where the pictures go
SEED = 3
MIDGAME_DECISION = 60


class Roll(NamedTuple):
    """One roll of the game: the position before it, and its report."""

    index: int  # rolls before it
    before: State
    after: State  # after the dice: the roll scored, the roller to decide
    lines: list[str]  # notation.roll_report
    jans: list[str]  # the names of the jans it made


def rolls(seed: int, count: int):
    """The first `count` rolls of a game of `agents.greedy_agent` against itself."""
    k, agent = notation.kernels(), jax.jit(agents.greedy_agent)
    key, state = jax.random.PRNGKey(seed), new_game()
    for index in range(count):
        key, outcome, agent_key = k.draw(key)
        roll = k.roll(state, outcome)
        dice = tuple(int(d) for d in roll.state._dice)
        jans = [s.name for s in notation.jan_scores(int(state.current_player), dice, roll.jans,
                                             roll.listed)]
        yield Roll(index, state, roll.state, notation.roll_report(state, roll), jans)
        state = k.decide(roll.state, int(agent(agent_key, roll.state)))
        if bool(state.done):
            return


class Picture(NamedTuple):
    name: str
    shows: Callable[[Roll], bool]  # the first roll it holds for is drawn, after the dice


PICTURES = (
    Picture("hit", lambda r: "TrueHitBigJan" in r.jans or "TrueHitSmallJan" in r.jans),
    Picture("quarter", lambda r: "FilledQuarter" in r.jans),
    Picture("hole", lambda r: "wins" in " ".join(r.lines) and "bredouille" in " ".join(r.lines)),
    Picture("midgame", lambda r: r.index == MIDGAME_DECISION),
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rolls", type=int, default=400, help="rolls to search (default: 400)")
    args = parser.parse_args(argv)
    write("start", new_game(), ["Before White's first roll."])
    left = list(PICTURES)
    for roll in rolls(SEED, args.rolls):
        for picture in [p for p in left if p.shows(roll)]:
            write(picture.name, roll.after, roll.lines)
            left.remove(picture)
        if not left:
            return 0
    print(f"not found in {args.rolls} rolls: {[p.name for p in left]}", file=sys.stderr)
    return 1


def write(name: str, state: State, report: list[str]) -> None:
    path = IMAGES / f"{name}.svg"
    path.write_text(render.svg(state))
    print(f"{path.relative_to(ROOT)}:", *report, sep="\n  ")


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
