"""How a stream is cut into the engine's processing blocks, and the per-trial output buffers.

A stream's position p is variate ``p % BLOCK`` of RNG block ``p // BLOCK``; the engine
processes ``width`` positions per loop iteration (a multiple of BLOCK, or one narrow block for a
stream of a few queries). Pass k of a multi-pass stream starts on RNG block ``k · ⌈n/BLOCK⌉``.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax.numpy as jnp
from jax import lax

from svtjax._types import Array
from svtjax.engine.platform import NARROW, Platform, block_width, round_up
from svtjax.mechanisms.base import BLOCK, num_blocks

__all__ = ["Layout", "layout", "pad_last", "put_block", "get_block"]


class Layout(NamedTuple):
    n: int  # items
    passes: int
    width: int  # positions per processing block
    nb: int  # RNG blocks per pass
    per: int  # RNG blocks per processing block
    npb: int  # processing blocks per pass
    n_pad: int  # npb * width

    @property
    def length(self) -> int:  # the Outcome length L
        return self.n * self.passes

    @property
    def buffer(self) -> int:  # output buffers: L, or one processing block when L is shorter
        return max(self.length, self.width)

    @property
    def drawn(self) -> int:  # variates drawn per RNG block: BLOCK, or a narrow block's width
        return min(self.width, BLOCK)


def layout(mech, n: int, width: Optional[int] = None,
           config: Optional[Platform] = None) -> Layout:
    """The processing layout of a stream of ``n`` queries: ``width`` positions per loop
    iteration (default: the platform's, :meth:`Platform.block_width` of ``config``, else
    :func:`~svtjax.engine.platform.block_width` of JAX's default backend): a multiple of BLOCK,
    at most the stream's blocks; for a stream shorter than BLOCK, a width below BLOCK is rounded
    up to a multiple of :data:`NARROW` that covers the stream (one block)."""
    if not width:
        width = block_width(n) if config is None else config.block_width(n)
    elif n < BLOCK and int(width) < BLOCK:
        width = max(round_up(max(n, 1), NARROW), round_up(int(width), NARROW))
    else:
        width = max(BLOCK, min(int(width), BLOCK * num_blocks(n)))
    if width % BLOCK and width > BLOCK:
        raise ValueError(f"the block width must be a multiple of {BLOCK}; got {width}")
    nb = num_blocks(n)
    per = max(1, width // BLOCK)
    npb = -(-nb // per)
    return Layout(n, mech.passes(), width, nb, per, npb, npb * width)


def pad_last(x: Array, size: int, fill=0) -> Array:
    pad = size - x.shape[-1]
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, pad)], constant_values=fill)


def put_block(buf: Array, blk: Array, at, in_pass, n: int) -> Array:
    """Writes ``blk[k]`` to ``buf[at + k]`` for the k with ``in_pass + k < n`` (the positions
    of the block that lie in its pass); the rest of ``buf`` is unchanged.

    Buffers hold exactly the L = passes × n positions of the Outcome (no padding, so nothing is
    copied to trim them afterwards), so a pass's last block may reach past the end of its pass
    or of the buffer. It is written as one ``dynamic_update_slice`` of W slots starting at
    ``min(at, len(buf) - W)``, each slot taking the block's value or keeping its old one.
    """
    width = blk.shape[0]
    start = jnp.minimum(at, buf.shape[0] - width)
    shift = at - start  # > 0 only for a block that would run past the end of the buffer
    slot = jnp.arange(width, dtype=jnp.int32)
    blk = blk.astype(buf.dtype)
    shifted = lax.dynamic_slice_in_dim(jnp.concatenate([blk, blk]), width - shift, width)
    fresh = (slot >= shift) & (in_pass + slot - shift < n)
    old = lax.dynamic_slice_in_dim(buf, start, width)
    return lax.dynamic_update_slice_in_dim(buf, jnp.where(fresh, shifted, old), start, axis=0)


def get_block(buf: Array, at, in_pass, n: int, width: int, fill) -> Array:
    """``buf[at + k]`` for k < W where ``in_pass + k < n``, else ``fill`` (the read that matches
    :func:`put_block`)."""
    k = jnp.arange(width, dtype=jnp.int32)
    vals = buf[jnp.clip(at + k, 0, buf.shape[0] - 1)]
    return jnp.where(in_pass + k < n, vals, jnp.asarray(fill, buf.dtype))
