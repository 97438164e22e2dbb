"""The program an H100 would run, compiled on this CPU (no GPU; the CUDA compiler plugin of
the `compile` extra): the reader counts what it should, and the project's GPU programs keep
what must hold there. Deselected where the extra is absent; under `--compilers=require`
(.ci/run) a missing plugin fails them: an install error."""
import collections
import functools
import json

import jax
import jax.numpy as jnp
import pytest

from trictrac_jax.tools import gpu_program as G

import trictrac_jax as tt

GAMES = 256
pytestmark = pytest.mark.compile  # needs the `compile` extra (conftest.py)


@pytest.fixture(autouse=True)
def gpu_lowering(monkeypatch):
    """The engine's accelerator lowering, as an H100 runs it (read when tracing)."""
    monkeypatch.setenv("TRICTRAC_LOWERING", "gpu")


def compiled(fn, *args):
    return G.read(G.compile_for(G.H100, fn, *args))


def test_reader_counts_loops_syncs_and_in_place_bytes_by_array():
    x = jnp.zeros((1024, 1024), jnp.float32)  # 4 MiB

    def known_trips(x):  # 7 iterations of one elementwise kernel, trip count known
        return jax.lax.fori_loop(0, 7, lambda i, y: jnp.sin(y) * 1.5, x)

    def unknown_trips(x):  # a loop on the data: the host reads each condition
        return jax.lax.while_loop(lambda y: jnp.max(y) < 100.0, lambda y: jnp.sin(y) * 2 + 1, x)

    def rows(x):  # 50 rows written in place into the loop's buffer
        row = jnp.ones((1, 1024), jnp.float32)
        return jax.lax.fori_loop(
            0, 50, lambda i, y: jax.lax.dynamic_update_slice(y, row * i, (i, 0)), x)

    loop = compiled(known_trips, x)
    assert loop.host_syncs == 0 and loop.kernels >= 7
    assert loop.bytes >= 7 * 2 * x.nbytes  # each trip reads and writes the whole array
    data = compiled(unknown_trips, x)
    assert data.host_syncs == 1
    written = compiled(rows, x)
    assert written.kernels >= 50
    assert written.bytes < 3 * x.nbytes  # a row a trip (and a copy of the input), not the array
    # the bytes by array, read and written: they add up; the loop's rows written 50 times
    for program in (loop, data, written):
        assert sum(program.traffic.values()) == pytest.approx(program.bytes)
    assert written.traffic["written", "f32[1,1024]"] == 50 * 4096
    assert loop.traffic["read", "f32[1024,1024]"] >= 7 * x.nbytes
    assert loop.per(7).traffic["read", "f32[1024,1024]"] == pytest.approx(
        loop.traffic["read", "f32[1024,1024]"] / 7)
    # the model charges each host sync on top of the kernels and bytes
    synced = G.H100_MODEL.seconds(data) - G.H100_MODEL.seconds(data._replace(host_syncs=0))
    assert synced == pytest.approx(G.H100_MODEL.seconds_per_host_sync)


def states(games=GAMES):
    return jax.eval_shape(lambda k: jax.vmap(tt.Trictrac().init)(jax.random.split(k, games)),
                          jax.random.PRNGKey(0))


def test_engine_halves_launch_no_loop_of_unknown_length():
    """On a GPU a loop of unknown length makes the host wait for every iteration (68ff02b
    had 6 a step): the decision and the chance halves have none (compiled together, one
    compile; `env.step`, in the random play loop, is checked by the report's test), and
    stay within 1.3x the kernels counted when this test was written: 16 and 41, 51
    together, at 256 games (at 9850ac3: 28 and 95, 120 together)."""
    env = tt.Trictrac()
    actions = jax.ShapeDtypeStruct((GAMES,), jnp.int32)
    halves = lambda s, a, o: (jax.vmap(env.step_deterministic)(s, a),
                              jax.vmap(env.chance_step)(s, o))
    program = compiled(halves, states(), actions, actions)
    assert program.host_syncs == 0
    assert 20 < program.kernels <= 66


