"""Times ``svtjax reproduce NAME --paper`` for every registered experiment (issue: the whole
``reproduce all --paper`` on the 2-core CPU, target under 30 minutes).

Each experiment runs in its own subprocess (a fresh JAX process, as ``svtjax reproduce all``
would be run by a user; the persistent compilation cache is left as the user's default) and
its wall time and exit status are recorded. Writes
``benchmarks/results/reproduce-<machine>-<UTC time>.json``; ``benchmarks/update_results.py``
renders the latest such record into RESULTS.md.

    python benchmarks/bench_reproduce.py [--mode paper|quick] [--out DIR] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SCHEMA = "svtjax-reproduce/1"


def main(argv=None) -> int:
    from benchmarks.machine import cpu_model, load
    from svtjax import experiments

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("paper", "quick"), default="paper")
    p.add_argument("--out", default="/tmp/svtjax-reproduce", help="experiments' output root")
    p.add_argument("--only", nargs="+", help="experiments to time (default: all registered)")
    p.add_argument("--machine", default=None, help="machine id in the file name")
    p.add_argument("--results", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    names = args.only or experiments.names()
    unknown = sorted(set(names) - set(experiments.names()))
    if unknown:
        p.error(f"unknown experiment(s) {unknown}; registered: {experiments.names()}")
    rows = []
    start_load = load()
    t_all = time.perf_counter()
    for name in names:
        cmd = [sys.executable, "-m", "svtjax.cli", "reproduce", name, f"--{args.mode}",
               "--out", os.path.join(args.out, name)]
        print(f"[reproduce] {' '.join(cmd[2:])}", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        rows.append({"experiment": name, "seconds": seconds, "returncode": proc.returncode,
                     "tail": tail, "load_1m": load()[0] if load() else None})
        print(f"[reproduce] {name}: {seconds:.0f} s, exit {proc.returncode}", flush=True)
    total = time.perf_counter() - t_all
    machine = args.machine or socket.gethostname()
    now = _dt.datetime.now(_dt.timezone.utc)
    record = {
        "schema": SCHEMA, "created": now.isoformat(timespec="seconds"), "mode": args.mode,
        "machine": {"machine_id": machine, "cpu_model": cpu_model(),
                    "logical_cores": os.cpu_count(), "platform": platform.platform()},
        "load_average": {"start": start_load, "end": load()},
        "experiments": rows, "total_seconds": total,
        "all_succeeded": all(r["returncode"] == 0 for r in rows),
    }
    args.results.mkdir(parents=True, exist_ok=True)
    path = args.results / f"reproduce-{machine}-{now.strftime('%Y-%m-%dT%H%M%S')}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"total {total:.0f} s ({total / 60:.1f} min); wrote {path}")
    return 0 if record["all_succeeded"] else 1


if __name__ == "__main__":
    sys.exit(main())
