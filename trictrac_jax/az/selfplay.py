"""Self-play on device: G games in parallel, T decisions per call (`jax.lax.scan`), each
decision chosen by the search, finished games replaced by new ones at once."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from trictrac_jax.arrays import select_tree
from trictrac_jax.az import model as M
from trictrac_jax.az.base import Actors, Model, Params, Played, SearchFn, Steps
from trictrac_jax.env import Trictrac, sample_outcome


def start(env: Trictrac, key, games: int) -> Actors:
    """`games` new games, each after White's first roll."""
    states = jax.vmap(env.init)(jax.random.split(key, games))
    return Actors(states=states, episode=jnp.zeros(games, jnp.int32))


def decide(params: Params, key, actors: Actors, *, model: Model, search_fn: SearchFn
           ) -> tuple[Actors, Played]:
    """One decision in every game [G], chosen by `search_fn`, then the dice; games that
    end are replaced by new ones. Returns (actors, Played [G])."""
    env = model.env
    games = actors.episode.shape[0]
    k_search, k_dice, k_new = jax.random.split(key, 3)
    s = actors.states
    out = search_fn(params, k_search, s)
    after = jax.vmap(env.step_deterministic)(s, out.action)
    nxt = jax.vmap(env.chance_step)(after, jax.vmap(sample_outcome)(
        jax.random.split(k_dice, games)))
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
                   game=jnp.arange(games, dtype=jnp.int32), episode=actors.episode)
    fresh = jax.vmap(env.init)(jax.random.split(k_new, games))  # a lookup, no roll
    played = Played(steps=record, done=done, utility=by_colour(nxt, rewards, colours),
                    won=nxt.terminated, length=nxt._step_count)
    return Actors(states=select_tree(done, fresh, nxt), episode=actors.episode + done), played


def play(params: Params, key, actors: Actors, *, model: Model, search_fn: SearchFn,
         steps: int) -> tuple[Actors, Played]:
    """`steps` decisions in every game (`decide`, scanned). Returns (actors, Played
    [steps, G])."""
    one = lambda actors, k: decide(params, k, actors, model=model, search_fn=search_fn)
    return jax.lax.scan(one, actors, jax.random.split(key, steps))
