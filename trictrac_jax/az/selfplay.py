"""Self-play on device: G games in parallel, T decisions per call (`jax.lax.scan`), each
decision chosen by the search, finished games replaced by new ones at once."""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from trictrac_jax.env import Trictrac, sample_outcome
from trictrac_jax.az.replay import Steps
from trictrac_jax.state import State


@struct.dataclass
class Actors:
    """The games being played: states [G] (decision nodes) and episode numbers [G]."""

    states: State
    episode: jax.Array  # int32[G], games finished so far in each slot


class Played(NamedTuple):
    """What `play` returns, [T, G] per decision."""

    steps: Steps
    done: jax.Array  # bool: the game ended with this decision (or the roll after it)
    utility: jax.Array  # float32[..., 2]: its final utility by colour (where done)
    won: jax.Array  # bool: ended with a winner (not truncated)
    length: jax.Array  # int32: decisions in the game (where done)


def start(env: Trictrac, key, games: int) -> Actors:
    states = jax.vmap(env.init)(jax.random.split(key, games))
    return Actors(states=states, episode=jnp.zeros(games, jnp.int32))


def play(env: Trictrac, search, utility, baseline, params, key, actors: Actors, steps: int):
    """`steps` decisions in every game. `search(params, key, states) -> SearchOutput`;
    `utility(state, rewards, player)` and `baseline(state, player)` as in
    `trictrac_jax.az.search`.
    Returns (actors, Played [steps, G])."""
    games = actors.episode.shape[0]
    colours = jnp.arange(2, dtype=jnp.int32)

    def decide(actors: Actors, key):
        k_search, k_dice, k_new = jax.random.split(key, 3)
        s = actors.states
        out = search(params, k_search, s)
        after = jax.vmap(env.step_deterministic)(s, out.action)
        nxt = jax.vmap(env.chance_step)(after, jax.vmap(sample_outcome)(
            jax.random.split(k_dice, games)))
        rewards = after.rewards + nxt.rewards  # a game may end at the decision or the roll
        done = nxt.terminated | nxt.truncated
        final = jax.vmap(jax.vmap(utility, (None, None, 0)), (0, 0, None))(nxt, rewards,
                                                                           colours)
        record = Steps(obs=s.observation, mask=s.legal_action_mask, policy=out.policy,
                       value=out.value,
                       mover=s.current_player, base=baseline(s, s.current_player),
                       after_obs=after.observation, after_player=after.current_player,
                       after_base=baseline(after, after.current_player),
                       after_valid=~(after.terminated | after.truncated),
                       game=jnp.arange(games, dtype=jnp.int32), episode=actors.episode)
        fresh = jax.vmap(env.init)(jax.random.split(k_new, games))  # a lookup, no roll
        states = jax.tree.map(lambda f, n: jnp.where(
            done.reshape(-1, *[1] * (n.ndim - 1)), f, n), fresh, nxt)
        played = Played(steps=record, done=done, utility=final, won=nxt.terminated,
                        length=nxt._step_count)
        return Actors(states=states, episode=actors.episode + done), played

    return jax.lax.scan(decide, actors, jax.random.split(key, steps))