def test_lookahead_passes_have_a_known_count(monkeypatch):
    """Under the GPU lowering a lookahead's candidates (at most `every_pair_up_to` a game)
    are scored in passes whose number the compiled program knows: no host sync, and each
    pass counted (4 passes launch more than 1); greedy's (every action, mostly illegal)
    valid candidates in passes while any remain: a loop of unknown length."""
    from trictrac_jax import lowering
    from trictrac_jax.state import NUM_ACTIONS
    from trictrac_jax.ranking import candidate_worths
    gpu, per_game = lowering.LOWERINGS["gpu"], lowering.LOWERINGS["gpu"].every_pair_up_to
    worth = lambda s, a: jnp.sum(jnp.sin(s.observation), -1) * a

    def program(width: int, per_pass: int):
        monkeypatch.setitem(lowering.LOWERINGS, "gpu", gpu._replace(candidates_per_pass=per_pass))
        pairs = lambda dtype: jax.ShapeDtypeStruct((GAMES, width), dtype)
        return compiled(lambda s, a, v: candidate_worths(s, a, v, worth), states(),
                        pairs(jnp.int32), pairs(jnp.bool_))

    one, four = program(per_game, GAMES * per_game), program(per_game, GAMES * per_game // 4)
    assert one.host_syncs == 0 and four.host_syncs == 0
    assert four.kernels > one.kernels
    assert program(NUM_ACTIONS, GAMES * per_game).host_syncs == 1


def test_h100_report_and_what_base_yaml_must_keep(tmp_path, monkeypatch):
    """`bench --h100` writes its report; in it configs/base.yaml on an H100: one training
    iteration (64 searches, 128 updates, the replay buffer of 1M decisions) in the GPU's
    80 GB, and read from the same program one self-play decision (an iteration of its
    self-play loop: the search and the step) within 1.3x the kernels and host syncs counted
    at 22fb10c (Gumbel, 8 simulations: 1,533 kernels, 16 syncs), no kernel of either
    spilling registers (the search's count of legal actions, fused with the kernel that
    builds the step's mask, once did: `search.decision_node`); random play (a step, its
    kernels' launch sizes and registers) and configs/tpu.yaml's training iteration (its
    self-play runs both halves of a step) compiled for one TPU v5e chip, the iteration in
    the chip's 16 GB."""
    from benchmarks import bench, gpu_report
    # the random-only run below compiles the same random play: once here for both
    monkeypatch.setattr(gpu_report, "random_program", functools.cache(gpu_report.random_program))
    out = tmp_path / "gpu.md"
    result = bench.main(["--h100", "--h100-games", "64", "--h100-loops", "plain", "--no-pgx",
                         "--no-compile-time", "--h100-calibration", str(tmp_path / "k.gz"),
                         "--output", str(out)])
    text = out.read_text()
    assert text.startswith("# The GPU program") and "H100 estimate (compiled program" in text
    assert json.loads(out.with_suffix(".json").read_text())["search"] == result["search"]
    (row,) = result["random_play"]
    assert row["env"] == "trictrac" and row["host_syncs"] == 0 and row["estimated_us"] > 0
    assert 0 < row["few_block_kernels"] < row["kernels"]  # 64 games: few blocks a kernel
    # what --h100-calibration wrote is what the model's calibration reads
    (written,) = gpu_report.calibration_programs(tmp_path / "k.gz")
    assert written["games"] == 64 and G.H100_MODEL.seconds(written["step"]) == pytest.approx(
        row["estimated_us"] / 1e6)
    search, iteration = result["search"], result["iteration"]
    assert 0 < search["host_syncs"] <= 21
    assert 1_000 < search["kernels"] <= 2_000
    assert 1.0 < iteration["memory_gb"] <= G.H100_MEMORY_BYTES / 1e9
    assert iteration["kernels"] > 64 * search["kernels"] * 0.9  # the 64 searches are there
    assert not search["spilling"] and not iteration["spilling"]
    tpu = result["tpu"]
    (row,) = tpu["random_play"]
    assert row["games"] == 64 and row["kernels"] > 0 and "estimated_us" not in row
    assert 0 < tpu["iteration"]["memory_gb"] <= G.TPU_V5E_MEMORY_BYTES / 1e9
    # random play again alone: the other sections carried from the report it rewrites
    again = bench.main(["--h100", "--h100-games", "64", "--h100-loops", "plain", "--no-pgx",
                        "--h100-random-only", "--output", str(out)])
    assert again["search"] == result["search"] and again["tpu"] == result["tpu"]
    assert again["carried"]["code"] == result["code"]
    assert "carried from `" + result["command"] + "`" in out.read_text()
    with pytest.raises(SystemExit, match="run `python -m benchmarks.bench --h100` once"):
        bench.main(["--h100", "--h100-games", "64", "--h100-loops", "plain", "--no-pgx",
                    "--h100-random-only", "--output", str(tmp_path / "none.md")])


def test_model_reproduces_the_h100_measurements():
    """The time model on the kernels of the programs measured on an H100 (code at ea19265,
    compiled here): within 25% of the measured plain loop at each of the 4 sizes, trictrac
    and pgx backgammon alike."""
    from benchmarks import gpu_report
    rows = [r for r in gpu_report.calibration() if r["loop"] == "plain"]
    assert {(r["env"], r["games"]) for r in rows} == {
        (env, games) for env in ("trictrac", "pgx backgammon") for games in gpu_report.GAMES}
    for r in rows:
        assert abs(r["error"]) <= 0.25, r


def test_the_report_sets_its_estimates_beside_the_newest_measurement_of_this_engine(tmp_path):
    """gpu-program.md compares the model with the committed `bench --gpu` table only when
    that table measured this engine (its fingerprint), row by row, each ratio computed from
    the measured steps/s."""
    from benchmarks import gpu_report, gpu_session
    engine = gpu_session.engine_identity()
    table = {"command": "bench --gpu", "device": {
                 "device_kind": "NVIDIA H200", "jax": "0.11.2", "date": "today",
                 "engine": engine},
             "random_play": [{"env": "trictrac", "loop": "plain", "batch": 1024,
                              "steps_per_s": 1024 / 200e-6},
                             {"env": "trictrac", "loop": "plain", "batch": 8192,
                              "steps_per_s": 1e6}]}
    (tmp_path / "t.json").write_text(json.dumps(table))
    measured = gpu_report.newest_measurement(tmp_path / "t.json")
    assert measured["current"]
    estimates = [{"env": "trictrac", "loop": "plain", "games": 1024, "estimated_us": 100.0}]
    text = "\n".join(gpu_report.measured_section(estimates, measured))
    assert "| 1,024 | plain | trictrac | 200 | 100 | 0.50 |" in text
    assert "8,192" not in text  # no estimate at that size: no row
    table["device"]["engine"] = {"commit": "abc", "fingerprint": "0" * 16}
    (tmp_path / "t.json").write_text(json.dumps(table))
    text = "\n".join(gpu_report.measured_section(
        estimates, gpu_report.newest_measurement(tmp_path / "t.json")))
    assert "of another engine" in text and "| 1,024 |" not in text
    assert "No measured table" in "\n".join(gpu_report.measured_section(
        estimates, gpu_report.newest_measurement(tmp_path / "missing.json")))


PTX = """
.visible .entry loop_add_fusion(
	.param .u64 .ptr .align 256 loop_add_fusion_param_0
)
.reqntid 128, 1, 1
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<9>;

	ld.param.b64 	%rd1, [loop_add_fusion_param_0];
	// a comment;
	setp.gt.s32 	%p1, %r1, 3;
	@%p1 bra 	$L__BB0_2;
	add.s32 	%r2, %r1, 1;
$L__BB0_2:
	ret;

}
.visible .entry wrapped_transpose(
)
{
	ret;

}
"""


def test_ptx_instructions_counts_statements_not_declarations_labels_or_comments():
    assert G.ptx_instructions(PTX) == {"loop_add_fusion": 5, "wrapped_transpose": 1}


def test_the_model_takes_the_longer_of_a_kernels_bytes_and_its_instructions():
    model = G.H100_MODEL._replace(seconds_per_kernel=1e-6, bytes_per_second=1e12,
                                  bytes_per_second_per_block=1e10,
                                  instructions_per_second=2e13)
    k = G.Kernel("k", 1, bytes=1e6, elements=1, blocks=1000, threads=100, instructions=100)
    assert model.kernel_seconds(k) == pytest.approx(1e-6 + 1e-6)  # 1 MB at 1 TB/s
    busy = k._replace(instructions=1000)  # 1e8 thread-instructions at 2e13 a second
    assert model.kernel_seconds(busy) == pytest.approx(1e-6 + 5e-6)
    assert model._replace(instructions_per_second=0).kernel_seconds(busy) == pytest.approx(2e-6)


def test_the_issue_rate_is_read_from_a_measured_profile_beside_the_compiled_kernels():
    """`gpu_report.instruction_rate`: thread-instructions a second of the costliest measured
    kernels that the compiled program has with the same launch size (their median)."""
    from benchmarks import gpu_report
    kernels = [G.Kernel("a", 1, 0, 0, blocks=100, threads=128, instructions=1000),
               G.Kernel("b", 1, 0, 0, blocks=100, threads=128, instructions=500),
               G.Kernel("c", 1, 0, 0, blocks=100, threads=128, instructions=2000),
               G.Kernel("d", 1, 0, 0, blocks=7, threads=128, instructions=9000)]
    trace = [{"kernel": "d", "us_per_step": 50.0, "launch": "regs:9 grid:100,1,1 block:128,1,1"},
             {"kernel": "a", "us_per_step": 10.0, "launch": "regs:9 grid:100,1,1 block:128,1,1"},
             {"kernel": "b", "us_per_step": 8.0, "launch": "regs:9 grid:100,1,1 block:128,1,1"},
             {"kernel": "x", "us_per_step": 7.0, "launch": "regs:9 grid:100,1,1 block:128,1,1"},
             {"kernel": "c", "us_per_step": 1.0, "launch": "regs:9 grid:100,1,1 block:128,1,1"}]
    rate, rows = gpu_report.instruction_rate(trace, kernels, top=2)
    # d's launch differs from the compiled one and x is not compiled here: a and b, in order
    assert [r["kernel"] for r in rows] == ["a", "b"]
    assert rate == pytest.approx((1.28e7 / 1e-5 + 6.4e6 / 8e-6) / 2)


def test_kernels_are_read_back_to_the_rules_their_operations_come_from():
    """experiments.move_kernels: a kernel of an H100 program is named after its HLO
    instruction with "." as "_" (`gpu_program.kernel_name`); its operations are traced to
    the engine's function that made them; its estimate splits into parts that add up to it;
    and a larger batch's kernels are grouped under the smaller batch's kernel whose rules
    they share most."""
    from experiments import move_kernels as MK
    from trictrac_jax import board as B

    def chained_sums(board, player):  # reductions reading reductions: a kernel each
        total = jnp.sum(B.view_board(board, player), dtype=jnp.int32)
        for _ in range(2):
            total = jnp.sum(board * total, dtype=jnp.int32)
        return total

    executable = G.compile_for(G.H100, jax.vmap(chained_sums),
                               jax.ShapeDtypeStruct((GAMES, 24), jnp.int8),
                               jax.ShapeDtypeStruct((GAMES,), jnp.int32))
    program = G.read(executable)
    sources = MK.kernel_sources(executable.as_text())
    assert {k.name for k in program.by_kernel} <= set(sources)
    assert any(k.name[-1].isdigit() for k in program.by_kernel)  # a "fusion.N" among them
    assert any(rules["board.view_board"] for rules in sources.values())
    parts = MK.time_parts(program)
    assert sum(parts.values()) == pytest.approx(G.H100_MODEL.seconds(program))
    assert parts["kernel latency"] == pytest.approx(program.kernels
                                                    * G.H100_MODEL.seconds_per_kernel)

    # XLA's TopK kernel (a custom call, no frames of its own) is read as the kernel that
    # feeds it
    def top_fields(board, player):
        view = B.view_board(board, player).astype(jnp.float32)
        return jax.lax.top_k(jnp.pad(view, (0, 1000)), 4)  # a row of 1,024: the TopK kernel

    executable = G.compile_for(G.H100, jax.vmap(top_fields),
                               jax.ShapeDtypeStruct((GAMES, 24), jnp.int8),
                               jax.ShapeDtypeStruct((GAMES,), jnp.int32))
    (top,) = [k.name for k in G.read(executable).by_kernel if k.name.startswith("custom_call")]
    assert MK.kernel_sources(executable.as_text())[top]["board.view_board"] > 0

    small = {"rules": collections.Counter({"a.f": 3, "a.g": 2}),
             "hits": collections.Counter({"b.h": 4})}
    big = {"rules_1": collections.Counter({"a.f": 3}), "rules_2": collections.Counter({"a.g": 1}),
           "hits": collections.Counter({"b.h": 4, "a.g": 1}), "copy": collections.Counter()}
    assert MK.matched_kernels(small, big) == {"rules": ["rules_1", "rules_2"], "hits": ["hits"],
                                              "?": ["copy"]}
    # an array of the step's traffic by its dimensions a game (--step --traffic)
    assert MK.per_game("u32[1024,2,16]", 1024) == "u32[2,16]"
    assert MK.per_game("pred[1024]", 1024) == "pred[]"
    assert MK.per_game("s32[36,2]", 1024) == "shared: s32[36,2]"


def test_fused_network_kernels_compute_the_network_and_spill_nowhere():
    """experiments.fused_network: its Pallas kernels (a pre-norm half-block each), run in
    interpret mode, give the network's logits and values; compiled for an H100 at its tile,
    none spills, and they move fewer bytes than XLA's evaluation."""
    from experiments import fused_network as F

    net, params = F.random_params(width=128, blocks=1)
    obs = jax.random.uniform(jax.random.PRNGKey(3), (64, 217))
    logits, value = net.apply({"params": params}, obs)
    fused_logits, fused_value = F.forward(params, obs, interpret=True)
    assert fused_logits.shape == logits.shape and fused_value.shape == value.shape
    assert jnp.allclose(fused_logits, logits, atol=1e-4)
    assert jnp.allclose(fused_value, value, atol=1e-5)
    # in bfloat16 (stored activations and the products' operands) within its rounding
    half = net.clone(dtype=jnp.bfloat16)
    logits, value = half.apply({"params": params}, obs)
    fused_logits, fused_value = F.forward(params, obs, jnp.bfloat16, interpret=True)
    scale = float(jnp.max(jnp.abs(logits)))
    assert float(jnp.max(jnp.abs(fused_logits - logits))) < 0.05 * scale
    assert float(jnp.max(jnp.abs(fused_value - value))) < 0.05

    shapes = jax.eval_shape(lambda: params)
    rows = jax.ShapeDtypeStruct((2048, 217), jnp.float32)
    fused = G.read(G.compile_with_kernels(G.H100, F.forward, shapes, rows))
    kernels = [k for k in fused.by_kernel if k.name.startswith("pallas_call")]
    assert len(kernels) == 3 and not any(k.spills for k in kernels)  # two halves, the heads
    plain = G.read(G.compile_for(G.H100, lambda p, o: net.apply({"params": p}, o), shapes, rows))
    assert fused.bytes < plain.bytes
