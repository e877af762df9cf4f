"""Where a compiled chunk's time goes, kernel by kernel: XLA's CPU thunks under JAX's profiler.

Runs the headline workload (svt-s, monotonic, 1:c^(2/3), ε = 0.5, c = 50, Zipf 10,000/i in the
stored order or with a per-trial shuffle) through ``simulate(reduce=)`` with the count-only
reducer, warm, once under ``jax.profiler.trace`` with XLA's per-thunk trace events switched on
(``XLA_FLAGS=--xla_cpu_enable_xprof_traceme=true``, set before JAX starts), and sums the
Perfetto trace's complete events by name: every executed kernel (fusion, scatter, copy, loop)
with its number of executions, total and mean time. A kernel inside the lazy Fisher–Yates loop
runs once per swap step (W steps per block of every level), one in the block loop once per
block, so the counts say which loop a kernel belongs to. Where the compiled Fisher–Yates block
of ``svtjax/_native`` runs (the CPU default since 0925b01), the swap loop is one ``ffi_call``
kernel per block instead (``SVTJAX_NATIVE=0`` profiles the pure-JAX loop).

The profiler slows every thunk (on average by (profiled − warm wall time) ÷ kernel runs, which
the record allows to compute: 0.7-1 µs on the 2-core CI VM), so the times are inflated where
a kernel does little (the loop's bookkeeping: counter copies and increments): read them for
counts and proportions, and the wall times of ``benchmarks/cost_breakdown.py`` for costs.

    python benchmarks/profile_thunks.py [--sizes 10000x1000 1000x10000] [--modes shuffle]
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, workload  # noqa: E402

HERE = Path(__file__).resolve().parent
TOP = 30
"""Kernels kept per case, by total time."""
_HOST_PREFIXES = ("$", "ThunkExecutor", "end: ")
"""Trace events that are not kernels: Python frames, the executor's own spans, the ends of
asynchronous thunks."""


def profile(n: int, trials: int, mode: str) -> dict:
    import jax

    import svtjax

    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    q, threshold = workload.zipf_workload(n)

    def run():
        return jax.block_until_ready(svtjax.simulate(
            mech, q, threshold, trials=trials, seed=0, shuffle=mode == "shuffle",
            reduce=workload.count_reduce))

    run()
    t0 = time.perf_counter()
    run()
    warm_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d, create_perfetto_trace=True):
            t0 = time.perf_counter()
            run()
            profiled_s = time.perf_counter() - t0
        (path,) = Path(d).rglob("perfetto_trace.json.gz")
        with gzip.open(path) as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    total, count = collections.defaultdict(float), collections.Counter()
    for e in events:
        name = e.get("name", "")
        if e.get("ph") == "X" and not name.startswith(_HOST_PREFIXES):
            total[name] += e.get("dur", 0.0)
            count[name] += 1
    kernels = [{"name": k, "count": count[k], "total_us": total[k],
                "mean_us": total[k] / count[k]}
               for k in sorted(total, key=total.get, reverse=True)]
    return {"n": n, "trials": trials, "mode": mode, "warm_s": warm_s, "profiled_s": profiled_s,
            "kernel_events": sum(count.values()), "kernel_us": sum(total.values()),
            "kernels": kernels[:TOP]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workload.add_sizes_option(p)
    p.add_argument("--modes", nargs="+", default=["shuffle"], choices=["fixed", "shuffle"])
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    if "jax" in sys.modules:  # the flag is read when XLA's CPU client starts
        raise SystemExit("profile_thunks must set XLA_FLAGS before JAX is imported")
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_cpu_enable_xprof_traceme=true").strip()
    machine.tune_allocator()
    cases = []
    for n, trials in args.sizes:
        for mode in args.modes:
            case = profile(n, trials, mode)
            cases.append(case)
            print(f"n={n} trials={trials} {mode}: warm {1e3 * case['warm_s']:.1f} ms, profiled "
                  f"{1e3 * case['profiled_s']:.1f} ms, {case['kernel_events']} kernel runs")
            for k in case["kernels"][:12]:
                print(f"  {k['total_us'] / 1e3:8.2f} ms {k['count']:7d} x "
                      f"{k['mean_us']:8.2f} us  {k['name']}")
    machine.write_record("thunk-profile", "thunk-profile", args.out, cases=cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
