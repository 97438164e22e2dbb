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

    The running count is taken games last (see lanes.py), then counted, not searched (it
    never decreases).
    """
    count = _running_count(mask.astype(jnp.int16), axis=0)
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


# Candidates scored per pass of greedy's loop: GREEDY_CHUNK per game of the batch, at most
# GREEDY_PASS. 256 x 36 rolled states are 9 whole lanes.CPU_CHUNKs; on CPU, 1000 mid-game
# positions took 2.1 s at 256 a pass, 2.5 s at 1024, 3.2 s at 4096, and 3-5x longer when the
# rolled states were not a multiple of CPU_CHUNK.
GREEDY_CHUNK = 8
GREEDY_PASS = 256


def greedy_agent(key, state, top_k: int | None = None):
    """1-ply expectimax on the score: among the legal actions (with `top_k`, only the first
    `top_k` by index), the one whose expected `score_lead` over the 36 dice after the next
    roll is highest; ties go to the lowest index.

    Costs 36 chance steps per considered action. Under `jax.vmap` the batch is scored as one
    flat list of (game, action) candidates (`_greedy_batch`)."""
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

    The candidates of the whole batch, (game, action) pairs in order of game then action,
    are listed one after the other and scored a pass at a time in a while loop (see
    GREEDY_PASS), so the work follows the batch's total number of candidates, not B x its
    largest count. Finished games and games with one legal action (their first legal action)
    have none. Each game keeps a running best, replaced only by a strictly better value: the
    first best by index wins, wherever the passes split the list."""
    batch = states.current_player.shape[0]
    mask = states.legal_action_mask  # [B, A]
    rank = _running_count(mask.astype(jnp.int32), -1)  # [B, A]: 1 for the first legal action, ...
    if top_k is not None:
        mask &= rank <= top_k
    count = jnp.sum(mask, -1)
    live = ~(states.terminated | states.truncated) & (count > 1)
    mask &= live[:, None]
    count = jnp.where(live, count, 0)
    start = jnp.concatenate([jnp.zeros(1, count.dtype), _running_count(count, 0)[:-1]])
    # The candidates' flat list: pair (g, a) at start[g] + rank - 1, -1 after the last.
    per_pass = min(GREEDY_CHUNK * batch, GREEDY_PASS)
    size = -(-batch * NUM_ACTIONS // per_pass) * per_pass
    where = jnp.where(mask, start[:, None] + rank - 1, size)
    pairs = jnp.full(size, -1, jnp.int32).at[where.reshape(-1)].set(
        jnp.arange(batch * NUM_ACTIONS, dtype=jnp.int32), mode="drop")
    passes = (jnp.sum(count) + per_pass - 1) // per_pass

    def body(carry):
        i, best_value, best_action = carry
        pair = jax.lax.dynamic_slice_in_dim(pairs, i * per_pass, per_pass)  # [P]
        game, action = jnp.maximum(pair, 0) // NUM_ACTIONS, pair % NUM_ACTIONS
        value = _total_leads(jax.tree.map(lambda x: x[game], states), action)
        value = jnp.where(pair >= 0, value, -jnp.inf)
        top = jax.ops.segment_max(value, game, batch)  # [B]: each game's best in the pass
        first = jax.ops.segment_min(jnp.where(value == top[game], action, NUM_ACTIONS), game,
                                    batch)
        better = top > best_value
        return (i + 1, jnp.where(better, top, best_value),
                jnp.where(better, first, best_action))

    init = (jnp.int32(0), jnp.full(batch, -jnp.inf), jnp.argmax(states.legal_action_mask, -1))
    return jax.lax.while_loop(lambda c: c[0] < passes, body, init)[2].astype(jnp.int32)


def _running_count(x, axis: int):
    """Inclusive running sum of integers `x` along `axis`, as an associative scan:
    `jnp.cumsum` is a reduce-window on CPU, quadratic in the axis' length."""
    return jax.lax.associative_scan(jnp.add, x, axis=axis)


def _total_leads(states, actions):
    """float32[P]: 36 x the expected `score_lead` of the mover of states [P] after actions
    int32[P] and the next roll. Ordered rolls are equally likely, so this is the plain sum
    over them: a sum of integers, exact, so equally good actions tie whatever the batching.
    One flat vmap over P x 36 rolled states keeps the engine's batch rules."""
    afters = jax.vmap(_ENV.step_deterministic)(states, actions)
    repeated, rolled = _ENV.every_roll(afters)
    movers = jnp.repeat(states.current_player, NUM_CHANCE_OUTCOMES)
    leads = jax.vmap(score_lead)(rolled, repeated.rewards + rolled.rewards, movers)
    return jnp.sum(leads.reshape(-1, NUM_CHANCE_OUTCOMES), -1)


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
