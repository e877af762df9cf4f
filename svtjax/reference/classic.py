"""Plain numpy loops for Lyu, Su & Li (2017), Algorithms 1-7, written from Figure 1 and Section 4.

Each function follows its algorithm's pseudo-code line by line and takes the same ``Draws`` as
the JAX kernel (standard variates: a noise Lap(b) at a position is ``b * draws.<stream>[pos]``).
It never calls the JAX code. Arithmetic is done in the queries' dtype with noise scales rounded
from float64 once, as the kernel does, so both give identical answers on the same draws.

Position p of the stream evaluates item ``order[p]``, where the order is the identity or, when
``draws.order`` is present, the Fisher–Yates shuffle it encodes (see :func:`stream_order`).
"""

from __future__ import annotations

import numpy as np

from svtjax._core import Draws, Outcome

__all__ = ["stream_order", "lyu_alg1", "dpbook", "roth11", "lee_clifton", "stoddard", "chen",
           "svt_s", "svt_retr", "svt_gap", "split_ratio"]


def stream_order(draws: Draws, n: int) -> np.ndarray:
    """The item evaluated at each position: Fisher–Yates with swap indices ``draws.order``.

    for p = 0 .. n-1: swap perm[p] and perm[order[p]] (order[p] uniform on p..n-1).
    """
    perm = np.arange(n)
    if draws.order is None:
        return perm
    order = np.asarray(draws.order)
    for p in range(n):
        j = int(order[p])
        perm[p], perm[j] = perm[j], perm[p]
    return perm


class _Recorder:
    """Collects a_1, a_2, ... of the output stream into Outcome arrays."""

    def __init__(self, n: int, dtype):
        self.dtype = dtype
        self.answers = np.full(n, -1, np.int8)
        self.items = np.full(n, -1, np.int32)
        self.values = np.full(n, np.nan, dtype)
        self.cost = np.zeros(n, dtype)

    def output(self, pos, item, answer, value=np.nan, cost=0.0):
        self.answers[pos] = answer
        self.items[pos] = item
        self.values[pos] = value
        self.cost[pos] = cost

    def outcome(self) -> Outcome:
        return Outcome(self.answers, self.items, self.values, self.cost)


def _setup(draws, queries, thresholds):
    q = np.asarray(queries)
    if not np.issubdtype(q.dtype, np.floating):
        q = q.astype(np.float64)
    dtype = q.dtype.type
    n = q.shape[0]
    T = np.broadcast_to(np.asarray(thresholds, dtype), (n,))
    return q, T, n, dtype, stream_order(draws, n)


def _classic(draws, queries, thresholds, *, rho_scale, nu_scale, c, top_cost,
             reset_rho=False, output_noisy_query=False, answer_scale=None, passes=1,
             raise_threshold=0.0, output_gap=False):
    """Figure 1's loop, parameterised by the entries of Figure 2 (and Alg 7's line 6).

    With ``passes > 1`` the stream is the retraversal of §4.4: the items in order, then again the
    items not answered ⊤ so far, ... (stream position p·n + k holds the k-th item of pass p);
    ``raise_threshold`` is added to every T_i (SVT-ReTr).
    """
    q, T, n, dtype, order = _setup(draws, queries, thresholds)
    T = T + dtype(raise_threshold)
    rec = _Recorder(n * passes, dtype)
    rho = dtype(rho_scale) * dtype(draws.threshold)            # line 1: ρ = Lap(.)
    count = 0
    chosen = set()
    for p in range(n * passes):                                 # line 2: for each query q_i
        if count >= c:                                          # line 6: abort if count ≥ c
            break
        i = order[p % n]
        if p >= n and i in chosen:                              # §4.4: retraverse unselected
            continue
        if nu_scale is None:
            nu = None                                           # Alg 5: ν_i = 0
            noisy_q = q[i]
        else:
            nu = dtype(nu_scale) * dtype(draws.query[p])        # line 3: ν_i = Lap(.)
            noisy_q = q[i] + nu
        if noisy_q >= T[i] + rho:                               # line 4
            value = np.nan
            if output_noisy_query:
                value = noisy_q                                 # Alg 3: a_i = q_i + ν_i
            elif output_gap:                                    # Ding'19 Alg 2 line 11: gap
                value = noisy_q - (T[i] + rho)
            elif answer_scale is not None:                      # Alg 7 lines 5-6 (ε3 > 0)
                value = q[i] + dtype(answer_scale) * dtype(draws.answer[p])
            rec.output(p, i, 1, value, top_cost)                # a_i = ⊤
            chosen.add(i)
            if reset_rho:
                rho = dtype(rho_scale) * dtype(draws.refresh[p])   # Alg 2 line 5
            count += 1
        else:
            rec.output(p, i, 0)                                 # line 8: a_i = ⊥
    return rec.outcome()


def lyu_alg1(draws, queries, thresholds, *, epsilon, c, sensitivity=1.0):
    """Algorithm 1: ρ = Lap(2Δ/ε), ν_i = Lap(4cΔ/ε), stop after c ⊤."""
    return _classic(draws, queries, thresholds, rho_scale=2 * sensitivity / epsilon,
                    nu_scale=4 * c * sensitivity / epsilon, c=c, top_cost=epsilon / (2 * c))


