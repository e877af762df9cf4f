"""The random-order recursions of :func:`svtjax.exact._laws.random_order`, one chunk of nodes
at a time: the count law forward, the expected weights backward, tie groups as binomial steps,
and the cheap paths taken where a Chernoff bound makes one half of the split negligible.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax.exact._chunks import node_chunks
from svtjax.exact._inverse import LAGUERRE_FROM, SUM_EDGES, SUM_ORDER, inverse_means
from svtjax.exact._items import (
    BLOCK,
    ItemLaw,
    block_pass_fail,
    blocked,
    item_law,
    pass_fail,
    shift_up,
)

__all__ = ["tie_groups", "log_binomial", "random_chunk", "random_chunk_nodes", "random_law"]

SUB = 16
"""Positions per sub-block of the random-order backward pass: the laws it reads back,
[SUB, states, nodes], then stay in a core's cache (410 KB at 100 states and 32 nodes, against
a block's 3.3 MB); the same numbers as one pass per block, and faster."""


def tie_groups(d: np.ndarray, states: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray]:
    """Splits the offsets for :func:`svtjax.exact._laws.random_order`: scores shared by at
    least ``max(states, 2)`` items become tie groups (one binomial step each), the others stay
    single items.

    Returns (single, tied, sizes, rows): the indices of the single items, the tied groups'
    representatives (one index per group, in ``d``) and sizes, and for every item its row in
    the concatenation [single items, tie groups] of the random-order law's output.
    """
    d = np.asarray(d)
    values, first, inverse, counts = np.unique(d, return_index=True, return_inverse=True,
                                               return_counts=True)
    big = counts >= max(int(states), 2)
    if big.all():  # the recursions want at least one single item: the smallest group stays
        big[np.argmin(counts)] = False
    single = np.flatnonzero(~big[inverse])
    tied = first[big]
    rows = np.empty(d.shape[0], np.int64)
    rows[single] = np.arange(single.size)
    group_row = np.full(values.size, -1, np.int64)
    group_row[big] = single.size + np.arange(int(big.sum()))
    rows[big[inverse]] = group_row[inverse[big[inverse]]]
    return single, tied, counts[big], rows


def log_binomial(m: np.ndarray, states: int) -> np.ndarray:
    """log C(m_u, k) for k < ``states`` (−inf where k > m_u): float64 [U, states], exact to
    rounding (``math.lgamma`` of integers)."""
    out = np.full((m.size, states), -np.inf)
    for u, mu in enumerate(np.asarray(m, np.int64)):
        k = np.arange(min(int(mu), states - 1) + 1)
        out[u, :k.size] = [math.lgamma(mu + 1) - math.lgamma(j + 1) - math.lgamma(mu - j + 1)
                           for j in k]
    return out


def _binomial_pmf(log_c, m, P, Q):
    """Bin(m_u, p_u)[k] for k < states at every node: [U, states, G], from log C(m, k) [U,
    states] and (p, 1 − p) [U, G]. 1 − p enters as log1p(−p) where p < 1/2 (accurate for
    small p) and as log(1 − p) otherwise (1 − p is computed directly); p = 0 and p = 1 give
    point masses, with finite gradients."""
    k = jnp.arange(log_c.shape[1], dtype=P.dtype)[None, :, None]
    mm = m.astype(P.dtype)[:, None, None]
    p, q = P[:, None], Q[:, None]
    lp = jnp.log(jnp.where(p > 0, p, 1.0))
    lq = jnp.where(p < 0.5, jnp.log1p(-jnp.where(p < 0.5, p, 0.0)),
                   jnp.log(jnp.where(q > 0, q, 1.0)))
    ok = jnp.isfinite(log_c)[:, :, None] & ((p > 0) | (k == 0)) & ((q > 0) | (k == mm))
    logb = jnp.where(ok, jnp.where(jnp.isfinite(log_c), log_c, 0.0)[:, :, None]
                     + k * lp + (mm - k) * lq, 0.0)
    return jnp.where(ok, jnp.exp(logb), 0.0)


def _bernoulli_back(V, p, q):
    """V[a] ← (1 − p) V[a] + p V[a + 1] (V [K, states, G], 0 from ``states`` on): the expected
    weight before an item that passes with probability p."""
    return V * q + jnp.concatenate([V[:, 1:], jnp.zeros_like(V[:, :1])], axis=1) * p


