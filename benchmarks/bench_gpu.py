"""The GPU figures, on whatever device JAX runs on, in one process:

    python -m benchmarks.bench --gpu --out DIR  # sized for the device; all into DIR
    python -m benchmarks.bench --gpu --quick    # the smallest sizes (a rehearsal)

1. the device;
2. random play steps/s by batch, Trictrac and pgx backgammon (when installed), two ways: the
   benchmark's loop (`measure.selfplay`: `random_agent`, `env.step`, finished games reset),
   and a plain loop (`jax.lax.scan` of `env.step` from new games, no resets, the one
   sampler `agents.uniform_legal` for both environments);
3. the step's split: each part of a Trictrac step (`measure.components`) timed alone;
4. one training iteration of configs/base.yaml as `train/az.py` runs it;
5. a JAX profiler trace of the step at the split's largest batch, summarised to each
   kernel's device time a step (its raw files gzip'd into one tar, kept under 16 MiB);
6. the split of one search of configs/base.yaml's self-play: the search's own bookkeeping
   (mctx with a model of zeros at the search's action width), the engine steps and the
   network evaluations it makes, each timed alone, and the whole search;
7. self-play moves/s (`training.selfplay_step`) by games, simulations and algorithm.

Sized for about 8 minutes on one GPU (`--budget-seconds`, default 480): a row starts only if
it is expected to end within the budget (skipped rows are noted). The report is printed,
its last section a table, and written as markdown to `--out`/bench-gpu.md (or `--output`,
default docs/benchmarks-<platform>.md) and as JSON beside it, after each part. Each table
records the engine it measured (`gpu_session.engine_identity`).
"""
from __future__ import annotations

import datetime
import functools
import gzip
import os
import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx

import trictrac_jax as tt
from trictrac_jax.agents import uniform_legal
from trictrac_jax.az import config as config_lib
from trictrac_jax.az import network
from trictrac_jax.az.run import code_version
from trictrac_jax.az import search as S
from trictrac_jax.az import training as T
from trictrac_jax.az.model import model_from_config
from benchmarks import measure
from benchmarks.gpu_session import engine_identity
from benchmarks.measure import PLAIN, WITH_RESETS, plain_loop

BASE_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "base.yaml"
MID_GAME_STEPS = 32  # random steps before the split's states (games last about 75)
# base.yaml's training iteration shrunk for a CPU rehearsal
SMALL_ITERATION = ("selfplay.batch_size=8", "selfplay.steps_per_iteration=2",
                   "replay.capacity=64", "replay.min_size=1", "training.batch_size=8",
                   "training.updates_per_iteration=2", "network.width=32", "network.blocks=1",
                   "search.num_simulations=2", "search.max_num_considered_actions=2")


class Sizes(NamedTuple):
    batches: tuple  # random play
    steps: int  # steps per timed call of random play
    games: int | None  # the split's games (None: base.yaml's)
    simulations: int | None  # the split's simulations (None: base.yaml's)
    grid: tuple  # self-play rows: (games, simulations, algorithm)
    moves: int  # self-play decisions per game per timed call
    min_seconds: float  # timed calls of a row last at least this long in all
    step_batches: tuple = ()  # the step's split (its parts timed apart), the last traced
    iteration: tuple = ()  # overrides of base.yaml for the training iteration's time
    step_parts: tuple | None = None  # the parts of the split (None: all)


SIZES = {
    "gpu": Sizes((1024, 8192, 32768, 131072), 32, None, None,
                 ((2048, 16, "gumbel"), (2048, 64, "stochastic"),
                  (8192, 16, "gumbel"), (8192, 64, "stochastic")), 4, 1.0,
                 (32768, 131072)),
    "cpu": Sizes((256, 1024), 16, 256, None, ((256, 8, "gumbel"), (256, 8, "stochastic")),
                 2, 1.0, (1024,), SMALL_ITERATION),
    # the rehearsal: every kind of row once (self-play in the iteration's), compiled small
    "quick": Sizes((4,), 2, 4, 2, (), 1, 0.0, (4,), SMALL_ITERATION, (measure.STEP_ROW,)),
}
# Row kind -> a first guess of its seconds on a GPU (`Budget`): the longest row of its kind
# so far counts once one ran.
GUESS_SECONDS = {"random play": 15, "step split": 60, "iteration": 120, "trace": 30,
                 "search split": 60, "self-play": 60}
TRACE_CALLS = 3  # calls of the step in the profiler trace
MAX_FILE_BYTES = 16 * 2**20  # the raw trace's tar kept in --out only below this


