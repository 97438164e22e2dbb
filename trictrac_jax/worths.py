"""The worths of each game's candidate actions, and each game's best, for a batch: the
batch's candidates scored as one flat list a bounded pass at a time (greedy, a network's
lookahead, and the lookahead's self-play).

Batch-first, like the state: arrays are [B, ...] over the batch's games.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from trictrac_jax.arrays import prefix_sum

# Candidates scored per pass of `candidate_worths`: CANDIDATES_PER_GAME per game of the batch,
# at most CANDIDATES_PER_PASS. 256 candidates x 36 rolled states are 9 whole CPU_CHUNKs; on
# CPU, greedy on 1000 mid-game positions took 2.1 s at 256 a pass, 2.5 s at 1024, 3.2 s at
# 4096, and 3-5x longer when the rolled states were not a multiple of CPU_CHUNK. The same
# sizes serve the GPU lowering until measured there (larger passes would likely suit a GPU).
CANDIDATES_PER_GAME = 8
CANDIDATES_PER_PASS = 256


def candidate_worths(states, actions, valid, worth):
    """float32[B, K]: the worth of each valid candidate action, -inf elsewhere.

    `actions` int32[B, K] are the candidates of each game of `states` [B], `valid`
    bool[B, K] those to score, and `worth(states[P], actions[P]) -> float32[P]` scores
    candidates. The valid (game, slot) pairs of the whole batch, in order of game then slot,
    form one flat list scored a pass at a time in a while loop (see CANDIDATES_PER_PASS):
    the work follows the batch's number of valid candidates, not B x K, and memory stays
    bounded."""
    batch, width = actions.shape
    rank = prefix_sum(valid.astype(jnp.int32), -1)  # [B, K]: 1 for the first valid slot
    count = rank[:, -1]
    start = jnp.concatenate([jnp.zeros(1, count.dtype), prefix_sum(count, 0)[:-1]])
    # The flat list: pair (g, k) = g * K + k at start[g] + rank - 1, -1 after the last.
    per_pass = min(CANDIDATES_PER_GAME * batch, CANDIDATES_PER_PASS)
    size = -(-batch * width // per_pass) * per_pass
    where = jnp.where(valid, start[:, None] + rank - 1, size)
    pairs = jnp.full(size, -1, jnp.int32).at[where.reshape(-1)].set(
        jnp.arange(batch * width, dtype=jnp.int32), mode="drop")
    passes = (jnp.sum(count) + per_pass - 1) // per_pass

    def body(carry):
        i, worths = carry
        pair = jax.lax.dynamic_slice_in_dim(pairs, i * per_pass, per_pass)  # [P]
        game, slot = jnp.maximum(pair, 0) // width, pair % width
        value = worth(jax.tree.map(lambda x: x[game], states), actions[game, slot])
        return i + 1, worths.at[jnp.where(pair >= 0, pair, batch * width)].set(
            value, mode="drop")

    init = (jnp.int32(0), jnp.full(batch * width, -jnp.inf))
    return jax.lax.while_loop(lambda c: c[0] < passes, body, init)[1].reshape(batch, width)


def best_candidates(states, actions, valid, default, worth):
    """int32[B]: for each game of `states` [B], its best valid candidate action
    (`candidate_worths`), ties to the lowest slot k; a game without a valid candidate plays
    `default` int32[B]."""
    worths = candidate_worths(states, actions, valid, worth)
    slot = jnp.argmax(worths, -1)
    chosen = jnp.take_along_axis(actions, slot[:, None], -1)[:, 0]
    return jnp.where(jnp.any(valid, -1), chosen, default).astype(jnp.int32)
