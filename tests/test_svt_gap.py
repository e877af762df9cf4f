"""svt-gap's released gaps against their exact law, and its privacy claim.

Given ⊤ on a single query, the released gap is γ = q + ν − (T + ρ) conditioned on γ ≥ 0, with
ν ~ Lap(b_ν) and ρ ~ Lap(b_ρ) independent (Ding et al. 2019, Algorithm 2 with σ = ∞). Its CDF
is computed here by numerical integration with scipy (no svtjax code) and compared by a KS test
(fixed seed; p > 1e-4 fails with probability 1e-4 for a correct implementation). The answer
vectors' law is tested with the other SVT variants in ``tests/test_distribution.py``.
"""

import numpy as np
import pytest
from scipy import integrate, stats

import svtjax
from tests.laws import laplace_cdf, laplace_pdf


def _gap_cdf(b_nu, b_rho, shift):
    """CDF of D = shift + ν − ρ conditioned on D ≥ 0, tabulated on a grid."""
    nu_cdf, rho_pdf = laplace_cdf(b_nu), laplace_pdf(b_rho)

    def cdf_d(x):  # P(shift + ν − ρ ≤ x) = ∫ f_ρ(z) F_ν(x − shift + z) dz
        f = lambda z: rho_pdf(z) * nu_cdf(x - shift + z)  # noqa: E731
        edges = [-np.inf, *sorted({-(x - shift), 0.0}), np.inf]  # kinks of F_ν and f_ρ
        return sum(integrate.quad(f, lo, hi, limit=200)[0]
                   for lo, hi in zip(edges[:-1], edges[1:]))

    base = cdf_d(0.0)
    grid = np.linspace(0, 12 * (b_nu + b_rho), 600)
    table = np.array([(cdf_d(x) - base) / (1 - base) for x in grid])
    return lambda x: np.interp(x, grid, table, right=1.0)


def test_gap_law_single_query():
    eps, c = 1.0, 1
    mech = svtjax.get("svt-gap", epsilon=eps, c=c, monotonic=True)
    eps1, eps2, _ = (float(x) for x in mech.budgets())
    # The query is the first of a 16-query stream, always evaluated, so its answer and gap have
    # the single-query law whatever follows; 60,000 trials as three runs of 20,000 with the
    # stream length and trials of tests/test_estimators.py's svt-gap runs (c is traced: one
    # compiled program for all of them).
    q = np.concatenate([[0.5], np.linspace(-3.0, 3.0, 15)])
    runs = [svtjax.simulate(mech, q, 0.0, trials=20_000, seed=seed) for seed in (3, 4, 5)]
    answers = np.concatenate([np.asarray(out.answers)[:, 0] for out in runs])
    values = np.concatenate([np.asarray(out.values)[:, 0] for out in runs])
    top = answers == 1
    gaps = values[top]
    assert answers.size == 60_000 and np.all(answers >= 0)
    assert np.all(np.isnan(values[~top]))
    assert np.all(gaps >= 0)
    cdf = _gap_cdf(c / eps2, 1 / eps1, 0.5)  # monotonic: ν ~ Lap(cΔ/ε2); ρ ~ Lap(Δ/ε1)
    p = stats.kstest(gaps, cdf).pvalue
    print(f"KS p={p:.3g} on {gaps.size} gaps")
    assert p > 1e-4, p
    # power: the gap of a query half a unit higher has a visibly different law
    wrong = _gap_cdf(c / eps2, 1 / eps1, 1.5)
    assert stats.kstest(gaps, wrong).pvalue < 1e-4


@pytest.mark.parametrize("monotonic", [False, True])
def test_svt_gap_privacy_and_noise_match_svt_s(monotonic):
    for eps, c in [(0.7, 2), (1.0, 10), (3.0, 22)]:
        gap = svtjax.get("svt-gap", epsilon=eps, c=c, monotonic=monotonic)
        plain = svtjax.get("svt-s", epsilon=eps, c=c, monotonic=monotonic)
        g = gap.privacy()
        assert g.epsilon() == pytest.approx(eps, rel=1e-12)
        assert "Theorem 4" in g.statement and "Ding" in g.statement
        assert gap.noises() == plain.noises()
        # default split: 1:k^(2/3) monotonic, 1:(2k)^(2/3) otherwise (Ding'19 §6.2)
        e1, e2, _ = (float(x) for x in gap.budgets())
        x = (c if monotonic else 2 * c) ** (2 / 3)
        assert e2 / e1 == pytest.approx(x, rel=1e-12)


def test_svt_gap_rejects_eps3():
    with pytest.raises(ValueError, match="takes no eps3"):
        svtjax.get("svt-gap", epsilon=1.0, c=2, eps3=0.2)
