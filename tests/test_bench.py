"""Smoke test of the benchmark entry point at its smallest settings (no timing assertions)."""
import json

import pytest

from trictrac_jax.tools import bench, bench_gpu


def test_bench_writes_the_throughput_table(tmp_path):
    output = tmp_path / "benchmarks.md"
    bench.main(["--quick", "--batch-sizes", "2", "--steps", "4", "--no-pgx",
                "--throughput-only", "--output", str(output)])

    lines = output.read_text().splitlines()
    header = lines.index("| " + " | ".join(bench.THROUGHPUT_COLUMNS) + " |")
    cells = [c.strip() for c in lines[header + 2].strip("|").split("|")]
    row = dict(zip(bench.THROUGHPUT_COLUMNS, cells))
    assert row["env"] == "trictrac" and row["batch"] == "2"
    for column in bench.THROUGHPUT_COLUMNS[2:]:
        assert float(row[column].replace(",", "")) > 0, column


def test_search_throughput_row():
    row = bench.measure_search("gumbel", 2, games=4, min_seconds=0.0)
    assert row["moves_per_s"] > 0 and row["compile_s"] > 0
    lines = bench.search_section([row]).splitlines()
    assert lines[-1].startswith("| gumbel | 2 | 4 |")


def test_gpu_figures_at_the_smallest_sizes(tmp_path):
    """`bench --gpu --quick` on CPU: the device, random play, the split of a search (its parts
    and the rest make up the whole) and self-play, as markdown ending in a table and JSON."""
    output = tmp_path / "gpu.md"
    bench.main(["--gpu", "--quick", "--no-pgx", "--budget-seconds", "3600",  # skip no row
                "--output", str(output)])

    result = json.loads(output.with_suffix(".json").read_text())
    assert result["device"]["platform"] == "cpu" and result["device"]["device_kind"]
    loops = {r["loop"] for r in result["random_play"] if r["env"] == bench.TRICTRAC}
    assert loops == {bench_gpu.WITH_RESETS, bench_gpu.PLAIN}
    assert all(r["steps_per_s"] > 0 for r in result["random_play"])
    parts = result["split"]["parts"]
    assert len(parts) == 4 and all(p["seconds"] > 0 for p in parts[:3])
    assert sum(p["share"] for p in parts) == pytest.approx(1.0)
    assert result["split"]["width"] == bench_gpu.base_config().search.max_actions
    assert result["selfplay"] and all(r["moves_per_s"] > 0 for r in result["selfplay"])
    text = output.read_text()
    for title in ("## Random play", "## One search", "## Self-play with search"):
        assert title in text
    assert text.splitlines()[-1].startswith("| ")
