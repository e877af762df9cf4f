"""Liu, Wang, Liu, Li, Chen 2024 (PVLDB 18(2)): SVT with exponential noise — Table 5 and
Figures 3, 4, 5(a-d), 6, 7 (NCR and its F1 version) and 8.

* Table 5 — optimal vs mean correction for c = 50, α = 0, ε ∈ {0.01, 0.05, 0.1, 1, 2}, printed
  and drawn (``table5.png``) beside the paper's values, with the (λ, split, k) that reproduce
  them (see ``table5``).
* Figure 3 — (α, β)-accuracy, β = 1 − p(r) of Eq. 8, of SVT with exponential (optimal
  correction), Laplace, Gumbel (mean correction) and Gaussian query noise; k = 50, ε = 1 and, as
  in Theorem 4, Δ = 1, ε1 = ε2 = ε/2, c = 1 (Gaussian: δ = 1e-5, svtjax's choice).
* Figure 4 — the minimal comparison variance (Eq. 6 at the Table 4 split) against ε ∈ [0.01, 2],
  c = 50, for the four query-noise families (Gaussian calibrated at δ = 1e-5).
* Figure 5 — (a) the density of Z = Exp(1/ε2) − Lap(1/ε1) (numerical convolution, with its CDF
  Γ from ``svtjax.correction.difference_cdf``), ε = 0.1; p(r) curves: (b) k ∈ {1, 10, 50, 100},
  (c) α ∈ {0, 5, 10, 20}, (d) ε ∈ {0.05, 0.1, 0.5}; ε = 0.1, k = 10, α = 0 unless varied;
  ε1 = ε2 = ε/2 as in the caption of Figure 5(a).
* Figure 6 — every dataset's item scores in descending order (log-log) with its Table 2
  threshold (items scoring 0, Binary's negatives, cannot appear on a log axis; the legend says
  how many).
* Figure 7 — NCR (and F1, the paper's Appendix H) against ε for every Table 3 method on Binary,
  Zipf, T40I10D100K and Adult (BMS-POS and Kosarak are not available offline; they run when
  ``svtjax.datasets.fetch`` has cached them): c = 50 (Adult 5), α = 0, k = ⌊m/c⌋,
  RESAMPLE = False, APPEND = True with ``max_passes`` traversals (default 10: the figure does
  not state it), items shuffled per run, thresholds of Table 2, Algorithm 2's general λ =
  ε2/(2cΔ), Table 4 splits, SVT-Gau at δ = 1/(number of records) (1/m for the synthetic data).
  The "upper bound" ranks s_i + Exp(Δ/ε2) (ε2 of SVT-Exp's split, Table 3 as printed) and
  keeps the top c; a second variant uses SVT-Exp's own scale 2cΔ/ε2.
* Figure 8 — NCR against the number of traversals (1, 2, 3, 5, 10) at ε = 0.1, and on
  T40I10D100K also at ε = 1.0 (the paper's ε for this figure is not in its text; the second
  value shows whether the T40I10D100K finding depends on it). At one traversal every method
  has an exact law: the figure marks svtjax.exact's E[NCR] there (``exact_ncr`` in
  ``fig8.csv``) and the summary tests the runs against it. More traversals (APPEND re-reads
  the stream, as do Figure 7's ten) have no exact law in svtjax.exact, so Figure 7 has none.

``summary.md`` opens with the claims table (every statement of Secs. 4.3 and 5.5 with the
paper's number, ours, the tolerance, the verdict and the explanation of each disagreement;
``claims.csv`` holds it too) and discusses what the paper leaves open or contradicts: RESAMPLE
(text: True; captions: False), the budget across traversals (footnote 3), Figure 8's ε.
Comparisons between methods use one-sided z-tests of the NCR means with Holm's procedure at
family-wise error 0.05.

Figures 7 and 8 run on the sweep engine (``svtjax.sweep``), one sweep per dataset
(:func:`fig7_sweep`): every Table 3 method × ε (the upper bounds are ``report-noisy-max`` with
exponential noise, ``monotonic=True, k=c, epsilon=c·ε2``, i.e. the top c of s_i + Exp(Δ/ε2),
and ``epsilon=ε2/2`` for SVT-Exp's own scale 2cΔ/ε2). Figure 8 is read off the same runs: a
run of ``max_passes`` traversals answers ⊤ in its first p traversals exactly what a p-traversal
run would (the stream only ends sooner), so each run also reports NCR and F1 of its first p
traversals (:func:`pass_metrics`), and every (method, ε) compiles one program for both figures.
Every point is seeded by the engine from ``--seed`` and the point; methods do not share random
numbers, so comparisons use the standard errors of independent estimates (one method's
traversal counts share its runs; no test compares them with each other). Finished points are
kept in ``<out>/sweep/<dataset>/`` with the engine's tidy ``results.csv`` and reused by a
rerun. Rows are grouped by (point id, label): two tables can be one computation (on Adult the
upper bound at ε and the SVT-noise upper bound at 10ε), and both labels are reported.

Paper sizes: 100 runs per point as the paper (standard error of an NCR mean at most 0.05,
typically 0.01-0.03).

Outputs (``--out``, default ``results/liu2024/``): ``table5.csv``, ``fig3.csv``, ``fig4.csv``,
``fig5a.csv``, ``fig5.csv``, ``fig6.csv``, ``fig7.csv`` (NCR and F1 with standard errors),
``fig8.csv``, ``table5.png``, one PNG per figure and dataset, ``claims.csv`` and
``summary.md``.

This module runs the experiment (settings, sweeps, summary, command line); its parts live
beside it: ``_liu_common`` (the Table 3 methods and the grids), ``_liu_analytic`` (Table 5,
Figures 3-6), ``_liu_plots`` (the figures) and ``_liu_claims`` (the claims).

Usage::

    python -m experiments.liu2024 --quick      # T40I10D100K, 2 ε, 20 runs
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

if not __package__:  # run as a script, ``python experiments/NAME.py``: import as the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "experiments"  # noqa: A001
    import experiments  # noqa: F401,E402

from ._claims import evaluate, markdown  # noqa: E402
from ._common import (  # noqa: E402
    enable_cache,
    exact_agreement,
    experiment_parser,
    group_rows,
    load_available,
    sweep_dataset,
)

# The parts of this experiment, re-exported: ``experiments.liu2024`` is their one entry point.
from ._liu_analytic import (  # noqa: E402,F401
    TABLE5_EPS,
    TABLE5_MEAN,
    TABLE5_NOTES,
    TABLE5_OPTIMAL,
    fig3,
    fig4,
    fig5,
    fig5a,
    fig6,
    table5,
    table5_markdown,
)
from ._liu_claims import NCR_BOUND, SEED, claim_notes, claims  # noqa: E402,F401
from ._liu_common import (  # noqa: E402,F401
    DEFAULT_DATASETS,
    H1,
    H1_PARAMS,
    METHODS,
    OFFLINE_DATASETS,
    PAPER_DATASETS,
    PAPER_EPSILONS,
    PAPER_PASSES,
    PAPER_TRIALS,
    SVT_METHODS,
    UPPER,
    UPPER_SVT,
    _eps2,
    _params,
    _setting,
    _upper_label,
)
from ._liu_plots import METHOD_STYLE, plot  # noqa: E402,F401


@dataclasses.dataclass
class Config:
    datasets: Sequence[str] = DEFAULT_DATASETS
    epsilons: Sequence[float] = PAPER_EPSILONS
    passes: int = 10  # traversals in Figure 7
    fig8_passes: Sequence[int] = PAPER_PASSES  # each <= passes: read off Figure 7's runs
    # Figure 8's ε is not in the paper's text (the figure is): the first value on every dataset,
    # the others only on ``fig8_sensitivity`` (T40I10D100K, whose verdict may depend on it)
    fig8_epsilons: Sequence[float] = (0.1, 1.0)
    fig8_sensitivity: Sequence[str] = ("t40i10d100k",)
    fig8_datasets: Optional[Sequence[str]] = None  # default: all loaded
    trials: int = PAPER_TRIALS
    seed: int = 0
    out: str = os.path.join("results", "liu2024")
    cache_dir: Optional[str] = None
    verbose: bool = True


# --quick: one dataset, two ε, Figure 8 at the Figure 7 traversal count (no exact law to
# compute).
QUICK = dict(datasets=("t40i10d100k",), epsilons=(0.5, 2.0), passes=2, fig8_passes=(2,),
             fig8_epsilons=(0.5,), trials=20)


# ---------------------------------------------------------------------------------------------
# Simulation: Figures 7 and 8, as sweep configurations
# ---------------------------------------------------------------------------------------------
def _sweep_head(config: Config, figure: str, name: str, threshold: float) -> dict[str, Any]:
    return {"name": f"liu2024-{figure}-{name}", "trials": config.trials, "seed": config.seed,
            "datasets": [sweep_dataset(name, config.cache_dir)], "metrics": ["ncr", "f1"],
            "shuffle": True, "threshold": threshold}


def _fig8_epsilons(config: Config, name: str) -> list[float]:
    """Figure 8's ε on one dataset: the first of ``fig8_epsilons`` (all of them on
    ``fig8_sensitivity``); none on a dataset ``fig8_datasets`` leaves out."""
    if config.fig8_datasets is not None and name not in config.fig8_datasets:
        return []
    eps = config.fig8_epsilons if name in config.fig8_sensitivity else config.fig8_epsilons[:1]
    return [float(e) for e in eps]


def _check_passes(config: Config) -> None:
    """Figure 8's traversal counts are read off Figure 7's runs (:func:`pass_metrics`), so each
    must be an integer from 1 to Figure 7's ``passes``."""
    bad = [p for p in config.fig8_passes if isinstance(p, bool) or not isinstance(p, int)
           or not 1 <= p <= config.passes]
    if bad:
        raise ValueError(f"fig8_passes must be integers from 1 to passes = {config.passes} "
                         f"(Figure 8 is read off Figure 7's {config.passes}-traversal runs); "
                         f"got {bad}")


