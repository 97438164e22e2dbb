"""Trictrac as players read and write it, for one game at a time on the host.

Moves in Trictrac notation on the real board (`1-6 6-11`, bear-off `20-off`, `go`), the jans
of a roll explained (which, how many ways, how many points, for whom), and a player's typed
choice read back into an action index. `Kernels` are the jitted one-game transitions these
need. Used by the terminal game (play.py) and the OpenSpiel wrapper.
"""
from __future__ import annotations

import functools
from collections import Counter
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import board as B
from trictrac_jax import io
from trictrac_jax.moves import decode
from trictrac_jax import render
from trictrac_jax import scoring
from trictrac_jax.env import CHANCE_DICE, Trictrac, sample_outcome
from trictrac_jax.state import NUM_ACTIONS, TS_HOLD_OR_GO, State

GO = 1

# Jan names as players say them: English, then the traditional French.
JAN_LABELS = {
    "FilledQuarter": "filled quarter (remplissage)",
    "TrueHitSmallJan": "true hit in the small jan (battu à vrai, petit jan)",
    "TrueHitBigJan": "true hit in the big jan (battu à vrai, grand jan)",
    "TrueHitOpponentCorner": "hit on the opponent's corner (battu du coin)",
    "FirstPlayerToExit": "first to bear off (sortie)",
    "SixTables": "six tables (jan de six tables)",
    "TwoTables": "two tables (jan de deux tables)",
    "Mezeas": "mezeas (jan de mézéas)",
    "FalseHitSmallJan": "false hit in the small jan (battu à faux, petit jan)",
    "FalseHitBigJan": "false hit in the big jan (battu à faux, grand jan)",
    "ContreTwoTables": "contre two tables (contre-jan de deux tables)",
    "ContreMezeas": "contre mezeas (contre-jan de mézéas)",
    "HelplessMan": "helpless man (jan qui ne peut)",
}


# ---------------------------------------------------------------------------------------------
#  Single-game kernels and notation
# ---------------------------------------------------------------------------------------------

class Roll(NamedTuple):
    """A roll: its jans (scored on the position before the dice, as the engine scores them)
    and the state after it (see `Kernels.roll`)."""

    jans: scoring.RollJans
    listed: jax.Array  # int32[N, 4]: candidate move pairs, for the jans' move pairs
    state: State  # the state after the dice, with the roller's points marked


class Kernels:
    """Jitted one-game transitions, never truncated (compiled once per process: use
    `kernels()`)."""

    def __init__(self, env: Trictrac):
        self._decide = jax.jit(env.step_deterministic)
        self._roll = jax.jit(functools.partial(_roll, env))
        self.action_pairs = jax.jit(_action_pairs)  # state -> int32[514, 4] real-board pairs
        self.draw = jax.jit(_draw)  # key -> (next key, chance outcome, key for an agent)

    # Actions and outcomes are cast to int32 so that a Python int (weakly typed) and an
    # int32 array share one compilation.
    def decide(self, state: State, action) -> State:
        """Take a decision; the result waits for the dice unless the game ended."""
        return self._decide(state, np.int32(action))

    def roll(self, state: State, outcome) -> Roll:
        """Roll chance outcome `outcome` (0..35) at a chance node."""
        return self._roll(state, np.int32(outcome))


@functools.lru_cache(maxsize=None)
def kernels() -> Kernels:
    return Kernels(Trictrac(max_steps=None))


def _roll(env: Trictrac, state: State, outcome) -> Roll:
    """Score the dice of chance outcome `outcome` for the player to roll, as the engine does
    on his view before the roll is applied (as verify.py), then apply it."""
    jans, listed = scoring.roll_details(state, jnp.asarray(CHANCE_DICE)[outcome])
    return Roll(jans, listed, env.chance_step(state, outcome))


def _draw(key):
    """One jitted call instead of several eager ones (each costs milliseconds)."""
    key, dice_key, agent_key = jax.random.split(key, 3)
    return key, sample_outcome(dice_key), agent_key


def _action_pairs(state: State):
    """int32[514, 4]: the move pair (from1, to1, from2, to2; 0 = none / off) every action
    index decodes to on the real board (meaningful for the legal ones)."""
    view = B.view_board(state._board, state.current_player)
    pairs = jax.vmap(lambda a: decode(view, state._dice, a))(jnp.arange(NUM_ACTIONS))
    mirrored = jnp.where(pairs > 0, 25 - pairs, 0)
    return jnp.where(state.current_player == 1, mirrored, pairs)


