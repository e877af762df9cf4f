"""Running a sweep: :func:`run` checks the config and the output directory, then runs the
points group by group (points sharing a compiled kernel), batch by batch, chunk by chunk
through ``svtjax._driver`` (one plan per group, its compiled chunk), saving each finished point
at once, and writes the results."""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import sys
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from svtjax import engine as _engine
from svtjax.datasets._thresholds import ThresholdRule
from svtjax.sweep.config import (
    Metric,
    SweepConfig,
    SweepInterrupted,
    _fail,
    load_config,
)
from svtjax.sweep.exact import _Exact
from svtjax.sweep.grid import Point, _load_datasets, _threshold, expand
from svtjax.sweep.picks import share_picks
from svtjax.sweep.reduce import BLOCK_TRIALS, TRACES, _reducer_fn, _Stats
from svtjax.sweep.report import _rows, _write_outputs
from svtjax.sweep.store import (
    _OutputLock,
    _point_record_path,
    _prepare_out,
    _read_record,
    _wait_for,
    _write_json,
)


def _extra_bytes(k: int, num_metrics: int) -> int:
    """A point's working memory per trial besides the mechanism's
    (``svtjax.engine.working_bytes``): the picks and the per-trial metric values."""
    return 4 * k * 8 + num_metrics * 8


def _bytes_per_trial(mech, n: int, itemsize: int, shuffle: bool, k: int,
                     num_metrics: int) -> int:
    """A point's working memory per trial: the mechanism's plus :func:`_extra_bytes`."""
    return _engine.working_bytes(mech, n, itemsize, shuffle) + _extra_bytes(k, num_metrics)


AUTO_POINTS_PER_BATCH = {"cpu": 1}
"""``points_per_batch = "auto"``: 1 on a CPU, :data:`AUTO_POINTS_PER_BATCH_ACCELERATOR` on a GPU
or TPU. SVT kernels stop early and a vmapped batch runs until its slowest point halts: on a CPU
that costs more than running the points one at a time, while an accelerator gains from the
batch's parallelism."""

AUTO_POINTS_PER_BATCH_ACCELERATOR = 10


def _points_per_batch(config: SweepConfig) -> int:
    import jax

    if config.points_per_batch != "auto":
        return int(config.points_per_batch)
    return AUTO_POINTS_PER_BATCH.get(jax.default_backend(), AUTO_POINTS_PER_BATCH_ACCELERATOR)


# -- running ---------------------------------------------------------------------------------------

@dataclasses.dataclass
class SweepResult:
    """What :func:`run` did.

    Attributes:
      rows: the tidy rows (one per point × metric), as written to ``results.csv``.
      out: the output directory (None when nothing was written).
      files: paths written.
      computed: points computed in this call (this process).
      reused: points read back from an earlier, interrupted or finished, run.
      compiles: group kernels traced in this call, by mechanism name.
      seconds: wall time.
    """

    rows: list
    out: Optional[str]
    files: list
    computed: int
    reused: int
    compiles: dict
    seconds: float


class _Progress:
    def __init__(self, total: int, enabled: Optional[bool], log: Callable[[str], None]):
        self.total, self.done, self.log = total, 0, log
        self.start = time.perf_counter()
        self.bar = None
        if enabled is None:
            enabled = sys.stderr.isatty()
        if enabled and total:
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=total, unit="trial", unit_scale=True, desc="sweep",
                                smoothing=0.1)
            except ImportError:
                self.bar = None

    def update(self, amount: int, what: str) -> None:
        self.done += amount
        if self.bar is not None:
            self.bar.set_postfix_str(what, refresh=False)
            self.bar.update(amount)
            return
        elapsed = time.perf_counter() - self.start
        frac = self.done / self.total if self.total else 1.0
        eta = elapsed / frac - elapsed if frac > 0 else math.nan
        self.log(f"[sweep] {100 * frac:5.1f}% ({self.done}/{self.total} point-trials) "
                 f"{elapsed:.1f}s elapsed, ETA {eta:.0f}s: {what}")

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _group_key(point: Point, mech) -> tuple:
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(mech)
    return (point.dataset, treedef, tuple(np.shape(x) for x in leaves))


def _prepared(config: SweepConfig, mechs: Sequence, cs: Sequence[int], dtype) -> dict:
    """Registered metrics' ``prepare(mech, c)`` values of a batch of points, stacked: name ->
    float[points] (or a dict of them)."""
    import jax
    import jax.numpy as jnp

    out = {}
    for m in config.metrics:
        metric = config.metric(m)
        if metric is not None and metric.prepare is not None:
            values = [metric.prepare(mech, c) for mech, c in zip(mechs, cs)]
            out[m] = jax.tree_util.tree_map(
                lambda *xs: jnp.asarray([float(x) for x in xs], dtype), *values)
    return out


