"""The worths of each game's candidate actions, and each game's best, for a batch: the
batch's candidates scored a bounded pass at a time, passes sized by the backend's lowering
(greedy, a network's lookahead, and the lookahead's self-play).

Batch-first, like the state: arrays are [B, ...] over the batch's games.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from trictrac_jax.arrays import prefix_sum
from trictrac_jax import lowering


def candidate_worths(states, actions, valid, worth):
    """float32[B, K]: the worth of each valid candidate action, -inf elsewhere.

    `actions` int32[B, K] are the candidates of each game of `states` [B], `valid`
    bool[B, K] those to score, and `worth(states[P], actions[P]) -> float32[P]` scores
    candidates, a pass of at most `Lowering.candidates_per_pass` pairs at a time (memory
    stays bounded). With at most `Lowering.every_pair_up_to` candidates a game (a
    lookahead's few likeliest moves on an accelerator), every (game, column) pair is scored in
    a fixed number of passes: the compiled program knows its trip count. Otherwise (greedy's
    every action, mostly illegal; any candidates on the CPU) the valid pairs of the whole
    batch, in order of game then column, form one flat list scored a pass at a time while any
    remain: the work follows their number, not B x K."""
    batch, width = actions.shape
    settings = lowering.current()
    if width <= settings.every_pair_up_to:
        per_pass = min(batch * width, settings.candidates_per_pass)
        return _every_pair_worths(states, actions, valid, worth, per_pass)
    per_pass = min(settings.candidates_per_game * batch, settings.candidates_per_pass)
    return _valid_pair_worths(states, actions, valid, worth, per_pass)


def _scored(states, actions, worth, pair):
    """float32[P]: `worth` of the flat (game, column) pairs `pair` int32[P] (g * K + k; a
    negative entry scores game 0's last column, to be dropped)."""
    width = actions.shape[1]
    game, column = jnp.maximum(pair, 0) // width, pair % width
    return worth(jax.tree.map(lambda x: x[game], states), actions[game, column])


def _every_pair_worths(states, actions, valid, worth, per_pass: int):
    """`candidate_worths` of all B x K pairs, `per_pass` at a time in a scan of a fixed
    number of passes (the last padded)."""
    batch, width = actions.shape
    passes = -(-batch * width // per_pass)
    pairs = jnp.arange(passes * per_pass, dtype=jnp.int32)
    pairs = jnp.where(pairs < batch * width, pairs, -1).reshape(passes, per_pass)
    values = jax.lax.map(lambda pair: _scored(states, actions, worth, pair), pairs)
    values = values.reshape(-1)[:batch * width].reshape(batch, width)
    return jnp.where(valid, values, -jnp.inf)


def _valid_pair_worths(states, actions, valid, worth, per_pass: int):
    """`candidate_worths` of the valid pairs only, as one flat list scored `per_pass` at a
    time in a while loop of as many passes as they need."""
    batch, width = actions.shape
    rank = prefix_sum(valid.astype(jnp.int32), -1)  # [B, K]: 1 for the first valid column
    count = rank[:, -1]
    start = jnp.concatenate([jnp.zeros(1, count.dtype), prefix_sum(count, 0)[:-1]])
    # The flat list: pair (g, k) = g * K + k at start[g] + rank - 1, -1 after the last.
    size = -(-batch * width // per_pass) * per_pass
    where = jnp.where(valid, start[:, None] + rank - 1, size)
    pairs = jnp.full(size, -1, jnp.int32).at[where.reshape(-1)].set(
        jnp.arange(batch * width, dtype=jnp.int32), mode="drop")
    passes = (jnp.sum(count) + per_pass - 1) // per_pass

    def body(carry):
        i, worths = carry
        pair = jax.lax.dynamic_slice_in_dim(pairs, i * per_pass, per_pass)  # [P]
        value = _scored(states, actions, worth, pair)
        return i + 1, worths.at[jnp.where(pair >= 0, pair, batch * width)].set(
            value, mode="drop")

    init = (jnp.int32(0), jnp.full(batch * width, -jnp.inf))
    return jax.lax.while_loop(lambda c: c[0] < passes, body, init)[1].reshape(batch, width)


def best_candidates(states, actions, valid, default, worth):
    """int32[B]: for each game of `states` [B], its best valid candidate action
    (`candidate_worths`), ties to the lowest column k; a game without a valid candidate plays
    `default` int32[B]."""
    worths = candidate_worths(states, actions, valid, worth)
    column = jnp.argmax(worths, -1)
    chosen = jnp.take_along_axis(actions, column[:, None], -1)[:, 0]
    return jnp.where(jnp.any(valid, -1), chosen, default).astype(jnp.int32)
