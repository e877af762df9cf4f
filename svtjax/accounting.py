"""Privacy guarantees as objects: what a mechanism's paper proves, and how it composes.

Every ``mech.privacy()`` returns a :class:`Guarantee` with

* ``epsilon(delta=0.0)`` — the ε it proves at that δ (``inf`` when nothing finite is proved),
* ``rdp(orders)`` — an RDP curve ε(α) where one follows from the guarantee,
* ``statement`` — a one-line citation of the theorem,
* ``scope`` — what the guarantee covers (:data:`SCOPE`).

What a guarantee covers: it is the paper's theorem for the **idealised** mechanism, whose noise is
an exact real-valued draw. svtjax's samplers are floating-point transforms of uniform bits
(float32 unless x64 is on), written for Monte Carlo simulation of utility and of the laws the
theorems are about; they are not samplers for releasing real data. Textbook floating-point
Laplace sampling leaks the exact value through the pattern of representable outputs and breaks
differential privacy entirely (Mironov, "On significance of the least significant bits for
differential privacy", CCS 2012); releasing real data needs a sampler built for it (e.g. a
discrete or snapping mechanism). A ``Guarantee`` never refers to the bits svtjax draws.

Guarantee kinds: :class:`PureDP` (ε), :class:`ApproxDP` ((ε, δ)), :class:`RDP` (a curve ε(α),
optionally with a pure-DP cap ε(∞)), :class:`EpsilonOfDelta` (a family of (ε(δ), δ) statements,
e.g. Theorem 12's stage-wise bound), and the non-guarantees :class:`NotPrivate` /
:class:`Unproven`. :func:`compose` adds guarantees (RDP curves add, Mironov 2017 Prop. 1).

Building blocks (all numpy, vectorised over the RDP orders α):

* noise mechanisms: :func:`gaussian_rdp` (α Δ²/(2σ²)), :func:`laplace_rdp` (Mironov 2017,
  Prop. 6), :func:`noise_rdp` / :func:`noise_pure_epsilon` for a ``svtjax.noise`` object;
* conversions: :func:`pure_dp_rdp` (Lemma 4, the sinh bound), :func:`cdp_rdp` (αε²/2),
  :func:`rdp_to_dp` (Lemma 3), :func:`rdp_to_dp_improved` (Canonne, Kamath, Steinke 2020
  Prop. 12 / Asoodeh et al. 2020 — what ``dp_accounting`` uses);
* (ε, δ) composition: :func:`strong_composition` (Dwork, Rothblum, Vadhan 2010),
  :func:`kov_composition` (Kairouz, Oh, Viswanath 2015 Thm 3.5, heterogeneous),
  :func:`optimal_composition` (Kairouz et al. 2015 Thm 3.3, homogeneous, exact);
* SVT bounds of Zhu & Wang (2020): :func:`lemma7_epsilon`, :func:`lemma7_resample_scale`,
  :func:`theorem8_rdp` (bounds (1)-(3)), :func:`proposition10_rdp`, :func:`theorem11_rdp`,
  :func:`theorem11_gaussian_epsilon` (the remark's closed form), :func:`theorem12_epsilon`
  (stage-wise, strong / KOV / optimal composition), and :func:`generalized_svt_guarantee`,
  which picks every bound that applies to a noise pair and takes the pointwise minimum;
* baselines of Section 4: :func:`gaussian_mechanism_guarantee` and
  :func:`noisy_screening_rdp` (data-dependent, Papernot et al. 2018 Thm 6 / Zhu et al. 2020
  Private-kNN Thm 7);
* :func:`calibrate`: the smallest noise scale whose guarantee meets a target (ε, δ).

References:
  Lyu, Su, Li (2017), Theorems 2-7 and Figure 2.
  Zhu & Wang (2020), "Improving sparse vector technique with Rényi differential privacy",
  Lemmas 3, 4, 7, Theorems 8, 11, 12, Proposition 10.
  Mironov (2017), "Rényi differential privacy", Prop. 1 (composition), Prop. 6 (Laplace).
  Kairouz, Oh, Viswanath (2015), "The composition theorem for differential privacy".
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, ClassVar, Optional

import numpy as np

from svtjax import _validate

__all__ = ["SCOPE", "Guarantee", "PureDP", "ApproxDP", "RDP", "EpsilonOfDelta", "NotPrivate",
           "Unproven", "DEFAULT_ORDERS", "compose", "pure_dp_rdp", "cdp_rdp", "rdp_to_dp",
           "rdp_to_dp_improved", "gaussian_rdp", "laplace_rdp", "noise_rdp", "noise_pure_epsilon",
           "strong_composition", "kov_composition", "optimal_composition", "lemma7_epsilon",
           "lemma7_resample_scale", "theorem8_rdp", "proposition10_log_moment",
           "proposition10_rdp", "theorem11_rdp", "theorem11_gaussian_epsilon",
           "theorem12_epsilon", "generalized_svt_guarantee", "stagewise_svt_guarantee",
           "gaussian_mechanism_guarantee",
           "noisy_screening_rdp", "calibrate"]


def pure_dp_rdp(epsilon: float, orders) -> np.ndarray:
    """RDP curve implied by ε-DP (Zhu & Wang 2020, Lemma 4; Bun & Steinke 2016, Prop. 3.3).

    ε(α) = 1/(α−1) · log[(sinh(αε) − sinh((α−1)ε)) / sinh(ε)], also capped by ε itself
    (ε-DP implies (α, ε)-RDP for every α). Evaluated in two forms (see the code) so that it is
    accurate to ~1e-15 relative for tiny (α−1)ε and does not overflow for huge α·ε.

    Args:
      epsilon: the pure-DP ε (> 0).
      orders: RDP orders α > 1, any shape.

    Returns:
      ε(α), shaped like ``orders``.
    """
    _validate.positive("epsilon", epsilon)
    alpha = np.asarray(orders, dtype=float)
    if np.any(alpha <= 1):
        raise ValueError(f"RDP orders must be > 1; got {orders!r}")
    eps = float(epsilon)
    # With d = (α-1)ε the ratio equals cosh(d + ε/2) / cosh(ε/2)
    #   = 1 + 2 sinh(d/2)^2 + tanh(ε/2) sinh(d)            (no cancellation for small d)
    #   = e^d (1 + u expm1(-2d)) with u = e^-ε / (1 + e^-ε) (no overflow for large d).
    d = (alpha - 1) * eps
    small_d = np.minimum(d, 30.0)
    small = np.log1p(2 * np.sinh(small_d / 2) ** 2 + math.tanh(eps / 2) * np.sinh(small_d))
    u = math.exp(-eps) / (1 + math.exp(-eps))
    large = d + np.log1p(u * np.expm1(-2 * d))
    bound = np.where(d < 30, small, large) / (alpha - 1)
    return np.minimum(bound, eps)


def rdp_to_dp(orders, rdp, delta: float) -> float:
    """Lemma 3 of Zhu & Wang (2020): (α, ε(α))-RDP ⇒ (ε(α) + log(1/δ)/(α−1), δ)-DP, best α."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1) to convert RDP to (eps, delta)-DP; got {delta}")
    alpha = np.asarray(orders, dtype=float)
    eps = np.asarray(rdp, dtype=float) + math.log(1 / delta) / (alpha - 1)
    return float(np.min(eps))


