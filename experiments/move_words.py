"""The move rules as words: each candidate fact, the reference's three lists and the Move
actions, with one uint32 a (pass, row) whose bit k is second slot k; checked equal to
today's byte tables (`moves`) on random positions, and both compiled for an H100 on this CPU.

    python -m experiments.move_words                  # check 4,096 games' positions, compile at 32,768 games
    python -m experiments.move_words --games 1024 --check 0 --top 8
    python -m experiments.move_words --golden ../shared/golden/positions.jsonl.gz --games 0
    python -m experiments.move_words --cpu 1024           # CPU time of the words' parts

The word formulation of issue 51 (docs/journal/engine-speed.md): a candidate (pass p, row
i, second slot k) is bit k of word W[p, i]. What a second move reads is per (pass, second
slot) on the position's board, corrected per row only where the first move changes it:

* the second move's own checkers: slot i loses one (its bit cleared when it held one), the
  destination's slot gains one; the own corner's guard (leaving it with exactly two) holds
  per row from the corner's count after the first move; the fills' "leaves a field short"
  and "lands on a single checker" are corrected at the same few slots;
* where it lands: the first move's origin loses an own checker and its destination gains
  one, neither of which makes a field the opponent's, so "not blocked" is per pass;
* the chained slot (bit 15: the first move's destination when it was empty) and "no second
  move" (bit 16) are computed per row;
* the pair rules, exits and twins are per-pass words of the second moves' fields and
  destinations combined with the first move's by word operations; "the second move starts
  where the first ended" is one bit a row (`_slot_bit`: a population count over the
  occupied fields below the first move's destination);
* the lists' reductions are ORs of words, the double exits' transposes a 15 x 15 bit
  transpose, and the Move actions each row's legal bits moved to their second checkers'
  numbers (`_by_ordinal`), one 16-bit word a die order and first checker.

Supports docs/journal/engine-speed.md, issue 51.
"""
from __future__ import annotations

import argparse
import functools
import os
import tempfile
from typing import NamedTuple
from pathlib import Path

from trictrac_jax.tools import gpu_program as G  # before any JAX computation

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax import board as B
from trictrac_jax import scoring as S
from trictrac_jax.board import OFF, OPP_CORNER, OWN_CORNER
from trictrac_jax.lowering import kernel_boundary, lookup, materialised
from trictrac_jax.moves import candidates, move_actions, move_lists
from trictrac_jax.moves.actions import FIRST_MOVE, encode
from trictrac_jax.state import NUM_ACTIONS
from experiments.move_kernels import rule_sources
from trictrac_jax.moves.candidates import (_in_opp_fillable, _pair_rules, _puissance_pair,
                                           first_moves, position)
from trictrac_jax.moves.layout import (CHAINED_SLOT, GRID, NO_SECOND_MOVE, NUM_FIRST,
                                       NUM_PASSES, NUM_ROWS, NUM_SLOTS, PUISSANCE_ROW)

U32 = jnp.uint32
ALL = np.uint32((1 << NUM_SLOTS) - 1)  # (numpy: no JAX computation at import)
FIRST_SLOTS = np.uint32((1 << NUM_FIRST) - 1)
_ROWS = np.arange(NUM_ROWS)
ROW_IS_PUISSANCE = (_ROWS == PUISSANCE_ROW)[None, :, None]  # [1, 16, 1]
ROW_BIT = np.where(_ROWS < NUM_FIRST, 1 << np.minimum(_ROWS, 31), 0).astype(np.uint32)[:, None]
BELOW_ROW = np.where(ROW_BIT > 0, ROW_BIT - 1, 0).astype(np.uint32)  # [16, 1]: slots k < i


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
    f = jnp.clip(field, 1, 24).astype(U32)
    below = occupied_fields & ((U32(1) << f - 1) - 1)
    held = (field > 0) & (((occupied_fields >> (f - 1)) & 1) == 1)
    return _where(held, U32(1) << jax.lax.population_count(below))


class CandidateWords(NamedTuple):
    """uint32[2, 16, games] each: bit k of word (p, i) is candidate (p, i, k)'s value."""

    possible: jax.Array  # `Candidates.possible`
    fills: jax.Array  # `Candidates.fills`, where possible
    exceeding: jax.Array  # `Candidates.exceeding`, where possible
    has_exit: jax.Array  # `Candidates.has_exit`, where possible
    exit_outside_ok: jax.Array  # where possible and it bears off
    exit_farthest_ok: jax.Array  # where possible and it bears off
    twin_same: jax.Array  # where it and its twin are possible
    double_exit: jax.Array  # where possible
    swapped: jax.Array  # where possible


def _quarter_words(slot_fields):
    """uint32[4, ...]: per quarter, the bits of the slots whose field (int[17 or 15 as the
    first axis, ...]) is in it."""
    quarter = (slot_fields - 1) // 6  # field 0: -1, no quarter
    return jnp.stack([_word((slot_fields > 0) & (quarter == q), 0) for q in range(4)])


