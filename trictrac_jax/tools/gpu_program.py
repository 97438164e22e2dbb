"""The program XLA builds for an accelerator that is not here, compiled on this CPU and read.

Given a device's description, XLA compiles for it without it: the CUDA 12 compiler plugin of
the installed jax (`jax-cuda12-plugin`, `jax-cuda12-pjrt`) for an H100, `libtpu` for a TPU
v5e chip. The optimised program says what one call does on that device:

* kernels: launches of one call (fusions, library calls, copies, sorts, ...), the bodies of
  loops counted by their known trip counts (`Program.kernels`);
* host syncs: iterations of while loops whose trip count is unknown when compiling; on a GPU
  the host reads each iteration's condition before launching the next (a loop of unknown
  length is counted once, so this is a lower bound);
* bytes: what the kernels read and write, an in-place update counted by the part it writes
  and an input read through a slice by the part it reads (an estimate of memory traffic);
* device memory: XLA's own figure (arguments, outputs and temporaries);
* for a GPU compiled by `compile_with_kernels`, each kernel as the device runs it: its launch
  size (blocks x threads, from XLA's thunk sequence) and its registers, stack and spill bytes
  a thread (`ptxas -v` over the PTX XLA dumps; ptxas from pip's `nvidia-cuda-nvcc-cu12` runs
  on a CPU). A kernel whose entry is named otherwise than its HLO instruction (a Pallas
  kernel, after its Python function; a fusion whose kernel XLA shares with an identical one)
  is found through the thunks' metadata (`kernel_entries`). A value that does not fit a
  thread's registers is spilled to local memory: traffic to the GPU's memory that no HLO
  shape shows;
* for those kernels, the instructions a thread runs: the PTX of its entry, counted (straight
  line code, as XLA's loop fusions are; a kernel that loops runs more than its count).

Kernels, host syncs, memory, launch sizes and spills are facts of the compiled program;
bytes are an estimate, and `H100_MODEL` turns them into seconds with constants fitted to H100
measurements (docs/gpu-program.md: the model and its calibration). Every time from here is
an estimate of the compiled program, never a measurement.

    from trictrac_jax.tools import gpu_program as G
    program = G.read(G.compile_with_kernels(G.H100, fn, *example_args)).per(steps)
    print(G.summary(program))   # per step of a loop of `steps`; its spilling kernels
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

# The CUDA plugin checks the CUDA runtime's version when JAX starts its backends, and fails
# where there is none; compiling needs no runtime. (Read when the backends start: this
# module must be imported before the first JAX computation, or JAX_PLATFORMS=cpu be set.)
os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
# libtpu would ask a TPU VM's metadata server (absent here) which chips and hosts it has.
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
# ... and lock the chips for one process; compiling uses none, so processes may share it.
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax  # noqa: E402
from jax.experimental import topologies  # noqa: E402
from jax.experimental.compilation_cache import compilation_cache  # noqa: E402
from jax.sharding import SingleDeviceSharding  # noqa: E402

# An H100 SXM (80 GB HBM3) as XLA's GPU compiler describes a device: 132 SMs of compute
# capability 9.0 at 1.98 GHz, 3.35 TB/s, 50 MB of L2; CUDA 12.8, cuDNN 9.7.
H100_CONFIG = """
gpu_device_info {
  threads_per_block_limit: 1024 threads_per_warp: 32 shared_memory_per_block: 49152
  shared_memory_per_core: 233472 threads_per_core_limit: 2048 core_count: 132
  fpus_per_core: 128 block_dim_limit_x: 2147483647 block_dim_limit_y: 65535
  block_dim_limit_z: 65535 memory_bandwidth: 3352320000000 l2_cache_size: 52428800
  clock_rate_ghz: 1.98 device_memory_size: 84929347584
  shared_memory_per_block_optin: 232448 cuda_compute_capability { major: 9 }
  registers_per_core_limit: 65536 registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 7 }
