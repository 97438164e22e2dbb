"""One self-play decision of each candidate recipe for configs/base.yaml, compiled for an H100
on this CPU (no GPU needed) and read (`tools/gpu_program.py`): kernels, host syncs, bytes,
device memory and the time `gpu_program.H100_MODEL` estimates per decision of every game.

    python -m experiments.recipes_h100                       # every recipe of recipes.SEARCHES
    python -m experiments.recipes_h100 --recipe lookahead16 --games 2048

What is compiled: `selfplay.decide` alone (the recipe's search with self-play's noise, then
the step and the new games), base.yaml's network and game count, the engine's GPU lowering
(`TRICTRAC_LOWERING=gpu`). Device memory is that program's: the network, the games and the
decision's temporaries (no replay buffer, no updates). Every time is an estimate of the
compiled program, never a measurement.

Supports docs/training.md, "Choosing base.yaml" (the seconds a decision costs on an H100).
"""
from __future__ import annotations

import argparse
import functools
import os
import shlex
import sys
import time

from trictrac_jax.tools import gpu_program as G  # before any JAX computation

import jax

from trictrac_jax.az import config as config_lib
from trictrac_jax.az import selfplay
from trictrac_jax.az import training as T
from trictrac_jax.az.model import model_from_config
from trictrac_jax.az import run
from benchmarks import measure
from benchmarks.gpu_report import BASE_CONFIG, program_record
from experiments.recipes import SEARCHES

TIME_LABEL = "H100 estimate (compiled program, model in docs/gpu-program.md)"


def decision_program(config: config_lib.Config, target: G.Target = G.H100, top: int = 10
                     ) -> G.Program:
    """One self-play decision of every game of `config` (its search, exploring, then the
    step), compiled alone for `target`'s device and read (its `top` costliest kernels)."""
    model = model_from_config(config)
    decide = functools.partial(selfplay.decide, model=model, search_config=config.search)
    key = jax.random.PRNGKey(0)
    params = jax.eval_shape(lambda k: T.new_state(config, k).params, key)
    games = jax.eval_shape(
        lambda k: selfplay.start(k, config.selfplay.batch_size), key)
    return G.read(G.compile_for(target, decide, params, games, key, donate_argnums=(1,)), top)


def recipe_row(name: str, overrides, games: int) -> dict:
    """The compiled decision of recipe `name` (base.yaml with `overrides`) at `games`
    games, as `gpu_report.program_record` (moves/s per decision of every game)."""
    config = config_lib.load_config(BASE_CONFIG, [*overrides, f"selfplay.batch_size={games}"])
    start = time.perf_counter()
    record = program_record(decision_program(config), games)
    return {"recipe": name, "overrides": list(overrides), "games": games, **record,
            "compile_s": time.perf_counter() - start}


def table(rows) -> str:
    """The rows as a markdown table."""
    lines = [f"| recipe (base.yaml +) | kernels | host syncs (lower bound) | estimated bytes | "
             f"device memory | seconds per decision of every game, {TIME_LABEL} | "
             f"moves/s, {TIME_LABEL} |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        what = ", ".join(r["overrides"]) or "(as is)"
        lines.append(f"| {r['recipe']}: {what} | {r['kernels']:,.0f} | {r['host_syncs']:,.0f} | "
                     f"{r['bytes'] / 1e9:,.1f} GB | {r['memory_gb']:.2f} GB | "
                     f"{r['estimated_s']:.3f} | {r['estimated_per_s']:,.0f} |")
    return "\n".join(lines)


def costliest(rows) -> str:
    """Each recipe's costliest kernels by bytes, as markdown lists."""
    lines = []
    for r in rows:
        lines += [f"- {r['recipe']}: " + "; ".join(
            f"`{k['kernel']}` {k['bytes'] / 1e9:.2f} GB `{k['shape']}`"
            for k in r["costliest"][:3])]
    return "\n".join(lines)


def main(argv=None):
    """Compile each recipe's decision and print the table; returns its rows."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--recipe", action="append", choices=sorted(SEARCHES),
                   help="a recipe to compile (repeatable; default: all)")
    p.add_argument("--games", type=int,
                   default=config_lib.load_config(BASE_CONFIG).selfplay.batch_size,
                   help="games decided at once (default: base.yaml's selfplay.batch_size)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    os.environ["TRICTRAC_LOWERING"] = "gpu"  # the engine's accelerator lowering, as an H100 runs it
    jax.config.update("jax_platforms", "cpu")  # compile-only devices need no backend
    rows = []
    for name in args.recipe or list(SEARCHES):
        measure.log(f"compiling one decision of {name} for an H100")
        rows.append(recipe_row(name, SEARCHES[name], args.games))
    command = shlex.join(["python", "-m", "experiments.recipes_h100", *argv])
    print(f"One self-play decision of {args.games:,} games, `{command}`, code at git "
          f"{run.code_version()}, jax {jax.__version__}:\n")
    print(table(rows) + "\n\nThe costliest kernels by bytes a call:\n\n" + costliest(rows))
    return rows


if __name__ == "__main__":
    main()
