"""Batching rules for the engine's hot paths, under `jax.vmap`.

`game_minor`: the move rules (moves.py, scoring.py) are written for arrays whose structure
axes come first and whose trailing axes, if any, are games ("lanes"). Called on one position
they see no trailing axis. Under `jax.vmap`, `game_minor` moves the batch axis of every
argument to the end, runs the function once on the whole batch, and moves the batch axis of
every result back to the front. That layout is what XLA's CPU backend vectorises: its loops
run along contiguous games, whereas with the batch axis first they run along short structure
axes (17 second slots, 24 fields), broadcasts and reshapes between those axes need integer
division per element, and most loops stay scalar.

`cpu_chunked` (and `game_minor`): on CPU, a large batch runs `CPU_CHUNK` games at a time,
so that the arrays of one chunk stay in the per-core cache. `Trictrac.step` and
`agents.random_agent` are chunked as a whole, not only their game-minor parts: the
batch-first rest of a step (the state's 514-action mask and 217 observation) then stays in
the cache too.

`computed_once`: the point where an array is materialised rather than fused into its readers.

`candidate_worths`, `best_candidates`: the worths of several candidate moves of each game,
and each game's best, the batch's candidates scored as one flat list a bounded pass at a
time (greedy, a network's lookahead, and the lookahead's self-play).

Backend rules (`rules()`, read at trace time): on CPU, `computed_once` is a while loop,
large batches are chunked, `append` concatenates and `lookup` is a one-hot reduction; on an
accelerator, `computed_once` is plain fusion, a batch runs in one pass, `append` pads and
selects and `lookup` gathers (H100, `step_deterministic` + `chance_step` of 2048 games:
0.94 ms fused, 0.99 ms with `optimization_barrier`, 1.34 ms with the while loops). The
game-minor layout holds on both.
`TRICTRAC_LANES=cpu|gpu` forces either rules on any backend (to test or verify the GPU path
on CPU).
"""
from __future__ import annotations

import functools
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from trictrac_jax.arrays import spread


# On CPU, larger batches run this many games at a time: at 4096 games and more, one pass
# over the whole batch ran 15-30% slower per game (its arrays leave the per-core cache);
# 512 measured the same as 1024, 2048 about 10% slower.
CPU_CHUNK = 1024
RULES_VARIABLE = "TRICTRAC_LANES"


class Rules(NamedTuple):
    """How the engine's hot paths are compiled for one backend."""

    materialise_in_loop: bool  # `computed_once`: a while loop (else plain fusion)
    chunked: bool  # batches of several `CPU_CHUNK` games run chunk by chunk
    join_by_select: bool  # `append`: a pad and a select (else a concatenation)
    gather: bool  # `lookup`: a gather (else a one-hot reduction)


RULES = {"cpu": Rules(materialise_in_loop=True, chunked=True, join_by_select=False,
                      gather=False),
         "gpu": Rules(materialise_in_loop=False, chunked=False, join_by_select=True,
                      gather=True)}


def rules() -> Rules:
    """The rules of `$TRICTRAC_LANES` if set, else of the default backend ("gpu" for any
    accelerator); read when a function is traced."""
    name = os.environ.get(RULES_VARIABLE) or (
        "cpu" if jax.default_backend() == "cpu" else "gpu")
    if name not in RULES:
        raise ValueError(f"${RULES_VARIABLE} must be one of {sorted(RULES)}, got {name!r}")
    return RULES[name]


def batch_rule(fn, batched_fn):
    """`fn` for one game, whose batch under `jax.vmap` is `batched_fn(*batch-first args)`,
    run `CPU_CHUNK` games at a time on CPU for batches of several chunks."""
    wrapped = custom_vmap(fn)

    @wrapped.def_vmap
    def _batched(axis_size, in_batched, *args):
        broadcast = lambda x, batched: x if batched else jnp.broadcast_to(x, (axis_size,) + x.shape)
        args = jax.tree.map(broadcast, list(args), list(in_batched))
        chunks = axis_size // CPU_CHUNK
        if rules().chunked and chunks > 1 and axis_size % CPU_CHUNK == 0:
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


def cpu_chunked(fn):
    """`fn(*pytrees)` for one game; under `jax.vmap` on CPU, batches of several `CPU_CHUNK`
    run one chunk after the other (see module)."""
    return batch_rule(fn, jax.vmap(fn))


def computed_once(witness):
    """`once(fn)` -> `fn()`, materialised: computed in its own loop nest and read from memory.

    XLA fuses an array's whole computation into every loop that reads it, recomputing it
    per reader (and per element of a reduction that is broadcast back). A while loop is a
    boundary it does not fuse across; this one runs once: its trip count, read off the
    array `witness` as 1 + (max < min), is not known at compile time, so XLA cannot inline
    the loop away. Under the GPU rules (`rules()`) `once(fn)` is `fn()`, fused as XLA
    chooses: faster there.
    """
    if not rules().materialise_in_loop:
        return lambda fn: fn()
    trips = 1 + (jnp.max(witness) < jnp.min(witness)).astype(jnp.int32)

    def once(fn):
        init = (jnp.int32(0), jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype),
                                           jax.eval_shape(fn)))
        return jax.lax.while_loop(lambda c: c[0] < trips, lambda c: (c[0] + 1, fn()), init)[1]
    return once


