"""`python -m benchmarks.bench --h100`: what the project's GPU programs do, compiled
for an H100 on this CPU (no GPU needed), and a TPU v5e chip's device memory.

Compiles and reads (`gpu_program`):

* random play, trictrac and pgx backgammon side by side, in the two loops that
  `bench --gpu` measures on a GPU (`measure.random_loop`: plain, with resets; `RANDOM_STEPS`
  steps), per step, with every kernel's launch size, registers and spills;
* the time from the first trace of the random loop to its program, for this CPU and for an
  H100, each in a fresh process (measured);
* one training iteration of configs/base.yaml (self-play and the updates), and from the
  same program one self-play decision of every game (a search and the step: an iteration
  of its self-play loop);
* configs/tpu.yaml's training iteration and random play, compiled for a TPU v5e chip;

and prints and writes (docs/gpu-program.md and .json) kernels, host syncs, estimated bytes,
device memory, spilling kernels and the time `gpu_program.H100_MODEL` estimates, with the
model's error against the random play measured on an H100 (`MEASURED`). Every time here but
the compile times is an estimate of the compiled program, not a measurement.
"""
from __future__ import annotations

import datetime
import functools
import gzip
import json
import os
import re
import statistics
import time
from pathlib import Path

import jax
from jax.sharding import Mesh

from trictrac_jax.az import config as config_lib
from trictrac_jax.az import training as T
from trictrac_jax.az.run import code_version
from trictrac_jax.tools import gpu_program as G
from benchmarks import gpu_session, measure

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
BASE_CONFIG = CONFIGS / "base.yaml"
TPU_CONFIG = CONFIGS / "tpu.yaml"
GAMES = (1024, 8192, 32768, 131072)
LOOPS = (measure.PLAIN, measure.WITH_RESETS)
RANDOM_STEPS = 32  # a timed call of `bench --gpu`'s random play
FEW_BLOCKS = 8  # a kernel of this many blocks or fewer leaves most of the 132 SMs idle

# Random play measured on one NVIDIA H100 80GB HBM3 (code at ea19265, jax 0.11.2): steps/s
# by (env, loop, games). The model's calibration (`calibration`).
MEASURED = ("measured on one NVIDIA H100 80GB HBM3, code at ea19265, jax 0.11.2, "
            "`python -m benchmarks.bench --gpu --budget-seconds 110`")
MEASURED_STEPS_PER_S = {
    ("trictrac", "plain", 1024): 4_719_446, ("pgx backgammon", "plain", 1024): 9_782_047,
    ("trictrac", "plain", 8192): 8_319_295, ("pgx backgammon", "plain", 8192): 16_033_974,
    ("trictrac", "plain", 32768): 17_992_157, ("pgx backgammon", "plain", 32768): 17_834_991,
    ("trictrac", "plain", 131072): 6_495_226, ("pgx backgammon", "plain", 131072): 19_156_498,
    ("trictrac", "with resets", 1024): 4_206_427,
    ("pgx backgammon", "with resets", 1024): 6_346_511,
    ("trictrac", "with resets", 8192): 7_893_489,
    ("pgx backgammon", "with resets", 8192): 11_268_212,
    ("trictrac", "with resets", 32768): 17_276_400,
    ("pgx backgammon", "with resets", 32768): 12_088_169,
    ("trictrac", "with resets", 131072): 6_434_086,
    ("pgx backgammon", "with resets", 131072): 13_009_373,
}
# base.yaml on that H100, beside the estimates of its search and iteration (not fitted on)
MEASURED_BASE_YAML = {
    "search": "Measured on that H100 (code at ea19265): one search of 2,048 games alone, "
              "without the step, 7.2 ms (`bench --gpu`'s split of a search).",
    "iteration": "Measured on that H100 (code at ea19265): 0.71 s an iteration (iterations 3 "
                 "to 26 of `python train/az.py --config configs/base.yaml --set "
                 "logging.tensorboard=false --set training.max_minutes=3`).",
}
# The kernels of those programs compiled here (jax 0.10.2) from the engine measured, one
# program a line: `bench --h100 --h100-calibration PATH` writes them.
CALIBRATION_DATA = Path(__file__).resolve().parent / "data" / "h100-calibration.jsonl.gz"


SELFPLAY_LOOP = "selfplay.py:play"  # `gpu_program.Loop.where` of the self-play decisions


