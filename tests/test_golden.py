"""Agreement with the reference engine: replay the golden files through the public API.

Uses ../shared/golden when present (CI), else the committed sample (tests/data/golden).
"""
import pytest

from tests.golden_sample import golden_dir
from trictrac_jax.tools import verify


@pytest.mark.parametrize("name", ["games.jsonl.gz", "positions.jsonl.gz"])
def test_golden_file_agrees_100_percent(name, capsys):
    """The file replayed, 100% agreement on every check; the games with their summary file
    (named first, as `*.jsonl.gz` orders them)."""
    path = golden_dir() / name
    summary = [str(golden_dir() / "games-summary.jsonl.gz")] if name.startswith("games") else []
    status = verify.main(summary + [str(path)])
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert status == 0, out
    assert last.startswith("agreement: ") and last.endswith("(100.000%)"), out
    # every check of the file ran on some cases
    expected = {"legal", "state", "points", "jans", "string_id"}
    if name.startswith("games"):
        expected |= {"moves", "observation", "end"}
    for check in expected:
        assert any(line.strip().startswith(check + " ") for line in out.splitlines()), out


def test_verify_reports_disagreement(tmp_path, capsys):
    """A corrupted golden line is reported and the exit status is non-zero."""
    import gzip
    import json

    src = golden_dir() / "games.jsonl.gz"
    with gzip.open(src, "rt") as f:
        lines = [json.loads(next(f)) for _ in range(4)]
    decision = next(r for r in lines if r["kind"] == "decision")
    decision["legal"] = decision["legal"] + [513]  # not legal there
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    status = verify.main([str(bad)])
    out = capsys.readouterr().out
    assert status == 1
    assert "[legal]" in out and "(100.000%)" not in out.splitlines()[-1]


def test_summary_lines_are_checked_against_the_last_states(tmp_path):
    """Each summary line is compared with the last state of its game (in `verify.main`, our
    replay's; here the reference's own recorded states, so that the comparison is tested
    without compiling): a changed winner or final score is a disagreement, a game that no
    games file held is counted apart."""
    import gzip
    import json

    last = {}
    with gzip.open(golden_dir() / "games.jsonl.gz", "rt") as f:
        for record in map(json.loads, f):
            if record["game"] >= 3:
                break
            last[record["game"]] = (record["t"], record["after"])
    with gzip.open(golden_dir() / "games-summary.jsonl.gz", "rt") as f:
        summaries = [s for s in map(json.loads, f) if s["game"] < 3]
    not_replayed = dict(summaries[0], game=10**6)
    tally = verify.Tally(max_examples=5)
    assert verify.verify_summaries(summaries + [not_replayed], last, tally) == 1
    assert (tally.agree["end"], tally.total["end"]) == (3, 3)

    summaries[1]["winner"] = 3 - summaries[1]["winner"]
    summaries[2]["p1"][1] += 1
    tally = verify.Tally(max_examples=5)
    verify.verify_summaries(summaries, last, tally)
    assert (tally.agree["end"], tally.total["end"]) == (1, 3)
    assert [e.split("\n")[0] for e in tally.examples] == [
        "[end] game 1 (summary)", "[end] game 2 (summary)"]
