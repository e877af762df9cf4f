"""The one host loop of every run: :func:`plan` makes a run's static choices once (a
:class:`Plan`: trials per chunk, devices, the engine's per-platform choices, grouping, what a
chunk returns), :func:`run_chunk` is the compiled chunk, with the plan as its one static
argument, and :func:`chunks` is the one loop over a run's chunks. ``svtjax.simulate``,
``svtjax.sweep``, the audits (through ``simulate``) and the command line all run trials through
these, so they agree bit for bit by construction.

Trial ``t`` always uses ``fold_in(root, t)``, so no choice of the plan changes a number.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Iterable, Iterator, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from svtjax import _interrupt, _rng
from svtjax import engine as _engine
from svtjax.mechanisms.base import Mechanism

__all__ = ["Plan", "plan", "chunks", "run_chunk", "TrialContext", "MODES", "MEMORY_BUDGET",
           "ACCELERATOR_MEMORY_BUDGET", "AUX_STREAM", "plan_chunk", "outcome_bytes",
           "shuffle_groups", "SHUFFLE_GROUP_BYTES", "GROUP_TRIAL_BYTES"]

MEMORY_BUDGET = 256 * 2**20
"""Bytes of per-chunk working memory ``simulate`` aims for when ``chunk_size`` is None."""

ACCELERATOR_MEMORY_BUDGET = 2 * 2**30
"""The per-chunk working memory on a GPU/TPU when ``chunk_size`` is None: larger chunks are
what fill an accelerator (the faster of the budgets measured on a GPU; benchmarks/RESULTS.md,
Decisions)."""

AUX_STREAM = 2**32 - 1
"""``fold_in`` index of a run's auxiliary key stream (per-trial thresholds and metric
randomness): never a trial index, so never a mechanism's key."""


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
permutations of the whole chunk (benchmarks/RESULTS.md, Decisions)."""

GROUP_TRIAL_BYTES = 16 * 2**10
"""A shuffled chunk is grouped only while a trial's working set (``svtjax.engine.working_bytes(mech,
n, 4, True)``: its Outcome buffers and its random order) takes at most this many bytes: every group
runs the straggler tail of its own block loop (the compaction levels past the first), whose
per-iteration cost grouping multiplies, and full Outcomes of the groups are joined along the trial
axis. For svt-s on Zipf with the compiled Fisher–Yates block (items read from the permutations) five
groups were slower at n = 10^4 (32 KiB a trial), about even at n = 3,000 (10 KiB) and faster at n =
1,000 (4 KiB); the bound lies between (benchmarks/RESULTS.md, Decisions)."""

_MIN_GROUP = 128
"""Fewer trials per group than this leave the block loop's per-iteration cost unamortised."""