def iteration_program(config: config_lib.Config, target: G.Target = G.H100):
    """One training iteration of `config`: self-play, then the updates, on `target`'s
    device. Returns the iteration's `Program` and that of one self-play decision of every
    game (an iteration of its self-play loop: a search, then the step), read from the same
    compiled program: a search compiled apart costs as long again."""
    compiled = compiled_iteration(config, target)
    return G.read(compiled), decision_program(compiled)


def iteration_inputs(config: config_lib.Config, target: G.Target = G.H100):
    """(mesh, state, actors, buffer) of a training iteration of `config` on `target`'s
    device: its one-device mesh, and the shapes of the training state, the games and the
    replay buffer."""
    mesh = Mesh([G.device(target)], ("data",))
    state = jax.eval_shape(functools.partial(T.new_state, config), jax.random.PRNGKey(0))
    actors, buffer = jax.eval_shape(functools.partial(T.start_games, config, mesh=mesh),
                                    jax.random.PRNGKey(1))
    return mesh, state, actors, buffer


def compiled_iteration(config: config_lib.Config, target: G.Target = G.H100):
    """One training iteration of `config` compiled for `target` (`iteration_program`)."""
    mesh, state, actors, buffer = iteration_inputs(config, target)

    def iteration(state, actors, buffer, key):
        k_play, k_train = jax.random.split(key)
        actors, buffer, stats = T.selfplay_step(config, state.params, actors, buffer, k_play,
                                                mesh=mesh)
        state, metrics = T.train_step(config, state, buffer, k_train, mesh=mesh)
        return state, actors, buffer, stats, metrics

    return compile_for(target, iteration, state, actors, buffer, jax.random.PRNGKey(2),
                       donate_argnums=(0, 1, 2))


def decision_program(compiled) -> G.Program:
    """One self-play decision of every game: the body of `compiled_iteration`'s self-play
    loop."""
    (decision,) = [loop.body for loop in G.loops(compiled) if loop.where == SELFPLAY_LOOP]
    return decision


def random_program(name: str, games: int, loop: str, target: G.Target = G.H100) -> G.Program:
    """One call of `RANDOM_STEPS` random steps of `games` games in `loop`, compiled for
    `target` (a GPU's with its kernels' launch sizes and registers)."""
    return G.read(compiled_random(name, games, loop, target))


def compiled_random(name: str, games: int, loop: str, target: G.Target = G.H100):
    """`random_program`'s call compiled for `target`."""
    env = measure.make_env(name)
    states = jax.eval_shape(lambda k: jax.vmap(env.init)(jax.random.split(k, games)),
                            jax.random.PRNGKey(0))
    return compile_for(target, measure.random_loop(env, loop, RANDOM_STEPS), states,
                       jax.random.PRNGKey(0))


def compile_for(target: G.Target, fn, *args, donate_argnums=()):
    """`fn` compiled for `target`; for a GPU with its kernels' launch sizes and registers."""
    compile = G.compile_with_kernels if target.platform == "cuda" else G.compile_for
    return compile(target, fn, *args, donate_argnums=donate_argnums)


def step_program(games: int) -> G.Program:
    """The vmapped `env.step` of `games` games compiled for an H100, with its kernels."""
    env = measure.make_env(measure.TRICTRAC)
    keys = jax.ShapeDtypeStruct((games, 2), "uint32")
    states = jax.eval_shape(jax.vmap(env.init), keys)
    actions = jax.ShapeDtypeStruct((games,), "int32")
    return G.read(G.compile_with_kernels(G.H100, jax.vmap(env.step), states, actions, keys))


def random_rows(names, games_list, loops, log, target: G.Target = G.H100):
    """Rows of random play compiled for `target`, and the H100 programs by (env, loop, games)."""
    rows, programs = [], {}
    for games in games_list:
        for name in names:
            for loop in loops:
                log(f"random play for {target.name}: {name}, {games} games, {loop}")
                start = time.perf_counter()
                program = random_program(name, games, loop, target)
                row = {"env": name, "games": games, "loop": loop}
                if target == G.H100:  # the time model is the H100's; none for a TPU
                    program = program.per(RANDOM_STEPS)
                    programs[name, loop, games] = program
                    row |= h100_record(program, games)
                else:  # libtpu's loops carry no trip count: operations a call, bodies once
                    row |= {"kernels": program.kernels,
                            "memory_gb": program.memory_bytes / 1e9}
                rows.append(row | {"compile_s": time.perf_counter() - start})
    return rows, programs


