"""Post-processing of the free noisy gaps (Ding, Wang, Zhang, Kifer 2019, Sections 5.2 and 6.2).

Noisy-Top-K-with-Gap (``noisy-top-k-gap``), Sparse-Vector-with-Gap (``svt-gap``) and
Adaptive-Sparse-Vector-with-Gap (``adaptive-svt-gap``) release, at no privacy cost, noisy gaps
between the selected queries (top-k) or between each selected query and the threshold (SVT).
Combined with independent noisy measurements α_i of the selected queries they give better
estimates than the measurements alone. This module holds those estimators, their theoretical
mean squared errors and the lower confidence bound of Lemma 5. Everything is plain numpy,
vectorised over any leading (trial) axes, float64; it is post-processing and costs no privacy.

* :func:`blue_top_k` — the best linear unbiased estimate (BLUE) of Theorem 3 with the linear-time
  algorithm the paper gives after it; :func:`blue_top_k_matrix` — the same estimate as
  ``(Xα + Yg)/((1+λ)k)`` with Theorem 3's matrices; :func:`blue_top_k_gls` — the same estimate as
  a generalised least squares solve from the noise model, written independently of both.
* :func:`topk_mse_ratio` — Corollary 1; :func:`topk_lambda` — λ = Var(η)/Var(ξ) of Section 5.2's
  half-and-half budget split.
* :func:`combine_inverse_variance` — Section 6.2's inverse-variance combination of a gap (+ T)
  with an independent measurement; :func:`svt_gap_variance`, :func:`measurement_variance`,
  :func:`svt_mse_ratio` — Section 6.2's variances and MSE ratios (monotonic and non-monotonic).
* :func:`lemma5_probability`, :func:`lemma5_quantile`, :func:`lower_confidence_bound` — Lemma 5.

Noise model (Section 5.2, "Problem statement"). For the k selected queries, in the mechanism's
order (best first), α_i = q_i + ξ_i with ξ_i i.i.d. of variance σ² and g_i = (q_i + η_i) −
(q_{i+1} + η_{i+1}), i = 1..k−1, with η_i i.i.d. of variance λσ², independent of the ξ. The
mechanism releases k gaps; the k-th, g_k = q̃_{j_k} − q̃_{j_{k+1}}, involves the unselected
(k+1)-th query, an extra unknown, and so carries no information about q_1..q_k (adding an
observation together with a new free parameter leaves the BLUE of the others unchanged): the
functions here accept gaps of length k−1 or k and ignore a k-th gap.

Like the paper's theory, the estimators and the MSE formulas treat the selected queries as fixed
and their noise as unconditioned; the selection itself (which items win, and SVT's γ ≥ 0)
conditions the noise, which the experiment ``experiments/ding2019.py`` measures.

References:
  Ding, Wang, Zhang, Kifer. Free Gap Information from the Differentially Private Sparse Vector
  and Noisy Max Mechanisms. PVLDB 13(3), 2019: Section 5.2
  (Theorem 3, the linear-time algorithm, Corollary 1), Section 6.2 (inverse-variance combination,
  Var(γ_i) = 8(1+(2k)^(2/3))³/ε², the MSE ratios, Lemma 5).
  Lehmann, Casella. Theory of Point Estimation, 1998 (BLUE / Gauss-Markov).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "blue_top_k",
    "blue_top_k_matrix",
    "blue_top_k_gls",
    "theorem3_matrices",
    "topk_lambda",
    "topk_mse_ratio",
    "combine_inverse_variance",
    "inverse_variance_ratio",
    "gap_variance",
    "svt_gap_variance",
    "measurement_variance",
    "svt_mse_ratio",
    "lemma5_probability",
    "lemma5_quantile",
    "lower_confidence_bound",
]


# -- input checks ----------------------------------------------------------------------------

def _real_array(name: str, value: Any) -> np.ndarray:
    try:
        x = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers; got {value!r}") from None
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite (no NaN or inf); got {value!r}. Pass only the "
                         "released values of selected queries (NaN marks positions with none)")
    return x


def _positive(name: str, value: Any) -> np.ndarray:
    x = _real_array(name, value)
    if np.any(x <= 0):
        raise ValueError(f"{name} must be > 0 (and finite); got {value!r}")
    return x


def _positive_scalar(name: str, value: Any) -> float:
    x = _positive(name, value)
    if x.ndim != 0:
        raise ValueError(f"{name} must be a single number > 0; got shape {x.shape}")
    return float(x)


def _k_values(value: Any) -> np.ndarray:
    x = np.asarray(value)
    if x.dtype == bool or not np.issubdtype(x.dtype, np.number) or np.any(~np.isfinite(x)) \
            or np.any(x != np.round(x)) or np.any(x < 1):
        raise ValueError(f"k must be an integer >= 1 (or an array of them); got {value!r}")
    return x.astype(np.float64)


def _split(alpha: Any, gaps: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """(alpha [..., k], gaps [..., k-1], k) after checks; a k-th gap is dropped."""
    a = _real_array("alpha", alpha)
    g = _real_array("gaps", gaps)
    if a.ndim < 1 or a.shape[-1] < 1:
        raise ValueError("alpha must have shape [..., k] with k >= 1 (one measurement per "
                         f"selected query); got shape {a.shape}")
    k = a.shape[-1]
    if g.ndim < 1 or g.shape[-1] not in (k - 1, k):
        raise ValueError(f"gaps must have shape [..., k-1] or [..., k] with k = {k} (the k-1 gaps "
                         "between consecutive selected queries, optionally followed by the "
                         f"mechanism's k-th gap, which is ignored); got shape {g.shape}")
    g = g[..., : k - 1]
    try:
        batch = np.broadcast_shapes(a.shape[:-1], g.shape[:-1])
    except ValueError:
        raise ValueError(f"alpha {a.shape} and gaps {g.shape} must share (broadcastable) leading "
                         "trial axes") from None
    return (np.broadcast_to(a, batch + (k,)), np.broadcast_to(g, batch + (k - 1,)), k)


# -- Noisy-Top-K-with-Gap: Theorem 3 and Corollary 1 -----------------------------------------

def blue_top_k(alpha: Any, gaps: Any, lam: Any = 1.0) -> np.ndarray:
    """BLUE of the top-k query values from measurements and free gaps, in O(k) (Theorem 3).

    Ding et al. 2019, Section 5.2, the algorithm after Theorem 3:

    1. α = Σ_{i=1}^k α_i and p = Σ_{i=1}^{k−1} (k − i) g_i;
    2. p_0 = 0, p_i = p_{i−1} + g_i (prefix sums);
    3. β_i = (α + λ k α_i + p − k p_{i−1}) / ((1 + λ) k).

    Args:
      alpha: float ``[..., k]``, the independent noisy measurements α_i = q_i + ξ_i of the
        selected queries, in the mechanism's order (best first).
      gaps: float ``[..., k−1]`` (or ``[..., k]``, the mechanism's ``Outcome.values``; the k-th
        gap is ignored, see the module docstring), g_i = q̃_{j_i} − q̃_{j_{i+1}}.
      lam: λ > 0, the ratio Var(η_i) / Var(ξ_i) (Theorem 3's 1 : λ); see :func:`topk_lambda`.

    Returns:
      float64 ``[..., k]``: β, the estimates of q_1..q_k.

    Raises:
      ValueError: non-finite inputs, mismatched shapes, λ <= 0.
    """
    a, g, k = _split(alpha, gaps)
    lam = _positive_scalar("lam", lam)
    total = a.sum(axis=-1, keepdims=True)
    prefix = np.zeros(a.shape, np.float64)  # p_0 .. p_{k-1}
    np.cumsum(g, axis=-1, out=prefix[..., 1:])
    p = (np.arange(k - 1, 0, -1, dtype=np.float64) * g).sum(axis=-1, keepdims=True)
    return (total + lam * k * a + p - k * prefix) / ((1.0 + lam) * k)


def theorem3_matrices(k: int, lam: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 3's X (k × k) and Y (k × (k−1)): β = (Xα + Yg) / ((1 + λ)k).

    X has 1 + λk on the diagonal and 1 elsewhere; Y = [k−1, k−2, ..., 1] in every row minus k
    times the strictly lower-triangular ones (row i has k in columns 1..i−1).

    Raises:
      ValueError: k < 1 or λ <= 0.
    """
    k = int(_k_values(k))
    lam = _positive_scalar("lam", lam)
    x = np.ones((k, k)) + lam * k * np.eye(k)
    y = np.tile(np.arange(k - 1, 0, -1, dtype=np.float64), (k, 1)) \
        - k * np.tril(np.ones((k, k - 1)), -1)
    return x, y


def blue_top_k_matrix(alpha: Any, gaps: Any, lam: Any = 1.0) -> np.ndarray:
    """:func:`blue_top_k` as Theorem 3's matrix product β = (Xα + Yg)/((1 + λ)k)."""
    a, g, k = _split(alpha, gaps)
    x, y = theorem3_matrices(k, lam)
    return (a @ x.T + g @ y.T) / ((1.0 + float(lam)) * k)


def blue_top_k_gls(alpha: Any, gaps: Any, lam: Any = 1.0) -> np.ndarray:
    """:func:`blue_top_k` as generalised least squares on Section 5.2's noise model.

    Observations y = [α; g] = A q + noise with A = [I_k; D], D the (k−1) × k difference matrix
    (g_i = q_i − q_{i+1} + η_i − η_{i+1}); Cov = σ² blockdiag(I_k, λ D Dᵀ) (adjacent gaps share an
    η, so their covariance is tridiagonal). The BLUE (Gauss-Markov) is
    (Aᵀ Σ⁻¹ A)⁻¹ Aᵀ Σ⁻¹ y; σ² cancels. Written from the model, not from Theorem 3, so the tests
    can check the theorem's closed form against it. O(k³): for checks, not for speed.
    """
    a, g, k = _split(alpha, gaps)
    lam = _positive_scalar("lam", lam)
    d = np.eye(k - 1, k) - np.eye(k - 1, k, 1)
    design = np.vstack([np.eye(k), d])
    cov = np.zeros((2 * k - 1, 2 * k - 1))
    cov[:k, :k] = np.eye(k)
    cov[k:, k:] = lam * d @ d.T
    w = np.linalg.inv(cov)
    gain = np.linalg.solve(design.T @ w @ design, design.T @ w)  # k × (2k−1)
    return np.concatenate([a, g], axis=-1) @ gain.T


def topk_lambda(monotonic: bool, selection_share: float = 0.5) -> float:
    """λ = Var(η_i)/Var(ξ_i) when a share ρ of ε selects with Noisy-Top-K-with-Gap.

    Section 5.2: selection at ερ adds Lap(2k/(ερ)) (Lap(k/(ερ)) for monotonic queries), the
    measurements at ε(1−ρ) add Lap(k/(ε(1−ρ))) to each of the k selected queries, so
    λ = f²(1−ρ)²/ρ² with f = 2 (f = 1 monotonic). The paper's split ρ = 1/2 gives λ = 4, and
    λ = 1 for counting queries ("Var(ξ_i) = Var(η_i) = 8k²/ε² and thus λ = 1").

    Raises:
      ValueError: ``monotonic`` not a bool, or ρ outside (0, 1).
    """
    if not isinstance(monotonic, (bool, np.bool_)):
        raise ValueError(f"monotonic must be True or False; got {monotonic!r}")
    rho = float(_real_array("selection_share", selection_share))
    if not 0.0 < rho < 1.0:
        raise ValueError(f"selection_share must lie strictly between 0 and 1; got {rho!r}")
    f = 1.0 if monotonic else 2.0
    return f * f * (1.0 - rho) ** 2 / rho ** 2


def topk_mse_ratio(k: Any, lam: Any = 1.0) -> np.ndarray:
    """Corollary 1: E|β_i − q_i|² / E|α_i − q_i|² = (1 + λk) / (k + λk), for every i.

    With λ = 1 (counting queries) the error reduction 1 − ratio is (k − 1)/(2k), close to 50% for
    large k; with λ = 4 it tends to 20%.

    Args:
      k: number of selected queries (integer >= 1, or an array of them).
      lam: λ > 0 (scalar or broadcastable array).

    Returns:
      float64 array (scalar for scalar inputs).
    """
    kk = _k_values(k)
    lam = _positive("lam", lam)
    return (1.0 + lam * kk) / (kk + lam * kk)


# -- Sparse-Vector-with-Gap: Section 6.2 -----------------------------------------------------

def combine_inverse_variance(alpha: Any, var_alpha: Any, gap: Any, threshold: Any,
                             var_gap: Any) -> np.ndarray:
    """Section 6.2: β_i = (α_i/Var(α_i) + (γ_i + T)/Var(γ_i)) / (1/Var(α_i) + 1/Var(γ_i)).

    Args:
      alpha: independent noisy measurements α_i of the selected queries (any shape).
      var_alpha: Var(α_i) > 0 (broadcastable), e.g. :func:`measurement_variance`.
      gap: the released noisy gaps γ_i (``Outcome.values`` at the ⊤ positions).
      threshold: the public threshold T (broadcastable).
      var_gap: Var(γ_i) > 0 (broadcastable), e.g. :func:`svt_gap_variance` or
        :func:`gap_variance`.

    Returns:
      float64 β, the broadcast shape of the inputs.
    """
    a = _real_array("alpha", alpha)
    g = _real_array("gap", gap)
    t = _real_array("threshold", threshold)
    va = _positive("var_alpha", var_alpha)
    vg = _positive("var_gap", var_gap)
    try:
        np.broadcast_shapes(a.shape, g.shape, t.shape, va.shape, vg.shape)
    except ValueError:
        raise ValueError(f"alpha {a.shape}, var_alpha {va.shape}, gap {g.shape}, threshold "
                         f"{t.shape} and var_gap {vg.shape} must broadcast together") from None
    return (a / va + (g + t) / vg) / (1.0 / va + 1.0 / vg)


def inverse_variance_ratio(var_alpha: Any, var_gap: Any) -> np.ndarray:
    """Var(β)/Var(α) = Var(γ)/(Var(α) + Var(γ)) for :func:`combine_inverse_variance`."""
    va = _positive("var_alpha", var_alpha)
    vg = _positive("var_gap", var_gap)
    return vg / (va + vg)


def _svt_x(k: np.ndarray, monotonic: bool) -> np.ndarray:
    if not isinstance(monotonic, (bool, np.bool_)):
        raise ValueError(f"monotonic must be True or False; got {monotonic!r}")
    return (k if monotonic else 2.0 * k) ** (2.0 / 3.0)


def gap_variance(threshold_scale: Any, query_scale: Any) -> np.ndarray:
    """Var(γ) = Var(η_i − η) = 2 b_q² + 2 b_0², Laplace scales b_q (query), b_0 (threshold)."""
    b0 = _positive("threshold_scale", threshold_scale)
    bq = _positive("query_scale", query_scale)
    return 2.0 * bq ** 2 + 2.0 * b0 ** 2


def svt_gap_variance(epsilon_svt: Any, k: Any, monotonic: bool) -> np.ndarray:
    """Var(γ_i) of Sparse-Vector-with-Gap at budget ε′ with Lyu et al.'s optimal split.

    With ε0 : ε_q = 1 : x, x = (2k)^(2/3) (k^(2/3) monotonic), threshold noise Lap(1/ε0) and query
    noise Lap(2k/ε_q) (Lap(k/ε_q) monotonic): Var(γ_i) = 2(1 + x)³/ε′². Section 6.2 writes it with
    the total budget ε = 2ε′: 8(1 + (2k)^(2/3))³/ε² (8(1 + k^(2/3))³/ε² monotonic).
    """
    eps = _positive("epsilon_svt", epsilon_svt)
    x = _svt_x(_k_values(k), monotonic)
    return 2.0 * (1.0 + x) ** 3 / eps ** 2


def measurement_variance(epsilon_measure: Any, k: Any) -> np.ndarray:
    """Var(α_i) = 2(k/ε″)²: Lap(k/ε″) on each of k queries (Section 6.2; 8k²/ε² at ε″ = ε/2)."""
    eps = _positive("epsilon_measure", epsilon_measure)
    return 2.0 * (_k_values(k) / eps) ** 2


def svt_mse_ratio(k: Any, monotonic: bool) -> np.ndarray:
    """Section 6.2: E|β_i − q_i|²/E|α_i − q_i|² with the budget split in half.

    Non-monotonic: (1 + ∛(4k²))³ / ((1 + ∛(4k²))³ + k²) → 4/5 (a 20% reduction);
    monotonic: (1 + ∛(k²))³ / ((1 + ∛(k²))³ + k²) (a reduction close to 50% for large k).
    """
    kk = _k_values(k)
    c = (1.0 + _svt_x(kk, monotonic)) ** 3
    return c / (c + kk ** 2)


# -- Lemma 5: lower confidence bound ---------------------------------------------------------

def _rates(eps0: Any, eps_star: Any) -> tuple[np.ndarray, np.ndarray]:
    return _positive("eps0", eps0), _positive("eps_star", eps_star)


def _upper_tail(t: np.ndarray, e0: np.ndarray, es: np.ndarray) -> np.ndarray:
    """P(η_i − η > t), t >= 0: Lemma 5's subtracted term, in a form stable as ε0 → ε*.

    (ε0² e^{−ε* t} − ε*² e^{−ε0 t}) / (2(ε0² − ε*²)) is symmetric in (ε0, ε*); with a = min and
    b = max of the two it equals e^{−a t}/2 · (1 − a² E/(a + b)), E = expm1(−(b − a)t)/(b − a) in
    [−t, 0] (E → −t as b → a, giving (2 + ε0 t)e^{−ε0 t}/4), which neither cancels nor overflows.
    """
    a, b = np.minimum(e0, es), np.maximum(e0, es)
    d = b - a
    dt = d * t
    small = dt < 1e-8
    safe_d = np.where(small, 1.0, d)
    e = np.where(small, -t * (1.0 - dt / 2.0), np.expm1(-dt) / safe_d)
    return 0.5 * np.exp(-a * t) * (1.0 - a ** 2 * e / (a + b))


def lemma5_probability(t: Any, eps0: Any, eps_star: Any) -> np.ndarray:
    """Lemma 5: P(η_i − η >= −t) for η ~ Lap(1/ε0), η_i ~ Lap(1/ε*) independent, t > 0.

        1 − (ε0² e^{−ε* t} − ε*² e^{−ε0 t}) / (2(ε0² − ε*²))   if ε0 ≠ ε*,
        1 − ((2 + ε0 t)/4) e^{−ε0 t}                            if ε0 = ε*.

    ε0 and ε* are the Laplace *rates* (inverse scales). In Algorithm 2, ε0 is the threshold's
    budget (noise Lap(1/ε0)); the query noise of the branch that answered is Lap(2/ε1) or
    Lap(2/ε2) (Lap(1/ε1), Lap(1/ε2) for monotonic queries), so pass ε* = 1 / (that scale), e.g.
    ε1/2 for the non-monotonic middle branch. The first case is evaluated in a form that is
    exact algebraically and stable as ε0 → ε* (see ``_upper_tail``); the second exactly as printed.

    Args:
      t: t > 0 (any shape; broadcast with the rates).
      eps0, eps_star: rates > 0.

    Returns:
      float64 probabilities in [1/2, 1).
    """
    tt = _real_array("t", t)
    if np.any(tt <= 0):
        raise ValueError(f"t must be > 0 (Lemma 5 is a lower tail bound for t > 0); got {t!r}")
    e0, es = _rates(eps0, eps_star)
    equal = e0 == es
    general = 1.0 - _upper_tail(tt, e0, es)
    same = 1.0 - (2.0 + e0 * tt) / 4.0 * np.exp(-e0 * tt)
    return np.where(equal, same, general)


def lemma5_quantile(confidence: Any, eps0: Any, eps_star: Any) -> np.ndarray:
    """t_c with P(η_i − η >= −t_c) = c (Lemma 5), so q_i >= γ_i + T − t_c with probability c.

    ε0 = ε*: closed form via Lambert's W: (2 + x)e^{−x} = 4(1 − c) at x = ε0 t gives
    x = −2 − W_{−1}(−4(1 − c)e^{−2}). ε0 ≠ ε*: bisection to machine precision on the (strictly
    increasing) probability, vectorised.

    Args:
      confidence: c with 1/2 < c < 1 (at c <= 1/2 the bound needs t <= 0, outside Lemma 5).
      eps0, eps_star: rates > 0 (see :func:`lemma5_probability`).

    Returns:
      float64 t_c > 0, the broadcast shape of the inputs.
    """
    c = _real_array("confidence", confidence)
    if np.any(c <= 0.5) or np.any(c >= 1.0):
        raise ValueError(f"confidence must lie strictly between 0.5 and 1 (e.g. 0.95); got "
                         f"{confidence!r}: Lemma 5 bounds P(η_i − η >= −t) for t > 0, which is "
                         "above 1/2")
    e0, es = _rates(eps0, eps_star)
    c, e0, es = np.broadcast_arrays(c, e0, es)
    alpha = 1.0 - c
    equal = e0 == es
    from scipy import special  # imported where used: `import svtjax` stays fast

    w = special.lambertw(-4.0 * alpha * np.exp(-2.0), k=-1).real
    closed = (-2.0 - w) / e0
    # Bracket: the upper tail is below e^{-min rate · t}(1 + max rate · t)/2 ... just double.
    hi = 1.0 / np.minimum(e0, es)
    for _ in range(200):
        short = _upper_tail(hi, e0, es) > alpha
        if not np.any(short):
            break
        hi = np.where(short, 2.0 * hi, hi)
    lo = np.zeros_like(hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi)):
            break
        above = _upper_tail(mid, e0, es) > alpha
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out = np.where(equal, closed, 0.5 * (lo + hi))
    return out[()] if out.ndim == 0 else out


