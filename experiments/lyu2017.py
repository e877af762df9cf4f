"""Lyu, Su, Li 2017 (PVLDB 10(6)), Figure 3 / Table 3: SER of SVT variants and EM for top-c.

Reproduces Section 5's comparison: the support error rate (SER, mean and standard deviation over
runs, each run with a fresh random item order) of

* SVT-DPBook (Algorithm 2, Dwork & Roth 2014),
* SVT-S (Algorithm 7, monotonic version of Sec. 4.3) with budget allocations 1:1, 1:3, 1:c and
  1:c^(2/3),
* SVT-ReTr (Sec. 4.4 / 5: threshold raised by one query-noise scale D, ``raise_by=1``, and the
  unselected items retraversed, at most ``max_passes=10`` passes) with 1:1 and 1:c^(2/3) (the
  two allocations the paper's Table 3 reports),
* EM (exponential mechanism applied c times at ε/c, picked items removed; monotonic counts),

for c in {25, 50, ..., 300} and ε in {0.1, 0.5}. Queries are item supports (count queries,
sensitivity 1, monotonic); the threshold is the mean of the c-th and (c+1)-th largest supports
(``svtjax.datasets.lyu_threshold``).

Datasets: the paper's Table 1 datasets (BMS-POS, Kosarak, AOL) are not shipped; they are reported
as missing until ``svtjax.datasets.fetch(name)`` has put them in the cache, after which this
script runs them and prints and draws the paper's Table 3 beside ours. Offline, it runs Lyu's
zipf (``lyu-zipf``: 1,000,000 records over 10,000 items as the slides describe, supports about
102,170/i, not Liu et al.'s 10,000/i ``zipf``), retail, T40I10D100K and BMS-WebView-1 (no paper
values; the checks there are the paper's stated findings).

Checks (``summary.md``, ``claims.csv``): every statement of Sec. 5 with the paper's number,
ours, the tolerance and the verdict; the ranking check over every adjacent-tier pair of every
cell; where ReTr-1:c^(2/3) beats EM, the "flat supports near the c-th item" explanation tested
on synthetic profiles that vary only the flatness (:func:`flatness_check`); Table 3 beside ours;
the runs against the exact E[SER].

**One test for every SER comparison** (the claims, the ranking check, the Table 3 comparison,
the exact check, the flatness test; :func:`ser_z`): z = (difference of the two means) / SE,
SE² = std_a²/n_a + std_b²/n_b (independent runs; an exact value or a paper's printed mean has
its own SE or none), two-sided normal p-value, Holm's step-down procedure at family-wise error
rate 0.05 over the whole family (a claim's comparisons; each check's cells). This is the
claims protocol's own comparison (``experiments._claims.compare``), so every verdict is
recomputable from the CSVs. SER lies in [0, 1], so a mean over n runs is asymptotically
normal; the approximation fails where the runs pile at a bound of that support (SER mostly 0,
rarely large: a 20-run mean then sits ~3.6 SE below its exact value without any error), so a
mean with fewer than ``OFF_BOUND_MIN`` = 10 runs provably off the nearer bound
(:func:`runs_off_bound`, a Cauchy-Schwarz bound from the mean, std and n) is **not evidence**
("at bound" in the claims, "piled" in the checks), never judged by a tail it does not have.
Not used, and why: a bootstrap needs the per-run values, which the sweep does not keep; the
exact binomial (Hoeffding 1963) bound for [0, 1] variables cannot confirm even the paper's own
Kosarak DPBook 0.705 ± 0.05 at 100 runs (it flags only gaps above ~0.11). Every check lists its
comparisons with |z| > 3, significant or not, beside the number expected under normality.

Runs on the sweep engine (``svtjax.sweep``): one sweep per dataset, one compilation per method
structure, every cell seeded from ``--seed`` and the cell; finished cells are kept in
``<out>/sweep/<dataset>/`` (with the engine's tidy ``results.csv``), so a rerun resumes. The
flatness test runs on ``svtjax.simulate`` (its profiles are not registered datasets).

Exact curves: the four SVT-S methods have an exact expected SER in random order
(``svtjax.exact``: the selection law integrated over the threshold noise and a uniform item
order, no sampling), computed beside the sweep in float64 for every SVT-S cell, the cells of
one c in one call (:func:`exact_sers`, kept in ``<out>/sweep/<dataset>/exact_ser.json``). The
figures draw it as the method's line with the runs' means as markers, ``ser.csv`` has it as
``exact_ser``, and the summary tests every run mean against it (:func:`exact_check`, Holm).

Cost: what a cold run spends is mostly compiling. The sweep compiles one chunk per method
structure and dataset; EM's 12 values of c share one (``svtjax.sweep.picks``: c traced, the
same picks bit for bit); the exact law compiles once per (dataset, c) and runs as svtjax's
compiled float64 kernels.

Outputs (``--out``, default ``results/lyu2017/``): ``ser.csv`` (one row per dataset, ε, c,
method, with the exact E[SER] where there is one and the paper's Table 3 cell where there is
one), ``fig3_<dataset>_eps<ε>.png`` (SER against c, one line per method, as Figure 3, the
paper's values beside ours when its datasets ran), ``flatness.csv`` / ``flatness.png`` (the
flatness test), ``claims.csv`` and ``summary.md`` (claims table, ranking check, flatness test,
Monte Carlo against exact, Table 3 beside ours).

Paper sizes: 100 runs per cell as the paper (standard error of a mean SER = std/10, at most
0.05 and below 0.01 for most cells); the flatness test uses 400 runs per profile (SE of a
difference about 0.005 at the profiles' SER spread).

Modules: this one runs the experiment (the sweeps, the exact values, the flatness test) and
writes its outputs; ``_lyu_data`` holds the methods, the grid and the paper's Table 3,
``_lyu_checks`` the SER test and the checks, ``_lyu_claims`` the claims, ``_lyu_report`` the
CSV, the figures and the summary. Every public name is importable from here.

Usage::

    svtjax reproduce lyu2017 --quick          # seconds: lyu-zipf + retail, c 25/50, ε 0.5
    svtjax reproduce lyu2017 --paper          # 100 runs per cell, as the paper (default)
    svtjax reproduce lyu2017 --trials 1000 --datasets lyu-zipf kosarak
"""

