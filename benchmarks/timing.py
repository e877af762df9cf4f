"""Warm timing of one call, and interleaved rounds over several engines."""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable, Optional, Sequence

__all__ = ["MIN_SAMPLE_S", "median", "calls_per_sample", "timed", "interleaved"]

MIN_SAMPLE_S = 0.05
"""A timed sample repeats a short call until it lasts about this long (timeit's autorange), so a
few milliseconds of scheduler noise on a busy machine do not decide a millisecond-scale median."""


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def calls_per_sample(fn: Callable[[], Any], min_sample_s: float = MIN_SAMPLE_S) -> int:
    """How many calls of the warm ``fn`` make a sample of about ``min_sample_s`` (1 to 100)."""
    t0 = time.perf_counter()
    fn()
    estimate = time.perf_counter() - t0
    return int(min(100, max(1, math.ceil(min_sample_s / max(estimate, 1e-6)))))


def timed(fn: Callable[[], Any], repeats: int, min_sample_s: float = MIN_SAMPLE_S,
          number: Optional[int] = None) -> tuple[list, Any, int]:
    """``repeats`` samples of ``fn``'s per-call wall time.

    ``fn`` must already be warm (compiled). A call shorter than ``min_sample_s`` is repeated
    within one sample (at most 100 times; ``number`` fixes the count instead of estimating it
    from one extra call) and the sample is divided by the count.

    Returns:
      (per-call seconds of each sample, the last output, calls per sample).
    """
    if number is None:
        number = calls_per_sample(fn, min_sample_s) if min_sample_s > 0 else 1
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            out = fn()
        times.append((time.perf_counter() - t0) / number)
    return times, out, number


def interleaved(fns: dict, rounds: int, warmup: int = 1) -> dict:
    """Times several engines in alternation, one sample of each per round.

    ``fns`` maps an engine name to a timing function called with ``repeats=1`` that returns a
    row with ``times_s`` (a one-element list) or ``{"status": "skipped", "reason": ...}``.
    Every engine samples the same stretches of machine time: on a shared VM the speed of a
    multi-threaded run changes for seconds at a time, and timing engines one after another would
    let such a stretch fall on one of them only. The first ``warmup`` rounds are not results
    (their samples go to ``warmup_times_s``): they include each engine's compilation and its
    first calls on freshly allocated memory. An engine that raises or is skipped becomes a
    skipped row and is not called again.

    Returns:
      engine -> row with every timed sample in ``times_s``, their median in ``median_s`` and
      ``interleaved_rounds``; ``compile_s`` = first call minus the median where the row has a
      ``first_call_s``.
    """
    rows: dict = {}
    for r in range(warmup + rounds):
        for name, fn in fns.items():
            if rows.get(name, {}).get("status") == "skipped":
                continue
            try:
                row = fn(1)
            except Exception as err:  # noqa: BLE001 - a failing engine must not stop the run
                row = {"status": "skipped", "reason": f"failed: {type(err).__name__}: {err}"}
            if row.get("status") == "skipped":
                rows[name] = row
                continue
            if name not in rows:
                rows[name] = dict(row, times_s=[], warmup_times_s=[])
            else:  # keep the latest outputs (counts), the first call's time
                rows[name].update({k: v for k, v in row.items()
                                   if k not in ("times_s", "first_call_s")})
            key = "warmup_times_s" if r < warmup else "times_s"
            rows[name][key].extend(row["times_s"])
    for row in rows.values():
        if row.get("status") == "skipped":
            continue
        row["median_s"] = median(row["times_s"])
        row["interleaved_rounds"] = rounds
        if "first_call_s" in row:
            row["compile_s"] = max(row["first_call_s"] - row["median_s"], 0.0)
    return rows


def interleaved_calls(calls: dict, rounds: int) -> tuple[dict, dict]:
    """:func:`interleaved` for plain warm calls (``name -> fn()``, one call per sample).

    Returns:
      (the rows of :func:`interleaved`, name -> median seconds).
    """
    def sampler(fn):
        def sample(repeats):
            return {"times_s": timed(fn, repeats, number=1)[0]}
        return sample

    rows = interleaved({name: sampler(fn) for name, fn in calls.items()}, rounds)
    return rows, {name: median(row["times_s"]) for name, row in rows.items()}


def native_and_pure(run: Callable[[str], Any], ways: Sequence[str], rounds: int) -> dict:
    """A compiled kernel against its pure-JAX twin: whether ``run("native")`` and
    ``run("pure")`` return the same arrays (leaf by leaf), then every way of ``ways`` timed in
    interleaved rounds (:func:`interleaved_calls`).

    Returns:
      {"same_numbers", "timings", "median_s", "pure_over_native"}.
    """
    import functools

    import jax
    import numpy as np

    same = bool(all(np.array_equal(a, b) for a, b in zip(
        jax.tree_util.tree_leaves(run("native")), jax.tree_util.tree_leaves(run("pure")))))
    timings, med = interleaved_calls({w: functools.partial(run, w) for w in ways}, rounds)
    return {"same_numbers": same, "timings": timings, "median_s": med,
            "pure_over_native": med["pure"] / med["native"]}
