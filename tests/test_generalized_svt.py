"""generalized-svt and stagewise-svt (Zhu & Wang 2020, Algorithms 2-3): exact answer-vector laws,
privacy() against the paper's bounds, input errors, no retrace.

CRN equivalence against ``svtjax.reference.generalized`` runs in tests/test_equivalence.py from
the ``tests/cases.py`` entries (Gaussian / Laplace / mixed noise, RESAMPLE, k_max, stage-wise).

Distribution: for short streams (n = 6) the exact probability of every answer vector is

    P(a) = Π_{segments S of a} ∫ f_ρ(z) Π_{i∈S, a_i=⊤} P(q_i + ν ≥ T_i + z)
                                        Π_{i∈S, a_i=⊥} P(q_i + ν < T_i + z) dz,

a segment being a run of positions sharing one threshold noise: the whole run for Algorithm 2,
split after every ⊤ with RESAMPLE, and after every stage end for Algorithm 3 (c̃ ⊤ in the stage
or k′_max positions). The oracle walks every bit string through the algorithm's stopping rules
(written here from the pseudo-code, numpy/scipy only), integrates each distinct segment pattern
with ``scipy.integrate.quad_vec`` (kinks of Laplace densities as breakpoints) and must sum to 1
within 1e-8. 10^5 simulated trials per case are compared with Pearson's chi-square
(``tests/test_distribution.chi_square``, small cells pooled), asserting p > 1e-4.

Failure rate: fixed seeds (not chosen by looking at outcomes); each acceptance test fails with
probability ~1e-4 under a correct implementation, 5e-4 for the module's 5. The rejection test
(a stage-wise run that does not refresh the threshold, i.e. generalized-svt with the same c) first
checks that the chi-square non-centrality gives power > 1 − 1e-6 at level 1e-4.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

import svtjax
from svtjax import accounting as acc
from svtjax.noise import Gaussian, Laplace
from tests.laws import fast
from tests.test_distribution import _count_rows, chi_square, noncentrality

ALPHA = 1e-4
TRIALS = 100_000
Q6 = np.array([0.0, 1.0, 2.0, 1.5, 0.5, 1.0])
T6 = np.array([1.0, 0.5, 1.5, 1.0, 0.0, 2.0])


# -- the oracle ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Rules:
    """Algorithm 2 (stage_c None) or Algorithm 3: the stopping and refresh rules."""

    c: int
    k_max: int | None = None  # Algorithm 2: stream cap; Algorithm 3: per-stage cap k′_max
    resample: bool = False
    stage_c: int | None = None  # c′ (Algorithm 3)


def walk(bits, rules: Rules):
    """Runs the rules on "would be ⊤" bits: (answers with -1 after halting, segments)."""
    n = len(bits)
    answers = [-1] * n
    segments, current = [], []
    count = 0
    if rules.stage_c is None:  # Algorithm 2
        for i in range(n if rules.k_max is None else min(n, rules.k_max)):
            answers[i] = bits[i]
            current.append(i)
            if bits[i]:
                count += 1
                if rules.resample:
                    segments.append(current)
                    current = []
                if count >= rules.c:
                    break
    else:  # Algorithm 3
        stages = math.ceil(rules.c / rules.stage_c)
        pos = 0
        for ell in range(1, stages + 1):
            c_tilde = rules.c - rules.stage_c * (stages - 1) if ell == stages else rules.stage_c
            in_stage = 0
            i = 0
            while pos < n and (rules.k_max is None or i < rules.k_max):
                answers[pos] = bits[pos]
                current.append(pos)
                pos += 1
                i += 1
                if bits[pos - 1]:
                    in_stage += 1
                    if rules.resample or in_stage >= c_tilde:
                        segments.append(current)
                        current = []
                    if in_stage >= c_tilde:
                        break
            if current:
                segments.append(current)
                current = []
            if pos >= n:
                break
    if current:
        segments.append(current)
    return tuple(answers), [tuple(s) for s in segments if s]


def _dist(noise):
    if isinstance(noise, Gaussian):
        return stats.norm(scale=float(noise.sigma)), []
    return stats.laplace(scale=float(noise.scale)), [0.0]


def _segment_prob(seg, answers, q, t, rho_noise, nu_noise):
    rho, rho_kinks = _dist(rho_noise)
    nu, nu_kinks = _dist(nu_noise)
    rho, nu = fast(rho), fast(nu)  # scipy's formulas without a frozen distribution's overhead
    idx = np.array(seg)
    top = np.array([answers[i] == 1 for i in seg])

    def integrand(z):
        x = t[idx] + z - q[idx]
        return rho.pdf(z) * np.prod(np.where(top, nu.sf(x), nu.cdf(x)))

    kinks = sorted(set(rho_kinks) | {float(k + d) for k in nu_kinks for d in q[idx] - t[idx]})
    edges = [-np.inf, *kinks, np.inf]
    return sum(integrate.quad(integrand, lo, hi, epsabs=1e-13, epsrel=1e-11, limit=200)[0]
               for lo, hi in zip(edges[:-1], edges[1:]))


def oracle(rules: Rules, q, t, rho_noise, nu_noise) -> dict:
    q = np.asarray(q, float)
    t = np.broadcast_to(np.asarray(t, float), q.shape)
    cache: dict = {}
    probs: dict = {}
    for bits in itertools.product((0, 1), repeat=q.shape[0]):
        answers, segments = walk(bits, rules)
        if answers in probs:
            continue
        p = 1.0
        for seg in segments:
            key = (seg, tuple(answers[i] for i in seg))
            if key not in cache:
                cache[key] = _segment_prob(seg, answers, q, t, rho_noise, nu_noise)
            p *= cache[key]
        probs[answers] = p
    return probs


# -- cases -----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DistCase:
    id: str
    name: str
    params: dict
    rules: Rules
    thresholds: object
    seed: int


CASES = [
    DistCase("gaussian-c2-kmax5", "generalized-svt",
             {"c": 2, "k_max": 5, "threshold_noise": Gaussian(0.8), "query_noise": Gaussian(1.2)},
             Rules(c=2, k_max=5), 1.0, 101),
    DistCase("gaussian-threshold-laplace-query-c3", "generalized-svt",
             {"c": 3, "threshold_noise": Gaussian(0.7), "query_noise": Laplace(0.8)},
             Rules(c=3), T6, 102),
    DistCase("laplace-threshold-gaussian-query-resample-c2", "generalized-svt",
             {"c": 2, "resample": True, "threshold_noise": Laplace(0.6),
              "query_noise": Gaussian(1.0)}, Rules(c=2, resample=True), 1.0, 103),
    DistCase("stagewise-c3-cstage2-kstage2", "stagewise-svt",
             {"c": 3, "c_stage": 2, "k_max": 2, "threshold_noise": Gaussian(0.8),
              "query_noise": Gaussian(1.2)}, Rules(c=3, k_max=2, stage_c=2), T6, 104),
    DistCase("stagewise-resample-c4-cstage2", "stagewise-svt",
             {"c": 4, "c_stage": 2, "resample": True, "threshold_noise": Gaussian(1.0),
              "query_noise": Laplace(0.7)}, Rules(c=4, resample=True, stage_c=2), 1.0, 105),
]


def _simulate(mech, thresholds, seed):
    out = svtjax.simulate(mech, Q6, np.asarray(thresholds, np.float64), trials=TRIALS, seed=seed)
    answers = np.asarray(out.answers)
    assert np.all(np.asarray(out.cost) == 0.0)  # guarantees are whole-run RDP statements
    return _count_rows(answers)


def test_walk_matches_hand_examples():
    # Algorithm 3, c = 3, c′ = 2, k′ = 2: stage 1 = positions 0-1 (cap), stage 2 (c̃ = 1) = 2.
    answers, segs = walk((0, 0, 1, 1, 1, 1), Rules(c=3, k_max=2, stage_c=2))
    assert answers == (0, 0, 1, -1, -1, -1) and segs == [(0, 1), (2,)]
    # Algorithm 3 ends after ⌈c/c′⌉ stages even with fewer than c ⊤ (stages capped short).
    answers, _ = walk((1, 0, 0, 0, 0, 0), Rules(c=4, k_max=1, stage_c=2))
    assert answers == (1, 0, -1, -1, -1, -1)
    # Algorithm 2 with RESAMPLE: a new segment after each ⊤.
    answers, segs = walk((0, 1, 0, 1, 1, 0), Rules(c=2, resample=True))
    assert answers == (0, 1, 0, 1, -1, -1) and segs == [(0, 1), (2, 3)]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_answer_vector_distribution(case):
    probs = oracle(case.rules, Q6, case.thresholds, case.params["threshold_noise"],
                   case.params["query_noise"])
    values = np.array(list(probs.values()))
    assert np.all(values >= 0) and abs(values.sum() - 1) < 1e-8, values.sum()
    mech = svtjax.get(case.name, **case.params)
    p, stat, df, report = chi_square(probs, _simulate(mech, case.thresholds, case.seed), TRIALS)
    print(f"{case.id}: p={p:.4g} chi2={stat:.1f} df={df}")
    assert df >= 5, report
    assert p > ALPHA, f"{case.id}: simulated answers do not follow the oracle\n{report}"


def test_rejects_stagewise_without_threshold_refresh():
    """Algorithm 2 with the same c (one threshold, no stages) against Algorithm 3's law.

    k_max = n never binds on the six queries (its law is Rules(c=3)'s, which the power check
    uses), and gives the simulation gaussian-c2-kmax5's structure (c and k_max are traced), so
    it compiles nothing of its own."""
    rho, nu = Gaussian(0.8), Gaussian(1.2)
    right = oracle(Rules(c=3, stage_c=1), Q6, 1.0, rho, nu)
    wrong = oracle(Rules(c=3), Q6, 1.0, rho, nu)
    lam = noncentrality(wrong, right, TRIALS)
    df = len(right) - 1
    assert stats.ncx2.sf(stats.chi2.isf(ALPHA, df), df, lam) > 1 - 1e-6, lam
    assert wrong == oracle(Rules(c=3, k_max=Q6.size), Q6, 1.0, rho, nu)
    mech = svtjax.get("generalized-svt", c=3, k_max=Q6.size, threshold_noise=rho, query_noise=nu)
    p, *_, report = chi_square(right, _simulate(mech, 1.0, 106), TRIALS)
    assert p < ALPHA, report


# -- privacy() -------------------------------------------------------------------------------

ORDERS = np.array([1.5, 2.0, 3.0, 8.0, 32.0])


def test_gaussian_c1_is_theorem8_bound1():
    s1, s2, k, d = 3.0, 5.0, 200, 1.5  # σ2 < √3σ1: Proposition 10 does not apply
    g = svtjax.get("generalized-svt", c=1, k_max=k, sensitivity=d, threshold_noise=Gaussian(s1),
                   query_noise=Gaussian(s2), margin=4.0).privacy()
    want = ORDERS * d ** 2 / (2 * s1 ** 2) + ORDERS * (2 * d) ** 2 / (2 * s2 ** 2) \
        + math.log(1 + k) / (ORDERS - 1)
    np.testing.assert_allclose(g.rdp(ORDERS), want, rtol=1e-13)
    assert "Theorem 8 (1)" in g.statement and "Algorithm 2" in g.statement
    assert g.epsilon(1e-6) == pytest.approx(acc.rdp_to_dp(acc.DEFAULT_ORDERS,
                                                          g.rdp(acc.DEFAULT_ORDERS), 1e-6))
    assert g.epsilon() == math.inf  # Gaussian: no pure DP


def test_gaussian_margin_uses_proposition10():
    s1, s2, k, t = 3.0, 6.0, 10**6, 5.0
    g = svtjax.get("generalized-svt", c=1, k_max=k, threshold_noise=Gaussian(s1),
                   query_noise=Gaussian(s2), margin=t).privacy()
    bound1 = acc.theorem8_rdp(ORDERS, lambda a: acc.gaussian_rdp(s1, a),
                              lambda a: acc.gaussian_rdp(s2, a, 2.0), bound=1,
                              log_sup_k=math.log1p(k))
    np.testing.assert_allclose(g.rdp(ORDERS), np.minimum(
        bound1, acc.proposition10_rdp(ORDERS, s1, s2, t)), rtol=1e-13)
    assert "Proposition 10" in g.statement
    # Without a cap Proposition 10 alone is the guarantee (non-negative queries, T = margin).
    uncapped = svtjax.get("generalized-svt", c=1, threshold_noise=Gaussian(s1),
                          query_noise=Gaussian(s2), margin=t).privacy()
    np.testing.assert_allclose(uncapped.rdp(ORDERS), acc.proposition10_rdp(ORDERS, s1, s2, t),
                               rtol=1e-13)


def test_gaussian_without_cap_or_margin_is_unproven():
    g = svtjax.get("generalized-svt", c=2, threshold_noise=Gaussian(1.0),
                   query_noise=Gaussian(2.0)).privacy()
    assert isinstance(g, acc.Unproven) and g.epsilon(1e-3) == math.inf


def test_c_greater_1_is_theorem11_and_resample_composes():
    s1, s2, c, k = 4.0, 8.0, 3, 100
    g = svtjax.get("generalized-svt", c=c, k_max=k, threshold_noise=Gaussian(s1),
                   query_noise=Gaussian(s2)).privacy()
    np.testing.assert_allclose(g.rdp(ORDERS), acc.theorem11_rdp(
        ORDERS, lambda a: acc.gaussian_rdp(s1, a), lambda a: acc.gaussian_rdp(s2, a, 2.0), c,
        k), rtol=1e-13)
    assert "Theorem 11" in g.statement
    one = svtjax.get("generalized-svt", c=1, k_max=k, threshold_noise=Gaussian(s1),
                     query_noise=Gaussian(s2)).privacy()
    res = svtjax.get("generalized-svt", c=c, k_max=k, resample=True,
                     threshold_noise=Gaussian(s1), query_noise=Gaussian(s2)).privacy()
    np.testing.assert_allclose(res.rdp(ORDERS), c * one.rdp(ORDERS), rtol=1e-13)


def test_laplace_is_lemma7():
    # ρ ~ Lap(Δ/ε1), ν ~ Lap(2Δ/ε2): ε1 = 0.5, ε2 = 0.25 with Δ = 2, λ1 = 4, λ2 = 16.
    g = svtjax.get("generalized-svt", c=4, sensitivity=2.0, threshold_noise=Laplace(4.0),
                   query_noise=Laplace(16.0)).privacy()
    assert g.epsilon() == pytest.approx(acc.lemma7_epsilon(0.5, 0.25, 4), rel=1e-14)
    np.testing.assert_allclose(g.rdp(ORDERS), acc.pure_dp_rdp(1.5, ORDERS), rtol=1e-13)
    assert "Lemma 7" in g.statement


def test_calibration_meets_target_and_keeps_ratio():
    m = svtjax.get("generalized-svt", c=1, k_max=1000, epsilon=1.0, delta=1e-6,
                   threshold_noise=Gaussian(1.0), query_noise=Gaussian(2.0))
    s1, s2 = float(m.threshold_noise.sigma), float(m.query_noise.sigma)
    assert s2 / s1 == pytest.approx(2.0, rel=1e-12)
    eps = m.privacy().epsilon(1e-6)
    assert eps <= 1.0 and eps == pytest.approx(1.0, rel=1e-6)
    smaller = svtjax.get("generalized-svt", c=1, k_max=1000, threshold_noise=Gaussian(s1 * 0.999),
                         query_noise=Gaussian(s2 * 0.999))
    assert smaller.privacy().epsilon(1e-6) > 1.0
    # Default template: Algorithm 1's Laplace pair, pure DP: (1 + c)Δ/λ1 = ε.
    lap = svtjax.get("generalized-svt", epsilon=2.0, c=3)
    assert float(lap.threshold_noise.scale) == pytest.approx(2.0, rel=1e-9)
    assert float(lap.query_noise.scale) == pytest.approx(4.0, rel=1e-9)
    with pytest.raises(ValueError, match="cannot calibrate"):
        svtjax.get("generalized-svt", epsilon=1.0, delta=1e-6, c=2,
                   threshold_noise=Gaussian(1.0), query_noise=Gaussian(2.0))


def test_stagewise_is_theorem12_or_rdp_composition():
    s1, c, c_stage, k, delta = 20.0, 12, 3, 50, 1e-6
    mech = svtjax.get("stagewise-svt", c=c, c_stage=c_stage, k_max=k,
                      threshold_noise=Gaussian(s1), query_noise=Gaussian(2 * s1))
    g = mech.privacy()
    thm12 = acc.theorem12_epsilon(s1, c, c_stage, k, delta)
    stage = svtjax.get("generalized-svt", c=c_stage, k_max=k, threshold_noise=Gaussian(s1),
                       query_noise=Gaussian(2 * s1)).privacy()
    rdp_comp = acc.compose(stage, times=4).epsilon(delta)
    assert g.epsilon(delta) == pytest.approx(min(thm12, rdp_comp), rel=1e-9)
    assert "Theorem 12" in g.statement and "Algorithm 3" in g.statement
    strong = svtjax.get("stagewise-svt", c=c, c_stage=c_stage, k_max=k, composition="strong",
                        threshold_noise=Gaussian(s1), query_noise=Gaussian(2 * s1))
    assert strong.privacy().epsilon(delta) >= g.epsilon(delta) * (1 - 1e-9)
    default = svtjax.get("stagewise-svt", c=10, k_max=5, threshold_noise=Gaussian(1.0),
                         query_noise=Gaussian(2.0))
    assert mech.c_stage == 3 and default.c_stage == 3  # default ⌊√c⌋


def test_kernel_uses_the_noise_it_claims():
    m = svtjax.get("stagewise-svt", c=5, c_stage=2, k_max=7, threshold_noise=Gaussian(1.25),
                   query_noise=Laplace(0.5))
    noises = m.noises()
    assert (float(noises["threshold"].sigma), float(noises["query"].scale), int(m.k_max),
            int(m.c_stage)) == (1.25, 0.5, 7, 2)
    assert type(noises["threshold"]) is Gaussian and type(noises["query"]) is Laplace
    assert noises["refresh"] == noises["threshold"]  # the stage's fresh threshold
    assert m.cap() is None and not m.has_block() and not m.resample  # k_max caps each stage


# -- errors and compilation ------------------------------------------------------------------

def test_input_errors():
    with pytest.raises(TypeError, match="threshold_noise"):
        svtjax.get("generalized-svt", c=2)
    with pytest.raises(TypeError, match="both"):
        svtjax.get("generalized-svt", c=2, threshold_noise=Gaussian(1.0))
    with pytest.raises(TypeError, match="svtjax.noise"):
        svtjax.get("generalized-svt", c=2, threshold_noise=1.0, query_noise=Gaussian(1.0))
    with pytest.raises(ValueError, match="^k_max must be"):
        svtjax.get("generalized-svt", c=2, k_max=0, threshold_noise=Gaussian(1.0),
                   query_noise=Gaussian(1.0))
    with pytest.raises(ValueError, match="^c_stage must be"):
        svtjax.get("stagewise-svt", c=2, c_stage=0, threshold_noise=Gaussian(1.0),
                   query_noise=Gaussian(1.0))
    with pytest.raises(ValueError, match="^delta must"):
        svtjax.get("generalized-svt", c=2, epsilon=1.0, delta=1.5)


def test_no_retrace_across_noise_scales():
    """c, k_max and the noise scales are traced: runs that change them reuse one compiled
    chunk. The runs have gaussian-c2-kmax5's structure and shape (Q6, TRIALS trials), so the
    program is that case's; whether the case ran first in this process or not, the four runs
    add at most one entry to the jit cache."""
    from svtjax import _driver

    case = CASES[0]
    base = _driver.run_chunk._cache_size()
    sizes = []
    for c, k_max, s in ((2, 5, 0.8), (3, 20, 0.5), (2, 50, 2.0), (4, 3, 7.0)):
        mech = svtjax.get("generalized-svt", c=c, k_max=k_max, threshold_noise=Gaussian(s),
                          query_noise=Gaussian(1.5 * s))
        _simulate(mech, case.thresholds, seed=c)
        sizes.append(_driver.run_chunk._cache_size())
    assert sizes[0] <= base + 1 and sizes == sizes[:1] * 4, (base, sizes)
