"""Baseline agents as pure functions of (key, state) -> action, usable under jit and vmap.

Engine imports only: the trained players (`network_agents.load_agent`) live on the learning side."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from trictrac_jax.env import NUM_CHANCE_OUTCOMES, Trictrac, has_choice
from trictrac_jax.arrays import prefix_sum
from trictrac_jax.lowering import batch_rule, count_true, cpu_chunked, game_minor, kth_true
from trictrac_jax.reference_bot import web_agent
from trictrac_jax.state import NUM_ACTIONS, score_lead
from trictrac_jax.ranking import best_candidates

_ENV = Trictrac(max_steps=None)  # lookahead only: never truncates
WIN_BONUS = 1000.0  # a won game outweighs any score difference


def random_agent(key, state):
    """int32: an action uniform over the legal ones of `state` (one game; `jax.vmap` it
    for a batch, keys[B] and states[B] -> int32[B]): `uniform_legal` of its mask."""
    return uniform_legal(key, state.legal_action_mask)


@cpu_chunked
def uniform_legal(key, mask):
    """int32: an index uniform over the True entries of `mask` bool[A] (any environment's
    legal-action mask; `jax.vmap` it for a batch), A if there is none.

    Draws one integer k below the number of legal actions, then takes the (k + 1)-th legal
    one (`lowering.kth_true`): one number a game instead of one Gumbel draw per action,
    which on a CPU cost more than an engine step. The same key draws the same action under
    every lowering. (`jax.random.randint`: the one 32-bit draw of `arrays.uniform_below`
    made the CPU's random play slower.)
    """
    k = jax.random.randint(key, (), 0, jnp.maximum(count_true(mask), 1))
    return _kth_true(mask, k)


_kth_true = game_minor(kth_true)


def first_agent(key, state):
    """int32: the first legal action of `state`, Go whenever it is legal (the reference
    engine's default bot); `key` unused."""
    del key
    return jnp.argmax(state.legal_action_mask).astype(jnp.int32)


def greedy_worth(state, rewards, player):
    """float32: what greedy maximises for `player`: his `score_lead`, counting the points
    the last roll gave the non-roller (marked only after the roller's move), plus
    WIN_BONUS * the game result in `rewards` (by colour)."""
    roller, other = state.current_player, 1 - player
    pending = jnp.where(jnp.arange(2) == roller, 0, state._dice_points[1]).astype(jnp.float32)
    return (score_lead(state, player) + (pending[player] - pending[other])
            + WIN_BONUS * (rewards[player] - rewards[other]))


def greedy_agent(key, state, top_k: int | None = None):
    """int32: 1-ply expectimax on the score: among the legal actions (with `top_k`, only the first
    `top_k` by index), the one whose expected `greedy_worth` over the 36 dice after the next
    roll is highest; ties go to the lowest index.

    Costs 36 chance steps per considered action. Under `jax.vmap` the batch is scored as one
    flat list of (game, action) candidates (`ranking.best_candidates`)."""
    del key
    return _greedy(top_k)(state)


@functools.lru_cache(maxsize=None)
def _greedy(top_k: int | None):
    """The one-state greedy of `top_k` with its batch rule, jitted: called on one state
    outside `jit`, its while loop's body would otherwise run op by op (seconds a call).
    One per `top_k`, for the jit caches."""
    one = lambda state: _greedy_batch(jax.tree.map(lambda x: x[None], state), top_k)[0]
    return jax.jit(batch_rule(one, lambda states: _greedy_batch(states, top_k)))


def _greedy_batch(states, top_k: int | None):
    """int32[B]: the greedy action of each of states [B], its legal actions (the first
    `top_k`) scored as `ranking.best_candidates`. Finished games and games with one legal
    action have no candidates: they play their first legal action."""
    mask = states.legal_action_mask  # [B, A]
    if top_k is not None:
        mask &= prefix_sum(mask.astype(jnp.int32), -1) <= top_k
    actions = jnp.broadcast_to(jnp.arange(NUM_ACTIONS, dtype=jnp.int32), mask.shape)
    return best_candidates(states, actions, mask & has_choice(states)[:, None],
                           jnp.argmax(states.legal_action_mask, -1), _total_worths)


def _total_worths(states, actions):
    """float32[P]: 36 x the expected `greedy_worth` of the mover of states [P] after actions
    int32[P] and the next roll. Ordered rolls are equally likely, so this is the plain sum
    over them: a sum of integers, exact, so equally good actions tie whatever the batching.
    One flat vmap over P x 36 rolled states keeps the engine's batch rules."""
    afters = jax.vmap(_ENV.step_deterministic)(states, actions)
    repeated, rolled = _ENV.every_roll(afters)
    movers = jnp.repeat(states.current_player, NUM_CHANCE_OUTCOMES)
    worths = jax.vmap(greedy_worth)(rolled, repeated.rewards + rolled.rewards, movers)
    return jnp.sum(worths.reshape(-1, NUM_CHANCE_OUTCOMES), -1)


# The baseline agents `(key, state) -> int32 action` by name (`baseline` reads their specs).
BASELINES = {"random": random_agent, "first": first_agent, "greedy": greedy_agent,
             "web": web_agent}


def baseline(spec: str):
    """The baseline agent of `spec`: 'random', 'first', 'greedy' (every legal action) or
    'greedy:K' (the first K legal actions by index); None if `spec` names no baseline.
    Raises ValueError for 'greedy:K' without a positive integer K."""
    name, colon, arg = spec.partition(":")
    if name == "greedy" and colon:
        if not arg.isdigit() or int(arg) < 1:
            raise ValueError(f"agent {spec!r}: greedy:K needs a positive integer K")
        return functools.partial(greedy_agent, top_k=int(arg))
    return None if colon else BASELINES.get(name)
