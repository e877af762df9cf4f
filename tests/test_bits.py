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


WIDTHS = (0, 1, 5, 31, 32, 33, 64, 100, 256)


def _inputs(width: int):
    """600 rows of ``width`` bits (three densities), a rank per row and 7 ranks per row."""
    rng = np.random.default_rng(width)
    x = rng.random((3, 200, width)) < rng.choice([0.02, 0.3, 0.9], size=(3, 1, 1))
    x = x.reshape(600, width)
    r = rng.integers(-2, width + 3, 600)
    ranks = rng.integers(-2, width + 3, (600, 7))  # several ranks per row (svtjax.selected's use)
    return x, r, ranks


@pytest.fixture(scope="module")
def ranked():
    """For every width of :data:`WIDTHS`: its inputs, ``nth_true`` of the rank and
    ``nth_packed`` of the 7 ranks, all computed in one compiled program."""
    inputs = {w: _inputs(w) for w in WIDTHS}
    outputs = jax.device_get(jax.jit(lambda inputs: {w: (  # every width in one program
        _bits.nth_true(x, r), _bits.nth_packed(*_bits.pack(x), k, w))
        for w, (x, r, k) in inputs.items()})(inputs))
    return {w: inputs[w] + outputs[w] for w in WIDTHS}


@pytest.mark.parametrize("width", WIDTHS)
def test_nth_true_matches_the_cumulative_count(ranked, width):
    x, r, ranks, got, many = ranked[width]
    np.testing.assert_array_equal(got, [_nth_reference(a, b) for a, b in zip(x, r)])
    # the cut-off mask it stands for: positions with fewer than r True strictly before them
    below = np.arange(width) <= got[:, None]
    np.testing.assert_array_equal(below, (np.cumsum(x, axis=1) - x) < r[:, None])
    np.testing.assert_array_equal(many, [[_nth_reference(a, b) for b in bb]
                                         for a, bb in zip(x, ranks)])