SCOPE = ("the paper's guarantee for the idealised mechanism (exact real-valued noise); "
         "svtjax's floating-point samplers are for simulation, not for releasing real data "
         "(Mironov 2012: naive floating-point noise breaks differential privacy)")
"""What every :class:`Guarantee` covers (module docstring), as one line."""


def _check_eps(eps: float) -> None:
    """A guarantee's ε must be a number in [0, inf]: NaN (e.g. parameters that overflowed) is
    refused rather than reported as "nan-DP"."""
    try:
        value = float(eps)
    except (TypeError, ValueError) as err:
        raise TypeError(f"a guarantee's epsilon must be a number; got {eps!r}") from err
    if math.isnan(value) or value < 0:
        raise ValueError(f"a guarantee's epsilon must be a number >= 0; got {eps!r} (the "
                         "mechanism's parameters do not give a meaningful ε)")


@dataclasses.dataclass(frozen=True)
class Guarantee:
    """Base class: a proved privacy property with its citation.

    Every guarantee is the paper's theorem for the idealised mechanism (exact real-valued noise),
    not a property of svtjax's floating-point samplers, which are for simulation only: see
    :data:`SCOPE` (also ``.scope``) and the module docstring (Mironov 2012).
    """

    statement: str

    scope: ClassVar[str] = SCOPE

    def epsilon(self, delta: float = 0.0) -> float:
        raise NotImplementedError

    def rdp(self, orders) -> np.ndarray:
        raise NotImplementedError

    @property
    def private(self) -> bool:
        return math.isfinite(self.epsilon())


@dataclasses.dataclass(frozen=True)
class PureDP(Guarantee):
    """ε-differential privacy."""

    eps: float = math.inf

    def __post_init__(self):
        _check_eps(self.eps)

    def epsilon(self, delta: float = 0.0) -> float:
        if not 0 <= delta < 1:
            raise ValueError(f"delta must lie in [0, 1); got {delta}")
        return float(self.eps)

    def rdp(self, orders) -> np.ndarray:
        return pure_dp_rdp(self.eps, orders)

    def __str__(self) -> str:
        return f"{self.eps:.6g}-DP ({self.statement})"


@dataclasses.dataclass(frozen=True)
class _NoFiniteEpsilon(Guarantee):
    """Nothing finite can be claimed: ``epsilon()`` and the RDP curve are ``inf``, so accounting
    never under-counts. ``nominal`` keeps the budget the noise was calibrated to."""

    nominal: float = math.nan

    def epsilon(self, delta: float = 0.0) -> float:
        del delta
        return math.inf

    def rdp(self, orders) -> np.ndarray:
        return np.full(np.shape(orders), np.inf)


@dataclasses.dataclass(frozen=True)
class NotPrivate(_NoFiniteEpsilon):
    """No finite ε: the paper shows the mechanism is not ε′-DP for any finite ε′.

    ``nominal`` is the ε the original authors claimed, kept for audits and tables.
    """

    def __str__(self) -> str:
        return f"not private ({self.statement})"


@dataclasses.dataclass(frozen=True)
class Unproven(_NoFiniteEpsilon):
    """No privacy guarantee is proved in the sources for this configuration.

    Not a claim that the mechanism is *not* private (that is ``NotPrivate``): only that nothing
    finite can be cited. ``nominal`` is the budget the noise was calibrated to by analogy.
    """

    def __str__(self) -> str:
        return f"no proved guarantee ({self.statement})"


# ============================================================================================
# RDP curves, (ε, δ) statements and composition
# ============================================================================================

DEFAULT_ORDERS = np.unique(np.concatenate([1.0 + np.geomspace(1e-3, 1.0, 60, endpoint=False),
                                           np.geomspace(2.0, 1e5, 500)]))
"""RDP orders α at which ``RDP.epsilon`` minimises Lemma 3 (1.001 .. 1e5, log-spaced)."""


def _orders(orders) -> np.ndarray:
    alpha = np.asarray(orders, dtype=float)
    if np.any(~(alpha > 1)):
        raise ValueError(f"RDP orders must be > 1; got {orders!r}")
    return alpha


