"""PPO training of a Trictrac player, against a fixed opponent or its own past networks.

    python train/ppo.py --config configs/ppo.yaml
    python train/ppo.py --config configs/ppo.yaml --set env.opponent=random --set run.dir=runs/ppo-random
    python train/ppo.py --resume runs/ppo          # continue a killed run
    python train/ppo.py --config configs/ppo.yaml --h100   # its H100 program, compiled here

The algorithm is `trictrac_jax.rl.ppo`, its loop `trictrac_jax.rl.loop.train`
(`training.updates_per_call` whole updates in one jitted call, compiled before the first).
Writes RUN_DIR/config.yaml, RUN_DIR/metrics.jsonl (one record per call, fields in
`trictrac_jax.rl.loop`), TensorBoard events when tensorboardX or torch is installed, orbax
checkpoints in RUN_DIR/checkpoints and the network at `checkpoint.snapshot_minutes` in
RUN_DIR/snapshots, as train/az.py does; the run's networks load as agents (`python
train/eval.py --checkpoint RUN_DIR`, `network_agents.load_agent`).
"""
from __future__ import annotations

import functools
import os
import sys

import jax

from trictrac_jax import devices
from trictrac_jax.az import run
from trictrac_jax.league import runs
from trictrac_jax.rl import ppo
from trictrac_jax.rl import loop


def parse_args(argv=None):
    p = run.run_parser(__doc__.split("\n")[0], "configs/ppo.yaml", "env.opponent=random")
    p.add_argument("--h100", action="store_true",
                   help="train nothing: compile one call of the config's updates for an H100 "
                        "on this machine (no GPU needed, trictrac_jax/tools/gpu_program.py) "
                        "and print its kernels, host syncs and estimated steps/s")
    return p.parse_args(argv)


def h100_program(config: ppo.PPOConfig) -> dict:
    """One call of `config`'s jitted updates (`ppo.updates`) compiled for an H100 on this
    CPU, as read by `gpu_program`: kernels, host syncs (a lower bound), bytes, device memory
    and the H100 estimate of its time (`gpu_program.H100_MODEL`; no GPU runs it)."""
    os.environ["TRICTRAC_LOWERING"] = "gpu"  # the engine's accelerator rules, read when tracing
    from trictrac_jax.tools import gpu_program as G
    jax.config.update("jax_platforms", "cpu")  # compile-only devices need no GPU backend
    env = runs.ppo_env(config)
    state = jax.eval_shape(functools.partial(ppo.new_state, config), jax.random.PRNGKey(0))
    envs = jax.eval_shape(functools.partial(ppo.start, env, config), state,
                          jax.random.PRNGKey(1))
    program = G.read(G.compile_for(G.H100, functools.partial(ppo.updates, env, config), state,
                                   envs, donate_argnums=(0, 1)))
    seconds = G.H100_MODEL.seconds(program)
    steps = config.training.updates_per_call * config.ppo.num_steps * config.ppo.num_envs
    return {"kernels": program.kernels, "host_syncs": program.host_syncs,
            "bytes": program.bytes, "memory_gb": program.memory_bytes / 1e9,
            "estimated_s": seconds, "steps": steps, "estimated_steps_per_s": steps / seconds}


def print_h100_program(config: ppo.PPOConfig, log) -> None:
    p = h100_program(config)
    log(f"one call of {config.training.updates_per_call} updates of {p['steps']:,} "
        f"steps ({config.ppo.num_envs} environments x {config.ppo.num_steps}): "
        f"{p['kernels']:,.0f} kernels, {p['host_syncs']:,.0f} host syncs (at least), "
        f"{p['bytes'] / 1e9:.2f} GB read and written (estimate), "
        f"{p['memory_gb']:.2f} GB device memory; H100 estimate (compiled program, "
        f"model in docs/gpu-program.md): {p['estimated_s']:.3f} s, "
        f"{p['estimated_steps_per_s']:,.0f} steps/s")


def log(line: str) -> None:
    print(line, flush=True)


def launch(args) -> None:
    """The run `args` ask for, or with --h100 its program."""
    if args.h100:
        return print_h100_program(ppo.load_config(args.config, args.set), log)
    log(f"running on {devices.describe()}")
    config, resumed = (run.new_config(args, loop.PPO_RUN), None) if args.resume is None \
        else run.resume(args, log, loop.PPO_RUN)
    runs.train_ppo(config, resumed, log)


def main(argv=None):
    return run.exit_code(launch, parse_args(argv))


if __name__ == "__main__":
    devices.start_program()  # before JAX starts: the platform, then the compilation cache
    sys.exit(main())
