"""Baseline agents as pure functions of (key, state) -> action, usable under jit and vmap.

Engine imports only: the trained players (`players.load_agent`) live on the learning side."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from trictrac_jax.env import NUM_CHANCE_OUTCOMES, Trictrac
from trictrac_jax.lanes import batch_rule, cpu_chunked, game_minor
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


GREEDY_CHUNK = 8  # candidate actions scored together: memory ~ games x 8 x 36 rolled states


def greedy_agent(key, state, top_k: int | None = None):
    """1-ply expectimax on the score: among the legal actions (with `top_k`, only the first
    `top_k` by index), the one whose expected `score_lead` over the 36 dice after the next
    roll is highest; ties go to the lowest index.

    Costs 36 chance steps per considered action. Under `jax.vmap` the batch is scored as one
    flat batch of rolled states (`_greedy_batch`), `GREEDY_CHUNK` candidates at a time."""
    del key
    return _greedy(top_k)(state)


@functools.lru_cache(maxsize=None)
def _greedy(top_k: int | None):
    """The one-state greedy of `top_k` with its batch rule (one per `top_k`, for the jit
    caches)."""
    one = lambda state: _greedy_batch(jax.tree.map(lambda x: x[None], state), top_k)[0]
    return batch_rule(one, lambda states: _greedy_batch(states, top_k))


def _greedy_batch(states, top_k: int | None):
    """int32[B]: the greedy action of each of states [B].

    The candidates (legal action indices, ascending, then -1) are scored `GREEDY_CHUNK` at a
    time in a while loop that stops after the chunk holding the last considered action of
    the batch's live games with a choice, keeping a running best; a later chunk replaces it only when strictly better,
    which keeps the first best by index."""
    batch = states.current_player.shape[0]
    size = NUM_ACTIONS if top_k is None else top_k
    chunk = min(GREEDY_CHUNK, size)
    padded = -(-size // chunk) * chunk
    candidates = jax.vmap(lambda m: jnp.nonzero(m, size=padded, fill_value=-1)[0])(
        states.legal_action_mask)
    candidates = jnp.where(jnp.arange(padded) < size, candidates, -1)  # [B, padded]
    count = jnp.minimum(jnp.sum(states.legal_action_mask, -1), size)
    # Nothing to score in a finished game (its mask is all True: the loop would run to 514)
    # or with one legal action (the initial best): they never lengthen the batch's loop.
    live = ~(states.terminated | states.truncated) & (count > 1)
    chunks = (jnp.max(jnp.where(live, count, 0)) + chunk - 1) // chunk

    def body(carry):
        i, best_value, best_action = carry
        actions = jax.lax.dynamic_slice_in_dim(candidates, i * chunk, chunk, axis=1)  # [B, C]
        value = jnp.where(actions >= 0, _total_leads(states, actions), -jnp.inf)
        j = jnp.argmax(value, -1)
        value = jnp.take_along_axis(value, j[:, None], -1)[:, 0]
        action = jnp.take_along_axis(actions, j[:, None], -1)[:, 0]
        better = value > best_value
        return (i + 1, jnp.where(better, value, best_value),
                jnp.where(better, action, best_action))

    init = (jnp.int32(0), jnp.full(batch, -jnp.inf), jnp.maximum(candidates[:, 0], 0))
    return jax.lax.while_loop(lambda c: c[0] < chunks, body, init)[2].astype(jnp.int32)


def _total_leads(states, actions):
    """float32[B, C]: 36 x the expected `score_lead` of the mover of states [B] after each of
    actions int32[B, C] (>= 0) and the next roll. Ordered rolls are equally likely, so this
    is the plain sum over them: a sum of integers, exact, so equally good actions tie
    whatever the batching. One flat vmap over B x C x 36 rolled states keeps the engine's batch rules."""
    batch, chunk = actions.shape
    repeat = lambda tree, n: jax.tree.map(lambda x: jnp.repeat(x, n, axis=0), tree)
    afters = jax.vmap(_ENV.step_deterministic)(repeat(states, chunk),
                                               jnp.maximum(actions, 0).reshape(-1))
    outcomes = jnp.tile(jnp.arange(NUM_CHANCE_OUTCOMES), batch * chunk)
    movers = jnp.repeat(states.current_player, chunk * NUM_CHANCE_OUTCOMES)

    def lead(after, outcome, mover):
        rolled = _ENV.chance_step(after, outcome)
        return score_lead(rolled, after.rewards + rolled.rewards, mover)

    leads = jax.vmap(lead)(repeat(afters, NUM_CHANCE_OUTCOMES), outcomes, movers)
    return jnp.sum(leads.reshape(batch, chunk, NUM_CHANCE_OUTCOMES), -1)


BASELINES = {"random": random_agent, "first": first_agent, "greedy": greedy_agent}


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