def run(config: Any, out: Optional[str | os.PathLike] = None, *, resume: bool = True,
        progress: Optional[bool] = None, num_devices: Optional[int] = None,
        log: Callable[[str], None] = print, process_index: Optional[int] = None,
        process_count: Optional[int] = None, wait_timeout: float = 3600.0,
        metrics: Sequence[Metric] = (), threshold_rules: Sequence[ThresholdRule] = ()
        ) -> SweepResult:
    """Runs a sweep; returns the tidy rows and writes them to ``out`` (if given).

    Args:
      config: a :class:`SweepConfig`, a dict, a TOML path or a built-in config name.
      out: output directory (``results.csv``, ``results.parquet``, ``results.json``,
        ``points/``). Without it nothing is written and nothing is resumed.
      resume: reuse finished points found in ``out/points`` (same content hash).
      progress: a tqdm bar (default: when stderr is a terminal), else log lines.
      num_devices: shard each chunk's trials over this many local devices (default: all).
      log: where progress lines and messages go.
      process_index, process_count: this process's share of the points (default:
        ``jax.process_index()`` / ``jax.process_count()``, i.e. one share per process of a
        ``jax.distributed`` run). Process 0 waits for the others' points (in ``out/points``,
        which must be on a filesystem every process sees) and writes the results.
      wait_timeout: seconds process 0 waits for the other processes.
      metrics: :class:`Metric` objects the config may name besides the built-in ones.
      threshold_rules: ``ThresholdRule`` objects the config may name as ``threshold``.

    Returns:
      A :class:`SweepResult`. In processes other than 0 its ``rows`` are this process's only.

    Raises:
      SweepConfigError: a bad config, or an ``out`` that cannot be used: a file, a directory
        that cannot be created or written, or one another live sweep is writing to
        (:class:`SweepLockedError`); all before anything is compiled.
      SweepInterrupted: Ctrl-C (a ``KeyboardInterrupt``) during the run; it says how many
        points are saved in ``out/points`` (a rerun resumes from them).
    """
    import jax
    import jax.numpy as jnp

    start_time = time.perf_counter()
    config = load_config(config, metrics=metrics, threshold_rules=threshold_rules)
    if config.dtype == "float64" and not jax.config.jax_enable_x64:
        raise _fail("dtype = \"float64\" needs jax_enable_x64 (set JAX_ENABLE_X64=1, or use "
                    "svtjax sweep, which enables it)")
    dtype = jnp.float64 if config.dtype == "float64" else jnp.float32
    pidx = jax.process_index() if process_index is None else int(process_index)
    pcount = jax.process_count() if process_count is None else int(process_count)
    available = len(jax.local_devices())
    if num_devices is None:
        num_devices = available
    if not 1 <= num_devices <= available:
        raise _fail(f"num_devices must be between 1 and the {available} local device(s); got "
                    f"{num_devices}")
    if pcount > 1 and out is None:
        raise _fail("a sweep split over several processes needs an output directory (out) on "
                    "a filesystem every process sees")
    outdir = _prepare_out(out) if out is not None else None
    # one live sweep per directory: process 0 (the one that writes the results) holds the lock
    lock = _OutputLock(outdir) if outdir is not None and pidx == 0 else None
    if lock is not None:
        lock.acquire()
    try:
        return _run_points(config, outdir, dtype, pidx, pcount, num_devices, resume, progress,
                           log, wait_timeout, start_time)
    finally:
        if lock is not None:
            lock.release()


@dataclasses.dataclass
class _RunState:
    """What the steps of one run share: the points (with their ids, mechanisms and records,
    reused or computed), the exact columns, the progress bar and the count of points
    computed."""

    config: SweepConfig
    outdir: Optional[pathlib.Path]
    dtype: Any
    pidx: int
    points: list
    ids: list
    mechs: list
    records: dict
    exact: _Exact
    bar: Optional[_Progress] = None
    computed: int = 0