def shuffle_groups(mech, n: int, chunk: int, *, points: int = 1,
                   config: Optional[_engine.Platform] = None) -> int:
    """How many groups a shuffled chunk of ``chunk`` trials (of ``points`` stacked mechanisms)
    runs in, one after another inside the compiled chunk (1: not grouped): equal groups (no
    trial padded) of at least ``_MIN_GROUP`` trials, as many as the divisor of ``chunk``
    nearest to the count whose random orders (the bytes ``shuffle=True`` adds to the trial's
    working set, ``svtjax.engine.working_bytes``) take about ``SHUFFLE_GROUP_BYTES`` each; on a
    CPU only (an accelerator wants the whole batch at once), and only while a trial's working
    set (of one point) is within :data:`GROUP_TRIAL_BYTES`. ``config``: the platform (None:
    JAX's default backend's)."""
    if config is None:
        config = _engine.resolve()
    if config.name != "cpu":
        return 1
    shuffled = _engine.working_bytes(mech, n, 4, True, config)
    if shuffled > GROUP_TRIAL_BYTES:
        return 1
    # what a trial's random order adds to its working set (the engine: its permutation, and an
    # items buffer unless the compiled block leaves the items in the permutation)
    per_trial = (shuffled - _engine.working_bytes(mech, n, 4, False, config)) * max(points, 1)
    if per_trial <= 0:
        return 1
    group = max(_MIN_GROUP, SHUFFLE_GROUP_BYTES // per_trial)
    if group >= chunk:
        return 1
    target = math.ceil(chunk / group)
    divisors = [g for g in range(2, chunk // _MIN_GROUP + 1) if chunk % g == 0]
    return min(divisors, key=lambda g: (abs(g - target), g), default=1)


MODES = ("outcome", "values", "sum")
"""What a compiled chunk returns: the Outcomes, a reducer's per-trial values, or their sum."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """The static choices of one run's compiled chunk, made once by :func:`plan` (and hashed
    into the compiled program: two runs with equal plans share it).

    Attributes:
      chunk: trials per compiled chunk.
      shuffle: each trial in its own random order.
      num_devices: devices sharing a chunk's trials (a divisor of ``chunk``).
      mode: one of :data:`MODES`.
      points: 0 for one mechanism, else the number of mechanisms stacked (vmapped) in a batch.
      width: the engine's positions per loop iteration (None: ``engine``'s for the stream).
      engine: the engine's per-platform choices (``svtjax.engine.Platform``: block width,
        compaction, draws, compiled kernels), resolved once; None: resolved when traced.
      groups: the chunk's trials run in this many equal groups, one after another
        (:func:`shuffle_groups`; a divisor of ``chunk``).
      rule: ``(draw, key)``, a per-trial threshold rule ``draw(key, sorted_scores, c)`` with
        ``c = extra[key]`` added to the thresholds, or None.
    """

    chunk: int
    shuffle: bool
    num_devices: int = 1
    mode: str = "outcome"
    points: int = 0
    width: Optional[int] = None
    engine: Optional[_engine.Platform] = None
    groups: int = 1
    rule: Optional[tuple] = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}; got {self.mode!r}")
        for name in ("chunk", "num_devices", "groups"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        if self.chunk % self.groups or self.chunk % self.num_devices:
            raise ValueError(f"groups = {self.groups} and num_devices = {self.num_devices} must "
                             f"divide chunk = {self.chunk}")


def plan(mech: Mechanism, n: int, trials: int, *, shuffle: bool, mode: str = "outcome",
         itemsize: int = 4, num_devices: int = 1, chunk_size: Optional[int] = None,
         budget: Optional[float] = None, extra_bytes: int = 0, block: int = 1,
         max_points: int = 1, rule: Optional[tuple] = None) -> Plan:
    """The :class:`Plan` of a run of ``trials`` trials of ``mech`` on ``n`` queries.

    The chunk is the largest whose working set (``svtjax.engine.working_bytes``, derived from what
    the mechanism declares, + ``extra_bytes`` per trial, times the points batched) fits ``budget``
    bytes — by default :data:`MEMORY_BUDGET` on a CPU, :data:`ACCELERATOR_MEMORY_BUDGET` on an
    accelerator; for a cache-bound kernel at most the platform's ``cache_chunk_bytes``
    (``svtjax.engine.chunk_budget``) — or ``chunk_size`` rounded up to a multiple of the devices.
    With ``block`` > 1 (a sweep merging per-trial values in blocks of that many trials), the chunk
    is a multiple of ``block`` (a run of at most ``block`` trials: one chunk, rounded up to a
    multiple of 8) and shared by the most devices up to ``num_devices`` that divide it; up to
    ``max_points`` mechanisms of the same structure are stacked in a batch as far as the budget
    allows. No choice changes a number: trial t always draws from ``fold_in(root, t)``.
    """
    platform = jax.default_backend()
    engine = _engine.resolve(platform)
    if budget is None:
        budget = MEMORY_BUDGET if platform == "cpu" else ACCELERATOR_MEMORY_BUDGET
    budget = _engine.chunk_budget(mech, budget, engine)
    per_trial = _engine.working_bytes(mech, n, itemsize, shuffle, engine) + extra_bytes
    devices = num_devices
    if chunk_size is not None:
        chunk = int(math.ceil(int(chunk_size) / num_devices) * num_devices)
    elif block == 1:
        chunk = plan_chunk(trials, per_trial, budget, multiple=num_devices)
    else:
        chunk = (-(-trials // 8) * 8 if trials <= block
                 else plan_chunk(trials, per_trial, budget, multiple=block))
        devices = max(d for d in range(1, num_devices + 1) if chunk % d == 0)
    slots = max(1, int(budget // max(per_trial, 1)))
    points = max(1, min(max_points, slots // chunk))
    groups = (shuffle_groups(mech, n, chunk, points=points, config=engine)
              if shuffle and devices == 1 else 1)
    return Plan(chunk=chunk, shuffle=shuffle, num_devices=devices, mode=mode,
                points=0 if points == 1 else points, width=engine.block_width(n),
                engine=engine, groups=groups, rule=rule)


def chunks(plan: Plan, mech, queries, thresholds, root, trials: int, reduce=None, extra=None,
           *, progress: bool = False, desc: str = "") -> Iterator[tuple[int, Any]]:
    """The one chunk loop: ``(start, output)`` of each compiled chunk of a run of ``trials``
    (:func:`run_chunk` with ``plan``), in order. Before each chunk a Ctrl-C that a caller
    swallowed stops the run (``svtjax._interrupt``); ``progress`` shows a tqdm bar over the
    chunks when tqdm is installed."""
    count = math.ceil(trials / plan.chunk)
    starts: Iterable[int] = range(0, count * plan.chunk, plan.chunk)
    if progress:
        try:
            from tqdm.auto import tqdm

            starts = tqdm(starts, total=count, unit="chunk", desc=desc)
        except ImportError:  # tqdm is optional
            pass
    for start in starts:
        _interrupt.check()
        yield start, run_chunk(mech, queries, thresholds, root, start, trials, reduce, extra,
                               plan=plan)


def _trial_keys(plan: Plan, queries, root, start, extra):
    """A chunk's trial indices, mechanism keys, auxiliary keys, threshold offsets (a per-trial
    threshold rule's draws, else None) and per-trial thresholds (NaN without a rule)."""
    idx = start + jnp.arange(plan.chunk)
    if plan.num_devices > 1:
        idx = jax.lax.with_sharding_constraint(
            idx, NamedSharding(_mesh(plan.num_devices), PartitionSpec("trials")))
    # jax.random.fold_in's keys, through svtjax._rng (cheaper to lower in every program)
    keys = _rng.fold_in_keys(root, idx)
    aux = _rng.fold_in_keys(_rng.fold_in_keys(root, AUX_STREAM), idx)
    offsets = None
    per_trial_t = jnp.full(idx.shape, jnp.nan, queries.dtype)
    if plan.rule is not None:  # each trial draws its own threshold (added to ``thresholds``)
        desc = jnp.sort(queries)[::-1]
        draw, c = plan.rule
        offsets = jax.vmap(lambda a: draw(a, desc, extra[c]))(
            _rng.fold_in_keys(aux, 0)).astype(queries.dtype)
        per_trial_t = offsets
    return idx, keys, aux, offsets, per_trial_t


