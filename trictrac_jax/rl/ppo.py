"""PPO of the AlphaZero stack's policy-value network in the single-agent environment.

As PureJaxRL's ppo.py: one update (a rollout of `num_steps` steps in each of `num_envs`
environments, GAE, `update_epochs` epochs of `num_minibatches` minibatch updates of the
clipped surrogate) is a pure function (`update`), and `updates` scans
`training.updates_per_call` of them; PPO's loop (`rl.loop.ppo_loop`) calls that inside one
`jax.jit` (the environment and the config static) and writes metrics, checkpoints and
evaluations between calls.

The policy is a masked categorical over the 514 actions (`network.masked_logits`), the
network `network.PolicyValueNet`: a run's networks play wherever the AlphaZero stack's do
(`network_agents.load_agent` on a run directory, a checkpoint or a snapshot file), under the
`agent_config` of the run, whose value target is the one PPO's value learns with discount 1
(reward "points": the score margin still to come / margin_scale; "outcome": +1 / -1).

The opponent (`env.opponent`) is a fixed agent (`network_agents.load_agent` spec), or "self":
the run's own past networks, a pool of `selfplay.pool_size` (all the initial network at
first; every `selfplay.pool_every` updates the current one replaces the oldest), one drawn
per update, sampling its moves from its policy: a game that spans two updates may meet two.
(Drawn per episode instead, every network of the pool would be evaluated for every game:
under `vmap` a per-game choice of parameters is a select over all of them, or a gather of
one copy per game.) The pool is part of the checkpoint.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from trictrac_jax import wrappers
from trictrac_jax.az import checkpoint
from trictrac_jax.az import config as config_lib
from trictrac_jax.az import network
from trictrac_jax.az import training
from trictrac_jax.az.base import TrainState
from trictrac_jax.az.config import ConfigError, Section, at_least, in_range, one_of, setting
from trictrac_jax.env import Trictrac

SELF = "self"  # env.opponent: the run's own past networks


# --- configuration: `Section`s, loaded by `config.load_config(..., schema=PPOConfig)` ------

@dataclasses.dataclass(frozen=True)
class PPORunConfig(Section):
    dir: str = setting("runs/ppo")
    seed: int = setting(0)


@dataclasses.dataclass(frozen=True)
class PPOEnvConfig(Section):
    max_steps: int = setting(1000, at_least(1))  # decisions before a game is truncated
    # "self" (the pool of the run's past networks) or a `network_agents.load_agent` spec
    opponent: str = setting(SELF, lambda v: None if v else "must not be empty")
    # outcome: +1 / -1 when a game is won or lost; points: the score margin gained over each
    # step / margin_scale (`wrappers.SingleAgent`)
    reward: str = setting("points", one_of(*wrappers.REWARDS))
    margin_scale: float = setting(144.0, at_least(1e-6))


@dataclasses.dataclass(frozen=True)
class PPOSettings(Section):
    num_envs: int = setting(128, at_least(1))  # environments stepped in parallel
    num_steps: int = setting(32, at_least(1))  # steps of each per update
    update_epochs: int = setting(4, at_least(1))
    num_minibatches: int = setting(4, at_least(1))
    gamma: float = setting(1.0, in_range(0.0, 1.0))
    gae_lambda: float = setting(0.95, in_range(0.0, 1.0))
    clip_eps: float = setting(0.2, at_least(0.0))
    ent_coef: float = setting(0.01, at_least(0.0))
    vf_coef: float = setting(0.5, at_least(0.0))


@dataclasses.dataclass(frozen=True)
class PPOTrainingConfig(Section):
    updates: int = setting(2000, at_least(1))  # PPO updates in the run
    updates_per_call: int = setting(10, at_least(1))  # scanned in one jitted call
    # the optimiser (`training.make_optimizer`), over all minibatch updates
    learning_rate: float = setting(3e-4, at_least(0.0))
    warmup_updates: int = setting(0, at_least(0))  # minibatch updates
    schedule: str = setting("constant", one_of("cosine", "constant"))
    weight_decay: float = setting(0.0, at_least(0.0))
    max_grad_norm: float = setting(0.5, at_least(0.0))  # 0: no clipping
    max_minutes: float = setting(0.0, at_least(0.0))  # wall-clock budget (0: none)


@dataclasses.dataclass(frozen=True)
class PPOSelfplayConfig(Section):
    pool_size: int = setting(8, at_least(1))  # past networks the opponent is drawn from
    pool_every: int = setting(10, at_least(1))  # updates between two entries into the pool


@dataclasses.dataclass(frozen=True)
class PPOConfig(Section):
    """A PPO run's whole configuration (configs/ppo.yaml). `evaluation`, `checkpoint`
    and `logging` are the AlphaZero run's sections, counted in PPO updates (at the end of
    a call)."""

    run: PPORunConfig = PPORunConfig()
    env: PPOEnvConfig = PPOEnvConfig()
    network: config_lib.NetworkConfig = config_lib.NetworkConfig(width=128, blocks=2)
    ppo: PPOSettings = PPOSettings()
    training: PPOTrainingConfig = PPOTrainingConfig()
    selfplay: PPOSelfplayConfig = PPOSelfplayConfig()
    evaluation: config_lib.EvaluationConfig = config_lib.EvaluationConfig(every=50, games=200)
    checkpoint: config_lib.CheckpointConfig = config_lib.CheckpointConfig(every=50)
    logging: config_lib.LoggingConfig = config_lib.LoggingConfig()

    def __post_init__(self):
        super().__post_init__()
        p, t = self.ppo, self.training
        if (p.num_envs * p.num_steps) % p.num_minibatches:
            raise ConfigError(f"ppo.num_minibatches: must divide ppo.num_envs * ppo.num_steps "
                              f"({p.num_envs * p.num_steps}), got {p.num_minibatches}")
        if t.updates % t.updates_per_call:
            raise ConfigError(f"training.updates: must be a multiple of "
                              f"training.updates_per_call ({t.updates_per_call}), "
                              f"got {t.updates}")
        for path, every in (("evaluation.every", self.evaluation.every),
                            ("checkpoint.every", self.checkpoint.every)):
            if every % t.updates_per_call:
                raise ConfigError(f"{path}: must be a multiple of training.updates_per_call "
                                  f"({t.updates_per_call}), got {every}")
        if self.evaluation.games % 2:
            raise ConfigError(f"evaluation.games: must be even (both seats played equally), "
                              f"got {self.evaluation.games}")


def load_config(path=None, overrides=(), base=None) -> PPOConfig:
    """`config.load_config` of a PPOConfig: defaults (or `base`), the YAML file at `path`,
    then `overrides` ('key=value'); a wrong key or value raises ConfigError naming it."""
    return config_lib.load_config(path, overrides, base, schema=PPOConfig)


def agent_config(config: PPOConfig) -> config_lib.Config:
    """The AlphaZero config under which the run's networks play (`network_agents`,
    `train/eval.py`): its env and network, the value target PPO's value learns (discount 1),
    its evaluation."""
    return config_lib.Config(
        run=config_lib.RunConfig(dir=config.run.dir, seed=config.run.seed),
        env=config_lib.EnvConfig(max_steps=config.env.max_steps), network=config.network,
        selfplay=config_lib.SelfplayConfig(
            value_target="points" if config.env.reward == "points" else "outcome",
            margin_scale=config.env.margin_scale),
        evaluation=config.evaluation)


# --- the algorithm ---------------------------------------------------------------------

class Transition(NamedTuple):
    """The learner's steps, [T, N] (or [B] once flattened)."""

    obs: jax.Array  # float32[..., 217]
    mask: jax.Array  # bool[..., 514]
    action: jax.Array  # int32
    log_prob: jax.Array  # float32, of the action when it was taken
    value: jax.Array  # float32, of the observation when it was taken
    reward: jax.Array  # float32
    done: jax.Array  # bool, the step ended the episode


