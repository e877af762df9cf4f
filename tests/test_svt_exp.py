"""svt-exp (Liu et al. 2024, Algorithm 2 and Table 3's baselines): answer-vector law against an
exact oracle, privacy() against Theorem 3, parameter handling.

Oracle. ρ is drawn once (no RESAMPLE) and every evaluation draws fresh query noise, so given
ρ = z the answers are independent and

    P(a) = ∫ f_ρ(z) Π_{evaluated p} P(a_p | z) dz,   P(⊤ | z) = P(ν ≥ T_i + r + z − q_i),

where the evaluated positions follow from ``a`` itself (APPEND: pass 1 visits every item, later
passes the items not yet answered ⊤; halt after c ⊤). With RESAMPLE, P(a) is a product of such
integrals over the segments that end at a ⊤. The noise laws are scipy's (Exp(mean 2cΔ/ε2),
Gumbel, Laplace, Gaussian; threshold Laplace(Δ/ε1) or Gaussian), the scales and the split
ε2 = wε1 are written here from the paper (Table 4), and r comes from the paper's definitions:
0, the noise mean, or Eq. 8's maximiser recomputed here by brute force on a grid. Nothing is
shared with the kernel.

Each chi-square test (Pearson, small cells pooled) uses a fixed seed and asserts p > 1e-4, so a
correct implementation fails each with probability 1e-4 (about 1e-3 for the module). The
power check: the optimal-correction simulation must be rejected (p < 1e-4) by the r = 0 oracle,
after checking that the noncentrality gives power > 1 − 1e-6.
"""

from __future__ import annotations

import functools
import itertools
import math
import re

import numpy as np
import pytest
from scipy import integrate, optimize, stats

import svtjax
from svtjax.accounting import PureDP, Unproven
from tests.laws import fast
from tests.test_distribution import _answer_counts, chi_square, noncentrality
from tests.test_distribution_retr import retraversal_vectors

TRIALS = 50_000
ALPHA = 1e-4

# -- the oracle (scipy only, from Liu'24 Algorithm 2, Table 4, Eq. 8) -----------------------

_UNIT_VAR = {"exponential": 1.0, "gumbel": math.pi ** 2 / 6, "laplace": 2.0, "gaussian": 1.0}


def _once(fn):
    """Computes ``fn`` once per test process for each value of its arguments (dicts, arrays
    and numbers, compared by value): several tests read the same oracle, and an optimal
    correction's brute-force search takes seconds. Dict results are returned as copies."""
    cache = {}

    def key(x):
        if isinstance(x, dict):
            return tuple(sorted((k, key(v)) for k, v in x.items()))
        if isinstance(x, np.ndarray):
            return (x.shape, x.dtype.str, x.tobytes())
        return x

    @functools.wraps(fn)
    def wrapper(*args):
        k = tuple(key(a) for a in args)
        if k not in cache:
            cache[k] = fn(*args)
        value = cache[k]
        return dict(value) if isinstance(value, dict) else value
    return wrapper


@_once
def paper_laws(params):
    """(threshold law, query law, r) of one configuration, from the paper."""
    eps, c, delta_sens = params["epsilon"], params["c"], params.get("sensitivity", 1.0)
    noise = params.get("noise", "exponential")
    thr = "gaussian" if noise == "gaussian" else "laplace"
    k = 1.0 if params.get("monotonic", False) else 2.0
    w = (_UNIT_VAR[noise] * k * k * c * c / _UNIT_VAR[thr]) ** (1 / 3)  # Table 4 / Eq. 6
    eps1, eps2 = eps / (1 + w), eps * w / (1 + w)
    s = math.sqrt(2 * math.log(1.25 / params["delta"])) if noise == "gaussian" else 1.0
    b, scale = s * delta_sens / eps1, s * k * c * delta_sens / eps2  # Alg 2 lines 2 and 6
    rho = stats.norm(scale=b) if thr == "gaussian" else stats.laplace(scale=b)
    nu = {"exponential": stats.expon(scale=scale), "gumbel": stats.gumbel_r(scale=scale),
          "laplace": stats.laplace(scale=scale), "gaussian": stats.norm(scale=scale)}[noise]
    corr = params.get("correction", "optimal")
    if corr == "none":
        r = 0.0
    elif corr == "mean":
        r = float(nu.mean())
    elif corr == "optimal":
        r = brute_force_r(nu, rho, params["correction_k"], params.get("alpha", 0.0))
    else:
        r = float(corr)
    return rho, nu, r


