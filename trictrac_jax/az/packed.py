"""A pytree of batched arrays with its small leaves packed into one array of 32-bit words a
batch entry: the form in which the searches hand their node embeddings (Nodes, Afterstates)
to mctx.

    packed = pack(nodes)          # leaves [B, ...] -> Packed(words uint32[B, W], large)
    nodes = unpack(packed)        # the same pytree, bit for bit

mctx keeps every embedding leaf as an array [B, N, ...] of the tree's N nodes and writes
each leaf apart when it expands a node: on a GPU a kernel a leaf and simulation, 19 for a
Node. Packed, the small leaves (at most `SMALL` elements an entry: the flags, counters,
dice, board, column actions) are one. The large ones (the observation, the 514-action mask)
stay leaves of their own: packed too, each game's row of words would be read by one thread
(`python -m benchmarks.bench --h100`'s decision: more time, not less).

Layout of the words, leaf after leaf in the pytree's order: 32-bit leaves bit for bit
(`bitcast`), smaller integers one word an element (sign-extended), booleans one word (bit i
the element i).
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from trictrac_jax.arrays import WORD_BITS, word_of

SMALL = 32  # elements an entry, at most, of a leaf packed into the words


class Layout(NamedTuple):
    """What a `Packed` holds: the pytree's structure, and the shape (less the batch axes) and
    dtype of each leaf packed into the words, in order, or None for a large leaf. Static:
    part of the `Packed`'s pytree structure."""

    treedef: Any
    shapes: tuple[tuple[int, ...] | None, ...]
    dtypes: tuple[str | None, ...]

    def widths(self) -> tuple[int, ...]:
        """Words of each packed leaf."""
        return tuple(_width(math.prod(s), np.dtype(d))
                     for s, d in zip(self.shapes, self.dtypes) if s is not None)


@struct.dataclass
class Packed:
    """A pytree packed by `pack`: its small leaves as `words` uint32[*batch, W], its large
    ones in `large` (in the pytree's order), `layout` static."""

    words: jax.Array
    large: tuple
    layout: Layout = struct.field(pytree_node=False)


def _width(size: int, dtype: np.dtype) -> int:
    if dtype == np.bool_:
        return -(-size // WORD_BITS)  # one word while size <= SMALL
    if dtype.itemsize == 4 or (np.issubdtype(dtype, np.integer) and dtype.itemsize < 4):
        return size
    raise TypeError(f"pack: leaves must be bool, 32-bit, or integers narrower than 32 bits; "
                    f"got {dtype}")


def _bit_index() -> jax.Array:
    return jnp.arange(WORD_BITS, dtype=jnp.uint32)


def _leaf_words(x: jax.Array, batch_ndim: int) -> jax.Array:
    """uint32[*batch, width] of one leaf [*batch, *shape]."""
    batch = x.shape[:batch_ndim]
    flat = x.reshape(batch + (-1,))
    if flat.dtype == jnp.bool_:
        pad = -flat.shape[-1] % WORD_BITS
        flat = jnp.pad(flat, [(0, 0)] * batch_ndim + [(0, pad)])
        return word_of(flat.reshape(batch + (-1, WORD_BITS)), -1)
    if flat.dtype.itemsize < 4:
        flat = flat.astype(jnp.int32)
    return jax.lax.bitcast_convert_type(flat, jnp.uint32)


def _leaf_of(words: jax.Array, shape: tuple[int, ...], dtype: np.dtype) -> jax.Array:
    """The leaf [*batch, *shape] of its words uint32[*batch, width]."""
    batch = words.shape[:-1]
    size = math.prod(shape)
    if dtype == np.bool_:
        bits = (words[..., :, None] >> _bit_index()) & 1
        flat = bits.reshape(batch + (-1,))[..., :size].astype(jnp.bool_)
    elif dtype.itemsize == 4:
        flat = jax.lax.bitcast_convert_type(words, dtype)
    else:
        flat = jax.lax.bitcast_convert_type(words, jnp.int32).astype(dtype)
    return flat.reshape(batch + shape)


def pack(tree, batch_ndim: int = 1) -> Packed:
    """`tree`, whose leaves share `batch_ndim` leading batch axes, its leaves of at most
    `SMALL` elements an entry as words uint32[*batch, W]."""
    leaves, treedef = jax.tree.flatten(tree)
    small = [math.prod(jnp.shape(x)[batch_ndim:]) <= SMALL for x in leaves]
    if not any(small):
        raise ValueError("pack: the pytree has no leaf small enough to pack")
    layout = Layout(treedef,
                    tuple(tuple(jnp.shape(x)[batch_ndim:]) if s else None
                          for x, s in zip(leaves, small)),
                    tuple(np.dtype(jnp.result_type(x)).name if s else None
                          for x, s in zip(leaves, small)))
    layout.widths()  # the dtypes' check, before any work
    words = [_leaf_words(jnp.asarray(x), batch_ndim) for x, s in zip(leaves, small) if s]
    return Packed(jnp.concatenate(words, -1),
                  tuple(x for x, s in zip(leaves, small) if not s), layout)


def unpack(packed: Packed):
    """The pytree that `pack` packed, with the words' batch axes (any number)."""
    layout = packed.layout
    widths = layout.widths()
    if packed.words.shape[-1] != sum(widths):
        raise ValueError(f"unpack: {packed.words.shape[-1]} words where the layout has "
                         f"{sum(widths)}")
    widths, large, start = iter(widths), iter(packed.large), 0
    leaves = []
    for shape, dtype in zip(layout.shapes, layout.dtypes):
        if shape is None:
            leaves.append(next(large))
            continue
        end = start + next(widths)
        leaves.append(_leaf_of(packed.words[..., start:end], shape, np.dtype(dtype)))
        start = end
    return jax.tree.unflatten(layout.treedef, leaves)


__all__ = ["Layout", "Packed", "pack", "unpack"]
