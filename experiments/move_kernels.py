"""Where the move rules' GPU instructions go: the legal moves of a batch (`moves.move_lists`
and `moves.move_actions` on game-minor arrays, no `custom_vmap`, so that the HLO keeps the
rules' source lines) compiled for an H100 on this CPU, and read kernel by kernel.

    python -m experiments.move_kernels                    # 32,768 games, the 8 costliest kernels
    python -m experiments.move_kernels --games 1024 --top 12
    python -m experiments.move_kernels --mix              # and each kernel's PTX opcodes
    python -m experiments.move_kernels --joins            # one rule stored three ways
    python -m experiments.move_kernels --step 1024,8192   # random play's step, by kernel
    python -m experiments.move_kernels --step 1024 --traffic   # its bytes by array
    python -m experiments.move_kernels --split 1024,8192  # what the larger batch splits
    python -m experiments.move_kernels --decision configs/base.yaml --top 12

For each kernel: its time in the H100 model (an estimate, docs/gpu-program.md), its bytes a
game, its PTX instructions a thread, its launch, and the rules' functions its operations come
from (the innermost frame in trictrac_jax, counted over the fused computation's operations).

`--step` reads random play's step the same way (the program `bench --h100` estimates: the
engine's functions under `jax.vmap`, the H100's lowering), with `--traffic` its bytes a
game-step by array (`gpu_program.Program.traffic`: each array's type and its dimensions a
game, read and written, over all kernels), `--split` groups the kernels of a
larger batch under the kernel of a smaller one whose rules they share (XLA splits some
kernels at larger batches), and `--decision` splits one self-play decision of a config (as
`bench --h100` reads it from the training iteration) into the network, the search, the
engine and copies: kernels, bytes and estimated time of each.

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

from benchmarks import gpu_report as R, measure
from trictrac_jax.az import config as config_lib
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


Frame = tuple[str, str, int]  # (file path, function, line) of a stack frame


def frame_chains(hlo: str) -> dict[str, list[Frame]]:
    """HLO stack frame id -> its frames, the innermost first."""
    files, functions, locations, frames = (G.metadata_table(hlo, name) for name in (
        "FileNames", "FunctionNames", "FileLocations", "StackFrames"))
    chains = {}
    for frame in frames:
        chain, at = [], frame
        while at in frames:
            entry = frames[at]
            location = locations[re.search(r"file_location_id=(\d+)", entry).group(1)]
            ids = re.search(r"file_name_id=(\d+) function_name_id=(\d+) line=(\d+)", location)
            chain.append((files[ids.group(1)].strip('"'), functions[ids.group(2)].strip('"'),
                          int(ids.group(3))))
            parent = re.search(r"parent_frame_id=(\d+)", entry).group(1)
            at = None if parent == at else parent
        chains[frame] = chain
    return chains


def rule_of(chain: list[Frame]) -> str:
    """"module.function" of a chain's innermost frame in trictrac_jax ("?" if none)."""
    for path, function, _ in chain:
        if "trictrac_jax" in path:
            return Path(path).stem + "." + function.split(".")[0]
    return "?"


def part_of(chain: list[Frame]) -> str:
    """Which part of a self-play decision a chain's operation belongs to: the network, the
    search (mctx, or trictrac_jax.az's module), the engine, or "?"."""
    for path, _, _ in chain:
        if "/flax/" in path or path.endswith("az/network.py"):
            return "network"
        if "/mctx/" in path:
            return "search: mctx"
        if "trictrac_jax/az/" in path:
            return "search: az." + Path(path).stem
        if "trictrac_jax" in path:
            return "engine"
    return "?"


# An operation's frame id in the HLO. Constants are left out: XLA keeps one of equal
# constants, with the frames of whichever it kept (often the outermost call's alone).
OPERATION_FRAME = re.compile(r"^(?!.* constant\().*?stack_frame_id=(\d+)", re.M)


