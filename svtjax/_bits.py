"""Rank queries on boolean vectors through bit-packed words, without a cumulative sum.

A block of an SVT run asks one question of its ⊤ answers: where is the r-th one (the cut-off
"abort after c ⊤" ends the trial there)? The obvious answer, ``cumsum(above) < r``, is slow on
XLA's CPU backend: ``jnp.cumsum`` lowers to a ``reduce-window`` that the backend does not
vectorise, and on the headline workload it cost more than the block's Laplace draws. Packing the
block into 32-bit words and asking ``population_count`` costs a few elementwise passes
(benchmarks/RESULTS.md, Decisions, has the engine's time before and after).
Integers only, so the result is the same as the cumulative sum's, bit for bit.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from svtjax._types import Array

__all__ = ["nth_true", "nth_packed", "pack"]

_WORD = 32


def _select_in_word(word: Array, r: Array) -> Array:
    """0-based position of the r-th (1-based) set bit of each uint32 ``word``, for
    1 <= r <= popcount(word) (other r give an unspecified position in [0, 31]): a binary search
    over halves, quarters, ... of the word by population counts."""
    pos = jnp.zeros(word.shape, jnp.int32)
    for half in (16, 8, 4, 2, 1):
        low = lax.population_count(word & jnp.uint32((1 << half) - 1)).astype(jnp.int32)
        up = r > low
        pos = pos + jnp.where(up, half, 0)
        r = r - jnp.where(up, low, 0)
        word = jnp.where(up, word >> half, word)
    return pos


def pack(x: Array) -> tuple[Array, Array]:
    """``x`` bool[..., W] as uint32[..., ⌈W/32⌉] words (position i in bit i mod 32 of word
    i // 32, zero-padded) and their population counts, int32[..., ⌈W/32⌉]."""
    width = x.shape[-1]
    words = -(-width // _WORD)
    lead = x.shape[:-1]
    if words * _WORD != width:
        x = jnp.concatenate([x, jnp.zeros(lead + (words * _WORD - width,), bool)], axis=-1)
    shifts = jnp.arange(_WORD, dtype=jnp.uint32)
    packed = jnp.sum(x.reshape(lead + (words, _WORD)).astype(jnp.uint32) << shifts, axis=-1,
                     dtype=jnp.uint32)  # distinct bits: the sum is an OR
    return packed, lax.population_count(packed).astype(jnp.int32)


def nth_packed(packed: Array, counts: Array, r: Array, width: int) -> Array:
    """:func:`nth_true` of the vector ``pack`` made: ``packed``/``counts`` [..., words] and
    ``r`` int[...] of the same leading axes, or with one more axis (several ranks per vector,
    answered at once)."""
    r = jnp.asarray(r, jnp.int32)
    if r.ndim == packed.ndim:  # several ranks per vector
        packed, counts = packed[..., None, :], counts[..., None, :]
    words = packed.shape[-1]
    if words == 0:  # an empty vector: no True anywhere
        return jnp.where(r <= 0, -1, width).astype(jnp.int32)
    # The word holding the r-th True: the number of words whose running count is below r.
    # (W / 32 words, a few on every platform: unrolled adds, not a cumulative sum.)
    before = [jnp.zeros(counts.shape[:-1], jnp.int32)]
    for j in range(words - 1):
        before.append(before[-1] + counts[..., j])
    total = before[-1] + counts[..., words - 1]
    which = sum((b + counts[..., j] < r).astype(jnp.int32) for j, b in enumerate(before))
    which = jnp.minimum(which, words - 1)
    pick = jnp.arange(words, dtype=jnp.int32) == which[..., None]  # one-hot: no gather
    word = jnp.sum(jnp.where(pick, packed, jnp.uint32(0)), axis=-1, dtype=jnp.uint32)
    skipped = jnp.sum(jnp.where(pick, jnp.stack(before, axis=-1), 0), axis=-1,
                      dtype=jnp.int32)
    pos = _WORD * which + _select_in_word(word, r - skipped)
    return jnp.where(r <= 0, -1, jnp.where(r > total, width, pos))


def nth_true(x: Array, r: Array) -> Array:
    """Index of the r-th True (1-based) along the last axis of ``x``.

    Args:
      x: bool[..., W].
      r: int, broadcastable to ``x.shape[:-1]``.

    Returns:
      int32[x.shape[:-1]]: the index in [0, W) of the r-th True; W when ``x`` has fewer than r;
      −1 when r <= 0. So ``arange(W) <= nth_true(x, r)[..., None]`` marks the positions whose
      count of True strictly before them is below r (``cumsum(x) − x < r``) without a
      cumulative sum.
    """
    packed, counts = pack(x)
    r = jnp.broadcast_to(jnp.asarray(r, jnp.int32), x.shape[:-1])
    return nth_packed(packed, counts, r, x.shape[-1])
