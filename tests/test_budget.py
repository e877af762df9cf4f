"""Tests for ``svtjax.budget``: the ε1 : ε2 split rules of Lyu, Su & Li (2017).

Oracles:
  * the closed forms of Lyu'17 Sec. 4.2 (Eq. 13, 1 : (2c)^(2/3)), Sec. 4.3 (monotonic queries,
    1 : c^(2/3)) and Sec. 5 (1:1 of Algorithm 1, 1:3 of Algorithm 4, 1:c), written out here;
  * a numerical minimisation (``scipy.optimize.minimize_scalar``, no svtjax code) of the variance
    of the comparison noise, Var[Lap(Δ/ε1) − Lap(kcΔ/ε2)] = 2(Δ/ε1)² + 2(kcΔ/ε2)² at fixed
    ε1 + ε2, with k = 2 (Eq. 13) or k = 1 (monotonic queries, Sec. 4.3).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from svtjax import budget

CLOSED_FORM = {
    "1:1": lambda c: 1.0,
    "1:3": lambda c: 3.0,
    "1:c": lambda c: float(c),
    "1:c^(2/3)": lambda c: float(c) ** (2.0 / 3.0),
    "1:(2c)^(2/3)": lambda c: (2.0 * c) ** (2.0 / 3.0),
}
CS = [1, 2, 3, 5, 10, 50, 300, 1000]
EPSILONS = [0.01, 0.1, 0.5, 1.0, 2.0 / 3.0, math.pi, 10.0]


def test_rule_names():
    assert set(budget.rules()) == set(CLOSED_FORM)
    assert budget.rules() == list(budget.RULES)
    # Lyu'17 Sec. 5 evaluates 1:1, 1:3, 1:c and 1:c^(2/3) in this order; Eq. 13 comes last.
    assert budget.rules()[:4] == ["1:1", "1:3", "1:c", "1:c^(2/3)"]


@pytest.mark.parametrize("rule", list(CLOSED_FORM))
def test_ratio_matches_closed_form(rule):
    for c in CS:
        got = float(budget.ratio(rule, c))
        assert got == pytest.approx(CLOSED_FORM[rule](c), rel=1e-14, abs=0), (rule, c)
    # Vectorised over c (a sweep over c passes an array).
    cs = np.array(CS, dtype=float)
    want = np.array([CLOSED_FORM[rule](c) for c in CS])
    np.testing.assert_allclose(np.asarray(budget.ratio(rule, cs)), want, rtol=1e-14, atol=0)


@pytest.mark.parametrize("rule", list(CLOSED_FORM))
def test_split_matches_closed_form(rule):
    for c in CS:
        x = CLOSED_FORM[rule](c)
        for eps in EPSILONS:
            e1, e2 = (float(v) for v in budget.split(eps, c, rule))
            assert e1 == pytest.approx(eps / (1.0 + x), rel=1e-13, abs=0), (rule, c, eps)
            assert e2 == pytest.approx(eps * x / (1.0 + x), rel=1e-13, abs=0), (rule, c, eps)
            assert e2 / e1 == pytest.approx(x, rel=1e-13, abs=0), (rule, c, eps)
            assert 0 < e1 <= e2 < eps  # every rule gives the queries at least half


def _sum_error_ulps(rule):
    worst = 0.0
    for c in CS:
        for eps in np.linspace(0.01, 10.0, 97):
            e1, e2 = (float(v) for v in budget.split(float(eps), c, rule))
            worst = max(worst, abs((e1 + e2) - eps) / math.ulp(eps))
    return worst


@pytest.mark.parametrize("rule", list(CLOSED_FORM))
def test_split_sums_to_epsilon_within_one_ulp(rule):
    assert _sum_error_ulps(rule) <= 1.0


@pytest.mark.parametrize("rule", ["1:c", "1:c^(2/3)", "1:(2c)^(2/3)"])
def test_split_sums_to_epsilon_exactly(rule):
    assert _sum_error_ulps(rule) == 0.0


@pytest.mark.parametrize("rule", ["1:1", "1:3"])
def test_split_sums_to_epsilon_exactly_power_of_two_rules(rule):
    # The shares eps/2 (and eps/4, 3eps/4) need at most two more bits: the sum is exact here.
    assert _sum_error_ulps(rule) == 0.0
    if rule == "1:1":
        for eps in EPSILONS:
            e1, e2 = (float(v) for v in budget.split(eps, 7, rule))
            assert e1 == e2 == eps / 2


def test_optimal_rule():
    assert budget.optimal_rule(False) == "1:(2c)^(2/3)"
    assert budget.optimal_rule(True) == "1:c^(2/3)"
    assert budget.optimal_rule(False) in budget.RULES and budget.optimal_rule(True) in budget.RULES


def test_split_traced_compiles_once():
    traces = []

    @jax.jit
    def f(eps, c):
        traces.append(None)
        return budget.split(eps, c, "1:(2c)^(2/3)")

    for eps, c in [(0.5, 1), (1.0, 5), (3.0, 50)]:
        e1, e2 = f(jnp.float64(eps), jnp.int32(c))
        x = CLOSED_FORM["1:(2c)^(2/3)"](c)
        assert float(e1) == pytest.approx(eps / (1 + x), rel=1e-13)
        assert float(e1 + e2) == pytest.approx(eps, rel=1e-15)
    assert len(traces) == 1


# --------------------------------------------------------------------------------------------
# Optimality, checked numerically without svtjax
# --------------------------------------------------------------------------------------------


def _variance(eps1, total, c, sensitivity, k):
    """Var[Lap(Δ/ε1) − Lap(kcΔ/ε2)] with ε2 = total − ε1 (Var Lap(b) = 2b²)."""
    eps2 = total - eps1
    return 2.0 * (sensitivity / eps1) ** 2 + 2.0 * (k * c * sensitivity / eps2) ** 2


def _argmin_eps1(total, c, sensitivity, k):
    res = minimize_scalar(_variance, bounds=(total * 1e-9, total * (1 - 1e-9)), method="bounded",
                          args=(total, c, sensitivity, k), options={"xatol": total * 1e-13})
    assert res.success, res
    return res.x


@pytest.mark.parametrize("monotonic,k", [(False, 2), (True, 1)], ids=["general", "monotonic"])
@pytest.mark.parametrize("c", [1, 2, 5, 20, 100, 1000])
def test_optimal_rule_minimises_comparison_variance(monotonic, k, c):
    rule = budget.optimal_rule(monotonic)
    for total, sensitivity in [(0.1, 1.0), (1.0, 1.0), (4.0, 3.0)]:
        e1_star = _argmin_eps1(total, c, sensitivity, k)
        e1, e2 = (float(v) for v in budget.split(total, c, rule))
        # The minimiser is accurate to ~sqrt(machine eps) relative; wrong exponents (1/2, 1, 3/4)
        # or a wrong k are off by far more than 1e-6 for c >= 2.
        assert e1 == pytest.approx(e1_star, rel=1e-6), (
            f"{rule}, c={c}: split gives eps1={e1}, numerical optimum {e1_star}")
        assert e2 / e1 == pytest.approx((total - e1_star) / e1_star, rel=1e-5)
        # No other rule does better (strictly worse where its ratio differs by > 1%).
        v_best = _variance(e1, total, c, sensitivity, k)
        for other in budget.rules():
            o1, _ = (float(v) for v in budget.split(total, c, other))
            v = _variance(o1, total, c, sensitivity, k)
            assert v >= v_best * (1 - 1e-12), (other, v, rule, v_best)
            if abs(float(budget.ratio(other, c)) / float(budget.ratio(rule, c)) - 1) > 0.01:
                assert v > v_best, (other, rule, c)


def test_eq13_and_monotonic_optima_differ():
    # Guards against the two rules being swapped: at c = 10 they differ by 2^(2/3).
    a = float(budget.ratio(budget.optimal_rule(False), 10))
    b = float(budget.ratio(budget.optimal_rule(True), 10))
    assert a / b == pytest.approx(2 ** (2 / 3), rel=1e-14)
    assert _argmin_eps1(1.0, 10, 1.0, 2) < _argmin_eps1(1.0, 10, 1.0, 1)


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad_rule", ["1:2", "1:c^2/3", "", "optimal", None, 3, ("1:1",)],
                         ids=repr)
def test_unknown_rule_lists_valid_rules(bad_rule):
    for call in (lambda: budget.split(1.0, 5, bad_rule), lambda: budget.ratio(bad_rule, 5)):
        with pytest.raises(ValueError) as info:
            call()
        msg = str(info.value)
        assert repr(bad_rule) in msg or str(bad_rule) in msg
        for name in CLOSED_FORM:
            assert name in msg, f"message should list {name!r}: {msg}"


@pytest.mark.parametrize("eps", [0, 0.0, -1.0, -1e-300, math.nan, math.inf], ids=repr)
def test_bad_epsilon(eps):
    with pytest.raises(ValueError, match=r"\bepsilon\b"):
        budget.split(eps, 5, "1:c")


@pytest.mark.parametrize("c", [0, -1, 2.5, 0.5, math.nan, math.inf], ids=repr)
def test_bad_c_value(c):
    with pytest.raises(ValueError, match=r"^c must be an integer >= 1"):
        budget.split(1.0, c, "1:c")


@pytest.mark.parametrize("c", ["3", None, True], ids=repr)
def test_bad_c_type(c):
    with pytest.raises(TypeError, match=r"^c must be an integer"):
        budget.split(1.0, c, "1:c")


def test_whole_float_c_accepted():
    # c = 4.0 is a whole number: accepted and equal to c = 4.
    assert [float(v) for v in budget.split(1.0, 4.0, "1:c")] == [
        float(v) for v in budget.split(1.0, 4, "1:c")]
