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

Figures 7 and 8 run on the sweep engine (``svtjax.sweep``): per dataset one sweep for Figure 7
(every Table 3 method × ε; the upper bounds are ``report-noisy-max`` with exponential noise,
``monotonic=True, k=c, epsilon=c·ε2``, i.e. the top c of s_i + Exp(Δ/ε2), and ``epsilon=ε2/2``
for SVT-Exp's own scale 2cΔ/ε2) and one for Figure 8 (the SVT methods × ``max_passes`` × ε),
see :func:`fig7_sweep` / :func:`fig8_sweep`. Every point is seeded by the engine from
``--seed`` and the point; methods do not share random numbers, so comparisons use the standard
errors of independent estimates. Finished points are kept in ``<out>/sweep/fig7|fig8/
<dataset>/`` with the engine's tidy ``results.csv`` and reused by a rerun. Rows are grouped by
(point id, label): two tables can be one computation (on Adult the upper bound at ε and the
SVT-noise upper bound at 10ε), and both labels are reported.

Paper sizes: 100 runs per point as the paper (standard error of an NCR mean at most 0.05,
typically 0.01-0.03).

Outputs (``--out``, default ``results/liu2024/``): ``table5.csv``, ``fig3.csv``, ``fig4.csv``,
``fig5a.csv``, ``fig5.csv``, ``fig6.csv``, ``fig7.csv`` (NCR and F1 with standard errors),
``fig8.csv``, ``table5.png``, one PNG per figure and dataset, ``claims.csv`` and
``summary.md``.

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

from ._claims import Claim, Part, best, const, evaluate, markdown, ref
from ._common import (  # noqa: E402
    enable_cache,
    exact_agreement,
    experiment_parser,
    fit_unit_axis,
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
#: SVT-Exp (optimal) under the reading Table 5's numbers match (the monotonic rate ε2/(cΔ) and
#: the split (2c)^(2/3), "H1" of the Table 5 notes), beside Algorithm 2 as printed (the general
#: rate ε2/(2cΔ), Table 4's split): Figure 8 runs both on ``fig8_sensitivity``.
H1 = "SVT-Exp (optimal, H1)"
H1_PARAMS = {"noise": "exponential", "correction": "optimal", "monotonic": True,
             "allocation": "1:(2c)^(2/3)"}

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


# --quick: one dataset, two ε, Figure 8 at the Figure 7 traversal count (no extra compiles).
QUICK = dict(datasets=("t40i10d100k",), epsilons=(0.5, 2.0), passes=2, fig8_passes=(2,),
             fig8_epsilons=(0.5,), trials=20)


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


def fig5a(eps: float = 0.1, points: int = 121) -> list[dict[str, Any]]:
    """Figure 5(a): the density of Z = X − Y, X ~ Exp(mean 1/ε2) (query noise), Y ~ Lap(1/ε1)
    (threshold noise), ε1 = ε2 = ε/2 (Eq. 8's Γ is its CDF; the caption names the two the other
    way round), by numerical convolution (scipy quad), with the CDF from
    ``svtjax.correction.difference_cdf`` beside it."""
    import math

    import numpy as np
    from scipy import integrate

    from svtjax import correction
    from svtjax.noise import Exponential, Laplace

    mu, b = 2 / eps, 2 / eps
    zs = np.linspace(-6 * b, 8 * mu, points)
    rows = []
    for z in zs:
        kink = max(float(z), 0.0)  # the Laplace density's kink at x = z
        # the densities written out (x >= 0 here): scipy.stats' frozen pdfs cost ~50 us a call,
        # and quad calls this ~400 times per z
        f = lambda x, z=z: math.exp(-x / mu) / mu * math.exp(-abs(x - z) / b) / (2 * b)  # noqa: E731
        pdf = (integrate.quad(f, 0.0, kink, limit=200)[0] if kink > 0 else 0.0) + \
            integrate.quad(f, kink, np.inf, limit=200)[0]
        cdf = float(correction.difference_cdf(float(z), Exponential(mu), Laplace(b)))
        rows.append({"z": float(z), "pdf": pdf, "cdf": cdf, "epsilon": eps,
                     "exp_mean": mu, "laplace_scale": b})
    return rows


def fig6(loaded) -> list[dict[str, Any]]:
    """Figure 6: every loaded dataset's item scores in descending order, with its Table 2
    threshold (rank, score, threshold per row)."""
    import numpy as np

    rows = []
    for name, data in loaded.items():
        threshold, c, _ = _setting(data)
        s = np.sort(np.asarray(data.scores, dtype=np.float64))[::-1]
        imputed = int(data.metadata.get("imputed_items") or 0)
        for rank, score in enumerate(s, 1):
            rows.append({"dataset": name, "rank": rank, "score": float(score),
                         "threshold": threshold, "c": c, "imputed_items": imputed})
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
    p = dict(METHODS.get(label, H1_PARAMS), c=c, append=True, max_passes=passes)
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
    tables = [{"name": "svt-exp", "label": label, **_params(label, c, m, config.passes, delta),
               "epsilon": [float(e) for e in config.epsilons]} for label in SVT_METHODS]
    for eps in config.epsilons:
        eps2 = _eps2(float(eps), c)
        for label, eps_rnm in ((UPPER, c * eps2), (UPPER_SVT, eps2 / 2)):
            tables.append({"name": "report-noisy-max", "label": _upper_label(label, float(eps)),
                           "noise": "exponential", "monotonic": True, "epsilon": eps_rnm})
    return {"sweep": _sweep_head(config, "fig7", name, threshold),
            "grid": {"c": [c]}, "mechanisms": tables}


def fig8_sweep(config: Config, name: str, data) -> dict[str, Any]:
    """The ``svtjax.sweep`` config of Figure 8 on one dataset: the SVT methods × traversals."""
    threshold, c, delta = _setting(data)
    m = len(data.scores)
    passes = [int(p) for p in config.fig8_passes]
    # exact E[NCR] (svtjax.exact) where the law is exact: one traversal
    return {"sweep": {**_sweep_head(config, "fig8", name, threshold), "exact": True},
            "grid": {"epsilon": [float(e) for e in (
                config.fig8_epsilons if name in config.fig8_sensitivity
                else config.fig8_epsilons[:1])], "c": [c]},
            "mechanisms": [{"name": "svt-exp", "label": label,
                            **_params(label, c, m, passes, delta)} for label in SVT_METHODS
                           + ((H1,) if name in config.fig8_sensitivity else ())]}


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
        if "exact_ncr" in r:  # a sweep with exact columns (Figure 8)
            p["exact_ncr"] = r["exact_ncr"]
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
                           "fig4": fig4(), "fig5a": fig5a(), "fig5": fig5(),
                           "fig6": fig6(loaded)}
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


def _save(plt, fig, out, name, paths):
    p = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)


