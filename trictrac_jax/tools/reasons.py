"""Why a move is refused: the rule that forbids a half-move, in words, for the browser game.

Which moves are legal is the engine's answer alone (the state's legal actions); this module
only explains a refusal. It reads the engine's candidate move pairs for the position and
roll (`moves.move_lists`: which pairs are possible at all, fill a quarter, keep the bear-off
rules, which the reference lists as filling, exact or legal) and the board, and names the
first of these that applies, in this order:

1. facts about the half-move itself: no own checker on the field, no die left for that
   distance or direction, the field held by the opponent, bearing off with checkers
   outside the last quarter;
2. when no candidate pair with it is possible: the rest corners (taken two at once, left
   two at once, never the opponent's) and the opponent's quarter he can still fill;
3. when some are possible but none legal: the filling rule, the bear-off rules (exact
   numbers first, the farthest checker), both dice must be played, the bigger die when
   only one can be.

Granularity: a refusal that none of these explains is answered "X-Y goes with no legal move
of your other die" (no possible pair) or "X-Y is in no legal move here" (with a legal move
for example); over the random games of tests/test_web.py neither comes up.
Everything here is on the mover's view (fields 1-24 in his direction of play, his rest
corner 12), and speaks of real fields.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from trictrac_jax import board as B
from trictrac_jax.moves import PASS_OF, candidate_table, move_lists, unpack
from trictrac_jax.moves.layout import IS_FULL
from trictrac_jax.state import State

Move = tuple[int, int]  # (from, to) on the mover's view; to 0: borne off
OWN_CORNER, OPPONENT_CORNER, LAST_QUARTER = 12, 13, 19


class Lists(NamedTuple):
    """One decision's candidate pairs (view fields) and their rule masks, numpy [N]."""

    moves: list[tuple[Move, ...]]  # the one or two moves of each candidate
    possible: np.ndarray  # bool: every move possible, corner and opponent-quarter rules kept
    fills: np.ndarray  # bool: a quarter is filled after it
    exits: np.ndarray  # bool: it bears a checker off
    exit_outside_ok: np.ndarray  # bool: the checkers are in the last quarter to bear off
    exit_farthest_ok: np.ndarray  # bool: an exceeding number bears off the farthest checker
    full: np.ndarray  # bool: two moves
    first_pass: np.ndarray  # bool: the bigger die first
    filling: np.ndarray  # bool: in the reference's quarter-filling list
    exact: np.ndarray  # bool: in its list without exceeding numbers (higher than needed)
    legal: np.ndarray  # bool: in its legal list
    board: tuple[int, ...]  # the view board
    dice: tuple[int, int]
    opp_fillable: tuple[bool, ...]  # [4]: quarters the opponent can still fill


@jax.jit
def _lists(state: State):
    view = B.view_board(state._board, state.current_player)
    lists = move_lists(view, state._dice)
    c = lists.candidates
    words = dict(possible=c.possible, fills=c.fills, exits=c.has_exit,
                 exit_outside_ok=c.exit_outside_ok, exit_farthest_ok=c.exit_farthest_ok,
                 filling=lists.filling, exact=lists.exact, legal=lists.legal)
    masks = {name: unpack(w) for name, w in words.items()}
    return candidate_table(c).pair, masks, view, B.opp_fillable_quarters(view)


def candidate_lists(state: State) -> Lists:
    """The `Lists` of a decision state (one jitted call, then numpy)."""
    pairs, masks, view, fillable = jax.device_get(_lists(state))
    moves = [tuple((int(f), int(t)) for f, t in ((p[0], p[1]), (p[2], p[3])) if f)
             for p in np.asarray(pairs).T]
    return Lists(moves=moves, **{name: np.asarray(m) for name, m in masks.items()},
                 full=IS_FULL, first_pass=PASS_OF == 0,
                 board=tuple(int(n) for n in view), dice=tuple(int(d) for d in state._dice),
                 opp_fillable=tuple(bool(q) for q in fillable))


def view_move(move: Move, player: int) -> Move:
    """A real-board move as the mover sees it (and back: the mapping is its own inverse)."""
    return move if player == 0 else tuple(25 - f if f else 0 for f in move)


def after(board, moves) -> list[int]:
    """The view board after `moves` (own checkers > 0)."""
    board = list(board)
    for frm, to in moves:
        board[frm - 1] -= 1
        if to:
            board[to - 1] += 1
    return board


def die_of(move: Move, dice) -> int | None:
    """The die that plays `move` among `dice`, if one does: its distance, the next higher
    number to bear off, or one more to take the rest corner par puissance."""
    frm, to = move
    distance = to - frm if to else 25 - frm
    if distance in dice:
        return distance
    if to == OWN_CORNER and distance + 1 in dice:
        return distance + 1
    higher = [d for d in dice if d > distance]
    return min(higher) if not to and higher else None


def dice_left(dice, pending) -> list[int]:
    left = list(dice)
    for move in pending:
        die = die_of(move, left)
        if die is not None:
            left.remove(die)
    return left


class Words:
    """Real field names for a mover."""

    def __init__(self, player: int):
        self.player = player

    def field(self, view_field: int) -> str:
        return str(view_field if self.player == 0 else 25 - view_field)

    def fields(self, first: int, last: int) -> str:
        return f"{self.field(first)}-{self.field(last)}"

    def move(self, move: Move) -> str:
        frm, to = move
        return f"{self.field(frm)}-{self.field(to) if to else 'off'}"


