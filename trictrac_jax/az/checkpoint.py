"""Checkpoints (orbax): the training state and the config, keeping the best and the last K.

Layout: RUN_DIR/checkpoints/<iteration>/{state,config,metrics,_CHECKPOINT_METADATA}. Every
failure to find or read a checkpoint raises `CheckpointError` with the path and the reason.
Reading goes through no orbax manager, which reads the metadata and metrics of every
checkpoint: a damaged file stops only its own checkpoint, and `first_intact` goes on to the
next one.
"""
from __future__ import annotations

import json
import logging
import pathlib
import re
import shutil
import sys

import orbax.checkpoint as ocp
from orbax.checkpoint import checkpoint_managers as policies

from trictrac_jax.az.config import Config, to_dict

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


def _unread_failed_read(record: logging.LogRecord) -> bool:
    """The other reads of a failed restore fail too, and asyncio logs each one it collects
    unread ('Future exception was never retrieved', or 'Task ...', with the traceback of a
    tensorstore error): the failure is reported already. Drop those records."""
    error = record.exc_info[1] if record.exc_info else None
    return not (record.getMessage().startswith(("Future exception was never retrieved",
                                                 "Task exception was never retrieved"))
                and "tensorstore_spec" in str(error))


sys.unraisablehook = _quiet_closed_loop()
logging.getLogger("asyncio").addFilter(_unread_failed_read)

METRIC = "score"  # the win rate used to rank checkpoints (vs the first eval opponent)


class CheckpointError(RuntimeError):
    """A checkpoint that is missing or cannot be read; the message names the path."""


class Checkpointer:
    """Saves to RUN_DIR/checkpoints every call, keeping the best and the last `keep_last`."""

    def __init__(self, run_dir, keep_last: int):
        self.directory = pathlib.Path(run_dir) / "checkpoints"
        options = ocp.CheckpointManagerOptions(
            create=True, best_fn=lambda m: m[METRIC], best_mode="max",
            preservation_policy=policies.AnyPreservationPolicy([
                policies.LatestN(n=keep_last),
                policies.BestN(get_metric_fn=lambda m: m[METRIC], n=1,
                               keep_checkpoints_without_metrics=False)]))
        self.manager = ocp.CheckpointManager(self.directory.absolute(), options=options,
                                             item_names=("state", "config"))

    def save(self, iteration: int, state, config: Config, score: float):
        """`state`: a pytree of arrays; `score`: higher is better (best checkpoint)."""
        self.manager.save(iteration, args=ocp.args.Composite(
            state=ocp.args.StandardSave(state), config=ocp.args.JsonSave(to_dict(config))),
            metrics={METRIC: float(score)})

    def close(self):
        self.manager.wait_until_finished()
        self.manager.close()


def steps(directory: pathlib.Path) -> list[int]:
    """The iterations checkpointed in `directory`, newest first: its directories named by a
    number (orbax writes a checkpoint under another name and renames it once complete);
    none if `directory` is not one."""
    if not directory.is_dir():
        return []
    try:
        return sorted((int(p.name) for p in directory.iterdir()
                       if p.name.isdigit() and p.is_dir()), reverse=True)
    except OSError as e:
        raise CheckpointError(f"{directory}: cannot list checkpoints ({_reason(e)})") from None


def _read_json(path: pathlib.Path, name: str) -> dict:
    try:
        value = json.loads((path / name).read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing file {name}") from None
    except (OSError, ValueError) as e:  # ValueError: not JSON, or not UTF-8
        raise CheckpointError(f"{path}: cannot read {name} ({_reason(e)})") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}: cannot read {name} (not a JSON object)")
    return value


def score(directory: pathlib.Path, step: int) -> float:
    """The checkpoint's score, once its orbax metadata and metrics read (CheckpointError
    naming the file otherwise): orbax's manager reads both of every checkpoint, and would
    stop, or log parse errors, at a damaged one."""
    path = directory / str(step)
    if not any(path.iterdir()):
        raise CheckpointError(f"{path}: empty directory")
    _read_json(path, "_CHECKPOINT_METADATA")
    value = _read_json(path, "metrics/metrics").get(METRIC)
    if not isinstance(value, (int, float)):
        raise CheckpointError(f"{path}: cannot read metrics/metrics (no number {METRIC!r})")
    return float(value)


