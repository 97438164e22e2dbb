"""Where the move rules' GPU instructions go: the legal moves of a batch (`moves.move_lists`
and `moves.move_actions` on game-minor arrays, no `custom_vmap`, so that the HLO keeps the
rules' source lines) compiled for an H100 on this CPU, and read kernel by kernel.

    python -m experiments.move_kernels                    # 32,768 games, the 8 costliest kernels
    python -m experiments.move_kernels --games 1024 --top 12
    python -m experiments.move_kernels --mix              # and each kernel's PTX opcodes
    python -m experiments.move_kernels --joins            # one rule stored three ways

For each kernel: its time in the H100 model (an estimate, docs/gpu-program.md), its bytes a
game, its PTX instructions a thread, its launch, and the rules' functions its operations come
from (the innermost frame in trictrac_jax, counted over the fused computation's operations).

`--joins` compiles one elementwise rule over the candidate grid ([2, 15, 17, games], int8
operands broadcast along the slots) stored three ways: on the grid, flat with each pass's
puissance entry joined by a pad and a select (`lowering.append`, the GPU lowering's join),
and flat with the two entries concatenated at the end; and prints each kernel's loads and
instructions a thread. Supports docs/journal/engine-speed.md, issue 51.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import tempfile
from pathlib import Path

from trictrac_jax.tools import gpu_program as G  # before any JAX computation

import jax
import jax.numpy as jnp

from trictrac_jax.moves import move_actions, move_lists
from trictrac_jax.moves.layout import NUM_CANDIDATES

OPCODE = re.compile(r"^\s+(?:@!?%p\d+\s+)?([a-z]+[.\w]*)", re.M)


def legal_moves(board, dice):
    """The Move actions bool[514, games] of view boards int[24, games], dice int[2, games]."""
    return move_actions(move_lists(board, dice))


def _compiled(fn, args, dump: Path) -> tuple[G.Program, str, dict[str, str]]:
    """`fn` compiled for an H100: its program, optimised HLO and each kernel's PTX."""
    program = G.read(G.compile_with_kernels(G.H100, fn, *args, dump_to=dump), top=0)
    hlo = max(dump.glob("*after_optimizations.txt"), key=lambda p: p.stat().st_size).read_text()
    ptx = {}
    for path in dump.glob("*.ptx"):
        ptx.update(G.ptx_entries(path.read_text()))
    return program, hlo, ptx


def rule_sources(hlo: str, kernel: str) -> collections.Counter:
    """"module.function" -> operations of `kernel`'s fused computation whose innermost
    stack frame in trictrac_jax is there."""
    files, functions, locations, frames = (G.metadata_table(hlo, name) for name in (
        "FileNames", "FunctionNames", "FileLocations", "StackFrames"))

    def innermost(frame: str) -> str:
        while frame in frames:
            entry = frames[frame]
            location = locations[re.search(r"file_location_id=(\d+)", entry).group(1)]
            ids = re.search(r"file_name_id=(\d+) function_name_id=(\d+)", location)
            path = files[ids.group(1)].strip('"')
            if "trictrac_jax" in path:
                return (Path(path).stem + "." + functions[ids.group(2)].strip('"')
                        .split(".")[0])
            parent = re.search(r"parent_frame_id=(\d+)", entry).group(1)
            frame = None if parent == frame else parent
        return "?"

    called = re.search(r"^\s*%?" + re.escape(kernel) + r" = .*?calls=%?([\w.\-]+)", hlo, re.M)
    if not called:
        return collections.Counter()
    body = hlo.split("\n%" + called.group(1) + " ", 1)[1].split("\n}\n", 1)[0]
    return collections.Counter(innermost(m.group(1))
                               for m in re.finditer(r"stack_frame_id=(\d+)", body))


def opcodes(ptx: str) -> collections.Counter:
    """PTX opcode (with its type suffixes) -> count in a kernel's body."""
    return collections.Counter(OPCODE.findall(ptx))