runtime_version { major: 12 minor: 8 }
"""
H100_MEMORY_BYTES = 80 * 10**9


class Target(NamedTuple):
    """A device to compile for: `jax.experimental.topologies` arguments."""

    name: str
    platform: str  # "cuda" or "tpu"
    topology: str
    config: str | None = None  # the GPU's description (text proto)


H100 = Target("H100", "cuda", "1x1x1", H100_CONFIG)
# libtpu describes whole hosts (2x2 chips for v5e); a program compiled for one of its
# devices is one chip's program.
TPU_V5E = Target("TPU v5e", "tpu", "v5e:2x2")
TPU_V5E_MEMORY_BYTES = 16 * 2**30

_DEVICES: dict = {}
# The device's program as XLA compiles it by default, whatever XLA_FLAGS asks of this
# machine's (the test suite compiles its CPU programs unoptimised): LLVM's optimisation
# level changes a kernel's registers and instructions.
DEFAULT_OPTIONS = {"xla_backend_optimization_level": 3}


def device(target: Target):
    """The compile-only device of `target` (made once per process)."""
    if target not in _DEVICES:
        # libtpu takes the topology by name; the CUDA plugin as an option beside the GPU's
        # description.
        args, kwargs = ((target.topology,), {}) if target.platform == "tpu" else (
            (), {"topology": target.topology, "target_config": target.config})
        try:
            topology = topologies.get_topology_desc(*args, platform=target.platform, **kwargs)
        except Exception as e:  # jax raises several kinds; all mean the same here
            raise RuntimeError(
                f"cannot compile for {target.name}: {type(e).__name__}: {e}. The compiler "
                f"plugin comes with the compile extra (pip install -e '.[compile]'); import "
                f"trictrac_jax.tools.gpu_program before any JAX computation, or set "
                f"JAX_PLATFORMS=cpu") from None
        _DEVICES[target] = topology.devices[0]
    return _DEVICES[target]


def compile_for(target: Target, fn, *args, donate_argnums=(), compiler_options=None):
    """`jax.jit(fn)` compiled for `target`, for arguments shaped like `args` (arrays or
    ShapeDtypeStructs); `donate_argnums` as the program is run (updated in place);
    `compiler_options`: XLA's debug options for this compile (e.g. `xla_dump_to`)."""
    return compile_timed(target, fn, *args, donate_argnums=donate_argnums,
                         compiler_options=compiler_options)[0]


def compile_timed(target: Target, fn, *args, donate_argnums=(), compiler_options=None
                  ) -> tuple[object, dict[str, float]]:
    """`compile_for`, and the seconds of its three phases: JAX's "trace" of `fn`, its
    "lower"ing to StableHLO, XLA's "compile"."""
    sharding = SingleDeviceSharding(device(target))
    abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding),
                            args)
    options = {**DEFAULT_OPTIONS, **(compiler_options or {})}
    with _uncached():
        return phases_timed(jax.jit(fn, donate_argnums=donate_argnums), *abstract,
                            compiler_options=options)


def phases_timed(jitted, *args, compiler_options=None) -> tuple[object, dict[str, float]]:
    """`jitted` (a `jax.jit` function) traced, lowered and compiled for `args`: (the
    compiled program, the seconds of its "trace", "lower" and "compile")."""
    start = time.perf_counter()
    traced = jitted.trace(*args)
    at_trace = time.perf_counter()
    lowered = traced.lower()
    at_lower = time.perf_counter()
    compiled = lowered.compile(compiler_options=compiler_options)
    return compiled, {"trace": at_trace - start, "lower": at_lower - at_trace,
                      "compile": time.perf_counter() - at_lower}


@contextlib.contextmanager
def _uncached():
    """JAX's persistent compilation cache off (where it is on: `jax_compilation_cache_dir`, as
    in the test suite): a program read here is compiled here, never loaded from the cache,
    which keeps no dump (XLA's dump options are not in its key)."""
    if jax.config.jax_compilation_cache_dir is None or not jax.config.jax_enable_compilation_cache:
        yield
        return
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()  # JAX decides once whether it caches: decide again
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", True)
        compilation_cache.reset_cache()


