"""adaptive-svt-gap: the joint law of branch labels on short streams against exact
probabilities, the exact stopping rule, the budget left over, and privacy().

Labels per position: 2 = top branch (cost ε2), 1 = middle branch (cost ε1), 0 = ⊥, -1 = not
evaluated. Given the threshold noise η = z, positions are independent (Ding et al. 2019,
Algorithm 2): with x_i = T_i + z − q_i, P(top) = S_ξ(σ + x_i), P(middle) = F_ξ(σ + x_i) S_η(x_i),
P(⊥) = F_ξ(σ + x_i) F_η(x_i); the oracle integrates over z with scipy and enumerates the label
sequences the stopping rule allows (it shares no code with the kernel). Fixed seeds; each
chi-square test (p > 1e-4) fails for a correct implementation with probability 1e-4.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

import svtjax
from tests.test_distribution import _count_rows, chi_square

TRIALS = 100_000


def _scales(eps, k, theta, monotonic, delta=1.0):
    eps0 = theta * eps                       # Algorithm 2, line 1
    eps1 = (1 - theta) * eps / k
    eps2 = eps1 / 2
    f = 1 if monotonic else 2                # footnote 6
    return delta / eps0, f * delta / eps2, f * delta / eps1, 4 * math.sqrt(2) * delta / eps2


def label_sequences(n, k):
    out = []
    for labels in itertools.product((0, 1, 2), repeat=n):
        seq, n1, n2, stopped = [], 0, 0, False
        for lab in labels:
            if stopped:
                seq.append(-1)
                continue
            seq.append(lab)
            n1 += lab == 1
            n2 += lab == 2
            stopped = 2 * n1 + n2 > 2 * (k - 1)
        out.append(tuple(seq))
    return sorted(set(out))


def oracle(eps, k, theta, monotonic, q, t):
    b_rho, b_top, b_mid, sigma = _scales(eps, k, theta, monotonic)
    rho, xi, eta = (stats.laplace(scale=b) for b in (b_rho, b_top, b_mid))
    seqs = label_sequences(len(q), k)
    pat = np.array(seqs)

    def integrand(z):
        x = t + z - q
        p_top = xi.sf(sigma + x)
        p_mid = xi.cdf(sigma + x) * eta.sf(x)
        p_bot = xi.cdf(sigma + x) * eta.cdf(x)
        f = np.where(pat == 2, p_top, np.where(pat == 1, p_mid, np.where(pat == 0, p_bot, 1.0)))
        return rho.pdf(z) * np.prod(f, axis=1)

    kinks = np.unique(np.concatenate([[0.0], q - t, q - t - sigma]))
    edges = [-np.inf, *kinks, np.inf]
    total = sum(integrate.quad_vec(integrand, lo, hi, epsabs=1e-14, epsrel=1e-12)[0]
                for lo, hi in zip(edges[:-1], edges[1:]))
    return dict(zip(seqs, total))


def _labels(out, eps1, eps2):
    answers, cost = np.asarray(out.answers), np.asarray(out.cost)
    labels = np.where(answers < 0, -1, 0)
    labels = np.where(np.isclose(cost, eps1, rtol=1e-9, atol=0) & (answers == 1), 1, labels)
    return np.where(np.isclose(cost, eps2, rtol=1e-9, atol=0) & (answers == 1), 2, labels)


CASES = [
    ("k2-general", 3.0, 2, None, False, np.array([0.0, 4.0, 1.0, 2.5]), 1.0, 1),
    ("k1-monotonic-theta", 4.0, 1, 0.4, True, np.array([3.0, 0.5, 2.0]),
     np.array([0.5, 0.0, 1.0]), 2),
    ("k3-general", 6.0, 3, 0.3, False, np.array([5.0, 0.0, 3.0, 1.0]), 1.0, 3),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_branch_label_distribution(case):
    label, eps, k, theta, monotonic, q, t, seed = case
    mech = svtjax.get("adaptive-svt-gap", epsilon=eps, c=k, theta=theta, monotonic=monotonic)
    theta = mech.theta
    expected = oracle(eps, k, theta, monotonic, q, np.broadcast_to(t, q.shape))
    assert abs(sum(expected.values()) - 1) < 1e-8
    out = svtjax.simulate(mech, q, np.asarray(t, np.float64), trials=TRIALS, seed=seed)
    _, eps1, eps2 = mech.budgets()
    observed = _count_rows(_labels(out, eps1, eps2))
    p, _, _, report = chi_square(expected, observed, TRIALS)
    print(label, f"p={p:.3g}")
    assert p > 1e-4, report
    assert 2 in {v for key in observed for v in key}  # the top branch does occur


def test_wrong_sigma_is_rejected():
    """Power: a mechanism whose top branch never fires (σ = ∞, i.e. svt-gap's law) fails."""
    _, eps, k, theta, monotonic, q, t, _ = CASES[0]
    mech = svtjax.get("adaptive-svt-gap", epsilon=eps, c=k, theta=theta, monotonic=monotonic)
    theta = mech.theta
    expected = oracle(eps, k, theta, monotonic, q, np.broadcast_to(t, q.shape))
    expected_no_top = {key: v for key, v in expected.items() if 2 not in key}
    total = sum(expected_no_top.values())
    out = svtjax.simulate(mech, q, np.float64(t), trials=TRIALS, seed=4)
    _, eps1, eps2 = mech.budgets()
    p, _, _, _ = chi_square({kk: v / total for kk, v in expected_no_top.items()},
                            _count_rows(_labels(out, eps1, eps2)), TRIALS)
    assert p < 1e-4


def test_stops_exactly_and_reports_budget_left():
    """With huge queries every answer takes the top branch (cost ε2 = ε1/2), so the mechanism
    answers 2k − 1 queries before 2·n1 + n2 > 2(k − 1), and leaves ε1/2 unused. k = 2 on four
    queries: three answers, the fourth query not evaluated; the run is k2-general's program
    (same structure, stream length and trials; c and θ are traced)."""
    _, eps, k, theta, monotonic, q, _, _ = CASES[0]
    mech = svtjax.get("adaptive-svt-gap", epsilon=eps, c=k, theta=theta, monotonic=monotonic)
    out = svtjax.simulate(mech, np.full(q.size, 1e6), 0.0, trials=TRIALS, seed=0)
    answers = np.asarray(out.answers)
    assert 2 * k - 1 < q.size
    assert np.all((answers == 1).sum(axis=1) == 2 * k - 1)
    assert np.all(answers[:, 2 * k - 1:] == -1)
    eps0, eps1, eps2 = mech.budgets()
    np.testing.assert_allclose(np.asarray(out.cost)[answers == 1], eps2)
    left = np.asarray(mech.remaining(out))
    np.testing.assert_allclose(left, eps - eps0 - (2 * k - 1) * eps2, rtol=1e-12)
    assert np.all(left > 0)


@pytest.mark.parametrize("monotonic", [False, True])
def test_privacy_and_budgets(monotonic):
    for eps, k in [(0.7, 2), (1.0, 10), (3.0, 22)]:
        mech = svtjax.get("adaptive-svt-gap", epsilon=eps, c=k, monotonic=monotonic)
        assert mech.privacy().epsilon() == pytest.approx(eps, rel=1e-12)
        assert "Theorem 4" in mech.privacy().statement
        eps0, eps1, eps2 = mech.budgets()
        assert eps0 + k * eps1 == pytest.approx(eps, rel=1e-12)  # line 1: θε + k(1−θ)ε/k
        assert eps2 == pytest.approx(eps1 / 2, rel=1e-12)
        x = (k if monotonic else 2 * k) ** (2 / 3)
        assert mech.theta == pytest.approx(1 / (1 + x), rel=1e-12)


def test_bad_theta():
    with pytest.raises(ValueError, match="theta must lie in"):
        svtjax.get("adaptive-svt-gap", epsilon=1.0, c=2, theta=1.5)
