"""Lower confidence bounds on ε from event counts: one-sided Clopper–Pearson bounds, the
(ε, δ) form of Jagielski et al. (2020) and the conditional (coin-split) form for pure DP."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from svtjax.audit._checks import _check_confidence, _check_delta, _check_int
from svtjax.audit.constants import _PESSIMISM, DEFAULT_CONFIDENCE


def _cp_lower(k, n, alpha):
    """One-sided (1 − alpha) Clopper–Pearson lower bound on p from k of n (k may be real)."""
    from scipy import special  # imported where used: `import svtjax` stays fast

    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    safe = np.where(k > 0, k, 1.0)
    return np.where(k > 0, special.betaincinv(safe, np.maximum(n - safe + 1.0, 1e-300), alpha),
                    0.0)


def _cp_upper(k, n, alpha):
    """One-sided (1 − alpha) Clopper–Pearson upper bound on p from k of n (k may be real)."""
    from scipy import special  # imported where used: `import svtjax` stays fast

    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    safe = np.where(k < n, k, n - 1.0)
    return np.where(k < n, special.betaincinv(safe + 1.0, np.maximum(n - safe, 1e-300),
                                              1.0 - alpha), 1.0)


def _log_ratio(p_low, p_high, delta):
    """log((p_low − δ)/p_high), −inf where p_low ≤ δ."""
    num = np.asarray(p_low, dtype=float) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num > 0, np.log(np.maximum(num, 1e-300) / p_high), -np.inf)


def _logit_lower(k, s, alpha):
    """logit of the one-sided (1 − alpha) Clopper–Pearson lower bound on a share from k of s
    (−inf where k = 0)."""
    theta = _cp_lower(k, s, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(theta > 0, np.log(np.maximum(theta, 1e-300)) - np.log1p(-theta),
                        -np.inf)


@dataclasses.dataclass(frozen=True)
class Bound:
    """A lower confidence bound on ε and the counts behind it.

    With probability ≥ ``confidence`` (over the trials) every (ε, ``delta``) the mechanism
    satisfies has ε ≥ ``epsilon``.

    Attributes:
      epsilon: the bound (≥ 0).
      count, trials: E happened ``count`` times in ``trials`` runs on D.
      count_prime, trials_prime: the same on D′.
      method: "conditional" (:func:`conditional_lower_bound`) or "clopper-pearson"
        (:func:`epsilon_lower_bound`).
      p_low, p_prime_high: the two Clopper–Pearson bounds ("clopper-pearson" only).
      share_low: the lower bound on P[D | E] under fair allocation ("conditional" only).
    """

    epsilon: float
    count: int
    trials: int
    count_prime: int
    trials_prime: int
    confidence: float
    delta: float
    method: str
    p_low: Optional[float] = None
    p_prime_high: Optional[float] = None
    share_low: Optional[float] = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check_counts(count, trials, count_prime, trials_prime, minimum_trials: int) -> None:
    for name, k, n in (("count", count, trials), ("count_prime", count_prime, trials_prime)):
        _check_int(name.replace("count", "trials"), n, minimum_trials)
        _check_int(name, k, 0)
        if k > n:
            raise ValueError(f"{name} ({k}) cannot exceed its number of trials ({n})")


def epsilon_lower_bound(count: int, trials: int, count_prime: int, trials_prime: int, *,
                        confidence: float = DEFAULT_CONFIDENCE, delta: float = 0.0) -> Bound:
    """The largest ε with ``p_low ≥ e^ε p′_high + δ`` (0 if none): a lower confidence bound.

    Args:
      count, trials: E happened ``count`` times in ``trials`` runs on D.
      count_prime, trials_prime: the same on D′ (independent runs; any sizes fixed in advance).
      confidence: joint level of the two one-sided Clopper–Pearson bounds (each at
        (1 − confidence)/2; union bound).
      delta: δ of the (ε, δ) form (0: pure DP).

    Returns:
      A :class:`Bound` with ``method="clopper-pearson"``.

    Raises:
      ValueError: counts outside [0, trials], trials < 1, confidence outside (0, 1), δ outside
        [0, 1).
    """
    _check_counts(count, trials, count_prime, trials_prime, 1)
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    alpha = (1.0 - confidence) / 2.0
    p_low = float(_cp_lower(count, trials, alpha))
    p_high = float(_cp_upper(count_prime, trials_prime, alpha))
    eps = max(0.0, float(_log_ratio(p_low, p_high, delta)))
    return Bound(eps, int(count), int(trials), int(count_prime), int(trials_prime), confidence,
                 delta, "clopper-pearson", p_low=p_low, p_prime_high=p_high)


def conditional_lower_bound(count: int, trials: int, count_prime: int, trials_prime: int, *,
                            confidence: float = DEFAULT_CONFIDENCE) -> Bound:
    """Pure-DP lower bound on ε from the share of E's occurrences that came from D.

    Valid when each of the ``trials + trials_prime`` runs was sent to D or D′ by an independent
    fair coin (so ``trials`` ~ Binomial(total, 1/2), drawn independently of the runs, as
    :func:`audit` and :func:`audit_pair` do). Then, given the s = count + count_prime runs in E,
    count ~ Binomial(s, θ) exactly, with θ = p/(p + p′); an ε-DP mechanism has
    log(p/p′) = logit θ ≤ ε, so the one-sided Clopper–Pearson bound θ_low at level
    1 − confidence gives ε ≥ logit θ_low with probability ≥ confidence. Not for δ > 0 (use
    :func:`epsilon_lower_bound`).

    Args:
      count, trials: E happened ``count`` times in ``trials`` runs on D (trials may be 0).
      count_prime, trials_prime: the same on D′.
      confidence: the level of the bound.

    Returns:
      A :class:`Bound` with ``method="conditional"`` (ε = 0 when count is 0).

    Raises:
      ValueError: counts outside [0, trials], confidence outside (0, 1).
    """
    _check_counts(count, trials, count_prime, trials_prime, 0)
    confidence = _check_confidence(confidence)
    share = float(_cp_lower(count, count + count_prime, 1.0 - confidence)) if count else 0.0
    eps = max(0.0, float(_logit_lower(count, count + count_prime, 1.0 - confidence))
              if count else 0.0)
    return Bound(eps, int(count), int(trials), int(count_prime), int(trials_prime), confidence,
                 0.0, "conditional", share_low=share)


def _predicted(x, y, n, n_val, alpha, delta, optimistic=False, level=None):
    """The bound expected from ``n_val`` validation trials per side for events seen x and y
    times in ``n`` trials per side: pessimistic (optimistic: the reverse) one-sided
    Clopper–Pearson estimates of the two probabilities at ``level`` (default 1σ), scaled to
    ``n_val``; at level 1/2, the point estimates (k + 1/2)/(n + 1)."""
    level = _PESSIMISM if level is None else level
    if level == 0.5:
        p1 = (np.asarray(x, float) + 0.5) / (n + 1.0)
        p2 = (np.asarray(y, float) + 0.5) / (n + 1.0)
    elif optimistic:
        p1, p2 = _cp_upper(x, n, level), _cp_lower(y, n, level)
    else:
        p1, p2 = _cp_lower(x, n, level), _cp_upper(y, n, level)
    if delta == 0.0:
        return _logit_lower(p1 * n_val, (p1 + p2) * n_val, alpha)
    k1 = np.minimum(p1 * n_val, n_val)
    k2 = np.minimum(p2 * n_val, n_val - 1e-9)
    return _log_ratio(_cp_lower(k1, n_val, alpha / 2), _cp_upper(k2, n_val, alpha / 2), delta)
