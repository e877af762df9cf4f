"""Plain numpy loop for SVT-Exp (Liu et al. 2024, Algorithm 2) and its Table 3 baselines.

Written from Algorithm 2's pseudo-code, line by line; never calls the JAX kernel. The correction
term of line 3 is Algorithm 3 (``svtjax.correction``, host float64 code tested separately
against closed forms and quadrature). Draws are the kernel's standard variates: the evaluation
of the k-th item of the (shuffled) order in traversal p uses ``draws.query[p * n + k]`` (and
``draws.refresh[p * n + k]`` for RESAMPLE), the engine's multi-pass layout.

Rounding: T_i + r is formed first, then compared with q_i + ν_i against (T_i + r) + ρ, the
grouping the kernel uses; noise scales are computed in float64 and rounded once to the queries'
dtype.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from svtjax import correction as corr
from svtjax.noise import Exponential, Gaussian, Gumbel, Laplace
from svtjax.reference.classic import _Recorder, _setup

__all__ = ["svt_exp"]

_UNIT_VAR = {"laplace": 2.0, "gaussian": 1.0, "exponential": 1.0, "gumbel": math.pi ** 2 / 6}
_QUERY = {"exponential": Exponential, "gumbel": Gumbel, "laplace": Laplace, "gaussian": Gaussian}
_RULES = {"1:1": lambda c: 1.0, "1:3": lambda c: 3.0, "1:c": lambda c: float(c),
          "1:c^(2/3)": lambda c: float(c) ** (2 / 3),
          "1:(2c)^(2/3)": lambda c: (2.0 * c) ** (2 / 3)}


def _budgets(epsilon, c, noise, monotonic, allocation):
    """ε = ε1 + ε2 with ε2 = w ε1 (Section 4.2, Table 4 / Eq. 6 minimiser, or a named rule)."""
    if isinstance(allocation, (tuple, list)):
        return float(allocation[0]), float(allocation[1])
    if allocation in (None, "table4"):
        thr = "gaussian" if noise == "gaussian" else "laplace"
        k = 1.0 if monotonic else 2.0
        w = (_UNIT_VAR[noise] * k * k * float(c) ** 2 / _UNIT_VAR[thr]) ** (1.0 / 3.0)
    else:
        w = _RULES[allocation](c)
    eps2 = float(epsilon) * w / (1.0 + w)
    return float(epsilon) - eps2, eps2


def svt_exp(draws, queries, thresholds, *, epsilon, c, sensitivity=1.0, correction_k=None,
            alpha=0.0, delta=None, correction_value=None, noise="exponential",
            correction="optimal", monotonic=False, allocation=None, resample=False,
            append=False, max_passes=1, correction_method="auto"):
    """Algorithm 2 (SVT-Exp) with the query-noise family and correction of Table 3's rows."""
    q, T, n, dtype, order = _setup(draws, queries, thresholds)
    eps1, eps2 = _budgets(epsilon, c, noise, monotonic, allocation)      # line 1
    s = math.sqrt(2.0 * math.log(1.25 / delta)) if noise == "gaussian" else 1.0
    b = s * sensitivity / eps1                                           # line 2: b = Δ/ε1
    mu = s * ((1.0 if monotonic else 2.0) * c * sensitivity / eps2)     # line 6: 1/λ = 2cΔ/ε2
    if correction == "optimal":                                          # line 3
        threshold_noise = Gaussian(b) if noise == "gaussian" else Laplace(b)
        r = corr.optimal(_QUERY[noise](mu), threshold_noise, correction_k, alpha,
                         method=correction_method)
    elif correction == "mean":                                           # Sec. 4.3.1
        r = corr.mean(_QUERY[noise](mu))
    elif correction == "none":
        r = 0.0
    else:
        r = float(correction_value)
    rho = dtype(b) * dtype(draws.threshold)                               # line 2: ρ ~ Lap(b)
    T_r = T + dtype(r)                                                   # T_i + r (line 9)
    passes = max_passes if append else 1
    rec = _Recorder(n * passes, dtype)
    top_cost = eps2 / c + (eps1 * (c - 1) / c if resample else 0.0)
    n_c = 0
    queue = collections.deque((0, k) for k in range(n))                  # Q in stream order
    while queue:                                                         # line 4
        p, k = queue.popleft()
        pos = p * n + k
        i = order[k]
        nu = dtype(mu) * dtype(draws.query[pos])                         # line 6
        noisy_q = q[i] + nu                                              # line 7
        if noisy_q >= T_r[i] + rho:                                      # lines 8-9
            rec.output(pos, i, 1, np.nan, top_cost)                      # line 11
            n_c += 1                                                     # line 12
            if resample:                                                 # line 14
                rho = dtype(b) * dtype(draws.refresh[pos])
            if n_c >= c:                                                 # line 15
                break
        else:
            rec.output(pos, i, 0)                                        # line 17
            if append and p + 1 < passes:                                # lines 18-19
                queue.append((p + 1, k))
    return rec.outcome()