def append(body, last, axis: int):
    """`concatenate([body, last], axis)`, `last` being one entry along `axis` (size 1 there).

    Under the GPU rules a pad and a select: XLA's GPU backend materialises a concatenation
    read by several fusions, and fuses the select into each reader instead (H100 estimate,
    compiled program, random play at 8,192 games: 62,917 -> 52,297 bytes a game-step). On
    CPU the concatenation: there the select's loops stay scalar (random play at 1,024
    games, 2-core CPU: about 85,000 steps/s with the select, 115,000 without)."""
    if not rules().join_by_select:
        return jnp.concatenate([body, last], axis)
    pad = [(0, 0)] * body.ndim
    pad[axis] = (0, 1)
    index = jnp.arange(body.shape[axis] + 1).reshape((-1,) + (1,) * (body.ndim - 1 - axis))
    return jnp.where(index == body.shape[axis], last, jnp.pad(body, pad))


def lookup(table, index):
    """table[index] along the first axis: `table` [n, *lanes], `index` int[..., *lanes]
    (values outside 0..n-1 read 0).

    Under the GPU rules a gather, which XLA's GPU backend fuses into its readers like an
    elementwise operation (H100 estimate, compiled program, random play at 32,768 games:
    85.5 -> 78.5 kernels a step); on CPU a one-hot reduction: gathers are slow there."""
    index = jnp.asarray(index)
    table = spread(table, index)
    if rules().gather:
        shape = jnp.broadcast_shapes(table.shape[1:], index.shape)
        table = jnp.broadcast_to(table, table.shape[:1] + shape)
        return jnp.take_along_axis(table, jnp.broadcast_to(index, shape)[None], axis=0,
                                   mode="fill", fill_value=0)[0]
    hit = jnp.arange(table.shape[0], dtype=index.dtype).reshape(
        (-1,) + (1,) * index.ndim) == index[None]
    if table.dtype == jnp.bool_:
        return jnp.any(hit & table, axis=0)
    return jnp.sum(jnp.where(hit, table, 0), axis=0, dtype=table.dtype)


def game_minor(fn):
    """`fn(*arrays)` for one position, batched game-minor under `jax.vmap` (see module).

    `fn` must accept arrays with any number of trailing game axes shared by all arguments;
    arguments that are not batched are broadcast to the batch.
    """
    def minor(*args):  # batch-first arguments -> batch-first results
        out = fn(*(jnp.moveaxis(x, 0, -1) for x in args))
        return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), out)

    return batch_rule(fn, minor)


# Candidates scored per pass of `candidate_worths`: CANDIDATES_PER_GAME per game of the batch,
# at most CANDIDATES_PER_PASS. 256 candidates x 36 rolled states are 9 whole CPU_CHUNKs; on
# CPU, greedy on 1000 mid-game positions took 2.1 s at 256 a pass, 2.5 s at 1024, 3.2 s at
# 4096, and 3-5x longer when the rolled states were not a multiple of CPU_CHUNK. The same
# sizes serve the GPU rules until measured there (larger passes would likely suit a GPU).
CANDIDATES_PER_GAME = 8
CANDIDATES_PER_PASS = 256


def candidate_worths(states, actions, valid, worth):
    """float32[B, K]: the worth of each valid candidate action, -inf elsewhere.

    `actions` int32[B, K] are the candidates of each game of `states` [B], `valid`
    bool[B, K] those to score, and `worth(states[P], actions[P]) -> float32[P]` scores
    candidates. The valid (game, slot) pairs of the whole batch, in order of game then slot,
    form one flat list scored a pass at a time in a while loop (see CANDIDATES_PER_PASS):
    the work follows the batch's number of valid candidates, not B x K, and memory stays
    bounded."""
    batch, width = actions.shape
    rank = running_count(valid.astype(jnp.int32), -1)  # [B, K]: 1 for the first valid slot
    count = rank[:, -1]
    start = jnp.concatenate([jnp.zeros(1, count.dtype), running_count(count, 0)[:-1]])
    # The flat list: pair (g, k) = g * K + k at start[g] + rank - 1, -1 after the last.
    per_pass = min(CANDIDATES_PER_GAME * batch, CANDIDATES_PER_PASS)
    size = -(-batch * width // per_pass) * per_pass
    where = jnp.where(valid, start[:, None] + rank - 1, size)
    pairs = jnp.full(size, -1, jnp.int32).at[where.reshape(-1)].set(
        jnp.arange(batch * width, dtype=jnp.int32), mode="drop")
    passes = (jnp.sum(count) + per_pass - 1) // per_pass

    def body(carry):
        i, worths = carry
        pair = jax.lax.dynamic_slice_in_dim(pairs, i * per_pass, per_pass)  # [P]
        game, slot = jnp.maximum(pair, 0) // width, pair % width
        value = worth(jax.tree.map(lambda x: x[game], states), actions[game, slot])
        return i + 1, worths.at[jnp.where(pair >= 0, pair, batch * width)].set(
            value, mode="drop")

    init = (jnp.int32(0), jnp.full(batch * width, -jnp.inf))
    return jax.lax.while_loop(lambda c: c[0] < passes, body, init)[1].reshape(batch, width)


def best_candidates(states, actions, valid, default, worth):
    """int32[B]: for each game of `states` [B], its best valid candidate action
    (`candidate_worths`), ties to the lowest slot k; a game without a valid candidate plays
    `default` int32[B]."""
    worths = candidate_worths(states, actions, valid, worth)
    slot = jnp.argmax(worths, -1)
    chosen = jnp.take_along_axis(actions, slot[:, None], -1)[:, 0]
    return jnp.where(jnp.any(valid, -1), chosen, default).astype(jnp.int32)


def running_count(x, axis: int):
    """Inclusive running sum of integers `x` along `axis`, as an associative scan:
    `jnp.cumsum` is a reduce-window on CPU, quadratic in the axis' length."""
    return jax.lax.associative_scan(jnp.add, x, axis=axis)
