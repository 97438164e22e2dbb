"""Self-play on device: G games in parallel, T decisions per call (`jax.lax.scan`), each
decision chosen by the run's search (`search.search`, exploring), finished games replaced by
new ones at once."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from trictrac_jax.arrays import select_tree
from trictrac_jax.az import model as M
from trictrac_jax.az import search
from trictrac_jax.az.base import Games, Model, Params, Played, Steps
from trictrac_jax.az.config import SearchConfig
from trictrac_jax.env import init, sample_outcome


def start(key, games: int) -> Games:
    """`games` new games, each after White's first roll."""
    states = jax.vmap(init)(jax.random.split(key, games))
    return Games(states=states, episode=jnp.zeros(games, jnp.int32))


def decide(params: Params, games: Games, key, *, model: Model, search_config: SearchConfig
           ) -> tuple[Games, Played]:
    """One decision in every game [G], chosen by the search of `search_config`, then the
    dice; games that end are replaced by new ones. Returns (games, Played [G])."""
    count = games.episode.shape[0]
    k_search, k_dice, k_new = jax.random.split(key, 3)
    s = games.states
    out = search.search(params, k_search, s, model=model, config=search_config, explore=True)
    after = M.play_action(model, s, out.action)
    nxt = M.throw_dice(model, after, jax.vmap(sample_outcome)(jax.random.split(k_dice, count)))
    rewards = after.rewards + nxt.rewards  # a game may end at the decision or the roll
    done = nxt.done
    colours = jnp.arange(2, dtype=jnp.int32)
    utility = functools.partial(M.utility, model)
    by_colour = jax.vmap(jax.vmap(utility, (None, None, 0)), (0, 0, None))
    record = Steps(obs=s.observation, mask=s.legal_action_mask, policy=out.policy,
                   value=out.value, mover=s.current_player,
                   banked=M.banked(model, s, s.current_player),
                   after_obs=after.observation, after_player=after.current_player,
                   after_banked=M.banked(model, after, after.current_player),
                   after_valid=~after.done,
                   game=jnp.arange(count, dtype=jnp.int32), episode=games.episode)
    fresh = jax.vmap(init)(jax.random.split(k_new, count))  # a lookup, no roll
    played = Played(steps=record, done=done, utility=by_colour(nxt, rewards, colours),
                    won=nxt.terminated, length=nxt._step_count)
    return Games(states=select_tree(done, fresh, nxt), episode=games.episode + done), played


def play(params: Params, key, games: Games, *, model: Model, search_config: SearchConfig,
         steps: int) -> tuple[Games, Played]:
    """`steps` decisions in every game (`decide`, scanned). Returns (games, Played
    [steps, G])."""
    one = functools.partial(decide, params, model=model, search_config=search_config)
    return jax.lax.scan(one, games, jax.random.split(key, steps))
