"""Ding, Wang, Zhang, Kifer 2019 (PVLDB 13(3)), Figures 1-4: free gaps and adaptive SVT.

Reproduces Section 7 with svtjax's mechanisms and :mod:`svtjax.estimators`:

* **Figure 1** (ε = 0.7, k = 2..22) and **Figure 2** (k = 10, ε = 0.1..1.5): percent reduction of
  the mean squared error when the free gaps are combined with independent measurements, against
  the measurements alone, for Sparse-Vector-with-Gap (``svt-gap``, Section 6.2's
  inverse-variance combination) and Noisy-Top-K-with-Gap (``noisy-top-k-gap``, Theorem 3's BLUE),
  empirical beside theoretical (Section 6.2's formula; Corollary 1). As in Section 7.2, half of ε
  selects (budget split 1:k^(2/3) inside SVT) and half measures the k selected queries with
  Lap(k/(ε/2)) each; counting (monotonic) queries.
* **Figure 3** (ε = 0.7, k = 2..22): queries answered by Sparse Vector (``svt-s``, 1:k^(2/3),
  monotonic, stops after k ⊤) and by Adaptive-Sparse-Vector-with-Gap (``adaptive-svt-gap``,
  θ = 1/(1 + k^(2/3)), runs until its budget is spent), the latter split into top and middle
  branch, with both stopping rules: svtjax's exact integer rule (default) and the authors' code's
  running float64 budget sum (``adaptive-svt-gap-authors``), which stops a run one answer early
  when the sum lands an ulp above ε − ε1 (issue 15 item 5; the per-k difference is in
  ``summary.md``); precision and F-measure of all three. This sweep runs under
  ``jax.enable_x64(True)`` (the authors' rule is a float64 sum).
* **Figure 4**: percentage of ε left when Adaptive-Sparse-Vector-with-Gap is stopped after its
  first k answers (0 for a run that never reaches k answers, as in the authors' code).

Queries are item supports (counting queries). Every run draws its own threshold "randomly picked
from the top 2k to top 8k" (:func:`svtjax.datasets.ding_threshold`: the mean of the scores at a
uniformly random rank r+1 and r+2, r in {2k..8k−1}); the items are visited in a seeded random
order fixed per dataset (as the authors' code; ``--order per-run`` gives every run its own); all
numbers are averages over ``trials`` runs (10,000 in the paper). The MSE of a
run is the mean squared error over the queries it selected; the improvement is
1 − mean(MSE combined)/mean(MSE measurements), with a delta-method standard error over runs.

Runs on the sweep engine (``svtjax.sweep``): per dataset one sweep for Figures 1-2
(:func:`mse_sweep`: a ``[[mechanisms]]`` table per (ε, k) cell and mechanism, each with its own c =
k) and one for Figures 3-4 (:func:`adaptive_sweep`: ``svt-s`` and ``adaptive-svt-gap`` with both
stopping rules over the k grid). Each run's threshold is drawn inside the compiled chunk by the
engine's per-trial threshold rule ``"ding"`` (the rule of :func:`svtjax.datasets.ding_threshold`),
and what a run contributes -- the squared errors of the measurements alone and combined with the
gaps (Theorem 3's BLUE and Section 6.2's inverse-variance combination, written for a traced k as
:func:`blue_top_k_errors` / :func:`combine_errors` and tested equal to :mod:`svtjax.estimators`),
Lemma 5 coverage, answers, precision, F-measure, budget left -- are per-trial metrics passed to
``svtjax.sweep.run`` (:func:`sweep_metrics`) (their per-point constants, Var(α), Var(γ), Lemma 5's
quantile, come from :mod:`svtjax.estimators` through ``prepare``), so only means and variances
leave the chunk. The measurement noise Lap(k/(ε/2)) comes from the engine's per-trial metric key,
independent of the mechanism's. The fixed item order (default) is the dataset entry's ``permute =
--seed``; ``--order per-run`` is the engine's ``shuffle`` (an exact uniform order per run,
``items`` mapped back). Noisy-Top-K-with-Gap is run with k = k_max and ε′ = k_max·ε/k, whose noise
Lap(k_max/ε′) = Lap(k/ε) is that of the k-pick mechanism: its first k picks and gaps are exactly
Algorithm 1's output for k (one compile for every k). The improvement's standard error is the delta
method over all runs from the engine's moments (Cov(b, a) = (Var b + Var a − Var(b − a))/2); a run
that selects nothing counts as zero error in both, which leaves the ratio unchanged (every run
selects on T40I10D100K). Every point is seeded by the engine from ``--seed`` and the point, and
finished points are kept under ``<out>/sweep/`` and reused by a rerun. Run times are recorded by
``benchmarks/harness.py --case reproduce``, not here.

Paper sizes: 10,000 runs per cell, as the paper (standard error of an MSE reduction 0.2-0.3
points on T40I10D100K, of a mean number of answers about 0.02); the bias check re-runs one point
with 100,000 (SE about 0.1 point).

Datasets: the paper uses BMS-POS, Kosarak (fetch-only in svtjax, NOT available offline: reported
missing unless ``svtjax.datasets.fetch`` has cached them) and T40I10D100K (shipped). Offline this
runs T40I10D100K and BMS-WebView-1 (a click-stream dataset from the same KDD Cup 2000 source as
BMS-POS; its 497 items allow k <= 62 for the 8k+1 ranks the threshold rule needs).

Results: ``summary.md`` (regenerated by every run) lists every statement of the paper's Section
7 with the paper's number, ours, the tolerance, the verdict and, for each disagreement, the
explanation (``claims.csv`` holds the same table). Where the empirical MSE reduction departs
from the theory, one candidate cause is selection — Theorem 3 and Section 6.2 treat the
selected queries' noise as unconditioned, but top-k winners carry upward-biased noise and SVT
answers queries near T — which predicts a departure growing with the selection noise relative
to the scores (``noise_over_threshold`` in ``mse.csv``; the summary tabulates the points beyond
the bound by it, which is a check of that prediction, not a proof of the cause).
BMS-WebView-1's small supports make that ratio large, T40I10D100K's small.

Choices where the paper is silent or ambiguous (see also the summary):

* Item order: the paper does not say; the authors' code shuffles each dataset once with a fixed
  seed, and so does the default here (``--order per-run`` averages over orders instead).
* Adaptive SVT's σ: Algorithm 2 line 1's σ = 4√2/ε2 for monotonic queries too (footnote 6
  changes the noise to Lap(1/ε2), not σ), as svtjax's ``adaptive-svt-gap`` and the authors' code.
* F-measure: recall is relative to all items above the run's threshold (the paper's "queries that
  are actually above the threshold"; the authors' code uses one item fewer).

Outputs (``--out``, default ``results/ding2019/``): ``mse.csv`` (Figures 1-2 cells),
``adaptive.csv`` (Figures 3-4 cells), ``fig1_<dataset>.png``, ``fig2_<dataset>.png``,
``fig3_<dataset>.png`` (both stopping rules, the paper's +18 at k = 22 marked), ``fig4.png``
(the paper's 40% drawn), ``claims.csv`` and ``summary.md`` (the claims table, the computed
agreement of empirical and theoretical improvement curves, the two stopping rules per k).

Modules: this one builds and runs the sweeps (Figures 1-2's MSE cells, Figures 3-4's adaptive
cells, the bias re-run) and writes the outputs; ``_ding_data`` holds the datasets, the grid, the
paper's numbers and ``Config``, ``_ding_metrics`` the per-trial metrics, ``_ding_claims`` the
claims, ``_ding_report`` the CSVs, the agreement of the curves and the summary, ``_ding_plots``
the figures. Every public name is importable from here.

Usage::

    svtjax reproduce ding2019 --quick        # seconds: T40I10D100K, k in {2, 6, 10}, 1,000 runs
    svtjax reproduce ding2019 --paper        # 10,000 runs per cell, as the paper (default)
    python -m experiments.ding2019 --trials 2000 --datasets t40i10d100k bms-pos

References:
  Ding, Wang, Zhang, Kifer. Free Gap Information from the Differentially Private Sparse Vector
  and Noisy Max Mechanisms. PVLDB 13(3), 2019, Sections 5.2, 6.2 and 7, Figures 1-4
  (the paper's text; each claim names its line); the authors' code,
  github.com/cmla-psu/freegap.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np

if not __package__:  # run as a script, ``python experiments/NAME.py``: import as the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "experiments"  # noqa: A001
    import experiments  # noqa: F401,E402

from ._claims import evaluate
from ._common import (  # noqa: E402
    enable_cache,
    experiment_parser,
    group_rows,
    load_available,
    sweep_dataset,
    sweep_dtype,
)
from ._ding_claims import (  # noqa: F401 (re-exported: the experiment's claims)
    CURVE_TOL,
    SEED,
    STABLE_TOL,
    _bias_text,
    claim_notes,
    claims,
)
from ._ding_data import (  # noqa: F401 (re-exported: the experiment's settings)
    ADAPTIVE_METRICS,
    DEFAULT_DATASETS,
    FIG1_EPSILON,
    FIG2_K,
    MSE_METRICS,
    OFFLINE_DATASETS,
    PAPER_DATASETS,
    PAPER_EPSILONS,
    PAPER_EXTRA_ANSWERS,
    PAPER_EXTRA_K,
    PAPER_F_RATIO,
    PAPER_FIG_DATASETS,
    PAPER_KS,
    PAPER_REMAINING_PCT,
    PAPER_TRIALS,
    THEORY_REF,
    Config,
)
from ._ding_metrics import (  # noqa: F401 (re-exported: the per-trial metrics)
    _measure_scale,
    adaptive_budgets,
    blue_top_k_errors,
    combine_errors,
    svt_gap_scales,
    sweep_metrics,
)
from ._ding_plots import plot
from ._ding_report import (  # noqa: F401 (re-exported: the outputs)
    ADAPTIVE_FIELDS,
    MSE_FIELDS,
    NOISE_BINS,
    agreement,
    report,
    write_csv,
)

QUICK = dict(datasets=("t40i10d100k",), ks=(2, 6, 10), epsilons=(0.3, 0.7), trials=1000)


# ---------------------------------------------------------------------------------------------
# Runs: sweeps of the engine, with Ding'19's per-trial metrics (``_ding_metrics``)
# ---------------------------------------------------------------------------------------------
def _sweep_head(config: Config, what: str, name: str, metrics) -> dict[str, Any]:
    if config.order not in ("fixed", "per-run"):
        raise ValueError(f"order must be 'fixed' or 'per-run'; got {config.order!r}")
    # "fixed": one seeded item order for every run, as the authors' code
    order = {"permute": int(config.seed)} if config.order == "fixed" else {}
    return {"name": f"ding2019-{what}-{name}", "trials": config.trials, "seed": config.seed,
            "datasets": [sweep_dataset(name, config.cache_dir, **order)],
            "metrics": list(metrics), "shuffle": config.order == "per-run",
            "threshold": "ding", "dtype": sweep_dtype()}


def _mse_cells(config: Config) -> list[tuple[int, float, int]]:
    ks = sorted(set(int(k) for k in config.ks))
    return ([(1, float(config.fig1_epsilon), k) for k in ks]
            + [(2, float(e), int(config.fig2_k)) for e in config.epsilons])


def _mse_label(mechanism: str, eps: float, k: int) -> str:
    return f"{mechanism} ε={eps!r} k={k}"


def mse_sweep(config: Config, name: str) -> dict[str, Any]:
    """The ``svtjax.sweep`` config of Figures 1-2 on one dataset: one table per distinct (ε, k)
    cell and mechanism, each with its own c = k, per-run thresholds (``threshold = "ding"``).

    Half of ε selects: ``svt-gap`` at ε/2 with c = k, and ``noisy-top-k-gap`` with k_max picks
    at ε′ = k_max·(ε/2)/k, whose noise Lap(k_max/ε′) = Lap(k/(ε/2)) is that of the k-pick
    mechanism: its first k picks and gaps are Algorithm 1's output for k, and every k shares
    one compiled kernel.
    """
    kmax = max([int(k) for k in config.ks] + [int(config.fig2_k)])
    tables, seen = [], set()
    for _, eps, k in _mse_cells(config):
        if (eps, k) in seen:
            continue
        seen.add((eps, k))
        tables.append({"name": "svt-gap", "label": _mse_label("svt-gap", eps, k), "c": k,
                       "epsilon": eps / 2, "monotonic": True})
        tables.append({"name": "noisy-top-k-gap", "label": _mse_label("noisy-top-k-gap", eps, k),
                       "c": k, "k": kmax, "epsilon": kmax * (eps / 2) / k, "monotonic": True})
    return {"sweep": _sweep_head(config, "mse", name, MSE_METRICS),
            "grid": {}, "mechanisms": tables}


#: Figures 3-4's mechanisms: label -> sweep table. "adaptive" stops by Algorithm 2 line 15
#: decided exactly (svtjax's default), "authors" by the authors' float64 running budget sum
#: (``adaptive-svt-gap-authors``), which can stop one answer early.
ADAPTIVE_TABLES = {
    "svt": {"name": "svt-s", "monotonic": True},
    "adaptive": {"name": "adaptive-svt-gap", "monotonic": True},
    "authors": {"name": "adaptive-svt-gap-authors", "monotonic": True},
}


def adaptive_sweep(config: Config, name: str) -> dict[str, Any]:
    """The ``svtjax.sweep`` config of Figures 3-4 on one dataset: Sparse Vector (``svt-s``) and
    Adaptive-Sparse-Vector-with-Gap with both stopping rules at ``fig1_epsilon`` for every k,
    per-run thresholds. Build and run it under ``jax.enable_x64(True)`` (the authors' rule is a
    float64 sum; :func:`run` does): its dtype is then float64."""
    return {"sweep": _sweep_head(config, "adaptive", name, ADAPTIVE_METRICS),
            "grid": {"epsilon": [float(config.fig1_epsilon)],
                     "c": sorted(set(int(k) for k in config.ks))},
            "mechanisms": [{"label": label, **table} for label, table in ADAPTIVE_TABLES.items()]}


def authors_budgets(epsilon: float, k: int) -> tuple[float, float, float]:
    """(ε0, ε1, ε2) of Adaptive-Sparse-Vector-with-Gap as the authors' code computes them for
    counting queries (cmla-psu/freegap: ``evaluate.py`` allocate_x = 1/(1 + y), allocate_y =
    y/(1 + y), y = numpy.power(k, 2/3); ``adaptivesvt.py`` ε0 = allocate_x·ε, the paper's ε1 =
    allocate_y·ε/k (their ``epsilon_2``) and ε2 = allocate_y·ε/(2k) (their ``epsilon_1``))."""
    y = np.power(np.int64(k), 2.0 / 3.0)
    allocate_x, allocate_y = 1 / (1 + y), y / (1 + y)
    return (float(allocate_x * epsilon), float(allocate_y * epsilon / k),
            float(allocate_y * epsilon / (2.0 * k)))


def boundary_overshoot(epsilon: float, k: int) -> tuple[int, int]:
    """Where the authors' float64 running sum can stop a run one answer early.

    Enumerates every float value the sum ε0 + (a top answer: + ε2, a middle: + ε1, in any
    order) can take when the answers reach 2·n_middle + n_top = 2(k − 1) exactly — the budget
    ε − ε1 spent in exact arithmetic, one middle answer's worth left, where the exact rule goes
    on and the authors' loop stops if the sum is above ε − ε1.

    Returns:
      (distinct float sums reachable at the boundary, how many of them exceed ε − ε1). Zero
      means the two rules cannot differ at this k (and ε).
    """
    e0, e1, e2 = authors_budgets(epsilon, k)
    target = 2 * (k - 1)
    levels: dict[int, set] = {0: {e0}}
    for w in range(target):
        for v in levels.pop(w, ()):
            levels.setdefault(w + 1, set()).add(v + e2)
            if w + 2 <= target:
                levels.setdefault(w + 2, set()).add(v + e1)
    sums = levels.get(target, set())
    return len(sums), sum(v > epsilon - e1 for v in sums)


def _moments(result) -> dict[str, dict[str, dict[str, float]]]:
    """label[, c] -> metric -> {mean, var (ddof 1), n, seconds} of an engine result."""
    out: dict[Any, dict[str, dict[str, float]]] = {}
    for (label, c), by in group_rows(result.rows, "label", "c").items():
        out[(label, int(c))] = {
            m: {"mean": float(r["mean"]), "n": int(r["trials"]), "seconds": float(r["seconds"]),
                "var": float(r["std"]) ** 2 if math.isfinite(r["std"]) else 0.0}
            for m, r in by.items()}
    return out


def _ratio_se(mb: float, ma: float, vb: float, va: float, cov: float, n: int
              ) -> tuple[float, float]:
    """mean(b)/mean(a) and its delta-method standard error over n i.i.d. runs (from moments)."""
    if n < 2:
        return mb / ma, float("nan")
    var = (vb / ma ** 2 - 2 * mb * cov / ma ** 3 + mb ** 2 * va / ma ** 4) / n
    return mb / ma, math.sqrt(max(var, 0.0))


def _mse_cell(kind: str, m: dict[str, dict[str, float]], k: int, mech) -> dict[str, Any]:
    """Figures 1-2: MSE of measurements alone vs combined with the gaps (Secs. 5.2, 6.2).

    Runs without a selected query contribute 0 to both errors, so the ratio of the means over
    all runs is the ratio over the runs that selected; its standard error is the delta method
    over all runs (Cov(b, a) = (Var b + Var a − Var(b − a))/2, all sample moments).
    """
    from svtjax import estimators

    a, b, d = m["ding_mse_measure"], m["ding_mse_combined"], m["ding_mse_diff"]
    n = a["n"]
    used = m["ding_used"]["mean"]
    cov = (a["var"] + b["var"] - d["var"]) / 2
    ratio, se = _ratio_se(b["mean"], a["mean"], b["var"], a["var"], cov, n)
    improvement = 1 - ratio
    if kind == "topk":
        theory = 1 - float(estimators.topk_mse_ratio(k, estimators.topk_lambda(True)))
        coverage = float("nan")
    else:
        theory = 1 - float(estimators.svt_mse_ratio(k, True))
        selected = m["ding_selected"]["mean"]
        coverage = m["ding_covered"]["mean"] / selected if selected > 0 else float("nan")
    noise = (svt_gap_scales(float(mech.epsilon), k)[1] if kind == "gap"
             else float(_measure_scale(mech, k)))
    return {"runs_used": int(round(used * n)), "mean_selected": m["ding_selected"]["mean"],
            "mse_measure": a["mean"] / used, "mse_combined": b["mean"] / used,
            "improvement_pct": 100 * improvement, "improvement_se_pct": 100 * se,
            "theory_pct": 100 * theory, "z": (improvement - theory) / se if se > 0 else 0.0,
            "lcb95_coverage": coverage,
            "noise_over_threshold": noise / m["ding_threshold"]["mean"],
            "seconds": a["seconds"]}


def bias_check(config: Config, mse_rows, log=print) -> Optional[dict[str, Any]]:
    """Is the departure of Noisy-Top-K-with-Gap from Corollary 1 a bias or noise?

    Takes the paper-dataset point with the largest |empirical − theory|/SE beyond the
    Bonferroni bound (none: returns None) and runs it again with ``bias_factor × trials`` fresh
    runs (seed + 1, so independent of the first estimate): a real bias (e.g. from selection:
    top-k winners carry upward-biased noise, which the theory treats as unconditioned) stays
    beyond 3 SE of the theory; noise, or a standard error that understated the spread, does
    not.
    """
    from svtjax import sweep

    if config.bias_factor <= 0:
        return None
    agree = agreement([r for r in mse_rows if r["dataset"] in PAPER_FIG_DATASETS])
    worst = None
    for (dataset, mechanism), a in agree.items():
        if mechanism != "noisy-top-k-gap":
            continue
        for r in mse_rows:
            if ((r["dataset"], r["mechanism"]) == (dataset, mechanism)
                    and abs(r["z"]) > a["z_star"]
                    and (worst is None or abs(r["z"]) > abs(worst["z"]))):
                worst = r
    if worst is None:
        return None
    eps, k, name = worst["epsilon"], worst["k"], worst["dataset"]
    kmax = max([int(x) for x in config.ks] + [int(config.fig2_k)])
    big = dataclasses.replace(config, trials=config.bias_factor * config.trials,
                              seed=config.seed + 1)
    label = _mse_label("noisy-top-k-gap", eps, k)
    cfg = {"sweep": _sweep_head(big, "mse-bias", name, MSE_METRICS), "grid": {},
           "mechanisms": [{"name": "noisy-top-k-gap", "label": label, "c": k, "k": kmax,
                           "epsilon": kmax * (eps / 2) / k, "monotonic": True}]}
    res = sweep.run(cfg, os.path.join(config.out, "sweep", "mse-bias", name),
                    log=log if config.verbose else (lambda msg: None), metrics=sweep_metrics())
    import svtjax

    mech = svtjax.get("noisy-top-k-gap", epsilon=kmax * (eps / 2) / k, k=kmax, monotonic=True)
    cell = _mse_cell("topk", _moments(res)[(label, k)], k, mech)
    return {"dataset": name, "epsilon": eps, "k": k, "figure": worst["figure"],
            "first_pct": worst["improvement_pct"], "first_se_pct": worst["improvement_se_pct"],
            "first_z": worst["z"], "trials": big.trials, "pct": cell["improvement_pct"],
            "se_pct": cell["improvement_se_pct"], "theory_pct": cell["theory_pct"],
            "z": cell["z"], "bias": abs(cell["z"]) > 3}


def run(config: Config, log=print) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Runs Figures 1-4 on every available dataset: per dataset one ``svtjax.sweep`` for
    Figures 1-2 (:func:`mse_sweep`) and one for Figures 3-4 (:func:`adaptive_sweep`), kept
    under ``<out>/sweep/`` so an interrupted run resumes.

    Returns:
      ``({"mse": rows, "adaptive": rows}, {dataset: why it is missing})``.
    """
    import jax

    import svtjax
    from svtjax import sweep

    loaded, missing = load_available(config.datasets, config.cache_dir)
    for name, why in missing.items():
        log(f"[ding2019] {name}: MISSING ({why})")
    ks = sorted(set(int(k) for k in config.ks))
    kmax = max(ks + [int(config.fig2_k)])
    quiet = (lambda msg: None)
    mse_rows, adaptive_rows = [], []
    for name, data in loaded.items():
        n = len(data.scores)
        if 8 * kmax + 1 > n:
            log(f"[ding2019] {name}: SKIPPED, {n} items < 8k+1 = {8 * kmax + 1}")
            missing[name] = f"too few items ({n}) for k = {kmax}"
            continue
        start_ds = time.perf_counter()
        res = sweep.run(mse_sweep(config, name), os.path.join(config.out, "sweep", "mse", name),
                        log=log if config.verbose else quiet, metrics=sweep_metrics())
        cells = _moments(res)
        for figure, eps, k in _mse_cells(config):
            for label, kind in (("svt-gap", "gap"), ("noisy-top-k-gap", "topk")):
                if kind == "gap":
                    mech = svtjax.get("svt-gap", epsilon=eps / 2, c=k, monotonic=True)
                else:
                    mech = svtjax.get("noisy-top-k-gap", epsilon=kmax * (eps / 2) / k, k=kmax,
                                      monotonic=True)
                m = cells[(_mse_label(label, eps, k), k)]
                mse_rows.append({"dataset": name, "figure": figure, "mechanism": label,
                                 "epsilon": eps, "k": k, "trials": config.trials,
                                 **_mse_cell(kind, m, k, mech)})
        with jax.enable_x64(True):  # the authors' stopping rule is a float64 sum
            res = sweep.run(adaptive_sweep(config, name),
                            os.path.join(config.out, "sweep", "adaptive", name),
                            log=log if config.verbose else quiet, metrics=sweep_metrics())
        cells = _moments(res)
        for k in ks:
            row = {"dataset": name, "epsilon": config.fig1_epsilon, "k": k,
                   "trials": config.trials}
            seconds = 0.0
            for label in ADAPTIVE_TABLES:
                m = cells[(label, k)]
                for metric in ("answers", "precision", "f"):
                    v = m[f"ding_{metric}"]
                    row[f"{label}_{metric}"] = v["mean"]
                    row[f"{label}_{metric}_se"] = math.sqrt(v["var"] / v["n"])
                if label != "svt":
                    row[f"{label}_top"] = m["ding_top"]["mean"]
                    row[f"{label}_middle"] = row[f"{label}_answers"] - row[f"{label}_top"]
                    v = m["ding_remaining"]
                    pre = "" if label == "adaptive" else "authors_"
                    row[f"{pre}remaining_pct"] = 100 * v["mean"]
                    row[f"{pre}remaining_pct_se"] = 100 * math.sqrt(v["var"] / v["n"])
                    row[f"{pre}reached_k"] = m["ding_reached"]["mean"]
                seconds += m["ding_answers"]["seconds"]
            row["extra_answers"] = row["adaptive_answers"] - row["svt_answers"]
            row["authors_extra_answers"] = row["authors_answers"] - row["svt_answers"]
            # independent runs (each point has its own seed): SEs add in quadrature
            row["authors_extra_answers_se"] = math.hypot(row["authors_answers_se"],
                                                         row["svt_answers_se"])
            row["rule_difference"] = row["adaptive_answers"] - row["authors_answers"]
            row["rule_difference_se"] = math.hypot(row["adaptive_answers_se"],
                                                   row["authors_answers_se"])
            sums, over = boundary_overshoot(config.fig1_epsilon, k)
            row["boundary_sums"], row["boundary_overshoot"] = sums, over
            for pre, label in (("", "adaptive"), ("authors_", "authors")):
                row[f"{pre}f_ratio"] = (row[f"{label}_f"] / row["svt_f"] if row["svt_f"] > 0
                                        else float("nan"))
            row["seconds"] = seconds
            adaptive_rows.append(row)
        if config.verbose:
            log(f"[ding2019] {name}: {len(_mse_cells(config))} MSE cells x 2 mechanisms + "
                f"{len(ks)} adaptive cells, {config.trials} runs each, "
                f"{time.perf_counter() - start_ds:.1f}s")
    return {"mse": mse_rows, "adaptive": adaptive_rows,
            "bias": bias_check(config, mse_rows, log)}, missing


