"""Training configuration: typed, frozen sections, loaded from YAML with `--set` overrides.

A config is a tree of frozen dataclasses (`Config`: `run`, `env`, `network`, `search`, ...),
read by attribute (`config.search.num_simulations`) and hashable, so that a jitted function
can take it as a static argument. Each field declares its type and its check (`setting`);
a section validates itself when it is built, and `Config` checks the constraints between
sections. Loading stops at the first problem with a `ConfigError` whose message names the
key (`search.num_simulations: must be >= 1, got 0`; `search.num_simulation: unknown key`).
Other configs (PPO's) are trees of `Section`s too and load through the same functions.
"""
from __future__ import annotations

import dataclasses
import functools
import pathlib
import typing
from typing import Any, Callable

import yaml

from trictrac_jax.agents import BASELINES, baseline  # engine-only: no import circle
from trictrac_jax.state import NUM_ACTIONS


class ConfigError(ValueError):
    """A configuration problem; the message names the offending key."""


def setting(default, check: Callable[[Any], str | None] | None = None):
    """A config field: its default and a check returning an error text (or None)."""
    return dataclasses.field(default=default, metadata={"check": check})


def at_least(lo):
    return lambda v: None if v >= lo else f"must be >= {lo}, got {v!r}"


def in_range(lo, hi):
    return lambda v: None if lo <= v <= hi else f"must be in [{lo}, {hi}], got {v!r}"


def one_of(*choices):
    return lambda v: None if v in choices else f"must be one of {list(choices)}, got {v!r}"


def _is_baseline(spec) -> bool:
    try:
        return isinstance(spec, str) and baseline(spec) is not None
    except ValueError:  # greedy:K without a positive K
        return False


def _positive_numbers(v):
    bad = [m for m in v if isinstance(m, bool) or not isinstance(m, (int, float)) or m <= 0]
    return f"must be positive numbers, got {bad}" if bad else None


def _is_champion(spec) -> bool:
    """'champion' or 'champion:N', with an optional '@PLAY' (read when the agent loads)."""
    name = spec.partition("@")[0] if isinstance(spec, str) else ""
    return name == "champion" or (name.startswith("champion:") and name[9:].isdigit())


def opponent_specs(v):
    """Check: every entry names a baseline agent or a shipped champion."""
    bad = [o for o in v if not (_is_baseline(o) or _is_champion(o))]
    return (f"unknown opponents {bad}; choose from {list(BASELINES)}, greedy:K, champion or "
            f"champion:N (with @PLAY)") if bad else None


@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _coerce(kind, value):
    """`value` as the field type `kind` (int -> float, list -> tuple); raises ConfigError."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if typing.get_origin(kind) is tuple and isinstance(value, (list, tuple)):
        return tuple(value)
    base = typing.get_origin(kind) or kind
    if not isinstance(value, base) or (base is int and isinstance(value, bool)):
        name = "list" if base is tuple else base.__name__
        raise ConfigError(f"expected {name}, got {value!r}")
    return value


class Section:
    """Base of the config's frozen dataclasses: fields are coerced to their types and
    checked when a section is built (also by `replace`)."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            kind = _hints(type(self))[f.name]
            try:
                value = _coerce(kind, getattr(self, f.name))
                check = f.metadata.get("check")
                problem = check(value) if check is not None else None
            except ConfigError as e:
                raise ConfigError(f"{f.name}: {e}") from None
            if problem is not None:
                raise ConfigError(f"{f.name}: {problem}")
            object.__setattr__(self, f.name, value)

    def replace(self, **changes):
        """A copy with `changes`, checked."""
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class RunConfig(Section):
    """`run`: where the run writes, its seed, and the network it starts from."""

    dir: str = setting("runs/base")  # the run's directory: checkpoints, logs, its config
    seed: int = setting(0)  # the run's random key: jax.random.PRNGKey(seed)
    # Warm start: the network to start from ("champion", a network file in the champion's
    # format, a run directory or a checkpoint; "" for a fresh network), with a fresh
    # optimiser. Used by a new run only: a resumed run continues its checkpoint.
    init_from: str = setting("")


