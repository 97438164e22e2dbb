"""The terminal game: notation, choices, roll explanations, and whole scripted games."""
import io
import pathlib
import re

import jax
import numpy as np
import pytest

import trictrac_jax as tt
from trictrac_jax import agents, render
from trictrac_jax.tools import notation
from trictrac_jax.tools import play
from trictrac_jax.agents import first_agent, random_agent


class Script(io.StringIO):
    """Scripted input: the given lines, then `fallback` forever (None: end of input)."""

    def __init__(self, lines, fallback=None):
        super().__init__("".join(f"{line}\n" for line in lines))
        self.fallback = fallback

    def readline(self, *args):
        line = super().readline(*args)
        return line if line or self.fallback is None else f"{self.fallback}\n"


def decision_states(seed: int, count: int):
    """Decision states of a random game (and the states from which each roll was made)."""
    k = notation.kernels()
    agent = jax.jit(random_agent)
    key = jax.random.PRNGKey(seed)
    state = k.roll(tt.new_game(), 20).state
    states = []
    while len(states) < count and not bool(state.terminated):
        states.append(state)
        key, outcome, agent_key = k.draw(key)
        state = k.decide(state, agent(agent_key, state))
        if not bool(state.terminated):
            state = k.roll(state, outcome).state
    return states


@pytest.fixture(scope="module")
def states():
    return decision_states(seed=4, count=80)


def test_move_text_and_parse_moves_are_inverse():
    assert notation.move_text([1, 6, 6, 11]) == "1-6 6-11"
    assert notation.move_text([20, 0, 22, 0]) == "20-off 22-off"
    assert notation.move_text([24, 19, 0, 0]) == "24-19"
    assert notation.move_text([0, 0, 0, 0]) == "pass"
    for text in ("1-6 6-11", "20-off 22-off", "24-19"):
        pairs = notation.parse_moves(text)
        assert notation.move_text([x for p in pairs for x in p] + [0, 0] * (2 - len(pairs))) == text
    assert notation.parse_moves("1/6, 6/11") == ((1, 6), (6, 11))
    assert notation.parse_moves("20-0") == ((20, 0),)


@pytest.mark.parametrize("text, message", [
    ("1-", "cannot read"), ("a-b", "cannot read"), ("1-6-11", "cannot read"),
    ("0-5", "numbered 1 to 24"), ("3-25", "numbered 1 to 24"),
    ("1-2 2-3 3-4", "at most two"),
])
def test_parse_moves_refuses_bad_notation(text, message):
    with pytest.raises(notation.ChoiceError, match=message):
        notation.parse_moves(text)


def test_every_listed_move_is_chosen_back_by_number_and_notation(states):
    seen_go = False
    for state in states:
        moves = notation.legal_moves(state)
        legal = set(np.flatnonzero(np.asarray(state.legal_action_mask)).tolist())
        assert {a for a, _ in moves} == legal
        for n, (action, written) in enumerate(moves, 1):
            assert notation.parse_choice(str(n), moves) == action
            chosen = notation.parse_choice(written.upper(), moves)
            # two actions can name the same moves (one per die order): either is that move
            assert dict(moves)[chosen] == written
        seen_go |= notation.GO in legal
    assert seen_go, "no hold-or-go decision in the sample: choose another seed"


def test_parse_choice_explains_what_is_wrong(states):
    state = next(s for s in states if notation.GO not in dict(notation.legal_moves(s)))
    moves = notation.legal_moves(state)
    for text, message in [("", "type the number"), ("0", "no move number 0"),
                          (str(len(moves) + 1), f"choose 1 to {len(moves)}"),
                          ("go", "only possible right after winning a hole"),
                          ("hold", "choose one of the listed moves"),
                          ("13-14 14-15", "not a legal move here")]:
        with pytest.raises(notation.ChoiceError, match=message):
            notation.parse_choice(text, moves)


def test_moves_in_either_order_name_the_same_action(states):
    for state in states:
        moves = notation.legal_moves(state)
        notations = {t for _, t in moves}
        for action, written in moves:
            parts = written.split()
            swapped = " ".join(reversed(parts))
            if len(parts) == 2 and swapped not in notations:
                assert notation.parse_choice(swapped, moves) == action
                return
    pytest.fail("no move whose reverse order is not itself listed")


def test_moves_with_one_result_are_listed_once(states):
    """`1-3 1-5` and `1-5 1-3` (or `1-4 4-6` and `1-3 3-6`) leave the same afterstate: the
    list shows one of them, and the other's notation chooses it."""
    k = notation.kernels()
    twins = 0
    for state in states[::4]:
        moves = notation.legal_moves(state, k)
        listed = notation.distinct_moves(moves)
        results = [notation.result_of(t) for a, t in listed if a != notation.GO]
        assert len(set(results)) == len(results)
        by_result = {notation.result_of(t): a for a, t in listed if a != notation.GO}
        for action, written in moves:
            if action == notation.GO or by_result[notation.result_of(written)] == action:
                continue
            twins += 1
            shown = by_result[notation.result_of(written)]
            assert notation.parse_choice(written, listed) == shown
            same = jax.tree.map(np.array_equal, k.decide(state, action), k.decide(state, shown))
            assert all(jax.tree.leaves(same)), (written, dict(listed)[shown])
    assert twins >= 10, "too few moves with a twin in the sample: choose another seed"


