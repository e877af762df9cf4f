"""Exact selection laws of single-threshold SVT runs, given the threshold noise ρ = z.

Every kernel here takes the quadrature nodes ``z`` and density-weighted weights ``wz`` of
:mod:`svtjax.exact._quadrature`, the item offsets d_i = q_i − T_i − shift in stream order, and
the query noise ν; item i passes with probability p_i(z) = sf_ν(z − d_i) (fails with
cdf_ν(z − d_i), computed directly so that 1 − p keeps its accuracy). Each law is one function
of those arrays, run either as a traced JAX program (jit-able, differentiable in ``wz``, ``d``
and ν's scale) or, for concrete nodes and weights, with its chunks of nodes driven from the
host (the ``*_host`` entry points: one compiled program per stream length and count states,
whatever the node count); the same sums in the same order.

The pieces: :mod:`svtjax.exact._items` (pass/fail probabilities, :class:`ItemLaw`),
:mod:`svtjax.exact._chunks` (chunks of nodes), :mod:`svtjax.exact._inverse` (the random
order's inner integral) and :mod:`svtjax.exact._random` (the random-order recursions).

References: Lyu, Su, Li 2017, Figure 1 lines 1-10 (the
loop: ρ once, ν_i per query, halt after c ⊤) and Algorithm 2 line 5 (ρ redrawn after a ⊤).
"""

from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax.exact._chunks import MAX_CHUNK, map_chunks, node_chunks, node_means, platform_max_chunk
from svtjax.exact._inverse import inverse_mean_nodes, inverse_means
from svtjax.exact._items import (
    BLOCK,
    TAIL,
    ItemLaw,
    block_pass_fail,
    blocked,
    item_law,
    pass_fail,
    shift_up,
    weights,
)
from svtjax.exact._random import (
    log_binomial,
    random_chunk,
    random_chunk_nodes,
    random_law,
    tie_groups,
)

__all__ = ["ItemLaw", "TAIL", "MAX_CHUNK", "fixed_order", "fixed_order_host", "random_order",
           "random_order_host", "resample_fixed_order", "answer_probabilities", "tie_groups"]

# The building blocks under the names this module gave them before it was split (the tests
# read them here).
_BLOCK = BLOCK
_inverse_means = inverse_means
_inverse_mean_nodes = inverse_mean_nodes
_node_means = node_means
_log_binomial = log_binomial


# -- fixed order ----------------------------------------------------------------------------


