"""Trictrac-v1: Trictrac as a single-agent environment with gymnax 1.0's interface.

The learner plays one colour, drawn per episode (or fixed), and an opponent plays the other
inside `step`: whatever the opponent does between two of the learner's decisions (several
decisions in a row after Go, or after bearing off his last checker) is part of one step.

    import jax, trictrac_jax as tt
    env = tt.wrappers.SingleAgent(opponent=tt.agents.greedy_agent, observation="dict")
    params = env.default_params                    # EnvParams(max_steps_in_episode=500, ...)
    obs, state = jax.vmap(env.reset, (0, None))(keys, params)
    obs["observation"], obs["action_mask"]         # float32[B, 217], bool[B, 514]
    actions = jax.vmap(env.action_space(params).sample)(keys, obs["action_mask"])   # legal
    obs, state, reward, terminated, truncated, info = jax.vmap(
        env.step, (0, 0, 0, None))(keys, state, actions, params)

Nothing here imports gymnax; `trictrac_jax.gymnax_env` (which does) makes the same
environment of gymnax's own classes (`Environment`, `EnvParams`, `EnvState`, spaces) and
registers it: `gymnax.make("Trictrac-v1", **SingleAgent's keywords)`.

Conventions, as gymnax 1.0's `Environment`:
* `step` auto-resets: after a finished episode (`terminated | truncated`) the returned
  observation and state start the next one; `info["final_observation"]` is the learner's
  view of the finished one (`final_observation=False` leaves it out of `info`; gymnax's
  `FlattenObservationWrapper` reads it). `step_env` and `reset_env` are the transitions
  without the reset.
* The legal actions, where generic code looks for them: with `observation="dict"` every
  observation is `{"observation": float32[217], "action_mask": bool[514]}` (PettingZoo's and
  jumanji's `action_mask`) and the observation space a matching `Dict`;
  `action_space(params).sample(key, mask)` draws a uniform legal action (gymnasium's
  `Discrete.sample(mask=...)`), `sample(key)` any of the 514; `state.legal_action_mask` is
  pgx's, and `env.legal_action_mask(state)` reads it through gymnax wrappers' states too.
  It is all True once a game is over, as the engine's; an illegal action loses the game.
* Time: `EnvParams.max_steps_in_episode` counts the learner's steps (`state.time`), after
  which an episode is truncated; the engine's `max_steps` (`env`) bounds the decisions of
  both colours, and so the opponent's turns.
* Observations, rewards and legal actions are the learner's: `observe(game, seat)`, his
  rewards (`reward`: "outcome", +1 / -1 when the game is won or lost, the engine's; or
  "points", the score margin he gained over the step / `margin_scale`, as the AlphaZero
  stack's `selfplay.value_target: points`), and the mask of his decision.
* `info` (a few scalars but `final_observation`): "terminated", "truncated", "discount"
  (gymnax's: 0.0 at a terminal step, else 1.0), "outcome" (the learner's engine reward
  whatever `reward` says: +1 / -1 on the step that ends a game he won or lost, else 0), and
  gymnax's `LogWrapper` statistics: "returned_episode" marks the step that ended an episode,
  "returned_episode_returns" and "returned_episode_lengths" are those of the last finished
  one, "returned_episode_valid" once there is one.

Opponents are agents `(key, state) -> action` (`agents`, `network_agents.load_agent`), or an
`Opponent` whose action may depend on parameters passed in `EnvParams.opponent`: the
networks of a pool that changes during training, say, without compiling `step` again.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp

from trictrac_jax import agents, pytree
from trictrac_jax.env import Trictrac, new_game, observe
from trictrac_jax.state import NUM_ACTIONS, OBS_SIZE, State, score_lead

REWARDS = ("outcome", "points")
# float32[217], or {"observation": float32[217], "action_mask": bool[514]}
OBSERVATIONS = ("array", "dict")
DEFAULT_MAX_STEPS_IN_EPISODE = 500  # the learner's, half the engine's 1000 of both colours


class Discrete:
    """gymnax's `spaces.Discrete` without gymnax: the integers 0..n-1."""

    def __init__(self, n: int):
        self.n, self.shape, self.dtype = n, (), jnp.dtype(jnp.int32)

    def sample(self, key, mask=None):
        """int32: uniform in 0..n-1, or among the True entries of `mask` bool[n] (the legal
        actions) if given, as gymnasium's `Discrete.sample(mask=...)`."""
        if mask is None:
            return jax.random.randint(key, self.shape, 0, self.n, self.dtype)
        return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(self.dtype)

    def contains(self, x):
        """bool: whether `x` is in 0..n-1."""
        x = jnp.asarray(x)
        return (x >= 0) & (x < self.n)


