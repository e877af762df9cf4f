"""The inner integral of the random-order laws: E[1/(M_{−i}+1)] for every item given z.

M_{−i} is the number of items other than i that pass (a Poisson-binomial count), and
E[1/(M_{−i}+1)] = ∫_0^1 Π_{j≠i} (1 − p_j s) ds, with Π_{j≠i} = Π_j / (1 − p_i s), by
Gauss–Laguerre or composite Gauss–Legendre nodes in s (:func:`inverse_mean_nodes`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = ["SUM_EDGES", "SUM_ORDER", "LAGUERRE_FROM", "LAGUERRE_NODES", "LOG_GROUP",
           "inverse_mean_nodes", "inverse_means"]

SUM_EDGES = np.array([0.0, 1.0, 2.5, 4.0, 6.0, 8.5, 11.5, 15.0, 19.0, 24.0, 30.0, 37.0, 46.0])
"""Panels of the inner integral in y = μ s when μ < :data:`LAGUERRE_FROM`; beyond y = 46,
F ≤ e^{−46} < 1e-19."""
SUM_ORDER = 6
"""Gauss–Legendre nodes per panel of the inner integral."""
LAGUERRE_FROM = 40.0
"""From this μ on, the inner integral uses :data:`LAGUERRE_NODES` Gauss–Laguerre nodes."""
LAGUERRE_NODES = 16


def inverse_mean_nodes(mu, dtype, laguerre: bool):
    """Nodes for E[1/(M+1)] = ∫_0^1 F(s) ds, F(s) = Π_j (1 − p_j s) ≤ e^{−μ s} (μ = Σ p_j).

    In y = μ s, F = e^{−y} φ(y) with φ(y) = Π_j (1 − p_j y/μ) e^{p_j y/μ} ≤ 1, smooth on
    [0, μ) (its singularities lie at y = μ/p_j ≥ μ).

    * ``laguerre`` (every μ ≥ :data:`LAGUERRE_FROM`): Gauss–Laguerre for ∫_0^∞ e^{−y} φ(y) dy;
      nodes beyond y = μ (s ≥ 1) are dropped, which costs at most e^{−μ} ≤ e^{−40}. 16 nodes
      reach 1e-15 relative for every μ ≥ 30 in the checks against the full Poisson-binomial law
      (``tests/test_exact.py``), where φ is a polynomial times an exponential;
    * otherwise composite Gauss–Legendre on :data:`SUM_EDGES` clipped to [0, μ] (72 nodes,
      below 1e-13 relative for every μ).

    Nodes that carry no weight are parked at s = 0 so that no factor 1 − p_i s vanishes there
    (a 0/0 in the leave-one-out division).

    Returns:
      (s, 1 − s, weights, log-factor), each [T, G]: ∫_0^1 F(s) ds ≈
      Σ_t weights_t · exp(log-factor_t + log F(s_t)).
    """
    lam = jnp.maximum(mu, 1e-30)  # [G]
    if laguerre:
        y, w = np.polynomial.laguerre.laggauss(LAGUERRE_NODES)
        y = jnp.asarray(y, dtype)[:, None]
        used = y < lam[None]
        s = jnp.where(used, y / lam[None], 0.0)
        weight = jnp.where(used, jnp.asarray(w, dtype)[:, None] / lam[None], 0.0)
        return s, 1 - s, weight, jnp.where(used, y, 0.0)
    x, w = np.polynomial.legendre.leggauss(SUM_ORDER)
    u = jnp.asarray((x + 1) / 2, dtype)
    wu = jnp.asarray(w / 2, dtype)
    a = jnp.minimum(jnp.asarray(SUM_EDGES[:-1], dtype)[:, None], lam[None])  # [K, G]
    b = jnp.minimum(jnp.asarray(SUM_EDGES[1:], dtype)[:, None], lam[None])
    y = a[:, None] + (b - a)[:, None] * u[None, :, None]  # [K, U, G]
    weight = wu[None, :, None] * ((b - a) / lam)[:, None]
    used = (b > a)[:, None]
    s = jnp.where(used, jnp.minimum(y / lam, 1.0), 0.0)
    # 1 − s as (μ − b + (b − a)(1 − u)) / μ, not as (μ − y) / μ: where μ lies a few ulps above
    # a panel edge, the last panel is a sliver whose nodes y round to μ, so μ − y is 0 and an
    # item that passes surely (p_i = 1, one-sided query noise) divides 0 by 0 in the
    # leave-one-out step (svt-exp on Adult, c = 50, ε = 0.5, θ = 0.001 gave E[SER] = nan). A
    # sum of non-negative terms, it is accurate to a few ulps and positive at every used node.
    rest = (lam[None] - b)[:, None] + (b - a)[:, None] * (1 - u)[None, :, None]
    oms = jnp.where(used, rest / lam, 1.0)
    shape = (-1, mu.shape[0])
    return (s.reshape(shape), oms.reshape(shape),
            jnp.broadcast_to(weight, y.shape).reshape(shape), jnp.zeros_like(s).reshape(shape))


LOG_GROUP = 8
"""Factors multiplied per logarithm in :func:`inverse_means` (float64)."""


def inverse_means(Pb, Qb, mu, dtype, laguerre: bool, grouped: bool = False, ties=None,
                  native: bool = False):
    """E[1/(M_{−i}+1)] given z for every item: [nb, BLOCK, G] (see
    :func:`svtjax.exact._laws.random_order`), and with ``ties`` = (P [U, G], Q [U, G], m [U])
    (U scores shared by m_u items each) also for one item of each tie group: ([nb, BLOCK, G],
    [U, G]).

    ``grouped``: log F is summed as one log per block of the product of its factors, 1/128 of
    the logarithms. Only where every factor 1 − p_j s_t is bounded away from 0 (the caller's
    μ ≥ 139, so s_t ≤ 51.7/139 and each factor ≥ 0.62, a block's product ≥ 1e-27): the product
    then neither underflows nor loses more than 128 roundings (relative 3e-14).

    Otherwise, in float64, one log per :data:`LOG_GROUP` = 8 factors (an eighth of the
    logarithms, which were about half of a random-order evaluation). Each factor is
    1 − p_j s_t ≥ 1 − s_t, which the nodes keep above 3e-18 (Legendre: at least
    (b − a)(1 − u)/μ with 1 − u ≥ 0.034, and (b − a)/μ ≥ 2^-53 on the panel that ends at μ,
    ≥ 1/μ on a whole one; Laguerre: s_t = y/μ < 1, so 1 − s_t ≥ 2^-53), so a product of 8 is
    above 1e-141 and never underflows; it adds 7 roundings per 8 factors to the sum of logs
    (relative ~1e-15). float32 keeps one log per factor: its products of 8 could underflow.

    ``native`` (float64 only): both passes over the items run as svtjax's compiled kernels
    (:data:`svtjax._native.LOG_PRODUCTS_TARGET`, :data:`svtjax._native.INVERSE_SUMS_TARGET`),
    whose running product is renormalised every 8 factors and takes one logarithm at the end
    (``grouped`` is then moot).
    """
    s, oms, weight, log_factor = inverse_mean_nodes(mu, dtype, laguerre)
    if native:
        return _native_inverse_means(Pb, Qb, oms, weight, log_factor, ties)

    def log_block(acc, pq):  # log F(s_t) = Σ_j log(1 − p_j s_t), block by block
        p, q = pq
        factors = q[:, None] + p[:, None] * oms[None]
        if grouped:
            return acc + jnp.log(jnp.prod(factors, axis=0)), None
        if jnp.dtype(dtype) == jnp.float64:
            f = factors.reshape((-1, LOG_GROUP) + factors.shape[1:])
            return acc + jnp.sum(jnp.log(jnp.prod(f, axis=1)), axis=0), None
        return acc + jnp.sum(jnp.log(factors), axis=0), None

    logF, _ = lax.scan(log_block, jnp.zeros_like(s), (Pb, Qb))
    if ties is not None:  # m_u equal factors: m_u log(1 − p_u s_t)
        Pu, Qu, m = ties
        logF = logF + jnp.einsum("u,utg->tg", m.astype(dtype),
                                 jnp.log(Qu[:, None] + Pu[:, None] * oms[None]))
    A = weight * jnp.exp(log_factor + logF)  # Σ_t A_t / (1 − p_i s_t) = E[1/(M_{−i} + 1)]

    def inv_block(_, pq):
        p, q = pq
        return None, jnp.sum(A[None] / (q[:, None] + p[:, None] * oms[None]), axis=1)

    inv = lax.scan(inv_block, None, (Pb, Qb))[1]
    if ties is None:
        return inv
    return inv, jnp.sum(A[None] / (Qu[:, None] + Pu[:, None] * oms[None]), axis=1)


def _native_inverse_means(Pb, Qb, oms, weight, log_factor, ties):
    """:func:`inverse_means`'s two passes over the items as the compiled kernels."""
    from svtjax import _native

    nb, block, G = Pb.shape
    P, Q = Pb.reshape(nb * block, G), Qb.reshape(nb * block, G)
    logF = jax.ffi.ffi_call(_native.LOG_PRODUCTS_TARGET,
                            jax.ShapeDtypeStruct(oms.shape, oms.dtype),
                            vmap_method="sequential")(P, Q, oms)
    if ties is not None:  # m_u equal factors: m_u log(1 − p_u s_t)
        Pu, Qu, m = ties
        logF = logF + jnp.einsum("u,utg->tg", m.astype(oms.dtype),
                                 jnp.log(Qu[:, None] + Pu[:, None] * oms[None]))
    A = weight * jnp.exp(log_factor + logF)
    inv = jax.ffi.ffi_call(_native.INVERSE_SUMS_TARGET,
                           jax.ShapeDtypeStruct(P.shape, P.dtype),
                           vmap_method="sequential")(P, Q, oms, A).reshape(nb, block, G)
    if ties is None:
        return inv
    return inv, jnp.sum(A[None] / (Qu[:, None] + Pu[:, None] * oms[None]), axis=1)
