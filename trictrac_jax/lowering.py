"""Which lowering the engine's hot paths get, per backend: how they are batched and compiled
(no game rules here).

`game_minor`: the move rules (the `moves` package, scoring.py) are written for arrays whose
structure axes come first and whose trailing axes, if any, are games ("lanes"). Called on one
position they see no trailing axis. Under `jax.vmap`, `game_minor` moves the batch axis of every
argument to the end, runs the function once on the whole batch, and moves the batch axis of
every result back to the front. That layout is what XLA's CPU backend vectorises: its loops
run along contiguous games, whereas with the batch axis first they run along short structure
axes (17 second slots, 24 fields), broadcasts and reshapes between those axes need integer
division per element, and most loops stay scalar.

`cpu_chunked` (and `game_minor`): on CPU, a large batch runs `CPU_CHUNK` games at a time,
so that the arrays of one chunk stay in the per-core cache. `Trictrac.step` and
`agents.uniform_legal` are chunked as a whole, not only their game-minor parts: the
batch-first rest of a step (the state's 514-action mask and 217 observation) then stays in
the cache too.

`materialised`: a rule whose result is an array of its own rather than fused into its
readers (the materialisation schedule, stated on the rules it applies to).

Lowerings (`current()`, read at trace time): on CPU, a `materialised` result is computed
in a branch of its own, large batches are chunked and `lookup` is a one-hot reduction; on an
accelerator, `materialised` is plain fusion (on a GPU the separate loops cost more than the
recomputation they save), a batch runs in one pass, `lookup` gathers and `kernel_boundary`
keeps a value out of its readers' kernels. `game_minor` puts the games last on CPU and
is a plain `jax.vmap` on a GPU (games the major axis: faster there at every batch size
measured, `python -m experiments.lowering_ab`, docs/speed.md); "gpu-games-last" is the GPU
lowering with the games last, kept to be timed beside it. "gpu-tiles" is the GPU lowering
with the move lists in one Pallas kernel (`moves.tiles`): fewer kernels and bytes a step in
the H100 programs compiled here, not yet run on a GPU, so chosen only by name.
`any_nonzero` follows the games: an OR written out with the games last, a reduction with
the games first; so does
`kth_true` (the random agent's pick): a running count with the games last, words of 32
entries with the games first (the same index), and `count_true`: a sum with the games last,
the same words' set bits with the games first.
`ranking.candidate_worths` scores candidates in passes that the lowering sizes
(`Lowering.candidates_per_game`, `candidates_per_pass`). `top_k` (a search node's columns):
on a GPU a row of fewer than 1,024 entries is padded to 1,024, where XLA's GPU backend takes
the 16 or fewer largest in its TopK kernel rather than sorting the whole row.
`TRICTRAC_LOWERING=cpu|gpu|...` (or its former name `TRICTRAC_LANES`) forces a lowering on
any backend (to test or verify the GPU path on CPU).
"""
from __future__ import annotations

import contextlib
import functools
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap
from jax.extend.core import jaxpr_as_fun

from trictrac_jax.arrays import (count_true_by_words, fold, kth_true_by_words,
                                 kth_true_counted, spread)


# On CPU, larger batches run this many games at a time: the largest chunk whose arrays stay
# in the per-core cache (one pass over a larger batch is slower per game).
CPU_CHUNK = 1024
LOWERING_VARIABLE = "TRICTRAC_LOWERING"
LOWERING_ALIAS = "TRICTRAC_LANES"  # the variable's former name, still read


class Lowering(NamedTuple):
    """How the engine's hot paths are compiled for one backend."""

    materialise_apart: bool  # `materialised`: a branch of its own (else plain fusion)
    chunked: bool  # batches of several `CPU_CHUNK` games run chunk by chunk
    gather: bool  # `lookup`: a gather (else a one-hot reduction)
    bounded: bool  # `kernel_boundary`: an optimisation barrier (else nothing)
    games_last: bool  # `game_minor`: games moved to the last axis (else a plain vmap)
    # `moves.move_actions` with the games last: the 514-entry mask built games first, its
    # transpose cancelling `game_minor`'s (else games last: "gpu-games-last", where games
    # first added kernels and a spill)
    mask_games_first: bool
    # `ranking.candidate_worths`: with at most this many candidates a game, every (game,
    # candidate) pair is scored in a fixed number of passes (more: the valid ones only, in
    # passes of `candidates_per_game` x games, while any remain) ...
    every_pair_up_to: int
    candidates_per_game: int
    candidates_per_pass: int  # ... a pass of at most this many pairs
    # `top_k` of k <= `TOPK_KERNEL_K` entries: rows shorter than this padded to it (0: none)
    top_k_row: int
    # `moves.move_lists`: a batch's lists computed by one Pallas kernel over tiles of games
    # (`moves.tiles`), else by XLA's kernels
    lists_in_tiles: bool = False