def h100_record(step: G.Program, games: int) -> dict:
    """What the report says of one step of random play."""
    seconds = G.H100_MODEL.seconds(step)
    return {"kernels": step.kernels, "host_syncs": step.host_syncs,
            "memory_gb": step.memory_bytes / 1e9, "bytes_per_game_step": step.bytes / games,
            "estimated_us": seconds * 1e6, "estimated_steps_per_s": games / seconds,
            "few_block_kernels": sum(k.launches for k in step.by_kernel
                                     if 0 < k.blocks <= FEW_BLOCKS),
            "spilling": [k._asdict() for k in step.spilling()]}


def write_calibration(path: Path, programs: dict, code: str):
    """The kernels of random play's H100 programs, one program a line (gzip'd JSON lines)."""
    with gzip.open(path, "wt") as f:
        for (env, loop, games), program in programs.items():
            f.write(json.dumps({"env": env, "loop": loop, "games": games, "code": code,
                                "by_kernel": [list(k) for k in program.by_kernel]}) + "\n")


def calibration_programs(path: Path = CALIBRATION_DATA) -> list[dict]:
    """The programs `write_calibration` wrote: {env, loop, games, code, step (a Program of
    one step's kernels)}."""
    with gzip.open(path, "rt") as f:
        records = [json.loads(line) for line in f]
    return [r | {"step": G.Program(kernels=0, host_syncs=0, bytes=0, memory_bytes=0,
                                   costliest=[], by_kernel=tuple(G.Kernel(*k)
                                                                 for k in r.pop("by_kernel")))}
            for r in records]


def calibration(model: G.TimeModel = G.H100_MODEL, path: Path = CALIBRATION_DATA) -> list[dict]:
    """The model's estimate of each measured random-play program (`MEASURED_STEPS_PER_S`)
    from its kernels compiled at the measured code (`CALIBRATION_DATA`), and its error."""
    rows = []
    for r in calibration_programs(path):
        key = (r["env"], r["loop"], r["games"])
        if key not in MEASURED_STEPS_PER_S:
            continue
        measured_us = r["games"] / MEASURED_STEPS_PER_S[key] * 1e6
        estimated_us = model.seconds(r["step"]) * 1e6
        spill_us = sum(k.launches * model.spill_seconds(k) for k in r["step"].by_kernel) * 1e6
        rows.append({"env": r["env"], "loop": r["loop"], "games": r["games"], "code": r["code"],
                     "measured_us": measured_us, "estimated_us": estimated_us,
                     "spill_us": spill_us, "error": estimated_us / measured_us - 1})
    return sorted(rows, key=lambda r: (r["loop"] != measure.PLAIN, r["games"], r["env"]))


def program_record(program: G.Program, unit: float) -> dict:
    seconds = G.H100_MODEL.seconds(program)
    return {"kernels": program.kernels, "host_syncs": program.host_syncs,
            "bytes": program.bytes, "memory_gb": program.memory_bytes / 1e9,
            "estimated_s": seconds, "estimated_per_s": unit / seconds,
            "costliest": [{"bytes": b, "kernel": name, "shape": shape[:120]}
                          for b, name, shape in program.costliest[:5]],
            "spilling": [k._asdict() for k in program.spilling()[:5]]}


def tpu_record(program: G.Program) -> dict:
    return {"operations": program.kernels, "memory_gb": program.memory_bytes / 1e9}


ESTIMATE = "H100 estimate (compiled program, model in docs/gpu-program.md)"