def _fixed_chunk(zc, wc, qc, d, *, states: int, c_mech: Optional[int], c_eff: int,
                 tail: float):
    """:func:`fixed_order` on one chunk of nodes ``zc`` [chunk] with weights ``wc`` [chunk, L]
    and query noise ``qc``: (out [n, rows, L], count [states, L]), the chunk's part of the
    integrals (rows: P(⊤), P(∈ S), and P(evaluated) with a cut-off)."""
    n = d.shape[0]
    dtype = zc.dtype
    nb = -(-n // BLOCK)
    d_blocks, valid = blocked(d, nb)
    rows = 3 if c_mech is not None else 2
    # The carry is the distribution function F[k] = P(count ≤ k, not halted): the same
    # update as the probabilities (a ⊤ moves mass up one count), and P(not halted) is its
    # last entry, so no sum per step.
    F0 = jnp.ones((states, zc.shape[0]), dtype)

    def step(F, pq):
        p, q = pq
        alive = F[-1]  # not halted (c_mech) / fewer than c_eff ⊤ (no cut-off)
        alive_eff = F[c_eff - 1]
        out = [p * alive, p * alive_eff, alive] if c_mech is not None else [p, p * alive_eff]
        return F * q + shift_up(F) * p, jnp.stack(out)

    def read(F, blk):
        d_blk, ok = blk
        P, Q = block_pass_fail(qc, zc, d_blk, ok)
        F, out = lax.scan(step, F, (P, Q))  # out: [BLOCK, rows, chunk]
        return F, out @ wc  # integrated over the chunk's nodes once per block

    def skip(F, blk):
        return F, jnp.zeros((BLOCK, rows, wc.shape[1]), dtype)

    def block(F, blk):
        if c_mech is None or tail <= 0:
            return read(F, blk)
        return lax.cond(jnp.max(F[-1]) > tail, read, skip, F, blk)

    F, out = lax.scan(block, F0, (d_blocks, valid))
    return out.reshape((nb * BLOCK,) + out.shape[2:])[:n], (F - shift_up(F)) @ wc


def _fixed_chunk_nodes(G: int, states: int, dtype, max_chunk: Optional[int]) -> int:
    """Nodes per chunk of :func:`fixed_order` (:func:`~svtjax.exact._chunks.node_chunks`)."""
    return node_chunks(G, (4 * BLOCK + 2 * states) * jnp.dtype(dtype).itemsize, max_chunk)


def _fixed_law(out, count, W, squeeze: bool, c_mech: Optional[int]) -> ItemLaw:
    xp = np if isinstance(out, np.ndarray) else jnp
    n = out.shape[0]
    total = xp.sum(W, axis=0)
    count = xp.concatenate([count, (total - xp.sum(count, axis=0))[None]])
    if c_mech is None:
        ones = xp.broadcast_to(total, (n,) + total.shape)
        return item_law(out[:, 0], out[:, 1], ones, count, xp.zeros_like(ones), squeeze)
    alive_next = xp.concatenate([out[1:, 2], (total - count[-1])[None]])
    return item_law(out[:, 0], out[:, 1], out[:, 2], count, total - alive_next, squeeze)


@functools.partial(jax.jit, static_argnames=("states", "c_mech", "c_eff", "tail", "max_chunk",
                                             "group"))
def fixed_order(z, wz, d, query, *, states: int, c_mech: Optional[int], c_eff: int,
                tail: float = TAIL, max_chunk: Optional[int] = None, group: int = 0) -> ItemLaw:
    """Forward recursion over positions carrying the distribution of the ⊤ count.

    For each node z the carry is the law of the ⊤ count so far, k < ``states`` (mass reaching c
    has halted: absorbing); position i is evaluated with probability P(count < c) and answers ⊤
    with p_i(z) times that; a ⊤ moves mass from k to k + 1. Cost O(G · n · c) at most.

    The positions are read in blocks of :data:`BLOCK`; a block is skipped once every node of
    the chunk has P(not halted) ≤ ``tail`` (with a cut-off): every probability the skipped
    positions would add is below that, and the count law moves by at most that much. Runs at
    nodes where most items pass halt after a few hundred positions, so a long stream is mostly
    skipped (``tail = 0`` reads every position). The skip is a ``lax.cond`` inside a scan with a
    fixed trip count, so the law stays differentiable in reverse mode.

    Args:
      z: float[G] quadrature nodes.
      wz: float[G] density-weighted weights, or float[G, L] for L laws whose nodes are
        concatenated (each column zero outside its law's nodes; outputs get a trailing L axis).
      d: float[n] offsets in stream order.
      query: ν with a scalar or a per-node float[G] scale (None: noiseless).
      states: count states carried (c_mech, or c_eff without a cut-off).
      c_mech: the mechanism's cut-off (= ``states``), None for none.
      c_eff: the cut-off of the answer set a metric scores (≤ states).
      tail: the not-halted probability below which positions are skipped (static).
      max_chunk: nodes per chunk at most (static; default: :data:`MAX_CHUNK`).
      group: the nodes come in aligned groups of this many, each of one law (static; see
        :func:`~svtjax.exact._chunks.map_chunks`; 0: no such layout).
    """
    return _fixed(z, wz, d, query, states, c_mech, c_eff, tail, max_chunk, group, host=False)


_fixed_chunk_jit = jax.jit(_fixed_chunk, static_argnames=("states", "c_mech", "c_eff", "tail"))


def fixed_order_host(z, wz, d, query, *, states: int, c_mech: Optional[int], c_eff: int,
                     tail: float = TAIL, max_chunk: Optional[int] = None,
                     group: int = 0) -> ItemLaw:
    """:func:`fixed_order` for concrete nodes and weights (host arrays, as
    :func:`random_order_host`): one compiled program per (stream length, states) whatever the
    node count (and, on a CPU, the number of laws). Returns host arrays."""
    return _fixed(z, wz, d, query, states, c_mech, c_eff, tail, max_chunk, group, host=True)


def _fixed(z, wz, d, query, states: int, c_mech: Optional[int], c_eff: int, tail: float,
           max_chunk: Optional[int], group: int, host: bool) -> ItemLaw:
    """:func:`fixed_order` traced (``host`` False) or with its chunks driven from the host."""
    W, squeeze = weights(np.asarray(wz) if host else wz)
    G = max(z.shape[0], platform_max_chunk()) if host else z.shape[0]
    chunk = _fixed_chunk_nodes(G, states, z.dtype, max_chunk)
    one_chunk = functools.partial(_fixed_chunk_jit if host else _fixed_chunk, d=d, states=states,
                                  c_mech=c_mech, c_eff=c_eff, tail=tail)
    if host:
        z, d = np.asarray(z), np.asarray(d)
    out, count = map_chunks(one_chunk, z, W, query, chunk, d, group, host)  # [n, rows, L]
    return _fixed_law(out, count, W, squeeze, c_mech)


# -- fixed order with the threshold redrawn after every ⊤ ------------------------------------


@functools.partial(jax.jit, static_argnames=("c", "c_eff"))
def resample_fixed_order(z, wz, d, query, *, c: int, c_eff: int) -> ItemLaw:
    """Dwork & Roth's SVT (Lyu'17 Algorithm 2) in fixed order: a Markov chain over
    (position, count) whose segments between ⊤ answers each have a fresh ρ.

    H_k(e, z) = P(count = k and every position of the current segment before e answered ⊥ |
    the segment's ρ = z) · (1 / f_ρ(z)), carried for k < c and all nodes; then
    A_{k+1}(e) = P(the (k+1)-th ⊤ is at e) = ∫ f_ρ(z) H_k(e, z) p_e(z) dz, and
    H_k(e + 1, z) = H_k(e, z) (1 − p_e(z)) + A_k(e) (a ⊤ at e starts a fresh segment with
    nothing seen). Cost O(G · n · c), as the single-threshold recursion.
    """
    G = z.shape[0]
    H0 = jnp.zeros((c, G), z.dtype).at[0].set(1.0)

    def step(H, d_i):
        p, q = pass_fail(query, z, d_i)
        alive_k = H @ wz  # P(count = k, alive at this position)
        new = (H * p) @ wz  # A_{k+1}(e): the (k+1)-th ⊤ is here
        H = H * q + jnp.concatenate([jnp.zeros((1,), z.dtype), new[:-1]])[:, None]
        out = jnp.stack([jnp.sum(new), jnp.sum(new[:c_eff]), jnp.sum(alive_k),
                         1 - jnp.sum(H @ wz)])
        return H, (out, new[-1])

    H, (out, last) = lax.scan(step, H0, d)
    count = H @ wz
    count = jnp.concatenate([count, jnp.sum(last)[None]])
    return ItemLaw(out[:, 0], out[:, 1], out[:, 2], count, out[:, 3])


# -- random order -----------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("states", "c_mech", "c_eff", "tail", "max_chunk",
                                             "group"))