class ActionRows(NamedTuple):
    """What the action index reads besides the lists' words, per game or per row."""

    dice: jax.Array  # int8[2, games]
    ordinal: jax.Array  # int32[17, games]: own checkers up to each slot's field (0: none)
    field: jax.Array  # int8[16, games]: each row's first field
    to: jax.Array  # int8[2, 16, games]: the first move's destination (0: borne off)
    chained_ordinal: jax.Array  # int32[2, 16, games]: own checkers up to it
    below_to: jax.Array  # uint32[2, 16, games]: the slots whose field is below it
    puissance_action: jax.Array  # int32[games]: the puissance pair's action
    # what the probes read: the second moves' fields and destinations, per pass and slot
    # (int8[2, 17, games]: the chained slot's per row in `chained_*`)
    second_field: jax.Array  # int8[15, games]
    second_to: jax.Array  # int8[2, 15, games]
    moved_to: jax.Array  # int8[2, 16, games]
    chained_to: jax.Array  # int8[2, 16, games]
    new_field: jax.Array  # bool[2, 16, games]
    occupied_fields: jax.Array  # uint32[games]
    puis_pair: jax.Array  # int8[4, games]


def candidate_words(board, dice) -> CandidateWords:
    """The `CandidateWords` of view boards int[24, games] with dice int[2, games]."""
    return _words(board, dice)[0]