# Candidate passes. CPU: the valid candidates only (a lookahead's likeliest moves include
# illegal ones, and scoring them costs as much as the legal ones), in small passes whose
# rolled states (256 candidates x 36 rolls) are whole CPU_CHUNKs: larger passes, or passes
# that are not a multiple of CPU_CHUNK, were slower. GPU: the lookahead of a whole base.yaml
# decision (2,048 games x up to 32 candidates) in one pass, whose device memory grows with
# the pass: at 32 candidates a game it stays well inside an H100's memory beside a training
# iteration (`python -m experiments.recipes_h100`).
LOWERINGS = {"cpu": Lowering(materialise_apart=True, chunked=True, gather=False,
                             bounded=False, games_last=True, mask_games_first=True,
                             every_pair_up_to=0, candidates_per_game=8, candidates_per_pass=256,
                             top_k_row=0),
             "gpu": Lowering(materialise_apart=False, chunked=False, gather=True,
                             bounded=True, games_last=False, mask_games_first=False,
                             every_pair_up_to=32, candidates_per_game=32,
                             candidates_per_pass=65536, top_k_row=1024)}
LOWERINGS["gpu-games-last"] = LOWERINGS["gpu"]._replace(games_last=True)
LOWERINGS["gpu-tiles"] = LOWERINGS["gpu"]._replace(lists_in_tiles=True)


def current() -> Lowering:
    """The lowering that `$TRICTRAC_LOWERING` (or `$TRICTRAC_LANES`) names if set, else the
    default backend's ("gpu" for any accelerator); read when a function is traced."""
    variable = next((v for v in (LOWERING_VARIABLE, LOWERING_ALIAS) if os.environ.get(v)), None)
    name = os.environ[variable] if variable else (
        "cpu" if jax.default_backend() == "cpu" else "gpu")
    if name not in LOWERINGS:
        raise ValueError(f"${variable} must be one of {sorted(LOWERINGS)}, got {name!r}")
    return LOWERINGS[name]


@contextlib.contextmanager
def forced(name: str):
    """`$TRICTRAC_LOWERING` set to `name` inside the block (read when a function is
    traced), then restored."""
    before = os.environ.get(LOWERING_VARIABLE)
    os.environ[LOWERING_VARIABLE] = name
    try:
        yield
    finally:
        if before is None:
            del os.environ[LOWERING_VARIABLE]
        else:
            os.environ[LOWERING_VARIABLE] = before


def batch_rule(fn, batched_fn):
    """`fn` for one game, whose batch under `jax.vmap` is `batched_fn(*batch-first args)`,
    run `CPU_CHUNK` games at a time on CPU for batches of several chunks. (`custom_vmap`
    traces `fn` for one game wherever it is called: `traced_once` makes that cheap.)"""
    wrapped = custom_vmap(fn)

    @wrapped.def_vmap
    def _batched(axis_size, in_batched, *args):
        broadcast = lambda x, batched: x if batched else jnp.broadcast_to(x, (axis_size,) + x.shape)
        args = jax.tree.map(broadcast, list(args), list(in_batched))
        chunks = axis_size // CPU_CHUNK
        if current().chunked and chunks > 1 and axis_size % CPU_CHUNK == 0:
            split = lambda x: x.reshape((chunks, CPU_CHUNK) + x.shape[1:])
            def body(chunk):
                # The chunk and its result are copied whole: loops that read or write them
                # at the chunk's runtime offset do not vectorise.
                once = computed_once(jax.tree.leaves(chunk)[0])
                return once(lambda: batched_fn(*once(lambda: chunk)))

            out = jax.lax.map(body, jax.tree.map(split, args))
            out = jax.tree.map(lambda x: x.reshape((axis_size,) + x.shape[2:]), out)
        else:
            out = batched_fn(*args)
        return out, jax.tree.map(lambda _: True, out)

    return functools.wraps(fn)(lambda *args: wrapped(*jax.tree.map(jnp.asarray, args)))