def random_order(z, wz, d, query, *, states: int, c_mech: Optional[int], c_eff: int,
                 tail: float = TAIL, max_chunk: Optional[int] = None, group: int = 0,
                 ties=None) -> ItemLaw:
    """Each trial visits the items in a fresh uniform order (``shuffle=True``).

    Given ρ = z let M_{−i} be the number of items other than i that pass, a Poisson-binomial
    count. Item i's position among itself and those M_{−i} passing items is uniform, so it is
    evaluated with probability E[g_c(M_{−i})], g_c(m) = min(1, c/(m+1)) (fewer than c of them
    precede it), and answered ⊤ with p_i(z) times that — the issue's ∫∫ p_i P(PB({p_j u}) < c)
    du dz with the arrival time u integrated out exactly. Split

        E[g_c(M)] = Σ_{m<c} (1 − c/(m+1)) P(M = m) + c · E[1/(M+1)]:

    * the first sum needs only the law of M_{−i} below c. It is Σ_a pre_i[a] V_{i+1}[a] with
      pre_i the count law of the items before i (a forward recursion) and V_{i+1}[a] the
      expected weight of a + (passes after i) (a backward value recursion,
      V_i[a] = (1 − p_i) V_{i+1}[a] + p_i V_{i+1}[a+1]). Both recursions only form convex
      combinations of non-negative numbers, so leaving item i out costs no cancellation — unlike
      deconvolving item i from the full law, which divides by 1 − p_i and amplifies rounding by
      (p_i/(1 − p_i))^k once p_i > 1/2. The forward law is checkpointed every 128 positions
      and recomputed block by block during the backward pass (memory O(n/128 + 128) per node);
    * E[1/(M_{−i}+1)] = ∫_0^1 Π_{j≠i} (1 − p_j s) ds, with Π_{j≠i} = Π_j / (1 − p_i s) — a
      division by 1 − p_i s = (1 − p_i) + p_i (1 − s) > 0, exact in relative terms — and the
      outer integral by 16 Gauss–Laguerre or 72 Gauss–Legendre nodes
      (:func:`~svtjax.exact._inverse.inverse_mean_nodes`).

    The terms of the split are at most c in size and the result is in [0, 1], so rounding
    costs at most ~c · 1e-16. Cost O(G · n · (c + 16)) (O(G · n · (c + 72)) where μ < 40).

    Where the count rarely stays below c the first sum is negligible and is skipped: it is at
    most (c − 1) · P(M_{−i} ≤ c − 1), and the Chernoff bound for a sum of independent Bernoulli
    variables, P(M ≤ ν − t) ≤ exp(−t² / (2ν)) with ν = E[M_{−i}] ≥ μ − 1, bounds that by
    ``tail`` (the count law below c is then below ``tail`` too, and is reported as 0). A chunk
    of nodes (sorted by μ, :func:`~svtjax.exact._chunks.map_chunks`) takes the cheap path only
    when the bound holds at every node of it; with small ε most nodes have μ in the thousands
    (every item near the threshold passes half the time), so most of the work is skipped. At the
    other end, where P(M ≥ min k) ≤ e^{−μ} (e μ / k)^k ≤ ``tail`` (Chernoff's upper tail; M_{−i}
    ≤ M), every item is evaluated and E[g_k] = 1 within ``tail``: only the forward recursion
    (for the count law) runs. ``tail = 0`` never skips; ``max_chunk`` (static) caps the nodes
    per chunk.

    Tied scores. The law does not depend on the items' order, so items with equal offsets can be
    taken together: ``ties`` = (d_u [U], m_u [U] int, log C(m_u, k) and log C(m_u − 1, k) [U,
    states] (:func:`~svtjax.exact._random.log_binomial`), every item's offset (to order the
    nodes); :func:`tie_groups` splits the items) adds U groups of m_u items each, placed before
    the ``d`` items in the recursions' (immaterial) order. A group enters the forward recursion
    as one binomial step (pre ⊛ Bin(m_u, p_u), a [states × states] product per node) and the
    backward one as Bin(m_u − 1, p_u) for the group's other items and a Bernoulli step for the
    item itself, instead of m_u steps of each; E[1/(M+1)]'s log F gains m_u log(1 − p_u s). The
    outputs are then [n + U] rows, one per single item, then one per group (every item of a
    group has the same law). On retail (16,470 items, 583 distinct scores) the groups of at
    least c items hold 80% of the items at c = 50.
    """
    return _random(z, wz, d, query, states, c_mech, c_eff, tail, max_chunk, group, ties,
                   host=False)


