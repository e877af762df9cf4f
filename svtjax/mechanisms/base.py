"""Mechanism base class, the registry, and block-wise random streams.

Randomness layout (DESIGN.md, "Rules that keep it fast"): a trial key is split into named
streams with ``fold_in(key, STREAM[name])``; position ``p`` of a stream comes from block
``p // BLOCK``, drawn as ``standard(fold_in(stream_key, p // BLOCK), (BLOCK,))[p % BLOCK]``.
The number at a position therefore depends only on (trial key, stream, position): a kernel that
stops after a few blocks reads exactly the numbers a full scan would, so early exit never changes
an outcome.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax import _validate
from svtjax._core import Draws, Outcome
from svtjax._types import Array, DTypeLike, Key

__all__ = ["BLOCK", "STREAM", "Mechanism", "register", "get", "names", "registry",
           "stream_key", "block_variates", "stream_variates", "block_order", "stream_order"]

BLOCK = 64
"""Positions per random block. Part of the numbers' definition: changing it changes outcomes."""

STREAM = {"threshold": 0, "query": 1, "refresh": 2, "answer": 3, "order": 4, "query2": 5}

_REGISTRY: dict[str, type["Mechanism"]] = {}


def stream_key(key: Key, name: str) -> Key:
    return jax.random.fold_in(key, STREAM[name])


def num_blocks(length: int) -> int:
    return max(1, math.ceil(length / BLOCK))


def block_variates(skey: Key, b, standard: Callable, dtype: DTypeLike) -> Array:
    """Standard variates for positions ``b*BLOCK .. b*BLOCK+BLOCK-1`` of one stream."""
    return standard(jax.random.fold_in(skey, b), (BLOCK,), dtype)


def stream_variates(skey: Key, length: int, standard: Callable, dtype: DTypeLike) -> Array:
    """All ``length`` variates of one stream (the concatenation of its blocks)."""
    blocks = jax.vmap(lambda b: block_variates(skey, b, standard, dtype))(
        jnp.arange(num_blocks(length)))
    return blocks.reshape(-1)[:length]


def _mulhi32(a: Array, r: Array) -> tuple[Array, Array]:
    """(high, low) 32-bit words of the 64-bit product a·r of uint32 arrays, with r < 2**31,
    in 16-bit limbs (uint32 arithmetic only, so it needs no x64 and vectorises)."""
    m16 = jnp.uint32(0xFFFF)
    a1, a0 = a >> 16, a & m16
    r1, r0 = r >> 16, r & m16
    low_low, mid1, mid2 = a0 * r0, a1 * r0, a0 * r1  # each < 2**32
    carry = (low_low >> 16) + (mid1 & m16) + (mid2 & m16)
    high = a1 * r1 + (mid1 >> 16) + (mid2 >> 16) + (carry >> 16)
    return high, a * r


def bounded_uniform(key: Key, span: Array) -> Array:
    """Integers exactly uniform on {0, ..., span-1}, elementwise (int32 ``span`` in [1, 2**31)).

    Lemire's multiply-and-reject method (D. Lemire, "Fast random integer generation in an
    interval", ACM TOMACS 29(1), 2019): for a uniform 32-bit word X, the product X·span has
    high word ⌊X·span/2**32⌋ and low word X·span mod 2**32; rejecting the X whose low word is
    below 2**32 mod span leaves exactly ⌊2**32/span⌋ words for every value of the high word, so
    the accepted high word is exactly uniform. A rejected element (probability below
    span/2**32, 2.3e-6 for span = 10^4) takes the next word of its own sequence: attempt r ≥ 1
    draws from ``fold_in(key, r)``, so every element's value depends only on ``key`` and its
    index. One 32-bit word per draw — half the random bits of a 64-bit product and none of
    ``jax.random.randint``'s integer remainders (the dearest part of a shuffled run on a CPU).
    """
    span = jnp.asarray(span, jnp.int32).astype(jnp.uint32)
    floor = (jnp.uint32(0) - span) % span  # 2**32 mod span: the rejected low words

    def attempt(k):
        high, low = _mulhi32(jax.random.bits(k, span.shape, jnp.uint32), span)
        return high, low < floor

    def redraw(carry):
        r, value, rejected = carry
        high, again = attempt(jax.random.fold_in(key, r))
        return r + 1, jnp.where(rejected, high, value), rejected & again

    value, rejected = attempt(key)
    _, value, _ = lax.while_loop(lambda c: jnp.any(c[2]), redraw, (jnp.int32(1), value, rejected))
    return value.astype(jnp.int32)


def block_order(skey: Key, b, n: int) -> Array:
    """Fisher–Yates swap indices for the positions of block ``b``.

    Position p (< n) gets j_p uniform on {p, ..., n-1} (:func:`bounded_uniform`); positions past
    the stream get j_p = p.
    """
    pos = b * BLOCK + jnp.arange(BLOCK, dtype=jnp.int32)
    j = pos + bounded_uniform(jax.random.fold_in(skey, b), jnp.maximum(n - pos, 1))
    return jnp.where(pos < n, j, pos)


