"""The reference's three lists of one position and roll, as masks over the candidates.

Rules of the form "if any sequence does X, only those are allowed" become reductions over
candidates. The reference builds three lists, each one using the previous ones:

* `filling`: sequences (with exceeding numbers, ignoring the exit and quarter rules) after
  which a quarter is filled; when there is one, only those are allowed (fill or keep a
  filled quarter);
* `exact`: sequences without exceeding numbers (ignoring the exit rule), which are the
  bear-offs that must be preferred to exceeding numbers;
* `legal`: all rules.

Each list is computed once (`lowering.materialised`).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A
from trictrac_jax.lowering import kernel_boundary, materialised, materialising, reduce_candidates
from trictrac_jax.moves.candidates import Candidates, candidates
from trictrac_jax.moves.layout import (NO_ORDER, NUM_ROWS, NUM_SLOTS,
                                       CandidateMask, PerGame, PerSlot, as_mask, in_first_pass,
                                       lanes_of, mask_not, other_pass, to_flat, to_slots,
                                       transposed)


def _exits_flat(grid: PerSlot, c: Candidates) -> CandidateMask:
    """uint8[N, *lanes]: a [2, 16, 17, *lanes] mask of double exits, flat."""
    return to_flat(grid, 0) & c.double_exit


def _same_listed(in_set: CandidateMask, c: Candidates
                 ) -> tuple[CandidateMask, CandidateMask]:
    """Two masks uint8[N, *lanes]: some candidate in `in_set` lists the same pair as this
    candidate; an earlier one (in the reference's loop order) does.

    Two candidates list the same pair when they move checkers from the same fields to the
    same fields: twins whose moves land on the same fields (doubles, bear-offs, the
    puissance pair), and two bear-offs whichever checker goes first, since those are
    listed lower field first. Bear-offs from the fields of slots i < k are thus listed by
    up to four candidates, in the order (pass 0, i then k), (0, k then i), (1, i then k),
    (1, k then i): the candidate and its transpose (slots swapped) in both passes.
    """
    lanes = lanes_of(in_set, 1)
    twin = c.twin_same & other_pass(in_set)
    same, earlier = in_set | twin, twin & mask_not(in_first_pass(in_set))
    exits = to_slots(in_set & c.double_exit)[0]
    swapped = transposed(exits)  # [2, 16, 17, *lanes]: the transpose lists the same pair
    either = exits | swapped
    later_slot_first = as_mask(A.leading(np.arange(NUM_ROWS)[:, None] > np.arange(NUM_SLOTS),
                                       len(lanes)))
    exit_same = jnp.broadcast_to(either[0] | either[1], either.shape)
    exit_earlier = jnp.stack([later_slot_first & swapped[0],
                              either[0] | (later_slot_first & swapped[1])])
    return same | _exits_flat(exit_same, c), earlier | _exits_flat(exit_earlier, c)


def earliest(in_set: CandidateMask, c: Candidates) -> CandidateMask:
    """uint8[N, *lanes]: the candidate of `in_set` that the reference lists first (none if
    empty)."""
    return in_set & (c.order == jnp.min(jnp.where(in_set, c.order, NO_ORDER), axis=0))


def member(in_set: CandidateMask, c: Candidates) -> CandidateMask:
    """uint8[N, *lanes]: whether each candidate's generated pair is listed by a candidate in
    `in_set` (never for a swapped pair, which no candidate lists in that order)."""
    return mask_not(c.swapped) & _same_listed(in_set, c)[0]


def first_listed(in_set: CandidateMask, c: Candidates) -> CandidateMask:
    """uint8[N, *lanes]: candidates in `in_set` whose listed pair no earlier candidate lists
    (dedup)."""
    return in_set & mask_not(_same_listed(in_set, c)[1])


def _listed(ok: CandidateMask, any_full: PerGame, any_first_pass: PerGame,
            c: Candidates) -> CandidateMask:
    """uint8[N, *lanes]: the sequences one call of the reference's generator lists (before
    dedup) when `ok` are the candidates that pass its rules (exceeding numbers allowed).

    Pairs with a single move are dropped when any pair has two (`any_full`: some full
    candidate is `ok`); without one, a first move alone is listed when no second move goes
    with it, which then holds for all of them, and in the second pass only when the first
    pass listed nothing (`any_first_pass`: some `ok` candidate in the first pass). Both
    flags are per game, so a list costs one reduction over the candidates, not three.
    """
    full = c.is_full
    alone = ok & mask_not(full) & (in_first_pass(ok) | mask_not(any_first_pass))
    return jnp.where(any_full, ok & full, alone)


def _some_listed(any_full: PerGame, any_first_pass: PerGame, in_full: PerGame,
                 in_first_single: PerGame, in_single: PerGame) -> PerGame:
    """bool[*lanes]: `_listed` lists some candidate of a set, given its two flags and
    whether some candidate passing its rules is in the set as a full pair, as a single move
    of the first pass, as a single move."""
    return jnp.where(any_full, in_full, in_first_single | (~any_first_pass & in_single))


class ListFlags(NamedTuple):
    """bool[*lanes]: what the first pass over the candidates finds (`_list_flags`), from
    which `filling`'s and `exact`'s flags of `_listed`, and whether each is empty, follow."""

    any_full: PerGame  # some possible full pair
    any_first: PerGame  # some possible candidate in the first pass
    fills_full: PerGame  # some possible full pair fills a quarter
    fills_first_single: PerGame  # some possible single move of the first pass fills one
    fills_single: PerGame  # some possible single move fills one
    # (`exact` lists full pairs only: no move alone without exceeding numbers)
    exact_filled: PerGame  # some exact full pair is a filling full pair
    exact_free: PerGame  # some exact full pair


@materialised
def _list_flags(c: Candidates, single: CandidateMask, first_pass: CandidateMask,
                fills: CandidateMask, no_excess: CandidateMask) -> ListFlags:
    """The `ListFlags` of the candidates, in one reduction (`fills`: possible and filling,
    `no_excess`: possible full pairs without exceeding numbers)."""
    possible, full = c.possible, c.is_full
    # apart: fused with the masks it reads, it left a thread at 1,024 games more live values
    # than ptxas gave it registers (a spill)
    filled = member(kernel_boundary(fills & full), c)
    return ListFlags(*A.any_each([
        possible & full, possible & first_pass, fills & full,
        fills & single & first_pass, fills & single,
        no_excess & filled, no_excess], reduce=reduce_candidates))


@materialised
def _filling(c: Candidates, any_full: PerGame, any_first: PerGame) -> CandidateMask:
    """uint8[N, *lanes]: the `filling` list: what the generator lists of the possible
    candidates (exit and quarter rules ignored), kept where a quarter is filled."""
    return c.fills & _listed(c.possible, any_full, any_first, c)


@materialised
def _filling_rule(any_filling: PerGame, filling: CandidateMask, c: Candidates
                  ) -> CandidateMask:
    """uint8[N, *lanes]: the filling rule: when some sequence fills a quarter, only the
    pairs of `filling` are allowed."""
    return mask_not(as_mask(any_filling)) | member(filling, c)


@materialised
def _exact(no_excess: CandidateMask, allowed: CandidateMask) -> CandidateMask:
    """uint8[N, *lanes]: the `exact` list: full pairs without exceeding numbers that the
    filling rule allows."""
    return no_excess & allowed


def _exit_rule(c: Candidates, exact: CandidateMask, any_exact: PerGame) -> CandidateMask:
    """uint8[N, *lanes]: the bear-off rule: all checkers in the last quarter, and an
    exceeding number only when no exact sequence exists, on the farthest checker (or the
    pair is exact)."""
    return c.exit_outside_ok & (member(exact, c) | (as_mask(~any_exact) & c.exit_farthest_ok))


@materialised
def _legal_candidates(c: Candidates, allowed: CandidateMask, exit_ok: CandidateMask
                      ) -> CandidateMask:
    """uint8[N, *lanes]: the candidates that pass every rule (`allowed` by the filling rule,
    `exit_ok` by the bear-off rule when they bear off)."""
    return c.possible & allowed & (mask_not(c.has_exit) | exit_ok)


class Probes(NamedTuple):
    """Masks uint8[N, *lanes] that `move_lists` reduces in its last pass over the
    candidates, as `Found`."""

    in_legal: tuple = ()  # whether some legal sequence is in each
    any: tuple = ()  # whether some candidate is in each
    count: jnp.ndarray | None = None  # how many candidates are in it


class Found(NamedTuple):
    """What `Probes` found, per game: bool[*lanes] per mask, and int32[*lanes] counted."""

    in_legal: list
    any: list
    count: jnp.ndarray | None


def no_probes(c: Candidates, filling: CandidateMask) -> Probes:
    """Nothing to find in the last pass."""
    return Probes()


def _cases(ok, q, full, single, first_pass):
    """uint8 masks [3][N, *lanes]: the candidates of `ok` in `q` in each case of `_listed`:
    full pairs, single moves of the first pass, single moves."""
    return [ok & case & q for case in (full, single & first_pass, single)]


class LastPass(NamedTuple):
    """What the last pass over the candidates finds (`_last_pass`), per game."""

    legal_full: PerGame  # bool: some legal full pair
    legal_first: PerGame  # bool: some legal candidate in the first pass
    some_single: PerGame  # bool: some legal single move
    in_legal: list  # per probe, [3] bool: some legal candidate in it, per case (`_cases`)
    any: list  # bool per probe of `Probes.any`
    count: jnp.ndarray | None  # int32: `Probes.count` counted


@materialised
def _last_pass(c: Candidates, ok: CandidateMask, filling: CandidateMask,
               single: CandidateMask, first_pass: CandidateMask, probes) -> LastPass:
    """The `legal` list's flags of `_listed`, whether it is empty, and what `probes(c,
    filling)` asks, in one reduction over the candidates."""
    asked = probes(c, filling)
    full = c.is_full
    masks = [ok & full, ok & first_pass, ok & single]
    for q in asked.in_legal:
        masks += _cases(ok, q, full, single, first_pass)
    flags = A.any_each(masks + list(asked.any), reduce=reduce_candidates)
    in_legal = [flags[k:k + 3] for k in range(3, len(masks), 3)]
    count = (None if asked.count is None else
             reduce_candidates(asked.count, jax.lax.add, 0, jnp.int32))
    return LastPass(*flags[:3], in_legal, flags[len(masks):], count)


class MoveLists(NamedTuple):
    """The reference's three sequence lists for one position and roll, as candidate masks."""

    candidates: Candidates
    filling: CandidateMask  # quarter-filling sequences (exit/quarter rules ignored)
    exact: CandidateMask  # sequences without exceeding numbers (exit rule ignored)
    legal: CandidateMask  # the legal sequences
    some: PerGame  # bool: some sequence is legal
    found: Found  # what `move_lists`' probes found


@materialising
def move_lists(board, dice,
               probes: Callable[[Candidates, jnp.ndarray], Probes] = no_probes) -> MoveLists:
    """The three lists (see the module's docstring) of view board int[24, *lanes] with dice
    int[2, *lanes].

    Each list is "the candidates passing its rules" cut by `_listed`'s two per-game flags.
    The flags of `filling` and `exact`, and whether each is empty, follow from the
    candidates alone, so one reduction finds them all (`_list_flags`); `legal`'s flags and
    what `probes(c, filling)` asks for are a second (`_last_pass`): two passes over the
    candidates where the lists built one after the other took seven.
    """
    c = candidates(board, dice)
    single, first_pass = mask_not(c.is_full), in_first_pass(c.possible)
    fills = c.possible & c.fills
    no_excess = c.possible & mask_not(c.exceeding) & c.is_full
    flags = _list_flags(c, single, first_pass, fills, no_excess)
    any_filling = _some_listed(flags.any_full, flags.any_first, flags.fills_full,
                               flags.fills_first_single, flags.fills_single)
    any_exact = jnp.where(any_filling, flags.any_full & flags.exact_filled, flags.exact_free)
    filling = _filling(c, flags.any_full, flags.any_first)
    allowed = _filling_rule(any_filling, filling, c)
    exact = _exact(no_excess, allowed)
    ok = _legal_candidates(c, allowed, _exit_rule(c, exact, any_exact))
    last = _last_pass(c, ok, filling, single, first_pass, probes)
    in_legal = [_some_listed(last.legal_full, last.legal_first, *found)
                for found in last.in_legal]
    return MoveLists(c, filling, exact, _listed(ok, last.legal_full, last.legal_first, c),
                     last.legal_full | last.some_single, Found(in_legal, last.any, last.count))
