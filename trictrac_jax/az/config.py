"""Training configuration: a typed schema, YAML loading, `--set` overrides and validation.

Every key has a type and a check. `load_config` stops at the first problem with a
`ConfigError` whose message names the key (`search.num_simulations: must be >= 1, got 0`).
"""
from __future__ import annotations

import copy
import dataclasses
import pathlib
from typing import Any, Callable

import yaml

from trictrac_jax.agents import BASELINES, baseline  # engine-only: no import circle
from trictrac_jax.state import NUM_ACTIONS


class ConfigError(ValueError):
    """A configuration problem; the message names the offending key."""


@dataclasses.dataclass(frozen=True)
class Key:
    """One config key: default value, type, and a check returning an error text or None."""

    default: Any
    type: type
    check: Callable[[Any], str | None] = lambda v: None


def _at_least(lo):
    return lambda v: None if v >= lo else f"must be >= {lo}, got {v!r}"


def _in_range(lo, hi):
    return lambda v: None if lo <= v <= hi else f"must be in [{lo}, {hi}], got {v!r}"


def _one_of(*choices):
    return lambda v: None if v in choices else f"must be one of {list(choices)}, got {v!r}"


def _is_baseline(spec) -> bool:
    try:
        return isinstance(spec, str) and baseline(spec) is not None
    except ValueError:  # greedy:K without a positive K
        return False


def _positive_numbers(v):
    bad = [m for m in v if isinstance(m, bool) or not isinstance(m, (int, float)) or m <= 0]
    return f"must be positive numbers, got {bad}" if bad else None


def _opponents(v):
    bad = [o for o in v if not _is_baseline(o)]
    return f"unknown opponents {bad}; choose from {list(BASELINES)} or greedy:K" if bad else None


SCHEMA: dict[str, dict[str, Key]] = {
    "run": {
        "dir": Key("runs/base", str),
        "seed": Key(0, int),
        # Warm start: the network to start from ("champion", a network file in the
        # champion's format, a run directory or a checkpoint; "" for a fresh network), with a
        # fresh optimiser. Used by a new run only: a resumed run continues its checkpoint.
        "init_from": Key("", str),
    },
    "env": {
        "max_steps": Key(1000, int, _at_least(1)),  # decisions before a game is truncated
    },
    "network": {
        "width": Key(256, int, _at_least(8)),
        "blocks": Key(4, int, _at_least(0)),
    },
    "search": {
        # stochastic: mctx.stochastic_muzero_policy, the dice as chance nodes.
        # gumbel: mctx.gumbel_muzero_policy, the dice sampled inside the simulator.
        # lookahead: no tree: the policy's max_num_considered_actions likeliest moves, each
        # valued over the 36 rolls after it (as the champion plays); num_simulations unused.
        "algorithm": Key("stochastic", str, _one_of("stochastic", "gumbel", "lookahead")),
        "num_simulations": Key(32, int, _at_least(1)),
        # Action slots per tree node: the trees are this wide, not 514 (mctx's bookkeeping
        # grows with the width). A node with more legal actions keeps the ones with the
        # highest prior logits. 256: no position seen has more (max 204 in 3M random-play
        # decisions, 151 in the golden data); see docs/training.md.
        "max_actions": Key(256, int, _in_range(1, NUM_ACTIONS)),
        "max_num_considered_actions": Key(16, int, _at_least(1)),  # gumbel, lookahead
        "dirichlet_fraction": Key(0.25, float, _in_range(0.0, 1.0)),  # stochastic
        "dirichlet_alpha": Key(0.3, float, _at_least(1e-6)),  # stochastic
        "pb_c_init": Key(1.25, float, _at_least(0.0)),  # stochastic
        "temperature": Key(1.0, float, _at_least(0.0)),  # stochastic, acting
        # lookahead: self-play draws its move, and the policy target is, softmax(worth / T);
        # worths are in value units (points / selfplay.margin_scale for `points`)
        "worth_temperature": Key(0.01, float, _at_least(1e-6)),
    },
    "selfplay": {
        "batch_size": Key(1024, int, _at_least(1)),  # games played in parallel
        "steps_per_iteration": Key(64, int, _at_least(1)),  # decisions per game per iteration
        # outcome: +1/-1 of won games (0 if truncated); margin: the final score margin
        # (12 * holes + points) from the mover's view, divided by margin_scale, clipped to
        # [-1, 1] (also the utility of terminal nodes in the search); points: the margin
        # still to come from each state (every move's and roll's points difference is a
        # reward, undiscounted), / margin_scale, clipped to [-1, 1].
        "value_target": Key("outcome", str, _one_of("outcome", "margin", "points")),
        "margin_scale": Key(144.0, float, _at_least(1e-6)),
    },
    "replay": {
        "capacity": Key(262144, int, _at_least(1)),  # decisions stored
        "min_size": Key(16384, int, _at_least(1)),  # decisions with known targets to train
        # The value target of a decision: bootstrap x the search's root value + (1 -
        # bootstrap) x the game's final utility (both minus the mover's baseline). 0: the
        # outcome alone; 1 with search.algorithm lookahead: TD(0) through the expectimax.
        "bootstrap": Key(0.0, float, _in_range(0.0, 1.0)),
    },
    "training": {
        "iterations": Key(400, int, _at_least(1)),
        "updates_per_iteration": Key(64, int, _at_least(1)),
        "batch_size": Key(1024, int, _at_least(1)),
        "learning_rate": Key(1e-3, float, _at_least(0.0)),
        "warmup_updates": Key(500, int, _at_least(0)),
        "schedule": Key("cosine", str, _one_of("cosine", "constant")),
        "weight_decay": Key(1e-4, float, _at_least(0.0)),
        "value_weight": Key(1.0, float, _at_least(0.0)),
        "max_grad_norm": Key(1.0, float, _at_least(0.0)),  # 0: no clipping
        # Wall-clock budget in minutes (0: none): the run ends after the iteration that
        # passes it, evaluated and checkpointed as a last iteration. Time-to-strength runs.
        "max_minutes": Key(0.0, float, _at_least(0.0)),
    },
    "evaluation": {
        "every": Key(10, int, _at_least(1)),  # iterations
        "games": Key(256, int, _at_least(2)),  # per opponent, half in each seat
        "opponents": Key(["random"], list, _opponents),
        "num_simulations": Key(0, int, _at_least(0)),  # 0: greedy on the policy network
        "lookahead": Key(0, int, _in_range(0, NUM_ACTIONS)),  # > 0: 1-ply over the policy's top K
    },
    "checkpoint": {
        "every": Key(10, int, _at_least(1)),  # iterations
        "keep_last": Key(3, int, _at_least(1)),  # plus the best by win rate vs opponents[0]
        # Wall-clock marks (minutes since the start, compilation included): the network as
        # it is when each is passed goes to RUN_DIR/snapshots/<M>min.msgpack (champion format).
        "snapshot_minutes": Key([], list, _positive_numbers),
    },
    "logging": {
        "tensorboard": Key(True, bool),  # used when tensorboardX or torch is installed
    },
}


