"""`python -m trictrac_jax.tools.bench --h100`: what the project's GPU programs do, compiled
for an H100 on this CPU (no GPU needed), and a TPU v5e chip's device memory.

Compiles and reads (`gpu_program`):

* random play, trictrac and pgx backgammon side by side: a `lax.scan` of `env.step` from new
  games (`RANDOM_STEPS` steps, no resets), one categorical sampler over the legal mask for
  both games; per step;
* one training iteration of configs/base.yaml (self-play and the updates), and from the
  same program one self-play decision of every game (a search and the step: an iteration
  of its self-play loop);
* configs/tpu.yaml's training iteration and random play, compiled for a TPU v5e chip;

and prints and writes (docs/gpu-program.md and .json) kernels, host syncs, estimated bytes,
device memory and the time `gpu_program.H100_MODEL` estimates. Every time here is an
estimate of the compiled program, not a measurement; measured GPU figures are in
docs/benchmarks.md with the GPU and the commit.
"""
from __future__ import annotations

import datetime
import functools
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from trictrac_jax.az import config as C
from trictrac_jax.az import training as T
from trictrac_jax.tools import gpu_program as G
from trictrac_jax.tools import measure

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
BASE_CONFIG = CONFIGS / "base.yaml"
TPU_CONFIG = CONFIGS / "tpu.yaml"
GAMES = (1024, 8192, 32768, 131072)
RANDOM_STEPS = 32


def random_play(env, games: int, steps: int = RANDOM_STEPS):
    """key -> finished games after `steps` random steps of `games` new games."""
    def run(key):
        def body(carry, _):
            states, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(k_act, logits)
            states = jax.vmap(env.step)(states, action, jax.random.split(k_step, games))
            return (states, key), states.terminated.sum()

        states = jax.vmap(env.init)(jax.random.split(key, games))
        _, ends = jax.lax.scan(body, (states, key), None, length=steps)
        return ends.sum()
    return run




SELFPLAY_LOOP = "selfplay.py:play"  # `gpu_program.Loop.where` of the self-play decisions


def iteration_program(config: C.Config, target: G.Target = G.H100):
    """One training iteration of `config`: self-play, then the updates, on `target`'s
    device. Returns the iteration's `Program` and that of one self-play decision of every
    game (an iteration of its self-play loop: a search, then the step), read from the same
    compiled program: a search compiled apart costs as long again."""
    mesh = Mesh([G.device(target)], ("data",))

    def iteration(state, actors, buffer, key):
        k_play, k_train = jax.random.split(key)
        actors, buffer, stats = T.selfplay_step(config, state.params, actors, buffer, k_play,
                                                mesh=mesh)
        state, metrics = T.train_step(config, state, buffer, k_train, mesh=mesh)
        return state, actors, buffer, stats, metrics

    state = jax.eval_shape(functools.partial(T.new_state, config), jax.random.PRNGKey(0))
    actors, buffer = jax.eval_shape(functools.partial(T.start_games, config, mesh=mesh),
                                    jax.random.PRNGKey(1))
    compiled = G.compile_for(target, iteration, state, actors, buffer, jax.random.PRNGKey(2),
                             donate_argnums=(0, 1, 2))
    (decision,) = [loop.body for loop in G.loops(compiled) if loop.where == SELFPLAY_LOOP]
    return G.read(compiled), decision


def random_rows(names, games_list, log, target: G.Target = G.H100):
    rows = []
    for games in games_list:
        for name in names:
            log(f"random play for {target.name}: {name}, {games} games")
            start = time.perf_counter()
            program = G.read(G.compile_for(target, random_play(measure.make_env(name), games),
                                           jax.random.PRNGKey(0)))
            # libtpu's loops carry no trip count: a TPU program's operations are counted
            # with each loop's body once, per call, not per step.
            program = program.per(RANDOM_STEPS) if target == G.H100 else program
            row = {"env": name, "games": games, "kernels": program.kernels,
                   "host_syncs": program.host_syncs, "memory_gb": program.memory_bytes / 1e9}
            if target == G.H100:  # the time model is the H100's; none for a TPU
                seconds = G.H100_MODEL.seconds(program)
                row.update(bytes_per_game_step=program.bytes / games,
                           estimated_us=seconds * 1e6, estimated_steps_per_s=games / seconds)
            rows.append(row | {"compile_s": time.perf_counter() - start})
    return rows


def program_record(program: G.Program, unit: float) -> dict:
    seconds = G.H100_MODEL.seconds(program)
    return {"kernels": program.kernels, "host_syncs": program.host_syncs,
            "bytes": program.bytes, "memory_gb": program.memory_bytes / 1e9,
            "estimated_s": seconds, "estimated_per_s": unit / seconds,
            "costliest": [{"bytes": b, "kernel": name, "shape": shape[:120]}
                          for b, name, shape in program.costliest[:5]]}


