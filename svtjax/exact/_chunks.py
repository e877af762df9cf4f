"""The quadrature nodes of the exact laws, taken a chunk at a time.

Every kernel integrates over the nodes z of the threshold noise ρ; the nodes are cut into
chunks whose working memory stays near :data:`CHUNK_BYTES`, each chunk's integrals are summed
into the result. One function, :func:`map_chunks`, does this either inside a traced program (a
``lax.scan`` over the chunks: differentiable, one program per node count) or driven from the
host (``host=True``: a jitted chunk kernel compiled per chunk shape only, so a new node count
compiles nothing): the same sums in the same order.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax.exact._items import pass_fail

__all__ = ["MAX_CHUNK", "CHUNK_BYTES", "node_chunks", "node_means", "map_chunks"]

CHUNK_BYTES = 48 * 2**20  # working memory per chunk of quadrature nodes
SORT_SAMPLE = 16  # every 16th offset estimates μ(z) for sorting the nodes
MAX_CHUNK = {"cpu": 32}
"""Nodes per chunk at most, per platform (256 where none is given). A fixed-order chunk reads
a block of positions until every node of it has halted, and a random-order chunk takes a cheap
path only when all its nodes allow it, so smaller chunks skip more; on a CPU, below 32 the
per-step work is too small to vectorise, and 32 was the fastest of 16, 32, 64 and 256 nodes
per chunk for both orders (``benchmarks/RESULTS.md``). Not measured on an accelerator, where
wide chunks fill the device: it keeps 256."""


def node_chunks(G: int, per_node_bytes: int, max_chunk: Optional[int] = None) -> int:
    """Nodes per chunk so that a chunk's working memory stays near :data:`CHUNK_BYTES`, at
    most ``max_chunk`` (default: :data:`MAX_CHUNK` for the platform)."""
    size = max(1, CHUNK_BYTES // max(per_node_bytes, 1))
    size = 1 << (size.bit_length() - 1)
    return int(min(size, max_chunk or platform_max_chunk(), max(G, 1)))


def platform_max_chunk() -> int:
    """:data:`MAX_CHUNK`'s entry for JAX's default backend (256 where none is given)."""
    return MAX_CHUNK.get(jax.default_backend(), 256)


def per_node(query, G: int, xp=jnp):
    """The query noise's scale as float[G] (one scale per node: laws batched along the nodes may
    differ in it), or None for noiseless comparisons; ``xp``: the array module (``np`` for
    host arrays)."""
    if query is None or not jax.tree_util.tree_leaves(query):
        return None
    (scale,) = jax.tree_util.tree_leaves(query)
    return xp.broadcast_to(xp.asarray(scale), (G,))


def with_scale(query, scale):
    """``query`` with its scale replaced by ``scale`` (a chunk's per-node scales), or itself."""
    return query if scale is None else jax.tree_util.tree_map(lambda _: scale, query)


def split(x, fill, chunk: int, xp=jnp):
    """``x`` padded with ``fill`` to whole chunks along its first axis: [chunks, chunk, ...]."""
    num = -(-x.shape[0] // chunk)
    x = xp.concatenate([x, xp.full((num * chunk - x.shape[0],) + x.shape[1:], fill, x.dtype)])
    return x.reshape((num, chunk) + x.shape[1:])


def chunk_means(zc, qc, d):
    """μ(z) = Σ_i p_i(z) at one chunk of nodes (float[chunk])."""
    return jnp.sum(jax.vmap(lambda di: pass_fail(qc, zc, di)[0])(d), axis=0)


_chunk_means_jit = jax.jit(chunk_means)  # compiled per chunk size and stream length


def node_means(z, d, query, chunk: int, host: bool = False):
    """μ(z) = Σ_i p_i(z), the expected number of passing items at every node (float[G]),
    computed ``chunk`` nodes at a time (``host``: chunk by chunk from the host)."""
    xp = np if host else jnp
    G = z.shape[0]
    scale = per_node(query, G, xp)
    zs = split(z, z[-1], chunk, xp)
    ss = None if scale is None else split(scale, 1, chunk, xp)
    if host:
        return np.concatenate([
            np.asarray(_chunk_means_jit(zs[k], with_scale(query, None if ss is None else ss[k]),
                                        d)) for k in range(zs.shape[0])])[:G]
    return lax.map(lambda a: chunk_means(a[0], with_scale(query, a[1]), d),
                   (zs, ss)).reshape(-1)[:G]


def map_chunks(fn, z, W, query, chunk: int, d=None, group: int = 0, host: bool = False):
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

    ``host`` (concrete nodes and weights, host arrays; ``fn`` jitted): the loop over chunks
    runs on the host, so ``fn`` is compiled per chunk shape only and the node count compiles
    no new program, nor does the number of laws in the grouped layout (chunks wider than
    ``group``, as the accelerators' 256 nodes, integrate against all L columns, so L is in
    their shape). Chunks that carry no weight are never sent. Returns host arrays then.
    """
    xp = np if host else jnp
    G = z.shape[0]
    scale = per_node(query, G, xp)
    grouped = bool(group) and W.shape[1] > 1 and group % chunk == 0 and G % group == 0
    if d is not None and G > chunk and not grouped:
        # Only the order matters (each chunk tests its own nodes exactly), so μ is estimated
        # from every 16th offset: 1/16 of the work of the exact sums. (Not of the sorted
        # offsets: under an outer jit that closes over them XLA constant-folds the sort.)
        sample = d[::SORT_SAMPLE] if d.shape[0] > 8 * SORT_SAMPLE else d
        if host:
            order = np.argsort(-node_means(z, sample, query, chunk, True), kind="stable")
        else:
            order = jnp.argsort(-lax.stop_gradient(node_means(z, sample, query, chunk)))
        z, W = z[order], W[order]
        scale = None if scale is None else scale[order]
    xs = (split(z, 0, chunk, xp), split(W, 0, chunk, xp),
          None if scale is None else split(scale, 1, chunk, xp))
    if host:
        return _host_sum(fn, xs, query, grouped, W.shape[1])
    return _scan_sum(fn, xs, query, grouped, W.shape[1])


def _scan_sum(fn, xs, query, grouped: bool, laws: int):
    """:func:`map_chunks`'s sum inside a traced program: a scan over the chunks.

    Each chunk is rematerialised under reverse-mode differentiation (``jax.checkpoint``): the
    forward scan keeps only the chunk's inputs, and the backward scan recomputes the chunk
    before transposing it. Saving the intermediates instead stacks every residual of every
    branch of the random-order kernel's switch (about 160 arrays), each written and read by an
    XLA kernel of its own (324 of the 767 kernels of E[SER]'s gradient in random order with
    tie groups; 443 kernels with the recomputation). The values are the same (the
    recomputation repeats the same operations); a program that is not differentiated is
    unchanged."""
    fn = jax.checkpoint(fn)

    def one(args):
        zc, wc, sc = args
        qc = with_scale(query, sc)
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

    # Summed in the carry: stacking the chunks' outputs first would write and read
    # [chunks, n, rows, L], hundreds of MB for small chunks.
    shapes = jax.eval_shape(lambda a: one(a)[0], jax.tree_util.tree_map(lambda x: x[0], xs))
    zeros = jax.tree_util.tree_map(
        lambda s: jnp.zeros(s.shape[:-1] + (laws,), s.dtype), shapes)
    return lax.scan(add, zeros, xs)[0]


def _host_sum(fn, xs, query, grouped: bool, laws: int):
    """:func:`map_chunks`'s sum driven from the host, chunk by chunk, in the scan's order.

    Sums per column (grouped: each chunk adds into its law's column; else one "column" of all
    L), each a contiguous array, stacked at the end. A chunk is dispatched before the previous
    one's output is read back, so the device computes while the host adds."""
    zs, Ws, ss = xs
    sums: dict = {}
    treedef = None

    def noise(k):
        return with_scale(query, None if ss is None else ss[k])

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
    for k in range(zs.shape[0]):
        wc = Ws[k]
        if not wc.any():  # padding, or a law's zero-weight nodes: adds nothing
            continue
        col = int(np.argmax(wc.any(axis=0))) if grouped else 0
        out = fn(zs[k], wc[:, col:col + 1] if grouped else wc, noise(k))
        if pending is not None:
            add(*pending)
        pending = (col, out)
    if pending is not None:
        add(*pending)
    if not sums:  # no weight at all
        shapes = jax.eval_shape(fn, zs[0], Ws[0][:, :1] if grouped else Ws[0], noise(0))
        return jax.tree_util.tree_map(lambda x: np.zeros(x.shape[:-1] + (laws,), x.dtype),
                                      shapes)
    if not grouped:
        return jax.tree_util.tree_unflatten(treedef, sums[0])
    first = next(iter(sums.values()))
    leaves = [np.concatenate([sums[c][i] if c in sums else np.zeros_like(x)
                              for c in range(laws)], axis=-1)
              for i, x in enumerate(first)]
    return jax.tree_util.tree_unflatten(treedef, leaves)
