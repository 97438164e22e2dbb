"""What every benchmark shares: the environments, the random self-play loop, and timing.

The rows of `bench` (CPU report) and `bench_gpu` (figures measured on a GPU) are made with
these, so that both time the same loop the same way.
"""
from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp

import trictrac_jax as tt
from trictrac_jax import board as B
from trictrac_jax.moves import legal_action_mask, move_lists
from trictrac_jax import scoring
from trictrac_jax.agents import random_agent, uniform_legal
from trictrac_jax.arrays import select_tree
from trictrac_jax.lowering import game_minor
from trictrac_jax.state import TS_HOLD_OR_GO
from trictrac_jax.az import config as config_lib
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


WITH_RESETS, PLAIN = "with resets", "plain"  # the two random-play loops
COMPILE_GAMES = 1024  # the random loop whose compile time is measured


def plain_loop(env, steps):
    """(states, key) -> states after `steps` steps of every game (no resets)."""
    def body(states, key):
        batch = states.current_player.shape[0]
        k_act, k_step = jax.random.split(key)
        actions = jax.vmap(uniform_legal)(jax.random.split(k_act, batch),
                                          states.legal_action_mask)
        return jax.vmap(env.step)(states, actions, jax.random.split(k_step, batch)), None

    return lambda states, key: jax.lax.scan(body, states, jax.random.split(key, steps))[0]


def random_loop(env, loop, steps):
    """(states, key) -> states after `steps` random steps: `loop` is PLAIN or WITH_RESETS."""
    return plain_loop(env, steps) if loop == PLAIN else selfplay(env, steps)


def game_lengths(env, games, key):
    """Steps of `games` random games played from the start to their end (capped)."""
    def cond(carry):
        _, lengths, t, _ = carry
        return jnp.any(lengths == 0) & (t < LENGTH_CAP)

    def body(carry):
        states, lengths, t, key = carry
        key, k_step = jax.random.split(key)
        states = _random_step(env, states, k_step)
        ended = (lengths == 0) & (states.terminated | states.truncated)  # pgx states too
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


def new_games_then(env, loop, games, steps):
    """key -> states: `games` new games, then `random_loop`'s `steps` steps (the program
    whose compile is timed)."""
    def run(key):
        states = jax.vmap(env.init)(jax.random.split(key, games))
        return random_loop(env, loop, steps)(states, key)
    return run


def compile_seconds(name, loop, games, steps, target=None):
    """Seconds from the first trace of a random-play program (`games` new games, then
    `random_loop`'s `steps` steps) until it is compiled, as a user meets it in a new
    process: the one-time setup on the way (e.g. the engine's first positions) is counted.
    `target`: the name of a `gpu_program` device to compile for, with the engine's GPU
    lowering (default: this machine's CPU and its lowering). Call it in a fresh process
    (`in_fresh_process`): it sets the lowering, read when tracing."""
    return sum(compile_phases(name, loop, games, steps, target).values())


def compile_phases(name, loop, games, steps, target=None) -> dict[str, float]:
    """`compile_seconds` in its three phases: JAX's "trace" of the program, its "lower"ing
    to StableHLO, XLA's "compile"."""
    os.environ["TRICTRAC_LOWERING"] = "gpu" if target else "cpu"
    from trictrac_jax.tools import gpu_program as G  # before any JAX computation here
    run = new_games_then(make_env(name), loop, games, steps)
    key = jax.random.PRNGKey(0)
    if target is None:
        return G.phases_timed(jax.jit(run), key)[1]
    jax.config.update("jax_platforms", "cpu")  # compile-only devices need no backend
    target = {t.name: t for t in (G.H100, G.TPU_V5E)}[target]
    return G.compile_timed(target, run, key)[1]