# --- reading the optimised HLO ----------------------------------------------------------

_ITEMSIZE = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4,
             "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_ARRAY = re.compile(r"\b(" + "|".join(_ITEMSIZE) + r")\[([\d,]*)\]")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s+\(.*\)\s+->\s+.*\{$")
_INSTRUCTION = re.compile(r"^(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([a-z][\w\-]*)\((.*)$")
# Instructions that launch nothing: bookkeeping, and the control flow whose computations
# are read instead.
_FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all",
         "partition-id", "replica-id", "opt-barrier", "add-dependency", "domain",
         "while", "conditional", "call", "copy-done", "send-done", "recv-done"}
_SLICING = {"slice", "dynamic-slice", "gather"}
# Updates of a buffer in place: which operand holds the values written.
_IN_PLACE = {"dynamic-update-slice": 1, "scatter": 2}


def _bytes(shape_text: str) -> int:
    total = 0
    for dtype, dims in _ARRAY.findall(shape_text):
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        total += n * _ITEMSIZE[dtype]
    return total


class _Instr(NamedTuple):
    name: str
    shape: str
    op: str
    operands: list[str]
    attrs: str
    index: int  # a parameter's number (-1 for other instructions)


def _operands(rest: str) -> tuple[list[str], str]:
    """The operand names of an instruction's argument text, and the attributes after it."""
    depth = 0
    for i, ch in enumerate(rest):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            if depth == 0:
                return re.findall(r"%([\w.\-]+)", rest[:i]), rest[i + 1:]
            depth -= 1
    return re.findall(r"%([\w.\-]+)", rest), ""


def _parse(hlo: str) -> tuple[dict[str, list[_Instr]], str]:
    computations, current, entry = {}, None, None
    for line in hlo.splitlines():
        line = line.strip()
        header = _HEADER.match(line)
        if header and " = " not in line.split("(")[0]:
            current = computations.setdefault(header.group(2), [])
            entry = header.group(2) if header.group(1) else entry
        elif line == "}":
            current = None
        elif current is not None and (m := _INSTRUCTION.match(line)):
            operands, attrs = _operands(m.group(4))
            number = re.match(r"\s*(\d+)\)", m.group(4)) if m.group(3) == "parameter" else None
            current.append(_Instr(m.group(1), m.group(2), m.group(3), operands, attrs,
                                  int(number.group(1)) if number else -1))
    return computations, entry


def _called(attrs: str, key: str) -> list[str]:
    m = re.search(key + r"=\{?([%\w.\-, ]+)\}?", attrs)
    return re.findall(r"%?([\w.\-]+)", m.group(1)) if m else []


def _trip_count(attrs: str) -> int | None:
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', attrs)
    return int(m.group(1)) if m else None


def _arrays(shape_text: str) -> list[tuple[str, int]]:
    """Each array of a shape (a tuple's each): its type and dimensions as the HLO writes
    them, and its bytes."""
    return [(f"{dtype}[{dims}]", _bytes(f"{dtype}[{dims}]"))
            for dtype, dims in _ARRAY.findall(shape_text)]


def _kernel_traffic(instr: _Instr, shapes: dict[str, str], computations
                    ) -> list[tuple[str, str, int]]:
    """What a kernel reads and writes (see the module's docstring): ("read" or "written",
    an array's type and dimensions, its bytes), an array each."""
    out = _arrays(instr.shape)
    reads = {name: _arrays(shapes.get(name, "")) for name in instr.operands}
    body = computations.get(next(iter(_called(instr.attrs, "calls")), ""), [])
    if body:  # a fusion: what it does with each of its parameters
        local = {i.name: i for i in body}
        users: dict[str, list[_Instr]] = {}
        for i in body:
            for o in i.operands:
                users.setdefault(o, []).append(i)
        root = body[-1]
        for i in body:
            if i.op != "parameter" or i.index >= len(instr.operands):
                continue
            outside = instr.operands[i.index]
            uses = users.get(i.name, [])
            if uses and all(u.op in _SLICING and u.operands[0] == i.name for u in uses):
                reads[outside] = [a for u in uses for a in _arrays(u.shape)]  # through slices
            if root.op in _IN_PLACE and root.operands[0] == i.name:
                reads[outside] = []  # updated in place: only the updates are written
                update = local.get(root.operands[_IN_PLACE[root.op]])
                out = _arrays(update.shape) if update else out
    elif instr.op in _IN_PLACE and len(instr.operands) > _IN_PLACE[instr.op]:
        reads[instr.operands[0]] = []
        out = _arrays(shapes.get(instr.operands[_IN_PLACE[instr.op]], ""))
    return ([("written", array, n) for array, n in out]
            + [("read", array, n) for arrays in reads.values() for array, n in arrays])


