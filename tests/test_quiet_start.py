"""A user's first commands start quietly: in a fresh process, as after the README's install
(the CUDA and TPU compiler plugins installed, JAX left to choose its platform), `play` and
`train/az.py` print no traceback, and a training run says first what it runs on."""
import os
import pathlib
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_fresh(args, stdin="", timeout=600):
    """`python ARGS` in a new process at the repository root, JAX_PLATFORMS unset (the
    suite sets it, a user does not): (return code, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    done = subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def test_play_starts_without_a_traceback():
    code, out, err = run_fresh(["-m", "trictrac_jax.tools.play", "--seed", "0"], "quit\n")
    assert code == 0, err
    assert "Your choice" in out  # the game started against the champion, then quit
    assert "Traceback" not in out + err and "RuntimeError" not in err, err


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
    assert "Traceback" not in out + err and "RuntimeError" not in err, err