def brute_force_r(nu, rho, k, alpha):
    """Eq. 8-9 by quadrature for Γ and a bounded scalar search (no svtjax code)."""
    hi = float(nu.ppf(0.999999) + rho.ppf(0.999999))
    lo = float(rho.ppf(1e-6))
    nu, rho = fast(nu), fast(rho)  # scipy's formulas without a frozen distribution's overhead

    def gamma(z):  # P(ν − ρ ≤ z)
        return integrate.quad(lambda y: rho.pdf(y) * nu.cdf(z + y), -np.inf, np.inf,
                              epsabs=1e-13, limit=200)[0]

    def neg_log_p(r):
        return -(k * np.log(gamma(r + alpha)) + np.log(1 - gamma(r - alpha)))

    return float(optimize.minimize_scalar(neg_log_p, bounds=(lo, hi),
                                          method="bounded", options={"xatol": 1e-9}).x)


def _integrate(patterns, q, t, rho, nu, r):
    """∫ f_ρ(z) Π P(a_p | z) dz for each row of ``patterns`` (positions with -1 skipped)."""
    top, bot = patterns == 1, patterns == 0
    rho, nu = fast(rho), fast(nu)  # scipy's formulas without a frozen distribution's overhead

    def integrand(z):
        x = t + r + z - q
        factors = np.where(top, nu.sf(x), np.where(bot, nu.cdf(x), 1.0))
        return rho.pdf(z) * np.prod(factors, axis=1)

    kinks = np.unique(np.concatenate([[0.0], q - t - r]))
    edges = [-np.inf, *kinks, np.inf]
    total = np.zeros(len(patterns))
    for lo, hi in zip(edges[:-1], edges[1:]):
        total += integrate.quad_vec(integrand, lo, hi, epsabs=1e-14, epsrel=1e-12)[0]
    return total


@_once
def oracle(params, q, t, passes):
    """Exact P(answer vector over all passes) of svt-exp without RESAMPLE."""
    rho, nu, r = paper_laws(params)
    q, t = np.asarray(q, float), np.broadcast_to(np.asarray(t, float), np.shape(q))
    vectors = retraversal_vectors(len(q), passes, params["c"])
    probs = _integrate(np.array(vectors), np.tile(q, passes), np.tile(t, passes), rho, nu, r)
    return dict(zip(vectors, probs))


@_once
def resample_oracle(params, q, t):
    """One pass with RESAMPLE: a product over segments that end at a ⊤ (fresh ρ each)."""
    rho, nu, r = paper_laws(params)
    q, t = np.asarray(q, float), np.broadcast_to(np.asarray(t, float), np.shape(q))
    n, c = len(q), params["c"]
    out = {}
    for bits in itertools.product((0, 1), repeat=n):
        a, ones = [], 0
        for bit in bits:
            a.append(-1 if ones >= c else bit)
            ones += bit if ones < c else 0
        a = tuple(a)
        if a in out:
            continue
        prob, start = 1.0, 0
        for i, ai in enumerate(a + (-1,)):
            if i == n or ai == -1 or ai == 1:
                stop = min(i + 1, n) if ai == 1 else i
                if stop > start:
                    pat = np.full((1, n), -1)
                    pat[0, start:stop] = a[start:stop]
                    prob *= _integrate(pat, q, t, rho, nu, r)[0]
                start = stop
                if ai == -1 or i == n:
                    break
        out[a] = prob
    return out


Q3 = np.array([0.0, 1.5, 3.0])
T3 = np.array([1.0, 0.5, 1.5])

CASES = [
    # (id, params, passes, queries, thresholds, seed): every query-noise family with r ≠ 0 and
    # APPEND, plus a monotonic single-pass case without correction. The two exponential APPEND
    # cases differ only in traced values (ε, c, r and the thresholds; the correction kind only
    # sets r on the host), so with the same number of passes they run one compiled program.
    ("exp-optimal-append", dict(epsilon=4.0, c=2, correction_k=3, append=True), 3, Q3, T3, 302),
    ("exp-mean-append", dict(epsilon=3.0, c=1, correction="mean", append=True), 3, Q3, 1.0,
     303),
    ("exp-none-monotonic", dict(epsilon=2.0, c=2, correction="none", monotonic=True), 1, Q3,
     T3, 304),
    ("gumbel-mean-append", dict(epsilon=4.0, c=2, noise="gumbel", correction="mean",
                                append=True), 2, Q3, 1.0, 305),
    ("laplace-value-append", dict(epsilon=3.0, c=2, noise="laplace", correction=1.25,
                                  append=True), 2, Q3, 1.0, 309),
    ("gaussian-optimal-append", dict(epsilon=6.0, c=2, noise="gaussian", correction_k=4,
                                     delta=0.05, append=True), 2, Q3, T3, 308),
]


def _mech(params, passes):
    extra = {"max_passes": passes} if params.get("append") else {}
    return svtjax.get("svt-exp", **params, **extra)


def _sim(mech, q, t, seed, trials=TRIALS):
    return svtjax.simulate(mech, np.asarray(q, np.float64), np.asarray(t, np.float64),
                           trials=trials, seed=seed)


