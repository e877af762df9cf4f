"""Quadrature over the threshold noise ρ: the one integral every exact law needs.

Given the noisy threshold's noise ρ = z, the items' comparisons are independent: item i passes
with probability p_i(z) = P(q_i + ν_i ≥ T_i + shift + z) = sf_ν(z − d_i), d_i = q_i − T_i − shift.
Every exact quantity is then ∫ f_ρ(z) Φ(z) dz for some Φ built from the p_i (Lyu, Su, Li 2017,
Lyu, Su, Li 2017, PVLDB 10(6), Section 3's proofs condition on ρ the same way). This
module builds the composite Gauss–Legendre rule for that integral, on the host, from concrete
numbers; the kernels evaluate Φ at its nodes in JAX (``svtjax.exact._laws``).

Where Φ is not smooth, Gauss–Legendre converges slowly, so the panel edges are placed there:

1. **Support**: the threshold law truncated where its tail mass is below ~1e-18 (Laplace and
   exponential 40 scales, Gaussian 9σ, Gumbel from −4β to 40β).
2. **Base edges** graded for the threshold density, its non-smooth point included: the Laplace
   kink at 0 (Lyu'17 Algorithm 1 line 1), the exponential's jump at 0.
3. **Kinks of the query noise**: p_i(z) is not smooth at z = d_i for Laplace ν (a jump in the
   second derivative), exponential ν (a jump in the first derivative; Liu, Wang, Liu, Li,
   Chen 2024, PVLDB 18(2), Algorithm 2 line 6) and noiseless comparisons (a jump;
   Lyu'17 Algorithm 5). An unresolved kink inside a panel of width h costs about
   w · (h / b_ν)^κ (κ = 3, 2, 0 respectively; b_ν the query-noise scale; w the ρ-density at the
   kink times its multiplicity), so a greedy pass over the sorted distinct kinks makes a kink a
   panel edge whenever the kinks left inside the current panel would exceed ``kink_tol``; dense
   clusters of low-weight kinks share panels. Gaussian and Gumbel ν are smooth (no kink edges).
4. **Refinement**: where any p_i varies (the hull of the d_i widened by 40 query-noise scales),
   panels are split to width ≤ ``refine`` · b_ν.
5. **Order per panel**: the smallest N (3..``max_order``) with m · (w/2s)^{2N} / (2N)! ≤ ``tol``,
   m the panel's ρ-mass and s the smallest length scale there (threshold scale, and the
   query-noise scale inside the active region) — the Gauss–Legendre error bound for an analytic
   integrand of that scale. Panels far in the tails get few nodes.

Accuracy at the defaults (``benchmarks/RESULTS.md``, Decisions): a comparison of every
P(i ∈ S) with a far finer rule (every kink an edge, panels one query-noise scale wide) on Zipf
n = 10^4, retail, T10I4D100K and BMS-WebView-1 (c = 50, ε = 0.1 and 0.5) and records the
largest difference; ``tests/test_exact.py`` checks that doubling the nodes changes no reported
number by more than 1e-9. Short streams (``all_kinks=True``) make every kink an edge: that is
what the 1e-10 agreement with the test oracles and the exact privacy losses use.

The rule depends on the threshold noise's scale only through its support and grading, so the
nodes are fixed numbers: ``jax.grad`` with respect to a budget share differentiates the density
weights and the p_i at fixed nodes, which is the derivative of the same discretised integral
that a finite difference with the same rule sees.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np

from svtjax._pytree import is_concrete
from svtjax.noise import Exponential, Gaussian, Gumbel, Laplace, Noise, Zero

__all__ = ["Rule", "build", "doubled", "padded", "density_weights", "host_density_weights",
           "KINK_ORDER"]

# Panel edges in units of the threshold noise's scale, graded to its density (a panel's
# relative error shrinks with its mass, so tail panels may be wide).
_LAPLACE = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.5, 7.5, 10.0, 13.0, 17.0, 22.0, 28.0,
                     34.0, 40.0])
_GAUSSIAN = np.arange(0.0, 9.01, 0.5)
_GUMBEL = np.array([-4.0, -3.0, -2.5, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0,
                    4.0, 5.5, 7.5, 10.0, 13.0, 17.0, 22.0, 28.0, 34.0, 40.0])


def _symmetric(half: np.ndarray) -> np.ndarray:
    return np.concatenate([-half[::-1], half[1:]])


_BASE = {
    Laplace: _symmetric(_LAPLACE),
    Gaussian: _symmetric(_GAUSSIAN),
    Exponential: _LAPLACE,
    Gumbel: _GUMBEL,
}

KINK_ORDER = {Laplace: 3, Exponential: 2, None: 0}
"""κ in the kink error w · (h / b_ν)^κ: a query-noise family absent here is smooth."""

_ACTIVE = 40.0  # query-noise scales around the d_i where some p_i varies


class Rule(NamedTuple):
    """A composite Gauss–Legendre rule on the real line (host numbers, float64).

    Attributes:
      nodes: float64[G], the values z of ρ.
      weights: float64[G], Gauss weights times panel half-widths; the integral of f_ρ · Φ is
        Σ_g weights[g] · f_ρ(nodes[g]) · Φ(nodes[g]) (see :func:`density_weights`).
      lo, hi: float64[P], the panels' ends (empty for a point-mass threshold).
      order: int64[P], Gauss–Legendre nodes in each panel.
    """

    nodes: np.ndarray
    weights: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    order: np.ndarray


class _Panels(NamedTuple):
    lo: np.ndarray
    hi: np.ndarray
    order: np.ndarray


def _scale(noise: Noise) -> float:
    return float(np.asarray(noise.scale_value))


def _cdf(noise: Noise, x: np.ndarray) -> np.ndarray:
    """The threshold noise's cdf in numpy (host; eager JAX calls would compile per shape)."""
    z = np.asarray(x, np.float64) / _scale(noise)
    if isinstance(noise, Laplace):
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.abs(z)))
    if isinstance(noise, Gaussian):
        from scipy import special  # imported where used: `import svtjax` stays fast

        return special.ndtr(z)
    if isinstance(noise, Exponential):
        return np.where(z < 0, 0.0, -np.expm1(-np.maximum(z, 0)))
    if isinstance(noise, Gumbel):
        return np.exp(-np.exp(-z))
    raise ValueError(f"no quadrature for {type(noise).__name__} threshold noise")


