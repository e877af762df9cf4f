"""Monte Carlo trials of one mechanism on one stream of queries: :func:`simulate`, and the
seeds every run shares (:func:`seed_key`).

``simulate`` plans its run once and runs its compiled chunks through the one host loop of the
package (``svtjax._driver``: ``Plan``, ``run_chunk``), as ``svtjax.sweep``, the audits and the
command line do, so results agree bit for bit by construction.

Trial ``t`` always uses ``jax.random.fold_in(root, t)`` with ``root = seed_key(seed)``, so an
outcome never depends on the chunk size or on how many devices share the work. Trials run as a
``vmap`` inside one compiled function per chunk; the mechanism is a pytree argument, so its
numeric parameters are traced and a sweep over ε or c reuses the compiled code (one compile per
structure).
"""

from __future__ import annotations

import functools
import math
import os
import sys
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from svtjax import _driver, _validate
from svtjax._core import Outcome
from svtjax.mechanisms.base import Mechanism

__all__ = ["simulate", "trial_keys", "seed_key", "SEED_RANGE"]

SEED_RANGE = _validate.SEED_RANGE
"""Seeds accepted: integers 0 <= seed < 2**64, each giving its own trials (no two alias)."""


def seed_key(seed: int) -> jax.Array:
    """The root key of ``seed`` (0 <= seed < 2**64).

    Seeds below 2**32 give ``jax.random.key(seed)``; a larger seed folds its high 32 bits into
    the key of its low 32 bits, so seeds s and s + 2**32 never give the same trials.

    Raises:
      TypeError / ValueError: not an integer, or outside [0, 2**64).
    """
    seed = _validate.seed("seed", seed)  # one line, also for a jax key passed as a seed
    return _root_key(seed, str(jax.config.jax_default_prng_impl))


@functools.lru_cache(maxsize=256)
def _root_key(seed: int, impl: str) -> jax.Array:
    """:func:`seed_key`'s key, made once per (seed, generator) and kept: a key is immutable, and
    making it runs eager JAX operations whose dispatch is a measurable share of a short
    ``simulate`` call (benchmarks/RESULTS.md, Decisions). Evaluated eagerly even inside a trace,
    so that no tracer is ever kept."""
    del impl  # part of the cache key only: jax.random.key reads the configured generator
    low, high = seed & 0xFFFFFFFF, seed >> 32
    with jax.ensure_compile_time_eval():
        key = jax.random.key(np.uint32(low))
        return key if high == 0 else jax.random.fold_in(key, np.uint32(high))


def trial_keys(seed: int, start: int, count: int) -> jax.Array:
    """Keys of trials ``start .. start+count-1`` (``fold_in(seed_key(seed), t)``)."""
    root = seed_key(seed)
    return jax.vmap(lambda t: jax.random.fold_in(root, t))(start + jnp.arange(count))


