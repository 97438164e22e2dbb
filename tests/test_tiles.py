"""The move lists' Pallas kernel (`moves.tiles`, the "gpu-tiles" lowering): the word helpers'
tile forms against their array forms, the kernel's lists against XLA's on positions of random
play (in interpret mode, as the CPU runs it), and its H100 program. The rules themselves are
checked under this lowering by the hand-set positions of test_moves.py and test_scoring.py
(`tests.positions.LOWERINGS`)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import trictrac_jax as tt
from benchmarks import measure
from trictrac_jax import board as B
from trictrac_jax.lowering import forced
from trictrac_jax.moves import layout as L
from trictrac_jax.moves import move_lists

GAMES = 32


def random_words(key) -> jax.Array:
    """uint32[GAMES, 2, 16]: random bits in the 17 second slots of every row."""
    return jax.random.bits(key, (GAMES, 2, 16), jnp.uint32) & L.ALL


def as_tile(words) -> L.PassTile:
    return L.PassTile(words[:, 0, :], words[:, 1, :])


def of_tile(tile: L.PassTile) -> np.ndarray:
    """uint32[GAMES, 2, 16] of a tile (its values broadcast)."""
    return np.stack([np.broadcast_to(p, (GAMES, 16)) for p in tile.passes], axis=1)


def test_a_pass_tile_computes_what_the_words_do():
    a, b = random_words(jax.random.PRNGKey(0)), random_words(jax.random.PRNGKey(1))
    flag = jax.random.bernoulli(jax.random.PRNGKey(2), 0.5, (GAMES,))
    forms = {  # each helper's use in lists.py, on one game's words or on a tile
        "other pass": lambda x, y, f: L.other_pass(x) & ~y,
        "transposed": lambda x, y, f: L.transposed(x),
        "either pass": lambda x, y, f: L.either_pass(x) | L.other_pass(y),
        "by pass": lambda x, y, f: L.by_pass(L.pass_rows(x, 1), L.pass_rows(y, 0)
                                             & L.against(L.BELOW_ROW, L.lanes_of(y))),
        "select": lambda x, y, f: L.select(f, x & L.against(L.FULL, L.lanes_of(x)),
                                           y & L.against(L.FIRST_PASS, L.lanes_of(y))),
        "keep": lambda x, y, f: L.keep(f, L.ALL) & x | (L.against(L.SINGLE, L.lanes_of(y)) ^ y),
    }
    for name, form in forms.items():
        words = np.asarray(jax.vmap(form)(a, b, flag))
        tiled = of_tile(form(as_tile(a), as_tile(b), flag[:, None]))
        np.testing.assert_array_equal(tiled, np.broadcast_to(words, tiled.shape), err_msg=name)
    sparse = a & (jnp.arange(GAMES) % 3 == 0)[:, None, None]  # some games with no bit set
    np.testing.assert_array_equal(L.any_set(as_tile(sparse))[:, 0],
                                  jax.vmap(L.any_set)(sparse))
    assert not L.any_set(as_tile(sparse))[1, 0] and L.any_set(as_tile(sparse))[0, 0]


def positions(games: int = 1024, steps: int = 40):
    """View boards int[games, 24] and dice int[games, 2] after `steps` of random play."""
    states = measure.mid_game_inputs(tt.Trictrac(), games, steps, jax.random.PRNGKey(1)).states
    return jax.vmap(B.view_board)(states._board, states.current_player), states._dice


def test_the_kernel_lists_what_xla_lists():
    board, dice = positions()
    want = jax.jit(jax.vmap(move_lists))(board, dice)
    with forced("gpu-tiles"):
        got = jax.jit(jax.vmap(move_lists))(board[:-5], dice[:-5])  # not whole tiles
    for name in want._fields[1:]:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name)[:-5],
                                      err_msg=name)
    # the positions hold every list: quarter-filling sequences and legal ones
    assert np.asarray(want.filling_first).any() and np.asarray(want.legal).any()
    assert not np.asarray(want.some).all()


@pytest.mark.compile
def test_the_kernel_is_one_and_spills_nowhere_on_an_h100():
    from trictrac_jax.tools import gpu_program as G
    board = jax.ShapeDtypeStruct((1024, 24), jnp.int32)
    dice = jax.ShapeDtypeStruct((1024, 2), jnp.int32)
    programs = {}
    for name in ("gpu", "gpu-tiles"):
        with forced(name):
            programs[name] = G.read(G.compile_with_kernels(G.H100, jax.vmap(move_lists),
                                                           board, dice))
    kernels = [k for k in programs["gpu-tiles"].by_kernel if k.name.startswith("pallas_call")]
    assert len(kernels) == 1 and not programs["gpu-tiles"].spilling()
    assert programs["gpu-tiles"].kernels < programs["gpu"].kernels
