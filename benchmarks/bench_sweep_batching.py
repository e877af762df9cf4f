"""Sweep wall time with points run one at a time against points vmapped together.

One group (SVT-S, monotonic, top-50 of Zipf with 10,000 items) over ten ε values, run with
``points_per_batch`` = 1 and = 10; each configuration runs twice and the second (compiled) run
is timed. Early exit is why batching can lose: a vmapped batch runs until its slowest point has
halted (large ε reads most of the stream, small ε a few percent).

Usage::

    python benchmarks/bench_sweep_batching.py [--trials 1000] [--no-shuffle]

Writes ``benchmarks/results/sweep-batching-<host>-<time>.json`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import socket
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--no-shuffle", action="store_true")
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--out", default=str(HERE / "results"))
    args = p.parse_args(argv)

    import jax

    from svtjax import sweep

    eps = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0]
    timings = {}
    for ppb in (1, args.batch):
        raw = {"sweep": {"name": "batching", "trials": args.trials, "datasets": ["zipf"],
                         "metrics": ["f1", "ser"], "shuffle": not args.no_shuffle,
                         "memory_budget_mb": 4096, "points_per_batch": ppb},
               "grid": {"epsilon": eps, "c": [50]},
               "mechanisms": [{"name": "svt-s", "monotonic": True}]}
        t0 = time.perf_counter()
        sweep.run(raw, progress=False, log=lambda m: None)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        sweep.run(raw, progress=False, log=lambda m: None)
        timings[ppb] = {"first_incl_compile_s": first, "compiled_s": time.perf_counter() - t0}
    device = jax.devices()[0]
    record = {
        "schema": "svtjax-sweep-batching/1",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(), "platform": platform.platform(),
        "cpu_count": os.cpu_count(), "load_average": list(os.getloadavg()),
        "device": f"{device.platform} x {len(jax.devices())} ({device.device_kind})",
        "versions": sweep.versions(),
        "config": {"trials": args.trials, "epsilons": eps, "shuffle": not args.no_shuffle,
                   "n": 10_000, "c": 50, "mechanism": "svt-s monotonic"},
        "points_per_batch": {str(k): v for k, v in timings.items()},
        "vmapped_over_one_at_a_time": timings[args.batch]["compiled_s"] / timings[1]["compiled_s"],
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = record["created"].replace(":", "").replace("+0000", "").replace("+00:00", "")
    path = out / f"sweep-batching-{record['host']}-{device.platform}-{stamp}.json"
    path.write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
