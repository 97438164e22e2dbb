"""Every code block of README.md and docs/api.md runs as written: each `python` block alone in
a fresh process (with its own imports), taking legal actions only, and printing nothing on
stderr; every other block is tagged with what it is (`bash` commands, `text`, a `diff`),
never left untagged."""
import importlib.util
import re
import textwrap

import pytest

from tests.fresh import ROOT, foreign_lines, run_fresh

DOCS = ("README.md", "docs/api.md")
KINDS = ("python", "bash", "text", "diff")
FENCE = re.compile(r"^( *)```(\S*)\n(.*?)^\1```$", re.M | re.S)  # indented in a list, too
OPTIONAL = {"pyspiel": "the openspiel extra"}  # a module a block may import: what installs it

# Runs a block as a script, then names the games it holds that have ended. A block takes a
# few decisions and a game lasts dozens, so an ended game is a forfeit: an illegal action.
RUNNER = """
import sys
import numpy as np
path = sys.argv[1]
names = {"__name__": "__main__"}
exec(compile(open(path).read(), path, "exec"), names)
from trictrac_jax.state import State
from trictrac_jax.wrappers import EnvState
def ended(value):
    if isinstance(value, (list, tuple)):
        return any(ended(v) for v in value)
    if isinstance(value, EnvState):  # an episode ended, and was reset
        return bool(np.any(value.returned_episode_valid)) or ended(value.game)
    return isinstance(value, State) and bool(np.any(value.terminated))
print("ended:", sorted(name for name, value in names.items() if ended(value)))
"""


def blocks():
    """(where, kind, code) of every fenced block, `where` as "README.md:31"."""
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for match in FENCE.finditer(text):
            indent, kind, code = match.groups()
            yield (f"{doc}:{text.count(chr(10), 0, match.start()) + 1}", kind,
                   textwrap.dedent(code) if indent else code)


def python_blocks() -> dict[str, str]:
    """Each distinct python block (a block shown twice runs once) -> where it first is."""
    found = {}
    for where, kind, code in blocks():
        if kind == "python":
            found.setdefault(code, where)
    return found


def optional_module(code: str) -> str | None:
    return next((m for m in OPTIONAL if re.search(rf"^import {m}\b", code, re.M)), None)


def run_block(code: str, tmp_path, environ: dict[str, str]) -> str | None:
    """Run `code` in a fresh process on the CPU; None if it went well, else what went wrong.
    XLA compiles it unoptimised, as every program of the suite (conftest.py)."""
    script = tmp_path / "block.py"
    script.write_text(code)
    returncode, out, err = run_fresh(["-c", RUNNER, str(script)], timeout=600,
                                     environ={"JAX_PLATFORMS": "cpu", **environ})
    if returncode:
        return f"exit code {returncode}:\n{err[-3000:]}"
    if out.splitlines()[-1] != "ended: []":
        return f"games ended (an illegal action?): {out.splitlines()[-1]}"
    if foreign_lines(err):
        return f"stderr:\n{err[-3000:]}"
    return None


def test_every_block_says_what_it_is():
    found = list(blocks())
    assert len(python_blocks()) >= 4
    untagged = [where for where, kind, _ in found if kind not in KINDS]
    assert not untagged, f"blocks tagged with none of {KINDS}: {untagged}"


def test_python_blocks_run_as_written(tmp_path):
    """The blocks that need only the quick start's install, in order, one fresh process each.
    They share the suite's compilation cache (conftest.py), even their smallest programs:
    what one block compiled, a later one loads."""
    cache = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    failures = [f"{where}: {problem}" for code, where in python_blocks().items()
                if optional_module(code) is None
                and (problem := run_block(code, tmp_path, cache)) is not None]
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("code", [pytest.param(code, id=where)
                                  for code, where in python_blocks().items()
                                  if optional_module(code)])
def test_blocks_of_optional_extras_run_as_written(code, tmp_path):
    module = optional_module(code)
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"imports {module}: needs {OPTIONAL[module]}")
    problem = run_block(code, tmp_path, {})
    assert problem is None, problem


def test_each_study_of_experiments_readme_takes_help(capsys):
    """experiments/README.md: each study listed there answers `--help` (`recipes.py`, data,
    is listed as such and has no command line)."""
    pytest.importorskip("mctx", reason="the studies need the train extra")
    import importlib
    listed = re.findall(r"^\| `(\w+)\.py` \|", (ROOT / "experiments" / "README.md").read_text(),
                        re.M)
    assert "recipes" in listed and len(listed) > 3
    for name in listed:
        module = importlib.import_module(f"experiments.{name}")
        if name == "recipes":
            assert not hasattr(module, "main")
            continue
        with pytest.raises(SystemExit) as done:
            module.main(["--help"])
        assert done.value.code == 0 and "usage:" in capsys.readouterr().out, name
