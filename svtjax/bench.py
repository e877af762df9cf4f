"""Benchmark harness: svtjax ``simulate`` against numpy, numba and the RNG floor.

The headline workload (issue "performance"): Zipf scores q_i = 10,000 / i, ``svt-s`` with
monotonic queries, allocation 1:c^(2/3), ε = 0.5, c = 50, threshold T = mean of the 50th and
51st largest scores; n = 10,000 items × 1,000 trials and n = 1,000 × 10,000 trials; items in one
fixed order, or a fresh random order per trial (``simulate(..., shuffle=True)``).

Every registered mechanism is timed on that workload (``stoddard`` and ``chen`` take no ``c``);
``svt-s`` is also run by four baselines:

* ``numpy-reference`` — the line-by-line loops of :mod:`svtjax.reference`, timed on a subset of
  the trials and extrapolated (their ``Draws`` are made by JAX outside the timed region);
* ``numpy-vectorized`` — all noise of a chunk of trials drawn at once, compare, cumsum of ⊤ to find
  the halt (``rng.permuted`` for per-trial orders);
* ``numba`` / ``numba-parallel`` — a per-trial while-loop that draws Laplace noise lazily and stops
  at the c-th ⊤, with a partial Fisher–Yates over only the positions reached (compile excluded);
  skipped, with the reason, when numba is not importable;
* ``rng-floor`` — the time JAX takes to draw n·trials Laplace samples (jitted, warm).

Figures: throughput = trials × n / wall seconds (median of the repetitions, compile excluded and
reported separately), the halted-aware rate = evaluated positions (answers >= 0) / s, ratios of
svtjax to each baseline, and the ratio to the physical limit = throughput / (RNG-floor throughput
÷ fraction of the stream reached) = evaluated rate / RNG-floor rate. Two subprocess checks follow:
the persistent compilation cache (first-call time of a process reading a populated cache vs a cold
process) and the peak RSS of a long ``reduce=`` run per chunk size (bounded by the chunk, not by
the number of trials).

Each run writes one JSON record (machine, device, versions, load average, config, results) to
``benchmarks/results/<machine>-<date>.json`` and prints a table; ``benchmarks/RESULTS.md`` is
generated from those records by :func:`write_results_md` (``benchmarks/update_results.py`` or
``--update-results``), never typed by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import functools
import glob
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Config", "SCHEMA", "HEADLINE", "main", "run", "zipf_workload", "mechanism_params",
           "machine_info", "write_results_md", "render_results_md", "load_records"]

SCHEMA = "svtjax-bench/1"
HEADLINE = "svt-s"
MODES = ("fixed", "shuffle")
ENGINES = ("svtjax", "svtjax-reduce", "numpy-reference", "numpy-vectorized", "numba",
           "numba-parallel", "numba-count", "rng-floor")
BASELINES = ("numba", "numba-parallel", "numba-count", "numpy-vectorized", "numpy-reference")
_REPO = Path(__file__).resolve().parents[1]


# -- configuration -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Config:
    """What one benchmark run measures.

    Attributes:
      sizes: ``(n, trials)`` pairs.
      modes: subset of ``("fixed", "shuffle")``.
      repeats: timed repetitions per case (the median is reported).
      only: mechanism names to time (None: every registered one).
      epsilon, c: the workload's ε and cut-off (``c`` also sets the threshold rank).
      seed: root seed of every engine.
      baselines: run the numpy / numba / RNG-floor baselines (headline mechanism only).
      reference_budget_s: wall seconds of reference-loop trials per repetition (the subset is
        the trials that fit, at least ``reference_min_trials``).
      cache_check: run the persistent compilation-cache subprocess check.
      cache_check_size: ``(n, trials)`` of that check.
      cache_check_cold: also run a process without the cache (else the cache-populating
        process stands in for the cold one; quick mode saves a process this way).
      memory_check: run the peak-RSS subprocess check.
      memory_n, memory_trials, memory_chunks: its workload and chunk sizes.
      quick: the smoke-test configuration (recorded so RESULTS.md can skip it).
      suite: "full", "quick" or "custom" (narrowed by options); RESULTS.md uses "full" records.
    """

    sizes: tuple = ((10_000, 1_000), (1_000, 10_000))
    modes: tuple = MODES
    repeats: int = 5
    only: Optional[tuple] = None
    epsilon: float = 0.5
    c: int = 50
    seed: int = 0
    baselines: bool = True
    reference_budget_s: float = 1.0
    reference_min_trials: int = 3
    reference_max_trials: int = 500
    cache_check: bool = True
    cache_check_size: tuple = (10_000, 1_000)
    cache_check_cold: bool = True
    memory_check: bool = True
    memory_n: int = 1_000
    memory_trials: int = 1_000_000
    memory_chunks: tuple = (1_000, 10_000, 100_000)
    quick: bool = False
    suite: str = "full"


def quick_config(**overrides) -> Config:
    """A smoke-test configuration that runs in well under a minute on two cores."""
    base = dict(sizes=((1_000, 200),), repeats=2, only=(HEADLINE,), reference_budget_s=0.1,
                reference_max_trials=20, cache_check_size=(1_000, 100), cache_check_cold=False,
                memory_n=500,
                memory_trials=20_000, memory_chunks=(500, 5_000), quick=True, suite="quick")
    base.update(overrides)
    return Config(**base)


# -- workload ------------------------------------------------------------------------------

def zipf_workload(n: int, c: int = 50) -> tuple[np.ndarray, float]:
    """Zipf scores q_i = 10,000 / i (float32) and T = mean of the c-th and (c+1)-th largest."""
    if n <= c:
        raise ValueError(f"the workload needs n > c (T sits between the c-th and (c+1)-th "
                         f"largest score); got n={n}, c={c}")
    q = (10_000.0 / np.arange(1, n + 1, dtype=np.float64)).astype(np.float32)
    return q, float((float(q[c - 1]) + float(q[c])) / 2.0)


def mechanism_params(name: str, epsilon: float, c: int, n: Optional[int] = None) -> dict:
    """The workload's parameters for a registered mechanism (those it accepts).

    ε always; the cut-off ``c`` (or ``k`` for top-k selection) where the mechanism takes one;
    ``monotonic=True`` and ``allocation="1:c^(2/3)"`` where it takes them (Zipf scores are
    counts: monotonic queries). With the stream length ``n``: svt-exp's optimal correction uses
    Liu'24's k = ⌊n/c⌋ (§6), and stagewise-svt gets Zhu-Wang'20's Gaussian noises calibrated to
    (ε, δ = 10^-6) with k_max = n and Kairouz et al.'s composition (``"kov"``). Raises
    ``LookupError`` when a required parameter has no value here (the mechanism is then reported
    as skipped).
    """
    from svtjax.mechanisms import parameters
    from svtjax.noise import Gaussian

    accepted = parameters(name)
    values = {"epsilon": epsilon, "c": c, "k": c, "monotonic": True, "allocation": "1:c^(2/3)"}
    if n is not None and name == "svt-exp":
        values["correction_k"] = max(1, n // c)
    if n is not None and name == "stagewise-svt":
        values.update(delta=1e-6, threshold_noise=Gaussian(1.0), query_noise=Gaussian(2.0),
                      k_max=n, composition="kov")
    params = {k: v for k, v in values.items() if k in accepted}
    missing = [k for k, v in accepted.items() if isinstance(v, str) and v == "REQUIRED"
               and k not in params]
    if missing:
        raise LookupError(f"the benchmark workload has no value for required parameter(s) "
                          f"{missing}")
    return params


# -- machine, device, versions -------------------------------------------------------------

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                                  capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> Optional[int]:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def default_machine_id() -> str:
    """Hostname, plus a short machine-id when the hostname is generic."""
    host = socket.gethostname().split(".")[0] or "unknown"
    try:
        with open("/etc/machine-id") as f:
            mid = f.read().strip()[:8]
    except OSError:
        mid = ""
    generic = host.lower() in {"vm", "localhost", "ubuntu", "debian", "unknown", "runner"}
    ident = f"{host}-{mid}" if mid and generic else host
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in ident)


def _load() -> Optional[list]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def machine_info() -> dict:
    mem = _memory_bytes()
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    return {
        "machine_id": default_machine_id(),
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": affinity,
        "memory_gib": None if mem is None else round(mem / 2**30, 2),
        "platform": platform.platform(),
        "architecture": platform.machine(),
    }


def device_info() -> dict:
    devs = jax.devices()
    return {
        "backend": jax.default_backend(),
        "count": len(devs),
        "kind": devs[0].device_kind if devs else None,
        "devices": [str(d) for d in devs],
        "x64": bool(jax.config.jax_enable_x64),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def _version(module: str) -> Optional[str]:
    try:
        mod = __import__(module)
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return None
    return getattr(mod, "__version__", "unknown")


def versions() -> dict:
    import svtjax

    return {
        "python": platform.python_version(),
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "numpy": np.__version__,
        "numba": _version("numba"),
        "scipy": _version("scipy"),
        "svtjax": svtjax.__version__,
    }


def source_state() -> dict:
    """The svtjax source that was timed: git commit, dirty flag, hash of the package files."""
    import hashlib

    pkg = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(pkg.rglob("*.py")):
        digest.update(str(path.relative_to(pkg)).encode())
        digest.update(path.read_bytes())
    state = {"package_sha256": digest.hexdigest()[:16], "git_commit": None, "git_dirty": None}
    try:
        git = lambda *a: subprocess.run(["git", "-C", str(pkg), *a], capture_output=True,  # noqa: E731
                                        text=True, timeout=10)
        head = git("rev-parse", "HEAD")
        if head.returncode == 0:
            state["git_commit"] = head.stdout.strip()
            dirty = git("status", "--porcelain", "--", str(pkg))
            state["git_dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return state


# -- timing helpers ------------------------------------------------------------------------

def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


MIN_SAMPLE_S = 0.05
"""A timed sample repeats a short call until it lasts about this long (timeit's autorange), so a
few milliseconds of scheduler noise on a busy machine do not decide a millisecond-scale median."""


def _timed(fn: Callable[[], Any], repeats: int, min_sample_s: float = MIN_SAMPLE_S
           ) -> tuple[list, Any, int]:
    """``repeats`` samples of ``fn``'s per-call wall time; returns (times, last output, calls
    per sample). ``fn`` must already be warm (compiled)."""
    number = 1
    if min_sample_s > 0:
        t0 = time.perf_counter()
        fn()
        estimate = time.perf_counter() - t0
        number = int(min(100, max(1, math.ceil(min_sample_s / max(estimate, 1e-6)))))
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            out = fn()
        times.append((time.perf_counter() - t0) / number)
    return times, out, number


INTERLEAVED = ("svtjax", "svtjax-reduce", "numba", "numba-count")
"""The head-to-head engines of the headline, timed in interleaved rounds (see
:func:`_interleaved`)."""


def _interleaved(fns: dict, rounds: int, warmup: int = 1) -> dict:
    """Times several engines in alternation: each round takes one sample of each engine in turn
    (``fn(1)``, a timing function called with ``repeats=1``), so that every engine samples the
    same stretches of machine time. On the shared 2-core VM the speed of a multi-threaded run
    changed for seconds at a time (one process timing the same call for a minute alternated
    between a fast and a slow speed; page faults were part of it, see ``svtjax._malloc``);
    timing engines one after another would let such a stretch fall on one of them only. The
    first ``warmup`` rounds are not timed results (their samples go to ``warmup_times_s``):
    they include each engine's compilation and its first calls on freshly allocated memory.
    Returns one row per engine with the ``rounds`` timed samples in ``times_s`` and their
    median."""
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
            elif name not in rows:
                rows[name] = dict(row, times_s=[], warmup_times_s=[])
            if row.get("status") != "skipped":
                key = "warmup_times_s" if r < warmup else "times_s"
                rows[name][key].extend(row["times_s"])
    for row in rows.values():
        if row.get("status") == "skipped":
            continue
        row["median_s"] = _median(row["times_s"])
        row["interleaved_rounds"] = rounds
        if "first_call_s" in row:  # svtjax: its first call (first round) compiled
            row["compile_s"] = max(row["first_call_s"] - row["median_s"], 0.0)
    return rows


def _result(engine: str, mechanism: str, n: int, trials: int, mode: str, **fields) -> dict:
    row = {"engine": engine, "mechanism": mechanism, "n": n, "trials": trials, "mode": mode,
           "status": "ok", "load_1m": (_load() or [None])[0]}
    row.update(fields)
    if row["status"] == "ok" and "median_s" in row:
        median = row["median_s"]
        row["throughput"] = n * trials / median
        if row.get("evaluated") is not None:
            # Of the Outcome's positions: L = n for one pass; k for a top-k selection.
            length = row.setdefault("stream_length", n)
            row["evaluated_fraction"] = row["evaluated"] / (length * trials)
            row["evaluated_rate"] = row["evaluated"] / median
    return row


def _skipped(engine, mechanism, n, trials, mode, reason) -> dict:
    return _result(engine, mechanism, n, trials, mode, status="skipped", reason=reason)


def count_reduce(outcome):
    """Per-trial (evaluated positions, ⊤ answers) — the ``reduce=`` used by the benchmark.

    Read with :func:`svtjax.prefix_counts`, which stops at each trial's halting point like the
    counting numba loop does; ``svt-s`` evaluates exactly a prefix of its stream, so these are
    the totals (tests/test_bench.py checks them against ``sum(answers >= 0)`` and
    ``sum(answers == 1)``).
    """
    import svtjax

    return svtjax.prefix_counts(outcome)


# -- svtjax --------------------------------------------------------------------------------

def time_svtjax(mech, q, T, trials: int, shuffle: bool, repeats: int, seed: int,
                reduce: bool = False) -> dict:
    """First call (compile + run), then ``repeats`` warm calls of ``simulate``."""
    import svtjax

    kwargs = dict(trials=trials, seed=seed, shuffle=shuffle, progress=False)
    if reduce:
        kwargs["reduce"] = count_reduce
    run_once = lambda: jax.block_until_ready(svtjax.simulate(mech, q, T, **kwargs))  # noqa: E731
    t0 = time.perf_counter()
    run_once()
    first = time.perf_counter() - t0
    times, out, number = _timed(run_once, repeats)
    if reduce:
        evaluated, tops = (int(np.asarray(x)) for x in out)
    else:
        answers = np.asarray(out.answers)
        evaluated, tops = int((answers >= 0).sum()), int((answers == 1).sum())
        del answers
    median = _median(times)
    return dict(median_s=median, times_s=times, first_call_s=first,
                compile_s=max(first - median, 0.0), evaluated=evaluated, calls_per_sample=number,
                tops_per_trial=tops / trials, stream_length=int(mech.stream_length(q.shape[0])))


# -- baselines -----------------------------------------------------------------------------

def svt_scales(mech) -> tuple[float, float, int]:
    """(threshold noise scale, query noise scale, c) of a classic SVT mechanism."""
    sc = mech.scales()
    return float(sc.threshold), float(sc.query), int(sc.c)


def time_reference(mech, q, T, trials: int, shuffle: bool, repeats: int, seed: int,
                   budget_s: float, min_trials: int, max_trials: int) -> dict:
    """The numpy reference loop on a subset of trials, extrapolated to ``trials``.

    Trial t uses the same key as in ``simulate``; its ``Draws`` are made by JAX (``mech.draw``)
    outside the timed region. The subset is the first trials whose loops fit ``budget_s``.
    """
    import svtjax
    from svtjax.simulate import trial_keys

    n = q.shape[0]
    cap = min(trials, max_trials)
    keys = trial_keys(seed, 0, cap)
    draws, spent = [], 0.0
    for t in range(cap):
        d = svtjax.mechanisms.to_numpy_draws(mech.draw(keys[t], n, shuffle=shuffle,
                                                       dtype=q.dtype))
        t0 = time.perf_counter()
        svtjax.reference.run(mech, d, q, T)
        spent += time.perf_counter() - t0
        draws.append(d)
        if spent >= budget_s and len(draws) >= min_trials:
            break
    subset = len(draws)

    def loop():
        evaluated = 0
        for d in draws:
            evaluated += int((np.asarray(svtjax.reference.run(mech, d, q, T).answers) >= 0).sum())
        return evaluated

    times, evaluated, _ = _timed(loop, repeats, min_sample_s=0.0)
    scale = trials / subset
    median = _median(times) * scale
    return dict(median_s=median, times_s=[x * scale for x in times],
                evaluated=int(round(evaluated * scale)),
                extrapolated={"timed_trials": subset, "total_trials": trials,
                              "note": "reference loop timed on the first trials and scaled "
                                      "linearly; Draws made by JAX outside the timed region"})


def numpy_vectorized(q, T, rho_scale, nu_scale, c, trials, shuffle, seed,
                     max_elements: int = 1 << 22):
    """svt-s for many trials at once in numpy: answers int8[trials, n], items int32[trials, n].

    Noise for a chunk of trials × n positions is drawn at once (Laplace as the difference of two
    float32 standard exponentials), a trial halts where the cumulative count of ⊤ reaches c.
    """
    n = q.shape[0]
    rng = np.random.default_rng(seed)
    f32 = np.float32
    q32 = np.asarray(q, f32)
    t32 = np.broadcast_to(np.asarray(T, f32), (n,))
    answers = np.empty((trials, n), np.int8)
    items = np.empty((trials, n), np.int32)
    idx = np.arange(n, dtype=np.int32)
    step = max(1, max_elements // n)
    evaluated = 0
    for s in range(0, trials, step):
        k = min(step, trials - s)
        rho = f32(rho_scale) * (rng.standard_exponential(k, dtype=f32)
                                - rng.standard_exponential(k, dtype=f32))
        noisy = rng.standard_exponential((k, n), dtype=f32)
        noisy -= rng.standard_exponential((k, n), dtype=f32)
        noisy *= f32(nu_scale)
        if shuffle:
            order = rng.permuted(np.broadcast_to(idx, (k, n)), axis=1)
            noisy += q32[order]
            above = noisy >= t32[order] + rho[:, None]
        else:
            order = np.broadcast_to(idx, (k, n))
            noisy += q32
            above = noisy >= t32 + rho[:, None]
        before = np.cumsum(above, axis=1, dtype=np.int32)
        before -= above
        active = before < c
        answers[s:s + k] = np.where(active, above.astype(np.int8), np.int8(-1))
        items[s:s + k] = np.where(active, order, np.int32(-1))
        evaluated += int(active.sum())
    return answers, items, evaluated


@functools.lru_cache(maxsize=None)
def numba_kernels():
    """(serial, parallel) numba kernels; raises ImportError when numba is not importable."""
    import numba

    def trial(q, T, rho_scale, nu_scale, c, shuffle, store, answers, items, t, perm, swaps):
        n = q.shape[0]
        rho = np.random.laplace(0.0, rho_scale)
        count = 0
        p = 0
        while p < n:
            if shuffle:  # partial Fisher–Yates: only the positions reached
                j = p + np.random.randint(0, n - p)
                tmp = perm[p]
                perm[p] = perm[j]
                perm[j] = tmp
                swaps[p] = j
                i = perm[p]
            else:
                i = p
            above = q[i] + np.random.laplace(0.0, nu_scale) >= T[i] + rho
            if store:
                answers[t, p] = 1 if above else 0
                items[t, p] = i
            p += 1
            if above:
                count += 1
                if count >= c:
                    break
        if shuffle:  # undo the swaps so perm is the identity for the next trial
            for k in range(p - 1, -1, -1):
                j = swaps[k]
                tmp = perm[k]
                perm[k] = perm[j]
                perm[j] = tmp
        return p

    trial_jit = numba.njit(cache=False)(trial)

    def serial(q, T, rho_scale, nu_scale, c, trials, shuffle, store, seed, answers, items):
        np.random.seed(seed)
        n = q.shape[0]
        perm = np.arange(n)
        swaps = np.empty(n, np.int64)
        evaluated = 0
        for t in range(trials):
            evaluated += trial_jit(q, T, rho_scale, nu_scale, c, shuffle, store, answers, items,
                                   t, perm, swaps)
        return evaluated

    def parallel(q, T, rho_scale, nu_scale, c, trials, shuffle, store, seed, answers, items,
                 num_parts):
        n = q.shape[0]
        per = (trials + num_parts - 1) // num_parts
        counts = np.zeros(num_parts, np.int64)
        for part in numba.prange(num_parts):
            np.random.seed(seed + part)  # seeds this thread's generator
            perm = np.arange(n)
            swaps = np.empty(n, np.int64)
            evaluated = 0
            for t in range(part * per, min(trials, (part + 1) * per)):
                evaluated += trial_jit(q, T, rho_scale, nu_scale, c, shuffle, store, answers,
                                       items, t, perm, swaps)
            counts[part] = evaluated
        return counts.sum()

    return (numba.njit(cache=False)(serial),
            numba.njit(cache=False, parallel=True)(parallel))


def run_numba(kernel, q, T, rho_scale, nu_scale, c, trials, shuffle, seed, parallel=False,
              store=True):
    """Runs a numba kernel; ``store=False`` only counts (like ``simulate`` with a reducer)."""
    n = q.shape[0]
    shape = (trials, n) if store else (1, 1)
    answers = np.full(shape, -1, np.int8)
    items = np.full(shape, -1, np.int32)
    q64 = np.asarray(q, np.float64)
    t64 = np.ascontiguousarray(np.broadcast_to(np.asarray(T, np.float64), (n,)))
    args = (q64, t64, float(rho_scale), float(nu_scale), int(c), int(trials), bool(shuffle),
            bool(store), int(seed), answers, items)
    if parallel:
        import numba

        args = args + (4 * numba.get_num_threads(),)
    evaluated = int(kernel(*args))
    return answers, items, evaluated


def time_numba(mech, q, T, trials, shuffle, repeats, seed, parallel: bool,
               store: bool = True) -> dict:
    try:
        serial, par = numba_kernels()
    except ImportError as err:
        return {"status": "skipped", "reason": f"numba is not importable ({err})"}
    import numba

    kernel = par if parallel else serial
    rho_scale, nu_scale, c = svt_scales(mech)
    t0 = time.perf_counter()
    run_numba(kernel, q[:min(len(q), 64)], T, rho_scale, nu_scale, c, 2, shuffle, seed,
              parallel, store)
    first = time.perf_counter() - t0
    times, out, number = _timed(lambda: run_numba(kernel, q, T, rho_scale, nu_scale, c, trials,
                                          shuffle, seed, parallel, store), repeats)
    layer = None
    if parallel:
        try:
            layer = numba.threading_layer()
        except ValueError:  # no parallel region has run
            pass
    return dict(median_s=_median(times), times_s=times, compile_s=first, calls_per_sample=number,
                evaluated=out[2], threads=numba.get_num_threads() if parallel else 1,
                threading_layer=layer,
                note="float64 arithmetic, numba's np.random (Laplace by inversion); " + (
                    "outputs answers int8[trials,n] and items int32[trials,n]" if store else
                    "counts evaluated positions only (no output arrays)"))


def time_vectorized(mech, q, T, trials, shuffle, repeats, seed) -> dict:
    rho_scale, nu_scale, c = svt_scales(mech)
    times, out, number = _timed(
        lambda: numpy_vectorized(q, T, rho_scale, nu_scale, c, trials, shuffle, seed), repeats)
    return dict(median_s=_median(times), times_s=times, evaluated=out[2], calls_per_sample=number,
                note="float32; outputs answers int8[trials,n] and items int32[trials,n]")


def time_rng_floor(n: int, trials: int, repeats: int, seed: int) -> dict:
    """Time for JAX to draw n·trials float32 Laplace samples (jitted, warm)."""
    draw = jax.jit(lambda key: jax.random.laplace(key, (trials, n), jnp.float32))
    key = jax.random.key(seed)
    t0 = time.perf_counter()
    jax.block_until_ready(draw(key))
    first = time.perf_counter() - t0
    times, _, number = _timed(lambda: jax.block_until_ready(draw(key)), repeats)
    median = _median(times)
    return dict(median_s=median, times_s=times, compile_s=max(first - median, 0.0),
                calls_per_sample=number, evaluated=n * trials,
                note="jax.random.laplace(key, (trials, n), float32)")


# -- subprocess checks ---------------------------------------------------------------------

def _child_env() -> dict:
    env = dict(os.environ)
    root = str(_REPO)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run_child(kind: str, spec: dict, timeout: float = 900.0) -> dict:
    code = ("import time; t0 = time.perf_counter(); import sys, json; from svtjax import bench; "
            f"bench._child({kind!r}, json.loads(sys.argv[1]), t0)")
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], capture_output=True,
                          text=True, env=_child_env(), timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"benchmark subprocess {kind} failed (rc={proc.returncode}): "
                           f"{proc.stderr.strip()[-2000:]}")
    return json.loads(lines[-1])


def _getrusage_peak_bytes() -> int:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB


def _vm_hwm_bytes() -> Optional[int]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _peak_rss_bytes() -> int:
    """This process's peak RSS.

    On Linux ``getrusage(RUSAGE_SELF).ru_maxrss`` of a freshly exec'd child starts at the RSS
    its parent had when it forked (the high-water mark survives ``execve``), so a large benchmark
    parent would mask the child's own peak; ``VmHWM`` in ``/proc/self/status`` is reset by
    ``execve`` and is used where it exists. Both are recorded.
    """
    hwm = _vm_hwm_bytes()
    return _getrusage_peak_bytes() if hwm is None else hwm


def _child(kind: str, spec: dict, started: Optional[float] = None) -> None:
    """Entry point of the subprocess checks (prints one JSON line).

    ``started`` is ``time.perf_counter()`` before ``import svtjax`` in the child.
    """
    t0 = time.perf_counter() if started is None else started
    import jax

    if spec.get("cache_dir"):
        jax.config.update("jax_compilation_cache_dir", spec["cache_dir"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    import svtjax

    import_s = time.perf_counter() - t0
    q, T = zipf_workload(spec["n"], spec["c"])
    mech = svtjax.get(HEADLINE, **mechanism_params(HEADLINE, spec["epsilon"], spec["c"]))
    out: dict = {"import_s": import_s}
    if kind == "cache":
        call = lambda: jax.block_until_ready(  # noqa: E731
            svtjax.simulate(mech, q, T, trials=spec["trials"], progress=False))
        t0 = time.perf_counter()
        call()
        out["first_call_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        call()
        out["second_call_s"] = time.perf_counter() - t0
    elif kind == "memory":
        chunk = spec["chunk"]
        out["rss_after_import_bytes"] = _peak_rss_bytes()
        jax.block_until_ready(svtjax.simulate(mech, q, T, trials=chunk, chunk_size=chunk,
                                              reduce=count_reduce, progress=False))
        out["peak_after_one_chunk_bytes"] = _peak_rss_bytes()
        t0 = time.perf_counter()
        evaluated, tops = jax.block_until_ready(svtjax.simulate(
            mech, q, T, trials=spec["trials"], chunk_size=chunk, reduce=count_reduce,
            progress=False))
        out["run_s"] = time.perf_counter() - t0
        out["peak_after_run_bytes"] = _peak_rss_bytes()
        out["getrusage_maxrss_bytes"] = _getrusage_peak_bytes()
        out["rss_source"] = "VmHWM" if _vm_hwm_bytes() is not None else "getrusage"
        out["evaluated_fraction"] = float(evaluated) / (spec["n"] * spec["trials"])
        out["tops_per_trial"] = float(tops) / spec["trials"]
    else:
        raise ValueError(f"unknown child kind {kind!r}")
    print(json.dumps(out), flush=True)


def cache_check(cfg: Config) -> dict:
    """First-call time of simulate: cold process, cache-populating process, cache-hit process."""
    n, trials = cfg.cache_check_size
    spec = dict(n=n, trials=trials, c=cfg.c, epsilon=cfg.epsilon)
    try:
        with tempfile.TemporaryDirectory(prefix="svtjax-jax-cache-") as cache_dir:
            cold = (_run_child("cache", dict(spec, cache_dir=None)) if cfg.cache_check_cold
                    else None)
            populate = _run_child("cache", dict(spec, cache_dir=cache_dir))
            cold = cold or populate
            entries = len(os.listdir(cache_dir))
            hit = _run_child("cache", dict(spec, cache_dir=cache_dir))
    except (RuntimeError, subprocess.SubprocessError, OSError) as err:
        return {"status": "failed", "reason": str(err)}
    return {
        "status": "ok", "n": n, "trials": trials, "mechanism": HEADLINE,
        "cold_first_call_s": cold["first_call_s"],
        "populate_first_call_s": populate["first_call_s"],
        "cached_first_call_s": hit["first_call_s"],
        "warm_call_s": hit["second_call_s"],
        "import_s": cold["import_s"],
        "cache_entries": entries,
        "speedup": cold["first_call_s"] / hit["first_call_s"],
        "cold_process": "no cache" if cfg.cache_check_cold else "the cache-populating process",
        "note": "separate Python processes; cache enabled with jax_compilation_cache_dir, "
                "min_compile_time_secs=0, min_entry_size_bytes=0",
    }


def memory_check(cfg: Config) -> dict:
    """Peak RSS of a ``reduce=`` run of ``memory_trials`` trials, one subprocess per chunk."""
    n, trials = cfg.memory_n, cfg.memory_trials
    rows = []
    for chunk in cfg.memory_chunks:
        spec = dict(n=n, trials=trials, chunk=chunk, c=cfg.c, epsilon=cfg.epsilon)
        try:
            r = _run_child("memory", spec)
        except (RuntimeError, subprocess.SubprocessError, OSError) as err:
            rows.append({"chunk": chunk, "status": "failed", "reason": str(err)})
            continue
        mib = 2.0**20
        one, peak, base = (r["peak_after_one_chunk_bytes"], r["peak_after_run_bytes"],
                           r["rss_after_import_bytes"])
        rows.append({
            "chunk": chunk, "status": "ok",
            "rss_after_import_mib": base / mib,
            "peak_after_one_chunk_mib": one / mib,
            "peak_rss_mib": peak / mib,
            "peak_over_import_mib": (peak - base) / mib,
            # Bounded by the chunk: the full run adds (almost) nothing over one chunk.
            "bounded_by_chunk": peak <= 1.10 * one + 64 * mib,
            "run_s": r["run_s"],
            "throughput": n * trials / r["run_s"],
            "rss_source": r["rss_source"],
            "getrusage_maxrss_mib": r["getrusage_maxrss_bytes"] / mib,
            "evaluated_fraction": r["evaluated_fraction"],
            "tops_per_trial": r["tops_per_trial"],
        })
    return {"status": "ok", "n": n, "trials": trials, "mechanism": HEADLINE, "mode": "fixed",
            "outcome_bytes_if_materialised": trials * n * 13, "chunks": rows,
            "note": "peak RSS of a fresh subprocess: VmHWM from /proc/self/status where it "
                    "exists (getrusage's ru_maxrss, also recorded, inherits the parent's RSS "
                    "across fork+exec on Linux); reduce = per-trial (evaluated, ⊤) counts "
                    "summed in-chunk"}


# -- the run -------------------------------------------------------------------------------

def _log(msg: str, verbose: bool) -> None:
    if verbose:
        print(msg, file=sys.stderr, flush=True)


def _mechanisms(cfg: Config) -> list[str]:
    import svtjax

    names = list(svtjax.names())
    if cfg.only:
        names = [x for x in names if x in cfg.only]
    # The headline first: its compile time is then not helped by a same-structure compile.
    return sorted(names, key=lambda x: x != HEADLINE)


def run(cfg: Config, *, verbose: bool = True, argv: Optional[Sequence[str]] = None) -> dict:
    """Runs the benchmark described by ``cfg``; returns the JSON record."""
    import svtjax
    from svtjax import _malloc

    # What simulate does on first use, done first so every engine (numpy and numba included)
    # runs under the same allocator settings.
    _malloc.tune_allocator()
    started = time.perf_counter()
    record: dict = {
        "schema": SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "device": device_info(),
        "versions": versions(),
        "source": source_state(),
        "allocator_tuned": _malloc.state(),
        "config": dict(dataclasses.asdict(cfg), argv=list(argv) if argv is not None else None,
                       workload={"scores": "q_i = 10000 / i (float32)",
                                 "threshold": f"mean of the {cfg.c}th and {cfg.c + 1}th largest",
                                 "params": "epsilon, c (k), monotonic=True, "
                                           "allocation='1:c^(2/3)' where accepted",
                                 "dtype": "float32"},
                       registered=list(svtjax.names())),
        "load_average": {"start": _load()},
        "results": [],
    }
    results = record["results"]
    names = _mechanisms(cfg)
    for n, trials in cfg.sizes:
        q, T = zipf_workload(n, cfg.c)
        for name in names:
            try:
                params = mechanism_params(name, cfg.epsilon, cfg.c, n)
                mech = svtjax.get(name, **params)
            except (LookupError, TypeError, ValueError) as err:
                for mode in cfg.modes:
                    results.append(_skipped("svtjax", name, n, trials, mode, str(err)))
                continue
            for mode in cfg.modes:
                shuffle = mode == "shuffle"
                _log(f"[bench] svtjax {name} n={n} trials={trials} {mode}", verbose)
                if name == HEADLINE and cfg.baselines:
                    results.extend(_baselines(cfg, mech, q, T, n, trials, mode, verbose,
                                              params))
                    continue
                try:
                    row = time_svtjax(mech, q, T, trials, shuffle, cfg.repeats, cfg.seed)
                except Exception as err:  # noqa: BLE001 - a failing family must not stop the run
                    results.append(_skipped("svtjax", name, n, trials, mode,
                                            f"failed: {type(err).__name__}: {err}"))
                    continue
                results.append(_result("svtjax", name, n, trials, mode, params=params, **row))
        if cfg.baselines and HEADLINE in names:
            _log(f"[bench] rng-floor n={n} trials={trials}", verbose)
            results.append(_result("rng-floor", "-", n, trials, "-",
                                   **time_rng_floor(n, trials, cfg.repeats, cfg.seed)))
    if cfg.cache_check:
        _log(f"[bench] persistent compilation cache check "
             f"({3 if cfg.cache_check_cold else 2} subprocesses)", verbose)
        record["compile_cache"] = cache_check(cfg)
    else:
        record["compile_cache"] = {"status": "skipped", "reason": "disabled"}
    if cfg.memory_check:
        _log(f"[bench] peak-memory check ({len(cfg.memory_chunks)} subprocesses)", verbose)
        record["memory"] = memory_check(cfg)
    else:
        record["memory"] = {"status": "skipped", "reason": "disabled"}
    record["headline"] = headline(record)
    record["load_average"]["end"] = _load()
    record["wall_s"] = time.perf_counter() - started
    return record


def _baselines(cfg, mech, q, T, n, trials, mode, verbose, params) -> list:
    """The headline mechanism and every baseline on one case. svtjax (full Outcomes and
    ``reduce=``), numba and numba-count are timed in interleaved rounds (:func:`_interleaved`);
    numba-parallel (whose threads could still be busy when the next engine starts) and the numpy
    engines run after them."""
    shuffle = mode == "shuffle"
    rep, seed = cfg.repeats, cfg.seed
    _log(f"[bench]   interleaved: {', '.join(INTERLEAVED)} {mode} ({rep} rounds)", verbose)
    head = _interleaved({
        "svtjax": lambda r: time_svtjax(mech, q, T, trials, shuffle, r, seed),
        "svtjax-reduce": lambda r: time_svtjax(mech, q, T, trials, shuffle, r, seed,
                                               reduce=True),
        "numba": lambda r: time_numba(mech, q, T, trials, shuffle, r, seed, False),
        "numba-count": lambda r: time_numba(mech, q, T, trials, shuffle, r, seed, False,
                                            store=False),
    }, rep)
    rows = []
    for engine, row in head.items():
        extra = {"params": params} if engine == "svtjax" else {}
        if row.get("status") == "skipped":
            rows.append(_skipped(engine, HEADLINE, n, trials, mode, row["reason"]))
        else:
            rows.append(_result(engine, HEADLINE, n, trials, mode, **extra, **row))
    for engine, fn in (
        ("numba-parallel", lambda: time_numba(mech, q, T, trials, shuffle, rep, seed, True)),
        ("numpy-vectorized", lambda: time_vectorized(mech, q, T, trials, shuffle, rep, seed)),
        ("numpy-reference",
         lambda: time_reference(mech, q, T, trials, shuffle, rep, seed, cfg.reference_budget_s,
                                cfg.reference_min_trials, cfg.reference_max_trials)),
    ):
        _log(f"[bench]   {engine} {mode}", verbose)
        row = fn()
        if row.get("status") == "skipped":
            rows.append(_skipped(engine, HEADLINE, n, trials, mode, row["reason"]))
        else:
            rows.append(_result(engine, HEADLINE, n, trials, mode, **row))
    return rows


def _find(results, engine, mechanism, n, trials, mode) -> Optional[dict]:
    for r in results:
        if (r["engine"], r["mechanism"], r["n"], r["trials"], r["mode"]) == (
                engine, mechanism, n, trials, mode) and r["status"] == "ok":
            return r
    return None


def headline(record: dict) -> list:
    """svtjax's ratio to each baseline and to the physical limit, per size and mode."""
    results = record["results"]
    rows = []
    for r in results:
        if r["engine"] != "svtjax" or r["mechanism"] != HEADLINE or r["status"] != "ok":
            continue
        n, trials, mode = r["n"], r["trials"], r["mode"]
        row = {"n": n, "trials": trials, "mode": mode, "throughput": r["throughput"],
               "evaluated_rate": r["evaluated_rate"],
               "evaluated_fraction": r["evaluated_fraction"], "compile_s": r["compile_s"],
               "ratio": {}, "throughput_of": {}}
        for engine in ("svtjax-reduce",) + BASELINES:
            b = _find(results, engine, HEADLINE, n, trials, mode)
            row["throughput_of"][engine] = None if b is None else b["throughput"]
            row["ratio"][engine] = None if b is None else r["throughput"] / b["throughput"]
        floor = _find(results, "rng-floor", "-", n, trials, "-")
        row["rng_floor_throughput"] = None if floor is None else floor["throughput"]
        # throughput / (floor / fraction reached) == evaluated rate / floor rate
        row["ratio_to_physical_limit"] = (None if floor is None else
                                          r["evaluated_rate"] / floor["throughput"])
        # Like for like without output arrays: simulate(reduce=) against the counting loop.
        red = _find(results, "svtjax-reduce", HEADLINE, n, trials, mode)
        cnt = _find(results, "numba-count", HEADLINE, n, trials, mode)
        row["reduce_ratio_to_numba_count"] = (None if red is None or cnt is None else
                                              red["throughput"] / cnt["throughput"])
        row["reduce_ratio_to_physical_limit"] = (None if red is None or floor is None else
                                                 red["evaluated_rate"] / floor["throughput"])
        ref = _find(results, "numpy-reference", HEADLINE, n, trials, mode)
        row["reduce_ratio_to_numpy_reference"] = (None if red is None or ref is None else
                                                  red["throughput"] / ref["throughput"])
        rows.append(row)
    return rows


