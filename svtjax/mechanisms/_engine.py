"""The one engine every threshold mechanism runs on (``docs/architecture.md``).

A mechanism supplies a rule (:class:`svtjax.mechanisms.ThresholdMechanism`: streams, state,
step, halting, optionally a block form); this module runs it for a batch of trials:

* **Block-keyed draws.** A stream's position p is variate ``p % BLOCK`` of block ``p // BLOCK``
  drawn from ``fold_in(stream_key, p // BLOCK)`` (pass k of a multi-pass stream starts on block
  ``k · ⌈n/BLOCK⌉``), so the number at a position depends only on (trial key, stream, position).
  The engine processes ``width`` positions per loop iteration (a multiple of BLOCK chosen per
  platform, or one narrow block for a stream of a few queries: :func:`block_width`); that
  choice never changes a number.
* **Early exit with compaction.** A ``lax.while_loop`` over blocks ends once every trial has
  halted; when at most 1/8 of the trials still run they are gathered into a smaller batch
  (``svtjax._loops``). Noise is drawn only for the blocks reached.
* **The lazy Fisher–Yates shuffle** (``shuffle=True``): block b applies the swaps of its own
  positions only, so a trial that halts early never pays for the rest of the permutation and
  the items it visits are exactly the prefix of the full shuffle.
* **Retraversal passes** (``passes() > 1``): pass k revisits, in the first pass's order, the
  items not answered ⊤ in passes before it; **caps** (``cap()``): positions at or past the cap
  are not evaluated.
* **The rule, vectorised or scanned.** Within a block the rule's ``block`` form runs where it
  has one (and ``vectorized``), else ``lax.scan`` of its ``step`` with the engine's masking: a
  position is evaluated iff it is valid and the trial has not halted before it.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax import _loops, _native, _rng
from svtjax._core import Draws, Outcome
from svtjax._loops import compacting_block_loop
from svtjax._types import Array, DTypeLike, Key
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
from svtjax.mechanisms.rules import Inputs, Written

__all__ = ["draw", "run_keys", "run_draws", "block_width", "compaction_factor", "working_bytes"]


# -- layout ---------------------------------------------------------------------------------------

BLOCK_WIDTH = {"cpu": 64, "gpu": 256, "cuda": 256, "rocm": 256, "tpu": 256}
"""Positions per loop iteration of the engine, per platform (a multiple of BLOCK; never wider
than the stream). It never changes a number (the random streams are keyed in blocks of BLOCK
whatever the width), only how much a trial that halts mid-block overshoots against how many
loop iterations the batch pays for. CPU: 64, measured with ``benchmarks/bench_block_width.py``
(``block-width-vm-3d1219c7-2026-11-29T123532.json``: 64 the fastest of 64/128/192 in all four
headline cases). The accelerator entries are not measured yet (no GPU record of this
benchmark): ``benchmarks/gpu_suite.py``'s ``platform`` stage times widths, chunk sizes and
compaction factors on a GPU in one call."""

NARROW = 8
"""A stream shorter than BLOCK is processed in one block of its length rounded up to a multiple
of this, not in a whole BLOCK: variate i of a block is Threefry's word for counter i (JAX's
partitionable layout, ``svtjax._rng.random_bits``), so the first W variates of a block are the
same numbers whether W or BLOCK of them are drawn, and a 5-query stream (an audit's, a
distribution test's) no longer hashes and decides 64 positions per trial
(``benchmarks/bench_short_streams.py``)."""


def block_width(n: int, platform: Optional[str] = None) -> int:
    """Positions per loop iteration on ``platform`` (default: JAX's default backend): the
    platform's :data:`BLOCK_WIDTH` (at most the stream's blocks), or for a stream shorter than
    BLOCK its length rounded up to a multiple of :data:`NARROW`."""
    if n < BLOCK:
        return _round_up(max(n, 1), NARROW)
    if platform is None:
        platform = jax.default_backend()
    width = BLOCK_WIDTH.get(platform, BLOCK_WIDTH["gpu"])
    return max(BLOCK, min(width, BLOCK * num_blocks(n)))


COMPACTION = {"cpu": 8}
"""Compaction factor of the engine's block loop per platform (``svtjax._loops``): once at most
1/factor of a batch's trials still run, they are gathered into a batch 1/factor as wide. A
factor at least the batch size means one level, no compaction. It never changes a number.

CPU: 8. ``python benchmarks/bench_block_width.py --sizes 10000x1000 1000x10000 --widths 64
--factors 4 8 16 1000000000 --rounds 7`` (``block-width-vm-3d1219c7-2026-12-05T234827.json``,
the headline workload with the F1/SER reducer, ms): factor 4 / 8 / 16 / none 6.5 / 6.5 / 7.4 /
15.6 at n = 10^4 x 1,000 fixed, 9.7 / 10.2 / 10.7 / 24.7 shuffled; 17.3 / 18.2 / 19.4 / 29.9 at
n = 10^3 x 10^4 fixed, 38.3 / 39.0 / 40.8 / 66.6 shuffled. Compaction halves the time; 4 and
8 are within 5% of each other, and 8 compiles one level fewer (each level is a copy of the
loop's body to stage and compile). A platform absent here uses ``svtjax._loops``'s default (8),
not yet measured on an accelerator: ``benchmarks/gpu_suite.py``'s ``platform`` stage times the
factors with the block widths and chunk sizes on a GPU, in the same call as the rest."""

_COMPACTION_OVERRIDE: contextvars.ContextVar = contextvars.ContextVar(
    "svtjax_compaction", default=None)


def compaction_factor(platform: Optional[str] = None) -> int:
    """The engine's compaction factor: the one set by :func:`compaction` around the trace,
    else the platform's (default: JAX's default backend) :data:`COMPACTION`."""
    override = _COMPACTION_OVERRIDE.get()
    if override is not None:
        return override
    if platform is None:
        platform = jax.default_backend()
    return COMPACTION.get(platform, _loops.COMPACTION)


@contextlib.contextmanager
def compaction(factor: Optional[int]):
    """Traces the engine inside with compaction factor ``factor`` (None: the platform's).
    ``simulate``'s compiled chunk takes the factor as a static argument and traces under this,
    so a changed :data:`COMPACTION` entry compiles a program of its own."""
    if factor is not None and (int(factor) != factor or factor < 2):
        raise ValueError(f"the compaction factor must be an integer >= 2; got {factor!r}")
    token = _COMPACTION_OVERRIDE.set(None if factor is None else int(factor))
    try:
        yield
    finally:
        _COMPACTION_OVERRIDE.reset(token)


class _Layout(NamedTuple):
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


def _layout(mech, n: int, width: Optional[int] = None) -> _Layout:
    """The processing layout of a stream of ``n`` queries: ``width`` positions per loop
    iteration (default :func:`block_width`): a multiple of BLOCK, at most the stream's blocks;
    for a stream shorter than BLOCK, a width below BLOCK is rounded up to a multiple of
    :data:`NARROW` that covers the stream (one block)."""
    if not width:
        width = block_width(n)
    elif n < BLOCK and int(width) < BLOCK:
        width = max(_round_up(max(n, 1), NARROW), _round_up(int(width), NARROW))
    else:
        width = max(BLOCK, min(int(width), BLOCK * num_blocks(n)))
    if width % BLOCK and width > BLOCK:
        raise ValueError(f"the block width must be a multiple of {BLOCK}; got {width}")
    nb = num_blocks(n)
    per = max(1, width // BLOCK)
    npb = -(-nb // per)
    return _Layout(n, mech.passes(), width, nb, per, npb, npb * width)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _families(streams: dict) -> dict:
    return {name: type(noise) for name, noise in streams.items()}


# -- randomness -----------------------------------------------------------------------------------

def _pass_variates(skey: Key, n: int, passes: int, standard, dtype) -> Array:
    """float[passes * n]: position k·n + i comes from block k·nb + i // BLOCK (nb blocks per
    pass), so every pass starts on a block boundary. One pass is ``stream_variates``."""
    if passes == 1:
        return stream_variates(skey, n, standard, dtype)
    blocks = jax.vmap(lambda g: block_variates(skey, g, standard, dtype))(
        jnp.arange(passes * num_blocks(n)))
    return _passes_of(blocks, n, passes)


def _passes_of(blocks: Array, n: int, passes: int) -> Array:
    """float[passes * n] from a stream's blocks [passes · nb, BLOCK] (each pass starts on a
    block boundary and uses its first n positions)."""
    return blocks.reshape(passes, -1)[:, :n].reshape(-1)


def _initial_variates(keys: Key, kd: Optional[Array], name: str, family, dtype) -> Array:
    """``family.standard(stream_key(key, name), (), dtype)`` for every key of ``keys`` (any
    batch shape). With their raw Threefry key data ``kd`` (uint32[..., 2]) and a family that
    has an unrolled sampler, computed by ``svtjax._rng`` (the same numbers, ``tests/
    test_rng.py``): that stages as plain integer operations, where ``jax.random``'s
    ``fold_in`` and ``random_bits`` re-trace and lower the hash at every lowering of a program
    (about 15 ms of each engine program's staging on the 2-core CPU)."""
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
    sampler (:func:`_initial_variates`), the same numbers as the lazy engine draws."""
    kd = _rng.key_data(key)
    out = {name: _initial_variates(key, kd, name, family, dtype)
           for name, family in _families(mech.initial_streams()).items()}
    nb = num_blocks(n)
    for name, family in _families(mech.streams()).items():
        fast = _rng.fast_standard(family)
        if kd is None or fast is None:
            out[name] = _pass_variates(stream_key(key, name), n, mech.passes(),
                                       family.standard, dtype)
            continue
        skd = _rng.fold_in(kd, np.uint32(stream_id(name)))
        blocks = fast(_rng.fold_in(skd[None, :], jnp.arange(mech.passes() * nb,
                                                            dtype=jnp.uint32)), BLOCK, dtype)
        out[name] = _passes_of(blocks, n, mech.passes())
    if shuffle:
        if kd is None:
            out["order"] = stream_order(stream_key(key, "order"), n).astype(jnp.int32)
        else:
            okd = _rng.fold_in(kd, np.uint32(stream_id("order")))
            out["order"] = fast_block_order(okd[None, :], jnp.arange(nb, dtype=jnp.int32),
                                            n)[0].reshape(-1)[:n]
    return Draws(out)


class _Source(NamedTuple):
    """Where a batch's numbers come from: per-stream keys (drawn lazily) or pre-drawn Draws."""

    keys: Optional[dict]  # name -> key[B] stream keys (lazy)
    draws: Optional[dict]  # name -> float[B, passes * n] / int32[B, n] (pre-drawn)


DRAW_ONCE = {"cpu"}
"""Platforms on which a block's draws are made inside a conditional (:func:`_lazy_block`), so
that the block's Threefry hashes are computed once.

XLA's fusion pass duplicates cheap elementwise producers into every fusion that consumes them,
and Threefry is nothing but cheap integer ops: on the CPU backend each consumer of a block's
variates (the decisions, the answers written, the halting count) recomputed the whole hash
(the compiled headline kernel held four copies of its 20 rounds per compaction level; an
``optimization_barrier`` is removed before fusion and does not stop it). A conditional's
result is a materialised buffer that no fusion reaches into, so the hashes run once per block.
Measured with ``benchmarks/bench_draw_once.py``."""


def _lazy_block(mech, lay: _Layout, keys: dict, k, j, dtype, once: bool = True) -> dict:
    """:func:`_block_draws`, made once per block (``once``, where the platform is in
    :data:`DRAW_ONCE`; a rule run by ``lax.scan`` reads its draws from one buffer anyway).

    The predicate ``j >= 0`` always holds, but XLA cannot prove it, so the conditional stays
    and its other branch (zeros of the same shapes) never runs."""
    draws = lambda: _block_draws(mech, lay, keys, k, j, dtype)  # noqa: E731
    return _once(draws, j) if once else draws()


def _once(fn, witness):
    """``fn()``, computed inside a conditional on ``witness >= 0`` (a traced int that is never
    negative) on the platforms in :data:`DRAW_ONCE`, so that its result is materialised once
    instead of being recomputed inside each of its consumers' fusions.

    The witness passes through an ``optimization_barrier`` first: a stream of one block runs a
    block loop of one iteration, which XLA replaces by its body, and the block index is then the
    constant 0; without the barrier XLA folded ``0 >= 0``, removed the conditional and hashed
    the block in every consumer again (the compiled svt-s chunk on 5 queries held 4 copies of
    the hash instead of 1; ``tests/test_rng.py`` counts them)."""
    if jax.default_backend() not in DRAW_ONCE:
        return fn()
    shapes = jax.eval_shape(fn)
    return lax.cond(lax.optimization_barrier(jnp.asarray(witness)) >= 0, fn,
                    lambda: jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes))


