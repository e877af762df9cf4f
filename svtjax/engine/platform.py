"""The engine's per-platform choices, resolved once per traced batch into a :class:`Platform`.

None of these choices changes a number: the random streams are keyed in blocks of BLOCK
whatever the width, the compaction only regroups running trials, a block's draws are the same
numbers whether made once or per consumer, and the shuffle's compiled prefix makes the same
swaps as the lazy blocks. They decide only how fast a batch runs; the measurements behind each
value are in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import jax

from svtjax import _loops, _native
from svtjax.mechanisms.base import BLOCK, num_blocks

__all__ = ["BLOCK_WIDTH", "NARROW", "COMPACTION", "DRAW_ONCE", "SHUFFLE_PREFIX",
           "CACHE_CHUNK_BYTES", "Platform", "resolve", "block_width", "compaction_factor"]

BLOCK_WIDTH = {"cpu": 64, "gpu": 256, "cuda": 256, "rocm": 256, "tpu": 256}
"""Positions per loop iteration of the engine, per platform (a multiple of BLOCK; never wider
than the stream): how much a trial that halts mid-block overshoots against how many loop
iterations the batch pays for. CPU: 64, the fastest of 64/128/192 in every headline case. The
accelerator entries are not measured yet: ``benchmarks/gpu_suite.py``'s ``platform`` stage
times widths, chunk sizes and compaction factors on a GPU in one call."""

NARROW = 8
"""A stream shorter than BLOCK is processed in one block of its length rounded up to a multiple
of this, not in a whole BLOCK: variate i of a block is Threefry's word for counter i (JAX's
partitionable layout, ``svtjax._rng.random_bits``), so the first W variates of a block are the
same numbers whether W or BLOCK of them are drawn, and a 5-query stream (an audit's, a
distribution test's) does not hash and decide 64 positions per trial."""

COMPACTION = {"cpu": 8}
"""Compaction factor of the engine's block loop per platform (``svtjax._loops``): once at most
1/factor of a batch's trials still run, they are gathered into a batch 1/factor as wide. A
factor at least the batch size means one level, no compaction.

CPU: 8. Compaction halves the time of the headline workloads; factors 4 and 8 are within 5% of
each other, and 8 compiles one level fewer (each level is a copy of the loop's body to stage
and compile). A platform absent here uses ``svtjax._loops``'s default (8), not yet measured on
an accelerator."""

DRAW_ONCE = {"cpu"}
"""Platforms on which a block's draws are made inside a conditional
(:func:`svtjax.engine.draws.once`), so that the block's Threefry hashes are computed once.

XLA's fusion pass duplicates cheap elementwise producers into every fusion that consumes them,
and Threefry is nothing but cheap integer ops: on the CPU backend each consumer of a block's
variates (the decisions, the answers written, the halting count) recomputed the whole hash (an
``optimization_barrier`` is removed before fusion and does not stop it). A conditional's result
is a materialised buffer that no fusion reaches into, so the hashes run once per block."""

SHUFFLE_PREFIX = {"cpu": 1024}
"""Positions of every trial's shuffle made before the block loop, trial by trial, by the
compiled prefix kernel (:func:`svtjax.engine.shuffle.fisher_yates_prefix`), per platform; 0 or
absent: none.

Block by block, the batch's permutations are far larger than the caches and nearly every swap
misses; in the prefix kernel a trial's row is hot while its swaps run. The positions a trial
never reaches are swapped for nothing, so the prefix is about the reach of the top-c workloads
(svt-s, c = 50 on Zipf 10^4 in a random order, halts at position 596 on average, 993 at the
95th percentile)."""

CACHE_CHUNK_BYTES = {"cpu": 8 * 2**20}
"""The most bytes of working memory a chunk of a cache-bound kernel takes, per platform (a
mechanism declares its kernel cache-bound in its ``svtjax.mechanisms.base.Footprint``; absent:
only the memory budget applies).

CPU: 8 MiB. The selection kernels hold every trial's whole noisy score vector; 10^3 trials of
n = 10^4 (Zipf, k = 50) ran faster in 8 MB chunks than as one 120 MB chunk, and so did 10^4
trials of n = 10^3. An accelerator wants the whole batch at once."""


@dataclasses.dataclass(frozen=True)
class Platform:
    """The engine's static choices for one platform, resolved once per run (when the run is
    planned, ``svtjax._driver.plan``; else when a batch is traced without one) and passed down
    as a static value: no context variable, no backend read inside the engine.

    ``width``: :data:`BLOCK_WIDTH`'s entry; ``compaction``: the compaction factor;
    ``draw_once``: the platform is in :data:`DRAW_ONCE`; ``shuffle_prefix``:
    :data:`SHUFFLE_PREFIX`'s entry; ``native``: the compiled Fisher–Yates block
    (:mod:`svtjax._native`) runs here; ``cache_chunk_bytes``: :data:`CACHE_CHUNK_BYTES`'s entry
    (None: no cap), the budget of a chunk of a cache-bound kernel
    (:func:`svtjax.engine.sizing.chunk_budget`)."""

    name: str
    width: int
    compaction: int
    draw_once: bool
    shuffle_prefix: int
    native: bool
    cache_chunk_bytes: Optional[int] = None

    def __post_init__(self):
        if int(self.compaction) != self.compaction or self.compaction < 2:
            raise ValueError(f"the compaction factor must be an integer >= 2; got "
                             f"{self.compaction!r}")

    def block_width(self, n: int) -> int:
        """Positions per loop iteration for a stream of ``n`` queries: :attr:`width` (at most the
        stream's blocks), or for a stream shorter than BLOCK its length rounded up to a
        multiple of :data:`NARROW`."""
        if n < BLOCK:
            return round_up(max(n, 1), NARROW)
        return max(BLOCK, min(self.width, BLOCK * num_blocks(n)))


def resolve(platform: Optional[str] = None) -> Platform:
    """The :class:`Platform` of ``platform`` (default: JAX's default backend): its tables'
    entries, read now (a run resolves it once, when it is planned, and passes it down)."""
    if platform is None:
        platform = jax.default_backend()
    return Platform(name=platform, width=BLOCK_WIDTH.get(platform, BLOCK_WIDTH["gpu"]),
                    compaction=compaction_factor(platform),
                    draw_once=platform in DRAW_ONCE,
                    shuffle_prefix=int(SHUFFLE_PREFIX.get(platform, 0)),
                    native=_native.fisher_yates_target() is not None,
                    cache_chunk_bytes=CACHE_CHUNK_BYTES.get(platform))


def block_width(n: int, platform: Optional[str] = None) -> int:
    """Positions per loop iteration on ``platform`` (default: JAX's default backend):
    :meth:`Platform.block_width`."""
    if n < BLOCK:
        return round_up(max(n, 1), NARROW)
    if platform is None:
        platform = jax.default_backend()
    width = BLOCK_WIDTH.get(platform, BLOCK_WIDTH["gpu"])
    return max(BLOCK, min(width, BLOCK * num_blocks(n)))


def compaction_factor(platform: Optional[str] = None) -> int:
    """The engine's compaction factor on ``platform`` (default: JAX's default backend):
    :data:`COMPACTION`'s entry, else ``svtjax._loops``'s default."""
    if platform is None:
        platform = jax.default_backend()
    return COMPACTION.get(platform, _loops.COMPACTION)


def round_up(x: int, m: int) -> int:
    return -(-x // m) * m