def compile_rows(names, games, steps, target=None):
    """`compile_seconds` of both random loops of each environment, each in a fresh process."""
    rows = []
    for name in names:
        for loop in (PLAIN, WITH_RESETS):
            log(f"compile time of the {target or 'CPU'} program: {name}, {loop} "
                "(a fresh process)")
            seconds = in_fresh_process(compile_seconds, name, loop, games, steps, target)
            rows.append({"env": name, "loop": loop, "program": target or "CPU",
                         "games": games, "steps": steps, "compile_s": seconds})
    return rows


def compile_table(rows):
    """Markdown: the compile times, trictrac's over pgx backgammon's."""
    by = {(r["env"], r["loop"], r["program"]): r["compile_s"] for r in rows}
    ratio = lambda r: (f"{r['compile_s'] / by[BACKGAMMON, r['loop'], r['program']]:.2f}"
                       if r["env"] == TRICTRAC and (BACKGAMMON, r["loop"], r["program"]) in by
                       else "")
    return table(("program", "env", "loop", "compile s", "trictrac / pgx"), [
        (r["program"], r["env"], r["loop"], f"{r['compile_s']:.1f}", ratio(r)) for r in rows])


# --- the parts of a step, timed apart ---

STEP_ROW = "full step (`env.step`)"


class Inputs(NamedTuple):
    """What the timed components read, batched: the same mid-game decision states for all."""

    states: tt.State
    actions: jax.Array  # random legal actions at `states`
    afterstates: tt.State  # `env.step_deterministic(states, actions)`
    outcomes: jax.Array  # chance outcomes 0..35
    keys: jax.Array


def mid_game_inputs(env, batch, steps, key):
    """`Inputs` after `steps` random steps from new games (finished games restarted)."""
    init, step = jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(env.step))
    k_init, k_play, k_last = jax.random.split(key, 3)
    states = init(jax.random.split(k_init, batch))
    for k in jax.random.split(k_play, steps):
        k_act, k_step, k_new = jax.random.split(k, 3)
        actions = jax.vmap(random_agent)(jax.random.split(k_act, batch), states)
        states = step(states, actions, jax.random.split(k_step, batch))
        states = select_tree(states.terminated | states.truncated,
                             init(jax.random.split(k_new, batch)), states)
    k_act, k_out, k_keys = jax.random.split(k_last, 3)
    actions = jax.vmap(random_agent)(jax.random.split(k_act, batch), states)
    return Inputs(states, actions, jax.jit(jax.vmap(env.step_deterministic))(states, actions),
                  jax.random.randint(k_out, (batch,), 0, tt.NUM_CHANCE_OUTCOMES),
                  jax.random.split(k_keys, batch))


def components(env):
    """Name -> function of one game's `Inputs`: the parts of a step, then a step and a reset."""
    def view(s):
        return B.view_board(s._board, s.current_player)

    # game-minor under vmap, as the engine runs them (see lowering.py)
    legal = game_minor(lambda v, dice: move_lists(v, dice).legal)
    points = game_minor(lambda v, dice, count: scoring.roll_jans(
        v, dice, count, move_lists(v, dice)).points)

    def jans(x):
        roll_count = x.states._dice_roll_count[x.states.current_player]
        return points(view(x.states), x.states._dice, roll_count)

    return {
        "move lists (`moves.move_lists(...).legal`)":
            lambda x: legal(view(x.states), x.states._dice),
        "legal mask (`moves.legal_action_mask`)": lambda x: legal_action_mask(
            view(x.states), x.states._dice, x.states._turn_stage == TS_HOLD_OR_GO),
        "jan scoring (`scoring.roll_jans` + `move_lists`)": jans,
        "move application (`env.step_deterministic`)":
            lambda x: env.step_deterministic(x.states, x.actions),
        "observation (`observe`)": lambda x: tt.observe(x.states),
        "chance (`env.chance_step`)": lambda x: env.chance_step(x.afterstates, x.outcomes),
        STEP_ROW: lambda x: env.step(x.states, x.actions, x.keys),
        "reset (`env.init`)": lambda x: env.init(x.keys),
        "agent (`random_agent`)": lambda x: random_agent(x.keys, x.states),
    }



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
    config = config_lib.load_config(None, [
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