@dataclasses.dataclass(frozen=True)
class EnvConfig(Section):
    """`env`: the engine the games are played on."""

    max_steps: int = setting(1000, at_least(1))  # decisions before a game is truncated


@dataclasses.dataclass(frozen=True)
class NetworkConfig(Section):
    """`network`: the residual network (`az.network`): its width and depth, and the type
    its evaluations compute in."""

    width: int = setting(256, at_least(8))  # features of every hidden layer
    blocks: int = setting(4, at_least(0))  # residual blocks
    # The network's evaluations in self-play's search, evaluation and play (`model.net`);
    # its training computes in float32. bfloat16 halves their activations' bytes on a GPU
    # (the CPU emulates it, slowly).
    inference_dtype: str = setting("float32", one_of("float32", "bfloat16"))


@dataclasses.dataclass(frozen=True)
class SearchConfig(Section):
    """`search`: the search that chooses self-play's moves and makes the policy target."""

    # stochastic: mctx.stochastic_muzero_policy, the dice as chance nodes.
    # gumbel: mctx.gumbel_muzero_policy, the dice sampled inside the simulator.
    # gumbel_stochastic: Gumbel MuZero's root and interior selection, the dice as chance
    # nodes (az/gumbel_stochastic.py).
    # lookahead: no tree: the policy's max_num_considered_actions likeliest moves, each
    # valued over the 36 rolls after it (as the champion plays); num_simulations unused.
    algorithm: str = setting("stochastic", one_of(
        "stochastic", "gumbel", "gumbel_stochastic", "lookahead"))
    num_simulations: int = setting(32, at_least(1))  # per decision: stochastic, gumbel*
    # Action columns per tree node: the trees are this wide, not 514 (mctx's bookkeeping
    # grows with the width). A node with more legal actions keeps the ones with the
    # highest prior logits. 256: no position seen has more (max 204 in 3M random-play
    # decisions, 151 in the golden data); see docs/training.md.
    max_actions: int = setting(256, in_range(1, NUM_ACTIONS))
    max_num_considered_actions: int = setting(16, at_least(1))  # gumbel*, lookahead
    dirichlet_fraction: float = setting(0.25, in_range(0.0, 1.0))  # stochastic
    dirichlet_alpha: float = setting(0.3, at_least(1e-6))  # stochastic
    pb_c_init: float = setting(1.25, at_least(0.0))  # stochastic
    temperature: float = setting(1.0, at_least(0.0))  # stochastic, acting
    # lookahead: self-play draws its move, and the policy target is, softmax(worth / T);
    # worths are in value units (points / selfplay.margin_scale for `points`)
    worth_temperature: float = setting(0.01, at_least(1e-6))
    # lookahead: the 21 distinct rolls, each weighted by its probability, rather than the 36
    # ordered ones (21/36 of the work; the network sees each roll with the lower die first)
    distinct_rolls: bool = setting(False)


@dataclasses.dataclass(frozen=True)
class SelfplayConfig(Section):
    """`selfplay`: the games played in parallel, and the value target they make."""

    batch_size: int = setting(1024, at_least(1))  # games played in parallel
    steps_per_iteration: int = setting(64, at_least(1))  # decisions per game per iteration
    # outcome: +1/-1 of won games (0 if truncated); margin: the final score margin
    # (12 * holes + points) from the mover's view, divided by margin_scale, clipped to
    # [-1, 1] (also the utility of terminal nodes in the search); points: the margin
    # still to come from each state (every move's and roll's points difference is a
    # reward, undiscounted), / margin_scale, clipped to [-1, 1].
    value_target: str = setting("outcome", one_of("outcome", "margin", "points"))
    margin_scale: float = setting(144.0, at_least(1e-6))  # points per unit of value