from __future__ import annotations

import csv
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
    holm,
    load_available,  # noqa: F401 (the tests reach it here)
    sweep_dataset,
)
from ._lyu_checks import (  # noqa: F401 (re-exported: the experiment's checks)
    FWER,
    LARGE_Z,
    OFF_BOUND_MIN,
    SATURATED,
    SER_TEST,
    _exact_markdown,
    exact_check,
    large_z,
    local_exponent,
    piled,
    ranking_check,
    runs_off_bound,
    ser_z,
    table3_comparison,
)
from ._lyu_claims import ALLOC_TOL, LYU_DATASETS, claims, ser_columns  # noqa: F401
from ._lyu_data import (  # noqa: F401
    DEFAULT_DATASETS,
    EXACT_ACCURACY,
    METHODS,
    OFFLINE_DATASETS,
    PAPER_CS,
    PAPER_DATASETS,
    PAPER_EPSILONS,
    PAPER_TRIALS,
    SVT_S,
    TABLE3,
)
from ._lyu_report import plot, report, table3_markdown, write_csv  # noqa: F401


@dataclasses.dataclass
class Config:
    datasets: Sequence[str] = DEFAULT_DATASETS
    cs: Sequence[int] = PAPER_CS
    epsilons: Sequence[float] = PAPER_EPSILONS
    methods: Sequence[str] = tuple(METHODS)
    trials: int = PAPER_TRIALS
    seed: int = 0
    out: str = os.path.join("results", "lyu2017")
    cache_dir: Optional[str] = None  # dataset cache (default: svtjax.datasets.cache_dir())
    verbose: bool = True
    alpha: float = 0.05  # family-wise error rate of the ranking check and Table 3 comparison
    flatness: bool = True  # run the flat-supports test (flatness_check)
    flat_exponents: Sequence[float] = (0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)
    flat_ratios: Sequence[float] = (1.0, 3.0)  # s_c·ε/(cΔ)
    flat_items: int = 1000
    flat_c: int = 100
    # c/n = 30%: the regime of the observed EM reversals (c/n >= 27%, local exponents up to 4.8)
    flat_wide_cs: Sequence[int] = (300,)
    flat_trials: int = 400