def _block_draws(mech, lay: _Layout, keys: dict, k, j, dtype) -> dict:
    """Standard variates of processing block j of pass k, for every stream: name -> [B, W].

    ``keys``: stream name -> the batch's stream keys, as raw Threefry key data uint32[B, 2]
    (drawn with the unrolled Threefry of ``svtjax._rng``: the same numbers as ``jax.random``,
    fused into one kernel) or as typed keys (any other key implementation: ``jax.random``)."""
    out = {}
    first = k * lay.nb + j * lay.per
    sub = jnp.arange(lay.per, dtype=jnp.uint32)
    for name, family in _families(mech.streams()).items():
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
        out["order"] = _order_draws(lay, keys["order"], j)
    return out


def _order_draws(lay: _Layout, okeys, j) -> Array:
    """Swap partners of processing block j (first pass): int32[B, W]."""
    sub = jnp.arange(lay.per, dtype=jnp.int32)
    if okeys.dtype == jnp.uint32:
        return fast_block_order(okeys, j * lay.per + sub, lay.n,
                                lay.drawn).reshape(okeys.shape[0], lay.width)

    def order(skey):
        blocks = jax.vmap(lambda s: block_order(skey, j * lay.per + s, lay.n))(sub)
        return blocks[:, :lay.drawn].reshape(-1)
    return jax.vmap(order)(okeys)


