"""Agents by name or checkpoint: the baselines (`agents`) and trained networks playing their
policy, search or lookahead, and the jitted matches of a run's network against them.

The learning side of the agents: imports the training stack, which `agents` must not."""
from __future__ import annotations

import functools

import jax

from trictrac_jax import agents
from trictrac_jax.az import champion
from trictrac_jax.az import network as N
from trictrac_jax.az import search as S
from trictrac_jax.az import training
from trictrac_jax.az.evaluation import play_match
from trictrac_jax.lanes import batch_rule
from trictrac_jax.state import NUM_ACTIONS


def load_agent(spec: str, num_simulations: int = 0, lookahead: int = 0, rolls: bool = False):
    """An agent `(key, state) -> int32 action` from a spec:

    * a baseline: 'random', 'first', 'greedy' (every legal action) or 'greedy:K' (the first
      K legal actions by index), see `agents.baseline`;
    * 'champion': the network shipped in the package (`trictrac_jax.az.champion`);
    * a training run directory (its best checkpoint) or one checkpoint directory
      (RUN_DIR/checkpoints/N): the network's policy, greedy over the masked logits, or with
      `num_simulations` > 0 the run's search (no exploration noise), or with `lookahead`
      > 0 the 1-ply search over that many actions (`search.make_lookahead`; with `rolls`,
      each move valued over the 36 rolls after it).

    Networks play as the policy, search or lookahead arguments say. Raises ValueError for
    an unknown name, `CheckpointError` for an unreadable checkpoint."""
    agent = agents.baseline(spec)
    if agent is not None:
        return agent
    if spec != "champion" and "/" not in spec and not spec.startswith("."):
        raise ValueError(f"unknown agent {spec!r}: expected one of {list(agents.BASELINES)}, "
                         f"greedy:K, champion, or a checkpoint path")
    return checkpoint_agent(*load_network(spec), num_simulations=num_simulations,
                            lookahead=lookahead, rolls=rolls)


def load_network(spec: str):
    """(params, config) of 'champion' (the shipped network), of a network file in the
    champion's format (`*.msgpack`), or of a checkpoint path (a run directory's best
    checkpoint, or one checkpoint directory)."""
    if spec == "champion" or spec.endswith(".msgpack"):
        params, config, _ = champion.load(champion.PATH if spec == "champion" else spec)
        return params, config
    return training.load_params(spec)


def checkpoint_agent(params, config: dict, num_simulations: int = 0, lookahead: int = 0,
                     rolls: bool = False):
    """The agent of trained `params` with their run `config` (see `load_agent`)."""
    if num_simulations and lookahead:
        raise ValueError("num_simulations and lookahead: use one search, not both")
    if rolls and not lookahead:
        raise ValueError("rolls: values the lookahead's moves over the rolls; needs lookahead > 0")
    if not 0 <= lookahead <= NUM_ACTIONS:
        raise ValueError(f"lookahead: must be in [0, {NUM_ACTIONS}], got {lookahead}")
    model = S.model_from_config(config)
    # the searches work on batches: one state is a batch of one
    batched = lambda f: lambda key, state: f(key, jax.tree.map(lambda x: x[None], state))[0]
    if lookahead:
        # under vmap, the whole batch is one lookahead (its candidates scored together)
        look = functools.partial(S.make_lookahead(model, lookahead, rolls), params)
        return batch_rule(batched(look), lambda keys, states: look(keys[0], states))
    if num_simulations == 0:
        return lambda key, state: N.policy_action(model.net, params, state)
    search = S.make_search(model, {**config["search"], "num_simulations": num_simulations},
                           explore=False)
    return batched(lambda key, states: search(params, key, states).action)


@functools.lru_cache(maxsize=16)
def evaluator(trainer: training.Trainer, opponent: str, games: int, num_simulations: int,
              lookahead: int = 0, rolls: bool = False):
    """Jitted `(params, key) -> int32[games]` outcomes of `trainer`'s network (greedy over
    its policy, its search with `num_simulations` > 0, or its 1-ply `lookahead` > 0, over
    the `rolls` or not) against `opponent`, a `load_agent` spec (a checkpoint opponent
    searches the same way); compiled once per trainer and spec."""
    other = load_agent(opponent, num_simulations, lookahead, rolls)

    def evaluate(params, key):
        agent = checkpoint_agent(params, trainer.config, num_simulations, lookahead, rolls)
        return play_match(trainer.env, agent, other, key, games)
    match = jax.jit(evaluate)
    return lambda params, key: match(*jax.device_put((params, key), trainer.replicated))
