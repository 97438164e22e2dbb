"""Board rules on the mover's view.

The reference engine computes every rule as if the player to move were White: the board is
mirrored for Black (`view[i] = -board[23 - i]`). All functions here take such a view board,
`int32[..., 24]` with index `i` = field `i + 1`, own checkers > 0 and opponent checkers < 0,
and broadcast over leading axes. Field 12 is the own rest corner, field 13 the opponent's.
"""
from __future__ import annotations

import jax.numpy as jnp

FIELDS = jnp.arange(1, 25, dtype=jnp.int8)  # int8[24]: field numbers (small ints keep
# the per-candidate arrays narrow, which matters for speed on CPU)
OWN_CORNER, OPP_CORNER = 12, 13
QUARTER_STARTS = (1, 7, 13, 19)


def view_board(board, player):
    """Real board int8[24] -> the view of `player` (0 White, 1 Black) as int32[24]."""
    board = board.astype(jnp.int32)
    return jnp.where(player == 0, board, -board[::-1])


def real_board(view, player):
    """Inverse of `view_board` (the mirror is an involution); returns int8[24]."""
    return view_board(view, player).astype(jnp.int8)


def at_field(board, field):
    """Checkers of one board int32[24] on fields `field` (any int shape); field 0 reads 0.

    Fields beyond 24 read field 24: callers mask them.
    """
    padded = jnp.concatenate([jnp.zeros(1, board.dtype), board])
    return jnp.take(padded, field, mode="clip")


def ahead(board, steps, max_steps=6):
    """int32[..., 24]: for each field f, the checkers on field f + steps (0 beyond field 24).

    `steps` (1..max_steps) broadcasts against board.shape[:-1]. A select over the possible
    shifts rather than a gather: gathers are slow on CPU.
    """
    padded = jnp.concatenate([board, jnp.zeros(board.shape[:-1] + (max_steps,), board.dtype)], -1)
    steps = jnp.asarray(steps)[..., None]
    out = jnp.zeros_like(board)
    for k in range(1, max_steps + 1):
        out = jnp.where(steps == k, padded[..., k:k + 24], out)
    return out


def lookup(table, index):
    """table[index] for a small 1-D table, as a one-hot reduction (no gather)."""
    hit = index[..., None] == jnp.arange(table.shape[0])
    if table.dtype == jnp.bool_:
        return jnp.any(hit & table, axis=-1)
    return jnp.sum(jnp.where(hit, table, 0), axis=-1, dtype=table.dtype)


def lowest_field(mask):
    """Field (1..24) of the first True along the last axis of bool[..., 24]; 25 if none.

    A min over field numbers rather than `argmax`: XLA's CPU argmax (a two-operand
    reduction) is several times slower than a plain min.
    """
    return jnp.min(jnp.where(mask, FIELDS.astype(jnp.int32), 25), axis=-1)


def quarters(board):
    """int32[..., 24] -> int32[..., 4, 6]: fields 1-6, 7-12, 13-18, 19-24."""
    return board.reshape(board.shape[:-1] + (4, 6))


def quarter_filled(board):
    """bool[..., 4]: each field of the quarter holds at least 2 own checkers."""
    return jnp.all(quarters(board) >= 2, axis=-1)


def opp_quarter_filled(board):
    """bool[..., 4]: the same for the opponent's checkers (on the same view fields)."""
    return jnp.all(quarters(board) <= -2, axis=-1)


def own_fillable_quarters(board):
    """bool[..., 4]: whether the mover can still fill each quarter.

    Reference rule: a quarter is fillable when, for each of its fields, there are at least
    2 x (position of the field in the quarter) own checkers on fields 1..field. The quarter
    13-18 holds the opponent's corner and is never fillable.
    """
    own = jnp.maximum(board, 0)
    upto = jnp.cumsum(own, axis=-1)  # own checkers on fields 1..f
    needed = 2 * (jnp.arange(24) % 6 + 1)
    ok = jnp.all(quarters(upto >= needed), axis=-1)
    return ok & (jnp.arange(4) != 2)


def opp_fillable_quarters(board):
    """bool[..., 4]: whether the opponent can still fill each quarter (same rule, mirrored).

    For a field at position k from the quarter's end (k = 1 for its last field) the opponent
    needs 2k of his checkers on fields field..24. The quarter 7-12 holds our corner and is
    never fillable by the opponent.
    """
    opp = jnp.maximum(-board, 0)
    from_here = jnp.cumsum(opp[..., ::-1], axis=-1)[..., ::-1]  # opponent checkers on f..24
    needed = 2 * (6 - jnp.arange(24) % 6)
    ok = jnp.all(quarters(from_here >= needed), axis=-1)
    return ok & (jnp.arange(4) != 1)


def forbid_exits(board, dice):
    """bool[...]: bearing off is not possible this roll.

    It is possible when no own checker is outside the last quarter (fields 19-24), or when a
    single checker is outside and the bigger die brings it into the last quarter.
    """
    outside = (board > 0) & (FIELDS < 19)
    n_fields = jnp.sum(outside, axis=-1)
    field = lowest_field(outside)
    single = (n_fields == 1) & (jnp.sum(jnp.where(outside, board, 0), axis=-1) == 1)
    return (n_fields > 0) & ~(single & (field + jnp.max(dice, axis=-1) > 18))


def exit_farthest(board):
    """int32[...]: the checker that must bear off with an exceeding number.

    The lowest own field, except that with a filled quarter the lowest field holding more
    than 2 checkers is used when there is one (25 when the board holds no own checker).
    """
    own = board > 0
    spare = own & (board > 2) & jnp.any(quarter_filled(board), axis=-1, keepdims=True)
    return jnp.where(jnp.any(spare, -1), lowest_field(spare), lowest_field(own))


def cumulative_checkers(board):
    """int32[..., 25]: c[f] = own checkers on fields 1..f (c[0] = 0); checker ordinals."""
    own = jnp.maximum(board, 0)
    zero = jnp.zeros(board.shape[:-1] + (1,), jnp.int32)
    return jnp.concatenate([zero, jnp.cumsum(own, axis=-1)], axis=-1)


def checker_field(board, ordinal):
    """Field of the `ordinal`-th own checker (numbered from field 1); 0 if none."""
    cum = cumulative_checkers(board)[..., 1:]
    ordinal = jnp.asarray(ordinal)[..., None]
    hit = cum >= ordinal
    field = lowest_field(hit)
    return jnp.where((ordinal[..., 0] >= 1) & (field < 25), field, 0)


def apply_move(board, frm, to):
    """Move one own checker from `frm` to `to` (0 = borne off); `frm` 0 is the empty move."""
    moving = frm[..., None] > 0
    leaves = ((FIELDS == frm[..., None]) & moving).astype(board.dtype)
    arrives = ((FIELDS == to[..., None]) & moving).astype(board.dtype)
    return board - leaves + arrives
