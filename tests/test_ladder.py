"""The rating fit on simulated round robins of known strengths, and the ladder script end
to end on two quick agents."""
import itertools
import json

import numpy as np
import pytest

from train import ladder as script
from trictrac_jax.league import ladder as L

TRUE_ELO = np.array([0.0, 120.0, 250.0, 480.0])


def simulate(rng, elo, games):
    """A round robin between agents of ratings `elo`, each game won with the Bradley-Terry
    probability."""
    pairs = []
    for a, b in itertools.combinations(range(len(elo)), 2):
        wins = rng.binomial(games, 1 / (1 + 10 ** ((elo[b] - elo[a]) / 400)))
        pairs.append(L.Pair(a, b, wins, games - wins, 0))
    return pairs


def test_fit_recovers_known_ratings():
    ratings = L.fit(4, simulate(np.random.default_rng(0), TRUE_ELO, 400), anchor=0)
    assert ratings.elo[0] == 0 and ratings.lo[0] == 0 == ratings.hi[0]
    assert list(np.argsort(ratings.elo)) == [0, 1, 2, 3]
    assert np.all((ratings.lo <= TRUE_ELO) & (TRUE_ELO <= ratings.hi))
    assert np.all(ratings.hi[1:] - ratings.lo[1:] < 120)  # 400 games a pair: +- ~40-60 Elo


def test_fit_intervals_cover_the_truth_about_95_percent():
    rng = np.random.default_rng(1)
    covered = [np.all(((r := L.fit(4, simulate(rng, TRUE_ELO, 200), anchor=0)).lo[1:]
                       <= TRUE_ELO[1:]) & (TRUE_ELO[1:] <= r.hi[1:]))
               for _ in range(200)]
    # three intervals at 95% each: jointly about 86-95% (they are correlated)
    assert 0.8 <= np.mean(covered) <= 0.99


def test_fit_is_finite_when_one_side_wins_every_game_and_draws_count_half():
    ratings = L.fit(2, [L.Pair(0, 1, 50, 0, 0)], anchor=1)
    assert np.isfinite(ratings.elo).all() and ratings.elo[0] > 400
    even = L.fit(2, [L.Pair(0, 1, 10, 10, 30)], anchor=0)
    assert even.elo[1] == pytest.approx(0, abs=1e-6)
    # 30 of 50 with draws half, 30.5 of 51 with the prior's draw: the odds 30.5 / 20.5
    ahead = L.fit(2, [L.Pair(0, 1, 10, 0, 40)], anchor=0)
    assert ahead.elo[1] == pytest.approx(-L.ELO * np.log(30.5 / 20.5), abs=1e-6)


def test_table_orders_by_rating():
    pairs = [L.Pair(0, 1, 3, 1, 0)]
    text = L.table(["random", "first"], L.fit(2, pairs, anchor=0), pairs)
    rows = text.splitlines()[2:]
    assert rows[0] == "| 1 | random | 0 | [0, 0] | 4 | 0.750 |"
    assert rows[1].startswith("| 2 | first | -") and rows[1].endswith("| 4 | 0.250 |")


def test_ladder_script_end_to_end(tmp_path, capsys):
    out = tmp_path / "ladder"
    assert script.main(["random", "first", "--games", "4", "--max-steps", "60",
                        "--out", str(out)]) == 0
    saved = json.loads((out / "pairs.json").read_text())
    (pair,) = saved["pairs"]
    assert (pair["a"], pair["b"]) == ("random", "first") and saved["anchor"] == "random"
    assert pair["wins_a"] + pair["wins_b"] + pair["draws"] == 4
    table = (out / "ladder.md").read_text()
    assert "| random | 0 | [0, 0] | 4 |" in table and "| first |" in table
    assert (out / "ladder.png").exists() or "no plot" in capsys.readouterr().out
    assert script.main(["random", "nobody", "--out", str(out)]) == 2
    assert "unknown agent 'nobody'" in capsys.readouterr().err


def test_a_ladder_run_again_plays_only_the_missing_pairs(tmp_path, capsys):
    """Run again into its directory with the same settings, a ladder reuses what pairs.json
    holds (a stopped ladder continues); other settings or an unreadable file replay all."""
    out = tmp_path / "ladder"
    args = ["random", "first", "--games", "4", "--max-steps", "40", "--out", str(out)]
    assert script.main(args) == 0
    pairs, table = (out / "pairs.json").read_text(), (out / "ladder.md").read_text()
    capsys.readouterr()
    assert script.main(args) == 0
    log = capsys.readouterr().out
    assert "1 pairs already played with these settings are reused" in log
    assert "0 vs 1:" not in log  # not played again
    assert (out / "pairs.json").read_text() == pairs and (out / "ladder.md").read_text() == table
    assert len(script.played(out / "pairs.json", script.parse_args(args), print)) == 1
    other = script.parse_args(args[:2] + ["--games", "2"] + args[4:])
    assert script.played(out / "pairs.json", other, print) == {}
    assert "other settings; every pair is played" in capsys.readouterr().out
    (out / "pairs.json").write_text("{not json")
    assert script.played(out / "pairs.json", script.parse_args(args), print) == {}
    assert "not read (JSONDecodeError" in capsys.readouterr().out