# -- output --------------------------------------------------------------------------------

def _fmt_rate(x: Optional[float]) -> str:
    if x is None:
        return "—"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}"


def _fmt(x: Optional[float], spec: str = ".3g") -> str:
    return "—" if x is None else format(x, spec)


def tables(record: dict, markdown: bool = False) -> str:
    """The headline table and the per-mechanism table as text (or markdown)."""
    def table(header, rows):
        if markdown:
            out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            out += ["| " + " | ".join(r) + " |" for r in rows]
            return "\n".join(out)
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
                  for i, h in enumerate(header)]
        line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
        return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])

    head = ["n", "trials", "mode", "svtjax q/s", "eval/s", "reached", "numba", "numba-par",
            "numpy-vec", "numpy-ref*", "x numba", "x numba-par", "x numpy-vec", "x numpy-ref",
            "rng floor", "x phys. limit", "compile s"]
    rhead = ["n", "trials", "mode", "reduce= q/s", "eval/s", "numba-count", "x numba-count",
             "x numpy-ref", "x phys. limit"]
    hrows, rrows = [], []
    for h in headline(record):  # recomputed from the results, so old records render alike
        t = h["throughput_of"]
        ratio = h["ratio"]
        key = [str(h["n"]), str(h["trials"]), h["mode"]]
        hrows.append(key + [_fmt_rate(h["throughput"]), _fmt_rate(h["evaluated_rate"]),
                            f"{100 * h['evaluated_fraction']:.2f}%",
                            _fmt_rate(t["numba"]), _fmt_rate(t["numba-parallel"]),
                            _fmt_rate(t["numpy-vectorized"]), _fmt_rate(t["numpy-reference"]),
                            _fmt(ratio["numba"]), _fmt(ratio["numba-parallel"]),
                            _fmt(ratio["numpy-vectorized"]), _fmt(ratio["numpy-reference"]),
                            _fmt_rate(h["rng_floor_throughput"]),
                            _fmt(h["ratio_to_physical_limit"]), _fmt(h["compile_s"], ".2f")])
        red = t.get("svtjax-reduce")
        rrows.append(key + [_fmt_rate(red),
                            _fmt_rate(None if red is None else red * h["evaluated_fraction"]),
                            _fmt_rate(t.get("numba-count")),
                            _fmt(h.get("reduce_ratio_to_numba_count")),
                            _fmt(h.get("reduce_ratio_to_numpy_reference")),
                            _fmt(h.get("reduce_ratio_to_physical_limit"))])
    mhead = ["engine", "mechanism", "n", "trials", "mode", "median s", "q/s", "eval/s",
             "reached", "compile s", "load"]
    mrows = []
    for r in record["results"]:
        if r["status"] != "ok":
            mrows.append([r["engine"], r["mechanism"], str(r["n"]), str(r["trials"]), r["mode"],
                          "skipped", r.get("reason", "")[:60], "", "", "", ""])
            continue
        mrows.append([r["engine"], r["mechanism"], str(r["n"]), str(r["trials"]), r["mode"],
                      _fmt(r["median_s"], ".4g"), _fmt_rate(r["throughput"]),
                      _fmt_rate(r.get("evaluated_rate")),
                      "—" if r.get("evaluated_fraction") is None
                      else f"{100 * r['evaluated_fraction']:.2f}%",
                      _fmt(r.get("compile_s"), ".2f"), _fmt(r.get("load_1m"), ".2f")])
    sep = "\n\n"
    titles = ("", "Without output arrays (simulate with reduce= vs the counting numba loop):\n",
              "All engines and mechanisms:\n")
    if markdown:
        titles = ("", "Without output arrays: `simulate(..., reduce=)` (per-trial counts) vs the "
                  "numba loop that only counts:\n\n", "All engines and mechanisms:\n\n")
    return sep.join(title + table(hd, rows) for title, hd, rows in zip(
        titles, (head, rhead, mhead), (hrows, rrows, mrows)))


