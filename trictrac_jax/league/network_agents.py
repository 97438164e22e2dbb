"""Agents that play a network, and agents by name: `load_agent` gives the engine's rule
agents (`trictrac_jax.agents`: random, first, greedy, web) or a trained network (a shipped
champion, a network file, a run of the AlphaZero stack or of PPO) playing its policy, a
search or a lookahead; `evaluator` compiles the matches of a run's network against them.

The learning side of the agents: imports the training stack, which `agents` must not."""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax

from trictrac_jax import agents
from trictrac_jax.az import champion
from trictrac_jax.az import network
from trictrac_jax.az import search as S
from trictrac_jax.az import training
from trictrac_jax.az.config import Config
from trictrac_jax.league.matches import Match, play_match
from trictrac_jax.az.model import model_from_config
from trictrac_jax.env import Trictrac
from trictrac_jax.lowering import batch_rule
from trictrac_jax.rl import ppo
from trictrac_jax.state import NUM_ACTIONS


class Play(NamedTuple):
    """How a network picks its moves: the `@PLAY` of an agent spec (`parse_play`)."""

    lookahead: int = 0  # the 1-ply search over the policy's K likeliest moves (0: off)
    rolls: bool = False  # the lookahead values each move over the 36 rolls after it
    simulations: int = 0  # a tree search of N simulations, no exploration noise (0: off)
    algorithm: str = ""  # that search's `search.algorithm`; "": the run's own
    max_actions: int = 0  # that search's tree width (search.max_actions); 0: the run's own

    def check(self):
        """Raises ValueError for settings that do not make one way to play."""
        if self.simulations and self.lookahead:
            raise ValueError("simulations and lookahead: use one search, not both")
        if self.rolls and not self.lookahead:
            raise ValueError("rolls: values the lookahead's moves over the rolls; needs "
                             "lookahead > 0")
        if not 0 <= self.lookahead <= NUM_ACTIONS:
            raise ValueError(f"lookahead: must be in [0, {NUM_ACTIONS}], got {self.lookahead}")
        if self.simulations < 0:
            raise ValueError(f"simulations: must be >= 0, got {self.simulations}")
        return self


# The tree width of `search:N`: as many actions as the lookahead's 32 likeliest moves; a
# narrower tree takes markedly less time a position than the 256 of a run's search
# (docs/journal/search-at-play-time.md).
SEARCH_WIDTH = 32


def _tree_search(algorithm: str):
    """The Play of a tree search `algorithm` of N simulations, `SEARCH_WIDTH` wide."""
    return lambda n: Play(simulations=n, algorithm=algorithm, max_actions=SEARCH_WIDTH)


# The ways to play a spec may name after '@', each with its integer argument.
PLAYS = {"policy": lambda n: Play(), "lookahead": lambda k: Play(lookahead=k),
         "rolls": lambda k: Play(lookahead=k, rolls=True),
         "search": _tree_search("stochastic"), "gumbel": _tree_search("gumbel"),
         "gumbel_stochastic": _tree_search("gumbel_stochastic")}
PLAY_SYNTAX = "policy, lookahead:K, rolls:K, search:N, gumbel:N or gumbel_stochastic:N"


def parse_play(text: str) -> Play:
    """'policy' (the raw policy), 'lookahead:K', 'rolls:K' (the lookahead over the rolls),
    'search:N' (the stochastic search, N simulations), 'gumbel:N' or 'gumbel_stochastic:N'
    (those searches, `search.algorithm`'s). Raises ValueError."""
    name, colon, arg = text.partition(":")
    if name not in PLAYS or (name == "policy") == bool(colon) or \
            (colon and not (arg.isdigit() and int(arg) > 0)):
        raise ValueError(f"play {text!r}: expected {PLAY_SYNTAX} (K, N positive integers)")
    return PLAYS[name](int(arg) if colon else 0).check()


def split_spec(spec: str) -> tuple[str, Play | None]:
    """('NAME', Play) of 'NAME@PLAY'; ('NAME', None) without '@PLAY'."""
    name, at, play = spec.rpartition("@")
    return (name, parse_play(play)) if at else (spec, None)


