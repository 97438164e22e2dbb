"""A run of either learner, set up with what only this layer loads (agents of any kind, a
network of any run): the evaluation's matches against `evaluation.opponents`, the network
`run.init_from` names, PPO's opponent (`env.opponent`). `train/az.py`, `train/ppo.py` and
`train/gpu_run.py` start their runs here; the loops are `az.run.az_loop` and `rl.loop.ppo_loop`.
"""
from __future__ import annotations

import functools

from trictrac_jax import wrappers
from trictrac_jax.az import checkpoint
from trictrac_jax.az import config as config_lib
from trictrac_jax.az import run
from trictrac_jax.az import training
from trictrac_jax.league import network_agents
from trictrac_jax.rl import ppo
from trictrac_jax.rl import loop


def evaluation_matches(config: config_lib.Config) -> dict:
    """A jitted match of the run's network against each opponent of `evaluation`, as it
    says the network plays (ConfigError for an opponent that does not load, e.g. a champion
    that is not shipped). For a PPO run, `config` is its `ppo.agent_config`."""
    ev = config.evaluation
    play = network_agents.Play(lookahead=ev.lookahead, rolls=ev.rolls,
                               simulations=ev.num_simulations)
    try:
        return {opp: network_agents.evaluator(config, opp, ev.games, play)
                for opp in ev.opponents}
    except ValueError as e:
        raise config_lib.ConfigError(f"evaluation.opponents: {e}") from None


def init_network(config: config_lib.Config) -> tuple | None:
    """(params, config) of the network `run.init_from` names, or None when it names none."""
    if not config.run.init_from:
        return None
    try:
        return network_agents.load_network(config.run.init_from)
    except (OSError, ValueError) as e:  # a network file that is missing or not one
        raise config_lib.ConfigError(f"run.init_from: {e}") from None


def train_az(config: config_lib.Config, resumed: run.Resumed | None = None, log=print,
             budget_s: float | None = None, on_iteration=None) -> dict:
    """The AlphaZero loop (`az.run.az_loop`, whose arguments these are) with its evaluation's
    matches and, for a new run, its `run.init_from` network."""
    training.maybe_init_distributed()  # before any JAX computation
    matches = evaluation_matches(config)
    return run.az_loop(config, resumed, log, budget_s, on_iteration, matches=matches,
                        init_network=init_network(config) if resumed is None else None)


@functools.lru_cache(maxsize=2)
def ppo_env(config: ppo.PPOConfig) -> wrappers.SingleAgent:
    """A PPO run's environment, with the opponent of `env.opponent`; one per config in the
    process, so that a resumed run reuses its compiled functions (the env is static)."""
    if config.env.opponent == ppo.SELF:
        return ppo.make_env(config)
    try:
        return ppo.make_env(config, network_agents.load_agent(config.env.opponent))
    except (OSError, ValueError, checkpoint.CheckpointError) as e:
        raise config_lib.ConfigError(f"env.opponent: {e}") from None


def train_ppo(config: ppo.PPOConfig, resumed: run.Resumed | None = None, log=print) -> dict:
    """PPO's loop (`rl.loop.ppo_loop`) in its environment, with its evaluation's matches."""
    return loop.ppo_loop(config, resumed, log, env=ppo_env(config),
                         matches=evaluation_matches(ppo.agent_config(config)))