def record_path(record: dict, out_dir: Path) -> Path:
    stamp = record["created"].replace(":", "").replace("+0000", "").replace("+00:00", "")
    suffix = "" if record["config"]["suite"] == "full" else f"-{record['config']['suite']}"
    return out_dir / f"{record['machine']['machine_id']}-{stamp}{suffix}.json"


def load_records(results_dir: Path) -> list:
    records = []
    for path in sorted(glob.glob(str(Path(results_dir) / "*.json"))):
        try:
            with open(path) as f:
                rec = json.load(f)
        except (OSError, json.JSONDecodeError):
            continue
        if rec.get("schema") == SCHEMA:
            rec["_path"] = path
            records.append(rec)
    return records


def latest_per_machine(records: list, suites: Sequence[str] = ("full",)) -> list:
    latest: dict = {}
    for rec in records:
        if rec["config"].get("suite") not in suites:
            continue
        mid = rec["machine"]["machine_id"]
        if mid not in latest or rec["created"] > latest[mid]["created"]:
            latest[mid] = rec
    return [latest[k] for k in sorted(latest)]


def _record_md(rec: dict, results_dir: Path) -> str:
    m, d, v, cfg = rec["machine"], rec["device"], rec["versions"], rec["config"]
    src = rec.get("source", {})
    load = rec["load_average"]
    rel = os.path.relpath(rec["_path"], results_dir.parent) if "_path" in rec else "?"
    lines = [
        f"## {m['machine_id']}",
        "",
        f"Source: `{rel}` (run {rec['created']}, {rec['wall_s']:.0f} s wall).",
        "",
        f"- Machine: {m['cpu_model']}, {m['logical_cores']} logical cores "
        f"({m['usable_cores']} usable), {m['memory_gib']} GiB, {m['platform']}",
        f"- Device: {d['backend']} × {d['count']} ({d['kind']}); x64={d['x64']}",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- svtjax source: git {str(src.get('git_commit'))[:10]}"
        f"{' + uncommitted changes' if src.get('git_dirty') else ''}, package sha256 "
        f"{src.get('package_sha256')}",
        f"- Load average (1/5/15 min) at start {load.get('start')}, end {load.get('end')} "
        f"(per-case 1-min load in the `load` column)",
        "- glibc allocator tuning (`svtjax._malloc`, for every engine): "
        + {True: "on", False: "off",
           None: "off (the record predates it)"}[rec.get("allocator_tuned")],
        f"- Config: ε={cfg['epsilon']}, c={cfg['c']}, repeats={cfg['repeats']} (median), "
        f"sizes (n × trials) {', '.join(f'{a}×{b}' for a, b in cfg['sizes'])}, "
        f"modes {', '.join(cfg['modes'])}, seed {cfg['seed']}",
        "",
        "### Headline: svt-s (monotonic, 1:c^(2/3)) — query evaluations per second",
        "",
        "Throughput = trials × n / wall seconds (median of the repeats, compile excluded; a "
        "sample repeats calls shorter than 50 ms and divides, `calls_per_sample` in the JSON); "
        + ("the headline's svtjax, `reduce=`, numba and numba-count samples were taken in "
           "alternation, one of each per round (`interleaved_rounds` in the JSON), so that they "
           "share the machine's fast and slow stretches, after one untimed round; "
           if any(r.get("interleaved_rounds") for r in rec["results"]) else "") +
        "eval/s counts evaluated positions only (answers >= 0); `reached` = evaluated / (trials "
        "× L), L the Outcome length (n; k for top-k selection mechanisms, which score all n "
        "items). `reduce=` is svtjax with an in-chunk reducer (per-trial counts of evaluated "
        "positions and ⊤, read with `svtjax.prefix_counts` up to each trial's halt since "
        "commit 2da057c; records made before it summed over the whole stream) instead of full "
        "Outcomes. Baselines: `numba` is a per-trial while-loop drawing Laplace noise lazily and "
        "stopping at the c-th ⊤ (partial Fisher–Yates over the positions reached; "
        "`numba-par` = the same over threads with prange); `numpy-vec` draws all noise of a "
        "chunk of trials at once, compares, and finds the halt with a cumsum; `numpy-ref*` is "
        "the line-by-line reference loop of `svtjax.reference`, timed on a subset of trials and "
        "extrapolated linearly (its Draws are made by JAX outside the timed region). The numba "
        "and numpy baselines output answers and items only; `numba-count` is the numba loop "
        "writing no arrays (only counting), the like-for-like partner of `simulate(reduce=)` "
        "in the second table. `x` columns are svtjax's "
        "throughput divided by the baseline's; `x phys. limit` = throughput ÷ (RNG-floor "
        "throughput ÷ reached) = eval/s ÷ RNG-floor rate; `rng floor` = jitted, warm "
        "`jax.random.laplace` of trials × n float32.",
        "",
        tables(rec, markdown=True),
    ]
    params = {}
    for r in rec["results"]:
        if r["engine"] == "svtjax" and r["status"] == "ok":
            params.setdefault(r["mechanism"], r.get("params"))
    skipped = sorted({f"{r['mechanism']} ({r.get('reason', '')})" for r in rec["results"]
                      if r["engine"] == "svtjax" and r["status"] != "ok"})
    lines += ["", "Mechanism parameters: " + "; ".join(
        f"`{k}` " + ", ".join(f"{a}={b}" for a, b in (v or {}).items())
        for k, v in params.items()) + "."]
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped) + "."]
    sub = [r for r in rec["results"] if r["engine"] == "numpy-reference" and r["status"] == "ok"]
    if sub:
        lines += ["", "numpy-reference subsets: " + "; ".join(
            f"n={r['n']} {r['mode']}: {r['extrapolated']['timed_trials']} of "
            f"{r['extrapolated']['total_trials']} trials" for r in sub)]
    cc = rec.get("compile_cache", {})
    lines += ["", "### Compilation"]
    if cc.get("status") == "ok":
        lines += ["", f"simulate on n={cc['n']} × {cc['trials']} trials, each in a new Python "
                  "process (first call = trace + compile + run):", "",
                  "| process | first call s |", "|---|---|",
                  f"| cold ({cc.get('cold_process', 'no cache')}) | "
                  f"{cc['cold_first_call_s']:.2f} |",
                  f"| persistent cache enabled, empty (populates) | "
                  f"{cc['populate_first_call_s']:.2f} |",
                  f"| persistent cache enabled, populated | {cc['cached_first_call_s']:.2f} |",
                  f"| (same process, warm second call) | {cc['warm_call_s']:.3f} |",
                  "", f"Cache entries written: {cc['cache_entries']}; cold ÷ cached first call "
                  f"= {cc['speedup']:.2f}×; `import jax, svtjax` took {cc['import_s']:.2f} s."]
    else:
        lines += ["", f"Persistent-cache check: {cc.get('status')} ({cc.get('reason', '')})."]
    mem = rec.get("memory", {})
    lines += ["", "### Peak memory with reduce="]
    if mem.get("status") == "ok":
        lines += ["", f"svt-s, fixed order, n={mem['n']}, {mem['trials']:,} trials, "
                  f"`reduce=` per-trial counts; full Outcomes would take "
                  f"{mem['outcome_bytes_if_materialised'] / 2**20:,.0f} MiB.", "",
                  "Peak RSS is the subprocess's VmHWM (getrusage's ru_maxrss is also recorded in "
                  "the JSON; on Linux it inherits the parent's RSS across fork+exec).", "",
                  "| chunk | peak RSS MiB | after one chunk MiB | after import MiB | "
                  "bounded by chunk | run s | q/s |", "|---|---|---|---|---|---|---|"]
        for r in mem["chunks"]:
            if r["status"] != "ok":
                lines.append(f"| {r['chunk']} | failed: {r.get('reason', '')[:80]} | | | | | |")
                continue
            lines.append(f"| {r['chunk']} | {r['peak_rss_mib']:.0f} | "
                         f"{r['peak_after_one_chunk_mib']:.0f} | {r['rss_after_import_mib']:.0f} | "
                         f"{'yes' if r['bounded_by_chunk'] else 'NO'} | {r['run_s']:.1f} | "
                         f"{_fmt_rate(r['throughput'])} |")
    else:
        lines += ["", f"Memory check: {mem.get('status')} ({mem.get('reason', '')})."]
    return "\n".join(lines)