def move_text(pair) -> str:
    """Real-board move pair (from1, to1, from2, to2) -> notation `1-6 6-11`, `20-off`."""
    moves = [(int(f), int(t)) for f, t in (pair[:2], pair[2:]) if f]
    if not moves:
        return "pass"  # no move possible: the empty move
    return " ".join(f"{f}-{t if t else 'off'}" for f, t in moves)


def legal_moves(state: State, k: Kernels | None = None) -> list[tuple[int, str]]:
    """(action, notation) of every legal action of a decision state: Go first, then the
    moves in field order (as a player scans them)."""
    k = k or kernels()
    mask = np.asarray(state.legal_action_mask)
    pairs = np.asarray(k.action_pairs(state))
    listed = [(int(a), "go" if a == GO else move_text(pairs[a])) for a in np.flatnonzero(mask)]
    return sorted(listed, key=lambda m: (m[0] != GO, _moves_of(m[1])))


def _moves_of(notation: str) -> tuple[tuple[int, int], ...]:
    return () if notation in ("go", "pass") else parse_moves(notation)


def result_of(notation: str) -> frozenset[tuple[int, int]]:
    """What a move changes on the board: (field, checkers gained or lost) of each field it
    changes, 0 for borne off. Moves with one result are one move to a player (`1-3 1-5` and
    `1-5 1-3`, `1-4 4-6` and `1-3 3-6`): the engine's afterstates are the same."""
    change = Counter()
    for frm, to in _moves_of(notation):
        change[frm] -= 1
        change[to] += 1
    return frozenset((field, n) for field, n in change.items() if n)


