"""Register spills of the GPU kernels, read on this CPU (no GPU needed): XLA compiles for an
H100 (the CUDA compiler plugin of the `compile` extra), ptxas (pip `nvidia-cuda-nvcc-cu12`)
reports each kernel's registers and spill bytes, XLA's thunk sequence its launch size.

A value that does not fit a thread's registers is spilled to local memory: traffic to the
GPU's memory that no HLO shape shows. At ea19265 one column reduction of the chance half of
the step spilled 3 kB a thread at 131,072 games, and the H100 ran the step at a third of pgx
backgammon's speed (docs/gpu-program.md)."""
import functools
import re
import subprocess

import jax
import jax.numpy as jnp
import pytest

from trictrac_jax.tools import gpu_program as G
from benchmarks import gpu_report

pytestmark = pytest.mark.compile  # needs the `compile` extra (conftest.py)

SPILL_LIMIT = 0  # bytes of spill stores and loads a thread, in a kernel's code: none
GAMES = (1024, 8192, 32768, 131072)


def crowded(x):
    """f32[R, C] -> f32[C]: 16 values live at once in each thread of its kernels."""
    values = [jnp.sin(x * i) for i in range(1, 17)]
    total = sum(values)
    return jnp.sum(sum(v * jnp.cos(total + i) for i, v in enumerate(values)), axis=0)


def test_launch_sizes_registers_and_spills_of_a_small_function(tmp_path):
    x = jax.ShapeDtypeStruct((64, 1024), jnp.float32)
    program = G.read(G.compile_with_kernels(G.H100, crowded, x, dump_to=tmp_path))
    assert program.by_kernel and not program.spilling()
    for k in program.by_kernel:
        assert k.launches == 1 and k.blocks > 0 and k.threads > 0 and 0 < k.registers <= 255
        if k.name.startswith("loop_"):  # elementwise: a thread an element at most
            assert k.blocks * k.threads >= k.elements
    (reduction,) = [k for k in program.by_kernel if "reduce" in k.name]
    assert reduction.elements == 64 * 1024 and reduction.blocks * reduction.threads < 64 * 1024
    (sequence,) = tmp_path.glob("*thunk_sequence.txt")
    assert G.launch_sizes(sequence.read_text()) == {
        k.name: (k.blocks, k.threads) for k in program.by_kernel}
    # the same PTX assembled with at most 32 registers a thread: the crowded kernel spills
    usage = {}
    for ptx in tmp_path.glob("*.ptx"):
        text = ptx.read_text()
        if ".entry" in text:
            capped = tmp_path / f"{ptx.stem}.capped"
            capped.write_text(re.sub(r"^(\.reqntid .*)$", r"\1\n.maxnreg 32", text, flags=re.M))
            usage |= G.ptxas_usage(subprocess.run(
                [G.ptxas(), "-v", "-arch=sm_90a", str(capped), "-o", "/dev/null"],
                capture_output=True, text=True, check=True).stderr)
    assert usage.keys() == {k.name for k in program.by_kernel}
    assert all(registers <= 32 for registers, *_ in usage.values())
    spilled = [name for name, (_, stack, stores, loads) in usage.items() if stores and loads]
    assert spilled and all(usage[name][1] > 0 for name in spilled)  # spills live on the stack
    # the model charges spill traffic, and a kernel of few blocks draws less bandwidth
    heavy = max(program.by_kernel, key=lambda k: k.registers)
    spilling = heavy._replace(spill_stores=64, spill_loads=64)
    assert G.H100_MODEL.kernel_seconds(spilling) > G.H100_MODEL.kernel_seconds(heavy)
    bare = heavy._replace(instructions=0)  # its bytes alone
    assert (G.H100_MODEL.kernel_seconds(bare._replace(blocks=8))
            > G.H100_MODEL.kernel_seconds(bare._replace(blocks=1024)))
    # each kernel's instructions, its PTX counted; sixteen sines and cosines a thread issue
    # more than a reduction's adds, and a kernel of many instructions is bound by them
    counted = {}
    for ptx in tmp_path.glob("*.ptx"):
        counted |= G.ptx_instructions(ptx.read_text())
    assert {k.name: k.instructions for k in program.by_kernel} == counted
    assert all(k.instructions > 0 for k in program.by_kernel)
    assert heavy.instructions > reduction.instructions or heavy is reduction
    busy = heavy._replace(instructions=10**6)
    assert G.H100_MODEL.kernel_seconds(busy) == pytest.approx(
        G.H100_MODEL.seconds_per_kernel + G.H100_MODEL.issue_seconds(busy))


