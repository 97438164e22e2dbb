"""The game state: a pytree of small fixed-shape arrays (one game; `jax.vmap` for a batch).

Players are indexed by colour: 0 = White (the reference's player 1, moves 1 -> 24 and rolls
first), 1 = Black (player 2, moves 24 -> 1). Colours never change during a game.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import pytree

NUM_ACTIONS = 514  # 0 Roll (never a decision here), 1 Go, 2..513 Move
OBS_SIZE = 217  # the observation's features: float32[217] (docs/api.md)
NUM_FIELDS = 24
NUM_CHECKERS = 15

# Stage and turn-stage codes are the reference engine's own integer codes.
STAGE_PRE_GAME, STAGE_IN_GAME, STAGE_ENDED = 0, 1, 2
TS_ROLL_WAITING, TS_ROLL_DICE, TS_MARK_POINTS, TS_HOLD_OR_GO, TS_MOVE, TS_MARK_ADV_POINTS = range(6)

INITIAL_BOARD = np.array([15] + [0] * 22 + [-15], dtype=np.int8)  # int8[24]


@pytree.dataclass
class State:
    """One Trictrac game.

    Public fields are pgx's: `current_player`, `observation`, `rewards`, `terminated`,
    `truncated`, `legal_action_mask`. The chance flag is private, as in pgx's stochastic games
    (read it as `is_chance`); the other fields starting with `_` mirror the reference
    engine's `GameState` (real board, never mirrored). `render` gives it pgx's `to_svg`,
    `save_svg` and `_repr_html_`.
    """

    current_player: jax.Array  # colour to act (0 White, 1 Black)
    observation: jax.Array  # float32[217], mover's view
    rewards: jax.Array  # float32[2], by colour, zero-sum
    terminated: jax.Array
    truncated: jax.Array
    legal_action_mask: jax.Array  # bool[514]; all True once the game is over
    _is_chance: jax.Array  # True while waiting for the dice (afterstate)
    _step_count: jax.Array  # decisions taken so far
    _board: jax.Array  # int8[24]: >0 White, <0 Black; index i = field i+1
    _stage: jax.Array  # int32, STAGE_*
    _turn_stage: jax.Array  # int32, TS_*
    _dice: jax.Array  # int32[2] last roll, in order; 0 before any
    _points: jax.Array  # int32[2] by colour, 0..11
    _holes: jax.Array  # int32[2] by colour
    _can_bredouille: jax.Array
    _can_big_bredouille: jax.Array  # never changed by the reference
    _dice_roll_count: jax.Array  # rolls since the last board reset
    _dice_points: jax.Array  # [roller, opponent] of the last roll

    @property
    def env_id(self) -> str:
        """The environment's id "trictrac" (pgx's `State.env_id`)."""
        return "trictrac"

    @property
    def is_chance(self) -> jax.Array:
        """bool[...]: waiting for the dice (an afterstate, between `step_deterministic` and
        `chance_step`)."""
        return self._is_chance

    @property
    def done(self) -> jax.Array:
        """bool[...]: the game is over, won or truncated (`terminated | truncated`)."""
        return self.terminated | self.truncated


def score_lead(state: State, player) -> jax.Array:
    """float32[...]: `player`'s lead in 12 * holes + points (the game's bookkeeping) over his
    opponent, in `state` (any batch shape, `player` int[...] of the same shape)."""
    score = (12 * state._holes + state._points).astype(jnp.float32)
    own = jnp.take_along_axis(score, jnp.asarray(player)[..., None], -1)[..., 0]
    return 2 * own - score.sum(-1)
