"""Privacy-budget split rules for the SVT: ε = ε1 (threshold) + ε2 (queries) (+ ε3 answers).

Lyu, Su, Li (2017), Sec. 4.2: minimising Var[Lap(Δ/ε1) − Lap(2cΔ/ε2)] at fixed ε1 + ε2 gives
ε1 : ε2 = 1 : (2c)^(2/3) (their Eq. 13); for monotonic queries (Sec. 4.3, query noise
Lap(cΔ/ε2)) it gives 1 : c^(2/3). Their Sec. 5 also evaluates 1:1 (Algorithm 1), 1:3
(Algorithm 4, Lee & Clifton) and 1:c.

Every function here is written once for both worlds: given Python numbers it computes in float64
Python arithmetic on the host (what a correction term or a privacy statement needs), given JAX
arrays or tracers it computes in JAX, so ``epsilon`` and ``c`` may be traced and a sweep over ε
or c compiles once.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable

import jax.numpy as jnp
import numpy as np

from svtjax import _validate

__all__ = ["RULES", "rules", "ratio", "split", "optimal_rule", "liu_ratio", "gaussian_factor",
           "comparison_variance", "minimize_comparison_variance", "UNIT_VARIANCE",
           "LIU24_THRESHOLD", "LIU24_TABLE4"]


def _real(x: Any):
    """``x`` as a float: a Python float for a Python/numpy scalar, else a JAX array."""
    if isinstance(x, (numbers.Number, np.generic)) or (isinstance(x, np.ndarray)
                                                       and x.ndim == 0):
        return float(x)
    return jnp.asarray(x, dtype=float)


def _sqrt(x):
    return math.sqrt(x) if isinstance(x, float) else jnp.sqrt(x)


def _log(x):
    return math.log(x) if isinstance(x, float) else jnp.log(x)


RULES: dict[str, Callable] = {
    "1:1": lambda c: _real(c) * 0.0 + 1.0,
    "1:3": lambda c: _real(c) * 0.0 + 3.0,
    "1:c": lambda c: _real(c),
    "1:c^(2/3)": lambda c: _real(c) ** (2.0 / 3.0),
    "1:(2c)^(2/3)": lambda c: (2.0 * _real(c)) ** (2.0 / 3.0),
}


def rules() -> list[str]:
    """Names of the split rules, in the order Lyu'17 Sec. 5 lists them."""
    return list(RULES)


def check_rule(rule: str) -> str:
    if not isinstance(rule, str) or rule not in RULES:
        raise ValueError(f"allocation must be one of {rules()} or an explicit (eps1, eps2) pair; "
                         f"got {rule!r}")
    return rule


def ratio(rule: str, c):
    """x in ε1 : ε2 = 1 : x for the named rule at cut-off ``c``."""
    return RULES[check_rule(rule)](c)


def split(epsilon, c, rule: str):
    """Splits ``epsilon`` into ``(eps1, eps2)`` with ``eps1 : eps2 = 1 : ratio(rule, c)``.

    Args:
      epsilon: the budget for the indicator vector (ε1 + ε2), > 0.
      c: the cut-off (number of ⊤ before halting), >= 1.
      rule: one of :data:`RULES`.

    Returns:
      ``(eps1, eps2)``, summing to ``epsilon``.
    """
    _validate.positive("epsilon", epsilon)
    _validate.integer("c", c, minimum=1)
    x = ratio(rule, c)
    # Every rule gives the queries at least half (x >= 1), so eps2 lies in [ε/2, ε] and
    # ε - eps2 is exact (Sterbenz): eps1 + eps2 == ε to the last bit.
    eps2 = epsilon * x / (1.0 + x)
    return epsilon - eps2, eps2


def optimal_rule(monotonic: bool) -> str:
    """The rule Lyu'17 derives: Eq. 13 in general, Sec. 4.3 for monotonic queries."""
    return "1:c^(2/3)" if monotonic else "1:(2c)^(2/3)"


# -- Liu et al. (2024), Table 4: the split that minimises the comparison variance (Eq. 6) -------
#
# V(ε1) = Var[ρ] + Var[ν] with ρ = N1 at scale Δ/ε1 and ν = N2 at scale K·c·Δ/ε2 (K = 2, or 1
# for monotonic queries), ε1 + ε2 = ε. With v1, v2 the variances of the unit-scale families,
# V = v1 (Δ/ε1)² + v2 (KcΔ/ε2)², and dV/dε1 = 0 at fixed ε gives ε2 / ε1 = w with
#
#     w = (v2 K² c² / v1)^(1/3)                                           (Liu'24 Appendix G)
#
# Table 4 (K = 2, Laplace threshold v1 = 2): exponential v2 = 1 -> (√2 c)^(2/3); Gumbel
# v2 = π²/6 -> (πc/√3)^(2/3); Laplace v2 = 2 -> (2c)^(2/3); Gaussian (both noises Gaussian with
# the same calibration factor, v1 = v2) -> (2c)^(2/3). A common factor of both scales (the
# Gaussian's sqrt(2 ln(1.25/δ))) cancels.

