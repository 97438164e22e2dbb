"""benchmarks/gpu_session.py on the CPU: the speed table skipped when current and measured
when not, a part killed at its deadline that leaves its files, OUT packed to the device
tool's limits, and a whole session at tiny sizes that runs leg 2 of a relay from its
committed leg 1 and brings it back for adoption."""
import json
import sys

import yaml

from benchmarks import gpu_session as G
from tests.test_train import tiny_config
from trictrac_jax.az import champion
from trictrac_jax.az.config import to_dict
from trictrac_jax.tools import relay


def table(fingerprint, sizes="gpu", games=G.TABLE_GAMES):
    rows = [{"env": "trictrac", "batch": b, "loop": loop} for b in games
            for loop in ("plain", "with resets")]
    return {"sizes": sizes, "random_play": rows,
            "device": {"engine": {"commit": "abc", "fingerprint": fingerprint}}}


def test_the_engine_fingerprint_follows_the_engines_files(tmp_path):
    (tmp_path / "trictrac_jax" / "data").mkdir(parents=True)
    (tmp_path / "trictrac_jax" / "az").mkdir()
    (tmp_path / "trictrac_jax" / "moves.py").write_text("a = 1\n")
    (tmp_path / "trictrac_jax" / "data" / "x.npz").write_bytes(b"\0")
    before = G.engine_fingerprint(tmp_path)
    (tmp_path / "trictrac_jax" / "az" / "run.py").write_text("not the engine\n")
    assert G.engine_fingerprint(tmp_path) == before
    (tmp_path / "trictrac_jax" / "moves.py").write_text("a = 2\n")
    assert G.engine_fingerprint(tmp_path) != before
    before = G.engine_fingerprint(tmp_path)
    (tmp_path / "trictrac_jax" / "moves").mkdir()  # the move rules' package is the engine too
    (tmp_path / "trictrac_jax" / "moves" / "lists.py").write_text("b = 1\n")
    assert G.engine_fingerprint(tmp_path) != before
    here = G.engine_identity()
    assert here["fingerprint"] == G.engine_fingerprint() and len(here["commit"]) >= 7
    # without git: the prepared record's commit when its fingerprint is this engine's
    (tmp_path / ".gpu").mkdir()
    (tmp_path / ".gpu" / "source.json").write_text(json.dumps(
        {"engine": {"commit": "f00d", "fingerprint": G.engine_fingerprint(tmp_path)}}))
    assert G.engine_identity(tmp_path)["commit"] == "f00d"
    (tmp_path / "trictrac_jax" / "moves.py").write_text("a = 3\n")
    assert G.engine_identity(tmp_path)["commit"] == "unknown"


def test_the_speed_table_is_measured_only_for_a_new_engine(tmp_path, monkeypatch):
    engine = G.engine_identity()
    assert G.table_is_current(table(engine["fingerprint"]), engine)
    assert not G.table_is_current(table("0" * 16), engine)
    assert not G.table_is_current(table(engine["fingerprint"], sizes="quick"), engine)
    assert not G.table_is_current(table(engine["fingerprint"], games=(1024,)), engine)
    assert not G.table_is_current(None, engine)

    ran = []
    monkeypatch.setattr(G.Session, "run", lambda self, name, argv, s, env=None: ran.append(
        (argv, s)))
    args = G.parse_args(["--out", str(tmp_path / "out")])
    session = G.Session(args.out, 9, "test")
    (args.out / "bench").mkdir()
    (args.out / "bench" / "bench-gpu.json").write_text(json.dumps(table(engine["fingerprint"])))
    G.bench_part(session, args, engine, {})
    assert ran == [] and "speed table: skipped" in (args.out / "session.md").read_text()
    (args.out / "bench" / "bench-gpu.json").write_text(json.dumps(table("0" * 16)))
    G.bench_part(session, args, engine, {})
    ((argv, seconds),) = ran
    assert argv[1:4] == ["-m", "benchmarks.bench", "--gpu"] and seconds == G.BENCH_S
    assert argv[argv.index("--budget-seconds") + 1] == str(G.BENCH_BUDGET_S)
    assert "engine abc" in (args.out / "session.md").read_text()


