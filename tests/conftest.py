"""The suite runs on the CPU. With the CUDA compiler plugin installed (the `compile` extra,
for compiling GPU programs without a GPU) jax would also try to start a CUDA backend in every
process, and log a traceback where there is no driver; the GPU programs are compiled through
compile-only devices (`tools/gpu_program.py`), which need no backend.

The compile tests (marker `compile`) need the H100 and TPU compilers of the `compile` extra,
and the documentation site's build (marker `docs`) the `docs` extra, neither of which the
quick start installs: where an extra is absent its tests are deselected and the summary says
so in one line. `--compilers=require` and `--docs=require` (.ci/run) run them whatever is
installed, so that a missing package fails there.

The suite is mostly XLA compiling, and many programs are compiled again by the other xdist
worker or by the processes that tests start (training runs, notebooks, documentation code):
JAX's persistent compilation cache, in a folder made for this session (removed at its end)
and shared with them through the environment, compiles each once. Programs compiled for an
H100 or a TPU (`tools/gpu_program.py`) are read from a real compile, never the cache. The
processes that tests start compile unoptimised (tests/fresh.py)."""
import importlib.metadata
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
CACHE = "JAX_COMPILATION_CACHE_DIR"

COMPILERS = ("jax-cuda12-plugin", "jax-cuda12-pjrt", "nvidia-cuda-nvcc-cu12", "libtpu")  # `compile`
# marker -> (its command-line option, the extra, the distributions it needs)
EXTRAS = {"compile": ("--compilers", "compile", COMPILERS),
          "docs": ("--docs", "docs", ("mkdocs", "mkdocs-material", "mkdocstrings-python"))}


def missing(names) -> list[str]:
    """The distributions of `names` that are not installed."""
    absent = []
    for name in names:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            absent.append(name)
    return absent


def pytest_configure(config):
    """The session's compilation cache, made by the first process (xdist's controller, before
    its workers start) and inherited by every process after it; a folder set by the user is
    kept as it is."""
    if CACHE not in os.environ:
        os.environ[CACHE] = tempfile.mkdtemp(prefix="jax-cache-")
        config.stash[made_cache] = os.environ[CACHE]
        # programs compiled in under half a second are not worth a file each
        os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.5"


def pytest_unconfigure(config):
    if made := config.stash.get(made_cache, None):
        shutil.rmtree(made, ignore_errors=True)


made_cache = pytest.StashKey[str]()


def pytest_addoption(parser):
    for marker, (option, extra, _) in EXTRAS.items():
        parser.addoption(option, choices=("auto", "require"), default="auto",
                         help=f"{marker} tests: run them where the `{extra}` extra is installed "
                              f"(auto, the default), or always, failing without it (require)")


def skipped_markers(config) -> dict[str, list[str]]:
    """The markers whose tests are left out, each with its missing distributions."""
    out = {}
    for marker, (option, _, names) in EXTRAS.items():
        if config.getoption(option) == "auto" and (absent := missing(names)):
            out[marker] = absent
    return out


def pytest_collection_modifyitems(config, items):
    left_out = skipped_markers(config)
    deselected = [item for item in items
                  if any(item.get_closest_marker(m) for m in left_out)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item not in deselected]
    # The compile tests first (the longest of the suite: the H100 report's takes minutes):
    # the first xdist worker starts with them, and the run never waits on one alone at its end.
    items.sort(key=lambda item: item.get_closest_marker("compile") is None)


def pytest_terminal_summary(terminalreporter, config):
    for marker, absent in skipped_markers(config).items():
        terminalreporter.write_line(
            f"{marker} tests deselected: {', '.join(absent)} not installed "
            f"(pip install -e \".[{EXTRAS[marker][1]}]\" to run them)")