def _first_passes(p: int, metric: str, outcome, scores, c, ctx):
    """``metric`` (NCR or F1) of the items a trial answered ⊤ in its first ``p`` traversals:
    positions below p·n (APPEND's traversal t occupies positions t·n .. t·n + n − 1 of the
    engine's multi-pass stream)."""
    import jax.numpy as jnp

    from svtjax import metrics

    answers = outcome.answers
    first = jnp.arange(answers.shape[-1]) < p * scores.shape[0]
    cut = outcome._replace(answers=jnp.where(first, answers, jnp.asarray(-1, answers.dtype)))
    return metrics.evaluate_outcome(cut, scores, c, max_c=ctx.k)[metric]


def _pass_name(metric: str, passes: int, config: Config) -> str:
    """The sweep metric holding ``metric`` after ``passes`` traversals."""
    return metric if passes == config.passes else f"{metric}_pass{passes}"


def pass_metrics(config: Config, name: str) -> list:
    """The sweep metrics (``svtjax.sweep.Metric``) of Figure 8 on one dataset: NCR and F1 of
    the picks made in the first p traversals, for each of ``fig8_passes`` below ``passes``.

    A run with ``max_passes = p`` is the first p traversals of a run with more: SVT-Exp decides
    each position from its own noise, the one threshold noise ρ (RESAMPLE = False) and the ⊤
    so far, halts at the c-th ⊤, and ``max_passes`` only ends the stream. So the items a
    ``passes``-traversal run answers ⊤ in its first p traversals have exactly the law of a
    p-traversal run's picks (tests/test_experiment_liu2024.py runs both and compares them
    trial by trial), and Figure 8 is read off Figure 7's runs: one compiled program per method
    and dataset for both figures, instead of one per traversal count as well. The counts of
    one method share its runs (nested, hence dependent, estimates); every test compares
    methods, whose runs are independent, and Holm's procedure holds under any dependence."""
    from svtjax.sweep import Metric

    if not _fig8_epsilons(config, name):
        return []
    return [Metric(_pass_name(metric, p, config), functools.partial(_first_passes, p, metric),
                   f"{metric.upper()} of the picks of the first {p} traversal(s)")
            for p in sorted(set(config.fig8_passes)) if p != config.passes
            for metric in ("ncr", "f1")]


