"""PPO of the AlphaZero stack's policy-value network in the single-agent environment.

As PureJaxRL's ppo.py: one update (a rollout of `num_steps` steps in each of `num_envs`
environments, GAE, `update_epochs` epochs of `num_minibatches` minibatch updates of the
clipped surrogate) is a pure function, and `Trainer.run` scans `updates_per_call` of them
inside one `jax.jit`; `train/ppo.py` calls it in chunks and writes metrics, checkpoints
and evaluations between them.

The policy is a masked categorical over the 514 actions (`network.masked_logits`), the
network `network.PolicyValueNet`: a run's networks play wherever the AlphaZero stack's do
(`players.load_agent` on a run directory, a checkpoint or a snapshot file), under the
`agent_config` of the run, whose value target is the one PPO's value learns with discount 1
(reward "points": the score margin still to come / margin_scale; "outcome": +1 / -1).

The opponent (`env.opponent`) is a fixed agent (`players.load_agent` spec), or "self":
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
import pathlib
import typing
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax
import yaml
from flax import struct

from trictrac_jax import wrappers
from trictrac_jax.az import checkpoint as C
from trictrac_jax.az import config as config_lib
from trictrac_jax.az import network as N
from trictrac_jax.az import training
from trictrac_jax.env import Trictrac

ConfigError = config_lib.ConfigError
SELF = "self"  # env.opponent: the run's own past networks


# --- configuration ---------------------------------------------------------------------
# Frozen dataclasses read by attribute; `load_config` checks types and values and names a
# wrong key (the AlphaZero config's `merge` and `parse_override`).

def _key(default, check: Callable[[Any], str | None] | None = None):
    """A config field: its default and a check returning an error text or None."""
    return dataclasses.field(default=default, metadata={"check": check})


def _at_least(lo):
    return lambda v: None if v >= lo else f"must be >= {lo}, got {v!r}"


def _in_range(lo, hi):
    return lambda v: None if lo <= v <= hi else f"must be in [{lo}, {hi}], got {v!r}"


def _one_of(*choices):
    return lambda v: None if v in choices else f"must be one of {list(choices)}, got {v!r}"


def _positive_numbers(v):
    bad = [m for m in v if isinstance(m, bool) or not isinstance(m, (int, float)) or m <= 0]
    return f"must be positive numbers, got {bad}" if bad else None


def _names(v):
    bad = [o for o in v if not isinstance(o, str) or not o]
    return f"must be agent specs (strings), got {bad}" if bad else None


@dataclasses.dataclass(frozen=True)
class RunConfig:
    dir: str = "runs/ppo"
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    max_steps: int = _key(1000, _at_least(1))  # decisions before a game is truncated
    # "self" (the pool of the run's past networks) or a `players.load_agent` spec
    opponent: str = _key(SELF, lambda v: None if v else "must not be empty")
    # outcome: +1 / -1 when a game is won or lost; points: the score margin gained over each
    # step / margin_scale (`wrappers.SingleAgent`)
    reward: str = _key("points", _one_of(*wrappers.REWARDS))
    margin_scale: float = _key(144.0, _at_least(1e-6))


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    width: int = _key(128, _at_least(8))
    blocks: int = _key(2, _at_least(0))


@dataclasses.dataclass(frozen=True)
class PPOSettings:
    num_envs: int = _key(128, _at_least(1))  # environments stepped in parallel
    num_steps: int = _key(32, _at_least(1))  # steps of each per update
    update_epochs: int = _key(4, _at_least(1))
    num_minibatches: int = _key(4, _at_least(1))
    gamma: float = _key(1.0, _in_range(0.0, 1.0))
    gae_lambda: float = _key(0.95, _in_range(0.0, 1.0))
    clip_eps: float = _key(0.2, _at_least(0.0))
    ent_coef: float = _key(0.01, _at_least(0.0))
    vf_coef: float = _key(0.5, _at_least(0.0))


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    updates: int = _key(2000, _at_least(1))  # PPO updates in the run
    updates_per_call: int = _key(10, _at_least(1))  # scanned in one jitted call
    # the optimiser (`training.make_optimizer`), over all minibatch updates
    learning_rate: float = _key(3e-4, _at_least(0.0))
    warmup_updates: int = _key(0, _at_least(0))  # minibatch updates
    schedule: str = _key("constant", _one_of("cosine", "constant"))
    weight_decay: float = _key(0.0, _at_least(0.0))
    max_grad_norm: float = _key(0.5, _at_least(0.0))  # 0: no clipping
    max_minutes: float = _key(0.0, _at_least(0.0))  # wall-clock budget (0: none)


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    pool_size: int = _key(8, _at_least(1))  # past networks the opponent is drawn from
    pool_every: int = _key(10, _at_least(1))  # updates between two entries into the pool


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
    every: int = _key(50, _at_least(1))  # updates (at the end of a call)
    games: int = _key(200, _at_least(2))  # per opponent, half in each seat
    opponents: tuple = _key(("random",), _names)


@dataclasses.dataclass(frozen=True)
class CheckpointConfig:
    every: int = _key(50, _at_least(1))  # updates (at the end of a call)
    keep_last: int = _key(3, _at_least(1))
    # minutes since the start: the network then goes to RUN_DIR/snapshots/<M>min.msgpack
    snapshot_minutes: tuple = _key((), _positive_numbers)


@dataclasses.dataclass(frozen=True)
class LoggingConfig:
    tensorboard: bool = True


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    run: RunConfig = RunConfig()
    env: EnvConfig = EnvConfig()
    network: NetworkConfig = NetworkConfig()
    ppo: PPOSettings = PPOSettings()
    training: TrainingConfig = TrainingConfig()
    selfplay: SelfPlayConfig = SelfPlayConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    logging: LoggingConfig = LoggingConfig()

    def as_dict(self) -> dict:
        """Plain values (lists for tuples): what a checkpoint and config.yaml hold."""
        return _plain(dataclasses.asdict(self))


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def _build(cls, values: dict, where: str = ""):
    """An instance of the config dataclass `cls` from `values` (all its keys), each value
    checked against its field's type and check; ConfigError names the key."""
    hints = typing.get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        path, value, kind = f"{where}{f.name}", values[f.name], hints[f.name]
        if dataclasses.is_dataclass(kind):
            fields[f.name] = _build(kind, value, path + ".")
            continue
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kind is tuple and isinstance(value, list):
            value = tuple(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"{path}: expected {kind.__name__}, got {value!r}")
        check = f.metadata.get("check")
        if check is not None and (problem := check(value)) is not None:
            raise ConfigError(f"{path}: {problem}")
        fields[f.name] = value
    return cls(**fields)