def _convolve(pre, b):
    """(pre ⊛ b)[a] = Σ_k b[k] pre[a − k] for a < states: [states, G] each.

    Summed over k in order, each term a slice of ``pre`` padded with ``states`` zero rows (no
    [states, states, G] Toeplitz matrix: gathering one per tie group and node cost more than
    the products)."""
    S = pre.shape[0]
    padded = jnp.concatenate([jnp.zeros_like(pre), pre])  # pre[a − k] in row S + a − k

    def add(k, acc):
        return acc + b[k][None] * lax.dynamic_slice_in_dim(padded, S - k, S, axis=0)

    return lax.fori_loop(0, S, add, jnp.zeros_like(pre))


def _correlate(V, b):
    """Σ_k b[k] V[..., a + k, :] for a < states (V is 0 from ``states`` on): V [K, states, G],
    b [states, G]. Summed over k in order, as :func:`_convolve` (no Hankel matrix)."""
    S = b.shape[0]
    padded = jnp.concatenate([V, jnp.zeros_like(V)], axis=1)  # V[..., a + k], 0 from S on

    def add(k, acc):
        return acc + b[k][None, None] * lax.dynamic_slice_in_dim(padded, k, S, axis=1)

    return lax.fori_loop(0, S, add, jnp.zeros_like(V))


class _Chunk(NamedTuple):
    """What every part of one random-order chunk reads: sizes, options, the padded offsets, the
    terminal weights and the tie groups (``tie``: (d_u, m_u, log C(m_u, k), log C(m_u − 1, k),
    m_u − 1), or None)."""

    n: int
    nb: int
    n_pad: int
    states: int
    dtype: Any
    c_mech: Optional[int]
    ks: tuple
    ks_arr: Any
    terminal: Any
    native: bool
    log_tail: float
    d_pad: Any
    valid: Any
    tie: Optional[tuple]