@struct.dataclass
class PPOState:
    """What a checkpoint holds: the network and its optimiser, and the opponents' pool."""

    train: TrainState  # params, opt_state, step (minibatch updates), key
    pool: Any  # self-play: past networks' params stacked [pool_size, ...]; else None
    pool_entries: jax.Array  # int32, networks entered into the pool (the next replaces
    # entry pool_entries % pool_size)
    updates: jax.Array  # int32, PPO updates done


@struct.dataclass
class Envs:
    """The environments being played, [N] (not checkpointed: a resume starts new games)."""

    state: wrappers.EnvState
    obs: jax.Array  # float32[N, 217]


# Deprecated: `Envs`'s former name, kept for notebooks written against it (remove after the
# next release).
Actors = Envs


def sample(key, logits):
    """(int32 action, float32 log-probability) from masked logits float32[..., 514]."""
    action = jax.random.categorical(key, logits)
    log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[..., None], -1)[..., 0]
    return action.astype(jnp.int32), log_prob


def network_opponent(net: network.PolicyValueNet) -> wrappers.Opponent:
    """The opponent sampling its moves from the policy of the network whose params are
    `EnvParams.opponent`."""
    def act(params, index, key, state):
        logits, _ = network.apply(net, params, state.observation, state.legal_action_mask)
        return sample(key, logits)[0]
    return wrappers.Opponent(act)


