"""`Trictrac` as a subclass of pgx's `Env` (needs pgx): what `tt.make("trictrac")` returns
where pgx is installed, so that code checking `isinstance(env, pgx.Env)` takes it.

Its methods are `Trictrac`'s (pgx's `Env.step` would treat a chance node's all-False mask as
an illegal action); pgx's abstract hooks `_init`, `_step` and `_observe` are the game's
functions. State ids: `state.env_id` is "trictrac", which is not among pgx's own `EnvId`s,
and `pgx.make("trictrac")` is pgx's to refuse.
"""
from __future__ import annotations

import jax
import pgx

from trictrac_jax import env as E
from trictrac_jax.state import State


class PgxTrictrac(E.Trictrac, pgx.Env):
    """`Trictrac` (its `max_steps` and methods), a `pgx.Env`."""

    def _init(self, key) -> State:
        return E.init(key)

    def _step(self, state: State, action, key) -> State:
        return E.step(state, action, key, self.max_steps)

    def _observe(self, state: State, player_id) -> jax.Array:
        return E.observe(state, player_id)
