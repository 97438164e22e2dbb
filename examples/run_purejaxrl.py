"""PureJaxRL's own ppo.py on Trictrac-v1, with only the lines that docs/api.md lists changed.

    python examples/run_purejaxrl.py --set TOTAL_TIMESTEPS=2e5

examples/purejaxrl/ holds PureJaxRL's `purejaxrl/ppo.py` and `purejaxrl/wrappers.py` as they
are in its repository (github.com/luchris429/purejaxrl at 31756b1, Apache 2.0, its LICENSE
beside them). This script applies the diff of docs/api.md's "PureJaxRL's ppo.py on
Trictrac-v1" to ppo.py (each hunk must match the file exactly once), runs its `make_train`
with its own config (`--set KEY=VALUE` overrides an entry), and prints, by tenth of the
updates, the share of the finished games that the learner won against `random` and the
share of his actions that were illegal (`info["illegal_action"]`, in PureJaxRL's metrics).
Then it measures the trained policy, sampled as in training, against `random` on the
environment that ppo.py made (its `gymnax.make` keywords): `--games` games, half as White
and half as Black, each to its end, with the 95% Wilson interval of the share won.

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
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from trictrac_jax import wrappers  # noqa: E402
from trictrac_jax.league.matches import wilson  # noqa: E402

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
    ppo.CONFIG, ppo.MAKE_KEYWORDS = main_config(source), make_keywords(source)
    return ppo


def main_config(source: str) -> dict:
    """The config dict that ppo.py's `__main__` block trains with."""
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["config"]):
            return ast.literal_eval(node.value)
    raise ValueError("ppo.py: no `config = {...}`")


def make_keywords(source: str) -> dict:
    """The keywords of ppo.py's `gymnax.make(config["ENV_NAME"], ...)` call."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "gymnax.make":
            return {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    raise ValueError("ppo.py: no `gymnax.make(...)` call")


def evaluate(ppo, config: dict, params, key, games: int) -> tuple[np.ndarray, int, int]:
    """The trained network's policy (`params`), sampled, against `random` on Trictrac-v1
    with ppo.py's keywords: `games` games (even), the learner White in the first half and
    Black in the second, each played to its end (or `max_steps_in_episode`). Returns
    (outcome int[games]: +1 won, -1 lost, 0 truncated; the learner's actions; how many of
    them were illegal)."""
    network = ppo.ActorCritic(wrappers.NUM_ACTIONS, activation=config["ACTIVATION"])

    def play(seat, key):
        env = wrappers.SingleAgent(seat=seat, **ppo.MAKE_KEYWORDS)
        params_env, half = env.default_params, games // 2
        k_reset, key = jax.random.split(key)
        obs, state = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, half), params_env)
        zeros = jnp.zeros(half, jnp.int32)

        def going(c):
            return ~c[3].all()

        def step(c):
            obs, state, key, over, outcome, actions, illegal = c
            key, k_act, k_step = jax.random.split(key, 3)
            pi, _ = network.apply(params, obs)
            action = pi.sample(seed=k_act)
            obs, state, _, terminated, truncated, info = jax.vmap(
                env.step, (0, 0, 0, None))(jax.random.split(k_step, half), state, action,
                                            params_env)
            playing = ~over
            return (obs, state, key, over | terminated | truncated,
                    jnp.where(playing, info["outcome"].astype(jnp.int32), outcome),
                    actions + playing, illegal + (playing & info["illegal_action"]))

        c = jax.lax.while_loop(going, step, (obs, state, key, zeros.astype(bool), zeros,
                                             zeros, zeros))
        return c[4], c[5].sum(), c[6].sum()

    white, black = (jax.jit(play, static_argnums=0)(seat, k)
                    for seat, k in enumerate(jax.random.split(key)))
    return (np.concatenate([white[0], black[0]]), int(white[1] + black[1]),
            int(white[2] + black[2]))


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
    parser.add_argument("--games", type=int, default=1000,
                        help="games of the trained policy against random, half in each seat")
    args = parser.parse_args(argv)
    if args.games < 2 or args.games % 2:
        parser.error(f"--games: an even number >= 2, got {args.games}")
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
    outcome, actions, illegal = evaluate(ppo, config, out["runner_state"][0].params,
                                         jax.random.PRNGKey(args.seed + 1), args.games)
    won = int((outcome > 0).sum())
    lo, hi = wilson(won, args.games)
    print(f"trained policy against random: won {won / args.games:.3f} [{lo:.3f}, {hi:.3f}] of "
          f"{args.games} games ({args.games // 2} as White, {args.games // 2} as Black; "
          f"{int((outcome == 0).sum())} unfinished); illegal actions: {illegal / actions:.2f} "
          f"of {actions}")
    out["evaluation"] = {"outcome": outcome, "actions": actions, "illegal": illegal}
    return out


if __name__ == "__main__":
    main()