def _check_delta(delta: float, *, allow_zero: bool = True) -> float:
    delta = float(delta)
    lo_ok = delta >= 0 if allow_zero else delta > 0
    if not (lo_ok and delta < 1):
        raise ValueError(f"delta must lie in {'[0' if allow_zero else '(0'}, 1); got {delta}")
    return delta


@dataclasses.dataclass(frozen=True)
class ApproxDP(Guarantee):
    """(ε, δ)-differential privacy; ``epsilon(d)`` is ε for d ≥ δ and ``inf`` below."""

    eps: float = math.inf
    delta: float = 0.0

    def __post_init__(self):
        _check_eps(self.eps)

    def epsilon(self, delta: float = 0.0) -> float:
        delta = _check_delta(delta)
        return float(self.eps) if delta >= self.delta else math.inf

    def rdp(self, orders) -> np.ndarray:
        if self.delta == 0:
            return pure_dp_rdp(self.eps, orders)
        return np.full(np.shape(_orders(orders)), np.inf)

    def __str__(self) -> str:
        return f"({self.eps:.6g}, {self.delta:.3g})-DP ({self.statement})"


@dataclasses.dataclass(frozen=True)
class RDP(Guarantee):
    """Rényi DP: (α, ε(α))-RDP for every order α > 1 (Zhu & Wang 2020, Definition 2).

    Attributes:
      curve: ``orders -> ε(α)`` (numpy, vectorised).
      pure_eps: a pure-DP ε (= ε(∞)) the same theorem proves, ``inf`` if none. It caps the curve
        (ε-DP implies (α, ε)-RDP) and is what ``epsilon(0)`` returns.

    ``epsilon(delta)`` converts with Lemma 3, minimised over ``DEFAULT_ORDERS``.
    """

    curve: Callable = None  # type: ignore[assignment]
    pure_eps: float = math.inf

    def rdp(self, orders) -> np.ndarray:
        alpha = _orders(orders)
        return np.minimum(np.asarray(self.curve(alpha), dtype=float), self.pure_eps)

    def epsilon(self, delta: float = 0.0) -> float:
        delta = _check_delta(delta)
        if delta == 0:
            return float(self.pure_eps)
        eps = rdp_to_dp(DEFAULT_ORDERS, self.rdp(DEFAULT_ORDERS), delta)
        return float(min(eps, self.pure_eps))

    def __str__(self) -> str:
        return f"RDP curve ({self.statement})"


@dataclasses.dataclass(frozen=True)
class EpsilonOfDelta(Guarantee):
    """A family of (ε(δ), δ)-DP statements, one per δ (e.g. Theorem 12's stage-wise bound).

    ``fn(delta) -> ε``; ``epsilon(delta)`` is ``inf`` for δ ≤ ``min_delta``.
    """

    fn: Callable = None  # type: ignore[assignment]
    min_delta: float = 0.0

    def epsilon(self, delta: float = 0.0) -> float:
        delta = _check_delta(delta)
        if delta <= self.min_delta:
            return math.inf
        return float(self.fn(delta))

    def rdp(self, orders) -> np.ndarray:
        return np.full(np.shape(_orders(orders)), np.inf)

    def __str__(self) -> str:
        return f"(ε(δ), δ)-DP ({self.statement})"


def compose(*guarantees: Guarantee, times: int = 1, statement: Optional[str] = None
            ) -> Guarantee:
    """The guarantee of running every mechanism (each ``times`` times), adaptively.

    Pure DP adds (basic composition); RDP curves add order by order (Mironov 2017, Prop. 1),
    a pure ε becoming its Lemma 4 curve; (ε, δ) pairs add (basic composition). A mechanism
    without a finite guarantee makes the composition unproven.

    Raises:
      TypeError: mixing (ε, δ) statements with RDP curves (convert one side first).
    """
    _validate.integer("times", times, minimum=1)
    if not guarantees:
        raise ValueError("compose needs at least one guarantee")
    parts = "; ".join(g.statement for g in guarantees)
    statement = statement or (f"{times} x " if times > 1 else "") + f"composition of [{parts}]"
    for g in guarantees:
        if isinstance(g, _NoFiniteEpsilon):
            return Unproven(f"composition with a mechanism without a finite guarantee "
                            f"({g.statement})")
    if all(isinstance(g, PureDP) for g in guarantees):
        return PureDP(statement, times * sum(float(g.eps) for g in guarantees))
    if all(isinstance(g, (PureDP, RDP)) for g in guarantees):
        pure = times * sum(float(g.eps) if isinstance(g, PureDP) else float(g.pure_eps)
                           for g in guarantees)
        curves = tuple(g.rdp for g in guarantees)
        return RDP(statement, lambda a: times * sum(f(a) for f in curves), pure)
    if all(isinstance(g, (PureDP, ApproxDP)) for g in guarantees):
        return ApproxDP(statement, times * sum(float(g.eps) for g in guarantees),
                        times * sum(float(getattr(g, "delta", 0.0)) for g in guarantees))
    raise TypeError("compose cannot mix (ε, δ) statements with RDP curves; convert first "
                    f"(got {[type(g).__name__ for g in guarantees]})")


# -- noise mechanisms and conversions --------------------------------------------------------

def gaussian_rdp(sigma: float, orders, sensitivity: float = 1.0) -> np.ndarray:
    """Gaussian mechanism N(0, σ²) on a Δ-sensitive query: ε(α) = αΔ²/(2σ²) (Mironov 2017)."""
    _validate.positive("sigma", sigma)
    return _orders(orders) * float(sensitivity) ** 2 / (2.0 * float(sigma) ** 2)