def render_results_md(records: list, results_dir: Path) -> str:
    out = ["# Benchmark results", "",
           "<!-- Generated by benchmarks/update_results.py from benchmarks/results/*.json "
           "(latest full run per machine; for an accelerator without one, its latest narrowed "
           "run). "
           "Do not edit by hand. -->", "",
           "Regenerate with `python benchmarks/update_results.py`; produce a record with "
           "`svtjax bench` (or `python -m svtjax.bench`).", ""]
    if not records:
        out.append("No full benchmark records yet.")
    gpu = [r for r in records if r.get("device", {}).get("backend") in ("gpu", "cuda", "rocm")]
    out += ["## GPU", ""]
    if gpu:
        out.append("GPU records: " + ", ".join(f"`{r['machine']['machine_id']}` "
                                                f"({r['device']['kind']})" for r in gpu)
                   + " (sections below).")
        big = [(row["throughput"], row, r) for r in gpu for row in r["results"]
               if row.get("status") == "ok" and row.get("throughput")
               and row["engine"].startswith("svtjax") and row["trials"] >= 10**5]
        if big:
            rate, row, r = max(big, key=lambda x: x[0])
            verdict = "meets" if rate >= 1e10 else "does not meet"
            out += ["", f"Best throughput at ≥ 10^5 trials: {_fmt_rate(rate)} query evaluations/s "
                    f"(trials × n / wall s; {row['mechanism']}, n = {row['n']}, "
                    f"{row['trials']} trials, {row['mode']} order, {r['device']['kind']}), which "
                    f"{verdict} the 10^10/s target; per-mode figures in the sections below."]
    else:
        out.append("No GPU figures: no record below ran on a GPU. The GPU machine of the "
                   "`device` tool is lent to some tasks only, and none was lent to the task that "
                   "produced these records (its `status` reported `can_start_another: false`). "
                   "On a GPU machine, `svtjax bench --update-results` adds a section here.")
    out.append("")
    for rec in records:
        out += [_record_md(rec, Path(results_dir)), ""]
    return "\n".join(out).rstrip() + "\n"


