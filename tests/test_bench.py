"""Smoke test of the benchmark entry point at its smallest settings (no timing assertions)."""
from trictrac_jax import bench


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