def _logpdf(noise: Noise, x: np.ndarray) -> np.ndarray:
    """The threshold noise's log-density in numpy (host)."""
    b = _scale(noise)
    z = np.asarray(x, np.float64) / b
    with np.errstate(divide="ignore"):
        if isinstance(noise, Laplace):
            return -np.abs(z) - math.log(2 * b)
        if isinstance(noise, Gaussian):
            return -0.5 * z * z - math.log(b) - 0.5 * math.log(2 * math.pi)
        if isinstance(noise, Exponential):
            return np.where(z < 0, -np.inf, -z - math.log(b))
        if isinstance(noise, Gumbel):
            return -z - np.exp(-z) - math.log(b)
    raise ValueError(f"no quadrature for {type(noise).__name__} threshold noise")


def _density(noise: Noise, x: np.ndarray) -> np.ndarray:
    return np.exp(_logpdf(noise, x))


def _thin_kinks(u: np.ndarray, weight: np.ndarray, scale: float, kappa: int, tol: float,
                max_kinks: int) -> np.ndarray:
    """Kinks made panel edges: a greedy pass that keeps a kink whenever the kinks left inside
    the panel ending at the next kink would cost more than ``tol`` (see the module doc)."""
    if kappa == 0 or u.size <= 1:
        return u

    def build(tol):
        keep = np.zeros(u.size, bool)
        keep[0] = True
        start, inside = u[0], 0.0
        nxt = np.append(u[1:], u[-1] + scale)
        for k in range(1, u.size):
            inside_k = inside + weight[k]
            if inside_k * ((nxt[k] - start) / scale) ** kappa > tol:
                keep[k] = True
                start, inside = u[k], 0.0
            else:
                inside = inside_k
        return u[keep]

    kept = build(tol)
    while kept.size > max_kinks:
        tol *= 4.0
        kept = build(tol)
    return kept