QUICK = dict(datasets=("lyu-zipf", "retail"), cs=(25, 50), epsilons=(0.5,), trials=20,
             flat_exponents=(0.2, 2.0), flat_ratios=(1.0,), flat_items=200, flat_c=20,
             flat_trials=40, flat_wide_cs=())


# ---------------------------------------------------------------------------------------------
# Simulation
# ---------------------------------------------------------------------------------------------


def sweep_config(config: Config, name: str, cs: Sequence[int],
                 dataset_kwargs: Optional[dict] = None) -> dict[str, Any]:
    """The ``svtjax.sweep`` grid of one dataset: every method x ε x c, SER, shuffled trials."""
    entry = sweep_dataset(name, config.cache_dir, **(dataset_kwargs or {}))
    # no exact columns here: the SVT-S cells' exact E[SER] is computed beside the sweep, in
    # float64 (:func:`exact_sers`)
    return {
        "sweep": {"name": f"lyu2017-{name}", "trials": config.trials, "seed": config.seed,
                  "datasets": [entry], "metrics": ["ser"], "shuffle": True, "threshold": "lyu"},
        "grid": {"epsilon": [float(e) for e in config.epsilons], "c": [int(c) for c in cs]},
        "mechanisms": [{"name": METHODS[m][0], "label": m, **METHODS[m][1]}
                       for m in config.methods],
    }


EXACT_FILE = "exact_ser.json"
"""Per dataset, under ``<out>/sweep/<dataset>/``: the exact E[SER] of its SVT-S cells (with what
they were computed with), reused by a rerun."""