def validate(values: dict) -> PPOConfig:
    """The PPOConfig of `values`, a nested dict of every key; checks the keys between
    them too. Raises ConfigError naming the key."""
    config = _build(PPOConfig, values)
    p, t = config.ppo, config.training
    if (p.num_envs * p.num_steps) % p.num_minibatches:
        raise ConfigError(f"ppo.num_minibatches: must divide ppo.num_envs * ppo.num_steps "
                          f"({p.num_envs * p.num_steps}), got {p.num_minibatches}")
    if t.updates % t.updates_per_call:
        raise ConfigError(f"training.updates: must be a multiple of "
                          f"training.updates_per_call ({t.updates_per_call}), got {t.updates}")
    for path, every in (("evaluation.every", config.evaluation.every),
                        ("checkpoint.every", config.checkpoint.every)):
        if every % t.updates_per_call:
            raise ConfigError(f"{path}: must be a multiple of training.updates_per_call "
                              f"({t.updates_per_call}), got {every}")
    if config.evaluation.games % 2:
        raise ConfigError(f"evaluation.games: must be even (both seats played equally), "
                          f"got {config.evaluation.games}")
    return config


def load_config(path=None, overrides=(), base: dict | None = None) -> PPOConfig:
    """The defaults (or `base`, a dict of every key), updated with the YAML file at `path`,
    then `overrides` ('key=value' strings); validated."""
    values = PPOConfig().as_dict() if base is None else base
    if path is not None:
        path = pathlib.Path(path)
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found")
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"{path}: not valid YAML ({e})") from None
        values = config_lib.merge(values, loaded)
    for text in overrides:
        values = config_lib.merge(values, config_lib.parse_override(text))
    return validate(values)