def laplace_rdp(scale: float, orders, sensitivity: float = 1.0) -> np.ndarray:
    """Laplace mechanism Lap(b) on a Δ-sensitive query (Mironov 2017, Prop. 6), η = Δ/b:

    ε(α) = 1/(α−1) log[α/(2α−1) e^{(α−1)η} + (α−1)/(2α−1) e^{−αη}]
         = η + log1p((α−1) expm1((1−2α)η)/(2α−1)) / (α−1)   (the stable form used here),
    and ε(∞) = η.
    """
    _validate.positive("scale", scale)
    alpha = _orders(orders)
    eta = float(sensitivity) / float(scale)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = eta + np.log1p((alpha - 1) * np.expm1((1 - 2 * alpha) * eta)
                                / (2 * alpha - 1)) / (alpha - 1)
    return np.where(np.isinf(alpha), eta, finite)


def noise_rdp(noise, orders, sensitivity: float = 1.0) -> np.ndarray:
    """RDP of the noise-adding mechanism q(D) + Z (Definition 5) for a ``svtjax.noise`` object."""
    family = getattr(noise, "family", None)
    if family == "gaussian":
        return gaussian_rdp(float(noise.sigma), orders, sensitivity)
    if family == "laplace":
        return laplace_rdp(float(noise.scale), orders, sensitivity)
    raise ValueError(f"no RDP curve for {family!r} noise; the generalized-SVT bounds need "
                     "Gaussian or Laplace noise")


def noise_pure_epsilon(noise, sensitivity: float = 1.0) -> float:
    """ε(∞) of the noise-adding mechanism: Δ/b for Laplace, ``inf`` for Gaussian."""
    family = getattr(noise, "family", None)
    if family == "laplace":
        return float(sensitivity) / float(noise.scale)
    if family == "gaussian":
        return math.inf
    raise ValueError(f"no privacy curve for {family!r} noise")


def cdp_rdp(epsilon: float, orders) -> np.ndarray:
    """The CDP curve of ε-DP: ε(α) = αε²/2 (Bun & Steinke 2016, Prop. 3.3; Lemma 4's bound)."""
    _validate.positive("epsilon", epsilon)
    return _orders(orders) * float(epsilon) ** 2 / 2.0


