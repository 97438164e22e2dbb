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
environment of gymnax's own classes (`Environment`, `EnvParams`, `EnvState`, spaces) and,
imported, registers it: `gymnax.make("Trictrac-v1", **SingleAgent's keywords)`.

Conventions, as gymnax 1.0's `Environment`:
* `step` auto-resets: after a finished episode (`terminated | truncated`) the returned
  observation and state start the next one; `info["final_observation"]` is the learner's
  observation of the finished one (`final_observation=False`: a float32 0.0 in its
  place, for code that keeps every step's `info`; gymnax's `FlattenObservationWrapper` and
  `GymnaxToDmEnvWrapper` read the key). `step_env` and `reset_env` are the transitions
  without the reset.
* The observation (`OBSERVATIONS`): the view alone ("array", the default), the view and the
  legal mask side by side in one Box ("flat", for code that takes one array, as gymnax's
  `FlattenObservationWrapper` and PureJaxRL), or both in a Dict ("dict": `{"observation",
  "action_mask"}`, PettingZoo's and jumanji's `action_mask`).
* The legal actions: `action_space(params).sample(key, mask)` draws a uniform legal action
  (gymnasium's `Discrete.sample(mask=...)`), `sample(key)` any of the 514;
  `state.legal_action_mask` is pgx's, and `env.legal_action_mask(state)` reads it through
  gymnax wrappers' states too. It is all True once a game is over, as the engine's.
* An illegal action (`ILLEGAL_ACTIONS`) loses the game, as in the engine ("lose"), or, for
  code that ignores the mask, is replaced by a legal action drawn uniformly from the step's
  key, at a penalty of `illegal_penalty` taken from the step's reward ("replace"): a policy
  that ignores the mask plays as `agents.random_agent` where it is illegal, so it starts at
  random's strength and learns from there. Either way `info` counts it.
* Time: `EnvParams.max_steps_in_episode` counts the learner's steps (`state.time`), after
  which an episode is truncated: about twice as many decisions of both colours. It is the
  one limit: the default engine has no `max_steps` (an engine given with one also
  truncates a game after that many decisions of both colours).
* Observations, rewards and legal actions are the learner's: `observe(game, seat)`, his
  rewards (`reward`: "outcome", +1 / -1 when the game is won or lost, the engine's; or
  "points", the score margin he gained over the step / `margin_scale`, as the AlphaZero
  stack's `selfplay.value_target: points`), and the mask of his decision.
* `info` (a few scalars but `final_observation`): "terminated", "truncated", "discount"
  (gymnax's: 0.0 at a terminal step, else 1.0), "outcome" (the learner's engine reward
  whatever `reward` says: +1 / -1 on the step that ends a game he won or lost, else 0), and
  "illegal_action" (the learner's action was illegal), and gymnax's `LogWrapper` statistics:
  "returned_episode" marks the step that ended an episode, "returned_episode_returns",
  "returned_episode_lengths" and "returned_episode_illegal_actions" are those of the last
  finished one, "returned_episode_valid" once there is one.

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

# The learner's rewards: the engine's +1 / -1 of a won or lost game, or the points margin
# gained over the step (module docstring).
REWARDS = ("outcome", "points")
# The learner's observation, by `observation`: his view of the game (`observe`, float32[217])
# and the legal mask of his decision (bool[514]).
OBSERVATIONS = {
    "array": "float32[217]: the view alone (a Box)",
    "flat": "float32[731]: the view, then the legal mask as 0.0 / 1.0 (one Box)",
    "dict": '{"observation": float32[217], "action_mask": bool[514]} (a Dict)',
}
FLAT_SIZE = OBS_SIZE + NUM_ACTIONS  # 731: the length of the "flat" observation
# What an illegal action of the learner does, by `illegal_action`.
ILLEGAL_ACTIONS = {
    "lose": "the engine's rule: he loses the game (-1)",
    "replace": "a uniformly drawn legal action is played instead, at `illegal_penalty`",
}
DEFAULT_ILLEGAL_PENALTY = 0.01  # a hundredth of a game: taken from that step's reward
DEFAULT_MAX_STEPS_IN_EPISODE = 500  # the learner's steps: about 1000 decisions of both colours


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

    act: Callable[[Any, jax.Array, jax.Array, State], jax.Array]  # (params, index, key, state)
    count: int = 1  # opponents to draw from per episode


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
    game: State  # the engine's game, of both colours
    seat: jax.Array  # int32, the learner's colour this episode (0 White, 1 Black)
    opponent: jax.Array  # int32, this episode's opponent (`Opponent.count`)
    episode_return: jax.Array  # float32, the learner's rewards so far this episode
    illegal_actions: jax.Array  # int32, the learner's illegal actions so far this episode
    returned_episode_return: jax.Array  # float32, of the last finished episode
    returned_episode_length: jax.Array  # int32, of the last finished episode
    returned_episode_illegal_actions: jax.Array  # int32, of the last finished episode
    returned_episode_valid: jax.Array  # bool, some episode has finished

    @property
    def legal_action_mask(self):
        """bool[514]: the learner's legal actions (all True once the game is over)."""
        return self.game.legal_action_mask


def _select(pred, a, b):
    return jax.tree.map(lambda x, y: jnp.where(pred, x, y), a, b)


def _is_legal(mask, action) -> jax.Array:
    """bool: `action` is in 0..513 and legal in `mask` bool[514]."""
    action = jnp.asarray(action, jnp.int32)
    return mask[jnp.clip(action, 0, NUM_ACTIONS - 1)] & (action >= 0) & (action < NUM_ACTIONS)


def _legal_or_random(key, game: State, action) -> jax.Array:
    """int32: `action` if it is legal in `game`, else a legal action drawn uniformly from
    `key` (`agents.random_agent`'s draw)."""
    return jnp.where(_is_legal(game.legal_action_mask, action), jnp.asarray(action, jnp.int32),
                     agents.random_agent(key, game))


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
    whose `max_steps`, if any, truncates a game after that many decisions of both colours
    (the default has none: `max_steps_in_episode` is the time limit). `observation`: one of
    `OBSERVATIONS`. `illegal_action`: one of `ILLEGAL_ACTIONS`, "replace" taking
    `illegal_penalty` from the step's reward. `max_steps_in_episode`: the default parameters'
    (the learner's steps). `final_observation`: whether `info["final_observation"]` is the
    finished episode's last observation (else a float32 0.0 in its place).
    """

    name = "Trictrac-v1"  # gymnax's `Environment.name`
    num_actions = NUM_ACTIONS  # 514, as the engine's
    # The classes it makes: `trictrac_jax.gymnax_env` swaps in gymnax's subclasses of them.
    params_type, state_type = EnvParams, EnvState
    discrete_space, box_space, dict_space = Discrete, Box, Dict

    def __init__(self, opponent: Opponent | Callable | Sequence[Callable] = agents.random_agent,
                 seat: int | None = None, reward: str = "outcome", margin_scale: float = 144.0,
                 env: Trictrac = Trictrac(max_steps=None), observation: str = "array",
                 illegal_action: str = "lose",
                 illegal_penalty: float = DEFAULT_ILLEGAL_PENALTY,
                 max_steps_in_episode: int = DEFAULT_MAX_STEPS_IN_EPISODE,
                 final_observation: bool = True):
        if seat not in (None, 0, 1):
            raise ValueError(f"seat: 0 (White), 1 (Black) or None (drawn), got {seat!r}")
        if reward not in REWARDS:
            raise ValueError(f"reward: one of {list(REWARDS)}, got {reward!r}")
        if not margin_scale > 0:
            raise ValueError(f"margin_scale: must be > 0, got {margin_scale!r}")
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation: one of {list(OBSERVATIONS)}, got {observation!r}")
        if illegal_action not in ILLEGAL_ACTIONS:
            raise ValueError(f"illegal_action: one of {list(ILLEGAL_ACTIONS)}, "
                             f"got {illegal_action!r}")
        if not illegal_penalty >= 0:
            raise ValueError(f"illegal_penalty: must be >= 0, got {illegal_penalty!r}")
        if not isinstance(max_steps_in_episode, int) or max_steps_in_episode < 1:
            raise ValueError(f"max_steps_in_episode: a positive int, got {max_steps_in_episode!r}")
        if not isinstance(opponent, Opponent):
            opponent = agents_opponent(*opponent) if isinstance(opponent, (list, tuple)) \
                else agents_opponent(opponent)
        self.opponent, self.seat, self.reward = opponent, seat, reward
        self.margin_scale, self.env, self.observation = margin_scale, env, observation
        self.illegal_action, self.illegal_penalty = illegal_action, illegal_penalty
        self.max_steps_in_episode, self.final_observation = max_steps_in_episode, final_observation

    # Environments of equal settings are equal (a static argument of `jit`): a copy, as
    # gymnax's Gym wrappers make, shares the compiled `step` of its original.
    def __eq__(self, other):
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self):
        return hash(tuple(sorted(vars(self).items())))

    # --- gymnax's interface ---------------------------------------------------------------

    @property
    def default_params(self) -> EnvParams:
        """The parameters that `reset` and `step` take when given none: `max_steps_in_episode`
        as built, no opponent parameters."""
        return self.params_type(max_steps_in_episode=self.max_steps_in_episode)

    def action_space(self, params: EnvParams | None = None) -> Discrete:
        """The 514 actions; `sample(key, mask)` draws a legal one."""
        return self.discrete_space(NUM_ACTIONS)

    def observation_space(self, params: EnvParams | None = None) -> Box | Dict:
        """`OBSERVATIONS`: a Box float32[217] ("array") or float32[731] ("flat"), or a Dict
        of the view ("observation") and of the legal mask ("action_mask", a bool Box[514])."""
        features = self.box_space(0.0, OBS_HIGH, (OBS_SIZE,), jnp.float32)
        if self.observation == "array":
            return features
        if self.observation == "flat":
            return self.box_space(0.0, OBS_HIGH, (FLAT_SIZE,), jnp.float32)
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
        """(observation, state) of a new episode, the learner to move: observation
        float32[217] or the dict of `observation`, state an `EnvState`; one episode per key
        (`jax.vmap` over keys[B])."""
        return self.reset_env(key, self.default_params if params is None else params)

    @functools.partial(jax.jit, static_argnums=0)
    def step(self, key, state: EnvState, action, params: EnvParams | None = None):
        """(obs, state, reward, terminated, truncated, info) of the learner's `action` (int32)
        and the opponent's replies: reward float32, terminated and truncated bool, `info` a
        dict of scalars (module docstring); a finished episode is replaced by a new one
        (auto-reset)."""
        params = self.default_params if params is None else params
        k_new, k_play = jax.random.split(key)
        new = self._new_episode(k_new, state)
        state, finished, reward, outcome, illegal = self._play(k_play, state, action, new,
                                                               params)
        terminated = self.is_terminated(finished, params)
        truncated = self.is_truncated(finished, params)
        info = {"terminated": terminated, "truncated": truncated,
                "discount": self.discount(finished, params), "outcome": outcome,
                "illegal_action": illegal,
                "returned_episode": terminated | truncated,
                "returned_episode_returns": state.returned_episode_return,
                "returned_episode_lengths": state.returned_episode_length,
                "returned_episode_illegal_actions": state.returned_episode_illegal_actions,
                "returned_episode_valid": state.returned_episode_valid,
                # gymnax's FlattenObservationWrapper and GymnaxToDmEnvWrapper read the key; a
                # scalar in its place, as code that reshapes `info` to minibatches takes it
                "final_observation": self.get_obs(finished) if self.final_observation
                else jnp.float32(0.0)}
        return self.get_obs(state), state, reward, terminated, truncated, info

    def reset_env(self, key, params: EnvParams) -> tuple[Any, EnvState]:
        """gymnax's reset hook: a new episode, played until the learner's first decision."""
        k_new, k_play = jax.random.split(key)
        zero, none = jnp.zeros((), jnp.float32), jnp.int32(0)
        blank = self.state_type(
            time=none, game=new_game(), seat=none, opponent=none, episode_return=zero,
            illegal_actions=none, returned_episode_return=zero, returned_episode_length=none,
            returned_episode_illegal_actions=none, returned_episode_valid=jnp.bool_(False))
        state, _, _, _, _ = self._play(k_play, self._new_episode(k_new, blank), None, None, params)
        return self.get_obs(state), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        """gymnax's transition hook, without the reset: (obs, state, reward, terminated,
        info); `is_truncated(state, params)` tells a truncation."""
        state, _, reward, outcome, illegal = self._play(key, state, action, None, params)
        return (self.get_obs(state), state, reward, self.is_terminated(state, params),
                {"discount": self.discount(state, params), "outcome": outcome,
                 "illegal_action": illegal})

    def get_obs(self, state: EnvState, params: EnvParams | None = None, key=None):
        """The learner's observation of `state`, in the form `observation` names (one of
        `OBSERVATIONS`: float32[217], float32[731], or {"observation": float32[217],
        "action_mask": bool[514]})."""
        features, mask = observe(state.game, state.seat), state.game.legal_action_mask
        if self.observation == "array":
            return features
        if self.observation == "flat":
            return jnp.concatenate([features, mask.astype(jnp.float32)], -1)
        return {"observation": features, "action_mask": mask}

    def is_terminated(self, state: EnvState, params: EnvParams | None = None) -> jax.Array:
        """bool: the game is over, won or lost (an illegal action loses it)."""
        return state.game.terminated

    is_terminal = is_terminated  # gymnax < 1.0's name

    def is_truncated(self, state: EnvState, params: EnvParams) -> jax.Array:
        """bool: the episode stopped unfinished, at `max_steps_in_episode` learner steps (or
        at the engine's `max_steps`, if it has one)."""
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
                            episode_return=jnp.zeros((), jnp.float32),
                            illegal_actions=jnp.int32(0))

    def _play(self, key, state: EnvState, action, new: EnvState | None, params: EnvParams):
        """(state, finished, reward, outcome, illegal): the learner's `action` (None: no
        move, the opening of a new episode; an illegal one replaced by a legal one drawn
        from `key` under `illegal_action="replace"`), then the opponent's turns until the
        learner is to move or the game is over; `finished` is the state after them,
        `reward` the learner's, `outcome` his engine rewards (+1 / -1 if the game ended)
        and `illegal` whether his action was illegal. With `new` (auto-reset), an episode
        that ends (its game over, or its learner's steps at `max_steps_in_episode`) is
        replaced by `new`, whose opponent then opens if he is White, and `state` is that
        new episode.

        One loop of one engine step and one opponent call per iteration: the learner's
        move is its first iteration, and the new episode's opening its last ones."""
        time_up = jnp.bool_(False) if action is None else (
            state.time + 1 >= params.max_steps_in_episode)
        illegal = jnp.bool_(False) if action is None else ~_is_legal(
            state.game.legal_action_mask, action)
        if action is not None and self.illegal_action == "replace":
            key, k_legal = jax.random.split(key)
            action = _legal_or_random(k_legal, state.game, action)

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
            return (state.replace(game=c.game), state.replace(game=finished), c.gained,
                    c.gained, illegal)
        if self.reward == "outcome":
            reward = c.gained
        else:
            reward = (score_lead(finished, state.seat) - score_lead(state.game, state.seat)
                      ) / self.margin_scale
        if self.illegal_action == "replace":
            reward = reward - jnp.where(illegal, jnp.float32(self.illegal_penalty), 0.0)
        ended = finished.done | time_up
        time, episode_return = state.time + 1, state.episode_return + reward
        illegal_actions = state.illegal_actions + illegal
        finished = state.replace(
            time=time, game=finished, episode_return=episode_return,
            illegal_actions=illegal_actions,
            returned_episode_return=jnp.where(ended, episode_return,
                                              state.returned_episode_return),
            returned_episode_length=jnp.where(ended, time, state.returned_episode_length),
            returned_episode_illegal_actions=jnp.where(
                ended, illegal_actions, state.returned_episode_illegal_actions),
            returned_episode_valid=state.returned_episode_valid | ended)
        if new is None:
            return finished, finished, reward, c.gained, illegal
        started = finished.replace(time=jnp.where(c.ended, 0, time), game=c.game, seat=c.seat,
                                   opponent=c.opponent,
                                   episode_return=jnp.where(c.ended, 0.0, episode_return),
                                   illegal_actions=jnp.where(c.ended, 0, illegal_actions))
        return started, finished, reward, c.gained, illegal
