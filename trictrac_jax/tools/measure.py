"""What every benchmark shares: the environments, the random self-play loop, and timing.

The rows of `bench` (CPU report) and `bench_gpu` (figures measured on a GPU) are made with
these, so that both time the same loop the same way.
"""
from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

import trictrac_jax as tt
from trictrac_jax.agents import random_agent
from trictrac_jax.arrays import select_tree
from trictrac_jax.az import config as C
from trictrac_jax.az import training as T

TRICTRAC, BACKGAMMON = "trictrac", "pgx backgammon"
LENGTH_CAP = 5000  # steps after which a game still running counts as this long
SEARCH_OVERRIDES = ("network.width=128", "network.blocks=2", "selfplay.steps_per_iteration=32")


def log(message):
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def make_env(name):
    """The environment called `name`, or None when it is pgx's and pgx is not installed."""
    if name == TRICTRAC:
        return tt.Trictrac()
    try:
        import pgx
    except ImportError:
        return None
    return pgx.make("backgammon")


def _random_step(env, states, key):
    """One batched random step: the uniform legal action, then `env.step` with its dice key."""
    batch = states.current_player.shape[0]
    k_act, k_step = jax.random.split(key)
    actions = jax.vmap(random_agent)(jax.random.split(k_act, batch), states)
    return jax.vmap(env.step)(states, actions, jax.random.split(k_step, batch))


def selfplay(env, steps):
    """(states, key) -> states after `steps` random steps, finished games re-initialised."""
    def body(states, key):
        k_step, k_init = jax.random.split(key)
        states = _random_step(env, states, k_step)
        fresh = jax.vmap(env.init)(jax.random.split(k_init, states.current_player.shape[0]))
        return select_tree(states.terminated | states.truncated, fresh, states), None

    def run(states, key):
        return jax.lax.scan(body, states, jax.random.split(key, steps))[0]
    return run


def game_lengths(env, games, key):
    """Steps of `games` random games played from the start to their end (capped)."""
    def cond(carry):
        _, lengths, t, _ = carry
        return jnp.any(lengths == 0) & (t < LENGTH_CAP)

    def body(carry):
        states, lengths, t, key = carry
        key, k_step = jax.random.split(key)
        states = _random_step(env, states, k_step)
        ended = (lengths == 0) & (states.terminated | states.truncated)
        return states, jnp.where(ended, t + 1, lengths), t + 1, key

    k_init, key = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(k_init, games))
    lengths = jax.lax.while_loop(cond, body, (states, jnp.zeros(games, jnp.int32), 0, key))[1]
    return jnp.where(lengths == 0, LENGTH_CAP, lengths)


def state_bytes(env):
    """Bytes of one game's state: the sum of its leaves' sizes."""
    shapes = jax.eval_shape(env.init, jax.random.PRNGKey(0))
    return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes))


def finished_games(env, batch):
    """Placeholder games marked terminated: the self-play loop's first step re-initialises
    them, which spares compiling `env.init` on its own."""
    shapes = jax.eval_shape(jax.vmap(env.init), jax.random.split(jax.random.PRNGKey(0), batch))
    zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
    return zeros.replace(terminated=jnp.ones(batch, bool))


def peak_memory_mib():
    """Peak memory of this process: the device's peak bytes in use where it reports them
    (GPU), else the peak resident set size (CPU, Linux).

    The resident peak is VmHWM, not getrusage's maxrss: Linux keeps maxrss across exec, so a
    spawned process would start from its parent's size.
    """
    stats = jax.local_devices()[0].memory_stats() or {}
    if "peak_bytes_in_use" in stats:
        return stats["peak_bytes_in_use"] / 2**20
    status = Path("/proc/self/status").read_text().splitlines()
    return int(next(x for x in status if x.startswith("VmHWM:")).split()[1]) / 1024  # kB