def fast_block_order(kd: Array, b: Array, n: int, drawn: int = BLOCK) -> Array:
    """:func:`svtjax.mechanisms.base.block_order` for raw stream keys ``kd`` uint32[B, 2] and
    block indices ``b`` int32[m]: int32[B, m, drawn], the first ``drawn`` positions of each
    block, the same numbers (Lemire's method on ``jax.random.bits``' words, one counter per
    position, a rejected word redrawn from ``fold_in(block key, r)``)."""
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

    first = _once(lambda: packed(bkd), b[0])  # the hash once, for both outputs
    value, rejected = first & jnp.uint32(2**31 - 1), (first >> 31) == 1
    _, value, _ = lax.while_loop(lambda c: jnp.any(c[2]), redraw, (jnp.int32(1), value, rejected))
    j = pos + value.astype(jnp.int32)
    return jnp.where(pos < n, j, pos)


def _pad_last(x: Array, size: int, fill=0) -> Array:
    pad = size - x.shape[-1]
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, pad)], constant_values=fill)


def _sliced_block(lay: _Layout, draws: dict, k, j) -> dict:
    """Processing block j of pass k of pre-drawn (batched) draws: name -> [B, W]."""
    out = {}
    for name, x in draws.items():
        if name == "order":
            pos = jnp.arange(lay.n_pad, dtype=jnp.int32)
            full = jnp.where(pos < lay.n, _pad_last(x.astype(jnp.int32), lay.n_pad), pos)
            out[name] = lax.dynamic_slice_in_dim(full, j * lay.width, lay.width, axis=1)
            continue
        x = _pad_last(x.reshape(x.shape[:-1] + (lay.passes, lay.n)), lay.n_pad)
        x = x.reshape(x.shape[:-2] + (lay.passes * lay.n_pad,))
        out[name] = lax.dynamic_slice_in_dim(x, k * lay.n_pad + j * lay.width, lay.width, axis=1)
    return out


