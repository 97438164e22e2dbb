"""Trictrac-v1 of gymnax's own classes, registered with gymnax when this module is imported
(needs gymnax; nothing else of the engine imports it).

    import gymnax
    import trictrac_jax.gymnax_env                         # registers Trictrac-v1
    env, env_params = gymnax.make("Trictrac-v1")           # a random opponent
    env, env_params = gymnax.make("Trictrac-v1", opponent=tt.agents.greedy_agent,
                                  observation="dict", max_steps_in_episode=200)

gymnax 1.0.1's `make` finds an environment only in the registry that `gymnax.register`
fills in the running process (no entry points, no import by name): an import of this
module is the least it takes.

`GymnaxTrictrac` is `wrappers.SingleAgent` (the keywords, conventions and transitions are
its) as a subclass of gymnax's `Environment`, its parameters and states subclasses of
gymnax's `EnvParams` and `EnvState`, its spaces of gymnax's `Discrete`, `Box` and `Dict`, so
that code which checks them (`FlattenObservationWrapper`, `RolloutWrapper`, PureJaxRL's
wrappers) accepts it.
"""
from __future__ import annotations

import gymnax
from gymnax.environments import environment, spaces

from trictrac_jax import pytree, wrappers


class Discrete(wrappers.Discrete, spaces.Discrete):
    """gymnax's `Discrete` whose `sample(key, mask)` draws among the legal actions."""


class Box(wrappers.Box, spaces.Box):
    """gymnax's `Box`."""


class Dict(wrappers.Dict, spaces.Dict):
    """gymnax's `Dict`, whose `contains` also takes dicts (the observations)."""


@pytree.dataclass
class EnvParams(wrappers.EnvParams, environment.EnvParams):
    """`wrappers.EnvParams`, a gymnax `EnvParams`."""


@pytree.dataclass
class EnvState(wrappers.EnvState, environment.EnvState):
    """`wrappers.EnvState`, a gymnax `EnvState`."""


class GymnaxTrictrac(wrappers.SingleAgent, environment.Environment):
    """`wrappers.SingleAgent`, a gymnax `Environment` (module docstring)."""

    params_type, state_type = EnvParams, EnvState
    discrete_space, box_space, dict_space = Discrete, Box, Dict


def register():
    """Make `gymnax.make("Trictrac-v1", **SingleAgent's keywords)` build `GymnaxTrictrac`;
    importing the module does it, and calling it again does nothing."""
    if GymnaxTrictrac.name not in gymnax.registered_envs:
        gymnax.register(GymnaxTrictrac.name, GymnaxTrictrac)


register()