def test_a_part_killed_at_its_deadline_leaves_its_files(tmp_path):
    session = G.Session(tmp_path / "out", 1, "test")
    child = ("import pathlib, sys, time; pathlib.Path(sys.argv[1]).write_text('kept'); "
             "print('written', flush=True); time.sleep(60)")
    code = session.run("slow", [sys.executable, "-c", child, str(tmp_path / "out" / "x")], 3)
    assert code == -9 and (tmp_path / "out" / "x").read_text() == "kept"
    assert "written" in (tmp_path / "out" / "session.log").read_text()
    assert "s, killed at its deadline" in (tmp_path / "out" / "session.md").read_text()


def test_a_part_that_closes_its_output_before_exiting_is_not_called_killed(tmp_path):
    # A run's output ends a moment before its process does (the session on an H200
    # reported two finished parts as killed): the record waits for the exit status.
    session = G.Session(tmp_path / "out", 1, "test")
    child = "import os, time; print('done', flush=True); os.close(1); os.close(2); time.sleep(1)"
    assert session.run("quick", [sys.executable, "-c", child], 30) == 0
    assert "s, exit status 0" in (tmp_path / "out" / "session.md").read_text()


def test_the_labs_results_are_recorded_and_skipped_in_a_rehearsal(tmp_path):
    # A lab command's result lines (its marker first) go into the record, the rest into the
    # log only; the real lab's commands print theirs so (their CPU form, --check).
    child = "print('noise'); print('result: 1.5 us'); print('noise result:')"
    lab = [("one", ("-c", child), "result:"),
           ("fused network", ("-m", "experiments.fused_network", "--check", "32"),
            dict((c[1], m) for _, c, m in G.LAB)["experiments.fused_network"])]
    args = G.parse_args(["--out", str(tmp_path / "out")])
    session = G.Session(args.out, 9, "test")
    G.lab_part(session, args, G.child_env("test"), lab)
    record = (args.out / "session.md").read_text()
    assert "- lab: one: 1.5 us" in record and "- lab: one: noise" not in record
    assert "noise result:" in (args.out / "session.log").read_text()
    assert "- lab: fused network: the kernels in interpret mode, 32 rows in float32: " in record
    assert [command[1] for _, command, _ in G.LAB] == [
        "experiments.lowering_ab", "experiments.lowering_ab",
        "experiments.fused_network", "experiments.fused_network"]
    rehearsal = G.parse_args(["--out", str(tmp_path / "quick"), "--quick"])
    session = G.Session(rehearsal.out, 9, "test")
    G.lab_part(session, rehearsal, {}, lab)
    assert "lab: skipped" in (rehearsal.out / "session.md").read_text()
    assert not (rehearsal.out / "session.log").exists()


def test_a_legs_reserve_is_what_recorded_legs_ran_past_their_minutes(tmp_path):
    # Two sessions' records written by `Session.run`: a leg that ended (its overrun counts)
    # and one killed at its deadline (it says only that it would have taken longer).
    ended = G.Session(tmp_path / "2026-01-01-1", 1, "test")
    ended.run("leg 1", [sys.executable, "-c", "import time; time.sleep(1.5)", "--minutes",
                        "0.01"], 30)
    killed = G.Session(tmp_path / "2026-01-01-2", 1, "test")
    killed.run("leg 2", [sys.executable, "-c", "import time; time.sleep(60)", "--minutes",
                         "0.01"], 2)
    (overrun,) = G.leg_overruns(tmp_path)
    took = int((tmp_path / "2026-01-01-1" / "session.md").read_text()
               .split("leg 1: ended after ")[1].split(" s")[0])
    assert took >= 1 and overrun == took - 0.6
    reserve, why = G.leg_reserve(tmp_path)
    assert reserve == overrun + G.LEG_MARGIN_S and "over 1 recorded" in why
    assert G.leg_reserve(tmp_path / "none")[0] == G.LEG_START_S