def cpu_chunked(fn=None, *, static_argnames: tuple[str, ...] = ()):
    """Decorator: `fn(*pytrees, **static)` for one game; under `jax.vmap` on CPU, batches of
    several `CPU_CHUNK` run one chunk after the other (see module). There `fn` is traced
    once for one game and the batch is that jaxpr, batched; under a lowering that batches
    as `jax.vmap` does, `fn` is called as it is (`_batched_as_vmap`). `static_argnames`:
    keyword arguments that are Python values (one traced function per value, as
    `jax.jit`'s)."""
    if fn is None:
        return functools.partial(cpu_chunked, static_argnames=tuple(static_argnames))
    per_static = {}

    @functools.wraps(fn)
    def chunked(*args, **static):
        if set(static) != set(static_argnames):
            raise TypeError(f"{fn.__name__} takes the keyword arguments {static_argnames}")
        if _batched_as_vmap():
            return fn(*args, **static)
        key = tuple(static[name] for name in static_argnames)
        if key not in per_static:
            one = traced_once(functools.partial(fn, **static))
            per_static[key] = batch_rule(one, jax.vmap(one))
        return per_static[key](*args)

    return chunked


def traced_once(fn):
    """`fn(*pytrees)`, traced to a jaxpr once per input shapes and dtypes (and lowering),
    then evaluated from it: a function traced anew under each transformation and `jit`
    costs its Python each time, a jaxpr is only rebound. (A trace that closes over another
    trace's values is used once, not kept.)"""
    jaxprs = {}

    def from_jaxpr(*args):
        flat, tree = jax.tree.flatten(args)
        key = (tree, tuple((jnp.shape(x), jnp.result_type(x)) for x in flat), current(),
               jax.config.jax_enable_x64)
        traced = jaxprs.get(key) or jax.make_jaxpr(lambda *xs: fn(*tree.unflatten(xs)),
                                                   return_shape=True)(*flat)
        closed, shape = traced
        if not any(isinstance(c, jax.core.Tracer) for c in closed.consts):
            jaxprs[key] = traced
        return jax.tree.unflatten(jax.tree.structure(shape), jaxpr_as_fun(closed)(*flat))

    return functools.wraps(fn)(from_jaxpr)


def _always(witness):
    """bool True, read off two entries of the array `witness` (not max < min, so a NaN
    reads True too): XLA cannot know it. Two entries, not a reduction over the array: as
    opaque, and cheaper."""
    flat = jnp.ravel(witness)
    first, last = flat[0], flat[-1]
    return ~(jnp.maximum(first, last) < jnp.minimum(first, last))


def _once(fn, taken):
    """`fn()` computed in the branch of a conditional on `taken` (True): its own loop nest.
    (`fn` is traced once; the other branch, never taken, returns zeros.)"""
    traced, shape = jax.make_jaxpr(fn, return_shape=True)()
    leaves, tree = jax.tree.flatten(shape)
    absent = lambda: [jnp.zeros(s.shape, s.dtype) for s in leaves]
    return jax.tree.unflatten(tree, jax.lax.cond(taken, jaxpr_as_fun(traced), absent))


def computed_once(witness):
    """`once(fn)` -> `fn()`, materialised: computed in its own loop nest and read from memory.

    XLA fuses an array's whole computation into every loop that reads it, recomputing it
    per reader (and per element of a reduction that is broadcast back). A conditional's
    branch is a boundary it does not fuse across; this one is always taken, but its
    predicate, read off the array `witness` (`_always`), is not known at compile time, so
    XLA cannot inline the branch away (a one-trip while loop would also fill an initial
    buffer and copy its result). Under the GPU lowering `once(fn)` is `fn()`, fused as
    XLA chooses: faster there.
    """
    if not current().materialise_apart:
        return lambda fn: fn()
    taken = _always(witness)
    return lambda fn: _once(fn, taken)


def materialised(fn):
    """`fn(*args)`, its result computed once in its own loop nest (`computed_once`, its
    predicate read off `fn`'s first argument) under the CPU lowering; plain `fn` under the
    GPU lowering.

    For a value that many loops read (the position, the first moves, the candidates, each
    move list): XLA would otherwise recompute it in each of them.
    """
    @functools.wraps(fn)
    def computed(*args):
        return computed_once(jax.tree.leaves(args)[0])(lambda: fn(*args))
    return computed


def lookup(table, index):
    """table[index] along the first axis: `table` [n, *lanes], `index` int[..., *lanes]
    (values outside 0..n-1 read 0).

    Under the GPU lowering a gather, which XLA's GPU backend fuses into its readers like an
    elementwise operation (fewer kernels a step than the reduction); on CPU a one-hot
    reduction: gathers are slow there."""
    index = jnp.asarray(index)
    table = spread(table, index)
    if current().gather:
        shape = jnp.broadcast_shapes(table.shape[1:], index.shape)
        table = jnp.broadcast_to(table, table.shape[:1] + shape)
        return jnp.take_along_axis(table, jnp.broadcast_to(index, shape)[None], axis=0,
                                   mode="fill", fill_value=0)[0]
    hit = jnp.arange(table.shape[0], dtype=index.dtype).reshape(
        (-1,) + (1,) * index.ndim) == index[None]
    if table.dtype == jnp.bool_:
        return jnp.any(hit & table, axis=0)
    return jnp.sum(jnp.where(hit, table, 0), axis=0, dtype=table.dtype)