def fig7_sweep(config: Config, name: str, data) -> dict[str, Any]:
    """The ``svtjax.sweep`` config of Figures 7 and 8 on one dataset: every Table 3 method × ε.

    The SVT methods are ``svt-exp`` tables over the ε grid (with Figure 8's ε, and on
    ``fig8_sensitivity`` the H1 reading at Figure 8's ε); Figure 8's traversal counts are the
    metrics of :func:`pass_metrics`. The upper bounds are one ``report-noisy-max`` table per ε
    (their ε is ε2 of SVT-Exp's split at that ε): exponential noise, ``monotonic=True``,
    ``k = c``, scale kΔ/ε: ``epsilon = c·ε2`` gives Table 3's Exp(Δ/ε2) as printed,
    ``epsilon = ε2/2`` SVT-Exp's own query-noise scale 2cΔ/ε2 (what SVT-Exp would achieve if it
    could rank its noisy scores, the reading under which "closely matches" (Sec. 5.5.1) can
    hold). Labels ``"<method> @ ε=<ε>"`` map them back (:func:`_upper_label`).
    """
    threshold, c, delta = _setting(data)
    m = len(data.scores)
    eps8 = _fig8_epsilons(config, name)
    grid = sorted({float(e) for e in config.epsilons} | set(eps8))
    tables = [{"name": "svt-exp", "label": label, **_params(label, c, m, config.passes, delta),
               "epsilon": grid} for label in SVT_METHODS]
    if name in config.fig8_sensitivity and eps8:
        tables.append({"name": "svt-exp", "label": H1,
                       **_params(H1, c, m, config.passes, delta), "epsilon": eps8})
    for eps in config.epsilons:
        eps2 = _eps2(float(eps), c)
        for label, eps_rnm in ((UPPER, c * eps2), (UPPER_SVT, eps2 / 2)):
            tables.append({"name": "report-noisy-max", "label": _upper_label(label, float(eps)),
                           "noise": "exponential", "monotonic": True, "epsilon": eps_rnm})
    head = _sweep_head(config, "fig7", name, threshold)
    head["metrics"] = head["metrics"] + [x.name for x in pass_metrics(config, name)]
    return {"sweep": head, "grid": {"c": [c]}, "mechanisms": tables}


