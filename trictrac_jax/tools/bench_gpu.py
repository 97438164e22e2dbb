"""The GPU figures, on whatever device JAX runs on, in one process:

    python -m trictrac_jax.tools.bench --gpu            # sized for the device (GPU or CPU)
    python -m trictrac_jax.tools.bench --gpu --quick    # the smallest sizes (a smoke run)

1. the device;
2. random play steps/s by batch, Trictrac and pgx backgammon (when installed), two ways: the
   benchmark's loop (`measure.selfplay`: `random_agent`, `env.step`, finished games reset),
   and a plain loop (`jax.lax.scan` of `env.step` from new games, no resets, the one
   sampler `uniform_legal` for both environments);
3. the split of one search of configs/base.yaml's self-play: the search's own bookkeeping
   (mctx with a model of zeros at the search's action width), the engine steps and the
   network evaluations it makes, each timed alone, and the whole search;
4. self-play moves/s (`training.selfplay_step`) by games, simulations and algorithm.

Rows that would start after `--budget-seconds` are skipped (noted). The report is printed,
its last section a table, and written as markdown to `--output` (default
docs/benchmarks-<platform>.md) and as JSON beside it.
"""
from __future__ import annotations

import datetime
import functools
import os
import time
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx

import trictrac_jax as tt
from trictrac_jax.tools import measure
from trictrac_jax.az import config as C
from trictrac_jax.az import network as N
from trictrac_jax.az import search as S
from trictrac_jax.az import training as T
from trictrac_jax.az.model import model_from_config

BASE_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "base.yaml"
WITH_RESETS, PLAIN = "with resets", "plain"
MID_GAME_STEPS = 32  # random steps before the split's states (games last about 75)


class Sizes(NamedTuple):
    batches: tuple  # random play
    steps: int  # steps per timed call of random play
    games: int | None  # the split's games (None: base.yaml's)
    simulations: int | None  # the split's simulations (None: base.yaml's)
    grid: tuple  # self-play rows: (games, simulations, algorithm)
    moves: int  # self-play decisions per game per timed call
    min_seconds: float  # timed calls of a row last at least this long in all


SIZES = {
    "gpu": Sizes((1024, 8192, 32768, 131072), 32, None, None,
                 ((2048, 16, "gumbel"), (2048, 64, "stochastic"),
                  (8192, 16, "gumbel"), (8192, 64, "stochastic")), 4, 1.0),
    "cpu": Sizes((256, 1024), 16, 256, None, ((256, 8, "gumbel"), (256, 8, "stochastic")),
                 2, 1.0),
    "quick": Sizes((4,), 2, 4, 2, ((4, 2, "gumbel"),), 1, 0.0),
}


def base_config(games=None, simulations=None, algorithm=None, moves=1):
    """configs/base.yaml with the given games, simulations and algorithm, `moves` decisions
    per self-play call and a replay buffer of one call."""
    config = C.load_config(BASE_CONFIG)
    games = games or config.selfplay.batch_size
    overrides = [f"selfplay.batch_size={games}", f"selfplay.steps_per_iteration={moves}",
                 f"replay.capacity={games * moves}", "replay.min_size=1"]
    if simulations:
        overrides += [f"search.num_simulations={simulations}",
                      f"search.max_num_considered_actions={min(simulations, 16)}"]
    if algorithm:
        overrides.append(f"search.algorithm={algorithm}")
    return C.load_config(BASE_CONFIG, overrides)


class Budget:
    """Wall-clock seconds for the whole run; what starts after them is skipped."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def spent(self):
        return time.monotonic() > self.end


def timed(fn, *args, min_seconds):
    """(compile seconds: the first call's less a timed call's, seconds of the fastest of at
    least 3 calls after it) of the jitted `fn`."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - start
    seconds = measure.fastest_calls([(fn, args)], min_seconds)[0]
    return first - seconds, seconds


# --- random play ---

