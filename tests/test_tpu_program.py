"""The program a TPU v5e chip would run, compiled on this CPU (no TPU; libtpu of the `compile`
extra, at the version jax's `tpu` extra pins). Deselected where the extra is absent; under
`--compilers=require` (.ci/run) a missing libtpu fails here: an install error. The engine's
step (random play) and configs/tpu.yaml's training iteration (its self-play runs
`step_deterministic` and `chance_step`) are compiled for the chip by the `bench --h100`
report's test (tests/test_gpu_program.py), which asserts that the iteration fits in the
chip's 16 GB."""
import jax
import pytest

from trictrac_jax.tools import gpu_program as G

import trictrac_jax as tt

GAMES = 64
pytestmark = pytest.mark.compile  # needs the `compile` extra (conftest.py)


@pytest.fixture(autouse=True)
def accelerator_lowering(monkeypatch):
    """The engine's accelerator lowering, as a TPU runs it (read when tracing)."""
    monkeypatch.setenv("TRICTRAC_LOWERING", "gpu")


def test_libtpu_compiles_the_engine_for_a_tpu_v5e_chip():
    """libtpu is there and compiles for the chip (the observation, a small program: the
    steps and configs/tpu.yaml's training iteration, whose self-play runs both halves of a
    step, are compiled for the chip by the report's test)."""
    env = tt.Trictrac()
    states = jax.eval_shape(lambda k: jax.vmap(env.init)(jax.random.split(k, GAMES)),
                            jax.random.PRNGKey(0))
    assert G.device(G.TPU_V5E).platform == "tpu"
    program = G.read(G.compile_for(G.TPU_V5E, jax.vmap(env.observe), states))
    assert program.kernels > 0  # its operations (fusions mostly)
    assert 0 < program.memory_bytes < G.TPU_V5E_MEMORY_BYTES