def dpbook(draws, queries, thresholds, *, epsilon, c, sensitivity=1.0):
    """Algorithm 2: ρ = Lap(2cΔ/ε) redrawn after each ⊤, ν_i = Lap(4cΔ/ε), stop after c ⊤."""
    return _classic(draws, queries, thresholds, rho_scale=2 * c * sensitivity / epsilon,
                    nu_scale=4 * c * sensitivity / epsilon, c=c, top_cost=epsilon / c,
                    reset_rho=True)


def roth11(draws, queries, thresholds, *, epsilon, c, sensitivity=1.0):
    """Algorithm 3: ρ = Lap(2Δ/ε), ν_i = Lap(2cΔ/ε), outputs q_i + ν_i on ⊤, stop after c."""
    return _classic(draws, queries, thresholds, rho_scale=2 * sensitivity / epsilon,
                    nu_scale=2 * c * sensitivity / epsilon, c=c, top_cost=epsilon / c,
                    output_noisy_query=True)


def lee_clifton(draws, queries, thresholds, *, epsilon, c, sensitivity=1.0):
    """Algorithm 4: ρ = Lap(4Δ/ε), ν_i = Lap(4Δ/(3ε)), stop after c ⊤."""
    return _classic(draws, queries, thresholds, rho_scale=4 * sensitivity / epsilon,
                    nu_scale=4 * sensitivity / (3 * epsilon), c=c, top_cost=1.5 * epsilon)


def stoddard(draws, queries, thresholds, *, epsilon, sensitivity=1.0):
    """Algorithm 5: ρ = Lap(2Δ/ε), ν_i = 0, no cut-off."""
    return _classic(draws, queries, thresholds, rho_scale=2 * sensitivity / epsilon,
                    nu_scale=None, c=np.inf, top_cost=0.0)


def chen(draws, queries, thresholds, *, epsilon, sensitivity=1.0):
    """Algorithm 6: ρ = Lap(2Δ/ε), ν_i = Lap(2Δ/ε), per-query thresholds, no cut-off."""
    return _classic(draws, queries, thresholds, rho_scale=2 * sensitivity / epsilon,
                    nu_scale=2 * sensitivity / epsilon, c=np.inf, top_cost=0.0)


def split_ratio(allocation: str, c: int) -> float:
    """x in ε1 : ε2 = 1 : x (Lyu'17 Sec. 4.2 Eq. 13, Sec. 4.3, Sec. 5's 1:1, 1:3, 1:c)."""
    return {"1:1": 1.0, "1:3": 3.0, "1:c": float(c), "1:c^(2/3)": float(c) ** (2 / 3),
            "1:(2c)^(2/3)": (2.0 * c) ** (2 / 3)}[allocation]


def svt_s(draws, queries, thresholds, *, epsilon, c, sensitivity=1.0, eps3=0.0,
          monotonic=False, allocation=None, raise_by=None, max_passes=1, output_gap=False):
    """Algorithm 7 (SVT-S): ρ = Lap(Δ/ε1), ν_i = Lap(2cΔ/ε2) (Lap(cΔ/ε2) if monotonic, Thm 7),
    ⊤ releases q_i + Lap(cΔ/ε3) when ε3 > 0; stop after c ⊤. ε − ε3 is split ε1 : ε2 by the
    named rule, or ``allocation`` is an explicit ``(eps1, eps2)``."""
    if allocation is None:
        allocation = "1:c^(2/3)" if monotonic else "1:(2c)^(2/3)"
    if isinstance(allocation, (tuple, list)):
        eps1, eps2 = allocation
    else:
        x = split_ratio(allocation, c)
        eps2 = (epsilon - eps3) * x / (1 + x)     # ε1 : ε2 = 1 : x
        eps1 = (epsilon - eps3) - eps2
    k = 1 if monotonic else 2
    nu_scale = k * c * sensitivity / eps2
    return _classic(draws, queries, thresholds, rho_scale=sensitivity / eps1,
                    nu_scale=nu_scale, c=c, top_cost=(eps2 + eps3) / c,
                    answer_scale=c * sensitivity / eps3 if eps3 > 0 else None,
                    passes=max_passes, output_gap=output_gap,
                    raise_threshold=0.0 if raise_by is None else raise_by * nu_scale)


def svt_gap(draws, queries, thresholds, **svt_s_params):
    """Sparse-Vector-with-Gap (Ding et al. 2019, Algorithm 2 with σ = ∞): Algorithm 7's loop
    releasing q_i + ν_i − (T_i + ρ) with each ⊤."""
    return svt_s(draws, queries, thresholds, output_gap=True, **svt_s_params)


def svt_retr(draws, queries, thresholds, *, raise_by=1.0, max_passes=10, **svt_s_params):
    """SVT-ReTr (§4.4, §5): Algorithm 7 with every T_i raised by ``raise_by`` × the query-noise
    scale, on the stream that retraverses the unselected items, at most ``max_passes`` passes."""
    return svt_s(draws, queries, thresholds, raise_by=raise_by, max_passes=max_passes,
                 **svt_s_params)