def any_nonzero(values):
    """bool[*lanes]: some entry of `values` [n, *lanes] is nonzero.

    With the games last the OR is written out (`arrays.fold`): on a GPU a reduction with
    the games minor is a kernel of few blocks into which XLA fuses the values' whole
    computation. With the games first, a reduction: each game's row of n entries, which
    XLA's GPU kernels reduce with several threads a game (`bench --h100`: fewer kernels
    and bytes a step, 4-11% less time at 1,024 and 8,192 games)."""
    if current().games_last:
        return fold(jnp.bitwise_or, values) != 0
    return jnp.any(values != 0, axis=0)


def kth_true(mask, k):
    """int32[*lanes]: the index of the (k + 1)-th True of bool[n, *lanes] (n if none).

    With the games last a running count over the n entries (`arrays.kth_true_counted`,
    vectorised along the games); with the games first through words of 32 entries
    (`arrays.kth_true_by_words`): over 514 entries the running count is a scan of several
    kernels on a GPU, and a Gumbel argmax instead draws a random number per entry. The same
    index either way."""
    if current().games_last:
        return kth_true_counted(mask, k)
    return kth_true_by_words(mask, k)


def count_true(mask):
    """int32[*lanes]: the Trues of bool[n, *lanes]. With the games first on the words that
    `kth_true` packs (`arrays.count_true_by_words`; XLA computes them once for both), else
    a sum."""
    if current().games_last:
        return jnp.sum(mask, axis=0, dtype=jnp.int32)
    return count_true_by_words(mask)


# XLA's GPU backend takes the `TOPK_KERNEL_K` largest entries of rows of at least 1,024 in
# one kernel that writes only those (its TopK kernel); shorter rows it sorts whole, both
# outputs of the sorted row written.
TOPK_KERNEL_K = 16


def top_k(values, k: int):
    """`jax.lax.top_k(values, k)` of values float[..., n]: the k largest of each row and their
    indices, the larger first (ties as `jax.lax.top_k` orders them, which on a GPU is XLA's
    TopK kernel for the padded row). Under the GPU lowering a row shorter than
    `Lowering.top_k_row`, with k <= `TOPK_KERNEL_K`, is padded with -inf to that length: a
    row with fewer than k entries above -inf may then fill its last places with the
    padding's (-inf, an index n or over) rather than its own -inf entries."""
    row = current().top_k_row
    n = values.shape[-1]
    if k <= TOPK_KERNEL_K and n < row:
        padding = [(0, 0)] * (values.ndim - 1) + [(0, row - n)]
        values = jnp.pad(values, padding, constant_values=-jnp.inf)
    return jax.lax.top_k(values, k)


def kernel_boundary(values):
    """`values` (a pytree), computed by kernels of their own and read from memory under
    the GPU lowering (an optimisation barrier); unchanged elsewhere.

    XLA's GPU backend fuses a value into every kernel that reads it. For some values that
    costs more than a read: one that, fused with the rules reading it, leaves one thread a
    game more live values than 255 registers (ptxas spills them; `python
    ../shared/gpu-proxy/spills.py step 131072`), or one recomputed from the state's old
    fields in kernels that run after the new fields are written (XLA then copies the old).
    """
    if not current().bounded:
        return values
    return jax.lax.optimization_barrier(values)


def _batched_as_vmap() -> bool:
    """The lowering batches `game_minor` and `cpu_chunked` functions as `jax.vmap` does:
    the games first, in one pass. They are then plain functions, traced once, under the
    caller's `jax.vmap`; a batching rule (`batch_rule`) would trace them a second time,
    for one game."""
    lowering = current()
    return not (lowering.games_last or lowering.chunked)


def game_minor(fn):
    """`fn(*arrays)` for one position, batched game-minor under `jax.vmap` where the
    lowering puts the games last (see module), else as `jax.vmap` batches it.

    `fn` must accept arrays with any number of trailing game axes shared by all arguments;
    arguments that are not batched are broadcast to the batch.
    """
    def minor(*args):  # batch-first arguments -> batch-first results
        if not current().games_last:  # chunked with the games first
            return jax.vmap(fn)(*args)
        out = fn(*(jnp.moveaxis(x, 0, -1) for x in args))
        return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), out)

    ruled = batch_rule(traced_once(fn), minor)
    return functools.wraps(fn)(lambda *args: fn(*args) if _batched_as_vmap() else ruled(*args))