def _run_points(config, outdir, dtype, pidx, pcount, num_devices, resume, progress, log,
                wait_timeout, start_time) -> SweepResult:
    """The body of :func:`run` once the output directory is ready (and locked)."""
    scores_by = _load_datasets(config)
    points = expand(config)
    ids = [p.point_id(config) for p in points]
    records: dict[str, dict] = {}
    if outdir is not None and resume:
        for pid, point in zip(ids, points):
            rec = _read_record(_point_record_path(outdir, pid), pid, point, config, log)
            if rec is not None:
                records[pid] = rec
    reused = len(records)

    # groups of points sharing a compiled kernel; each process takes every pcount-th point
    groups: dict[tuple, list[int]] = {}
    mechs = [p.build(checked=False) for p in points]  # expand(config) checked every one
    # em-peeling points of a dataset share one compiled chunk (svtjax.sweep.picks)
    run_mechs = share_picks(points, mechs, config.metrics,
                            [m.name for m in config.extra_metrics])
    for i, (p, m) in enumerate(zip(points, run_mechs)):
        groups.setdefault(_group_key(p, m), []).append(i)
    # which points get exact columns (and one line per mechanism that does not), before any
    # compilation
    exact = _Exact(config, points, mechs, scores_by, log, announce=pidx == 0)
    todo = {key: [i for j, i in enumerate(members) if j % pcount == pidx and ids[i] not in records]
            for key, members in groups.items()}
    exact.expect([i for members in todo.values() for i in members] +
                 [i for i in range(len(points)) if ids[i] in records
                  and not exact.current(records[ids[i]])])
    total = sum(len(v) for v in todo.values()) * config.trials
    state = _RunState(config, outdir, dtype, pidx, points, ids, run_mechs, records, exact,
                      _Progress(total, progress, log))
    traces_before = dict(TRACES)
    try:
        for key, members in todo.items():
            if members:
                _run_group(state, scores_by[key[0]], members, groups[key], num_devices)
    except KeyboardInterrupt:
        saved = sum(1 for pid in ids if pid in records) if outdir is not None else 0
        raise SweepInterrupted(saved, len(points), outdir) from None
    finally:
        state.bar.close()
    compiles = {k: v - traces_before.get(k, 0) for k, v in TRACES.items()
                if v != traces_before.get(k, 0)}
    if pcount > 1 and pidx == 0 and outdir is not None:
        _wait_for(config, outdir, points, ids, records, wait_timeout, log)
    return _finish(state, {"points": len(points), "computed": state.computed, "reused": reused,
                           "processes": pcount, "compiles": compiles}, num_devices, start_time)


def _run_group(state: _RunState, scores_np: np.ndarray, members: list[int],
               group_all: list[int], num_devices: int) -> None:
    """Runs this process's points ``members`` of one group (``group_all``: all its points),
    batch by batch, through one compiled chunk function."""
    import jax
    import jax.numpy as jnp

    from svtjax import _driver

    config, rule = state.config, state.config.threshold_rule()
    scores = jnp.asarray(scores_np, state.dtype)
    n = scores.shape[0]
    k = max(state.points[i].c for i in group_all)
    m0 = state.mechs[members[0]]
    plan = _driver.plan(m0, n, config.trials, shuffle=config.shuffle, mode="values",
                        itemsize=scores.dtype.itemsize, num_devices=num_devices,
                        budget=config.memory_budget_mb * 2**20,
                        extra_bytes=_extra_bytes(k, len(config.metrics)), block=BLOCK_TRIALS,
                        max_points=min(len(members), _points_per_batch(config)),
                        rule=None if rule is None else (rule.draw, "c"))
    pb = max(plan.points, 1)
    reducer = jax.tree_util.Partial(
        _reducer_fn(k, tuple(config.metrics), tuple(config.extra_metrics),
                    rule is not None), scores)
    for b0 in range(0, len(members), pb):
        batch = members[b0:b0 + pb]
        padded = batch + [batch[-1]] * (pb - len(batch))
        args = _batch_args(state, scores_np, padded)
        stats, kept, seconds = _run_batch(state, plan, scores, args, batch, reducer)
        _save_batch(state, scores_np, batch, stats, kept, seconds)


def _batch_args(state: _RunState, scores_np: np.ndarray, padded: list[int]) -> tuple:
    """The arguments of a batch's chunk calls: the mechanism (stacked for several points), the
    base thresholds, the root keys and the reducer's per-point values (c, threshold, prepared
    metric values)."""
    import jax
    import jax.numpy as jnp

    from svtjax.simulate import seed_key

    config, points, mechs, dtype = state.config, state.points, state.mechs, state.dtype
    n = scores_np.shape[0]
    thr = [_threshold(config, scores_np, points[i].c) for i in padded]
    # a per-trial rule draws each trial's threshold, added to zeros
    base_t = np.zeros((len(padded), n)) if config.threshold_rule() is not None else \
        np.repeat(np.asarray(thr, np.float64)[:, None], n, axis=1)
    extra = {"c": jnp.asarray([points[i].c for i in padded], jnp.int32),
             "threshold": jnp.asarray(np.nan_to_num(thr), dtype),
             "prepared": _prepared(config, [mechs[i] for i in padded],
                                   [points[i].c for i in padded], dtype)}
    roots = [seed_key(points[i].seed(config)) for i in padded]
    if len(padded) == 1:
        return (mechs[padded[0]], jnp.asarray(base_t[0], dtype), roots[0],
                jax.tree_util.tree_map(lambda x: x[0], extra))
    return (jax.tree_util.tree_map(
        lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]),
        *[mechs[i] for i in padded]), jnp.asarray(base_t, dtype),
        jnp.stack(roots), extra)


