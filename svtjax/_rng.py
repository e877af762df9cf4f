"""Threefry-2x32 with its rounds unrolled: the same numbers as ``jax.random``, computed faster.

svtjax's streams draw ``standard(fold_in(stream_key, b), (BLOCK,), dtype)`` for every block b a
kernel reaches (``svtjax.mechanisms.base``). On a CPU, JAX lowers Threefry-2x32 with its 20
rounds rolled into a loop of 5 (to keep compile times low), which XLA's CPU backend runs as a
``while`` loop of its own inside every block iteration: the loop's control flow, and the
transform from bits to a variate that cannot fuse with it, cost more than the arithmetic. Here
the same function is written out round by round in plain ``jax.numpy`` integer operations, so
XLA fuses key derivation, hashing and the transform into one elementwise kernel.

The numbers are **identical** to ``jax.random``'s (the Threefry-2x32 hash of Salmon et al.,
"Parallel random numbers: as easy as 1, 2, 3", SC 2011, with JAX's key schedule, its
``fold_in``, its partitionable ``random_bits`` counter layout and its bits-to-float transforms);
``tests/test_rng.py`` checks them bit for bit against ``jax.random`` for every family, in
float32 and float64. A family without a transform here falls back to its own ``standard``.

Used only with JAX's default ``threefry2x32`` key implementation; for any other
(``jax.random.key(seed, impl="rbg")``) :func:`fast_standard` returns None and the caller uses
``jax.random``.
"""

from __future__ import annotations

from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax._types import Array

__all__ = ["threefry2x32", "key_data", "fold_in", "random_bits", "uniform", "TRANSFORMS",
           "fast_standard"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl(x: Array, d: int) -> Array:
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


@jax.jit
def threefry2x32(k1: Array, k2: Array, x0: Array, x1: Array) -> tuple[Array, Array]:
    """Threefry-2x32 with 20 rounds on uint32 arrays (broadcasting), unrolled; the function of
    ``jax._src.random.threefry2x32``'s primitive.

    Jitted so that a kernel traces its ~130 integer operations once per argument shape and
    process, not at every call site (a kernel calls it for every stream, level and block
    transform): XLA inlines the call before fusing, so the compiled kernel is the same."""
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    x0 = x0 + ks[0]
    x1 = x1 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = x0 ^ _rotl(x1, r)
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def key_data(keys: Array) -> Optional[Array]:
    """uint32[..., 2] raw Threefry keys of typed keys, or None for another implementation."""
    impl = jax.random.key_impl(keys)
    if "threefry2x32" not in str(impl):
        return None
    return jax.random.key_data(keys)


def fold_in(kd: Array, data) -> Array:
    """``jax.random.fold_in`` on raw keys ``kd`` (uint32[..., 2]) with uint32 ``data``."""
    data = jnp.asarray(data, jnp.uint32)
    o0, o1 = threefry2x32(kd[..., 0], kd[..., 1], jnp.zeros_like(data), data)
    return jnp.stack([o0, o1], axis=-1)


def fold_in_keys(keys: Array, data) -> Array:
    """``jax.random.fold_in(k, d)`` for typed keys ``keys`` and uint32 ``data``, broadcast
    against each other (one key and many data, or many keys and one datum): typed keys of the
    broadcast shape, the same keys as ``jax.random.fold_in``. Threefry keys are hashed by the
    unrolled :func:`threefry2x32`, which costs a program's lowering far less than
    ``jax.random``'s (it re-traces the hash at every lowering); other implementations go
    through ``jax.random.fold_in``."""
    kd = key_data(keys)
    data = jnp.asarray(data, jnp.uint32)
    if kd is None:
        shape = jnp.broadcast_shapes(keys.shape, data.shape)
        flat_k = jnp.broadcast_to(keys, shape).reshape(-1)
        flat_d = jnp.broadcast_to(data, shape).reshape(-1)
        return jax.vmap(jax.random.fold_in)(flat_k, flat_d).reshape(shape)
    return jax.random.wrap_key_data(fold_in(kd, data), impl=jax.random.key_impl(keys))


def random_bits(kd: Array, n: int, bits: int = 32) -> Array:
    """``jax.random.bits(key, (n,))`` for every raw key of ``kd`` [..., 2] -> uint[..., n]
    (JAX's partitionable layout: the 64-bit counter i as (hi, lo) words, 32-bit output
    ``hash_0 ^ hash_1``, 64-bit output ``hash_0 << 32 | hash_1``)."""
    counter = jnp.arange(n, dtype=jnp.uint32)
    h0, h1 = threefry2x32(kd[..., 0:1], kd[..., 1:2], jnp.zeros_like(counter), counter)
    if bits == 32:
        return h0 ^ h1
    return (h0.astype(jnp.uint64) << np.uint64(32)) | h1.astype(jnp.uint64)


def uniform(kd: Array, n: int, dtype, minval: float = 0.0, maxval: float = 1.0) -> Array:
    """``jax.random.uniform(key, (n,), dtype, minval, maxval)`` per raw key."""
    dtype = np.dtype(dtype)
    finfo = np.finfo(dtype)
    nbits = finfo.bits
    uint = np.uint32 if nbits == 32 else np.uint64
    raw = random_bits(kd, n, nbits)
    one = np.array(1.0, dtype).view(uint)
    float_bits = (raw >> uint(nbits - finfo.nmant)) | one
    floats = lax.bitcast_convert_type(float_bits, dtype) - jnp.array(1.0, dtype)
    lo, hi = jnp.array(minval, dtype), jnp.array(maxval, dtype)
    return jnp.maximum(lo, floats * (hi - lo) + lo)


def _laplace(kd, n, dtype):
    u = uniform(kd, n, dtype, -1.0 + np.finfo(dtype).epsneg, 1.0)
    return jnp.sign(u) * jnp.log1p(-jnp.abs(u))


def _normal(kd, n, dtype):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = uniform(kd, n, dtype, lo, 1.0)
    return jnp.array(np.sqrt(2), dtype) * lax.erf_inv(u)


def _exponential(kd, n, dtype):
    u = uniform(kd, n, dtype)
    return -jnp.log1p(-u)


def _gumbel(kd, n, dtype):
    tiny = np.finfo(dtype).tiny
    return -jnp.log(-jnp.log(uniform(kd, n, dtype, tiny, 1.0)))


TRANSFORMS: dict[str, Callable] = {"laplace": _laplace, "gaussian": _normal,
                                   "exponential": _exponential, "gumbel": _gumbel}
"""Noise family name -> ``transform(raw_keys, n, dtype)`` equal to its ``standard``."""


def fast_standard(family: type) -> Optional[Callable]:
    """The unrolled sampler of a ``svtjax.noise`` family, or None (then use ``standard``)."""
    return TRANSFORMS.get(getattr(family, "family", None))
