"""The OpenSpiel game passes OpenSpiel's own random-simulation checks and matches the engine."""
import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open_spiel not installed (optional extra: pip install 'trictrac-jax[openspiel]')")

import trictrac_jax as tt  # noqa: E402
import trictrac_jax.tools.openspiel_game  # noqa: E402,F401  (registers python_trictrac)
from trictrac_jax.tools import notation  # noqa: E402


@pytest.fixture(scope="module")
def game():
    return pyspiel.load_game("python_trictrac")


def test_game_shape(game):
    assert game.num_distinct_actions() == tt.NUM_ACTIONS == 514
    assert game.max_chance_outcomes() == 36
    assert game.num_players() == 2
    assert game.observation_tensor_size() == tt.OBS_SIZE
    assert game.get_type().chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION


def test_random_simulations(game):
    # Whole games (to 12 holes) with OpenSpiel's checks: clones, legal-action masks and
    # sorting, chance outcomes, observations for both players, returns within bounds.
    pyspiel.random_sim_test(game, num_sims=2, serialize=False, verbose=False)


def test_random_simulations_with_serialization():
    short = pyspiel.load_game("python_trictrac(max_steps=25)")
    pyspiel.random_sim_test(short, num_sims=2, serialize=True, verbose=False)


def test_a_game_follows_the_engine(game):
    """Replay the same dice and choices through the engine's (jitted) transitions."""
    k = notation.kernels()
    state = game.new_initial_state()
    engine = tt.new_game()
    rng = np.random.default_rng(3)
    chance_nodes = decisions = 0
    movers = []
    while not state.is_terminal() and decisions < 150:
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            assert [a for a, _ in outcomes] == list(range(36))
            assert sum(p for _, p in outcomes) == pytest.approx(1.0)
            outcome = int(rng.integers(36))
            assert state.action_to_string(pyspiel.PlayerId.CHANCE, outcome) == \
                "Roll {}-{}".format(*(int(d) for d in tt.CHANCE_DICE[outcome]))
            state.apply_action(outcome)
            engine = k.roll(engine, outcome).state
            chance_nodes += 1
        else:
            player = state.current_player()
            assert player == int(engine.current_player)
            legal = state.legal_actions()
            assert legal == np.flatnonzero(np.asarray(engine.legal_action_mask)).tolist()
            names = dict(notation.legal_moves(engine, k))
            action = int(rng.choice(legal))
            assert state.action_to_string(player, action) == \
                ("Go" if action == notation.GO else names[action])
            for p in (0, 1):
                np.testing.assert_allclose(state.observation_tensor(p),
                                           np.asarray(tt.observe(engine, p)), atol=1e-6)
            state.apply_action(action)
            engine = k.decide(engine, action)
            movers.append(player)
            decisions += 1
        assert np.asarray(state.state._board).tolist() == np.asarray(engine._board).tolist()
    assert chance_nodes - decisions in (0, 1)  # a roll before each decision (and the end)
    assert set(movers) == {0, 1}
    if state.is_terminal():
        assert sorted(state.returns()) == [-1.0, 1.0]
        assert state.returns() == np.asarray(engine.rewards).tolist()


def test_truncation_ends_the_game_with_no_winner():
    short = pyspiel.load_game("python_trictrac(max_steps=3)")
    state = short.new_initial_state()
    while not state.is_terminal():
        state.apply_action(state.legal_actions()[0])
    assert state.returns() == [0.0, 0.0]
    assert len(state.history()) == 3 * 2  # three rolls, three decisions
