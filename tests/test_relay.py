"""The champion-3 relay (trictrac_jax/tools/relay.py) at tiny sizes: the next leg's plan
read from the ledger, a leg adopted with its ledger line, the CPU's evaluation and the rule
by which a leg ships. A whole session's legs: tests/test_gpu_session.py."""
import json

import jax
import pytest

from tests.test_train import tiny_config
from train import gpu_run
from trictrac_jax.az import champion
from trictrac_jax.az import training as T
from trictrac_jax.tools import positions, relay


def leg_event(number, rate, win_rate, games=256):
    return {"event": "leg", "leg": number, "learning_rate": rate, "win_rate": win_rate,
            "low": None, "high": None, "games": games, "commit": "c", "device": "d",
            "minutes": 1.0, "moves": 10, "init_from": "x"}


def evaluation_event(number, win_rate):
    return {"event": "evaluation", "leg": number, "win_rate": win_rate, "games": 1000}


def write_ledger(path, events):
    path.mkdir(parents=True, exist_ok=True)
    (path / relay.LEDGER).write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_next_leg_follows_the_ledgers_curve(tmp_path):
    """From champion:2 at the recipe's rate; then from the newest leg, its rate kept while
    each leg wins GAIN more than the best before it, halved (to a floor) when it does not;
    the CPU's evaluation counts over the run's own."""
    first = relay.next_leg(tmp_path)
    assert (first.number, first.init_from, first.learning_rate) == (1, "champion:2",
                                                                    relay.FIRST_RATE)
    assert f"training.learning_rate={relay.FIRST_RATE:g}" in relay.leg_overrides(first)
    assert relay.FIRST_RATE == float(dict(s.split("=") for s in gpu_run.CARRY_ON)
                                     ["training.learning_rate"])
    write_ledger(tmp_path, [leg_event(1, 3e-4, 0.54)])
    plan = relay.next_leg(tmp_path)
    assert plan.number == 2 and plan.learning_rate == 3e-4 and plan.seed == 2
    assert plan.init_from.endswith("leg-01/network.msgpack") and "kept" in plan.why
    write_ledger(tmp_path, [leg_event(1, 3e-4, 0.54), evaluation_event(1, 0.51)])
    assert relay.next_leg(tmp_path).learning_rate == 1.5e-4  # 0.51 < 0.5 + GAIN
    write_ledger(tmp_path, [leg_event(1, 3e-4, 0.54), leg_event(2, 3e-4, 0.55)])
    assert relay.next_leg(tmp_path).learning_rate == 1.5e-4  # 0.55 < 0.54 + GAIN
    write_ledger(tmp_path, [leg_event(1, 4e-5, 0.5), leg_event(2, 4e-5, None)])
    assert relay.next_leg(tmp_path).learning_rate == 4e-5  # no win rate: kept
    write_ledger(tmp_path, [leg_event(1, 4e-5, 0.5), leg_event(2, 4e-5, 0.5)])
    assert relay.next_leg(tmp_path).learning_rate == relay.MIN_RATE


def test_a_bad_ledger_line_is_named(tmp_path):
    (tmp_path / relay.LEDGER).write_text('{"event": "leg"}\nnot json\n')
    with pytest.raises(ValueError, match=r"ledger.jsonl, line 2: not a ledger event"):
        relay.read_ledger(tmp_path)
    assert relay.main(["--relay", str(tmp_path)]) == 2


def test_the_rule_ships_only_a_leg_that_clears_all_three():
    good = {"win_rate": 0.62, "low": 0.59, "loss": 1.0, "yardstick_loss": 1.1}
    assert relay.ships(good) == (True, "all three met")
    for change, why in (({"win_rate": 0.59}, "won 0.590 < 0.6"),
                        ({"low": 0.55}, "lower bound 0.550 <= 0.55"),
                        ({"loss": 1.1}, "loses 1.100 a decision, not less than 1.100")):
        shipped, reason = relay.ships(good | change)
        assert not shipped and why in reason


def synthetic_leg(leg_dir, iterations=2):
    """A leg's three files as a run leaves them: a tiny network (champion format, its run
    evaluated against champion:2), `iterations` metrics records, a report."""
    config = tiny_config("unused", "evaluation.opponents=[champion:2]", "run.seed=7")
    params = T.new_state(config, jax.random.PRNGKey(0)).params
    champion.save(params, config, {"code": "abc1234", "hardware": "1 gpu device (H100)",
                                   "iteration": iterations}, leg_dir / "network.msgpack")
    key = "vs_champion:2"
    (leg_dir / "metrics.jsonl").write_text("".join(json.dumps(
        {"iteration": i, "elapsed_s": 30.0 * i, "decisions": 100, key: 0.4 + 0.05 * i,
         f"{key}_lo": 0.3, f"{key}_hi": 0.7, f"{key}_games": 256}) + "\n"
        for i in range(1, iterations + 1)))
    (leg_dir / "report.md").write_text("# Training run\n")


def test_a_leg_is_adopted_then_evaluated_on_the_cpu(tmp_path):
    """Adopting a session's leg copies its files into the relay and appends its ledger line
    (read from the files); the CPU's evaluation (here 2 games against `first`, raw policies,
    a benchmark of 8 decisions) appends its verdict; leg 1 again, or a leg without its
    network, is refused."""
    session = tmp_path / "session"
    leg_dir = session / "relay" / "leg-01"
    leg_dir.mkdir(parents=True)
    (leg_dir / "report.md").write_text("cut short before its network\n")
    home = tmp_path / "relay"
    with pytest.raises(ValueError, match="no network.msgpack, metrics.jsonl: not a finished"):
        relay.adopt(session, home)
    synthetic_leg(leg_dir)
    record = relay.adopt(session, home)
    assert record == relay.read_ledger(home)[0] and record["leg"] == 1
    assert (record["commit"], record["device"], record["minutes"], record["moves"]) == (
        "abc1234", "1 gpu device (H100)", 1.0, 200)
    assert (record["win_rate"], record["games"], record["seed"]) == (0.5, 256, 7)
    assert (home / "leg-01" / "network.msgpack").read_bytes() == (
        leg_dir / "network.msgpack").read_bytes()
    with pytest.raises(ValueError, match="leg 1, but the relay's next leg is 2"):
        relay.adopt(session, home)

    bench = positions.write(tmp_path / "bench.jsonl.gz", {}, positions.load().decisions[:8])
    event = relay.evaluate(home, games=2, play="policy", opponent="first", benchmark=bench,
                           log=lambda line: None)
    assert event["leg"] == 1 and event["games"] == 2 and event["seed"] == relay.EVAL_SEED + 1
    assert event["wins"] + event["losses"] + event["draws"] == 2
    assert event["decisions"] == 8 and event["loss"] >= 0 and event["yardstick_loss"] >= 0
    assert (event["ships"], event["verdict"]) == relay.ships(event)
    assert relay.read_ledger(home) == [record, event]
    assert "| 1 | abc1234 | " in relay.status(home)
    assert relay.next_leg(home).why.startswith(f"leg 1 won {event['win_rate']:.3f} (2 games "
                                               "on the CPU)")