def _order(mass: np.ndarray, ratio: np.ndarray, tol: float, max_order: int) -> np.ndarray:
    """Smallest N ≥ 3 with mass · ratio^{2N} / (2N)! ≤ tol (capped at ``max_order``)."""
    order = np.full(mass.shape, max_order, np.int64)
    log_tol = math.log(tol)
    for n in range(max_order - 1, 2, -1):
        with np.errstate(divide="ignore"):
            err = (np.log(np.maximum(mass, 1e-300)) + 2 * n * np.log(np.maximum(ratio, 1e-300))
                   - math.lgamma(2 * n + 1))
        order = np.where(err <= log_tol, n, order)
    return order


def _panels(threshold: Noise, query: Optional[Noise], d: np.ndarray, *, tol: float,
            kink_tol: float, refine: float, max_order: int, max_kinks: int,
            all_kinks: bool) -> _Panels:
    family = type(threshold)
    if family not in _BASE:
        raise ValueError(f"no quadrature for {family.__name__} threshold noise; supported: "
                         "Laplace, Gaussian, Exponential, Gumbel, Zero")
    scale = _scale(threshold)
    edges = _BASE[family] * scale
    lo, hi = edges[0], edges[-1]
    query_family = None if query is None or isinstance(query, Zero) else type(query)
    q_scale = None if query_family is None else _scale(query)
    kappa = KINK_ORDER.get(query_family)

    kinks = np.zeros(0)
    if kappa is not None and d.size:
        u, mult = np.unique(d, return_counts=True)
        inside = (u > lo) & (u < hi)
        u, mult = u[inside], mult[inside]
        if u.size and not all_kinks:
            weight = mult * _density(threshold, u) * scale
            kinks = _thin_kinks(u, weight, q_scale, kappa, kink_tol, max_kinks)
        else:
            kinks = u
    edges = np.unique(np.concatenate([edges, kinks]))

    if q_scale is not None and d.size:
        a_lo, a_hi = d.min() - _ACTIVE * q_scale, d.max() + _ACTIVE * q_scale
        width = edges[1:] - edges[:-1]
        active = (edges[1:] > a_lo) & (edges[:-1] < a_hi)
        pieces = np.where(active, np.ceil(width / (refine * q_scale)), 1).astype(np.int64)
        pieces = np.maximum(pieces, 1)
        starts = np.repeat(edges[:-1], pieces)
        widths = np.repeat(width / pieces, pieces)
        offset = np.arange(pieces.sum()) - np.repeat(np.cumsum(pieces) - pieces, pieces)
        p_lo = starts + offset * widths
        p_hi = np.where(offset == np.repeat(pieces - 1, pieces), np.repeat(edges[1:], pieces),
                        p_lo + widths)
        p_active = np.repeat(active, pieces)
        length = np.where(p_active, min(scale, q_scale), scale)
    else:
        p_lo, p_hi = edges[:-1], edges[1:]
        length = np.full(p_lo.shape, scale)
    mass = np.maximum(_cdf(threshold, p_hi) - _cdf(threshold, p_lo), 0.0)
    # An edge-free panel still holds the density's own curvature: never below 3 nodes, and the
    # mass bound is taken against the whole law's tolerance.
    order = _order(np.maximum(mass, 1e-300), (p_hi - p_lo) / (2 * length), tol, max_order)
    keep = p_hi > p_lo
    return _Panels(p_lo[keep], p_hi[keep], order[keep])


_LEGENDRE: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    if n not in _LEGENDRE:
        _LEGENDRE[n] = np.polynomial.legendre.leggauss(n)
    return _LEGENDRE[n]


