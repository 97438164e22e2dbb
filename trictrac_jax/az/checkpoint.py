"""Checkpoints (orbax): the training state and the config, keeping the best and the last K.

Layout: RUN_DIR/checkpoints/<iteration>/{state,config}. Every failure to find or read a
checkpoint raises `CheckpointError` with the path and the reason.
"""
from __future__ import annotations

import logging
import pathlib
import re
import shutil
import sys
from typing import NamedTuple

import orbax.checkpoint as ocp
from orbax.checkpoint import checkpoint_managers as policies

# orbax logs every save and restore at INFO through absl; keep the training output readable.
logging.getLogger("absl").setLevel(logging.WARNING)


def _quiet_closed_loop(previous=sys.unraisablehook):
    """When a restore fails, tensorstore still completes the other reads, on the event loop
    orbax has closed: each prints the traceback of an unraisable 'Event loop is closed'.
    Drop those; report everything else as before."""
    def hook(unraisable):
        if not (unraisable.exc_type is RuntimeError
                and str(unraisable.exc_value) == "Event loop is closed"):
            previous(unraisable)
    return hook


sys.unraisablehook = _quiet_closed_loop()

METRIC = "score"  # the win rate used to rank checkpoints (vs the first eval opponent)


class CheckpointError(RuntimeError):
    """A checkpoint that is missing or cannot be read; the message names the path."""


def _manager(directory: pathlib.Path, keep_last: int = 1, create: bool = False):
    options = ocp.CheckpointManagerOptions(
        create=create, best_fn=lambda m: m[METRIC], best_mode="max",
        preservation_policy=policies.AnyPreservationPolicy([
            policies.LatestN(n=keep_last),
            policies.BestN(get_metric_fn=lambda m: m[METRIC], n=1,
                           keep_checkpoints_without_metrics=False)]))
    return ocp.CheckpointManager(directory.absolute(), options=options,
                                 item_names=("state", "config"))


class Checkpointer:
    """Saves to RUN_DIR/checkpoints every call, keeping the best and the last `keep_last`."""

    def __init__(self, run_dir, keep_last: int):
        self.directory = pathlib.Path(run_dir) / "checkpoints"
        self.manager = _manager(self.directory, keep_last, create=True)

    def save(self, iteration: int, state, config: dict, score: float):
        """`state`: a pytree of arrays; `score`: higher is better (best checkpoint)."""
        self.manager.save(iteration, args=ocp.args.Composite(
            state=ocp.args.StandardSave(state), config=ocp.args.JsonSave(config)),
            metrics={METRIC: float(score)})

    def close(self):
        self.manager.wait_until_finished()
        self.manager.close()


class Found(NamedTuple):
    directory: pathlib.Path  # RUN_DIR/checkpoints
    step: int  # the iteration
    which: str  # "latest" or "best" when found in a run, "" when given by its directory


def resolve(path, which: str = "latest") -> Found:
    """The checkpoint given as a run directory (its `which` = latest or best checkpoint), a
    checkpoints directory, or one iteration's directory."""
    path = pathlib.Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such file or directory")
    if path.name.isdigit() and (path / "state").exists():
        return Found(path.parent, int(path.name), "")
    directory = path / "checkpoints" if (path / "checkpoints").is_dir() else path
    try:
        manager = _manager(directory)
        step = manager.best_step() if which == "best" else manager.latest_step()
    except Exception as e:  # orbax reports unreadable metadata in various exception types
        raise CheckpointError(f"{directory}: cannot list checkpoints ({_reason(e)})") from None
    if step is None:
        raise CheckpointError(f"{directory}: no checkpoint found")
    return Found(directory, step, which)


def newest_intact(directory: pathlib.Path, load, log):
    """(step, load(step)) for the newest step of `directory` that `load` restores, logging
    `skipped ...` for each newer one it raises CheckpointError on."""
    try:
        steps = sorted(_manager(directory).all_steps(), reverse=True)
    except Exception as e:
        raise CheckpointError(f"{directory}: cannot list checkpoints ({_reason(e)})") from None
    skipped = []
    for step in steps:
        try:
            return step, load(step)
        except CheckpointError as e:
            log(f"skipped {e}")
            skipped.append(f"\n  {e}")
    raise CheckpointError(f"{directory}: no intact checkpoint" + (
        f"; tried:{''.join(skipped)}" if skipped else " found"))


def set_aside_after(directory: pathlib.Path, step: int
                    ) -> list[tuple[pathlib.Path, pathlib.Path]]:
    """Move the checkpoints after `step`, those a resume skipped, to
    RUN_DIR/skipped_checkpoints: orbax would not save the iterations played again over
    them. Returns the (from, to) paths."""
    moved = []
    for path in sorted(directory.glob("[0-9]*")):
        if path.name.isdigit() and int(path.name) > step:
            target = directory.parent / "skipped_checkpoints" / path.name
            if target.exists():  # set aside by an earlier resume
                shutil.rmtree(target)
            target.parent.mkdir(exist_ok=True)
            moved.append((path, path.rename(target)))
    return moved


def describe(directory: pathlib.Path, step: int, config: dict, which: str = "") -> str:
    """'RUN_DIR/checkpoints/85 (best: vs greedy 0.420)': the checkpoint and its score against
    the first evaluation opponent of its `config`."""
    try:
        score = (_manager(directory).metrics(step) or {}).get(METRIC, -1.0)
    except Exception:  # the metrics are a label here, the checkpoint itself is intact
        score = -1.0
    opponents = config["evaluation"]["opponents"]
    rank = f"vs {opponents[0]} {score:.3f}" if opponents and score >= 0 else "not evaluated"
    return f"{directory / str(step)} ({f'{which}: {rank}' if which else rank})"


def restore_config(directory: pathlib.Path, step: int) -> dict:
    try:
        return _manager(directory).restore(step, args=ocp.args.Composite(
            config=ocp.args.JsonRestore()))["config"]
    except Exception as e:
        raise CheckpointError(f"{directory / str(step)}: cannot read its config "
                              f"({_reason(e, directory / str(step))})") from None


def restore_state(directory: pathlib.Path, step: int, abstract_state):
    """The saved state, with the structure, shapes and shardings of `abstract_state`."""
    try:
        return _manager(directory).restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract_state)))["state"]
    except Exception as e:
        raise CheckpointError(f"{directory / str(step)}: cannot restore the training state "
                              f"({_reason(e, directory / str(step))})") from None


# Tensorstore errors append the JSON specs of the stores they opened, and pybind11 may show
# its bindings as '<bound method ...>': neither tells a user anything.
_NOISE = re.compile(r"\s*\[(?:tensorstore_spec|source locations)[^=\]]*='.*?'\]"
                    r"|\s*<bound method [^>]*>")
_FILE = re.compile(r'local file "([^"]*[^/"])"')  # a file; a directory's path ends in /


def _reason(e: Exception, root: pathlib.Path | None = None) -> str:
    """Why `e` happened, in one line: the damaged file (relative to `root`) when tensorstore
    names one, else the first line of the message, without binding or tensorstore noise."""
    lines = _NOISE.sub("", str(e)).strip().splitlines()
    files = _FILE.findall(lines[0]) if lines else []
    if files:
        path = pathlib.Path(files[-1])
        if root is not None and path.is_relative_to(root.absolute()):
            path = path.relative_to(root.absolute())
        return f"corrupt or truncated file: {path}"
    return f"{type(e).__name__}: {lines[0][:300]}" if lines else type(e).__name__