def _exact_one_pass(data, config: Config, cells) -> dict[tuple, float]:
    """svtjax.exact's E[NCR] of one traversal (the only count with an exact law: more re-read
    the stream) for each (method, ε) of ``cells``, on the host, one call per query-noise family
    (the points of one law structure share a kernel)."""
    import numpy as np

    import svtjax
    from svtjax import exact

    threshold, c, delta = _setting(data)
    m = len(data.scores)
    scores = np.asarray(data.scores, np.float64)
    groups: dict[str, list[tuple]] = {}
    for method, eps in cells:
        groups.setdefault(METHODS.get(method, H1_PARAMS)["noise"], []).append((method, eps))
    out = {}
    for members in groups.values():
        for lo in range(0, len(members), 16):  # the engine's group bound (memory ~ group²)
            part = members[lo:lo + 16]
            mechs = [svtjax.get("svt-exp", epsilon=eps, **_params(method, c, m, 1, delta))
                     for method, eps in part]
            values = exact.expected_metrics_many(mechs, scores, threshold, shuffle=True, c=c)
            out.update({cell: float(v["ncr"]) for cell, v in zip(part, values)})
    return out


def _fig8_points(points, data, config: Config) -> list[dict[str, Any]]:
    """Figure 8's points of one dataset, read off its sweep's points: per SVT method (and H1)
    at Figure 8's ε, one point per traversal count, with the exact E[NCR] at one traversal."""
    eps8 = _fig8_epsilons(config, data.name)
    mine = [p for p in points if p["label"] in SVT_METHODS + (H1,)
            and float(p["epsilon"]) in eps8]
    exact = (_exact_one_pass(data, config, [(p["label"], float(p["epsilon"])) for p in mine])
             if 1 in config.fig8_passes else {})
    out = []
    for p in mine:
        for passes in sorted(set(config.fig8_passes)):
            q = dict(p, passes=passes, exact_ncr=exact.get((p["label"], float(p["epsilon"])))
                     if passes == 1 else None)
            for metric in ("ncr", "f1"):
                name = _pass_name(metric, passes, config)
                q[metric], q[f"{metric}_se"] = p[name], p[f"{name}_se"]
            out.append(q)
    return out


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
                     "seconds": p["seconds"],
                     **({"exact_ncr": p["exact_ncr"]} if "exact_ncr" in p else {})})
    order = {m: i for i, m in enumerate(SVT_METHODS + (UPPER, UPPER_SVT, H1))}
    rows.sort(key=lambda r: (r["epsilon"], r["passes"], order[r["method"]]))
    return rows


