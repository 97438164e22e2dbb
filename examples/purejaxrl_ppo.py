"""PPO on Trictrac-v1 the way PureJaxRL trains a gymnax environment: its recipe (the config's
keys and defaults, rollouts, GAE, epochs of shuffled minibatches, the whole of training in one
`jax.jit`), on `gymnax.make("Trictrac-v1", observation="dict")` against a random opponent.

    pip install -e ".[train,test]"          # flax, optax and gymnax
    python examples/purejaxrl_ppo.py --set TOTAL_TIMESTEPS=3e5

What differs from a CartPole run is the legal mask: the observation is
`{"observation": float32[217], "action_mask": bool[514]}` and the policy's logits of the
illegal actions are pushed to -1e9, so that the categorical never samples one (an illegal move
loses the game). PureJaxRL's own ppo.py trains on it with the few lines changed that
docs/api.md shows; this file is the same algorithm written out for this repository, with the
masked categorical's log-probability and entropy in plain jax (no distrax).
"""
from __future__ import annotations

import argparse
import ast
from typing import Any, NamedTuple

from trictrac_jax import devices

devices.choose_platform()  # before JAX starts, which importing gymnax does (devices.py)

import flax.linen as nn  # noqa: E402
import gymnax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from flax.linen.initializers import constant, orthogonal  # noqa: E402
from flax.training.train_state import TrainState  # noqa: E402
from gymnax.wrappers import LogWrapper  # noqa: E402

from trictrac_jax import gymnax_env  # noqa: E402

# PureJaxRL's keys and CartPole defaults but the environment's name.
CONFIG = {"LR": 2.5e-4, "NUM_ENVS": 4, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": 5e5,
          "UPDATE_EPOCHS": 4, "NUM_MINIBATCHES": 4, "GAMMA": 0.99, "GAE_LAMBDA": 0.95,
          "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5,
          "ACTIVATION": "tanh", "ENV_NAME": "Trictrac-v1", "ANNEAL_LR": True}
ILLEGAL = -1e9  # the logit of an illegal action: finite, so that the entropy stays finite


class ActorCritic(nn.Module):
    """Two MLPs of two 64-unit layers on the observation's features: the masked logits of
    the policy float32[..., 514] and the value float32[...]."""

    action_dim: int
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs):
        activation = nn.relu if self.activation == "relu" else nn.tanh

        def mlp(x, out: int, scale: float):
            for _ in range(2):
                x = activation(nn.Dense(64, kernel_init=orthogonal(np.sqrt(2)),
                                        bias_init=constant(0.0))(x))
            return nn.Dense(out, kernel_init=orthogonal(scale), bias_init=constant(0.0))(x)

        logits = mlp(obs["observation"], self.action_dim, 0.01)
        value = mlp(obs["observation"], 1, 1.0)
        return jnp.where(obs["action_mask"], logits, ILLEGAL), value[..., 0]


def log_prob(logits, action):
    """float32[...]: the log-probability of `action` int32[...] under `logits`."""
    return jnp.take_along_axis(jax.nn.log_softmax(logits), action[..., None], -1)[..., 0]


def entropy(logits):
    """float32[...]: the categorical's entropy (the masked actions' terms are 0)."""
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(log_probs) * log_probs, -1)


class Transition(NamedTuple):
    done: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    log_prob: jax.Array
    obs: Any
    info: Any


def make_env(config):
    """gymnax.make's Trictrac-v1 in gymnax's LogWrapper: the mask in the observation, no
    final observation in `info` (this PPO does not bootstrap truncated episodes)."""
    gymnax_env.register()
    env, env_params = gymnax.make(config["ENV_NAME"], observation="dict",
                                  final_observation=False)
    return LogWrapper(env), env_params