def load_agent(spec: str, play: Play = Play()):
    """An agent `(key, state) -> int32 action` from a spec `NAME[@PLAY]`:

    * a baseline: 'random', 'first', 'greedy' (every legal action) or 'greedy:K' (the first
      K legal actions by index), see `agents.baseline`;
    * a network: 'champion' (the newest shipped in the package), 'champion:N' (the N-th,
      `trictrac_jax.az.champion`), a network file (`*.msgpack`), a training run directory
      (its best checkpoint) or one checkpoint directory (RUN_DIR/checkpoints/N).

    A network plays as its `@PLAY` says (`parse_play`), else as `play`: its raw policy
    (greedy over the masked logits), the 1-ply lookahead over its `lookahead` likeliest
    moves (`search.lookahead`; with `rolls`, each valued over the 36 rolls after it),
    or a search of `simulations` (no exploration noise; `search:N` is the stochastic search
    over the dice, `gumbel:N` and `gumbel_stochastic:N` the other trees, all `SEARCH_WIDTH`
    actions wide). Raises ValueError for an unknown
    name or play, `CheckpointError` for an unreadable checkpoint."""
    name, own = split_spec(spec)
    agent = agents.baseline(name)
    if agent is not None:
        if own is not None:
            raise ValueError(f"agent {spec!r}: only networks take @{PLAY_SYNTAX}")
        return agent
    if not champion.is_name(name) and "/" not in name and not name.startswith("."):
        raise ValueError(f"unknown agent {spec!r}: expected one of {list(agents.BASELINES)}, "
                         f"greedy:K, champion, champion:N, or a checkpoint path")
    return checkpoint_agent(*load_network(name), own or play)


def load_network(spec: str) -> tuple[dict, Config]:
    """(params, config) of 'champion' or 'champion:N' (a shipped network), of a network file
    in the champion's format (`*.msgpack`), or of a checkpoint path (a run directory's best
    checkpoint, or one checkpoint directory) of the AlphaZero stack or of PPO (whose
    config is then the `ppo.agent_config` its network plays under)."""
    if champion.is_name(spec) or champion.is_network_file(spec):
        params, config, _ = champion.load(champion.file_of(spec))
        return params, config
    return ppo.load_params(spec) if ppo.is_run(spec) else training.load_params(spec)


def checkpoint_agent(params, config: Config, play: Play = Play()):
    """The agent of trained `params` with their run `config`, playing as `play` (see
    `load_agent`)."""
    play.check()
    model = model_from_config(config)
    # the searches work on batches: one state is a batch of one
    batched = lambda f: lambda key, state: f(key, jax.tree.map(lambda x: x[None], state))[0]
    if play.lookahead:
        # under vmap, the whole batch is one lookahead (its candidates scored together)
        look = functools.partial(S.lookahead, params, model=model, top_k=play.lookahead,
                                 rolls=play.rolls)
        return batch_rule(batched(look), lambda keys, states: look(keys[0], states))
    if play.simulations == 0:
        return lambda key, state: network.policy_action(model.net, params, state)
    own = config.search
    search_config = own.replace(num_simulations=play.simulations,
                                algorithm=play.algorithm or own.algorithm,
                                max_actions=play.max_actions or own.max_actions)
    search = functools.partial(S.search, params, model=model, config=search_config,
                               explore=False)
    return batched(lambda key, states: search(key, states).action)


def evaluator(config: Config, opponent: str, games: int, play: Play = Play(),
              opponent_play: Play | None = None):
    """A jitted `Match`, `(params, key) -> MatchResult`: the games of a network of the run
    `config` playing as `play` against `opponent`, a `load_agent` spec (a network opponent
    plays as its spec's `@PLAY` says, else as `opponent_play`, by default `play`); compiled
    once per spec, plays and the config's network, search and games (runs that differ in
    their directory or evaluation settings share it)."""
    return _evaluator(training.device_config(config), opponent, games, play,
                      play if opponent_play is None else opponent_play)


@functools.lru_cache(maxsize=16)
def _evaluator(config: Config, opponent: str, games: int, play: Play, opponent_play: Play):
    other = load_agent(opponent, opponent_play)
    env = Trictrac(max_steps=config.env.max_steps)

    def outcomes(params, key):
        return play_match(env, checkpoint_agent(params, config, play), other, key, games)
    return Match(jax.jit(outcomes), training.replicate)
