"""Smoke test of the benchmark entry point at its smallest settings (no timing assertions)."""
import json
import tarfile

import pytest

from benchmarks import bench, bench_gpu, gpu_session
from tests.fresh import run_fresh


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
    """`bench --gpu --quick --out DIR` on CPU, the rehearsal of the GPU run: into DIR the
    device and the engine measured, random play, the step's split (the whole step only), a
    training iteration, a profile of the step summarised per kernel (its raw files in one
    tar) and the split of a search (its parts and the rest make up the whole), as markdown
    ending in a table and JSON, every file under 16 MiB (self-play is the iteration's: its rows are not rehearsed).
    Run as a user runs it, in a new process (which compiles unoptimised: tests/fresh.py)."""
    out = tmp_path / "gpu"
    code, _, err = run_fresh(["-m", "benchmarks.bench", "--gpu", "--quick", "--no-pgx",
                              "--budget-seconds", "3600",  # skip no row
                              "--out", str(out)], environ={"JAX_PLATFORMS": "cpu"})
    assert code == 0, err[-3000:]

    result = json.loads((out / "bench-gpu.json").read_text())
    assert result["device"]["platform"] == "cpu" and result["device"]["device_kind"]
    loops = {r["loop"] for r in result["random_play"] if r["env"] == bench.TRICTRAC}
    assert loops == {bench_gpu.WITH_RESETS, bench_gpu.PLAIN}
    assert all(r["steps_per_s"] > 0 for r in result["random_play"])
    (step,) = result["step_split"]
    assert step["part"] == bench.STEP_ROW and step["ms"] > 0
    iteration = result["iteration"]
    assert 0 < iteration["selfplay_s"] < iteration["iteration_s"] < iteration["first_s"]
    trace = result["trace"]
    assert trace["games"] == bench_gpu.SIZES["quick"].step_batches[-1]
    assert trace["kernels"] and trace["device_us_per_step"] > 0  # XLA's CPU operations here
    assert result["device"]["engine"] == gpu_session.engine_identity()
    parts = result["split"]["parts"]
    assert len(parts) == 4 and all(p["seconds"] > 0 for p in parts[:3])
    assert sum(p["share"] for p in parts) == pytest.approx(1.0)
    assert result["split"]["width"] == bench_gpu.base_config().search.max_actions
    assert result["selfplay"] == [] and not result["notes"]
    text = (out / "bench-gpu.md").read_text()
    for title in ("## Random play", "## Where a step's time goes", "## One training iteration",
                  "## A profile of the step", "## One search"):
        assert title in text
    assert text.splitlines()[-1].startswith("| ")
    files = [f for f in out.rglob("*") if f.is_file()]
    assert {f.name for f in files} == {"bench-gpu.md", "bench-gpu.json", "trace.tar"}
    with tarfile.open(out / "trace.tar") as tar:  # the raw trace, gzip'd
        assert any(name.endswith(".xplane.pb.gz") for name in tar.getnames())
    assert all(f.stat().st_size < bench_gpu.MAX_FILE_BYTES for f in files)


def test_gpu_budget_starts_no_row_that_would_end_after_it():
    """A row starts only if the longest of its kind so far (or its guess) ends in time."""
    budget = bench_gpu.Budget(100.0)
    assert budget.run("trace", lambda x: x + 1, 1) == 2  # guessed 30 s: fits in 100
    budget.longest["trace"] = 101.0  # as if a trace had taken 101 s
    assert budget.run("trace", lambda x: x + 1, 1) is None
    assert bench_gpu.Budget(10.0).run("iteration", lambda: 0) is None  # guessed 120 s
