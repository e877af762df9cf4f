"""Which picks form a trial's answer set, and the per-item tables of the top-c boundary the
metrics sum over it (:mod:`svtjax.metrics` documents the rules: a repeated index counts once,
only the first c distinct valid picks count, ties at the c-th score share its slots)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from svtjax import _bits
from svtjax._types import Array


def item_tables(scores: Array, c: Array, dtype: Any, xp: Any = jnp
                 ) -> tuple[Array, Array, Array, Array, Array]:
    """Per item: above (s_i > t), at (s_i == t), NCR relevance; slots at t; top-c support.

    ``xp`` is the array module: ``jax.numpy`` (traced, the metrics' kernels) or ``numpy`` (host
    numbers: ``svtjax.exact``'s per-item weights), one definition of the tie rules for both."""
    n = scores.shape[0]
    ascending = xp.sort(scores)
    # Sorted (decreasing) positions a..b, 1-based, occupied by each item's tie group.
    first = (n + 1 - xp.searchsorted(ascending, scores, side="right")).astype(xp.int32)
    last = (n - xp.searchsorted(ascending, scores, side="left")).astype(xp.int32)
    above = last < c  # s_i > t: in every valid top-c set
    at = (first <= c) & (last >= c)  # s_i == t: fills one of the slots left at the c-th score
    threshold = ascending[n - c]
    slots = c - (n - xp.searchsorted(ascending, threshold, side="right")).astype(xp.int32)
    hi = xp.minimum(last, c)
    relevance = xp.where(first <= c, (2 * c + 2 - first - hi).astype(dtype) / 2, 0)
    descending = ascending[::-1].astype(dtype)
    top_support = xp.sum(xp.where(xp.arange(n, dtype=xp.int32) < c, descending, 0))
    return above, at, slots, relevance.astype(dtype), top_support


def top_tables(scores: Array, c: Array, k: int, dtype: Any
               ) -> tuple[Array, Array, Array, Array, Array]:
    """:func:`item_tables` from the top ``k >= c`` scores instead of a sort of all n (a sort
    of 10^4 floats costs far more on a CPU core than a top-k), with the top k
    scores (decreasing) in place of the top-c support (``svtjax._answer_sums.tables`` sums
    them).

    With t the c-th largest score, an item is above the top-c boundary when s_i > t and at it
    when s_i = t; the slots at t are c − #(s > t). An item with s_i >= t has first =
    1 + #(s > s_i) and min(last, c) = min(#(s >= s_i), c), both read off the top k, which hold
    every score above it."""
    # The barrier keeps the top-k a top-k: without it XLA fuses the slice of its sort into the
    # users and sorts all n scores.
    top = jax.lax.optimization_barrier(jax.lax.top_k(scores, k)[0])  # descending
    t = top[jnp.clip(c - 1, 0, k - 1)]
    ascending = top[::-1]
    first = 1 + k - jnp.searchsorted(ascending, scores, side="right").astype(jnp.int32)
    hi = jnp.minimum(k - jnp.searchsorted(ascending, scores, side="left").astype(jnp.int32), c)
    zero = jnp.zeros((), dtype)
    relevance = jnp.where(scores >= t, (2 * c + 2 - first - hi).astype(dtype) / 2, zero)
    slots = c - jnp.sum(top > t, dtype=jnp.int32)
    return scores > t, scores == t, slots, relevance, top


PAIRWISE_MAX_K = 128
"""Widths up to this find repeated picks by all-pairs comparison (k^2 work, but faster than two
sorts on CPU for k <= 300); wider selections sort."""


def repeat_pairwise(key: Array) -> Array:
    k = key.shape[-1]
    earlier = jnp.arange(k)[None, :] < jnp.arange(k)[:, None]
    return jnp.any((key[..., :, None] == key[..., None, :]) & earlier, axis=-1)


def repeat_sorted(key: Array) -> Array:
    order = jnp.argsort(key, axis=-1, stable=True)  # equal indices stay in stream order
    ranked = jnp.take_along_axis(key, order, axis=-1)
    repeat = jnp.concatenate(
        [jnp.zeros_like(ranked[..., :1], dtype=bool), ranked[..., 1:] == ranked[..., :-1]],
        axis=-1)
    return jnp.take_along_axis(repeat, jnp.argsort(order, axis=-1), axis=-1)


def answer_mask(selected: Array, n: int, c: Array) -> Array:
    """True at the picks forming ``S``: valid, first occurrence, among the first c such."""
    valid = (selected >= 0) & (selected < n)
    key = jnp.where(valid, selected, -1)
    if key.shape[-1] <= PAIRWISE_MAX_K:
        repeat = repeat_pairwise(key)
    else:
        repeat = repeat_sorted(key)
    keep = valid & ~repeat
    first_c = jnp.arange(keep.shape[-1], dtype=jnp.int32) <= _bits.nth_true(keep, c)[..., None]
    return keep & first_c
