"""A user's process: `python ARGS` started fresh at the repository root, as after the README's
install (JAX left to choose its platform), and the lines of its stderr that are not about
the user's work."""
import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Where the `compile` extra is installed (CI), `import jax` loads the CUDA plugin's libraries,
# which log through absl that the machine has no driver; no setting silences them
# (trictrac_jax/devices.py). The quick start's environment has no such plugin: there every
# line of stderr counts.
CUDA_PLUGIN_LOAD = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|I0000 [\d:.]+ +\d+ cudart_stub\.cc:\d+\] Could not find cuda drivers on your machine, "
    r"GPU will not be used\.")


def cuda_plugin_installed() -> bool:
    try:
        importlib.metadata.distribution("jax-cuda12-plugin")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


# XLA compiles the CPU programs of the processes that tests start unoptimised (LLVM's -O0):
# on their tiny settings compiling is most of their time, and the tests check what they
# compute, not how fast. (Not in the suite's own processes: some tests run long on the CPU.)
UNOPTIMISED = "--xla_backend_optimization_level=0"


def xla_flags(*more: str) -> str:
    """XLA_FLAGS for a process a test starts: this process's, UNOPTIMISED and `more`."""
    return " ".join([os.environ.get("XLA_FLAGS", ""), UNOPTIMISED, *more]).strip()


def start(args, environ: dict[str, str] | None = None) -> subprocess.Popen:
    """`python ARGS` in a new process at the repository root, with text pipes, JAX_PLATFORMS
    unset (the suite sets it, a user does not) unless `environ` (more variables) sets it, and
    `xla_flags()`."""
    env = ({k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
           | {"XLA_FLAGS": xla_flags()} | (environ or {}))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def run_fresh(args, stdin="", timeout=600, environ: dict[str, str] | None = None):
    """(return code, stdout, stderr) of `start(args, environ)` given `stdin`."""
    process = start(args, environ)
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    finally:
        process.kill()  # (no-op once it has exited)
    return process.returncode, out, err


def foreign_lines(stderr: str) -> list[str]:
    """The lines of `stderr` that are not about the work: all of them, but for the CUDA
    plugin's load-time lines where the `compile` extra is installed."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if cuda_plugin_installed():
        lines = [line for line in lines if not CUDA_PLUGIN_LOAD.fullmatch(line)]
    return lines