def tpu_record(program: G.Program) -> dict:
    return {"operations": program.kernels, "memory_gb": program.memory_bytes / 1e9}


def markdown(result: dict) -> str:
    m = G.H100_MODEL
    lines = [
        "# The GPU program, compiled for an H100 on a CPU", "",
        f"`{result['command']}`, code at git {result['code']}, jax {result['jax']}, "
        f"{result['date']}; {result['seconds']:.0f} s on this machine ({os.cpu_count()} cores, "
        f"load average (1 min) {result['load'][0]:.1f} at the start and {result['load'][1]:.1f} "
        "at the end: other processes competed for the cores above their count). Every time "
        "below is an "
        "**H100 estimate (compiled program, model below)**, not a measurement: no GPU ran it. "
        "Kernels, host syncs and device memory are facts of the compiled program; bytes are "
        "an estimate of what its kernels read and write.", "",
        "Measured on a GPU, so far: only the calibration table's figures below and the "
        "backend rules' timings in [architecture.md](architecture.md), both on one H100 "
        "(jax 0.11.2, code at 68ff02b). `python -m trictrac_jax.tools.bench --gpu` measures "
        "on a GPU machine.", "",
        "## Random play", "",
        f"A `lax.scan` of `env.step` from new games ({RANDOM_STEPS} steps, no resets), one "
        "categorical sampler over the legal mask for both games; per step:", "",
        "| games | env | kernels | host syncs | bytes/game-step | device memory | "
        "estimated µs/step | estimated steps/s | trictrac / pgx (estimates) |",
        "|---|---|---|---|---|---|---|---|---|"]
    by = {(r["env"], r["games"]): r for r in result["random_play"]}
    for r in result["random_play"]:
        peer = by.get((measure.BACKGAMMON, r["games"]))
        ratio = (f"{r['estimated_steps_per_s'] / peer['estimated_steps_per_s']:.2f}"
                 if r["env"] == measure.TRICTRAC and peer else "")
        lines.append(f"| {r['games']:,} | {r['env']} | {r['kernels']:.1f} | "
                     f"{r['host_syncs']:.1f} | {r['bytes_per_game_step']:,.0f} | "
                     f"{r['memory_gb']:.2f} GB | {r['estimated_us']:,.0f} | "
                     f"{r['estimated_steps_per_s'] / 1e6:.2f}M | {ratio} |")
    for title, key, unit in (("One self-play decision of configs/base.yaml", "search",
                              "moves/s"),
                             ("One training iteration of configs/base.yaml", "iteration",
                              "moves/s (self-play decisions)")):
        r = result[key]
        memory = "—" if r["memory_gb"] is None else f"{r['memory_gb']:.2f} GB"
        lines += ["", f"## {title}", "", result[f"{key}_what"], "",
                  "| kernels | host syncs (lower bound) | estimated bytes | device memory | "
                  f"estimated seconds | estimated {unit} |", "|---|---|---|---|---|---|",
                  f"| {r['kernels']:,.0f} | {r['host_syncs']:,.0f} | {r['bytes'] / 1e9:,.1f} GB "
                  f"| {memory} | {r['estimated_s']:.3f} | {r['estimated_per_s']:,.0f} |", "",
                  "The costliest kernels by bytes:", "",
                  "| bytes a call | kernel | shape |", "|---|---|---|"]
        lines += [f"| {k['bytes'] / 1e9:.2f} GB | `{k['kernel']}` | `{k['shape']}` |"
                  for k in r["costliest"]]
    t = result["tpu"]
    lines += ["", "## TPU v5e: what the compiled program says (no time)", "",
              "Compiled for one v5e chip (16 GB) by libtpu on this CPU. XLA's cost analysis "
              "for a TPU gives no usable time, so there is none here: the figures are the "
              "compiled program's own: device memory, and its top-level operations (mostly "
              "fusions) with each loop's body counted once (libtpu's loops carry no trip "
              "count).", "",
              "| program | operations | device memory |", "|---|---|---|"]
    lines += [f"| random play, {r['env']}, {r['games']:,} games ({RANDOM_STEPS} steps) | "
              f"{r['kernels']:.1f} | {r['memory_gb']:.2f} GB |" for r in t["random_play"]]
    lines += [f"| configs/tpu.yaml, one training iteration ({t['iteration_what']}; its "
              f"{t['searches']} searches inside) | "
              f"{t['iteration']['operations']:,.0f} | {t['iteration']['memory_gb']:.2f} GB |"]
    lines += ["", "## The model", "",
              f"estimated seconds = {m.seconds_per_kernel * 1e6:.1f} µs × kernels + "
              f"{m.seconds_per_host_sync * 1e6:.0f} µs × host syncs + bytes / "
              f"{m.bytes_per_second / 1e12:.2f} TB/s (`gpu_program.H100_MODEL`), fitted to "
              "random play measured on one H100 (jax 0.11.2; trictrac-jax at 68ff02b and pgx "
              "backgammon 2.6.0), the same loop compiled here with jax 0.10.2:", "",
              "| games | env | measured µs/step | kernels/step | host syncs/step | "
              "bytes/game-step | model µs/step | model / measured |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {g:,} | {e} | {ms:,} | {k} | {s} | {b:,} | {mo:,} | {mo / ms:.2f} |"
              for g, e, ms, k, s, b, mo in CALIBRATION]
    lines += ["", "One search of configs/base.yaml at 68ff02b (2,048 games, 64 simulations, "
              "stochastic, 514 actions wide) measured 0.244 s on that H100; the model said "
              "0.35 s (1.44x): for a search read the estimates as pessimistic. Host syncs and "
              "kernels could not be told apart by these data (one program had syncs, always 6 "
              "a step): at small batches the split between them is a guess; large batches are "
              "ruled by bytes, where the model holds within about 15%.", ""]
    return "\n".join(lines)