def reproduce_md(results_dir: Path) -> list:
    """The "reproduce all" section: the latest record of benchmarks/bench_reproduce.py (paper
    mode preferred), or a line saying there is none."""
    recs = []
    for path in sorted(Path(results_dir).glob("reproduce-*.json")):
        try:
            rec = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if rec.get("schema") == "svtjax-reproduce/1":
            rec["_path"] = path
            recs.append(rec)
    out = ["## svtjax reproduce all", ""]
    if not recs:
        return out + ["No record yet: run `python benchmarks/bench_reproduce.py`.", ""]
    rec = max(recs, key=lambda r: (r["mode"] == "paper", r["created"]))
    m = rec["machine"]
    total = rec["total_seconds"]
    out += [f"Source: `{os.path.relpath(rec['_path'], Path(results_dir).parent)}` "
            f"(`python benchmarks/bench_reproduce.py --mode {rec['mode']}`, run "
            f"{rec['created']}) on `{m['machine_id']}` ({m['cpu_model']}, "
            f"{m['logical_cores']} logical cores); load average at start "
            f"{rec['load_average'].get('start')}, end {rec['load_average'].get('end')}.", "",
            f"Total wall time of every experiment in `--{rec['mode']}` mode: **{total:.0f} s "
            f"({total / 60:.1f} min)**"
            + ("." if rec["all_succeeded"] else "; some experiments failed (exit status below)."),
            "", "| experiment | wall s | exit status |", "|---|---|---|"]
    out += [f"| {r['experiment']} | {r['seconds']:.0f} | {r['returncode']} |"
            for r in rec["experiments"]]
    return out + [""]