def test_out_is_packed_to_the_device_tools_limits(tmp_path, monkeypatch):
    monkeypatch.setattr(G, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(G, "MAX_TOTAL_BYTES", 1400)
    out = tmp_path / "out"
    files = {"session.md": 10, "session.log": 100, "bench/bench-gpu.json": 100,
             "bench/bench-gpu.md": 100, "bench/trace.tar": 900, "bench/too-big": 1001,
             "relay/leg-02/network.msgpack": 900, "relay/leg-02/metrics.jsonl": 300,
             "relay/leg-02/report.md": 10, "a/b/c/deep": 1, "extra-1": 5, "extra-2": 6}
    for name, size in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(b"x" * size)
    notes = G.pack(out)
    kept = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    # the deep and the big; then, for 8 files and 1,400 bytes, the profile, the log, the
    # files not kept (the largest first), then the markdown table (KEEP's last)
    assert kept == ["bench/bench-gpu.json", "relay/leg-02/metrics.jsonl",
                    "relay/leg-02/network.msgpack", "relay/leg-02/report.md", "session.md"]
    assert [n.split(" removed")[0] for n in notes] == [
        "a/b/c/deep", "bench/too-big", "bench/trace.tar", "session.log", "extra-2", "extra-1",
        "bench/bench-gpu.md"]
    assert "more than 2 folders down" in notes[0] and "over 0 MiB" not in notes[1]
    assert not (out / "a").exists()  # the emptied folders go too
    assert G.pack(out) == []


# A leg at tiny sizes: TINY's games, champion 2's network, its recipe's lookahead over 2
# moves, evaluated against random every iteration (one compilation for both legs).
TINY_LEG = ["--set=evaluation.opponents=[random]", "--set=evaluation.games=4",
            "--set=evaluation.lookahead=0", "--set=evaluation.rolls=false",
            "--set=evaluation.every=1", "--set=checkpoint.every=1",
            "--set=search.max_num_considered_actions=2", "--set=training.learning_rate=0.0003"]


def test_two_sessions_run_legs_1_and_2_of_the_relay(tmp_path, monkeypatch):
    """The whole command at tiny sizes, twice, the speed table current (skipped): leg 1 from
    champion:2, adopted; then leg 2 from the committed leg 1, with the relay's overrides
    (its seed, champion 2's recipe), its files in OUT/relay/leg-02 within the device tool's
    limits, adopted with its ledger line. The legs run in this process (the compilations
    shared), the clock giving each about a second of training."""
    from train import gpu_run

    def here(self, name, argv, seconds, env=None, results=None):
        if argv[1] == "-m" and argv[2] in {command[1] for _, command, _ in G.LAB}:
            self.note(f"{name}: not run here")  # the lab's: a GPU's
            return 0
        assert argv[1] == "train/gpu_run.py"
        self.note(f"{name}: in this process")
        return gpu_run.main(argv[2:])
    monkeypatch.setattr(G.Session, "run", here)
    monkeypatch.setattr(G, "MIN_LEG_MINUTES", 0.0)
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(to_dict(tiny_config(tmp_path / "unused"))))
    home = tmp_path / "relay"
    for number in (1, 2):
        out = tmp_path / f"out{number}"
        (out / "bench").mkdir(parents=True)
        (out / "bench" / "bench-gpu.json").write_text(json.dumps(
            table(G.engine_fingerprint())))
        assert G.main(["--out", str(out), "--minutes", "1", "--relay", str(home),
                       "--work", str(tmp_path / f"work{number}"), "--config", str(config),
                       "--leg-start-s", str(60 - G.PACK_S - 0.6), *TINY_LEG]) == 0
        record = (out / "session.md").read_text()
        assert "speed table: skipped" in record and f"relay: leg {number} from " in record
        assert record.index("lab: fused network, bfloat16") < record.index("relay: leg")
        leg = out / "relay" / relay.leg_name(number)
        _, leg_config, provenance = champion.load(leg / "network.msgpack")
        assert leg_config.run.seed == number and leg_config.search.algorithm == "lookahead"
        assert provenance["code"] == G.code_version()
        assert G.pack(out) == [] and len([p for p in out.rglob("*") if p.is_file()]) <= 5
        assert relay.adopt(out, home)["leg"] == number
    first, second = relay.legs(relay.read_ledger(home))
    assert first["init_from"] == "champion:2"
    assert second["init_from"].endswith("leg-01/network.msgpack")
    assert second["learning_rate"] == 3e-4 and second["moves"] > 0