def make_train(config):
    """`train(key) -> {"runner_state", "metrics"}`, `metrics` the environments' `info` of
    every step [NUM_UPDATES, NUM_STEPS, NUM_ENVS]."""
    config = dict(config)
    batch = config["NUM_ENVS"] * config["NUM_STEPS"]
    config["NUM_UPDATES"] = int(config["TOTAL_TIMESTEPS"]) // batch
    env, env_params = make_env(config)

    def learning_rate(count):
        done = count // (config["NUM_MINIBATCHES"] * config["UPDATE_EPOCHS"])
        return config["LR"] * (1.0 - done / config["NUM_UPDATES"])

    def train(key):
        network = ActorCritic(env.action_space(env_params).n, config["ACTIVATION"])
        key, k_init, k_obs = jax.random.split(key, 3)
        params = network.init(k_init, env.observation_space(env_params).sample(k_obs))
        tx = optax.chain(optax.clip_by_global_norm(config["MAX_GRAD_NORM"]),
                         optax.adam(learning_rate if config["ANNEAL_LR"] else config["LR"],
                                    eps=1e-5))
        train_state = TrainState.create(apply_fn=network.apply, params=params, tx=tx)
        key, k_reset = jax.random.split(key)
        obs, env_state = jax.vmap(env.reset, (0, None))(
            jax.random.split(k_reset, config["NUM_ENVS"]), env_params)

        def env_step(runner, _):
            train_state, env_state, obs, key = runner
            key, k_act, k_step = jax.random.split(key, 3)
            logits, value = network.apply(train_state.params, obs)
            action = jax.random.categorical(k_act, logits)
            next_obs, env_state, reward, terminated, truncated, info = jax.vmap(
                env.step, (0, 0, 0, None))(jax.random.split(k_step, config["NUM_ENVS"]),
                                           env_state, action, env_params)
            transition = Transition(terminated | truncated, action, value, reward,
                                    log_prob(logits, action), obs, info)
            return (train_state, env_state, next_obs, key), transition

        def advantages_and_targets(batch: Transition, last_value):
            def back(carry, t: Transition):
                advantage, next_value = carry
                live = 1.0 - t.done
                delta = t.reward + config["GAMMA"] * next_value * live - t.value
                advantage = delta + config["GAMMA"] * config["GAE_LAMBDA"] * live * advantage
                return (advantage, t.value), advantage
            _, advantages = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), batch,
                                         reverse=True)
            return advantages, advantages + batch.value

        def loss_fn(params, batch: Transition, advantages, targets):
            logits, value = network.apply(params, batch.obs)
            clipped = batch.value + (value - batch.value).clip(-config["CLIP_EPS"],
                                                               config["CLIP_EPS"])
            value_loss = 0.5 * jnp.maximum(jnp.square(value - targets),
                                           jnp.square(clipped - targets)).mean()
            ratio = jnp.exp(log_prob(logits, batch.action) - batch.log_prob)
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
            actor_loss = -jnp.minimum(
                ratio * advantages,
                jnp.clip(ratio, 1.0 - config["CLIP_EPS"], 1.0 + config["CLIP_EPS"]) * advantages
            ).mean()
            spread = entropy(logits).mean()
            total = actor_loss + config["VF_COEF"] * value_loss - config["ENT_COEF"] * spread
            return total, (value_loss, actor_loss, spread)

        def update_epoch(state, _):
            train_state, batch, advantages, targets, key = state
            key, k_perm = jax.random.split(key)
            size = config["NUM_STEPS"] * config["NUM_ENVS"]
            order = jax.random.permutation(k_perm, size)
            minibatches = jax.tree.map(
                lambda x: x.reshape((size,) + x.shape[2:])[order].reshape(
                    (config["NUM_MINIBATCHES"], -1) + x.shape[2:]),
                (batch, advantages, targets))

            def minibatch_update(train_state, minibatch):
                losses, grads = jax.value_and_grad(loss_fn, has_aux=True)(
                    train_state.params, *minibatch)
                return train_state.apply_gradients(grads=grads), losses
            train_state, losses = jax.lax.scan(minibatch_update, train_state, minibatches)
            return (train_state, batch, advantages, targets, key), losses

        def update(runner, _):
            runner, batch = jax.lax.scan(env_step, runner, None, config["NUM_STEPS"])
            train_state, env_state, obs, key = runner
            _, last_value = network.apply(train_state.params, obs)
            advantages, targets = advantages_and_targets(batch, last_value)
            state, _ = jax.lax.scan(update_epoch,
                                    (train_state, batch, advantages, targets, key), None,
                                    config["UPDATE_EPOCHS"])
            return (state[0], env_state, obs, state[-1]), batch.info

        runner, metrics = jax.lax.scan(update, (train_state, env_state, obs, key), None,
                                       config["NUM_UPDATES"])
        return {"runner_state": runner, "metrics": metrics}

    return train


def win_rates(metrics, parts: int = 10) -> np.ndarray:
    """The learner's share of wins among the games finished in each tenth of the updates."""
    ended = np.array_split(np.asarray(metrics["returned_episode"]), parts)
    won = np.array_split(np.asarray(metrics["outcome"]) > 0, parts)
    return np.array([w.sum() / max(e.sum(), 1) for w, e in zip(won, ended)])


def parse_config(settings: list[str]) -> dict:
    """CONFIG with `KEY=VALUE` settings (Python literals) applied; an unknown key is named."""
    config = dict(CONFIG)
    for setting in settings:
        name, _, value = setting.partition("=")
        if name not in CONFIG:
            raise SystemExit(f"--set {setting}: unknown key {name!r}; keys: {sorted(CONFIG)}")
        config[name] = ast.literal_eval(value) if name != "ENV_NAME" else value
    return config


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a CONFIG entry, e.g. --set TOTAL_TIMESTEPS=3e5")
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args(argv)
    train = jax.jit(make_train(parse_config(args.set)))
    out = jax.block_until_ready(train(jax.random.PRNGKey(args.seed)))
    rates = win_rates(out["metrics"])
    print("won against random, by tenth of the updates:", " ".join(f"{r:.2f}" for r in rates))
    return out


if __name__ == "__main__":
    main()
