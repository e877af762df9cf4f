"""Checks that need a fresh Python process: the persistent compilation cache and peak memory.

* ``cache`` — first-call time of ``simulate`` in a cold process, in a process that populates a
  persistent compilation cache, and in one that reads it.
* ``memory`` — peak RSS of a long ``reduce=`` run, one process per chunk size: bounded by the
  chunk, not by the number of trials.

Each child runs ``benchmarks.probes.child`` with the checkout on ``PYTHONPATH`` and prints one
JSON line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

__all__ = ["cache_check", "memory_check", "child"]

_ROOT = Path(__file__).resolve().parents[1]


def _child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(_ROOT) + (os.pathsep + env["PYTHONPATH"]
                                      if env.get("PYTHONPATH") else "")
    return env


def _run_child(kind: str, spec: dict, timeout: float = 900.0) -> dict:
    code = ("import time; t0 = time.perf_counter(); import sys, json; "
            "from benchmarks import probes; "
            f"probes.child({kind!r}, json.loads(sys.argv[1]), t0)")
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], capture_output=True,
                          text=True, env=_child_env(), timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"benchmark subprocess {kind} failed (rc={proc.returncode}): "
                           f"{proc.stderr.strip()[-2000:]}")
    return json.loads(lines[-1])


def child(kind: str, spec: dict, started: Optional[float] = None) -> None:
    """Entry point of a check's subprocess; prints one JSON line.

    ``started`` is ``time.perf_counter()`` before ``import svtjax`` in the child.
    """
    t0 = time.perf_counter() if started is None else started
    import jax

    if spec.get("cache_dir"):
        jax.config.update("jax_compilation_cache_dir", spec["cache_dir"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    import svtjax
    from benchmarks import machine, workload

    import_s = time.perf_counter() - t0
    machine.tune_allocator()
    q, threshold = workload.zipf_workload(spec["n"], spec["c"])
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params(spec["epsilon"], spec["c"]))
    out: dict = {"import_s": import_s}
    if kind == "cache":
        def call():
            return jax.block_until_ready(svtjax.simulate(mech, q, threshold,
                                                         trials=spec["trials"]))
        t0 = time.perf_counter()
        call()
        out["first_call_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        call()
        out["second_call_s"] = time.perf_counter() - t0
    elif kind == "memory":
        chunk = spec["chunk"]
        reduce = workload.count_reduce
        out["rss_after_import_bytes"] = machine.peak_rss_bytes()
        jax.block_until_ready(svtjax.simulate(mech, q, threshold, trials=chunk,
                                              chunk_size=chunk, reduce=reduce))
        out["peak_after_one_chunk_bytes"] = machine.peak_rss_bytes()
        t0 = time.perf_counter()
        evaluated, tops = jax.block_until_ready(svtjax.simulate(
            mech, q, threshold, trials=spec["trials"], chunk_size=chunk, reduce=reduce))
        out["run_s"] = time.perf_counter() - t0
        out["peak_after_run_bytes"] = machine.peak_rss_bytes()
        out["getrusage_maxrss_bytes"] = machine.getrusage_peak_bytes()
        out["rss_source"] = "VmHWM" if machine.vm_hwm_bytes() is not None else "getrusage"
        out["evaluated_fraction"] = float(evaluated) / (spec["n"] * spec["trials"])
        out["tops_per_trial"] = float(tops) / spec["trials"]
    else:
        raise ValueError(f"unknown child kind {kind!r}")
    print(json.dumps(out), flush=True)


def cache_check(n: int, trials: int, *, epsilon: float, c: int, cold: bool = True) -> dict:
    """First-call time of simulate: cold process, cache-populating process, cache-hit process.

    With ``cold=False`` the cache-populating process stands in for the cold one (a process
    less).
    """
    spec = dict(n=n, trials=trials, c=c, epsilon=epsilon)
    try:
        with tempfile.TemporaryDirectory(prefix="svtjax-jax-cache-") as cache_dir:
            cold_row = _run_child("cache", dict(spec, cache_dir=None)) if cold else None
            populate = _run_child("cache", dict(spec, cache_dir=cache_dir))
            cold_row = cold_row or populate
            entries = len(os.listdir(cache_dir))
            hit = _run_child("cache", dict(spec, cache_dir=cache_dir))
    except (RuntimeError, subprocess.SubprocessError, OSError) as err:
        return {"status": "failed", "reason": str(err)}
    return {
        "status": "ok", "n": n, "trials": trials, "mechanism": "svt-s", "mode": "fixed",
        "cold_first_call_s": cold_row["first_call_s"],
        "populate_first_call_s": populate["first_call_s"],
        "cached_first_call_s": hit["first_call_s"],
        "warm_call_s": hit["second_call_s"],
        "import_s": cold_row["import_s"],
        "cache_entries": entries,
        "speedup": cold_row["first_call_s"] / hit["first_call_s"],
        "cold_process": "no cache" if cold else "the cache-populating process",
        "note": "separate Python processes; cache enabled with jax_compilation_cache_dir, "
                "min_compile_time_secs=0, min_entry_size_bytes=0",
    }


def memory_check(n: int, trials: int, chunks, *, epsilon: float, c: int) -> dict:
    """Peak RSS of a ``reduce=`` run of ``trials`` trials, one subprocess per chunk size."""
    rows = []
    mib = 2.0**20
    for chunk in chunks:
        spec = dict(n=n, trials=trials, chunk=chunk, c=c, epsilon=epsilon)
        try:
            r = _run_child("memory", spec)
        except (RuntimeError, subprocess.SubprocessError, OSError) as err:
            rows.append({"chunk": chunk, "status": "failed", "reason": str(err)})
            continue
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
    return {"status": "ok", "n": n, "trials": trials, "mechanism": "svt-s", "mode": "fixed",
            "outcome_bytes_if_materialised": trials * n * 13, "chunks": rows,
            "note": "peak RSS of a fresh subprocess: VmHWM from /proc/self/status where it "
                    "exists (getrusage's ru_maxrss, also recorded, inherits the parent's RSS "
                    "across fork+exec on Linux); reduce = per-trial (evaluated, ⊤) counts "
                    "summed in-chunk"}