def _chunk_spec(zc, d, ties, states: int, c_mech: Optional[int], c_eff: int, tail: float,
                native: bool) -> _Chunk:
    n = d.shape[0]
    dtype = zc.dtype
    # the compiled kernels take the nodes 8 at a time (one AVX-512 vector of doubles)
    native = native and dtype == jnp.float64 and zc.shape[0] % 8 == 0
    ks = (c_mech, c_eff) if c_mech is not None and c_eff != c_mech else \
        ((c_mech,) if c_mech is not None else (c_eff,))
    ks_arr = jnp.asarray(ks, dtype)
    nb = -(-n // BLOCK)
    n_pad = nb * BLOCK
    d_pad, valid = (x.reshape(n_pad) for x in blocked(d, nb))  # padding never passes
    a_idx = jnp.arange(states, dtype=dtype)
    terminal = jnp.stack([jnp.where(a_idx < k, 1 - k / (a_idx + 1), 0) for k in ks])
    tie = None
    if ties is not None:
        d_tie, m_tie, log_c, log_c_loo, _ = ties
        tie = (d_tie, m_tie, log_c, log_c_loo, m_tie - 1)
    # Skip the first sum where (k − 1) · exp(−(μ − k)² / (2 (μ − 1))) ≤ tail for the largest k
    # (ν − (k − 1) with ν ≥ μ − 1 is ≥ μ − k, and t²/(2ν) grows with ν above k − 1).
    log_tail = math.log(tail / max(max(ks) - 1, 1)) if tail > 0 else -math.inf
    return _Chunk(n, nb, n_pad, states, dtype, c_mech, ks, ks_arr, terminal, native, log_tail,
                  d_pad, valid, tie)


def _tie_laws(sp: _Chunk, P_tie, Q_tie):
    _, m_tie, log_c, log_c_loo, m_loo = sp.tie
    return (_binomial_pmf(log_c, m_tie, P_tie, Q_tie),
            _binomial_pmf(log_c_loo, m_loo, P_tie, Q_tie))


def _forward(pre, pq):
    p, q = pq
    return pre * q + shift_up(pre) * p, pre


def _count_law(sp: _Chunk, Pb, Qb, T=None):
    """The law of the ⊤ count over all items (below ``states``), and the law before each
    block (the checkpoints of the backward pass); with the tie groups' pmfs ``T``, the
    groups come first, and the laws before each of them are returned too."""
    def fwd_block(pre, pq_blk):
        return lax.scan(lambda x, y: (_forward(x, y)[0], None), pre, pq_blk)[0], pre

    pre0 = jnp.zeros((sp.states, Pb.shape[-1]), sp.dtype).at[0].set(1.0)
    before_ties = None
    if T is not None:
        pre0, before_ties = lax.scan(lambda pre, b: (_convolve(pre, b), pre), pre0, T)
    if sp.native:
        full, starts = _native_forward(pre0, Pb, Qb)
    else:
        full, starts = lax.scan(fwd_block, pre0, (Pb, Qb))
    return full, starts, before_ties


def _outputs(sp: _Chunk, p, e_g):
    evaluated = e_g[0] if sp.c_mech is not None else jnp.ones_like(p)
    return jnp.stack([p * evaluated, p * e_g[-1], evaluated])


def _backward(sp: _Chunk, starts, Pb, Qb, e_inv, wc, G: int):
    """The backward pass over the single items: (V before the first one [K, states, G], the
    outputs integrated over the chunk's nodes [n, 3, L])."""
    if sp.native:
        outs, V = _native_backward(starts, Pb, Qb, e_inv, sp.terminal.astype(sp.dtype),
                                   sp.ks_arr, sp.c_mech is not None)
        return V, (outs @ wc)[:sp.n]  # [n_pad, 3, chunk] @ [chunk, L]

    def bwd_step(V, x):
        pre, p, q, inv = x
        e_g = jnp.sum(pre[None] * V, axis=1) + sp.ks_arr[:, None] * inv[None]
        return _bernoulli_back(V, p, q), _outputs(sp, p, e_g)

    def bwd_sub(V, sub):
        start, p_sub, q_sub, inv_sub = sub
        _, pres = lax.scan(_forward, start, (p_sub, q_sub))
        return lax.scan(bwd_step, V, (pres, p_sub, q_sub, inv_sub), reverse=True)

    def bwd_block(V, blk):
        # The block's laws are recomputed from its checkpoint in sub-blocks of SUB
        # positions (from checkpoints of their own), so that the laws the backward steps
        # read back stay in cache; the same operations in the same order as one pass.
        start, *rest = blk
        p_sub, q_sub, inv_sub = (x.reshape((BLOCK // SUB, SUB) + x.shape[1:]) for x in rest)
        _, starts_sub = lax.scan(
            lambda pre, pq: (lax.scan(lambda x, y: (_forward(x, y)[0], None), pre, pq)[0],
                             pre), start, (p_sub, q_sub))
        V, out = lax.scan(bwd_sub, V, (starts_sub, p_sub, q_sub, inv_sub), reverse=True)
        out = out.reshape((BLOCK,) + out.shape[2:])
        return V, out @ wc  # integrated over the chunk's nodes once per block

    V0 = jnp.broadcast_to(sp.terminal[:, :, None],
                          (len(sp.ks), sp.states, G)).astype(sp.dtype)
    V, outs = lax.scan(bwd_block, V0, (starts, Pb, Qb, e_inv), reverse=True)
    return V, outs.reshape((sp.n_pad,) + outs.shape[2:])[:sp.n]


def _full_chunk(sp: _Chunk, Pb, Qb, mu, wc, tie):
    # Nodes are sorted by μ (svtjax.exact._chunks.map_chunks), so a chunk is almost always in
    # one regime: the cheap Gauss–Laguerre rule runs whenever it is exact for every node.
    P_tie, Q_tie = tie if tie is not None else (None, None)
    with_ties = None if tie is None else (P_tie, Q_tie, sp.tie[1])
    e_inv = lax.cond(jnp.all(mu >= LAGUERRE_FROM),
                     lambda pb, qb: inverse_means(pb, qb, mu, sp.dtype, True, ties=with_ties,
                                                  native=sp.native),
                     lambda pb, qb: inverse_means(pb, qb, mu, sp.dtype, False,
                                                  ties=with_ties, native=sp.native), Pb, Qb)
    if tie is not None:
        e_inv, inv_tie = e_inv
        T_full, T_loo = _tie_laws(sp, P_tie, Q_tie)
    full, starts, before_ties = _count_law(sp, Pb, Qb, None if tie is None else T_full)
    V, outs = _backward(sp, starts, Pb, Qb, e_inv, wc, mu.shape[0])
    if tie is None:
        return outs, full @ wc

    def bwd_tie(V, x):  # the other m_u − 1 items of the group, then the item itself
        pre, b_loo, p, q, inv = x
        V = _correlate(V, b_loo)
        e_g = jnp.sum(pre[None] * V, axis=1) + sp.ks_arr[:, None] * inv[None]
        return _bernoulli_back(V, p, q), _outputs(sp, p, e_g) @ wc

    _, out_tie = lax.scan(bwd_tie, V, (before_ties, T_loo, P_tie, Q_tie, inv_tie),
                          reverse=True)
    return jnp.concatenate([outs, out_tie]), full @ wc


def _cheap_chunk(sp: _Chunk, Pb, Qb, mu, wc, tie):
    # Every node has P(M_{−i} ≤ max(ks) − 1) ≤ tail / c: E[g_k(M_{−i})] = k E[1/(M_{−i}+1)]
    # and the count law below ``states`` is 0, both within ``tail``. Here μ ≥ 40 (μ ≥ 139
    # when tail / (k − 1) ≤ 1e-30, as (μ − k)² ≥ 2 · 69 · (μ − 1) needs: then every factor
    # 1 − p_j s_t ≥ 1 − 51.7/139 and the grouped logarithms are safe).
    e_inv = inverse_means(Pb, Qb, mu, sp.dtype, True, grouped=sp.log_tail <= math.log(1e-30),
                          ties=None if tie is None else (*tie, sp.tie[1]), native=sp.native)

    def out_of(p, e_inv):
        evaluated = sp.ks_arr[0] * e_inv if sp.c_mech is not None else jnp.ones_like(p)
        return jnp.stack([p * evaluated, p * sp.ks_arr[-1] * e_inv, evaluated], axis=-2) @ wc

    count = jnp.zeros((sp.states, wc.shape[1]), sp.dtype)
    if tie is None:
        return out_of(Pb, e_inv).reshape((sp.n_pad, 3, -1))[:sp.n], count
    e_inv, inv_tie = e_inv
    out = out_of(Pb, e_inv).reshape((sp.n_pad, 3, -1))[:sp.n]
    return jnp.concatenate([out, out_of(tie[0], inv_tie)]), count


def _low_chunk(sp: _Chunk, Pb, Qb, mu, wc, tie):
    # Every node has P(M ≥ min(ks)) ≤ tail: every item is evaluated and in the answer set
    # when it passes (E[g_k] = 1 within tail); only the count law needs a recursion.
    full = _count_law(sp, Pb, Qb, None if tie is None else _tie_laws(sp, *tie)[0])[0]
    out = jnp.stack([Pb, Pb, jnp.ones_like(Pb)], axis=2) @ wc
    out = out.reshape((sp.n_pad,) + out.shape[2:])[:sp.n]
    if tie is not None:
        out = jnp.concatenate([out, jnp.stack([tie[0], tie[0], jnp.ones_like(tie[0])],
                                              axis=1) @ wc])
    return out, full @ wc


def random_chunk(zc, wc, qc, d, ties, *, states: int, c_mech: Optional[int], c_eff: int,
                 tail: float, native: bool = False):
    """:func:`svtjax.exact._laws.random_order` on one chunk of nodes ``zc`` [chunk] with weights
    ``wc`` [chunk, L] and query noise ``qc`` (per-node scales [chunk]): (out [n + U, 3, L],
    count [states, L]), the chunk's part of the integrals (rows: P(⊤), P(∈ S), P(evaluated)).

    ``native`` (static; float64, the CPU, concrete laws driven from the host): the forward and
    backward recursions over the single items run as svtjax's compiled kernels
    (:func:`svtjax._native.exact_target`; about a dozen small XLA kernels per item otherwise),
    and so do the inner integrals' products and sums (:func:`~svtjax.exact._inverse.
    inverse_means`): the same operations, to rounding."""
    sp = _chunk_spec(zc, d, ties, states, c_mech, c_eff, tail, native)
    dtype = sp.dtype
    P, Q = block_pass_fail(qc, zc, sp.d_pad, sp.valid)  # [n_pad, chunk]
    mu = jnp.sum(P, axis=0)
    tie = None
    if ties is not None:
        d_tie, m_tie = sp.tie[:2]
        tie = jax.vmap(lambda di: pass_fail(qc, zc, di))(d_tie)  # ([U, chunk],) * 2
        mu = mu + jnp.sum(m_tie.astype(dtype)[:, None] * tie[0], axis=0)
    Pb, Qb = P.reshape(sp.nb, BLOCK, -1), Q.reshape(sp.nb, BLOCK, -1)
    if tail <= 0:
        return _full_chunk(sp, Pb, Qb, mu, wc, tie)
    k_big, k_small = max(sp.ks), min(sp.ks)
    nu = jnp.maximum(mu - 1, 1e-30)
    high = ((mu - 1 > k_big - 1) & (-(mu - k_big) ** 2 / (2 * nu) <= sp.log_tail)
            & (mu >= LAGUERRE_FROM))  # implied at tail = 1e-30; kept for larger tails
    # Chernoff's upper tail: P(M ≥ k) ≤ e^{−μ} (e μ / k)^k for k > μ, and M_{−i} ≤ M.
    low = (mu < k_small) & (k_small * jnp.log(jnp.e * jnp.maximum(mu, 1e-300) / k_small)
                            - mu <= math.log(tail))
    branch = jnp.where(jnp.all(high), 0, jnp.where(jnp.all(low), 1, 2))
    branches = tuple(lambda *a, f=f: f(sp, *a) for f in (_cheap_chunk, _low_chunk, _full_chunk))
    return lax.switch(branch, branches, Pb, Qb, mu, wc, tie)


def _native_forward(pre0, Pb, Qb):
    """:func:`_count_law`'s forward scan over blocks (the law after every item, and before
    each block) as one call of the compiled kernel (:data:`svtjax._native.PB_FORWARD_TARGET`)."""
    from svtjax import _native

    nb, block, G = Pb.shape
    S = pre0.shape[0]
    return jax.ffi.ffi_call(
        _native.PB_FORWARD_TARGET,
        (jax.ShapeDtypeStruct((S, G), pre0.dtype), jax.ShapeDtypeStruct((nb, S, G), pre0.dtype)),
        vmap_method="sequential",
    )(pre0, Pb.reshape(nb * block, G), Qb.reshape(nb * block, G), block=np.int64(block))


def _native_backward(starts, Pb, Qb, e_inv, terminal, ks, evaluated_from_first: bool):
    """The backward pass of :func:`_backward` (per item and node, before the integral over the
    nodes: [n_pad, 3, G]; and V before the first single item [K, states, G]) as one call of
    the compiled kernel (:data:`svtjax._native.PB_BACKWARD_TARGET`)."""
    from svtjax import _native

    nb, block, G = Pb.shape
    S = starts.shape[1]
    flat = lambda x: x.reshape(nb * block, G)  # noqa: E731
    return jax.ffi.ffi_call(
        _native.PB_BACKWARD_TARGET,
        (jax.ShapeDtypeStruct((nb * block, 3, G), starts.dtype),
         jax.ShapeDtypeStruct((ks.shape[0], S, G), starts.dtype)),
        vmap_method="sequential",
    )(starts, flat(Pb), flat(Qb), flat(e_inv), terminal, ks.astype(starts.dtype),
      block=np.int64(block), evaluated_from_first=np.bool_(evaluated_from_first))


def random_chunk_nodes(G: int, n: int, states: int, ties, dtype,
                       max_chunk: Optional[int]) -> int:
    """Nodes per chunk of the random-order law (:func:`~svtjax.exact._chunks.node_chunks`)."""
    nb = -(-n // BLOCK)
    # Per node: the pass/fail probabilities, the checkpoints and one block's laws, the inner
    # integral's factors; with tie groups also their pmfs and laws before each group [U,
    # states] x 3 and one [states, states] Toeplitz / Hankel matrix.
    n_tie = 0 if ties is None else ties[0].shape[0]
    per_node = jnp.dtype(dtype).itemsize * (
        3 * nb * BLOCK + (nb + BLOCK + 2) * states + 4 * BLOCK * SUM_EDGES.size * SUM_ORDER
        + (3 * n_tie * states + 2 * states ** 2 if n_tie else 0))
    return node_chunks(G, per_node, max_chunk)


def random_law(out, count, W, squeeze: bool) -> ItemLaw:
    xp = np if isinstance(out, np.ndarray) else jnp
    count = xp.concatenate([count, (xp.sum(W, axis=0) - xp.sum(count, axis=0))[None]])
    return item_law(out[:, 0], out[:, 1], out[:, 2], count, None, squeeze)