def exact_sers(config: Config, name: str, scores, cs: Sequence[int],
               folder: Optional[str] = None, ids: Optional[dict] = None
               ) -> dict[tuple[float, int, str], float]:
    """The exact E[SER] (``svtjax.exact.expected_metrics_many``, random order, no sampling) of
    every SVT-S cell of one dataset: (ε, c, method) -> E[SER].

    Computed in float64 (the sweep runs its trials in float32; float64 on a CPU runs the
    random-order recursions as svtjax's compiled kernels, and rounds at ~1e-16 instead of
    ~1e-6) on the quadrature rule ``EXACT_ACCURACY`` (``kink_tol = 1e-4``: it moves E[SER] by
    at most ~1e-10, against standard errors of ~1e-3 for the run means it is compared with;
    benchmarks/RESULTS.md, Decisions). The cells of one c (every SVT-S allocation and ε) share
    a threshold and a cut-off, so they are one call. Kept in ``folder``/``EXACT_FILE`` (with the
    rule and the number of items), each value under its cell's sweep point id (``ids``: (ε, c,
    method) -> the point's content hash, which changes with svtjax's code), and reused when
    those match."""
    import json

    import jax

    import svtjax
    from svtjax import exact

    methods = [m for m in config.methods if METHODS[m][0] == "svt-s"]
    if not methods:
        return {}
    scores = np.asarray(scores, np.float64)
    meta = {"accuracy": dict(EXACT_ACCURACY), "n": int(scores.shape[0]), "dtype": "float64"}
    path = None if folder is None else os.path.join(folder, EXACT_FILE)
    kept: dict[str, float] = {}
    if path is not None and os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                saved = json.load(f)
            if saved.get("meta") == meta:
                kept = {k: float(v) for k, v in saved["values"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            kept = {}
    ids = ids or {}

    def key(eps, c, m):
        return f"{m}|{float(eps)!r}|{int(c)}|{ids.get((float(eps), int(c), m), '')}"

    out: dict[tuple[float, int, str], float] = {}
    wanted = {key(e, c, m) for c in cs for m in methods for e in config.epsilons}
    for c in cs:
        cells = [(float(e), m) for m in methods for e in config.epsilons]
        todo = [(e, m) for e, m in cells if key(e, c, m) not in kept]
        if todo:
            threshold = svtjax.datasets.lyu_threshold(scores, c)
            mechs = [svtjax.get("svt-s", epsilon=e, c=int(c), **METHODS[m][1]) for e, m in todo]
            with jax.enable_x64(True), jax.default_device(jax.local_devices(backend="cpu")[0]):
                rules = [exact.quadrature(m, scores, threshold, **EXACT_ACCURACY) for m in mechs]
                values = exact.expected_metrics_many(mechs, scores, threshold, shuffle=True,
                                                     c=int(c), rules=rules)
            for (e, m), v in zip(todo, values):
                kept[key(e, c, m)] = float(v["ser"])
            if path is not None:
                os.makedirs(folder, exist_ok=True)
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    json.dump({"meta": meta, "values": {k: v for k, v in kept.items()
                                                        if k in wanted}},
                              f, indent=0, sort_keys=True)
                os.replace(path + ".tmp", path)
        for e, m in cells:
            out[(e, int(c), m)] = kept[key(e, c, m)]
    return out


def run(config: Config, log=print) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Runs every (dataset, ε, c, method) cell; returns (rows, missing datasets).

    Each dataset is one ``svtjax.sweep`` (one compilation per method structure, a seed per
    cell derived from ``config.seed`` and the cell); finished cells are kept under
    ``<out>/sweep/<dataset>/points``, so an interrupted reproduction resumes where it stopped.
    """
    from svtjax import sweep

    loaded, missing = load_available(config.datasets, config.cache_dir)
    for name, why in missing.items():
        log(f"[lyu2017] {name}: MISSING ({why})")
    order = {m: i for i, m in enumerate(config.methods)}
    rows = []
    for name, data in loaded.items():
        cs = [c for c in config.cs if c < len(data.scores)]
        if not cs:
            continue
        start_ds = time.perf_counter()
        result = sweep.run(sweep_config(config, name, cs),
                           os.path.join(config.out, "sweep", name),
                           log=log if config.verbose else (lambda msg: None))
        start_exact = time.perf_counter()
        exact = exact_sers(config, name, data.scores, cs, os.path.join(config.out, "sweep", name),
                           {(float(r["epsilon"]), int(r["c"]), r["label"]): r["point_id"]
                            for r in result.rows})
        if config.verbose and exact:
            log(f"[lyu2017] {name}: exact E[SER] of {len(exact)} SVT-S cells, "
                f"{time.perf_counter() - start_exact:.1f}s")
        for r in result.rows:
            std = r["std"] if math.isfinite(r["std"]) else 0.0  # one run: no spread
            rows.append({"dataset": name, "epsilon": r["epsilon"], "c": r["c"],
                         "method": r["label"], "ser_mean": r["mean"], "ser_std": std,
                         "trials": r["trials"], "threshold": float(r["threshold"]),
                         "seconds": r["seconds"],
                         "exact_ser": exact.get((float(r["epsilon"]), int(r["c"]), r["label"]))})
        if config.verbose:
            log(f"[lyu2017] {name}: {len(cs)} c x {len(config.epsilons)} eps x "
                f"{len(config.methods)} methods, {config.trials} runs each, "
                f"{time.perf_counter() - start_ds:.1f}s ({result.reused} cells reused)")
    rows.sort(key=lambda r: (list(loaded).index(r["dataset"]), r["c"], r["epsilon"],
                             order[r["method"]]))
    return rows, missing


# ---------------------------------------------------------------------------------------------
# Is the ReTr-over-EM reversal explained by flat supports near the c-th item? A test on
# synthetic profiles that vary only the flatness.
# ---------------------------------------------------------------------------------------------
FLAT_EPSILON = 0.5  # the profiles' ε (only s_c·ε/c matters; Config.flat_ratios sets it)
FLAT_METHODS = ("SVT-ReTr-1:c^(2/3)", "EM")


def flat_profile(exponent: float, ratio: float, n: int = 1000, c: int = 100,
                 epsilon: float = FLAT_EPSILON) -> np.ndarray:
    """s_i = s_c·(c/i)^a, i = 1..n, with s_c = ratio·c/ε: a power law through the c-th item.

    ``exponent`` a is the local flatness (the log-slope of the supports at the c-th item: a = 0
    flat, a = 1 Zipf); ``ratio`` fixes the c-th support relative to the noise scale c/ε that
    EM and SVT-ReTr-1:c^(2/3) share, the only scale SER depends on (scaling every support by λ
    and ε by 1/λ leaves SER's distribution unchanged). Only the flatness varies along a.
    """
    s_c = ratio * c / epsilon
    return s_c * (c / np.arange(1, n + 1, dtype=np.float64)) ** exponent


def _ser_moments(out, scores, c):
    """Per-trial (SER, SER²) for ``simulate``'s ``reduce`` (c bound by :func:`_ser_reducer`)."""
    import svtjax

    ser = svtjax.metrics.ser(svtjax.selected(out, c), scores, c)
    return ser, ser * ser


_REDUCERS: dict[int, Any] = {}


def _ser_reducer(c: int, scores):
    """``simulate``'s reducer of SER moments at top-c size c: one function object per c (a
    static part of the compiled chunk) with the scores bound as a traced argument, so every
    profile of one size reuses one compiled chunk."""
    import jax

    if c not in _REDUCERS:
        def moments(scores, out):
            return _ser_moments(out, scores, c)
        _REDUCERS[c] = moments
    return jax.tree_util.Partial(_REDUCERS[c], scores)


def flatness_check(config: "Config", log=print) -> dict[str, Any]:
    """SER of SVT-ReTr-1:c^(2/3) and EM on :func:`flat_profile` profiles (every exponent and
    ratio), ``config.flat_trials`` shuffled runs each, and the verdict on the conjecture that
    flat supports near the c-th item let ReTr edge ahead of EM.

    The conjecture predicts SER(ReTr) − SER(EM) < 0 on the flattest profiles and > 0 on the
    steep ones. Each difference is one comparison of the SER test (:func:`ser_z`, two-sided,
    Holm at ``FWER`` over all profiles; a profile with a side piled at a bound of SER is not
    tested); the conjecture is *supported* if ReTr is significantly better on some flat profile
    (a <= 0.5) and significantly worse on some steep one (a >= 1), with no significant
    difference of the other sign at those ends, and *not supported* otherwise.
    """
    import jax.numpy as jnp

    import svtjax

    rows = []
    seed = int(config.seed)
    cs = [config.flat_c] + [c for c in config.flat_wide_cs if c < config.flat_items]
    grid = [(c, ratio, a) for c in cs for ratio in config.flat_ratios
            for a in config.flat_exponents]
    for c, ratio, a in grid:
        scores = flat_profile(a, ratio, config.flat_items, c, FLAT_EPSILON)
        threshold = svtjax.datasets.lyu_threshold(scores, c)
        q = jnp.asarray(scores)
        row = {"exponent": float(a), "ratio": float(ratio), "n": config.flat_items,
               "c": c, "epsilon": FLAT_EPSILON, "trials": config.flat_trials}
        for label in FLAT_METHODS:
            name, params = METHODS[label]
            mech = svtjax.get(name, epsilon=FLAT_EPSILON, c=c, **params)
            seed += 1
            total, total2 = svtjax.simulate(
                mech, q, threshold, trials=config.flat_trials, seed=seed, shuffle=True,
                reduce=_ser_reducer(c, q))
            n = config.flat_trials
            mean = float(total) / n
            var = max(float(total2) / n - mean * mean, 0.0) * n / max(n - 1, 1)
            key = "retr" if label.startswith("SVT-ReTr") else "em"
            row[f"{key}_ser"], row[f"{key}_se"] = mean, math.sqrt(var / n)
            row[f"{key}_piled"] = piled(mean, math.sqrt(var), n)
        row["diff"] = row["retr_ser"] - row["em_ser"]
        row["diff_se"] = math.hypot(row["retr_se"], row["em_se"])
        rows.append(row)
        if config.verbose:
            log(f"[lyu2017] flatness c={c} a={a:g} ratio={ratio:g}: ReTr {row['retr_ser']:.4f}, "
                f"EM {row['em_ser']:.4f}")
    tested = [r for r in rows if not (r["retr_piled"] or r["em_piled"])]
    for r in rows:
        r["z"], r["p"] = ser_z(r["diff"], r["diff_se"])
        r["significant"] = r["retr_better"] = r["retr_worse"] = False
    for r, rejected in zip(tested, holm([r["p"] for r in tested], FWER)):
        r["significant"] = rejected
        r["retr_better"], r["retr_worse"] = rejected and r["z"] < 0, rejected and r["z"] > 0
    flat = [r for r in rows if r["exponent"] <= 0.5]
    steep = [r for r in rows if r["exponent"] >= 1.0]
    supported = (any(r["retr_better"] for r in flat) and any(r["retr_worse"] for r in steep)
                 and not any(r["retr_worse"] for r in flat)
                 and not any(r["retr_better"] for r in steep))
    n_better = sum(r["retr_better"] for r in rows)
    where = ", ".join(f"a = {r['exponent']:g} (ratio {r['ratio']:g}, c/n = "
                      f"{r['c'] / r['n']:.0%})" for r in rows
                      if r["retr_better"]) or "no profile"
    if supported:
        explanation = ("consistent with flat supports near the c-th item: on synthetic profiles "
                       f"that vary only the flatness, ReTr beats EM at {where} and loses on "
                       "the steep ones (see the flatness section)")
    else:
        explanation = ("NOT explained by flat supports near the c-th item: on synthetic "
                       "profiles that vary only the flatness (see the flatness section) ReTr "
                       f"is significantly better than EM at {where}, which does not follow the "
                       "flat/steep pattern the conjecture predicts; the cause is unknown")
    return {"rows": rows, "supported": supported, "n_better": n_better,
            "explanation": explanation}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = experiment_parser(
        "lyu2017", __doc__.splitlines()[0],
        quick="seconds: lyu-zipf + retail, c 25/50, ε 0.5, 20 runs; a small flatness test",
        paper="the paper's grid, 100 runs (default)",
        trials="runs per cell and per flatness profile (default: 100 and 400)",
        out=os.path.join("results", "lyu2017"))
    parser.add_argument("--datasets", nargs="+", help=f"default: {' '.join(DEFAULT_DATASETS)}")
    parser.add_argument("--no-flatness", action="store_true",
                        help="skip the flat-supports test on synthetic profiles")
    args = parser.parse_args(argv)

    config = Config(**(QUICK if args.quick else {}), out=args.out, seed=args.seed)
    if args.trials is not None:  # every run count: the cells and the flatness profiles
        config.trials = config.flat_trials = args.trials
    if args.datasets:
        config.datasets = tuple(args.datasets)
    if args.no_flatness:
        config.flatness = False
    enable_cache("lyu2017")
    start = time.perf_counter()
    rows, missing = run(config)
    flat = flatness_check(config) if config.flatness else None
    seconds = time.perf_counter() - start
    write_outputs(rows, missing, config, seconds, flat=flat)
    return 0


def write_outputs(rows, missing, config: Config, seconds: float, log=print,
                  flat: Optional[dict[str, Any]] = None) -> str:
    os.makedirs(config.out, exist_ok=True)
    write_csv(rows, os.path.join(config.out, "ser.csv"))
    if flat:
        with open(os.path.join(config.out, "flatness.csv"), "w", newline="",
                  encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(flat["rows"][0]), lineterminator="\n")
            w.writeheader()
            w.writerows(flat["rows"])
    pngs = plot(rows, config.out, flat)
    table = evaluate(claims(rows), config.out)
    text = report(rows, missing, config, seconds, flat, table)
    md = os.path.join(config.out, "summary.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write(text)
    log(text)
    log(f"[lyu2017] wrote {os.path.join(config.out, 'ser.csv')}, {md}, claims.csv and "
        f"{len(pngs)} PNG(s)")
    return text


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
