"""noisy-top-k-gap: the law of (pick, gap) against exact probabilities, and its privacy claim.

With n = 2 and k = 1 (Ding et al. 2019, Algorithm 1), the pick is item 0 iff D = q0 + η0 − q1 −
η1 > 0 and the gap is |D|, where D is a shift plus the difference of two independent Lap(b). The
CDF of D is computed by numerical integration with scipy (no svtjax code): the pick frequency is
compared with P(D > 0) (binomial test) and each pick's gaps with the conditional law of |D| (KS
tests). Fixed seeds; each test fails for a correct implementation with probability 1e-4.
"""

import numpy as np
import pytest
from scipy import integrate, stats

import svtjax
from tests.laws import laplace_cdf, laplace_pdf


def _diff_cdf(b: float, shift: float):
    """x -> P(shift + L1 − L2 <= x), L1, L2 ~ Lap(b) independent."""
    pdf, lap_cdf = laplace_pdf(b), laplace_cdf(b)

    def cdf(x):
        f = lambda z: pdf(z) * lap_cdf(x - shift + z)  # noqa: E731  (z = L2)
        edges = [-np.inf, *sorted({-(x - shift), 0.0}), np.inf]
        return sum(integrate.quad(f, lo, hi, limit=200)[0] for lo, hi in zip(edges[:-1],
                                                                               edges[1:]))
    return cdf


def test_pick_and_gap_law_two_items():
    eps, q = 1.0, np.array([1.0, 0.0])
    mech = svtjax.get("noisy-top-k-gap", epsilon=eps, k=1)
    b = 2 * 1 * 1.0 / eps  # line 3: Lap(2k/ε)
    out = svtjax.simulate(mech, q, 0.0, trials=40_000, seed=8)
    picks = np.asarray(out.items)[:, 0]
    gaps = np.asarray(out.values)[:, 0]
    assert np.all(gaps >= 0)
    cdf = _diff_cdf(b, q[0] - q[1])
    p0 = 1 - cdf(0.0)
    assert stats.binomtest(int(np.sum(picks == 0)), picks.size, p0).pvalue > 1e-4
    grid = np.linspace(0, 30 * b, 800)
    table = np.array([cdf(x) for x in grid])
    below = np.array([cdf(-x) for x in grid])
    # pick 0: gap = D | D > 0; pick 1: gap = -D | D < 0
    law0 = lambda x: np.interp(x, grid, (table - (1 - p0)) / p0, right=1.0)  # noqa: E731
    law1 = lambda x: np.interp(x, grid, ((1 - p0) - below) / (1 - p0), right=1.0)  # noqa: E731
    assert stats.kstest(gaps[picks == 0], law0).pvalue > 1e-4
    assert stats.kstest(gaps[picks == 1], law1).pvalue > 1e-4
    # power: the gaps of pick 0 are clearly not those of a mechanism with half the noise
    half = _diff_cdf(b / 2, q[0] - q[1])
    p_half = 1 - half(0.0)
    half_table = np.array([half(x) for x in grid])
    wrong = lambda x: np.interp(x, grid, (half_table - (1 - p_half)) / p_half,  # noqa: E731
                                right=1.0)
    assert stats.kstest(gaps[picks == 0], wrong).pvalue < 1e-4


@pytest.mark.parametrize("monotonic", [False, True])
def test_privacy_and_scale(monotonic):
    for eps, k in [(0.7, 1), (1.0, 5), (2.0, 22)]:
        mech = svtjax.get("noisy-top-k-gap", epsilon=eps, k=k, monotonic=monotonic)
        g = mech.privacy()
        assert g.epsilon() == pytest.approx(eps, rel=1e-12)
        assert "Theorem 2" in g.statement and "Ding" in g.statement
        assert float(mech.scale()) == pytest.approx((1 if monotonic else 2) * k / eps, rel=1e-12)


def test_gaps_telescope_and_need_k_below_n():
    # k = 5 of 8 queries, 40,000 trials: the structure and shape of tests/test_estimators.py's
    # non-monotonic run (one compiled program for both).
    mech = svtjax.get("noisy-top-k-gap", epsilon=1.0, k=5)
    q = np.array([5.0, 1.0, 3.0, 0.0, 2.0, 7.0, 4.0, 6.0])
    out = svtjax.simulate(mech, q, 0.0, trials=40_000, seed=1)
    values = np.asarray(out.values)
    assert values.shape == (40_000, 5) and np.all(values >= 0)
    with pytest.raises(ValueError, match="must be smaller than the number of queries"):
        svtjax.simulate(mech, q[:5], 0.0, trials=2)