def rdp_to_dp_improved(orders, rdp, delta: float) -> float:
    """RDP → (ε, δ) with the bound ``dp_accounting`` uses (Canonne, Kamath, Steinke 2020,
    Prop. 12; Asoodeh et al. 2020): ε = min_α ε(α) + log(1 − 1/α) − log(δα)/(α−1), with its
    special cases (0 when the KL bound already gives δ; α ≤ 1.01 skipped). Tighter than
    Lemma 3 by log(1 − 1/α) − log(α)/(α−1) < 0; kept for comparison with ``dp_accounting``.
    """
    delta = _check_delta(delta, allow_zero=False)
    alpha = _orders(orders)
    r = np.asarray(rdp, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = r + np.log1p(-1 / alpha) - np.log(delta * alpha) / (alpha - 1)
    eps = np.where(alpha > 1.01, eps, np.inf)
    eps = np.where(delta ** 2 + np.expm1(-r) > 0, 0.0, eps)
    eps = np.where(r < 0, 0.0, eps)
    return float(max(0.0, np.min(eps)))


def strong_composition(eps: float, delta: float, k: int, delta_tilde: float
                       ) -> tuple[float, float]:
    """k-fold adaptive composition of (ε, δ)-DP (Dwork, Rothblum, Vadhan 2010; Dwork & Roth
    2014, Thm 3.20): (sqrt(2k log(1/δ̃)) ε + k ε (e^ε − 1), k δ + δ̃)."""
    _check_delta(delta_tilde, allow_zero=False)
    eps = float(eps)
    return (math.sqrt(2 * k * math.log(1 / delta_tilde)) * eps + k * eps * math.expm1(eps),
            k * float(delta) + float(delta_tilde))


def kov_composition(epsilons, deltas, delta: float) -> float:
    """Heterogeneous composition (Kairouz, Oh, Viswanath 2015, Theorem 3.5): for δ̃ with
    1 − δ = (1 − δ̃) Π(1 − δ_i), ε = min{Σε_i, Σ(e^ε_i − 1)ε_i/(e^ε_i + 1) +
    sqrt(2Σε_i² log(e + sqrt(Σε_i²)/δ̃)), Σ(e^ε_i − 1)ε_i/(e^ε_i + 1) + sqrt(2Σε_i² log(1/δ̃))}.
    ``inf`` when δ ≤ 1 − Π(1 − δ_i). (autodp's ``DP_acct.get_eps``.)"""
    delta = _check_delta(delta, allow_zero=False)
    e = np.asarray(epsilons, dtype=float)
    d = np.asarray(deltas, dtype=float)
    delta_tilde = -math.expm1(math.log1p(-delta) - float(np.sum(np.log1p(-d))))
    if delta_tilde <= 0:
        return math.inf
    s1 = float(np.sum(e))
    s2 = float(np.sum(np.expm1(e) * e / (np.exp(e) + 1)))
    s3 = float(np.sum(e ** 2))
    return min(s1, s2 + math.sqrt(2 * s3 * math.log(math.e + math.sqrt(s3) / delta_tilde)),
               s2 + math.sqrt(2 * s3 * math.log(1 / delta_tilde)))


def _optimal_delta0(eps: float, k: int, eps_g: float) -> float:
    """δ of the k-fold composition of ε-DP at ε_g (Kairouz et al. 2015, Thm 3.3, extended to
    every ε_g by Murtagh & Vadhan 2016): Σ_l C(k,l) [e^{(k−l)ε} − e^{ε_g + lε}]_+ / (1+e^ε)^k."""
    return _optimal_delta0_of(eps, k)(eps_g)


def _optimal_delta0_of(eps: float, k: int):
    """:func:`_optimal_delta0` as a function of ε_g, with the terms that do not depend on ε_g
    computed once (a bisection evaluates it ~45 times): the same operations in the same order,
    so the same numbers."""
    from scipy.special import gammaln

    j = np.arange(k + 1)
    gap = (k - 2 * j) * eps
    log_c = gammaln(k + 1) - gammaln(j + 1) - gammaln(k - j + 1)
    head = log_c + (k - j) * eps
    tail = k * np.logaddexp(0.0, eps)

    def delta0(eps_g: float) -> float:
        live = gap > eps_g
        if not np.any(live):
            return 0.0
        log_terms = head[live] + np.log(-np.expm1(eps_g - gap[live])) - tail
        return float(np.exp(np.logaddexp.reduce(log_terms)))

    return delta0


def optimal_composition(eps: float, delta_each: float, k: int, delta: float) -> float:
    """Smallest ε_g such that k-fold composition of (ε, δ_each)-DP is (ε_g, δ)-DP (Kairouz,
    Oh, Viswanath 2015, Theorem 3.3, optimal for homogeneous composition): the total δ is
    1 − (1 − δ_each)^k (1 − δ0(ε_g)) with δ0 from :func:`_optimal_delta0`; solved by
    bisection. ``inf`` when δ ≤ 1 − (1 − δ_each)^k."""
    delta = _check_delta(delta, allow_zero=False)
    eps = float(eps)
    need = -math.expm1(math.log1p(-delta) - k * math.log1p(-float(delta_each)))  # δ0 allowed
    if need <= 0:
        return math.inf
    delta0 = _optimal_delta0_of(eps, k)
    if delta0(0.0) <= need:
        return 0.0
    lo, hi = 0.0, k * eps
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if delta0(mid) > need:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * max(hi, 1e-300):
            break
    return hi


# ============================================================================================
# Zhu & Wang (2020): SVT bounds
# ============================================================================================

def lemma7_epsilon(eps1: float, eps2: float, c: int) -> float:
    """Lemma 7 (no RESAMPLE): Algorithm 1 with ρ ~ Lap(Δ/ε1), ν ~ Lap(2Δ/ε2) is
    (ε1 + c ε2)-DP."""
    return float(eps1) + int(c) * float(eps2)


def lemma7_resample_scale(epsilon: float, delta: float, c: int, sensitivity: float = 1.0
                          ) -> float:
    """Lemma 7 (RESAMPLE): Δ/ε1 = Δ/ε2 = sqrt(32 c log(1/δ)) Δ/ε gives (ε, δ)-DP, i.e. ρ ~ Lap(b)
    and ν ~ Lap(2b) with the returned b (Dwork & Roth 2014, Thm 3.25)."""
    _check_delta(delta, allow_zero=False)
    return math.sqrt(32 * int(c) * math.log(1 / float(delta))) * float(sensitivity) / float(
        epsilon)


def theorem8_rdp(orders, rho_rdp: Callable, nu_rdp: Callable, *, bound: int,
                 log_sup_k: Optional[float] = None, gamma: Optional[float] = None,
                 log_moment: Optional[float] = None, nu_pure: Optional[float] = None
                 ) -> np.ndarray:
    """Theorem 8: RDP of Algorithm 2 with c = 1, from the RDP of its noise-adding mechanisms.

    ``rho_rdp`` is ε_ρ(α) of M_ρ for Δ-sensitive queries and ``nu_rdp`` ε_ν(α) of M_ν for
    **2Δ**-sensitive queries (the theorem's hypotheses); K is the stopping time (#⊥ + 1).

    * bound 1 (eq. 1): ε_ρ(α) + ε_ν(α) + log sup_z E[K|ρ=z] / (α−1), ``log_sup_k`` the log of
      that supremum (log(1 + k_max) for a length cap k_max, the Remark "Bounded-length SVT");
    * bound 2 (eq. 2): (α − (γ−1)/γ)/(α−1) ε_ρ(γα/(γ−1)) + ε_ν(α) + log E[E[K|ρ]^γ]/(γ(α−1)),
      ``log_moment`` the log of that moment;
    * bound 3 (eq. 3): ε_ρ(α) + ε_ν(∞), ``nu_pure`` = ε_ν(∞).
    """
    alpha = _orders(orders)
    if bound == 1:
        return rho_rdp(alpha) + nu_rdp(alpha) + float(log_sup_k) / (alpha - 1)
    if bound == 2:
        g = float(gamma)
        if not g > 1:
            raise ValueError(f"gamma must be > 1; got {gamma}")
        return ((alpha - (g - 1) / g) / (alpha - 1) * rho_rdp(g * alpha / (g - 1))
                + nu_rdp(alpha) + float(log_moment) / (g * (alpha - 1)))
    if bound == 3:
        return rho_rdp(alpha) + float(nu_pure)
    raise ValueError(f"Theorem 8 has bounds 1, 2 and 3; got {bound!r}")


def proposition10_log_moment(sigma1: float, margin: float) -> float:
    """log of Proposition 10's bound on E[E[K|ρ]^γ] at γ = 2, as in its RDP statement:
    log(1 + 2√3 π (1 + 9T²/σ1²) e^{T²/σ1²})."""
    x = float(margin) ** 2 / float(sigma1) ** 2
    return float(np.logaddexp(0.0, math.log(2 * math.sqrt(3) * math.pi) + math.log1p(9 * x) + x))


def proposition10_rdp(orders, sigma1: float, sigma2: float, margin: float,
                      sensitivity: float = 1.0) -> np.ndarray:
    """Proposition 10 (Gaussian SVT, c = 1, non-negative queries Q+(Δ), threshold T = margin,
    σ2 ≥ √3 σ1), as stated: αΔ²/σ1² + 2αΔ²/σ2² + log(1 + 2√3π(1 + 9T²/σ1²)e^{T²/σ1²})/(2(α−1)).

    No length cap is needed. (The ε_ρ term αΔ²/σ1² is the paper's statement; it is what
    autodp's ``RDP_gaussian_svt_c1`` implements too.)

    Raises:
      ValueError: σ2 < √3 σ1 or T < 0.
    """
    s1, s2, d = float(sigma1), float(sigma2), float(sensitivity)
    if s2 < math.sqrt(3) * s1:
        raise ValueError(f"Proposition 10 needs sigma2 >= sqrt(3) * sigma1; got sigma1={s1}, "
                         f"sigma2={s2}")
    _validate.nonnegative("margin", margin)
    alpha = _orders(orders)
    return (alpha * d ** 2 / s1 ** 2 + 2 * alpha * d ** 2 / s2 ** 2
            + proposition10_log_moment(s1, margin) / (2 * (alpha - 1)))


def _log_binomial_prefix(k_max: int, c: int) -> float:
    """log Σ_{j=0}^{c} C(k_max, j) (terms with j > k_max vanish)."""
    from scipy.special import gammaln

    j = np.arange(min(int(c), int(k_max)) + 1)
    log_c = gammaln(k_max + 1) - gammaln(j + 1) - gammaln(k_max - j + 1)
    return float(np.logaddexp.reduce(log_c))


def theorem11_rdp(orders, rho_rdp: Callable, nu_rdp: Callable, c: int, k_max: int
                  ) -> np.ndarray:
    """Theorem 11 (length-capped generalized SVT, c > 1, no RESAMPLE):
    ε_ρ(α) + c ε_ν(α) + (1 + log Σ_{k=0}^{c} C(k_max, k)) / (α−1), with ε_ν for 2Δ."""
    alpha = _orders(orders)
    return (rho_rdp(alpha) + int(c) * nu_rdp(alpha)
            + (1.0 + _log_binomial_prefix(int(k_max), int(c))) / (alpha - 1))


def theorem11_gaussian_epsilon(sigma1: float, sigma2: float, c: int, k_max: int, delta: float,
                               sensitivity: float = 1.0) -> float:
    """The closed form printed after Theorem 11 (both noises Gaussian): with
    A = Δ²/(2σ1²) + 2cΔ²/σ2², ε(δ) ≤ A + sqrt(2A (log(1/δ) + log(c C(k_max, c)))).

    Caution: minimising Theorem 11 + Lemma 3 exactly over α gives A + 2 sqrt(A B) with
    B = 1 + log Σ_{j≤c} C(k_max, j) + log(1/δ), so the printed sqrt(2AB) is below what the
    theorem proves (tests/test_accounting.py checks both). Kept for comparison only; svtjax's
    guarantees use Theorem 11 + Lemma 3 numerically (:func:`theorem12_epsilon`'s default)."""
    from scipy.special import gammaln

    _check_delta(delta, allow_zero=False)
    d = float(sensitivity)
    a = d ** 2 / (2 * float(sigma1) ** 2) + 2 * c * d ** 2 / float(sigma2) ** 2
    log_count = math.log(c) + float(gammaln(k_max + 1) - gammaln(c + 1) - gammaln(k_max - c + 1))
    return a + math.sqrt(2 * a * (math.log(1 / float(delta)) + log_count))


def theorem12_epsilon(sigma1: float, c: int, c_stage: int, k_stage: int, delta: float, *,
                      sigma2: Optional[float] = None, sensitivity: float = 1.0,
                      composition: str = "optimal", stage_bound: str = "theorem11") -> float:
    """Theorem 12 evaluated numerically (its Remark: "use the optimal advanced composition ...
    and search for the best parameters"): Algorithm 3 with Gaussian noises, RESAMPLE = False,
    per-stage cut-off c′ and cap k′ is (ε, δ̃ + m δ′)-DP, m = ⌈c/c′⌉.

    Each stage is (ε_s(δ′), δ′)-DP by Theorem 11 (with c′, k′) converted by Lemma 3 over
    ``DEFAULT_ORDERS`` (``stage_bound="theorem11"``) or by the closed form after Theorem 11
    (``"remark"``); every stage is charged the worst stage's c′ (the last stage's c̃ ≤ c′). The
    m stages compose by ``composition``: ``"strong"`` (DRV'10, δ̃ = δ − mδ′), ``"kov"``
    (Kairouz et al. Thm 3.5) or ``"optimal"`` (Kairouz et al. Thm 3.3). δ′ is chosen to minimise
    ε. The conditions of the asymptotic statement (σ2 = 2σ1, σ1 ≥ 8Δ sqrt(c log(1/δ′)),
    c′ C(k′, c′) ≤ 1/δ′) are not needed for this numeric bound (Theorem 11 and the composition
    theorems hold without them). With m = 1 this is Theorem 11 + Lemma 3.
    """
    delta = _check_delta(delta, allow_zero=False)
    _validate.integer("c", c, minimum=1)
    _validate.integer("c_stage", c_stage, minimum=1)
    _validate.integer("k_stage", k_stage, minimum=1)
    s1 = float(sigma1)
    s2 = 2 * s1 if sigma2 is None else float(sigma2)
    c_stage = min(int(c_stage), int(c))
    m = -(-int(c) // c_stage)
    d = float(sensitivity)

    def stage_eps(delta_stage):
        if stage_bound == "remark":
            return theorem11_gaussian_epsilon(s1, s2, c_stage, k_stage, delta_stage, d)
        rdp = theorem11_rdp(DEFAULT_ORDERS, lambda a: gaussian_rdp(s1, a, d),
                            lambda a: gaussian_rdp(s2, a, 2 * d), c_stage, k_stage)
        return rdp_to_dp(DEFAULT_ORDERS, rdp, delta_stage)

    if m == 1:
        return stage_eps(delta)
    return _compose_stages(stage_eps, m, delta, composition)


def _compose_stages(stage_eps: Callable[[float], float], m: int, delta: float,
                    composition: str) -> float:
    """min over δ′ of the ε of m adaptive stages, each (stage_eps(δ′), δ′)-DP, composed by
    ``composition`` ("strong", "kov" or "optimal") into a total δ."""
    from scipy.optimize import minimize_scalar

    if composition not in ("strong", "kov", "optimal"):
        raise ValueError(f"composition must be 'strong', 'kov' or 'optimal'; got {composition!r}")

    def total(log_ds):
        ds = math.exp(log_ds)
        es = stage_eps(ds)
        if not math.isfinite(es):
            return math.inf
        if composition == "strong":
            rest = delta - m * ds
            return math.inf if rest <= 0 else strong_composition(es, ds, m, rest)[0]
        if composition == "kov":
            return kov_composition([es] * m, [ds] * m, delta)
        return optimal_composition(es, ds, m, delta)

    hi = math.log(delta / m) + math.log1p(-1e-9)
    grid = np.linspace(hi - 25.0, hi, 60)
    vals = np.array([total(x) for x in grid])
    i = int(np.argmin(vals))
    if not math.isfinite(vals[i]):
        return math.inf
    lo_b, hi_b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = minimize_scalar(total, bounds=(lo_b, hi_b), method="bounded", options={"xatol": 1e-9})
    return float(min(res.fun, vals[i]))


def stagewise_svt_guarantee(threshold_noise, query_noise, c: int, c_stage: int, *,
                            k_stage: Optional[int] = None, resample: bool = False,
                            sensitivity: float = 1.0, margin: Optional[float] = None,
                            composition: str = "optimal") -> Guarantee:
    """Algorithm 3 (stage-wise generalized SVT): m = ⌈c/c′⌉ adaptive stages, each Algorithm 2
    with cut-off ≤ c′ and cap k′ (``k_stage``), guaranteed by :func:`generalized_svt_guarantee`.

    ε(δ) is the smaller of (a) the m stage RDP curves composed (Mironov Prop. 1) and converted
    by Lemma 3, and (b) Theorem 12's hybrid: each stage (ε_s(δ′), δ′)-DP via Lemma 3, the m
    stages composed by ``composition`` (strong, KOV Thm 3.5 or optimal KOV Thm 3.3), δ′
    optimised (:func:`theorem12_epsilon` is (b) for Gaussian noise with Theorem 11 per stage).
    """
    c, c_stage = int(c), min(int(c_stage), int(c))
    m = -(-c // c_stage)
    stage = generalized_svt_guarantee(threshold_noise, query_noise, c_stage, k_max=k_stage,
                                      resample=resample, sensitivity=sensitivity, margin=margin)
    where = (f"Zhu & Wang 2020, Algorithm 3 / Theorem 12 ({m} stages of c′ = {c_stage}, "
             f"k′_max = {k_stage if k_stage is not None else '∞'}, {composition} composition); "
             f"each stage: {stage.statement}")
    if isinstance(stage, _NoFiniteEpsilon):
        return Unproven(where)
    if m == 1:
        return dataclasses.replace(stage, statement=where)
    rdp_total = compose(stage, times=m)

    def fn(delta):
        return min(rdp_total.epsilon(delta),
                   _compose_stages(stage.epsilon, m, delta, composition))

    return EpsilonOfDelta(where, fn)


def generalized_svt_guarantee(threshold_noise, query_noise, c: int, *,
                              k_max: Optional[int] = None, resample: bool = False,
                              sensitivity: float = 1.0, margin: Optional[float] = None
                              ) -> Guarantee:
    """Every bound of Zhu & Wang (2020) that applies to Algorithm 2 with these noises; the RDP
    curve is their pointwise minimum.

    With ε_ρ = RDP of ``threshold_noise`` at sensitivity Δ, ε_ν = RDP of ``query_noise`` at 2Δ:

    * one SVT with cut-off 1 (c = 1, or each of the c rounds when RESAMPLE: a ⊤ followed by a
      fresh threshold starts an independent c = 1 SVT on the rest of the stream, so the c rounds
      compose, Mironov 2017 Prop. 1): Theorem 8 (1) with sup E[K|ρ] ≤ k_max + 1 when k_max is
      finite; Theorem 8 (3) when ε_ν(∞) < ∞ (Laplace query noise); Proposition 10 when both
      noises are Gaussian with σ2 ≥ √3σ1 and ``margin`` (the threshold T, queries in Q+(Δ)) is
      given; with both noises Laplace also Lemma 4 applied to the pure ε_ρ(∞) + ε_ν(∞)
      (Lemma 7's ε1 + ε2);
    * c > 1 without RESAMPLE: Theorem 11 when k_max is finite; with both noises Laplace,
      Lemma 7's pure ε_ρ(∞) + c ε_ν(∞) and its Lemma 4 curve.

    Returns :class:`Unproven` when no bound applies (e.g. Gaussian query noise with neither a
    length cap nor ``margin``: Theorem 8 (1)-(2) "do not imply RDP" for k_max = ∞).
    """
    d = float(sensitivity)
    c = int(c)
    rho = lambda a: noise_rdp(threshold_noise, a, d)  # noqa: E731
    nu = lambda a: noise_rdp(query_noise, a, 2 * d)  # noqa: E731
    rho_pure = noise_pure_epsilon(threshold_noise, d)
    nu_pure = noise_pure_epsilon(query_noise, 2 * d)
    finite_k = k_max is not None and math.isfinite(k_max)
    curves: list[Callable] = []
    names: list[str] = []
    per_round = c == 1 or resample
    rounds = c if resample else 1
    if per_round:
        pure = rho_pure + nu_pure
        if finite_k:
            log_k = math.log1p(float(k_max))
            curves.append(lambda a: theorem8_rdp(a, rho, nu, bound=1, log_sup_k=log_k))
            names.append("Theorem 8 (1) with sup E[K|ρ] ≤ k_max + 1")
        if math.isfinite(nu_pure):
            curves.append(lambda a: theorem8_rdp(a, rho, nu, bound=3, nu_pure=nu_pure))
            names.append("Theorem 8 (3)")
        if (margin is not None and threshold_noise.family == "gaussian"
                and query_noise.family == "gaussian"
                and float(query_noise.sigma) >= math.sqrt(3) * float(threshold_noise.sigma)):
            s1, s2 = float(threshold_noise.sigma), float(query_noise.sigma)
            curves.append(lambda a: proposition10_rdp(a, s1, s2, margin, d))
            names.append(f"Proposition 10 (queries in Q+(Δ), T = {float(margin):g})")
    else:
        pure = rho_pure + c * nu_pure
        if finite_k:
            curves.append(lambda a: theorem11_rdp(a, rho, nu, c, int(k_max)))
            names.append("Theorem 11")
    if math.isfinite(pure):
        curves.append(lambda a: pure_dp_rdp(pure, a))
        names.append(f"Lemma 7 ({'ε1 + ε2' if per_round else 'ε1 + cε2'} = {pure:.6g}) "
                     "with Lemma 4")
    where = (f"Zhu & Wang 2020, Algorithm 2 ({threshold_noise.family} threshold noise, "
             f"{query_noise.family} query noise, c = {c}, k_max = "
             f"{k_max if finite_k else '∞'}, RESAMPLE = {bool(resample)})")
    if not curves:
        return Unproven(f"{where}: no bound applies — Theorem 8 (1)-(2) need k_max < ∞ or the "
                        "non-negative-query margin of Proposition 10, Theorem 8 (3) needs "
                        "ε_ν(∞) < ∞, Theorem 11 needs k_max < ∞")
    fns = tuple(curves)

    def curve(a):
        return rounds * np.min(np.stack([np.broadcast_to(f(a), np.shape(a)) for f in fns]),
                               axis=0)

    how = f"{rounds} rounds composed (RDP), each: " if rounds > 1 else ""
    return RDP(f"{where}: {how}min of {', '.join(names)}", curve, rounds * pure)


def gaussian_mechanism_guarantee(sigma: float, k: int, sensitivity: float = 1.0) -> RDP:
    """Section 4's baseline: releasing k Δ-sensitive answers with N(0, σ²) noise, composed
    under RDP: ε(α) = kαΔ²/(2σ²)."""
    s, d = float(sigma), float(sensitivity)
    return RDP(f"Gaussian mechanism, σ = {s:g}, composed {int(k)} times (Mironov 2017)",
               lambda a: int(k) * gaussian_rdp(s, a, d))


def _bernoulli_renyi(log_p, log_q, alpha):
    """D_α(Bern(p) || Bern(q)) from log p, log q (vectorised over α)."""
    log1p_ = np.log(-np.expm1(log_p))
    log1q_ = np.log(-np.expm1(log_q))
    t1 = alpha * log_p - (alpha - 1) * log_q
    t2 = alpha * log1p_ - (alpha - 1) * log1q_
    return np.logaddexp(t1, t2) / (alpha - 1)


def noisy_screening_rdp(orders, sigma: float, threshold: float, query: float,
                        sensitivity: float = 1.0) -> np.ndarray:
    """Data-dependent RDP of one noisy-screening step (Section 4, Figure 2: answer whether
    q(D) + N(0, σ²) ≥ T; Papernot et al. 2018 Thm 6 form, autodp ``RDP_noisy_screen``): the
    Rényi divergence of the two Bernoulli outputs, maximised over the neighbours
    q(D′) = q(D) ± Δ and both directions. Data-dependent: the value is itself sensitive."""
    from scipy.stats import norm

    alpha = _orders(orders)
    s, t, q, d = float(sigma), float(threshold), float(query), float(sensitivity)
    log_p = float(norm.logsf((t - q) / s))
    worst = np.zeros_like(alpha)
    for q2 in (q - d, q + d):
        log_p2 = float(norm.logsf((t - q2) / s))
        worst = np.maximum(worst, _bernoulli_renyi(log_p, log_p2, alpha))
        worst = np.maximum(worst, _bernoulli_renyi(log_p2, log_p, alpha))
    return worst


def calibrate(guarantee_of_scale: Callable[[float], Guarantee], epsilon: float,
              delta: float = 0.0, *, start: float = 1.0, rtol: float = 1e-10) -> float:
    """The smallest noise scale s whose guarantee meets the target: ``guarantee_of_scale(s)
    .epsilon(delta) <= epsilon`` (ε(δ) must be non-increasing in s). Bracketing by doubling,
    then bisection in log scale to relative tolerance ``rtol``; returns the upper end (which
    meets the target).

    Raises:
      ValueError: no scale in [1e-12, 1e12] × ``start`` meets the target.
    """
    _validate.positive("epsilon", epsilon)
    target = float(epsilon)
    ok = lambda s: guarantee_of_scale(s).epsilon(delta) <= target  # noqa: E731
    lo = hi = float(start)
    if ok(hi):
        while ok(lo):
            lo /= 2
            if lo < 1e-12 * start:
                return lo
    else:
        while not ok(hi):
            hi *= 2
            if hi > 1e12 * start:
                raise ValueError(f"no noise scale up to {hi:g} meets epsilon={epsilon} at "
                                 f"delta={delta}")
        lo = hi / 2
    while hi / lo - 1 > rtol:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