def uniform_legal(key, mask):
    """An action uniform over the legal mask bool[A] (the sampler of both environments)."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


def plain_loop(env, steps):
    """(states, key) -> states after `steps` steps of every game (no resets)."""
    def body(states, key):
        batch = states.current_player.shape[0]
        k_act, k_step = jax.random.split(key)
        actions = jax.vmap(uniform_legal)(jax.random.split(k_act, batch),
                                          states.legal_action_mask)
        return jax.vmap(env.step)(states, actions, jax.random.split(k_step, batch)), None

    return lambda states, key: jax.lax.scan(body, states, jax.random.split(key, steps))[0]


@functools.cache
def plain_run(name, steps):
    """The jitted plain loop of environment `name`, one per process: the split's mid-game
    states reuse random play's compilations."""
    return jax.jit(plain_loop(measure.make_env(name), steps))


def new_games(env, batch, key):
    return jax.jit(jax.vmap(env.init))(jax.random.split(key, batch))


def random_play_row(name, batch, loop, steps, min_seconds):
    """Steps/s of one environment, batch and loop."""
    if loop == WITH_RESETS:
        result = measure.measure_selfplay(name, batch, steps, min_seconds)
        compile_s, steps_per_s = result["compile_s"], result["steps_per_s"]
    else:
        states = new_games(measure.make_env(name), batch, jax.random.PRNGKey(0))
        compile_s, seconds = timed(plain_run(name, steps), states, jax.random.PRNGKey(1),
                                   min_seconds=min_seconds)
        steps_per_s = batch * steps / seconds
    return {"env": name, "batch": batch, "loop": loop, "compile_s": compile_s,
            "steps_per_s": steps_per_s}


def random_play(names, sizes, budget):
    rows, notes = [], []
    for batch in sizes.batches:
        for name in names:
            for loop in (WITH_RESETS, PLAIN):
                if budget.spent():
                    notes.append(f"random play, {name}, batch {batch}, {loop}: skipped "
                                 "(time budget)")
                    continue
                measure.log(f"random play: {name}, batch {batch}, {loop}")
                rows.append(random_play_row(name, batch, loop, sizes.steps, sizes.min_seconds))
    return rows, notes


# --- the split of one search ---

def trivial_search(config, games):
    """`key -> actions`: the config's mctx search over a model of zeros (no engine, no
    network) at the search's action width: the search's own bookkeeping."""
    s = config.search
    width = s.max_actions
    zeros = lambda *shape: jnp.zeros((games,) + shape, jnp.float32)
    discount = jnp.full(games, -1.0)  # the player to move changes
    root = mctx.RootFnOutput(prior_logits=zeros(width), value=zeros(), embedding=zeros())
    if s.algorithm == "stochastic":
        def decision_fn(params, key, action, embedding):
            return mctx.DecisionRecurrentFnOutput(chance_logits=zeros(tt.NUM_CHANCE_OUTCOMES),
                                                  afterstate_value=zeros()), embedding

        def chance_fn(params, key, outcome, embedding):
            return mctx.ChanceRecurrentFnOutput(action_logits=zeros(width), value=zeros(),
                                                reward=zeros(), discount=discount), embedding

        return lambda key: mctx.stochastic_muzero_policy(
            (), key, root, decision_fn, chance_fn, num_simulations=s.num_simulations,
            dirichlet_fraction=s.dirichlet_fraction, dirichlet_alpha=s.dirichlet_alpha,
            pb_c_init=s.pb_c_init, temperature=s.temperature).action

    def recurrent_fn(params, key, action, embedding):
        return mctx.RecurrentFnOutput(reward=zeros(), discount=discount,
                                      prior_logits=zeros(width), value=zeros()), embedding

    return lambda key: mctx.gumbel_muzero_policy(
        (), key, root, recurrent_fn, num_simulations=s.num_simulations,
        max_num_considered_actions=s.max_num_considered_actions).action


def evaluations_per_search(config):
    """Network evaluations of one search: the root, then one per simulation (Gumbel) or two
    (stochastic: the afterstate and the next state, as mctx computes both every time)."""
    s = config.search
    return 1 + s.num_simulations * (2 if s.algorithm == "stochastic" else 1)