# -- the lazy Fisher–Yates shuffle --------------------------------------------------------------

class _Shuffle(NamedTuple):
    """Batch-level Fisher–Yates state: the permutations and one pending write per trial.

    Pure JAX (``slot`` None): the permutation is stored transposed, ``[n_pad, batch]``, so that
    reading position p for every trial is one contiguous row, and as int16 when n_pad < 2**15:
    the random accesses of a swap then touch half the cache lines (about 5x faster than int32
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


def _shuffle_init(batch: int, n_pad: int, native: Optional[bool] = None,
                  n: Optional[int] = None) -> _Shuffle:
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
        return _Shuffle(perm, jnp.zeros((batch,), jnp.int32), jnp.zeros((batch,), dtype),
                        jnp.arange(batch, dtype=jnp.int32))
    perm = jnp.broadcast_to(jnp.arange(n_pad, dtype=dtype)[:, None], (n_pad, batch))
    return _Shuffle(perm, jnp.zeros((batch,), jnp.int32), perm[0])


SHUFFLE_PREFIX = {"cpu": 1024}
"""Positions of every trial's shuffle made before the block loop, trial by trial, by the
compiled prefix kernel (:func:`fisher_yates_prefix`), per platform; 0 or absent: none.

Block by block, the batch's permutations are far larger than the caches (20 MB at n = 10^4 x
1,000 trials) and nearly every swap misses; in the prefix kernel a trial's row is hot while its
swaps run. The positions a trial never reaches are swapped for nothing, so the prefix is about
the reach of the top-c workloads (svt-s, c = 50 on Zipf 10^4 in a random order halts at
position 596 on average, 993 at the 95th percentile). Measured with
``benchmarks/bench_shuffle_prefix.py``. A choice of speed only: the numbers are the same."""


def shuffle_prefix(lay: _Layout, platform: Optional[str] = None) -> int:
    """The positions :func:`fisher_yates_prefix` makes for a stream of this layout: the
    platform's :data:`SHUFFLE_PREFIX`, at most half the stream (a short stream's rows stay in
    the caches anyway, and its trials may halt early), in whole processing blocks; 0 where none
    applies."""
    platform = platform or jax.default_backend()
    if lay.width % BLOCK or lay.drawn != BLOCK:
        return 0
    return min(SHUFFLE_PREFIX.get(platform, 0), lay.n // 2) // lay.width * lay.width


def fisher_yates_prefix(okeys: Array, n: int, prefix: int, dtype) -> _Shuffle:
    """The state of the compiled block's lazy shuffle (``write_items``) after positions
    0 .. prefix − 1 of every trial, each row's first ``prefix`` positions holding its items:
    the state that the blocks of :func:`fisher_yates_block` reach from :func:`_shuffle_init`
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
    return _Shuffle(perm, j, a, jnp.arange(batch, dtype=jnp.int32), okeys)