def _physical_memory() -> Optional[int]:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _ignore_context(fn, out, ctx):
    del ctx
    return fn(out)


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
      seed: an integer in [0, 2**64); trial ``t`` uses ``fold_in(seed_key(seed), t)``
        (``jax.random.key(seed)`` for seeds below 2**32).
      shuffle: give each trial its own uniformly random item order (an exact Fisher–Yates
        shuffle drawn from the trial key); ``Outcome.items`` maps positions back to the caller's
        indices.
      chunk_size: trials per compiled chunk (default: as many as fit ``MEMORY_BUDGET``). The
        Outcomes do not depend on it, nor do a reducer's integer sums; a reducer's float sums
        are added chunk by chunk, so their last bits follow the chunking (return integer
        counts, or use ``svtjax.sweep``, whose built-in metrics are bit-identical across
        chunk sizes, where that matters).
      reduce: optional pure function of a batch of Outcomes (leading trial axis) returning a
        pytree of per-trial arrays (leading trial axis); it is applied inside each compiled chunk
        and ``simulate`` returns the sum over all trials of each leaf, so memory stays
        O(chunk) — return e.g. ``(f1, f1 ** 2)`` for a mean and variance. Data the reducer
        needs (true scores, c) should be bound with ``jax.tree_util.Partial(fn, scores, c)``:
        they are then traced arguments, so a new dataset of the same size reuses the compiled
        chunk (a plain closure embeds them as constants and compiles per reducer).
      progress: show a progress bar over chunks (default: when stderr is a terminal and there is
        more than one chunk).
      num_devices: shard each chunk's trials over this many of ``jax.local_devices()``
        (default: all).

    Returns:
      An ``Outcome`` with a leading axis of ``trials`` or, with ``reduce``, the summed pytree.

    Raises:
      TypeError / ValueError: bad arguments, numbers the run's dtype cannot hold (parameters,
        noise scales, queries: ``svtjax._validate.computable``), or full Outcomes that cannot
        fit in memory (before anything is compiled).
    """
    trials, num_devices = _checked(mech, trials, shuffle, reduce, num_devices)
    root = seed_key(seed)
    q, t = mech._prepare(queries, thresholds)
    _validate.computable(mech, q.dtype, queries=queries, thresholds=thresholds)
    n = q.shape[0]
    if reduce is None:
        _fits_in_memory(mech, n, trials, q.dtype.itemsize)
    if chunk_size is not None:
        _validate.integer("chunk_size", chunk_size, minimum=1)
    plan = _driver.plan(mech, n, trials, shuffle=shuffle,
                        mode="outcome" if reduce is None else "sum", itemsize=q.dtype.itemsize,
                        num_devices=num_devices, chunk_size=chunk_size)
    wrapped = None
    if reduce is not None:
        if not isinstance(reduce, jax.tree_util.Partial):
            reduce = jax.tree_util.Partial(reduce)
        wrapped = jax.tree_util.Partial(_ignore_context, reduce)
    num_chunks = math.ceil(trials / plan.chunk)
    if progress is None:
        progress = num_chunks > 1 and sys.stderr.isatty()
    total, pieces = None, []
    for _, out in _driver.chunks(plan, mech, q, t, root, trials, wrapped, progress=progress,
                                 desc=f"{getattr(mech, 'name', 'mechanism')} x {trials} trials"):
        if reduce is None:
            pieces.append(out)
        else:
            total = out if total is None else jax.tree_util.tree_map(jnp.add, total, out)
    if reduce is not None:
        return total
    if len(pieces) == 1 and plan.chunk == trials:  # no padding: nothing to join or cut
        return pieces[0]
    return _joined(trials, tuple(pieces))


@functools.partial(jax.jit, static_argnums=0)
def _joined(trials: int, pieces: tuple) -> Any:
    """The chunks' Outcomes joined along the trial axis, cut to ``trials``: one program per
    run shape (op by op, every field's join and cut was a program of its own)."""
    return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs)[:trials], *pieces)


def _checked(mech, trials, shuffle, reduce, num_devices) -> tuple[int, int]:
    """``simulate``'s arguments checked (one clear error each); returns the trials and the
    devices as ints."""
    if not isinstance(mech, Mechanism):
        raise TypeError("mech must be a mechanism built with svtjax.mechanisms.get(name, ...); "
                        f"got {type(mech).__name__}")
    _validate.integer("trials", trials, minimum=1)
    if not isinstance(shuffle, bool):
        raise TypeError(f"shuffle must be True or False; got {shuffle!r}")
    if reduce is not None and not callable(reduce):
        raise TypeError(f"reduce must be a function of a batch of Outcomes; got {reduce!r}")
    available = len(jax.local_devices())
    if num_devices is None:
        num_devices = available
    _validate.integer("num_devices", num_devices, minimum=1)
    if num_devices > available:
        raise ValueError(f"num_devices must be at most the {available} available device(s); "
                         f"got {num_devices}")
    return int(trials), int(num_devices)


def _fits_in_memory(mech, n: int, trials: int, itemsize: int) -> None:
    """Refuses, before anything compiles, full Outcomes larger than the machine's memory."""
    need, have = _driver.outcome_bytes(mech, n, trials, itemsize), _physical_memory()
    if have is not None and need > have:
        raise ValueError(
            f"the full Outcome of {trials} trials x {mech.stream_length(n)} positions would "
            f"take {need / 2**30:.1f} GiB, more than this machine's {have / 2**30:.1f} GiB "
            "of memory; pass reduce= (per-trial statistics summed inside each compiled "
            "chunk, memory O(chunk)) or run fewer trials")
