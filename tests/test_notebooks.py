"""The notebooks run from top to bottom on tiny settings (TRICTRAC_NOTEBOOK_TINY=1)."""
import os
import pathlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.fresh import xla_flags

nbformat = pytest.importorskip("nbformat", reason="needs the test extra: nbformat")
nbclient = pytest.importorskip("nbclient", reason="needs the test extra: nbclient")
pytest.importorskip("ipykernel", reason="needs the test extra: ipykernel")

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ("training", "rl", "quickstart", "play")  # the longest first: two at a time


def run_notebook(name: str):
    """Execute a notebook in a fresh kernel at the repository root; returns it executed."""
    notebook = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    return notebook


@pytest.fixture(scope="module")
def executed(monkeypatch_module):
    # Kernels inherit this process's environment: tiny settings, and this checkout first.
    monkeypatch_module.setenv("TRICTRAC_NOTEBOOK_TINY", "1")
    monkeypatch_module.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    # JAX chooses its platform as in a user's kernel (the suite's conftest pins the CPU)
    monkeypatch_module.delenv("JAX_PLATFORMS", raising=False)
    monkeypatch_module.setenv("XLA_FLAGS", xla_flags())
    # Two kernels at a time: most of a notebook's time is single-threaded compilation.
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(NOTEBOOKS, pool.map(run_notebook, NOTEBOOKS)))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def outputs(notebook) -> str:
    texts = []
    for cell in notebook.cells:
        for out in cell.get("outputs", []):
            texts.append(out.get("text", ""))
            texts.extend(str(v) for v in out.get("data", {}).values())
    return "\n".join(texts)


def test_notebooks_start_with_parameters_and_install():
    for name in NOTEBOOKS:
        notebook = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        first = next(c for c in notebook.cells if c.cell_type == "code")
        assert "parameters" in first.metadata.get("tags", [])
        assert "TRICTRAC_NOTEBOOK_TINY" in first.source and "git+" in first.source
        assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code"), \
            f"{name}: commit notebooks without outputs"


def test_notebooks_start_quietly(executed):
    """No cell prints a traceback: not the CUDA plugin's on a machine without a GPU."""
    for name, notebook in executed.items():
        assert "Traceback" not in outputs(notebook), name


def test_quickstart(executed):
    text = outputs(executed["quickstart"])
    assert "legal_action_mask (8, 514)" in text
    assert "<svg" in text and "decisions/s" in text and "expected points of the roll" in text


def test_play(executed):
    text = outputs(executed["play"])
    assert "you play White" in text
    assert "cannot read 'hello'" in text and "Goodbye." in text
    assert "<svg" in text


def test_training(executed):
    notebook = executed["training"]
    assert "vs random:" in outputs(notebook)
    plots = [o for c in notebook.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(plots) == 1  # the learning curve


def test_rl(executed):
    notebook = executed["rl"]
    text = outputs(notebook)
    assert "LogEnvState wraps EnvState | obs (4, 217) | legal_action_mask (4, 514)" in text
    assert "'final_observation'" in text and "'discount'" in text
    assert "2 updates, 32 environment steps" in text and "legal ones: legal" in text
    plots = [o for c in notebook.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(plots) == 1  # the learning curve
