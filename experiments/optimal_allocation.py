"""The data-optimal ε1 : ε2 split of SVT, from exact expected utility (a table no paper has).

Lyu, Su, Li 2017 (PVLDB 10(6), §4.2 Eq. 13 and §4.3) split the budget
of SVT-S as ε1 : ε2 = 1 : (2c)^(2/3), or 1 : c^(2/3) for monotonic queries, by minimising the
variance of ν − ρ; Liu et al. 2024 (PVLDB 18(2), Eq. 6, Table 4) do the
same for SVT-Exp, w = (√2 c)^(2/3). Neither looks at the data. ``svtjax.exact`` computes the
expected support error rate E[SER] (Lyu'17 §5) exactly, so the split can be optimised per
dataset: :func:`svtjax.exact.optimal_allocation` searches the threshold share
θ = ε1 / (ε1 + ε2) (logit grid, then Brent), every point an exact evaluation, no sampling
(the search on a coarser quadrature rule, the optimum's E[SER] recomputed with the default one).

For every shipped dataset (Zipf, n = 10^4: Lyu's ``lyu-zipf`` for Lyu'17's rows, Liu's
``zipf`` for Liu'24's), the papers' c and ε grids (Lyu'17: c ∈ {25,
50, 100} of its 25..300, ε ∈ {0.1, 0.5}, SVT-S with monotonic queries; Liu'24: c = 50,
ε ∈ {0.1, 0.5, 1, 2}, SVT-Exp with the optimal correction, k = ⌊n/c⌋), threshold = mean of the
c-th and (c+1)-th scores (Lyu'17 §5), items in a fresh random order per run (``shuffle=True``),
this script writes:

* ``optimal_allocation.json`` — every row: heuristic share and E[SER] there, optimal share and
  E[SER] there, the utility the heuristic loses (absolute and relative), the grid of
  (share, E[SER]) the search evaluated, the share range searched and ``at_bound`` (the
  optimum sits on the widest range of :data:`SEARCH_BOUNDS`, so the loss is a lower bound;
  the range is widened before that is said);
* ``optimal_allocation.md`` — the table;
* ``optimal_allocation.png`` — E[SER] against the share for a few (dataset, c, ε), heuristic
  and optimum marked, and the optimal against the heuristic share over the whole table.

    svtjax reproduce optimal_allocation [--quick|--paper] [--full] [--order fixed|random]
        [--out DIR]
    python -m experiments.optimal_allocation ...        # the same, from the repository root

``--paper`` (the default) is the grids above; ``--full`` uses Lyu'17's whole c grid (25, 50, ...,
300) and both SVT-S variants; ``--quick`` one small dataset. Run time is printed per row (exact
evaluations only: no Monte Carlo, so ``--trials`` and ``--seed``, which every experiment
accepts for ``svtjax reproduce all``, change nothing here). float64 is switched on for this
experiment's computations only (``jax.enable_x64``), so the experiments ``reproduce all`` runs
after it keep their own precision.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import jax

import svtjax
from svtjax import exact

if not __package__:  # run as a script, ``python experiments/NAME.py``: import as the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "experiments"  # noqa: A001
    import experiments  # noqa: F401,E402

from ._common import enable_cache, experiment_parser

DATASETS = ("zipf", "retail", "bms-webview-1", "t10i4d100k", "t40i10d100k", "adult", "chess",
            "mushroom")
LYU_CS = (25, 50, 100)
LYU_CS_FULL = tuple(range(25, 301, 25))
LYU_EPSILONS = (0.1, 0.5)
LIU_C = 50
LIU_EPSILONS = (0.1, 0.5, 1.0, 2.0)
#: The threshold-share ranges searched, in order: the next one only when the optimum found
#: sits on a bound of the last (then still on a bound: ``at_bound``, the loss a lower bound).
SEARCH_BOUNDS = ((1e-3, 0.8), (1e-6, 0.99))
#: An optimum within this logit distance of a bound is on it.
BOUND_LOGIT = 0.05
#: Brent's tolerance on logit θ (``svtjax.exact.optimal_allocation``'s ``xtol``): the search
#: stops once the optimum is bracketed within about 2·XTOL/3 in logit, i.e. within 2% in θ,
#: where E[SER] is flat (its change is second order: below 1e-7 on the paper rows checked, far
#: under the 4 decimals reported). An optimum on a bound is the grid's end point, which Brent
#: keeps (no point inside is better), so ``at_bound`` does not depend on it. A tighter
#: tolerance only adds sequential single-share evaluations (2-3 a row at 1e-3).
XTOL = 0.03
#: Lyu'17's rows run on Lyu's Zipf (10^6 records over 10^4 items), Liu'24's on Liu's.
LYU_ZIPF = {"zipf": "lyu-zipf"}


@dataclasses.dataclass(frozen=True)
class Setting:
    """One mechanism family of the table and the heuristic it is compared with."""

    label: str
    name: str
    params: dict
    heuristic: str  # how the paper splits


SETTINGS = {
    "svt-s-monotonic": Setting("SVT-S, monotonic", "svt-s", {"monotonic": True},
                               "Lyu'17 1:c^(2/3)"),
    "svt-s": Setting("SVT-S", "svt-s", {}, "Lyu'17 1:(2c)^(2/3)"),
    "svt-exp": Setting("SVT-Exp, optimal correction", "svt-exp", {},
                       "Liu'24 Table 4 1:(√2c)^(2/3)"),
}


def _params(setting: Setting, n: int, c: int) -> dict:
    params = dict(setting.params)
    if setting.name == "svt-exp":
        params["correction_k"] = max(1, n // c)
    return params


def _heuristic_share(setting: Setting, c: int) -> float:
    return exact.share_of(setting.name, c, monotonic=setting.params.get("monotonic", False))


def row_for(setting_key: str, dataset: str, c: int, epsilon: float, shuffle: bool) -> dict:
    """Optimal and heuristic split of one (mechanism, dataset, c, ε)."""
    setting = SETTINGS[setting_key]
    q = svtjax.datasets.load(dataset).scores
    t = svtjax.datasets.lyu_threshold(q, c)
    params = _params(setting, q.size, c)
    t0 = time.perf_counter()
    for bounds in SEARCH_BOUNDS:  # widen until the optimum is interior
        best = exact.optimal_allocation(setting.name, q, t, epsilon=epsilon, c=c,
                                        shuffle=shuffle, bounds=bounds, xtol=XTOL, **params)
        at_bound = on_bound(best.share, bounds)
        if not at_bound:
            break
    h = _heuristic_share(setting, c)
    at_h = exact.expected_metrics(exact.law_at_share(setting.name, h, epsilon=epsilon, c=c,
                                                     **params), q, t, shuffle=shuffle)
    ser_h = float(at_h["ser"])
    return {"mechanism": setting_key, "label": setting.label, "heuristic": setting.heuristic,
            "dataset": dataset, "n": int(q.size), "c": c, "epsilon": epsilon,
            "order": "random" if shuffle else "fixed", "threshold": t,
            "heuristic_share": h, "heuristic_ser": ser_h,
            "optimal_share": best.share, "optimal_ser": best.value,
            "heuristic_ratio": (1 - h) / h, "optimal_ratio": (1 - best.share) / best.share,
            "ser_lost": ser_h - best.value,
            "ser_lost_relative": (ser_h - best.value) / best.value if best.value > 0 else None,
            "grid": [list(p) for p in best.grid], "evaluations": best.evaluations + 1,
            "bounds": list(bounds), "at_bound": at_bound, "seconds": time.perf_counter() - t0}


def on_bound(share: float, bounds: Sequence[float]) -> bool:
    """Whether a share found in ``bounds`` sits on one of them (logit distance below
    :data:`BOUND_LOGIT`): the true optimum may lie beyond, and the loss is then a lower bound."""
    logit = lambda x: math.log(x / (1.0 - x))  # noqa: E731
    return min(abs(logit(share) - logit(b)) for b in bounds) < BOUND_LOGIT


def _rows(settings: Sequence[str], datasets: Sequence[str], lyu_cs: Sequence[int],
          quick: bool) -> list[tuple[str, str, int, float]]:
    out = []
    for dataset in datasets:
        n = svtjax.datasets.load(dataset).scores.size
        for key in settings:
            if key == "svt-exp":
                grid = [(LIU_C, e) for e in (LIU_EPSILONS[:2] if quick else LIU_EPSILONS)]
            else:
                grid = [(c, e) for c in lyu_cs for e in LYU_EPSILONS]
            name = dataset if key == "svt-exp" else LYU_ZIPF.get(dataset, dataset)
            out += [(key, name, c, e) for c, e in grid if c < n - 1]
    return out


def markdown(rows: list[dict]) -> str:
    lines = ["| mechanism | dataset | c | ε | order | heuristic ε2/ε1 | E[SER] there | optimal "
             "ε2/ε1 | E[SER] there | SER lost | lost, relative |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        low = "≥ " if r.get("at_bound") else ""  # the optimum on the searched bound
        rel = "—" if r["ser_lost_relative"] is None else (
            f"{low}{100 * r['ser_lost_relative']:.1f}%")
        lines.append(f"| {r['label']} ({r['heuristic']}) | {r['dataset']} | {r['c']} | "
                     f"{r['epsilon']:g} | {r['order']} | {r['heuristic_ratio']:.2f} | "
                     f"{r['heuristic_ser']:.4f} | {r['optimal_ratio']:.2f} | "
                     f"{r['optimal_ser']:.4f}{' (at bound)' if low else ''} | "
                     f"{low}{r['ser_lost']:.4f} | {rel} |")
    return "\n".join(lines) + ("\n\n“at bound”: the optimum found sits on the widest "
                               f"share range searched, {SEARCH_BOUNDS[-1]}; the true optimum "
                               "may lie beyond it, so the loss shown is a lower bound.\n"
                               if any(r.get("at_bound") for r in rows) else "\n")


def plot(rows: list[dict], path: Path) -> Optional[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is a dev extra
        print("matplotlib is not installed: no plot (pip install svtjax[dev])")
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    shown = [r for r in rows if r["mechanism"] != "svt-exp" and r["c"] == 50][:6] or rows[:6]
    for r in shown:
        points = list(r["grid"]) + [[r["heuristic_share"], r["heuristic_ser"]],
                                    [r["optimal_share"], r["optimal_ser"]]]
        shares, sers = zip(*sorted(points))
        line, = left.plot(shares, sers, marker=".", label=f"{r['dataset']} c={r['c']} "
                          f"ε={r['epsilon']:g}")
        left.plot([r["heuristic_share"]], [r["heuristic_ser"]], "x", color=line.get_color(),
                  markersize=9)
        left.plot([r["optimal_share"]], [r["optimal_ser"]], "o", color=line.get_color(),
                  markersize=7, mfc="none")
    left.set_xscale("log")
    left.set_xlabel("threshold share θ = ε1/(ε1+ε2)")
    left.set_ylabel("exact E[SER]")
    left.set_title("E[SER] vs split (x heuristic, o optimum)")
    left.legend(fontsize=7)
    for key, marker in (("svt-s-monotonic", "o"), ("svt-s", "s"), ("svt-exp", "^")):
        sel = [r for r in rows if r["mechanism"] == key]
        if sel:
            right.scatter([r["heuristic_share"] for r in sel], [r["optimal_share"] for r in sel],
                          marker=marker, label=SETTINGS[key].label, alpha=0.7)
    lim = [min(min(r["heuristic_share"], r["optimal_share"]) for r in rows) * 0.8,
           max(max(r["heuristic_share"], r["optimal_share"]) for r in rows) * 1.25]
    right.plot(lim, lim, "k:", lw=1)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("heuristic share (Lyu'17 Eq. 13 / Liu'24 Table 4)")
    right.set_ylabel("optimal share (exact E[SER])")
    right.set_title("optimal vs heuristic threshold share")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = experiment_parser(
        "optimal_allocation", __doc__.splitlines()[0],
        quick="one small dataset, c in {25, 50}, two ε for SVT-Exp",
        paper="the papers' c and ε grids on every shipped dataset (default)",
        trials="not used: every number here is an exact expectation",
        out=os.path.join("results", "optimal_allocation"))
    p.add_argument("--full", action="store_true",
                   help="Lyu'17's whole c grid (25..300) and both SVT-S variants")
    p.add_argument("--order", choices=("random", "fixed"), default="random")
    p.add_argument("--datasets", nargs="*", help=f"default: {' '.join(DATASETS)}")
    args = p.parse_args(argv)
    if args.quick and args.full:
        p.error("--quick and --full exclude each other")
    out = Path(args.out)
    unknown = sorted(set(args.datasets or ()) - set(svtjax.datasets.names()))
    if unknown:
        p.error(f"unknown dataset(s) {unknown}; available: {', '.join(svtjax.datasets.names())}")
    datasets = args.datasets or (("bms-webview-1",) if args.quick else DATASETS)
    settings = ("svt-s-monotonic", "svt-s", "svt-exp") if args.full else \
        ("svt-s-monotonic", "svt-exp")
    lyu_cs = LYU_CS_FULL if args.full else ((25, 50) if args.quick else LYU_CS)
    plan = _rows(settings, datasets, lyu_cs, args.quick)
    enable_cache("optimal_allocation")
    shuffle = args.order == "random"
    print(f"optimal allocation: {len(plan)} rows ({args.order} order)", flush=True)
    rows, t0 = [], time.perf_counter()
    for key, dataset, c, eps in plan:
        with jax.enable_x64(True):  # the exact laws want float64; scoped to this experiment
            r = row_for(key, dataset, c, eps, shuffle)
        rows.append(r)
        print(f"{r['label']:<30} {dataset:<14} c={c:<4} ε={eps:<4g} heuristic "
              f"θ={r['heuristic_share']:.4f} SER={r['heuristic_ser']:.4f} | optimal "
              f"θ={r['optimal_share']:.4f} "
              f"SER={r['optimal_ser']:.4f} | lost {r['ser_lost']:.4f} ({r['seconds']:.1f} s)",
              flush=True)
    out.mkdir(parents=True, exist_ok=True)
    record = {"schema": "svtjax-optimal-allocation/1",
              "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.argv[0]).name] + list(argv if argv is not None
                                                                  else sys.argv[1:])),
              "order": args.order, "objective": "E[SER] (exact, svtjax.exact)",
              "threshold": "mean of the c-th and (c+1)-th scores (Lyu'17 §5)",
              "seconds": time.perf_counter() - t0, "loadavg": os.getloadavg(), "rows": rows}
    (out / "optimal_allocation.json").write_text(json.dumps(record, indent=2))
    (out / "optimal_allocation.md").write_text(
        "# Optimal ε1:ε2 split from exact E[SER] (svtjax.exact)\n\n"
        f"Generated by `{record['command']}`; {args.order} item order; threshold = mean of "
        "the c-th and (c+1)-th scores; SVT-Exp with the optimal correction (k = ⌊n/c⌋).\n\n"
        + markdown(rows))
    png = plot(rows, out / "optimal_allocation.png")
    print(f"wrote {out / 'optimal_allocation.json'}, {out / 'optimal_allocation.md'}"
          + (f", {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