def _rule(panels: _Panels, factor: int = 1) -> Rule:
    nodes, weights = [], []
    for n in np.unique(panels.order):
        sel = panels.order == n
        x, w = _legendre(int(n) * factor)
        half = (panels.hi[sel] - panels.lo[sel])[:, None] / 2
        mid = (panels.hi[sel] + panels.lo[sel])[:, None] / 2
        nodes.append((mid + half * x).ravel())
        weights.append((half * w).ravel())
    z = np.concatenate(nodes)
    w = np.concatenate(weights)
    order = np.argsort(z, kind="stable")
    return Rule(z[order], w[order], panels.lo, panels.hi, panels.order)


# Rules are padded to a multiple of this many nodes; the kernels rely on it to integrate each
# aligned group of PAD nodes against its own law only (svtjax.exact._chunks.map_chunks).
PAD = 128


def build(threshold: Noise, query: Optional[Noise], d, *, tol: float = 1e-16,
          kink_tol: float = 1e-8, refine: float = 2.0, max_order: int = 12,
          max_kinks: int = 4096, all_kinks: bool = False) -> Rule:
    """The rule for ∫ f_ρ(z) Φ(z) dz with Φ built from p_i(z) = sf_ν(z − d_i).

    Args:
      threshold: the threshold noise ρ (concrete scale).
      query: the query noise ν (concrete scale), or None for noiseless comparisons.
      d: float[n], d_i = q_i − T_i − shift (the kinks of the p_i).
      tol: absolute error target per panel (the Gauss–Legendre bound, see the module doc).
      kink_tol: cost above which a kink becomes a panel edge.
      refine: panels where some p_i varies are at most ``refine`` query-noise scales wide.
      max_order: nodes per panel at most.
      max_kinks: at most this many kink edges (``kink_tol`` is raised until they fit).
      all_kinks: make every kink inside the support an edge (short streams).

    Returns:
      A :class:`Rule`. A :class:`~svtjax.noise.Zero` threshold noise gives the one node z = 0.
    """
    if isinstance(threshold, Zero):
        empty = np.zeros(0)
        return Rule(np.zeros(1), np.ones(1), empty, empty, np.zeros(0, np.int64))
    d = np.asarray(d, np.float64).ravel()
    panels = _panels(threshold, query, d, tol=tol, kink_tol=kink_tol, refine=refine,
                     max_order=max_order, max_kinks=max_kinks, all_kinks=all_kinks)
    return _rule(panels)


def doubled(rule: Rule) -> Rule:
    """The same panels with twice the Gauss–Legendre nodes in each (the accuracy check)."""
    if rule.lo.size == 0:
        return rule  # the single node of a point-mass threshold is exact
    return _rule(_Panels(rule.lo, rule.hi, rule.order), 2)


def host_density_weights(rule: Rule, threshold: Noise) -> np.ndarray:
    """weights · f_ρ(nodes) in float64 numpy, for a concrete threshold noise."""
    if isinstance(threshold, Zero):
        return np.ones(1)
    return rule.weights * _density(threshold, rule.nodes)


def density_weights(rule: Rule, threshold: Noise, dtype=None):
    """weights · f_ρ(nodes) as a JAX array (traced when the threshold noise's scale is)."""
    import jax.numpy as jnp

    if isinstance(threshold, Zero):
        return jnp.ones(1, dtype)
    if is_concrete(threshold):  # host numbers: no per-shape compilation
        return jnp.asarray(host_density_weights(rule, threshold), dtype)
    z = jnp.asarray(rule.nodes, dtype)
    return jnp.asarray(rule.weights, dtype) * jnp.exp(threshold.logpdf(z))


def padded(rule: Rule, multiple: int = PAD, size: Optional[int] = None) -> Rule:
    """``rule`` with zero-weight nodes appended up to a multiple of ``multiple`` nodes (or to
    ``size`` nodes), so that rules of similar size share one compiled kernel (the extra nodes
    contribute nothing)."""
    pad = -rule.nodes.size % multiple if size is None else size - rule.nodes.size
    if pad < 0:
        raise ValueError(f"cannot pad a rule of {rule.nodes.size} nodes to {size}")
    if not pad:
        return rule
    return rule._replace(nodes=np.concatenate([rule.nodes, np.full(pad, rule.nodes[-1])]),
                         weights=np.concatenate([rule.weights, np.zeros(pad)]))
