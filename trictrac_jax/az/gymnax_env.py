"""The single-agent environment with gymnax's own spaces, registered with gymnax.

    from trictrac_jax.az import gymnax_env
    gymnax_env.register()
    env, env_params = gymnax.make("Trictrac-v1")           # a random opponent
    env, env_params = gymnax.make("Trictrac-v1", opponent=tt.agents.greedy_agent)

`trictrac_jax.wrappers.SingleAgent` duck-types gymnax's spaces, which serves gymnax's
`LogWrapper`; wrappers that check `isinstance(space, gymnax.environments.spaces.Box)`
(`FlattenObservationWrapper`, PureJaxRL's own) need these. Needs gymnax (the test extra).
"""
from __future__ import annotations

import gymnax
import jax.numpy as jnp
from gymnax.environments import spaces

from trictrac_jax.state import NUM_ACTIONS, OBS_SIZE
from trictrac_jax.wrappers import OBS_HIGH, EnvParams, SingleAgent


class GymnaxTrictrac(SingleAgent):
    """`SingleAgent` whose spaces are gymnax's `Discrete` and `Box`."""

    def action_space(self, params: EnvParams | None = None) -> spaces.Discrete:
        return spaces.Discrete(NUM_ACTIONS)

    def observation_space(self, params: EnvParams | None = None) -> spaces.Box:
        return spaces.Box(0.0, OBS_HIGH, (OBS_SIZE,), jnp.float32)


def register():
    """Make `gymnax.make("Trictrac-v1", **SingleAgent's keywords)` build `GymnaxTrictrac`."""
    if SingleAgent.name not in gymnax.registered_envs:
        gymnax.register(SingleAgent.name, GymnaxTrictrac)