class Kernel(NamedTuple):
    """One kernel of a compiled program: how often a call launches it and what a launch
    touches (from the HLO); its launch size, registers and spills where the program was
    compiled by `compile_with_kernels` (XLA's dump and ptxas; zeros otherwise)."""

    name: str  # the HLO instruction's, as the PTX and the thunk sequence spell it
    launches: float  # a call (loop bodies counted by their trip counts)
    bytes: float  # one launch reads and writes (an estimate, see the module's docstring)
    elements: int  # of its largest array: the work its threads share
    blocks: int = 0
    threads: int = 0  # a block
    registers: int = 0  # a thread
    stack: int = 0  # bytes a thread (local memory: where spilled values go)
    spill_stores: int = 0  # bytes a thread, in the kernel's code (`spill_bytes`: its
    spill_loads: int = 0  # traffic a launch)
    instructions: int = 0  # a thread, its PTX counted (`ptx_instructions`)

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


class Program(NamedTuple):
    """What one call of a compiled program does (see the module's docstring)."""

    kernels: float
    host_syncs: float
    bytes: float
    memory_bytes: int  # arguments + outputs (less those donated) + temporaries
    costliest: list  # (bytes a call, kernel's name, its shape), the most bytes first
    by_kernel: tuple[Kernel, ...] = ()  # every kernel, in program order
    # ("read" or "written", an array's type and dimensions) -> bytes a call, all kernels'
    traffic: dict = {}

    def per(self, n: float) -> "Program":
        """The counts per one of `n` (e.g. per step of a loop of n steps)."""
        return self._replace(kernels=self.kernels / n, host_syncs=self.host_syncs / n,
                             bytes=self.bytes / n,
                             costliest=[(b / n, k, s) for b, k, s in self.costliest],
                             by_kernel=tuple(k._replace(launches=k.launches / n)
                                             for k in self.by_kernel),
                             traffic={a: b / n for a, b in self.traffic.items()})

    def spilling(self, over: int = 0) -> list[Kernel]:
        """Its kernels that spill more than `over` bytes a thread, the most first."""
        return sorted((k for k in self.by_kernel if k.spills > over), key=lambda k: -k.spills)


def read(compiled, top: int = 10) -> Program:
    """The `Program` of a compiled executable (`compile_for`'s; `compile_with_kernels`'s for
    each kernel's launch size and registers, else zeros)."""
    compiled, kernels = _with_kernels(compiled)
    computations, entry = _parse(compiled.as_text())
    return _program(computations, entry, _memory_bytes(compiled), top, kernels)


class WithKernels(NamedTuple):
    """A compiled GPU executable and its kernels' launch sizes and registers, by name."""

    executable: object
    kernels: dict


def _with_kernels(compiled) -> tuple[object, dict | None]:
    if isinstance(compiled, WithKernels):
        return compiled.executable, compiled.kernels
    return compiled, None


def _memory_bytes(compiled) -> int:
    memory = compiled.memory_analysis()
    # Outputs written into donated arguments are counted once.
    return 0 if memory is None else (memory.argument_size_in_bytes
                                     + memory.output_size_in_bytes
                                     - memory.alias_size_in_bytes + memory.temp_size_in_bytes)


