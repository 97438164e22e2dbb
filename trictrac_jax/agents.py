"""Baseline agents as pure functions of (key, state) -> action, usable under jit and vmap,
and `load_agent` to get one by name or from a training checkpoint."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from trictrac_jax.env import NUM_CHANCE_OUTCOMES, Trictrac
from trictrac_jax.lanes import cpu_chunked, game_minor
from trictrac_jax.state import NUM_ACTIONS
from trictrac_jax.scoring import total_score

_ENV = Trictrac(max_steps=None)  # lookahead only: never truncates
WIN_BONUS = 1000.0  # a won game outweighs any score difference


@cpu_chunked
def random_agent(key, state):
    """Uniform over the legal actions.

    Draws one integer k below the number of legal actions and takes the (k + 1)-th legal
    one: a single random number instead of one Gumbel draw per action (which costs as
    much as a fifth of an engine step).
    """
    mask = state.legal_action_mask
    k = jax.random.randint(key, (), 0, jnp.maximum(jnp.sum(mask), 1))
    return _kth_true(mask, k)


@game_minor
def _kth_true(mask, k):
    """Index of the (k + 1)-th True of bool[n, *games] along its first axis (n if none).

    The running count is an associative scan, games last (see lanes.py): `jnp.cumsum` is a
    reduce-window on CPU, quadratic in n. It is then counted, not searched (it never
    decreases).
    """
    count = jax.lax.associative_scan(jnp.add, mask.astype(jnp.int16), axis=0)
    return jnp.sum(count <= k, axis=0).astype(jnp.int32)


def first_agent(key, state):
    """The first legal action: Go whenever it is legal (the reference engine's default bot)."""
    del key
    return jnp.argmax(state.legal_action_mask).astype(jnp.int32)


def score_lead(state, rewards, player):
    """float32: `player`'s lead in 12 * holes + points, counting the points the last roll
    gave the non-roller (marked only after the roller's move), plus WIN_BONUS * the game
    result in `rewards` (by colour)."""
    roller = state.current_player
    pending = jnp.where(jnp.arange(2) == roller, 0, state._dice_points[1])
    score = (total_score(state) + pending).astype(jnp.float32)
    score += WIN_BONUS * rewards
    return score[player] - score[1 - player]


def greedy_agent(key, state, top_k: int = 32):
    """1-ply expectimax on the score: for each of the first `top_k` legal actions (by index),
    the expected `score_lead` over the 36 dice after the next roll is scored; the best one.

    Costs top_k * 36 chance steps per decision."""
    del key
    mover = state.current_player
    candidates = jnp.nonzero(state.legal_action_mask, size=top_k, fill_value=-1)[0]
    valid = candidates >= 0
    afters = jax.vmap(_ENV.step_deterministic, (None, 0))(state, jnp.maximum(candidates, 0))
    outcomes = jnp.arange(NUM_CHANCE_OUTCOMES)

    def expected_lead(after):
        rolled = jax.vmap(_ENV.chance_step, (None, 0))(after, outcomes)
        leads = jax.vmap(score_lead, (0, 0, None))(rolled, after.rewards + rolled.rewards,
                                                   mover)
        return jnp.dot(_ENV.chance_probs, leads)

    value = jax.vmap(expected_lead)(afters)
    return candidates[jnp.argmax(jnp.where(valid, value, -jnp.inf))].astype(jnp.int32)


BASELINES = {"random": random_agent, "first": first_agent, "greedy": greedy_agent}


def load_agent(spec: str, num_simulations: int = 0, lookahead: int = 0):
    """An agent `(key, state) -> int32 action` from a spec:

    * 'random', 'first', 'greedy' (top-32 actions) or 'greedy:K';
    * a training run directory (its best checkpoint) or one checkpoint directory
      (RUN_DIR/checkpoints/N): the network's policy, greedy over the masked logits, or with
      `num_simulations` > 0 the run's search (no exploration noise), or with `lookahead`
      > 0 the 1-ply search over that many actions (`search.make_lookahead`).

    Raises ValueError for an unknown name, `CheckpointError` for an unreadable checkpoint."""
    name, _, arg = spec.partition(":")
    if name == "greedy" and arg:
        if not arg.isdigit() or int(arg) < 1:
            raise ValueError(f"agent {spec!r}: greedy:K needs a positive integer K")
        return functools.partial(greedy_agent, top_k=int(arg))
    if name in BASELINES and not arg:
        return BASELINES[name]
    if "/" not in spec and not spec.startswith("."):
        raise ValueError(f"unknown agent {spec!r}: expected one of {list(BASELINES)}, "
                         f"greedy:K, or a checkpoint path")
    from trictrac_jax import training  # the training stack is optional for the engine
    return checkpoint_agent(*training.load_params(spec), num_simulations=num_simulations,
                            lookahead=lookahead)


def checkpoint_agent(params, config: dict, num_simulations: int = 0, lookahead: int = 0):
    """The agent of trained `params` with their run `config` (see `load_agent`)."""
    from trictrac_jax import network as N
    from trictrac_jax import search as S
    if num_simulations and lookahead:
        raise ValueError("num_simulations and lookahead: use one search, not both")
    if not 0 <= lookahead <= NUM_ACTIONS:
        raise ValueError(f"lookahead: must be in [0, {NUM_ACTIONS}], got {lookahead}")
    model = S.model_from_config(config)
    # the searches work on batches: one state is a batch of one
    batched = lambda f: lambda key, state: f(key, jax.tree.map(lambda x: x[None], state))[0]
    if lookahead:
        return batched(functools.partial(S.make_lookahead(model, lookahead), params))
    if num_simulations == 0:
        return lambda key, state: N.policy_action(model.net, params, state)
    search = S.make_search(model, {**config["search"], "num_simulations": num_simulations},
                           explore=False)
    return batched(lambda key, states: search(params, key, states).action)
