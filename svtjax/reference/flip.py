"""Plain numpy loops for permute-and-flip, peeled report-noisy-max with exponential noise and
one-shot Gumbel top-k, written from their papers (never from the JAX kernels).

They read the same ``Draws`` as the kernels (:mod:`svtjax.mechanisms.flip`): for the peeled
mechanisms row r of ``draws.query`` (standard exponentials E) and ``draws.permutation``
(standard uniforms U) are round r's numbers for every item; for ``gumbel_top_k``
``draws.query[i]`` is item i's standard Gumbel variate. Noise of scale b is ``b * E`` in the
scores' dtype, b rounded from float64 once. ``thresholds`` are accepted and ignored.
"""

from __future__ import annotations

import numpy as np

from svtjax.reference.selection import _outcome, _setup

__all__ = ["permute_and_flip", "report_noisy_max_exp", "gumbel_top_k"]


def _scale(dtype, epsilon, k, sensitivity, monotonic):
    """b = 2kΔ/ε (kΔ/ε for monotonic scores): every round runs at ε/k."""
    return dtype((1.0 if monotonic else 2.0) * k * sensitivity / epsilon)


def permute_and_flip(draws, queries, thresholds, *, epsilon, k=1, sensitivity=1.0,
                     monotonic=False):
    """McKenna & Sheldon 2020, Algorithm 1, run k times at ε/k with the picks removed.

    Round r: q* = max of the remaining scores; visit the remaining candidates in a uniformly
    random order (sorted by their uniform ``draws.permutation[r]``, equal values by index); flip
    a coin with heads probability exp((q_i − q*)/b) for each (heads iff q_i + b·E ≥ q*, E =
    ``draws.query[r, i]`` standard exponential: P(E ≥ (q* − q_i)/b) = exp((q_i − q*)/b)) and
    return the first heads.
    """
    del thresholds
    q, dtype, n = _setup(draws, queries, k)
    b = _scale(dtype, epsilon, k, sensitivity, monotonic)
    coin = np.asarray(draws.query)
    perm = np.asarray(draws.permutation)
    remaining = list(range(n))
    picks = []
    for r in range(k):
        q_star = max(q[i] for i in remaining)                        # q* = max_r q_r
        order = sorted(remaining, key=lambda i: (perm[r, i], i))    # a random permutation
        for i in order:
            if q[i] + b * dtype(coin[r, i]) >= q_star:               # flip: heads w.p. e^{..}
                picks.append(i)
                break
        remaining.remove(picks[-1])                                   # peeling
    return _outcome(picks, epsilon / k, dtype)


def report_noisy_max_exp(draws, queries, thresholds, *, epsilon, k=1, sensitivity=1.0,
                         monotonic=False):
    """Report-noisy-max with Exp(b) noise, fresh every round, k rounds with picks removed."""
    del thresholds
    q, dtype, n = _setup(draws, queries, k)
    b = _scale(dtype, epsilon, k, sensitivity, monotonic)
    z = np.asarray(draws.query)
    remaining = list(range(n))
    picks = []
    for r in range(k):
        best, best_value = None, None
        for i in remaining:                                           # argmax q_i + Z_i
            value = q[i] + b * dtype(z[r, i])
            if best is None or value > best_value:
                best, best_value = i, value
        picks.append(best)
        remaining.remove(best)
    return _outcome(picks, epsilon / k, dtype)


def gumbel_top_k(draws, queries, thresholds, *, epsilon, k=1, sensitivity=1.0,
                 monotonic=False):
    """Durfee & Rogers 2019: add Gumbel(2Δ/ε′) (ε′ = ε/k; Δ/ε′ monotonic) to every score once
    and report the indices of the k largest noisy scores, largest first."""
    del thresholds
    q, dtype, n = _setup(draws, queries, k)
    b = _scale(dtype, epsilon, k, sensitivity, monotonic)
    g = np.asarray(draws.query)
    noisy = np.asarray([q[i] + b * dtype(g[i]) for i in range(n)], dtype)
    order = np.argsort(-noisy, kind="stable")                         # equal values by index
    return _outcome([int(j) for j in order[:k]], epsilon / k, dtype)
