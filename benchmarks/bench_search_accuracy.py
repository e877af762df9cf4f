"""The coarser quadrature rule of ``svtjax.exact.optimal_allocation``'s search
(``exact.SEARCH_ACCURACY``) against the default rule.

For svt-s (monotonic, ε = 0.1, c = 50, random order) at threshold shares 0.0014 and 0.1 on
retail and Zipf n = 10^4 (threshold = mean of the 50th and 51st scores): the nodes of both rules
and how far E[SER] moves. Then one optimal_allocation row per dataset (retail ε = 0.1, Zipf
ε = 0.5, c = 50, random order) searched on the coarse rule (the default) and on the default rule
(``search_accuracy={}``), each timed in this process after the other's compilations: the
shares, values, evaluations and seconds. Writes ``benchmarks/results/search-<machine>-<time>.json``
(``benchmarks.machine.write_record``).

    python benchmarks/bench_search_accuracy.py [--out DIR]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # a tool's choice: the exact laws recommend float64

import svtjax  # noqa: E402
from benchmarks import machine  # noqa: E402
from svtjax import exact  # noqa: E402

C = 50
SHARES = (0.0014, 0.1)
ROWS = (("retail", 0.1), ("zipf", 0.5))


def rules() -> list[dict]:
    out = []
    for name in ("retail", "zipf"):
        q = svtjax.datasets.load(name).scores
        t = svtjax.datasets.lyu_threshold(q, C)
        for share in SHARES:
            law = exact.law_at_share("svt-s", share, epsilon=0.1, c=C, monotonic=True)
            fine = exact.quadrature(law, q, t)
            coarse = exact.quadrature(law, q, t, **exact.SEARCH_ACCURACY)
            v_fine = float(exact.expected_metrics(law, q, t, shuffle=True, rule=fine)["ser"])
            v_coarse = float(exact.expected_metrics(law, q, t, shuffle=True, rule=coarse)["ser"])
            row = {"dataset": name, "share": share, "nodes_default": int(fine.nodes.size),
                   "nodes_search": int(coarse.nodes.size), "ser_default": v_fine,
                   "ser_change": abs(v_coarse - v_fine)}
            print(f"[rules] {name} share {share}: nodes {row['nodes_default']} -> "
                  f"{row['nodes_search']}, |change of E[SER]| {row['ser_change']:.1e}")
            out.append(row)
    return out


def searches() -> list[dict]:
    out = []
    for name, eps in ROWS:
        q = svtjax.datasets.load(name).scores
        t = svtjax.datasets.lyu_threshold(q, C)
        kw = dict(epsilon=eps, c=C, shuffle=True, monotonic=True)
        exact.optimal_allocation("svt-s", q, t, **kw)  # compilations of both, untimed
        exact.optimal_allocation("svt-s", q, t, search_accuracy={}, **kw)
        for label, extra in (("coarse search (default)", {}),
                             ("default-rule search", {"search_accuracy": {}})):
            t0 = time.perf_counter()
            a = exact.optimal_allocation("svt-s", q, t, **kw, **extra)
            row = {"dataset": name, "epsilon": eps, "search": label, "share": a.share,
                   "value": a.value, "evaluations": a.evaluations,
                   "seconds": time.perf_counter() - t0}
            print(f"[search] {name} ε={eps} {label}: share {a.share:.10g}, E[SER] "
                  f"{a.value:.16g}, {a.evaluations} evaluations, {row['seconds']:.1f} s")
            out.append(row)
    return out


def main(argv=None) -> int:
    return machine.record_main(
        __doc__, "search-accuracy", "search",
        lambda: {"search_accuracy": dict(exact.SEARCH_ACCURACY), "rules": rules(),
                 "searches": searches()}, argv)

if __name__ == "__main__":
    sys.exit(main())