@dataclasses.dataclass(frozen=True)
class ReplayConfig(Section):
    """`replay`: the buffer of self-play's decisions that training samples."""

    capacity: int = setting(262144, at_least(1))  # decisions stored
    min_size: int = setting(16384, at_least(1))  # decisions with known targets to train
    # The value target of a decision: bootstrap x the search's root value + (1 -
    # bootstrap) x the game's final utility (both minus the mover's banked margin).
    # 0: the outcome alone; 1 with search.algorithm lookahead: TD(0) through the
    # expectimax.
    bootstrap: float = setting(0.0, in_range(0.0, 1.0))


@dataclasses.dataclass(frozen=True)
class TrainingConfig(Section):
    """`training`: the iterations, and the network's updates in each."""

    iterations: int = setting(400, at_least(1))  # of self-play, then updates
    updates_per_iteration: int = setting(64, at_least(1))  # gradient steps per iteration
    batch_size: int = setting(1024, at_least(1))  # decisions per gradient step
    learning_rate: float = setting(1e-3, at_least(0.0))  # the peak, after the warm-up
    warmup_updates: int = setting(500, at_least(0))  # linear from 0 to learning_rate
    schedule: str = setting("cosine", one_of("cosine", "constant"))  # after the warm-up
    weight_decay: float = setting(1e-4, at_least(0.0))  # AdamW's
    value_weight: float = setting(1.0, at_least(0.0))  # of the value loss beside the policy's
    max_grad_norm: float = setting(1.0, at_least(0.0))  # 0: no clipping
    # Wall-clock budget in minutes (0: none): the run ends after the iteration that
    # passes it, evaluated and checkpointed as a last iteration. Time-to-strength runs.
    max_minutes: float = setting(0.0, at_least(0.0))


@dataclasses.dataclass(frozen=True)
class EvaluationConfig(Section):
    """`evaluation`: the matches against fixed opponents that rank the checkpoints."""

    every: int = setting(10, at_least(1))  # iterations between evaluations, at the most
    games: int = setting(256, at_least(2))  # per opponent, half in each seat
    # The first ranks the checkpoints (the best is kept); a shipped champion plays as its
    # '@PLAY' says, else as the run's network does here.
    opponents: tuple[str, ...] = setting(("random",), opponent_specs)
    num_simulations: int = setting(0, at_least(0))  # 0: greedy on the policy network
    lookahead: int = setting(0, in_range(0, NUM_ACTIONS))  # > 0: 1-ply over the top K
    rolls: bool = setting(False)  # the lookahead values each move over the 36 rolls after it
    # The most of the run's wall clock that evaluating may take, the evaluators' compilation
    # included: an evaluation due every `every` iterations waits until it fits
    # (docs/training.md, "The evaluation's share"). train/az.py's: train/ppo.py evaluates
    # every `every` iterations.
    max_share: float = setting(0.1, in_range(0.01, 1.0))


@dataclasses.dataclass(frozen=True)
class CheckpointConfig(Section):
    """`checkpoint`: what the run keeps of its network and optimiser."""

    every: int = setting(10, at_least(1))  # iterations
    keep_last: int = setting(3, at_least(1))  # plus the best by win rate vs opponents[0]
    # Wall-clock marks (minutes since the start, compilation included): the network as
    # it is when each is passed goes to RUN_DIR/snapshots/<M>min.msgpack (champion format).
    snapshot_minutes: tuple[float, ...] = setting((), _positive_numbers)


@dataclasses.dataclass(frozen=True)
class LoggingConfig(Section):
    """`logging`: where the metrics go besides the run's metrics file."""

    tensorboard: bool = setting(True)  # used when tensorboardX or torch is installed


