"""Rules on a game's candidate words run in one Pallas kernel, over tiles of games (the
lowering's `lists_in_tiles`, "gpu-tiles").

XLA's GPU backend writes each reduction over a game's 32 words ("some candidate of a set")
as a kernel of its own, and stores every set that a later reduction reads: the reference's
lists are a chain of such kernels. Here a program instance holds a tile of `TILE_GAMES`
games, each pass's 16 words a game spread over its threads (`layout.PassTile`); the rules
run on it as written (`lists.py`), reductions and all, and only their results are stored.

On a CUDA GPU the kernel is compiled by Triton; on any other platform it runs in Pallas'
interpret mode (the same kernel as array operations: slower, and what the CPU's tests and
golden replays check).
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from trictrac_jax import lowering
from trictrac_jax.moves.candidates import Candidates
from trictrac_jax.moves.layout import NUM_PASSES, NUM_ROWS, PassTile

# Games a program instance and its warps: 16 x 4 had the fewest kernels and bytes a step
# and no spill in the H100 programs compiled here (docs/journal/engine-speed.md, issue 51).
TILE_GAMES, TILE_WARPS = 16, 4
# The candidates' words that the lists read
FACTS = ("possible", "fills", "exceeding", "has_exit", "exit_outside_ok", "exit_farthest_ok",
         "twin_same", "double_exit", "swapped")


def in_tiles(rules: Callable[[Candidates], tuple], c: Candidates) -> tuple:
    """`rules(c)`: a tuple of words uint32[2, 16] and flags bool[] of one game's candidate
    words (`FACTS`; `rules` reads no rows). Under `jax.vmap` the batch is computed by one
    kernel over tiles of games; for one game, by XLA."""
    def one_game(*facts):
        return rules(_with_facts(facts))

    facts = tuple(getattr(c, name) for name in FACTS)
    results = jax.eval_shape(one_game, *facts)
    batched = lambda *facts: jax.lax.platform_dependent(
        *facts, cuda=lambda *f: _kernel_call(rules, results, f, interpret=False),
        default=lambda *f: _kernel_call(rules, results, f, interpret=True))
    return lowering.batch_rule(one_game, batched)(*facts)


def _with_facts(facts) -> Candidates:
    """The candidates' `FACTS` words, without their rows."""
    return Candidates(rows=None, **dict(zip(FACTS, facts)))


def _kernel_call(rules, results, facts, interpret: bool) -> tuple:
    """The kernel over facts uint32[games, 2, 16] each (games first): `results`' words as
    uint32[games, 2, 16], its flags as bool[games]."""
    games = facts[0].shape[0]
    padded = -(-games // TILE_GAMES) * TILE_GAMES
    facts = [jnp.pad(f, [(0, padded - games), (0, 0), (0, 0)]) for f in facts]
    words = pl.BlockSpec((TILE_GAMES, NUM_PASSES, NUM_ROWS), lambda i: (i, 0, 0))
    flags = pl.BlockSpec((TILE_GAMES, 1), lambda i: (i, 0))
    is_words = [r.ndim > 0 for r in results]
    out_shape = [jax.ShapeDtypeStruct((padded, NUM_PASSES, NUM_ROWS) if w else (padded, 1),
                                      jnp.uint32 if w else jnp.int32) for w in is_words]
    if interpret:
        options = dict(interpret=True)
    else:
        from jax.experimental.pallas import triton as plt
        options = dict(compiler_params=plt.CompilerParams(num_warps=TILE_WARPS))
    outs = pl.pallas_call(
        lambda *refs: _kernel(rules, is_words, refs), grid=(padded // TILE_GAMES,),
        in_specs=[words] * len(FACTS), out_specs=[words if w else flags for w in is_words],
        out_shape=out_shape, **options)(*facts)
    return tuple(o[:games] if w else o[:games, 0] != 0 for o, w in zip(outs, is_words))


def _kernel(rules, is_words, refs):
    """One tile: the facts' words in (`refs[:len(FACTS)]`, [TILE_GAMES, 2, 16] each), the
    rules' words ([TILE_GAMES, 2, 16]) and flags ([TILE_GAMES, 1], int32) out."""
    ins, outs = refs[:len(FACTS)], refs[len(FACTS):]
    tiles = [PassTile(*(ref[:, p, :] for p in range(NUM_PASSES))) for ref in ins]
    results = rules(_with_facts(tiles))
    for ref, result, words in zip(outs, results, is_words):
        if words:
            for p in range(NUM_PASSES):
                ref[:, p, :] = _tile_shaped(result.passes[p], NUM_ROWS, jnp.uint32)
        else:
            ref[...] = _tile_shaped(result, 1, jnp.int32)


def _tile_shaped(value, columns: int, dtype) -> jax.Array:
    return jnp.broadcast_to(jnp.asarray(value), (TILE_GAMES, columns)).astype(dtype)