def test_oracles_sum_to_one():
    for _, params, passes, q, t, _ in CASES:
        assert abs(sum(oracle(params, q, t, passes).values()) - 1) < 1e-8
    params = dict(epsilon=3.0, c=2, correction_k=3, resample=True)
    assert abs(sum(resample_oracle(params, Q3, T3).values()) - 1) < 1e-8


def test_correction_value_matches_brute_force():
    """The host-computed r of every optimal/mean case equals the paper's definition."""
    for _, params, passes, *_ in CASES:
        _, _, r = paper_laws(params)
        got = float(_mech(params, passes).correction_value)
        assert got == pytest.approx(r, rel=1e-6, abs=1e-9), (params, got, r)
        if params.get("correction", "optimal") != "none":
            assert r != 0.0


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_answer_vector_distribution(case):
    label, params, passes, q, t, seed = case
    out = _sim(_mech(params, passes), q, t, seed)
    assert out.answers.shape == (TRIALS, passes * len(q))
    p, stat, df, report = chi_square(oracle(params, q, t, passes), _answer_counts(out), TRIALS)
    print(f"{label}: p={p:.3g} chi2={stat:.1f} df={df}")
    assert df >= 3, report
    assert p > ALPHA, f"{label}\n{report}"


def test_resample_distribution():
    params = dict(epsilon=3.0, c=2, correction_k=3, resample=True)
    out = _sim(svtjax.get("svt-exp", **params), Q3, T3, seed=310)
    p, stat, df, report = chi_square(resample_oracle(params, Q3, T3), _answer_counts(out),
                                     TRIALS)
    print(f"resample: p={p:.3g} df={df}")
    assert df >= 3 and p > ALPHA, report


def test_append_items_revisit_negatives_in_order():
    """Outcome.items: pass p holds the items still ⊥ after pass p − 1, in the same order.

    The simulation is exp-optimal-append's (three passes, c = 2, the same seed and trials):
    its program and its run are test_answer_vector_distribution's."""
    _, params, passes, q, t, seed = CASES[0]
    out = _sim(_mech(params, passes), q, t, seed)
    n, c = len(q), params["c"]
    items = np.asarray(out.items).reshape(TRIALS, passes, n)
    answers = np.asarray(out.answers).reshape(TRIALS, passes, n)
    evaluated = answers >= 0
    # an evaluated position holds its item, in stream order; the others hold -1
    np.testing.assert_array_equal(items, np.where(evaluated, np.arange(n), -1))
    # no item is evaluated again after a ⊤ in an earlier pass
    chosen_before = np.cumsum(answers == 1, axis=1) - (answers == 1)
    assert not np.any(evaluated & (chosen_before > 0))
    assert np.all((answers == 1).sum(axis=(1, 2)) <= c)
    # later passes do revisit the items still ⊥ (the check above is not vacuous)
    assert evaluated[:, passes - 1].any()


def test_optimal_correction_is_detected():
    """Power: the optimal-r simulation is rejected by the uncorrected (r = 0) law."""
    label, params, passes, q, t, seed = CASES[0]
    wrong = oracle({**params, "correction": "none"}, q, t, passes)
    right = oracle(params, q, t, passes)
    lam = noncentrality(right, wrong, TRIALS)
    df = len(wrong) - 1
    assert stats.ncx2.sf(stats.chi2.isf(ALPHA, df), df, lam) > 1 - 1e-6, lam
    out = _sim(_mech(params, passes), q, t, seed)
    p, *_ = chi_square(wrong, _answer_counts(out), TRIALS)
    assert p < ALPHA


# -- privacy() against Theorem 3 --------------------------------------------------------------

EPSILONS = [0.05, 0.5, 1.0, 3.7]
CS = [1, 2, 5, 50]
SENS = 2.5


def _eps_from_scales(mech):
    """ε1 + ε2 read off the scales the kernel uses: b = Δ/ε1, 1/λ = 2cΔ/ε2 (cΔ/ε2 monotonic)."""
    s = {name: float(noise.scale_value) for name, noise in mech.noises().items()}
    k = 1.0 if mech.monotonic else 2.0
    eps1 = SENS / s["threshold"]
    eps2 = k * float(mech.c) * SENS / s["query"]
    return eps1, eps2


