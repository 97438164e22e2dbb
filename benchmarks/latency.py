"""Latency of the public functions called on one state outside `jit`, as a markdown table.

    python -m benchmarks.latency
    python -m benchmarks.latency --web [--opponent SPEC] [--decisions N]

The first call of each compiles (or fills a cache); the table gives it, and the median of
the calls after it, which is what a person exploring positions one at a time waits for.
`--web` times the browser game's requests instead (tools/web.py), once its start-up has
compiled everything.
"""
from __future__ import annotations

import argparse
import collections
import functools
import importlib.util
import statistics
import time

import jax
import jax.numpy as jnp

import trictrac_jax as tt
from trictrac_jax import devices
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
    level weaker than the lookahead for the first champion:
    docs/journal/search-at-play-time.md) and the first
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


def web(opponent: str, decisions: int, seed: int = 0) -> None:
    """The browser game's requests through its ASGI app in this process (starlette's
    TestClient: HTTP without a network) over games (seeds `seed`, `seed` + 1, ...) until
    the player has taken `decisions` decisions: he plays his first legal move half-move by
    half-move and asks for a hint each time. `play` is the player's move, the bot's answer
    and the rolls after them."""
    from starlette.testclient import TestClient
    from trictrac_jax.tools import web as W
    from trictrac_jax.tools import web_game
    start = time.perf_counter()
    engine = web_game.Engine(opponent)
    engine.warm()
    print(f"start-up against {opponent} (compiling and warming): "
          f"{time.perf_counter() - start:.1f} s\n")
    app = W.create_app(web_game.Games(engine), **W.served(8000))
    client, times = TestClient(app, base_url="http://127.0.0.1:8000"), collections.defaultdict(list)

    def request(name, method, path, **kwargs):
        began = time.perf_counter()
        response = client.request(method, path, **kwargs)
        times[name].append(time.perf_counter() - began)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json()

    played, games = times["POST .../play (move, bot's answer)"], 0
    while len(played) < decisions:
        view = request("POST /api/games (new game)", "POST", "/api/games",
                       json={"seat": "white", "seed": seed + games})
        games += 1
        while not view["over"] and len(played) < decisions:
            view = _web_decision(request, view)
    print("| request | calls | median ms | max ms |\n|---|---|---|---|")
    for name, spent in times.items():
        print(f"| `{name}` | {len(spent)} | {1000 * statistics.median(spent):.1f} | "
              f"{1000 * max(spent):.1f} |")


def _web_decision(request, view: dict) -> dict:
    """One of the player's decisions, as `web` times them."""
    game = "/api/games/" + view["game"]
    request("GET .../ID (the view)", "GET", game)
    if view["hints"]:
        request("GET .../hint", "GET", game + "/hint")
    request("GET .../why (a refusal)", "GET", game + "/why?from=1&to=2")
    while view["complete"] is None and view["options"]:
        frm, targets = next(iter(view["options"].items()))
        view = request("POST .../move (a half-move)", "POST", game + "/move",
                       json={"version": view["version"], "from": int(frm), "to": targets[0]})
    action = view["complete"] if view["complete"] is not None else (
        view["pass"] if view["pass"] is not None else 1)
    return request("POST .../play (move, bot's answer)", "POST", game + "/play",
                   json={"version": view["version"], "action": action})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.latency",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--web", action="store_true", help="time the browser game's requests")
    parser.add_argument("--opponent", default="champion", help="--web: the bot (default: champion)")
    parser.add_argument("--decisions", type=int, default=40,
                        help="--web: the player's decisions to time (default: 40)")
    args = parser.parse_args(argv)
    if args.web:
        return web(args.opponent, args.decisions)
    print("| function | first call s | later calls ms (median) |\n|---|---|---|")
    for name, fn in cases().items():
        first = timed(fn)
        later = statistics.median(timed(fn) for _ in range(REPEATS))
        print(f"| `{name}` | {first:.2f} | {1000 * later:.2f} |", flush=True)


if __name__ == "__main__":
    devices.choose_platform()  # before JAX starts: see trictrac_jax/devices.py
    main()
