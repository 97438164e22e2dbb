"""The reference's three lists of one position and roll, as words over the candidates.

Rules of the form "if any sequence does X, only those are allowed" become ORs over the
candidates' words. The reference builds three lists, each one using the previous ones:

* `filling`: sequences (with exceeding numbers, ignoring the exit and quarter rules) after
  which a quarter is filled; when there is one, only those are allowed (fill or keep a
  filled quarter);
* `exact`: sequences without exceeding numbers (ignoring the exit rule), which are the
  bear-offs that must be preferred to exceeding numbers;
* `legal`: all rules.

Each list is computed once (`lowering.materialised`): a value inside a materialised step
that is not one of its results is fused into every loop that reads it, and recomputed
there, so each list is a step of its own.
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from trictrac_jax.lowering import current, materialised
from trictrac_jax.moves import tiles
from trictrac_jax.moves.candidates import Candidates, candidates
from trictrac_jax.moves.layout import (ALL, BELOW_ROW, FIRST_PASS, FULL, SINGLE, PerGame,
                                       RowWords, against, any_set, by_pass, either_pass, keep,
                                       lanes_of, other_pass, pass_rows, select, transposed)


def same_listed(in_set: RowWords, c: Candidates) -> tuple[RowWords, RowWords]:
    """(same, earlier): some candidate of `in_set` lists the same pair as this candidate;
    an earlier one (in the reference's loop order) does.

    Two candidates list the same pair when they move checkers from the same fields to the
    same fields: twins whose moves land on the same fields (doubles, bear-offs, the
    puissance pair), and two bear-offs whichever checker goes first, since those are
    listed lower field first. Bear-offs from the fields of slots i < k are thus listed by
    up to four candidates, in the order (pass 0, i then k), (0, k then i), (1, i then k),
    (1, k then i): the candidate and its transpose (slots swapped) in both passes.
    """
    lanes = lanes_of(in_set)
    twin = c.twin_same & other_pass(in_set)
    same, earlier = in_set | twin, twin & ~against(FIRST_PASS, lanes)
    exits = in_set & c.double_exit
    swapped = transposed(exits)  # the transpose lists the same pair
    either = exits | swapped
    below = against(BELOW_ROW, lanes)
    exit_earlier = by_pass(below & pass_rows(swapped, 0),
                           pass_rows(either, 0) | (below & pass_rows(swapped, 1)))
    return (same | (either_pass(either) & c.double_exit),
            earlier | (exit_earlier & c.double_exit))


def member(in_set: RowWords, c: Candidates) -> RowWords:
    """The candidates whose generated pair a candidate of `in_set` lists (never a swapped
    pair, which no candidate lists in that order)."""
    return ~c.swapped & same_listed(in_set, c)[0]


def first_listed(in_set: RowWords, c: Candidates) -> RowWords:
    """The candidates of `in_set` whose listed pair no earlier candidate lists (dedup)."""
    return in_set & ~same_listed(in_set, c)[1]


def _listed(ok: RowWords, any_full: PerGame, any_first: PerGame) -> RowWords:
    """The sequences one call of the reference's generator lists (before dedup) when `ok`
    are the candidates that pass its rules (exceeding numbers allowed).

    Pairs with a single move are dropped when any pair has two (`any_full`: some full
    candidate is `ok`); without one, a first move alone is listed when no second move goes
    with it, which then holds for all of them, and in the second pass only when the first
    pass listed nothing (`any_first`: some `ok` candidate in the first pass)."""
    lanes = lanes_of(ok)
    alone = ok & against(SINGLE, lanes) & (against(FIRST_PASS, lanes) | keep(~any_first, ALL))
    return select(any_full, ok & against(FULL, lanes), alone)


def _some_listed(any_full: PerGame, any_first: PerGame, in_full: PerGame,
                 in_first_single: PerGame, in_single: PerGame) -> PerGame:
    """bool[*lanes]: `_listed` lists some candidate of a set, given its two flags and
    whether some candidate passing its rules is in the set as a full pair, as a single move
    of the first pass, as a single move."""
    return jnp.where(any_full, in_full, in_first_single | (~any_first & in_single))


def _some_listed_in(ok: RowWords, any_full, any_first, q: RowWords) -> PerGame:
    """bool[*lanes]: `_listed(ok, any_full, any_first)` has a candidate in `q`."""
    lanes = lanes_of(ok)
    in_q = ok & q
    return _some_listed(any_full, any_first, any_set(in_q & against(FULL, lanes)),
                        any_set(in_q & against(SINGLE & FIRST_PASS, lanes)),
                        any_set(in_q & against(SINGLE, lanes)))


class ListFlags(NamedTuple):
    """bool[*lanes]: what the lists' rules ask of the candidates as a whole."""

    any_full: PerGame  # some possible full pair
    any_first: PerGame  # some possible candidate in the first pass
    any_filling: PerGame  # the `filling` list is not empty
    any_exact: PerGame  # the `exact` list is not empty


@materialised
def _list_flags(c: Candidates) -> ListFlags:
    lanes = lanes_of(c.possible)
    full = against(FULL, lanes)
    possible = c.possible
    no_excess = possible & ~c.exceeding & full
    any_full, any_first = any_set(possible & full), any_set(possible & against(FIRST_PASS, lanes))
    any_filling = _some_listed_in(possible, any_full, any_first, c.fills)
    filled = member(c.fills & full, c)
    any_exact = jnp.where(any_filling, any_full & any_set(no_excess & filled), any_set(no_excess))
    return ListFlags(any_full, any_first, any_filling, any_exact)


@materialised
def _filling(c: Candidates, any_full: PerGame, any_first: PerGame) -> RowWords:
    """The `filling` list: what the generator lists of the possible candidates (exit and
    quarter rules ignored), kept where a quarter is filled."""
    return c.fills & _listed(c.possible, any_full, any_first)


@materialised
def _filling_rule(c: Candidates, filling: RowWords, any_filling: PerGame) -> RowWords:
    """The filling rule: when some sequence fills a quarter, only the pairs of `filling`
    are allowed."""
    return keep(~any_filling, ALL) | member(filling, c)


@materialised
def _exact(c: Candidates, allowed: RowWords) -> RowWords:
    """The `exact` list: full pairs without exceeding numbers that the filling rule allows."""
    return c.possible & ~c.exceeding & against(FULL, lanes_of(allowed)) & allowed


@materialised
def _legal_candidates(c: Candidates, allowed: RowWords, exact: RowWords, any_exact: PerGame
                      ) -> RowWords:
    """The candidates that pass every rule: `allowed` by the filling rule, and when they
    bear off the bear-off rule: all checkers in the last quarter, and an exceeding number
    only when no exact sequence exists, on the farthest checker (or the pair is exact)."""
    exit_ok = c.exit_outside_ok & (member(exact, c) | (keep(~any_exact, ALL)
                                                       & c.exit_farthest_ok))
    return c.possible & allowed & (~c.has_exit | exit_ok)


class MoveLists(NamedTuple):
    """The reference's three sequence lists for one position and roll, as words
    uint32[2, 16, *lanes] over the candidates."""

    candidates: Candidates
    filling: RowWords  # quarter-filling sequences (exit/quarter rules ignored)
    exact: RowWords  # sequences without exceeding numbers (exit rule ignored)
    legal: RowWords  # the legal sequences
    some: PerGame  # bool: some sequence is legal
    # What `legal` is cut from (`some_legal_in`): the candidates passing every rule, and
    # `_listed`'s two flags for them
    ok: RowWords
    legal_full: PerGame
    legal_first: PerGame
    filling_first: RowWords  # `filling`'s pairs, each listed once (`first_listed`)


def move_lists(board, dice) -> MoveLists:
    """The three lists (see the module's docstring) of view board int[24, *lanes] with dice
    int[2, *lanes]: each list is "the candidates passing its rules" cut by `_listed`'s two
    per-game flags. Under the lowering's `lists_in_tiles` a batch's lists are one kernel
    (`moves.tiles`)."""
    c = candidates(board, dice)
    lists = tiles.in_tiles(_lists, c) if current().lists_in_tiles else _lists(c)
    return MoveLists(c, *lists)


def _lists(c: Candidates) -> tuple:
    """`MoveLists`' fields after the candidates, from the candidates' words alone."""
    lanes = lanes_of(c.possible)
    flags = _list_flags(c)
    filling = _filling(c, flags.any_full, flags.any_first)
    allowed = _filling_rule(c, filling, flags.any_filling)
    exact = _exact(c, allowed)
    ok = _legal_candidates(c, allowed, exact, flags.any_exact)
    legal_full = any_set(ok & against(FULL, lanes))
    legal_first = any_set(ok & against(FIRST_PASS, lanes))
    return (filling, exact, _listed(ok, legal_full, legal_first),
            legal_full | any_set(ok & against(SINGLE, lanes)), ok, legal_full, legal_first,
            first_listed(filling, c))


def some_legal_in(lists: MoveLists, q: RowWords) -> PerGame:
    """bool[*lanes]: some legal sequence is in the candidates `q` (without building the
    legal list's intersection: from the candidates passing every rule)."""
    return _some_listed_in(lists.ok, lists.legal_full, lists.legal_first, q)
