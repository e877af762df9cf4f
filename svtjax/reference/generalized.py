"""Plain numpy loops for Zhu & Wang (2020), Algorithms 2 and 3, written from the pseudo-code.

Same conventions as ``reference.classic``: the noise at a stream position is ``scale *
draws.<stream>[pos]`` (standard variates), arithmetic in the queries' dtype with each scale
rounded once; position p evaluates item ``order[p]``. Never calls the JAX code.

M_ρ(D, T) = T + ρ and M_ν(D, q_i) = q_i + ν_i are the noise-adding mechanisms (Definition 5).
A fresh threshold after a ⊤ at position p (RESAMPLE) or for the stage starting after position p
(Algorithm 3) is ``draws.refresh[p]``.
"""

from __future__ import annotations

import math

from svtjax.reference.classic import _Recorder, _setup

__all__ = ["generalized_svt", "stagewise_svt"]


def _scale(noise) -> float:
    return float(noise.scale_value)


def generalized_svt(draws, queries, thresholds, *, c, threshold_noise, query_noise, k_max=None,
                    resample=False, **unused):
    """Algorithm 2 (generalized SVT)."""
    del unused  # sensitivity, epsilon, delta, margin: privacy only
    q, T, n, dtype, order = _setup(draws, queries, thresholds)
    b_rho, b_nu = dtype(_scale(threshold_noise)), dtype(_scale(query_noise))
    rec = _Recorder(n, dtype)
    rho = b_rho * dtype(draws.threshold)           # line 1: T̂ = T + ρ, count = 0
    count = 0
    length = n if k_max is None else min(n, int(k_max))
    for i in range(length):                         # line 2: for i = 1, ..., k_max
        item = order[i]
        q_hat = q[item] + b_nu * dtype(draws.query[i])   # line 3: q̂_i = q_i + ν_i
        if q_hat >= T[item] + rho:                  # line 4: q̂_i ≥ T̂
            rec.output(i, item, 1)                  # line 5: a_i = ⊤, count + 1
            count += 1
            if resample:                            # line 6: RESAMPLE → fresh T̂
                rho = b_rho * dtype(draws.refresh[i])
            if count >= c:                          # line 7: abort
                break
        else:
            rec.output(i, item, 0)                  # line 9: a_i = ⊥
    return rec.outcome()


def stagewise_svt(draws, queries, thresholds, *, c, c_stage, threshold_noise, query_noise,
                  k_max=None, resample=False, **unused):
    """Algorithm 3 (stage-wise generalized SVT); ``k_max`` is the per-stage k′_max."""
    del unused
    q, T, n, dtype, order = _setup(draws, queries, thresholds)
    b_rho, b_nu = dtype(_scale(threshold_noise)), dtype(_scale(query_noise))
    rec = _Recorder(n, dtype)
    stages = math.ceil(c / c_stage)
    pos = 0                                          # the current front of the stream
    for ell in range(1, stages + 1):                 # line 2
        # line 3: c̃ for this stage
        c_tilde = c - c_stage * (stages - 1) if ell == stages else c_stage
        # line 4: Algorithm 2 with c̃, k′_max, RESAMPLE on the front of the stream.
        # Its line 1: a fresh T̂ (the first stage's is draws.threshold).
        rho = b_rho * dtype(draws.threshold if ell == 1 else draws.refresh[pos - 1])
        count = 0
        i = 0                                        # Algorithm 2's i, counted in the stage
        while pos < n and (k_max is None or i < int(k_max)):
            item = order[pos]
            q_hat = q[item] + b_nu * dtype(draws.query[pos])
            stop = False
            if q_hat >= T[item] + rho:
                rec.output(pos, item, 1)             # line 5 (appended, Algorithm 3 line 5)
                count += 1
                if resample:                         # line 6
                    rho = b_rho * dtype(draws.refresh[pos])
                stop = count >= c_tilde              # line 7
            else:
                rec.output(pos, item, 0)             # line 9
            pos += 1
            i += 1
            if stop:
                break
        if pos >= n:
            break
    return rec.outcome()