METHOD_STYLE = {"SVT-Exp (optimal)": ("tab:red", "o", "-"),
                "SVT-Exp (mean)": ("tab:orange", "s", "-"),
                "SVT-Exp (no)": ("tab:brown", "x", "-"), "SVT-Gumbel": ("tab:green", "^", "-"),
                "SVT-Lap": ("tab:blue", "v", "-"), "SVT-Gau": ("tab:purple", "D", "-"),
                UPPER: ("k", "*", "--"), UPPER_SVT: ("gray", "P", ":"),
                H1: ("tab:pink", "o", "--")}


def plot(res, out) -> list[str]:
    """Every figure: Table 5 (the paper's terms beside ours), Figures 3, 4, 5(a-d), 6, 7 (NCR
    and F1), 8; log axes where values span decades, integer ticks for traversals, legends
    beside the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    paths: list[str] = []
    t5 = res["table5"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    eps = [r["epsilon"] for r in t5]
    a1.loglog(eps, [r["paper_optimal"] for r in t5], "ko", mfc="none", ms=8,
              label="paper, Table 5 (optimal)")
    a1.loglog(eps, [r["optimal_h1_k200"] for r in t5], "r^-", ms=5,
              label="ours: H1, k = 200")
    a1.loglog(eps, [r["optimal_h1_fit"] for r in t5], "rs:", ms=5, mfc="none",
              label="ours: H1, k fitted per ε")
    a1.loglog(eps, [r["optimal_alg2_k200"] for r in t5], "bv--", ms=5,
              label="ours: Alg. 2 as printed, k = 200")
    a2.loglog(eps, [r["paper_mean"] for r in t5], "ko", mfc="none", ms=8,
              label="paper, Table 5 (mean)")
    a2.loglog(eps, [r["mean_h1"] for r in t5], "r^-", ms=5, label="ours: H1 (52.32/ε)")
    a2.loglog(eps, [r["mean_alg2"] for r in t5], "bv--", ms=5,
              label="ours: Alg. 2 as printed")
    for ax, what in ((a1, "optimal correction r^op"), (a2, "mean correction")):
        ax.set(xlabel="ε", ylabel=what, title=f"Table 5 (c = 50, α = 0): {what}")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    _save(plt, fig, out, "table5.png", paths)

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for m in dict.fromkeys(r["method"] for r in res["fig3"]):
        rs = [r for r in res["fig3"] if r["method"] == m]
        ax.semilogy([r["alpha"] for r in rs], [max(r["beta"], 1e-16) for r in rs], label=m)
    ax.set(xlabel="α", ylabel="β = 1 − p(r) (log)", title="Fig. 3: (α, β)-accuracy, k = 50, "
           "ε = 1")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    _save(plt, fig, out, "fig3.png", paths)

    fig, ax = plt.subplots(figsize=(6, 3.8))
    for fam in dict.fromkeys(r["noise"] for r in res["fig4"]):
        rs = [r for r in res["fig4"] if r["noise"] == fam]
        ax.loglog([r["epsilon"] for r in rs], [r["variance"] for r in rs], label=fam)
    ax.set(xlabel="ε", ylabel="minimal V (Eq. 6)", title="Fig. 4: c = 50")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    _save(plt, fig, out, "fig4.png", paths)

    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    a5 = res["fig5a"]
    axes[0].plot([r["z"] for r in a5], [r["pdf"] for r in a5], label="density of Z")
    ax_c = axes[0].twinx()
    ax_c.plot([r["z"] for r in a5], [r["cdf"] for r in a5], "k:", lw=1, label="CDF Γ")
    ax_c.set_ylabel("Γ(z)")
    axes[0].set(xlabel="z", ylabel="density",
                title=f"Fig. 5(a): Z = Exp(1/ε2) − Lap(1/ε1), ε = {a5[0]['epsilon']:g}")
    axes[0].legend(fontsize=7, loc="upper left")
    ax_c.legend(fontsize=7, loc="center right")
    for ax, panel in zip(axes[1:], "bcd"):
        rs = [r for r in res["fig5"] if r["panel"] == panel]
        for v in dict.fromkeys(r["value"] for r in rs):
            sub = [r for r in rs if r["value"] == v]
            line, = ax.plot([r["r"] for r in sub], [r["p"] for r in sub],
                            label=f"{sub[0]['varied']} = {v:g}")
            ax.axvline(sub[0]["mean"], ls="--", lw=0.6, color=line.get_color())
        ax.set_yscale("log")  # the curves' peaks differ by orders of magnitude
        ax.set_ylim(max(max(r["p"] for r in rs) * 1e-4, 1e-300), max(r["p"] for r in rs) * 2)
        ax.set(xlabel="r", ylabel="p(r) (log)", title=f"Fig. 5({panel})")
        ax.legend(fontsize=7)
    _save(plt, fig, out, "fig5.png", paths)

    if res.get("fig6"):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for i, ds in enumerate(dict.fromkeys(r["dataset"] for r in res["fig6"])):
            rs = [r for r in res["fig6"] if r["dataset"] == ds]
            pos = [r for r in rs if r["score"] > 0]
            zeros = len(rs) - len(pos)
            imputed = rs[0]["imputed_items"]
            line, = ax.loglog([r["rank"] for r in pos], [r["score"] for r in pos], lw=1.2,
                              label=f"{ds} ({len(rs)} items"
                                    + (f"; the {imputed} lowest imputed" if imputed else "")
                                    + (f"; {zeros} with score 0 not shown on the log axis"
                                       if zeros else "") + f"; T = {rs[0]['threshold']:g})")
            # a dash pattern per dataset: equal thresholds (Zipf's, Adult's) stay visible
            ax.axhline(rs[0]["threshold"], color=line.get_color(), lw=1.2,
                       ls=(i * 3, (6, 6 + 3 * i)))
        ax.set(xlabel="item rank (descending score)", ylabel="score",
               title="Fig. 6: item scores; dashed: Table 2 thresholds")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="lower left")
        _save(plt, fig, out, "fig6.png", paths)

    for metric in ("ncr", "f1"):
        for ds in dict.fromkeys(r["dataset"] for r in res["fig7"]):
            fig, ax = plt.subplots(figsize=(7.2, 3.8))
            for m in SVT_METHODS + (UPPER, UPPER_SVT):
                rs = sorted((r for r in res["fig7"] if r["dataset"] == ds and r["method"] == m),
                            key=lambda r: r["epsilon"])
                color, marker, ls = METHOD_STYLE[m]
                ax.errorbar([r["epsilon"] for r in rs], [r[metric] for r in rs],
                            yerr=[2 * r[f"{metric}_se"] for r in rs], color=color,
                            marker=marker, ls=ls, ms=4, capsize=2, label=m)
            ax.set_xscale("log")
            grid = sorted({r["epsilon"] for r in res["fig7"] if r["dataset"] == ds})
            ax.set_xticks(grid)
            ax.set_xticklabels([f"{e:g}" for e in grid])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set(xlabel="ε", ylabel=f"{metric.upper()} (± 2 SE)",
                   title=f"Fig. 7 ({metric.upper()}): {ds}")
            fit_unit_axis(ax, [r[metric] for r in res["fig7"] if r["dataset"] == ds])
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=6.5, loc="center left", bbox_to_anchor=(1.01, 0.5),
                      frameon=False)
            _save(plt, fig, out, f"fig7_{metric}_{ds}.png", paths)
    for ds in dict.fromkeys(r["dataset"] for r in res["fig8"]):
        epss = sorted({r["epsilon"] for r in res["fig8"] if r["dataset"] == ds})
        fig, axes = plt.subplots(1, len(epss), figsize=(4.2 * len(epss) + 2, 3.8),
                                 squeeze=False)
        for ax, e in zip(axes[0], epss):
            for m in SVT_METHODS + (H1,):
                rs = sorted((r for r in res["fig8"] if r["dataset"] == ds
                             and r["method"] == m and r["epsilon"] == e),
                            key=lambda r: r["passes"])
                color, marker, ls = METHOD_STYLE[m]
                ax.errorbar([r["passes"] for r in rs], [r["ncr"] for r in rs],
                            yerr=[2 * r["ncr_se"] for r in rs], color=color, marker=marker,
                            ls=ls, ms=4, capsize=2, label=m)
                ex = [(r["passes"], r["exact_ncr"]) for r in rs
                      if r.get("exact_ncr") is not None]
                if ex:  # one traversal: the exact E[NCR] of svtjax.exact
                    ax.plot(*zip(*ex), color=color, marker="_", ms=16, mew=2, ls="none",
                            label="exact E[NCR] (a bar per method)" if m == SVT_METHODS[0]
                            else None)
            ticks = sorted({r["passes"] for r in res["fig8"] if r["dataset"] == ds})
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(t) for t in ticks])
            fit_unit_axis(ax, [r["ncr"] for r in res["fig8"]
                               if r["dataset"] == ds and r["epsilon"] == e])
            ax.set(xlabel="traversals", ylabel="NCR (± 2 SE)",
                   title=f"Fig. 8: {ds}, ε = {e:g}" + ("\n(bars: exact E[NCR], one traversal)"
                                                       if any(r.get("exact_ncr") is not None
                                                              for r in res["fig8"]
                                                              if r["dataset"] == ds) else ""))
            ax.grid(alpha=0.3)
        axes[0][-1].legend(fontsize=6.5, loc="center left", bbox_to_anchor=(1.01, 0.5),
                           frameon=False)
        _save(plt, fig, out, f"fig8_{ds}.png", paths)
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


SEED = "seed 000_1a5bc23d8ed4c914.txt"
NCR_BOUND = 0.005  # two NCRs both within this of 0 or 1: at the bound, not evidence


def _ref7(r, file="fig7.csv", col="ncr"):
    keys = ("dataset", "epsilon", "passes", "method") if file == "fig8.csv" else (
        "dataset", "epsilon", "method")
    return ref(file, col, col + "_se", **{k: r[k] for k in keys})


def _by_cell(rows, *keys):
    out: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), {})[r["method"]] = r
    return out


def _missing(res, rows=None) -> str:
    """The paper's datasets a claim's rows leave out, and why."""
    ran = {r["dataset"] for r in (res["fig7"] if rows is None else rows)}
    gone = res.get("missing", {})
    return ", ".join(f"{k} ({'not available offline' if k in gone else 'not run'})"
                     for k in DEFAULT_DATASETS if k not in ran)


def _ncr_claim(cid, words, line, quantity, tolerance, parts, res, **kw) -> Claim:
    ds = sorted({r["dataset"] for r in res["fig7"]})
    return Claim(cid, words, f"Liu et al. 2024, {kw.pop('where', 'Sec. 5.5.1, Fig. 7')}",
                 f"{SEED} line {line}", quantity, tolerance,
                 kw.pop("covers", "Fig. 7: every dataset and ε run (" + ", ".join(ds) + ")"),
                 parts, excluded=kw.pop("excluded", _missing(res)), bounds=(0.0, 1.0),
                 bound_margin=NCR_BOUND, **kw)


def claims(res, config: Config) -> list[Claim]:
    """Liu'24's statements (Table 5, Secs. 4.2-4.3, 5.5.1-5.5.3), declared on the protocol
    (``experiments._claims``): every number a reference into this experiment's CSVs."""
    out = []
    t5 = res["table5"]
    mean = Part("within", "all", rel=5e-4)
    for r in t5:
        mean.add(f"ε={r['epsilon']:g}", ref("table5.csv", "mean_h1", epsilon=r["epsilon"]),
                 const(r["paper_mean"]))
    out.append(Claim(
        "liu-t5-mean", "Mean\t5332.08\t1046.42\t523.21\t52.32\t26.16",
        "Liu et al. 2024, Table 5, Mean row (c = 50, α = 0)", f"{SEED} line 468",
        "the mean of the query noise under the monotonic rate ε2/(cΔ) and the split "
        "ε2 = (2c)^(2/3) ε1 (H1)", "each entry within 0.05% of the printed value",
        "all five ε", [mean], paper="5332.08, 1046.42, 523.21, 52.32, 26.16",
        note="the paper's 5332.08 at ε = 0.01 is 5232.08 with one digit changed"))
    k_ref = next((r for r in t5 if r["epsilon"] == 1.0), None)
    ks = Part("within", "all", rel=0.05)
    for r in t5:
        if k_ref is not None and r is not k_ref:
            ks.add(f"k at ε={r['epsilon']:g} vs ε=1", ref("table5.csv", "fit_k_h1",
                                                          epsilon=r["epsilon"]),
                   ref("table5.csv", "fit_k_h1", epsilon=1.0))
    out.append(Claim(
        "liu-t5-optimal", "Optimal\t35450.45\t7147.15\t2803.30\t280.78\t138.89",
        "Liu et al. 2024, Table 5, Optimal row (r^op of Eq. 9, k = ⌊m/c⌋)", f"{SEED} line 467",
        "the k at which H1's r^op matches each printed entry (one setting must give all five: "
        "r^op ∝ 1/ε exactly)", "each ε's fitted k within 5% of the k fitted at ε = 1",
        "all five ε", [ks], paper="35450.45, 7147.15, 2803.30, 280.78, 138.89"))
    big = Part("greater", "most")
    for r in t5:
        big.add(f"ε={r['epsilon']:g}", ref("table5.csv", "optimal_h1_k200", epsilon=r["epsilon"]),
                ref("table5.csv", "mean_h1", epsilon=r["epsilon"]))
    out.append(Claim(
        "liu-t5-larger", "the optimal term is usually larger than the mean of the injected noise",
        "Liu et al. 2024, Sec. 5.5.2, Table 5", f"{SEED} line 470",
        "r^op (H1, k = 200) against the noise mean (H1)",
        "r^op above the mean at more than half of Table 5's ε ('usually')", "all five ε",
        [big], paper="optimal > mean"))
    f3 = {(r["method"], r["alpha"]): r for r in res["fig3"]}
    lowest = Part("greater", "all")
    others3 = [m for m in dict.fromkeys(r["method"] for r in res["fig3"])
               if m != "SVT-Exp (optimal)"]
    for a in sorted({r["alpha"] for r in res["fig3"]}):
        lowest.add(f"α={a:g}", best(*(ref("fig3.csv", "beta", method=m, alpha=a)
                                      for m in others3), lowest=True),
                   ref("fig3.csv", "beta", method="SVT-Exp (optimal)", alpha=a))
    out.append(Claim(
        "liu-fig3", "the value of β of Algorithm 2 is consistently below that of other baselines "
        "for a fixed α", "Liu et al. 2024, Sec. 4.2, Fig. 3", f"{SEED} line 275",
        "β (Theorem 4's failure probability, k = 50, ε = 1) at each α of Fig. 3",
        "SVT-Exp (optimal)'s β below the lowest other β at every α (exact numbers); both β "
        "within 1e-9 of 0 or 1 is at the bound",
        "every α of Fig. 3", [lowest] if f3 else [], bounds=(0.0, 1.0), bound_margin=1e-9))
    small = Part("greater", "all")
    for e in sorted({r["epsilon"] for r in res["fig4"]}):
        fam = sorted({r["noise"] for r in res["fig4"] if r["epsilon"] == e} - {"exponential"})
        small.add(f"ε={e:g}", best(*(ref("fig4.csv", "variance", epsilon=e, noise=n)
                                     for n in fam), lowest=True),
                  ref("fig4.csv", "variance", epsilon=e, noise="exponential"))
    out.append(Claim(
        "liu-fig4", "exponential noise yields the smallest variance on the private comparison "
        "result", "Liu et al. 2024, Sec. 4.2, Fig. 4", f"{SEED} line 290",
        "the minimal variance V of the private comparison (exact) at each ε of Fig. 4",
        "exponential's V below every other family's at every ε", "ε from 0.01 to 2",
        [small]))
    first: dict[tuple, dict] = {}
    for r in res["fig5"]:
        first.setdefault((r["panel"], r["value"]), r)
    for panel, line, words, sign in (
            ("b", 344, "an increasing number of negative queries (k) leads to a larger "
             "threshold correction term", +1),
            ("c", 348, "an increase in the error tolerance parameter α results in a higher "
             "success probability and a smaller threshold correction term", -1),
            ("d", 350, "an increase in the privacy budget results in a smaller threshold "
             "correction term", -1)):
        rows = [first[k] for k in sorted(k for k in first if k[0] == panel)]
        trend = Part("greater", "all")
        for lo, hi in zip(rows, rows[1:]):
            a, b = (hi, lo) if sign > 0 else (lo, hi)
            trend.add(f"{lo['value']:g} → {hi['value']:g}",
                      *(ref("fig5.csv", "r_op", panel=panel, value=x["value"], r=x["r"])
                        for x in (a, b)))
        out.append(Claim(
            f"liu-fig5{panel}", words, f"Liu et al. 2024, Sec. 4.3.2, Fig. 5({panel})",
            f"{SEED} line {line}", f"r^op at each {rows[0]['varied'] if rows else 'value'} "
            "of the panel (exact)", "r^op strictly monotone between every adjacent pair",
            f"the values of Fig. 5({panel})", [trend]))
    fig7 = [r for r in res["fig7"] if r["method"] in SVT_METHODS]
    cells = _by_cell(fig7, "dataset", "epsilon")

    def pairs(a_of, b_of, margin=0.0, quantifier="all"):
        part = Part("greater", quantifier, margin=margin)
        for (ds, e), by in sorted(cells.items()):
            a, b = a_of(by), b_of(by)
            if a is not None and b is not None:
                part.add(f"{ds} ε={e:g}", a, b)
        return part

    def one(m):
        return lambda by: _ref7(by[m]) if m in by else None

    def best_of(ms):
        return lambda by: best(*(_ref7(by[m]) for m in ms if m in by)) if any(
            m in by for m in ms) else None

    others = SVT_METHODS[1:]
    words7 = ("our proposed method (*i.e.*, SVT-Exp (optimal correction), shown with "
              "red-circle line) significantly outperforms others baselines by up to 50% on NCR "
              "across all tested privacy regions and datasets")
    out.append(_ncr_claim(
        "liu-fig7-best", words7, 460, "NCR of SVT-Exp (optimal) minus the best other SVT "
        "method's, per (dataset, ε)", "SVT-Exp (optimal) significantly above the best other "
        "SVT method in every cell (z-test, Holm over every cell); both NCRs within 0.005 of 0 "
        "or 1 is at the bound", [pairs(one("SVT-Exp (optimal)"), best_of(others))], res))
    out.append(_ncr_claim(
        "liu-fig7-50", words7, 460, "the largest NCR gain of SVT-Exp (optimal) over the best "
        "other SVT method", "the gain above 0.35 in some cell, and below 0.65 in every cell "
        "(both significantly; Holm over both parts' cells)",
        [pairs(one("SVT-Exp (optimal)"), best_of(others), 0.35, "any"),
         pairs(best_of(others), one("SVT-Exp (optimal)"), -0.65)], res))
    for upper, cid, name in ((UPPER_SVT, "liu-fig7-upper-svt", "with SVT-Exp's own noise"),
                             (UPPER, "liu-fig7-upper", "with Exp(Δ/ε2) as Table 3 prints")):
        part = Part("within", "all", tol=0.10)
        for r in res["fig7"]:
            ours = cells.get((r["dataset"], r["epsilon"]), {}).get("SVT-Exp (optimal)")
            if r["method"] == upper and ours:
                part.add(f"{r['dataset']} ε={r['epsilon']:g}", _ref7(r), _ref7(ours))
        out.append(_ncr_claim(
            cid, "compared to other baselines, the performance of our proposed method closely "
            "matches the empirical SVT-Exp upper bound", 462,
            f"NCR of the upper bound ({name}) minus SVT-Exp (optimal)'s",
            "|gap| <= 0.10 NCR in every cell, shown by two one-sided tests (Holm over every "
            "cell)", [part], res))
    order = Part("greater", "all")
    for hi, lo in (("SVT-Lap", "SVT-Gumbel"), ("SVT-Gumbel", "SVT-Gau")):
        for (ds, e), by in sorted(cells.items()):
            if hi in by and lo in by:
                order.add(f"{ds} ε={e:g} {hi} > {lo}", _ref7(by[hi]), _ref7(by[lo]))
    out.append(_ncr_claim(
        "liu-fig7-order", "the NCR of other baselines decreases from SVT-Lap, SVT-Gumbel, to "
        "SVT-Gau", 462, "NCR differences SVT-Lap − SVT-Gumbel and SVT-Gumbel − SVT-Gau",
        "each difference significantly positive in every cell (Holm over both pairs and every "
        "cell)", [order], res))
    out.append(_ncr_claim(
        "liu-fig7-no", "SVT-Exp without correction demonstrates relatively low NCR even "
        "compared to, *e.g.*, SVT-Lap", 470, "NCR of SVT-Lap minus SVT-Exp (no)",
        "SVT-Lap significantly above SVT-Exp (no) in more than half the cells",
        [pairs(one("SVT-Lap"), one("SVT-Exp (no)"), quantifier="most")], res,
        where="Sec. 5.5.2, Fig. 7"))
    out.append(_ncr_claim(
        "liu-fig7-drastic", "SVT-Exp with our optimal correction terms drastically outperforms "
        "SVT-Exp with mean correction", 470, "NCR of SVT-Exp (optimal) minus SVT-Exp (mean)",
        "significantly positive in every cell", [pairs(one("SVT-Exp (optimal)"),
                                                       one("SVT-Exp (mean)"))], res,
        where="Sec. 5.5.2, Fig. 7"))
    out.append(_ncr_claim(
        "liu-fig7-mean", "SVT-Exp with mean correction, which slightly outperforms the other "
        "baselines", 470, "NCR of SVT-Exp (mean) minus the best of SVT-Gumbel, SVT-Lap, SVT-Gau",
        "significantly positive in more than half the cells (the paper gives no quantifier)",
        [pairs(one("SVT-Exp (mean)"), best_of(("SVT-Gumbel", "SVT-Lap", "SVT-Gau")),
               quantifier="most")], res, where="Sec. 5.5.2, Fig. 7"))
    for cid, words in (
            ("liu-gap-advantage", "our method shows a particular larger advantage when the gaps "
             "between predefined threshold and query results are relatively large"),
            ("liu-gap-robust", "all compared variants, including ours, demonstrate higher NCR "
             "on datasets where the gaps between the threshold and query results are large "
             "even under smaller privacy budget")):
        out.append(_ncr_claim(cid, words, 462, "a measure of 'gap' (the paper gives none)",
                              "none can be stated: the paper defines no measure of the gap",
                              [], res, excluded="the Kosarak example (not available offline)"))
    return out + _fig8_claims(res, config)


