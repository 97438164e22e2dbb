"""PureJaxRL's own ppo.py on Trictrac-v1, with only the lines that docs/api.md lists changed.

    python examples/run_purejaxrl.py --set TOTAL_TIMESTEPS=2e5

examples/purejaxrl/ holds PureJaxRL's `purejaxrl/ppo.py` and `purejaxrl/wrappers.py` as they
are in its repository (github.com/luchris429/purejaxrl at 31756b1, Apache 2.0, its LICENSE
beside them). This script applies the diff of docs/api.md's "PureJaxRL's ppo.py on
Trictrac-v1" to ppo.py (each hunk must match the file exactly once), runs its `make_train`
with its own config (`--set KEY=VALUE` overrides an entry), and prints, by tenth of the
updates, the share of the finished games that the learner won against `random` and the
share of his actions that were illegal (`info["illegal_action"]`, in PureJaxRL's metrics).

The libraries that PureJaxRL imports and this repository does not install are stood in for:
distrax's `Categorical` (its `sample`, `log_prob` and `entropy`, in plain jax), and brax and
navix, which only PureJaxRL's other wrappers use.
"""
from __future__ import annotations

import argparse
import ast
import linecache
import pathlib
import re
import sys
import types

from trictrac_jax import devices

devices.choose_platform()  # before JAX starts, which importing gymnax does (devices.py)

import jax  # noqa: E402
import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
PUREJAXRL = ROOT / "examples" / "purejaxrl"
DOC = ROOT / "docs" / "api.md"
DIFF = re.compile(r"^```diff\n(--- purejaxrl/ppo\.py\n.*?)^```$", re.M | re.S)


def documented_diff() -> str:
    """The diff of ppo.py in docs/api.md (exactly one)."""
    found = DIFF.findall(DOC.read_text())
    if len(found) != 1:
        raise ValueError(f"{DOC}: expected one diff of purejaxrl/ppo.py, found {len(found)}")
    return found[0]


def apply_diff(text: str, diff: str) -> str:
    """`text` with each hunk of the unified `diff` applied: its old lines (context and
    removed) must occur exactly once, and are replaced by its new ones."""
    hunks = re.split(r"^@@[^\n]*@@\n", diff, flags=re.M)[1:]
    if not hunks:
        raise ValueError("the diff has no hunk")
    for hunk in hunks:
        lines = hunk.splitlines()
        old = "".join(line[1:] + "\n" for line in lines if line[:1] in (" ", "-"))
        new = "".join(line[1:] + "\n" for line in lines if line[:1] in (" ", "+"))
        if text.count(old) != 1:
            raise ValueError(f"a hunk's old lines occur {text.count(old)} times, not once:\n{old}")
        text = text.replace(old, new)
    return text


class Categorical:
    """distrax's `Categorical(logits=...)`: `sample(seed=key)`, `log_prob`, `entropy`."""

    def __init__(self, logits):
        self.logits = jax.nn.log_softmax(logits)

    def sample(self, seed):
        return jax.random.categorical(seed, self.logits)

    def log_prob(self, value):
        return jax.numpy.take_along_axis(self.logits, value[..., None], -1)[..., 0]

    def entropy(self):
        return -jax.numpy.sum(jax.numpy.exp(self.logits) * self.logits, -1)


def stand_ins() -> dict[str, types.ModuleType]:
    """The modules PureJaxRL imports that are not installed here, by name."""
    modules = {name: types.ModuleType(name) for name in (
        "distrax", "brax", "brax.envs", "brax.envs.wrappers", "brax.envs.wrappers.training",
        "navix")}
    modules["distrax"].Categorical = Categorical
    modules["brax"].envs = modules["brax.envs"]
    training = modules["brax.envs.wrappers.training"]
    training.EpisodeWrapper = training.AutoResetWrapper = None
    return modules


def load_ppo() -> types.ModuleType:
    """PureJaxRL's ppo.py with the documented diff applied, imported as a module (its
    `from wrappers import ...` finds PureJaxRL's wrappers.py); the stand-ins and
    PureJaxRL's `wrappers` are gone from `sys.modules` afterwards."""
    source = apply_diff((PUREJAXRL / "ppo.py").read_text(), documented_diff())
    added = {k: v for k, v in stand_ins().items() if k not in sys.modules}
    sys.modules.update(added)
    sys.path.insert(0, str(PUREJAXRL))
    try:
        # registered, as flax looks its classes' module up; its lines where tracebacks look
        ppo = sys.modules["purejaxrl_ppo"] = types.ModuleType("purejaxrl_ppo")
        ppo.__file__ = f"{PUREJAXRL / 'ppo.py'}, with docs/api.md's diff"
        linecache.cache[ppo.__file__] = (len(source), None, source.splitlines(True),
                                         ppo.__file__)
        exec(compile(source, ppo.__file__, "exec"), ppo.__dict__)
    finally:
        sys.path.remove(str(PUREJAXRL))
        for name in [*added, "wrappers"]:
            sys.modules.pop(name, None)
    ppo.CONFIG = main_config(source)
    return ppo


def main_config(source: str) -> dict:
    """The config dict that ppo.py's `__main__` block trains with."""
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["config"]):
            return ast.literal_eval(node.value)
    raise ValueError("ppo.py: no `config = {...}`")


def by_tenth(metrics, parts: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """(won, illegal): by tenth of the updates, the share of the finished games that the
    learner won, and the share of his actions that were illegal (fewer parts than 10 if
    there are fewer updates)."""
    parts = min(parts, len(metrics["outcome"]))
    tenths = lambda name: np.array_split(np.asarray(metrics[name]), parts)
    won = [((o > 0) & e).sum() / max(e.sum(), 1)
           for o, e in zip(tenths("outcome"), tenths("returned_episode"))]
    return np.array(won), np.array([i.mean() for i in tenths("illegal_action")])


def setting(text: str) -> tuple[str, object]:
    """`KEY=VALUE`, VALUE a Python literal -> (KEY, value)."""
    name, _, value = text.partition("=")
    return name, ast.literal_eval(value)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", action="append", default=[], type=setting,
                        metavar="KEY=VALUE", help="a config entry, e.g. --set NUM_ENVS=8")
    parser.add_argument("--seed", type=int, default=30)  # ppo.py's
    args = parser.parse_args(argv)
    ppo = load_ppo()
    config = {**ppo.CONFIG, "DEBUG": False}  # DEBUG prints every finished episode
    for name, value in args.set:
        if name not in config:
            parser.error(f"--set: unknown key {name!r}; keys: {sorted(config)}")
        config[name] = value
    out = jax.block_until_ready(jax.jit(ppo.make_train(config))(jax.random.PRNGKey(args.seed)))
    won, illegal = by_tenth(out["metrics"])
    print("won against random, by tenth of the updates:", " ".join(f"{x:.2f}" for x in won))
    print("illegal actions, by tenth of the updates:   ", " ".join(f"{x:.2f}" for x in illegal))
    return out


if __name__ == "__main__":
    main()
