"""Agreement with the reference engine: replay the golden files through the public API.

Uses ../shared/golden when present (CI), else the committed sample (tests/data/golden).
"""
import pytest

from tests.golden_sample import golden_dir
from trictrac_jax.tools import verify


@pytest.mark.parametrize("name", ["games.jsonl.gz", "positions.jsonl.gz"])
def test_golden_file_agrees_100_percent(name, capsys):
    path = golden_dir() / name
    status = verify.main([str(path)])
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert status == 0, out
    assert last.startswith("agreement: ") and last.endswith("(100.000%)"), out
    # every check of the file ran on some cases
    expected = {"legal", "state", "points", "jans", "string_id"}
    if name.startswith("games"):
        expected |= {"moves", "observation"}
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


def _first_games(n: int):
    """The step lines and the summary lines of the golden files' first `n` games."""
    import gzip
    import json

    steps = []
    with gzip.open(golden_dir() / "games.jsonl.gz", "rt") as f:
        for line in f:
            record = json.loads(line)
            if record["game"] >= n:
                break
            steps.append(record)
    with gzip.open(golden_dir() / "games-summary.jsonl.gz", "rt") as f:
        summaries = [s for s in map(json.loads, f) if s["game"] < n]
    return steps, summaries


def _write(path, records):
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_summary_agrees_with_the_replayed_games(tmp_path, capsys):
    """A summary file is checked against the last state of each game replayed in the same
    call (named before the games file, as `*.jsonl.gz` orders them); a changed winner or
    final score is a disagreement."""
    steps, summaries = _first_games(3)
    assert len(summaries) == 3
    games = _write(tmp_path / "games.jsonl", steps)
    status = verify.main([_write(tmp_path / "games-summary.jsonl", summaries), games])
    out = capsys.readouterr().out
    assert status == 0, out
    assert any(line.split() == ["end", "3/3"] for line in out.splitlines()), out

    summaries[1]["winner"] = 3 - summaries[1]["winner"]
    summaries[2]["p1"][1] += 1
    status = verify.main([_write(tmp_path / "bad-summary.jsonl", summaries), games])
    out = capsys.readouterr().out
    assert status == 1
    assert any(line.split() == ["end", "1/3"] for line in out.splitlines()), out
    assert "[end] game 1 (summary)" in out
