"""A replay buffer on device whose value targets arrive when each game ends.

Decisions are written as they are played, tagged with their game's index in the batch of G
games and that index's episode number (a finished game's index plays the next episode).
When a game ends, its final utility (per colour) goes into a small outcome table indexed by
(game index, episode mod R); a decision's target is looked up there at sampling time,
and only decisions whose game has ended (and is still in the table) are sampled. So no
trajectory is cut at an iteration boundary and games may last any number of iterations.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from trictrac_jax.az.base import Steps
from trictrac_jax.state import NUM_ACTIONS, OBS_SIZE


@struct.dataclass
class Replay:
    """The buffer: C stored decisions and the outcome table of G game indices x R rows."""

    steps: Steps  # [C]
    filled: jax.Array  # bool[C]
    ptr: jax.Array  # int32[], next write position
    table_episode: jax.Array  # int32[G, R], episode whose outcome is stored; -1: none
    table_utility: jax.Array  # float32[G, R, 2], its final utility by colour


def table_rows(capacity: int, games: int) -> int:
    """R: outcome-table rows per game index. An index's decisions stay in the buffer for about
    capacity / games decisions; games last far more than 4 decisions, so no episode still in
    the buffer loses its row (a lost row only makes its decisions unsampled)."""
    return -(-capacity // games) // 4 + 2


def empty(capacity: int, games: int) -> Replay:
    zeros = lambda *shape, dtype=jnp.float32: jnp.zeros((capacity, *shape), dtype)
    steps = Steps(obs=zeros(OBS_SIZE), mask=zeros(NUM_ACTIONS, dtype=bool),
                  policy=zeros(NUM_ACTIONS), value=zeros(), mover=zeros(dtype=jnp.int32),
                  banked=zeros(),
                  after_obs=zeros(OBS_SIZE), after_player=zeros(dtype=jnp.int32),
                  after_banked=zeros(),
                  after_valid=zeros(dtype=bool), game=zeros(dtype=jnp.int32),
                  episode=zeros(dtype=jnp.int32))
    rows = table_rows(capacity, games)
    return Replay(steps=steps, filled=zeros(dtype=bool), ptr=jnp.int32(0),
                  table_episode=jnp.full((games, rows), -1, jnp.int32),
                  table_utility=jnp.zeros((games, rows, 2), jnp.float32))


def add(replay: Replay, steps: Steps, done, utility) -> Replay:
    """Append self-play `steps` [T, G] and record the games that ended: `done` bool[T, G],
    `utility` float32[T, G, 2] (final utility by colour where done)."""
    capacity = replay.filled.shape[0]
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), steps)
    n = flat.mover.shape[0]
    idx = (replay.ptr + jnp.arange(n)) % capacity
    new_steps = jax.tree.map(lambda buf, x: buf.at[idx].set(x), replay.steps, flat)

    games, rows = replay.table_episode.shape
    game = jnp.where(done, steps.game, games)  # out of bounds: dropped
    row = steps.episode % rows
    return replay.replace(
        steps=new_steps, filled=replay.filled.at[idx].set(True),
        ptr=(replay.ptr + n) % capacity,
        table_episode=replay.table_episode.at[game, row].set(steps.episode, mode="drop"),
        table_utility=replay.table_utility.at[game, row].set(utility, mode="drop"))


def outcome(replay: Replay, game, episode):
    """(known bool[...], final utility float32[..., 2] by colour) of (game index `game`,
    `episode`)."""
    row = episode % replay.table_episode.shape[1]
    return replay.table_episode[game, row] == episode, replay.table_utility[game, row]


def ready(replay: Replay):
    """bool[C]: stored decisions whose game has ended (their value target is known)."""
    return replay.filled & outcome(replay, replay.steps.game, replay.steps.episode)[0]


def sample(replay: Replay, key, shape, bootstrap: float = 0.0):
    """Uniform sample of ready decisions: (Steps [*shape], value target [*shape], afterstate
    value target [*shape]), the targets being the final utility minus the banked margin, clipped
    to [-1, 1]; a decision's target is `bootstrap` x its search value + (1 - `bootstrap`) x
    that. Needs at least one ready decision."""
    weights = ready(replay).astype(jnp.float32)
    idx = jax.random.choice(key, weights.shape[0], shape, p=weights / weights.sum())
    steps = jax.tree.map(lambda x: x[idx], replay.steps)
    utility = outcome(replay, steps.game, steps.episode)[1]
    target = lambda player, banked: jnp.clip(
        jnp.take_along_axis(utility, player[..., None], -1)[..., 0] - banked, -1.0, 1.0)
    outcome_target = target(steps.mover, steps.banked)
    value_target = jnp.clip(bootstrap * steps.value + (1 - bootstrap) * outcome_target, -1, 1)
    return steps, value_target, target(steps.after_player, steps.after_banked)
