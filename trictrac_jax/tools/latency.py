"""Latency of the public functions called on one state outside `jit`, as a markdown table.

    python -m trictrac_jax.tools.latency

The first call of each compiles (or fills a cache); the table gives it, and the median of
the calls after it, which is what a person exploring positions one at a time waits for.
"""
from __future__ import annotations

import functools
import importlib.util
import statistics
import time

import jax
import jax.numpy as jnp

import trictrac_jax as tt
from trictrac_jax import agents, render

REPEATS = 5


def cases() -> dict:
    """name -> a call on one state."""
    env = tt.make("trictrac")
    setup = tt.Trictrac(max_steps=None)  # compiled apart: `env`'s first calls stay first
    key = jax.random.PRNGKey(0)
    state = setup.init(key)
    after = setup.step_deterministic(state, jnp.argmax(state.legal_action_mask))
    string_id, record = tt.to_string_id(state), tt.state_to_record(state)
    return {
        "env.init(key)": lambda: env.init(key),
        "env.step(state, action, key)": lambda: env.step(state, 2, key),
        "env.step_deterministic(state, action)": lambda: env.step_deterministic(state, 2),
        "env.chance_step(afterstate, outcome)": lambda: env.chance_step(after, 7),
        "env.restore(state)": lambda: env.restore(state),
        "env.observe(state, player_id)": lambda: env.observe(state, 1),
        "tt.from_string_id(id)": lambda: tt.from_string_id(string_id),
        "tt.to_string_id(state)": lambda: tt.to_string_id(state),
        "tt.state_from_record(record)": lambda: tt.state_from_record(record),
        "render.svg(state)": lambda: render.svg(state),
        "render.text(state)": lambda: render.text(state),
        "agents.random_agent(key, state)": lambda: agents.random_agent(key, state),
        "agents.first_agent(key, state)": lambda: agents.first_agent(key, state),
        "agents.greedy_agent(key, state)": lambda: agents.greedy_agent(key, state),
        **bots(setup, key),
    }


def bots(setup: tt.Trictrac, key) -> dict:
    """The newest champion as `python -m trictrac_jax.tools.play` runs it, its search (a
    level weaker than the lookahead for the first champion: docs/training.md) and the first
    champion (a smaller network), on a mid-game position (after 30 random moves); empty
    without the training extra."""
    if importlib.util.find_spec("mctx") is None:
        return {}
    from trictrac_jax.tools import play
    state = setup.init(key)
    for k in jax.random.split(key, 30):
        state = setup.step(state, agents.random_agent(k, state), k)
    levels = {"play: champion, lookahead 32 over the rolls": ("champion", True),
              "play: champion, lookahead 32, --no-rolls": ("champion", False),
              "play: --opponent champion@search:64": ("champion@search:64", None),
              "play: --opponent champion:1 (the first, 2 blocks)": ("champion:1", True)}
    return {name: functools.partial(jax.jit(play.load_opponent(spec, 32, rolls)), key, state)
            for name, (spec, rolls) in levels.items()}


def timed(fn) -> float:
    start = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - start


def main() -> None:
    print("| function | first call s | later calls ms (median) |\n|---|---|---|")
    for name, fn in cases().items():
        first = timed(fn)
        later = statistics.median(timed(fn) for _ in range(REPEATS))
        print(f"| `{name}` | {first:.2f} | {1000 * later:.2f} |", flush=True)


if __name__ == "__main__":
    main()