def _latest(results_dir: Path, pattern: str, schema: str) -> Optional[dict]:
    recs = []
    for path in sorted(Path(results_dir).glob(pattern)):
        try:
            rec = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if rec.get("schema") == schema:
            rec["_path"] = path
            recs.append(rec)
    return max(recs, key=lambda r: r["created"]) if recs else None


def allocator_md(results_dir: Path) -> list:
    """The allocator section: the latest record of benchmarks/bench_allocator.py."""
    rec = _latest(results_dir, "allocator-*.json", "svtjax-allocator/1")
    out = ["## glibc allocator tuning (svtjax._malloc)", ""]
    if rec is None:
        return out + ["No record yet: run `python benchmarks/bench_allocator.py`.", ""]
    m, runs = rec["machine"], rec["runs"]
    labels = [k for k in ("default", "thresholds", "tuned") if k in runs]
    out += [f"Source: `{os.path.relpath(rec['_path'], Path(results_dir).parent)}` "
            f"(`python benchmarks/bench_allocator.py`, run {rec['created']}) on "
            f"`{m['machine_id']}` ({m['cpu_model']}, {m['logical_cores']} logical cores); "
            f"load average at start {rec['load_average'].get('start')}, end "
            f"{rec['load_average'].get('end')}. Median of {rec['repeats']} warm calls, each "
            "column in its own process: `default` = glibc's defaults "
            "(`SVTJAX_MALLOC_TUNING=0`); `thresholds` (records since the arena change) = only "
            "the mmap and trim thresholds raised, svtjax's setting before commit a28c2ee; "
            "`tuned` = svtjax's setting at the record's commit (since a28c2ee also one malloc "
            "arena and a top pad, applied when svtjax is imported). `faults` = minor page faults "
            "per call, where recorded.", "",
            "| timing | " + " | ".join(f"{k} ms" for k in labels) + " | speed-up | "
            + " | ".join(f"{k} faults" for k in labels) + " |",
            "|---|" + "---|" * (2 * len(labels) + 1)]

    def row(name, get_s, get_faults):
        first, last = get_s(runs[labels[0]]), get_s(runs[labels[-1]])
        faults = [get_faults(runs[k]) for k in labels]
        return (f"| {name} | " + " | ".join(f"{get_s(runs[k]) * 1e3:.2f}" for k in labels)
                + f" | {first / last:.2f}x | "
                + " | ".join("—" if f is None else f"{f:,.0f}" for f in faults) + " |")

    out.append(row("jitted fill of int32[1000, 10000] (40 MB)", lambda r: r["fill_40mb_s"],
                   lambda r: r.get("fill_40mb_faults")))
    for i, case in enumerate(runs[labels[0]]["cases"]):
        for kind, label in (("full", "full Outcomes"), ("reduce", "reduce=")):
            out.append(row(f"svt-s n={case['n']} x {case['trials']} trials, {case['mode']}, "
                           f"{label}", lambda r: r["cases"][i][f"{kind}_s"],
                           lambda r: r["cases"][i].get(f"{kind}_faults")))
    return out + [""]


