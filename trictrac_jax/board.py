"""Board rules on the mover's view.

The reference engine computes every rule as if the player to move were White: the board is
mirrored for Black (`view[i] = -board[23 - i]`). All functions here take such a view board
with the field axis first: `int[24, *lanes]`, index `i` = field `i + 1`, own checkers > 0
and opponent checkers < 0. `lanes` are trailing axes shared by every argument: none for one
position, one axis of games when the move rules run game-minor (see the `moves` package).
Field 12 is the own rest corner, field 13 the opponent's.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from trictrac_jax.arrays import fold, leading, prefix_sum, spread
from trictrac_jax.lowering import current, lookup
from trictrac_jax.state import NUM_FIELDS

FIELDS = np.arange(1, NUM_FIELDS + 1, dtype=np.int8)  # int8[24]: field numbers (small ints
# keep the per-candidate arrays narrow, which matters for speed on CPU)
OWN_CORNER, OPP_CORNER = 12, 13
LAST_QUARTER = 19  # the first field of the last quarter (fields 19-24), where bearing off starts
OFF = NUM_FIELDS + 1  # 25: where a checker borne off with its exact number arrives
NO_FIELD = NUM_FIELDS + 1  # 25: what searches for the lowest field find when none holds


def _fields(ndim, dtype=jnp.int8):
    return leading(FIELDS.astype(dtype), ndim)


def view_board(board, player):
    """Real board int8[24] -> the view of `player` (0 White, 1 Black) as int32[24]."""
    board = board.astype(jnp.int32)
    return jnp.where(player == 0, board, -board[::-1])


def real_board(view, player):
    """Inverse of `view_board` (the mirror is an involution); returns int8[24]."""
    return view_board(view, player).astype(jnp.int8)


def at_field(board, field):
    """Checkers on fields `field` (int[..., *lanes], or a Python int); field 0 reads 0."""
    if isinstance(field, int):  # a fixed field: no lookup
        return board[field - 1] if field else jnp.zeros_like(board[0])
    padded = jnp.concatenate([jnp.zeros((1,) + board.shape[1:], board.dtype), board])
    return lookup(padded, field)


def ahead(board, distance, max_distance=6):
    """int[24, ..., *lanes]: for each field f, the checkers on field f + distance (0 beyond
    field 24); `distance` (1..max_distance) is int[..., *lanes].

    A select over the possible shifts rather than a gather (see arrays.py).
    """
    distance = jnp.asarray(distance)
    padded = jnp.concatenate([board, jnp.zeros((max_distance,) + board.shape[1:],
                                               board.dtype)])
    padded = spread(padded, distance)
    out = jnp.zeros((NUM_FIELDS,) + distance.shape, board.dtype)
    for k in range(1, max_distance + 1):
        out = jnp.where(distance[None] == k, padded[k:k + NUM_FIELDS], out)
    return out


def suffix_sum(values):
    """values [24, *lanes] -> [24, *lanes]: the sum over fields f..24 for each field f."""
    return prefix_sum(values[::-1])[::-1]


def lowest_field(mask):
    """Field (1..24) of the first True along the field axis of bool[24, *lanes]; NO_FIELD
    (25) if none. A min over field numbers rather than `argmax` (see arrays.py)."""
    return fold(jnp.minimum, jnp.where(mask, _fields(mask.ndim - 1, jnp.int32), NO_FIELD))


def highest_field(mask, none=0):
    """Field (1..24) of the last True along the field axis of bool[24, *lanes]; `none` if
    there is none."""
    highest = fold(jnp.maximum, jnp.where(mask, _fields(mask.ndim - 1, jnp.int32), 0))
    return jnp.where(highest > 0, highest, none)


def quarters(board):
    """[24, *lanes] -> [4, 6, *lanes]: fields 1-6, 7-12, 13-18, 19-24."""
    return board.reshape((4, 6) + board.shape[1:])


def quarter_filled(board):
    """bool[4, *lanes]: each field of the quarter holds at least 2 own checkers."""
    return fold(jnp.logical_and, quarters(board) >= 2, axis=1)


def opp_quarter_filled(board):
    """bool[4, *lanes]: the same for the opponent's checkers (on the same view fields)."""
    return fold(jnp.logical_and, quarters(board) <= -2, axis=1)


