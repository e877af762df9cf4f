"""``svtjax._bits``: rank queries on packed bits equal the cumulative count they replace."""

import jax
import numpy as np
import pytest

from svtjax import _bits


def _nth_reference(row: np.ndarray, r: int) -> int:
    """Index of the r-th True of ``row`` (1-based), W when there are fewer, -1 for r <= 0."""
    hits = np.flatnonzero(row)
    if r <= 0:
        return -1
    return int(hits[r - 1]) if r <= hits.size else row.size


@pytest.mark.parametrize("width", [0, 1, 5, 31, 32, 33, 64, 100, 256])
def test_nth_true_matches_the_cumulative_count(width):
    rng = np.random.default_rng(width)
    x = rng.random((3, 200, width)) < rng.choice([0.02, 0.3, 0.9], size=(3, 1, 1))
    x = x.reshape(600, width)
    r = rng.integers(-2, width + 3, 600)
    ranks = rng.integers(-2, width + 3, (600, 7))  # several ranks per row (svtjax.selected's use)
    got, many = jax.device_get(jax.jit(lambda x, r, k: (  # both in one program
        _bits.nth_true(x, r), _bits.nth_packed(*_bits.pack(x), k, width)))(x, r, ranks))
    np.testing.assert_array_equal(got, [_nth_reference(a, b) for a, b in zip(x, r)])
    # the cut-off mask it stands for: positions with fewer than r True strictly before them
    below = np.arange(width) <= got[:, None]
    np.testing.assert_array_equal(below, (np.cumsum(x, axis=1) - x) < r[:, None])
    np.testing.assert_array_equal(many, [[_nth_reference(a, b) for b in bb]
                                         for a, bb in zip(x, ranks)])