UNIT_VARIANCE = {"laplace": 2.0, "gaussian": 1.0, "exponential": 1.0,
                 "gumbel": math.pi ** 2 / 6.0}
"""Variance of each noise family at scale 1 (svtjax.noise parameterisation)."""

LIU24_THRESHOLD = {"laplace": "laplace", "exponential": "laplace", "gumbel": "laplace",
                   "gaussian": "gaussian"}
"""Threshold-noise family paired with each query-noise family in Liu'24 Table 3."""


def _family(name) -> str:
    fam = getattr(name, "family", name)
    if fam not in UNIT_VARIANCE:
        raise ValueError(f"noise family must be one of {sorted(UNIT_VARIANCE)}; got {name!r}")
    return fam


def liu_ratio(query_family, c, monotonic: bool = False, threshold_family=None):
    """w in ε2 = w·ε1 minimising Eq. 6 (Liu et al. 2024, Table 4 and Appendix G).

    Args:
      query_family: ``"exponential"``, ``"gumbel"``, ``"laplace"``, ``"gaussian"`` (or a noise
        class/object with that ``family``).
      c: cut-off (may be a traced array).
      monotonic: query-noise scale cΔ/ε2 instead of 2cΔ/ε2.
      threshold_family: default: Table 3's pairing (Gaussian with Gaussian, else Laplace).

    Returns:
      w = (v2 K² c² / v1)^(1/3); e.g. (√2 c)^(2/3) for exponential queries (Table 4).
    """
    q = _family(query_family)
    t = _family(threshold_family if threshold_family is not None else LIU24_THRESHOLD[q])
    k = 1.0 if monotonic else 2.0
    return (UNIT_VARIANCE[q] * k * k * _real(c) ** 2 / UNIT_VARIANCE[t]) ** (1.0 / 3.0)


def gaussian_factor(delta):
    """s = sqrt(2 ln(1.25/δ)) of the classic Gaussian mechanism (Dwork & Roth 2014, Thm A.1)."""
    delta = _real(delta)
    return _sqrt(2.0 * _log(1.25 / delta))


LIU24_TABLE4 = {
    "exponential": lambda c: (math.sqrt(2.0) * c) ** (2.0 / 3.0),
    "gumbel": lambda c: (math.pi * c / math.sqrt(3.0)) ** (2.0 / 3.0),
    "laplace": lambda c: (2.0 * c) ** (2.0 / 3.0),
    "gaussian": lambda c: (2.0 * c) ** (2.0 / 3.0),
}
"""Table 4 of Liu et al. 2024 *as printed* (w for SVT-Exp, SVT-Gum, SVT-Lap, SVT-Gau): the
paper's own closed forms, kept to check :func:`liu_ratio`'s derivation from Eq. 6 against them
(tests); svtjax computes with :func:`liu_ratio`."""


def comparison_variance(epsilon1, epsilon2, c, query_family, threshold_family=None, *,
                        sensitivity=1.0, monotonic: bool = False, calibration: float = 1.0):
    """Eq. 6: Var[ρ] + Var[ν] for ρ at scale cal·Δ/ε1 and ν at scale cal·KcΔ/ε2."""
    q = _family(query_family)
    t = _family(threshold_family if threshold_family is not None else LIU24_THRESHOLD[q])
    k = 1.0 if monotonic else 2.0
    s1 = calibration * sensitivity / epsilon1
    s2 = calibration * k * c * sensitivity / epsilon2
    return UNIT_VARIANCE[t] * s1 ** 2 + UNIT_VARIANCE[q] * s2 ** 2


def minimize_comparison_variance(epsilon: float, c, query_family, threshold_family=None, *,
                                 sensitivity: float = 1.0, monotonic: bool = False,
                                 calibration: float = 1.0):
    """Numerical minimiser of Eq. 6 over ε1 ∈ (0, ε) for any pair of noise families.

    Returns:
      ``(eps1, eps2, V)`` at the minimum (bounded Brent on log ε1/ε2, float64 on the host).
    """
    from scipy.optimize import minimize_scalar

    _validate.positive("epsilon", epsilon)
    eps = float(epsilon)

    def v_of(t):  # t = log(ε2/ε1)
        e1 = eps / (1.0 + math.exp(t))
        return float(comparison_variance(e1, eps - e1, float(c), query_family, threshold_family,
                                         sensitivity=sensitivity, monotonic=monotonic,
                                         calibration=calibration))

    res = minimize_scalar(v_of, bounds=(-10.0, 30.0), method="bounded",
                          options={"xatol": 1e-12})
    e1 = eps / (1.0 + math.exp(res.x))
    return e1, eps - e1, v_of(res.x)