def defaults() -> dict:
    """The default configuration as a nested dict."""
    return {s: {k: copy.deepcopy(key.default) for k, key in keys.items()}
            for s, keys in SCHEMA.items()}


def merge(base: dict, override: dict, where: str = "") -> dict:
    """`base` updated with `override` (nested dicts); unknown keys raise ConfigError."""
    out = copy.deepcopy(base)
    if not isinstance(override, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping, got {override!r}")
    for name, value in override.items():
        path = f"{where}.{name}" if where else str(name)
        if name not in out:
            raise ConfigError(f"{path}: unknown key (known: {', '.join(sorted(out))})")
        out[name] = merge(out[name], value, path) if isinstance(out[name], dict) else value
    return out


def parse_override(text: str) -> dict:
    """'a.b=value' -> {'a': {'b': value}}, the value read as YAML (1e-3, true, [random])."""
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected KEY=VALUE, e.g. search.num_simulations=64")
    path, raw = text.split("=", 1)
    value = yaml.safe_load(raw) if raw.strip() else ""
    for name in reversed(path.strip().split(".")):
        value = {name: value}
    return value


def validate(config: dict) -> dict:
    """Check types, values and cross-key constraints; returns the config with ints widened to
    floats where a float is expected."""
    out = copy.deepcopy(config)
    for section, keys in SCHEMA.items():
        for name, key in keys.items():
            path, value = f"{section}.{name}", out[section][name]
            if key.type is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, key.type) or (key.type is int and isinstance(value, bool)):
                raise ConfigError(f"{path}: expected {key.type.__name__}, got {value!r}")
            if (problem := key.check(value)) is not None:
                raise ConfigError(f"{path}: {problem}")
            out[section][name] = value
    _check_sizes(out)
    return out


def _check_sizes(c: dict):
    """Constraints between keys (the replay buffer must hold one iteration, and so on)."""
    per_iteration = c["selfplay"]["batch_size"] * c["selfplay"]["steps_per_iteration"]
    if c["replay"]["capacity"] < per_iteration:
        raise ConfigError(
            f"replay.capacity: must hold one iteration of self-play (selfplay.batch_size * "
            f"selfplay.steps_per_iteration = {per_iteration}), got {c['replay']['capacity']}")
    if c["replay"]["min_size"] > c["replay"]["capacity"]:
        raise ConfigError(f"replay.min_size: must be <= replay.capacity "
                          f"({c['replay']['capacity']}), got {c['replay']['min_size']}")
    if c["evaluation"]["num_simulations"] and c["evaluation"]["lookahead"]:
        raise ConfigError("evaluation.lookahead: must be 0 when evaluation.num_simulations > 0 "
                          "(one search at a time)")
    if c["evaluation"]["games"] % 2:
        raise ConfigError(f"evaluation.games: must be even (both seats played equally), "
                          f"got {c['evaluation']['games']}")


def check_devices(c: dict, num_devices: int):
    """Batch sizes must split evenly over the devices (data parallelism)."""
    for path in ("selfplay.batch_size", "training.batch_size", "replay.capacity",
                 "evaluation.games"):
        section, name = path.split(".")
        if c[section][name] % num_devices:
            raise ConfigError(f"{path}: must be a multiple of the {num_devices} devices, "
                              f"got {c[section][name]}")


def load_config(path: str | pathlib.Path | None = None, overrides=(), base: dict | None = None
                ) -> dict:
    """Defaults (or `base`), updated with the YAML file at `path`, then `overrides`
    ('key=value' strings); validated."""
    config = defaults() if base is None else base
    if path is not None:
        path = pathlib.Path(path)
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found")
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"{path}: not valid YAML ({e})") from None
        config = merge(config, loaded)
    for text in overrides:
        config = merge(config, parse_override(text))
    return validate(config)