class Loop(NamedTuple):
    """A loop at a program's top level: where its source calls it, and what one of its
    iterations does (device memory: none, the loop's own is the program's)."""

    where: str  # "file.py:function" that made the loop (a `lax.scan`, a `while_loop`...)
    trips: int | None  # its trip count (None: unknown when compiling)
    body: Program  # one iteration


def loops(compiled, top: int = 10) -> list[Loop]:
    """The while loops at the top level of a compiled executable (not those inside them), in
    program order: e.g. a training iteration's self-play and update scans, whose bodies are
    one self-play decision and one update (`compiled` as for `read`)."""
    compiled, kernels = _with_kernels(compiled)
    text = compiled.as_text()
    computations, entry = _parse(text)
    found = []
    for instr in computations[entry]:
        if instr.op != "while":
            continue
        frame = re.search(r"stack_frame_id=(\d+)", instr.attrs)
        body = _called(instr.attrs, "body")[0]
        found.append(Loop(_source(text, frame.group(1)) if frame else "?",
                          _trip_count(instr.attrs),
                          _program(computations, body, 0, top, kernels)))
    return found


def metadata_table(hlo: str, name: str) -> dict[str, str]:
    """Id -> entry of one of an HLO text's metadata tables ("FileNames", "FunctionNames",
    "FileLocations", "StackFrames")."""
    return dict(re.findall(r"^(\d+) (.+)$", hlo.split(name + "\n", 1)[1].split("\n\n", 1)[0],
                           re.M))


def _source(hlo: str, frame: str) -> str:
    """"file.py:function" of a stack frame of the HLO's metadata tables (its innermost
    location)."""
    files, functions = metadata_table(hlo, "FileNames"), metadata_table(hlo, "FunctionNames")
    location = re.search(r"file_location_id=(\d+)",
                         metadata_table(hlo, "StackFrames")[frame]).group(1)
    ids = re.search(r"file_name_id=(\d+) function_name_id=(\d+)",
                    metadata_table(hlo, "FileLocations")[location])
    return (files[ids.group(1)].strip('"').rsplit("/", 1)[-1] + ":"
            + functions[ids.group(2)].strip('"'))


def _program(computations, root: str, memory_bytes: int, top: int,
             device: dict | None = None) -> Program:
    """What one run of computation `root` does (see the module's docstring); `device`: the
    launch sizes and registers of `compile_with_kernels`, by kernel name."""
    shapes = {i.name: i.shape for body in computations.values() for i in body}
    launches, costs, shape_of, traffic = Counter(), Counter(), {}, Counter()
    totals = {"syncs": 0.0}

    def walk(name: str, times: float):
        for instr in computations.get(name, []):
            if instr.op == "while":
                trips = _trip_count(instr.attrs)
                if trips is None:
                    totals["syncs"] += times
                for key in ("condition", "body"):
                    for sub in _called(instr.attrs, key):
                        walk(sub, times * (trips or 1))
            elif instr.op in ("conditional", "call"):
                for key in ("branch_computations", "true_computation", "false_computation",
                            "to_apply"):
                    for sub in _called(instr.attrs, key):
                        walk(sub, times)
            elif instr.op not in _FREE:
                launches[instr.name] += times
                for direction, array, n in _kernel_traffic(instr, shapes, computations):
                    costs[instr.name] += times * n
                    traffic[direction, array] += times * n
                shape_of[instr.name] = (instr.shape, [shapes.get(o, "") for o in instr.operands])

    walk(root, 1.0)
    by_kernel = []
    for name, n in launches.items():
        out, ins = shape_of[name]
        kernel = Kernel(kernel_name(name), n, costs[name] / n,
                        max(_elements(x) for x in (out, *ins)))
        by_kernel.append(kernel._replace(**(device or {}).get(kernel.name, {})))
    ranked = sorted(((costs[name], name, shape_of[name][0]) for name in costs), reverse=True)
    return Program(kernels=float(sum(launches.values())), host_syncs=totals["syncs"],
                   bytes=float(sum(costs.values())), memory_bytes=memory_bytes,
                   costliest=ranked[:top], by_kernel=tuple(by_kernel), traffic=dict(traffic))


