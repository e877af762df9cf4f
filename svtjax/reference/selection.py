"""Plain numpy loops for the one-shot selection mechanisms, written from their papers.

``em_peeling`` follows Lyu, Su & Li 2017, Section 4.4 (EM run c times, picked items removed);
``report_noisy_max`` follows Ding, Wang, Zhang & Kifer 2019, Algorithm 1, lines 2-5 (without the
gaps). Both take the same ``Draws`` as the JAX kernels: ``draws.query[i]`` is the standard variate
of item i (Gumbel for ``em_peeling``; the ``noise`` family for ``report_noisy_max``), and a noise
of scale b at item i is ``b * draws.query[i]``, computed in the scores' dtype with b rounded from
float64 once. They never call the JAX code. ``thresholds`` are accepted and ignored, and
``draws.order`` is not used: the picks do not depend on a visiting order.

Ties between equal noisy scores go to the lower item index (the loops scan items in increasing
index and replace the incumbent only on a strictly larger score).
"""

from __future__ import annotations

import numpy as np

from svtjax._core import Draws, Outcome

__all__ = ["em_peeling", "report_noisy_max"]


def _setup(draws: Draws, queries, k: int):
    q = np.asarray(queries)
    if not np.issubdtype(q.dtype, np.floating):
        q = q.astype(np.float64)
    n = q.shape[0]
    if k > n:
        raise ValueError(f"cannot pick {k} distinct items out of {n}")
    return q, q.dtype.type, n


def _outcome(picks: list, cost: float, dtype) -> Outcome:
    k = len(picks)
    return Outcome(answers=np.ones(k, np.int8), items=np.asarray(picks, np.int32),
                   values=np.full(k, np.nan, dtype), cost=np.full(k, dtype(cost), dtype))


def em_peeling(draws, queries, thresholds, *, epsilon, c, sensitivity=1.0, monotonic=False):
    """Lyu'17 §4.4: c rounds of the exponential mechanism at ε/c, each pick removed.

    Round r selects item i among the remaining ones with probability ∝ exp(ε q_i / (2cΔ))
    (exp(ε q_i / (cΔ)) for monotonic queries). Each round is sampled with the Gumbel-max trick —
    the remaining item with the largest q_i + b·G_i, b = 2cΔ/ε (cΔ/ε), G_i ~ Gumbel(0, 1) —
    reusing item i's one variate G_i = ``draws.query[i]`` in every round (Durfee & Rogers 2019:
    the rounds then still have the peeling law).
    """
    del thresholds
    q, dtype, n = _setup(draws, queries, c)
    factor = 1.0 if monotonic else 2.0
    b = dtype(factor * c * sensitivity / epsilon)                # Gumbel scale 1/w
    gumbel = np.asarray(draws.query)
    remaining = list(range(n))                                    # the pool of candidates
    picks = []
    for _ in range(c):                                            # "one runs EM c times"
        best, best_score = None, None
        for i in remaining:                                       # EM draw via Gumbel-max
            score = q[i] + b * dtype(gumbel[i])
            if best is None or score > best_score:
                best, best_score = i, score
        picks.append(best)
        remaining.remove(best)                                    # "removed from the pool"
    return _outcome(picks, epsilon / c, dtype)


def report_noisy_max(draws, queries, thresholds, *, epsilon, k=1, sensitivity=1.0,
                     monotonic=False, noise="laplace"):
    """Ding'19 Algorithm 1 without gaps: q̃_i = q_i + η_i, report argmax_k q̃ (best first).

    η_i has scale 2kΔ/ε (kΔ/ε for monotonic queries) in the named family: Lap (line 3), Gumbel,
    or one-sided Exp; ``draws.query`` holds the standard variates of that family.
    """
    del thresholds
    if noise not in ("laplace", "gumbel", "exponential"):
        raise ValueError(f"unknown noise {noise!r}")
    q, dtype, n = _setup(draws, queries, k)
    factor = 1.0 if monotonic else 2.0
    b = dtype(factor * k * sensitivity / epsilon)
    z = np.asarray(draws.query)
    noisy = [q[i] + b * dtype(z[i]) for i in range(n)]            # lines 2-4
    # line 5: the indices of the k largest noisy values in descending order; a stable sort on
    # the negated values keeps equal values in increasing index order.
    order = np.argsort(-np.asarray(noisy, dtype), kind="stable")
    return _outcome([int(j) for j in order[:k]], epsilon / k, dtype)


def noisy_top_k_gap(draws, queries, thresholds, *, epsilon, k=1, sensitivity=1.0,
                    monotonic=False):
    """Ding'19 Algorithm 1 (Noisy-Top-K-with-Gap), line by line."""
    del thresholds
    q, dtype, n = _setup(draws, queries, k)
    b = dtype((1.0 if monotonic else 2.0) * k * sensitivity / epsilon)
    z = np.asarray(draws.query)
    noisy = [q[i] + b * dtype(z[i]) for i in range(n)]            # lines 2-4: Lap(2k/ε)
    order = np.argsort(-np.asarray(noisy, dtype), kind="stable")  # line 5: argmax_{k+1}
    j = [int(x) for x in order[:k + 1]]
    gaps = [noisy[j[i]] - noisy[j[i + 1]] for i in range(k)]      # line 7: g_i
    out = _outcome(j[:k], epsilon / k, dtype)
    return out._replace(values=np.asarray(gaps, dtype))          # line 8