def distinct_moves(moves: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """`moves` ((action, notation) pairs) less each move whose result an earlier one has."""
    seen, kept = set(), []
    for action, notation in moves:
        result = "go" if action == GO else result_of(notation)
        if result not in seen:
            seen.add(result)
            kept.append((action, notation))
    return kept


class JanScore(NamedTuple):
    name: str  # in scoring.JANS
    ways: int
    points_per_way: int
    scorer: int  # colour who marks the points
    moves: list[str]  # notation of each way's move pair, real board

    @property
    def points(self) -> int:
        return self.ways * self.points_per_way


def jan_scores(roller: int, dice, jans: scoring.RollJans, listed) -> list[JanScore]:
    """The jans a roll makes (in the engine's order), from its RollJans as verify.py reads
    them: ways and move pairs per jan, and the jan's value per way for this roll."""
    jans, listed = jax.device_get((jans, listed))
    made = io.jans_dict(jans, np.asarray(listed), roller)
    scores = []
    for j, name in enumerate(scoring.JANS):
        if name not in made:
            continue
        # HelplessMan is double only when nothing at all can be played (rules.md, quirk 1).
        double = bool(jans.helpless_double) if j == scoring.HELPLESS_MAN else dice[0] == dice[1]
        value = int(scoring.JAN_VALUES[j, int(double)])
        scores.append(JanScore(name, len(made[name]), abs(value),
                               roller if value > 0 else 1 - roller,
                               [move_text([*p[0], *p[1]]) for p in made[name]]))
    return scores


def jan_line(score: JanScore) -> str:
    plural = "s" * (score.ways > 1)
    return (f"{JAN_LABELS[score.name]}: {score.ways} way{plural} x {score.points_per_way} = "
            f"{score.points} points for {render.COLOUR_NAMES[score.scorer]}  "
            f"[{', '.join(score.moves)}]")


def roll_report(before: State, roll: Roll) -> list[str]:
    """What a roll did: the dice, the jans and the points for each player, holes won."""
    roller = int(before.current_player)
    me, other = render.COLOUR_NAMES[roller], render.COLOUR_NAMES[1 - roller]
    after = roll.state
    dice = tuple(int(d) for d in np.asarray(after._dice))
    lines = [f"{me} rolls {dice[0]}-{dice[1]}."]
    lines += ["  " + jan_line(j) for j in jan_scores(roller, dice, roll.jans, roll.listed)]
    mine, theirs = (int(p) for p in np.asarray(roll.jans.points))
    if not mine and not theirs:
        lines.append("  No jan: no points.")
    if mine:
        lines.append(f"  {me} marks {mine} points.{holes_won(before, after, roller)}")
        lines.append("  " + score_line(after))
    if theirs:
        unless = f" (not if {me} goes)" if int(after._turn_stage) == TS_HOLD_OR_GO else ""
        lines.append(f"  {other} will mark {theirs} points after {me}'s move{unless}.")
    return lines


def decision_report(before: State, after: State, action: int) -> list[str]:
    """What a decision did besides the move: Go, the points the opponent marks once the
    roller has moved, a new setting after the mover bore off his last checker."""
    mover = int(before.current_player)
    me, other = render.COLOUR_NAMES[mover], render.COLOUR_NAMES[1 - mover]
    if action == GO:
        return [f"{me} goes: new setting, the checkers go back to the talons."]
    lines = []
    marked = int(before._dice_points[1])
    if marked:
        lines += [f"{other} marks {marked} points.{holes_won(before, after, 1 - mover)}",
                  score_line(after)]
    if int(after.current_player) == mover and not bool(after.done):
        lines.append(f"{me} bore off all his checkers: new setting, {me} rolls again.")
    return lines


def holes_won(before: State, after: State, colour: int) -> str:
    won = int(after._holes[colour]) - int(before._holes[colour])
    if won <= 0:
        return ""
    return f" {render.COLOUR_NAMES[colour]} wins {won} hole{'s' * (won > 1)}" + \
        (" (bredouille)!" if won > 1 else "!")


def score_line(state: State) -> str:
    pos = render.position(state)
    return "Score: " + " | ".join(
        f"{render.COLOUR_NAMES[c]} {pos.points[c]} points, {pos.holes[c]} holes" for c in (0, 1))


# ---------------------------------------------------------------------------------------------
#  Reading a choice
# ---------------------------------------------------------------------------------------------

class ChoiceError(ValueError):
    """The player's input names no legal action (the message says why)."""


MAX_LISTED_IN_ERROR = 10


def parse_moves(text: str) -> tuple[tuple[int, int], ...]:
    """Notation `1-6 6-11` (or `1/6, 6/11`; bear-off `20-off` or `20-0`) -> ((1, 6), (6, 11))."""
    moves = []
    for token in text.replace(",", " ").split():
        parts = token.replace("/", "-").split("-")
        if len(parts) != 2:
            raise ChoiceError(f"cannot read {token!r}: write a move as FROM-TO, e.g. 1-6 or 20-off")
        frm, to = parts
        if not frm.isdigit() or not (to.isdigit() or to == "off"):
            raise ChoiceError(f"cannot read {token!r}: fields are numbers 1-24, bear-off is 'off'")
        frm, to = int(frm), 0 if to == "off" else int(to)
        if not 1 <= frm <= 24 or not 0 <= to <= 24:
            raise ChoiceError(f"{token!r}: fields are numbered 1 to 24")
        moves.append((frm, to))
    if len(moves) > 2:
        raise ChoiceError("a move uses at most two checkers (one per die)")
    return tuple(moves)


def parse_choice(text: str, moves: list[tuple[int, str]]) -> int:
    """The action the player chose among `moves` ((action, notation) pairs): by its number
    in the list, `go`, or its notation (or another way to the same result: the two moves in
    either order, a checker through another field)."""
    choice = text.strip().lower()
    if not choice:
        raise ChoiceError("type the number of a move, its notation (e.g. 1-6 6-11), or 'help'")
    if choice.isdigit():
        n = int(choice)
        if not 1 <= n <= len(moves):
            raise ChoiceError(f"no move number {n}: choose 1 to {len(moves)}")
        return moves[n - 1][0]
    if choice in ("go", "g"):
        if any(a == GO for a, _ in moves):
            return GO
        raise ChoiceError("go is only possible right after winning a hole")
    if choice == "hold":
        raise ChoiceError("to hold, choose one of the listed moves")
    chosen = _moves_of(choice)
    by_moves = {a: _moves_of(t) for a, t in moves if a != GO}
    exact = [a for a, m in by_moves.items() if m == chosen]
    same_result = [a for a, t in moves if a != GO and result_of(t) == result_of(choice)]
    if exact or same_result:
        return (exact or same_result)[0]
    legal = (f"legal: {', '.join(t for _, t in moves)}" if len(moves) <= MAX_LISTED_IN_ERROR
             else "type 'board' to see the list")
    raise ChoiceError(f"{text.strip()!r} is not a legal move here; {legal}")
