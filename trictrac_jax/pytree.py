"""Immutable dataclasses that are JAX pytrees, as `flax.struct.dataclass` (pgx keeps its own
copy too): `flax`'s package imports `flax.linen` on import, and the engine imports no
learning library.

    @pytree.dataclass
    class Point:
        x: jax.Array
        y: jax.Array

    p = Point(jnp.float32(1), jnp.float32(2)).replace(y=jnp.float32(3))

Every field is a pytree child (flax's `pytree_node=True`), in the order of the fields, so that
its key paths (`GetAttrKey`) and leaves are those a flax dataclass of the same fields has.
"""
from __future__ import annotations

import dataclasses
from typing import TypeVar, dataclass_transform

import jax

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def dataclass(cls: type[_T]) -> type[_T]:
    """`cls` as a frozen dataclass registered as a pytree, with `replace(**fields)`."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    cls.replace = _replace
    fields = [f.name for f in dataclasses.fields(cls)]
    return jax.tree_util.register_dataclass(cls, data_fields=fields, meta_fields=[])


def _replace(self, **fields):
    """A copy with `fields` replaced."""
    return dataclasses.replace(self, **fields)