@materialised
def _words(board, dice) -> tuple[CandidateWords, ActionRows]:
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
    row_bit = ROW_BIT
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
    possible = _where(first.ok, second_ok & ~bad) & ALL

    # the fills: per quarter q, the second moves that leave a field of q short (from 2
    # checkers after the first move) and those that fill one (onto 1), against the first
    # move's short fields of q (`first.short`); a quarter is filled when they cancel out
    slot_quarters = _quarter_words(f1)  # [4, games]
    two = _word(p.slot_count[:NUM_FIRST] == 2, 0)  # [games]
    dest_bit = _slot_bit(occupied_fields, first.moved_to)  # [2, 16, games]
    two_after = ((two & ~row_bit & ~dest_bit) | _where(count == 3, row_bit)
                 | _where(first.landing == 1, dest_bit))
    one = _word(landing == 1, 1)[:, None]  # [2, 1, games]: lands on a single own checker
    from_origin = _slot_bit(occupied_fields, moved_from - die_b[:, None])
    onto_dest = _slot_bit(occupied_fields, first.moved_to - die_b[:, None])
    one_after = ((one & ~from_origin & ~onto_dest) | _where(count == 2, from_origin)
                 | _where(first.landing == 0, onto_dest))
    chained_q = (chained_to[None] - 1) // 6 == jnp.arange(4)[:, None, None, None]
    to_quarters = jnp.stack([_word((t1 > 0) & ((t1 - 1) // 6 == q), 1) for q in range(4)])
    fills = U32(0)
    for q in range(4):
        leaves = two_after & slot_quarters[q]
        arrives = ((one_after & to_quarters[q][:, None])
                   | _where((chained_to > 0) & chained_q[q] & (chained_landing == 1), chained))
        short = first.short[q]
        fills |= (_where(short == 0, ~(leaves ^ arrives))
                  | _where(short == 1, arrives & ~leaves))
    fills &= second_ok & possible

    # the exits: per row the first move's, per pass and slot the second's
    leaves_board = raw >= OFF  # [2, 15, games]: the second move bears off
    exits_word = _word(leaves_board & (f1[None] > 0), 1)[:, None] | _where(
        new_field & (chained_raw >= OFF), chained)
    first_exits = (to == 0) & (field > 0)
    exceeding = (_where(first.exceeding, ALL) | _word((raw > OFF) & (f1[None] > 0), 1)[:, None]
                 | _where(new_field & (chained_raw > OFF), chained)) & possible
    has_exit = (_where(first_exits, ALL) | exits_word) & possible
    carried_in = (field < B.LAST_QUARTER) & (count == 1) & (to > B.LAST_QUARTER - 1)
    outside_ok = _where(p.outside - carried_in == 0, ALL)
    dist0 = jnp.where(to == 0, OFF, to) - field  # [2, 16, games]
    dist1 = jnp.where(t1 == 0, OFF, t1) - f1[None]  # [2, 15, games] (f1 = 0: 25, never short)
    chained_dist = jnp.where(chained_to == 0, OFF, chained_to) - first.moved_to
    far_bit = (_slot_bit(occupied_fields, first.farthest)
               | _where(new_field & (first.farthest == first.moved_to), chained))
    not_farthest = []
    for die0, die1 in ((p.dice[0], p.dice[1]), (p.dice[1], p.dice[0])):
        short0 = (dist0 != 0) & (dist0 < die0) & (field != p.farthest)
        short1 = (_word((dist1 != 0) & (dist1 < die1[None]), 1)[:, None]
                  | _where(new_field & (chained_dist != 0) & (chained_dist < die1), chained))
        not_farthest.append(_where(short0, ALL) | (short1 & ~far_bit))
    farthest_ok = ~(not_farthest[0] & not_farthest[1])
    double_exit = _where(first_exits, exits_word) & possible
    swapped = double_exit & BELOW_ROW
    same_t1 = (_word(t1[0] == t1[1], 0) | _where(chained_to[0] == chained_to[1], chained)
               | no_second)  # [16, games]
    twin_same = _where(to[0] == to[1], same_t1)[None] & possible & possible[::-1]

    puis_pair, puis_ok = _puissance_pair(p.board, p.dice)
    puissance = _where(puis_ok & _pair_rules(p, puis_pair), U32(1))  # [games]
    puissance_board = B.apply_move(B.apply_move(p.board, puis_pair[0], puis_pair[1]),
                                   puis_pair[2], puis_pair[3])
    puissance_fills = _where(A.fold(jnp.logical_or, B.quarter_filled(puissance_board)), puissance)
    in_rows = lambda word, at_puissance=U32(0): jnp.where(ROW_IS_PUISSANCE, at_puissance, word)
    possible = in_rows(possible, puissance[None, None])
    exit_mask = has_exit & possible
    cum = B.cumulative_checkers(p.board)
    ordinal = jnp.where(p.slot_field > 0, A.prefix_sum(p.slot_count.astype(jnp.int32)), 0)
    below_to = jnp.where(to > 0, (U32(1) << jax.lax.population_count(
        occupied_fields & ((U32(1) << jnp.clip(to, 1, 24).astype(U32) - 1) - 1))) - 1, ALL)
    puis_ordinal = jnp.stack([lookup(cum, puis_pair[0]), lookup(cum, puis_pair[2])])
    rows = ActionRows(dice=p.dice, ordinal=ordinal, field=field, to=to,
                      chained_ordinal=lookup(cum, first.moved_to), below_to=below_to,
                      puissance_action=encode(p.dice, puis_pair, puis_ordinal),
                      second_field=f1, second_to=t1, moved_to=first.moved_to,
                      chained_to=chained_to, new_field=new_field,
                      occupied_fields=occupied_fields, puis_pair=puis_pair)
    return CandidateWords(possible=possible,
                          fills=in_rows(fills, puissance_fills[None, None]),
                          exceeding=in_rows(exceeding), has_exit=in_rows(has_exit),
                          exit_outside_ok=in_rows(outside_ok & exit_mask),
                          exit_farthest_ok=in_rows(farthest_ok & exit_mask),
                          twin_same=in_rows(twin_same, puissance[None, None]),
                          double_exit=in_rows(double_exit), swapped=in_rows(swapped)), rows


# --- the reference's three lists, on words ---

# two moves: every slot but "no second move" in the first slots' rows; the puissance bit
FULL = np.where(ROW_IS_PUISSANCE, np.uint32(1),
                np.uint32(((1 << NUM_SLOTS) - 1) & ~(1 << NO_SECOND_MOVE))).astype(np.uint32)
SINGLE = np.where(ROW_IS_PUISSANCE, np.uint32(0), np.uint32(1 << NO_SECOND_MOVE)).astype(np.uint32)
FIRST_PASS = np.array([(1 << NUM_SLOTS) - 1, 0], np.uint32)[:, None, None]


def _any(words):
    """bool[games]: some bit of words uint32[2, 16, games] is set. An OR of the 32 words
    written out, not a reduction: on the GPU a reduction with the games minor is a kernel
    of few blocks (8 at 1,024 games), into which XLA fused the words' whole computation."""
    return A.fold(jnp.bitwise_or, words.reshape((-1,) + words.shape[2:])) != 0


def _transposed(words):
    """uint32[2, 16, games]: bit k of row i = bit i of row k (first slots only)."""
    rows = words[:, :NUM_FIRST]  # [2, 15(k), games]
    bits = (rows[:, :, None] >> jnp.arange(NUM_FIRST, dtype=U32)[None, None, :, None]) & 1
    t = _word(bits > 0, 1)  # [2, 15(i), games]
    return jnp.pad(t, [(0, 0), (0, NUM_ROWS - NUM_FIRST), (0, 0)])


def same_listed(in_set, c: CandidateWords):
    """(same, earlier) words: some candidate of `in_set` lists the same pair as this one; an
    earlier one in the reference's loop does (`lists._same_listed`, on words)."""
    twin = c.twin_same & in_set[::-1]
    same, earlier = in_set | twin, twin & ~FIRST_PASS
    exits = in_set & c.double_exit
    swapped = _transposed(exits)
    either = exits | swapped
    below = BELOW_ROW
    exit_same = either[0] | either[1]
    exit_earlier = jnp.stack([below & swapped[0], either[0] | (below & swapped[1])])
    return same | (exit_same[None] & c.double_exit), earlier | (exit_earlier & c.double_exit)


def member(in_set, c: CandidateWords):
    return ~c.swapped & same_listed(in_set, c)[0]


def _listed(ok, any_full, any_first):
    alone = ok & SINGLE & (FIRST_PASS | _where(~any_first, ALL))
    return jnp.where(any_full, ok & FULL, alone)


def _some_listed(any_full, any_first, in_full, in_first_single, in_single):
    return jnp.where(any_full, in_full, in_first_single | (~any_first & in_single))


class ListWords(NamedTuple):
    """The reference's three lists as words uint32[2, 16, games], and `some` bool[games]."""

    filling: jax.Array
    exact: jax.Array
    legal: jax.Array
    some: jax.Array


def list_words(board, dice) -> ListWords:
    """`moves.move_lists` on words (no probes)."""
    return lists_of(candidate_words(board, dice))


def lists_of(c: CandidateWords) -> ListWords:
    return _lists(c)[0]


@materialised
def _list_flags(c: CandidateWords):
    """bool[games] each: some possible full pair, some possible candidate in the first
    pass, `filling` is not empty, `exact` is not empty."""
    possible = c.possible
    fills = possible & c.fills
    no_excess = possible & ~c.exceeding & FULL
    any_full, any_first = _any(possible & FULL), _any(possible & FIRST_PASS)
    filled = member(fills & FULL, c)
    any_filling = _some_listed(any_full, any_first, _any(fills & FULL),
                               _any(fills & SINGLE & FIRST_PASS), _any(fills & SINGLE))
    any_exact = jnp.where(any_filling, any_full & _any(no_excess & filled), _any(no_excess))
    return any_full, any_first, any_filling, any_exact


# Each list (and the filling rule) materialised: a value inside a materialised step that is
# not one of its results is fused into every loop that reads it, and recomputed there.

@materialised
def _filling_words(c: CandidateWords, any_full, any_first):
    return c.possible & c.fills & _listed(c.possible, any_full, any_first)


@materialised
def _allowed_words(c: CandidateWords, filling, any_filling):
    return _where(~any_filling, ALL) | member(filling, c)


@materialised
def _exact_words(c: CandidateWords, allowed):
    return c.possible & ~c.exceeding & FULL & allowed


@materialised
def _ok_words(c: CandidateWords, allowed, exact, any_exact):
    exit_ok = c.exit_outside_ok & (member(exact, c) | (_where(~any_exact, ALL)
                                                       & c.exit_farthest_ok))
    return c.possible & allowed & (~c.has_exit | exit_ok)


def _lists(c: CandidateWords):
    """(ListWords, ok, legal_full, legal_first): the lists, and the candidates passing
    every rule with `_listed`'s flags for the legal list (what the probes read)."""
    any_full, any_first, any_filling, any_exact = _list_flags(c)
    filling = _filling_words(c, any_full, any_first)
    allowed = _allowed_words(c, filling, any_filling)
    exact = _exact_words(c, allowed)
    ok = _ok_words(c, allowed, exact, any_exact)
    legal_full, legal_first = _any(ok & FULL), _any(ok & FIRST_PASS)
    legal = _listed(ok, legal_full, legal_first)
    return ListWords(filling, exact, legal, legal_full | _any(ok & SINGLE)), ok, legal_full, legal_first


# --- the Move actions, from the legal words ---

def _by_ordinal(word, ordinal_bits):
    """uint32[...]: for each bit k < 15 set in `word`, the bit `ordinal_bits[k]` (one bit a
    slot, per game: [15, games])."""
    out = U32(0)
    for k in range(NUM_FIRST):
        out |= _where((word >> k) & 1 == 1, ordinal_bits[k])
    return out


@materialised
def _second_checkers(c: CandidateWords, r: ActionRows, legal):
    """uint32[2, 15, games]: per die order and first slot, the legal sequences' second
    checkers as bits.

    A legal candidate's action is (order, first checker, second checker): the order is the
    pass's die order except for a first move bearing off alone (the bigger die's) and two
    bear-offs (the bigger die's, the smaller's from one field); a double exit listed
    swapped is the transposed candidate's action."""
    v0 = r.dice[0]
    hi, lo = jnp.maximum(r.dice[0], r.dice[1]), jnp.minimum(r.dice[0], r.dice[1])
    die_a = jnp.stack([hi, lo])  # [2, games]
    double = legal & c.double_exit
    double = (double & ~c.swapped) | _transposed(double & c.swapped)
    first_exits = (r.to == 0) & (r.field > 0)
    alone_exit = _where(first_exits, U32(1 << NO_SECOND_MOVE)) & legal & ~c.double_exit
    normal = legal & ~c.double_exit & ~alone_exit
    row_bit = ROW_BIT
    # The second checker's number is its slot's ordinal, one less from the first move's
    # slot up (its checker left) except from the first move's destination up (one arrived:
    # no slot below the first move's lies there). So a row's bits go to their ordinals
    # (`_by_ordinal`, per game), those of one range shifted down by one.
    at_or_above = FIRST_SLOTS & ~BELOW_ROW  # [16, 1]: slots k >= i
    from_dest = _where(r.to > 0, FIRST_SLOTS & ~r.below_to)  # [2, 16, games]
    one_less = at_or_above & ~from_dest
    ordinal_bits = U32(1) << r.ordinal[:NUM_FIRST].astype(U32)  # [15, games]

    def seconds(word, one_less):
        moved = _by_ordinal(word & ~one_less, ordinal_bits) | (
            _by_ordinal(word & one_less, ordinal_bits) >> 1)
        chained = _where((word >> CHAINED_SLOT) & 1 == 1,
                         U32(1) << r.chained_ordinal.astype(U32))
        return moved | chained | ((word >> NO_SECOND_MOVE) & 1)  # no second move: checker 0

    orders = []
    for order in (0, 1):
        in_order = lambda die: (die != v0) == bool(order)
        single = _where(in_order(die_a)[:, None], normal) | _where(in_order(hi), alone_exit)
        two_exits = _where(in_order(hi), double & ~row_bit) | _where(in_order(lo), double & row_bit)
        both = seconds(single, one_less) | seconds(two_exits, at_or_above)  # two bear-offs:
        # no destination
        orders.append(both[0, :NUM_FIRST] | both[1, :NUM_FIRST])  # [15, games]
    return jnp.stack(orders)


@materialised
def _checker_words(seconds, ordinal):
    """uint32[32, games]: per (die order, first checker), the second checkers of the legal
    sequences as bits: each first slot's word at its first checker (a sum: the slots' first
    checkers are distinct, and a slot with no legal bit adds nothing)."""
    checkers = jnp.arange(16, dtype=ordinal.dtype)[:, None, None]
    at = jnp.where(ordinal[None, :NUM_FIRST] == checkers, seconds[:, None], U32(0))
    return jnp.sum(at, axis=2, dtype=U32).reshape(2 * 16, -1)  # [2, 16, 15, g] -> [32, g]


def move_action_words(board, dice):
    """bool[514, games]: `moves.move_actions` of the legal list, from words: each row's
    legal bits moved to their second checkers' places, one 16-bit word a die order and
    first checker, then the bits as the mask."""
    c, r = _words(board, dice)
    legal = lists_of(c).legal
    seconds = _second_checkers(c, r, legal)
    # apart: fused into the mask's kernel, each of its 514 entries a game recomputed them
    words = kernel_boundary(_checker_words(seconds, r.ordinal))
    bits = (words[:, None] >> jnp.arange(16, dtype=U32)[None, :, None]) & 1
    moves = bits.reshape(2 * 16 * 16, -1) == 1
    mask = jnp.concatenate([jnp.zeros((FIRST_MOVE,) + moves.shape[1:], bool), moves])
    puissance = jnp.any((legal[:, PUISSANCE_ROW] & 1) == 1, axis=0)
    return mask | ((jnp.arange(NUM_ACTIONS)[:, None] == r.puissance_action) & puissance)


def action_tables(board, dice):
    """Today's `moves.move_actions` of the legal list."""
    return move_actions(board, dice, move_lists(board, dice))


# --- what scoring asks of the lists (`scoring.roll_lists`' probes), from words ---

def _row_and_second_words(r: ActionRows, first_row, second_slot, chained_row, puissance):
    """uint32[2, 16, games]: a fact of a candidate's pair that holds when its first move
    does (`first_row`, bool[2, 16, games]) or its second move does (`second_slot`,
    bool[2, 15, games]; `chained_row` for the chained slot); `puissance` bool[games] for
    the puissance row."""
    words = (_where(first_row, ALL) | _word(second_slot, 1)[:, None]
             | _where(r.new_field & chained_row, U32(1 << CHAINED_SLOT)))
    return jnp.where(ROW_IS_PUISSANCE, _where(puissance, U32(1))[None, None], words & ALL)


def plays_words(r: ActionRows, die):
    """uint32[2, 16, games]: a move of the candidate's pair plays `die` (`scoring._plays`)."""
    def plays(frm, to, moved):
        return moved & (((to == 0) & (OFF - frm <= die)) | ((frm < to) & (to - frm == die)))
    f1, t1 = r.second_field[None], r.second_to
    pp = r.puis_pair
    return _row_and_second_words(
        r, plays(r.field, r.to, r.field > 0), plays(f1, t1, f1 > 0),
        plays(r.moved_to, r.chained_to, True),
        plays(pp[0], pp[1], True) | plays(pp[2], pp[3], True))


def reach_words(r: ActionRows, dest, origin):
    """uint32[2, 16, games]: the candidate's pair brings a checker to `dest` from `origin`
    (a tout d'une counts its start; `scoring._reaching`)."""
    f0, t0 = r.field, r.to
    first = (t0 == dest) & (f0 == origin)
    continues = (r.second_field[None] == t0[:, :, None]) & (t0[:, :, None] > 0)  # [2,16,15,g]
    start = jnp.where(continues, f0[None, :, None], r.second_field[None, None])
    second = (r.second_to[:, None] == dest) & (start == origin)  # [2, 16, 15, games]
    words = (_where(first, ALL) | _word(second, 2)
             | _where(r.new_field & (r.chained_to == dest) & (f0 == origin),
                      U32(1 << CHAINED_SLOT)))
    pp = r.puis_pair
    chained = pp[1] == pp[2]
    puissance = (((pp[1] == dest) & (pp[0] == origin))
                 | ((pp[3] == dest) & (jnp.where(chained, pp[0], pp[2]) == origin)))
    return jnp.where(ROW_IS_PUISSANCE, _where(puissance, U32(1))[None, None], words & ALL)


def probe_words(board, dice):
    """What `scoring.roll_lists` finds (`moves.Found`: in_legal, any, count), from words."""
    c, r = _words(board, dice)
    lists, ok, legal_full, legal_first = _lists(c)
    in_legal = []
    for die in (r.dice[0], r.dice[1]):
        q = plays_words(r, die)
        in_legal.append(_some_listed(legal_full, legal_first, _any(ok & q & FULL),
                                     _any(ok & q & SINGLE & FIRST_PASS), _any(ok & q & SINGLE)))
    seqs = lists.filling & ~same_listed(lists.filling, c)[1]
    _, dest = S._missing_for_quarter(board)
    dest = dest.astype(jnp.int8)
    v0, v1 = r.dice[0], r.dice[1]
    origins = [dest - v for v in (v0, v1, v0 + v1, v0 - 1, v1 - 1)]
    found = [_any(seqs)]
    for k, origin in enumerate(origins):
        distinct = (origin > 0) & ~functools.reduce(
            jnp.logical_or, [origin == before for before in origins[:k]], jnp.bool_(False))
        found.append(_any(seqs & reach_words(r, dest, origin)) & distinct)
    count = jnp.sum(jax.lax.population_count(seqs), axis=(0, 1), dtype=jnp.int32)
    return in_legal, found, count


def _lowest_bit(word):
    """int32[...]: the index of the lowest set bit of `word` (32 when none)."""
    return jax.lax.population_count((word & (~word + U32(1))) - U32(1)).astype(jnp.int32)


def _pick(table, index):
    """table[index[g], g] for table [n, games], index int[games]."""
    return jnp.take_along_axis(table, index[None], axis=0)[0]


def earliest_pair(board, dice):
    """int8[4, games]: the listed pair of the first legal sequence in the reference's loop
    (zeros when none), what the helpless man's jan names (`scoring._helpless_man`).

    The reference's loop runs per pass over the first slots, then the puissance pair: the
    rows' own order. In a row it runs over the second fields, then "no second move": the
    slots in field order, with the chained slot at its field."""
    c, r = _words(board, dice)
    legal = lists_of(c).legal
    games = legal.shape[-1]
    flat = lambda x: jnp.broadcast_to(x, (NUM_PASSES, NUM_ROWS, games)).reshape(-1, games)
    row = jnp.argmax(flat(legal) != 0, axis=0)  # [games]: the first row holding one
    word = _pick(flat(legal), row)
    first_field = _pick(flat(r.field[None]), row)
    to, moved_to = _pick(flat(r.to), row), _pick(flat(r.moved_to), row)
    chained_to = _pick(flat(r.chained_to), row)
    below_moved = (U32(1) << jax.lax.population_count(
        r.occupied_fields & ((U32(1) << jnp.clip(moved_to, 1, 24).astype(U32) - 1) - 1))) - 1
    slots = word & FIRST_SLOTS
    before_chained = slots & below_moved
    k = jnp.where(before_chained != 0, _lowest_bit(before_chained),
                  jnp.where((word >> CHAINED_SLOT) & 1 == 1, CHAINED_SLOT,
                            jnp.where(slots != 0, _lowest_bit(slots), NO_SECOND_MOVE)))
    k15 = jnp.minimum(k, NUM_FIRST - 1)
    second_to = _pick(r.second_to.reshape(NUM_PASSES * NUM_FIRST, games),
                      (row // NUM_ROWS) * NUM_FIRST + k15)
    f1 = jnp.where(k < NUM_FIRST, _pick(r.second_field, k15),
                   jnp.where(k == CHAINED_SLOT, moved_to, 0)).astype(jnp.int8)
    t1 = jnp.where(k < NUM_FIRST, second_to,
                   jnp.where(k == CHAINED_SLOT, chained_to, 0)).astype(jnp.int8)
    pair = jnp.stack([first_field, to, f1, t1]).astype(jnp.int8)
    swapped = (_pick(flat(c.swapped), row) >> k.astype(U32)) & 1 == 1
    pair = jnp.where(swapped, pair[jnp.array([2, 3, 0, 1])], pair)
    puissance = row % NUM_ROWS == PUISSANCE_ROW
    pair = jnp.where(puissance, r.puis_pair, pair)
    return jnp.where(word != 0, pair, 0)


def earliest_pair_table(board, dice):
    """Today's first legal sequence's listed pair (`scoring._helpless_man`)."""
    from trictrac_jax.moves import earliest
    lists = move_lists(board, dice)
    first = earliest(lists.legal, lists.candidates)
    seq = lists.candidates.listed
    return jnp.sum(jnp.where(first, seq, 0), axis=1, dtype=seq.dtype)


def probe_tables(board, dice):
    """Today's `scoring.roll_lists(...).found`."""
    found = S.roll_lists(board, dice).found
    return list(found.in_legal), list(found.any), found.count


def list_tables(board, dice) -> ListWords:
    """Today's `moves.move_lists`, its masks as words."""
    lists = move_lists(board, dice)
    return ListWords(table_as_words(lists.filling), table_as_words(lists.exact),
                     table_as_words(lists.legal), lists.some)


def today_tables(board, dice):
    """The same facts as today's byte tables, uint8[544, games] each."""
    c = candidates(board, dice)
    return tuple(getattr(c, name) for name in CandidateWords._fields)


def candidate_tables(board, dice) -> CandidateWords:
    """Today's byte tables (uint8[544, games]) of the same facts, as words, each kept where
    the lists read it (`CandidateWords`' comments)."""
    c = candidates(board, dice)
    possible, exits = c.possible, c.possible & c.has_exit
    both = possible & possible.reshape(2, -1, *possible.shape[1:])[::-1].reshape(possible.shape)
    kept = dict(possible=possible, fills=possible, exceeding=possible, has_exit=possible,
                exit_outside_ok=exits, exit_farthest_ok=exits, twin_same=both,
                double_exit=possible, swapped=possible)
    return CandidateWords(**{name: table_as_words(getattr(c, name) & kept[name])
                             for name in CandidateWords._fields})


def shared_part(board, dice):
    """What both read before the candidates: the `Position` and the first moves (their
    `ok` and destinations, int8[2, 16, games] each), as a baseline for both."""
    p = position(board, dice)
    field, count = p.slot_field[:NUM_ROWS], p.slot_count[:NUM_ROWS]
    first = first_moves(p, field, count, jnp.broadcast_to(field, (NUM_PASSES,) + field.shape))
    return first.ok, first.to, first.landing


def table_as_words(table):
    """uint8[544, games] -> uint32[2, 16, games]."""
    return _word(table.reshape(GRID + table.shape[1:]) > 0, 2)


POSITIONS_A_GAME, EVERY = 48, 6  # a position every 6 steps: bear-offs included


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

    for t in range(POSITIONS_A_GAME * EVERY):
        key, sub = jax.random.split(key)
        states = advance(states, sub)
        if t % EVERY == EVERY - 1:
            boards.append(jax.vmap(view_board)(states._board, states.current_player))
            dice.append(states._dice)
    return (jnp.concatenate(boards).T.astype(jnp.int32),
            jnp.concatenate(dice).T.astype(jnp.int32))


def golden_positions(path):
    """(boards int32[24, n], dice int32[2, n]): the view boards and rolls of the golden
    positions file (`../shared/golden/positions.jsonl.gz`: 3,000 positions x 36 rolls)."""
    import gzip
    import json

    boards, dice = [], []
    with gzip.open(path, "rt") as f:
        for line in f:
            record = json.loads(line)
            state = record["state"]
            board = np.asarray(state["board"])
            boards.append(board if state["active"] == 1 else -board[::-1])  # `view_board`
            dice.append(record["dice"])
    return jnp.asarray(np.stack(boards, 1), jnp.int32), jnp.asarray(np.array(dice).T, jnp.int32)


def roll_words(board, dice):
    """What a roll's scoring and mask read of the moves, from words: the Move actions,
    whether there is one, the probes' findings and the first legal pair."""
    return (move_action_words(board, dice), list_words(board, dice).some,
            probe_words(board, dice), earliest_pair(board, dice))


def roll_tables(board, dice):
    """The same from today's tables (`scoring.roll_lists`, as `scoring.roll_outcome` and
    the helpless man's jan read them)."""
    from trictrac_jax.moves import earliest
    lists = S.roll_lists(board, dice)
    first = earliest(lists.legal, lists.candidates)
    seq = lists.candidates.listed
    found = lists.found
    return (move_actions(board, dice, lists), lists.some,
            (list(found.in_legal), list(found.any), found.count),
            jnp.sum(jnp.where(first, seq, 0), axis=1, dtype=seq.dtype))


def check(count, golden=None):
    boards, dice = golden_positions(golden) if golden else random_positions(count)
    words = jax.jit(candidate_words)(boards, dice)
    expected = jax.jit(candidate_tables)(boards, dice)
    ok = True
    for name, got, want in zip(CandidateWords._fields, words, expected):
        wrong = np.asarray(jnp.any(got != want, axis=(0, 1)))
        some = int(np.asarray(jnp.any(want != 0, axis=(0, 1))).sum())
        print(f"{name}: {boards.shape[1]:,} positions checked ({some:,} with some candidate "
              f"set), {int(wrong.sum())} differ")
        if wrong.any():
            ok = False
            g = int(np.argmax(wrong))
            print("  board", np.asarray(boards[:, g]), "dice", np.asarray(dice[:, g]))
            diff = np.asarray(got[:, :, g] ^ want[:, :, g])
            for pss, row in zip(*np.nonzero(diff)):
                print(f"  pass {pss} row {row}: words {int(got[pss, row, g]):017b} "
                      f"table {int(want[pss, row, g]):017b}")
    got, want = jax.jit(list_words)(boards, dice), jax.jit(list_tables)(boards, dice)
    for name, a, b in zip(ListWords._fields, got, want):
        wrong = np.asarray(a != b) if a.ndim == 1 else np.asarray(jnp.any(a != b, axis=(0, 1)))
        print(f"list {name}: {int(wrong.sum())} of {boards.shape[1]:,} positions differ")
        ok &= not wrong.any()
    ok &= _same_per_game("Move actions", move_action_words, action_tables, boards, dice)
    got, want = jax.jit(probe_words)(boards, dice), jax.jit(probe_tables)(boards, dice)
    for name, a, b in (("plays die", got[0], want[0]), ("filling probes", got[1], want[1]),
                       ("filling count", [got[2]], [want[2]])):
        wrong = functools.reduce(np.logical_or, [np.asarray(x != y) for x, y in zip(a, b)])
        print(f"{name}: {int(wrong.sum())} of {boards.shape[1]:,} positions differ "
              f"({int(sum(np.asarray(y).astype(bool).sum() for y in b)):,} set)")
        ok &= not wrong.any()
    ok &= _same_per_game("the first legal sequence", earliest_pair, earliest_pair_table,
                         boards, dice)
    return ok


def _same_per_game(name, words_fn, tables_fn, boards, dice):
    """Whether `words_fn` and `tables_fn` ([n, games] each) agree on every game; prints how
    many differ and the first that does."""
    got, want = jax.jit(words_fn)(boards, dice), jax.jit(tables_fn)(boards, dice)
    wrong = np.asarray(jnp.any(got != want, axis=0))
    print(f"{name}: {int(wrong.sum())} of {boards.shape[1]:,} positions differ")
    if wrong.any():
        g = int(np.argmax(wrong))
        print("  board", np.asarray(boards[:, g]), "dice", np.asarray(dice[:, g]),
              "words", np.nonzero(np.asarray(got[:, g]))[0] if got.dtype == bool
              else np.asarray(got[:, g]),
              "tables", np.nonzero(np.asarray(want[:, g]))[0] if want.dtype == bool
              else np.asarray(want[:, g]))
    return not wrong.any()


def compile_report(games, top=0):
    args = (jax.ShapeDtypeStruct((24, games), jnp.int32),
            jax.ShapeDtypeStruct((2, games), jnp.int32))
    model = G.H100_MODEL
    lists_today = lambda board, dice: (move_lists(board, dice).legal,
                                       move_lists(board, dice).some)
    lists_words = lambda board, dice: list_words(board, dice)[2:]
    for name, fn in (("the position and first moves alone", shared_part),
                     ("candidate facts, tables (today)", today_tables),
                     ("candidate facts, words", candidate_words),
                     ("the legal list, tables (today: `move_lists`)", lists_today),
                     ("the legal list, words", lists_words),
                     ("the Move actions, tables (today: `move_actions`)", action_tables),
                     ("the Move actions, words", move_action_words),
                     ("a roll's moves: actions, scoring's probes, the first legal pair, "
                      "tables (today)", roll_tables),
                     ("a roll's moves, words", roll_words)):
        with tempfile.TemporaryDirectory(prefix="possible-words-") as dump:
            program = G.read(G.compile_with_kernels(G.H100, fn, *args, dump_to=Path(dump)),
                             top=0)
            if top:
                hlo = max(Path(dump).glob("*after_optimizations.txt"),
                          key=lambda f: f.stat().st_size).read_text()
                for k in sorted(program.by_kernel,
                                key=lambda k: -k.launches * model.kernel_seconds(k))[:top]:
                    sources = rule_sources(hlo, k.name).most_common(4)
                    print(f"    {k.launches * model.kernel_seconds(k) * 1e6:7.1f} µs {k.name}: "
                          f"{k.bytes / games:,.0f} B a game, {k.instructions:,} instr a thread, "
                          f"{k.blocks:,} x {k.threads}; "
                          + ", ".join(f"{n} {c}" for n, c in sources))
        instructions = sum(k.launches * k.blocks * k.threads * k.instructions
                           for k in program.by_kernel)
        print(f"{name}: {program.kernels:.0f} kernels, {program.bytes / games:,.0f} bytes a "
              f"game, {instructions / games:,.0f} thread-instructions a game; H100 estimate "
              f"(compiled program, model in docs/gpu-program.md): "
              f"{model.seconds(program) * 1e6:,.1f} µs at {games:,} games")


def _best_cpu_seconds(fn, args, calls=5):
    """The least CPU time of `calls` calls of jitted `fn` (after one to compile)."""
    import time
    fn = jax.jit(fn)
    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(calls):
        start = time.process_time()
        jax.block_until_ready(fn(*args))
        best = min(best, time.process_time() - start)
    return best


def cpu_report(games):
    """CPU time of today's legal moves and of the words' parts, alone and composed (the CPU
    lowering; positions of random play)."""
    boards, dice = random_positions(games // POSITIONS_A_GAME + 1)
    boards, dice = boards[:, :games], dice[:, :games]
    c, r = jax.jit(_words)(boards, dice)
    legal = jax.jit(lists_of)(c).legal
    seconds = jax.jit(_second_checkers)(c, r, legal)
    rows = [("legal moves, tables (today: `move_actions` of `move_lists`)", action_tables,
             (boards, dice)),
            ("words: the candidates' facts", _words, (boards, dice)),
            ("words: the lists", lists_of, (c,)),
            ("words: the second checkers", _second_checkers, (c, r, legal)),
            ("words: the first checkers' words", _checker_words, (seconds, r.ordinal)),
            ("legal moves, words, composed", move_action_words, (boards, dice)),
            # the lists read whole and in part (a list inside a materialised step that is
            # not one of its results is recomputed by each reader)
            ("the facts and the lists, all four returned", list_words, (boards, dice)),
            ("the facts and the lists, the legal list alone",
             lambda board, dice: list_words(board, dice).legal, (boards, dice))]
    for name, fn, args in rows:
        print(f"{name}: {_best_cpu_seconds(fn, args) * 1e3:.2f} ms of CPU for {games:,} "
              "positions")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=32768, help="games compiled for")
    p.add_argument("--top", type=int, default=0, help="kernels listed a program, costliest first")
    p.add_argument("--check", type=int, default=4096,
                   help="random games whose 48 positions are compared (0: none)")
    p.add_argument("--cpu", type=int, default=0, metavar="GAMES",
                   help="time the words' parts on this CPU for GAMES positions (its lowering)")
    p.add_argument("--golden", type=Path, default=None,
                   help="check the positions of this golden file instead "
                        "(../shared/golden/positions.jsonl.gz)")
    args = p.parse_args(argv)
    if args.cpu:
        cpu_report(args.cpu)
        return
    os.environ["TRICTRAC_LOWERING"] = "gpu"  # read when the rules are traced
    ok = check(args.check, args.golden) if args.check or args.golden else True
    if args.games:
        compile_report(args.games, args.top)
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
