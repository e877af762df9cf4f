"""Peak memory of a sweep point with 10^6 trials on 10^4 queries against the configured budget.

Runs one grid point (default: SVT-S, monotonic, ε = 0.5, top-50 of Zipf with 10,000 items, a
fresh random item order per trial, every metric) through ``svtjax.sweep.run`` with
``memory_budget_mb`` set, and records the process's resident memory: after the imports, after
a warm-up run of one chunk (compilation included), and the peak over the full run
(``ru_maxrss``). Full Outcomes of this run would take trials × n × 25 bytes (250 GB); the sweep
keeps O(chunk) by reducing every chunk to per-trial metrics on the device.

The budget bounds the working memory of a compiled chunk (its modeled size, ``model_chunk_mb``,
is at most the budget); the process also holds a fixed amount for the JAX runtime and the XLA
compiler that does not depend on the trials or the budget. The check (``within_budget``): the
modeled chunk fits the budget and the peak RSS grows by less than the budget between the end of
a one-chunk warm-up (compilation done) and the end of the full run, i.e. memory does not grow
with the number of trials. On a GPU the device's ``peak_bytes_in_use`` is recorded too.

Usage::

    python benchmarks/bench_sweep_memory.py                     # 10^6 x 10^4, 256 MiB
    python benchmarks/bench_sweep_memory.py --trials 100000 --budget-mb 128

Writes ``benchmarks/results/sweep-memory-<host>-<time>.json`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import resource
import socket
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=10**6)
    p.add_argument("--n", type=int, default=10**4, help="queries (Zipf items)")
    p.add_argument("--c", type=int, default=50)
    p.add_argument("--epsilon", type=float, default=0.5)
    p.add_argument("--mechanism", default="svt-s")
    p.add_argument("--budget-mb", type=float, default=256.0)
    p.add_argument("--no-shuffle", action="store_true")
    p.add_argument("--out", default=str(HERE / "results"))
    args = p.parse_args(argv)

    rss_start = rss_mb()
    import jax

    from svtjax import sweep

    params = {"name": args.mechanism}
    if args.mechanism in ("svt-s", "svt-retr", "svt-gap", "em-peeling"):
        params["monotonic"] = True
    raw = {"sweep": {"name": "memory", "trials": args.trials, "seed": 0,
                     "datasets": [{"name": "zipf", "n": args.n}],
                     "metrics": sweep.metric_names(), "shuffle": not args.no_shuffle,
                     "memory_budget_mb": args.budget_mb},
           "grid": {"epsilon": [args.epsilon], "c": [args.c]},
           "mechanisms": [params]}
    config = sweep.load_config(raw)
    point = sweep.expand(config)[0]
    per_trial = sweep._bytes_per_trial(point.build(), args.n, 4, config.shuffle, args.c,
                                       len(config.metrics))
    _, chunk = sweep.plan(1, args.trials, per_trial, args.budget_mb * 2**20)
    rss_imported = rss_mb()

    t0 = time.perf_counter()
    warm = dict(raw, sweep=dict(raw["sweep"], trials=chunk))
    sweep.run(warm, progress=False, log=lambda m: None)
    warm_s = time.perf_counter() - t0
    rss_warm = rss_mb()
    peak_warm = peak_rss_mb()

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = sweep.run(raw, tmp, progress=False, log=lambda m: None)
        run_s = time.perf_counter() - t0
    peak = peak_rss_mb()
    device = jax.devices()[0]
    stats = {}
    try:
        stats = device.memory_stats() or {}
    except Exception:  # noqa: BLE001 - CPU devices may not report
        pass
    f1 = next(r for r in res.rows if r["metric"] == "f1")
    record = {
        "schema": "svtjax-sweep-memory/1",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(), "platform": platform.platform(),
        "cpu_count": os.cpu_count(), "load_average": list(os.getloadavg()),
        "device": f"{device.platform} x {len(jax.devices())} ({device.device_kind})",
        "versions": sweep.versions(),
        "config": {"trials": args.trials, "n": args.n, "c": args.c, "epsilon": args.epsilon,
                   "mechanism": args.mechanism, "shuffle": config.shuffle,
                   "metrics": list(config.metrics), "budget_mb": args.budget_mb},
        "chunk_trials": chunk,
        "model_bytes_per_trial": per_trial,
        "model_chunk_mb": chunk * per_trial / 2**20,
        "full_outcomes_gb": args.trials * args.n * 25 / 1e9,
        "rss_mb": {"start": rss_start, "after_imports": rss_imported, "after_warmup": rss_warm,
                   "peak_after_warmup": peak_warm, "peak": peak},
        "peak_minus_imports_mb": peak - rss_imported,
        "peak_growth_during_run_mb": peak - peak_warm,
        "within_budget": (chunk * per_trial / 2**20 <= args.budget_mb
                          and peak - peak_warm <= args.budget_mb),
        "device_peak_bytes_in_use": stats.get("peak_bytes_in_use"),
        "seconds": {"warmup_incl_compile": warm_s, "run": run_s},
        "trials_per_second": args.trials / run_s,
        "f1": {"mean": f1["mean"], "ci": [f1["ci_low"], f1["ci_high"]]},
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = record["created"].replace(":", "").replace("+0000", "").replace("+00:00", "")
    path = out / f"sweep-memory-{record['host']}-{device.platform}-{stamp}.json"
    path.write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))
    print(f"wrote {path}")
    return 0 if record["within_budget"] else 1


if __name__ == "__main__":
    sys.exit(main())