def lower_confidence_bound(gap: Any, threshold: Any, eps0: Any, eps_star: Any,
                           confidence: Any = 0.95) -> np.ndarray:
    """Section 6.2: q_i(D) >= γ_i + T − t_c with probability c (Lemma 5).

    γ_i + T − q_i = η_i − η, so the bound holds iff η_i − η <= t_c, whose probability equals
    Lemma 5's P(η_i − η >= −t_c) = c by symmetry. This is the *unconditional* law of the gap
    noise. A released gap is conditioned on its query being answered (γ_i >= 0, and for SVT on
    the run reaching query i), which favours large η_i − η: for queries near the threshold the
    coverage among answered queries is below c (``tests/test_estimators.py`` measures 88.6% for
    queries within ±40 of T at ε = 0.7); for queries far above T it is c.

    Args:
      gap: released noisy gaps γ_i (any shape).
      threshold: the public threshold T (broadcastable).
      eps0, eps_star: Laplace rates of the threshold and of the answering branch's query noise
        (see :func:`lemma5_probability`).
      confidence: c in (1/2, 1).

    Returns:
      float64 lower bounds, the broadcast shape.
    """
    g = _real_array("gap", gap)
    t = _real_array("threshold", threshold)
    return g + t - lemma5_quantile(confidence, eps0, eps_star)
