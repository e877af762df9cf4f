"""Where the test suite's time goes: a pytest plugin that sums JAX's staging times per test, and
its report.

    python -m pytest -n 2 -q -p benchmarks.suite_profile     # writes $SUITE_PROFILE_DIR
    python benchmarks/suite_profile.py [DIR]                  # the report, per test file

Per test (and xdist worker) the plugin records the test's wall time and the durations JAX
reports through ``jax.monitoring``: tracing (``jaxpr_trace_duration``), lowering to MLIR
(``jaxpr_to_mlir_module_duration``), the backend compile step (``backend_compile_duration``,
which includes loading an executable from the persistent cache) and cache reads; and every
persistent-cache key read (by wrapping JAX's private ``compiler._cache_read``) and JAX's
cache-hit and cache-miss events, so a report can count distinct programs and the programs
compiled because the persistent cache did not have them; and the same durations per jitted
function (by name), so a report can say which programs the staging time goes to; and the
entries each test added to the tests' persistent compilation cache (``$SVTJAX_CACHE_DIR``, set
by ``tests/conftest.py``), which also counts what the test's subprocesses compiled (the command
line tests'); with ``-n 2`` the other worker's entries can land in a test's count, so run a
file alone (``-p no:cacheprovider``, no ``-n``) for exact counts. ``DIR`` defaults to
``/tmp/svtjax-suite-profile``.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from pathlib import Path

import pytest

TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE = "/jax/core/compile/backend_compile_duration"
HITS = "/jax/compilation_cache/cache_hits"
MISSES = "/jax/compilation_cache/cache_misses"
DEFAULT_DIR = "/tmp/svtjax-suite-profile"

_current: list = [None]
_stats: dict = collections.defaultdict(lambda: collections.defaultdict(float))
_keys: list = []


def _out_dir() -> Path:
    return Path(os.environ.get("SUITE_PROFILE_DIR", DEFAULT_DIR))


_programs: dict = collections.defaultdict(lambda: collections.defaultdict(float))


def _listener(event: str, duration: float, **kwargs) -> None:
    if _current[0] is not None:
        stats = _stats[_current[0]]
        stats[event] += duration
        stats[event + "#n"] += 1
        if "fun_name" in kwargs:  # tracing names the function, lowering "jit(name)"
            name = str(kwargs["fun_name"])
            if name.startswith("jit(") and name.endswith(")"):
                name = name[4:-1]
            program = _programs[name]
            program[event] += duration
            program[event + "#n"] += 1


def _count(event: str, **kwargs) -> None:
    if _current[0] is not None and event in (HITS, MISSES):
        _stats[_current[0]][event] += 1


def pytest_configure(config) -> None:
    import jax.monitoring
    from jax._src import compiler

    jax.monitoring.register_event_duration_secs_listener(_listener)
    jax.monitoring.register_event_listener(_count)
    read = compiler._cache_read

    def logged_read(module_name, cache_key, *args, **kwargs):
        _keys.append((cache_key, module_name, _current[0]))
        return read(module_name, cache_key, *args, **kwargs)

    compiler._cache_read = logged_read


def _cache_entries() -> int:
    directory = os.environ.get("SVTJAX_CACHE_DIR")
    try:
        return len(os.listdir(directory)) if directory else 0
    except OSError:
        return 0


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current[0] = item.nodeid
    entries = _cache_entries()
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        _stats[item.nodeid]["wall"] += time.perf_counter() - start
        _stats[item.nodeid]["new_entries"] += _cache_entries() - entries
        _current[0] = None



def pytest_unconfigure(config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out = _out_dir()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{worker}.json").write_text(json.dumps(
        {"tests": {k: dict(v) for k, v in _stats.items()}, "keys": _keys,
         "programs": {k: dict(v) for k, v in _programs.items()}}))


def report(directory: Path) -> str:
    tests, keys, programs = {}, [], collections.defaultdict(collections.Counter)
    for path in sorted(directory.glob("*.json")):
        rec = json.loads(path.read_text())
        tests.update(rec["tests"])
        keys += [(path.stem, *k) for k in rec["keys"]]
        for name, stats in rec.get("programs", {}).items():
            programs[name].update(stats)
    totals = collections.Counter()
    per_file = collections.defaultdict(collections.Counter)
    for nodeid, stats in tests.items():
        for name, value in stats.items():
            totals[name] += value
            per_file[nodeid.split("::")[0]][name] += value
    lines = [f"tests {len(tests)}; wall {totals['wall']:.1f} s; tracing {totals[TRACE]:.1f} s "
             f"({totals[TRACE + '#n']:.0f}); lowering {totals[LOWER]:.1f} s "
             f"({totals[LOWER + '#n']:.0f}); backend compile or cache load {totals[COMPILE]:.1f} s",
             f"cache reads {len(keys)}, distinct keys {len({k for _, k, _, _ in keys})}; "
             f"hits {totals[HITS]:.0f}, misses (compiled) {totals[MISSES]:.0f}", "",
             f"{'file':46s} {'wall s':>7s} {'trace s':>8s} {'lower s':>8s} {'programs':>8s} "
             f"{'compile s':>9s} {'misses':>6s} {'cached':>6s}"]
    for name, c in sorted(per_file.items(), key=lambda kv: -kv[1]["wall"]):
        lines.append(f"{name:46s} {c['wall']:7.1f} {c[TRACE]:8.1f} {c[LOWER]:8.1f} "
                     f"{c[LOWER + '#n']:8.0f} {c[COMPILE]:9.1f} {c[MISSES]:6.0f} "
                     f"{c['new_entries']:6.0f}")
    slowest = sorted(tests.items(), key=lambda kv: -kv[1].get(COMPILE, 0.0))[:25]
    lines += ["", "the 25 tests with the most backend compile time (cached: entries the test "
              "added to the persistent cache, its subprocesses' included):",
              f"{'test':70s} {'wall s':>7s} {'programs':>8s} {'compile s':>9s} {'cached':>6s}"]
    for nodeid, c in slowest:
        lines.append(f"{nodeid[-70:]:70s} {c.get('wall', 0.0):7.1f} "
                     f"{c.get(LOWER + '#n', 0):8.0f} {c.get(COMPILE, 0.0):9.1f} "
                     f"{c.get('new_entries', 0):6.0f}")
    if programs:
        staged = lambda c: c[TRACE] + c[LOWER] + c[COMPILE]  # noqa: E731
        lines += ["", "programs by the jitted function's name (a jax.numpy operation run "
                  "outside jit is a program of its own), the 25 with the most staging time:",
                  f"{'function':32s} {'programs':>8s} {'trace s':>8s} {'lower s':>8s} "
                  f"{'compile s':>9s} {'ms each':>8s}"]
        for name, c in sorted(programs.items(), key=lambda kv: -staged(kv[1]))[:25]:
            count = max(c[LOWER + "#n"], c[TRACE + "#n"], 1)
            lines.append(f"{name[:32]:32s} {c[LOWER + '#n']:8.0f} {c[TRACE]:8.1f} "
                         f"{c[LOWER]:8.1f} {c[COMPILE]:9.1f} {1e3 * staged(c) / count:8.0f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    directory = Path(argv[0]) if argv else _out_dir()
    print(report(directory))
    return 0


if __name__ == "__main__":
    sys.exit(main())