def rollout_step(env: wrappers.SingleAgent, net: network.PolicyValueNet, params, env_params,
                 envs: Envs, key):
    """One step of every environment [N], its action sampled from the policy of `params`:
    (envs, (Transition [N], episode statistics))."""
    k_act, k_step = jax.random.split(key)
    mask = env.legal_action_mask(envs.state)
    logits, value = network.apply(net, params, envs.obs, mask)
    action, log_prob = sample(k_act, logits)
    obs, state, reward, terminated, truncated, info = jax.vmap(
        env.step, (0, 0, 0, None))(jax.random.split(k_step, envs.obs.shape[0]), envs.state,
                                   action, env_params)
    done = terminated | truncated
    stats = {"episodes": done.sum(), "wins": (info["outcome"] > 0).sum(),
             "return_sum": jnp.where(done, info["returned_episode_returns"], 0.0).sum(),
             "length_sum": jnp.where(done, info["returned_episode_lengths"], 0).sum(),
             "truncated": truncated.sum()}
    return Envs(state, obs), (Transition(envs.obs, mask, action, log_prob, value, reward, done),
                              stats)


def rollout(env: wrappers.SingleAgent, net: network.PolicyValueNet, params, env_params,
            envs: Envs, key, steps: int):
    """(envs, Transition[steps, N], episode statistics): `steps` steps of every
    environment (`rollout_step`, scanned). `env` may be wrapped by gymnax's wrappers
    (`envs.state` then theirs): it only needs gymnax's `step`, the episode statistics and
    the outcome in `info` and `legal_action_mask(state)`."""
    step = functools.partial(rollout_step, env, net, params, env_params)
    envs, (transitions, stats) = jax.lax.scan(step, envs, jax.random.split(key, steps))
    return envs, transitions, jax.tree.map(jnp.sum, stats)


def gae(transitions: Transition, last_value, gamma: float, lam: float):
    """(advantages, value targets), float32[T, N]: generalised advantage estimation over
    transitions [T, N], the value after the last one `last_value` [N]."""
    def back(carry, t: Transition):
        advantage, next_value = carry
        live = 1.0 - t.done.astype(jnp.float32)
        delta = t.reward + gamma * next_value * live - t.value
        advantage = delta + gamma * lam * live * advantage
        return (advantage, t.value), advantage

    _, advantages = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), transitions,
                                 reverse=True)
    return advantages, advantages + transitions.value


def ppo_loss(net: network.PolicyValueNet, p: PPOSettings, params, batch: Transition, advantages,
             targets):
    """(loss, metrics) of a minibatch [B]: the clipped surrogate on normalised advantages,
    the clipped value loss and the entropy bonus (PureJaxRL's ppo.py)."""
    logits, value = network.apply(net, params, batch.obs, batch.mask)
    log_probs = jax.nn.log_softmax(logits)
    log_prob = jnp.take_along_axis(log_probs, batch.action[:, None], -1)[:, 0]
    ratio = jnp.exp(log_prob - batch.log_prob)
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    policy_loss = -jnp.minimum(ratio * advantages,
                               jnp.clip(ratio, 1 - p.clip_eps, 1 + p.clip_eps) * advantages).mean()
    clipped = batch.value + jnp.clip(value - batch.value, -p.clip_eps, p.clip_eps)
    value_loss = 0.5 * jnp.maximum((value - targets) ** 2, (clipped - targets) ** 2).mean()
    entropy = -jnp.sum(jnp.where(batch.mask, jnp.exp(log_probs) * log_probs, 0.0), -1).mean()
    loss = policy_loss + p.vf_coef * value_loss - p.ent_coef * entropy
    return loss, {"loss": loss, "policy_loss": policy_loss, "value_loss": value_loss,
                  "entropy": entropy, "approx_kl": jnp.mean((ratio - 1) - jnp.log(ratio)),
                  "clip_fraction": jnp.mean(jnp.abs(ratio - 1) > p.clip_eps)}