# (games, env, measured µs/step, kernels/step, host syncs/step, bytes/game-step, model µs)
CALIBRATION = [
    (1024, "trictrac 68ff02b", 640, 215, 6, 134563, 640),
    (8192, "trictrac 68ff02b", 1241, 219, 6, 124579, 1414),
    (32768, "trictrac 68ff02b", 3413, 217, 6, 118019, 3886),
    (131072, "trictrac 68ff02b", 12483, 236, 6, 116426, 13826),
    (1024, "pgx backgammon", 130, 45, 0, 57845, 132),
    (8192, "pgx backgammon", 554, 53, 0, 57274, 503),
    (32768, "pgx backgammon", 1872, 61, 0, 57238, 1740),
    (131072, "pgx backgammon", 7009, 63, 0, 57358, 6650),
]


def searched(config: C.Config) -> str:
    s = config.search
    return (f"{config.selfplay.batch_size:,} games, {s.num_simulations} simulations, "
            f"{s.algorithm}, {s.max_actions} action slots")


def iterated(config: C.Config) -> str:
    sp, tc = config.selfplay, config.training
    return (f"{sp.steps_per_iteration} self-play decisions of {sp.batch_size:,} games (a "
            f"search each), then {tc.updates_per_iteration} updates of "
            f"{tc.batch_size:,} decisions, replay capacity {config.replay.capacity:,}")


def run(args, command) -> dict:
    """Compile, print the report and write it (markdown, JSON beside it)."""
    os.environ["TRICTRAC_LANES"] = "gpu"  # the engine's accelerator rules, as an H100 runs it
    # Compile-only devices need no backend: none is looked for (a CUDA or TPU one would fail
    # here, noisily).
    jax.config.update("jax_platforms", "cpu")
    start, load_at_start = time.perf_counter(), os.getloadavg()[0]
    names, notes = measure.available_envs(args.no_pgx)
    games = args.h100_games or list(GAMES)
    rows = random_rows(names, games, measure.log)
    config = C.load_config(BASE_CONFIG)
    sp = config.selfplay
    measure.log("one training iteration of configs/base.yaml (its searches inside)")
    iteration, decision = iteration_program(config)
    search = program_record(decision, sp.batch_size) | {"memory_gb": None}  # the loop's
    iteration = program_record(iteration, sp.batch_size * sp.steps_per_iteration)
    tpu_config = C.load_config(TPU_CONFIG)
    measure.log("configs/tpu.yaml for a TPU v5e: one training iteration")
    # A TPU compile takes minutes at large batches: the smallest game count only, and the
    # training iteration alone (its searches are inside it).
    tpu = {"random_play": random_rows(names, [min(games)], measure.log, G.TPU_V5E),
           "iteration": tpu_record(iteration_program(tpu_config, G.TPU_V5E)[0]),
           "searches": tpu_config.selfplay.steps_per_iteration,
           "iteration_what": iterated(tpu_config)}
    result = {
        "command": command, "code": measure.code_version(), "jax": jax.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "random_play": rows, "search": search, "iteration": iteration, "tpu": tpu,
        "notes": notes, "search_what": searched(config) + ": one self-play decision "
        "of every game (a search, then the step), read from the training iteration's "
        "program (one iteration of its self-play loop; device memory: the iteration's).",
        "iteration_what": iterated(config) + ".",
        "model": G.H100_MODEL._asdict()}
    result["seconds"] = time.perf_counter() - start
    result["load"] = (load_at_start, os.getloadavg()[0])
    measure.write_report(args.output or Path("docs/gpu-program.md"), markdown(result), result)
    return result
