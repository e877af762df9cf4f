"""The benchmark record (one format for every case) and what it says about where it ran.

A record is one JSON file ``results/<case>-<machine>-<UTC time>.json``: ``schema``
(:data:`SCHEMA`), ``case``, ``created``, ``machine``, ``device``, ``versions``, ``source``
(commit, dirty flag, hash of the package), ``load_average`` (start, end), ``config`` (what was
asked for), ``results`` (one row per timed thing, every sample kept) and ``wall_s``; a case
may add summaries of its rows (the throughput case: ``headline``, ``rng_floors``,
``compile_cache``, ``memory``). :func:`new_record` and :func:`save` write it.

Readers of ``/proc`` (CPU model, memory, peak RSS) live here, in the tools, never in the
package. Each falls back to a portable source (``sysctl``, ``os.sysconf``, ``getrusage``) or to
None off Linux. The checks that need a fresh Python process (persistent compilation cache, peak
memory of a long run) are here too: each child runs :func:`child` and prints one JSON line. And
how a sample is timed: warm calls (:func:`timed`) in interleaved rounds over several engines
(:func:`interleaved`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
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

__all__ = ["MIN_SAMPLE_S", "median", "calls_per_sample", "timed", "interleaved", "SCHEMA",
           "RESULTS_DIR", "new_record", "save", "record_path", "cache_check",
           "memory_check", "child", "machine_info", "device_info", "versions", "source_state",
           "load", "cpu_model", "default_machine_id", "peak_rss_bytes", "vm_hwm_bytes",
           "getrusage_peak_bytes", "safe_id", "tune_allocator", "usable_cores"]

SCHEMA = "svtjax-bench/3"
ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
_GENERIC_HOSTS = {"vm", "localhost", "ubuntu", "debian", "unknown", "runner"}


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``sysctl`` on macOS; else ``platform``)."""
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


def safe_id(text: str) -> str:
    """``text`` with every character other than letters, digits, ``-`` and ``_`` made ``-``."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in text)


def default_machine_id() -> str:
    """Hostname, plus a short machine-id when the hostname is generic (e.g. ``vm``)."""
    host = socket.gethostname().split(".")[0] or "unknown"
    try:
        with open("/etc/machine-id") as f:
            mid = f.read().strip()[:8]
    except OSError:
        mid = ""
    ident = f"{host}-{mid}" if mid and host.lower() in _GENERIC_HOSTS else host
    return safe_id(ident)


def load() -> Optional[list]:
    """The 1, 5 and 15 minute load averages, or None where the OS has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask), else ``os.cpu_count()``."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def machine_info() -> dict:
    mem = _memory_bytes()
    return {
        "machine_id": default_machine_id(),
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "memory_gib": None if mem is None else round(mem / 2**30, 2),
        "platform": platform.platform(),
        "architecture": platform.machine(),
    }


def device_info() -> dict:
    import jax

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
    import numpy as np

    return {
        "python": platform.python_version(),
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "numpy": np.__version__,
        "numba": _version("numba"),
        "scipy": _version("scipy"),
        "svtjax": _version("svtjax"),
        "native_fisher_yates": _native_status(),
    }


def _native_status() -> str:
    """Whether the compiled kernels (the Fisher–Yates block and prefix, the first ⊤ of Outcome
    rows, svtjax.exact's random-order recursions) run (:func:`svtjax._native.status`)."""
    from svtjax import _native

    return _native.status()


def source_state() -> dict:
    """The svtjax source that was timed: git commit, dirty flag, hash of the package files."""
    import svtjax

    pkg = Path(svtjax.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([*pkg.rglob("*.py"), *pkg.rglob("*.cc")]):
        digest.update(str(path.relative_to(pkg)).encode())
        digest.update(path.read_bytes())
    state = {"package_sha256": digest.hexdigest()[:16], "package_path": str(pkg),
             "git_commit": None, "git_dirty": None}
    try:
        def git(*args):
            return subprocess.run(["git", "-C", str(pkg), *args], capture_output=True,
                                  text=True, timeout=10)

        head = git("rev-parse", "HEAD")
        if head.returncode == 0:
            state["git_commit"] = head.stdout.strip()
            # the code that computes and times (not the records a run writes under results/)
            dirty = git("status", "--porcelain", "--", str(pkg), str(pkg.parent / "benchmarks"),
                        f":(exclude){pkg.parent / 'benchmarks' / 'results'}")
            state["git_dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return state


def getrusage_peak_bytes() -> int:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB


def vm_hwm_bytes() -> Optional[int]:
    """``VmHWM`` of ``/proc/self/status`` (reset by ``execve``), or None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_rss_bytes() -> int:
    """This process's peak RSS.

    On Linux ``getrusage(RUSAGE_SELF).ru_maxrss`` of a freshly exec'd child starts at the RSS
    its parent had when it forked (the high-water mark survives ``execve``), so a large benchmark
    parent would mask the child's own peak; ``VmHWM`` is reset by ``execve`` and is used where it
    exists.
    """
    hwm = vm_hwm_bytes()
    return getrusage_peak_bytes() if hwm is None else hwm


def tune_allocator() -> Optional[bool]:
    """``svtjax.tune_allocator()``, called at start-up as the CLI does; returns whether it is
    on."""
    import svtjax

    return bool(svtjax.tune_allocator())


def new_record(case: str, config: dict) -> dict:
    """A record's header (:data:`SCHEMA`): where and when it runs, what it was asked."""
    return {"schema": SCHEMA, "case": case,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_info(), "device": device_info(), "versions": versions(),
            "source": source_state(), "load_average": {"start": load()}, "config": config,
            "results": []}


def record_path(record: dict, out_dir: Path) -> Path:
    stamp = record["created"].replace("+00:00", "").replace(":", "")
    return Path(out_dir) / f"{record['case']}-{record['machine']['machine_id']}-{stamp}.json"


def save(record: dict, out_dir: Path) -> Path:
    """Writes the record as JSON (serialised first, so a failure leaves no partial file)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = record_path(record, out_dir)
    text = json.dumps(record, indent=1, default=repr) + "\n"
    path.write_text(text)
    return path


# -- checks in a fresh process ---------------------------------------------------------------

def _child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"]
                                      if env.get("PYTHONPATH") else "")
    return env


def _run_child(kind: str, spec: dict, timeout: float = 900.0) -> dict:
    code = ("import time; t0 = time.perf_counter(); import sys, json; "
            "from benchmarks import machine; "
            f"child({kind!r}, json.loads(sys.argv[1]), t0)")
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
    from benchmarks import workload

    import_s = time.perf_counter() - t0
    tune_allocator()
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
        out["rss_after_import_bytes"] = peak_rss_bytes()
        jax.block_until_ready(svtjax.simulate(mech, q, threshold, trials=chunk,
                                              chunk_size=chunk, reduce=reduce))
        out["peak_after_one_chunk_bytes"] = peak_rss_bytes()
        t0 = time.perf_counter()
        evaluated, tops = jax.block_until_ready(svtjax.simulate(
            mech, q, threshold, trials=spec["trials"], chunk_size=chunk, reduce=reduce))
        out["run_s"] = time.perf_counter() - t0
        out["peak_after_run_bytes"] = peak_rss_bytes()
        out["getrusage_maxrss_bytes"] = getrusage_peak_bytes()
        out["rss_source"] = "VmHWM" if vm_hwm_bytes() is not None else "getrusage"
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


# -- timing ----------------------------------------------------------------------------------

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