def why_not(lists: Lists, player: int, pending: list[Move], move: Move) -> str:
    """Why `move` (view) may not follow the `pending` half-moves (view) of this decision;
    call it for a move the legal actions do not allow."""
    w = Words(player)
    board = after(lists.board, pending)
    fact = _move_fact(board, lists.dice, pending, move, w)
    if fact:
        return fact
    wanted = list(pending) + [move]
    with_move = np.array([_contains(m, wanted) for m in lists.moves])
    possible = with_move & lists.possible
    if not possible.any():
        return _pair_rule(board, lists, move, w) or (
            f"{w.move(move)} goes with no legal move of your other die.")
    if lists.filling.any() and not (with_move & lists.filling).any():
        example = _example(lists, lists.legal & lists.fills, w)
        return ("You must fill a quarter (six fields of two checkers or more), or keep one "
                f"filled, when you can{example}.")
    exits = possible & lists.exits  # the pairs with the move that bear off
    if exits.any():
        if not (exits & lists.exit_outside_ok).any():
            return ("You can bear off only once all your checkers are in your last quarter "
                    f"(fields {w.fields(LAST_QUARTER, 24)}).")
        if lists.exact.any() and not (exits & lists.exact).any():
            return ("A checker is borne off with a number higher than it needs only when no "
                    f"move plays exact numbers{_example(lists, lists.legal, w)}.")
        if not (exits & lists.exit_farthest_ok).any():
            return ("With a number higher than it needs, only your farthest checker may be "
                    "borne off.")
    legal_full = (lists.legal & lists.full).any()
    if legal_full and not (possible & lists.full).any():
        return (f"You must play both dice when you can: after {w.move(move)} the other die "
                f"cannot be played{_example(lists, lists.legal, w)}.")
    if not legal_full and (lists.legal & lists.first_pass).any() and \
            not (possible & lists.first_pass).any():
        return (f"Only one die can be played: it must be the bigger one "
                f"({max(lists.dice)}){_example(lists, lists.legal, w)}.")
    return f"{w.move(move)} is in no legal move here{_example(lists, lists.legal, w)}."


def why_not_from(lists: Lists, player: int, pending: list[Move], frm: int) -> str:
    """Why no legal half-move starts on field `frm` (view) after the `pending` ones: the
    reason of each die left."""
    w = Words(player)
    board = after(lists.board, pending)
    left = sorted(set(dice_left(lists.dice, pending)), reverse=True)
    if board[frm - 1] <= 0 or not left:
        return _move_fact(board, lists.dice, pending, (frm, 0), w)
    reasons = [why_not(lists, player, pending, (frm, frm + d if frm + d <= 24 else 0))
               for d in left]
    return f"No legal move starts on field {w.field(frm)}: " + " ".join(
        f"with the {d}, {r[0].lower()}{r[1:]}" for d, r in zip(left, reasons))


def _contains(moves: tuple[Move, ...], wanted: list[Move]) -> bool:
    rest = list(moves)
    for m in wanted:
        if m not in rest:
            return False
        rest.remove(m)
    return True


def _example(lists: Lists, mask, w: Words) -> str:
    index = np.flatnonzero(mask)
    return f" (e.g. {' '.join(w.move(m) for m in lists.moves[index[0]])})" if len(index) else ""


def _move_fact(board, dice, pending, move: Move, w: Words) -> str | None:
    """A fact about the half-move alone that forbids it, or None."""
    frm, to = move
    if board[frm - 1] <= 0:
        held = " (your opponent's)" if board[frm - 1] < 0 else ""
        return f"Field {w.field(frm)}{held} holds none of your checkers."
    left = dice_left(dice, pending)
    if not left:
        return "Both dice are played: confirm the move or undo it."
    if to and to <= frm:
        return (f"Your checkers move from field {w.field(1)} towards field {w.field(24)}: "
                f"{w.move(move)} does not go forward.")
    if die_of(move, left) is None:
        reach = sorted({frm + d for d in left})
        names = ", ".join(w.field(f) if f <= 24 else "off" for f in reach)
        dice_text = " and ".join(map(str, sorted(set(left), reverse=True)))
        return (f"With {dice_text} to play, a checker on field {w.field(frm)} goes to "
                f"{names}, not {w.field(to) if to else 'off'}.")
    if to and board[to - 1] < 0:
        return f"Field {w.field(to)} is held by your opponent."
    if not to and any(n > 0 for n in board[:LAST_QUARTER - 1]):
        return ("You can bear off only once all your checkers are in your last quarter "
                f"(fields {w.fields(LAST_QUARTER, 24)}).")
    return None


def _pair_rule(board, lists: Lists, move: Move, w: Words) -> str | None:
    """The pair rule that forbids every pair with `move`, when it is one of these."""
    frm, to = move
    if to == OWN_CORNER and board[OWN_CORNER - 1] == 0:
        return (f"Your rest corner (field {w.field(OWN_CORNER)}) is taken with two checkers "
                "at once, one for each die (or par puissance).")
    if frm == OWN_CORNER and board[OWN_CORNER - 1] == 2:
        return (f"The last two checkers on your rest corner (field {w.field(OWN_CORNER)}) "
                "leave it together.")
    if to == OPPONENT_CORNER:
        return (f"No checker may stop on your opponent's rest corner (field "
                f"{w.field(OPPONENT_CORNER)}).")
    quarter = (to - 1) // 6 if to else None
    if quarter is not None and quarter >= 2 and lists.opp_fillable[quarter]:
        first = 6 * quarter + 1
        return (f"You may not play into fields {w.fields(first, first + 5)}: your opponent can "
                "still fill that quarter.")
    return None
