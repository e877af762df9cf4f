"""The lazy Fisher–Yates shuffle of the engine (``shuffle=True``).

Block b applies the swaps of its own positions only, so a trial that halts early never pays for
the rest of the permutation and the items it visits are exactly the prefix of the full shuffle.
Three implementations make the same swaps in the same order: the pure-JAX block (flat unsigned
addressing), its (position, trial) form for permutations of 2**32 entries or more, and the
compiled CPU block of :mod:`svtjax._native` (one trial per row), with its prefix kernel that
makes a trial's first positions before the block loop.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax import _native
from svtjax._types import Array
from svtjax.engine.layout import Layout
from svtjax.engine.platform import Platform, resolve
from svtjax.mechanisms.base import BLOCK

__all__ = ["Shuffle", "perm_dtype", "shuffle_init", "shuffle_prefix", "fisher_yates_prefix",
           "take_shuffle", "fisher_yates_block"]


class Shuffle(NamedTuple):
    """Batch-level Fisher–Yates state: the permutations and one pending write per trial.

    Pure JAX (``slot`` None): the permutation is stored transposed, ``[n_pad, batch]``, so that
    reading position p for every trial is one contiguous row, and as int16 when n_pad < 2**15:
    the random accesses of a swap then touch half the cache lines (faster than int32
    row-major on a CPU). The compaction takes its columns.

    Compiled block (:mod:`svtjax._native`, CPU): one trial per row, ``[rows, n_pad]``, and batch
    row b reads row ``slot[b]``: the compaction takes only ``slot`` (never a permutation), and a
    trial's swaps stay within its own row. After :func:`fisher_yates_prefix`, ``keys`` holds
    each row's raw "order" stream key, from which the compiled block draws the swap partners of
    the positions past the prefix itself.
    """

    perm: Array  # int16/int32[n_pad, batch], or [rows, n_pad] with slot
    j: Array  # int32[batch]: position of the pending write
    a: Array  # [batch]: value of the pending write
    slot: Optional[Array] = None  # int32[batch]: row of perm (compiled block only)
    keys: Optional[Array] = None  # uint32[rows, 2]: each row's raw "order" key (after a prefix)


def perm_dtype(n_pad: int):
    return jnp.int16 if n_pad < 2**15 else jnp.int32


def shuffle_init(batch: int, n_pad: int, native: Optional[bool] = None,
                 n: Optional[int] = None) -> Shuffle:
    """The identity permutations, in the compiled block's layout where it runs (``native``
    None: :func:`svtjax._native.fisher_yates_target` decides). The compiled block's rows are
    ``n`` long (default ``n_pad``): with the stream's own length they serve as the Outcome's
    items without a copy (positions past the stream, whose partners are themselves, store
    nothing; partners drawn anywhere else in ``[n, n_pad)`` would be dropped, so only the
    engine's own draws may use it)."""
    dtype = perm_dtype(n_pad)
    if native is None:
        native = _native.fisher_yates_target() is not None
    if native:
        row = n_pad if n is None else n
        perm = jnp.broadcast_to(jnp.arange(row, dtype=dtype)[None, :], (batch, row))
        return Shuffle(perm, jnp.zeros((batch,), jnp.int32), jnp.zeros((batch,), dtype),
                       jnp.arange(batch, dtype=jnp.int32))
    perm = jnp.broadcast_to(jnp.arange(n_pad, dtype=dtype)[:, None], (n_pad, batch))
    return Shuffle(perm, jnp.zeros((batch,), jnp.int32), perm[0])


def shuffle_prefix(lay: Layout, config: Optional[Platform] = None) -> int:
    """The positions :func:`fisher_yates_prefix` makes for a stream of this layout: the
    platform's :data:`~svtjax.engine.platform.SHUFFLE_PREFIX` (``config``; None: JAX's default
    backend's), at most half the stream (a short stream's rows stay in the caches anyway, and
    its trials may halt early), in whole processing blocks; 0 where none applies."""
    if config is None:
        config = resolve()
    if lay.width % BLOCK or lay.drawn != BLOCK:
        return 0
    return min(config.shuffle_prefix, lay.n // 2) // lay.width * lay.width


def fisher_yates_prefix(okeys: Array, n: int, prefix: int, dtype) -> Shuffle:
    """The state of the compiled block's lazy shuffle (``write_items``) after positions
    0 .. prefix − 1 of every trial, each row's first ``prefix`` positions holding its items:
    the state that the blocks of :func:`fisher_yates_block` reach from :func:`shuffle_init`
    with the partners of :func:`fast_block_order`, computed trial by trial in one call of the
    compiled prefix kernel (:mod:`svtjax._native`, CPU), which draws the partners itself.

    ``okeys``: uint32[B, 2], the trials' raw "order" stream keys; rows ``n`` long."""
    batch = okeys.shape[0]
    perm, j, a = jax.ffi.ffi_call(
        _native.FISHER_YATES_PREFIX_TARGET,
        (jax.ShapeDtypeStruct((batch, n), dtype), jax.ShapeDtypeStruct((batch,), jnp.int32),
         jax.ShapeDtypeStruct((batch,), dtype)),
        vmap_method="broadcast_all",
    )(okeys, prefix=np.int64(prefix))
    return Shuffle(perm, j, a, jnp.arange(batch, dtype=jnp.int32), okeys)


def take_shuffle(fy: Optional[Shuffle], idx: Array) -> Optional[Shuffle]:
    if fy is None:
        return None
    if fy.slot is not None:
        return Shuffle(fy.perm, fy.j[idx], fy.a[idx], fy.slot[idx], fy.keys)
    return Shuffle(jnp.take(fy.perm, idx, axis=1), fy.j[idx], fy.a[idx])


def fisher_yates_block(fy: Shuffle, order: Optional[Array], start,
                       done: Optional[Array] = None, write_items: bool = False, made: int = 0,
                       width: Optional[int] = None) -> tuple[Shuffle, Array]:
    """Applies the swaps of positions ``start .. start + W − 1`` (``order``: int[batch, W]) for a
    batch; returns the state and the items at those positions, int32[batch, W].

    ``order`` None (compiled block with ``fy.keys``, after :func:`fisher_yates_prefix`): the
    kernel draws the partners of the ``width`` positions itself from each row's key, the numbers
    of :func:`fast_block_order` (``tests/test_native.py``), so that the engine's loop computes no
    partners of its own (a conditional, a hash and Lemire's redraw loop per block and level).

    ``done`` (bool[batch], optional): trials that have halted, whose items are never read
    again; the compiled block skips them (their items come back 0), the pure-JAX block, whose
    swaps are vectorised over the batch, ignores it. ``write_items`` (static; compiled block
    only): also set each visited position to its item (see ``svtjax/_native/kernels.cc``),
    for partners that never point before their position. ``made`` (static; compiled block
    only): positions made already by :func:`fisher_yates_prefix`; a block before it reads its
    items from the rows and keeps the state (``order`` is then not read).

    Step p swaps perm[p] and perm[j_p]; position p is never touched again, so only the write to
    perm[j_p] matters. That write is deferred to the next step: a scatter whose update does not
    depend on a gather from the same buffer in the same iteration stays in place on XLA's CPU
    backend (otherwise every step copies the whole permutation).

    The permutation is addressed flat, with unsigned indices j·batch + trial computed for the
    whole block before the loop, so a step is one scatter, one gather, one contiguous read and
    one row write, with no per-step index arithmetic. Indices outside the permutation
    (impossible for ``Draws`` made by ``draw``) are dropped on write and read as 0, so hand-made
    ``Draws`` passed to ``decide`` can never write outside it.
    """
    if fy.slot is not None:
        return _fisher_yates_block_native(fy, order, start, done, write_items, made, width)
    if order is None:
        raise ValueError("the pure-JAX Fisher–Yates block needs its partners (order)")
    n_pad, batch = fy.perm.shape
    width = order.shape[1]
    size = n_pad * batch
    if size >= 2**32:  # flat unsigned indices would overflow
        return _fisher_yates_block_2d(fy, order, start)
    cols = jnp.arange(batch, dtype=jnp.uint32)

    def flat(j):
        j = j.astype(jnp.int32)
        inside = (j >= 0) & (j < n_pad)
        return jnp.where(inside, j.astype(jnp.uint32) * jnp.uint32(batch) + cols,
                         jnp.uint32(size))

    # Row k + 1 addresses step k's swap partner; row 0 is the write still pending from the
    # previous block.
    at = jnp.concatenate([flat(fy.j)[None], flat(order.T)], axis=0)

    def step(k, carry):
        perm, a, items = carry
        perm = perm.at[at[k]].set(a, mode="drop", unique_indices=True)
        item = perm.at[at[k + 1]].get(mode="fill", fill_value=0)
        row = (start + k).astype(jnp.uint32) * jnp.uint32(batch)
        a = lax.dynamic_slice_in_dim(perm, row, batch)
        items = lax.dynamic_update_index_in_dim(items, item, k, axis=0)
        return perm, a, items

    items = jnp.zeros((width, batch), fy.perm.dtype)
    perm, a, items = lax.fori_loop(0, width, step, (fy.perm.reshape(-1), fy.a, items))
    fy = Shuffle(perm.reshape(n_pad, batch), order[:, -1].astype(jnp.int32), a)
    return fy, items.T.astype(jnp.int32)


def _fisher_yates_block_native(fy: Shuffle, order: Optional[Array], start,
                               done: Optional[Array] = None, write_items: bool = False,
                               made: int = 0, width: Optional[int] = None
                               ) -> tuple[Shuffle, Array]:
    """:func:`fisher_yates_block` as one call of the compiled CPU block (:mod:`svtjax._native`),
    on the one-trial-per-row state: the same swaps in the same order, for the trials not
    ``done``; ``order`` None: the partners drawn by the kernel from ``fy.keys``."""
    batch = fy.j.shape[0]
    if done is None:
        done = jnp.zeros((batch,), bool)
    draw = order is None
    if draw:
        if fy.keys is None or width is None or width % BLOCK:
            raise ValueError("partners drawn by the compiled block need the rows' keys "
                             "(fisher_yates_prefix) and a width that is a multiple of BLOCK")
        keys, order_in = fy.keys, jnp.zeros((batch, 1), jnp.int32)  # order is not read
    else:
        width = order.shape[1]
        keys, order_in = jnp.zeros((1, 2), jnp.uint32), order.astype(jnp.int32)  # not read
    perm, items, a, drawn_j = jax.ffi.ffi_call(
        _native.FISHER_YATES_TARGET,
        (jax.ShapeDtypeStruct(fy.perm.shape, fy.perm.dtype),
         jax.ShapeDtypeStruct((batch, width), jnp.int32),
         jax.ShapeDtypeStruct(fy.a.shape, fy.perm.dtype),
         jax.ShapeDtypeStruct((batch,), jnp.int32)),
        input_output_aliases={0: 0}, vmap_method="broadcast_all",
    )(fy.perm, fy.slot, fy.j, fy.a, order_in, jnp.asarray(start, jnp.int32),
      jnp.asarray(done, bool), keys, write_items=np.bool_(write_items), made=np.int64(made),
      draw=np.bool_(draw))
    if draw:
        j = drawn_j  # the last partner where the block swapped, the pending position elsewhere
    else:
        j = order[:, -1].astype(jnp.int32)
        if made:
            j = jnp.where(jnp.asarray(start) < made, fy.j, j)
    return Shuffle(perm, j, a, fy.slot, fy.keys), items


def _fisher_yates_block_2d(fy: Shuffle, order: Array, start) -> tuple[Shuffle, Array]:
    """:func:`fisher_yates_block` with (position, trial) indices, for permutations of 2**32
    entries or more."""
    cols = jnp.arange(order.shape[0])
    width = order.shape[1]

    def step(k, carry):
        fy, items = carry
        perm = fy.perm.at[fy.j, cols].set(fy.a, mode="drop")
        j = order[:, k].astype(jnp.int32)
        item = perm.at[j, cols].get(mode="clip")
        a = lax.dynamic_index_in_dim(perm, start + k, axis=0, keepdims=False)
        items = lax.dynamic_update_index_in_dim(items, item, k, axis=0)
        return Shuffle(perm, j, a), items

    items = jnp.zeros((width, order.shape[0]), fy.perm.dtype)
    fy, items = lax.fori_loop(0, width, step, (fy, items))
    return fy, items.T.astype(jnp.int32)