def own_fillable_quarters(board):
    """bool[4, *lanes]: whether the mover can still fill each quarter.

    Reference rule: a quarter is fillable when, for each of its fields, there are at least
    2 x (position of the field in the quarter) own checkers on fields 1..field. The quarter
    13-18 holds the opponent's corner and is never fillable.
    """
    if current().games_last:  # the CPU's layout: the fields' prefix sums, vectorised
        upto = prefix_sum(jnp.maximum(board, 0))  # own checkers on fields 1..f
        needed = leading(2 * (np.arange(NUM_FIELDS) % 6 + 1), board.ndim - 1)
        ok = fold(jnp.logical_and, quarters(upto >= needed), axis=1)
        return ok & leading(np.arange(4) != 2, board.ndim - 1)
    # games first (a GPU): a running count along the fields, one count live in a game's
    # thread where the prefix sums are 24 (fused with the quarter being filled, those
    # spilled registers at 131,072 games)
    upto, fillable = jnp.zeros_like(board[0]), []
    for quarter in range(4):
        fits = jnp.full(board.shape[1:], quarter != 2)
        for k in range(6):
            upto = upto + jnp.maximum(board[6 * quarter + k], 0)  # own checkers on 1..field
            fits &= upto >= 2 * (k + 1)
        fillable.append(fits)
    return jnp.stack(fillable)


def opp_fillable_quarters(board):
    """bool[4, *lanes]: whether the opponent can still fill each quarter (same rule, mirrored).

    For a field at position k from the quarter's end (k = 1 for its last field) the opponent
    needs 2k of his checkers on fields field..24. The quarter 7-12 holds our corner and is
    never fillable by the opponent.
    """
    from_here = suffix_sum(jnp.maximum(-board, 0))  # opponent checkers on f..24
    needed = leading(2 * (6 - np.arange(NUM_FIELDS) % 6), board.ndim - 1)
    ok = fold(jnp.logical_and, quarters(from_here >= needed), axis=1)
    return ok & leading(np.arange(4) != 1, board.ndim - 1)


def forbid_exits(board, dice):
    """bool[*lanes]: bearing off is not possible this roll (`dice` int[2, *lanes]).

    It is possible when no own checker is outside the last quarter (fields 19-24), or when a
    single checker is outside and the bigger die brings it into the last quarter.
    """
    outside = (board > 0) & (_fields(board.ndim - 1) < LAST_QUARTER)
    n_fields = fold(jnp.add, outside.astype(jnp.int32))
    field = lowest_field(outside)
    single = (n_fields == 1) & (fold(jnp.add, jnp.where(outside, board, 0)) == 1)
    brought_in = field + jnp.maximum(dice[0], dice[1]) > LAST_QUARTER - 1
    return (n_fields > 0) & ~(single & brought_in)


def exit_farthest(board):
    """int32[*lanes]: the checker that must bear off with an exceeding number.

    The lowest own field, except that with a filled quarter the lowest field holding more
    than 2 checkers is used when there is one (NO_FIELD when the board holds no own checker).
    """
    own = board > 0
    spare = own & (board > 2) & fold(jnp.logical_or, quarter_filled(board))
    spare_field = lowest_field(spare)
    return jnp.where(spare_field < NO_FIELD, spare_field, lowest_field(own))


def checkers_upto(board):
    """int8[24, *lanes]: for each field f, the own checkers on fields 1..f (checker
    ordinals, at most 15: a byte each where they are stored)."""
    return prefix_sum(jnp.maximum(board, 0).astype(jnp.int8))


def cumulative_checkers(board):
    """int8[25, *lanes]: c[f] = own checkers on fields 1..f (c[0] = 0); checker ordinals."""
    return jnp.concatenate([jnp.zeros((1,) + board.shape[1:], jnp.int8), checkers_upto(board)])


def checker_field(own, ordinal):
    """Field (1..24) of the `ordinal`-th checker, numbered from field 1, of `own` checkers a
    field (int[24, *lanes], or 24 arrays [*lanes]); 0 if there is none or `ordinal` < 1.

    A running count along the fields, each step elementwise on the games: on a GPU one
    thread a game computes it in the kernel of its readers, where `checkers_upto` and a
    count of the fields below it were two kernels of their own."""
    ordinal = jnp.asarray(ordinal)
    seen = jnp.zeros(jnp.broadcast_shapes(jnp.shape(own[0]), ordinal.shape), jnp.int32)
    field = jnp.zeros_like(seen)
    for f in range(NUM_FIELDS):
        seen = seen + own[f]
        field = jnp.where((field == 0) & (seen >= ordinal), f + 1, field)
    return jnp.where(ordinal >= 1, field, 0)


def apply_move(board, frm, to):
    """Move one own checker from `frm` to `to` (0 = borne off), int[..., *lanes]; `frm` 0 is
    the empty move. Returns [24, ..., *lanes]."""
    frm, to = jnp.asarray(frm), jnp.asarray(to)
    fields = _fields(frm.ndim)
    moving = frm[None] > 0
    leaves = ((fields == frm[None]) & moving).astype(board.dtype)
    arrives = ((fields == to[None]) & moving).astype(board.dtype)
    return spread(board, frm) - leaves + arrives
