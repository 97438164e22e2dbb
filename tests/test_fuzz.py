"""The fuzzer runs clean on random and adversarial inputs, and its checks can fail."""
import functools

import jax
import jax.numpy as jnp
import numpy as np

import trictrac_jax as tt
from trictrac_jax.tools import fuzz

ENV = tt.Trictrac(max_steps=60)  # low: truncation happens within the run
ARGS = ["--steps", "25600", "--batch", "256", "--max-steps", "60", "--seed", "0"]


def test_fuzz_finds_no_violation_and_covers_every_input(capsys):
    assert fuzz.main(ARGS) == 0
    out = capsys.readouterr().out
    assert "steps checked: 25600 (100 x 256 games)" in out
    # the same compiled run (equal environments share it): every kind of input and ending
    counts, seen = fuzz.run(ENV, jax.random.PRNGKey(0), 100, 256)
    assert dict(zip(fuzz.INVARIANTS, counts.tolist())) == dict.fromkeys(fuzz.INVARIANTS, 0)
    assert all(n > 0 for n in seen.tolist()), dict(zip(fuzz.COVERAGE, seen.tolist()))


def test_the_checks_catch_planted_violations():
    check = jax.jit(functools.partial(fuzz.violations, ENV))

    def broken(prev, nxt, op=fuzz.ROLL, action=0, outcome=3):
        flags = np.asarray(check(prev, op, action, outcome, nxt))
        return {name for name, flag in zip(fuzz.INVARIANTS, flags) if flag}

    state = ENV.init(jax.random.PRNGKey(1))
    assert broken(state, state) == set()  # a chance step at a decision node: a no-op
    sixteen = state.replace(_board=state._board.at[0].add(1))
    assert {"checkers", "checkers_return", "observation", "bad_inputs"} <= broken(state, sixteen)
    assert broken(state, state.replace(rewards=jnp.array([1.0, 0.0]))) == {"rewards",
                                                                          "bad_inputs"}
    finished = ENV.step(state, -5, jax.random.PRNGKey(2))  # out of range: forfeit
    assert broken(state, finished, op=fuzz.STEP, action=-5) == set()
    assert broken(state, state, op=fuzz.STEP, action=-5) == {"bad_inputs"}  # no forfeit
    settled = finished.replace(rewards=jnp.zeros(2))
    assert broken(finished, settled, op=fuzz.STEP) == set()
    assert broken(finished, finished, op=fuzz.STEP) == {"absorbing", "rewards"}  # paid twice
    turned = settled.replace(current_player=1 - settled.current_player)
    assert "absorbing" in broken(finished, turned, op=fuzz.STEP)