def base_config(games=None, simulations=None, algorithm=None, moves=1):
    """configs/base.yaml with the given games, simulations and algorithm, `moves` decisions
    per self-play call and a replay buffer of one call."""
    config = config_lib.load_config(BASE_CONFIG)
    games = games or config.selfplay.batch_size
    overrides = [f"selfplay.batch_size={games}", f"selfplay.steps_per_iteration={moves}",
                 f"replay.capacity={games * moves}", "replay.min_size=1"]
    if simulations:
        overrides += [f"search.num_simulations={simulations}",
                      f"search.max_num_considered_actions={min(simulations, 16)}"]
    if algorithm:
        overrides.append(f"search.algorithm={algorithm}")
    return config_lib.load_config(BASE_CONFIG, overrides)


class Budget:
    """Wall-clock seconds for the whole run: a row starts only if it is expected to end
    within them, expected to last as long as the longest row of its kind so far or its
    first guess (`GUESS_SECONDS`), whichever is longer."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds
        self.longest = dict(GUESS_SECONDS)

    def run(self, kind, fn, *args):
        """`fn(*args)`, or None (not started) when it is not expected to end in time."""
        start = time.monotonic()
        if start + self.longest[kind] > self.end:
            return None
        result = fn(*args)
        self.longest[kind] = max(self.longest[kind], time.monotonic() - start)
        return result


def timed(fn, *args, min_seconds):
    """(compile seconds: the first call's less a timed call's, seconds of the fastest of at
    least 3 calls after it) of the jitted `fn`."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - start
    seconds = measure.fastest_calls([(fn, args)], min_seconds)[0]
    return first - seconds, seconds


# --- random play ---

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
                measure.log(f"random play: {name}, batch {batch}, {loop}")
                row = budget.run("random play", random_play_row, name, batch, loop,
                                 sizes.steps, sizes.min_seconds)
                if row is None:
                    notes.append(f"random play, {name}, batch {batch}, {loop}: skipped "
                                 "(time budget)")
                else:
                    rows.append(row)
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


