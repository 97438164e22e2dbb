"""The evaluation's share of a configs/base.yaml run on one H100, estimated from the compiled
programs (`tools/gpu_program.py`, no GPU needed): one turn of each evaluation match (both
agents' moves, then the step, for every game) and one training iteration, compiled for an
H100 on this CPU and read; `gpu_program.H100_MODEL` turns them into seconds.

    python -m experiments.evaluation_h100                  # base.yaml's evaluation
    python -m experiments.evaluation_h100 --before         # and the one it replaced
    python -m experiments.evaluation_h100 --candidate 'evaluation.games=512'   # and another

A match's turns are a loop of unknown length (until every game has ended): its seconds are
the turn's times `--turns`, the longest game in decisions of both players. The default is
the count that makes the estimate of the evaluation measured on an H100 (1,024 games against
each of greedy, random and first, the lookahead over 32 moves: 54 s,
../shared/gpu-measured/base-metrics.jsonl, code at ea19265) equal to its measurement, so it
also absorbs the model's error on these programs. Compilation is not estimated: the
evaluators' is taken as measured there (34 s for three, 11 s each). Every time printed is an
H100 estimate (compiled program, model in docs/gpu-program.md), never a measurement.

Supports docs/training.md, "The evaluation's share" (the study: docs/journal/evaluation-share.md).
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys

from trictrac_jax.tools import gpu_program as G  # before any JAX computation

import jax

from trictrac_jax.az import config as config_lib
from trictrac_jax.league import network_agents
from trictrac_jax.az import training as T
from trictrac_jax.league.matches import play_match
from trictrac_jax.az import run
from trictrac_jax.env import Trictrac
from benchmarks import measure
from benchmarks.gpu_report import BASE_CONFIG, iteration_program

LABEL = "H100 estimate (compiled program, model in docs/gpu-program.md)"
MATCH_LOOP = "evaluation.py:play_match"  # `gpu_program.Loop.where` of a match's turns
# What was measured on one H100 (base-metrics.jsonl, code at ea19265): the evaluation before
# (three opponents), its seconds once compiled, and its evaluators' compilation.
BEFORE = ["evaluation.opponents=[greedy, random, first]", "evaluation.games=1024",
          "evaluation.lookahead=32", "evaluation.every=10"]
BEFORE_MEASURED_S = 54.0
COMPILE_MEASURED_S = 34.0 / 3  # one evaluator
ITERATION_MEASURED_S = 0.71


def turn_program(config: config_lib.Config, opponent: str, target: G.Target = G.H100) -> G.Program:
    """One turn of the run's evaluation match against `opponent`, read from the compiled
    match (its loop's body)."""
    ev = config.evaluation
    play = network_agents.Play(lookahead=ev.lookahead, rolls=ev.rolls,
                               simulations=ev.num_simulations)
    other = network_agents.load_agent(opponent, play)
    env = Trictrac(max_steps=config.env.max_steps)

    def match(params, key):
        return play_match(env, network_agents.checkpoint_agent(params, config, play), other, key,
                          ev.games)
    key = jax.random.PRNGKey(0)
    params = jax.eval_shape(lambda k: T.new_state(config, k).params, key)
    (turn,) = [loop.body for loop in G.loops(G.compile_for(target, match, params, key))
               if loop.where == MATCH_LOOP]
    return turn


def turn_seconds(config: config_lib.Config) -> dict[str, float]:
    """Each opponent's turn, seconds (H100 estimate)."""
    seconds = {}
    for opp in config.evaluation.opponents:
        measure.log(f"compiling the match against {opp} ({config.evaluation.games} games) "
                    f"for an H100")
        seconds[opp] = G.H100_MODEL.seconds(turn_program(config, opp))
    return seconds


def share_rows(turn_s: float, turns: float, iteration_s: float, config: config_lib.Config) -> dict:
    """An evaluation's seconds, and its share of the wall clock at `evaluation.every`
    iterations and over the run (its evaluators compiled once)."""
    ev, iterations = config.evaluation, config.training.iterations
    eval_s = turn_s * turns
    evaluations = iterations // ev.every
    spent = COMPILE_MEASURED_S * len(ev.opponents) + evaluations * eval_s
    return {"eval_s": eval_s, "every_share": eval_s / (ev.every * iteration_s + eval_s),
            "evaluations": evaluations, "run_share": spent / (iterations * iteration_s + spent)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", action="store_true",
                   help="also the evaluation base.yaml had at ea19265 (and calibrate --turns)")
    p.add_argument("--turns", type=float, help="turns of a match (default: calibrated, above)")
    p.add_argument("--candidate", action="append", default=[], metavar="'KEY=VALUE ...'",
                   help="also base.yaml with these overrides (repeatable)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    os.environ["TRICTRAC_LOWERING"] = "gpu"  # the engine's accelerator lowering, as an H100 runs it
    jax.config.update("jax_platforms", "cpu")  # compile-only devices need no backend
    config = config_lib.load_config(BASE_CONFIG)
    measure.log("compiling one training iteration of configs/base.yaml for an H100")
    iteration_s = G.H100_MODEL.seconds(iteration_program(config)[0])
    settings = {"base.yaml": config,
                **{c: config_lib.load_config(BASE_CONFIG, shlex.split(c)) for c in args.candidate}}
    if args.before or args.turns is None:
        settings = {"before (ea19265)": config_lib.load_config(BASE_CONFIG, BEFORE), **settings}
    turns = {name: turn_seconds(c) for name, c in settings.items()}
    count = args.turns or BEFORE_MEASURED_S / sum(turns["before (ea19265)"].values())
    print(f"`{shlex.join(['python', '-m', 'experiments.evaluation_h100', *argv])}`, code at "
          f"{run.code_version()}, jax {jax.__version__}: one training iteration "
          f"{iteration_s:.3f} s ({LABEL}; measured {ITERATION_MEASURED_S} s); {count:.0f} turns "
          f"a match{' (calibrated)' if args.turns is None else ''}.\n")
    print(f"| evaluation | opponents, games, play | seconds a turn | seconds an evaluation | "
          f"share at evaluation.every | evaluations in the run's iterations | share over "
          f"the run, evaluators compiled once |\n|---|---|---|---|---|---|---|")
    for name, c in settings.items():
        ev = c.evaluation
        for estimate, base_s in (("estimate", iteration_s), ("measured", ITERATION_MEASURED_S)):
            row = share_rows(sum(turns[name].values()), count, base_s, c)
            print(f"| {name}, iteration {estimate} | {', '.join(ev.opponents)}; {ev.games:,}; "
                  f"lookahead {ev.lookahead}{' over the rolls' if ev.rolls else ''} | "
                  f"{' + '.join(f'{s * 1e3:.1f} ms' for s in turns[name].values())} | "
                  f"{row['eval_s']:.1f} | {row['every_share']:.1%} (every {ev.every}) | "
                  f"{row['evaluations']} | {row['run_share']:.1%} |")
    return turns


if __name__ == "__main__":
    main()