# A custom call that runs as a kernel of its own (XLA's TopK kernel): its name and its first
# operand's. XLA gives it no frames of its own: it is read as the kernel that feeds it.
CUSTOM_CALL = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = .*? custom-call\(%?([\w.\-]+)", re.M)


def kernel_operations(hlo: str) -> dict[str, list[str]]:
    """Kernel name (as `gpu_program` names it) -> the stack frame ids of the operations of
    the fused computation it runs, constants left out (a copy has none); a custom call's are
    those of the kernel that computes its first operand."""
    bodies = {m.group(1): m.group(2) for m in re.finditer(r"^%([\w.\-]+) .*?\{\n(.*?)\n\}\n",
                                                            hlo, re.M | re.S)}
    fused = {G.kernel_name(m.group(1)): OPERATION_FRAME.findall(bodies.get(m.group(2), ""))
             for m in re.finditer(r"^\s*(?:ROOT )?%?([\w.\-]+) = .*?calls=%?([\w.\-]+)", hlo,
                                  re.M)}
    fed = {G.kernel_name(m.group(1)): fused.get(G.kernel_name(m.group(2)), [])
           for m in CUSTOM_CALL.finditer(hlo)}
    return fed | fused


def kernel_sources(hlo: str, label=rule_of) -> dict[str, collections.Counter]:
    """Kernel name -> `label` (of an operation's frames) -> operations of its fused
    computation."""
    chains = frame_chains(hlo)
    return {kernel: collections.Counter(label(chains.get(frame, [])) for frame in frames)
            for kernel, frames in kernel_operations(hlo).items()}


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
    rules = kernel_sources(hlo)
    for k in sorted(program.by_kernel, key=lambda k: -k.launches * model.kernel_seconds(k))[:top]:
        print(f"\n{k.launches * model.kernel_seconds(k) * 1e6:8.1f} µs  {k.name}: "
              f"{k.bytes / games:,.0f} bytes a game, {k.instructions:,} instructions a thread, "
              f"{k.blocks:,} x {k.threads} threads ({threads(k) / games:.0f} a game), "
              f"{k.registers} registers")
        sources = rules.get(k.name, collections.Counter())
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


def step_kernels(games: int, loop: str) -> tuple[G.Program, str]:
    """(one step of random play in `loop` at `games` games compiled for an H100, the
    compiled program's HLO): `bench --h100`'s program."""
    compiled = R.compiled_random(measure.TRICTRAC, games, loop)
    return G.read(compiled).per(R.RANDOM_STEPS), compiled.executable.as_text()


def _kernel_line(k: G.Kernel, games: int, sources: collections.Counter) -> str:
    model = G.H100_MODEL
    return (f"{k.launches * model.kernel_seconds(k) * 1e6:8.2f} µs  {k.name}: "
            f"{k.launches * k.bytes / games:,.0f} bytes a game, {k.blocks:,} x {k.threads} "
            f"threads, {k.instructions:,} instructions a thread, {k.registers} registers\n"
            f"    rules: " + ", ".join(f"{name} {n}" for name, n in sources.most_common(8)))


def time_parts(program: G.Program, model: G.TimeModel = G.H100_MODEL) -> dict[str, float]:
    """A program's estimate in parts: its kernels' fixed cost, the time of those bound by
    their instructions, of those bound by their bytes at the chip's rate, and what the
    latter lose to launches of too few blocks to draw it (the model's few-block rate), and
    the spills' and host syncs' shares: they add up to `model.seconds(program)`."""
    parts = dict.fromkeys(("kernel latency", "instruction-bound", "byte-bound",
                           "few blocks' bytes", "spills", "host syncs"), 0.0)
    parts["host syncs"] = program.host_syncs * model.seconds_per_host_sync
    for k in program.by_kernel:
        issue, drawn = model.issue_seconds(k), k.bytes / model.rate(k)
        parts["kernel latency"] += k.launches * model.seconds_per_kernel
        parts["spills"] += k.launches * model.spill_seconds(k)
        if issue >= drawn:
            parts["instruction-bound"] += k.launches * issue
        else:
            full_rate = k.bytes / model.bytes_per_second
            parts["byte-bound"] += k.launches * full_rate
            parts["few blocks' bytes"] += k.launches * (drawn - full_rate)
    return parts


def report_step(games_list: list[int], loops: list[str], top: int):
    model = G.H100_MODEL
    for loop in loops:
        for games in games_list:
            program, hlo = step_kernels(games, loop)
            print(f"{loop}, {games:,} games: {program.kernels:.1f} kernels a step, "
                  f"{program.bytes / games:,.0f} bytes a game-step; H100 estimate (compiled "
                  f"program, model in docs/gpu-program.md): {model.seconds(program) * 1e6:,.1f}"
                  f" µs a step; spilling: {[k.name for k in program.spilling()] or 'none'}")
            print("    " + ", ".join(f"{part} {seconds * 1e6:,.1f} µs"
                                     for part, seconds in time_parts(program).items()))
            sources = kernel_sources(hlo)
            for k in sorted(program.by_kernel,
                            key=lambda k: -k.launches * model.kernel_seconds(k))[:top]:
                print(_kernel_line(k, games, sources.get(k.name, collections.Counter())))
            print()


def per_game(array: str, games: int) -> str:
    """An array's type and dimensions less its games' axis ("u32[1024,2,16]" at 1,024 games:
    "u32[2,16]"); "shared: ..." for an array without one (a constant, the loop's counter)."""
    dtype, dims = re.fullmatch(r"(\w+)\[([\d,]*)\]", array).groups()
    sizes = [int(d) for d in dims.split(",") if d]
    if games not in sizes:
        return f"shared: {array}"
    sizes.remove(games)
    return f"{dtype}[{','.join(map(str, sizes))}]"


def report_traffic(games_list: list[int], loop: str, top: int):
    """Random play's bytes a game-step by what they are: each array kind (its type and its
    dimensions a game), read and written, over all kernels."""
    for games in games_list:
        program, _ = step_kernels(games, loop)
        kinds = collections.Counter()
        for (direction, array), n in program.traffic.items():
            kinds[direction, per_game(array, games)] += n / games
        print(f"{loop}, {games:,} games: {program.bytes / games:,.0f} bytes a game-step "
              f"(H100 program, compiled here), by the arrays read and written:")
        for (direction, kind), n in kinds.most_common(top):
            print(f"  {n:8,.0f}  {direction:7s} {kind}")
        print()


def matched_kernels(small: dict[str, collections.Counter], big: dict[str, collections.Counter]
                    ) -> dict[str, list[str]]:
    """Each kernel of `big` under the kernel of `small` whose operations' rules it shares
    most (as a share of its own operations); "?" where it shares none (copies)."""
    groups = collections.defaultdict(list)
    for name, rules in big.items():
        shared = {s: sum((rules & small_rules).values()) for s, small_rules in small.items()}
        best = max(shared, key=shared.get, default=None)
        groups[best if best is not None and shared[best] else "?"].append(name)
    return dict(groups)


def report_split(small_games: int, big_games: int, loop: str):
    programs = {}
    for games in (small_games, big_games):
        program, hlo = step_kernels(games, loop)
        sources = kernel_sources(hlo)
        # the loop body's kernels (a launch a step), by their rules
        programs[games] = {k.name: sources.get(k.name, collections.Counter())
                           for k in program.by_kernel if k.launches >= 1}
    print(f"{loop}: {len(programs[small_games])} kernels a step at {small_games:,} games, "
          f"{len(programs[big_games])} at {big_games:,}; the kernels of {big_games:,} "
          f"games that share their rules with one kernel of {small_games:,}:")
    for small, bigs in sorted(matched_kernels(programs[small_games], programs[big_games]).items(),
                              key=lambda item: -len(item[1])):
        if len(bigs) > 1:
            print(f"  {small} <- {len(bigs)}: " + ", ".join(bigs))
            for name in bigs:
                rules = programs[big_games][name].most_common(4)
                print(f"      {name}: " + ", ".join(f"{r} {n}" for r, n in rules))


def kernel_parts(program: G.Program, hlo: str) -> list[tuple[str, G.Kernel]]:
    """(part, kernel) of each kernel of a self-play decision's `program` (`part_of` of most
    of its operations; "copies", or "?" where none is known)."""
    sources = kernel_sources(hlo, part_of)
    return [(sources[k.name].most_common(1)[0][0] if sources.get(k.name) else
             "copies" if k.name.startswith("copy") else "?", k) for k in program.by_kernel]


def decision_parts(kernels: list[tuple[str, G.Kernel]]) -> dict[str, list[float]]:
    """Part -> [kernels, bytes, seconds (H100 estimate)] of a decision's `kernel_parts`."""
    parts = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for part, k in kernels:
        totals = parts[part]
        totals[0] += k.launches
        totals[1] += k.launches * k.bytes
        totals[2] += k.launches * G.H100_MODEL.kernel_seconds(k)
    return dict(parts)


def print_parts(parts: dict[str, list[float]]):
    """`decision_parts`, a line each, the most bytes first."""
    for part, (count, bytes_, seconds) in sorted(parts.items(), key=lambda p: -p[1][1]):
        print(f"  {part:32s} {count:7,.0f} kernels {bytes_ / 1e9:7.3f} GB "
              f"{seconds * 1e3:7.3f} ms")


def decision_line(setting: str, decision: G.Program) -> str:
    """"SETTING: one self-play decision, its kernels, bytes and H100 estimate"."""
    return (f"{setting}: one self-play decision, {decision.kernels:,.0f} kernels, "
            f"{decision.bytes / 1e9:.3f} GB; H100 estimate (compiled program, model in "
            f"docs/gpu-program.md): {G.H100_MODEL.seconds(decision) * 1e3:.3f} ms")


def report_decision(config_path: str, top: int, overrides=()):
    config = config_lib.load_config(config_path, overrides)
    compiled = R.compiled_iteration(config)
    decision, hlo = R.decision_program(compiled), compiled.executable.as_text()
    model = G.H100_MODEL
    setting = " ".join([config_path, *overrides])
    print(decision_line(f"{setting} ({config.selfplay.batch_size:,} games)", decision))
    kernels = kernel_parts(decision, hlo)
    parts = decision_parts(kernels)
    print_parts(parts)
    print(f"its {top} costliest kernels in bytes (launches a decision, bytes and time in all):")
    for part, k in sorted(kernels, key=lambda pk: -pk[1].launches * pk[1].bytes)[:top]:
        seconds = k.launches * model.kernel_seconds(k)
        print(f"  {k.launches * k.bytes / 1e6:8.1f} MB {seconds * 1e6:8.1f} µs  "
              f"x{k.launches:<3.0f} {k.name:40s} {part}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=32768)
    p.add_argument("--top", type=int, default=8, help="kernels listed, the costliest first")
    p.add_argument("--mix", action="store_true", help="each listed kernel's PTX opcodes")
    p.add_argument("--joins", action="store_true",
                   help="one rule stored on the grid, flat by a pad and select, flat by a "
                        "concatenation")
    p.add_argument("--step", metavar="GAMES",
                   help="random play's step instead (`bench --h100`'s program) at these batch "
                        "sizes, e.g. 1024,8192: its costliest kernels and their rules")
    p.add_argument("--loop", default=measure.PLAIN, choices=[measure.PLAIN, measure.WITH_RESETS],
                   help="random play's loop (--step, --split)")
    p.add_argument("--traffic", action="store_true",
                   help="with --step: the bytes a game-step by array (its type and its "
                        "dimensions a game), read and written, the --top most")
    p.add_argument("--split", metavar="SMALL,BIG",
                   help="random play's kernels at BIG games grouped under the kernel at SMALL "
                        "games whose rules they share: what a larger batch splits")
    p.add_argument("--decision", metavar="CONFIG",
                   help="one self-play decision of CONFIG (its search and step, from the "
                        "training iteration as `bench --h100` compiles it) by part: network, "
                        "search, engine, copies; and its --top costliest kernels")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of --decision's CONFIG overridden (repeatable), e.g. "
                        "network.inference_dtype=bfloat16")
    args = p.parse_args(argv)
    if args.traffic and not args.step:
        p.error("--traffic: with --step GAMES")
    # read when the rules are traced: the GPU's, unless the caller names another
    os.environ.setdefault("TRICTRAC_LOWERING", "gpu")
    if args.step or args.split or args.decision:
        if args.step and args.traffic:
            report_traffic([int(g) for g in args.step.split(",")], args.loop, args.top)
        elif args.step:
            report_step([int(g) for g in args.step.split(",")], [args.loop], args.top)
        if args.split:
            small, big = (int(g) for g in args.split.split(","))
            report_split(small, big, args.loop)
        if args.decision:
            report_decision(args.decision, args.top, args.set)
        return
    report_moves(args.games, args.top, args.mix)
    if args.joins:
        print()
        report_joins(args.games)


if __name__ == "__main__":
    main()