def markdown(result: dict) -> str:
    by = {(r["env"], r["loop"], r["games"]): r for r in result["random_play"]}
    lines = [
        "# The GPU program, compiled for an H100 on a CPU", "",
        f"`{result['command']}`, code at git {result['code']}, jax {result['jax']}, "
        f"{result['date']}; {result['seconds']:.0f} s on this machine ({os.cpu_count()} cores, "
        f"load average (1 min) {result['load'][0]:.1f} at the start and {result['load'][1]:.1f} "
        "at the end: other processes competed for the cores above their count). Every time "
        f"below but the compile times and the measured column of the model's calibration is "
        f"an **{ESTIMATE}**, not a measurement: no GPU ran it. Kernels, host syncs, device "
        "memory, launch sizes, registers and spills are facts of the compiled program; bytes "
        "are an estimate of what its kernels read and write.", "",
        "Measured on a GPU: the calibration table below (" + MEASURED + "), and "
        "[speed.md](speed.md). `python -m benchmarks.bench --gpu --out DIR` measures "
        "on a GPU machine.", "", *carried_note(result.get("carried")),
        "## Random play", "",
        f"The two loops that `bench --gpu` times on a GPU ({RANDOM_STEPS} steps a call): "
        "`plain`, a `lax.scan` of `env.step` from new games; `with resets`, the benchmark's "
        "loop (finished games re-initialised); both draw each action uniformly over the legal "
        "mask with `agents.uniform_legal` for both games. "
        f"Per step; `≤ {FEW_BLOCKS} blocks`: launches of kernels of {FEW_BLOCKS} blocks or "
        "fewer (the H100 has 132 multiprocessors); `spilling`: kernels that spill registers.",
        "",
        f"| games | env | loop | kernels | ≤ {FEW_BLOCKS} blocks | spilling | bytes/game-step | "
        "device memory | estimated µs/step | estimated steps/s | trictrac / pgx (estimates) |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["random_play"]:
        peer = by.get((measure.BACKGAMMON, r["loop"], r["games"]))
        ratio = (f"{r['estimated_steps_per_s'] / peer['estimated_steps_per_s']:.2f}"
                 if r["env"] == measure.TRICTRAC and peer else "")
        lines.append(f"| {r['games']:,} | {r['env']} | {r['loop']} | {r['kernels']:.1f} | "
                     f"{r['few_block_kernels']:.0f} | {len(r['spilling'])} | "
                     f"{r['bytes_per_game_step']:,.0f} | {r['memory_gb']:.2f} GB | "
                     f"{r['estimated_us']:,.0f} | {r['estimated_steps_per_s'] / 1e6:.2f}M | "
                     f"{ratio} |")
    lines += spill_section(result["random_play"])
    lines += compile_section(result["compile"])
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
                  MEASURED_BASE_YAML[key], "", "The costliest kernels by bytes:", "",
                  "| bytes a call | kernel | shape |", "|---|---|---|"]
        lines += [f"| {k['bytes'] / 1e9:.2f} GB | `{k['kernel']}` | `{k['shape']}` |"
                  for k in r["costliest"]]
        lines += ["", "Its kernels that spill the most: " + (", ".join(
            f"`{k['name']}` ({k['spill_stores'] + k['spill_loads']:,} bytes a thread, "
            f"{k['blocks']:,} x {k['threads']:,})" for k in r["spilling"]) or "none") + "."]
    t = result["tpu"]
    lines += ["", "## TPU v5e: what the compiled program says (no time)", "",
              "Compiled for one v5e chip (16 GB) by libtpu on this CPU. XLA's cost analysis "
              "for a TPU gives no usable time, so there is none here: the figures are the "
              "compiled program's own: device memory, and its top-level operations (mostly "
              "fusions) with each loop's body counted once (libtpu's loops carry no trip "
              "count).", "",
              "| program | operations | device memory |", "|---|---|---|"]
    lines += [f"| random play, {r['env']}, {r['games']:,} games, {r['loop']} ({RANDOM_STEPS} "
              f"steps) | {r['kernels']:.1f} | {r['memory_gb']:.2f} GB |"
              for r in t["random_play"]]
    lines += [f"| configs/tpu.yaml, one training iteration ({t['iteration_what']}; its "
              f"{t['searches']} searches inside) | "
              f"{t['iteration']['operations']:,.0f} | {t['iteration']['memory_gb']:.2f} GB |"]
    return "\n".join(lines + model_section(result["calibration"], result.get("issue_fit"))
                     + measured_section(result["random_play"], result.get("measured"))) + "\n"


_LAUNCH = re.compile(r"grid:(\d+),(\d+),(\d+) block:(\d+),(\d+),(\d+)")


def instruction_rate(trace: list[dict], kernels, top: int = 4) -> tuple[float, list[dict]]:
    """Thread-instructions a second issued by the `top` costliest kernels of a measured
    profile (`bench --gpu`'s `trace["kernels"]`: name, µs a step, launch) that the compiled
    program `kernels` has under the same name and launch size: blocks x threads x PTX
    instructions over the measured time. Their median (0 with none), and the rows it rests on."""
    compiled = {k.name: k for k in kernels}
    rows = []
    for t in sorted(trace, key=lambda t: -t["us_per_step"]):
        k = compiled.get(t["kernel"])
        launch = _LAUNCH.search(t["launch"])
        if not k or not k.instructions or not launch:
            continue
        g = [int(x) for x in launch.groups()]
        if (g[0] * g[1] * g[2], g[3] * g[4] * g[5]) != (k.blocks, k.threads):
            continue
        issued = k.blocks * k.threads * k.instructions
        rows.append({"kernel": k.name, "us": t["us_per_step"], "blocks": k.blocks,
                     "threads": k.threads, "instructions": k.instructions, "bytes": k.bytes,
                     "rate": issued / (t["us_per_step"] * 1e-6)})
        if len(rows) == top:
            break
    return (statistics.median(r["rate"] for r in rows) if rows else 0.0), rows


