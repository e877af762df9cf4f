"""Measures what ``svtjax._malloc.tune_allocator`` (glibc's mmap/trim thresholds) changes.

The same timings run in three fresh processes: ``default`` (``SVTJAX_MALLOC_TUNING=0``: glibc's
defaults, every buffer above 32 MiB is a fresh ``mmap`` whose pages fault on first touch),
``thresholds`` (glibc's mmap and trim thresholds raised through its environment variables, as
svtjax did before it also set one malloc arena) and ``tuned`` (svtjax's setting): a jitted fill
of a 40 MB int32 array, and svt-s on the Zipf workload (ε = 0.5, c = 50; the stream sorted by
score, as in its first records, or shuffled per trial) returning full Outcomes and with the
benchmark's count-only reducer. Each timing also records the minor page faults per
call.
Writes ``benchmarks/results/allocator-<machine>-<UTC time>.json``; ``update_results.py`` renders
the latest record into RESULTS.md.

    python benchmarks/bench_allocator.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SCHEMA = "svtjax-allocator/1"
CASES = ((10000, 1000, False), (10000, 1000, True), (1000, 10000, False), (1000, 10000, True))
RUNS = (
    ("default", {"SVTJAX_MALLOC_TUNING": "0"}),
    # svtjax's setting before the arena change, set through glibc's environment variables
    ("thresholds", {"SVTJAX_MALLOC_TUNING": "0", "MALLOC_MMAP_THRESHOLD_": str(1 << 30),
                    "MALLOC_TRIM_THRESHOLD_": str((1 << 31) - 1)}),
    ("tuned", {"SVTJAX_MALLOC_TUNING": "1"}),
)


def child(repeats: int) -> dict:
    """Runs in the subprocess: median wall seconds of each timing."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import svtjax
    from benchmarks.machine import tune_allocator
    from benchmarks.workload import HEADLINE, count_reduce, headline_params, zipf_workload

    tuned = tune_allocator()

    def median(f):
        """(median wall seconds, minor page faults per call) over ``repeats`` warm calls."""
        f()
        times = []
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(repeats):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        return float(np.median(times)), faults / repeats

    fill = jax.jit(lambda x: jnp.full((1000, 10000), x, jnp.int32))
    fill_s, fill_faults = median(lambda: jax.block_until_ready(fill(jnp.int32(-1))))
    out = {"tuned": tuned, "fill_40mb_s": fill_s, "fill_40mb_faults": fill_faults,
           "cases": []}
    for n, trials, shuffle in CASES:
        q, T = zipf_workload(n, order="sorted")  # the order of the records before it
        mech = svtjax.get(HEADLINE, **headline_params(0.5, 50))
        run = lambda **kw: jax.block_until_ready(svtjax.simulate(  # noqa: E731
            mech, q, T, trials=trials, shuffle=shuffle, progress=False, **kw))
        case = {"n": n, "trials": trials, "mode": "shuffle" if shuffle else "sorted"}
        case["full_s"], case["full_faults"] = median(run)
        case["reduce_s"], case["reduce_faults"] = median(lambda: run(reduce=count_reduce))
        out["cases"].append(case)
    return out


def main(argv=None) -> int:
    from benchmarks.machine import load as _load
    from benchmarks.machine import machine_info

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--results", type=Path, default=HERE / "results")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.repeats)))
        return 0
    runs = {}
    load_start = _load()
    for label, extra in RUNS:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        env.update(extra)
        proc = subprocess.run([sys.executable, __file__, "--child", "--repeats",
                               str(args.repeats)], capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr, file=sys.stderr)
            return proc.returncode
        runs[label] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"[allocator] {label}: {runs[label]}", flush=True)
    now = _dt.datetime.now(_dt.timezone.utc)
    machine = machine_info()
    record = {"schema": SCHEMA, "created": now.isoformat(timespec="seconds"),
              "machine": machine, "repeats": args.repeats,
              "load_average": {"start": load_start, "end": _load()}, "runs": runs}
    args.results.mkdir(parents=True, exist_ok=True)
    path = args.results / (f"allocator-{machine['machine_id']}-"
                           f"{now.strftime('%Y-%m-%dT%H%M%S')}.json")
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"[allocator] wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
