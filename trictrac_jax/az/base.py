"""The AlphaZero stack's contracts: what the model, the search, self-play and training hand
to one another (as mctx's `base.py` names its own).

    Model        the simulator, the network and the value target (static, hashable)
    NetworkOutput  the network's outputs for a batch of states
    SearchFn     (params, key, State[B]) -> SearchOutput
    Games        the games self-play is playing
    Steps        one record per self-play decision, read by the replay buffer and the loss
    Played       what `selfplay.play` returns
    TrainState   parameters, optimiser state, update count and the run's key

Leading axes: [B] a batch of states, [G] self-play's games, [T] its decisions per call.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple

import jax
import optax
from flax import struct

from trictrac_jax.az.network import PolicyValueNet
from trictrac_jax.env import Trictrac
from trictrac_jax.state import State

Params = Any  # a Flax parameter tree


@dataclasses.dataclass(frozen=True)
class Model:
    """The simulator as MuZero's model, with the network that values its states.

    `value_target` (outcome, margin or points) and `margin_scale` say what a value means
    (config `selfplay`). Frozen and hashable: a static argument of jitted functions."""

    env: Trictrac
    net: PolicyValueNet
    value_target: str
    margin_scale: float


class NetworkOutput(NamedTuple):
    """The network's outputs for states [B], each from its player to move's view."""

    logits: jax.Array  # float32[B, 514], illegal actions at network.MASKED_LOGIT
    value: jax.Array  # float32[B], expected utility minus the mover's banked margin


class SearchOutput(NamedTuple):
    """A search's answer for states [B]."""

    action: jax.Array  # int32[B], the move to play
    policy: jax.Array  # float32[B, 514], the search policy (training target)
    value: jax.Array  # float32[B], the root value (mover's view, minus his banked margin)
    tree: Any  # mctx.Tree of the decision part, K columns wide, or None (the lookahead)


SearchFn = Callable[[Params, jax.Array, State], SearchOutput]


@struct.dataclass
class Games:
    """The games being played: states [G] (decision nodes) and episode numbers [G]."""

    states: State
    episode: jax.Array  # int32[G], games finished so far at each game index


@struct.dataclass
class Steps:
    """Decisions of self-play, leading axes [...] ([T, G] as played, [C] in the buffer)."""

    obs: jax.Array  # float32[..., 217], the decision state (mover's view)
    mask: jax.Array  # bool[..., 514], its legal actions
    policy: jax.Array  # float32[..., 514], the search policy
    value: jax.Array  # float32[...], the search's root value (mover's view, minus `banked`)
    mover: jax.Array  # int32[...], colour to move
    banked: jax.Array  # float32[...], the mover's banked margin (`model.banked`)
    after_obs: jax.Array  # float32[..., 217], the afterstate (view of the player to roll)
    after_player: jax.Array  # int32[...], colour to roll at the afterstate
    after_banked: jax.Array  # float32[...], that player's banked margin there
    after_valid: jax.Array  # bool[...], the afterstate is not terminal (has a value to learn)
    game: jax.Array  # int32[...], the game's index in the batch
    episode: jax.Array  # int32[...], that index's episode number


class Played(NamedTuple):
    """What `selfplay.play` returns, [T, G] per decision."""

    steps: Steps
    done: jax.Array  # bool: the game ended with this decision (or the roll after it)
    utility: jax.Array  # float32[..., 2]: its final utility by colour (where done)
    won: jax.Array  # bool: ended with a winner (not truncated)
    length: jax.Array  # int32: decisions in the game (where done)


@struct.dataclass
class TrainState:
    """What an update changes, and what a checkpoint saves."""

    params: Params
    opt_state: optax.OptState
    step: jax.Array  # int32, optimiser updates so far
    key: jax.Array  # uint32[2], the run's RNG (a raw key, checkpointable)