class Box:
    """gymnax's `spaces.Box` without gymnax: arrays of `shape` between `low` and `high`."""

    def __init__(self, low, high, shape: tuple[int, ...], dtype=jnp.float32):
        self.low, self.high, self.shape, self.dtype = low, high, shape, dtype

    def sample(self, key):
        """A uniform array of `shape` in [low, high], cast to `dtype`."""
        return jax.random.uniform(key, self.shape, jnp.float32, self.low, self.high
                                  ).astype(self.dtype)

    def contains(self, x):
        """bool: whether every element of `x` is in [low, high]."""
        x = jnp.asarray(x)
        return jnp.all(x >= self.low) & jnp.all(x <= self.high)


class Dict:
    """gymnax's `spaces.Dict` without gymnax: a dict of spaces, whose elements are dicts
    (observations) or objects with those attributes (states)."""

    def __init__(self, spaces: dict):
        self.spaces, self.num_spaces = spaces, len(spaces)

    def sample(self, key) -> dict:
        """A dict of each space's sample."""
        keys = jax.random.split(key, self.num_spaces)
        return {name: space.sample(k) for (name, space), k in zip(self.spaces.items(), keys)}

    def contains(self, x):
        """bool: whether each entry of `x` is in its space."""
        def entry(name):
            return x[name] if isinstance(x, Mapping) else getattr(x, name)
        return functools.reduce(jnp.logical_and, [jnp.asarray(space.contains(entry(name)))
                                                  for name, space in self.spaces.items()])


# Observation features are in [0, 1] but for the holes (holes / 12), which the winning mark
# may take past 12; 24 holes would take one roll of more than 72 points.
OBS_HIGH = 2.0


@dataclasses.dataclass(frozen=True)
class Opponent:
    """Who plays the learner's opponent: `act(params, index, key, state) -> int32 action`,
    `params` being `EnvParams.opponent` and `index` this episode's opponent, drawn uniformly
    from 0..count-1 at reset; `state` is the engine's, the opponent to move."""

    act: Callable[[Any, jax.Array, jax.Array, State], jax.Array]
    count: int = 1


def agents_opponent(*players: Callable) -> Opponent:
    """The opponent playing one of `players`, agents `(key, state) -> action`, drawn per
    episode (all of them are computed under `vmap`, where `lax.switch` is a select)."""
    if not players:
        raise ValueError("agents_opponent: needs at least one agent")
    if len(players) == 1:
        return Opponent(lambda params, index, key, state: players[0](key, state))
    return Opponent(lambda params, index, key, state: jax.lax.switch(index, players, key, state),
                    len(players))


@pytree.dataclass
class EnvParams:
    """gymnax's per-call parameters: `max_steps_in_episode`, the learner's steps after which
    an episode is truncated, and `opponent`, the pytree handed to `Opponent.act`."""

    max_steps_in_episode: int = DEFAULT_MAX_STEPS_IN_EPISODE
    opponent: Any = None


@pytree.dataclass
class EnvState:
    """One episode: the engine's game, the learner to move unless it is over, and its
    statistics (as gymnax's `LogEnvState`)."""

    time: jax.Array  # int32, the learner's steps in this episode (gymnax's `EnvState.time`)
    game: State
    seat: jax.Array  # int32, the learner's colour this episode (0 White, 1 Black)
    opponent: jax.Array  # int32, this episode's opponent (`Opponent.count`)
    episode_return: jax.Array  # float32, the learner's rewards so far this episode
    returned_episode_return: jax.Array  # float32, of the last finished episode
    returned_episode_length: jax.Array  # int32, of the last finished episode
    returned_episode_valid: jax.Array  # bool, some episode has finished

    @property
    def legal_action_mask(self):
        """bool[514]: the learner's legal actions (all True once the game is over)."""
        return self.game.legal_action_mask


