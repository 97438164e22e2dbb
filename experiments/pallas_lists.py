"""The reference's three lists (`moves/lists.py`'s rules, unchanged) in one Pallas kernel for
the GPU, a game's candidate words held as values of a block of games: does keeping a game's
words on the chip pay? The plain random loop's H100 program (H100 estimate, compiled program,
model in docs/gpu-program.md) with the lists in the kernel, against the engine as it is and
against the same per-game values left to XLA (`scalar_lists`).

    python -m experiments.pallas_lists --check 8192       # the kernel (interpret mode) = the lists
    python -m experiments.pallas_lists --games 1024       # H100 programs, each in a process of its own
    python -m experiments.pallas_lists --games 131072 --rows engine,scalars
    python -m experiments.pallas_lists --lowering          # what Triton's lowering takes

How: the lists' functions are run on `Grid`s, a game's 2 x 16 words as an object array of
values (in the kernel each a uint32[BLOCK] vector over a block of games), by swapping the
array helpers that lists.py calls (`rules_on_grids`); the candidates stay XLA's. One thread
a game spills here; the kernel that spreads a game's words over a block's threads is the
engine's "gpu-tiles" lowering (`trictrac_jax/moves/tiles.py`). Supports
docs/journal/engine-speed.md, issue 51.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import operator
import os
import subprocess
import sys
import types

import numpy as np

U32 = np.uint32
FACTS = ("possible", "fills", "exceeding", "has_exit", "exit_outside_ok", "exit_farthest_ok",
         "twin_same", "double_exit", "swapped")  # the candidates' words the lists read
WORDS = ("filling", "exact", "legal", "ok")  # the lists' words
FLAGS = ("some", "legal_full", "legal_first")  # and their per-game flags
BLOCK, WARPS = 128, 4  # games a program instance, warps a program


def _cells(x) -> np.ndarray:
    """An object array of `x`'s values: a Grid's own, a numpy constant's entries as uint32
    scalars, or a traced value boxed as one cell."""
    import jax
    if isinstance(x, Grid):
        return x.cells
    if isinstance(x, (np.ndarray, np.generic, int)) and not isinstance(x, jax.Array):
        x = np.asarray(x)
        kind = np.uint32 if x.dtype.kind in "ui" else x.dtype.type
        out = np.empty(x.shape, object)
        for index in np.ndindex(x.shape):
            out[index] = kind(x[index])
        return out
    out = np.empty((), object)
    out[()] = x
    return out


def _elementwise(fn, *xs) -> "Grid":
    cells = [_cells(x) for x in xs]
    shape = np.broadcast_shapes(*(c.shape for c in cells))
    cells = [np.broadcast_to(c, shape) for c in cells]
    out = np.empty(shape, object)
    for index in np.ndindex(shape):
        out[index] = fn(*(c[index] for c in cells))
    return Grid(out)


class Grid:
    """Words (or flags) of one game as an object array of per-game values: the structure
    axes are Python's, each value a traced scalar (a vector over the block in a kernel)."""

    __array_ufunc__ = None  # numpy defers to the Grid's operators

    def __init__(self, cells: np.ndarray):
        self.cells = cells

    shape = property(lambda self: self.cells.shape)

    def __getitem__(self, index):
        return Grid(self.cells[index])

    @classmethod
    def of_words(cls, word):
        """A game's 2 x 16 words, `word(p, i)` the value of word (pass p, row i)."""
        cells = np.empty((2, 16), object)
        for p, i in np.ndindex(cells.shape):
            cells[p, i] = word(p, i)
        return cls(cells)


