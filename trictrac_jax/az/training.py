"""The AlphaZero loop's device functions: the optimiser, the loss, a self-play step and a
training step, pure functions of a run's `Config` (static: jit them with
`static_argnums=0`, as `run.py` does), data-parallel over all devices (`jax.sharding`).

Batches (games, replay buffer, minibatches) are split over a 1-D mesh axis `data`; the
parameters and optimiser state are replicated, so XLA all-reduces the gradients.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from trictrac_jax.az import checkpoint
from trictrac_jax.az import config as config_lib
from trictrac_jax.az import network
from trictrac_jax.az import replay as R
from trictrac_jax.az import selfplay
from trictrac_jax.az.base import Games, Model, Params, Steps, TrainState
from trictrac_jax.az.config import Config, TrainingConfig
from trictrac_jax.az.model import model_from_config


# Launchers whose processes jax.distributed finds by itself: the variable each sets to the
# number of processes it started (srun sets SLURM_STEP_NUM_TASKS for its step only, so a
# batch script's own process is not mistaken for one of several).
_LAUNCHERS = ("SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE")


def distributed_args(environ) -> dict | None:
    """The arguments of `jax.distributed.initialize` for the process `environ` describes:
    from JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID, or {} (jax detects
    the rest) under a launcher that started several processes (srun, Open MPI's mpirun);
    None for a single process. Raises ConfigError naming a missing or malformed variable."""
    address = environ.get("JAX_COORDINATOR_ADDRESS")
    if not address:
        return {} if any(environ.get(v, "").isdigit() and int(environ[v]) > 1
                         for v in _LAUNCHERS) else None
    values = {}
    for name in ("JAX_NUM_PROCESSES", "JAX_PROCESS_ID"):
        try:
            values[name] = int(environ[name])
        except (KeyError, ValueError):
            raise config_lib.ConfigError(
                f"{name}: an integer is required with JAX_COORDINATOR_ADDRESS, got "
                f"{environ.get(name)!r}") from None
    count, index = values["JAX_NUM_PROCESSES"], values["JAX_PROCESS_ID"]
    if not 0 <= index < count:
        raise config_lib.ConfigError(
            f"JAX_PROCESS_ID: must be in [0, JAX_NUM_PROCESSES = {count}), got {index}")
    return dict(coordinator_address=address, num_processes=count, process_id=index)


def maybe_init_distributed():
    """Join a multi-process run (`distributed_args`); call it before any JAX computation."""
    args = distributed_args(os.environ)
    if args is None or jax.distributed.is_initialized():
        return
    # CPU devices exchange gradients through gloo (no effect on GPU or TPU collectives)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(**args)


def make_mesh() -> Mesh:
    """All devices on one axis, `data`."""
    return Mesh(jax.devices(), ("data",))


def replicate(tree):
    """`tree` on every device, put there from the host: with several processes, a jax
    array of this process put on all processes' devices is broken (jax 0.10.2: orbax
    cannot save it); a numpy array is not. Keys and parameters are placed so, wherever
    they were made, so that each jitted function compiles once."""
    return jax.device_put(jax.device_get(tree), NamedSharding(make_mesh(), P()))


def shard_leading(tree, mesh: Mesh):
    """Constrain every array of `tree` to be split over `data` along its first axis (scalars
    are replicated)."""
    def constrain(x):
        spec = P("data") if x.ndim else P()
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))
    return jax.tree.map(constrain, tree)


def make_optimizer(tc: TrainingConfig) -> optax.GradientTransformation:
    """AdamW with warmup and a cosine (or constant) schedule over the run's updates, after
    clipping the gradients' global norm."""
    total_updates = tc.iterations * tc.updates_per_iteration
    warmup = min(tc.warmup_updates, max(total_updates - 1, 0))
    if tc.schedule == "cosine":
        lr = optax.warmup_cosine_decay_schedule(0.0, tc.learning_rate, warmup,
                                                max(total_updates, warmup + 1),
                                                end_value=0.1 * tc.learning_rate)
    else:
        lr = optax.join_schedules([optax.linear_schedule(0.0, tc.learning_rate, warmup),
                                   optax.constant_schedule(tc.learning_rate)], [warmup])
    clip = [optax.clip_by_global_norm(tc.max_grad_norm)] if tc.max_grad_norm > 0 else []
    return optax.chain(*clip, optax.adamw(lr, weight_decay=tc.weight_decay))


