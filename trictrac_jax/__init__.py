"""trictrac-jax: Trictrac as pure, jittable, vmappable JAX array functions.

    import jax, trictrac_jax as tt
    env = tt.make("trictrac")  # or tt.Trictrac(max_steps=...)
    state = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), 1024))
"""
from trictrac_jax.env import (CHANCE_DICE, ENV_IDS, NUM_CHANCE_OUTCOMES,
                              Trictrac, dice_to_outcome, make, new_game, observe)
from trictrac_jax.io import (from_string_id, state_from_record, state_to_record,
                             states_from_records, states_to_records, to_string_id)
from trictrac_jax import agents, render, wrappers  # render: the states' pgx drawing methods
from trictrac_jax.state import NUM_ACTIONS, OBS_SIZE, State

__version__ = "0.1.0"

__all__ = [
    "agents", "render", "wrappers", "make", "ENV_IDS", "Trictrac", "State", "NUM_ACTIONS", "OBS_SIZE",
    "NUM_CHANCE_OUTCOMES", "CHANCE_DICE",
    "dice_to_outcome", "new_game", "observe", "from_string_id", "to_string_id",
    "state_from_record", "state_to_record", "states_from_records", "states_to_records",
]
