"""The candidates' `possible` mask as words: one uint32 a (pass, row), bit k = second slot k,
against today's byte table, checked equal and compiled for an H100 on this CPU.

    python -m experiments.possible_words                  # check 4,096 positions, compile at 32,768 games
    python -m experiments.possible_words --games 1024 --check 0

The first step of the word formulation (docs/journal/engine-speed.md, issue 51): a
candidate (pass p, row i, second slot k) is bit k of word W[p, i]. What a second move reads
is per (pass, second slot) on the position's board, corrected per row only where the first
move changes it:

* the second move's own checkers: slot i loses one (its bit cleared when it held one), the
  destination's slot gains one (never empties a slot); the own corner's guard (leaving it
  with exactly two) holds per row from the corner's count after the first move;
* where it lands: the first move's origin loses an own checker and its destination gains
  one, neither of which makes a field the opponent's, so "not blocked" is per pass;
* the chained slot (bit 15: the first move's destination when it was empty) and "no second
  move" (bit 16) are computed per row;
* the pair rules (the two corners, the opponent's quarters) are per-pass words of the second
  moves' fields and destinations, combined with the first move's by word operations;
  "the second move starts where the first ended" is one bit a row, the slot of the first
  move's destination (`_slot_bit`: a population count over the occupied fields below it).

Today's table is `moves.candidates(board, dice).possible` (uint8[544, games]). Supports
docs/journal/engine-speed.md, issue 51.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from trictrac_jax.tools import gpu_program as G  # before any JAX computation

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import board as B
from trictrac_jax.board import OFF, OPP_CORNER, OWN_CORNER
from trictrac_jax.moves import candidates
from trictrac_jax.moves.candidates import (_in_opp_fillable, _pair_rules, _puissance_pair,
                                           first_moves, position)
from trictrac_jax.moves.layout import (CHAINED_SLOT, GRID, NO_SECOND_MOVE, NUM_FIRST,
                                       NUM_PASSES, NUM_ROWS, NUM_SLOTS, PUISSANCE_ROW)

U32 = jnp.uint32
ALL = U32((1 << NUM_SLOTS) - 1)
FIRST_SLOTS = U32((1 << NUM_FIRST) - 1)


def _word(bits, axis):
    """uint32[...]: bool `bits` packed along `axis` (bit k = entry k)."""
    shape = [1] * bits.ndim
    shape[axis] = bits.shape[axis]
    weights = (U32(1) << jnp.arange(bits.shape[axis], dtype=U32)).reshape(shape)
    return jnp.sum(jnp.where(bits, weights, U32(0)), axis=axis, dtype=U32)


def _where(cond, word):
    """`word` where `cond`, else 0 (cond broadcasts against it)."""
    return jnp.where(cond, word, U32(0))


def _slot_bit(occupied_fields, field):
    """uint32[...]: the bit of the slot holding `field` (int, 0..24), 0 when `field` holds no
    own checker; `occupied_fields`: bit f-1 set for each own field f."""
    f = field.astype(U32)
    below = occupied_fields & ((U32(1) << jnp.maximum(f, 1) - 1) - 1)
    held = (field > 0) & (((occupied_fields >> (jnp.maximum(f, 1) - 1)) & 1) == 1)
    return _where(held, U32(1) << jax.lax.population_count(below))


def possible_words(board, dice):
    """uint32[2, 16, games]: bit k of word (p, i) = candidate (p, i, k) is possible, as
    `Candidates.possible` says (board int[24, games], dice int[2, games])."""
    p = position(board, dice)
    games = p.board.shape[1:]
    field, count = p.slot_field[:NUM_ROWS], p.slot_count[:NUM_ROWS]
    moved_from = jnp.broadcast_to(field, (NUM_PASSES,) + field.shape)
    first = first_moves(p, field, count, moved_from)  # [2, 16, games]
    die_b = p.die_b  # [2, games]

    # per (pass, second slot < 15), on the position's board
    f1 = p.slot_field[:NUM_FIRST]  # [15, games]
    raw = f1[None] + die_b[:, None]  # [2, 15, games]
    t1 = jnp.where((f1[None] > 0) & (raw < OFF), raw, 0)
    landing = jnp.swapaxes(jnp.sum(jnp.where(p.in_slot[:NUM_FIRST, :, None],
                                             p.ahead_b[None], 0), axis=1,
                                   dtype=jnp.int8), 0, 1)  # [2, 15, games]
    exits = raw >= OFF
    reachable = (landing >= 0) & ~(exits & p.forbid) & (f1[None] > 0)
    occupied = _word(p.slot_count[:NUM_FIRST] > 0, 0)  # [games]
    can_go = _word(reachable, 1)  # [2, games]
    lands_12, lands_13 = _word(t1 == OWN_CORNER, 1), _word(t1 == OPP_CORNER, 1)
    in_opp = _word(_in_opp_fillable(p, t1), 1)
    from_12 = _word(f1 == OWN_CORNER, 0)  # [games]
    from_13 = _word(f1 == OPP_CORNER, 0)
    occupied_fields = _word(p.board > 0, 0)  # bit f-1: own checkers on field f

    # per row: the first move's corrections
    rows = jnp.arange(NUM_ROWS, dtype=U32)[:, None]
    row_bit = jnp.where(rows < NUM_FIRST, U32(1) << rows, U32(0))  # [16, 1]
    emptied = _where(count == 1, row_bit)  # [16, games]
    to = first.to  # [2, 16, games]
    corner_bit = _slot_bit(occupied_fields, jnp.full(games, OWN_CORNER))
    corner_after = (p.corner - _where(field == OWN_CORNER, U32(1)).astype(jnp.int8)
                    + (first.moved_to == OWN_CORNER))
    guarded = _where(corner_after == 2, corner_bit)
    second_ok = can_go[:, None] & occupied & ~emptied & ~guarded  # bits < 15

    # the chained slot: the first move's destination when it was empty
    new_field = (first.moved_to > 0) & (first.landing == 0)
    chained_raw = first.moved_to + die_b[:, None]
    chained_landing = B.at_field(p.board, jnp.where(chained_raw < OFF, chained_raw, 0))
    chained_ok = new_field & jnp.where(chained_raw >= OFF, ~p.forbid, chained_landing >= 0)
    chained_to = jnp.where(new_field & (chained_raw < OFF), chained_raw, 0)
    chained = U32(1 << CHAINED_SLOT)
    no_second = U32(1 << NO_SECOND_MOVE)
    second_ok |= _where(chained_ok, chained) | no_second

    # the pair rules: (f0, t0) per row, (f1, t1) per slot
    t0_12, t0_13 = to == OWN_CORNER, to == OPP_CORNER
    f0_12 = jnp.broadcast_to(field == OWN_CORNER, to.shape)
    lands_12 = lands_12[:, None] | _where(chained_to == OWN_CORNER, chained)
    lands_13 = lands_13[:, None] | _where(chained_to == OPP_CORNER, chained)
    in_opp = in_opp[:, None] | _where(_in_opp_fillable(p, chained_to), chained)
    leaves_12 = from_12 | _where(new_field & (first.moved_to == OWN_CORNER), chained)
    leaves_13 = from_13 | _where(new_field & (first.moved_to == OPP_CORNER), chained)
    continues = _slot_bit(occupied_fields, to) | _where(new_field, chained)
    flip = lambda cond, word: jnp.where(cond, ~word, word)
    bad = _where(p.corner == 0, flip(t0_12, lands_12))
    bad |= _where((p.corner == 2) & ~t0_12, flip(f0_12, leaves_12) & ~lands_12)
    bad |= lands_13 | _where(t0_13, ~leaves_13)
    bad |= _where(_in_opp_fillable(p, to), ~continues) | in_opp
    words = _where(first.ok, second_ok & ~bad) & ALL

    puis_pair, puis_ok = _puissance_pair(p.board, p.dice)
    puissance = _where(puis_ok & _pair_rules(p, puis_pair), U32(1))  # [games]
    return jnp.where((jnp.arange(NUM_ROWS) == PUISSANCE_ROW)[None, :, None], puissance[None, None],
                     words)


def possible_table(board, dice):
    """uint8[544, games]: today's `Candidates.possible`."""
    return candidates(board, dice).possible