def mid_game(games, steps):
    """(states, actions, outcomes) of `games` Trictrac games after about `MID_GAME_STEPS`
    random steps from new games (random play's compiled plain loops of `steps`): the
    states, a legal action and a chance outcome each."""
    states = new_games(measure.make_env(measure.TRICTRAC), games, jax.random.PRNGKey(1))
    for k in jax.random.split(jax.random.PRNGKey(2), max(1, MID_GAME_STEPS // steps)):
        states = plain_run(measure.TRICTRAC, steps)(states, k)
    actions = jax.vmap(uniform_legal)(jax.random.split(jax.random.PRNGKey(3), games),
                                      states.legal_action_mask)
    outcomes = jax.random.randint(jax.random.PRNGKey(4), (games,), 0, tt.NUM_CHANCE_OUTCOMES)
    return states, actions, outcomes


def split(config, steps, min_seconds):
    """[(part, count, seconds of one, seconds of the part in one search)] and the search's
    seconds, at the config's games, on states after about `MID_GAME_STEPS` random steps
    (plain loops of `steps`)."""
    games, sims = config.selfplay.batch_size, config.search.num_simulations
    model = model_from_config(config)
    env, net = model.env, model.net
    params = T.init_state(config, jax.random.PRNGKey(0)).params
    states, actions, outcomes = mid_game(games, steps)
    key = jax.random.PRNGKey(5)

    def engine(s, a, o):  # one simulation's steps (both algorithms, see search.py)
        return jax.vmap(env.chance_step)(jax.vmap(env.step_deterministic)(s, a), o)

    parts = [("search bookkeeping (mctx, model of zeros, width "
              f"{config.search.max_actions})", 1, trivial_search(config, games), (key,)),
             ("engine (`step_deterministic` + `chance_step`)", sims, engine,
              (states, actions, outcomes)),
             ("network (`network.apply`)", evaluations_per_search(config),
              lambda p, obs, mask: network.apply(net, p, obs, mask),
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
        measure.log(f"self-play: {games} games, {sims} simulations, {algorithm}")
        config = base_config(games, sims, algorithm, sizes.moves)
        rate = budget.run("self-play", measure.selfplay_rate, config, sizes.min_seconds)
        if rate is None:
            notes.append(f"self-play {games} games, {sims} simulations, {algorithm}: skipped "
                         "(time budget)")
        else:
            rows.append({"games": games, "simulations": sims, "algorithm": algorithm, **rate})
    return rows, notes


# --- the step's parts, base.yaml's iteration, a profile of the step ---

def step_split(batch, steps, min_seconds, parts=None):
    """[{batch, part, ms, ns_per_game}] of each part of a trictrac step (`measure.components`,
    vmapped; `parts`: their names, default all) on the same mid-game states (`mid_game`),
    and the compiled full step with its arguments."""
    env = measure.make_env(measure.TRICTRAC)
    states, actions, outcomes = mid_game(batch, steps)
    inputs = measure.Inputs(states, actions,
                            jax.jit(jax.vmap(env.step_deterministic))(states, actions),
                            outcomes, jax.random.split(jax.random.PRNGKey(6), batch))
    calls = {name: (jax.jit(jax.vmap(fn)).lower(inputs).compile(), (inputs,))
             for name, fn in measure.components(env).items()
             if parts is None or name in parts or name == measure.STEP_ROW}
    seconds = measure.fastest_calls(list(calls.values()), min_seconds)
    rows = [{"batch": batch, "part": name, "ms": s * 1e3, "ns_per_game": s * 1e9 / batch}
            for name, s in zip(calls, seconds)]
    return rows, calls[measure.STEP_ROW]


def step_splits(sizes, budget):
    """The split at each of `sizes.step_batches`, and the full step of the largest done."""
    rows, notes, step = [], [], None
    for batch in sizes.step_batches:
        measure.log(f"the step's split: {batch} games")
        done = budget.run("step split", step_split, batch, sizes.steps, sizes.min_seconds,
                          sizes.step_parts)
        if done is None:
            notes.append(f"the step's split at {batch} games: skipped (time budget)")
        else:
            rows += done[0]
            step = (batch, *done[1])
    return rows, notes, step


def iteration_time(overrides, min_seconds):
    """Seconds of one training iteration of base.yaml with `overrides` as `train/az.py` runs
    it (`training.selfplay_step`, then `training.train_step`, each jitted): the first
    (compiling) and the fastest of at least 3 after it, with the self-play's share."""
    config = config_lib.load_config(BASE_CONFIG, list(overrides))
    play = jax.jit(T.selfplay_step, static_argnums=0, donate_argnums=(2, 3))
    train = jax.jit(T.train_step, static_argnums=0, donate_argnums=(1,))
    state = T.init_state(config, jax.random.PRNGKey(0))
    actors, buffer = jax.jit(T.start_games, static_argnums=0)(config, jax.random.PRNGKey(1))
    times, keys = [], iter(jax.random.split(jax.random.PRNGKey(2), 1000))
    while len(times) < 4 or sum(t for t, _ in times[1:]) < min_seconds:
        start = time.perf_counter()
        actors, buffer, _ = jax.block_until_ready(
            play(config, state.params, actors, buffer, T.replicate(next(keys))))
        played = time.perf_counter()
        state, _ = jax.block_until_ready(train(config, state, buffer, T.replicate(next(keys))))
        times.append((time.perf_counter() - start, played - start))
    seconds, selfplay_s = min(times[1:])
    sp, tc = config.selfplay, config.training
    return {"overrides": list(overrides), "games": sp.batch_size,
            "decisions": sp.batch_size * sp.steps_per_iteration,
            "updates": tc.updates_per_iteration, "update_batch": tc.batch_size,
            "first_s": times[0][0], "iteration_s": seconds, "selfplay_s": selfplay_s,
            "decisions_per_s": sp.batch_size * sp.steps_per_iteration / seconds}


def kernel_times(trace_file) -> list[dict]:
    """Each kernel's total device time and launches in a profiler trace (an .xplane.pb):
    the kernels of a GPU's streams, or, with no device in the trace (a CPU), the XLA
    operations that the host ran. The longest first."""
    data = jax.profiler.ProfileData.from_file(str(trace_file))
    planes = list(data.planes)
    devices = [p for p in planes if p.name.startswith("/device:")]
    totals = {}
    for event, stats in (_device_events(devices) if devices else _host_operations(planes)):
        ns, n, launch = totals.get(event.name, (0.0, 0, ""))
        totals[event.name] = (ns + event.duration_ns, n + 1,
                              str(stats.get("kernel_details", launch)))
    return sorted(({"kernel": name, "ns": ns, "launches": n, "launch": launch}
                   for name, (ns, n, launch) in totals.items()), key=lambda k: -k["ns"])


def _device_events(planes):
    """(event, stats) of the kernels and copies a device ran: its streams' lines (the
    derived lines, XLA Ops and the like, repeat them), else the events with kernel details."""
    for plane in planes:
        streams = [line for line in plane.lines if line.name.startswith("Stream")]
        for line in streams or plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                if streams or "kernel_details" in stats:
                    yield event, stats


def _host_operations(planes):
    """(event, stats) of the XLA operations a CPU ran (control flow's events, which hold
    those of the operations inside them, left out)."""
    for plane in planes:
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                if "hlo_op" in stats and not event.name.startswith(("while", "conditional",
                                                                     "call")):
                    yield event, stats


def step_trace(step, scratch: Path, tar: Path | None):
    """A JAX profiler trace of `TRACE_CALLS` calls of the compiled step (`step`: games,
    compiled, args) written under `scratch`, summarised per kernel (device µs a step); its
    raw files gzip'd into one `tar` (its profiler's folders four deep, one file where the
    device tool brings back two folders down), removed if over `MAX_FILE_BYTES` (named in
    the summary)."""
    games, compiled, args = step
    jax.block_until_ready(compiled(*args))
    with jax.profiler.trace(str(scratch)):
        for _ in range(TRACE_CALLS):
            jax.block_until_ready(compiled(*args))
    files = sorted(scratch.rglob("*.xplane.pb"))
    kernels = kernel_times(files[-1]) if files else []
    removed = []
    if tar is not None:
        with tarfile.open(tar, "w") as packed:
            for path in sorted(f for f in scratch.rglob("*") if f.is_file()):
                if path.suffix != ".gz":  # the xplane holds every program's HLO: gzip it
                    with path.open("rb") as raw, gzip.open(f"{path}.gz", "wb") as zipped:
                        shutil.copyfileobj(raw, zipped)
                    path = Path(f"{path}.gz")
                packed.add(path, str(path.relative_to(scratch)))
        if tar.stat().st_size > MAX_FILE_BYTES:
            removed.append(f"{tar.name} ({tar.stat().st_size / 2**20:.0f} MiB)")
            tar.unlink()
    for k in kernels:
        k["us_per_step"] = k["ns"] / 1e3 / TRACE_CALLS
    return {"games": games, "calls": TRACE_CALLS,
            "device_us_per_step": sum(k["us_per_step"] for k in kernels),
            "kernels": kernels, "removed": removed}


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
            "pgx": pgx_version, "code": code_version(), "engine": engine_identity(),
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
        "an action uniform over the legal mask (`agents.uniform_legal`, both environments).", "",
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
    if not rows:
        return ""
    return "\n".join([
        "## Self-play with search", "",
        "Moves/s of `training.selfplay_step` (base.yaml's network, untrained; "
        f"{moves} decisions per game per call).", "",
        measure.table(("games", "simulations", "search", "compile s", "moves/s"), [
            (r["games"], r["simulations"], r["algorithm"], f"{r['compile_s']:.1f}",
             f"{r['moves_per_s']:,.0f}") for r in rows])])


def step_split_section(rows):
    if not rows:
        return ""
    return "\n".join([
        "## Where a step's time goes (trictrac)", "",
        "Each part of a step jitted and vmapped alone (`measure.components`) on the same "
        f"mid-game states (about {MID_GAME_STEPS} random steps from new games, no resets); "
        "the fastest of at least 3 calls each, the parts called in turn. The first three "
        "overlap (the mask and the jans both need the move lists).", "",
        measure.table(("games", "part", "ms per call", "ns per game"), [
            (f"{r['batch']:,}", r["part"], f"{r['ms']:,.3f}", f"{r['ns_per_game']:,.1f}")
            for r in rows])])


def iteration_section(r):
    if r is None:
        return ""
    setting = ("configs/base.yaml" + (f" with {', '.join(r['overrides'])}"
                                      if r["overrides"] else ""))
    return "\n".join([
        "## One training iteration", "",
        f"{setting}: self-play ({r['decisions']:,} decisions of {r['games']:,} games), then "
        f"{r['updates']} updates of {r['update_batch']:,}, as `train/az.py` runs them; the "
        "fastest of at least 3 iterations after the first (which compiles).", "",
        measure.table(("first iteration s", "iteration s", "of which self-play s",
                       "decisions/s"), [
            (f"{r['first_s']:.1f}", f"{r['iteration_s']:.3f}", f"{r['selfplay_s']:.3f}",
             f"{r['decisions_per_s']:,.0f}")])])


def trace_section(t, top=15):
    if t is None:
        return ""
    removed = (" Raw files removed (over 16 MiB): " + ", ".join(t["removed"]) + "."
               if t["removed"] else "")
    return "\n".join([
        f"## A profile of the step ({t['games']:,} games)", "",
        f"A JAX profiler trace of {t['calls']} calls of the vmapped `env.step` (the split's "
        "compiled step): each kernel's device time a step, "
        f"{t['device_us_per_step']:,.0f} µs in all; the {top} longest (all in the JSON).{removed}", "",
        measure.table(("kernel", "µs a step", "launches a step", "launch"), [
            (f"`{k['kernel'][:60]}`", f"{k['us_per_step']:,.1f}",
             f"{k['launches'] / t['calls']:g}", k["launch"]) for k in t["kernels"][:top]])])


def markdown(result):
    """The report; it ends with a table (the last part that ran), the notes before it."""
    d = result["device"]
    head = "\n".join([
        f"# GPU figures: {d['device_kind']} ({d['platform']})", "",
        f"Measured on {d['date']} with `{result['command']}` (code at git {d['code']}, engine "
        f"{d['engine']['commit']} with fingerprint {d['engine']['fingerprint']}, sizes "
        f"`{result['sizes']}`); jax {d['jax']}, mctx {d['mctx']}, pgx {d['pgx']}, "
        f"{d['devices']} device(s); load average (1 min) {d['load'][0]:.1f} at the start, "
        f"{d['load'][1]:.1f} at the end (above the {os.cpu_count()} cores: other processes "
        f"competed); {result['seconds']:.0f} s. Rates from the fastest timed call after "
        "compilation."])
    notes = "\n".join(f"* {n}" for n in result["notes"])
    split = split_section(result["split"]) if result["split"] else ""
    return "\n\n".join(s for s in (
        head, random_play_section(result["random_play"]),
        step_split_section(result["step_split"]), iteration_section(result["iteration"]),
        trace_section(result["trace"]), notes, split,
        selfplay_section(result["selfplay"], result["moves"])) if s) + "\n"


def run(args, command):
    """Measure, print the report and write it (markdown, JSON beside it, into `args.out`
    with the profile trace when given); returns the result as a dict. Each row starts only
    if it is expected to end within `args.budget_seconds` (`Budget`); the report is written
    after each part, so that what ran is kept if the run is stopped."""
    sizes_name = "quick" if args.quick else ("cpu" if jax.default_backend() == "cpu" else "gpu")
    sizes = SIZES[sizes_name]
    start, load_at_start = time.monotonic(), os.getloadavg()[0]
    budget = Budget(args.budget_seconds)
    out = args.out
    output = (out / "bench-gpu.md" if out else
              args.output or Path(f"docs/benchmarks-{jax.devices()[0].platform}.md"))
    names, notes = measure.available_envs(args.no_pgx)
    result = {"command": command, "sizes": sizes_name, "moves": sizes.moves,
              "random_play": [], "step_split": [], "iteration": None, "trace": None,
              "split": None, "selfplay": [], "notes": notes}

    def save():
        result["device"] = device_record(load_at_start)
        result["seconds"] = time.monotonic() - start
        measure.write_report(output, markdown(result), result)

    result["random_play"], skipped = random_play(names, sizes, budget)
    result["notes"] += skipped
    save()
    result["step_split"], skipped, step = step_splits(sizes, budget)
    result["notes"] += skipped
    measure.log("one training iteration")
    result["iteration"] = budget.run("iteration", iteration_time, sizes.iteration,
                                     sizes.min_seconds)
    result["notes"] += [] if result["iteration"] else ["the training iteration: skipped "
                                                       "(time budget)"]
    save()
    if step:
        measure.log(f"a profile of the step at {step[0]} games")
        with tempfile.TemporaryDirectory() as scratch:
            try:  # a profiler that fails (no CUPTI, say) costs the profile, not the run
                trace = budget.run("trace", step_trace, step, Path(scratch),
                                   out / "trace.tar" if out else None)
                note = "the profile of the step: skipped (time budget)"
            except Exception as e:  # noqa: BLE001 (any failure of the profiler)
                trace, note = None, f"the profile of the step: failed ({type(e).__name__}: {e})"
        result["trace"] = trace
        result["notes"] += [] if trace else [note]
    save()
    config = base_config(sizes.games, sizes.simulations)
    split_done = budget.run("search split", split, config, sizes.steps, sizes.min_seconds)
    result["split"] = split_done and split_record(config, *split_done)
    result["notes"] += [] if split_done else ["the split of a search: skipped (time budget)"]
    result["selfplay"], skipped = selfplay_rows(sizes, budget)
    result["notes"] += skipped
    save()
    return result
