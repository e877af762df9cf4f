"""The engine's random numbers: block-keyed standard variates and swap partners.

A stream's position p is variate ``p % BLOCK`` of block ``p // BLOCK`` drawn from
``fold_in(stream_key, p // BLOCK)`` (pass k of a multi-pass stream starts on block
``k · ⌈n/BLOCK⌉``), so the number at a position depends only on (trial key, stream, position).
With raw Threefry key data the numbers come from the unrolled sampler of ``svtjax._rng`` (the
same numbers as ``jax.random``, cheaper to stage and fused into one kernel).
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax import _rng
from svtjax._core import Draws
from svtjax._types import Array, DTypeLike, Key
from svtjax.engine import platform as _platform
from svtjax.engine.layout import Layout, pad_last
from svtjax.mechanisms.base import (
    BLOCK,
    _mulhi32,
    block_order,
    block_variates,
    num_blocks,
    stream_id,
    stream_key,
    stream_order,
    stream_variates,
)

__all__ = ["draw", "initial_variates", "lazy_block", "once", "block_draws", "fast_block_order",
           "sliced_block", "families"]


def families(streams: dict) -> dict:
    return {name: type(noise) for name, noise in streams.items()}


def pass_variates(skey: Key, n: int, passes: int, standard, dtype) -> Array:
    """float[passes * n]: position k·n + i comes from block k·nb + i // BLOCK (nb blocks per
    pass), so every pass starts on a block boundary. One pass is ``stream_variates``."""
    if passes == 1:
        return stream_variates(skey, n, standard, dtype)
    blocks = jax.vmap(lambda g: block_variates(skey, g, standard, dtype))(
        jnp.arange(passes * num_blocks(n)))
    return passes_of(blocks, n, passes)


def passes_of(blocks: Array, n: int, passes: int) -> Array:
    """float[passes * n] from a stream's blocks [passes · nb, BLOCK] (each pass starts on a
    block boundary and uses its first n positions)."""
    return blocks.reshape(passes, -1)[:, :n].reshape(-1)


def initial_variates(keys: Key, kd: Optional[Array], name: str, family, dtype) -> Array:
    """``family.standard(stream_key(key, name), (), dtype)`` for every key of ``keys`` (any
    batch shape). With their raw Threefry key data ``kd`` (uint32[..., 2]) and a family that
    has an unrolled sampler, computed by ``svtjax._rng`` (the same numbers, ``tests/
    test_rng.py``): that stages as plain integer operations, where ``jax.random``'s
    ``fold_in`` and ``random_bits`` re-trace and lower the hash at every lowering of a
    program."""
    fast = _rng.fast_standard(family)
    if kd is not None and fast is not None:
        return fast(_rng.fold_in(kd, np.uint32(stream_id(name))), 1, dtype)[..., 0]
    one = lambda k: family.standard(stream_key(k, name), (), dtype)  # noqa: E731
    for _ in range(jnp.ndim(keys)):
        one = jax.vmap(one)
    return one(keys)


def draw(mech, key: Key, n: int, *, shuffle: bool, dtype: DTypeLike) -> Draws:
    """Every random number of one trial on a stream of ``n`` queries (standard variates):
    stream ``name``'s position k·n + i (pass k) from block k·nb + i // BLOCK of
    ``stream_key(key, name)``, as :func:`svtjax.mechanisms.base.stream_variates` and
    ``stream_order`` define them; with a Threefry key through ``svtjax._rng``'s unrolled
    sampler (:func:`initial_variates`), the same numbers as the lazy engine draws."""
    kd = _rng.key_data(key)
    out = {name: initial_variates(key, kd, name, family, dtype)
           for name, family in families(mech.initial_streams()).items()}
    nb = num_blocks(n)
    for name, family in families(mech.streams()).items():
        fast = _rng.fast_standard(family)
        if kd is None or fast is None:
            out[name] = pass_variates(stream_key(key, name), n, mech.passes(),
                                      family.standard, dtype)
            continue
        skd = _rng.fold_in(kd, np.uint32(stream_id(name)))
        blocks = fast(_rng.fold_in(skd[None, :], jnp.arange(mech.passes() * nb,
                                                            dtype=jnp.uint32)), BLOCK, dtype)
        out[name] = passes_of(blocks, n, mech.passes())
    if shuffle:
        if kd is None:
            out["order"] = stream_order(stream_key(key, "order"), n).astype(jnp.int32)
        else:
            okd = _rng.fold_in(kd, np.uint32(stream_id("order")))
            out["order"] = fast_block_order(okd[None, :], jnp.arange(nb, dtype=jnp.int32),
                                            n)[0].reshape(-1)[:n]
    return Draws(out)


def lazy_block(mech, lay: Layout, keys: dict, k, j, dtype, made_once: bool,
               draw_once: bool) -> dict:
    """:func:`block_draws`, made once per block (``made_once``: the platform draws once and
    the rule runs its block form; a rule run by ``lax.scan`` reads its draws from one buffer
    anyway). ``draw_once``: the platform's :attr:`~svtjax.engine.platform.Platform.draw_once`.

    The predicate ``j >= 0`` always holds, but XLA cannot prove it, so the conditional stays
    and its other branch (zeros of the same shapes) never runs."""
    draws = lambda: block_draws(mech, lay, keys, k, j, dtype, draw_once)  # noqa: E731
    return once(draws, j, draw_once) if made_once else draws()


def once(fn, witness, enabled: Optional[bool] = None):
    """``fn()``, computed inside a conditional on ``witness >= 0`` (a traced int that is never
    negative) where ``enabled`` (None: JAX's default backend is in
    :data:`~svtjax.engine.platform.DRAW_ONCE`), so that its result is materialised once
    instead of being recomputed inside each of its consumers' fusions.

    The witness passes through an ``optimization_barrier`` first: a stream of one block runs a
    block loop of one iteration, which XLA replaces by its body, and the block index is then the
    constant 0; without the barrier XLA folded ``0 >= 0``, removed the conditional and hashed
    the block in every consumer again (``tests/test_rng.py`` counts the copies)."""
    if enabled is None:
        enabled = jax.default_backend() in _platform.DRAW_ONCE
    if not enabled:
        return fn()
    shapes = jax.eval_shape(fn)
    return lax.cond(lax.optimization_barrier(jnp.asarray(witness)) >= 0, fn,
                    lambda: jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes))


def block_draws(mech, lay: Layout, keys: dict, k, j, dtype,
                draw_once: Optional[bool] = None) -> dict:
    """Standard variates of processing block j of pass k, for every stream: name -> [B, W].

    ``keys``: stream name -> the batch's stream keys, as raw Threefry key data uint32[B, 2]
    (drawn with the unrolled Threefry of ``svtjax._rng``: the same numbers as ``jax.random``,
    fused into one kernel) or as typed keys (any other key implementation: ``jax.random``)."""
    out = {}
    first = k * lay.nb + j * lay.per
    sub = jnp.arange(lay.per, dtype=jnp.uint32)
    for name, family in families(mech.streams()).items():
        fast = _rng.fast_standard(family)
        skeys = keys[name]
        if fast is not None and skeys.dtype == jnp.uint32:
            kd = _rng.fold_in(skeys[:, None, :], (first + sub).astype(jnp.uint32)[None, :])
            out[name] = fast(kd, lay.drawn, dtype).reshape(skeys.shape[0], lay.width)
            continue
        if skeys.dtype == jnp.uint32:
            skeys = jax.random.wrap_key_data(skeys)

        def one(skey, family=family):
            blocks = jax.vmap(lambda s: block_variates(skey, first + s, family.standard, dtype))(
                jnp.arange(lay.per))
            return blocks[:, :lay.drawn].reshape(-1)
        out[name] = jax.vmap(one)(skeys)
    if "order" in keys:
        out["order"] = order_draws(lay, keys["order"], j, draw_once)
    return out


def order_draws(lay: Layout, okeys, j, draw_once: Optional[bool] = None) -> Array:
    """Swap partners of processing block j (first pass): int32[B, W]."""
    sub = jnp.arange(lay.per, dtype=jnp.int32)
    if okeys.dtype == jnp.uint32:
        return fast_block_order(okeys, j * lay.per + sub, lay.n, lay.drawn,
                                draw_once).reshape(okeys.shape[0], lay.width)

    def order(skey):
        blocks = jax.vmap(lambda s: block_order(skey, j * lay.per + s, lay.n))(sub)
        return blocks[:, :lay.drawn].reshape(-1)
    return jax.vmap(order)(okeys)


def fast_block_order(kd: Array, b: Array, n: int, drawn: int = BLOCK,
                     draw_once: Optional[bool] = None) -> Array:
    """:func:`svtjax.mechanisms.base.block_order` for raw stream keys ``kd`` uint32[B, 2] and
    block indices ``b`` int32[m]: int32[B, m, drawn], the first ``drawn`` positions of each
    block, the same numbers (Lemire's method on ``jax.random.bits``' words, one counter per
    position, a rejected word redrawn from ``fold_in(block key, r)``). ``draw_once``: as
    :func:`once`'s ``enabled``."""
    bkd = _rng.fold_in(kd[:, None, :], b.astype(jnp.uint32)[None, :])  # [B, m, 2]
    pos = b[None, :, None] * BLOCK + jnp.arange(drawn, dtype=jnp.int32)
    span = jnp.maximum(n - pos, 1).astype(jnp.uint32)
    floor = (jnp.uint32(0) - span) % span

    def attempt(key_data):
        high, low = _mulhi32(_rng.random_bits(key_data, drawn), span)
        return high, low < floor

    def redraw(carry):
        r, value, rejected = carry
        high, again = attempt(_rng.fold_in(bkd, r.astype(jnp.uint32)))
        return r + 1, jnp.where(rejected, high, value), rejected & again

    def packed(key_data):  # one output: with two, XLA's CPU fusion hashed in each one's fusion
        high, rejected = attempt(key_data)  # high < span <= 2**31 - 1: bit 31 is free
        return high | (rejected.astype(jnp.uint32) << 31)

    first = once(lambda: packed(bkd), b[0], draw_once)  # the hash once, for both outputs
    value, rejected = first & jnp.uint32(2**31 - 1), (first >> 31) == 1
    _, value, _ = lax.while_loop(lambda c: jnp.any(c[2]), redraw, (jnp.int32(1), value, rejected))
    j = pos + value.astype(jnp.int32)
    return jnp.where(pos < n, j, pos)