def _run_batch(state: _RunState, plan, scores, args: tuple, batch: list[int], reducer) -> tuple:
    """Runs a batch's trials chunk by chunk (``plan``: its :class:`svtjax._driver.Plan`);
    returns its statistics (:class:`_Stats`), the per-trial values kept for quantiles, and its
    wall time per point."""
    import jax

    from svtjax import _driver

    config, points = state.config, state.points
    pb = max(plan.points, 1)
    stats = _Stats((pb, len(config.metrics)))
    kept = []  # per-trial values, only for quantiles
    t0 = time.perf_counter()
    for s, vals in _driver.chunks(plan, args[0], scores, args[1], args[2], config.trials,
                                  reducer, args[3]):
        vals = np.asarray(jax.device_get(vals))
        if pb == 1:
            vals = vals[None]
        stats.add_blocks(vals, min(plan.chunk, config.trials - s))
        if config.quantiles:
            kept.append(np.asarray(vals, np.float64)[..., :config.trials - s])
        label = points[batch[0]].label
        state.bar.update(len(batch) * min(plan.chunk, config.trials - s),
                         f"{points[batch[0]].dataset} {label}")
    return stats, kept, (time.perf_counter() - t0) / len(batch)


def _save_batch(state: _RunState, scores_np: np.ndarray, batch: list[int], stats: _Stats,
                kept: list, seconds: float) -> None:
    """Each point's record (statistics, quantiles, exact values), kept and written at once."""
    config, points, ids = state.config, state.points, state.ids
    for j, i in enumerate(batch):
        rec = {"point_id": ids[i], "seed": points[i].seed(config),
               "threshold": _threshold(config, scores_np, points[i].c),
               "seconds": seconds, "process": state.pidx,
               "stats": {m: [float(stats.n[j, q]), float(stats.mean[j, q]),
                             float(stats.m2[j, q])]
                         for q, m in enumerate(config.metrics)}}
        if config.quantiles:
            every = np.concatenate(kept, axis=-1)[j]
            rec["quantiles"] = {m: [float(v) for v in np.quantile(
                every[q], config.quantiles)] for q, m in enumerate(config.metrics)}
        exact_rec = state.exact.compute(i)
        if exact_rec is not None:
            rec["exact"] = exact_rec
        state.records[ids[i]] = rec
        if state.outdir is not None:
            _write_json(_point_record_path(state.outdir, ids[i]), rec)
        state.computed += 1


def _finish(state: _RunState, info: dict, num_devices: int, start_time: float) -> SweepResult:
    """Exact values for reused records that lack them, the rows of this process's points, and
    (process 0, with an output directory) the results files."""
    import jax

    config, outdir, ids, records, exact = (state.config, state.outdir, state.ids,
                                           state.records, state.exact)
    mine = [i for i in range(len(state.points)) if ids[i] in records]
    for i in mine:  # reused records computed without exact (or in another dtype)
        rec = records[ids[i]]
        if config.exact and i not in exact.why and not exact.current(rec):
            exact_rec = exact.compute(i)
            if exact_rec is not None:
                records[ids[i]] = rec = {**rec, "exact": exact_rec}
                if outdir is not None:
                    _write_json(_point_record_path(outdir, ids[i]), rec)
    rows = _rows(config, state.points, ids, records, mine, exact)
    files: list[str] = []
    if outdir is not None and state.pidx == 0:
        files = _write_outputs(config, rows, outdir, {
            "points": info["points"], "computed": info["computed"], "reused": info["reused"],
            "processes": info["processes"],
            "devices": [str(d) for d in jax.local_devices()[:num_devices]],
            "compiles": info["compiles"], "seconds": time.perf_counter() - start_time,
            **({"exact": exact.summary()} if config.exact else {})})
    return SweepResult(rows, None if outdir is None else str(outdir), files, info["computed"],
                       info["reused"], info["compiles"], time.perf_counter() - start_time)