def agent_config(config: PPOConfig) -> dict:
    """The AlphaZero config under which the run's networks play (`players`, `eval.py`): its
    env and network, and the value target PPO's value learns (discount 1)."""
    target = "points" if config.env.reward == "points" else "outcome"
    return config_lib.validate(config_lib.merge(config_lib.defaults(), {
        "run": {"dir": config.run.dir, "seed": config.run.seed},
        "env": {"max_steps": config.env.max_steps},
        "network": {"width": config.network.width, "blocks": config.network.blocks},
        "selfplay": {"value_target": target, "margin_scale": config.env.margin_scale}}))


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

    train: training.TrainState  # params, opt_state, step (minibatch updates), key
    pool: Any  # self-play: past networks' params stacked [pool_size, ...]; else None
    pool_entries: jax.Array  # int32, networks entered into the pool (the next replaces
    # entry pool_entries % pool_size)
    updates: jax.Array  # int32, PPO updates done


@struct.dataclass
class Actors:
    """The environments being played, [N] (not checkpointed: a resume starts new games)."""

    state: wrappers.EnvState
    obs: jax.Array  # float32[N, 217]


def sample(key, logits):
    """(int32 action, float32 log-probability) from masked logits float32[..., 514]."""
    action = jax.random.categorical(key, logits)
    log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[..., None], -1)[..., 0]
    return action.astype(jnp.int32), log_prob


def network_opponent(net: N.PolicyValueNet) -> wrappers.Opponent:
    """The opponent sampling its moves from the policy of the network whose params are
    `EnvParams.opponent`."""
    def act(params, index, key, state):
        logits, _ = N.apply(net, params, state.observation, state.legal_action_mask)
        return sample(key, logits)[0]
    return wrappers.Opponent(act)


def rollout(env: wrappers.SingleAgent, net: N.PolicyValueNet, params, env_params,
            actors: Actors, key, steps: int):
    """(actors, Transition[steps, N], episode statistics): `steps` steps of every
    environment with actions sampled from the policy of `params`. `env` may be wrapped by
    gymnax's wrappers (`actors.state` then theirs): it only needs gymnax's `step`, the
    episode statistics and the outcome in `info` and `legal_action_mask(state)`."""
    games = actors.obs.shape[0]

    def one(actors: Actors, key):
        k_act, k_step = jax.random.split(key)
        mask = env.legal_action_mask(actors.state)
        logits, value = N.apply(net, params, actors.obs, mask)
        action, log_prob = sample(k_act, logits)
        obs, state, reward, terminated, truncated, info = jax.vmap(
            env.step, (0, 0, 0, None))(jax.random.split(k_step, games), actors.state, action,
                                       env_params)
        done = terminated | truncated
        stats = {"episodes": done.sum(), "wins": (info["outcome"] > 0).sum(),
                 "return_sum": jnp.where(done, info["returned_episode_returns"], 0.0).sum(),
                 "length_sum": jnp.where(done, info["returned_episode_lengths"], 0).sum(),
                 "truncated": truncated.sum()}
        return Actors(state, obs), (Transition(actors.obs, mask, action, log_prob, value,
                                               reward, done), stats)

    actors, (transitions, stats) = jax.lax.scan(one, actors, jax.random.split(key, steps))
    return actors, transitions, jax.tree.map(jnp.sum, stats)


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


def ppo_loss(net: N.PolicyValueNet, p: PPOSettings, params, batch: Transition, advantages,
             targets):
    """(loss, metrics) of a minibatch [B]: the clipped surrogate on normalised advantages,
    the clipped value loss and the entropy bonus (PureJaxRL's ppo.py)."""
    logits, value = N.apply(net, params, batch.obs, batch.mask)
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


