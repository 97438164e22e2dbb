"""The `web` agent plays what the reference web client's Rust bot plays, on every position of
tests/data/web_bot.jsonl.gz (how that file was made: docs/agents.md)."""
import gzip
import json
import pathlib

import jax
import numpy as np
import pytest

import trictrac_jax as tt
from trictrac_jax import agents
from trictrac_jax.league import network_agents
from trictrac_jax.reference_bot import web_agent
from trictrac_jax.state import TS_HOLD_OR_GO

DATA = pathlib.Path(__file__).parent / "data" / "web_bot.jsonl.gz"
GO = 1
ENV = tt.Trictrac(max_steps=1000)


@pytest.fixture(scope="module")
def recorded():
    """(states [P], the Rust bot's actions int[P] (-1: an empty move at hold-or-go), its
    number of legal sequences int[P], turn stages int[P])."""
    with gzip.open(DATA, "rt") as f:
        recs = [json.loads(line) for line in f]
    states = jax.vmap(ENV.restore)(tt.states_from_records([r["state"] for r in recs]))
    actions = np.array([-1 if r["action"] is None else r["action"] for r in recs])
    sequences = np.array([r["sequences"] for r in recs])
    stages = np.array([r["state"]["turn_stage"] for r in recs])
    return states, actions, sequences, stages


def test_data_covers_the_cases(recorded):
    _, actions, sequences, stages = recorded
    assert len(actions) >= 1000
    hold = stages == TS_HOLD_OR_GO
    assert (hold & (sequences > 1)).sum() >= 100  # hold-or-go with a choice of moves
    assert ((sequences == 0) & ~hold).sum() >= 10  # no legal move: the empty action
    assert (actions == -1).sum() >= 10  # no legal move at hold-or-go


def test_web_plays_the_rust_bots_action_everywhere(recorded):
    states, actions, sequences, stages = recorded
    mask = np.asarray(states.legal_action_mask)
    # the positions load as the reference engine read them: one Move action per sequence
    moves = mask[:, 2:].sum(-1)
    assert (moves == np.maximum(sequences, (stages != TS_HOLD_OR_GO) & (sequences == 0))).all()
    keys = jax.random.split(jax.random.PRNGKey(0), len(actions))
    ours = np.asarray(jax.jit(jax.vmap(web_agent))(keys, states))
    # At hold-or-go without a legal sequence the original sends the empty move, which the
    # reference's game takes as holding; Go is the only action there.
    expected = np.where(actions == -1, GO, actions)
    assert (mask[actions == -1].sum(-1) == 1).all() and mask[actions == -1, GO].all()
    wrong = np.nonzero(ours != expected)[0]
    assert wrong.size == 0, f"{wrong.size} positions differ, first {wrong[:10].tolist()}"


def test_one_state_at_a_time_plays_the_same(recorded):
    """The unbatched path (no game axis) on a few positions of each kind."""
    states, actions, sequences, _ = recorded
    picks = np.concatenate([np.nonzero(sequences > 4)[0][:6], np.nonzero(actions == -1)[0][:1],
                            np.nonzero((sequences == 0) & (actions >= 0))[0][:1]])
    one = jax.jit(web_agent)
    for i in picks:
        state = jax.tree.map(lambda x: x[i], states)
        expected = GO if actions[i] == -1 else actions[i]
        assert int(one(jax.random.PRNGKey(1), state)) == expected, i


def test_web_is_a_baseline():
    assert agents.baseline("web") is web_agent
    assert network_agents.load_agent("web") is web_agent
