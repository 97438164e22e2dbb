"""Baseline agents as pure functions of (key, state) -> action, usable under jit and vmap."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def random_agent(key, state):
    """Uniform over the legal actions."""
    logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def first_agent(key, state):
    """The first legal action: Go whenever it is legal (the reference engine's default bot)."""
    del key
    return jnp.argmax(state.legal_action_mask).astype(jnp.int32)
