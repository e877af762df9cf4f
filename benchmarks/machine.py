"""What a benchmark record says about where it ran: machine, device, versions, source, load.

Readers of ``/proc`` (CPU model, memory, peak RSS) live here, in the tools, never in the
package. Each falls back to a portable source (``sysctl``, ``os.sysconf``, ``getrusage``) or to
None off Linux.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

__all__ = ["machine_info", "device_info", "versions", "source_state", "load", "cpu_model",
           "default_machine_id", "peak_rss_bytes", "vm_hwm_bytes", "getrusage_peak_bytes",
           "safe_id", "tune_allocator", "usable_cores"]

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
            dirty = git("status", "--porcelain", "--", str(pkg), str(pkg.parent / "benchmarks"))
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


def write_record(benchmark: str, prefix: str, out: Path, **fields) -> Path:
    """Writes ``out/<prefix>-<machine id>-<time>.json``: the benchmark's ``fields`` with this
    machine, device, versions, source state, load and time; prints and returns the path."""
    record = {"benchmark": benchmark, "machine": machine_info(), "device": device_info(),
              "versions": versions(), "source": source_state(), "load": load(),
              "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **fields}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{prefix}-{default_machine_id()}-{time.strftime('%Y-%m-%dT%H%M%S')}.json"
    path.write_text(json.dumps(record, indent=1, default=repr))
    print(f"wrote {path}")
    return path


def record_main(doc: str, benchmark: str, prefix: str, fields, argv=None) -> int:
    """The command line of a benchmark whose only option is ``--out`` (default
    ``benchmarks/results``): computes ``fields()`` and writes them with :func:`write_record`."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args(argv)
    write_record(benchmark, prefix, args.out, **fields())
    return 0


def sizes_rounds_main(argv, description: str, measure, benchmark: str, prefix: str,
                      rounds: int) -> int:
    """The command line of a benchmark that takes ``--sizes``, ``--rounds`` and ``--out`` and
    writes the rows of ``measure(sizes, rounds)`` as one record (:func:`write_record`)."""
    from benchmarks import workload

    p = argparse.ArgumentParser(description=description)
    workload.add_sizes_option(p)
    p.add_argument("--rounds", type=int, default=rounds)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args(argv)
    tune_allocator()
    t0 = time.perf_counter()
    rows = measure(args.sizes, args.rounds)
    write_record(benchmark, prefix, args.out, rows=rows, wall_s=time.perf_counter() - t0)
    return 0