def _one_point(plan: Plan, mech, queries, thresholds, root, start, trials, reduce, extra):
    def run(idx, keys, aux, offsets, per_trial_t):
        out = mech.run_batch(keys, queries, thresholds, shuffle=plan.shuffle, offsets=offsets,
                             width=plan.width, engine=plan.engine)
        if plan.mode == "outcome":
            return out
        ctx = TrialContext(idx, per_trial_t, _rng.fold_in_keys(aux, 1), mech, extra)
        return reduce(out, ctx)

    batch = _trial_keys(plan, queries, root, start, extra)
    chunk, groups = plan.chunk, plan.groups
    if groups > 1:  # one group after another; each trial keeps its numbers
        split = lambda x: x.reshape((groups, chunk // groups) + x.shape[1:])  # noqa: E731

        def join(x):  # [groups, ...]: the groups' trials side by side on the trial axis
            if plan.mode == "values":  # a sweep's [..., trials]
                x = jnp.moveaxis(x, 0, -2)
                return x.reshape(x.shape[:-2] + (chunk,))
            return x.reshape((chunk,) + x.shape[2:])

        per_trial = jax.lax.map(lambda b: run(*b), jax.tree_util.tree_map(split, batch))
        per_trial = jax.tree_util.tree_map(join, per_trial)
    else:
        per_trial = run(*batch)
    if plan.mode in ("outcome", "values"):
        return per_trial
    keep = batch[0] < trials

    def total(x):
        x = jnp.asarray(x)
        mask = keep.reshape(keep.shape + (1,) * (x.ndim - 1))
        return jnp.sum(jnp.where(mask, x, jnp.zeros((), x.dtype)), axis=0)

    return jax.tree_util.tree_map(total, per_trial)


@functools.partial(jax.jit, static_argnames=("plan",))
def run_chunk(mech, queries, thresholds, root, start, trials, reduce=None, extra=None, *,
              plan: Plan):
    """The compiled chunk: trials ``start .. start + plan.chunk − 1`` of one mechanism (or of a
    batch of ``plan.points`` mechanisms, stacked along a leading axis with their roots,
    thresholds and ``extra``, vmapped); ``plan`` is its one static argument.

    Args:
      mech: a mechanism (pytree), or ``plan.points`` of them stacked.
      queries: float[n]; thresholds: float[n] (``[points, n]`` when batched).
      root: the key of trial 0's ``fold_in`` (``svtjax.simulate.seed_key(seed)``), or
        ``[points]`` of them.
      start, trials: the chunk's first trial index and the run's number of trials (for masking
        the padding of a last chunk in mode ``"sum"``).
      reduce: ``reduce(outcome_batch, TrialContext) -> pytree of per-trial arrays`` (a
        ``jax.tree_util.Partial``), for mode ``"sum"`` (the trials on each leaf's leading
        axis) or ``"values"`` (on its last axis, as a sweep's [metrics, trials]).
      extra: passed to ``reduce`` as ``ctx.extra``.
      plan: the run's :class:`Plan`.
    """
    fn = functools.partial(_one_point, plan)
    if plan.points == 0:
        return fn(mech, queries, thresholds, root, start, trials, reduce, extra)
    return jax.vmap(lambda m, t, r, e: fn(m, queries, t, r, start, trials, reduce, e))(
        mech, thresholds, root, extra)