def _fig8_claims(res, config: Config) -> list[Claim]:
    """Fig. 8 at each ε run: 'better across most datasets under all tested traverse numbers'
    (per dataset, every traversal count; most datasets) and the T40I10D100K crossover."""
    out = []
    cells = _by_cell(res["fig8"], "dataset", "epsilon", "passes")
    others = SVT_METHODS[1:]
    for eps in sorted({r["epsilon"] for r in res["fig8"]}):
        per_ds: dict[str, Part] = {}
        for (ds, e, p), by in sorted(cells.items()):
            if e == eps and "SVT-Exp (optimal)" in by:
                per_ds.setdefault(ds, Part("greater", "all", name=ds)).add(
                    f"{ds} {p} traversal(s)", _ref7(by["SVT-Exp (optimal)"], "fig8.csv"),
                    best(*(_ref7(by[m], "fig8.csv") for m in others if m in by)))
        if len(per_ds) >= 2 or eps == config.fig8_epsilons[0]:
            out.append(_ncr_claim(
                f"liu-fig8-most-eps{eps:g}", "our proposed method performs better across most "
                "datasets under all tested traverse numbers", 472,
                f"NCR of SVT-Exp (optimal) minus the best other SVT method at ε = {eps:g}, per "
                "dataset and traversal count", "per dataset: significantly above at every "
                "traversal count; more than half the datasets (Holm over every dataset and "
                "count)", list(per_ds.values()), res, where="Sec. 5.5.3, Fig. 8",
                covers=f"Fig. 8 at ε = {eps:g} (the paper's ε is not stated): "
                + ", ".join(per_ds), across="most",
                excluded=_missing(res, [r for r in res["fig8"] if r["epsilon"] == eps])))
        for ours, tag in (("SVT-Exp (optimal)", ""), (H1, "-h1")):
            out += _t40_claim(cells, eps, ours, tag, res)
    return out


