"""Guarantee objects, RDP curves of noise mechanisms, and RDP to (ε, δ) conversions
(documented in :mod:`svtjax.accounting`)."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, ClassVar, Optional

import numpy as np

from svtjax import _validate


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