def _elements(shape_text: str) -> int:
    """Elements of the largest array of a shape (a tuple's too)."""
    sizes = [1] + [math.prod(int(d) for d in dims.split(",") if d)
                   for _, dims in _ARRAY.findall(shape_text)]
    return max(sizes)


def kernel_name(hlo_name: str) -> str:
    """An HLO instruction's name as its PTX entry and thunk are named."""
    return re.sub(r"[.\-]", "_", hlo_name)


# --- the kernels as the GPU runs them: XLA's dump and ptxas ---------------------------------

# `ptxas -v` on one kernel: "Compiling entry function 'NAME' ... N bytes stack frame, N bytes
# spill stores, N bytes spill loads ... Used N registers"
_PTXAS = re.compile(r"Compiling entry function '(\S+)'.*?(\d+) bytes stack frame, (\d+) bytes "
                    r"spill stores, (\d+) bytes spill loads.*?Used (\d+) registers", re.S)
# A kernel's PTX: ".entry NAME( params ) directives {  body  }" at the start of a line
_PTX_ENTRY = re.compile(r"\.entry (\w+)\(.*?\n\{\n(.*?)\n\}\n", re.S)
# A kernel thunk of XLA's thunk sequence: "ID: KIND [...] NAME grid: [x, y, z] threads: [x, y, z]"
_THUNK = re.compile(r"^\s*(\d+): \w+ +\[[^\]]*\] (\S+) grid: \[(\d+), (\d+), (\d+)\] "
                    r"threads: \[(\d+), (\d+), (\d+)\]", re.M)
# A thunk's HLO instruction and id in XLA's thunk metadata
_THUNK_HLO = re.compile(r'profile_annotation: "([^"]+)"\s*thunk_id: (\d+)')


def ptxas() -> str:
    """The path of ptxas (the CUDA compiler's assembler): on PATH, or pip's
    `nvidia-cuda-nvcc-cu12` (runs on any x86-64 Linux, no GPU needed)."""
    found = shutil.which("ptxas")
    if found:
        return found
    try:
        import nvidia.cuda_nvcc as nvcc
        for folder in nvcc.__path__:
            path = os.path.join(folder, "bin", "ptxas")
            if os.path.exists(path):
                return path
    except ImportError:
        pass
    raise RuntimeError("no ptxas to read a GPU kernel's registers and spills: pip install "
                       "nvidia-cuda-nvcc-cu12 (in the `test` extra)")


def launch_sizes(thunk_sequence: str) -> dict[str, tuple[int, int]]:
    """Kernel name -> (blocks, threads a block) of a thunk sequence's text (XLA's dump)."""
    sizes = {}
    for m in _THUNK.finditer(thunk_sequence):
        grid, block = [int(x) for x in m.groups()[2:5]], [int(x) for x in m.groups()[5:]]
        sizes[m.group(2)] = (math.prod(grid), math.prod(block))
    return sizes


def kernel_entries(thunk_sequence: str, thunk_metadata: str) -> dict[str, str]:
    """HLO kernel name (`kernel_name`) -> the name of the entry the GPU runs, where they
    differ: a fusion that XLA found identical to another runs that one's kernel, and a
    Pallas kernel (a custom call to Triton) is named after its Python function, made unique
    by XLA ("kernel", "kernel__1", ...). Joined by thunk id."""
    hlo = {int(i): name for name, i in _THUNK_HLO.findall(thunk_metadata)}
    named = {}
    for m in _THUNK.finditer(thunk_sequence):
        i, entry = int(m.group(1)), m.group(2)
        name = kernel_name(hlo.get(i, entry))
        if name != entry:
            named[name] = entry
    return named


def ptxas_usage(report: str) -> dict[str, tuple[int, int, int, int]]:
    """Kernel name -> (registers, stack, spill stores, spill loads) (bytes a thread) of the
    text `ptxas -v` writes."""
    return {m.group(1): (int(m.group(5)), int(m.group(2)), int(m.group(3)), int(m.group(4)))
            for m in _PTXAS.finditer(report)}


