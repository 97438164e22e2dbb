"""The policy-value network: a residual MLP over the 217-float observation (mover's view)."""
from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax.numpy as jnp

from trictrac_jax.state import NUM_ACTIONS, OBS_SIZE

# Logit given to illegal actions: finite, so that 0 * log_softmax stays 0 in the loss and a
# softmax over an all-illegal row (never happens at decision nodes) does not give NaN.
MASKED_LOGIT = -1e9


class ResidualBlock(nn.Module):
    """Pre-norm residual block: x + Dense(relu(LN(Dense(relu(LN(x))))))."""

    width: int
    dtype: Any = jnp.float32  # of the computation; the parameters stay float32

    @nn.compact
    def __call__(self, x):  # [..., width] -> [..., width]
        y = nn.Dense(self.width, dtype=self.dtype)(nn.relu(nn.LayerNorm(dtype=self.dtype)(x)))
        y = nn.Dense(self.width, dtype=self.dtype)(nn.relu(nn.LayerNorm(dtype=self.dtype)(y)))
        return x + y


class PolicyValueNet(nn.Module):
    """observation float32[..., 217] -> (logits float32[..., 514], value float32[...] in
    [-1, 1], the mover's expected utility), computed in `dtype` (the parameters float32)."""

    width: int = 256
    blocks: int = 4
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, obs):
        x = nn.Dense(self.width, dtype=self.dtype)(obs)
        for _ in range(self.blocks):
            x = ResidualBlock(self.width, self.dtype)(x)
        x = nn.relu(nn.LayerNorm(dtype=self.dtype)(x))
        logits = nn.Dense(NUM_ACTIONS, dtype=self.dtype)(x).astype(jnp.float32)
        value = jnp.tanh(nn.Dense(1, dtype=self.dtype)(x)[..., 0].astype(jnp.float32))
        return logits, value


def make_network(config, dtype=jnp.float32) -> PolicyValueNet:
    """The network of a `NetworkConfig` (config.network), computing in `dtype`."""
    return PolicyValueNet(width=config.width, blocks=config.blocks, dtype=dtype)


def init_params(net: PolicyValueNet, key):
    """Fresh parameters of `net`."""
    return net.init(key, jnp.zeros((1, OBS_SIZE), jnp.float32))["params"]


def deepen(params, fresh):
    """The parameters of a network with the blocks of `params` and more, computing what
    `params` computes: `fresh`, freshly initialised parameters of the deeper network, gives
    the shapes and the new blocks, whose last Dense starts at zero so that each block is the
    identity (x + 0) until trained. Same width only; the other layers keep their names."""
    extra = fresh.keys() - params.keys()
    if not all(name.startswith("ResidualBlock_") for name in extra):
        raise ValueError(f"deepen: only residual blocks can be added, not {sorted(extra)}")
    identity = lambda block: {**block, "Dense_1": {k: jnp.zeros_like(v)
                                                   for k, v in block["Dense_1"].items()}}
    return {name: params[name] if name in params else identity(fresh[name]) for name in fresh}


def masked_logits(logits, mask):
    """Illegal actions (mask False) get MASKED_LOGIT: [..., 514], bool[..., 514]."""
    return jnp.where(mask, logits, MASKED_LOGIT)


def apply(net: PolicyValueNet, params, obs, mask):
    """Masked logits [..., 514] and value [...] for observations [..., 217]."""
    logits, value = net.apply({"params": params}, obs)
    return masked_logits(logits, mask), value


def policy_action(net: PolicyValueNet, params, state):
    """Greedy action of one state (argmax over the masked logits): int32."""
    logits, _ = apply(net, params, state.observation, state.legal_action_mask)
    return jnp.argmax(logits).astype(jnp.int32)


__all__ = ["PolicyValueNet", "make_network", "init_params", "deepen", "masked_logits", "apply",
           "policy_action", "MASKED_LOGIT"]