def update_epoch(net: N.PolicyValueNet, optimizer: optax.GradientTransformation,
                 p: PPOSettings, train: training.TrainState, data, key):
    """(train, metrics [num_minibatches]): one epoch over `data` = (Transition, advantages,
    targets), all [B], shuffled and split into `num_minibatches` minibatch updates."""
    size = data[1].shape[0]
    order = jax.random.permutation(key, size)
    minibatches = jax.tree.map(
        lambda x: x[order].reshape((p.num_minibatches, size // p.num_minibatches) + x.shape[1:]),
        data)
    grad_fn = jax.grad(functools.partial(ppo_loss, net, p), has_aux=True)

    def step(train: training.TrainState, minibatch):
        grads, metrics = grad_fn(train.params, *minibatch)
        updates, opt_state = optimizer.update(grads, train.opt_state, train.params)
        return train.replace(params=optax.apply_updates(train.params, updates),
                             opt_state=opt_state, step=train.step + 1), metrics

    return jax.lax.scan(step, train, minibatches)


class Trainer:
    """The jitted functions of one run: `init_state`, `init_actors`, and `run`, which
    scans `updates_per_call` PPO updates. `opponent`: the fixed opponent's agent
    `(key, state) -> action`, None for self-play (`env.opponent` "self")."""

    def __init__(self, config: PPOConfig, opponent: Callable | None = None):
        if (opponent is None) != (config.env.opponent == SELF):
            raise ValueError("Trainer: an opponent agent, unless env.opponent is 'self'")
        self.config = config
        self.net = N.PolicyValueNet(width=config.network.width, blocks=config.network.blocks)
        self.self_play = opponent is None
        self.env = wrappers.SingleAgent(
            network_opponent(self.net) if self.self_play else opponent,
            reward=config.env.reward, margin_scale=config.env.margin_scale,
            env=Trictrac(max_steps=config.env.max_steps))
        self.optimizer = make_optimizer(config)
        self.run = jax.jit(self._run, donate_argnums=(0, 1))
        self.init_actors = jax.jit(self._init_actors)

    def init_state(self, key) -> PPOState:
        """A fresh network and optimiser, and the pool filled with that network."""
        return jax.jit(functools.partial(new_state, self.config, self.net, self.optimizer))(key)

    def _init_actors(self, key, state: PPOState) -> Actors:
        keys = jax.random.split(key, self.config.ppo.num_envs)
        obs, env_state = jax.vmap(self.env.reset, (0, None))(
            keys, self._env_params(state, jax.random.fold_in(key, 1)))
        return Actors(env_state, obs)

    def _env_params(self, state: PPOState, key) -> wrappers.EnvParams:
        """Self-play: the network of the pool the opponent plays (drawn with `key`)."""
        if not self.self_play:
            return wrappers.EnvParams()
        entry = jax.random.randint(key, (), 0, self.config.selfplay.pool_size)
        return wrappers.EnvParams(opponent=jax.tree.map(lambda x: x[entry], state.pool))

    def _run(self, state: PPOState, actors: Actors):
        """(state, actors, metrics): `updates_per_call` updates; metrics summed (episode
        counts) or averaged (losses) over them."""
        (state, actors), metrics = jax.lax.scan(
            lambda carry, _: self._update(*carry), (state, actors), None,
            length=self.config.training.updates_per_call)
        summed = ("episodes", "wins", "return_sum", "length_sum", "truncated")
        return state, actors, {k: v.sum() if k in summed else v.mean()
                               for k, v in metrics.items()}

    def _update(self, state: PPOState, actors: Actors):
        """One PPO update: a rollout, GAE, epochs of minibatch updates, the pool's turn."""
        p = self.config.ppo
        key, k_pool, k_roll, k_epochs = jax.random.split(state.train.key, 4)
        params = state.train.params
        actors, transitions, stats = rollout(self.env, self.net, params,
                                             self._env_params(state, k_pool), actors, k_roll,
                                             p.num_steps)
        _, last_value = N.apply(self.net, params, actors.obs,
                                self.env.legal_action_mask(actors.state))
        advantages, targets = gae(transitions, last_value, p.gamma, p.gae_lambda)
        flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]),
                            (transitions, advantages, targets))
        epoch = functools.partial(update_epoch, self.net, self.optimizer, p)
        train, metrics = jax.lax.scan(lambda t, k: epoch(t, flat, k), state.train,
                                      jax.random.split(k_epochs, p.update_epochs))
        state = state.replace(train=train.replace(key=key), updates=state.updates + 1)
        if self.self_play:
            state = enter_pool(state, self.config.selfplay.pool_every)
        return (state, actors), {**jax.tree.map(jnp.mean, metrics), **stats}


