"""Monte Carlo driver: many independent trials of one mechanism, chunked, sharded, compiled once.

This is the one driver: ``svtjax.simulate``, ``svtjax.sweep`` (which vmaps it over a batch of
grid points), the ``svtjax simulate`` command and the audits all run trials through the compiled
chunk function :func:`run_chunk`, its chunk planner :func:`default_chunk_size` and its device
mesh, so results agree bit for bit by construction.

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
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from svtjax import _interrupt, _rng, _validate
from svtjax._core import Outcome
from svtjax.mechanisms import _engine
from svtjax.mechanisms.base import Mechanism

__all__ = ["simulate", "trial_keys", "seed_key", "default_chunk_size", "plan_chunk",
           "outcome_bytes",
           "TrialContext", "run_chunk", "shuffle_groups", "MEMORY_BUDGET",
           "SHUFFLE_GROUP_BYTES", "GROUP_TRIAL_BYTES", "SEED_RANGE"]

MEMORY_BUDGET = 256 * 2**20
"""Bytes of per-chunk working memory ``simulate`` aims for when ``chunk_size`` is None."""

ACCELERATOR_MEMORY_BUDGET = 2 * 2**30
"""The per-chunk working memory on a GPU/TPU when ``chunk_size`` is None: larger chunks are
what fill an accelerator (on an H200, a 2 GiB budget ran the 10^6-trial sweep benchmark ~5x
faster than 256 MiB; benchmarks/results/sweep-memory-*-gpu-*.json)."""

SEED_RANGE = _validate.SEED_RANGE
"""Seeds accepted: integers 0 <= seed < 2**64, each giving its own trials (no two alias)."""

AUX_STREAM = 2**32 - 1
"""``fold_in`` index of a run's auxiliary key stream (per-trial thresholds and metric
randomness): never a trial index, so never a mechanism's key."""


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
    making it runs eager JAX operations whose dispatch took about a twentieth of a 10-ms
    ``simulate`` call (``benchmarks/bench_dispatch.py``). Evaluated eagerly even inside a trace,
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


def outcome_bytes(mech: Mechanism, n: int, trials: int, itemsize: int) -> int:
    """Bytes of the full Outcome of ``trials`` trials (answers int8, items int32, values and
    cost floats at each of the L stream positions)."""
    return trials * mech.stream_length(n) * (1 + 4 + 2 * itemsize)


