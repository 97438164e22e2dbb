"""Checkpoints (orbax): the training state and the config, keeping the best and the last K.

Layout: RUN_DIR/checkpoints/<iteration>/{state,config}. Every failure to find or read a
checkpoint raises `CheckpointError` with the path and the reason.
"""
from __future__ import annotations

import logging
import pathlib

import orbax.checkpoint as ocp
from orbax.checkpoint import checkpoint_managers as policies

# orbax logs every save and restore at INFO through absl; keep the training output readable.
logging.getLogger("absl").setLevel(logging.WARNING)

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


def resolve(path, which: str = "latest") -> tuple[pathlib.Path, int]:
    """(checkpoints directory, iteration) of a checkpoint given as a run directory (its
    `which` = latest or best checkpoint), a checkpoints directory, or one iteration's
    directory."""
    path = pathlib.Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such file or directory")
    if path.name.isdigit() and (path / "state").exists():
        return path.parent, int(path.name)
    directory = path / "checkpoints" if (path / "checkpoints").is_dir() else path
    try:
        manager = _manager(directory)
        step = manager.best_step() if which == "best" else manager.latest_step()
    except Exception as e:  # orbax reports unreadable metadata in various exception types
        raise CheckpointError(f"{directory}: cannot list checkpoints ({_reason(e)})") from None
    if step is None:
        raise CheckpointError(f"{directory}: no checkpoint found")
    return directory, step


def restore_config(directory: pathlib.Path, step: int) -> dict:
    try:
        return _manager(directory).restore(step, args=ocp.args.Composite(
            config=ocp.args.JsonRestore()))["config"]
    except Exception as e:
        raise CheckpointError(f"{directory / str(step)}: cannot read its config "
                              f"({_reason(e)})") from None


def restore_state(directory: pathlib.Path, step: int, abstract_state):
    """The saved state, with the structure, shapes and shardings of `abstract_state`."""
    try:
        return _manager(directory).restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract_state)))["state"]
    except Exception as e:
        raise CheckpointError(f"{directory / str(step)}: cannot restore the training state "
                              f"({_reason(e)})") from None


def _reason(e: Exception) -> str:
    """The first line of an exception's message: orbax and tensorstore errors are long."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300]}" if text else type(e).__name__