def run(config: Config, log=print) -> dict[str, Any]:
    """Every table and figure; returns {"table5": rows, "fig3": ..., "fig7": ..., ...}.

    Figures 7 and 8 run as one ``svtjax.sweep`` sweep per dataset (:func:`fig7_sweep`; Figure
    8's traversal counts are its :func:`pass_metrics`), kept under ``<out>/sweep/<dataset>/``
    so an interrupted run resumes.
    """
    import jax

    from svtjax import sweep

    _check_passes(config)
    loaded, missing = load_available(config.datasets, config.cache_dir)
    for name, why in missing.items():
        log(f"[liu2024] {name}: MISSING ({why})")
    t0 = time.perf_counter()
    res: dict[str, Any] = {"missing": missing, "table5": table5(), "fig3": fig3(),
                           "fig4": fig4(), "fig5a": fig5a(), "fig5": fig5(),
                           "fig6": fig6(loaded)}
    if config.verbose:
        log(f"[liu2024] Table 5, Figures 3-5: {time.perf_counter() - t0:.1f}s")
    quiet = (lambda msg: None)
    fig7, fig8 = [], []
    for i, (name, data) in enumerate(loaded.items()):
        if i:
            # Each dataset size compiles its own kernels; dropping the previous dataset's keeps
            # a paper-mode run below the process's memory-map limit (LLVM "Cannot allocate
            # memory" otherwise). Not after the last dataset: nothing compiles after it, and
            # the caller's process keeps what it had compiled (a one-dataset run clears none).
            jax.clear_caches()
        start = time.perf_counter()
        result = sweep.run(fig7_sweep(config, name, data),
                           os.path.join(config.out, "sweep", name),
                           log=log if config.verbose else quiet,
                           metrics=pass_metrics(config, name))
        points = _points(result)
        uppers = {_upper_label(u, float(e)) for u in (UPPER, UPPER_SVT) for e in config.epsilons}
        grid7 = {float(e) for e in config.epsilons}
        fig7 += _figure_rows([p for p in points if p["label"] in uppers or (
            p["label"] in SVT_METHODS and float(p["epsilon"]) in grid7)], data, config,
            config.passes)
        fig8 += _figure_rows(_fig8_points(points, data, config), data, config, config.passes)
        if config.verbose:
            log(f"[liu2024] {name}: {time.perf_counter() - start:.1f}s")
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


