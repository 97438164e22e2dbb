"""Game-minor batching: under `jax.vmap`, run a function with the games as its last axis.

The move rules (moves.py, scoring.py) are written for arrays whose structure axes come
first and whose trailing axes, if any, are games ("lanes"). Called on one position they
see no trailing axis. Under `jax.vmap`, `game_minor` moves the batch axis of every argument
to the end, runs the function once on the whole batch, and moves the batch axis of every
result back to the front. That layout is what XLA's CPU backend vectorises: its loops run
along contiguous games, whereas with the batch axis first they run along short structure
axes (17 second slots, 24 fields), broadcasts and reshapes between those axes need integer
division per element, and most loops stay scalar.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap


# On CPU, larger batches run this many games at a time: the arrays of a chunk stay in the
# cache (at 4096 games and more, one pass over the whole batch runs about 30% slower).
CPU_CHUNK = 1024


def game_minor(fn):
    """`fn(*arrays)` for one position, batched game-minor under `jax.vmap` (see module).

    `fn` must accept arrays with any number of trailing game axes shared by all arguments;
    arguments that are not batched are broadcast to the batch.
    """
    wrapped = custom_vmap(fn)

    def minor(*args):  # batch-first arguments -> batch-first results
        out = fn(*(jnp.moveaxis(x, 0, -1) for x in args))
        return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), out)

    @wrapped.def_vmap
    def _batched(axis_size, in_batched, *args):
        args = [x if batched else jnp.broadcast_to(x, (axis_size,) + x.shape)
                for x, batched in zip(args, in_batched)]
        chunks = axis_size // CPU_CHUNK
        if jax.default_backend() == "cpu" and chunks > 1 and axis_size % CPU_CHUNK == 0:
            split = lambda x: x.reshape((chunks, CPU_CHUNK) + x.shape[1:])
            out = jax.lax.map(lambda chunk: minor(*chunk), [split(x) for x in args])
            out = jax.tree.map(lambda x: x.reshape((axis_size,) + x.shape[2:]), out)
        else:
            out = minor(*args)
        return out, jax.tree.map(lambda _: True, out)

    return functools.wraps(fn)(lambda *args: wrapped(*(jnp.asarray(x) for x in args)))
