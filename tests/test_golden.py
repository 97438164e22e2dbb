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