def _t40_claim(cells, eps, ours, tag, res) -> list[Claim]:
    """Sec. 5.5.3's T40I10D100K crossover at ``eps`` for ``ours`` (Algorithm 2 as printed, or
    the H1 reading) against the best other SVT method; none for an H1 that did not run."""
    others = SVT_METHODS[1:]
    t40 = sorted((p, by) for (ds, e, p), by in cells.items()
                 if ds == "t40i10d100k" and e == eps and ours in by)
    if tag and not t40:
        return []
    behind, ahead = Part("greater", "all", name="behind"), Part("greater", "any", name="ahead")
    if len(t40) >= 2:
        p0, by0 = t40[0]
        behind.add(f"{p0} traversal(s)", best(*(_ref7(by0[m], "fig8.csv") for m in others)),
                   _ref7(by0[ours], "fig8.csv"))
        for p, by in t40[1:]:
            if p < 5:
                ahead.add(f"{p} traversal(s)", _ref7(by[ours], "fig8.csv"),
                          best(*(_ref7(by[m], "fig8.csv") for m in others)))
    reading = (" — the H1 reading (monotonic rate ε2/(cΔ), split (2c)^(2/3), which Table 5's "
               "numbers match)" if tag else " — Algorithm 2 as printed (rate ε2/(2cΔ))")
    return [_ncr_claim(
        f"liu-fig8-t40{tag}-eps{eps:g}", "our method shows slight inferiority on the "
        "T40I10D100K dataset under a very small number of traverses ... our method outperforms "
        "the others on the T4010D100K dataset with only a few more traverses (e.g., less than "
        "5)", "472, 479", f"NCR of {ours} minus the best other SVT method on T40I10D100K at "
        f"ε = {eps:g}{reading}", "behind significantly at the fewest traversals run, and "
        "significantly ahead at some count below 5 (Holm over both parts)",
        [behind, ahead] if len(t40) >= 2 else [], res, where="Sec. 5.5.3, Fig. 8",
        covers=f"T40I10D100K at ε = {eps:g}, traversals " + ", ".join(str(p) for p, _ in t40),
        excluded="")]


