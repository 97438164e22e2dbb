"""Array helpers shared by the rules, written for XLA's CPU loops (no rules here).

Arrays have a structure axis first (fields, candidates, ...) and trailing `lanes` axes (none
for one position, the games when the rules run game-minor: see lanes.py).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def leading(values, ndim):
    """`values` with `ndim` trailing unit axes, to broadcast over that many trailing (game)
    axes."""
    values = jnp.asarray(values)
    return values.reshape(values.shape + (1,) * ndim)


def spread(table, index):
    """`table` [n, *lanes] as [n, 1, ..., 1, *lanes] against `index` [..., *lanes]."""
    extra = index.ndim - (table.ndim - 1)
    return table.reshape(table.shape[:1] + (1,) * extra + table.shape[1:])


def lookup(table, index):
    """table[index] along the first axis: `table` [n, *lanes], `index` int[..., *lanes]
    (values outside 0..n-1 read 0). A one-hot reduction, not a gather: gathers are slow on
    CPU."""
    index = jnp.asarray(index)
    hit = leading(jnp.arange(table.shape[0], dtype=index.dtype), index.ndim) == index[None]
    table = spread(table, index)
    if table.dtype == jnp.bool_:
        return jnp.any(hit & table, axis=0)
    return jnp.sum(jnp.where(hit, table, 0), axis=0, dtype=table.dtype)


def prefix_sum(values):
    """values [n, *lanes] -> [n, *lanes]: the sum of values[0..i] for each i.

    A sum over a triangle rather than `cumsum`, which XLA's CPU backend runs as a slow
    reduce-window.
    """
    n = values.shape[0]
    below = leading(np.tril(np.ones((n, n), bool)), values.ndim - 1)  # [i, j]: j <= i
    return jnp.sum(jnp.where(below, values[None], 0), axis=1, dtype=values.dtype)


def any_each(masks):
    """For each of up to 32 masks [N, *lanes] (bool or 0/1 integers), whether any of its N
    entries is set: bool[*lanes] each, from one pass over N (mask k is bit k of an
    unsigned integer, OR-reduced) where separate reductions would each read N again."""
    dtype = next(t for t in (jnp.uint8, jnp.uint16, jnp.uint32)
                 if len(masks) <= 8 * jnp.dtype(t).itemsize)
    bits = sum(m.astype(dtype) << dtype(k) for k, m in enumerate(masks))
    found = jax.lax.reduce(bits, dtype(0), jax.lax.bitwise_or, (0,))
    return [(found >> dtype(k)) & 1 != 0 for k in range(len(masks))]
