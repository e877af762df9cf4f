"""Exact, order-free sums of floats inside a compiled program: fixed-point limbs in int32.

A float sum computed by XLA depends on the order of its additions, and XLA vectorises a
reduction differently for different batch shapes (and fuses it differently into its users), so
``jnp.sum`` of the same row can give a different last bit in a chunk of 256 trials than in one
of 1,000. The metrics' sums (the support of an answer set, the support of the true top-c, NCR's
relevance) go through this module instead: every summand is cut into a
few integer *limbs* on a fixed grid relative to a scale ``2**e`` shared by all summands, the
limbs are summed as integers (exact, so in any order), and the sum is turned back into one float
by a fixed sequence of operations on its canonical digits. The result is a function of the
multiset of summands alone: independent of the order, the batch shape and the platform, and
equal sets of numbers give bit-identical sums (so an answer set that is a true top-c has SER
exactly 0). It never overflows: the value is returned in units of the scale. Long rows whose
sum need not be exact (a trial's per-position privacy costs) take :func:`tree_sum`, a sum in a
fixed order.

Layout. With ``x = ±|x|``, ``|x| < 2**e``, the digits of ``|x| / 2**e`` in base-2 groups of
``widths = (w, w, ..., w_last)`` bits (``sum(widths)`` = :func:`precision_bits`) are the limbs,
each given the sign of ``x``; the bits past the grid are dropped (at most ``summands *
2**(e - precision)`` in all, a 32nd of the dtype's resolution relative to the largest
summand). ``w = accumulator_bits - bit_length(summands)``, so the sum of
up to ``summands`` limbs never exceeds ``2**accumulator_bits``: 30 for int32 sums (room for the
carries), 24 where the limbs are summed as float32 (a matrix product, exact for integers below
2**24 in any order).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from svtjax._types import Array

INT_ACCUMULATOR = 30
"""Bits a limb sum may use when limbs are summed as int32 (one spare for the carries)."""

FLOAT_ACCUMULATOR = 24
"""Bits a limb sum may use when limbs are summed as float32 (exact integers below 2**24)."""


def precision_bits(dtype: Any, summands: int) -> int:
    """Bits of the fixed-point grid below the scale: the dtype's mantissa bits p, plus the
    bits of ``summands`` (h), plus 6. The dropped bits of up to 2**h summands, all below
    ``2**e``, are then under ``2**(e + h - precision)``, 2**-(p + 5) of a sum that holds a
    number of at least ``2**(e - 1)`` (a top-c support, for SER and NCS)."""
    return int(np.finfo(np.dtype(dtype)).nmant) + 1 + max(1, int(summands).bit_length()) + 6


def widths(summands: int, dtype: Any, accumulator_bits: int = INT_ACCUMULATOR
           ) -> tuple[int, ...]:
    """The limb widths for sums of at most ``summands`` numbers (a static layout)."""
    width = accumulator_bits - max(1, int(summands).bit_length())
    if width < 1:
        raise ValueError(f"an exact sum of {summands} numbers does not fit "
                         f"{accumulator_bits}-bit limb sums")
    total = precision_bits(dtype, summands)
    count = -(-total // width)
    return (width,) * (count - 1) + (total - (count - 1) * width,)


def exponent(max_abs: Array) -> Array:
    """int32 ``e`` with ``max_abs < 2**e`` (0 for 0): the scale of a set of summands."""
    _, e = jnp.frexp(max_abs)
    return jnp.where(max_abs > 0, e, 0).astype(jnp.int32)


def pow2(e: Array, dtype: Any) -> Array:
    """Exactly ``2.0**e`` in ``dtype`` for integers ``e`` in its normal range (bit assembly:
    ``2.0**e`` through ``pow`` need not be exact)."""
    dtype = jnp.dtype(dtype)
    if dtype == jnp.float64:
        bits = (jnp.asarray(e).astype(jnp.int64) + 1023) << 52
        return jax.lax.bitcast_convert_type(bits, jnp.float64)
    if dtype != jnp.float32:
        raise TypeError(f"exact sums are for float32 and float64; got {dtype}")
    bits = (jnp.asarray(e).astype(jnp.int32) + 127) << 23
    return jax.lax.bitcast_convert_type(bits, jnp.float32)


def scale(x: Array, k: Array) -> Array:
    """``x * 2**k``, exact unless it leaves the dtype's normal range: two factors, each in the
    normal range for any ``k`` a scale and a layout produce."""
    half = jnp.asarray(k) // 2
    return x * pow2(half, x.dtype) * pow2(k - half, x.dtype)


def limbs(x: Array, e: Array, layout: tuple[int, ...]) -> Array:
    """int32 ``[..., len(layout)]``: the limbs of ``x`` (float, ``|x| < 2**e``; ``e`` broadcasts
    against ``x``), the digits of ``|x| / 2**e`` on the grid, signed like ``x``."""
    y = scale(jnp.abs(x), layout[0] - e)  # < 2**layout[0]
    sign = jnp.where(x < 0, -1, 1).astype(jnp.int32)
    out = []
    for j in range(len(layout)):
        digit = jnp.floor(y)
        out.append(digit.astype(jnp.int32) * sign)
        if j + 1 < len(layout):  # the fraction of a non-negative float and a power of two:
            y = (y - digit) * np.asarray(2.0 ** layout[j + 1], x.dtype)  # both exact
    return jnp.stack(out, axis=-1)


def value(sums: Array, layout: tuple[int, ...], dtype: Any) -> Array:
    """The float of limb sums ``[..., len(layout)]`` (integers), in units of ``2**(e -
    layout[0])``: carries make the digits canonical (every limb after the first in ``[0,
    2**width)``), so equal values give equal floats, and the digits are combined from the
    last one (a monotone function of the value)."""
    digits = [sums[..., j].astype(jnp.int32) for j in range(len(layout))]
    for j in range(len(layout) - 1, 0, -1):
        carry = jnp.right_shift(digits[j], layout[j])  # arithmetic: floor division
        digits[j] = digits[j] - jnp.left_shift(carry, layout[j])
        digits[j - 1] = digits[j - 1] + carry
    acc = digits[-1].astype(dtype)
    for j in range(len(layout) - 2, -1, -1):
        acc = digits[j].astype(dtype) + acc * np.asarray(2.0 ** -layout[j + 1], dtype)
    return acc


def tree_sum(x: Array) -> Array:
    """The sum of ``x`` along its last axis in a fixed order: the row cut into 8 stretches (zeros
    pad the last), added elementwise as a balanced tree, until one column is left. XLA
    neither reorders elementwise additions nor vectorises them across the summed axis, so a
    row's sum depends on its length only, not on the other rows or the batch shape; for long
    rows (a trial's per-position costs), at a fraction of the cost of :func:`limbs`."""
    if x.shape[-1] == 0:
        return jnp.zeros(x.shape[:-1], x.dtype)
    while x.shape[-1] > 1:
        width = x.shape[-1]
        pad = -width % 8
        if pad:
            x = jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (pad,), x.dtype)], axis=-1)
        x = x.reshape(x.shape[:-1] + (8, (width + pad) // 8))  # 8 contiguous stretches
        pairs = [x[..., i, :] + x[..., i + 1, :] for i in range(0, 8, 2)]
        x = (pairs[0] + pairs[1]) + (pairs[2] + pairs[3])
    return x[..., 0]
