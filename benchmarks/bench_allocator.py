"""Measures what ``svtjax._malloc.tune_allocator`` (glibc's mmap/trim thresholds) changes.

The same timings run in two fresh processes, one with ``SVTJAX_MALLOC_TUNING=0`` (glibc's
defaults: every buffer above 32 MiB is a fresh ``mmap`` whose pages fault on first touch) and one
with the tuning on (the default): a jitted fill of a 40 MB int32 array, and the headline svt-s
workload (Zipf, ε = 0.5, c = 50) returning full Outcomes and with the benchmark's reducer.
Writes ``benchmarks/results/allocator-<machine>-<UTC time>.json``; ``update_results.py`` renders
the latest record into RESULTS.md.

    python benchmarks/bench_allocator.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SCHEMA = "svtjax-allocator/1"
CASES = ((10000, 1000, False), (10000, 1000, True), (1000, 10000, False), (1000, 10000, True))


def child(repeats: int) -> dict:
    """Runs in the subprocess: median wall seconds of each timing."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import svtjax
    from svtjax import _malloc
    from svtjax.bench import HEADLINE, count_reduce, mechanism_params, zipf_workload

    _malloc.tune_allocator()

    def median(f):
        f()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    fill = jax.jit(lambda x: jnp.full((1000, 10000), x, jnp.int32))
    out = {"tuned": _malloc.state(), "fill_40mb_s": median(
        lambda: jax.block_until_ready(fill(jnp.int32(-1)))), "cases": []}
    for n, trials, shuffle in CASES:
        q, T = zipf_workload(n)
        mech = svtjax.get(HEADLINE, **mechanism_params(HEADLINE, 0.5, 50, n))
        run = lambda **kw: jax.block_until_ready(svtjax.simulate(  # noqa: E731
            mech, q, T, trials=trials, shuffle=shuffle, progress=False, **kw))
        out["cases"].append({"n": n, "trials": trials, "mode": "shuffle" if shuffle else "fixed",
                             "full_s": median(run),
                             "reduce_s": median(lambda: run(reduce=count_reduce))})
    return out


def main(argv=None) -> int:
    from svtjax.bench import _load, machine_info

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--results", type=Path, default=HERE / "results")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.repeats)))
        return 0
    runs = {}
    load_start = _load()
    for label, value in (("default", "0"), ("tuned", "1")):
        env = dict(os.environ, SVTJAX_MALLOC_TUNING=value)
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
