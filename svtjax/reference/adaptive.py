"""Adaptive-Sparse-Vector-with-Gap (Ding et al. 2019, Algorithm 2), line by line in numpy.

``adaptive_svt_gap``: the stopping rule "cost > ε − ε1" (line 15) is evaluated on the integer
branch counts (2·n1 + n2 > 2(k − 1), an exact rewriting given line 1's ε0, ε1, ε2), never on a
float sum. ``adaptive_svt_gap_authors``: as the authors' code (cmla-psu/freegap,
``freegap/adaptivesvt.py``: ``while i < len(q) and cost <= epsilon - epsilon_2``), a running
Python-float (float64) ``cost`` starting at ε0 gains ε2 per top and ε1 per middle answer, and
the run stops when it exceeds ε − ε1; the budget shares are those of their
``freegap/evaluate.py`` (``allocate_x``, ``allocate_y``).
"""

from __future__ import annotations

import math

import numpy as np

from svtjax._core import Draws, Outcome
from svtjax.reference.classic import _Recorder, _setup

__all__ = ["adaptive_svt_gap", "adaptive_svt_gap_authors"]


def adaptive_svt_gap(draws: Draws, queries, thresholds, *, epsilon, c, sensitivity=1.0,
                     theta=None, monotonic=False) -> Outcome:
    k = c
    if theta is None:
        theta = 1 / (1 + (k if monotonic else 2 * k) ** (2 / 3))
    return _algorithm2(draws, queries, thresholds, epsilon, k, sensitivity, theta, 1 - theta,
                       monotonic, authors=False)


def adaptive_svt_gap_authors(draws: Draws, queries, thresholds, *, epsilon, c, sensitivity=1.0,
                             theta=None, monotonic=False) -> Outcome:
    k = c  # freegap/evaluate.py: allocate_x, allocate_y from y = k^(2/3)
    y = float(np.power(np.int64(k if monotonic else 2 * k), 2.0 / 3.0))
    if theta is None or theta == 1 / (1 + y):
        theta, share = 1 / (1 + y), y / (1 + y)
    else:
        share = 1 - theta
    return _algorithm2(draws, queries, thresholds, epsilon, k, sensitivity, theta, share,
                       monotonic, authors=True)


def _algorithm2(draws, queries, thresholds, epsilon, k, sensitivity, theta, share, monotonic,
                *, authors: bool) -> Outcome:
    q, T, n, dtype, order = _setup(draws, queries, thresholds)
    eps0 = theta * epsilon                                         # line 1
    eps1 = share * epsilon / k
    eps2 = eps1 / 2
    f = 1 if monotonic else 2                                      # footnote 6
    b_top = f * sensitivity / eps2
    sigma = dtype(4 * math.sqrt(2) * sensitivity / eps2)          # line 1: σ = 4√2/ε2
    eta = dtype(sensitivity / eps0) * dtype(draws.threshold)       # line 2: η ~ Lap(Δ/ε0)
    rec = _Recorder(n, dtype)
    n1 = n2 = 0
    cost = float(eps0)                                             # authors: cost = epsilon_0
    for p in range(n):                                             # line 5
        if authors and not cost <= float(epsilon) - float(eps1):
            break                                                  # their loop condition
        i = order[p]
        t_noisy = T[i] + eta                                       # line 3: T̃ = T + η
        xi = dtype(b_top) * dtype(draws.query[p])                  # line 6: ξ_i ~ Lap(2Δ/ε2)
        eta_i = dtype(f * sensitivity / eps1) * dtype(draws.query2[p])  # η_i ~ Lap(2Δ/ε1)
        if (q[i] + xi) - t_noisy >= sigma:                         # line 7
            rec.output(p, i, 1, (q[i] + xi) - t_noisy, eps2)       # line 8
            n2 += 1                                                # line 9: cost += ε2
            cost += float(eps2)
        elif (q[i] + eta_i) - t_noisy >= 0:                        # line 10
            rec.output(p, i, 1, (q[i] + eta_i) - t_noisy, eps1)    # line 11
            n1 += 1                                                # line 12: cost += ε1
            cost += float(eps1)
        else:
            rec.output(p, i, 0)                                    # line 14
        if not authors and 2 * n1 + n2 > 2 * (k - 1):              # line 15 (exact)
            break
    return rec.outcome()
