"""Times ``svtjax reproduce NAME --paper`` for every experiment of the top-level ``experiments/``
(issue 15: the whole ``reproduce all --paper`` on the 2-core CPU under 15 minutes with an empty
compilation cache, under 5 with a warm one).

What is timed is the user's command, ``python -m svtjax.cli reproduce all --MODE --jobs N``, from
the repository root (so ``svtjax reproduce`` finds ``experiments/`` beside the package source):
with ``--jobs`` above 1 (default: the CPU count, as the command's own default) it runs the
experiments N at a time, each in its own process, and the per-experiment wall times are read
from its "exit ... after ... s" lines; ``--jobs 1`` (or ``--only``) runs each experiment in its
own subprocess, one after another. ``--cache cold`` points the persistent compilation
cache at a new empty directory (``SVTJAX_CACHE_DIR``) shared by the experiments of this run;
``--cache warm`` runs twice into one directory and records the second pass; ``--cache user``
leaves the user's cache as it is. The load average at the start and end of each experiment is
recorded beside its wall time: timings taken on a shared machine are not comparable with an
idle one. Writes ``benchmarks/results/reproduce-<machine>-<UTC time>.json``, with the commit
of the code timed.

``--tree DIR`` times another checkout's command instead (run from DIR, its package first on
the path), for a like-for-like comparison with an older commit (issue 16: "no slower than
before"), e.g. ``git worktree add /tmp/f3322fe f3322fe`` then ``--tree /tmp/f3322fe --only
lyu2017 audit zhu_wang2020 ding2019 liu2024``: with ``--only`` each experiment runs in its own
subprocess, one after another.

    python benchmarks/bench_reproduce.py [--mode paper|quick] [--cache cold|warm|user]
                                         [--jobs N] [--out DIR] [--only NAME ...] [--tree DIR]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from benchmarks.machine import cpu_model, load  # noqa: E402

# Fields added since the first records (cache, per-experiment load, warmup_seconds,
# warmup_experiments) are additive, so the schema id stays the one RESULTS.md's renderer reads.
SCHEMA = "svtjax-reproduce/1"


def _experiment_names() -> list[str]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import experiments

    return experiments.names()


def _commit(tree: Path) -> Optional[str]:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _run_all(names, mode, out, env, root=ROOT) -> list[dict]:
    rows = []
    for name in names:
        cmd = [sys.executable, "-m", "svtjax.cli", "reproduce", name, f"--{mode}",
               "--out", os.path.join(out, name)]
        print(f"[reproduce] {' '.join(cmd[2:])}", flush=True)
        load_start = load()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env)
        seconds = time.perf_counter() - t0
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        rows.append({"experiment": name, "seconds": seconds, "returncode": proc.returncode,
                     "tail": tail, "load_start": load_start, "load_end": load()})
        print(f"[reproduce] {name}: {seconds:.0f} s, exit {proc.returncode}", flush=True)
    return rows


_DONE = re.compile(r"^== svtjax reproduce (\S+) .*: exit (\d+) after (\d+) s$")


def _run_jobs(names, mode, out, env, jobs) -> tuple[list[dict], float]:
    """``svtjax reproduce all --MODE --jobs N`` as one command: (per-experiment rows, wall s)."""
    cmd = [sys.executable, "-m", "svtjax.cli", "reproduce", "all", f"--{mode}", "--out", out,
           "--jobs", str(jobs)]
    print(f"[reproduce] {' '.join(cmd[2:])}", flush=True)
    load_start = load()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    seconds = time.perf_counter() - t0
    rows = []
    for line in proc.stdout.splitlines():
        m = _DONE.match(line.strip())
        if m:
            rows.append({"experiment": m[1], "seconds": float(m[3]), "returncode": int(m[2]),
                         "tail": [], "load_start": load_start, "load_end": None})
    found = {r["experiment"] for r in rows}
    rows += [{"experiment": n, "seconds": float("nan"), "returncode": proc.returncode or -1,
              "tail": (proc.stdout + proc.stderr).strip().splitlines()[-3:],
              "load_start": load_start, "load_end": None} for n in names if n not in found]
    print(f"[reproduce] all: {seconds:.0f} s, exit {proc.returncode}", flush=True)
    return rows, seconds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("paper", "quick"), default="paper")
    p.add_argument("--cache", choices=("cold", "warm", "user"), default="cold",
                   help="compilation cache: a new empty one (default), warmed by a first pass, "
                        "or the user's")
    p.add_argument("--out", default=None, help="experiments' output root (default: a "
                   "temporary directory)")
    p.add_argument("--only", nargs="+", help="experiments to time (default: all)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="experiments at once (the command's --jobs; default: the CPU count)")
    p.add_argument("--machine", default=None, help="machine id in the file name")
    p.add_argument("--results", type=Path, default=HERE / "results")
    p.add_argument("--tree", type=Path, default=None,
                   help="time this checkout's command (e.g. a worktree of an older commit); "
                        "needs --only")
    args = p.parse_args(argv)
    root = ROOT if args.tree is None else args.tree.resolve()
    if args.tree is not None:
        if not (root / "svtjax" / "cli.py").is_file():
            p.error(f"--tree {args.tree}: no svtjax/cli.py there")
        if not args.only:
            p.error("--tree needs --only (the experiments of that checkout to time)")
        names = args.only
    else:
        known = _experiment_names()
        names = args.only or known
        unknown = sorted(set(names) - set(known))
        if unknown:
            p.error(f"unknown experiment(s) {unknown}; known: {known}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    with tempfile.TemporaryDirectory(prefix="svtjax-reproduce-") as tmp:
        out = args.out or os.path.join(tmp, "out")
        if args.cache != "user":
            env["SVTJAX_CACHE_DIR"] = os.path.join(tmp, "jax-cache")
        jobs = 1 if args.only else max(1, args.jobs)

        def run_pass(where):
            if jobs > 1:
                return _run_jobs(names, args.mode, where, env, jobs)
            t0 = time.perf_counter()
            return _run_all(names, args.mode, where, env, root), time.perf_counter() - t0

        warmup, warmup_rows = None, None
        if args.cache == "warm":
            print("[reproduce] warm-up pass (recorded as warmup_seconds)", flush=True)
            warmup_rows, warmup = run_pass(os.path.join(tmp, "warmup"))
        load_start = load()
        rows, total = run_pass(out)
        load_end = load()
    machine = args.machine or socket.gethostname()
    now = _dt.datetime.now(_dt.timezone.utc)
    record = {
        "schema": SCHEMA, "created": now.isoformat(timespec="seconds"), "mode": args.mode,
        "cache": args.cache,
        "machine": {"machine_id": machine, "cpu_model": cpu_model(),
                    "logical_cores": os.cpu_count(), "platform": platform.platform()},
        "load_average": {"start": load_start, "end": load_end},
        "commit": _commit(root), "tree": None if args.tree is None else str(root),
        "experiments": rows, "total_seconds": total,
        "jobs": jobs,
        # wall time of the first pass of --cache warm (an empty cache: the cold run), and its
        # per-experiment rows (what each experiment's compilations cost)
        "warmup_seconds": warmup,
        "warmup_experiments": warmup_rows,
        "all_succeeded": all(r["returncode"] == 0 for r in rows),
        "note": "load averages are recorded per experiment; a loaded (shared) machine makes "
                "these times longer than on an idle one",
    }
    args.results.mkdir(parents=True, exist_ok=True)
    path = args.results / f"reproduce-{machine}-{now.strftime('%Y-%m-%dT%H%M%S')}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"total {total:.0f} s ({total / 60:.1f} min); wrote {path}")
    return 0 if record["all_succeeded"] else 1


if __name__ == "__main__":
    sys.exit(main())