def _take_shuffle(fy: Optional[_Shuffle], idx: Array) -> Optional[_Shuffle]:
    if fy is None:
        return None
    if fy.slot is not None:
        return _Shuffle(fy.perm, fy.j[idx], fy.a[idx], fy.slot[idx], fy.keys)
    return _Shuffle(jnp.take(fy.perm, idx, axis=1), fy.j[idx], fy.a[idx])


def fisher_yates_block(fy: _Shuffle, order: Optional[Array], start,
                       done: Optional[Array] = None, write_items: bool = False, made: int = 0,
                       width: Optional[int] = None) -> tuple[_Shuffle, Array]:
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
    fy = _Shuffle(perm.reshape(n_pad, batch), order[:, -1].astype(jnp.int32), a)
    return fy, items.T.astype(jnp.int32)


def _fisher_yates_block_native(fy: _Shuffle, order: Optional[Array], start,
                               done: Optional[Array] = None, write_items: bool = False,
                               made: int = 0, width: Optional[int] = None
                               ) -> tuple[_Shuffle, Array]:
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
    return _Shuffle(perm, j, a, fy.slot, fy.keys), items


def _fisher_yates_block_2d(fy: _Shuffle, order: Array, start) -> tuple[_Shuffle, Array]:
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
        return _Shuffle(perm, j, a), items

    items = jnp.zeros((width, order.shape[0]), fy.perm.dtype)
    fy, items = lax.fori_loop(0, width, step, (fy, items))
    return fy, items.T.astype(jnp.int32)


# -- buffers ----------------------------------------------------------------------------------

def _put_block(buf: Array, blk: Array, at, in_pass, n: int) -> Array:
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


def _get_block(buf: Array, at, in_pass, n: int, width: int, fill) -> Array:
    """``buf[at + k]`` for k < W where ``in_pass + k < n``, else ``fill`` (the read that matches
    :func:`_put_block`)."""
    k = jnp.arange(width, dtype=jnp.int32)
    vals = buf[jnp.clip(at + k, 0, buf.shape[0] - 1)]
    return jnp.where(in_pass + k < n, vals, jnp.asarray(fill, buf.dtype))


class _Rows(NamedTuple):
    """Per-trial loop state. Only what cannot be derived afterwards is carried: ``items`` only
    for shuffled runs (fixed order: item = in-pass position), ``values`` only for rules that
    release numbers, ``cost`` only for rules that charge per position. Carrying less is what
    keeps a run that halts after a few blocks from paying for O(trials × n) buffer traffic."""

    state: Any
    done: Array
    answers: Array
    items: Optional[Array]
    values: Optional[Array]
    cost: Optional[Array]


# -- one trial, one block -------------------------------------------------------------------------

def _scaled(x: Inputs, scales: dict) -> Inputs:
    return x._replace(noise={name: scales[name] * x.noise[name] for name in scales})


