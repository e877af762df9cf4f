"""The metrics' exact per-trial sums: an answer set's counts, support and NCR relevance, from
the item tables of :mod:`svtjax.metrics` turned into int32 columns (fixed-point limbs of every
score, :mod:`svtjax._fixedpoint`) and summed as integers over each answer set.

Integer sums have no order, so a trial's sums do not depend on the batch it is evaluated in
(XLA vectorises and fuses a float reduction differently for different batch shapes), equal
sets of scores give bit-identical sums, and no sum overflows the dtype.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from svtjax import _fixedpoint
from svtjax._types import Array


class Counts(NamedTuple):
    """Per-trial sufficient statistics of an answer set ``S`` (shapes ``[...]``).

    The float sums are exact sums (:mod:`svtjax._fixedpoint`), so a trial's numbers do not
    depend on the batch it ran in; ``support`` and ``top_support`` share a power-of-two unit
    (only their ratio is used), which keeps them finite whatever the scores."""

    size: Array  # |S|, int
    tp: Array  # max over valid top-c sets T of |S & T|, int
    support: Array  # sum_{i in S} s_i, float, in the unit of top_support
    relevance: Array  # sum_{i in S} NCR relevance, float
    top_support: Array  # sum of the c largest scores, float scalar, in a power-of-two unit
    missing: Array  # top_support - support, float, summed exactly (SER's numerator)


class Fixed(NamedTuple):
    """The item tables as int32 columns for exact sums (:func:`tables`)."""

    table: Array  # int32 [n, m]: the counts' column(s), the limbs of s_i, the relevance's
    slots: Array  # int32 scalar: slots left at the c-th score
    top_sums: Array  # int32 [L]: the limb sums of the top-c support
    top_support: Array  # float scalar: the top-c support, in the unit of the s_i limbs
    layout: tuple  # static: the limb widths (both sums)
    relevance_unit: Array  # float scalar: the unit of the relevance column(s)' value
    packed: int  # static: h when the counts share a column (above + at * 2**h), else 0


def tables(scores: Array, item_tables: tuple, top: Array, c: Array, summands: int,
           accumulator: int) -> Fixed:
    """The item tables (``above``, ``at``, slots, relevance: ``svtjax.metrics``' tie rules)
    and every score as fixed-point limbs
    (:mod:`svtjax._fixedpoint`), for sums of at most ``summands`` items whose totals stay
    below ``2**accumulator``; ``top``: the scores in decreasing order, at least c of them.

    Scores are cut on a grid relative to the largest magnitude of all n, so the support of an
    answer set and that of the true top-c are exact sums in one unit: equal sets of scores give
    bit-identical sums (a true top-c scores SER 0), the sums cannot overflow, and no sum depends
    on the order or the batch shape in which it was added up. The counts and NCR's relevance
    (a multiple of 1/2, at most c <= summands) are integers: for up to 2**h summands with 2h + 1
    <= ``accumulator`` bits, ``above + at * 2**h`` is one column and twice the relevance
    another (fewer columns to gather), else each count is a column and the relevance limbs."""
    above, at, slots, relevance, _ = item_tables
    dtype = relevance.dtype
    layout = _fixedpoint.widths(summands, dtype, accumulator)
    h = max(1, int(summands).bit_length())
    s = scores.astype(dtype)
    e_s = _fixedpoint.exponent(jnp.max(jnp.abs(s)))
    if 2 * h + 1 <= accumulator:
        packed = h
        counts = (above.astype(jnp.int32) + (at.astype(jnp.int32) << h))[:, None]
        rel = (relevance * 2).astype(jnp.int32)[:, None]  # exact: a multiple of 1/2
    else:
        packed = 0
        e_r = 32 - jax.lax.clz(c.astype(jnp.int32))  # relevance <= c < 2**e_r
        counts = jnp.stack([above.astype(jnp.int32), at.astype(jnp.int32)], axis=1)
        rel = _fixedpoint.limbs(relevance, e_r, layout)
    table = jnp.concatenate([counts, _fixedpoint.limbs(s, e_s, layout), rel], axis=1)
    first_c = (jnp.arange(top.shape[0], dtype=jnp.int32) < c)[:, None]
    top_limbs = jnp.where(first_c, _fixedpoint.limbs(top.astype(dtype), e_s, layout), 0)
    top_sums = jnp.sum(top_limbs, axis=0, dtype=jnp.int32)
    unit = (jnp.asarray(0.5, dtype) if packed else
            _fixedpoint.pow2(e_r - layout[0], dtype))
    return Fixed(table, slots, top_sums, _fixedpoint.value(top_sums, layout, dtype), layout,
                 unit, packed)


def counts(size: Array, sums: Array, fixed: Fixed) -> Counts:
    """:class:`Counts` from the int32 sums of :func:`tables`' columns over each answer
    set."""
    dtype = fixed.top_support.dtype
    n_limbs = len(fixed.layout)
    if fixed.packed:
        above = sums[..., 0] & ((1 << fixed.packed) - 1)
        tied = sums[..., 0] >> fixed.packed
        support = sums[..., 1:1 + n_limbs]
        relevance = sums[..., 1 + n_limbs].astype(dtype)  # one rounding of an exact sum
    else:
        above, tied = sums[..., 0], sums[..., 1]
        support = sums[..., 2:2 + n_limbs]
        relevance = _fixedpoint.value(sums[..., 2 + n_limbs:], fixed.layout, dtype)
    return Counts(
        size=size,
        tp=above + jnp.minimum(tied, fixed.slots),
        support=_fixedpoint.value(support, fixed.layout, dtype),
        relevance=relevance * fixed.relevance_unit,
        top_support=fixed.top_support,
        missing=_fixedpoint.value(fixed.top_sums - support, fixed.layout, dtype),
    )
