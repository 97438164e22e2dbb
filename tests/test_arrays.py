"""The array helpers the rules are written with (trictrac_jax/arrays.py), on hand-set values."""
import jax
import jax.numpy as jnp
import numpy as np

from trictrac_jax import arrays as A


def test_stack_rows_is_a_stack_of_values_of_one_shape():
    """One game (scalars), games last, and a scalar broadcast against games."""
    assert np.array_equal(A.stack_rows([jnp.int8(3), jnp.int8(-2), jnp.int8(5)]), [3, -2, 5])
    games = [jnp.array([1, 2, 3]), jnp.array([4, 5, 6])]
    assert np.array_equal(A.stack_rows(games), np.stack([np.array(g) for g in games]))
    assert np.array_equal(A.stack_rows([jnp.array([7, 8]), 9]), [[7, 8], [9, 9]])
    assert A.stack_rows([jnp.int8(1), jnp.int8(2)]).dtype == jnp.int8


def test_of_colour_reads_a_colour_s_entry_as_an_index_would():
    """One game, a batch under `jax.vmap` (each game its own colour), pairs of entries with
    trailing axes."""
    import jax
    points = jnp.array([5, 9])
    assert int(A.of_colour(points, jnp.int32(0))) == 5
    assert int(A.of_colour(points, jnp.int32(1))) == 9
    pairs = jnp.array([[1, 2], [3, 4], [5, 6]])
    colours = jnp.array([1, 0, 1])
    assert np.array_equal(jax.vmap(A.of_colour)(pairs, colours), [2, 3, 6])
    rows = jnp.arange(2 * 3).reshape(2, 3)
    assert np.array_equal(A.of_colour(rows, jnp.int32(1)), [3, 4, 5])


def test_legal_actions_are_counted_on_the_words():
    """`count_true_by_words` against a plain count: Trues at the words' edges, a full mask,
    an empty one, one game and three games last."""
    masks = np.zeros((3, 514), bool)
    masks[0, [0, 31, 32, 63, 64, 300, 511, 512, 513]] = True
    masks[1] = True
    for mask in masks:
        assert int(A.count_true_by_words(jnp.asarray(mask))) == mask.sum()
    assert np.array_equal(A.count_true_by_words(jnp.asarray(masks.T)), masks.sum(1))


def test_uniform_below_is_the_high_word_of_one_draw_times_n():
    """`uniform_below` is floor(draw x n / 2**32) of one 32-bit draw, computed in 32 bits:
    at the draws' extremes and for n up to 2**16 - 1, as Python's integers compute it; from
    keys, within 0..n-1 and 0 for n = 0."""
    draws = [0, 1, 0xFFFF, 0x10000, 0xFFFF0000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]
    for n in (0, 1, 2, 36, 514, 0xFFFF):
        got = A._high_word_of_product(jnp.asarray(draws, jnp.uint32), n)
        assert [int(v) for v in got] == [d * n >> 32 for d in draws], n
    keys = jax.random.split(jax.random.PRNGKey(3), 2_000)
    for n in (0, 1, 36, 514):
        drawn = np.asarray(jax.vmap(lambda k: A.uniform_below(k, n))(keys))
        bits = np.asarray(jax.vmap(lambda k: jax.random.bits(k, (), jnp.uint32))(keys))
        assert np.array_equal(drawn, (bits.astype(np.uint64) * n) >> 32), n
        assert drawn.min() >= 0 and drawn.max() <= max(n - 1, 0), n
