"""Play Trictrac in a terminal against a bot.

    python -m trictrac_jax.tools.play
        [--opponent champion|greedy|greedy:K|web|first|random|CHECKPOINT]
        [--seed N] [--colour white|black] [--lookahead K] [--no-rolls]

Each roll is explained (which jans, how many ways, how many points, for whom); legal moves
are listed in Trictrac notation on the real board (`1-6 6-11`, bear-off `20-off`, `go`), a
move listed once however many ways its checkers reach the same fields; choose one by its
number or by its notation. `help`, `board`, `quit` (or end of input, or Ctrl-C). The rules,
for players: docs/how-to-play.md.

The loop (`play_game`) takes input and output streams, so tests and notebooks drive it with
scripted input. Notation, roll reports and reading a choice are in notation.py.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import weakref
from typing import Callable, TextIO

import jax

from trictrac_jax import agents
from trictrac_jax import devices
from trictrac_jax import render
from trictrac_jax.env import new_game
from trictrac_jax.state import State
from trictrac_jax.tools.notation import (GO, ChoiceError, Kernels, decision_report,
                                         distinct_moves, kernels, legal_moves, parse_choice,
                                         roll_report)

COLOURS = {"white": 0, "black": 1}
QUIT_WORDS = ("q", "quit", "exit")
HELP_WORDS = ("h", "help", "?")
BOARD_WORDS = ("b", "board")
RULES = "docs/how-to-play.md"  # the rules for players, in the repository


# ---------------------------------------------------------------------------------------------
#  The game loop
# ---------------------------------------------------------------------------------------------

Agent = Callable[[jax.Array, State], jax.Array]  # (key, state) -> action, one game

# Opponents that have moved in this process: compiled, they answer at once.
_COMPILED: weakref.WeakSet = weakref.WeakSet()


def play_game(opponent: Agent, human: int, seed: int, stdin: TextIO, stdout: TextIO,
              k: Kernels | None = None) -> State:
    """Play one game, the human being colour `human` (0 White, 1 Black), reading choices
    from `stdin` (anything with `readline`, e.g. `Prompt()` in a notebook) and writing to
    `stdout`. Returns the last state: finished, or where the player quit (or the input
    ended)."""
    k = k or kernels()
    say = functools.partial(print, file=stdout)
    key = jax.random.PRNGKey(seed)
    say(f"Trictrac (seed {seed}): you play {render.COLOUR_NAMES[human]} "
        f"({render.TEXT_SYMBOLS[human]}). Choose a move by its number or its notation "
        f"(e.g. 1-6 6-11, 20-off, go); 'help', 'board', 'quit'.")
    state, key = _roll_and_report(k, new_game(), key, say)
    while not bool(state.done):
        mover = int(state.current_player)
        if mover == human:
            action = _ask(state, k, stdin, say)
            if action is None:
                say("Goodbye.")
                return state
        else:
            if opponent not in _COMPILED:
                say(f"{render.COLOUR_NAMES[mover]} thinks: its first move is compiled first "
                    f"(a few seconds).", flush=True)
                _COMPILED.add(opponent)
            key, _, agent_key = k.draw(key)
            action = int(opponent(agent_key, state))
        if action != GO:
            notation = dict(legal_moves(state, k)).get(action, f"illegal action {action}")
            say(f"{render.COLOUR_NAMES[mover]} plays {notation}.")
        after = k.decide(state, action)
        for line in decision_report(state, after, action):
            say(line)
        state = after
        if not bool(state.done):
            state, key = _roll_and_report(k, state, key, say)
    say(render.text(state))
    say(render.status_line(render.position(state)) + ".")
    return state


class Prompt:
    """A `stdin` for `play_game` that asks with `input()` (which notebooks support)."""

    def readline(self) -> str:
        try:
            return input() + "\n"
        except EOFError:
            return ""


def _roll_and_report(k: Kernels, state: State, key, say):
    key, outcome, _ = k.draw(key)
    roll = k.roll(state, outcome)
    for line in roll_report(state, roll):
        say(line)
    return roll.state, key


def _ask(state: State, k: Kernels, stdin: TextIO, say) -> int | None:
    """Show the position and legal moves, read until a legal choice; None to quit."""
    moves = distinct_moves(legal_moves(state, k))
    _show_choices(state, moves, say)
    while True:
        say("Your choice: ", end="")
        line = stdin.readline()
        if not line:  # end of input
            say()
            return None
        word = line.strip().lower()
        if word in QUIT_WORDS:
            return None
        if word in HELP_WORDS:
            say(HELP)
            _show_choices(state, moves, say)
            continue
        if word in BOARD_WORDS:
            _show_choices(state, moves, say)
            continue
        try:
            return parse_choice(line, moves)
        except ChoiceError as error:
            say(f"  {error}")


def _show_choices(state: State, moves, say) -> None:
    say(render.text(state))  # its last line says whose turn, and offers hold or go
    say("Legal moves:")
    cells = [f"{n:>3}) {notation}" for n, (_, notation) in enumerate(moves, 1)]
    width = max(map(len, cells)) + 3
    per_row = max(1, min(4, 88 // width))  # columns, to keep long lists on one screen
    for i in range(0, len(cells), per_row):
        say("  " + "".join(c.ljust(width) for c in cells[i:i + per_row]).rstrip())


HELP = f"""How to answer:
  a number        the move with that number in the list
  1-6 6-11        a move in notation: FROM-TO for each checker on the real board
                  (fields 1-24, White moves 1 -> 24, Black 24 -> 1); bear off with 20-off
  go              after winning a hole: new setting (hold by choosing a move)
  pass            when no move is possible
  board           show the board and the moves again
  quit            leave the game (or Ctrl-C)
