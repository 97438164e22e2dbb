"""Which JAX platform a program starts (the CPU alone when the machine has no accelerator),
and where it keeps its compiled programs between runs.

Importing trictrac_jax changes no JAX setting (as pgx and mctx); our programs (the tools'
and train scripts' entry points, through `start_program`) call `choose_platform` first.
It matters only where the
CUDA or TPU compiler plugins are installed (the `compile` extra: the suite compiles the H100
and TPU v5e programs on any machine). Left to choose, JAX initialises every installed
plugin: on a machine without a GPU the CUDA plugin's version check fails and JAX logs its
traceback, and libtpu prints its own errors, before the user's first line of output. So,
when neither `JAX_PLATFORMS` nor `jax.config.jax_platforms` says otherwise and no GPU or TPU
device is visible, `choose_platform` sets `jax_platforms` to "cpu", what JAX would end up
using anyway. A machine with a GPU or a TPU is left to JAX's own choice. The compilers stay
registered: compiling for an H100 or a TPU needs no device (tools/gpu_program.py). (What
no setting prevents: the CUDA plugin's libraries, loaded by `import jax`, log "Could not
find cuda drivers" through absl; the quick start's environment has no such plugin.)

Compiling is much of a short run's time (half a minute on a 2-core CPU for the programs of
configs/quick.yaml, docs/training.md), and a run resumed, evaluated or played again compiles
the same programs: our programs then call `use_compilation_cache` (`start_program` calls
both), JAX's persistent compilation cache in `~/.cache/trictrac_jax/jax` (or
`TRICTRAC_COMPILATION_CACHE`'s folder; "off": none; a `JAX_COMPILATION_CACHE_DIR` of the
user's is kept), which reads a program compiled before instead of compiling it again.
Benchmarks do not: they time the compile.
"""
from __future__ import annotations

import glob
import os
import pathlib
import sys

import jax
from jax.experimental.compilation_cache import compilation_cache

# Device nodes of an NVIDIA driver (Docker and Kubernetes expose nvidiactl; WSL2 dxg) and
# of AMD's ROCm driver; the PCI vendor id of Google's TPU chips.
ACCELERATOR_NODES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg", "/dev/kfd")
TPU_PCI_VENDOR = "0x1ae0"
CACHE_ENV = "TRICTRAC_COMPILATION_CACHE"  # the cache's folder, or "off"


def accelerator_visible() -> bool:
    """Whether a GPU or a TPU is attached to this machine (device nodes, PCI vendors)."""
    if any(os.path.exists(node) for node in ACCELERATOR_NODES):
        return True
    vendors = glob.glob("/sys/bus/pci/devices/*/vendor")
    return any(pathlib.Path(v).read_text().strip() == TPU_PCI_VENDOR for v in vendors)


def choose_platform() -> str | None:
    """Set `jax_platforms` to "cpu" where nothing else is asked for and no accelerator is
    visible (see the module); returns the platforms set, None when left to JAX. Call it
    before JAX's first computation."""
    if os.environ.get("JAX_PLATFORMS") or jax.config.jax_platforms or accelerator_visible():
        return None
    jax.config.update("jax_platforms", "cpu")
    return "cpu"


def default_cache_dir() -> pathlib.Path:
    """~/.cache/trictrac_jax/jax (under XDG_CACHE_HOME where it is set)."""
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "trictrac_jax" / "jax"


def use_compilation_cache() -> str | None:
    """Keep this process's compiled programs for the next (see the module): the folder of
    JAX's persistent compilation cache, None where `TRICTRAC_COMPILATION_CACHE` is "off" or
    the folder cannot be made and written (a folder the user named: said on stderr). A
    folder already set (`JAX_COMPILATION_CACHE_DIR`) is used as it is."""
    if jax.config.jax_compilation_cache_dir:
        return jax.config.jax_compilation_cache_dir
    chosen = os.environ.get(CACHE_ENV, "")
    if chosen.lower() == "off":
        return None
    folder = pathlib.Path(chosen or default_cache_dir())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        writable = os.access(folder, os.W_OK)
    except OSError as error:
        writable, why = False, error.strerror or str(error)
    else:
        why = "not writable"
    if not writable:
        if chosen:
            print(f"{CACHE_ENV}={chosen}: {why}; compiling without a cache", file=sys.stderr)
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    # JAX decides once whether it caches (at the first computation, an import's maybe)
    compilation_cache.reset_cache()
    return str(folder)


def start_program() -> str | None:
    """What our tools and train scripts call first, before JAX starts: the platform
    (`choose_platform`), then the compilation cache (`use_compilation_cache`; its folder,
    or None)."""
    choose_platform()
    return use_compilation_cache()


def describe() -> str:
    """'1 cpu device (cpu), 1 process': what this process computes on."""
    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    return (f"{len(devices)} {jax.default_backend()} device{'s' * (len(devices) > 1)} "
            f"({', '.join(kinds)}), {jax.process_count()} "
            f"process{'es' * (jax.process_count() > 1)}")