def measure_selfplay(name, batch, steps, min_seconds):
    """Compile and time the self-play loop in this process; a dict of the figures."""
    env = make_env(name)
    states, key = finished_games(env, batch), jax.random.PRNGKey(0)
    start = time.perf_counter()
    run = jax.jit(selfplay(env, steps)).lower(states, key).compile()
    compile_s = time.perf_counter() - start
    states = jax.block_until_ready(run(states, key))  # warm-up call (new games), not timed
    times = []
    while not times or sum(times) < min_seconds:
        key, k_run = jax.random.split(key)
        start = time.perf_counter()
        states = jax.block_until_ready(run(states, k_run))
        times.append(time.perf_counter() - start)
    return {"compile_s": compile_s, "steps_per_s": steps * batch / min(times),
            "peak_mib": peak_memory_mib(), "state_bytes": state_bytes(env)}


def measure_search(algorithm, simulations, games, min_seconds):
    """Moves/s of self-play with search (no updates) in `games` parallel games, the quick
    config's network (128 x 2, untrained); a dict of the figures."""
    config = C.load_config(None, [
        *SEARCH_OVERRIDES, f"selfplay.batch_size={games}", f"search.algorithm={algorithm}",
        f"search.num_simulations={simulations}",
        f"search.max_num_considered_actions={min(simulations, 16)}"])
    return {"algorithm": algorithm, "simulations": simulations, "games": games,
            **selfplay_rate(config, min_seconds)}


def selfplay_rate(config, min_seconds):
    """{compile_s, moves_per_s} of `training.selfplay_step` of `config` (untrained network):
    the fastest of at least 3 calls after compilation."""
    selfplay_step = jax.jit(T.selfplay_step, static_argnums=0, donate_argnums=(2, 3))
    params = T.init_state(config, jax.random.PRNGKey(0)).params
    actors, buffer = jax.jit(T.start_games, static_argnums=0)(config, jax.random.PRNGKey(1))
    start = time.perf_counter()
    actors, buffer, stats = jax.block_until_ready(selfplay_step(
        config, params, actors, buffer, T.replicate(jax.random.PRNGKey(2))))  # compiles
    compile_s = time.perf_counter() - start
    moves = config.selfplay.batch_size * config.selfplay.steps_per_iteration
    times, key = [], jax.random.PRNGKey(3)
    while len(times) < 3 or sum(times) < min_seconds:
        key, k_run = jax.random.split(key)
        start = time.perf_counter()
        actors, buffer, stats = jax.block_until_ready(
            selfplay_step(config, params, actors, buffer, T.replicate(k_run)))
        times.append(time.perf_counter() - start)
    return {"compile_s": compile_s, "moves_per_s": moves / min(times)}


def in_fresh_process(fn, *args):
    """`fn(*args)` in a new Python process (its own peak memory); None if that process died."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        try:
            return pool.submit(fn, *args).result()
        except concurrent.futures.process.BrokenProcessPool:
            return None


def fastest_calls(calls, min_seconds):
    """Seconds of the fastest call of each (compiled function, args), at least 3 calls each.

    The functions are called in turn, round after round, so that a burst of load from other
    processes slows all of them rather than one.
    """
    for fn, args in calls:
        jax.block_until_ready(fn(*args))  # warm-up
    best, total, rounds = [float("inf")] * len(calls), 0.0, 0
    while rounds < 3 or total < min_seconds:
        for i, (fn, args) in enumerate(calls):
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            seconds = time.perf_counter() - start
            best[i], total = min(best[i], seconds), total + seconds
        rounds += 1
    return best


def table(header, rows):
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def code_version():
    """`git describe` of this checkout ("-dirty": tracked files changed), or "unknown"."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, cwd=Path(__file__).resolve().parent)
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


def available_envs(no_pgx):
    """The environments to run, and a note when the peer is missing."""
    if no_pgx:
        return [TRICTRAC], []
    if make_env(BACKGAMMON) is None:
        return [TRICTRAC], ["pgx backgammon: skipped, pgx is not installed "
                            "(`pip install pgx==2.6.0`)."]
    return [TRICTRAC, BACKGAMMON], []


def write_report(output: Path, text: str, result: dict):
    """Write a report: markdown at `output`, `result` as JSON beside it; print the text."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    output.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    log(f"wrote {output} and {output.with_suffix('.json')}")
    print(text, flush=True)