def ptx_entries(ptx: str) -> dict[str, str]:
    """Kernel name -> its entry's body, of a PTX text."""
    return {m.group(1): m.group(2) for m in _PTX_ENTRY.finditer(ptx)}


def ptx_instructions(ptx: str) -> dict[str, int]:
    """Kernel name -> instructions in its entry's body of a PTX text: the statements, not
    the declarations (`.reg ...`), labels or comments."""
    return {name: sum(1 for line in (line.strip() for line in body.splitlines())
                      if line.endswith(";") and not line.startswith((".", "//")))
            for name, body in ptx_entries(ptx).items()}


def _assemble(path: str, arch: str) -> str:
    done = subprocess.run([ptxas(), "-v", f"-arch={arch}", path, "-o", os.devnull],
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"ptxas failed on {path}: {done.stderr.strip()[-500:]}")
    return done.stderr


def compile_with_kernels(target: Target, fn, *args, donate_argnums=(), arch: str = "sm_90a",
                         dump_to: str | Path | None = None) -> WithKernels:
    """`compile_for` a GPU `target` with XLA's dump on, and each kernel's blocks and threads
    (the dump's thunk sequence) and registers, stack and spill bytes (`ptxas -v` over the
    dumped PTX, assembled again for `arch`), for `read` and `loops`. The dump goes to
    `dump_to` (kept), else to a temporary folder (removed)."""
    with tempfile.TemporaryDirectory(prefix="xla-dump-") as scratch:
        dump = Path(dump_to or scratch)
        compiled = compile_for(target, fn, *args, donate_argnums=donate_argnums,
                               compiler_options={"xla_dump_to": str(dump)})
        return WithKernels(compiled, _dumped_kernels(dump, arch))


def _dumped_kernels(dump: Path, arch: str) -> dict[str, dict]:
    """Kernel name -> Kernel fields of launch and registers, from a dump of one module."""
    sizes, entries = {}, {}
    for path in dump.glob("*thunk_sequence.txt"):
        sequence = path.read_text()
        sizes.update(launch_sizes(sequence))
        metadata = path.with_name(path.name.replace("thunk_sequence", "thunk_metadata"))
        if metadata.exists():
            entries.update(kernel_entries(sequence, metadata.read_text()))
    texts = {str(p): p.read_text() for p in sorted(dump.glob("*.ptx"))}
    ptx = [path for path, text in texts.items() if ".entry" in text]
    instructions = {}
    for path in ptx:
        instructions.update(ptx_instructions(texts[path]))
    if not sizes or not ptx:
        raise RuntimeError(f"XLA dumped no thunk sequence or PTX into {dump}: not a GPU "
                           "program, or one that JAX's compilation cache served?")
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        usage = {}
        for report in pool.map(lambda p: _assemble(p, arch), ptx):
            usage.update(ptxas_usage(report))
    found = {}
    for name, (blocks, threads) in sizes.items():
        registers, stack, stores, loads = usage.get(name, (0, 0, 0, 0))
        found[name] = dict(blocks=blocks, threads=threads, registers=registers, stack=stack,
                           spill_stores=stores, spill_loads=loads,
                           instructions=instructions.get(name, 0))
    return found | {name: found[entry] for name, entry in entries.items() if entry in found}


