"""Trictrac as an OpenSpiel game, `python_trictrac`, for OpenSpiel's algorithms and tools.

    import pyspiel
    import trictrac_jax.tools.openspiel_game  # registers "python_trictrac"
    game = pyspiel.load_game("python_trictrac")          # or "python_trictrac(max_steps=300)"

Needs the optional extra: `pip install "trictrac-jax[openspiel]"`.

The game is the engine's, one state at a time: 514 distinct actions (the engine's action
indices: 1 Go, 2..513 moves) and an explicit chance node for every roll with 36 equally
likely outcomes, outcome k being the ordered dice (k // 6 + 1, k % 6 + 1). Decision nodes
belong to the player to move, who may move twice in a row (after Go, or after bearing off his
last checker). Perfect information, zero-sum, +1/-1 at the end; a game still running after
`max_steps` decisions (default 1000) ends with 0 for both. Observation tensors are the
engine's 217-float observation from the given player's view; observation strings are the
text board. Every transition runs the engine's jitted functions, so it is exact to the
reference but slow by OpenSpiel standards (about a millisecond per action).
"""
from __future__ import annotations

import jax
import numpy as np

try:
    import pyspiel
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("trictrac_jax.tools.openspiel_game needs OpenSpiel: "
                      "pip install 'trictrac-jax[openspiel]' (or pip install open-spiel)") from error

from open_spiel.python.observation import IIGObserverForPublicInfoGame

from trictrac_jax import render
from trictrac_jax.tools import notation
from trictrac_jax.env import CHANCE_DICE, NUM_CHANCE_OUTCOMES, new_game, observe
from trictrac_jax.state import NUM_ACTIONS, OBS_SIZE

DEFAULT_MAX_STEPS = 1000

_GAME_TYPE = pyspiel.GameType(
    short_name="python_trictrac",
    long_name="Python Trictrac (trictrac-jax)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification={"max_steps": DEFAULT_MAX_STEPS})

_observe = jax.jit(observe)


def _game_info(max_steps: int) -> pyspiel.GameInfo:
    return pyspiel.GameInfo(
        num_distinct_actions=NUM_ACTIONS, max_chance_outcomes=NUM_CHANCE_OUTCOMES,
        num_players=2, min_utility=-1.0, max_utility=1.0, utility_sum=0.0,
        max_game_length=max_steps)  # decisions; each is followed by at most one roll


class TrictracGame(pyspiel.Game):
    """Trictrac as the reference engine plays it (see the module docstring)."""

    def __init__(self, params=None):
        params = dict(params or {})
        max_steps = int(params.get("max_steps", DEFAULT_MAX_STEPS))
        if max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps}")
        super().__init__(_GAME_TYPE, _game_info(max_steps), params)
        self.max_steps = max_steps

    def new_initial_state(self):
        """A new game before White's first roll (a chance node)."""
        return TrictracState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return TrictracObserver(params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


class TrictracState(pyspiel.State):
    """One game. The engine `State` is kept on the host (numpy) so that clones and pickles
    are cheap; transitions use the play loop's jitted kernels (compiled once per process)."""

    def __init__(self, game: TrictracGame):
        super().__init__(game)
        self._max_steps = game.max_steps
        self.state = jax.device_get(new_game())
        self._returns = np.zeros(2)

    def current_player(self):
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        if bool(self.state.is_chance):
            return pyspiel.PlayerId.CHANCE
        return int(self.state.current_player)

    def _legal_actions(self, player):
        return [int(a) for a in np.flatnonzero(self.state.legal_action_mask)]

    def chance_outcomes(self):
        p = 1.0 / NUM_CHANCE_OUTCOMES
        return [(k, p) for k in range(NUM_CHANCE_OUTCOMES)]

    def _apply_action(self, action):
        if self.is_chance_node():
            nxt = notation.kernels().roll(self.state, action).state
        else:
            nxt = notation.kernels().decide(self.state, action)
        self.state = jax.device_get(nxt)
        self._returns += self.state.rewards

    def _action_to_string(self, player, action):
        if player == pyspiel.PlayerId.CHANCE:
            d0, d1 = (int(d) for d in CHANCE_DICE[action])
            return f"Roll {d0}-{d1}"
        if action == notation.GO:
            return "Go"
        pairs = np.asarray(notation.kernels().action_pairs(self.state))
        return notation.move_text(pairs[action])

    def is_terminal(self):
        truncated = int(self.state._step_count) >= self._max_steps
        return bool(self.state.terminated) or truncated

    def returns(self):
        return self._returns.tolist()

    def __str__(self):
        return render.text(self.state)


class TrictracObserver:
    """The engine's observation (217 floats) from `player`'s view, and the text board."""

    def __init__(self, params):
        if params:
            raise ValueError(f"Observation parameters not supported; passed {params}")
        self.tensor = np.zeros(OBS_SIZE, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: TrictracState, player: int):
        self.tensor[:] = np.asarray(_observe(state.state, player))

    def string_from(self, state: TrictracState, player: int):
        return render.text(state.state)


pyspiel.register_game(_GAME_TYPE, TrictracGame)
