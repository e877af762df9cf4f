"""Exact laws of the ordered picks of the peeling selection mechanisms (no sampling).

A peeled top-k selection runs k independent rounds of a top-1 mechanism on the candidates not
yet picked, so the ordered picks (j_1, ..., j_k) have probability

    P(j_1, ..., j_k) = Π_r P_round(j_r | candidates R_r = all − {j_1, ..., j_{r-1}}).

Two round laws, for scores q with the mechanism's scale b (``mech.scale()``: 2kΔ/ε, kΔ/ε for
monotonic scores):

* the exponential mechanism (McSherry & Talwar 2007): P(i | R) = exp(q_i/b) / Σ_{l∈R}
  exp(q_l/b). ``em-peeling`` (Lyu, Su, Li 2017, Section 4.4), ``gumbel-top-k`` and
  ``report-noisy-max`` with Gumbel noise (one-shot Gumbel top-k has the peeling law: Durfee &
  Rogers, NeurIPS 2019).
* permute-and-flip (McKenna & Sheldon, NeurIPS 2020, Algorithm 1): with p_l = exp((q_l −
  q*)/b), q* = max_R q, every candidate's coin is heads independently with probability p_l and
  the pick is the first heads of a uniformly random order, i.e. a uniformly random member of
  the set H of heads. So P(i | R) = p_i E[1/(1 + Y_i)], Y_i = the number of heads among R − {i}
  (a Poisson-binomial count), and E[1/(1 + Y)] = ∫_0^1 E[t^Y] dt gives

      P(i | R) = p_i ∫_0^1 Π_{l∈R, l≠i} (1 − p_l + p_l t) dt,

  the integral of a polynomial of degree |R| − 1, which Gauss–Legendre quadrature with
  ⌈|R|/2⌉ nodes integrates exactly (up to rounding; every factor lies in [0, 1]).
  ``permute-and-flip``, ``report-noisy-max-exp`` (identical in law: Ding, Kifer, Saghaian,
  Steinke, Wang, Xiao, Zhang 2021, arXiv:2105.07260) and ``report-noisy-max`` with exponential
  noise and k = 1.

Everything is float64 numpy on the host; the tests check the permute-and-flip law against an
independent one-dimensional quadrature of report-noisy-max with exponential noise.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Optional, Sequence

import numpy as np

__all__ = ["ROUND_LAWS", "round_law", "picks_law", "picks_law_supported"]

ROUND_LAWS = ("exponential-mechanism", "permute-and-flip")
"""The round laws :func:`round_law` knows."""

MAX_OUTCOMES = 1_000_000


def _kind(mech: Any) -> str:
    """The round law of a built mechanism, or a ValueError naming the supported ones."""
    name = getattr(mech, "name", type(mech).__name__)
    noise = getattr(mech, "noise", None)
    if name in ("em-peeling", "gumbel-top-k") or (name == "report-noisy-max"
                                                  and noise == "gumbel"):
        return "exponential-mechanism"
    if name in ("permute-and-flip", "report-noisy-max-exp") or (
            name == "report-noisy-max" and noise == "exponential" and mech.num_picks() == 1):
        return "permute-and-flip"
    detail = f" with noise={noise!r}, k={mech.num_picks()}" if name == "report-noisy-max" else ""
    raise ValueError(f"svtjax.exact.picks_law: no exact peeling law for {name!r}{detail}; "
                     f"supported: {', '.join(picks_law_supported())}")


def picks_law_supported() -> list[str]:
    """What :func:`picks_law` takes."""
    return ["em-peeling", "gumbel-top-k", "permute-and-flip", "report-noisy-max-exp",
            "report-noisy-max (noise='gumbel', any k; noise='exponential', k = 1)"]


def _scores(queries: Any) -> np.ndarray:
    q = np.asarray(queries, np.float64)
    if q.ndim != 1 or q.size == 0 or not np.all(np.isfinite(q)):
        raise ValueError(f"queries must be a non-empty 1-D array of finite numbers; got shape "
                         f"{q.shape}")
    return q


def round_law(queries: Any, scale: float, kind: str,
              remaining: Optional[Sequence[int]] = None) -> np.ndarray:
    """P(item i is the round's pick), float64[n] (0 outside ``remaining``).

    Args:
      queries: the scores q (float[n]).
      scale: b > 0 (weight 1/b of the exponential mechanism; permute-and-flip's coins
        exp((q − q*)/b)).
      kind: one of :data:`ROUND_LAWS`.
      remaining: the candidates (default: all items).
    """
    q = _scores(queries)
    if kind not in ROUND_LAWS:
        raise ValueError(f"kind must be one of {list(ROUND_LAWS)}; got {kind!r}")
    b = float(scale)
    if not (math.isfinite(b) and b > 0):
        raise ValueError(f"scale must be a finite number > 0; got {scale!r}")
    idx = np.arange(q.size) if remaining is None else np.asarray(sorted(set(remaining)), int)
    if idx.size == 0:
        raise ValueError("remaining must name at least one candidate")
    out = np.zeros(q.size)
    p = np.exp((q[idx] - q[idx].max()) / b)
    if kind == "exponential-mechanism":
        out[idx] = p / p.sum()
        return out
    m = idx.size
    t, w = np.polynomial.legendre.leggauss(max(1, (m + 1) // 2))
    t, w = 0.5 * (t + 1.0), 0.5 * w                                     # nodes on [0, 1]
    f = 1.0 - p[:, None] * (1.0 - t[None, :])                            # [m, nodes]
    ones = np.ones((1, t.size))
    before = np.cumprod(np.vstack([ones, f[:-1]]), axis=0)             # Π_{l<i}
    after = np.cumprod(np.vstack([ones, f[:0:-1]]), axis=0)[::-1]      # Π_{l>i}
    out[idx] = p * ((before * after) @ w)
    return out


def picks_law(mech: Any, queries: Any, *, max_outcomes: int = MAX_OUTCOMES
              ) -> dict[tuple[int, ...], float]:
    """The probability of every ordered pick tuple (j_1, ..., j_k) of ``mech`` on ``queries``.

    Args:
      mech: a built mechanism of :func:`picks_law_supported` (its scale and k are read).
      queries: the scores (thresholds play no part in selection).
      max_outcomes: refuse when n!/(n − k)! exceeds this.

    Raises:
      ValueError: another mechanism, k > n, or too many outcomes.
    """
    kind = _kind(mech)
    q = _scores(queries)
    k, n = int(mech.num_picks()), q.size
    if k > n:
        raise ValueError(f"k ({k}) must not exceed the number of queries ({n})")
    outcomes = math.perm(n, k)
    if outcomes > max_outcomes:
        raise ValueError(f"{outcomes} ordered pick tuples (n = {n}, k = {k}) exceed "
                         f"max_outcomes = {max_outcomes}")
    b = float(mech.scale())
    cache: dict[frozenset, np.ndarray] = {}

    def law_of(picked: tuple) -> np.ndarray:
        rest = frozenset(range(n)) - frozenset(picked)
        if rest not in cache:
            cache[rest] = round_law(q, b, kind, sorted(rest))
        return cache[rest]

    out = {}
    for picks in itertools.permutations(range(n), k):
        prob = 1.0
        for r, j in enumerate(picks):
            prob *= law_of(picks[:r])[j]
        out[picks] = prob
    return out