def update_epoch(net: network.PolicyValueNet, optimizer: optax.GradientTransformation,
                 p: PPOSettings, train: TrainState, data, key):
    """(train, metrics [num_minibatches]): one epoch over `data` = (Transition, advantages,
    targets), all [B], shuffled and split into `num_minibatches` minibatch updates."""
    size = data[1].shape[0]
    order = jax.random.permutation(key, size)
    minibatches = jax.tree.map(
        lambda x: x[order].reshape((p.num_minibatches, size // p.num_minibatches) + x.shape[1:]),
        data)
    grad_fn = jax.grad(functools.partial(ppo_loss, net, p), has_aux=True)

    def step(train: TrainState, minibatch):
        grads, metrics = grad_fn(train.params, *minibatch)
        updates, opt_state = optimizer.update(grads, train.opt_state, train.params)
        return train.replace(params=optax.apply_updates(train.params, updates),
                             opt_state=opt_state, step=train.step + 1), metrics

    return jax.lax.scan(step, train, minibatches)


def make_env(config: PPOConfig, opponent: Callable | None = None) -> wrappers.SingleAgent:
    """The run's environment: against `opponent`, an agent `(key, state) -> action`, or
    for self-play (None, `env.opponent` "self") against the network in `EnvParams`."""
    if (opponent is None) != (config.env.opponent == SELF):
        raise ValueError("make_env: an opponent agent, unless env.opponent is 'self'")
    net = network.make_network(config.network)
    return wrappers.SingleAgent(network_opponent(net) if opponent is None else opponent,
                                reward=config.env.reward, margin_scale=config.env.margin_scale,
                                env=Trictrac(max_steps=config.env.max_steps))


def opponent_params(config: PPOConfig, state: PPOState, key) -> wrappers.EnvParams:
    """Self-play: the network of the pool the opponent plays, drawn with `key`."""
    if config.env.opponent != SELF:
        return wrappers.EnvParams()
    entry = jax.random.randint(key, (), 0, config.selfplay.pool_size)
    return wrappers.EnvParams(opponent=jax.tree.map(lambda x: x[entry], state.pool))


def start(env: wrappers.SingleAgent, config: PPOConfig, state: PPOState, key) -> Envs:
    """New episodes in the `ppo.num_envs` environments."""
    k_reset, k_pool = jax.random.split(key)
    obs, env_state = jax.vmap(env.reset, (0, None))(
        jax.random.split(k_reset, config.ppo.num_envs), opponent_params(config, state, k_pool))
    return Envs(env_state, obs)


def update(env: wrappers.SingleAgent, config: PPOConfig, state: PPOState, envs: Envs):
    """One PPO update: a rollout, GAE, epochs of minibatch updates, the pool's turn.
    Returns (state, envs, metrics)."""
    p, net = config.ppo, network.make_network(config.network)
    key, k_pool, k_roll, k_epochs = jax.random.split(state.train.key, 4)
    params = state.train.params
    envs, transitions, stats = rollout(env, net, params, opponent_params(config, state, k_pool),
                                       envs, k_roll, p.num_steps)
    _, last_value = network.apply(net, params, envs.obs, env.legal_action_mask(envs.state))
    advantages, targets = gae(transitions, last_value, p.gamma, p.gae_lambda)
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]),
                        (transitions, advantages, targets))
    epoch = functools.partial(update_epoch, net, make_optimizer(config), p)
    train, metrics = jax.lax.scan(lambda t, k: epoch(t, flat, k), state.train,
                                  jax.random.split(k_epochs, p.update_epochs))
    state = state.replace(train=train.replace(key=key), updates=state.updates + 1)
    if config.env.opponent == SELF:
        state = enter_pool(state, config.selfplay.pool_every)
    return state, envs, {**jax.tree.map(jnp.mean, metrics), **stats}


SUMMED = ("episodes", "wins", "return_sum", "length_sum", "truncated")  # over a call


def scanned_update(env: wrappers.SingleAgent, config: PPOConfig, carry, _):
    """`update` as a step of `jax.lax.scan`: ((state, envs), metrics)."""
    state, envs, metrics = update(env, config, *carry)
    return (state, envs), metrics