def test_kernels_that_xla_shares_are_read_each(tmp_path):
    """XLA compiles identical fusions once: the later ones run the first one's kernel, under
    its name. Each is still read with that kernel's launch size, registers and instructions."""
    def twice(x):
        for _ in range(2):
            x = jnp.sin(x) * 2
            x = x - jnp.sum(x, axis=0)
        return x

    x = jax.ShapeDtypeStruct((64, 1024), jnp.float32)
    program = G.read(G.compile_with_kernels(G.H100, twice, x, dump_to=tmp_path))
    (hlo,) = [p for p in tmp_path.glob("*after_optimizations.txt") if "buffer" not in p.name]
    assert "deduplicated_name" in hlo.read_text()  # some fusion runs another's kernel
    assert len(program.by_kernel) >= 3
    assert all(k.blocks and k.threads and k.registers and k.instructions
               for k in program.by_kernel)


def _pallas_times(x, add: int, warps: int):
    """x * 3 + `add` as a Pallas (Triton) kernel of 128 elements a program and `warps`
    warps a block."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 3 + add

    block = pl.BlockSpec((128,), lambda i: (i,))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(x.shape[0] // 128,), in_specs=[block], out_specs=block,
                          compiler_params=plt.CompilerParams(num_warps=warps))(x)


def test_pallas_kernels_are_read_like_xla_s(tmp_path):
    """A Pallas kernel's entry is named after its Python function (made unique by XLA), not
    after its HLO instruction: each is still read with its own launch size, registers and
    instructions, as XLA's fusions are."""
    two = lambda x: _pallas_times(_pallas_times(x, 1, warps=4) + 1, 2, warps=2)
    x = jax.ShapeDtypeStruct((32768,), jnp.int32)
    program = G.read(G.compile_with_kernels(G.H100, two, x, dump_to=tmp_path))
    pallas = sorted((k for k in program.by_kernel if k.name.startswith("pallas_call")),
                    key=lambda k: k.name)
    assert len(pallas) == 2 and len(program.by_kernel) == 3  # the two and the add between
    assert [(k.blocks, k.threads) for k in pallas] == [(256, 4 * 32), (256, 2 * 32)]
    assert all(k.registers > 0 and k.instructions > 0 and not k.spills for k in pallas)
    (sequence,) = tmp_path.glob("*thunk_sequence.txt")
    entries = G.kernel_entries(sequence.read_text(),
                               sequence.with_name(sequence.name.replace(
                                   "thunk_sequence", "thunk_metadata")).read_text())
    assert sorted(entries) == [k.name for k in pallas] and len(set(entries.values())) == 2


@pytest.fixture(scope="module")
def step_program():
    """games -> the vmapped `env.step` compiled for an H100 with the engine's GPU lowering,
    its kernels read; one compile a size, shared by the tests of this module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRICTRAC_LOWERING", "gpu")  # read when tracing
        yield functools.cache(gpu_report.step_program)


@pytest.mark.parametrize("games", GAMES)
def test_no_kernel_of_the_step_spills(step_program, games):
    program = step_program(games)
    assert program.kernels > 10 and all(k.registers for k in program.by_kernel if k.blocks)
    spilling = program.spilling(over=SPILL_LIMIT)
    assert not spilling, (
        f"{len(spilling)} kernel(s) of env.step at {games:,} games spill registers "
        f"(H100 program):\n"
        + "\n".join(G.describe(k) for k in spilling))