_random_chunk_jit = jax.jit(random_chunk, static_argnames=("states", "c_mech", "c_eff", "tail",
                                                          "native"))


def random_order_host(z, wz, d, query, *, states: int, c_mech: Optional[int], c_eff: int,
                      tail: float = TAIL, max_chunk: Optional[int] = None, group: int = 0,
                      ties=None) -> ItemLaw:
    """:func:`random_order` for concrete nodes ``z`` and weights ``wz`` (host arrays, in the
    dtype to compute in; ``query``'s scale a host scalar or float[G]), the chunks driven from
    the host (:func:`~svtjax.exact._chunks.map_chunks`): one compiled program per (stream
    length, tie groups, states), whatever the node count (and, on a CPU, the number of laws),
    so that the searches and curves of :func:`svtjax.exact.optimal_allocation` and the sweeps
    reuse it. Float64 on the CPU runs the recursions as svtjax's compiled kernels where they
    are built (:func:`svtjax._native.exact_target`). Returns host arrays."""
    return _random(z, wz, d, query, states, c_mech, c_eff, tail, max_chunk, group, ties,
                   host=True)


def _random(z, wz, d, query, states: int, c_mech: Optional[int], c_eff: int, tail: float,
            max_chunk: Optional[int], group: int, ties, host: bool) -> ItemLaw:
    """:func:`random_order` traced (``host`` False) or with its chunks driven from the host."""
    W, squeeze = weights(np.asarray(wz) if host else wz)
    G = max(z.shape[0], platform_max_chunk()) if host else z.shape[0]
    chunk = random_chunk_nodes(G, d.shape[0], states, ties, z.dtype, max_chunk)
    kernel, extra = random_chunk, {}
    if host:
        from svtjax import _native

        kernel = _random_chunk_jit
        extra = {"native": np.dtype(z.dtype) == np.float64 and _native.exact_target()}
    one_chunk = functools.partial(kernel, d=d, ties=ties, states=states, c_mech=c_mech,
                                  c_eff=c_eff, tail=tail, **extra)
    d_sort = d if ties is None else ties[4]
    if host:
        z, d_sort = np.asarray(z), np.asarray(d_sort)
    out, count = map_chunks(one_chunk, z, W, query, chunk, d_sort, group, host)
    return random_law(out, count, W, squeeze)