def newest_measurement(path: Path = gpu_session.COMMITTED_TABLE) -> dict | None:
    """The committed `bench --gpu` table's random play, with its device and the engine it
    measured, and whether that engine is this one (its fingerprint); None without a table."""
    table = gpu_session.read_json(path)
    if not table:
        return None
    device = table["device"]
    return {"device": device["device_kind"], "jax": device["jax"], "date": device["date"],
            "engine": device["engine"], "command": table["command"],
            "current": device["engine"]["fingerprint"]
            == gpu_session.engine_identity()["fingerprint"],
            "random_play": [{"env": r["env"], "loop": r["loop"], "games": r["batch"],
                             "steps_per_s": r["steps_per_s"]} for r in table["random_play"]]}


def issue_bullet(m: G.TimeModel, fit: dict | None) -> list[str]:
    """The instruction term's constant and the measured kernels it rests on."""
    line = (f"* **{m.instructions_per_second / 1e12:.0f} T thread-instructions a second**: the "
            "chip's issue rate as XLA's kernels reach it (the H100's peak: 132 "
            "multiprocessors x 4 schedulers x 32 lanes x 1.98 GHz, 33 T); a kernel's "
            "instructions are its PTX counted (`gpu_program.ptx_instructions`; a kernel that "
            "loops runs more). It rules the step's kernels over the candidates, which "
            "issue far more instructions a byte than the kernels the constants above were "
            "fitted on. A Pallas kernel (the \"gpu-tiles\" lowering's move lists, "
            "`moves.tiles`) is estimated by the same terms, Triton's PTX counted and its "
            "operands' bytes once: it rests on this rate and the constants above, fitted on "
            "XLA's kernels alone, until a GPU times it (`experiments.lowering_ab`). Fitted "
            "(`gpu_report.instruction_rate`, then rounded) on the step's costliest kernels in "
            "a measured profile, each compiled here under the same name and launch size")
    if not fit:
        return [line + f" ({G.INSTRUCTIONS_FITTED_ON}; the newest measured table is of "
                "another engine, so no profile here refits it)."]
    return [line + f" ({G.INSTRUCTIONS_FITTED_ON}). The newest measured profile, of this "
            f"engine ({fit['device']}, engine {fit['engine']['commit']}, {fit['games']:,} "
            f"games), gives its costliest kernels a median of {fit['rate'] / 1e12:.1f} T/s:", "",
            "| kernel | measured µs a step | blocks x threads | PTX instructions | "
            "bytes (estimate) | thread-instructions a second |",
            "|---|---|---|---|---|---|",
            *[f"| `{r['kernel']}` | {r['us']:,.1f} | {r['blocks']:,} x {r['threads']} | "
              f"{r['instructions']:,} | {r['bytes'] / 1e6:,.0f} MB | {r['rate'] / 1e12:.1f} T |"
              for r in fit["rows"]]]


def measured_section(estimates: list[dict], measured: dict | None) -> list[str]:
    """The model's estimates of this engine beside the newest measured table (not fitted
    on), when that table measured this engine."""
    lines = ["## The model against the newest measurement", ""]
    if not measured:
        return lines + ["No measured table is committed (`benchmarks/data/bench-gpu.json`).", ""]
    engine = measured["engine"]
    said = (f"{measured['device']}, engine {engine['commit']} (fingerprint "
            f"{engine['fingerprint']}), jax {measured['jax']}, {measured['date']}, "
            f"`{measured['command']}` (`benchmarks/data/bench-gpu.md`)")
    if not measured["current"]:
        return lines + [f"The newest measured table ({said}) is of another engine: no row "
                        "compares with these estimates.", ""]
    est = {(r["env"], r["loop"], r["games"]): r["estimated_us"] for r in estimates}
    rows = [(r["env"], r["loop"], r["games"], r["games"] / r["steps_per_s"] * 1e6,
             est.get((r["env"], r["loop"], r["games"])))
            for r in measured["random_play"]]
    lines += [f"Measured on one {said}: this engine, on another device than the model's "
              "calibration (an H200: the H100's multiprocessors with 1.4x its memory "
              "bandwidth). The rows below were not fitted on.", "",
              "| games | loop | env | measured µs/step | estimated µs/step (H100) | "
              "estimated / measured |", "|---|---|---|---|---|---|"]
    lines += [f"| {games:,} | {loop} | {env} | {us:,.0f} | {e:,.0f} | {e / us:.2f} |"
              for env, loop, games, us, e in sorted(rows, key=lambda r: (r[1], r[2], r[0]))
              if e is not None]
    plain = {env: [e / us for env2, loop, games, us, e in rows
                   if env2 == env and loop == measure.PLAIN and e is not None]
             for env in (measure.TRICTRAC, measure.BACKGAMMON)}
    lines += ["", "Plain loop, estimated over measured: " + "; ".join(
        f"{env} {min(r):.2f}-{max(r):.2f}" for env, r in plain.items() if r) + ".", ""]
    return lines


