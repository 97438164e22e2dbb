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
