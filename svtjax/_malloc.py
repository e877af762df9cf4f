"""Keeps large buffers in the heap instead of fresh ``mmap``s (glibc only).

glibc serves every allocation above its mmap threshold (at most 32 MiB by default) with a fresh
``mmap`` and returns it to the kernel on ``free``, so each compiled call that makes a trials × n
output buffer pays one page fault per 4 KiB page, every time, and full-Outcome runs write several
such buffers (the difference is in ``benchmarks/RESULTS.md``, Decisions). Raising the mmap
and trim thresholds keeps freed
memory in the process for reuse; the cost is that the resident set stays at its peak instead of
shrinking after a large run.

The same faults can come back through glibc's per-thread arenas: XLA allocates a computation's
buffers on whichever of its worker threads runs the allocating step, and a worker's arena lives
in separately mapped heaps that glibc unmaps when they fall empty. One arena for the process
(``M_ARENA_MAX = 1``) and a top pad make every buffer come from the one heap. In
the allocator benchmark (15 warm calls per timing) this took 7 of its 9 timings to 0
minor faults per call, where the thresholds alone left up to a few thousand; the median times
stayed within run-to-run noise of each other. Its cost: the process's threads share one
malloc lock, which a program that allocates heavily from many threads of its own may notice
(``SVTJAX_MALLOC_TUNING=0`` opts out). The arena setting only takes effect for threads
that have not allocated yet, so call it before anything starts XLA's threads (before the first
JAX computation).

These settings change the whole host process, so a library must not make them behind its
user's back: ``import svtjax`` and ``svtjax.simulate`` leave the allocator alone.
:func:`tune_allocator` (``svtjax.tune_allocator()``) is an explicit call, made by the
``svtjax`` command line and the benchmark scripts on start-up; a script or notebook that runs
large simulations calls it once, first thing. Set ``SVTJAX_MALLOC_TUNING=0`` to make it a no-op
(the equivalent environment setting ``MALLOC_MMAP_THRESHOLD_=1073741824
MALLOC_TRIM_THRESHOLD_=2147483647 MALLOC_ARENA_MAX=1 MALLOC_TOP_PAD_=268435456`` works for any
process, and from its start).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from typing import Optional

_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
MMAP_THRESHOLD = 1 << 30
TRIM_THRESHOLD = (1 << 31) - 1
TOP_PAD = 1 << 28
ARENA_MAX = 1

_STATE: Optional[bool] = None


def tune_allocator() -> bool:
    """Tunes glibc's allocator for large simulation buffers, once per process (module docstring:
    mmap and trim thresholds raised, one arena, a 256 MiB top pad); returns whether the tuning
    is in effect.

    Call it first thing in a process that runs large simulations (before the first JAX
    computation, so that XLA's threads share the one arena). It changes the allocator of the
    whole process, which is why svtjax never calls it on import.

    Does nothing (returns False) off Linux, without glibc, or when ``SVTJAX_MALLOC_TUNING=0``.
    """
    global _STATE
    if _STATE is not None:
        return _STATE
    _STATE = False
    if os.environ.get("SVTJAX_MALLOC_TUNING", "1").strip() in ("0", "false", "no", "off"):
        return _STATE
    if not sys.platform.startswith("linux"):
        return _STATE
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other libcs have no mallopt
        return _STATE
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    settings = ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD), (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
                (_M_TOP_PAD, TOP_PAD), (_M_ARENA_MAX, ARENA_MAX))
    _STATE = all([mallopt(param, value) == 1 for param, value in settings])
    return _STATE


def state() -> Optional[bool]:
    """None before :func:`tune_allocator` ran, else whether the tuning is in effect."""
    return _STATE

