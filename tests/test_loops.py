"""The compacting block loop (svtjax._loops): compaction never changes a row's result."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from svtjax._loops import MIN_LEVEL, bucket_sizes, compacting_block_loop


@pytest.mark.parametrize("batch", [1, 15, 16, 128, 129, 1000, 10**6])
def test_bucket_sizes_shrink_by_the_factor_and_stop_at_the_narrowest_level(batch):
    sizes = bucket_sizes(batch)
    assert sizes[0] == batch
    for wide, narrow in zip(sizes, sizes[1:]):
        assert narrow == -(-wide // 8) and narrow >= MIN_LEVEL
    assert -(-sizes[-1] // 8) < MIN_LEVEL  # one more level would be too narrow


def test_bucket_sizes_without_a_narrowest_level_go_down_to_the_factor():
    assert bucket_sizes(100, min_level=1) == [100, 13, 2]
    assert bucket_sizes(100) == [100]
    assert bucket_sizes(1000) == [1000, 125, 16]


@pytest.mark.parametrize("factor,min_level,batch", [(2, 1, 12), (8, 1, 40), (8, 16, 200),
                                                     (3, 4, 40)])
def test_compacted_rows_equal_the_plain_loop(factor, min_level, batch, monkeypatch):
    """Rows halt at random blocks, and three stragglers at the last three blocks, so that every
    level runs (checked on the host: at some block the running rows fit the level and not the
    next); every row's count and sum equal a loop without compaction. Each level is a copy
    of the loop in the program: down to single rows (``min_level`` 1) 12 rows give five levels
    at factor 2 (sizes rounded up: 12, 6, 3, 2, 1) and 40 rows three at factor 8; 40 rows give
    three at factor 3 down to 4 rows, and a narrowest level of 16 needs 200 rows for two."""
    import svtjax._loops as loops

    num_blocks = 40
    sizes = bucket_sizes(batch, factor, min_level)
    assert len(sizes) >= 2
    rng = np.random.default_rng(5)
    stop = rng.geometric(0.3, batch).clip(max=num_blocks - 3)
    stop[rng.choice(batch, 3, replace=False)] = num_blocks - np.arange(3)
    running = (stop[None, :] > np.arange(num_blocks)[:, None]).sum(axis=1)  # rows, per block
    for size, below in zip(sizes, sizes[1:] + [0]):  # each level runs some block
        assert np.any((below < running) & (running <= size)), (size, running)
    gains = rng.normal(size=(batch, 3)).astype(np.float32)

    def body(b, rows, work):
        count, total, end = rows
        go = count < end
        return (count + go, total + jnp.where(go[:, None], work * (b + 1), 0), end), work

    def run(end, work):
        rows = (jnp.zeros(batch, jnp.int32), jnp.zeros((batch, 3), jnp.float32), end)
        return compacting_block_loop(body, lambda r: r[0] < r[2], rows, work, num_blocks,
                                     factor=factor)

    monkeypatch.setattr(loops, "bucket_sizes", lambda b, f: bucket_sizes(b, f, min_level))
    # host arrays into the jitted loop (jnp.asarray would compile a conversion program each)
    count, total, _ = jax.jit(run)(stop.astype(np.int32), gains)
    want_total = np.stack([gains[i] * np.arange(1, s + 1).sum() for i, s in enumerate(stop)])
    np.testing.assert_array_equal(np.asarray(count), stop)
    np.testing.assert_allclose(np.asarray(total), want_total, rtol=1e-6)
