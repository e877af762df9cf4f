"""Privacy guarantees as objects: what a mechanism's paper proves.

Every ``mech.privacy()`` returns a :class:`Guarantee` with

* ``epsilon(delta=0.0)`` — the ε it proves at that δ (``inf`` when nothing finite is proved),
* ``rdp(orders)`` — an RDP curve ε(α) where one follows from the guarantee,
* ``statement`` — a one-line citation of the theorem.

References:
  Lyu, Su, Li (2017), Theorems 2-7 and Figure 2.
  Zhu & Wang (2020), Lemma 3 (RDP -> DP) and Lemma 4 (pure DP -> RDP, Bun & Steinke 2016).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from svtjax import _validate

__all__ = ["Guarantee", "PureDP", "NotPrivate", "Unproven", "pure_dp_rdp", "rdp_to_dp"]


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


@dataclasses.dataclass(frozen=True)
class Guarantee:
    """Base class: a proved privacy property with its citation."""

    statement: str

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