for _name, _op in (("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("rshift", operator.rshift), ("lshift", operator.lshift)):
    setattr(Grid, f"__{_name}__", (lambda op: lambda s, o: _elementwise(op, s, o))(_op))
    setattr(Grid, f"__r{_name}__", (lambda op: lambda s, o: _elementwise(
        lambda a, b: op(b, a), s, o))(_op))
Grid.__ne__ = lambda s, o: _elementwise(operator.ne, s, o)
Grid.__invert__ = lambda s: _elementwise(operator.invert, s)


def _grid_helpers():
    """lists.py's array helpers, for Grids (arrays go to the originals)."""
    import jax.numpy as jnp
    from trictrac_jax.moves import layout as L

    def where(cond, a, b):
        if any(isinstance(x, Grid) for x in (cond, a, b)):
            return _elementwise(jnp.where, cond, a, b)
        return jnp.where(cond, a, b)

    def stack(xs):
        if any(isinstance(x, Grid) for x in xs):
            return Grid(np.stack([_cells(x) for x in xs]))
        return jnp.stack(xs)

    def any_set(words):
        if not isinstance(words, Grid):
            return L.any_set(words)
        return Grid(_cells(functools.reduce(operator.or_, words.cells.ravel()) != 0))

    def transposed(words):
        if not isinstance(words, Grid):
            return L.transposed(words)
        out = np.full(words.shape, U32(0), object)
        for p in range(L.NUM_PASSES):
            for k in range(L.NUM_FIRST):
                bits = [((words.cells[p, i] >> U32(k)) & U32(1)) << U32(i)
                        for i in range(L.NUM_FIRST)]
                out[p, k] = functools.reduce(operator.or_, bits)
        return Grid(out)

    return dict(
        against=lambda x, lanes: Grid(_cells(x)) if lanes == "grid" else L.against(x, lanes),
        keep=lambda cond, word: where(cond, word, U32(0)), any_set=any_set,
        transposed=transposed, stack_rows=stack,
        lanes_of=lambda w: "grid" if isinstance(w, Grid) else L.lanes_of(w),
        jnp=types.SimpleNamespace(where=where, stack=stack))


@contextlib.contextmanager
def rules_on_grids():
    """lists.py's helpers swapped for the Grid ones inside the block, then restored."""
    from trictrac_jax.moves import lists
    saved = {name: getattr(lists, name) for name in _grid_helpers()}
    for name, helper in _grid_helpers().items():
        setattr(lists, name, helper)
    try:
        yield lists
    finally:
        for name, helper in saved.items():
            setattr(lists, name, helper)


def grid_lists(c):
    """lists.py's `move_lists` after the candidates, on Grids: (words, flags)."""
    from trictrac_jax.moves import layout as L
    with rules_on_grids() as lists:
        flags = lists._list_flags(c)
        filling = lists._filling(c, flags.any_full, flags.any_first)
        allowed = lists._filling_rule(c, filling, flags.any_filling)
        exact = lists._exact(c, allowed)
        ok = lists._legal_candidates(c, allowed, exact, flags.any_exact)
        any_set = lists.any_set
        legal_full, legal_first = any_set(ok & L.FULL), any_set(ok & L.FIRST_PASS)
        legal = lists._listed(ok, legal_full, legal_first)
        some = legal_full | any_set(ok & L.SINGLE)
    return (filling, exact, legal, ok), (some, legal_full, legal_first)


def _kernel(*refs):
    """Pallas kernel: the FACTS' words [32, BLOCK] in, the WORDS' [32, BLOCK] and the
    FLAGS [BLOCK] out."""
    import jax.numpy as jnp
    from trictrac_jax import moves
    ins, outs = refs[:len(FACTS)], refs[len(FACTS):]
    facts = {name: Grid.of_words(lambda p, i, ref=ref: ref[16 * p + i, :])
             for name, ref in zip(FACTS, ins)}
    words, flags = grid_lists(moves.Candidates(rows=None, **facts))
    for ref, word in zip(outs, words):
        for index in np.ndindex(word.shape):
            ref[16 * index[0] + index[1], :] = jnp.broadcast_to(
                jnp.asarray(word.cells[index], jnp.uint32), (BLOCK,))
    for ref, flag in zip(outs[len(WORDS):], flags):
        ref[...] = jnp.broadcast_to(flag.cells[()], (BLOCK,)).astype(jnp.int32)


def kernel_lists(board, dice, interpret: bool = False):
    """`moves.move_lists` of view boards int[games, 24] and dice int[games, 2] (games first):
    the candidates as XLA computes them, the lists in the Pallas kernel."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    import jax.experimental.pallas.triton as plt
    from trictrac_jax import lowering
    from trictrac_jax.moves import lists
    c = jax.vmap(lists.candidates)(board, dice)
    games = c.possible.shape[0]
    spec, flag_spec = (pl.BlockSpec((32, BLOCK), lambda i: (0, i)),
                       pl.BlockSpec((BLOCK,), lambda i: (i,)))
    options = (dict(interpret=True) if interpret
               else dict(compiler_params=plt.CompilerParams(num_warps=WARPS)))
    with lowering.forced("gpu"):  # `materialised` reads its arguments as arrays elsewhere
        outs = pl.pallas_call(
            _kernel, grid=(games // BLOCK,), in_specs=[spec] * len(FACTS),
            out_specs=[spec] * len(WORDS) + [flag_spec] * len(FLAGS),
            out_shape=([jax.ShapeDtypeStruct((32, games), jnp.uint32)] * len(WORDS)
                       + [jax.ShapeDtypeStruct((games,), jnp.int32)] * len(FLAGS)),
            **options)(*(getattr(c, f).reshape(games, 32).T for f in FACTS))
    words = {n: o.T.reshape(games, 2, 16) for n, o in zip(WORDS, outs)}
    flags = {n: o != 0 for n, o in zip(FLAGS, outs[len(WORDS):])}
    return lists.MoveLists(c, **words, **flags)


def scalar_lists(board, dice):
    """`moves.move_lists` of one game (view board int[24], dice int[2]), the lists computed
    on Grids of the game's words as scalars: what XLA makes of the same per-game values
    without the kernel (under `jax.vmap`, each a [games] array)."""
    import jax.numpy as jnp
    from trictrac_jax.moves import lists
    c = lists.candidates(board, dice)
    words, flags = grid_lists(c._replace(**{
        name: Grid.of_words(lambda p, i, w=getattr(c, name): w[p, i]) for name in FACTS}))
    as_words = lambda g: jnp.stack([jnp.asarray(x, jnp.uint32) for x in g.cells.ravel()]
                                   ).reshape(g.shape)
    return lists.MoveLists(c, **{n: as_words(w) for n, w in zip(WORDS, words)},
                           **{n: f.cells[()] for n, f in zip(FLAGS, flags)})


def check(positions: int) -> int:
    """Positions from random play: the kernel's lists (interpret mode, on the CPU) against
    `moves.move_lists`. Returns the number of entries that differ."""
    import jax
    import jax.numpy as jnp
    import trictrac_jax as tt
    from trictrac_jax import board as B
    from trictrac_jax.agents import random_agent
    from trictrac_jax.moves import move_lists
    env, games = tt.Trictrac(), 512

    @jax.jit
    def step(states, key):
        k_act, k_step = jax.random.split(key)
        actions = jax.vmap(random_agent)(jax.random.split(k_act, games), states)
        return jax.vmap(env.step)(states, actions, jax.random.split(k_step, games))

    key = jax.random.PRNGKey(1)
    states = jax.vmap(env.init)(jax.random.split(key, games))
    boards, dice = [], []
    for _ in range(-(-positions // games)):
        key, k = jax.random.split(key)
        states = step(states, k)
        boards.append(jax.vmap(B.view_board)(states._board, states.current_player))
        dice.append(states._dice)
    board, dice = jnp.concatenate(boards)[:positions], jnp.concatenate(dice)[:positions]
    board, dice = board[:board.shape[0] // BLOCK * BLOCK], dice[:dice.shape[0] // BLOCK * BLOCK]
    want = jax.jit(jax.vmap(move_lists))(board, dice)
    got = jax.jit(lambda b, d: kernel_lists(b, d, interpret=True))(board, dice)
    differ = 0
    for name in WORDS + FLAGS:
        a, b = np.asarray(getattr(want, name)), np.asarray(getattr(got, name))
        differ += int((a != b).sum())
        print(f"{name}: {int((a != b).sum())} entries differ of {a.size} "
              f"({int((a != 0).sum())} nonzero)")
    return differ


ROWS = ("engine", "scalars", "kernel")  # the lists as the engine has them, on scalars, in the kernel


def h100_row(games: int, row: str) -> str:
    """The plain random loop's H100 program at `games`, with the lists of `row`."""
    os.environ["TRICTRAC_LOWERING"] = "gpu"
    from trictrac_jax.tools import gpu_program as G  # before any JAX computation
    if row != "engine":
        import jax
        import trictrac_jax.moves as moves
        from trictrac_jax import lowering
        from trictrac_jax.moves import lists
        with_lists = kernel_lists if row == "kernel" else jax.vmap(scalar_lists)
        moves.move_lists = lowering.batch_rule(lists.move_lists, with_lists)
    from benchmarks import gpu_report as R
    program = R.random_program("trictrac", games, "plain").per(R.RANDOM_STEPS)
    spilling = "; ".join(G.describe(k) for k in program.spilling()) or "none"
    return (f"{row} {games} games: {program.kernels:.1f} "
            f"kernels, {program.bytes / games:,.0f} bytes a game-step, "
            f"{G.H100_MODEL.seconds(program) * 1e6:.1f} us a step; spilling: {spilling}")


def lowering_probe(games: int = 4096):
    """Which ways of moving a game's words around Triton's Pallas lowering compiles for an
    H100, on a block of BLOCK games x 32 words (a game's words along the lanes): a reduction
    along the words, words gathered from a ref by an index array, and the same on values
    (a roll, a take). Prints each one's outcome."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    import jax.experimental.pallas.triton as plt
    from trictrac_jax.tools import gpu_program as G

    def reduce_along_words(x_ref, order_ref, o_ref):
        o_ref[...] = jnp.max(x_ref[...], axis=1, keepdims=True) | x_ref[...]

    def gather_from_ref(x_ref, order_ref, o_ref):
        o_ref[...] = x_ref[jnp.arange(BLOCK)[:, None], order_ref[...][None, :]]

    def roll_value(x_ref, order_ref, o_ref):
        o_ref[...] = jnp.roll(x_ref[...], 1, axis=1)

    def take_from_value(x_ref, order_ref, o_ref):
        o_ref[...] = jnp.take(x_ref[...], order_ref[...], axis=1)

    kernels = {"reduce along the words": reduce_along_words,
               "gather from a ref": gather_from_ref, "roll a value": roll_value,
               "take from a value": take_from_value}
    words = jax.ShapeDtypeStruct((games, 32), jnp.uint32)
    order = jax.ShapeDtypeStruct((32,), jnp.int32)
    for name, kernel in kernels.items():
        call = pl.pallas_call(
            kernel, out_shape=words, grid=(games // BLOCK,),
            in_specs=[pl.BlockSpec((BLOCK, 32), lambda i: (i, 0)),
                      pl.BlockSpec((32,), lambda i: (0,))],
            out_specs=pl.BlockSpec((BLOCK, 32), lambda i: (i, 0)),
            compiler_params=plt.CompilerParams(num_warps=WARPS))
        try:
            program = G.read(G.compile_with_kernels(G.H100, call, words, order))
            spills = max(k.spills for k in program.by_kernel)
            print(f"{name:24s} compiles: {program.kernels:.0f} kernel, spills {spills} bytes "
                  "a thread")
        except NotImplementedError as error:
            print(f"{name:24s} does not: {str(error).splitlines()[0]}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", type=int, metavar="POSITIONS",
                        help="compare the kernel (interpret mode) with the lists")
    parser.add_argument("--games", default="1024", help="comma-separated batch sizes")
    parser.add_argument("--rows", default=",".join(ROWS),
                        help=f"which of {', '.join(ROWS)} (comma-separated)")
    parser.add_argument("--row", choices=ROWS, help=argparse.SUPPRESS)
    parser.add_argument("--lowering", action="store_true",
                        help="which ways of moving a game's words Triton's Pallas lowering "
                             "compiles for an H100")
    args = parser.parse_args(argv)
    if args.lowering:
        lowering_probe()
        return
    if args.check:
        sys.exit(1 if check(args.check) else 0)
    for games in (int(g) for g in args.games.split(",")):
        if args.row:
            print(h100_row(games, args.row), flush=True)
            continue
        for row in args.rows.split(","):  # a process each: the engine's traces are cached
            subprocess.run([sys.executable, "-m", "experiments.pallas_lists", "--row", row,
                            "--games", str(games)], check=True)


if __name__ == "__main__":
    main()