def updates(env: wrappers.SingleAgent, config: PPOConfig, state: PPOState, envs: Envs):
    """`training.updates_per_call` updates, scanned: (state, envs, metrics), the
    metrics summed (episode counts, `SUMMED`) or averaged (losses) over them. `env` and
    `config` are static under `jit`."""
    (state, envs), metrics = jax.lax.scan(functools.partial(scanned_update, env, config),
                                          (state, envs), None,
                                          length=config.training.updates_per_call)
    return state, envs, {k: v.sum() if k in SUMMED else v.mean() for k, v in metrics.items()}


def enter_pool(state: PPOState, every: int) -> PPOState:
    """Every `every` updates, the current network replaces the pool's oldest entry."""
    due = state.updates % every == 0
    entry = state.pool_entries % jax.tree.leaves(state.pool)[0].shape[0]
    pool = jax.tree.map(lambda pool, p: pool.at[entry].set(jnp.where(due, p, pool[entry])),
                        state.pool, state.train.params)
    return state.replace(pool=pool, pool_entries=state.pool_entries + due)


def make_optimizer(config: PPOConfig) -> optax.GradientTransformation:
    """The AlphaZero stack's optimiser (`training.make_optimizer`) over the run's minibatch
    updates."""
    t, p = config.training, config.ppo
    return training.make_optimizer(config_lib.TrainingConfig(
        iterations=t.updates, updates_per_iteration=p.update_epochs * p.num_minibatches,
        learning_rate=t.learning_rate, warmup_updates=t.warmup_updates, schedule=t.schedule,
        weight_decay=t.weight_decay, max_grad_norm=t.max_grad_norm))


def new_state(config: PPOConfig, key) -> PPOState:
    """A fresh network and optimiser; the pool (self-play) filled with that network."""
    k_params, k_run = jax.random.split(key)
    params = network.init_params(network.make_network(config.network), k_params)
    size = config.selfplay.pool_size
    pool = jax.tree.map(lambda x: jnp.broadcast_to(x, (size,) + x.shape), params) \
        if config.env.opponent == SELF else None
    return PPOState(train=TrainState(params=params, opt_state=make_optimizer(config).init(params),
                                     step=jnp.int32(0), key=k_run),
                    pool=pool, pool_entries=jnp.int32(0), updates=jnp.int32(0))


def abstract_state(config: PPOConfig) -> PPOState:
    """Shapes and dtypes of a run's PPOState, to restore a checkpoint into."""
    return jax.eval_shape(functools.partial(new_state, config), jax.random.PRNGKey(0))


# --- checkpoints ---------------------------------------------------------------------------

def is_run(path) -> bool:
    """Whether `path` (a run directory or a checkpoint) holds PPO checkpoints: the config
    of its newest readable one has a `ppo` section."""
    try:
        directory, step = checkpoint.resolve(path)
        for s in [step] if step is not None else checkpoint.steps(directory):
            try:
                return "ppo" in checkpoint.restore_config(directory, s)
            except checkpoint.CheckpointError:
                continue
    except checkpoint.CheckpointError:
        pass
    return False


def saved_config(directory, step: int) -> PPOConfig:
    """The validated config of a checkpoint."""
    try:
        return load_config(base=checkpoint.restore_config(directory, step))
    except ConfigError as e:
        raise checkpoint.CheckpointError(f"{directory / str(step)}: its config is invalid ({e})") \
            from None


def restore_state(directory, step: int, config: PPOConfig) -> PPOState:
    return checkpoint.restore_state(directory, step, abstract_state(config))


def load_params(path, which: str = "best", log=training._to_stderr):
    """(params, agent_config) of a PPO checkpoint: a run directory's `which` = best or
    latest intact checkpoint, or one checkpoint's directory (`training.load_params`)."""
    def load(directory, step):
        config = saved_config(directory, step)
        return restore_state(directory, step, config).train.params, config
    params, config = checkpoint.load_path(path, load, log, which)
    return params, agent_config(config)


__all__ = ["PPOConfig", "load_config", "agent_config", "make_env", "start", "update",
           "updates", "PPOState", "Envs", "Transition", "rollout", "gae", "ppo_loss",
           "update_epoch", "network_opponent", "enter_pool", "new_state", "is_run",
           "load_params"]