# -- whole answer vectors (short streams) ------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("resample",))
def answer_probabilities(z, wz, d, query, vectors, *, resample: bool = False):
    """P(answer vector) for every row of ``vectors`` (int[V, n]: 1 ⊤, 0 ⊥, −1 not evaluated).

    ``query`` has a scalar scale here (one law at a time). Without resampling
    P(a) = ∫ f_ρ(z) Π_{a_i=⊤} p_i(z) Π_{a_i=⊥} (1 − p_i(z)) dz (the oracle of
    ``tests/test_distribution.py``, ``docs/guides/correctness.md``). With resampling (Lyu'17
    Algorithm 2) every ⊤ closes a segment whose ρ is independent of the others, so P(a) is the
    product over segments of such integrals, each over its own positions.
    """
    P, Q = jax.vmap(lambda di: pass_fail(query, z, di))(d)  # [n, G]
    a = vectors[:, :, None]
    factor = jnp.where(a == 1, P[None], jnp.where(a == 0, Q[None], 1))  # [V, n, G]
    if not resample:
        return jnp.prod(factor, axis=1) @ wz
    # Segment s of a vector: the evaluated positions after its s-th ⊤ up to the next ⊤.
    n = d.shape[0]
    tops_before = jnp.cumsum(vectors == 1, axis=1) - (vectors == 1)
    prob = jnp.ones(vectors.shape[0], z.dtype)
    for seg in range(n):
        mask = (tops_before == seg) & (vectors >= 0)  # [V, n]
        seg_prob = jnp.prod(jnp.where(mask[:, :, None], factor, 1), axis=1) @ wz
        prob = prob * jnp.where(jnp.any(mask, axis=1), seg_prob, 1)
    return prob