def spill_section(rows) -> list[str]:
    """The kernels that spill most, by size (trictrac's plain loop)."""
    lines = ["", "## Kernels that spill", "",
             "Registers, stack and spill bytes a thread from `ptxas -v` over the PTX that XLA "
             "dumps (pip's `nvidia-cuda-nvcc-cu12`), launch sizes from XLA's thunk sequence; "
             "trictrac's plain loop, the most spill bytes first (at most 3 a size). A spilled "
             "value goes to local memory, in the GPU's memory unless cached: traffic no HLO "
             "shape shows. `tests/test_spills.py` fails when any kernel of `env.step` spills "
             "registers at 1,024, 8,192, 32,768 or 131,072 games.", "",
             "| games | kernel | spill stores + loads a thread | stack | registers | "
             "blocks x threads | estimated µs a step of its spills |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["env"] == measure.TRICTRAC and r["loop"] == measure.PLAIN:
            lines += [f"| {r['games']:,} | none |  |  |  |  |  |"] if not r["spilling"] else [
                f"| {r['games']:,} | `{k['name']}` | {k['spill_stores']:,} + "
                f"{k['spill_loads']:,} B | {k['stack']:,} B | {k['registers']} | "
                f"{k['blocks']:,} x {k['threads']:,} | "
                f"{G.H100_MODEL.spill_seconds(G.Kernel(**k)) * k['launches'] * 1e6:,.0f} |"
                for k in r["spilling"][:3]]
    return lines


def compile_section(rows) -> list[str]:
    if not rows:
        return []
    return ["", "## Compile time (measured on this CPU)", "",
            "Seconds from the first trace of the random loop "
            f"({measure.COMPILE_GAMES:,} new games, then {RANDOM_STEPS} steps) until it is "
            "compiled, for this CPU (its lowering) and for an H100 (the GPU lowering), in a "
            "fresh process as a user meets it: one-time setup such as the engine's first "
            "positions included (`measure.compile_seconds`). A researcher pays it at every "
            "change of a shape.", "", measure.compile_table(rows)]


def carried_note(carried: dict | None) -> list[str]:
    if not carried:
        return []
    return [f"This run compiled random play and read the model only (`--h100-random-only`): "
            "the compile times, base.yaml's decision and iteration and the TPU are carried "
            f"from `{carried['command']}` at code {carried['code']}, {carried['date']}, "
            "their estimates made with that run's model.", ""]


def model_section(rows, fit: dict | None = None) -> list[str]:
    m = G.H100_MODEL
    worst = max((abs(r["error"]) for r in rows if r["loop"] == measure.PLAIN), default=0)
    codes = " and ".join(sorted({r["code"] for r in rows}))
    lines = ["", "## The model", "",
             "estimated seconds = Σ over kernel launches [ "
             f"{m.seconds_per_kernel * 1e6:.1f} µs + max((bytes + {m.spill_weight:g} × spill "
             f"traffic) / min({m.bytes_per_second / 1e12:.1f} TB/s, blocks × "
             f"{m.bytes_per_second_per_block / 1e9:.0f} GB/s), blocks × threads × PTX "
             f"instructions / {m.instructions_per_second / 1e12:.0f} T/s) ] + "
             f"{m.seconds_per_host_sync * 1e6:.0f} µs × host syncs "
             "(`gpu_program.H100_MODEL`), where a launch's spill traffic = its spill bytes a "
             "thread (ptxas) × its threads × max(1, elements of its largest array / threads / "
             f"{m.elements_per_spill_trip}). Each constant and what it was fitted on:", "",
             f"* **{m.seconds_per_kernel * 1e6:.1f} µs a launch**: the latency of a kernel in "
             "a chain of dependent kernels; it rules small batches (1,024 games: ~60-70 "
             "kernels a step).",
             f"* **{m.bytes_per_second / 1e12:.1f} TB/s**: the whole chip's bandwidth as "
             "XLA's kernels draw it, by the byte estimate (below the H100's 3.35 TB/s peak: "
             "it absorbs what that estimate misses or overcounts); it rules large batches.",
             f"* **{m.bytes_per_second_per_block / 1e9:.0f} GB/s a block**: a kernel of few "
             "blocks cannot draw the whole chip's bandwidth (a column reduction with the "
             "games as its minor axis gets games / 128 blocks: 8 at 1,024 games, on 132 "
             "multiprocessors); below "
             f"{m.bytes_per_second / m.bytes_per_second_per_block:.0f} blocks a kernel draws "
             "this much a block.",
             f"* **{m.elements_per_spill_trip} elements a trip, spill weight "
             f"{m.spill_weight:g}**: ptxas counts the spill code once; a thread runs it once "
             "a trip through its loop, and the kernel that spills most at 131,072 games "
             "reduces 256 elements a thread in 16 trips (`../shared/gpu-proxy/README.md`: "
             "read from its PTX), taken for every kernel; a byte of that traffic costs a "
             "quarter of a byte of the kernel's own (local memory is partly cached in L1 "
             "and L2).",
             f"* **{m.seconds_per_host_sync * 1e6:.0f} µs a host sync**: fitted at 68ff02b "
             "(6 host syncs a step then, none since); not refitted.",
             *issue_bullet(m, fit), "",
             "The first four constants were fitted together, then rounded, by minimising the "
             "largest |log(estimate / measured)| over the 8 rows of the plain loop below "
             "(Nelder-Mead), the estimate made on the kernels of each measured program "
             f"compiled here with jax 0.10.2 at {codes}, whose engine is the measured code's "
             "(`benchmarks/data/h100-calibration.jsonl.gz`, written by `bench --h100 "
             "--h100-calibration`; its kernels were stored without their instructions, so "
             "these estimates are the model's without its instruction term). The "
             "measurements: " + MEASURED + ".", "",
             "| games | loop | env | measured µs/step | estimated µs/step | of which spills | "
             "error |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['games']:,} | {r['loop']} | {r['env']} | {r['measured_us']:,.0f} | "
              f"{r['estimated_us']:,.0f} | {r['spill_us']:,.0f} | {r['error']:+.0%} |"
              for r in rows]
    by = {(r["env"], r["loop"], r["games"]): r for r in rows}
    ratios = [(f"{games:,}", loop, *(f"{by[measure.BACKGAMMON, loop, games][k] / r[k]:.2f}"
                                     for k in ("measured_us", "estimated_us")))
              for (env, loop, games), r in by.items()
              if env == measure.TRICTRAC and (measure.BACKGAMMON, loop, games) in by]
    lines += ["", "Trictrac's steps/s over pgx backgammon's, measured and estimated:", "",
              measure.table(("games", "loop", "measured", "estimated"), ratios)]
    resets = lambda env: [r["error"] for r in rows
                          if r["loop"] == measure.WITH_RESETS and r["env"] == env]
    lines += ["", f"Plain loop: every estimate within {worst:.0%} of the measurement. With "
              "resets (not fitted): trictrac within "
              f"{max(map(abs, resets(measure.TRICTRAC)), default=0):.0%}; pgx backgammon's "
              f"runs high (up to {max(resets(measure.BACKGAMMON), default=0):+.0%}), where "
              "the resets (its `init` for every game every step) double its estimated bytes; "
              "not investigated. The earlier model (1.8 µs a kernel + bytes / 1.15 TB/s, "
              "fitted at 68ff02b) saw no spills and no idle multiprocessors: it estimated "
              "trictrac / pgx at 0.82 / 1.13 / 1.21 / 1.14 where the H100 measured 0.48 / "
              "0.52 / 1.01 / 0.34.", ""]
    return lines


def searched(config: config_lib.Config) -> str:
    s = config.search
    return (f"{config.selfplay.batch_size:,} games, {s.num_simulations} simulations, "
            f"{s.algorithm}, {s.max_actions} action columns")


def iterated(config: config_lib.Config) -> str:
    sp, tc = config.selfplay, config.training
    return (f"{sp.steps_per_iteration} self-play decisions of {sp.batch_size:,} games (a "
            f"search each), then {tc.updates_per_iteration} updates of "
            f"{tc.batch_size:,} decisions, replay capacity {config.replay.capacity:,}")


def run(args, command) -> dict:
    """Compile, print the report and write it (markdown, JSON beside it)."""
    os.environ["TRICTRAC_LOWERING"] = "gpu"  # the engine's accelerator lowering, as an H100 runs it
    # Compile-only devices need no backend: none is looked for (a CUDA or TPU one would fail
    # here, noisily).
    jax.config.update("jax_platforms", "cpu")
    start, load_at_start = time.perf_counter(), os.getloadavg()[0]
    names, notes = measure.available_envs(args.no_pgx)
    games = args.h100_games or list(GAMES)
    loops = args.h100_loops or list(LOOPS)
    output = args.output or Path("docs/gpu-program.md")
    # what a random-play-only run keeps, read first: a missing report fails before compiling
    carried = carried_from(output.with_suffix(".json")) if args.h100_random_only else None
    rows, programs = random_rows(names, games, loops, measure.log)
    code = code_version()
    if args.h100_calibration:
        write_calibration(args.h100_calibration, programs, code)
    measured = newest_measurement()
    result = {"command": command, "code": code, "jax": jax.__version__,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "random_play": rows, "calibration": calibration(), "notes": notes,
              "model": G.H100_MODEL._asdict(), "measured": measured,
              "issue_fit": issue_fit(measured, games)}
    result |= carried or other_sections(names, min(games), args.no_compile_time)
    result["seconds"] = time.perf_counter() - start
    result["load"] = (load_at_start, os.getloadavg()[0])
    measure.write_report(output, markdown(result), result)
    return result


def other_sections(names, fewest_games: int, no_compile_time: bool) -> dict:
    """The report's sections besides random play: compile times, base.yaml's decision and
    training iteration for an H100, configs/tpu.yaml's for a TPU v5e (`CARRIED`)."""
    compile_times = [] if no_compile_time else [
        *measure.compile_rows(names, measure.COMPILE_GAMES, RANDOM_STEPS),
        *measure.compile_rows(names, measure.COMPILE_GAMES, RANDOM_STEPS, G.H100.name)]
    config = config_lib.load_config(BASE_CONFIG)
    sp = config.selfplay
    measure.log("one training iteration of configs/base.yaml (its searches inside)")
    iteration, decision = iteration_program(config)
    search = program_record(decision, sp.batch_size) | {"memory_gb": None}  # the loop's
    iteration = program_record(iteration, sp.batch_size * sp.steps_per_iteration)
    tpu_config = config_lib.load_config(TPU_CONFIG)
    measure.log("configs/tpu.yaml for a TPU v5e: one training iteration")
    # A TPU compile takes minutes at large batches: the smallest game count and the plain
    # loop only, and the training iteration alone (its searches are inside it).
    tpu = {"random_play": random_rows(names, [fewest_games], [measure.PLAIN], measure.log,
                                      G.TPU_V5E)[0],
           "iteration": tpu_record(iteration_program(tpu_config, G.TPU_V5E)[0]),
           "searches": tpu_config.selfplay.steps_per_iteration,
           "iteration_what": iterated(tpu_config)}
    return {"compile": compile_times, "search": search, "iteration": iteration, "tpu": tpu,
            "search_what": searched(config) + ": one self-play decision "
            "of every game (a search, then the step), read from the training iteration's "
            "program (one iteration of its self-play loop; device memory: the iteration's).",
            "iteration_what": iterated(config) + "."}


CARRIED = ("compile", "search", "iteration", "tpu", "search_what", "iteration_what")


def carried_from(path: Path) -> dict:
    """The sections a random-play-only run keeps from the report it rewrites, and where they
    came from (`carried`: that run's command, code and date)."""
    previous = gpu_session.read_json(path)
    if not previous or any(k not in previous for k in CARRIED):
        raise SystemExit(f"--h100-random-only keeps the other sections of {path}, which has "
                         "none: run `python -m benchmarks.bench --h100` once first")
    source = previous.get("carried") or {k: previous[k] for k in ("command", "code", "date")}
    return {k: previous[k] for k in CARRIED} | {"carried": source}


def issue_fit(measured: dict | None, games: list[int]) -> dict | None:
    """The instruction rate read from the newest measured profile beside this engine's step
    compiled here (`instruction_rate`), when that profile measured this engine at one of
    `games` (a run of other sizes skips it)."""
    trace = (gpu_session.read_json(gpu_session.COMMITTED_TABLE) or {}).get("trace")
    if not measured or not measured["current"] or not trace or trace["games"] not in games:
        return None
    measure.log(f"the step at {trace['games']:,} games, beside the measured profile")
    rate, rows = instruction_rate(trace["kernels"], step_program(trace["games"]).by_kernel)
    if not rows:  # no measured kernel compiled here as it ran
        return None
    return {"rate": rate, "rows": rows, "games": trace["games"], "device": measured["device"],
            "engine": measured["engine"]}