class TimeModel(NamedTuple):
    """Seconds of a program on a GPU, an estimate: each kernel launch costs a fixed latency
    plus the longer of its bytes over the bandwidth its blocks can draw and its threads'
    instructions over the chip's issue rate, its spill traffic weighted in; each host sync a
    fixed wait (docs/gpu-program.md, "The model": what each constant was fitted on)."""

    seconds_per_kernel: float  # a launch in a chain of dependent kernels
    seconds_per_host_sync: float  # the host reads a loop's condition, then launches again
    bytes_per_second: float  # the whole chip's, as XLA's kernels draw it
    bytes_per_second_per_block: float  # a kernel of few blocks draws at most this per block
    spill_weight: float  # a byte of spill traffic costs this many bytes of HBM traffic
    elements_per_spill_trip: int = 16  # a thread runs its spill code once per this many
    instructions_per_second: float = 0.0  # the whole chip's issue rate, thread-instructions
    # (0: no instruction term)

    def rate(self, k: Kernel) -> float:
        """Bytes a second that `k`'s blocks draw (unknown launch size: the whole chip's)."""
        return (min(self.bytes_per_second, k.blocks * self.bytes_per_second_per_block)
                if k.blocks else self.bytes_per_second)

    def spill_seconds(self, k: Kernel) -> float:
        """What `k`'s spill traffic adds to one of its launches."""
        return self.spill_weight * spill_bytes(k, self.elements_per_spill_trip) / self.rate(k)

    def issue_seconds(self, k: Kernel) -> float:
        """One launch of `k` issuing its threads' instructions (0 where not counted)."""
        if not self.instructions_per_second:
            return 0.0
        return k.blocks * k.threads * k.instructions / self.instructions_per_second

    def kernel_seconds(self, k: Kernel) -> float:
        """One launch of `k`: bound by its memory traffic or by its instructions."""
        return (self.seconds_per_kernel + max(k.bytes / self.rate(k), self.issue_seconds(k))
                + self.spill_seconds(k))

    def seconds(self, p: Program) -> float:
        return (sum(k.launches * self.kernel_seconds(k) for k in p.by_kernel)
                + p.host_syncs * self.seconds_per_host_sync)


def spill_bytes(k: Kernel, elements_per_trip: int = 16) -> float:
    """Local-memory traffic of one launch of `k`: its spill bytes a thread (ptxas counts the
    code's, once) x its threads x the trips each thread makes through that code (its share
    of the elements over `elements_per_trip`, at least one)."""
    threads = k.blocks * k.threads
    return k.spills * threads * max(1.0, k.elements / max(threads, 1) / elements_per_trip)


# Thread-instructions a second that the step's costliest kernels issued on an H200 (the
# H100's 132 multiprocessors and clock): their PTX counts x threads over their measured
# device time (docs/gpu-program.md, "The model"; `instruction_rate`).
INSTRUCTIONS_PER_SECOND = 25e12
INSTRUCTIONS_FITTED_ON = ("the profile of engine b6877eb on one NVIDIA H200 at 32,768 games: "
                          "its four costliest kernels, 24.3-30.4 T/s, median 25.4 T/s")

# Fitted to random play measured on one H100 (trictrac-jax and pgx backgammon, 1,024 to
# 131,072 games, the plain loop); the fit, its error and the code measured:
# docs/gpu-program.md, "The model".
H100_MODEL = TimeModel(seconds_per_kernel=1.0e-6, seconds_per_host_sync=22e-6,
                       bytes_per_second=1.0e12, bytes_per_second_per_block=13e9,
                       spill_weight=0.25, instructions_per_second=INSTRUCTIONS_PER_SECOND)


def summary(p: Program, model: TimeModel | None = H100_MODEL) -> str:
    """The program in a few lines, its costliest kernels last (for probing from Python)."""
    lines = [f"kernels {p.kernels:,.1f}, host syncs {p.host_syncs:,.1f}, bytes (estimate) "
             f"{p.bytes:,.0f}, device memory {p.memory_bytes / 1e9:.3f} GB"]
    if model is not None:
        lines.append(f"H100 estimate (compiled program, model in docs/gpu-program.md): "
                     f"{model.seconds(p) * 1e6:,.1f} µs")
    lines += [f"  {b:>16,.0f} bytes  {name}  {shape[:100]}" for b, name, shape in p.costliest]
    lines += [f"  spills {describe(k)}" for k in p.spilling()]
    return "\n".join(lines)


def describe(k: Kernel) -> str:
    """A kernel's launch and registers in one line."""
    return (f"{k.name}: {k.spill_stores:,} + {k.spill_loads:,} bytes of spill stores + loads "
            f"a thread, {k.stack:,}-byte stack, {k.registers} registers, {k.blocks:,} blocks "
            f"x {k.threads:,} threads")