def _select(pred, a, b):
    return jax.tree.map(lambda x, y: jnp.where(pred, x, y), a, b)


class _Turns(NamedTuple):
    """The carry of `SingleAgent._play`'s loop."""

    game: State
    seat: jax.Array
    opponent: jax.Array
    first: jax.Array  # the learner's move is due
    ended: jax.Array  # the episode has ended and `game` is the new episode's
    final: State  # the game as it ended
    gained: jax.Array  # float32, the learner's outcome rewards in the episode
    key: jax.Array


class SingleAgent:
    """Trictrac against a fixed opponent, with gymnax 1.0's methods (module docstring).

    `opponent`: an agent `(key, state) -> action`, a sequence of agents (one drawn per
    episode) or an `Opponent`. `seat`: the learner's colour, 0 White or 1 Black; None draws
    it per episode. `reward`: "outcome" or "points" (module docstring). `env`: the engine,
    whose `max_steps` bounds every game and so the opponent's turns. `observation`: "array"
    (float32[217]) or "dict" (with the legal mask). `max_steps_in_episode`: the default
    parameters' (the learner's steps). `final_observation`: whether `info` holds it.
    """

    name = "Trictrac-v1"
    num_actions = NUM_ACTIONS
    # The classes it makes: `trictrac_jax.gymnax_env` swaps in gymnax's subclasses of them.
    params_type, state_type = EnvParams, EnvState
    discrete_space, box_space, dict_space = Discrete, Box, Dict

    def __init__(self, opponent: Opponent | Callable | Sequence[Callable] = agents.random_agent,
                 seat: int | None = None, reward: str = "outcome", margin_scale: float = 144.0,
                 env: Trictrac = Trictrac(), observation: str = "array",
                 max_steps_in_episode: int = DEFAULT_MAX_STEPS_IN_EPISODE,
                 final_observation: bool = True):
        if env.max_steps is None:
            raise ValueError("SingleAgent needs an env with max_steps, to bound the games")
        if seat not in (None, 0, 1):
            raise ValueError(f"seat: 0 (White), 1 (Black) or None (drawn), got {seat!r}")
        if reward not in REWARDS:
            raise ValueError(f"reward: one of {list(REWARDS)}, got {reward!r}")
        if not margin_scale > 0:
            raise ValueError(f"margin_scale: must be > 0, got {margin_scale!r}")
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation: one of {list(OBSERVATIONS)}, got {observation!r}")
        if not isinstance(max_steps_in_episode, int) or max_steps_in_episode < 1:
            raise ValueError(f"max_steps_in_episode: a positive int, got {max_steps_in_episode!r}")
        if not isinstance(opponent, Opponent):
            opponent = agents_opponent(*opponent) if isinstance(opponent, (list, tuple)) \
                else agents_opponent(opponent)
        self.opponent, self.seat, self.reward = opponent, seat, reward
        self.margin_scale, self.env, self.observation = margin_scale, env, observation
        self.max_steps_in_episode, self.final_observation = max_steps_in_episode, final_observation

    # --- gymnax's interface ---------------------------------------------------------------

    @property
    def default_params(self) -> EnvParams:
        return self.params_type(max_steps_in_episode=self.max_steps_in_episode)

    def action_space(self, params: EnvParams | None = None) -> Discrete:
        """The 514 actions; `sample(key, mask)` draws a legal one."""
        return self.discrete_space(NUM_ACTIONS)

    def observation_space(self, params: EnvParams | None = None) -> Box | Dict:
        """Box float32[217], or with `observation="dict"` a Dict of it ("observation") and
        of the legal mask ("action_mask", a bool Box[514])."""
        features = self.box_space(0.0, OBS_HIGH, (OBS_SIZE,), jnp.float32)
        if self.observation == "array":
            return features
        return self.dict_space({"observation": features,
                                "action_mask": self.box_space(0, 1, (NUM_ACTIONS,), jnp.bool_)})

    def state_space(self, params: EnvParams | None = None) -> Dict:
        """The episode's counters: `time`, `seat` and `opponent` (`game` is the engine's
        `State`)."""
        params = self.default_params if params is None else params
        return self.dict_space({"time": self.discrete_space(params.max_steps_in_episode + 1),
                                "seat": self.discrete_space(2),
                                "opponent": self.discrete_space(self.opponent.count)})

    @functools.partial(jax.jit, static_argnums=0)
    def reset(self, key, params: EnvParams | None = None) -> tuple[Any, EnvState]:
        """(observation, state) of a new episode, the learner to move."""
        return self.reset_env(key, self.default_params if params is None else params)

    @functools.partial(jax.jit, static_argnums=0)
    def step(self, key, state: EnvState, action, params: EnvParams | None = None):
        """(obs, state, reward, terminated, truncated, info) of the learner's `action` and
        the opponent's replies; a finished episode is replaced by a new one (auto-reset)."""
        params = self.default_params if params is None else params
        k_new, k_play = jax.random.split(key)
        new = self._new_episode(k_new, state)
        state, finished, reward, outcome = self._play(k_play, state, action, new, params)
        terminated = self.is_terminated(finished, params)
        truncated = self.is_truncated(finished, params)
        info = {"terminated": terminated, "truncated": truncated,
                "discount": self.discount(finished, params), "outcome": outcome,
                "returned_episode": terminated | truncated,
                "returned_episode_returns": state.returned_episode_return,
                "returned_episode_lengths": state.returned_episode_length,
                "returned_episode_valid": state.returned_episode_valid}
        if self.final_observation:
            info["final_observation"] = self.get_obs(finished)
        return self.get_obs(state), state, reward, terminated, truncated, info

    def reset_env(self, key, params: EnvParams) -> tuple[Any, EnvState]:
        """gymnax's reset hook: a new episode, played until the learner's first decision."""
        k_new, k_play = jax.random.split(key)
        zero = jnp.zeros((), jnp.float32)
        blank = self.state_type(
            time=jnp.int32(0), game=new_game(), seat=jnp.int32(0), opponent=jnp.int32(0),
            episode_return=zero, returned_episode_return=zero,
            returned_episode_length=jnp.int32(0), returned_episode_valid=jnp.bool_(False))
        state, _, _, _ = self._play(k_play, self._new_episode(k_new, blank), None, None, params)
        return self.get_obs(state), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        """gymnax's transition hook, without the reset: (obs, state, reward, terminated,
        info); `is_truncated(state, params)` tells a truncation."""
        state, _, reward, outcome = self._play(key, state, action, None, params)
        return (self.get_obs(state), state, reward, self.is_terminated(state, params),
                {"discount": self.discount(state, params), "outcome": outcome})

    def get_obs(self, state: EnvState, params: EnvParams | None = None, key=None):
        """The learner's observation of `state` (`observation` says which form)."""
        features = observe(state.game, state.seat)
        if self.observation == "array":
            return features
        return {"observation": features, "action_mask": state.game.legal_action_mask}

    def is_terminated(self, state: EnvState, params: EnvParams | None = None) -> jax.Array:
        """bool: the game is over, won or lost (an illegal action loses it)."""
        return state.game.terminated

    is_terminal = is_terminated  # gymnax < 1.0's name

    def is_truncated(self, state: EnvState, params: EnvParams) -> jax.Array:
        """bool: the episode stopped unfinished, at `max_steps_in_episode` learner steps or
        at the engine's `max_steps`."""
        return ~state.game.terminated & (state.game.truncated |
                                         (state.time >= params.max_steps_in_episode))

    def discount(self, state: EnvState, params: EnvParams | None = None) -> jax.Array:
        """float32: 0.0 once the game is over, else 1.0 (gymnax's)."""
        return jnp.where(state.game.terminated, 0.0, 1.0).astype(jnp.float32)

    def legal_action_mask(self, state) -> jax.Array:
        """bool[..., 514]: the legal actions of `state`, ours or a gymnax wrapper's state
        holding ours in `.env_state` (however deep)."""
        while not isinstance(state, EnvState):
            state = state.env_state
        return state.legal_action_mask

    # --- the transitions ------------------------------------------------------------------

    def _new_episode(self, key, last: EnvState) -> EnvState:
        """A new game with its seat and opponent drawn, keeping `last`'s returned episode
        statistics (the opponent has not played yet)."""
        k_game, k_seat, k_opponent = jax.random.split(key, 3)
        seat = jax.random.randint(k_seat, (), 0, 2) if self.seat is None else jnp.int32(self.seat)
        return last.replace(time=jnp.int32(0), game=self.env.init(k_game),
                            seat=seat.astype(jnp.int32),
                            opponent=jax.random.randint(k_opponent, (), 0, self.opponent.count),
                            episode_return=jnp.zeros((), jnp.float32))

    def _play(self, key, state: EnvState, action, new: EnvState | None, params: EnvParams):
        """(state, finished, reward, outcome): the learner's `action` (None: no move, the
        opening of a new episode), then the opponent's turns until the learner is to move or
        the game is over; `finished` is the state after them, `reward` the learner's and
        `outcome` his engine rewards (+1 / -1 if the game ended). With `new` (auto-reset),
        an episode that ends (its game over, or its learner's steps at
        `max_steps_in_episode`) is replaced by `new`, whose opponent then opens if he is
        White, and `state` is that new episode.

        One loop of one engine step and one opponent call per iteration: the learner's
        move is its first iteration, and the new episode's opening its last ones."""
        time_up = jnp.bool_(False) if action is None else (
            state.time + 1 >= params.max_steps_in_episode)

        def going(c: _Turns):
            return c.first | (~c.game.done & (c.game.current_player != c.seat))

        def turn(c: _Turns) -> _Turns:
            key, k_act, k_step = jax.random.split(c.key, 3)
            # the opponent sees the learner's turns as over: greedy does no work for them
            aside = c.game.replace(terminated=c.game.terminated | c.first)
            reply = self.opponent.act(params.opponent, c.opponent, k_act, aside)
            game = self.env.step(c.game, reply if action is None else
                                 jnp.where(c.first, action, reply), k_step)
            gained = c.gained + jnp.where(c.ended, 0.0, game.rewards[c.seat])
            c = c._replace(game=game, first=jnp.bool_(False), gained=gained, key=key)
            if new is None:
                return c
            over = (game.done | (time_up & (game.current_player == c.seat))) & ~c.ended
            return c._replace(game=_select(over, new.game, game),
                              seat=jnp.where(over, new.seat, c.seat),
                              opponent=jnp.where(over, new.opponent, c.opponent),
                              ended=c.ended | over, final=_select(over, game, c.final))

        c = jax.lax.while_loop(going, turn, _Turns(
            state.game, state.seat, state.opponent, jnp.bool_(action is not None),
            jnp.bool_(False), state.game, jnp.zeros((), jnp.float32), key))
        finished = _select(c.ended, c.final, c.game)
        if action is None:  # an opening: no step of the learner's
            return state.replace(game=c.game), state.replace(game=finished), c.gained, c.gained
        if self.reward == "outcome":
            reward = c.gained
        else:
            reward = (score_lead(finished, state.seat) - score_lead(state.game, state.seat)
                      ) / self.margin_scale
        ended = finished.done | time_up
        time, episode_return = state.time + 1, state.episode_return + reward
        finished = state.replace(
            time=time, game=finished, episode_return=episode_return,
            returned_episode_return=jnp.where(ended, episode_return,
                                              state.returned_episode_return),
            returned_episode_length=jnp.where(ended, time, state.returned_episode_length),
            returned_episode_valid=state.returned_episode_valid | ended)
        if new is None:
            return finished, finished, reward, c.gained
        started = finished.replace(time=jnp.where(c.ended, 0, time), game=c.game, seat=c.seat,
                                   opponent=c.opponent,
                                   episode_return=jnp.where(c.ended, 0.0, episode_return))
        return started, finished, reward, c.gained