def shared_part(board, dice):
    """What both read before the candidates: the `Position` and the first moves (their
    `ok` and destinations, int8[2, 16, games] each), as a baseline for both."""
    p = position(board, dice)
    field, count = p.slot_field[:NUM_ROWS], p.slot_count[:NUM_ROWS]
    first = first_moves(p, field, count, jnp.broadcast_to(field, (NUM_PASSES,) + field.shape))
    return first.ok, first.to, first.landing


def table_as_words(table):
    """uint8[544, games] -> uint32[2, 16, games], to compare with `possible_words`."""
    return _word(table.reshape(GRID + table.shape[1:]) > 0, 2)


def random_positions(count, seed=0):
    """(boards int32[24, count], dice int32[2, count]): view boards of random play."""
    from trictrac_jax import env as E
    from trictrac_jax.agents import random_agent
    from trictrac_jax.board import view_board

    key = jax.random.PRNGKey(seed)
    states = jax.vmap(E.init)(jax.random.split(key, count))
    boards, dice = [], []

    @jax.jit
    def advance(states, key):
        k1, k2 = jax.random.split(key)
        actions = jax.vmap(random_agent)(jax.random.split(k1, count), states)
        return jax.vmap(E.step)(states, actions, jax.random.split(k2, count))

    for t in range(48):
        key, sub = jax.random.split(key)
        states = advance(states, sub)
        boards.append(jax.vmap(view_board)(states._board, states.current_player))
        dice.append(states._dice)
    return (jnp.concatenate(boards).T.astype(jnp.int32),
            jnp.concatenate(dice).T.astype(jnp.int32))


