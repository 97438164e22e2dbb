"""Seconds per self-play decision of the search, by tree width (`search.max_actions`).

For each algorithm, simulation count and width: one jitted `search(params, key, states)` on
`--games` mid-game positions (random play) with the config's untrained network, and mctx's
bookkeeping alone (the same search with a model that returns zeros). The fastest of
`--repeats` calls after compilation.

    python train/search_width.py --config configs/quick.yaml --games 256
"""
from __future__ import annotations

import argparse
import time

import jax

from trictrac_jax.az import config as C
from trictrac_jax.az import network as N
from trictrac_jax.az import search as S
from trictrac_jax.agents import random_agent
from trictrac_jax.tools.bench_gpu import trivial_search


def positions(env, key, games: int, decisions: int):
    """Decision states [games] after `decisions` random moves from the openings."""
    def body(states, key):
        ka, ks = jax.random.split(key)
        action = jax.vmap(random_agent)(jax.random.split(ka, games), states)
        return jax.vmap(env.step)(states, action, jax.random.split(ks, games)), None
    start = jax.vmap(env.init)(jax.random.split(key, games))
    return jax.lax.scan(body, start, jax.random.split(key, decisions))[0]


def seconds(fn, *args, repeats: int):
    jax.block_until_ready(fn(*args))  # compiles
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="configs/quick.yaml")
    p.add_argument("--games", type=int, default=256)
    p.add_argument("--simulations", type=lambda s: [int(x) for x in s.split(",")],
                   default=[8, 32])
    p.add_argument("--widths", type=lambda s: [int(x) for x in s.split(",")],
                   default=[514, 256, 64])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    config = C.load_config(args.config)
    model = S.model_from_config(config)
    params = N.init_params(model.net, jax.random.PRNGKey(0))
    states = positions(model.env, jax.random.PRNGKey(1), args.games, 40)
    print(f"{args.games} games, {jax.devices()[0].platform}; seconds per decision")
    print("| search | simulations | K | search s | mctx alone s |\n|---|---|---|---|---|")
    for algorithm in ("stochastic", "gumbel"):
        for sims in args.simulations:
            for k in args.widths:
                search_config = {**config["search"], "algorithm": algorithm,
                                 "num_simulations": sims, "max_actions": k}
                search = jax.jit(S.make_search(model, search_config))
                full = seconds(search, params, jax.random.PRNGKey(2), states,
                               repeats=args.repeats)
                alone = seconds(jax.jit(trivial_search({**config, "search": search_config},
                                                       args.games)),
                                jax.random.PRNGKey(3), repeats=args.repeats)
                print(f"| {algorithm} | {sims} | {k} | {full:.3f} | {alone:.3f} |", flush=True)


if __name__ == "__main__":
    main()