def stream_order(skey: Key, n: int) -> Array:
    blocks = jax.vmap(lambda b: block_order(skey, b, n))(jnp.arange(num_blocks(n)))
    return blocks.reshape(-1)[:n]


class Mechanism:
    """Base class of every registered mechanism (a frozen pytree dataclass).

    Subclasses set ``name``, declare numeric parameters as fields (traced leaves) and structural
    choices with ``static_field`` and implement ``draw``, ``decide``, ``privacy`` and
    ``stream_length``; ``__call__`` defaults to ``decide(draw(key, n), ...)``.
    """

    name: ClassVar[str] = ""
    draws_by_block: ClassVar[bool] = False
    """True for kernels that draw noise one block of positions at a time (the SVT engine), so
    ``simulate`` sizes chunks without counting whole-stream draws."""

    # -- contract -------------------------------------------------------------------------
    def __call__(self, key: Key, queries, thresholds) -> Outcome:
        """One trial: ``decide(draw(key, n), queries, thresholds)`` (possibly computed lazily)."""
        q, t = self._prepare(queries, thresholds)
        return self.decide(self.draw(key, q.shape[0], dtype=q.dtype), q, t)

    def draw(self, key: Key, n: int, *, shuffle: bool = False, dtype: DTypeLike = None) -> Draws:
        raise NotImplementedError

    def decide(self, draws: Draws, queries, thresholds) -> Outcome:
        raise NotImplementedError

    def privacy(self):
        raise NotImplementedError

    def stream_length(self, n: int) -> int:
        """Length L of the Outcome arrays for ``n`` queries."""
        return n

    # -- batched entry used by ``simulate`` -----------------------------------------------
    def run_batch(self, keys: Key, queries: Array, thresholds: Array, *, shuffle: bool
                  ) -> Outcome:
        """Runs a batch of trials (leading axis of ``keys``); overridden by fast kernels."""
        def one(key):
            return self.decide(self.draw(key, queries.shape[0], shuffle=shuffle,
                                         dtype=queries.dtype), queries, thresholds)
        return jax.vmap(one)(keys)

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _prepare(queries, thresholds) -> tuple[Array, Array]:
        from svtjax._pytree import is_concrete

        if is_concrete((queries, thresholds)):
            q = _validate.finite_vector("queries", queries)
            t = _validate.thresholds_like("thresholds", thresholds, q.shape[0])
        q = jnp.asarray(queries)
        if not jnp.issubdtype(q.dtype, jnp.floating):
            q = q.astype(jnp.zeros((), float).dtype)
        t = jnp.broadcast_to(jnp.asarray(thresholds, q.dtype), q.shape)
        return q, t

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in _public_fields(type(self))}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{self.name}({args})"


def register(cls: type[Mechanism]) -> type[Mechanism]:
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no registry name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"registry name {cls.name!r} is already taken by "
                         f"{_REGISTRY[cls.name].__name__}")
    _REGISTRY[cls.name] = cls
    return cls


def names() -> list[str]:
    """Registered mechanism names."""
    return list(_REGISTRY)


def registry() -> dict[str, type[Mechanism]]:
    return dict(_REGISTRY)


def parameters(name: str) -> dict[str, Any]:
    """The parameters ``get(name, ...)`` accepts, with their defaults (``REQUIRED`` if none)."""
    cls = _lookup(name)
    out = {}
    for f in _public_fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
        else:
            out[f.name] = "REQUIRED"
    return out


def _public_fields(cls) -> list:
    return [f for f in dataclasses.fields(cls) if not f.name.startswith("_")]


def _lookup(name: str) -> type[Mechanism]:
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"unknown mechanism {name!r}; registered mechanisms are: "
                         f"{', '.join(names())}")
    return _REGISTRY[name]


def get(name: str, **params: Any) -> Mechanism:
    """Builds the mechanism registered as ``name`` with the given parameters.

    Raises:
      ValueError: unknown name (the message lists the registry) or a parameter out of range.
      TypeError: a parameter the mechanism does not take (the message lists the valid ones).
    """
    cls = _lookup(name)
    valid = [f.name for f in _public_fields(cls)]
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise TypeError(f"{name} does not take parameter(s) {unknown}; valid parameters are: "
                        f"{', '.join(valid)}")
    missing = [k for k, v in parameters(name).items() if v == "REQUIRED" and k not in params]
    if missing:
        raise TypeError(f"{name} requires parameter(s) {missing}")
    return cls(**params)


def to_numpy_draws(draws: Draws) -> Draws:
    """``Draws`` as numpy arrays (what ``svtjax.reference`` consumes)."""
    return Draws(*(None if x is None else np.asarray(x) for x in draws))