def check(count):
    boards, dice = random_positions(count)
    words = jax.jit(possible_words)(boards, dice)
    expected = table_as_words(jax.jit(possible_table)(boards, dice))
    wrong = np.asarray(jnp.any(words != expected, axis=(0, 1)))
    print(f"checked {boards.shape[1]:,} positions: {int(wrong.sum())} differ")
    if wrong.any():
        g = int(np.argmax(wrong))
        print("board", np.asarray(boards[:, g]), "dice", np.asarray(dice[:, g]))
        diff = np.asarray(words[:, :, g] ^ expected[:, :, g])
        for pss, row in zip(*np.nonzero(diff)):
            print(f"  pass {pss} row {row}: words {int(words[pss, row, g]):017b} "
                  f"table {int(expected[pss, row, g]):017b}")
    return not wrong.any()


def compile_report(games):
    args = (jax.ShapeDtypeStruct((24, games), jnp.int32),
            jax.ShapeDtypeStruct((2, games), jnp.int32))
    model = G.H100_MODEL
    for name, fn in (("table (today)", possible_table), ("words", possible_words),
                     ("the position and first moves alone", shared_part)):
        with tempfile.TemporaryDirectory(prefix="possible-words-") as dump:
            program = G.read(G.compile_with_kernels(G.H100, fn, *args, dump_to=Path(dump)),
                             top=0)
        instructions = sum(k.launches * k.blocks * k.threads * k.instructions
                           for k in program.by_kernel)
        print(f"{name}: {program.kernels:.0f} kernels, {program.bytes / games:,.0f} bytes a "
              f"game, {instructions / games:,.0f} thread-instructions a game; H100 estimate "
              f"(compiled program, model in docs/gpu-program.md): "
              f"{model.seconds(program) * 1e6:,.1f} µs at {games:,} games")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=32768, help="games compiled for")
    p.add_argument("--check", type=int, default=4096,
                   help="random games whose 48 positions are compared (0: none)")
    args = p.parse_args(argv)
    os.environ["TRICTRAC_LOWERING"] = "gpu"  # read when the rules are traced
    ok = check(args.check) if args.check else True
    if args.games:
        compile_report(args.games)
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