@dataclasses.dataclass(frozen=True)
class Config(Section):
    """An AlphaZero run's whole configuration (configs/*.yaml): the sections `run`, `env`,
    `network`, `search`, `selfplay`, `replay`, `training`, `evaluation`, `checkpoint` and
    `logging`, each a `Section` of keys, and the checks between them."""

    run: RunConfig = RunConfig()
    env: EnvConfig = EnvConfig()
    network: NetworkConfig = NetworkConfig()
    search: SearchConfig = SearchConfig()
    selfplay: SelfplayConfig = SelfplayConfig()
    replay: ReplayConfig = ReplayConfig()
    training: TrainingConfig = TrainingConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    logging: LoggingConfig = LoggingConfig()

    def __post_init__(self):
        super().__post_init__()
        per_iteration = self.selfplay.batch_size * self.selfplay.steps_per_iteration
        if self.replay.capacity < per_iteration:
            raise ConfigError(
                f"replay.capacity: must hold one iteration of self-play (selfplay.batch_size "
                f"* selfplay.steps_per_iteration = {per_iteration}), got {self.replay.capacity}")
        if self.replay.min_size > self.replay.capacity:
            raise ConfigError(f"replay.min_size: must be <= replay.capacity "
                              f"({self.replay.capacity}), got {self.replay.min_size}")
        if self.evaluation.num_simulations and self.evaluation.lookahead:
            raise ConfigError("evaluation.lookahead: must be 0 when evaluation.num_simulations "
                              "> 0 (one search at a time)")
        if self.evaluation.rolls and not self.evaluation.lookahead:
            raise ConfigError("evaluation.rolls: values the lookahead's moves over the rolls; "
                              "needs evaluation.lookahead > 0")
        if self.evaluation.games % 2:
            raise ConfigError(f"evaluation.games: must be even (both seats played equally), "
                              f"got {self.evaluation.games}")


def to_dict(config: Section) -> dict:
    """A config as nested plain dicts and lists (for YAML, JSON and checkpoints)."""
    def plain(value):
        return list(value) if isinstance(value, tuple) else value
    return {f.name: to_dict(v) if isinstance(v := getattr(config, f.name), Section) else plain(v)
            for f in dataclasses.fields(config)}


def from_dict(schema: type, mapping, where: str = ""):
    """The `schema` section (a `Section` dataclass) of nested `mapping`, missing keys at
    their defaults. Raises ConfigError naming an unknown key or a bad value by its path."""
    if not isinstance(mapping, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping, got {mapping!r}")
    fields = {f.name: f for f in dataclasses.fields(schema)}
    values = {}
    for name, value in mapping.items():
        path = f"{where}.{name}" if where else str(name)
        if name not in fields:
            raise ConfigError(f"{path}: unknown key (known: {', '.join(sorted(fields))})")
        kind = _hints(schema)[name]
        nested = isinstance(kind, type) and issubclass(kind, Section)
        values[name] = from_dict(kind, value, path) if nested else value
    try:
        return schema(**values)
    except ConfigError as e:  # a section names its own key: prefix the section's path
        raise ConfigError(f"{where}.{e}" if where else str(e)) from None


def merge(base: dict, override, where: str = "") -> dict:
    """`base` (nested dicts) updated with `override`; unknown keys raise ConfigError."""
    if not isinstance(override, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping, got {override!r}")
    out = dict(base)
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


def read_yaml(path) -> dict:
    """The mapping in the YAML file `path`; raises ConfigError for a missing or bad file."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        return yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None


def load_config(path: str | pathlib.Path | None = None, overrides=(), base=None,
                schema: type = Config):
    """`base` (a config or a nested dict; default: `schema`'s defaults), updated with the YAML
    file at `path`, then `overrides` ('key=value' strings): a validated `schema`."""
    if base is None:
        base = schema()
    config = to_dict(base) if isinstance(base, Section) else to_dict(from_dict(schema, base))
    if path is not None:
        config = merge(config, read_yaml(path))
    for text in overrides:
        config = merge(config, parse_override(text))
    return from_dict(schema, config)


def check_devices(config: Config, num_devices: int):
    """Batch sizes must split evenly over the devices (data parallelism)."""
    for section, name in (("selfplay", "batch_size"), ("training", "batch_size"),
                          ("replay", "capacity"), ("evaluation", "games")):
        value = getattr(getattr(config, section), name)
        if value % num_devices:
            raise ConfigError(f"{section}.{name}: must be a multiple of the {num_devices} "
                              f"devices, got {value}")
