"""Random-order exact laws with tied scores taken as binomial groups, against item by item.

``svtjax.exact`` in random order takes every score shared by at least c items as one group
(``svtjax.exact._laws.tie_groups``; ``selection_laws(..., ties=False)`` steps through every
item). For svt-s (monotonic) on the datasets with many tied scores (retail: 16,470 items, 583
distinct scores; lyu-zipf: 10^4 items, 629), c ∈ {25, 50, 100}, ε ∈ {0.1, 0.5}, share 1 : c^(2/3)
(Lyu'17), threshold = mean of the c-th and (c+1)-th scores, default quadrature rule: the seconds
of one law both ways (the median of three calls after a compiling one, in this process) and the
largest difference of any reported probability. Writes
``benchmarks/results/ties-<machine>-<time>.json`` (``benchmarks.machine.write_record``).

    python benchmarks/bench_ties.py [--out DIR]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)  # a tool's choice: the exact laws recommend float64

import svtjax  # noqa: E402
from benchmarks import machine  # noqa: E402
from svtjax import exact  # noqa: E402
from svtjax.exact import _laws  # noqa: E402

DATASETS = ("retail", "lyu-zipf")
CS = (25, 50, 100)
EPSILONS = (0.1, 0.5)
FIELDS = ("top", "member", "evaluated", "count")


def timed(law, q, t, ties: bool):
    def one():
        out = exact.selection_laws([law], q, t, shuffle=True, ties=ties)[0]
        jax.block_until_ready(out.top)
        return out

    one()  # compiles
    seconds = []
    for _ in range(3):
        t0 = time.perf_counter()
        out = one()
        seconds.append(time.perf_counter() - t0)
    return out, statistics.median(seconds)


def rows() -> list[dict]:
    out = []
    for name in DATASETS:
        q = svtjax.datasets.load(name).scores
        for c in CS:
            t = svtjax.datasets.lyu_threshold(q, c)
            _, tied, sizes, _ = _laws.tie_groups(q - t, c)
            for eps in EPSILONS:
                law = exact.law_at_share("svt-s", exact.share_of("svt-s", c, monotonic=True),
                                         epsilon=eps, c=c, monotonic=True)
                grouped, s_grouped = timed(law, q, t, True)
                single, s_single = timed(law, q, t, False)
                diff = max(float(np.max(np.abs(np.asarray(getattr(grouped, f))
                                               - np.asarray(getattr(single, f)))))
                           for f in FIELDS)
                row = {"dataset": name, "n": int(q.size), "distinct": int(np.unique(q).size),
                       "c": c, "epsilon": eps, "groups": int(tied.size),
                       "items_in_groups": int(sizes.sum()), "seconds_item_by_item": s_single,
                       "seconds_groups": s_grouped, "speedup": s_single / s_grouped,
                       "max_abs_difference": diff}
                print(f"{name} c={c} ε={eps}: {row['groups']} groups holding "
                      f"{row['items_in_groups']} of {q.size} items; item by item "
                      f"{s_single:.2f} s, groups {s_grouped:.2f} s ({row['speedup']:.2f}x); "
                      f"largest difference {diff:.1e}", flush=True)
                out.append(row)
    return out


def main(argv=None) -> int:
    return machine.record_main(__doc__, "ties", "ties", lambda: {"rows": rows()}, argv)

if __name__ == "__main__":
    sys.exit(main())
