"""Monte Carlo driver: many independent trials of one mechanism, chunked, sharded, compiled once.

Trial ``t`` always uses ``jax.random.fold_in(jax.random.key(seed), t)``, so an outcome never
depends on the chunk size or on how many devices share the work. Trials run as a ``vmap`` inside
one compiled function per chunk; the mechanism is a pytree argument, so its numeric parameters
are traced and a sweep over ε or c reuses the compiled code (one compile per structure).
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from svtjax import _malloc, _validate
from svtjax._core import Outcome
from svtjax.mechanisms.base import BLOCK, Mechanism, num_blocks

__all__ = ["simulate", "trial_keys", "default_chunk_size", "MEMORY_BUDGET"]

MEMORY_BUDGET = 256 * 2**20
"""Bytes of per-chunk working memory ``simulate`` aims for when ``chunk_size`` is None."""

ACCELERATOR_MEMORY_BUDGET = 2 * 2**30
"""The per-chunk working memory on a GPU/TPU when ``chunk_size`` is None: larger chunks are
what fill an accelerator (on an H200, a 2 GiB budget ran the 10^6-trial sweep benchmark ~5x
faster than 256 MiB; benchmarks/results/sweep-memory-*-gpu-*.json)."""

def trial_keys(seed: int, start: int, count: int) -> jax.Array:
    """Keys of trials ``start .. start+count-1`` (``fold_in(key(seed), t)``)."""
    root = jax.random.key(seed)
    return jax.vmap(lambda t: jax.random.fold_in(root, t))(start + jnp.arange(count))


def _bytes_per_trial(mech: Mechanism, n: int, itemsize: int, shuffle: bool) -> int:
    """Working memory of one trial in a chunk: the Outcome (answers int8, items int32, values
    and cost floats per position) and what the kernel holds besides it. A block-wise kernel
    (``draws_by_block``) holds one block of draws at a time, the rows it gathers when it
    compacts finished trials away (at most 1/8 of the batch) and, shuffled, the permutation
    (int16 below 2**15 positions); other kernels hold their whole draws."""
    length = max(mech.stream_length(n), num_blocks(n) * BLOCK)
    outputs = 1 + 4 + 2 * itemsize
    n_pad = num_blocks(n) * BLOCK
    if mech.draws_by_block:
        from svtjax.mechanisms._svt_engine import _perm_dtype

        perm = jnp.dtype(_perm_dtype(n_pad)).itemsize * n_pad if shuffle else 0
        return length * outputs * 9 // 8 + perm + 4 * BLOCK * itemsize
    per_position = outputs + 3 * itemsize  # outputs + the draws
    return length * per_position + (4 * n_pad if shuffle else 0)


def default_chunk_size(mech: Mechanism, n: int, trials: int, *, itemsize: int = 4,
                       shuffle: bool = False, num_devices: int = 1,
                       memory_budget: Optional[int] = None,
                       platform: Optional[str] = None) -> int:
    """The largest chunk whose working set fits ``memory_budget``, a multiple of the devices.

    ``memory_budget`` defaults to ``MEMORY_BUDGET`` on a CPU and ``ACCELERATOR_MEMORY_BUDGET``
    on an accelerator (``platform``, default: that of ``jax.devices()[0]``).

    On a CPU, fewer, larger chunks are faster even for reduced runs: on the idle 2-core
    benchmark machine the headline svt-s workload with a counting reducer ran in 3.8 ms as one
    chunk of 1,000 trials against 6.4 ms in ten chunks of 100 (5.2 ms with the ten sub-batches
    inside one compiled call), and 14 ms against 19 ms at n = 1000 x 10,000 trials."""
    if platform is None:
        platform = jax.devices()[0].platform
    if memory_budget is None:
        memory_budget = MEMORY_BUDGET if platform == "cpu" else ACCELERATOR_MEMORY_BUDGET
    per_trial = _bytes_per_trial(mech, n, itemsize, shuffle)
    largest = max(1, min(trials, memory_budget // max(per_trial, 1)))
    balanced = math.ceil(trials / math.ceil(trials / largest))  # equal chunks, little padding
    return int(math.ceil(balanced / num_devices) * num_devices)


@functools.lru_cache(maxsize=None)
def _mesh(num_devices: int) -> Mesh:
    return Mesh(np.asarray(jax.devices()[:num_devices]), ("trials",))


@functools.partial(jax.jit, static_argnames=("chunk", "shuffle", "num_devices"))
def _run_chunk(mech, queries, thresholds, root, start, trials, reduce, *, chunk, shuffle,
               num_devices):
    idx = start + jnp.arange(chunk)
    if num_devices > 1:
        idx = jax.lax.with_sharding_constraint(
            idx, NamedSharding(_mesh(num_devices), PartitionSpec("trials")))
    keys = jax.vmap(lambda t: jax.random.fold_in(root, t))(idx)
    out = mech.run_batch(keys, queries, thresholds, shuffle=shuffle)
    if reduce is None:
        return out
    per_trial = reduce(out)
    keep = idx < trials

    def total(x):
        x = jnp.asarray(x)
        mask = keep.reshape(keep.shape + (1,) * (x.ndim - 1))
        return jnp.sum(jnp.where(mask, x, jnp.zeros((), x.dtype)), axis=0)

    return jax.tree_util.tree_map(total, per_trial)


def simulate(mech: Mechanism, queries, thresholds, *, trials: int, seed: int = 0,
             shuffle: bool = False, chunk_size: Optional[int] = None,
             reduce: Optional[Callable[[Outcome], Any]] = None,
             progress: Optional[bool] = None, num_devices: Optional[int] = None):
    """Runs ``trials`` independent trials of ``mech`` on one stream of queries.

    Args:
      mech: a mechanism from ``svtjax.mechanisms.get``.
      queries: float[n] true query answers (item scores), finite.
      thresholds: a finite scalar or float[n] per-query thresholds.
      trials: number of trials (>= 1).
      seed: trial ``t`` uses ``fold_in(jax.random.key(seed), t)``.
      shuffle: give each trial its own uniformly random item order (an exact Fisher–Yates
        shuffle drawn from the trial key); ``Outcome.items`` maps positions back to the caller's
        indices.
      chunk_size: trials per compiled chunk (default: as many as fit ``MEMORY_BUDGET``). The
        result does not depend on it.
      reduce: optional pure function of a batch of Outcomes (leading trial axis) returning a
        pytree of per-trial arrays (leading trial axis); it is applied inside each compiled chunk
        and ``simulate`` returns the sum over all trials of each leaf, so memory stays
        O(chunk) — return e.g. ``(f1, f1 ** 2)`` for a mean and variance. Data the reducer
        needs (true scores, c) should be bound with ``jax.tree_util.Partial(fn, scores, c)``:
        they are then traced arguments, so a new dataset of the same size reuses the compiled
        chunk (a plain closure embeds them as constants and compiles per reducer).
      progress: show a progress bar over chunks (default: when stderr is a terminal and there is
        more than one chunk).
      num_devices: shard each chunk's trials over this many of ``jax.devices()`` (default: all).

    Returns:
      An ``Outcome`` with a leading axis of ``trials`` or, with ``reduce``, the summed pytree.

    Raises:
      TypeError / ValueError: bad arguments (before anything is compiled).
    """
    if not isinstance(mech, Mechanism):
        raise TypeError("mech must be a mechanism built with svtjax.mechanisms.get(name, ...); "
                        f"got {type(mech).__name__}")
    _validate.integer("trials", trials, minimum=1)
    trials = int(trials)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer; got {seed!r}")
    if not isinstance(shuffle, bool):
        raise TypeError(f"shuffle must be True or False; got {shuffle!r}")
    if reduce is not None:
        if not callable(reduce):
            raise TypeError(f"reduce must be a function of a batch of Outcomes; got {reduce!r}")
        if not isinstance(reduce, jax.tree_util.Partial):
            reduce = jax.tree_util.Partial(reduce)
    available = len(jax.devices())
    if num_devices is None:
        num_devices = available
    _validate.integer("num_devices", num_devices, minimum=1)
    if num_devices > available:
        raise ValueError(f"num_devices must be at most the {available} available device(s); "
                         f"got {num_devices}")
    q, t = mech._prepare(queries, thresholds)
    _malloc.tune_allocator()
    n = q.shape[0]
    if chunk_size is None:
        chunk = default_chunk_size(mech, n, trials, itemsize=q.dtype.itemsize, shuffle=shuffle,
                                   num_devices=num_devices)
    else:
        _validate.integer("chunk_size", chunk_size, minimum=1)
        chunk = int(math.ceil(int(chunk_size) / num_devices) * num_devices)
    num_chunks = math.ceil(trials / chunk)

    root = jax.random.key(int(seed))
    run = functools.partial(_run_chunk, chunk=chunk, shuffle=shuffle, num_devices=num_devices)
    starts = range(0, num_chunks * chunk, chunk)
    if progress is None:
        progress = num_chunks > 1 and sys.stderr.isatty()
    if progress:
        try:
            from tqdm.auto import tqdm
            starts = tqdm(starts, total=num_chunks, unit="chunk",
                          desc=f"{getattr(mech, 'name', 'mechanism')} x {trials} trials")
        except ImportError:  # tqdm is optional
            pass

    total = None
    pieces = []
    for start in starts:
        out = run(mech, q, t, root, start, trials, reduce)
        if reduce is None:
            pieces.append(out)
        else:
            total = out if total is None else jax.tree_util.tree_map(jnp.add, total, out)
    if reduce is not None:
        return total
    if len(pieces) == 1:
        if chunk == trials:  # no padding: skip a slice per field
            return pieces[0]
        return jax.tree_util.tree_map(lambda x: x[:trials], pieces[0])
    return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs)[:trials], *pieces)
