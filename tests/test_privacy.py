"""Privacy claims are tested, not asserted: every registered mechanism's ``privacy()``
against its paper, the RDP conversions of ``svtjax.accounting`` against independent evaluations,
and the registry's input errors.

Every registered mechanism declares its paper's privacy statements where it is registered
(``register(..., privacy=[svtjax.testing.Claim(...)])``, read through ``tests/cases.py``), and
each is checked by ``svtjax.testing.assert_privacy_claims``; a mechanism of the package without
one fails :func:`test_every_package_mechanism_declares_privacy_claims`. The tests below add what
a claim cannot say: ε derived again from the noise scales the kernel uses.

Sources:
  Lyu, Su, Li (2017), Figure 2 and Theorems 2-7. Algorithms 1 and 2 are ε-DP;
  Algorithms 3, 5 and 6 are not ε′-DP for any finite ε′ (Theorems 3, 4, 5); Algorithm 4 is
  ((1+6c)/4)ε-DP (Sec. 3.3, via Theorem 6); Algorithm 7 is (ε1+ε2+ε3)-DP (Theorem 6, Theorem 7
  for monotonic queries with ν = Lap(cΔ/ε2)).
  Zhu & Wang (2020), Lemma 3 (RDP → (ε, δ)-DP) and Lemma 4 (ε-DP → RDP, the sinh bound).

Where a mechanism's ε follows from Theorem 6 applied to its noise scales, the test also derives ε
from the scales the kernel actually uses (``mech.noises()``): ρ = Lap(Δ/ε1), ν = Lap(2cΔ/ε2)
(Lap(cΔ/ε2) when monotonic), answers Lap(cΔ/ε3) — so a claim that does not match the noise fails.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from svtjax import accounting, budget, mechanisms, testing
from svtjax.accounting import PureDP
from tests.cases import package_names, registered_claims

try:
    import mpmath
except ImportError:  # pragma: no cover
    mpmath = None

EPSILONS = [0.05, 0.5, 1.0, 3.7]
CS = [1, 2, 5, 37]
SENSITIVITY = 2.5  # Δ ≠ 1 so that a scale missing Δ is caught


def _cites(statement: str, theorem: str) -> bool:
    return re.search(rf"\bTheorem {theorem}\b", statement) is not None


def _theorem6_epsilon(mech, monotonic=False, eps3_released=False):
    """ε1 + ε2 (+ ε3) read off the noise scales the kernel uses (Lyu'17 Theorem 6 / 7)."""
    s = {name: float(noise.scale_value) for name, noise in mech.noises().items()}
    delta = float(mech.sensitivity)
    c = float(mech.c)
    eps1 = delta / s["threshold"]
    eps2 = (1.0 if monotonic else 2.0) * c * delta / s["query"]
    eps3 = c * delta / s["answer"] if eps3_released else 0.0
    return eps1 + eps2 + eps3


# --------------------------------------------------------------------------------------------
# The registry is covered
# --------------------------------------------------------------------------------------------

CLAIMS = registered_claims()
PACKAGE = sorted(package_names())


def test_every_package_mechanism_declares_privacy_claims():
    missing = [name for name in package_names() if not mechanisms.entry(name).privacy]
    assert not missing, (f"mechanisms registered without privacy claims: {missing}; declare "
                         "register(..., privacy=[svtjax.testing.Claim(...)])")


@pytest.mark.parametrize("case", CLAIMS, ids=[c.id for c in CLAIMS])
def test_declared_privacy_claims(case):
    assert testing.assert_privacy_claims(case.name, [case.claim]) == 1


@pytest.mark.parametrize("change,match", [
    ({"epsilon": 1.1}, "paper 1.1"), ({"guarantee": "NotPrivate"}, "not NotPrivate"),
    ({"cites": ("Theorem 3",)}, "does not cite 'Theorem 3'"),
    ({"cites": ("Theorem 2",), "excludes": ("Lyu",)}, "cites 'Lyu'"),
    ({"cites": ("Theorem 23",)}, "does not cite")])
def test_privacy_harness_catches_a_wrong_claim(change, match):
    """A claim the statement does not make fails (Algorithm 1 is ε-DP by Lyu'17 Theorem 2)."""
    right = testing.Claim("alg1", {"epsilon": 1.0, "c": 2}, 1.0, "PureDP", ("Theorem 2",))
    assert testing.assert_privacy_claims("lyu-alg1", [right]) == 1
    wrong = dataclasses.replace(right, **change)
    with pytest.raises(AssertionError, match=re.escape(match)):
        testing.assert_privacy_claims("lyu-alg1", [wrong])


# --------------------------------------------------------------------------------------------
# Lyu'17 Figure 2, Algorithms 1-6
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("c", CS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_lyu_alg1_is_eps_dp(eps, c):
    mech = mechanisms.get("lyu-alg1", epsilon=eps, c=c, sensitivity=SENSITIVITY)
    g = mech.privacy()
    assert isinstance(g, PureDP) and g.private
    assert g.epsilon() == pytest.approx(eps, rel=1e-15)
    assert g.epsilon(delta=1e-6) == pytest.approx(eps, rel=1e-15)  # pure DP at every δ
    assert _cites(g.statement, "2") and "Lyu" in g.statement
    # Algorithm 1 is Algorithm 7 with ε1 = ε2 = ε/2: ρ = Lap(2Δ/ε), ν = Lap(4cΔ/ε).
    assert _theorem6_epsilon(mech) == pytest.approx(eps, rel=1e-13)
    np.testing.assert_allclose(g.rdp([1.5, 2.0, 10.0]),
                               accounting.pure_dp_rdp(eps, [1.5, 2.0, 10.0]), rtol=0, atol=0)


@pytest.mark.parametrize("c", CS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_dpbook_is_eps_dp(eps, c):
    mech = mechanisms.get("dpbook", epsilon=eps, c=c, sensitivity=SENSITIVITY)
    g = mech.privacy()
    assert isinstance(g, PureDP) and g.private
    assert g.epsilon() == pytest.approx(eps, rel=1e-15)
    assert "Algorithm 2" in g.statement
    # c compositions of an (ε/c) AboveThreshold: ρ = Lap(2Δ/(ε/c)), ν = Lap(4Δ/(ε/c)).
    s = mech.noises()
    assert c * 2 * SENSITIVITY / float(s["threshold"].scale) == pytest.approx(eps, rel=1e-13)
    assert c * 4 * SENSITIVITY / float(s["query"].scale) == pytest.approx(eps, rel=1e-13)
    assert s["refresh"] == s["threshold"]  # line 5: the redrawn ρ has the first one's law


# Algorithms 3, 5 and 6 (not ε′-DP for any finite ε′, Theorems 3, 4, 5): their declared claims
# (svtjax/mechanisms/classic.py) on EPSILONS, checked by test_declared_privacy_claims.


@pytest.mark.parametrize("c", CS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_lee_clifton_is_one_plus_6c_over_4_eps_dp(eps, c):
    mech = mechanisms.get("lee-clifton", epsilon=eps, c=c, sensitivity=SENSITIVITY)
    g = mech.privacy()
    assert isinstance(g, PureDP) and g.private
    assert g.epsilon() == pytest.approx((1 + 6 * c) / 4 * eps, rel=1e-14)
    assert "Algorithm 4" in g.statement and _cites(g.statement, "6")
    # Theorem 6 on Algorithm 4's noise: ρ = Lap(4Δ/ε) = Lap(Δ/ε1) gives ε1 = ε/4, and
    # ν = Lap(4Δ/(3ε)) = Lap(2cΔ/ε2) gives ε2 = 3cε/2.
    assert _theorem6_epsilon(mech) == pytest.approx((1 + 6 * c) / 4 * eps, rel=1e-13)


# --------------------------------------------------------------------------------------------
# Algorithm 7 (SVT-S)
# --------------------------------------------------------------------------------------------


def _check_svts(mech, eps, monotonic, eps3):
    g = mech.privacy()
    assert isinstance(g, PureDP) and g.private
    e1, e2, e3 = (float(x) for x in mech.budgets())
    assert e1 > 0 and e2 > 0 and e3 == pytest.approx(eps3, abs=0)
    assert g.epsilon() == pytest.approx(e1 + e2 + e3, rel=1e-15)
    assert g.epsilon() == pytest.approx(eps, rel=1e-14)
    assert _theorem6_epsilon(mech, monotonic=monotonic, eps3_released=eps3 > 0) == pytest.approx(
        eps, rel=1e-13)
    if monotonic:
        assert _cites(g.statement, "7") and not _cites(g.statement, "6"), g.statement
    else:
        assert _cites(g.statement, "6") and not _cites(g.statement, "7"), g.statement
    return e1, e2, e3


@pytest.mark.parametrize("eps3_share", [0.0, 0.3], ids=["no-answers", "eps3"])
@pytest.mark.parametrize("monotonic", [False, True], ids=["general", "monotonic"])
@pytest.mark.parametrize("rule", budget.rules())
def test_svts_named_rules(rule, monotonic, eps3_share):
    for eps in EPSILONS:
        for c in CS:
            eps3 = eps3_share * eps
            mech = mechanisms.get("svt-s", epsilon=eps, c=c, sensitivity=SENSITIVITY, eps3=eps3,
                                  monotonic=monotonic, allocation=rule)
            e1, e2, _ = _check_svts(mech, eps, monotonic, eps3)
            assert e2 / e1 == pytest.approx(float(budget.ratio(rule, c)), rel=1e-12)


@pytest.mark.parametrize("monotonic", [False, True], ids=["general", "monotonic"])
def test_svts_default_allocation_is_lyu_optimum(monotonic):
    c = 10
    mech = mechanisms.get("svt-s", epsilon=1.0, c=c, monotonic=monotonic)
    e1, e2, _ = _check_svts(mech, 1.0, monotonic, 0.0)
    want = c ** (2 / 3) if monotonic else (2 * c) ** (2 / 3)  # Sec. 4.3 / Eq. 13
    assert e2 / e1 == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("monotonic", [False, True], ids=["general", "monotonic"])
@pytest.mark.parametrize("eps3", [0.0, 0.25])
def test_svts_explicit_allocation(monotonic, eps3):
    e1, e2 = 0.3, 0.45
    mech = mechanisms.get("svt-s", c=4, allocation=(e1, e2), eps3=eps3, monotonic=monotonic,
                          sensitivity=SENSITIVITY)
    assert float(mech.epsilon) == pytest.approx(e1 + e2 + eps3, rel=1e-15)
    b1, b2, _ = _check_svts(mech, e1 + e2 + eps3, monotonic, eps3)
    assert (b1, b2) == (e1, e2)
    # A matching epsilon is accepted; a different one is rejected.
    same = mechanisms.get("svt-s", epsilon=e1 + e2 + eps3, c=4, allocation=(e1, e2), eps3=eps3)
    assert same.privacy().epsilon() == pytest.approx(e1 + e2 + eps3, rel=1e-15)
    with pytest.raises(ValueError, match=r"eps1 \+ eps2 \+ eps3"):
        mechanisms.get("svt-s", epsilon=2.0, c=4, allocation=(e1, e2), eps3=eps3)


def test_svts_epsilon_independent_of_c_and_sensitivity():
    # (ε1+ε2+ε3)-DP holds for any c and Δ: the noise scales grow with c and Δ instead.
    vals = {float(mechanisms.get("svt-s", epsilon=1.3, c=c, sensitivity=d, eps3=0.2)
                  .privacy().epsilon()) for c in (1, 7, 100) for d in (0.1, 1.0, 50.0)}
    assert max(vals) - min(vals) <= 4 * math.ulp(1.3) and min(vals) == pytest.approx(1.3)


# --------------------------------------------------------------------------------------------
# Zhu & Wang (2020) Lemma 4: ε-DP ⇒ RDP (sinh bound); Lemma 3: RDP ⇒ (ε, δ)-DP
# --------------------------------------------------------------------------------------------


def _sinh_bound_reference(eps, alpha):
    """1/(α−1) · log((sinh(αε) − sinh((α−1)ε)) / sinh(ε)), evaluated directly."""
    if mpmath is not None:
        with mpmath.workdps(80):
            e, a = mpmath.mpf(eps), mpmath.mpf(alpha)
            return float(mpmath.log((mpmath.sinh(a * e) - mpmath.sinh((a - 1) * e))
                                    / mpmath.sinh(e)) / (a - 1))
    return (math.log((math.sinh(alpha * eps) - math.sinh((alpha - 1) * eps)) / math.sinh(eps))
            / (alpha - 1))


# Well conditioned: (α−1)·ε ≥ 0.05 and α·ε ≤ 700 so the Python-float fallback does not overflow
# and its cancellation costs < 1e-13 (with mpmath the grid could be anything).
WELL_CONDITIONED = [(e, a) for e in (0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0)
                    for a in (1.5, 2.0, 3.0, 5.0, 10.0, 14.0, 32.0, 64.0)
                    if (a - 1) * e >= 0.05 and a * e <= 700]
# Large α·ε: only with mpmath (sinh overflows a float64 near 710).
HUGE = [(50.0, 100.0), (10.0, 1e4), (1.0, 1e6), (300.0, 1e3), (2.0, 1e9)]
# Small (α−1)·ε, where log(cosh(x)) − log(cosh(ε/2)) cancels.
ILL_CONDITIONED = [(1e-6, 1.01), (1e-6, 1.0001), (1e-4, 1.0001), (1e-4, 2.0), (1e-3, 1.5),
                   (0.01, 1.01), (0.1, 1.0001), (1.0, 1.0001)]


def test_pure_dp_rdp_matches_direct_formula():
    for eps, alpha in WELL_CONDITIONED:
        got = float(accounting.pure_dp_rdp(eps, [alpha])[0])
        want = _sinh_bound_reference(eps, alpha)
        assert got == pytest.approx(want, rel=1e-12, abs=0), (eps, alpha, got, want)


@pytest.mark.skipif(mpmath is None, reason="needs mpmath for sinh beyond float64 range")
def test_pure_dp_rdp_no_overflow_at_large_alpha_eps():
    for eps, alpha in HUGE:
        got = float(accounting.pure_dp_rdp(eps, [alpha])[0])
        assert math.isfinite(got)
        assert got == pytest.approx(_sinh_bound_reference(eps, alpha), rel=1e-12, abs=0), (
            eps, alpha)


@pytest.mark.skipif(mpmath is None, reason="the reference needs high precision here")
def test_pure_dp_rdp_accurate_for_small_alpha_minus_one_times_eps():
    for eps, alpha in ILL_CONDITIONED:
        got = float(accounting.pure_dp_rdp(eps, [alpha])[0])
        assert got <= alpha * eps ** 2 / 2
        assert got == pytest.approx(_sinh_bound_reference(eps, alpha), rel=1e-12, abs=0), (
            eps, alpha, got)


def test_pure_dp_rdp_properties_on_grid():
    """Lemma 4's ε(α) ≤ αε²/2, ε(α) ≤ ε, ε(α) > 0, non-decreasing in α (well-conditioned grid)."""
    eps = np.array([0.01, 0.05, 0.1, 0.3, 1.0, 2.0, 5.0, 20.0, 100.0, 700.0])
    alpha = np.array([1.1, 1.5, 2.0, 3.0, 8.0, 32.0, 256.0, 1e4, 1e6])
    for e in eps:
        rdp = accounting.pure_dp_rdp(float(e), alpha)
        assert rdp.shape == alpha.shape and np.all(np.isfinite(rdp)) and np.all(rdp > 0)
        assert np.all(rdp <= alpha * e ** 2 / 2 * (1 + 1e-12)), (e, rdp, alpha * e ** 2 / 2)
        assert np.all(rdp <= e * (1 + 1e-15)), (e, rdp)
        assert np.all(np.diff(rdp) >= -1e-15 * e), (e, rdp)
    # The αε²/2 bound is nearly tight for small ε, and the ε cap is approached for large α·ε.
    assert float(accounting.pure_dp_rdp(0.01, [2.0])[0]) == pytest.approx(1e-4, rel=1e-4)
    assert float(accounting.pure_dp_rdp(5.0, [1e6])[0]) == pytest.approx(5.0, rel=1e-5)


def test_pure_dp_rdp_shape_and_bad_orders():
    orders = np.array([[1.5, 2.0, 3.0], [4.0, 8.0, 16.0]])
    out = accounting.pure_dp_rdp(0.7, orders)
    assert out.shape == orders.shape
    np.testing.assert_allclose(out.ravel(), [_sinh_bound_reference(0.7, a) for a in orders.ravel()],
                               rtol=1e-12, atol=0)
    for bad in ([1.0], [0.5, 2.0], [-3.0]):
        with pytest.raises(ValueError, match="order"):
            accounting.pure_dp_rdp(1.0, bad)


@pytest.mark.parametrize("eps", [-1.0, -1e-9, math.inf, math.nan], ids=repr)
def test_pure_dp_rdp_rejects_bad_epsilon(eps):
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=r"\bepsilon\b"):
        accounting.pure_dp_rdp(eps, [2.0])


def test_rdp_to_dp_hand_checked():
    # δ = e^-2, so log(1/δ) = 2: candidates 0.5 + 2/1 = 2.5, 1.0 + 2/2 = 2.0, 1.6 + 2/4 = 2.1;
    # the best (α = 3, in the middle) gives 2.0.
    delta = math.exp(-2.0)
    got = accounting.rdp_to_dp([2.0, 3.0, 5.0], [0.5, 1.0, 1.6], delta)
    assert got == pytest.approx(2.0, rel=1e-15)
    # One order: ε(α) + log(1/δ)/(α−1) with δ = 1e-5, α = 11: 0.3 + log(1e5)/10.
    assert accounting.rdp_to_dp([11.0], [0.3], 1e-5) == pytest.approx(
        0.3 + 5 * math.log(10) / 10, rel=1e-15)
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="delta"):
            accounting.rdp_to_dp([2.0], [0.5], bad)


def test_pure_dp_round_trip_with_tiny_delta_recovers_eps():
    # ε-DP → RDP (Lemma 4) → (ε′, δ)-DP (Lemma 3): as δ → 0 the best order is large, where
    # ε(α) → ε, so ε′ must come back to within 1% of ε (neither far below nor above it).
    orders = np.concatenate([np.linspace(1.01, 10, 200), np.geomspace(10, 1e6, 200)])
    for eps in (0.1, 1.0, 3.0):
        rdp = accounting.pure_dp_rdp(eps, orders)
        e_dp = accounting.rdp_to_dp(orders, rdp, 1e-300)
        assert eps * 0.99 < e_dp <= eps * 1.01


# --------------------------------------------------------------------------------------------
# Registry errors (mechanisms.get)
# --------------------------------------------------------------------------------------------


def _base_params(name):
    params = {"epsilon": 1.0, "sensitivity": 1.0}
    if "c" in mechanisms.parameters(name):
        params["c"] = 3
    return params


def test_unknown_mechanism_lists_registry():
    with pytest.raises(ValueError) as info:
        mechanisms.get("no-such-svt", epsilon=1.0)
    msg = str(info.value)
    assert "no-such-svt" in msg
    for name in mechanisms.names():
        assert name in msg, f"{name!r} not listed in: {msg}"


@pytest.mark.parametrize("name", PACKAGE)
def test_unknown_parameter_lists_valid_parameters(name):
    with pytest.raises(TypeError) as info:
        mechanisms.get(name, **_base_params(name), epsilonn=2.0)
    msg = str(info.value)
    assert "epsilonn" in msg
    for p in mechanisms.parameters(name):
        assert re.search(rf"\b{re.escape(p)}\b", msg), f"{p!r} not listed in: {msg}"


@pytest.mark.parametrize("name", PACKAGE)
def test_bad_numeric_parameters_name_the_parameter(name):
    cases = [("epsilon", v) for v in (0.0, -1.0, math.nan, math.inf)]
    cases += [("sensitivity", v) for v in (0.0, -2.0, math.nan)]
    if "c" in mechanisms.parameters(name):
        cases += [("c", v) for v in (0, -1, 2.5, 0.999)]
    for param, value in cases:
        params = _base_params(name)
        params[param] = value
        with pytest.raises(ValueError, match=rf"^{param} must be"):
            mechanisms.get(name, **params)


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("raise_by", [0.0, 1.0, 5.0])
def test_svt_retr_is_svt_s_on_the_retraversal_stream(monotonic, raise_by):
    """Lyu'17 §4.4: the raised threshold is data-independent and retraversal only lengthens the
    stream, so SVT-ReTr has SVT-S's guarantee (Theorem 6, or 7 when monotonic)."""
    for eps, c in [(0.1, 25), (0.5, 50), (2.0, 300)]:
        retr = mechanisms.get("svt-retr", epsilon=eps, c=c, monotonic=monotonic,
                              raise_by=raise_by, max_passes=4)
        plain = mechanisms.get("svt-s", epsilon=eps, c=c, monotonic=monotonic)
        got = retr.privacy()
        assert got.epsilon() == pytest.approx(eps, rel=1e-12)
        assert got.epsilon() == pytest.approx(plain.privacy().epsilon(), rel=1e-12)
        assert ("Theorem 7" in got.statement) == monotonic
        assert "Theorem 6" in got.statement or monotonic
        assert "4.4" in got.statement
        # the threshold is raised by raise_by query-noise scales, nothing else changes
        sc, sp = retr.noises(), plain.noises()
        assert float(retr.threshold_shift()) == pytest.approx(
            raise_by * float(sp["query"].scale), rel=1e-12)
        assert float(sc["query"].scale) == pytest.approx(float(sp["query"].scale), rel=1e-12)
        assert float(sc["threshold"].scale) == pytest.approx(float(sp["threshold"].scale),
                                                             rel=1e-12)


def test_stoddard_and_chen_take_no_cutoff():
    for name in ("stoddard", "chen"):
        with pytest.raises(TypeError, match=r"valid parameters are: .*epsilon"):
            mechanisms.get(name, epsilon=1.0, c=3)


def test_missing_required_parameters():
    with pytest.raises(TypeError, match=r"\bc\b"):
        mechanisms.get("lyu-alg1", epsilon=1.0)
    with pytest.raises(TypeError, match=r"\bc\b"):
        mechanisms.get("svt-s", epsilon=1.0)
    with pytest.raises(TypeError, match=r"\bepsilon\b"):
        mechanisms.get("svt-s", c=2)


def test_svts_specific_errors():
    with pytest.raises(ValueError, match="allocation must be one of"):
        mechanisms.get("svt-s", epsilon=1.0, c=2, allocation="1:7")
    with pytest.raises(ValueError, match=r"^eps3\b"):
        mechanisms.get("svt-s", epsilon=1.0, c=2, eps3=-0.1)
    with pytest.raises(ValueError, match=r"^eps3 must be smaller than epsilon"):
        mechanisms.get("svt-s", epsilon=1.0, c=2, eps3=1.0)
    with pytest.raises(ValueError, match="pair"):
        mechanisms.get("svt-s", c=2, allocation=(0.3, 0.4, 0.3))
    with pytest.raises(ValueError, match=r"allocation eps1"):
        mechanisms.get("svt-s", c=2, allocation=(0.0, 0.4))
    with pytest.raises(ValueError, match=r"allocation eps2"):
        mechanisms.get("svt-s", c=2, allocation=(0.3, -0.4))
    with pytest.raises(TypeError, match=r"^monotonic"):
        mechanisms.get("svt-s", epsilon=1.0, c=2, monotonic=1)
