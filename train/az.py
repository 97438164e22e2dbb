"""AlphaZero-style training of a Trictrac player by self-play with tree search.

    python train/az.py --config configs/quick.yaml
    python train/az.py --config configs/base.yaml --set search.num_simulations=64
    python train/az.py --resume runs/quick          # continue a killed run
    python train/az.py --config configs/quick.yaml --init-from champion   # warm start

Writes RUN_DIR/config.yaml, RUN_DIR/metrics.jsonl (one record per iteration), TensorBoard
events when asked for (logging.tensorboard) and tensorboardX or torch is installed, and orbax
checkpoints in RUN_DIR/checkpoints. Evaluation takes at most `evaluation.max_share` of the
wall clock (docs/training.md, "The evaluation's share"). The loop is
`trictrac_jax.az.run.train`, started by `trictrac_jax.league.runs.train_az`.
"""
from __future__ import annotations

import pathlib
import sys

import jax

from trictrac_jax import devices
from trictrac_jax.az import run
from trictrac_jax.az import training as T
from trictrac_jax.league import runs


def parse_args(argv=None):
    p = run.run_parser(__doc__.split("\n")[0], "configs/base.yaml", "search.num_simulations=64")
    p.add_argument("--init-from", metavar="NETWORK",
                   help="start a new run from this network with a fresh optimiser: champion, "
                        "a network file (*.msgpack, the champion's format), a run directory "
                        "(its best checkpoint) or a checkpoint (sets run.init_from)")
    return p.parse_args(argv)


def launch(args) -> None:
    """The run `args` ask for: a new one, or the one to resume."""
    T.maybe_init_distributed()  # a resume restores onto all the devices
    # one process reports; errors come from each
    log = (lambda line: print(line, flush=True)) if jax.process_index() == 0 else \
        (lambda line: None)
    log(f"running on {devices.describe()}")
    if args.resume is None:
        init_from = [f"run.init_from={args.init_from}"] if args.init_from else []
        config, resumed = run.new_config(args, overrides=init_from), None
    else:
        config, resumed = run.resume(args, log)
    done = resumed is not None and run.finished(config, resumed)
    if done:
        log(f"{config.run.dir} is complete ({done}): nothing to train. To train on: "
            f"--resume {config.run.dir} --set training.iterations=N")
        for line in run.summary(config, run.load_records(pathlib.Path(config.run.dir))):
            log(line)
        return
    runs.train_az(config, resumed, log)


def main(argv=None):
    args = parse_args(argv)
    if args.init_from and args.resume is not None:
        print("error: --init-from starts a new run; --resume continues one", file=sys.stderr)
        return 2
    return run.exit_code(launch, args)


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