# ---------------------------------------------------------------------------------------------
# Output (the CSVs and summary: ``_ding_report``; the figures: ``_ding_plots``)
# ---------------------------------------------------------------------------------------------
def write_outputs(results, missing, config: Config, seconds: float, log=print) -> str:
    os.makedirs(config.out, exist_ok=True)
    write_csv(results["mse"], MSE_FIELDS, os.path.join(config.out, "mse.csv"))
    write_csv(results["adaptive"], ADAPTIVE_FIELDS, os.path.join(config.out, "adaptive.csv"))
    pngs = plot(results, config.out)
    table = evaluate(claims({**results, "missing": missing}, config), config.out,
                     explain=claim_notes(results))
    text = report(results, missing, config, seconds, table)
    md = os.path.join(config.out, "summary.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write(text)
    log(text)
    log(f"[ding2019] wrote mse.csv, adaptive.csv, {md} and {len(pngs)} PNG(s) in {config.out}")
    return text


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = experiment_parser(
        "ding2019", __doc__.splitlines()[0],
        quick="seconds: T40I10D100K, k in {2, 6, 10}, ε in {0.3, 0.7}, 1,000 runs",
        paper="the paper's grid, 10,000 runs per cell (default)",
        trials="runs per cell (paper: 10,000; at least 2: standard errors need two runs); "
               "the bias check reruns one point with 10x as many (not with --quick)",
        out=os.path.join("results", "ding2019"), min_trials=2)
    parser.add_argument("--datasets", nargs="+", help=f"default: {' '.join(DEFAULT_DATASETS)}")
    parser.add_argument("--order", choices=("fixed", "per-run"), default="fixed",
                        help="item order: one seeded shuffle per dataset, as the authors' code "
                             "(default), or a fresh shuffle per run")
    args = parser.parse_args(argv)

    config = Config(**(QUICK if args.quick else {}), out=args.out, seed=args.seed,
                    order=args.order, bias_factor=0 if args.quick else 10)
    if args.trials is not None:
        config.trials = args.trials
    if args.datasets:
        config.datasets = tuple(args.datasets)
    enable_cache("ding2019")
    start = time.perf_counter()
    results, missing = run(config)
    seconds = time.perf_counter() - start
    write_outputs(results, missing, config, seconds)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
