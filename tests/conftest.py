"""The suite runs on the CPU. With the CUDA compiler plugin installed (the `compile` extra,
for compiling GPU programs without a GPU) jax would also try to start a CUDA backend in every
process, and log a traceback where there is no driver; the GPU programs are compiled through
compile-only devices (`tools/gpu_program.py`), which need no backend.

The compile tests (marker `compile`) need the H100 and TPU compilers of the `compile` extra,
which the quick start does not install: where they are absent the tests are deselected and
the summary says so in one line. `--compilers=require` (.ci/run) runs them whatever is
installed, so that a missing compiler fails there."""
import importlib.metadata
import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

COMPILERS = ("jax-cuda12-plugin", "jax-cuda12-pjrt", "nvidia-cuda-nvcc-cu12", "libtpu")  # `compile`


def missing_compilers() -> list[str]:
    missing = []
    for name in COMPILERS:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def pytest_addoption(parser):
    parser.addoption("--compilers", choices=("auto", "require"), default="auto",
                     help="compile tests: run them where the `compile` extra is installed "
                          "(auto, the default), or always, failing without it (require)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--compilers") == "require" or not missing_compilers():
        return
    deselected = [item for item in items if item.get_closest_marker("compile")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("compile")]


def pytest_terminal_summary(terminalreporter, config):
    missing = missing_compilers()
    if config.getoption("--compilers") == "auto" and missing:
        terminalreporter.write_line(
            f"compile tests deselected: {', '.join(missing)} not installed "
            f"(pip install -e \".[compile]\" to run them)")
