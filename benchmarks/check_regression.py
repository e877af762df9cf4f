"""Regression check for CI: svtjax's speed relative to the numba loop and to its own svt-s.

Runs in under a minute on a 2-core CPU (small sizes; most of the time is compilation) and checks
ratios only, measured in the same process in interleaved rounds, so a slow or busy CI machine
moves both sides of a ratio alike:

* the headline, reduced (:mod:`benchmarks.workload`: Zipf 10,000/i in the fixed random order,
  svt-s monotonic 1:c^(2/3), ε = 0.5, c = 50; n = 1,000 × 512 trials): svtjax with full
  Outcomes + ``selected`` against the single-thread numba loop, and ``simulate(reduce=)``
  computing F1 and SER against full Outcomes, in the fixed order and with a per-trial shuffle;
* a few mechanisms' throughput (``simulate``, full Outcomes, fixed order) relative to svt-s's,
  and noisy-top-k-gap relative to report-noisy-max (issue 16).

Each ratio has a generous lower bound (:data:`BOUNDS`, about half of the ratio its comment says
was measured, so that noise does not fail CI but a lost speed-up does). A ratio
below its bound fails: one line per failure on stderr, exit status 1. The JSON record (the one
format of :mod:`benchmarks.machine`, case ``regression``: every sample as ``results``, and the
``ratios``, ``bounds`` and verdicts) goes to ``--out`` or stdout.

    python benchmarks/check_regression.py [--out FILE] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the checkout root goes on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import harness, kinds, machine  # noqa: E402

N, TRIALS = 1_000, 512
MECHANISMS = ("svt-s", "dpbook", "adaptive-svt-gap", "report-noisy-max", "noisy-top-k-gap")

BOUNDS = {
    # About half of the lowest of three runs of this script on the 2-core VM on 2026-11-27
    # (after the reducer's top-k tables, the shuffled trial groups and the top-k barrier of the
    # selection mechanisms): svtjax/numba 0.90-1.41 fixed, 0.80-1.00 shuffled; the F1 reducer
    # against full Outcomes 1.28-1.30 fixed, 1.02-1.04 shuffled (two runs);
    # adaptive-svt-gap/svt-s 0.67-0.78, noisy-top-k-gap/report-noisy-max 0.98 (0.12 before the
    # barrier: a lost top-k kernel is caught).
    # The ratios to svt-s: about half of two runs on 2026-11-28 (3201c21, the compiled
    # Fisher–Yates block; fixed order, which it does not touch): svt-s's own kernel had become
    # about 1.6x faster since 2026-11-27 (harness records vm-3d1219c7-2026-11-27T171447 and
    # -T220437: 44.9 -> 27.0 ms at n = 1,000 x 10^4, the others unchanged), so dpbook/svt-s fell
    # from 1.73-1.78 to 1.02-1.12, report-noisy-max/svt-s from 0.33-0.36 to 0.17 and
    # noisy-top-k-gap/svt-s from 0.35 to 0.16-0.17; svtjax/numba then 1.29-1.53 fixed,
    # 1.28-1.37 shuffled; adaptive-svt-gap/svt-s 0.37-0.39.
    "svtjax/numba fixed": 0.45,
    "svtjax/numba shuffle": 0.4,
    "svtjax-f1/svtjax fixed": 0.5,
    "svtjax-f1/svtjax shuffle": 0.5,
    "dpbook/svt-s": 0.5,
    "adaptive-svt-gap/svt-s": 0.18,
    "report-noisy-max/svt-s": 0.08,
    "noisy-top-k-gap/svt-s": 0.08,
    "noisy-top-k-gap/report-noisy-max": 0.5,
}


def _headline(cfg: harness.Config, mode: str, engines: tuple) -> dict:
    rows = kinds.headline_case(harness.dataclasses.replace(cfg, engines=engines), N, TRIALS,
                                 mode)
    return {r["engine"]: r for r in rows}


def _mechanisms(cfg: harness.Config) -> dict:
    fns, params, rows = {}, {}, {}
    for name in MECHANISMS:
        try:
            params[name], fns[name] = kinds.mechanism_engine(name, cfg, N, TRIALS, "fixed")
        except (LookupError, TypeError, ValueError) as err:
            rows[name] = {"status": "skipped", "reason": str(err)}
    for name, row in machine.interleaved(fns, cfg.repeats).items():
        if row.get("status") != "skipped":
            row = kinds._row("simulate", name, N, TRIALS, "fixed", params=params[name], **row)
        rows[name] = row
    return rows


def _ratio(a: dict, b: dict):
    if a.get("status", "ok") != "ok" or b.get("status", "ok") != "ok":
        return None
    return a["throughput"] / b["throughput"]


def measure(repeats: int) -> dict:
    """Every ratio of :data:`BOUNDS` (None where a side was skipped), and the rows behind them."""
    cfg = harness.Config(sizes=((N, TRIALS),), repeats=repeats, pool=False, numpy=False)
    machine.tune_allocator()
    fixed = _headline(cfg, "fixed", ("svtjax", "svtjax-f1", "numba"))
    shuffled = _headline(cfg, "shuffle", ("svtjax", "svtjax-f1", "numba"))
    mech = _mechanisms(cfg)
    ratios = {
        "svtjax/numba fixed": _ratio(fixed["svtjax"], fixed["numba"]),
        "svtjax/numba shuffle": _ratio(shuffled["svtjax"], shuffled["numba"]),
        "svtjax-f1/svtjax fixed": _ratio(fixed["svtjax-f1"], fixed["svtjax"]),
        "svtjax-f1/svtjax shuffle": _ratio(shuffled["svtjax-f1"], shuffled["svtjax"]),
    }
    for name in MECHANISMS[1:]:
        ratios[f"{name}/svt-s"] = _ratio(mech[name], mech["svt-s"])
    ratios["noisy-top-k-gap/report-noisy-max"] = _ratio(mech["noisy-top-k-gap"],
                                                        mech["report-noisy-max"])
    rows = list(fixed.values()) + list(shuffled.values()) + list(mech.values())
    return {"ratios": ratios, "rows": rows}


def check(ratios: dict, bounds: dict) -> list:
    """One message per failed bound (a missing ratio fails: something did not run)."""
    failures = []
    for name, bound in bounds.items():
        value = ratios.get(name)
        if value is None:
            failures.append(f"{name}: not measured (an engine or mechanism was skipped; see the "
                            "JSON rows for the reason)")
        elif value < bound:
            failures.append(f"{name}: {value:.3g}, below its bound {bound:g} (a speed "
                            "regression, or raise the bound in benchmarks/check_regression.py "
                            "if the change is intended)")
    return failures


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=None, help="JSON record file (default: stdout)")
    p.add_argument("--repeats", type=int, default=5,
                   help="interleaved rounds per comparison (default 5)")
    args = p.parse_args(argv)
    if args.repeats < 1:
        print("check_regression: error: --repeats must be >= 1", file=sys.stderr)
        return 2
    started = time.perf_counter()
    record = machine.new_record("regression", {"n": N, "trials": TRIALS,
                                               "repeats": args.repeats,
                                               "mechanisms": list(MECHANISMS)})
    measured = measure(args.repeats)
    failures = check(measured["ratios"], BOUNDS)
    record["load_average"]["end"] = machine.load()
    record.update(results=measured["rows"], bounds=BOUNDS, ratios=measured["ratios"],
                  passed=not failures, failures=failures, wall_s=time.perf_counter() - started)
    text = json.dumps(record, indent=1, default=repr)
    if args.out is None:
        print(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    for name, value in measured["ratios"].items():
        shown = "—" if value is None else f"{value:.3g}"
        print(f"[regression] {name}: {shown} (bound {BOUNDS[name]:g})", file=sys.stderr)
    for line in failures:
        print(f"check_regression: FAILED {line}", file=sys.stderr)
    print(f"[regression] {'passed' if not failures else 'FAILED'} in {record['wall_s']:.0f} s",
          file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