def test_jan_points_add_up_to_the_engines_points(states):
    k = notation.kernels()
    made = set()
    for state in states[::2]:
        afterstate = k.decide(state, int(np.flatnonzero(np.asarray(state.legal_action_mask))[0]))
        if bool(afterstate.terminated):
            continue
        roller = int(afterstate.current_player)
        for outcome in range(0, 36, 5):
            roll = k.roll(afterstate, outcome)
            dice = tuple(int(d) for d in tt.CHANCE_DICE[outcome])
            scores = notation.jan_scores(roller, dice, roll.jans, roll.listed)
            points = np.asarray(roll.jans.points)
            assert sum(s.points for s in scores if s.scorer == roller) == points[0]
            assert sum(s.points for s in scores if s.scorer != roller) == points[1]
            for s in scores:
                assert s.ways == len(s.moves) == int(roll.jans.ways[tt.scoring.JANS.index(s.name)])
                made.add(s.name)
            report = "\n".join(notation.roll_report(afterstate, roll))
            assert f"rolls {dice[0]}-{dice[1]}" in report
            if points[0]:
                assert f"{render.COLOUR_NAMES[roller]} marks {points[0]} points" in report
    assert len(made) >= 3, made


def test_a_scripted_game_survives_bad_input_and_reaches_the_end():
    out = io.StringIO()
    script = Script(["", "foo", "99", "30-31", "help", "board", "go", "hold"], fallback="1")
    final = play.play_game(jax.jit(first_agent), 0, 5, script, out)
    text = out.getvalue()
    assert bool(final.terminated)
    for message in ["type the number", "cannot read 'foo'", "no move number 99",
                    "numbered 1 to 24", "How to answer", "only possible right after",
                    "choose one of the listed moves"]:
        assert message in text
    assert text.rstrip().endswith(render.status_line(render.position(final)) + ".")
    assert "White plays" in text and "Black plays" in text and "rolls" in text
    holes = np.asarray(final._holes)
    assert holes.max() >= 12
    # every roll is explained, and every hole won is announced
    assert len(re.findall(r"^(White|Black) rolls \d-\d\.$", text, re.M)) >= 10
    assert len(re.findall(r"wins \d+ holes?", text)) >= 1
    # one note, before the bot's first move, while it compiles
    assert text.count("its first move is compiled first") == 1
    assert text.index("its first move is compiled first") < text.index("Black plays")
    # each listing shows a move once, whatever way its checkers take
    for listing in re.findall(r"^Legal moves:\n((?:  .*\n)+)", text, re.M):
        notations = re.findall(r"\d+\) (\S+(?: \d+-\S+)?)", listing)
        results = [notation.result_of(n) for n in notations if n != "go"]
        assert notations and len(set(results)) == len(results), listing


def test_playing_black_the_bot_opens():
    out = io.StringIO()
    bot = jax.jit(first_agent)
    last = play.play_game(bot, 1, 2, Script(["1", "quit"]), out)
    assert not bool(last.terminated) and int(last.current_player) == 1
    text = out.getvalue()
    assert text.index("White thinks: its first move is compiled first") < \
        text.index("White plays") < text.index("Your choice")
    assert text.rstrip().endswith("Goodbye.")
    again = io.StringIO()  # the same bot, compiled: no note
    play.play_game(bot, 1, 2, Script(["quit"]), again)
    assert "compiled first" not in again.getvalue() and "White plays" in again.getvalue()


class Interrupt(io.StringIO):
    """Input where the player presses Ctrl-C at the first prompt."""

    def readline(self, *args):
        raise KeyboardInterrupt


def test_ctrl_c_leaves_with_one_line(capsys):
    out = io.StringIO()
    assert play.main(["--opponent", "first", "--seed", "3"], stdin=Interrupt(), stdout=out) == 130
    lines = out.getvalue().splitlines()
    assert lines[-2:] == ["Your choice: ", "Interrupted: goodbye."]
    assert capsys.readouterr().err == ""


def test_help_points_to_the_rules_for_players(capsys):
    with pytest.raises(SystemExit):
        play.main(["--help"])
    assert play.RULES in " ".join(capsys.readouterr().out.split())
    assert (pathlib.Path(__file__).resolve().parents[1] / play.RULES).is_file()


def test_end_of_input_quits_cleanly():
    out = io.StringIO()
    last = play.play_game(jax.jit(first_agent), 0, 1, Script([]), out)
    assert not bool(last.terminated) and int(last._step_count) == 0
    assert out.getvalue().rstrip().endswith("Goodbye.")


def test_command_line(capsys):
    out = io.StringIO()
    assert play.main(["--opponent", "first", "--seed", "7", "--colour", "white"],
                     stdin=Script(["q"]), stdout=out) == 0
    assert "seed 7" in out.getvalue() and "Goodbye." in out.getvalue()
    assert play.main(["--opponent", "nobody"], stdin=Script([]), stdout=out) == 2
    assert "cannot load opponent 'nobody'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        play.main(["--colour", "green"], stdin=Script([]), stdout=out)


def test_network_opponents_look_over_the_rolls_by_default(monkeypatch):
    pytest.importorskip("mctx", reason="needs the train extra")
    from trictrac_jax.league import network_agents
    calls = []
    monkeypatch.setattr(network_agents, "load_agent",
                        lambda spec, play: calls.append((spec, play)) or agents.first_agent)
    assert play.load_opponent("first", 32) is agents.first_agent  # a baseline: no network
    for lookahead, rolls in [(32, None), (0, None), (32, False), (8, True)]:
        play.load_opponent("champion", lookahead, rolls)
    assert calls == [("champion", network_agents.Play(lookahead=32, rolls=True)),
                     ("champion", network_agents.Play(lookahead=0, rolls=False)),
                     ("champion", network_agents.Play(lookahead=32, rolls=False)),
                     ("champion", network_agents.Play(lookahead=8, rolls=True))]
