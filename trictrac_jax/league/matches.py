"""Matches between agents, both seats played equally, and the Wilson confidence interval of
their win rates."""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from trictrac_jax.env import Trictrac


class MatchResult(NamedTuple):
    wins: int  # games won by agent A
    losses: int
    draws: int  # truncated games
    games: int

    @property
    def win_rate(self) -> float:
        return self.wins / self.games

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        return wilson(self.wins, self.games, z)

    def summary(self) -> str:
        lo, hi = self.interval()
        return (f"{self.win_rate:.3f} [{lo:.3f}, {hi:.3f}] ({self.wins}-{self.losses}"
                f"{f'-{self.draws}' if self.draws else ''} in {self.games} games)")


def wilson(wins: int, games: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95% for z = 1.96)."""
    if games == 0:
        return 0.0, 1.0
    p = wins / games
    denom = 1 + z * z / games
    centre = (p + z * z / (2 * games)) / denom
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def play_match(env: Trictrac, agent_a, agent_b, key, games: int):
    """Agent A against agent B, `games` games (even), A White in the first half and Black in
    the second. Agents are `(key, state) -> action` for one state. Returns int32[games]:
    +1 A won, -1 A lost, 0 truncated. Jit-compatible; `env.max_steps` bounds the games."""
    if env.max_steps is None:
        raise ValueError("play_match needs an env with max_steps, to bound the games")
    k_init, k_play = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(k_init, games))
    colour_a = (jnp.arange(games) >= games // 2).astype(jnp.int32)

    def running(carry):
        states, _, _ = carry
        return ~jnp.all(states.done)

    def turn(carry):
        states, result, key = carry
        key, ka, kb, ks = jax.random.split(key, 4)
        a_moves = states.current_player == colour_a
        # Each agent sees the games it does not move as finished: its action there is
        # dropped, and agents that skip finished games (greedy) do no work for them.
        aside = lambda skip: states.replace(terminated=states.terminated | skip)
        action_a = jax.vmap(agent_a)(jax.random.split(ka, games), aside(~a_moves))
        action_b = jax.vmap(agent_b)(jax.random.split(kb, games), aside(a_moves))
        action = jnp.where(a_moves, action_a, action_b)
        states = jax.vmap(env.step)(states, action, jax.random.split(ks, games))
        result += jnp.take_along_axis(states.rewards, colour_a[:, None], -1)[:, 0]
        return states, result, key

    result = jnp.zeros(games, jnp.float32)
    _, result, _ = jax.lax.while_loop(running, turn, (states, result, k_play))
    return jnp.sign(result).astype(jnp.int32)


def summarise(outcomes) -> MatchResult:
    outcomes = jax.device_get(outcomes)
    return MatchResult(wins=int((outcomes > 0).sum()), losses=int((outcomes < 0).sum()),
                       draws=int((outcomes == 0).sum()), games=int(outcomes.size))


class Match(NamedTuple):
    """A jitted match of a network against an opponent, `(params, key) -> MatchResult`
    (`play_match`, summarised on the host), its inputs put on the devices by `place` before
    each call."""

    program: Callable  # jax.jit of (params, key) -> int32[games] outcomes
    place: Callable  # (params, key) -> (params, key) on the devices

    def __call__(self, params, key) -> MatchResult:
        return summarise(self.program(*self.place((params, key))))

    def compile(self, params, key):
        """Compile the match for inputs shaped like these now: a call then only runs it."""
        self.program.lower(*self.place((params, key))).compile()
