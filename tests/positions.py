"""Hand-set positions for the rule tests (test_board.py, test_moves.py, test_scoring.py), and
the engine's move and scoring rules compiled once per lowering to read them.

A position is the mover's view board (board.py): `view({field: own checkers}, {field:
opponent checkers})`, fields 1..24, the mover moving from 1 towards 24.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import moves, scoring
from trictrac_jax.lowering import forced

LOWERINGS = ("cpu", "gpu", "gpu-tiles")  # gpu-tiles: the lists in the Pallas kernel (interpreted)


def view(own: dict, opponent: dict | None = None) -> np.ndarray:
    """int32[24]: the view board with `own` and `opponent` checkers ({field: count})."""
    board = np.zeros(24, np.int32)
    for field, n in own.items():
        board[field - 1] += n
    for field, n in (opponent or {}).items():
        assert board[field - 1] == 0, f"field {field} holds both colours"
        board[field - 1] -= n
    return board


lowering = forced  # `with lowering(name):` the lowering `name` (lowering.forced)


def _batch_of_one(fn):
    """`fn` vmapped over a batch of one, compiled once (the same shapes in every test)."""
    batched = jax.jit(jax.vmap(fn))
    return lambda *args: jax.tree.map(lambda x: np.asarray(x)[0],
                                      batched(*(jnp.asarray(a)[None] for a in args)))


@functools.cache
def rules(name: str):
    """The move and scoring rules under lowering `name`, compiled once: (legal, jans, decode)
    with legal(board, dice) -> (bool[514], some), jans(board, dice, roll_count) ->
    `scoring.RollJans`, decode(board, dice) -> int32[514, 4] (each action's pair)."""
    legal = _batch_of_one(moves.legal_moves)
    jans = _batch_of_one(lambda b, d, n: scoring._roll_details(b, d, n)[0])
    decode = _batch_of_one(lambda b, d: jax.vmap(moves.decode, (None, None, 0))(
        b, d, jnp.arange(moves.FIRST_MOVE, 514)))

    def traced(fn):
        def run(*args):
            with lowering(name):
                return fn(*args)
        return run
    return traced(legal), traced(jans), traced(decode)


def legal_pairs(name: str, board, dice) -> set[tuple[int, int, int, int]]:
    """The legal move pairs (from1, to1, from2, to2; 0 = none / borne off) of `board` with
    `dice`, each legal Move action decoded, under lowering `name`."""
    legal, _, decode = rules(name)
    mask, some = legal(np.asarray(board, np.int32), np.asarray(dice, np.int32))
    pairs = decode(np.asarray(board, np.int32), np.asarray(dice, np.int32))
    found = {tuple(int(x) for x in pairs[a - moves.FIRST_MOVE])
             for a in np.flatnonzero(mask)}
    assert bool(some) == bool(found), "`some` says whether a sequence is legal"
    return found


def legal_actions(name: str, board, dice) -> set[int]:
    """The legal Move action indices of `board` with `dice` under lowering `name`."""
    mask, _ = rules(name)[0](np.asarray(board, np.int32), np.asarray(dice, np.int32))
    return set(int(a) for a in np.flatnonzero(mask))


def jans(name: str, board, dice, roll_count=5) -> dict[str, int]:
    """{jan name: ways} of the roll (the jans made), and the points, under lowering `name`."""
    found = rules(name)[1](np.asarray(board, np.int32), np.asarray(dice, np.int32),
                           np.int32(roll_count))
    made = {scoring.JANS[j]: int(w) for j, w in enumerate(found.ways) if w}
    return made, tuple(int(p) for p in found.points)