class Parts(NamedTuple):
    """What a run's config builds (`parts`): the model (the simulator, the network as
    self-play evaluates it, the value target), the network as it trains (float32) and its
    optimiser."""

    model: Model
    net: network.PolicyValueNet
    optimizer: optax.GradientTransformation


@functools.lru_cache(maxsize=16)
def parts(config: Config) -> Parts:
    """The `Parts` of `config`, built once per config (hashable) in the process."""
    return Parts(model_from_config(config), network.make_network(config.network),
                   make_optimizer(config.training))


def loss_fn(net: network.PolicyValueNet, value_weight: float, params: Params, steps: Steps, z,
            z_after):
    """Policy cross-entropy to the search policy + value_weight * value MSE, the value
    learned on decision states (target z) and on non-terminal afterstates (z_after).
    Shapes: steps [B], z [B], z_after [B]. Returns (loss, metrics)."""
    obs = jnp.concatenate([steps.obs, steps.after_obs])
    # one pass over both; the afterstates' logits are not used (their mask: all legal)
    mask = jnp.concatenate([steps.mask, jnp.ones_like(steps.mask)])
    logits, values = network.apply(net, params, obs, mask)
    batch = steps.mover.shape[0]
    logp = jax.nn.log_softmax(logits[:batch])
    policy_loss = -jnp.mean(jnp.sum(steps.policy * logp, -1))
    err = jnp.concatenate([values[:batch] - z, values[batch:] - z_after]) ** 2
    weight = jnp.concatenate([jnp.ones(batch), steps.after_valid.astype(jnp.float32)])
    value_loss = jnp.sum(weight * err) / jnp.sum(weight)
    entropy = -jnp.mean(jnp.sum(jnp.where(steps.policy > 0,
                                          steps.policy * jnp.log(steps.policy), 0.0), -1))
    loss = policy_loss + value_weight * value_loss
    return loss, {"loss": loss, "policy_loss": policy_loss, "value_loss": value_loss,
                  "policy_kl": policy_loss - entropy}


def device_config(config: Config) -> Config:
    """`config` with what the device functions do not read (the run's directory and seed,
    the evaluation, checkpoints, logging, the wall-clock budget) at its defaults: the static
    argument of the jitted functions, so that runs that differ only there share them."""
    return config.replace(run=config_lib.RunConfig(),
                          evaluation=config_lib.EvaluationConfig(),
                          checkpoint=config_lib.CheckpointConfig(),
                          logging=config_lib.LoggingConfig(),
                          training=config.training.replace(max_minutes=0.0))


# --- the training state ------------------------------------------------------------------

def new_state(config: Config, key) -> TrainState:
    """A fresh network and optimiser (on the default device; `init_state` replicates it)."""
    k_params, k_run = jax.random.split(key)
    built = parts(config)
    params = network.init_params(built.net, k_params)
    return TrainState(params=params, opt_state=built.optimizer.init(params), step=jnp.int32(0),
                      key=k_run)


def init_state(config: Config, key) -> TrainState:
    """A fresh training state, on every device."""
    return replicate(new_state(config, key))


def warm_state(config: Config, state: TrainState, params: Params) -> TrainState:
    """`state` with the network `params` and a fresh optimiser for them. `params` has the
    config's width and as many blocks or fewer: the extra ones start as the identity
    (`network.deepen`)."""
    fresh = jax.device_get(state.params)
    params = jax.tree.map(lambda new, old: jnp.asarray(new, old.dtype),
                          network.deepen(params, fresh), fresh)
    return replicate(state.replace(params=params,
                                   opt_state=parts(config).optimizer.init(params)))