def _scan_block(mech, state, xs: Inputs, valid: Array, scales: dict):
    """The rule's ``step`` over a block, with the engine's masking: a position is evaluated iff
    it is valid and the trial has not halted before it; otherwise the state is unchanged.

    ``xs.noise`` holds standard variates, scaled inside the scan's body: XLA contracts
    ``q + s·z`` into one fused multiply-add wherever the product and the sum meet in one
    computation, so scaling inside the body (as :meth:`block` does inside its fusion) keeps the
    scan and the block form bit-identical."""
    dtype = xs.query.dtype

    def f(state, xv):
        x, v = xv
        x = _scaled(x, scales)
        active = v & ~mech.halted(state)
        new, w = mech.step(state, x)
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(active, a, b), new, state)
        answer = jnp.where(active, jnp.asarray(w.answer).astype(jnp.int8), jnp.int8(-1))
        value = None if w.value is None else jnp.where(active, w.value, jnp.nan).astype(dtype)
        cost = None if w.cost is None else jnp.where(active, w.cost, 0).astype(dtype)
        return state, Written(answer, value, cost)

    return lax.scan(f, state, (xs, valid))


def _decide_block(mech, vectorized: bool, lay: _Layout, rows: _Rows, noise: dict, items, k, j,
                  q_pad, t_pad, offset, cap) -> _Rows:
    """Processing block j of pass k for one trial."""
    dtype = q_pad.dtype
    width, n = lay.width, lay.n
    pos = j * width + jnp.arange(width, dtype=jnp.int32)
    valid = pos < n
    if lay.passes > 1:
        # Later passes revisit the first pass's items, skipping those already answered ⊤.
        past = jnp.stack([_get_block(rows.answers, p * n + j * width, j * width, n, width, -1)
                          for p in range(lay.passes)])
        earlier = jnp.arange(lay.passes)[:, None] < k
        valid = valid & ~jnp.any((past == 1) & earlier, axis=0)
        if rows.items is not None:
            first = _get_block(rows.items, j * width, j * width, n, width, -1)
            items = jnp.where(k == 0, items, jnp.maximum(first, 0))
    position = k * n + pos
    if cap is not None:
        valid = valid & (position < cap)
    if items is not None:
        q_blk, t_blk = q_pad[items], t_pad[items]
    else:
        items = pos
        q_blk = lax.dynamic_slice_in_dim(q_pad, j * width, width)
        t_blk = lax.dynamic_slice_in_dim(t_pad, j * width, width)
    if offset is not None:
        t_blk = t_blk + offset
    scales = {name: jnp.asarray(s.scale_value, dtype) for name, s in mech.streams().items()}
    xs = Inputs(q_blk, t_blk, items, position, {name: noise[name] for name in scales})
    if vectorized and mech.has_block():
        state, w = mech.block(rows.state, _scaled(xs, scales), valid)
    else:
        state, w = _scan_block(mech, rows.state, xs, valid, scales)
    answers = jnp.asarray(w.answer).astype(jnp.int8)
    at = k * n + j * width  # pass-major, exact length

    def put(buf, blk):
        return None if buf is None else _put_block(buf, blk, at, j * width, n)

    return rows._replace(state=state, answers=put(rows.answers, answers),
                         items=put(rows.items, jnp.where(answers >= 0, items, -1)),
                         values=put(rows.values, w.value), cost=put(rows.cost, w.cost))


# -- batch drivers ------------------------------------------------------------------------------

