"""Liu, Wang, Liu, Li, Chen 2024 (PVLDB 18(2)): SVT with exponential noise — Table 5 and
Figures 3, 4, 5, 7 (NCR and its F1 version) and 8.

* Table 5 — optimal vs mean correction for c = 50, α = 0, ε ∈ {0.01, 0.05, 0.1, 1, 2}, printed
  beside the paper's values, with the (λ, split, k) that reproduce them (see ``table5``).
* Figure 3 — (α, β)-accuracy, β = 1 − p(r) of Eq. 8, of SVT with exponential (optimal
  correction), Laplace, Gumbel (mean correction) and Gaussian query noise; k = 50, ε = 1 and, as
  in Theorem 4, Δ = 1, ε1 = ε2 = ε/2, c = 1 (Gaussian: δ = 1e-5, svtjax's choice).
* Figure 4 — the minimal comparison variance (Eq. 6 at the Table 4 split) against ε ∈ [0.01, 2],
  c = 50, for the four query-noise families (Gaussian calibrated at δ = 1e-5).
* Figure 5 — p(r) curves: (b) k ∈ {1, 10, 50, 100}, (c) α ∈ {0, 5, 10, 20}, (d) ε ∈ {0.05, 0.1,
  0.5}; ε = 0.1, k = 10, α = 0 unless varied; Z = Exp(1/ε2) − Lap(1/ε1) with ε1 = ε2 = ε/2 as in
  the caption of Figure 5(a).
* Figure 7 — NCR (and F1, the paper's Appendix H) against ε for every Table 3 method on Binary,
  Zipf, T40I10D100K and Adult (BMS-POS and Kosarak are not available offline; they run when
  ``svtjax.datasets.fetch`` has cached them): c = 50 (Adult 5), α = 0, k = ⌊m/c⌋,
  RESAMPLE = False, APPEND = True with ``max_passes`` traversals (default 10: the figure does
  not state it), items shuffled per run, thresholds of Table 2, Algorithm 2's general λ =
  ε2/(2cΔ), Table 4 splits, SVT-Gau at δ = 1/(number of records) (1/m for the synthetic data).
  The "upper bound" ranks s_i + Exp(Δ/ε2) (ε2 of SVT-Exp's split, Table 3 as printed) and
  keeps the top c; a second variant uses SVT-Exp's own scale 2cΔ/ε2.
* Figure 8 — NCR against the number of traversals (1, 2, 3, 5, 10) at ε = 0.1.

Figures 7 and 8 run on the sweep engine (``svtjax.sweep``): per dataset one sweep for Figure 7
(every Table 3 method × ε; the upper bounds are ``report-noisy-max`` with exponential noise,
``monotonic=True, k=c, epsilon=c·ε2``, i.e. the top c of s_i + Exp(Δ/ε2), and ``epsilon=ε2/2``
for SVT-Exp's own scale 2cΔ/ε2) and one for Figure 8 (the SVT methods × ``max_passes``), see
:func:`fig7_sweep` / :func:`fig8_sweep`. Every point is seeded by the engine from ``--seed``
and the point (so the numbers differ from the pre-engine script's, which seeded every point
with ``--seed`` itself, and the methods no longer share random numbers: the ranking check's
standard errors are now those of independent estimates; the conclusions do not change),
finished points are kept in ``<out>/sweep/fig7|fig8/<dataset>/`` with the engine's tidy
``results.csv`` and reused by a rerun. The Figure 8 point at Figure 7's traversal count is the
same engine point as Figure 7's at ε = 0.1, so both report the same numbers. ``--paper`` on the
2-core CPU, shared with other jobs (load average about 3.5), persistent compilation cache warm:
77 s wall, as the pre-engine script (75 s in the same conditions).

Outputs (``--out``, default ``results/liu2024/``): ``table5.csv``, ``fig3.csv``, ``fig4.csv``,
``fig5.csv``, ``fig7.csv`` (NCR and F1 with standard errors), ``fig8.csv``, one PNG per figure
and dataset, and ``summary.md`` (the paper's stated numbers beside ours, the ranking check).

Usage::

    python -m experiments.liu2024 --quick      # < 1 minute: T40I10D100K, 2 ε, 20 runs
    python -m experiments.liu2024 --paper      # 100 runs per point (default)
    python -m experiments.liu2024 --trials 1000 --datasets zipf binary
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import math
import os
import sys
import time
from typing import Any, Optional, Sequence

from ._common import (
    enable_cache,
    experiment_parser,
    group_rows,
    load_available,
    sweep_dataset,
)

# Table 3 rows run through svt-exp (label -> parameters); the upper bound is computed directly.
METHODS: dict[str, dict[str, Any]] = {
    "SVT-Exp (optimal)": {"noise": "exponential", "correction": "optimal"},
    "SVT-Exp (mean)": {"noise": "exponential", "correction": "mean"},
    "SVT-Exp (no)": {"noise": "exponential", "correction": "none"},
    "SVT-Gumbel": {"noise": "gumbel", "correction": "mean"},
    "SVT-Lap": {"noise": "laplace", "correction": "none"},
    "SVT-Gau": {"noise": "gaussian", "correction": "none"},
}
UPPER = "SVT-Exp upper bound"
UPPER_SVT = "upper bound (SVT-Exp's noise)"
SVT_METHODS = tuple(METHODS)

PAPER_DATASETS = ("bms-pos", "kosarak")
OFFLINE_DATASETS = ("binary", "zipf", "t40i10d100k", "adult")
DEFAULT_DATASETS = OFFLINE_DATASETS + PAPER_DATASETS
PAPER_EPSILONS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.0)
PAPER_PASSES = (1, 2, 3, 5, 10)
PAPER_TRIALS = 100

# Table 5 as printed (c = 50, α = 0).
TABLE5_EPS = (0.01, 0.05, 0.1, 1.0, 2.0)
TABLE5_OPTIMAL = (35450.45, 7147.15, 2803.30, 280.78, 138.89)
TABLE5_MEAN = (5332.08, 1046.42, 523.21, 52.32, 26.16)


@dataclasses.dataclass
class Config:
    datasets: Sequence[str] = DEFAULT_DATASETS
    epsilons: Sequence[float] = PAPER_EPSILONS
    passes: int = 10  # traversals in Figure 7
    fig8_passes: Sequence[int] = PAPER_PASSES
    fig8_epsilon: float = 0.1
    fig8_datasets: Optional[Sequence[str]] = None  # default: all loaded
    trials: int = PAPER_TRIALS
    seed: int = 0
    out: str = os.path.join("results", "liu2024")
    cache_dir: Optional[str] = None
    verbose: bool = True


# --quick: one dataset, two ε, Figure 8 at the Figure 7 traversal count (no extra compiles).
QUICK = dict(datasets=("t40i10d100k",), epsilons=(0.5, 2.0), passes=2, fig8_passes=(2,),
             trials=20)


# ---------------------------------------------------------------------------------------------
# Analytical parts: Table 5, Figures 3, 4, 5
# ---------------------------------------------------------------------------------------------
def _table5_noises(eps: float, c: int, monotonic: bool, split: str):
    from svtjax import budget
    from svtjax.noise import Exponential, Laplace

    w = float(budget.liu_ratio("exponential", c) if split == "table4"
              else budget.ratio(split, c))
    e1, e2 = eps / (1 + w), eps * w / (1 + w)
    mu = (1.0 if monotonic else 2.0) * c / e2
    return Exponential(mu), Laplace(1.0 / e1)


def _fit_k(eps, target, c, monotonic, split, k_max=20000):
    """The integer k whose r^op is closest to ``target`` (r^op increases with k)."""
    from svtjax import correction

    q, t = _table5_noises(eps, c, monotonic, split)
    r = functools.lru_cache(None)(lambda k: correction.optimal(q, t, k))
    lo, hi = 1, 2
    while r(hi) < target and hi < k_max:
        lo, hi = hi, min(2 * hi, k_max)
    if r(hi) < target:
        return None, r(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if r(mid) < target else (lo, mid)
    k = lo if abs(r(lo) - target) <= abs(r(hi) - target) else hi
    return k, r(k)


def table5(c: int = 50) -> list[dict[str, Any]]:
    """Our correction terms beside Table 5 under the hypotheses tested (see summary.md)."""
    from svtjax import correction

    rows = []
    for eps, p_opt, p_mean in zip(TABLE5_EPS, TABLE5_OPTIMAL, TABLE5_MEAN):
        row: dict[str, Any] = {"epsilon": eps, "paper_optimal": p_opt, "paper_mean": p_mean}
        # H1: λ = ε2/(cΔ) (monotonic), split (2c)^(2/3): reproduces the Mean row.
        q, t = _table5_noises(eps, c, True, "1:(2c)^(2/3)")
        row["mean_h1"] = correction.mean(q)
        row["optimal_h1_k200"] = correction.optimal(q, t, 200)
        k, r = _fit_k(eps, p_opt, c, True, "1:(2c)^(2/3)")
        row["fit_k_h1"], row["optimal_h1_fit"] = k, r
        # Algorithm 2 as printed: λ = ε2/(2cΔ), Table 4's (√2 c)^(2/3) split.
        q2, t2 = _table5_noises(eps, c, False, "table4")
        row["mean_alg2"] = correction.mean(q2)
        row["optimal_alg2_k200"] = correction.optimal(q2, t2, 200)
        k2, r2 = _fit_k(eps, p_opt, c, False, "table4")
        row["fit_k_alg2"], row["optimal_alg2_fit"] = k2, r2
        rows.append(row)
    return rows


def fig3(k: int = 50, eps: float = 1.0, delta: float = 1e-5) -> list[dict[str, Any]]:
    """β = 1 − p(r) against α for the four query noises (Theorem 4's setting, c = 1)."""
    import numpy as np

    from svtjax import correction
    from svtjax.noise import Exponential, Gaussian, Gumbel, Laplace

    e1 = e2 = eps / 2
    s = math.sqrt(2 * math.log(1.25 / delta))
    pairs = {"SVT-Exp (optimal)": (Exponential(2 / e2), Laplace(1 / e1), "optimal"),
             "SVT-Lap": (Laplace(2 / e2), Laplace(1 / e1), "none"),
             "SVT-Gumbel (mean)": (Gumbel(2 / e2), Laplace(1 / e1), "mean"),
             "SVT-Gau": (Gaussian(2 * s / e2), Gaussian(s / e1), "none")}
    rows = []
    for alpha in np.linspace(0.0, 40.0, 41):
        for label, (q, t, kind) in pairs.items():
            r = (correction.optimal(q, t, k, alpha) if kind == "optimal"
                 else correction.mean(q) if kind == "mean" else 0.0)
            beta = 1.0 - float(correction.success_probability(r, q, t, k, alpha))
            rows.append({"alpha": float(alpha), "method": label, "r": r, "beta": beta})
    return rows


def fig4(c: int = 50, delta: float = 1e-5) -> list[dict[str, Any]]:
    import numpy as np

    from svtjax import budget

    s = math.sqrt(2 * math.log(1.25 / delta))
    rows = []
    for eps in np.geomspace(0.01, 2.0, 30):
        for fam in ("exponential", "gumbel", "laplace", "gaussian"):
            e1, e2, v = budget.minimize_comparison_variance(
                float(eps), c, fam, calibration=s if fam == "gaussian" else 1.0)
            rows.append({"epsilon": float(eps), "noise": fam, "eps1": e1, "eps2": e2,
                         "variance": v})
    return rows


def fig5() -> list[dict[str, Any]]:
    import numpy as np

    from svtjax import correction
    from svtjax.noise import Exponential, Laplace

    def noises(eps):
        return Exponential(2 / eps), Laplace(2 / eps)  # Exp(1/ε2), Lap(1/ε1), ε1 = ε2 = ε/2

    rows = []
    panels = [("b", "k", [1, 10, 50, 100], lambda v: (0.1, v, 0.0)),
              ("c", "alpha", [0.0, 5.0, 10.0, 20.0], lambda v: (0.1, 10, v)),
              ("d", "epsilon", [0.05, 0.1, 0.5], lambda v: (v, 10, 0.0))]
    for panel, var, values, params in panels:
        for v in values:
            eps, k, alpha = params(v)
            q, t = noises(eps)
            r_op = correction.optimal(q, t, k, alpha)
            for r in np.linspace(-5 / eps, 30 / eps, 141):
                rows.append({"panel": panel, "varied": var, "value": v, "r": float(r),
                             "p": float(correction.success_probability(r, q, t, k, alpha)),
                             "r_op": r_op, "mean": correction.mean(q)})
    return rows


# ---------------------------------------------------------------------------------------------
# Simulation: Figures 7 and 8, as sweep configurations
# ---------------------------------------------------------------------------------------------
def _params(label: str, c: int, m: int, passes, delta: float) -> dict[str, Any]:
    """svt-exp parameters of a Table 3 method (``passes`` an int or a list: a sweep axis)."""
    p = dict(METHODS[label], c=c, append=True, max_passes=passes)
    if p["correction"] == "optimal":
        p["correction_k"] = max(1, m // c)  # k = ⌊m/c⌋ (Figure 7's caption)
    if p["noise"] == "gaussian":
        p["delta"] = delta
    return p


def _setting(data):
    liu = data.metadata["thresholds"]["liu24"]
    n_rec = data.metadata.get("num_transactions") or data.num_items
    return float(liu["threshold"]), int(liu["c"]), 1.0 / float(n_rec)


def _upper_label(label: str, eps: float) -> str:
    return f"{label} @ ε={eps!r}"


def _eps2(eps: float, c: int) -> float:
    """ε2 of SVT-Exp's default split (Table 4: ε2 = w·ε1, w = (√2 c)^(2/3) for exponential
    query noise, ``svtjax.budget.liu_ratio``), ε1 + ε2 = ε."""
    from svtjax import budget

    w = float(budget.liu_ratio("exponential", c))
    return eps * w / (1.0 + w)


def _sweep_head(config: Config, figure: str, name: str, threshold: float) -> dict[str, Any]:
    return {"name": f"liu2024-{figure}-{name}", "trials": config.trials, "seed": config.seed,
            "datasets": [sweep_dataset(name, config.cache_dir)], "metrics": ["ncr", "f1"],
            "shuffle": True, "threshold": threshold}


def fig7_sweep(config: Config, name: str, data) -> dict[str, Any]:
    """The ``svtjax.sweep`` config of Figure 7 on one dataset: every Table 3 method × ε.

    The SVT methods are ``svt-exp`` tables over the ε grid. The upper bounds are one
    ``report-noisy-max`` table per ε (their ε is ε2 of SVT-Exp's split at that ε): exponential
    noise, ``monotonic=True``, ``k = c``, scale kΔ/ε: ``epsilon = c·ε2`` gives Table 3's
    Exp(Δ/ε2) as printed, ``epsilon = ε2/2`` SVT-Exp's own query-noise scale 2cΔ/ε2 (what SVT-Exp
    would achieve if it could rank its noisy scores, the reading under which "closely matches"
    (Sec. 5.5.1) can hold). Labels ``"<method> @ ε=<ε>"`` map them back (:func:`_upper_label`).
    """
    threshold, c, delta = _setting(data)
    m = len(data.scores)
    tables = [{"name": "svt-exp", "label": label, **_params(label, c, m, config.passes, delta)}
              for label in SVT_METHODS]
    for eps in config.epsilons:
        eps2 = _eps2(float(eps), c)
        for label, eps_rnm in ((UPPER, c * eps2), (UPPER_SVT, eps2 / 2)):
            tables.append({"name": "report-noisy-max", "label": _upper_label(label, float(eps)),
                           "noise": "exponential", "monotonic": True, "epsilon": eps_rnm})
    return {"sweep": _sweep_head(config, "fig7", name, threshold),
            "grid": {"epsilon": [float(e) for e in config.epsilons], "c": [c]},
            "mechanisms": tables}


def fig8_sweep(config: Config, name: str, data) -> dict[str, Any]:
    """The ``svtjax.sweep`` config of Figure 8 on one dataset: the SVT methods × traversals."""
    threshold, c, delta = _setting(data)
    m = len(data.scores)
    passes = [int(p) for p in config.fig8_passes]
    return {"sweep": _sweep_head(config, "fig8", name, threshold),
            "grid": {"epsilon": [float(config.fig8_epsilon)], "c": [c]},
            "mechanisms": [{"name": "svt-exp", "label": label,
                            **_params(label, c, m, passes, delta)} for label in SVT_METHODS]}


def _points(result) -> list[dict[str, Any]]:
    """One dict per engine point and label: its method, ε, traversals and NCR / F1 with standard
    errors.

    Grouped by (point id, label): two tables of a sweep can describe the same computation (on
    Adult, c = 5, the upper bound at ε, ``report-noisy-max`` at c·ε2(ε), and the SVT-noise
    upper bound at 10ε, at ε2(10ε)/2 = 5·ε2(ε), are one point); the engine runs it once and
    reports it under both labels, and both must reach the figure's table.
    """
    points = []
    for by in group_rows(result.rows, "point_id", "label").values():
        r = next(iter(by.values()))
        p = {"label": r["label"], "epsilon": r.get("epsilon"), "passes": r.get("max_passes"),
             "trials": r["trials"], "seconds": r["seconds"]}
        for metric, row in by.items():
            p[metric] = row["mean"]
            p[f"{metric}_se"] = row["se"] if math.isfinite(row["se"]) else 0.0  # one trial
        points.append(p)
    return points


def _figure_rows(points, data, config: Config, passes_default: int) -> list[dict[str, Any]]:
    """Figure 7/8 rows of the engine points of one dataset (``passes_default``: the traversals
    of a sweep whose ``max_passes`` is not an axis)."""
    import svtjax

    threshold, c, delta = _setting(data)
    m = len(data.scores)
    uppers = {_upper_label(u, float(e)): (u, float(e)) for u in (UPPER, UPPER_SVT)
              for e in config.epsilons}
    rows = []
    for p in points:
        if p["label"] in uppers:
            method, eps = uppers[p["label"]]
            passes, r = passes_default, float("nan")
        else:
            method, eps = p["label"], float(p["epsilon"])
            passes = int(p["passes"]) if p["passes"] not in (None, "") else passes_default
            r = float(svtjax.get("svt-exp", epsilon=eps,
                                 **_params(method, c, m, passes, delta)).correction_value)
        rows.append({"dataset": data.name, "epsilon": eps, "passes": passes, "method": method,
                     "c": c, "threshold": threshold, "trials": p["trials"], "r": r,
                     "ncr": p["ncr"], "ncr_se": p["ncr_se"], "f1": p["f1"], "f1_se": p["f1_se"],
                     "seconds": p["seconds"]})
    order = {m: i for i, m in enumerate(SVT_METHODS + (UPPER, UPPER_SVT))}
    rows.sort(key=lambda r: (r["epsilon"], r["passes"], order[r["method"]]))
    return rows


def run(config: Config, log=print) -> dict[str, Any]:
    """Every table and figure; returns {"table5": rows, "fig3": ..., "fig7": ..., ...}.

    Figures 7 and 8 run as ``svtjax.sweep`` sweeps (:func:`fig7_sweep`, :func:`fig8_sweep`), one
    per dataset and figure, kept under ``<out>/sweep/`` so an interrupted run resumes.
    """
    import jax

    from svtjax import sweep

    loaded, missing = load_available(config.datasets, config.cache_dir)
    for name, why in missing.items():
        log(f"[liu2024] {name}: MISSING ({why})")
    t0 = time.perf_counter()
    res: dict[str, Any] = {"missing": missing, "table5": table5(), "fig3": fig3(),
                           "fig4": fig4(), "fig5": fig5()}
    if config.verbose:
        log(f"[liu2024] Table 5, Figures 3-5: {time.perf_counter() - t0:.1f}s")
    quiet = (lambda msg: None)
    fig7, fig8 = [], []
    for name, data in loaded.items():
        start = time.perf_counter()
        result = sweep.run(fig7_sweep(config, name, data),
                           os.path.join(config.out, "sweep", "fig7", name),
                           log=log if config.verbose else quiet)
        fig7 += _figure_rows(_points(result), data, config, config.passes)
        if config.fig8_datasets is None or name in config.fig8_datasets:
            result = sweep.run(fig8_sweep(config, name, data),
                               os.path.join(config.out, "sweep", "fig8", name),
                               log=log if config.verbose else quiet)
            fig8 += _figure_rows(_points(result), data, config, config.fig8_passes[0])
        if config.verbose:
            log(f"[liu2024] {name}: {time.perf_counter() - start:.1f}s")
        # Each dataset size compiles its own ~30 kernels; dropping them keeps a paper-mode run
        # below the process's memory-map limit (LLVM "Cannot allocate memory" otherwise).
        jax.clear_caches()
    res["fig7"], res["fig8"] = fig7, fig8
    return res


# ---------------------------------------------------------------------------------------------
# Checks and outputs
# ---------------------------------------------------------------------------------------------
def ranking_check(rows) -> list[str]:
    """Acceptance: SVT-Exp (optimal) has the highest NCR of the SVT methods at each (dataset,
    ε); where not, say by how much (in standard errors) and why."""
    lines = []
    cells: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        if r["method"] in SVT_METHODS:
            cells.setdefault((r["dataset"], r["epsilon"]), {})[r["method"]] = r
    for (ds, eps), by in sorted(cells.items()):
        ours = by.get("SVT-Exp (optimal)")
        if ours is None:
            continue
        best = max(by.values(), key=lambda r: r["ncr"])
        ties = [m for m, r in by.items() if r["ncr"] == ours["ncr"] and m != ours["method"]]
        if best["ncr"] <= ours["ncr"]:
            tie = (f" (tied with {len(ties)} other method(s): {_tie_reason(ours)})" if ties
                   else "")
            lines.append(f"- {ds}, ε = {eps:g}: SVT-Exp (optimal) highest (NCR "
                         f"{ours['ncr']:.3f}){tie}")
            continue
        gap = best["ncr"] - ours["ncr"]
        se = math.hypot(best["ncr_se"], ours["ncr_se"])
        why = _explain(ours, best, gap, se)
        lines.append(f"- {ds}, ε = {eps:g}: **{best['method']} {best['ncr']:.3f} > SVT-Exp "
                     f"(optimal) {ours['ncr']:.3f}** ({gap / se if se else float('inf'):.1f} SE)"
                     f" — {why}")
    return lines


def _tie_reason(row) -> str:
    if row["dataset"] == "adult":
        return ("on Adult 81 of the 123 items exceed T = 200 by far more than the noise, so with "
                "c = 5 every SVT outputs the first 5 items of its random order")
    return "the same NCR on independent runs (each point has its own engine seed)"


def _explain(ours, best, gap, se) -> str:
    if ours["dataset"] == "adult":
        return _tie_reason(ours) + "; the differences are noise"
    if se > 0 and gap < 3 * se:
        return "within Monte Carlo noise (< 3 SE)"
    if ours["ncr"] > 0.98 and best["ncr"] > 0.98:
        return "both saturated near NCR 1"
    return ("the optimal correction raises the threshold by r = "
            f"{ours['r']:.4g}; with {ours['passes']} traversals too few items clear it before "
            "the stream ends (the paper's Sec. 5.5.3: small score gaps above the threshold need "
            "more traversals)")


def _write_csv(rows, path):
    if not rows:
        return
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def plot(res, out) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []

    def save(fig, name):
        p = os.path.join(out, name)
        fig.tight_layout()
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for m in dict.fromkeys(r["method"] for r in res["fig3"]):
        rs = [r for r in res["fig3"] if r["method"] == m]
        ax.plot([r["alpha"] for r in rs], [r["beta"] for r in rs], label=m)
    ax.set(xlabel="α", ylabel="β", title="Fig. 3: (α, β)-accuracy, k = 50, ε = 1")
    ax.legend(fontsize=7)
    save(fig, "fig3.png")

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for fam in dict.fromkeys(r["noise"] for r in res["fig4"]):
        rs = [r for r in res["fig4"] if r["noise"] == fam]
        ax.loglog([r["epsilon"] for r in rs], [r["variance"] for r in rs], label=fam)
    ax.set(xlabel="ε", ylabel="minimal V (Eq. 6)", title="Fig. 4: c = 50")
    ax.legend(fontsize=7)
    save(fig, "fig4.png")

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, panel in zip(axes, "bcd"):
        rs = [r for r in res["fig5"] if r["panel"] == panel]
        for v in dict.fromkeys(r["value"] for r in rs):
            sub = [r for r in rs if r["value"] == v]
            ax.plot([r["r"] for r in sub], [r["p"] for r in sub],
                    label=f"{sub[0]['varied']} = {v:g}")
            ax.axvline(sub[0]["mean"], ls="--", lw=0.6, color="gray")
        ax.set(xlabel="r", ylabel="p(r)", title=f"Fig. 5({panel})")
        ax.legend(fontsize=7)
    save(fig, "fig5.png")

    for metric in ("ncr", "f1"):
        for ds in dict.fromkeys(r["dataset"] for r in res["fig7"]):
            fig, ax = plt.subplots(figsize=(5, 3.5))
            for m in SVT_METHODS + (UPPER, UPPER_SVT):
                rs = [r for r in res["fig7"] if r["dataset"] == ds and r["method"] == m]
                ax.semilogx([r["epsilon"] for r in rs], [r[metric] for r in rs], marker="o",
                            ms=3, label=m, ls="--" if m in (UPPER, UPPER_SVT) else "-")
            ax.set(xlabel="ε", ylabel=metric.upper(), title=f"Fig. 7 ({metric}): {ds}")
            ax.legend(fontsize=6)
            save(fig, f"fig7_{metric}_{ds}.png")
    for ds in dict.fromkeys(r["dataset"] for r in res["fig8"]):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for m in SVT_METHODS:
            rs = [r for r in res["fig8"] if r["dataset"] == ds and r["method"] == m]
            ax.plot([r["passes"] for r in rs], [r["ncr"] for r in rs], marker="o", ms=3, label=m)
        ax.set(xlabel="traversals", ylabel="NCR", title=f"Fig. 8: {ds}")
        ax.legend(fontsize=6)
        save(fig, f"fig8_{ds}.png")
    return paths


def table5_markdown(rows) -> str:
    lines = [
        "| ε | paper optimal | ours (H1, k fit) | k fit | ours (H1, k=200) | paper mean | "
        "ours mean (H1) | Alg. 2 as printed: mean | optimal k=200 | k fit |",
        "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['epsilon']:g} | {r['paper_optimal']:.2f} | {r['optimal_h1_fit']:.2f} | "
            f"{r['fit_k_h1']} | {r['optimal_h1_k200']:.2f} | {r['paper_mean']:.2f} | "
            f"{r['mean_h1']:.2f} | {r['mean_alg2']:.2f} | {r['optimal_alg2_k200']:.2f} | "
            f"{r['fit_k_alg2']} |")
    return "\n".join(lines)


TABLE5_NOTES = """\
H1 = query noise Exp with mean cΔ/ε2 (the *monotonic* rate λ = ε2/(cΔ)) and the Laplace split
ε2 = (2c)^(2/3) ε1 (Lyu's; not Table 4's (√2 c)^(2/3) for SVT-Exp). Under H1 the Mean row is
52.32/ε exactly; the paper's 5332.08 at ε = 0.01 is 5232.08 with one digit wrong (its other four
entries are 52.32/ε to the printed precision). Algorithm 2 as printed (mean 2cΔ/ε2, Table 4's
split) gives a mean twice as large and matches no Mean entry.

The optimal row cannot come from a single setting: with both noise scales ∝ 1/ε, r^op ∝ 1/ε
exactly (tested in tests/test_correction.py), so r^op·ε would be constant, but the paper's
r^op·ε is 354.5, 357.4, 280.3, 280.8, 277.8. Under H1, ε ∈ {0.1, 1, 2} fit k ≈ 163-174 (within
0.1% of the printed values at the fitted k) while ε ∈ {0.01, 0.05} need k ≈ 710-750; no single
k (and no other (λ, split) pair we tried, see the table) reproduces all five. The paper's r^op
was computed with its numerical framework (Algorithms 3-4) at unstated mesh m and boundary e; an
ε-dependent discretisation or a k that changed between runs would explain the drift; we report it
as inconsistent with any single setting."""


def summary_markdown(res, config: Config, seconds: float) -> str:
    out = ["# Liu et al. 2024 reproduction (svtjax)", "",
           f"Trials per point: {config.trials}; Figure 7 traversals: {config.passes}; seed "
           f"{config.seed}; wall time {seconds:.1f}s.", ""]
    if res["missing"]:
        out += ["Missing datasets (not available offline): " + ", ".join(
            f"{k} ({v})" for k, v in res["missing"].items()), ""]
    out += ["## Table 5 (c = 50, α = 0)", "", table5_markdown(res["table5"]), "",
            TABLE5_NOTES, ""]
    f3 = {(r["method"], r["alpha"]): r["beta"] for r in res["fig3"]}
    out += ["## Figure 3 (β at α = 10, 20, 30; paper: SVT-Exp's β below every baseline)", "",
            "| method | β(10) | β(20) | β(30) |", "|---|---|---|---|"]
    for m in dict.fromkeys(r["method"] for r in res["fig3"]):
        out.append(f"| {m} | {f3[(m, 10.0)]:.4f} | {f3[(m, 20.0)]:.4f} | {f3[(m, 30.0)]:.4f} |")
    below = all(f3[("SVT-Exp (optimal)", a)] <= min(f3[(m, a)] for m in
                {r["method"] for r in res["fig3"]}) + 1e-12 for a in (10.0, 20.0, 30.0))
    out += ["", f"SVT-Exp lowest β at α = 10, 20, 30: {below}", ""]
    f4 = [r for r in res["fig4"] if abs(r["epsilon"] - 1.0) < 0.2]
    out += ["## Figure 4 (minimal Eq. 6 variance; paper: exponential smallest at every ε)", ""]
    order_ok = all(
        min((r for r in res["fig4"] if r["epsilon"] == e), key=lambda r: r["variance"])["noise"]
        == "exponential" for e in {r["epsilon"] for r in res["fig4"]})
    out += [f"Exponential smallest at every ε: {order_ok}. Near ε = 1: " + ", ".join(
        f"{r['noise']} {r['variance']:.4g}" for r in f4[:4]), ""]
    out += ["## Figure 5", "", "r^op grows with k, shrinks with α and with ε, and exceeds the "
            "mean (dashed) — see fig5.png / fig5.csv:", ""]
    seen = set()
    for r in res["fig5"]:
        key = (r["panel"], r["value"])
        if key not in seen:
            seen.add(key)
            out.append(f"- ({r['panel']}) {r['varied']} = {r['value']:g}: r^op = "
                       f"{r['r_op']:.2f}, mean = {r['mean']:.2f}")
    out += ["", "## Figure 7 (NCR and F1 against ε)", "",
            "Paper (Sec. 5.5.1): SVT-Exp (optimal) beats every baseline by up to 50% NCR and is "
            "close to the upper bound; baselines order SVT-Lap > SVT-Gumbel > SVT-Gau; SVT-Exp "
            "(no) is poor; SVT-Exp (mean) slightly above the other baselines.", "",
            "| dataset | ε | " + " | ".join(SVT_METHODS + (UPPER, UPPER_SVT)) + " |",
            "|---|---|" + "---|" * (len(SVT_METHODS) + 2)]
    by = {(r["dataset"], r["epsilon"], r["method"]): r for r in res["fig7"]}
    for ds, eps in dict.fromkeys((r["dataset"], r["epsilon"]) for r in res["fig7"]):
        cells = []
        for m in SVT_METHODS + (UPPER, UPPER_SVT):
            r = by.get((ds, eps, m))
            cells.append("" if r is None else f"{r['ncr']:.3f} / {r['f1']:.3f}")
        out.append(f"| {ds} | {eps:g} | " + " | ".join(cells) + " |")
    gaps = [by[(ds, eps, UPPER_SVT)]["ncr"] - by[(ds, eps, "SVT-Exp (optimal)")]["ncr"]
            for ds, eps in dict.fromkeys((r["dataset"], r["epsilon"]) for r in res["fig7"])
            if ds != "adult" and (ds, eps, UPPER_SVT) in by and
            (ds, eps, "SVT-Exp (optimal)") in by]
    if gaps:
        out += ["", f"\"Closely matches the upper bound\" (Sec. 5.5.1) holds for the upper bound "
                f"with SVT-Exp's own noise 2cΔ/ε2: NCR gap {min(gaps):+.3f} to {max(gaps):+.3f} "
                "(Adult excluded). With Exp(Δ/ε2) as printed in Table 3 the bound is ~100x less "
                "noisy and sits near NCR 1, far above every SVT."]
    out += ["", "(cells: NCR / F1)", "", "### Acceptance: SVT-Exp (optimal) highest NCR of the "
            "SVT methods", ""] + ranking_check(res["fig7"])
    if res["fig8"]:
        out += ["", f"## Figure 8 (NCR against traversals, ε = {config.fig8_epsilon:g})", "",
                "Paper (Sec. 5.5.3): SVT-Exp (optimal) best on most datasets at every number of "
                "traversals, slightly behind on T40I10D100K at very few traversals.", "",
                "| dataset | traversals | " + " | ".join(SVT_METHODS) + " |",
                "|---|---|" + "---|" * len(SVT_METHODS)]
        by8 = {(r["dataset"], r["passes"], r["method"]): r for r in res["fig8"]}
        for ds, p in dict.fromkeys((r["dataset"], r["passes"]) for r in res["fig8"]):
            out.append(f"| {ds} | {p} | " + " | ".join(
                f"{by8[(ds, p, m)]['ncr']:.3f}" for m in SVT_METHODS) + " |")
    return "\n".join(out) + "\n"


def write_outputs(res, config: Config, seconds: float, log=print) -> str:
    os.makedirs(config.out, exist_ok=True)
    for key in ("table5", "fig3", "fig4", "fig5", "fig7", "fig8"):
        _write_csv(res[key], os.path.join(config.out, f"{key}.csv"))
    pngs = plot(res, config.out)
    text = summary_markdown(res, config, seconds)
    with open(os.path.join(config.out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    log(text)
    log(f"[liu2024] wrote CSVs, summary.md and {len(pngs)} PNG(s) to {config.out}")
    return text


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = experiment_parser(
        "liu2024", __doc__.splitlines()[0], quick="< 1 minute: T40I10D100K, 2 ε, 20 runs",
        paper="the full grid, 100 runs (default)", trials="runs per point (default 100)",
        out=os.path.join("results", "liu2024"))
    parser.add_argument("--datasets", nargs="+", help=f"default: {' '.join(DEFAULT_DATASETS)}")
    args = parser.parse_args(argv)
    config = Config(**(QUICK if args.quick else {}), out=args.out, seed=args.seed)
    if args.trials is not None:
        config.trials = args.trials
    if args.datasets:
        config.datasets = tuple(args.datasets)
    enable_cache("liu2024")
    start = time.perf_counter()
    res = run(config)
    write_outputs(res, config, time.perf_counter() - start)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