def report_moves(games: int, top: int, mix: bool):
    boards = jax.ShapeDtypeStruct((24, games), jnp.int32)
    dice = jax.ShapeDtypeStruct((2, games), jnp.int32)
    with tempfile.TemporaryDirectory(prefix="move-kernels-") as dump:
        program, hlo, ptx = _compiled(legal_moves, (boards, dice), Path(dump))
    model = G.H100_MODEL
    threads = lambda k: k.launches * k.blocks * k.threads
    instructions = sum(threads(k) * k.instructions for k in program.by_kernel)
    print(f"legal moves of {games:,} games: {program.kernels:.0f} kernels, "
          f"{program.bytes / games:,.0f} bytes a game, {instructions / games:,.0f} "
          f"thread-instructions a game ({instructions / games / NUM_CANDIDATES:,.0f} a "
          f"candidate); H100 estimate (compiled program, model in docs/gpu-program.md): "
          f"{model.seconds(program) * 1e6:,.1f} µs")
    for k in sorted(program.by_kernel, key=lambda k: -k.launches * model.kernel_seconds(k))[:top]:
        print(f"\n{k.launches * model.kernel_seconds(k) * 1e6:8.1f} µs  {k.name}: "
              f"{k.bytes / games:,.0f} bytes a game, {k.instructions:,} instructions a thread, "
              f"{k.blocks:,} x {k.threads} threads ({threads(k) / games:.0f} a game), "
              f"{k.registers} registers")
        sources = rule_sources(hlo, k.name)
        print("    rules: " + ", ".join(f"{name} {n}" for name, n in sources.most_common(10)))
        if mix and k.name in ptx:
            print("    PTX: " + ", ".join(f"{op} {n}" for op, n in
                                          opcodes(ptx[k.name]).most_common(14)))


def _rule(first, second, per_pass_second):
    """uint8[2, 15, 17, games]: an elementwise rule over the candidate grid."""
    return (first[:, :, None] + second[None, None] * 3 - per_pass_second[:, None] > 2
            ).astype(jnp.uint8)


def _grid(first, second, per_pass_second):
    return _rule(first, second, per_pass_second)


def _pad_and_select(first, second, per_pass_second):
    games = first.shape[-1]
    body = _rule(first, second, per_pass_second).reshape(2, 255, games)
    index = jnp.arange(256)[None, :, None]
    return jnp.where(index == 255, jnp.uint8(1), jnp.pad(body, [(0, 0), (0, 1), (0, 0)])
                     ).reshape(NUM_CANDIDATES, games)


def _concatenated(first, second, per_pass_second):
    games = first.shape[-1]
    body = _rule(first, second, per_pass_second).reshape(510, games)
    return jnp.concatenate([body, jnp.ones((2, games), jnp.uint8)])


def report_joins(games: int):
    args = (jax.ShapeDtypeStruct((2, 15, games), jnp.int8),
            jax.ShapeDtypeStruct((17, games), jnp.int8),
            jax.ShapeDtypeStruct((2, 17, games), jnp.int8))
    for name, fn in (("on the grid", _grid), ("flat, pad and select", _pad_and_select),
                     ("flat, concatenated", _concatenated)):
        with tempfile.TemporaryDirectory(prefix="move-kernels-") as dump:
            program, _, ptx = _compiled(fn, args, Path(dump))
        for k in program.by_kernel:
            loads = {op: n for op, n in opcodes(ptx.get(k.name, "")).items()
                     if op.startswith("ld.global")}
            print(f"{name}: {k.name}, {k.instructions} instructions a thread, "
                  f"{k.blocks * k.threads / games:.0f} threads a game, loads {loads}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=32768)
    p.add_argument("--top", type=int, default=8, help="kernels listed, the costliest first")
    p.add_argument("--mix", action="store_true", help="each listed kernel's PTX opcodes")
    p.add_argument("--joins", action="store_true",
                   help="one rule stored on the grid, flat by a pad and select, flat by a "
                        "concatenation")
    args = p.parse_args(argv)
    os.environ["TRICTRAC_LOWERING"] = "gpu"  # read when the rules are traced
    report_moves(args.games, args.top, args.mix)
    if args.joins:
        print()
        report_joins(args.games)


if __name__ == "__main__":
    main()