def abstract_state(config: Config) -> TrainState:
    """Shapes, dtypes and shardings of a TrainState, to restore a checkpoint into."""
    shapes = jax.eval_shape(functools.partial(new_state, config), jax.random.PRNGKey(0))
    replicated = NamedSharding(make_mesh(), P())
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=replicated), shapes)


# --- one iteration: self-play, then updates ---------------------------------------------

def start_games(config: Config, key, mesh: Mesh | None = None) -> tuple[Games, R.Replay]:
    """Fresh games and an empty buffer, split over the devices of `mesh` (default: all,
    `make_mesh`)."""
    sp = config.selfplay
    games = selfplay.start(key, sp.batch_size)
    buffer = R.empty(config.replay.capacity, sp.batch_size)
    return shard_leading((games, buffer), mesh or make_mesh())


def selfplay_step(config: Config, params: Params, games: Games, buffer: R.Replay, key,
                  mesh: Mesh | None = None):
    """Play `selfplay.steps_per_iteration` decisions in every game with the run's search
    (exploring); store them. Returns (games, buffer, stats)."""
    games, played = selfplay.play(params, key, games, model=parts(config).model,
                                  search_config=config.search,
                                  steps=config.selfplay.steps_per_iteration)
    buffer = R.add(buffer, played.steps, played.done, played.utility)
    finished = jnp.sum(played.done)
    stats = {
        "games": finished,
        "decisions": jnp.int32(played.done.size),
        "mean_game_length": jnp.sum(jnp.where(played.done, played.length, 0))
        / jnp.maximum(finished, 1),
        "truncated": jnp.sum(played.done & ~played.won),
        "ready": jnp.sum(R.ready(buffer)),
    }
    games, buffer = shard_leading((games, buffer), mesh or make_mesh())
    return games, buffer, stats


def train_step(config: Config, state: TrainState, buffer: R.Replay, key,
               mesh: Mesh | None = None):
    """`training.updates_per_iteration` updates on minibatches sampled from the ready
    decisions. Returns (state, mean metrics)."""
    tc, (_, net, optimizer) = config.training, parts(config)
    mesh = mesh or make_mesh()
    steps, z, z_after = R.sample(buffer, key, (tc.updates_per_iteration, tc.batch_size),
                                 config.replay.bootstrap)
    grad_fn = jax.grad(functools.partial(loss_fn, net, tc.value_weight), has_aux=True)

    def update(state: TrainState, batch):
        batch = shard_leading(batch, mesh)
        grads, metrics = grad_fn(state.params, *batch)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        return state.replace(params=params, opt_state=opt_state, step=state.step + 1), metrics

    state, metrics = jax.lax.scan(update, state, (steps, z, z_after))
    return state, jax.tree.map(jnp.mean, metrics)


def saved_config(directory, step: int) -> Config:
    """The validated config of a checkpoint."""
    try:
        return config_lib.load_config(base=checkpoint.restore_config(directory, step))
    except config_lib.ConfigError as e:
        raise checkpoint.CheckpointError(f"{directory / str(step)}: its config is invalid ({e})") \
            from None


def _to_stderr(line: str):
    print(line, file=sys.stderr, flush=True)


def restore_state(directory, step: int, config: Config) -> TrainState:
    """A checkpoint's training state, replicated on every device."""
    return checkpoint.restore_state(directory, step, abstract_state(config))


def load_params(path, which: str = "best", log=_to_stderr):
    """(params, config) of a checkpoint: a run directory's `which` = best or latest intact
    checkpoint (logging each one it skips) or one checkpoint's directory. Logs which
    checkpoint it loaded."""
    def load(directory, step):
        config = saved_config(directory, step)
        return restore_state(directory, step, config).params, config
    return checkpoint.load_path(path, load, log, which)
