"""The program a TPU v5e chip would run, compiled on this CPU (no TPU; libtpu of the `test`
extra, at the version jax's `tpu` extra pins): the engine's steps compile for it. A missing
libtpu fails here: it is an install error. configs/tpu.yaml's search and training iteration
are compiled for the chip by the `bench --h100` report's test (tests/test_gpu_program.py),
which asserts that the iteration fits in the chip's 16 GB."""
import jax
import jax.numpy as jnp
import pytest

from trictrac_jax.tools import gpu_program as G

import trictrac_jax as tt

GAMES = 64


@pytest.fixture(autouse=True)
def accelerator_rules(monkeypatch):
    """The engine's accelerator rules, as a TPU runs it (read when tracing)."""
    monkeypatch.setenv("TRICTRAC_LANES", "gpu")


def test_engine_steps_compile_for_a_tpu_v5e_chip():
    env = tt.Trictrac()
    states = jax.eval_shape(lambda k: jax.vmap(env.init)(jax.random.split(k, GAMES)),
                            jax.random.PRNGKey(0))
    actions = jax.ShapeDtypeStruct((GAMES,), jnp.int32)
    keys = jax.ShapeDtypeStruct((GAMES, 2), jnp.uint32)
    calls = {"step": (jax.vmap(env.step), (states, actions, keys)),
             "step_deterministic": (jax.vmap(env.step_deterministic), (states, actions)),
             "chance_step": (jax.vmap(env.chance_step), (states, actions))}
    assert G.device(G.TPU_V5E).platform == "tpu"
    for name, (fn, args) in calls.items():
        program = G.read(G.compile_for(G.TPU_V5E, fn, *args))
        assert program.kernels > 0, name  # its operations (fusions mostly)
        assert 0 < program.memory_bytes < G.TPU_V5E_MEMORY_BYTES, name
