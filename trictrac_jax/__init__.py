"""trictrac-jax: Trictrac as pure, jittable, vmappable JAX array functions.

    import jax, trictrac_jax as tt
    env = tt.make("trictrac")  # or tt.Trictrac(max_steps=...)
    state = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), 1024))

The names of `__all__` are the API (docs/api.md; the API reference of the documentation site).
"""
from trictrac_jax.env import (CHANCE_DICE, ENV_IDS, NUM_CHANCE_OUTCOMES,
                              Trictrac, dice_to_outcome, make, new_game, observe)
from trictrac_jax.io import (from_string_id, state_from_record, state_to_record,
                             states_from_records, states_to_records, to_string_id)
from trictrac_jax import agents, render, wrappers  # render: the states' pgx drawing methods
from trictrac_jax.state import NUM_ACTIONS, OBS_SIZE, State

__version__ = "0.2.0"  # the package's version (pyproject.toml reads it), CHANGELOG.md's last

__all__ = [
    "agents", "render", "wrappers", "make", "ENV_IDS", "Trictrac", "State", "NUM_ACTIONS", "OBS_SIZE",
    "NUM_CHANCE_OUTCOMES", "CHANCE_DICE",
    "dice_to_outcome", "new_game", "observe", "from_string_id", "to_string_id",
    "state_from_record", "state_to_record", "states_from_records", "states_to_records",
]
