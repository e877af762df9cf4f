"""A sweep's exact columns at the ``[sweep] exact_accuracy`` that ``experiments/lyu2017.py`` sets
(``EXACT_ACCURACY``, or another given with ``--accuracy``) against the default quadrature rule,
on the exact groups of ``svtjax reproduce lyu2017 --paper``.

lyu2017's sweeps (``experiments/lyu2017.py``, ``exact = true``) evaluate, per dataset and c, one
``svtjax.exact.expected_metrics_many`` call for its four SVT-S methods (monotonic; 1:1, 1:3,
1:c, 1:c^(2/3)) at ε = 0.1 and 0.5, in random order, threshold = the mean of the c-th and
(c+1)-th scores. For a few of those groups this times the call with the default rule and with
the coarser one (warm: each variant once untimed, then alternating rounds, median), and reports
the nodes per law and the largest change of E[SER] (and of every other expected metric). Writes
``benchmarks/results/sweep-exact-accuracy-<machine>-<time>.json``::

    python benchmarks/bench_sweep_exact_accuracy.py [--rounds 3] [--out DIR]
                                                    [--accuracy KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # as the sweep recommends for its exact columns

import numpy as np  # noqa: E402

import svtjax  # noqa: E402
from benchmarks import machine  # noqa: E402
from experiments.lyu2017 import EXACT_ACCURACY  # noqa: E402
from svtjax import exact  # noqa: E402

CASES = (("lyu-zipf", 25), ("lyu-zipf", 100), ("lyu-zipf", 300), ("retail", 25),
         ("retail", 100), ("retail", 300))
ALLOCATIONS = ("1:1", "1:3", "1:c", "1:c^(2/3)")
EPSILONS = (0.1, 0.5)


def case(name: str, c: int, rounds: int, coarse: dict) -> dict:
    scores = np.asarray(svtjax.datasets.load(name).scores, np.float64)
    threshold = svtjax.datasets.lyu_threshold(scores, c)
    mechs = [svtjax.get("svt-s", epsilon=e, c=c, allocation=a, monotonic=True)
             for e in EPSILONS for a in ALLOCATIONS]

    def run(accuracy):
        rules = ([exact.quadrature(m, scores, threshold, **accuracy) for m in mechs]
                 if accuracy else None)
        values = exact.expected_metrics_many(mechs, scores, threshold, shuffle=True, c=c,
                                             rules=rules)
        return [{k: float(v) for k, v in d.items()} for d in values]

    variants = {"default": {}, "coarse": coarse}
    values = {k: run(acc) for k, acc in variants.items()}  # compiles
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for k, acc in variants.items():
            t0 = time.perf_counter()
            run(acc)
            times[k].append(time.perf_counter() - t0)
    nodes = {k: [int(np.asarray(exact.quadrature(m, scores, threshold, **acc).nodes).size)
                 for m in mechs] for k, acc in variants.items()}
    change = {m: max(abs(a[m] - b[m]) for a, b in zip(values["default"], values["coarse"])
                     if np.isfinite(a[m]) and np.isfinite(b[m]))
              for m in values["default"][0]}
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {"dataset": name, "n": int(scores.size), "c": c, "laws": len(mechs),
           "nodes": nodes, "seconds": times, "median_s": med,
           "time_saved": 1.0 - med["coarse"] / med["default"], "max_change": change}
    print(f"{name} c={c}: {med['default']:.2f} s -> {med['coarse']:.2f} s "
          f"({100 * row['time_saved']:.0f}% less), nodes {sum(nodes['default'])} -> "
          f"{sum(nodes['coarse'])}, max |ΔE[SER]| {change['ser']:.1e}", flush=True)
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--accuracy", nargs="+", metavar="KEY=VALUE",
                   help="the coarse rule's error targets (svtjax.exact.quadrature's tol, "
                        f"kink_tol, ...); default: lyu2017's {EXACT_ACCURACY}")
    args = p.parse_args(argv)
    coarse = dict(EXACT_ACCURACY)
    if args.accuracy:
        try:
            coarse = {k: float(v) for k, v in (a.split("=", 1) for a in args.accuracy)}
        except ValueError:
            p.error(f"--accuracy takes KEY=NUMBER pairs; got {args.accuracy}")
    print(f"coarse rule: {coarse}", flush=True)
    rows = [case(name, c, args.rounds, coarse) for name, c in CASES]
    machine.write_record("bench_sweep_exact_accuracy", "sweep-exact-accuracy", args.out,
                         coarse=coarse, rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