def sliced_block(lay: Layout, draws: dict, k, j) -> dict:
    """Processing block j of pass k of pre-drawn (batched) draws: name -> [B, W]."""
    out = {}
    for name, x in draws.items():
        if name == "order":
            pos = jnp.arange(lay.n_pad, dtype=jnp.int32)
            full = jnp.where(pos < lay.n, pad_last(x.astype(jnp.int32), lay.n_pad), pos)
            out[name] = lax.dynamic_slice_in_dim(full, j * lay.width, lay.width, axis=1)
            continue
        x = pad_last(x.reshape(x.shape[:-1] + (lay.passes, lay.n)), lay.n_pad)
        x = x.reshape(x.shape[:-2] + (lay.passes * lay.n_pad,))
        out[name] = lax.dynamic_slice_in_dim(x, k * lay.n_pad + j * lay.width, lay.width, axis=1)
    if lay.passes * lay.npb == 1:
        # A stream of one block: its slice is the whole of the draws, the same in every
        # iteration of the block loop, so XLA hoisted the scaling s·z out of the loop (into the
        # draws' fusion) while a shuffled block's gathered query q[item] stays in it; q + s·z
        # was then a rounded product and a sum, not the fused multiply-add that the lazy run
        # (whose draws depend on the block index) computes. Tied to the loop's block index
        # (k = g here), the draws are no longer loop-invariant and are scaled next to the sum.
        out = lax.optimization_barrier((out, k, j))[0]
    return out
