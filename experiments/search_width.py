"""Seconds per self-play decision of the search, by tree width (`search.max_actions`).

For each algorithm, simulation count and width: one jitted `search(params, key, states)` on
`--games` mid-game positions (random play) with the config's untrained network, and mctx's
bookkeeping alone (the same search with a model that returns zeros). The fastest of
`--repeats` calls after compilation.

    python -m experiments.search_width --config configs/quick.yaml --games 256

`--agreement`: what a narrower tree changes in play instead: the shipped champion's search
(stochastic unless --algorithm, no noise, the same keys) at each width against the first
(widest), on the decisions with a choice of the champion's own games (its raw policy;
plies 0, 5, ..., 35 of `--games` / 8 games): how many have more legal actions than the
width, and how many moves differ.

    python -m experiments.search_width --agreement --widths 128,32,24,16 --simulations 64 \
        --games 512

Supports docs/journal/search-width.md (the trees' width, `search.max_actions`).
"""
from __future__ import annotations

import argparse
import functools
import time

import jax
import numpy as np

from trictrac_jax import devices
from trictrac_jax.az import config as config_lib
from trictrac_jax.league import network_agents
from trictrac_jax.az import network
from trictrac_jax.az import search as S
from trictrac_jax.az.model import model_from_config
from trictrac_jax.agents import random_agent
from trictrac_jax.env import has_choice
from benchmarks.bench_gpu import trivial_search


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


def champion_positions(key, games: int):
    """The champion's decisions with a choice, plies 0, 5, ..., 35 of `games` / 8 games played
    by its raw policy; and its model and params."""
    params, config = network_agents.load_network("champion")
    model = model_from_config(config)
    policy = network_agents.checkpoint_agent(params, config)
    n = games // 8

    def play(key):
        def body(states, key):
            ka, ks = jax.random.split(key)
            action = jax.vmap(policy)(jax.random.split(ka, n), states)
            return jax.vmap(model.env.step)(states, action, jax.random.split(ks, n)), states
        start = jax.vmap(model.env.init)(jax.random.split(key, n))
        return jax.lax.scan(body, start, jax.random.split(key, 40))[1]
    seen = jax.tree.map(lambda x: x[::5].reshape((-1,) + x.shape[2:]), jax.jit(play)(key))
    live = np.asarray(has_choice(seen))
    return jax.tree.map(lambda x: x[live], seen), model, params, config


def agreement(args):
    states, model, params, config = champion_positions(jax.random.PRNGKey(7), args.games)
    legal = np.asarray(states.legal_action_mask.sum(-1))
    print(f"{legal.size} decisions with a choice; {args.algorithm} search, champion network, "
          "no noise; moves compared with the first width")
    print("| simulations | K | decisions with more than K legal actions | moves that differ |\n"
          "|---|---|---|---|")
    for sims in args.simulations:
        moves = []
        for k in args.widths:
            search = functools.partial(
                S.search, model=model, explore=False, config=config.search.replace(
                    algorithm=args.algorithm, num_simulations=sims, max_actions=k))
            moves.append(np.asarray(jax.jit(search)(params, jax.random.PRNGKey(1), states).action))
            differ = int(np.sum(moves[-1] != moves[0]))
            print(f"| {sims} | {k} | {np.mean(legal > k):.1%} | {differ} ({differ / legal.size:.1%}) |",
                  flush=True)


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
    p.add_argument("--agreement", action="store_true",
                   help="moves changed by narrower trees (the champion's search), not seconds")
    p.add_argument("--algorithm", default="stochastic", choices=("stochastic", "gumbel"))
    args = p.parse_args(argv)
    if args.agreement:
        return agreement(args)
    config = config_lib.load_config(args.config)
    model = model_from_config(config)
    params = network.init_params(model.net, jax.random.PRNGKey(0))
    states = positions(model.env, jax.random.PRNGKey(1), args.games, 40)
    print(f"{args.games} games, {jax.devices()[0].platform}; seconds per decision")
    print("| search | simulations | K | search s | mctx alone s |\n|---|---|---|---|---|")
    for algorithm in ("stochastic", "gumbel"):
        for sims in args.simulations:
            for k in args.widths:
                search_config = config.search.replace(algorithm=algorithm,
                                                      num_simulations=sims, max_actions=k)
                search = jax.jit(functools.partial(S.search, model=model,
                                                   config=search_config))
                full = seconds(search, params, jax.random.PRNGKey(2), states,
                               repeats=args.repeats)
                alone = seconds(jax.jit(trivial_search(config.replace(search=search_config),
                                                       args.games)),
                                jax.random.PRNGKey(3), repeats=args.repeats)
                print(f"| {algorithm} | {sims} | {k} | {full:.3f} | {alone:.3f} |", flush=True)


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    main()