@pytest.mark.parametrize("noise", ["exponential", "gumbel", "laplace"])
@pytest.mark.parametrize("monotonic", [False, True])
def test_privacy_theorem3_no_resample(noise, monotonic):
    for eps in EPSILONS:
        for c in CS:
            mech = svtjax.get("svt-exp", epsilon=eps, c=c, sensitivity=SENS, noise=noise,
                              correction="mean", monotonic=monotonic, append=True)
            g = mech.privacy()
            assert isinstance(g, PureDP) and g.private
            assert g.epsilon() == pytest.approx(eps, rel=1e-12)
            e1, e2 = _eps_from_scales(mech)
            assert e1 + e2 == pytest.approx(eps, rel=1e-5)
            assert re.search(r"\bTheorem 3\b", g.statement) and "Liu" in g.statement
            assert ("Theorem 7" in g.statement) == monotonic
            # Table 4's split (Eq. 6 minimiser) for this family
            w = {"exponential": (math.sqrt(2) * c) ** (2 / 3),
                 "gumbel": (math.pi * c / math.sqrt(3)) ** (2 / 3),
                 "laplace": (2 * c) ** (2 / 3)}[noise]
            if monotonic:
                w = w / 2 ** (2 / 3)
            assert e2 / e1 == pytest.approx(w, rel=1e-5)


def test_privacy_theorem3_resample():
    for eps in EPSILONS:
        for c in CS:
            mech = svtjax.get("svt-exp", epsilon=eps, c=c, sensitivity=SENS, correction_k=10,
                              resample=True)
            e1, e2 = (float(x) for x in mech.budgets())
            g = mech.privacy()
            assert isinstance(g, PureDP)
            assert g.epsilon() == pytest.approx(c * e1 + e2, rel=1e-12)
            assert "(cε1, ε2)" in g.statement and "Theorem 3" in g.statement
            # per-⊤ costs: c ⊤ plus the up-front ε1 add up to cε1 + ε2
            assert c * float(mech.top_cost()) + e1 == pytest.approx(c * e1 + e2, rel=1e-5)


def test_privacy_gaussian_is_unproven_with_nominal_eps():
    mech = svtjax.get("svt-exp", epsilon=1.0, c=5, noise="gaussian", correction="none",
                      delta=1e-4, sensitivity=SENS)
    g = mech.privacy()
    assert isinstance(g, Unproven) and not g.private
    assert g.nominal == pytest.approx(1.0)
    s = math.sqrt(2 * math.log(1.25 / 1e-4))
    sc = {name: float(noise.scale_value) for name, noise in mech.noises().items()}
    e1, e2 = (float(x) for x in mech.budgets())
    assert sc["threshold"] == pytest.approx(s * SENS / e1, rel=1e-5)
    assert sc["query"] == pytest.approx(s * 2 * 5 * SENS / e2, rel=1e-5)
    assert e2 / e1 == pytest.approx(10 ** (2 / 3), rel=1e-9)


def test_explicit_allocation_and_rules():
    mech = svtjax.get("svt-exp", allocation=(0.2, 0.6), c=3, correction="none")
    assert float(mech.epsilon) == pytest.approx(0.8)
    assert mech.privacy().epsilon() == pytest.approx(0.8)
    mech = svtjax.get("svt-exp", epsilon=1.0, c=50, allocation="1:(2c)^(2/3)",
                      correction="mean", monotonic=True)
    # Table 5's "Mean" row: 52.32/ε (cΔ/ε2 with the Laplace split)
    assert float(mech.correction_value) == pytest.approx(52.32, abs=0.005)


def test_parameter_errors():
    with pytest.raises(TypeError, match="correction_k"):
        svtjax.get("svt-exp", epsilon=1.0, c=2)
    with pytest.raises(TypeError, match="delta"):
        svtjax.get("svt-exp", epsilon=1.0, c=2, noise="gaussian", correction="none")
    with pytest.raises(ValueError, match="delta"):
        svtjax.get("svt-exp", epsilon=1.0, c=2, correction="none", delta=0.1)
    with pytest.raises(ValueError, match="append"):
        svtjax.get("svt-exp", epsilon=1.0, c=2, correction="none", max_passes=3)
    with pytest.raises(ValueError, match="noise"):
        svtjax.get("svt-exp", epsilon=1.0, c=2, noise="cauchy", correction="none")
    with pytest.raises(ValueError, match="correction"):
        svtjax.get("svt-exp", epsilon=1.0, c=2, correction="median")
    with pytest.raises(ValueError, match="^alpha"):
        svtjax.get("svt-exp", epsilon=1.0, c=2, correction_k=3, alpha=-1.0)


def test_epsilon_sweep_compiles_once():
    """ε (and with it the host-computed optimal r) is traced: an ε sweep reuses one compiled
    chunk. The sweep has exp-optimal-append's structure and shape, so its program is that
    case's; whether the case ran first in this process or not, the three runs add at most one
    entry to the jit cache."""
    from svtjax import _driver

    label, params, passes, q, t, seed = CASES[0]
    base = _driver.run_chunk._cache_size()
    sizes = []
    for eps in (0.1, 0.5, 2.0):
        _sim(_mech({**params, "epsilon": eps}, passes), q, t, seed)
        sizes.append(_driver.run_chunk._cache_size())
    assert sizes[0] <= base + 1 and sizes == sizes[:1] * 3, (base, sizes)

