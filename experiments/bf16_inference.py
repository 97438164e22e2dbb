"""The network's evaluations in bfloat16 against float32, on the position benchmark's
decisions: a trained network's parameters (float32) evaluated in each type, playing its raw
policy and base.yaml's self-play search (`configs/base.yaml`'s `search`, without and with
self-play's noise, the same keys for both types). For each: how often bfloat16 plays the
move float32 plays, how far the values move, and the points lost per decision (as
`tools.rate`).

    python -m experiments.bf16_inference                      # champion:2, base.yaml's search
    python -m experiments.bf16_inference --network champion:1 --config configs/tpu.yaml

What it measures is the evaluation's precision alone, on one trained network; what
bfloat16 self-play does to training is a run's question. (A CPU emulates bfloat16.)

Supports docs/training.md, "Network evaluations in bfloat16".
"""
from __future__ import annotations

import argparse
import sys

import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import devices
from trictrac_jax.az import config as config_lib
from trictrac_jax.az import model as M
from trictrac_jax.az import search as S
from trictrac_jax.league import network_agents
from trictrac_jax.tools import positions, rate

DTYPES = ("float32", "bfloat16")  # the first is the reference


def decisions(params, config, search_config, states, dtype: str, seed: int) -> dict:
    """name -> (actions int32[D], values float32[D] in points) of `states` [D] evaluated in
    `dtype`: the raw policy, the search's best move, and its move with self-play's noise
    (keys from `seed`, the same for every dtype)."""
    model = M.model_from_config(config.replace(
        network=config.network.replace(inference_dtype=dtype)))

    @jax.jit
    def run(key, states):
        out = M.evaluate(model, params, states)
        best = S.search(params, key, states, model=model, config=search_config, explore=False)
        noisy = S.search(params, key, states, model=model, config=search_config, explore=True)
        return {"raw policy": (jnp.argmax(out.logits, -1).astype(jnp.int32), out.value),
                "search": (best.action, best.value),
                "search with self-play's noise": (noisy.action, noisy.value)}

    results = []
    for start in range(0, states.current_player.shape[0], rate.BATCH):
        batch = jax.tree.map(lambda x: x[start:start + rate.BATCH], states)
        results.append(jax.device_get(run(jax.random.fold_in(jax.random.PRNGKey(seed), start),
                                          batch)))
    scale = model.margin_scale if model.value_target != "outcome" else 1.0
    return {name: (np.concatenate([r[name][0] for r in results]),
                   np.concatenate([r[name][1] for r in results]) * scale)
            for name in results[0]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--network", default="champion:2")
    p.add_argument("--config", default="configs/base.yaml",
                   help="the config whose `search` is played (default: base.yaml's)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    bench = positions.load(positions.PATH)
    states = positions.states(bench)
    params, config = network_agents.load_network(args.network)
    search_config = config_lib.load_config(args.config).search
    print(f"{args.network} on {len(bench)} benchmark decisions; the search: {args.config}'s "
          f"({search_config.algorithm}, {search_config.num_simulations} simulations, "
          f"{search_config.max_actions} columns)")
    reference = None
    for dtype in DTYPES:
        played = decisions(params, config, search_config, states, dtype, args.seed)
        lost = {name: rate.losses(bench, actions) for name, (actions, _) in played.items()}
        for name, (actions, values) in played.items():
            loss = rate.bootstrap_mean(lost[name])
            line = (f"- {dtype}, {name}: {loss.value:.3f} [{loss.low:.3f}, {loss.high:.3f}] "
                    f"points lost a decision")
            if reference is not None:
                ref_actions, ref_values, ref_lost = reference[name]
                same = rate.share(actions == ref_actions)
                gap = np.abs(values - ref_values)
                paired = rate.bootstrap_mean(lost[name] - ref_lost)
                line += (f"; {paired.value:+.3f} [{paired.low:+.3f}, {paired.high:+.3f}] "
                         f"against float32 decision by decision; the move float32 plays in "
                         f"{same.value:.1%} [{same.low:.1%}, {same.high:.1%}] of decisions; "
                         f"values {gap.mean():.3f} points apart on average (at most "
                         f"{gap.max():.3f})")
            print(line, flush=True)
        if reference is None:
            reference = {name: (*played[name], lost[name]) for name in played}
    return 0


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