The rules, for players: {RULES}"""


# ---------------------------------------------------------------------------------------------
#  Command line
# ---------------------------------------------------------------------------------------------

def load_opponent(spec: str, lookahead: int, rolls: bool | None = None) -> Agent:
    """A baseline by name (engine only), else `network_agents.load_agent` (the champion or a
    checkpoint: the training extra), its lookahead over the rolls unless `rolls` is False
    (None: whenever `lookahead` > 0)."""
    agent = agents.baseline(spec)
    if agent is None:
        from trictrac_jax.league import network_agents  # a checkpoint needs the training stack
        rolls = lookahead > 0 if rolls is None else rolls
        agent = network_agents.load_agent(spec, network_agents.Play(lookahead=lookahead, rolls=rolls))
    return agent


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m trictrac_jax.tools.play",
        description="Play Trictrac in a terminal against a bot.",
        epilog=f"New to Trictrac? The board, the dice, the jans, holes and bredouille, hold or "
               f"go: {RULES} (in the repository). 'quit' or Ctrl-C leaves the game.")
    parser.add_argument("--opponent", default="champion",
                        help="champion (the newest shipped network), champion:N, greedy "
                             "(every legal move), greedy:K (the first K by index), web (the "
                             "reference web client's bot), first, random, or a checkpoint path; "
                             "NETWORK@PLAY to choose how a network plays: rolls:K, lookahead:K, "
                             "search:N, policy (default: champion)")
    parser.add_argument("--lookahead", type=int, default=32, metavar="K",
                        help="a checkpoint bot's 1-ply search over its policy's K likeliest "
                             "moves (0: the raw policy; default: 32)")
    parser.add_argument("--rolls", action=argparse.BooleanOptionalAction, default=None,
                        help="a checkpoint bot values each of those moves over the 36 rolls "
                             "after it (the strongest bot; default: on with --lookahead K > 0)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the dice and the bot (default: random)")
    parser.add_argument("--colour", "--color", choices=sorted(COLOURS), default="white",
                        help="your colour; White rolls first (default: white)")
    return parser.parse_args(argv)


def main(argv=None, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    """Plays one game in the terminal on `stdin` and `stdout`, with the options of the
    module's docstring in `argv` (default: the command line); returns the exit status."""
    args = parse_args(argv)
    try:
        return play(args, stdin, stdout)
    except KeyboardInterrupt:  # Ctrl-C: at the prompt, or while the bot loads or thinks
        print("\nInterrupted: goodbye.", file=stdout)
        return 130  # the shell's code for an interrupted program


def play(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    try:
        opponent = load_opponent(args.opponent, args.lookahead, args.rolls)
    except ImportError as error:  # a checkpoint needs the training extra
        print(f"cannot load opponent {args.opponent!r}: {error} "
              f"(pip install 'trictrac-jax[train]')", file=sys.stderr)
        return 2
    except (ValueError, OSError, RuntimeError) as error:  # unknown name, bad checkpoint
        print(f"cannot load opponent {args.opponent!r}: {error}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "big")
    play_game(jax.jit(opponent), COLOURS[args.colour], seed, stdin, stdout)
    return 0


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
