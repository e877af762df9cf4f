"""Exact selection laws of single-threshold SVT runs, given the threshold noise ρ = z.

Every function here takes the quadrature nodes ``z`` and density-weighted weights ``wz`` of
:mod:`svtjax.exact._quadrature`, the item offsets d_i = q_i − T_i − shift in stream order, and
the query noise ν; item i passes with probability p_i(z) = sf_ν(z − d_i) (fails with
cdf_ν(z − d_i), computed directly so that 1 − p keeps its accuracy). All are pure JAX functions
of those arrays (jit-able, differentiable in ``wz``, ``d`` and ν's scale).

References: Lyu, Su, Li 2017, Figure 1 lines 1-10 (the
loop: ρ once, ν_i per query, halt after c ⊤) and Algorithm 2 line 5 (ρ redrawn after a ⊤).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax.noise import Noise

__all__ = ["ItemLaw", "fixed_order", "fixed_order_host", "random_order", "random_order_host",
           "resample_fixed_order", "answer_probabilities"]

_BLOCK = 128  # positions per block of the recursions (checkpoints, skips, output integrals)
_SUB = 16
"""Positions per sub-block of the random-order backward pass: the laws it reads back,
[_SUB, states, nodes], then stay in a core's cache (410 KB at 100 states and 32 nodes, against
a block's 3.3 MB). The backward pass of one chunk (4,992 positions, 100 states, 32 nodes) took
44 ms in one pass per block and 36 ms in sub-blocks of 16, the same numbers."""
_CHUNK_BYTES = 48 * 2**20  # working memory per chunk of quadrature nodes
_SORT_SAMPLE = 16  # every 16th offset estimates μ(z) for sorting the nodes
MAX_CHUNK = {"cpu": 32}
"""Nodes per chunk at most, per platform (256 where none is given). A fixed-order chunk reads
a block of positions until every node of it has halted, and a random-order chunk takes a cheap
path only when all its nodes allow it, so smaller chunks skip more; on a CPU, below 32 the
per-step work is too small to vectorise. Measured on ten svt-s laws (Zipf n = 10^4, c = 50,
2-core Intel Xeon): the fixed-order kernel alone, one weight column, took about 0.53 s with
16 nodes per chunk, 0.28 s with 32, 0.34 s with 64 and 0.55 s with 256; the random-order
curve 6.9-7.7 s with 32, 7.3-8.3 s with 64 and 8.3 s with 128 (retail: 15.0-15.6 s,
15.5-16.7 s and 16.7 s). Not measured on an accelerator, where wide chunks fill the device:
it keeps the earlier 256."""
TAIL = 1e-30
"""Probability below which work is skipped: the fixed-order recursion stops reading once every
node's P(not halted) is below it; the random-order recursion drops the part of E[min(1,
c/(M+1))] that lives on {M < c} once a Chernoff bound puts it below it, and sets E[min(1,
c/(M+1))] = 1 where P(M ≥ c) is below it. No reported probability moves by more than ``TAIL``
(sums over items by more than ``TAIL`` times the stream length)."""


class ItemLaw(NamedTuple):
    """Per-item probabilities of one run (caller's item order) and the law of the ⊤ count.

    Attributes:
      top: float[n], P(item answered ⊤).
      member: float[n], P(item among the first c_eff ⊤ — the answer set S a metric with
        cut-off c_eff scores; equals ``top`` when c_eff is the mechanism's cut-off).
      evaluated: float[n], P(item evaluated, i.e. the run has not halted before it).
      count: float[states + 1], P(number of ⊤ = k) for k < states, and P(≥ states) last.
      halted: float[n] or None, P(halted after the item's position) (fixed order only).
    """

    top: jax.Array
    member: jax.Array
    evaluated: jax.Array
    count: jax.Array
    halted: Optional[jax.Array] = None


def _pass_fail(query: Optional[Noise], z, d_i):
    """(p, 1 − p) of the comparison q_i + ν_i ≥ T_i + shift + z (Lyu'17 Figure 1 line 4)."""
    x = z - d_i
    if query is None:  # ν = 0 (Lyu'17 Algorithm 5): ⊤ iff d_i ≥ z
        top = (x <= 0).astype(z.dtype)
        return top, 1 - top
    return query.sf_cdf(x)


def _shift_up(D):
    """D[k − 1] at k (0 at k = 0): after a sure ⊤ the mass at k moves to k + 1 and the top state
    leaves; on a distribution function it is F[k − 1]."""
    return jnp.concatenate([jnp.zeros_like(D[:1]), D[:-1]], axis=0)


# -- fixed order ----------------------------------------------------------------------------


def _node_chunks(G: int, per_node_bytes: int, max_chunk: Optional[int] = None) -> int:
    """Nodes per chunk so that a chunk's working memory stays near :data:`_CHUNK_BYTES`, at
    most ``max_chunk`` (default: :data:`MAX_CHUNK` for the platform)."""
    size = max(1, _CHUNK_BYTES // max(per_node_bytes, 1))
    size = 1 << (size.bit_length() - 1)
    default = MAX_CHUNK.get(jax.default_backend(), 256)
    return int(min(size, max_chunk or default, max(G, 1)))


def _per_node(query: Optional[Noise], G: int):
    """The query noise's scale as float[G] (one scale per node: laws batched along the nodes may
    differ in it), or None for noiseless comparisons."""
    if query is None or not jax.tree_util.tree_leaves(query):
        return None
    (scale,) = jax.tree_util.tree_leaves(query)
    return jnp.broadcast_to(jnp.asarray(scale), (G,))


def _node_means(z, d, query, chunk: int):
    """μ(z) = Σ_i p_i(z), the expected number of passing items at every node (float[G]),
    computed ``chunk`` nodes at a time."""
    G = z.shape[0]
    num = -(-G // chunk)
    pad = num * chunk - G
    scale = _per_node(query, G)

    def one(args):
        zc, sc = args
        qc = query if sc is None else jax.tree_util.tree_map(lambda _: sc, query)
        return jnp.sum(jax.vmap(lambda di: _pass_fail(qc, zc, di)[0])(d), axis=0)

    zs = jnp.concatenate([z, jnp.full((pad,), z[-1], z.dtype)]).reshape(num, chunk)
    ss = None if scale is None else \
        jnp.concatenate([scale, jnp.ones((pad,), scale.dtype)]).reshape(num, chunk)
    return lax.map(one, (zs, ss)).reshape(-1)[:G]


def _map_chunks(fn, z, W, query, chunk: int, d=None, group: int = 0):
    """Σ over chunks of nodes of ``fn(z_chunk, W_chunk, query_chunk)``; padding nodes have
    weight 0. ``query_chunk`` carries the chunk's per-node scales.

    With the offsets ``d``, the nodes are first sorted by μ(z) = Σ_i p_i(z), largest first, so
    that a chunk holds nodes of one regime (runs that halt early, or where the count rarely
    stays below c) and the kernels' skips apply to whole chunks. The sums do not depend on the
    order of the nodes (up to rounding); the order is a constant under differentiation.

    With ``group`` (a multiple of ``chunk``), the nodes come in aligned groups of ``group``,
    each group's weights in one column of ``W`` (as :func:`svtjax.exact.selection_laws` lays
    out several laws, each padded to a multiple of 128 nodes, in ascending z, so also in
    descending μ): they keep their order, and each chunk is integrated against its own column
    alone (``fn`` gets ``W_chunk`` as [chunk, 1]) and added into that column. Integrating
    against all L columns instead costs L times the per-block products, most of them with
    zero weights.
    """
    G = z.shape[0]
    num = -(-G // chunk)
    pad = num * chunk - G
    scale = _per_node(query, G)
    grouped = bool(group) and W.shape[1] > 1 and group % chunk == 0 and G % group == 0
    if d is not None and G > chunk and not grouped:
        # Only the order matters (each chunk tests its own nodes exactly), so μ is estimated
        # from every 16th offset: 1/16 of the work of the exact sums. (Not of the sorted
        # offsets: under an outer jit that closes over them XLA constant-folds the sort, 3 s
        # for retail's 16,470 items.)
        sample = d[::_SORT_SAMPLE] if d.shape[0] > 8 * _SORT_SAMPLE else d
        order = jnp.argsort(-lax.stop_gradient(_node_means(z, sample, query, chunk)))
        z, W = z[order], W[order]
        scale = None if scale is None else scale[order]

    def split(x, fill):
        x = jnp.concatenate([x, jnp.full((pad,) + x.shape[1:], fill, x.dtype)])
        return x.reshape((num, chunk) + x.shape[1:])

    def one(args):
        zc, wc, sc = args
        qc = query if sc is None else jax.tree_util.tree_map(lambda _: sc, query)
        if not grouped:
            return fn(zc, wc, qc), 0
        col = jnp.argmax(jnp.any(wc != 0, axis=0))  # an all-zero chunk adds 0 to column 0
        return fn(zc, lax.dynamic_slice_in_dim(wc, col, 1, axis=1), qc), col

    def accumulate(acc, args):
        out, col = one(args)
        if not grouped:
            return jax.tree_util.tree_map(jnp.add, acc, out)
        return jax.tree_util.tree_map(lambda a, x: a.at[..., col].add(x[..., 0]), acc, out)

    def add(acc, args):
        # A chunk of zero-weight nodes (the padding that rounds a rule up to a multiple of 128
        # nodes, or a shared bucket size) adds nothing: it is not computed.
        nonzero = jnp.any(args[1] != 0)
        return lax.cond(nonzero, accumulate, lambda a, _: a, acc, args), None

    xs = (split(z, 0), split(W, 0), None if scale is None else split(scale, 1))
    # Summed in the carry: stacking the chunks' outputs first would write and read
    # [chunks, n, rows, L], hundreds of MB for small chunks.
    shapes = jax.eval_shape(lambda a: one(a)[0], jax.tree_util.tree_map(lambda x: x[0], xs))
    zeros = jax.tree_util.tree_map(
        lambda s: jnp.zeros(s.shape[:-1] + (W.shape[1],), s.dtype), shapes)
    return lax.scan(add, zeros, xs)[0]


@jax.jit
def _chunk_means(zc, qc, d):
    """μ(z) = Σ_i p_i(z) at one chunk of nodes (float[chunk]; compiled per chunk size and
    stream length, not per node count)."""
    return jnp.sum(jax.vmap(lambda di: _pass_fail(qc, zc, di)[0])(d), axis=0)


def _map_chunks_host(fn, z, W, query, chunk: int, d=None, group: int = 0):
    """:func:`_map_chunks` for concrete nodes and weights (host arrays), the loop over chunks
    on the host: ``fn`` (jitted) is compiled per chunk shape only, so the node count compiles
    no new program, nor does the number of laws in the grouped layout (where each chunk is
    integrated against its own law's column; chunks wider than ``group``, as the accelerators'
    256 nodes, integrate against all L columns, so L is in their shape). A jitted
    :func:`_map_chunks` compiles one per (G, L). Chunks that carry no weight are never sent.
    The same sums, in the same order, as :func:`_map_chunks`; returns host arrays."""
    G = z.shape[0]
    num = -(-G // chunk)
    pad = num * chunk - G
    leaves = [] if query is None else jax.tree_util.tree_leaves(query)
    scale = np.broadcast_to(np.asarray(leaves[0]), (G,)) if leaves else None
    grouped = bool(group) and W.shape[1] > 1 and group % chunk == 0 and G % group == 0

    def split(x, fill):
        x = np.concatenate([x, np.full((pad,) + x.shape[1:], fill, x.dtype)])
        return x.reshape((num, chunk) + x.shape[1:])

    def noise(k, ss):
        return query if ss is None else jax.tree_util.tree_map(lambda _: ss[k], query)

    if d is not None and G > chunk and not grouped:  # largest μ first, as _map_chunks
        sample = d[::_SORT_SAMPLE] if d.shape[0] > 8 * _SORT_SAMPLE else d
        zs, ss = split(z, z[-1]), None if scale is None else split(scale, 1)
        mu = np.concatenate([np.asarray(_chunk_means(zs[k], noise(k, ss), sample))
                             for k in range(num)])[:G]
        order = np.argsort(-mu, kind="stable")
        z, W = z[order], W[order]
        scale = None if scale is None else scale[order]
    zs, Ws = split(z, 0), split(W, 0)
    ss = None if scale is None else split(scale, 1)
    # Sums per column (grouped: each chunk adds into its law's column; else one "column" of
    # all L), each a contiguous array, stacked at the end.
    # A chunk is dispatched before the previous one's output is read back, so the device
    # computes while the host adds.
    sums: dict = {}
    treedef = None

    def add(col, out):
        nonlocal treedef
        out, treedef = jax.tree_util.tree_flatten(out)
        out = [np.asarray(x) for x in out]
        if col in sums:
            for a, x in zip(sums[col], out):
                a += x
        else:
            sums[col] = [x.copy() for x in out]

    pending = None
    for k in range(num):
        wc = Ws[k]
        if not wc.any():  # padding, or a law's zero-weight nodes: adds nothing
            continue
        col = int(np.argmax(wc.any(axis=0))) if grouped else 0
        out = fn(zs[k], wc[:, col:col + 1] if grouped else wc, noise(k, ss))
        if pending is not None:
            add(*pending)
        pending = (col, out)
    if pending is not None:
        add(*pending)
    if not sums:  # no weight at all
        shapes = jax.eval_shape(fn, zs[0], Ws[0][:, :1] if grouped else Ws[0], noise(0, ss))
        return jax.tree_util.tree_map(
            lambda x: np.zeros(x.shape[:-1] + (W.shape[1],), x.dtype), shapes)
    if not grouped:
        return jax.tree_util.tree_unflatten(treedef, sums[0])
    first = next(iter(sums.values()))
    leaves = [np.concatenate([sums[c][i] if c in sums else np.zeros_like(x)
                              for c in range(W.shape[1])], axis=-1)
              for i, x in enumerate(first)]
    return jax.tree_util.tree_unflatten(treedef, leaves)


def _weights(wz):
    """(W [G, L], squeeze): one column of node weights per law."""
    return (wz[:, None], True) if wz.ndim == 1 else (wz, False)


def _law(top, member, evaluated, count, halted, squeeze: bool) -> "ItemLaw":
    if squeeze:
        top, member, evaluated, count = (x[..., 0] for x in (top, member, evaluated, count))
        halted = None if halted is None else halted[..., 0]
    return ItemLaw(top, member, evaluated, count, halted)


def _blocked(d, nb: int):
    """``d`` padded to ``nb`` blocks of :data:`_BLOCK` positions, and which entries are items
    (padding items never pass: p = 0, 1 − p = 1, so they change no count)."""
    n = d.shape[0]
    pad = nb * _BLOCK - n
    d_pad = jnp.concatenate([d, jnp.zeros((pad,), d.dtype)]).reshape(nb, _BLOCK)
    valid = (jnp.arange(nb * _BLOCK) < n).reshape(nb, _BLOCK)
    return d_pad, valid


def _block_pass_fail(query, z, d_blk, ok):
    """(p, 1 − p) of a block of positions at every node: [B, G] each, padding never passing."""
    P, Q = jax.vmap(lambda di: _pass_fail(query, z, di))(d_blk)
    return jnp.where(ok[:, None], P, 0), jnp.where(ok[:, None], Q, 1)


def _fixed_chunk(zc, wc, qc, d, *, states: int, c_mech: Optional[int], c_eff: int,
                 tail: float):
    """:func:`fixed_order` on one chunk of nodes ``zc`` [chunk] with weights ``wc`` [chunk, L]
    and query noise ``qc``: (out [n, rows, L], count [states, L]), the chunk's part of the
    integrals (rows: P(⊤), P(∈ S), and P(evaluated) with a cut-off)."""
    n = d.shape[0]
    dtype = zc.dtype
    nb = -(-n // _BLOCK)
    d_blocks, valid = _blocked(d, nb)
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
        return F * q + _shift_up(F) * p, jnp.stack(out)

    def read(F, blk):
        d_blk, ok = blk
        P, Q = _block_pass_fail(qc, zc, d_blk, ok)
        F, out = lax.scan(step, F, (P, Q))  # out: [BLOCK, rows, chunk]
        return F, out @ wc  # integrated over the chunk's nodes once per block

    def skip(F, blk):
        return F, jnp.zeros((_BLOCK, rows, wc.shape[1]), dtype)

    def block(F, blk):
        if c_mech is None or tail <= 0:
            return read(F, blk)
        return lax.cond(jnp.max(F[-1]) > tail, read, skip, F, blk)

    F, out = lax.scan(block, F0, (d_blocks, valid))
    return out.reshape((nb * _BLOCK,) + out.shape[2:])[:n], (F - _shift_up(F)) @ wc


def _fixed_chunk_nodes(G: int, states: int, dtype, max_chunk: Optional[int]) -> int:
    """Nodes per chunk of :func:`fixed_order` (:func:`_node_chunks`)."""
    return _node_chunks(G, (4 * _BLOCK + 2 * states) * jnp.dtype(dtype).itemsize, max_chunk)


def _fixed_law(out, count, W, squeeze: bool, c_mech: Optional[int]) -> ItemLaw:
    xp = np if isinstance(out, np.ndarray) else jnp
    n = out.shape[0]
    total = xp.sum(W, axis=0)
    count = xp.concatenate([count, (total - xp.sum(count, axis=0))[None]])
    if c_mech is None:
        ones = xp.broadcast_to(total, (n,) + total.shape)
        return _law(out[:, 0], out[:, 1], ones, count, xp.zeros_like(ones), squeeze)
    alive_next = xp.concatenate([out[1:, 2], (total - count[-1])[None]])
    return _law(out[:, 0], out[:, 1], out[:, 2], count, total - alive_next, squeeze)


@functools.partial(jax.jit, static_argnames=("states", "c_mech", "c_eff", "tail", "max_chunk",
                                             "group"))
def fixed_order(z, wz, d, query, *, states: int, c_mech: Optional[int], c_eff: int,
                tail: float = TAIL, max_chunk: Optional[int] = None, group: int = 0) -> ItemLaw:
    """Forward recursion over positions carrying the distribution of the ⊤ count.

    For each node z the carry is the law of the ⊤ count so far, k < ``states`` (mass reaching c
    has halted: absorbing); position i is evaluated with probability P(count < c) and answers ⊤
    with p_i(z) times that; a ⊤ moves mass from k to k + 1. Cost O(G · n · c) at most.

    The positions are read in blocks of :data:`_BLOCK`; a block is skipped once every node of
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
        :func:`_map_chunks`; 0: no such layout).
    """
    W, squeeze = _weights(wz)
    chunk = _fixed_chunk_nodes(z.shape[0], states, z.dtype, max_chunk)
    one_chunk = functools.partial(_fixed_chunk, d=d, states=states, c_mech=c_mech, c_eff=c_eff,
                                  tail=tail)
    out, count = _map_chunks(one_chunk, z, W, query, chunk, d, group)  # [n, rows, L], [states, L]
    return _fixed_law(out, count, W, squeeze, c_mech)


_fixed_chunk_jit = jax.jit(_fixed_chunk, static_argnames=("states", "c_mech", "c_eff", "tail"))


def fixed_order_host(z, wz, d, query, *, states: int, c_mech: Optional[int], c_eff: int,
                     tail: float = TAIL, max_chunk: Optional[int] = None,
                     group: int = 0) -> ItemLaw:
    """:func:`fixed_order` for concrete nodes and weights (host arrays, as
    :func:`random_order_host`): one compiled program per (stream length, states) whatever the
    node count (and, on a CPU, the number of laws). Returns host arrays."""
    W, squeeze = _weights(np.asarray(wz))
    chunk = _fixed_chunk_nodes(max(z.shape[0], MAX_CHUNK.get(jax.default_backend(), 256)),
                               states, z.dtype, max_chunk)
    one_chunk = functools.partial(_fixed_chunk_jit, d=d, states=states, c_mech=c_mech,
                                  c_eff=c_eff, tail=tail)
    out, count = _map_chunks_host(one_chunk, np.asarray(z), W, query, chunk, np.asarray(d),
                                  group)
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
        p, q = _pass_fail(query, z, d_i)
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

SUM_EDGES = np.array([0.0, 1.0, 2.5, 4.0, 6.0, 8.5, 11.5, 15.0, 19.0, 24.0, 30.0, 37.0, 46.0])
"""Panels of the inner integral in y = μ s when μ < :data:`LAGUERRE_FROM`; beyond y = 46,
F ≤ e^{−46} < 1e-19."""
SUM_ORDER = 6
"""Gauss–Legendre nodes per panel of the inner integral."""
LAGUERRE_FROM = 40.0
"""From this μ on, the inner integral uses :data:`LAGUERRE_NODES` Gauss–Laguerre nodes."""
LAGUERRE_NODES = 16


def _inverse_mean_nodes(mu, dtype, laguerre: bool):
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
"""Factors multiplied per logarithm in :func:`_inverse_means` (float64)."""


def _inverse_means(Pb, Qb, mu, dtype, laguerre: bool, grouped: bool = False, ties=None,
                   native: bool = False):
    """E[1/(M_{−i}+1)] given z for every item: [nb, BLOCK, G] (see :func:`random_order`), and
    with ``ties`` = (P [U, G], Q [U, G], m [U]) (U scores shared by m_u items each) also for
    one item of each tie group: ([nb, BLOCK, G], [U, G]).

    ``grouped``: log F is summed as one log per block of the product of its factors, 1/128 of
    the logarithms. Only where every factor 1 − p_j s_t is bounded away from 0 (the caller's
    μ ≥ 139, so s_t ≤ 51.7/139 and each factor ≥ 0.62, a block's product ≥ 1e-27): the product
    then neither underflows nor loses more than 128 roundings (relative 3e-14).

    Otherwise, in float64, one log per :data:`LOG_GROUP` = 8 factors (an eighth of the
    logarithms, which were about half of a random-order evaluation: zipf, c = 25, 0.69 s ->
    0.57 s warm). Each factor is 1 − p_j s_t ≥ 1 − s_t, which the nodes keep above 3e-18
    (Legendre: at least (b − a)(1 − u)/μ with 1 − u ≥ 0.034, and (b − a)/μ ≥ 2^-53 on the
    panel that ends at μ, ≥ 1/μ on a whole one; Laguerre: s_t = y/μ < 1, so 1 − s_t ≥ 2^-53),
    so a product of 8 is above 1e-141 and never underflows; it adds 7 roundings per 8 factors
    to the sum of logs (relative ~1e-15). float32 keeps one log per factor: its products of 8
    could underflow.

    ``native`` (float64 only): both passes over the items run as svtjax's compiled kernels
    (:data:`svtjax._native.LOG_PRODUCTS_TARGET`, :data:`svtjax._native.INVERSE_SUMS_TARGET`),
    whose running product is renormalised every 8 factors and takes one logarithm at the end
    (``grouped`` is then moot).
    """
    s, oms, weight, log_factor = _inverse_mean_nodes(mu, dtype, laguerre)
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


def tie_groups(d: np.ndarray, states: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray]:
    """Splits the offsets for :func:`random_order`: scores shared by at least ``max(states,
    2)`` items become tie groups (one binomial step each), the others stay single items.

    Returns (single, tied, sizes, rows): the indices of the single items, the tied groups'
    representatives (one index per group, in ``d``) and sizes, and for every item its row in
    the concatenation [single items, tie groups] of :func:`random_order`'s output.
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


def _log_binomial(m: np.ndarray, states: int) -> np.ndarray:
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
    the products; 30 groups at 100 states and 32 nodes: 9.1 ms -> 3.2 ms)."""
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


def _random_chunk(zc, wc, qc, d, ties, *, states: int, c_mech: Optional[int], c_eff: int,
                  tail: float, native: bool = False):
    """:func:`random_order` on one chunk of nodes ``zc`` [chunk] with weights ``wc`` [chunk, L]
    and query noise ``qc`` (per-node scales [chunk]): (out [n + U, 3, L], count [states, L]),
    the chunk's part of the integrals (rows: P(⊤), P(∈ S), P(evaluated)).

    ``native`` (static; float64, the CPU, concrete laws: :func:`random_order_host`): the
    forward and backward recursions over the single items run as svtjax's compiled kernels
    (:func:`svtjax._native.exact_target`; about a dozen small XLA kernels per item otherwise),
    and so do the inner integrals' products and sums (:func:`_inverse_means`): the same
    operations, to rounding."""
    n = d.shape[0]
    dtype = zc.dtype
    # the compiled kernels take the nodes 8 at a time (one AVX-512 vector of doubles)
    native = native and dtype == jnp.float64 and zc.shape[0] % 8 == 0
    ks = (c_mech, c_eff) if c_mech is not None and c_eff != c_mech else \
        ((c_mech,) if c_mech is not None else (c_eff,))
    ks_arr = jnp.asarray(ks, dtype)
    nb = -(-n // _BLOCK)
    n_pad = nb * _BLOCK
    d_pad, valid = (x.reshape(n_pad) for x in _blocked(d, nb))  # padding never passes
    a_idx = jnp.arange(states, dtype=dtype)
    terminal = jnp.stack([jnp.where(a_idx < k, 1 - k / (a_idx + 1), 0) for k in ks])
    if ties is not None:
        d_tie, m_tie, log_c, log_c_loo, _ = ties
        m_loo = m_tie - 1

    def tie_laws(P_tie, Q_tie):
        return (_binomial_pmf(log_c, m_tie, P_tie, Q_tie),
                _binomial_pmf(log_c_loo, m_loo, P_tie, Q_tie))

    def count_law(Pb, Qb, T=None):
        """The law of the ⊤ count over all items (below ``states``), and the law before each
        block (the checkpoints of the backward pass); with the tie groups' pmfs ``T``, the
        groups come first, and the laws before each of them are returned too."""
        def fwd_block(pre, pq_blk):
            def step(pre, pq):
                p, q = pq
                return pre * q + _shift_up(pre) * p, None

            return lax.scan(step, pre, pq_blk)[0], pre

        pre0 = jnp.zeros((states, Pb.shape[-1]), dtype).at[0].set(1.0)
        before_ties = None
        if T is not None:
            pre0, before_ties = lax.scan(lambda pre, b: (_convolve(pre, b), pre), pre0, T)
        if native:
            full, starts = _native_forward(pre0, Pb, Qb)
        else:
            full, starts = lax.scan(fwd_block, pre0, (Pb, Qb))
        return full, starts, before_ties

    def outputs(p, e_g):
        evaluated = e_g[0] if c_mech is not None else jnp.ones_like(p)
        return jnp.stack([p * evaluated, p * e_g[-1], evaluated])

    def full_chunk(Pb, Qb, mu, wc, tie):
        # Nodes are sorted by μ (:func:`_map_chunks`), so a chunk is almost always in one
        # regime: the cheap Gauss–Laguerre rule runs whenever it is exact for every node.
        P_tie, Q_tie = tie if tie is not None else (None, None)
        with_ties = None if tie is None else (P_tie, Q_tie, m_tie)
        e_inv = lax.cond(jnp.all(mu >= LAGUERRE_FROM),
                         lambda pb, qb: _inverse_means(pb, qb, mu, dtype, True, ties=with_ties,
                                                       native=native),
                         lambda pb, qb: _inverse_means(pb, qb, mu, dtype, False,
                                                       ties=with_ties, native=native), Pb, Qb)
        if tie is not None:
            e_inv, inv_tie = e_inv
            T_full, T_loo = tie_laws(P_tie, Q_tie)
        full, starts, before_ties = count_law(Pb, Qb, None if tie is None else T_full)

        def refwd(pre, pq):
            p, q = pq
            return pre * q + _shift_up(pre) * p, pre

        def bwd_step(V, x):
            pre, p, q, inv = x
            e_g = jnp.sum(pre[None] * V, axis=1) + ks_arr[:, None] * inv[None]
            return _bernoulli_back(V, p, q), outputs(p, e_g)

        def bwd_sub(V, sub):
            start, p_sub, q_sub, inv_sub = sub
            _, pres = lax.scan(refwd, start, (p_sub, q_sub))
            return lax.scan(bwd_step, V, (pres, p_sub, q_sub, inv_sub), reverse=True)

        def bwd_block(V, blk):
            # The block's laws are recomputed from its checkpoint in sub-blocks of _SUB
            # positions (from checkpoints of their own), so that the laws the backward steps
            # read back stay in cache; the same operations in the same order as one pass.
            start, *rest = blk
            p_sub, q_sub, inv_sub = (x.reshape((_BLOCK // _SUB, _SUB) + x.shape[1:])
                                     for x in rest)
            _, starts_sub = lax.scan(
                lambda pre, pq: (lax.scan(lambda x, y: (refwd(x, y)[0], None), pre, pq)[0],
                                 pre), start, (p_sub, q_sub))
            V, out = lax.scan(bwd_sub, V, (starts_sub, p_sub, q_sub, inv_sub), reverse=True)
            out = out.reshape((_BLOCK,) + out.shape[2:])
            return V, out @ wc  # integrated over the chunk's nodes once per block

        if native:
            outs, V = _native_backward(starts, Pb, Qb, e_inv, terminal.astype(dtype),
                                       ks_arr, c_mech is not None)
            outs = (outs @ wc)[:n]  # [n_pad, 3, chunk] @ [chunk, L]
        else:
            V0 = jnp.broadcast_to(terminal[:, :, None],
                                  (len(ks), states, mu.shape[0])).astype(dtype)
            V, outs = lax.scan(bwd_block, V0, (starts, Pb, Qb, e_inv), reverse=True)
            outs = outs.reshape((n_pad,) + outs.shape[2:])[:n]
        if tie is None:
            return outs, full @ wc

        def bwd_tie(V, x):  # the other m_u − 1 items of the group, then the item itself
            pre, b_loo, p, q, inv = x
            V = _correlate(V, b_loo)
            e_g = jnp.sum(pre[None] * V, axis=1) + ks_arr[:, None] * inv[None]
            return _bernoulli_back(V, p, q), outputs(p, e_g) @ wc

        _, out_tie = lax.scan(bwd_tie, V, (before_ties, T_loo, P_tie, Q_tie, inv_tie),
                              reverse=True)
        return jnp.concatenate([outs, out_tie]), full @ wc

    def cheap_chunk(Pb, Qb, mu, wc, tie):
        # Every node has P(M_{−i} ≤ max(ks) − 1) ≤ tail / c: E[g_k(M_{−i})] = k E[1/(M_{−i}+1)]
        # and the count law below ``states`` is 0, both within ``tail``. Here μ ≥ 40 (μ ≥ 139
        # when tail / (k − 1) ≤ 1e-30, as (μ − k)² ≥ 2 · 69 · (μ − 1) needs: then every factor
        # 1 − p_j s_t ≥ 1 − 51.7/139 and the grouped logarithms are safe).
        e_inv = _inverse_means(Pb, Qb, mu, dtype, True, grouped=log_tail <= math.log(1e-30),
                               ties=None if tie is None else (*tie, m_tie), native=native)

        def out_of(p, e_inv):
            evaluated = ks_arr[0] * e_inv if c_mech is not None else jnp.ones_like(p)
            return jnp.stack([p * evaluated, p * ks_arr[-1] * e_inv, evaluated], axis=-2) @ wc

        count = jnp.zeros((states, wc.shape[1]), dtype)
        if tie is None:
            return out_of(Pb, e_inv).reshape((n_pad, 3, -1))[:n], count
        e_inv, inv_tie = e_inv
        out = out_of(Pb, e_inv).reshape((n_pad, 3, -1))[:n]
        return jnp.concatenate([out, out_of(tie[0], inv_tie)]), count

    def low_chunk(Pb, Qb, mu, wc, tie):
        # Every node has P(M ≥ min(ks)) ≤ tail: every item is evaluated and in the answer set
        # when it passes (E[g_k] = 1 within tail); only the count law needs a recursion.
        full = count_law(Pb, Qb, None if tie is None else tie_laws(*tie)[0])[0]
        out = jnp.stack([Pb, Pb, jnp.ones_like(Pb)], axis=2) @ wc
        out = out.reshape((n_pad,) + out.shape[2:])[:n]
        if tie is not None:
            out = jnp.concatenate([out, jnp.stack([tie[0], tie[0], jnp.ones_like(tie[0])],
                                                  axis=1) @ wc])
        return out, full @ wc

    # Skip the first sum where (k − 1) · exp(−(μ − k)² / (2 (μ − 1))) ≤ tail for the largest k
    # (ν − (k − 1) with ν ≥ μ − 1 is ≥ μ − k, and t²/(2ν) grows with ν above k − 1).
    k_big, k_small = max(ks), min(ks)
    log_tail = math.log(tail / max(k_big - 1, 1)) if tail > 0 else -math.inf

    def one_chunk(zc, wc, qc):
        P, Q = _block_pass_fail(qc, zc, d_pad, valid)  # [n_pad, chunk]
        mu = jnp.sum(P, axis=0)
        tie = None
        if ties is not None:
            tie = jax.vmap(lambda di: _pass_fail(qc, zc, di))(d_tie)  # ([U, chunk],) * 2
            mu = mu + jnp.sum(m_tie.astype(dtype)[:, None] * tie[0], axis=0)
        Pb, Qb = P.reshape(nb, _BLOCK, -1), Q.reshape(nb, _BLOCK, -1)
        if tail <= 0:
            return full_chunk(Pb, Qb, mu, wc, tie)
        nu = jnp.maximum(mu - 1, 1e-30)
        high = ((mu - 1 > k_big - 1) & (-(mu - k_big) ** 2 / (2 * nu) <= log_tail)
                & (mu >= LAGUERRE_FROM))  # implied at tail = 1e-30; kept for larger tails
        # Chernoff's upper tail: P(M ≥ k) ≤ e^{−μ} (e μ / k)^k for k > μ, and M_{−i} ≤ M.
        low = (mu < k_small) & (k_small * jnp.log(jnp.e * jnp.maximum(mu, 1e-300) / k_small)
                                - mu <= math.log(tail))
        branch = jnp.where(jnp.all(high), 0, jnp.where(jnp.all(low), 1, 2))
        return lax.switch(branch, (cheap_chunk, low_chunk, full_chunk), Pb, Qb, mu, wc, tie)

    return one_chunk(zc, wc, qc)


def _native_inverse_means(Pb, Qb, oms, weight, log_factor, ties):
    """:func:`_inverse_means`'s two passes over the items as the compiled kernels."""
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


def _native_forward(pre0, Pb, Qb):
    """``count_law``'s forward scan over blocks (the law after every item, and before each block)
    as one call of the compiled kernel (:data:`svtjax._native.PB_FORWARD_TARGET`)."""
    from svtjax import _native

    nb, block, G = Pb.shape
    S = pre0.shape[0]
    return jax.ffi.ffi_call(
        _native.PB_FORWARD_TARGET,
        (jax.ShapeDtypeStruct((S, G), pre0.dtype), jax.ShapeDtypeStruct((nb, S, G), pre0.dtype)),
        vmap_method="sequential",
    )(pre0, Pb.reshape(nb * block, G), Qb.reshape(nb * block, G), block=np.int64(block))


def _native_backward(starts, Pb, Qb, e_inv, terminal, ks, evaluated_from_first: bool):
    """The backward pass of ``full_chunk`` (per item and node, before the integral over the
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


def _random_chunk_nodes(G: int, n: int, states: int, ties, dtype,
                        max_chunk: Optional[int]) -> int:
    """Nodes per chunk of :func:`random_order` (:func:`_node_chunks`)."""
    nb = -(-n // _BLOCK)
    # Per node: the pass/fail probabilities, the checkpoints and one block's laws, the inner
    # integral's factors; with tie groups also their pmfs and laws before each group [U,
    # states] x 3 and one [states, states] Toeplitz / Hankel matrix.
    n_tie = 0 if ties is None else ties[0].shape[0]
    per_node = jnp.dtype(dtype).itemsize * (
        3 * nb * _BLOCK + (nb + _BLOCK + 2) * states + 4 * _BLOCK * SUM_EDGES.size * SUM_ORDER
        + (3 * n_tie * states + 2 * states ** 2 if n_tie else 0))
    return _node_chunks(G, per_node, max_chunk)


def _random_law(out, count, W, squeeze: bool) -> ItemLaw:
    xp = np if isinstance(out, np.ndarray) else jnp
    count = xp.concatenate([count, (xp.sum(W, axis=0) - xp.sum(count, axis=0))[None]])
    return _law(out[:, 0], out[:, 1], out[:, 2], count, None, squeeze)


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
      (:func:`_inverse_mean_nodes`).

    The terms of the split are at most c in size and the result is in [0, 1], so rounding
    costs at most ~c · 1e-16. Cost O(G · n · (c + 16)) (O(G · n · (c + 72)) where μ < 40).

    Where the count rarely stays below c the first sum is negligible and is skipped: it is at
    most (c − 1) · P(M_{−i} ≤ c − 1), and the Chernoff bound for a sum of independent Bernoulli
    variables, P(M ≤ ν − t) ≤ exp(−t² / (2ν)) with ν = E[M_{−i}] ≥ μ − 1, bounds that by
    ``tail`` (the count law below c is then below ``tail`` too, and is reported as 0). A chunk of
    nodes (sorted by μ, :func:`_map_chunks`) takes the cheap path only when the bound holds at
    every node of it; with small ε most nodes have μ in the thousands (every item near the
    threshold passes half the time), so most of the work is skipped. At the other end, where
    P(M ≥ min k) ≤ e^{−μ} (e μ / k)^k ≤ ``tail`` (Chernoff's upper tail; M_{−i} ≤ M), every item
    is evaluated and E[g_k] = 1 within ``tail``: only the forward recursion (for the count law)
    runs. ``tail = 0`` never skips; ``max_chunk`` (static) caps the nodes per chunk.

    Tied scores. The law does not depend on the items' order, so items with equal offsets
    can be taken together: ``ties`` = (d_u [U], m_u [U] int, log C(m_u, k) and
    log C(m_u − 1, k) [U, states] (:func:`_log_binomial`), every item's offset (to order the
    nodes); :func:`tie_groups` splits the items) adds U groups of m_u items each, placed
    before the ``d`` items in the recursions' (immaterial) order. A group enters the forward
    recursion as one binomial step (pre ⊛ Bin(m_u, p_u), a [states × states] product per
    node) and the backward one as Bin(m_u − 1, p_u) for the group's other items and a
    Bernoulli step for the item itself, instead of m_u steps of each; E[1/(M+1)]'s log F
    gains m_u log(1 − p_u s). The outputs are then [n + U] rows, one per single item, then
    one per group (every item of a group has the same law). On retail (16,470 items, 583
    distinct scores) the groups of at least c items hold 80% of the items at c = 50.
    """
    W, squeeze = _weights(wz)
    chunk = _random_chunk_nodes(z.shape[0], d.shape[0], states, ties, z.dtype, max_chunk)
    one_chunk = functools.partial(_random_chunk, d=d, ties=ties, states=states, c_mech=c_mech,
                                  c_eff=c_eff, tail=tail)
    out, count = _map_chunks(one_chunk, z, W, query, chunk, d if ties is None else ties[4],
                             group)
    return _random_law(out, count, W, squeeze)


_random_chunk_jit = jax.jit(_random_chunk, static_argnames=("states", "c_mech", "c_eff", "tail",
                                                           "native"))


def random_order_host(z, wz, d, query, *, states: int, c_mech: Optional[int], c_eff: int,
                      tail: float = TAIL, max_chunk: Optional[int] = None, group: int = 0,
                      ties=None) -> ItemLaw:
    """:func:`random_order` for concrete nodes ``z`` and weights ``wz`` (host arrays, in the
    dtype to compute in; ``query``'s scale a host scalar or float[G]), the chunks driven from
    the host (:func:`_map_chunks_host`): one compiled program per (stream length, tie groups,
    states), whatever the node count (and, on a CPU, the number of laws: see
    :func:`_map_chunks_host`), so that the searches and curves of
    :func:`svtjax.exact.optimal_allocation` and the sweeps reuse it. Returns host arrays."""
    W, squeeze = _weights(np.asarray(wz))
    chunk = _random_chunk_nodes(max(z.shape[0], MAX_CHUNK.get(jax.default_backend(), 256)),
                                d.shape[0], states, ties, z.dtype, max_chunk)
    from svtjax import _native

    native = np.dtype(z.dtype) == np.float64 and _native.exact_target()
    one_chunk = functools.partial(_random_chunk_jit, d=d, ties=ties, states=states,
                                  c_mech=c_mech, c_eff=c_eff, tail=tail, native=native)
    d_sort = np.asarray(d if ties is None else ties[4])
    out, count = _map_chunks_host(one_chunk, np.asarray(z), W, query, chunk, d_sort, group)
    return _random_law(out, count, W, squeeze)


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
    P, Q = jax.vmap(lambda di: _pass_fail(query, z, di))(d)  # [n, G]
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
