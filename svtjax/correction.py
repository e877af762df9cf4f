"""Threshold corrections for SVT with biased query noise (Liu et al. 2024, Section 4.3).

SVT-Exp (Algorithm 2) compares q_i + ν_i ≥ T_i + ρ + r: the correction r is added to the noisy
threshold (line 9) to undo the positive bias of exponential query noise. Two corrections:

* :func:`mean` — the naive correction, r = E[ν] (Section 4.3.1: "subtracting the mean of the
  noise"); the threshold noise has mean 0.
* :func:`optimal` — r^op = argmax_r p(r) with (Eq. 8-9)

      p(r) = Γ(r + α)^k · (1 − Γ(r − α)),

  Γ the CDF of Z = ν − ρ (query noise minus threshold noise): the probability that k negatives
  sitting exactly at the threshold are all answered ⊥ and one positive at the threshold is
  answered ⊤, with error tolerance α (Definition 3). Every noise used here has a log-concave
  density, so Γ and 1 − Γ are log-concave and log p(r) has a single maximum.

Methods (``method=``):

* ``"closed"`` — Γ in closed form: exponential − Laplace (the paper's Appendix D; derived below),
  Laplace − Laplace and Gaussian − Gaussian. The maximum of log p is found by bounded Brent
  iteration in float64 (relative accuracy ~1e-9 of the noise scale).
* ``"fft"`` — the numerical framework of Algorithms 3-4: both noises are discretised on a mesh of
  ``mesh`` points per side within a boundary B (the (1 − e) quantile of the wider noise; Algorithm
  3 line 1 uses the exponential's), the two mass vectors are convolved by FFT, Γ is read off the
  cumulative sums and p is maximised over the grid (then refined by a parabola through the three
  best points). Works for any pair of families.
* ``"quad"`` — Γ(z) = ∫ f_ρ(y) F_ν(z + y) dy by adaptive quadrature (scipy), an independent check.
* ``"auto"`` — ``"closed"`` where a closed form exists, else ``"fft"``.

Everything here runs on the host in float64 from concrete noise scales. SVT-Exp computes its r
once at construction and stores it as a traced leaf (``svtjax.mechanisms.exponential``).

Closed form (exponential with mean μ minus Laplace with scale b; the Laplace is symmetric, so
ν − ρ has the law of ν + ρ):

    Γ(z) = b / (2(b + μ)) · e^{z/b}                                   for z ≤ 0,
    1 − Γ(z) = (2μ + b) / (2(μ + b)) · e^{−z/μ} + (b/2) · D(z)        for z > 0,
    D(z) = (e^{−z/μ} − e^{−z/b}) / (μ − b)   (→ z e^{−z/μ} / μ² as b → μ),

both terms non-negative, so there is no cancellation.

References:
  Liu, Wang, Liu, Li, Chen (2024), PVLDB 18(2): Eq. 7-9, Figure 5, Algorithms 3-4, Table 5.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from svtjax import _validate
from svtjax._pytree import is_concrete
from svtjax.noise import Exponential, Gaussian, Gumbel, Laplace, Noise

__all__ = ["term", "optimal", "mean", "success_probability", "difference_cdf", "METHODS",
           "DEFAULT_MESH", "DEFAULT_TAIL"]

METHODS = ("auto", "closed", "fft", "quad")
DEFAULT_MESH = 16_384
"""Mesh points per side m of Algorithm 4 (2m − 2 bins): r^op within ~5e-7 relative of the
closed form at a cost small against a simulation (benchmarks/RESULTS.md, Decisions)."""
DEFAULT_TAIL = 1e-12
"""Probability e outside the boundary B of Algorithm 3, line 1."""


# -- noise laws on the host ------------------------------------------------------------------

def _scale(noise: Noise) -> float:
    return float(np.asarray(noise.scale_value))


def _scipy(noise: Noise):
    """The frozen scipy distribution of a concrete svtjax noise."""
    from scipy import stats  # scipy is imported where used: `import svtjax` stays fast

    s = _scale(noise)
    if isinstance(noise, Laplace):
        return stats.laplace(scale=s)
    if isinstance(noise, Gaussian):
        return stats.norm(scale=s)
    if isinstance(noise, Exponential):
        return stats.expon(scale=s)
    if isinstance(noise, Gumbel):
        return stats.gumbel_r(scale=s)
    raise TypeError(f"no law for noise {type(noise).__name__}; use Laplace, Gaussian, "
                    "Exponential or Gumbel")


def _check_noise(name: str, noise) -> Noise:
    if not isinstance(noise, (Laplace, Gaussian, Exponential, Gumbel)):
        raise TypeError(f"{name} must be a svtjax.noise Laplace, Gaussian, Exponential or Gumbel "
                        f"with a concrete scale; got {noise!r}")
    _validate.positive(f"{name} scale", _scale(noise))
    return noise


def _closed_form(query: Noise, threshold: Noise) -> Callable | None:
    """(cdf, sf) of ν − ρ as vectorised float64 functions, or None where none is coded."""
    if isinstance(query, Exponential) and isinstance(threshold, Laplace):
        return _exp_minus_laplace(_scale(query), _scale(threshold))
    if isinstance(query, Laplace) and isinstance(threshold, Laplace):
        return _laplace_minus_laplace(_scale(query), _scale(threshold))
    if isinstance(query, Gaussian) and isinstance(threshold, Gaussian):
        from scipy import stats

        law = stats.norm(scale=math.hypot(_scale(query), _scale(threshold)))
        return law.cdf, law.sf
    return None


def _exp_minus_laplace(mu: float, b: float):
    d = mu - b
    near = abs(d) < 1e-9 * mu

    def D(z):  # (e^{-z/μ} − e^{-z/b}) / (μ − b), z ≥ 0
        if near:
            return z * np.exp(-z / mu) / mu ** 2
        if d < 0:  # μ < b: factor out the slower e^{-z/b} (the other form overflows: ∞ · 0)
            return np.exp(-z / b) * np.expm1(z * d / (b * mu)) / d
        return np.exp(-z / mu) * -np.expm1(-z * d / (b * mu)) / d

    def sf_pos(z):
        return (2 * mu + b) / (2 * (mu + b)) * np.exp(-z / mu) + 0.5 * b * D(z)

    def cdf(z):
        z = np.asarray(z, float)
        neg = b / (2 * (b + mu)) * np.exp(np.minimum(z, 0.0) / b)
        pos = -np.expm1(np.log(np.maximum(sf_pos(np.maximum(z, 0.0)), 1e-320)))
        return np.where(z <= 0, neg, pos)

    def sf(z):
        z = np.asarray(z, float)
        neg = -np.expm1(np.log(b / (2 * (b + mu))) + np.minimum(z, 0.0) / b)
        return np.where(z <= 0, neg, sf_pos(np.maximum(z, 0.0)))

    return cdf, sf


def _laplace_minus_laplace(b1: float, b2: float):
    """P(ν − ρ ≥ x) for ν ~ Lap(b1), ρ ~ Lap(b2), x ≥ 0 (tests/test_distribution.py's formula),
    extended by symmetry."""
    def tail(x):  # x ≥ 0
        if abs(b1 - b2) < 1e-9 * max(b1, b2):
            b = 0.5 * (b1 + b2)
            return (2 + x / b) * np.exp(-x / b) / 4
        return (b1 ** 2 * np.exp(-x / b1) - b2 ** 2 * np.exp(-x / b2)) / (2 * (b1 ** 2 - b2 ** 2))

    def sf(z):
        z = np.asarray(z, float)
        return np.where(z >= 0, tail(np.abs(z)), 1 - tail(np.abs(z)))

    def cdf(z):
        z = np.asarray(z, float)
        return np.where(z >= 0, 1 - tail(np.abs(z)), tail(np.abs(z)))

    return cdf, sf


def _quad(query: Noise, threshold: Noise):
    from scipy import integrate

    nu, rho = _scipy(query), _scipy(threshold)

    def one(z, fn):
        # Γ(z) = ∫ f_ρ(y) F_ν(z + y) dy; split at the kinks so quad sees smooth pieces.
        pts = sorted({0.0, -float(z)})
        edges = [-np.inf, *pts, np.inf]
        total = 0.0
        for lo, hi in zip(edges[:-1], edges[1:]):
            val, _ = integrate.quad(lambda y: rho.pdf(y) * fn(z + y), lo, hi, epsabs=1e-15,
                                    epsrel=1e-12, limit=400)
            total += val
        return total

    cdf = np.vectorize(lambda z: one(z, nu.cdf))
    sf = np.vectorize(lambda z: one(z, nu.sf))
    return cdf, sf


# -- Algorithms 3-4 --------------------------------------------------------------------------

def _discretise(law, m: int, u: float) -> tuple[np.ndarray, float, float]:
    """Algorithm 4: masses of [iu, (i+1)u) for i = −m+1 .. m−2, then the masses below −B and
    above B (B = (m−1)u). Returns (bins, below, above)."""
    edges = np.arange(-m + 1, m) * u
    cdf = law.cdf(edges)
    sf = law.sf(edges)
    # Differences of whichever tail is smaller keep tiny masses accurate.
    bins = np.where(edges[:-1] < 0, np.diff(cdf), -np.diff(sf))
    return np.maximum(bins, 0.0), float(cdf[0]), float(sf[-1])


def _fft_grid(query: Noise, threshold: Noise, mesh: int, tail: float):
    """Γ on the grid z_n: returns (z, Γ(z), 1 − Γ(z)) from Algorithms 3-4."""
    nu, rho = _scipy(query), _scipy(threshold)
    # Algorithm 3 line 1: B is the (1 − e) quantile; for a two-sided noise its |.| quantile.
    bound = max(float(nu.isf(tail / 2)), float(-nu.ppf(tail / 2)),
                float(rho.isf(tail / 2)), float(-rho.ppf(tail / 2)))
    u = bound / (mesh - 1)
    a, a_lo, a_hi = _discretise(nu, mesh, u)
    # −ρ: the masses of ρ's bins in reverse order (bins are symmetric about 0).
    c, c_lo, c_hi = _discretise(rho, mesh, u)
    c, c_lo, c_hi = c[::-1], c_hi, c_lo
    size = 2 * len(a)
    conv = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(c, size), size)[: 2 * len(a) - 1]
    conv = np.maximum(conv, 0.0)
    # Bin i of ν (centre (i + 1/2)u, i from −m+1) plus bin j of −ρ: centre (i + j + 1)u.
    n = np.arange(len(conv)) + 2 * (-mesh + 1) + 1
    z = n * u
    # Mass that is −∞ (either part below −B) or +∞ ("∞ + x = ∞"); the e² overlap is ignored.
    minus_inf = a_lo * (1 - c_hi) + c_lo * (1 - a_hi) - a_lo * c_lo
    plus_inf = a_hi * (1 - c_lo) + c_hi * (1 - a_lo) - a_hi * c_hi
    # A point mass at z_n stands for a triangle on [z_n − u, z_n + u]: count half of it.
    below = np.cumsum(conv) - 0.5 * conv
    above = np.cumsum(conv[::-1])[::-1] - 0.5 * conv
    return z, minus_inf + below, plus_inf + above


# -- public API ------------------------------------------------------------------------------

def difference_cdf(z, query_noise: Noise, threshold_noise: Noise, method: str = "auto"):
    """Γ(z) = P(ν − ρ ≤ z): the CDF of query noise minus threshold noise (float64, host).

    ``method``: ``"closed"``, ``"quad"``, ``"fft"`` (interpolated from the FFT grid) or
    ``"auto"``.
    """
    cdf, _ = _laws(query_noise, threshold_noise, method)
    return cdf(np.asarray(z, float))


def _laws(query_noise, threshold_noise, method, mesh=DEFAULT_MESH, tail=DEFAULT_TAIL):
    _check_noise("query_noise", query_noise)
    _check_noise("threshold_noise", threshold_noise)
    _validate.one_of("method", method, METHODS)
    closed = _closed_form(query_noise, threshold_noise)
    if method == "closed" and closed is None:
        raise ValueError(f"no closed form for {type(query_noise).__name__} query noise with "
                         f"{type(threshold_noise).__name__} threshold noise; use method='fft' "
                         "or 'quad'")
    if method in ("closed", "auto") and closed is not None:
        return closed
    if method == "quad":
        return _quad(query_noise, threshold_noise)
    z, g, s = _fft_grid(query_noise, threshold_noise, mesh, tail)
    return (lambda x: np.interp(x, z, g, left=0.0, right=1.0),
            lambda x: np.interp(x, z, s, left=1.0, right=0.0))


def success_probability(r, query_noise: Noise, threshold_noise: Noise, k: int,
                        alpha: float = 0.0, method: str = "auto"):
    """p(r) = Γ(r + α)^k (1 − Γ(r − α)) (Liu et al. 2024, Eq. 8); β = 1 − p(r)."""
    cdf, sf = _laws(query_noise, threshold_noise, method)
    r = np.asarray(r, float)
    return np.exp(k * np.log(np.maximum(cdf(r + alpha), 1e-300))
                  + np.log(np.maximum(sf(r - alpha), 1e-300)))


KINDS = ("optimal", "mean", "none")
"""The corrections :func:`term` computes."""


def term(kind: str, query_noise: Noise, threshold_noise: Noise, k=None, alpha: float = 0.0,
         method: str = "auto"):
    """Algorithm 2 line 3: the correction r of ``kind`` for the noises ν and ρ — "optimal"
    (:func:`optimal`, with ``k``, ``alpha``, ``method``; on the host), "mean" (:func:`mean`; E[ν]
    itself when ν's scale is traced) or "none" (0). SVT-Exp computes it once, at construction.
    """
    _validate.one_of("correction", kind, KINDS)
    if kind == "none":
        return 0.0
    if kind == "mean":
        if not is_concrete(query_noise):
            return query_noise.mean
        return mean(query_noise)
    return optimal(query_noise, threshold_noise, k, float(alpha), method=method)


def mean(query_noise: Noise) -> float:
    """The naive correction r = E[ν] (Liu et al. 2024, Section 4.3.1; Table 5's "Mean")."""
    _check_noise("query_noise", query_noise)
    return float(np.asarray(query_noise.mean))


def optimal(query_noise: Noise, threshold_noise: Noise, k: int, alpha: float = 0.0,
            method: str = "auto", *, mesh: int = DEFAULT_MESH, tail: float = DEFAULT_TAIL
            ) -> float:
    """r^op = argmax_r Γ(r + α)^k (1 − Γ(r − α)) (Liu et al. 2024, Eq. 8-9, Algorithm 3).

    Args:
      query_noise: the query noise ν (concrete scale), e.g. ``Exponential(2cΔ/ε2)``.
      threshold_noise: the threshold noise ρ, e.g. ``Laplace(Δ/ε1)``.
      k: number of negatives per positive in Eq. 8 (integer ≥ 1; the paper's experiments use
        k = ⌊m/c⌋ for m queries).
      alpha: error tolerance α ≥ 0 of (α, β)-accuracy (the paper's default 0).
      method: ``"auto"``, ``"closed"``, ``"fft"`` or ``"quad"`` (see the module docstring).
      mesh: m of Algorithm 4 (``"fft"`` only).
      tail: e of Algorithm 3 line 1 (``"fft"`` only).

    Returns:
      r^op as a Python float.
    """
    _validate.integer("k", k, minimum=1)
    _validate.nonnegative("alpha", alpha)
    _validate.integer("mesh", mesh, minimum=8)
    _validate.probability("tail", tail)
    k, alpha = int(k), float(alpha)
    _check_noise("query_noise", query_noise)
    _check_noise("threshold_noise", threshold_noise)
    _validate.one_of("method", method, METHODS)
    use_fft = method == "fft" or (method == "auto"
                                  and _closed_form(query_noise, threshold_noise) is None)
    if use_fft:
        return _optimal_fft(query_noise, threshold_noise, k, alpha, mesh, tail)
    cdf, sf = _laws(query_noise, threshold_noise, method)
    s = _scale(query_noise) + _scale(threshold_noise)

    def neg_log_p(r):
        return -(k * np.log(max(float(cdf(r + alpha)), 1e-300))
                 + np.log(max(float(sf(r - alpha)), 1e-300)))

    # log p is concave: bracket the maximum on a coarse grid, then Brent in the bracket.
    grid = s * np.linspace(-20.0, 20.0 + 3.0 * math.log(k + 1.0), 401) + alpha
    vals = -(k * np.log(np.maximum(np.asarray(cdf(grid + alpha), float), 1e-300))
             + np.log(np.maximum(np.asarray(sf(grid - alpha), float), 1e-300)))
    i = int(np.clip(np.argmin(vals), 1, len(grid) - 2))
    from scipy import optimize

    res = optimize.minimize_scalar(neg_log_p, bounds=(grid[i - 1], grid[i + 1]),
                                   method="bounded", options={"xatol": 1e-11 * s})
    return float(res.x)


def _optimal_fft(query_noise, threshold_noise, k, alpha, mesh, tail) -> float:
    z, g, s = _fft_grid(query_noise, threshold_noise, mesh, tail)
    u = z[1] - z[0]
    if alpha == 0.0:
        log_p = k * np.log(np.maximum(g, 1e-300)) + np.log(np.maximum(s, 1e-300))
        r_grid = z
    else:  # evaluate on the grid points r with r ± α interpolated
        r_grid = z
        log_p = (k * np.log(np.maximum(np.interp(z + alpha, z, g), 1e-300))
                 + np.log(np.maximum(np.interp(z - alpha, z, s), 1e-300)))
    i = int(np.clip(np.argmax(log_p), 1, len(z) - 2))
    y0, y1, y2 = log_p[i - 1], log_p[i], log_p[i + 1]
    curv = y0 - 2 * y1 + y2
    shift = 0.5 * (y0 - y2) / curv if curv < 0 else 0.0
    return float(r_grid[i] + np.clip(shift, -1.0, 1.0) * u)