def plan_chunk(trials: int, per_trial: int, budget: float, *, multiple: int = 1) -> int:
    """Trials per compiled chunk: a multiple of ``multiple`` (the devices sharing a chunk; a
    sweep's merge block) whose working set (``per_trial`` bytes each) fits ``budget`` — unless
    even ``multiple`` trials do not —, balanced over the chunks so that little padding is
    computed."""
    slots = max(1, int(budget // max(per_trial, 1)))
    whole = math.ceil(trials / multiple) * multiple  # every trial in one chunk
    largest = max(multiple, (min(whole, slots) // multiple) * multiple)
    balanced = math.ceil(trials / math.ceil(trials / largest))  # equal chunks, little padding
    return int(math.ceil(balanced / multiple) * multiple)


def default_chunk_size(mech: Mechanism, n: int, trials: int, *, itemsize: int = 4,
                       shuffle: bool = False, num_devices: int = 1,
                       memory_budget: Optional[int] = None,
                       platform: Optional[str] = None, extra_bytes: int = 0) -> int:
    """The largest chunk whose working set fits ``memory_budget``, a multiple of the devices.

    ``memory_budget`` defaults to ``MEMORY_BUDGET`` on a CPU (at most the mechanism's
    ``cpu_chunk_bytes``) and ``ACCELERATOR_MEMORY_BUDGET`` on an accelerator (``platform``,
    default: that of ``jax.devices()[0]``). ``extra_bytes`` is
    added per trial (a reducer's per-trial values).

    On a CPU, fewer, larger chunks are faster even for reduced runs: on the idle 2-core
    benchmark machine the headline svt-s workload with a counting reducer ran in 3.8 ms as one
    chunk of 1,000 trials against 6.4 ms in ten chunks of 100 (5.2 ms with the ten sub-batches
    inside one compiled call), and 14 ms against 19 ms at n = 1000 x 10,000 trials."""
    if platform is None:
        platform = jax.devices()[0].platform
    if memory_budget is None:
        memory_budget = MEMORY_BUDGET if platform == "cpu" else ACCELERATOR_MEMORY_BUDGET
        if platform == "cpu" and mech.cpu_chunk_bytes is not None:
            memory_budget = min(memory_budget, mech.cpu_chunk_bytes)
    per_trial = mech.working_bytes(n, itemsize, shuffle) + extra_bytes
    return plan_chunk(trials, per_trial, memory_budget, multiple=num_devices)


@functools.lru_cache(maxsize=None)
def _mesh(num_devices: int) -> Mesh:
    return Mesh(np.asarray(jax.local_devices()[:num_devices]), ("trials",))


class TrialContext(NamedTuple):
    """What a chunk's reducer sees besides the Outcomes (inside the compiled chunk).

    Attributes:
      index: int32[chunk], the trial indices.
      thresholds: float[chunk], each trial's threshold when a per-trial threshold rule drew one,
        else NaN.
      keys: key[chunk], per-trial PRNG keys independent of the mechanism's
        (``fold_in(fold_in(fold_in(root, AUX_STREAM), t), 1)``), for randomness a metric adds.
      mech: the mechanism (numeric parameters traced, structure static).
      extra: what the caller passed through (e.g. a sweep point's c and prepared values).
    """

    index: Any
    thresholds: Any
    keys: Any
    mech: Any
    extra: Any


SHUFFLE_GROUP_BYTES = 4 * 2**20
"""On a CPU, a shuffled chunk of small trials (:data:`GROUP_TRIAL_BYTES`) runs its trials in
groups whose random-order state (the engine's Fisher–Yates permutations, and items buffers
where the items are not read from them) takes about this many bytes, one group after another
inside the compiled chunk: the swaps then stay in the caches instead of reaching across the
permutations of the whole chunk (benchmarks/bench_shuffle_groups.py)."""

GROUP_TRIAL_BYTES = 16 * 2**10
"""A shuffled chunk is grouped only while a trial's working set (``mech.working_bytes(n, 4,
True)``: its Outcome buffers and its random order) takes at most this many bytes: every group
runs the straggler tail of its own block loop (the compaction levels past the first), whose
per-iteration cost grouping multiplies, and full Outcomes of the groups are joined along the
trial axis. For svt-s on Zipf with the compiled Fisher–Yates block (items read from the
permutations) five groups were slower at n = 10^4 x 1,000 trials (32 KiB a trial) with the
F1, count and full-Outcome reducers (1.06x, 1.18x, 1.16x the time of one group), about even at
n = 3,000 (10 KiB) and faster at n = 1,000 x 10^4 (4 KiB: 0.85x, 0.87x, 0.91x); the bound
lies between (benchmarks/bench_shuffle_groups.py,
``shuffle-groups-vm-3d1219c7-2026-11-29T103540.json``)."""

_MIN_GROUP = 128
"""Fewer trials per group than this leave the block loop's per-iteration cost unamortised."""


def shuffle_groups(mech, n: int, chunk: int, *, points: int = 1) -> int:
    """How many groups a shuffled chunk of ``chunk`` trials (of ``points`` stacked mechanisms)
    runs in, one after another inside the compiled chunk (1: not grouped): equal groups (no
    trial padded) of at least ``_MIN_GROUP`` trials, as many as the divisor of ``chunk``
    nearest to the count whose random orders (the bytes ``shuffle=True`` adds to
    ``mech.working_bytes``) take about ``SHUFFLE_GROUP_BYTES`` each; on a CPU only (an
    accelerator wants the whole batch at once), and only while a trial's working set (of one
    point) is within :data:`GROUP_TRIAL_BYTES`."""
    if jax.default_backend() != "cpu":
        return 1
    if mech.working_bytes(n, 4, True) > GROUP_TRIAL_BYTES:
        return 1
    # what a trial's random order adds to its working set (the engine: its permutation, and an
    # items buffer unless the compiled block leaves the items in the permutation)
    per_trial = (mech.working_bytes(n, 4, True) - mech.working_bytes(n, 4, False)) * max(points, 1)
    if per_trial <= 0:
        return 1
    group = max(_MIN_GROUP, SHUFFLE_GROUP_BYTES // per_trial)
    if group >= chunk:
        return 1
    target = math.ceil(chunk / group)
    divisors = [g for g in range(2, chunk // _MIN_GROUP + 1) if chunk % g == 0]
    return min(divisors, key=lambda g: (abs(g - target), g), default=1)


def _one_point(mech, queries, thresholds, root, start, reduce, extra, *, chunk, shuffle,
               num_devices, rule, mode, trials, width, groups, compaction):
    idx = start + jnp.arange(chunk)
    if num_devices > 1:
        idx = jax.lax.with_sharding_constraint(
            idx, NamedSharding(_mesh(num_devices), PartitionSpec("trials")))
    # jax.random.fold_in's keys, through svtjax._rng (cheaper to lower in every program)
    keys = _rng.fold_in_keys(root, idx)
    aux = _rng.fold_in_keys(_rng.fold_in_keys(root, AUX_STREAM), idx)
    offsets = None
    per_trial_t = jnp.full(idx.shape, jnp.nan, queries.dtype)
    if rule is not None:  # each trial draws its own threshold (added to ``thresholds``)
        desc = jnp.sort(queries)[::-1]
        draw, c = rule
        offsets = jax.vmap(lambda a: draw(a, desc, extra[c]))(
            _rng.fold_in_keys(aux, 0)).astype(queries.dtype)
        per_trial_t = offsets

    def run(idx, keys, aux, offsets, per_trial_t):
        with _engine.compaction(compaction):
            out = mech.run_batch(keys, queries, thresholds, shuffle=shuffle, offsets=offsets,
                                 width=width)
        if mode == "outcome":
            return out
        ctx = TrialContext(idx, per_trial_t, _rng.fold_in_keys(aux, 1), mech, extra)
        return reduce(out, ctx)

    batch = (idx, keys, aux, offsets, per_trial_t)
    if groups > 1:  # one group after another; each trial keeps its numbers
        split = lambda x: x.reshape((groups, chunk // groups) + x.shape[1:])  # noqa: E731

        def join(x):  # [groups, ...]: the groups' trials side by side on the trial axis
            if mode == "values":  # a sweep's [..., trials]
                x = jnp.moveaxis(x, 0, -2)
                return x.reshape(x.shape[:-2] + (chunk,))
            return x.reshape((chunk,) + x.shape[2:])

        per_trial = jax.lax.map(lambda b: run(*b), jax.tree_util.tree_map(split, batch))
        per_trial = jax.tree_util.tree_map(join, per_trial)
    else:
        per_trial = run(*batch)
    if mode in ("outcome", "values"):
        return per_trial
    keep = idx < trials

    def total(x):
        x = jnp.asarray(x)
        mask = keep.reshape(keep.shape + (1,) * (x.ndim - 1))
        return jnp.sum(jnp.where(mask, x, jnp.zeros((), x.dtype)), axis=0)

    return jax.tree_util.tree_map(total, per_trial)


@functools.partial(jax.jit, static_argnames=("chunk", "shuffle", "num_devices", "rule", "mode",
                                             "points", "width", "groups", "compaction"))
def run_chunk(mech, queries, thresholds, root, start, trials, reduce=None, extra=None, *,
              chunk: int, shuffle: bool, num_devices: int = 1, rule=None, mode: str = "outcome",
              points: int = 0, width: Optional[int] = None, groups: int = 1,
              compaction: Optional[int] = None):
    """The compiled chunk: trials ``start .. start + chunk − 1`` of one mechanism (or of a batch
    of ``points`` mechanisms, stacked along a leading axis with their roots, thresholds and
    ``extra``, vmapped).

    Args:
      mech: a mechanism (pytree), or ``points`` of them stacked.
      queries: float[n]; thresholds: float[n] (``[points, n]`` when batched).
      root: the key of trial 0's ``fold_in`` (``seed_key(seed)``), or ``[points]`` of them.
      start, trials: the chunk's first trial index and the run's number of trials (for masking
        the padding of a last chunk in ``mode="sum"``).
      reduce: ``reduce(outcome_batch, TrialContext) -> pytree of per-trial arrays`` (a
        ``jax.tree_util.Partial``), for ``mode`` ``"sum"`` (the trials on each leaf's leading
        axis) or ``"values"`` (on its last axis, as a sweep's [metrics, trials]).
      extra: passed to ``reduce`` as ``ctx.extra``.
      chunk, shuffle, num_devices: static.
      rule: ``(draw, key)``: a per-trial threshold rule ``draw(key, sorted_scores, c)`` with
        ``c = extra[key]``, added to ``thresholds``; or None.
      mode: ``"outcome"`` (the Outcomes), ``"values"`` (``reduce``'s per-trial values) or
        ``"sum"`` (their sum over the run's trials).
      points: 0 for one mechanism, else the number of stacked mechanisms.
      width: the engine's positions per loop iteration (static; None: the platform's
        ``svtjax.mechanisms._engine.BLOCK_WIDTH``, read when the chunk is first traced).
      groups: run the chunk's trials in this many equal
        groups one after another (:func:`shuffle_groups`; a divisor of ``chunk``). Every trial
        gets the same numbers either way.
      compaction: the engine's compaction factor (static; None: the platform's
        ``svtjax.mechanisms._engine.COMPACTION``, read when the chunk is first traced). It
        changes no number.
    """
    if chunk % groups:
        raise ValueError(f"groups = {groups} does not divide chunk = {chunk}")
    fn = functools.partial(_one_point, chunk=chunk, shuffle=shuffle, num_devices=num_devices,
                           rule=rule, mode=mode, trials=trials, width=width, groups=groups,
                           compaction=compaction)
    if points == 0:
        return fn(mech, queries, thresholds, root, start, reduce, extra)
    return jax.vmap(lambda m, t, r, e: fn(m, queries, t, r, start, reduce, e))(
        mech, thresholds, root, extra)


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
    if not isinstance(mech, Mechanism):
        raise TypeError("mech must be a mechanism built with svtjax.mechanisms.get(name, ...); "
                        f"got {type(mech).__name__}")
    _validate.integer("trials", trials, minimum=1)
    trials = int(trials)
    root = seed_key(seed)
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
    q, t = mech._prepare(queries, thresholds)
    _validate.computable(mech, q.dtype, queries=queries, thresholds=thresholds)
    n = q.shape[0]
    if reduce is None:
        need, have = outcome_bytes(mech, n, trials, q.dtype.itemsize), _physical_memory()
        if have is not None and need > have:
            raise ValueError(
                f"the full Outcome of {trials} trials x {mech.stream_length(n)} positions would "
                f"take {need / 2**30:.1f} GiB, more than this machine's {have / 2**30:.1f} GiB "
                "of memory; pass reduce= (per-trial statistics summed inside each compiled "
                "chunk, memory O(chunk)) or run fewer trials")
    if chunk_size is None:
        chunk = default_chunk_size(mech, n, trials, itemsize=q.dtype.itemsize, shuffle=shuffle,
                                   num_devices=num_devices)
    else:
        _validate.integer("chunk_size", chunk_size, minimum=1)
        chunk = int(math.ceil(int(chunk_size) / num_devices) * num_devices)
    num_chunks = math.ceil(trials / chunk)

    wrapped = None
    if reduce is not None:
        if not isinstance(reduce, jax.tree_util.Partial):
            reduce = jax.tree_util.Partial(reduce)
        wrapped = jax.tree_util.Partial(_ignore_context, reduce)
    groups = shuffle_groups(mech, n, chunk) if shuffle and num_devices == 1 else 1
    run = functools.partial(run_chunk, chunk=chunk, shuffle=shuffle, num_devices=num_devices,
                            mode="outcome" if reduce is None else "sum",
                            width=_engine.block_width(n),
                            compaction=_engine.compaction_factor(), groups=groups)
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
        _interrupt.check()  # the svtjax command's Ctrl-C, even if its exception was swallowed
        out = run(mech, q, t, root, start, trials, wrapped)
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