def _loop(mech, lay: _Layout, batch: int, z0: dict, work_src, get_block, q, t, offsets, shuffle,
          vectorized, from_perm: bool = True, prefix: int = 0) -> Outcome:
    """Runs a batch block by block until every trial has halted (finished trials compacted
    away, see ``svtjax._loops``). ``from_perm``: a single-pass shuffled run through the
    compiled block may read its items from the permutations (partners drawn by the engine,
    each at or after its position, so no swap reaches a position already visited).
    ``prefix`` (such a run, with raw Threefry keys; ``get_block`` then draws no "order"): the
    shuffle's first positions made before the loop (:func:`fisher_yates_prefix`), whose blocks
    read their items from the rows; the compiled block draws the partners of the blocks past
    it from the rows' keys."""
    dtype = q.dtype
    q_pad = _pad_last(q, lay.n_pad)
    t_pad = _pad_last(t, lay.n_pad)
    init_scales = {name: jnp.asarray(s.scale_value, dtype)
                   for name, s in mech.initial_streams().items()}
    state = jax.vmap(lambda z: mech.init({name: init_scales[name] * z[name]
                                          for name in init_scales}))(z0)
    buf = lay.buffer
    # The compiled block leaves each trial's order in the first positions of its permutation
    # row (never moved by the compaction), which then serve as the Outcome's items, its rows as
    # long as the stream (no copy); otherwise (the pure-JAX block, whose compaction gathers
    # permutations; retraversal, whose later passes read the first pass's items; pre-drawn
    # Draws, whose partners may be anything) they are written to a buffer block by block.
    native = _native.fisher_yates_target() is not None
    in_perm = from_perm and shuffle and native and lay.passes == 1
    if prefix and not in_perm:
        raise ValueError("a shuffle prefix needs the compiled block and a single pass")
    if prefix:
        fy = fisher_yates_prefix(work_src["order"], lay.n, prefix, perm_dtype(lay.n_pad))
        # the kernel draws every partner from fy.keys: the loop carries no "order" keys
        work_src = {name: key for name, key in work_src.items() if name != "order"}
    elif shuffle:
        fy = _shuffle_init(batch, lay.n_pad, native, lay.n if in_perm else None)
    else:
        fy = None
    rows = _Rows(
        state=state,
        done=jnp.zeros((batch,), bool),
        answers=jnp.full((batch, buf), -1, jnp.int8),
        items=jnp.full((batch, buf), -1, jnp.int32) if shuffle and not in_perm else None,
        values=jnp.full((batch, buf), jnp.nan, dtype) if mech.has_values() else None,
        cost=jnp.zeros((batch, buf), dtype) if mech.per_position_cost else None,
    )
    cap = mech.cap()
    total = lay.passes * lay.npb
    factor = compaction_factor()

    def body(g, rows, work):
        fy, src, offsets = work
        k, j = g // lay.npb, g % lay.npb
        blk = get_block(src, k, j)
        items = None
        if fy is not None:
            def shuffle_block(f):
                return fisher_yates_block(f, blk["order"], j * lay.width, rows.done, in_perm)

            if prefix:
                # the kernel reads the prefix's items from the rows and draws the partners of
                # the blocks past it from the rows' keys (a conditional around the kernel would
                # copy the rows)
                fy, items = fisher_yates_block(fy, None, j * lay.width, rows.done, True, prefix,
                                               lay.width)
            elif lay.passes == 1:
                fy, items = shuffle_block(fy)
            else:  # the shuffle happens in the first pass only
                fy, items = lax.cond(k == 0, shuffle_block, lambda f: (
                    f, jnp.zeros((f.j.shape[0], lay.width), jnp.int32)), fy)
        noise = {name: blk[name] for name in mech.streams()}
        rows = jax.vmap(
            lambda r, z, i, o: _decide_block(mech, vectorized, lay, r, z, i, k, j, q_pad, t_pad,
                                             o, cap),
            in_axes=(0, 0, None if items is None else 0, None if offsets is None else 0),
        )(rows, noise, items, offsets)
        nxt = g + 1
        done = jax.vmap(mech.halted)(rows.state) | (nxt >= total)
        if cap is not None:
            done = done | ((nxt // lay.npb) * lay.n + (nxt % lay.npb) * lay.width >= cap)
        return rows._replace(done=rows.done | done), (fy, src, offsets)

    def take_work(work, idx):
        fy, src, offsets = work
        take = lambda x: jnp.take(x, idx, axis=0)  # noqa: E731
        return (_take_shuffle(fy, idx), jax.tree_util.tree_map(take, src),
                None if offsets is None else take(offsets))

    if not in_perm:
        rows = compacting_block_loop(body, lambda r: ~r.done, rows, (fy, work_src, offsets),
                                     total, factor=factor, take_work=take_work)
        return _finish(mech, lay, rows, dtype)
    rows, perm = compacting_block_loop(body, lambda r: ~r.done, rows, (fy, work_src, offsets),
                                       total, factor=factor, take_work=take_work,
                                       shared=lambda w: w[0].perm)
    return _finish(mech, lay, rows, dtype, perm)


def _finish(mech, lay: _Layout, rows: _Rows, dtype, perm: Optional[Array] = None) -> Outcome:
    """The batch's compact Outcome: answers, and only the fields the answers do not determine
    (items of a shuffled run, released values, per-position costs); see ``Outcome.compact``.
    ``perm`` (a single-pass shuffled run through the compiled block): the permutation rows,
    whose first positions hold each trial's items, stored as they are."""
    length = lay.length

    def trim(x):  # [batch, max(L, W)] -> [batch, L]
        return None if x is None else (x if x.shape[1] == length else x[:, :length])

    answers = trim(rows.answers)
    top_cost = None
    if rows.cost is None:
        top_cost = jnp.broadcast_to(jnp.asarray(mech.top_cost(), dtype), answers.shape[:1])
    if perm is not None:
        return Outcome.compact(answers, n=lay.n, dtype=dtype, items=perm,
                               values=trim(rows.values), cost=trim(rows.cost), top_cost=top_cost,
                               items_evaluated_only=True)
    return Outcome.compact(answers, n=lay.n, dtype=dtype, items=trim(rows.items),
                           values=trim(rows.values), cost=trim(rows.cost), top_cost=top_cost)


def run_keys(mech, keys: Key, q: Array, t: Array, *, shuffle: bool,
             offsets: Optional[Array] = None, vectorized: bool = True,
             width: Optional[int] = None) -> Outcome:
    """A batch of trials (leading axis of ``keys``), drawing noise block by block.

    ``offsets`` (float[batch], optional) are added to every threshold of a trial (per-trial
    thresholds, e.g. Ding et al.'s rule); ``width`` the positions per loop iteration (default:
    :func:`block_width` of the platform)."""
    dtype = q.dtype
    lay = _layout(mech, q.shape[0], width)
    kd = _rng.key_data(keys)
    # Inside a conditional (_once), as the blocks' draws: each initial variate is hashed once,
    # not again in every fusion that reads it.
    z0 = {name: _once(lambda f=family, s=name: _initial_variates(keys, kd, s, f, dtype), 0)
          if kd is not None else _initial_variates(keys, kd, name, family, dtype)
          for name, family in _families(mech.initial_streams()).items()}
    names = list(mech.streams()) + (["order"] if shuffle else [])
    if kd is not None:  # raw Threefry keys: the unrolled sampler (svtjax._rng)
        skeys = {name: _rng.fold_in(kd, np.uint32(stream_id(name))) for name in names}
    else:
        skeys = {name: jax.vmap(lambda k, s=name: stream_key(k, s))(keys) for name in names}
    once = vectorized and mech.has_block()  # the block form: many consumers of each draw
    # the compiled prefix (its kernel draws the partners from raw Threefry keys), where the
    # compiled block runs and a single pass reads its items from the rows (``_loop``'s in_perm)
    prefix = shuffle_prefix(lay) if (shuffle and kd is not None and lay.passes == 1 and
                                     _native.fisher_yates_target() is not None) else 0
    drawn = [name for name in names if not (prefix and name == "order")]

    def get_block(src, k, j):
        return _lazy_block(mech, lay, {name: src[name] for name in drawn}, k, j, dtype, once)
    return _loop(mech, lay, keys.shape[0], z0, skeys, get_block, q, t, offsets, shuffle,
                 vectorized, prefix=prefix)


def run_draws(mech, draws: Draws, q: Array, t: Array, *, vectorized: bool = True) -> Outcome:
    """A batch of trials from pre-drawn (batched) ``Draws``."""
    dtype = q.dtype
    lay = _layout(mech, q.shape[0])
    z0 = {name: jnp.asarray(draws[name], dtype) for name in mech.initial_streams()}
    src = {name: jnp.asarray(draws[name], dtype) for name in mech.streams()}
    shuffle = draws.order is not None
    if shuffle:
        src["order"] = jnp.asarray(draws.order)
    get_block = lambda d, k, j: _sliced_block(lay, d, k, j)  # noqa: E731
    batch = jax.tree_util.tree_leaves(draws)[0].shape[0]
    return _loop(mech, lay, batch, z0, src, get_block, q, t, None, shuffle, vectorized,
                 from_perm=False)


def working_bytes(mech, n: int, itemsize: int, shuffle: bool) -> int:
    """Working memory of one trial of a chunk: the buffers of its compact Outcome (answers
    int8; items int32 when shuffled or retraversed, except where a single pass's items are
    read from the compiled block's permutation; values and costs when the rule writes them),
    the rows gathered when finished trials are compacted away (at most 1/8 of the batch), one
    block of draws and, shuffled, the permutation."""
    lay = _layout(mech, n)
    length = max(lay.length, lay.width)
    in_perm = shuffle and lay.passes == 1 and _native.fisher_yates_target() is not None
    outputs = 1 + (4 if (shuffle and not in_perm) or lay.passes > 1 else 0) + \
        (itemsize if mech.has_values() else 0) + (itemsize if mech.per_position_cost else 0)
    perm = jnp.dtype(perm_dtype(lay.n_pad)).itemsize * lay.n_pad if shuffle else 0
    streams = max(1, len(mech.streams()))
    return length * outputs * 9 // 8 + perm + 4 * streams * lay.width * itemsize