def resolve(path) -> tuple[pathlib.Path, int | None]:
    """(checkpoints directory, iteration) of a checkpoint given as its own directory, or
    (checkpoints directory, None) of a run directory or a checkpoints directory."""
    path = pathlib.Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such file or directory")
    if path.name.isdigit() and (path / "state").exists():
        return path.parent, int(path.name)
    return (path / "checkpoints" if (path / "checkpoints").is_dir() else path), None


def load_path(path, load, log, which: str = "best"):
    """`load(directory, step)` -> (params, config) of `path`: one checkpoint's directory, or
    a run directory's `which` intact checkpoint (`first_intact`). Logs which it loaded."""
    directory, step = resolve(path)
    if step is not None:
        result, which = load(directory, step), ""
    else:
        step, result = first_intact(directory, lambda s: load(directory, s), log, which)
    log(f"loaded {describe(directory, step, result[1], which)}")
    return result


def first_intact(directory: pathlib.Path, load, log, which: str = "latest"):
    """(step, load(step)) for the first checkpoint of `directory`, newest first or, with
    `which` = "best", highest score first (the newer of equal scores), whose files read
    and that `load` restores, logging `skipped DIR: why` for each one passed over."""
    skipped = []

    def skip(e: CheckpointError):
        log(f"skipped {e}")
        skipped.append(f"\n  {e}")
    order = steps(directory)
    if which == "best":
        scores = {}
        for step in order:
            try:
                scores[step] = score(directory, step)
            except CheckpointError as e:
                skip(e)
        order = sorted(scores, key=lambda s: (scores[s], s), reverse=True)
    for step in order:
        try:
            score(directory, step)
            return step, load(step)
        except CheckpointError as e:
            skip(e)
    raise CheckpointError(f"{directory}: no intact checkpoint; tried:{''.join(skipped)}"
                          if skipped else f"{directory}: no checkpoint found")


def _damage(directory: pathlib.Path, step: int) -> str:
    """Why the checkpoint's metadata or metrics do not read (`score`), or ""."""
    try:
        score(directory, step)
        return ""
    except CheckpointError as e:
        return str(e)


def set_aside(directory: pathlib.Path, step: int
              ) -> list[tuple[pathlib.Path, pathlib.Path, str]]:
    """Move to RUN_DIR/skipped_checkpoints the checkpoints after `step`, which a resume
    skipped (orbax would not save the iterations played again over them), and the earlier
    ones whose metadata or metrics do not read (`score`). Returns (from, to, why), why ""
    for a later one."""
    moved = []
    for s in steps(directory):
        why = "" if s > step else _damage(directory, s)
        if s > step or why:
            path, target = directory / str(s), directory.parent / "skipped_checkpoints" / str(s)
            if target.exists():  # set aside by an earlier resume
                shutil.rmtree(target)
            target.parent.mkdir(exist_ok=True)
            moved.append((path, path.rename(target), why))
    return moved


def describe(directory: pathlib.Path, step: int, config: Config, which: str = "") -> str:
    """'RUN_DIR/checkpoints/85 (best: vs greedy 0.420)': the checkpoint and its score against
    the first evaluation opponent of its `config`."""
    try:
        value = score(directory, step)
    except CheckpointError:  # the metrics are a label here, the checkpoint itself is intact
        value = -1.0
    opponents = config.evaluation.opponents
    rank = f"vs {opponents[0]} {value:.3f}" if opponents and value >= 0 else "not evaluated"
    return f"{directory / str(step)} ({f'{which}: {rank}' if which else rank})"


def restore_config(directory: pathlib.Path, step: int) -> dict:
    """The config saved with a checkpoint, as nested dicts (`config.load_config` checks it)."""
    path = directory / str(step)
    try:
        return ocp.Checkpointer(ocp.JsonCheckpointHandler()).restore(
            (path / "config").absolute(), args=ocp.args.JsonRestore())
    except Exception as e:
        raise CheckpointError(f"{path}: cannot read its config ({_reason(e, path)})") from None


def restore_state(directory: pathlib.Path, step: int, abstract_state):
    """The saved state, with the structure, shapes and shardings of `abstract_state`."""
    path = directory / str(step)
    try:
        return ocp.Checkpointer(ocp.StandardCheckpointHandler()).restore(
            (path / "state").absolute(), args=ocp.args.StandardRestore(abstract_state))
    except Exception as e:
        raise CheckpointError(f"{path}: cannot restore the training state "
                              f"({_reason(e, path)})") from None


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
