"""Plain numpy loops for permute-and-flip, peeled report-noisy-max with exponential noise and
one-shot Gumbel top-k, written from their papers and the sampling construction of the peeled
rounds (never from the JAX kernels).

They read the same ``Draws`` as the kernels (:mod:`svtjax.mechanisms.flip`): for the peeled
mechanisms round r's blocks of proposals ``draws.gap[r]`` (standard exponentials),
``draws.mark[r]`` and ``draws.accept[r]`` (standard uniforms) and its fallback uniforms
``draws.fallback[r, i]`` (the sampler of :mod:`svtjax.mechanisms._peeled`, a thinned Poisson
process whose first kept point is the first heads of permute-and-flip); for ``gumbel_top_k``
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

    A round on the remaining candidates R (q* = max_R q, b the scale): each r ∈ R gets, with
    probability p_r = exp((q_r − q*)/b) (its coin comes up heads), a point uniform on [0, 1]
    (its place in a uniformly random order); the round returns the first heads, the candidate
    with the smallest point. The smallest point is drawn by thinning a dominating Poisson
    process: points at u_j = 1 − exp(−Γ_j/P), Γ_j = sums of ``draws.gap`` (standard
    exponentials), P = Σ_R p_r; mark r with probability p_r/P (inverse CDF of ``draws.mark`` in
    the suffix sums of exp(q/b) over the sorted scores; picked candidates are proposed and
    refused); kept with probability (1 − u)/(1 − p_r·u) (``draws.accept``). After
    ``BLOCKS × PROPOSALS`` proposals without a kept one, the smallest of the points above u,
    u + (1/p_r − u)·(1 − V_r) with V_r = ``draws.fallback[r, i]``. (The construction and why it
    has the law of the first heads: :mod:`svtjax.mechanisms._peeled`.)
    """
    del thresholds
    q, dtype, n = _setup(draws, queries, k)
    b = _scale(dtype, epsilon, k, sensitivity, monotonic)
    q = np.where(q == 0, dtype(0), q).astype(dtype)
    order = np.argsort(-q, kind="stable")                             # decreasing, ties by index
    qs = q[order]
    s = (qs - qs[0]) / b
    log_tail = np.logaddexp.accumulate(s[::-1])[::-1]                  # log Σ_{l ≥ j} exp(s_l)
    gap, mark, accept = (np.asarray(draws[name]) for name in ("gap", "mark", "accept"))
    fallback = np.asarray(draws.fallback)
    blocks, proposals = gap.shape[1], gap.shape[2]
    picks: list = []
    for r in range(k):
        t = next(j for j in range(n) if order[j] not in picks)        # the best remaining
        q_t, log_mass = qs[t], log_tail[t]
        P = np.exp(log_mass - s[t])                                    # Σ_R p_r (+ picked)
        g, pick = dtype(0), None
        for blk in range(blocks):
            for j in range(proposals):
                g = g + gap[r, blk, j]                                 # Γ_j
                w = np.exp(-g / P)                                     # 1 − u_j
                target = np.log1p(-mark[r, blk, j]) + log_mass
                pos = np.searchsorted(-log_tail, -target, side="right") - 1   # mark ∝ p_r
                p = np.exp((qs[pos] - q_t) / b)                        # heads probability
                item = int(order[pos])
                if item not in picks and accept[r, blk, j] * ((1 - p) + p * w) <= w:
                    pick = item                                        # kept: the first heads
                    break
            if pick is not None:
                break
        if pick is None:                                               # the points above u
            u = -np.expm1(-g / P)
            values = [np.inf if i in picks else
                      (1 - fallback[r, i]) * (np.exp((q_t - q[i]) / b) - u) for i in range(n)]
            pick = int(np.argmin(np.asarray(values, dtype)))
        picks.append(pick)
    return _outcome(picks, epsilon / k, dtype)


def report_noisy_max_exp(draws, queries, thresholds, *, epsilon, k=1, sensitivity=1.0,
                         monotonic=False):
    """Report-noisy-max with Exp(b) noise, fresh every round, k rounds with the picks removed.

    Its rounds are permute-and-flip's in law (Ding, Kifer, Saghaian, Steinke, Wang, Xiao, Zhang
    2021: argmax_r q_r + Z_r, Z_r ~ Exp(b), is the first heads; with E_r = Z_r/b, r is heads iff
    q_r + Z_r ≥ q*, and the heads' excesses over q* are i.i.d. Exp(b), so the largest is a
    uniformly random heads), and the kernel samples both with one construction:
    :func:`permute_and_flip`'s, on the same draws.
    """
    return permute_and_flip(draws, queries, thresholds, epsilon=epsilon, k=k,
                            sensitivity=sensitivity, monotonic=monotonic)


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