def summary_markdown(res, config: Config, seconds: float, table=()) -> str:
    out = ["# Liu et al. 2024 reproduction (svtjax)", "",
           f"Trials per point: {config.trials}; Figure 7 traversals: {config.passes}; Figure 8 "
           f"ε: {', '.join(f'{e:g}' for e in config.fig8_epsilons)}; seed {config.seed}; wall "
           f"time {seconds:.1f}s.", ""]
    if res["missing"]:
        out += ["Missing datasets (not available offline): " + ", ".join(
            f"{k} ({v})" for k, v in res["missing"].items()), ""]
    out += ["## Claims checked", "", markdown(table), "",
            "## Choices the paper leaves open or contradicts", "",
            "* RESAMPLE: Sec. 2.2 says \"we only present the results of RESAMPLE set to True in "
            "Section 5\", but the captions of Figures 2, 7 and 8 say RESAMPLE=False. We follow "
            "the captions (and Algorithm 2's Figure 2): False, under which Theorem 3 makes the "
            "whole run (ε1 + ε2)-DP; with True it would be (cε1, ε2), a different budget.",
            "* Budget across traversals (Sec. 5.5.3, footnote 3): the paper says each method "
            "consumes the same budget at a given number of traversals and that the overall "
            "consumption varies with the number of traversals, i.e. it charges each traversal "
            "(its captions: 'sequential composition theorem is adopted'). Under Theorem 3 with "
            "RESAMPLE=False an appended run is (ε1 + ε2)-DP however many traversals it makes, "
            "so we run every traversal count at the same ε: the same noise as the paper's "
            "per-traversal budget, with a total the paper would count as traversals × ε.",
            "* Figure 8's ε is not in the text; we run it at "
            + f"{config.fig8_epsilons[0]:g} on every dataset and at "
            + ", ".join(f"{e:g}" for e in config.fig8_epsilons) + " on "
            + ", ".join(config.fig8_sensitivity) + ", and judge each.",
            f"* Query-noise rate: Figures 7-8 run Algorithm 2 as printed (rate ε2/(2cΔ), Table "
            f"4's split); Table 5's numbers match only the monotonic rate ε2/(cΔ) with the split "
            f"(2c)^(2/3) (H1, the Table 5 notes), so the paper's figures may show H1. Figure 8 "
            f"runs both on {', '.join(config.fig8_sensitivity)} ('{H1}') and the T40I10D100K "
            "crossover is judged under each (claims liu-fig8-t40-* and liu-fig8-t40-h1-*).", "",
            "## Table 5 (c = 50, α = 0)", "", table5_markdown(res["table5"]), "",
            TABLE5_NOTES, ""]
    f3 = {(r["method"], r["alpha"]): r["beta"] for r in res["fig3"]}
    out += ["## Figure 3 (β at α = 10, 20, 30)", "",
            "| method | β(10) | β(20) | β(30) |", "|---|---|---|---|"]
    for m in dict.fromkeys(r["method"] for r in res["fig3"]):
        out.append(f"| {m} | {f3[(m, 10.0)]:.4g} | {f3[(m, 20.0)]:.4g} | {f3[(m, 30.0)]:.4g} |")
    out += ["", "## Figure 5 (r^op against k, α, ε; dashed in fig5.png: the noise mean)", ""]
    seen = set()
    for r in res["fig5"]:
        key = (r["panel"], r["value"])
        if key not in seen:
            seen.add(key)
            out.append(f"- ({r['panel']}) {r['varied']} = {r['value']:g}: r^op = "
                       f"{r['r_op']:.2f}, mean = {r['mean']:.2f}")
    out += ["", "## Figure 7 (NCR / F1 against ε)", "",
            "| dataset | ε | " + " | ".join(SVT_METHODS + (UPPER, UPPER_SVT)) + " |",
            "|---|---|" + "---|" * (len(SVT_METHODS) + 2)]
    by = {(r["dataset"], r["epsilon"], r["method"]): r for r in res["fig7"]}
    for ds, eps in dict.fromkeys((r["dataset"], r["epsilon"]) for r in res["fig7"]):
        cells = []
        for m in SVT_METHODS + (UPPER, UPPER_SVT):
            r = by.get((ds, eps, m))
            cells.append("" if r is None else f"{r['ncr']:.3f} / {r['f1']:.3f}")
        out.append(f"| {ds} | {eps:g} | " + " | ".join(cells) + " |")
    out += ["", "### SVT-Exp (optimal) against the best other SVT method, per cell", ""]
    out += ranking_check(res["fig7"])
    if res["fig8"]:
        out += ["", "## Figure 8 (NCR ± SE against traversals)", "",
                "| dataset | ε | traversals | " + " | ".join(SVT_METHODS) + " |",
                "|---|---|---|" + "---|" * len(SVT_METHODS)]
        by8 = {(r["dataset"], r["epsilon"], r["passes"], r["method"]): r for r in res["fig8"]}
        for ds, e, p in dict.fromkeys((r["dataset"], r["epsilon"], r["passes"])
                                      for r in res["fig8"]):
            out.append(f"| {ds} | {e:g} | {p} | " + " | ".join(
                f"{by8[(ds, e, p, m)]['ncr']:.3f} ± {by8[(ds, e, p, m)]['ncr_se']:.3f}"
                + ("" if by8[(ds, e, p, m)].get("exact_ncr") is None else
                   f" (exact {by8[(ds, e, p, m)]['exact_ncr']:.3f})")
                for m in SVT_METHODS) + " |")
        out += _exact_markdown(res["fig8"])
    return "\n".join(out) + "\n"