def write_results_md(results_dir: Path, output: Path, suites: Sequence[str] = ("full",)) -> Path:
    """Regenerates ``output`` (RESULTS.md) from the latest record per machine in ``results_dir``."""
    every = load_records(results_dir)
    records = latest_per_machine(every, suites)
    # A GPU is lent only briefly (the `device` tool), so its runs are usually narrowed
    # (--only/--size): keep the latest such record of every accelerator without a full one.
    shown = {r["machine"]["machine_id"] for r in records}
    records += [r for r in latest_per_machine(every, ("custom",))
                if r["machine"]["machine_id"] not in shown and r["device"]["backend"] != "cpu"]
    text = render_results_md(records, Path(results_dir))
    head, sep, rest = text.partition("\n## GPU")
    text = (head + "\n" + "\n".join(reproduce_md(Path(results_dir)) + allocator_md(
        Path(results_dir))) + sep + rest)
    Path(output).write_text(text)
    return Path(output)


# -- command line --------------------------------------------------------------------------

def _size(text: str) -> tuple:
    try:
        n, trials = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a size is NxTRIALS, e.g. 10000x1000; got {text!r}") from None
    if n < 1 or trials < 1:
        raise argparse.ArgumentTypeError(f"n and trials must be >= 1; got {text!r}")
    return (n, trials)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="svtjax bench", description="Time svtjax.simulate on the Zipf top-c workload "
        "against numpy, numba and the RNG floor; write a JSON record.")
    p.add_argument("--quick", action="store_true",
                   help="smoke test (svt-s only, small sizes; well under a minute)")
    p.add_argument("--out", type=Path, default=None,
                   help="directory for the JSON record (default: benchmarks/results)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed repetitions per case; the median is reported (default 5, quick 2)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="time only this mechanism (repeatable)")
    p.add_argument("--size", action="append", type=_size, metavar="NxTRIALS", dest="sizes",
                   help="workload size, e.g. 10000x1000 (repeatable)")
    p.add_argument("--mode", action="append", choices=MODES, dest="modes",
                   help="item order (repeatable; default both)")
    p.add_argument("--no-baselines", action="store_true", help="skip numpy/numba/RNG floor")
    p.add_argument("--no-cache-check", action="store_true",
                   help="skip the persistent compilation cache check")
    p.add_argument("--no-memory-check", action="store_true", help="skip the peak-RSS check")
    p.add_argument("--memory-trials", type=int, default=None,
                   help="trials of the peak-memory run (default 1e6, quick 2e4)")
    p.add_argument("--machine", default=None, help="machine id used in the file name")
    p.add_argument("--update-results", action="store_true",
                   help="regenerate RESULTS.md next to the output directory afterwards")
    p.add_argument("--no-save", action="store_true", help="print only, write no JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def config_from_args(args: argparse.Namespace) -> Config:
    import svtjax

    cfg = quick_config() if args.quick else Config()
    changes: dict = {}
    if args.repeats is not None:
        if args.repeats < 1:
            raise SystemExit("svtjax bench: --repeats must be >= 1")
        changes["repeats"] = args.repeats
    if args.only:
        unknown = sorted(set(args.only) - set(svtjax.names()))
        if unknown:
            raise SystemExit(f"svtjax bench: unknown mechanism(s) {unknown}; registered: "
                             f"{', '.join(svtjax.names())}")
        changes["only"] = tuple(args.only)
    if args.sizes:
        changes["sizes"] = tuple(args.sizes)
    if args.modes:
        changes["modes"] = tuple(m for m in MODES if m in args.modes)
    if args.no_baselines:
        changes["baselines"] = False
    if args.no_cache_check:
        changes["cache_check"] = False
    if args.no_memory_check:
        changes["memory_check"] = False
    if args.memory_trials is not None:
        changes["memory_trials"] = args.memory_trials
    narrowed = set(changes) - {"repeats"}
    if narrowed and not args.quick:
        changes["suite"] = "custom"
    return dataclasses.replace(cfg, **changes)


def default_out_dir() -> Path:
    bench_dir = _REPO / "benchmarks"
    return (bench_dir if bench_dir.is_dir() else Path.cwd() / "benchmarks") / "results"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``svtjax bench``: run, print the tables, write the JSON record. Returns an exit status."""
    args = _parser().parse_args(argv)
    cfg = config_from_args(args)
    record = run(cfg, verbose=not args.quiet, argv=list(sys.argv[1:] if argv is None else argv))
    if args.machine:
        record["machine"]["machine_id"] = "".join(
            ch if ch.isalnum() or ch in "-_" else "-" for ch in args.machine)
    print(tables(record))
    cc, mem = record["compile_cache"], record["memory"]
    if cc.get("status") == "ok":
        print(f"\ncompile cache: cold first call {cc['cold_first_call_s']:.2f} s, cached first "
              f"call {cc['cached_first_call_s']:.2f} s ({cc['speedup']:.2f}x), warm "
              f"{cc['warm_call_s']:.3f} s")
    if mem.get("status") == "ok":
        for r in mem["chunks"]:
            if r["status"] == "ok":
                print(f"memory: chunk {r['chunk']:>7}: peak RSS {r['peak_rss_mib']:.0f} MiB "
                      f"(one chunk {r['peak_after_one_chunk_mib']:.0f} MiB), "
                      f"{mem['trials']} trials in {r['run_s']:.1f} s")
    print(f"\nwall {record['wall_s']:.1f} s; load average {record['load_average']}")
    if not args.no_save:
        out_dir = Path(args.out) if args.out is not None else default_out_dir()
        out_dir.mkdir(parents=True, exist_ok=True)
        path = record_path(record, out_dir)
        # Serialise first (Noise parameters as their repr), so a failure leaves no partial file.
        path.write_text(json.dumps(record, indent=1, sort_keys=False, default=repr) + "\n")
        print(f"wrote {path}")
        if args.update_results:
            md = write_results_md(out_dir, out_dir.parent / "RESULTS.md")
            print(f"wrote {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