def claim_notes(res, config: Config) -> dict[str, str]:
    """Reading aids for the explanations (never used by a verdict)."""
    notes = {"liu-t5-optimal": "r^op ∝ 1/ε exactly under one setting, so r^op·ε must be "
             "constant; the paper's is 354.5 at ε <= 0.05 and about 280 above: see the Table 5 "
             "notes", "liu-fig7-upper": "this bound ranks s_i + Exp(Δ/ε2), about 2c times less "
             "noise than SVT-Exp's queries get"}
    for eps, tag in ((e, t) for e in config.fig8_epsilons for t in ("", "-h1")):
        notes[f"liu-fig8-t40{tag}-eps{eps:g}"] = (
            f"{_t40_margins(res)}; Figure 8's ε is not stated in the paper's text (run at "
            + ", ".join(f"{e:g}" for e in config.fig8_epsilons) + ")")
    return notes


def _t40_margins(res) -> str:
    """How far T40I10D100K's top scores are from its threshold (from ``fig6``)."""
    rows = [r for r in res.get("fig6", []) if r["dataset"] == "t40i10d100k"]
    if not rows:
        return "T40I10D100K's scores were not loaded"
    t, c = rows[0]["threshold"], rows[0]["c"]
    above = [r["score"] for r in rows if r["score"] >= t]
    s_c = rows[c - 1]["score"]
    return (f"on T40I10D100K only {len(above)} items reach T = {t:,.0f} (the {c}th scores "
            f"{s_c:,.0f}), the lowest of them by {min(above) - t:,.0f}" if above else
            f"no T40I10D100K item reaches T = {t:,.0f}")


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
