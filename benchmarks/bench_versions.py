"""Every registered mechanism's throughput in two (or more) checkouts of svtjax, same run.

Issue 16 asks that no mechanism be slower after the rules-engine redesign than before it. This
script answers that on the machine it runs on: each checkout (a git worktree, e.g. one at
``f3322fe``) gets one long-lived worker process that imports *its* svtjax and compiles every
case once; the parent then asks the workers for timed calls in interleaved rounds, so load
changes on the machine hit every checkout alike. Only the public API is used
(``svtjax.get``, ``svtjax.simulate`` with ``reduce=``), so any checkout since the registry
existed can be measured.

Workload per mechanism: Zipf scores 10,000/i stored in one fixed random order (the papers' data
preparation), the Lyu et al. threshold, ε = 0.5, c = 50 (parameters from the class's
``example_params`` of the last checkout), in fixed order and with a per-trial shuffle; the
reducer returns the number of ⊤ answers and the sum of the selected items per trial (so
Outcome materialisation is not what is timed, and the result depends on every draw). Every
worker runs with svtjax's glibc allocator setting (set on import before the redesign, by
``svtjax.tune_allocator()`` since).

    git worktree add /tmp/svtjax-before f3322fe
    python benchmarks/bench_versions.py /tmp/svtjax-before . --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _worker(root: str) -> None:
    """Imports the svtjax of ``root``; reads one JSON command per line on stdin."""
    sys.path.insert(0, root)
    import jax
    import numpy as np

    import svtjax

    assert Path(svtjax.__file__).resolve().is_relative_to(Path(root).resolve()), svtjax.__file__
    if hasattr(svtjax, "tune_allocator"):
        # Checkouts since the redesign no longer set glibc's allocator on import (issue 16);
        # the documented call restores the setting older ones made on import, so both run
        # with it (without it, every call page-faults its large temporaries afresh).
        svtjax.tune_allocator()

    def count(out):  # depends on every draw (a count of ⊤ alone is constant for the
        # selection mechanisms, whose answers are all ⊤: XLA would drop their whole kernel)
        picked = jax.numpy.where(out.answers == 1, out.items, 0)
        return jax.numpy.sum(out.answers == 1, axis=-1), jax.numpy.sum(picked, axis=-1)

    prepared = {}
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "prepare":
            n, trials = cmd["n"], cmd["trials"]
            scores = 10000.0 / np.arange(1, n + 1)
            q = scores[np.random.default_rng(0).permutation(n)]
            t = float(svtjax.datasets.lyu_threshold(scores, cmd["c"]))
            try:
                mech = svtjax.get(cmd["name"], **pickle.loads(bytes.fromhex(cmd["params"])))
                call = lambda m=mech, s=cmd["shuffle"]: jax.block_until_ready(  # noqa: E731
                    svtjax.simulate(m, q, t, trials=trials, seed=0, shuffle=s, reduce=count,
                                    progress=False))
                t0 = time.perf_counter()
                call()
                prepared[cmd["id"]] = call
                reply = {"ok": True, "first_s": time.perf_counter() - t0}
            except Exception as e:  # a mechanism this checkout lacks or builds differently
                reply = {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}
        else:  # time
            call = prepared[cmd["id"]]
            t0 = time.perf_counter()
            call()
            reply = {"ok": True, "s": time.perf_counter() - t0}
        print(json.dumps(reply), flush=True)


class _Worker:
    def __init__(self, root: str):
        env = dict(os.environ, PYTHONPATH=root)
        self.root = root
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", root], cwd=root,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def ask(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker for {self.root} died")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def _commit(root: str) -> str:
    """The checkout's short commit, with ``+dirty`` when its package has uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", "svtjax")
        return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("roots", nargs="+", help="checkouts to compare (the first is the baseline)")
    p.add_argument("--only", action="append", help="mechanism name (repeatable; default all)")
    p.add_argument("--size", default="10000x1000", help="NxTRIALS (default 10000x1000)")
    p.add_argument("--mode", action="append", choices=["fixed", "shuffle"])
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--out", type=Path, help="directory for the JSON record")
    args = p.parse_args(argv)
    n, trials = (int(v) for v in args.size.lower().split("x"))
    c, epsilon = 50, 0.5
    roots = [str(Path(r).resolve()) for r in args.roots]

    sys.path.insert(0, roots[-1])
    import svtjax  # the last checkout names the mechanisms and their parameters

    names = args.only or list(svtjax.mechanisms.names())
    reg = svtjax.mechanisms.registry()
    modes = args.mode or ["fixed", "shuffle"]
    cases = []
    for name in names:
        # pickled: some parameters are objects (e.g. a noise family), which each checkout
        # rebuilds from its own svtjax
        params = pickle.dumps(reg[name].example_params(epsilon=epsilon, c=c, n=n)).hex()
        for mode in modes:
            cases.append({"id": len(cases), "name": name, "params": params,
                          "shuffle": mode == "shuffle", "n": n, "trials": trials, "c": c})

    load0 = os.getloadavg()
    workers = [_Worker(r) for r in roots]
    status = {}
    for case in cases:
        status[case["id"]] = [w.ask(op="prepare", **case) for w in workers]
        print(f"compiled {case['name']:18s} {'shuffle' if case['shuffle'] else 'fixed':7s}",
              *(f"{r.get('first_s', float('nan')):6.1f}s" if r["ok"] else "n/a" for r in
                status[case["id"]]), file=sys.stderr, flush=True)
    times = {(i, k): [] for i in status for k in range(len(roots))}
    for rnd in range(args.repeats):
        for case in cases:
            order = range(len(roots)) if rnd % 2 == 0 else reversed(range(len(roots)))
            for k in order:
                if status[case["id"]][k]["ok"]:
                    times[case["id"], k].append(workers[k].ask(op="time", id=case["id"])["s"])
    for w in workers:
        w.close()

    rows = []
    header = ["mechanism", "mode"] + [f"{_commit(r)} ms" for r in roots] + \
        [f"{_commit(r)} ÷ {_commit(roots[0])}" for r in roots[1:]]
    for case in cases:
        med = [statistics.median(times[case["id"], k]) if times[case["id"], k] else None
               for k in range(len(roots))]
        row = {"mechanism": case["name"], "mode": "shuffle" if case["shuffle"] else "fixed",
               "median_s": med, "samples": [times[case["id"], k] for k in range(len(roots))],
               "errors": [s.get("error") for s in status[case["id"]]]}
        row["speedup_vs_first"] = [None if med[0] is None or m is None else med[0] / m
                                   for m in med[1:]]
        rows.append(row)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        cells = [row["mechanism"], row["mode"]] + \
            ["n/a" if m is None else f"{1e3 * m:.1f}" for m in row["median_s"]] + \
            ["n/a" if s is None else f"{s:.2f}x" for s in row["speedup_vs_first"]]
        print("| " + " | ".join(cells) + " |")
    record = {"benchmark": "versions", "command": " ".join(sys.argv),
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "roots": [{"path": r, "commit": _commit(r)} for r in roots],
              "n": n, "trials": trials, "epsilon": epsilon, "c": c, "repeats": args.repeats,
              "cpu_count": os.cpu_count(), "load": {"start": load0, "end": os.getloadavg()},
              "rows": rows}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M%S")
        path = args.out / f"versions-{stamp}.json"
        path.write_text(json.dumps(record, indent=1))
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        _worker(sys.argv[2])
    else:
        sys.exit(main())