def _exact_markdown(fig8) -> list[str]:
    """Figure 8's one-traversal NCR means against their exact E[NCR] (Hoeffding, Holm)."""
    check = exact_agreement([{"dataset": r["dataset"], "epsilon": r["epsilon"],
                              "method": r["method"], "mean": r["ncr"],
                              "exact": r.get("exact_ncr"), "trials": r["trials"],
                              "se": r["ncr_se"]} for r in fig8])
    if not check["cells"]:
        return []
    bad = check["significant"]
    lines = ["", f"Exact E[NCR] (`svtjax.exact`; one traversal, the only setting with an exact "
             f"law: more traversals re-read the stream): {len(check['cells'])} cells, each "
             "run mean tested against it with Hoeffding's bound for [0, 1] variables (valid "
             f"for any law of NCR), Holm at {check['alpha']:g}; it flags gaps above "
             f"{check['median_detectable_gap']:.3f} (median), so it catches gross errors only. "
             f"Largest |z| (normal approximation, for reading) {check['max_abs_z']:.2f}; "
             f"{len(bad)} cell(s) beyond the bound" + (":" if bad else "."), ""]
    lines += [f"* {c['dataset']} ε={c['epsilon']:g} {c['method']}: runs {c['mean']:.4f}, "
              f"exact {c['exact']:.4f}, p = {c['p']:.2g}" for c in bad]
    return lines


def write_outputs(res, config: Config, seconds: float, log=print) -> str:
    os.makedirs(config.out, exist_ok=True)
    for key in ("table5", "fig3", "fig4", "fig5a", "fig5", "fig6", "fig7", "fig8"):
        _write_csv(res.get(key, []), os.path.join(config.out, f"{key}.csv"))
    pngs = plot(res, config.out)
    table = evaluate(claims(res, config), config.out, explain=claim_notes(res, config))
    text = summary_markdown(res, config, seconds, table)
    with open(os.path.join(config.out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    log(text)
    log(f"[liu2024] wrote CSVs, claims.csv, summary.md and {len(pngs)} PNG(s) to {config.out}")
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
