"""`az.packed`: the searches' node embeddings packed into words and back, bit for bit."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import trictrac_jax as tt
from trictrac_jax.az import search
from trictrac_jax.az.packed import SMALL, Packed, pack, unpack


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def played_states(games=6, steps=9):
    """States of `games` random games after `steps` steps (flags, dice, points all set)."""
    env = tt.Trictrac()
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(3), games))
    for t in range(steps):
        keys = jax.random.split(jax.random.PRNGKey(100 + t), games)
        actions = jax.vmap(tt.agents.random_agent)(keys, states)
        states = jax.vmap(env.step)(states, actions, keys)
    return states


def test_a_node_of_played_states_comes_back_bit_for_bit():
    states = played_states()
    actions = jnp.arange(6 * 16, dtype=jnp.int32).reshape(6, 16) % 514
    nodes = search.Node(states, actions)
    packed = pack(nodes)
    back = unpack(packed)
    assert jax.tree.structure(back) == jax.tree.structure(nodes)
    for got, want in zip(jax.tree.leaves(back), jax.tree.leaves(nodes)):
        assert same_bits(got, want)
    # the observation (217) and the mask (514) stay leaves; the rest is one array of words
    assert [x.shape for x in packed.large] == [(6, 217), (6, 514)]
    assert packed.words.dtype == jnp.uint32 and packed.words.shape[0] == 6


def test_words_hold_each_dtype_exactly():
    tree = {"flags": jnp.array([[True] * 30 + [False, True],
                                [False] * 3 + [True] + [False] * 28]),  # 32 bits: a word
            "signed": jnp.array([[-128, -1, 0, 127], [5, -6, 7, -8]], jnp.int8),
            "floats": jnp.array([[-0.0, jnp.inf, 1e-45], [jnp.nan, -2.5, 3.0]], jnp.float32),
            "unsigned": jnp.array([[0xFFFFFFFF, 0x80000000], [1, 0]], jnp.uint32),
            "count": jnp.array([3, -4], jnp.int32)}
    packed = pack(tree)
    assert packed.words.shape == (2, 1 + 1 + 3 + 4 + 2)
    back = unpack(packed)
    for key in tree:
        assert same_bits(back[key], tree[key]), key
    # leaves in the pytree's order (count, flags, ...); booleans: element i in bit i
    assert int(packed.words[0, 1]) == (1 << 31) | ((1 << 30) - 1)
    assert int(packed.words[1, 1]) == 0b1000


def test_more_batch_axes_unpack_as_the_tree_stores_them():
    """mctx keeps embeddings [B, N, ...]: words [B, N, W] unpack to leaves [B, N, ...]."""
    tree = {"a": jnp.arange(2 * 3 * 5, dtype=jnp.int8).reshape(2, 3, 5) - 15,
            "b": jnp.arange(2 * 3 * 40).reshape(2, 3, 40) % 3 == 0}
    packed = pack(tree, batch_ndim=2)
    assert packed.words.shape[:2] == (2, 3)
    back = unpack(packed)
    assert same_bits(back["a"], tree["a"]) and same_bits(back["b"], tree["b"])
    row = unpack(jax.tree.map(lambda x: x[1], packed))  # a row, as mctx gathers a parent
    assert same_bits(row["a"], tree["a"][1]) and same_bits(row["b"], tree["b"][1])


def test_the_small_leaves_are_the_packed_ones():
    tree = (jnp.zeros((4, SMALL), jnp.int32), jnp.zeros((4, SMALL + 1), jnp.int32))
    packed = pack(tree)
    assert packed.words.shape == (4, SMALL) and [x.shape for x in packed.large] == [(4, SMALL + 1)]


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="float16"):
        pack({"x": jnp.zeros((2, 3), jnp.float16)})
    with pytest.raises(ValueError, match="no leaf small enough"):
        pack({"x": jnp.zeros((2, SMALL + 1))})
    packed = pack({"x": jnp.zeros((2, 3), jnp.int32)})
    with pytest.raises(ValueError, match="4 words where the layout has 3"):
        unpack(Packed(jnp.zeros((2, 4), jnp.uint32), packed.large, packed.layout))
