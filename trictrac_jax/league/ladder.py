"""Ratings of agents from the results of a round robin: a Bradley-Terry fit on the Elo scale.

Pure NumPy on match counts (no engine, no training stack): `train/ladder.py` plays the
matches. A draw (a truncated game) counts half a win to each side. Each pair that played
also gets `prior_draws` virtual draws, as BayesElo's prior: without them a pair won every
time (a trained network against `random`) would push the maximum-likelihood rating gap to
infinity; with one virtual draw in 100 games it moves a rating by a few Elo.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

ELO = 400 / math.log(10)  # Elo points per unit of natural log-odds


class Pair(NamedTuple):
    """The games of agent `a` against agent `b` (indices into the agents' list)."""
    a: int
    b: int
    wins: int  # by a
    losses: int
    draws: int


class Ratings(NamedTuple):
    elo: np.ndarray  # float64[n], the anchor at 0
    lo: np.ndarray  # float64[n], 95% interval (relative to the anchor; 0 wide for it)
    hi: np.ndarray


def fit(n: int, pairs: list[Pair], anchor: int = 0, prior_draws: float = 1.0,
        z: float = 1.96) -> Ratings:
    """Bradley-Terry maximum a posteriori ratings of `n` agents from `pairs`: P(i beats j)
    = 1 / (1 + 10 ** ((elo_j - elo_i) / 400)), agent `anchor` at 0. The intervals are
    elo +- z standard errors from the inverse Fisher information (observed, at the fit).
    The agents must be connected through the pairs."""
    won = np.zeros((n, n))  # won[i, j]: i's score against j (draws half)
    for p in pairs:
        half = 0.5 * (p.draws + prior_draws)
        won[p.a, p.b] += p.wins + half
        won[p.b, p.a] += p.losses + half
    games = won + won.T
    free = np.arange(n) != anchor
    theta = np.zeros(n)
    for _ in range(100):  # Newton on the concave log-likelihood: a few steps suffice
        prob = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))  # [i, j]: i beats j
        grad = (won - games * prob).sum(1)
        info = _information(games, prob)
        step = np.linalg.solve(info[np.ix_(free, free)], grad[free])
        theta[free] += step
        if np.max(np.abs(step)) < 1e-10:
            break
    prob = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    se = np.zeros(n)
    se[free] = np.sqrt(np.diag(np.linalg.inv(_information(games, prob)[np.ix_(free, free)])))
    return Ratings(ELO * theta, ELO * (theta - z * se), ELO * (theta + z * se))


def _information(games, prob):
    """The Fisher information of the log-odds ratings (the negative Hessian), [n, n]."""
    w = games * prob * (1 - prob)
    return np.diag(w.sum(1)) - w


def table(names: list[str], ratings: Ratings, pairs: list[Pair]) -> str:
    """Markdown: the agents by rating, each with its interval, games and score (draws half)."""
    n = len(names)
    score, games = np.zeros(n), np.zeros(n, int)
    for p in pairs:
        total = p.wins + p.losses + p.draws
        games[[p.a, p.b]] += total
        score[p.a] += p.wins + 0.5 * p.draws
        score[p.b] += p.losses + 0.5 * p.draws
    lines = ["| rank | agent | Elo | 95% interval | games | score |",
             "|---:|---|---:|---|---:|---:|"]
    for rank, i in enumerate(np.argsort(-ratings.elo, kind="stable"), 1):
        lines.append(f"| {rank} | {names[i]} | {ratings.elo[i]:.0f} | "
                     f"[{ratings.lo[i]:.0f}, {ratings.hi[i]:.0f}] | {games[i]} | "
                     f"{score[i] / max(games[i], 1):.3f} |")
    return "\n".join(lines)
