"""The cheaper forms of the lookahead over the rolls against the exact one, on the position
benchmark's decisions: the 21 distinct rolls instead of the 36 ordered ones, and the
network's evaluations in bfloat16. For each form: how often the network's choice changes,
by how much the worths move, and the points it loses per decision (as `tools.rate`).

    python -m experiments.distinct_rolls                     # champion:2, its 32 likeliest moves
    python -m experiments.distinct_rolls --network champion:1 --top-k 16

A roll and its mirror (2-1, 1-2) lead to the same position; only the network's view of
the dice order differs, so the 21 distinct rolls differ from the 36 by the network's
asymmetry alone. (bfloat16 runs emulated, slowly, on a CPU.)

Supports docs/training.md, "Choosing base.yaml" (the lookahead over the 21 distinct rolls).
"""
from __future__ import annotations

import argparse
import sys

import jax
import numpy as np

from trictrac_jax import devices
from trictrac_jax.az import model as M
from trictrac_jax.league import network_agents
from trictrac_jax.az import search as S
from trictrac_jax.tools import positions, rate
from trictrac_jax.ranking import candidate_worths

# name -> (distinct rolls, the network's inference dtype); the first is the exact lookahead
FORMS = {"36 ordered rolls": (False, "float32"),
         "21 distinct rolls": (True, "float32"),
         "21 distinct rolls, bfloat16": (True, "bfloat16")}


def worths(params, config, top_k: int, states, distinct: bool, dtype: str
           ) -> tuple[np.ndarray, np.ndarray]:
    """(actions int32[D, K], worths float32[D, K] in points, -inf where not a candidate): the
    network's `top_k` likeliest moves in each decision of `states` [D] and their worths."""
    model = M.model_from_config(config.replace(
        network=config.network.replace(inference_dtype=dtype)))

    @jax.jit
    def run(states):
        actions, legal, _ = S.likeliest(model, params, states, top_k)
        return actions, candidate_worths(states, actions, legal, lambda s, a: M.rolled_worth(
            model, params, a, s, distinct))
    actions, worth = [], []
    for start in range(0, states.current_player.shape[0], rate.BATCH):
        a, w = run(jax.tree.map(lambda x: x[start:start + rate.BATCH], states))
        actions.append(np.asarray(a))
        worth.append(np.asarray(w) * model.margin_scale)
    return np.concatenate(actions), np.concatenate(worth)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--network", default="champion:2")
    p.add_argument("--top-k", type=int, default=32)
    args = p.parse_args(argv)
    bench = positions.load(positions.PATH)
    states = positions.states(bench)
    print(f"{args.network}, its {args.top_k} likeliest moves over the rolls, {len(bench)} "
          f"benchmark decisions:")
    params, config = network_agents.load_network(args.network)
    exact = None
    for name, (distinct, dtype) in FORMS.items():
        actions, worth = worths(params, config, args.top_k, states, distinct, dtype)
        chosen = np.take_along_axis(actions, np.argmax(worth, -1)[:, None], -1)[:, 0]
        loss = rate.bootstrap_mean(rate.losses(bench, chosen))
        line = (f"- {name}: {loss.value:.3f} [{loss.low:.3f}, {loss.high:.3f}] points lost "
                f"a decision")
        if exact is None:
            exact = chosen, worth
        else:
            scored = np.isfinite(worth)
            gap = np.abs(worth[scored] - exact[1][scored])
            same = np.mean(chosen == exact[0])
            line += (f"; the same move as the 36 ordered rolls in {same:.1%} of decisions; "
                     f"worths {gap.mean():.3f} points apart on average (at most "
                     f"{gap.max():.3f}) over {int(scored.sum())} moves")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    sys.exit(main())
