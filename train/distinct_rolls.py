"""The lookahead over the 21 distinct rolls against the 36 ordered ones, on the position
benchmark's decisions: how often a network's choice changes, by how much the worths move,
and the points each loses per decision (`tools.rate`).

    python train/distinct_rolls.py                     # champion:2, its 32 likeliest moves
    python train/distinct_rolls.py --network champion:1 --top-k 16

A roll and its mirror (2-1, 1-2) lead to the same position; only the network's view of
the dice order differs, so the two lookaheads differ by the network's asymmetry alone.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from trictrac_jax.az import model as M  # noqa: E402
from trictrac_jax.az import players  # noqa: E402
from trictrac_jax.az import search as S  # noqa: E402
from trictrac_jax.tools import positions, rate  # noqa: E402
from trictrac_jax.worths import candidate_worths  # noqa: E402


def worths(network: str, top_k: int, states, distinct: bool) -> tuple[np.ndarray, np.ndarray]:
    """(actions int32[D, K], worths float32[D, K] in points, -inf where not a candidate): the
    network's `top_k` likeliest moves in each decision of `states` [D] and their worths."""
    params, config = players.load_network(network)
    model = M.model_from_config(config)

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
    ordered = worths(args.network, args.top_k, states, distinct=False)
    distinct = worths(args.network, args.top_k, states, distinct=True)
    chosen = [np.take_along_axis(a, np.argmax(w, -1)[:, None], -1)[:, 0]
              for a, w in (ordered, distinct)]
    scored = np.isfinite(ordered[1])
    gap = np.abs(ordered[1][scored] - distinct[1][scored])
    print(f"{args.network}, its {args.top_k} likeliest moves over the rolls, "
          f"{len(bench)} benchmark decisions ({int(scored.sum())} moves valued):")
    print(f"- same move chosen in {np.mean(chosen[0] == chosen[1]):.1%} of decisions")
    print(f"- |worth, 21 rolls - worth, 36 rolls|: mean {gap.mean():.4f}, "
          f"max {gap.max():.4f} points")
    for name, c in zip(("36 ordered rolls", "21 distinct rolls"), chosen):
        loss = rate.bootstrap_mean(rate.losses(bench, c))
        print(f"- {name}: {loss.value:.3f} [{loss.low:.3f}, {loss.high:.3f}] points lost "
              f"per decision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