def enter_pool(state: PPOState, every: int) -> PPOState:
    """Every `every` updates, the current network replaces the pool's oldest entry."""
    due = state.updates % every == 0
    slot = state.pool_entries % jax.tree.leaves(state.pool)[0].shape[0]
    pool = jax.tree.map(lambda pool, p: pool.at[slot].set(jnp.where(due, p, pool[slot])),
                        state.pool, state.train.params)
    return state.replace(pool=pool, pool_entries=state.pool_entries + due)


def make_optimizer(config: PPOConfig) -> optax.GradientTransformation:
    """The AlphaZero stack's optimiser (`training.make_optimizer`) over the run's minibatch
    updates."""
    t, p = config.training, config.ppo
    settings = {k: getattr(t, k) for k in ("learning_rate", "warmup_updates", "schedule",
                                           "weight_decay", "max_grad_norm")}
    return training.make_optimizer(settings, t.updates * p.update_epochs * p.num_minibatches)


def new_state(config: PPOConfig, net: N.PolicyValueNet, optimizer, key) -> PPOState:
    """A fresh network and optimiser; the pool (self-play) filled with that network."""
    k_params, k_run = jax.random.split(key)
    params = N.init_params(net, k_params)
    size = config.selfplay.pool_size
    pool = jax.tree.map(lambda x: jnp.broadcast_to(x, (size,) + x.shape), params) \
        if config.env.opponent == SELF else None
    return PPOState(train=training.TrainState(params=params, opt_state=optimizer.init(params),
                                              step=jnp.int32(0), key=k_run),
                    pool=pool, pool_entries=jnp.int32(0), updates=jnp.int32(0))


def abstract_state(config: PPOConfig) -> PPOState:
    """Shapes and dtypes of a run's PPOState, to restore a checkpoint into."""
    net = N.PolicyValueNet(width=config.network.width, blocks=config.network.blocks)
    return jax.eval_shape(functools.partial(new_state, config, net, make_optimizer(config)),
                          jax.random.PRNGKey(0))


# --- checkpoints ---------------------------------------------------------------------------

def is_run(path) -> bool:
    """Whether `path` (a run directory or a checkpoint) holds PPO checkpoints: the config
    of its newest readable one has a `ppo` section."""
    try:
        directory, step = C.resolve(path)
        for s in [step] if step is not None else C.steps(directory):
            try:
                return "ppo" in C.restore_config(directory, s)
            except C.CheckpointError:
                continue
    except C.CheckpointError:
        pass
    return False


def saved_config(directory, step: int) -> PPOConfig:
    """The validated config of a checkpoint."""
    try:
        return validate(config_lib.merge(PPOConfig().as_dict(),
                                         C.restore_config(directory, step)))
    except ConfigError as e:
        raise C.CheckpointError(f"{directory / str(step)}: its config is invalid ({e})") \
            from None


def restore_state(directory, step: int, config: PPOConfig) -> PPOState:
    return C.restore_state(directory, step, abstract_state(config))


def load_params(path, which: str = "best", log=training._to_stderr):
    """(params, agent_config) of a PPO checkpoint: a run directory's `which` = best or
    latest intact checkpoint, or one checkpoint's directory (`training.load_params`)."""
    directory, step = C.resolve(path)

    def load(step):
        config = saved_config(directory, step)
        return restore_state(directory, step, config).train.params, config
    if step is not None:
        params, config = load(step)
        which = ""
    else:
        step, (params, config) = C.first_intact(directory, load, log, which)
    log(f"loaded {C.describe(directory, step, config.as_dict(), which)}")
    return params, agent_config(config)


__all__ = ["PPOConfig", "load_config", "validate", "agent_config", "Trainer", "PPOState",
           "Actors", "Transition", "rollout", "gae", "ppo_loss", "update_epoch",
           "network_opponent", "enter_pool", "is_run", "load_params"]
