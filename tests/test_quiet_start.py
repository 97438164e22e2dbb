"""A user's first commands start quietly: in fresh processes, as after the README's install
(JAX left to choose its platform), `import jax`, every program the README names, `play` and
a training run print nothing on stderr that is not about the work (no plugin's traceback, no
absl or libtpu lines), and a training run says first what it runs on. A program started
again reads what it compiled the time before (`devices.use_compilation_cache`)."""
import re

import yaml

from tests.fresh import ROOT, cuda_plugin_installed, foreign_lines, run_fresh, start

# `python -m trictrac_jax.tools.play`, `python train/az.py`: the programs in README's commands.
PROGRAM = re.compile(r"\bpython (-m [\w.]+|[\w/]+\.py)")
NOT_OURS = ("-m pytest", "-m pip")


def readme_programs() -> list[list[str]]:
    found = dict.fromkeys(m.group(1) for m in PROGRAM.finditer((ROOT / "README.md").read_text()))
    return [program.split() for program in found if program not in NOT_OURS]


def test_jax_starts_quietly():
    """Without the `compile` extra (the quick start's install) JAX alone is quiet; with it,
    what our programs do first (`devices.choose_platform`) keeps it so."""
    start_jax = "import jax; print(jax.devices())"
    if cuda_plugin_installed():
        start_jax = "from trictrac_jax import devices; devices.choose_platform(); " + start_jax
    code, out, err = run_fresh(["-c", start_jax])
    assert code == 0 and "CpuDevice" in out, err
    assert not foreign_lines(err), err


def test_every_program_of_the_readme_answers_help_quietly():
    programs = readme_programs()
    assert ["train/az.py"] in programs and ["-m", "trictrac_jax.tools.play"] in programs
    running = [(program, start([*program, "--help"])) for program in programs]  # side by side
    for program, process in running:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0 and "usage:" in out, (program, err)
        assert not foreign_lines(err), (program, err)


def user_cache(home) -> dict[str, str]:
    """A process's environment as a user's: no compilation cache of the suite's, XDG_CACHE_HOME
    at `home`, and every program kept however fast it compiled (the processes that tests
    start compile unoptimised: tests/fresh.py)."""
    return {"JAX_COMPILATION_CACHE_DIR": "", "XDG_CACHE_HOME": str(home),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


def test_play_starts_quietly_and_keeps_what_it_compiled(tmp_path):
    code, out, err = run_fresh(["-m", "trictrac_jax.tools.play", "--seed", "0"], "quit\n",
                               environ=user_cache(tmp_path))
    assert code == 0, err
    assert "Your choice" in out  # the game started against the champion, then quit
    assert not foreign_lines(err), err
    assert any((tmp_path / "trictrac_jax" / "jax").iterdir())  # devices.default_cache_dir()


# A program's compilations with devices.use_compilation_cache, and how many of its programs
# JAX read from the cache ('/jax/compilation_cache/cache_hits').
CACHED = """
import jax, jax.numpy as jnp
from trictrac_jax import devices
devices.choose_platform()
jnp.arange(3) + 1  # a computation before the choice (as importing a module may make)
print(devices.use_compilation_cache())
hits = []
jax.monitoring.register_event_listener(
    lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None)
jax.jit(lambda x: jnp.sin(x) * x.sum())(jnp.ones(5)).block_until_ready()
print(len(hits))
"""


def test_a_program_started_again_reads_what_it_compiled(tmp_path):
    runs = [run_fresh(["-c", CACHED], environ=user_cache(tmp_path)) for _ in range(2)]
    (folder, first), (again, second) = (out.split() for _, out, _ in runs)
    assert all(code == 0 and not foreign_lines(err) for code, _, err in runs), runs
    assert folder == again == str(tmp_path / "trictrac_jax" / "jax")
    assert int(first) == 0 < int(second)  # the second read what the first compiled
    chosen = tmp_path / "chosen"
    code, out, _ = run_fresh(["-c", CACHED], environ=user_cache(tmp_path) | {
        "TRICTRAC_COMPILATION_CACHE": str(chosen)})
    assert code == 0 and out.split() == [str(chosen), "0"] and any(chosen.iterdir())
    code, out, _ = run_fresh(["-c", CACHED], environ=user_cache(tmp_path / "off") | {
        "TRICTRAC_COMPILATION_CACHE": "off"})
    assert code == 0 and out.split() == ["None", "0"] and not (tmp_path / "off").exists()
    code, out, _ = run_fresh(["-c", CACHED], environ=user_cache(tmp_path) | {
        "JAX_COMPILATION_CACHE_DIR": str(chosen)})  # a user's own folder: kept
    assert code == 0 and out.split()[0] == str(chosen) and int(out.split()[1]) > 0
    # a folder that cannot be made: no cache; said only where the user named it
    (tmp_path / "file").write_text("not a folder")
    code, out, err = run_fresh(["-c", CACHED], environ=user_cache(tmp_path / "file"))
    assert code == 0 and out.split() == ["None", "0"] and not foreign_lines(err), err
    code, out, err = run_fresh(["-c", CACHED], environ=user_cache(tmp_path) | {
        "TRICTRAC_COMPILATION_CACHE": str(tmp_path / "file" / "cache")})
    assert code == 0 and out.split() == ["None", "0"]
    assert foreign_lines(err) == [f"TRICTRAC_COMPILATION_CACHE={tmp_path / 'file' / 'cache'}: "
                                  "Not a directory; compiling without a cache"], err


def test_a_training_run_says_first_what_it_runs_on(tmp_path):
    config = {"run": {"dir": str(tmp_path / "run")}, "env": {"max_steps": 6},
              "network": {"width": 16, "blocks": 1},
              "search": {"algorithm": "gumbel", "num_simulations": 2,
                         "max_num_considered_actions": 2},
              "selfplay": {"batch_size": 4, "steps_per_iteration": 8},
              "replay": {"capacity": 64, "min_size": 8},
              "training": {"iterations": 1, "updates_per_iteration": 1, "batch_size": 8,
                           "warmup_updates": 0},
              "evaluation": {"opponents": []}, "logging": {"tensorboard": False}}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    code, out, err = run_fresh(["train/az.py", "--config", str(path)])
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("running on ") and " device" in first and "process" in first
    assert not foreign_lines(err), err