def split(config, steps, min_seconds):
    """[(part, count, seconds of one, seconds of the part in one search)] and the search's
    seconds, at the config's games, on states after about `MID_GAME_STEPS` random steps
    (plain loops of `steps`)."""
    games, sims = config.selfplay.batch_size, config.search.num_simulations
    model = model_from_config(config)
    env, net = model.env, model.net
    params = T.init_state(config, jax.random.PRNGKey(0)).params
    states = new_games(env, games, jax.random.PRNGKey(1))
    for k in jax.random.split(jax.random.PRNGKey(2), max(1, MID_GAME_STEPS // steps)):
        states = plain_run(measure.TRICTRAC, steps)(states, k)
    actions = jax.vmap(uniform_legal)(jax.random.split(jax.random.PRNGKey(3), games),
                                      states.legal_action_mask)
    outcomes = jax.random.randint(jax.random.PRNGKey(4), (games,), 0, tt.NUM_CHANCE_OUTCOMES)
    key = jax.random.PRNGKey(5)

    def engine(s, a, o):  # one simulation's steps (both algorithms, see search.py)
        return jax.vmap(env.chance_step)(jax.vmap(env.step_deterministic)(s, a), o)

    parts = [("search bookkeeping (mctx, model of zeros, width "
              f"{config.search.max_actions})", 1, trivial_search(config, games), (key,)),
             ("engine (`step_deterministic` + `chance_step`)", sims, engine,
              (states, actions, outcomes)),
             ("network (`network.apply`)", evaluations_per_search(config),
              lambda p, obs, mask: N.apply(net, p, obs, mask),
              (params, states.observation, states.legal_action_mask))]
    rows = []
    for name, count, fn, args in parts:
        measure.log(f"split: {name}")
        seconds = timed(jax.jit(fn), *args, min_seconds=min_seconds)[1]
        rows.append((name, count, seconds, count * seconds))
    measure.log("split: the whole search")
    search = functools.partial(S.search, model=model, config=config.search, explore=True)
    search_s = timed(jax.jit(search), params, key, states, min_seconds=min_seconds)[1]
    return rows, search_s


def split_record(config, rows, search_s):
    """The split as JSON: setting, parts (their shares of the search) and the rest."""
    s = config.search
    parts = [{"part": name, "calls": count, "seconds_per_call": one, "seconds": total,
              "share": total / search_s} for name, count, one, total in rows]
    rest = search_s - sum(p["seconds"] for p in parts)
    parts.append({"part": "rest (the tree's State embeddings, glue; negative: overlap)",
                  "calls": None, "seconds_per_call": None, "seconds": rest,
                  "share": rest / search_s})
    return {"games": config.selfplay.batch_size, "algorithm": s.algorithm,
            "simulations": s.num_simulations, "width": s.max_actions,
            "network": f"{config.network.width} x {config.network.blocks}",
            "search_seconds": search_s, "parts": parts}


# --- self-play ---

def selfplay_rows(sizes, budget):
    rows, notes = [], []
    for games, sims, algorithm in sizes.grid:
        if budget.spent():
            notes.append(f"self-play {games} games, {sims} simulations, {algorithm}: skipped "
                         "(time budget)")
            continue
        measure.log(f"self-play: {games} games, {sims} simulations, {algorithm}")
        config = base_config(games, sims, algorithm, sizes.moves)
        rows.append({"games": games, "simulations": sims, "algorithm": algorithm,
                     **measure.selfplay_rate(config, sizes.min_seconds)})
    return rows, notes


# --- the report ---

def device_record(load_at_start):
    device = jax.devices()[0]
    try:
        import pgx
        pgx_version = pgx.__version__
    except ImportError:
        pgx_version = None
    return {"device_kind": device.device_kind, "platform": device.platform,
            "devices": jax.device_count(), "jax": jax.__version__, "mctx": mctx.__version__,
            "pgx": pgx_version, "code": measure.code_version(),
            "load": [load_at_start, os.getloadavg()[0]],
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def random_play_section(rows):
    rate = {(r["env"], r["batch"], r["loop"]): r["steps_per_s"] for r in rows}
    ratios = [(batch, loop, f"{steps:,.0f}", f"{rate[measure.BACKGAMMON, batch, loop]:,.0f}",
               f"{steps / rate[measure.BACKGAMMON, batch, loop]:.2f}")
              for (env, batch, loop), steps in rate.items()
              if env == measure.TRICTRAC and (measure.BACKGAMMON, batch, loop) in rate]
    peer = ["", measure.table(("batch", "loop", "trictrac steps/s", "pgx backgammon steps/s",
                             "ratio"), ratios)] if ratios else []
    return "\n".join([
        "## Random play", "",
        f"`{WITH_RESETS}`: the benchmark's loop (`random_agent`, `env.step`, finished games "
        f"re-initialised); `{PLAIN}`: `lax.scan` of `env.step` from new games, no resets, "
        "an action uniform over the legal mask (`uniform_legal`, both environments).", "",
        measure.table(("env", "batch", "loop", "compile s", "steps/s"), [
            (r["env"], r["batch"], r["loop"], f"{r['compile_s']:.1f}",
             f"{r['steps_per_s']:,.0f}") for r in rows]), *peer])


def split_section(split):
    ms = lambda seconds, fmt: "" if seconds is None else fmt.format(seconds * 1e3)
    return "\n".join([
        f"## One search of base.yaml's self-play ({split['games']} games, "
        f"{split['algorithm']}, {split['simulations']} simulations, network "
        f"{split['network']})", "",
        "Each part timed alone on the same mid-game states, times the calls that one search "
        "makes; shares of the whole search (`search.search`, "
        f"{split['search_seconds'] * 1e3:,.1f} ms).", "",
        measure.table(("part", "calls", "ms per call", "ms per search", "share"), [
            (p["part"], "" if p["calls"] is None else p["calls"],
             ms(p["seconds_per_call"], "{:,.2f}"), ms(p["seconds"], "{:,.1f}"),
             f"{p['share']:.0%}") for p in split["parts"]])])


def selfplay_section(rows, moves):
    return "\n".join([
        "## Self-play with search", "",
        "Moves/s of `training.selfplay_step` (base.yaml's network, untrained; "
        f"{moves} decisions per game per call).", "",
        measure.table(("games", "simulations", "search", "compile s", "moves/s"), [
            (r["games"], r["simulations"], r["algorithm"], f"{r['compile_s']:.1f}",
             f"{r['moves_per_s']:,.0f}") for r in rows])])


def markdown(result):
    """The report; its last section is a table."""
    d = result["device"]
    head = "\n".join([
        f"# GPU figures: {d['device_kind']} ({d['platform']})", "",
        f"Measured on {d['date']} with `{result['command']}` (code at git {d['code']}, sizes "
        f"`{result['sizes']}`); jax {d['jax']}, mctx {d['mctx']}, pgx {d['pgx']}, "
        f"{d['devices']} device(s); load average (1 min) {d['load'][0]:.1f} at the start, "
        f"{d['load'][1]:.1f} at the end (above the {os.cpu_count()} cores: other processes "
        "competed). Rates from the fastest timed call after compilation."])
    notes = "\n".join(f"* {n}" for n in result["notes"])
    return "\n\n".join(s for s in (
        head, random_play_section(result["random_play"]), split_section(result["split"]),
        notes, selfplay_section(result["selfplay"], result["moves"])) if s) + "\n"


def run(args, command):
    """Measure, print the report and write it (markdown, JSON beside it); returns the
    result as a dict."""
    sizes_name = "quick" if args.quick else ("cpu" if jax.default_backend() == "cpu" else "gpu")
    sizes = SIZES[sizes_name]
    budget, load_at_start = Budget(args.budget_seconds), os.getloadavg()[0]
    names, notes = measure.available_envs(args.no_pgx)
    random_rows, skipped = random_play(names, sizes, budget)
    config = base_config(sizes.games, sizes.simulations)
    rows, search_s = split(config, sizes.steps, sizes.min_seconds)
    selfplay, skipped_selfplay = selfplay_rows(sizes, budget)
    result = {"command": command, "sizes": sizes_name, "moves": sizes.moves,
              "device": device_record(load_at_start), "random_play": random_rows,
              "split": split_record(config, rows, search_s), "selfplay": selfplay,
              "notes": notes + skipped + skipped_selfplay}
    measure.write_report(args.output or Path(f"docs/benchmarks-{result['device']['platform']}.md"),
                         markdown(result), result)
    return result
