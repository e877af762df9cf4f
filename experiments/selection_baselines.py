"""Selection baselines beside SVT-Exp on Liu et al. 2024's Figure 7 settings (beyond the papers).

**Beyond the papers.** None of the four source papers runs these baselines, and none states a
number or a claim about them here; every verdict of this experiment is a check of a *theory*
(an identity in law proved elsewhere) or of *our own hypothesis*, declared before the runs and
labelled as such, never a claim of the four papers.

Liu, Wang, Liu, Li, Chen 2024 (PVLDB 18(2)) build SVT-Exp on exponential query noise and cite,
in their related work (Sec. 6), the selection mechanisms that use exponential-type noise:
permute-and-flip (McKenna & Sheldon, NeurIPS 2020, their reference [32]), its identity with
report-noisy-max under exponential noise (Ding, Kifer, Saghaian, Steinke, Wang, Xiao, Zhang
2021, arXiv:2105.07260, their [10]) and one-shot top-k with Gumbel noise (Durfee & Rogers,
NeurIPS 2019, their [12]). This experiment runs them on the settings of Liu's Figure 7 (NCR and
F1 against ε) beside SVT-Exp with the optimal correction and report-noisy-max:

* datasets, thresholds and c of Liu's Table 2 / Figure 7 (``svtjax.datasets`` metadata
  ``thresholds["liu24"]``): Binary, Zipf, T40I10D100K, Adult offline (c = 50, Adult 5), BMS-POS
  and Kosarak when ``svtjax.datasets.fetch`` has cached them; ε ∈ {0.01, 0.05, 0.1, 0.5, 1, 2};
  items shuffled per run (the grids are ``experiments.liu2024``'s);
* ``SVT-Exp (optimal)``: ``svt-exp`` exactly as ``liu2024`` runs Figure 7 (exponential query
  noise, optimal correction with k = ⌊m/c⌋, APPEND with 10 traversals, Algorithm 2's general
  rate, Table 4's split);
* the selection mechanisms release the top c at the same total ε (every one ε-DP by its
  ``privacy()``, printed in the summary), general (non-monotonic) scales like SVT-Exp's:
  ``report-noisy-max`` (one-shot, Laplace noise, Ding et al. 2019 Algorithm 1 without gaps),
  ``permute-and-flip`` and ``report-noisy-max-exp`` (c rounds at ε/c, picks removed),
  ``gumbel-top-k`` (one-shot, Gumbel noise) and ``em-peeling`` (c rounds of the exponential
  mechanism at ε/c), the last being the mechanism Gumbel top-k equals in law. (In svtjax both
  run one Gumbel kernel, and permute-and-flip and report-noisy-max-exp one sampler
  (``svtjax/mechanisms/_peeled.py``), because their laws are equal: the two identity claims
  exercise the mechanisms' parameters, k and ε/k against c and ε/c, on independent seeds at
  full size; the exact-law tests of the test suite check each law against the papers'
  definitions.)

Claims (``_claims``; ``python -m experiments.verify OUT`` recomputes them from the CSVs):

* ``sb-pf-rnmexp`` — theory (Ding et al. 2021): permute-and-flip ≡ report-noisy-max-exp in
  law, round by round, so their NCR and F1 agree at every (dataset, ε). Tolerance fixed
  beforehand: |difference| ≤ 1/c (the average weight of one of the c top items in NCR; one item
  in F1), shown by two one-sided tests, Holm over all comparisons of the claim.
* ``sb-gumbel-em`` — theory (Durfee & Rogers 2019): one-shot Gumbel top-k ≡ c rounds of the
  exponential mechanism (``em-peeling``) in law; same test and tolerance.
* ``sb-pf-vs-em`` — our hypothesis, extrapolated from McKenna & Sheldon's single-selection
  result (permute-and-flip's expected score is never below the exponential mechanism's) to
  peeled top-c: permute-and-flip's NCR is not significantly below em-peeling's at any
  (dataset, ε) and above it somewhere; cells where both NCRs are within 0.005 of 0 or 1 are at
  the bound (no evidence).

Methods do not share random numbers (each point is seeded by the sweep engine from ``--seed``
and the point), so comparisons use the standard errors of independent estimates.

Outputs (``--out``, default ``results/selection_baselines/``): ``selection_baselines.csv``
(NCR and F1 with standard errors per dataset, ε and method, with each mechanism's privacy
statement), ``selection_baselines.png``, ``claims.csv``, ``claims_comparisons.csv`` and
``summary.md``; the sweeps' tidy results under ``sweep/<dataset>/`` (a rerun resumes).

Usage::

    python -m experiments.selection_baselines --quick   # Adult, ε 0.01 and 0.1, 50 runs
    python -m experiments.selection_baselines --paper   # every dataset and ε, 400 runs
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import sys
import time
from typing import Any, Optional, Sequence

if not __package__:  # run as a script, ``python experiments/NAME.py``: import as the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "experiments"  # noqa: A001
    import experiments  # noqa: F401,E402

from . import liu2024  # noqa: E402  (Figure 7's grids and SVT-Exp's parameters, read only)
from ._claims import Claim, Part, evaluate, markdown, ref  # noqa: E402
from ._common import (  # noqa: E402
    enable_cache,
    experiment_parser,
    fit_unit_axis,
    group_rows,
    load_available,
    sweep_dataset,
)

NAME = "selection_baselines"
BEYOND = "beyond the papers"
FILE = "selection_baselines.csv"
SVT_EXP = "SVT-Exp (optimal)"
#: label -> (registered mechanism, parameters); the selection mechanisms take k (c for
#: em-peeling) from the sweep's grid axis c, so each releases the top c.
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    SVT_EXP: ("svt-exp", dict(liu2024.METHODS[SVT_EXP])),
    "report-noisy-max (Laplace)": ("report-noisy-max", {"noise": "laplace"}),
    "permute-and-flip": ("permute-and-flip", {}),
    "report-noisy-max-exp": ("report-noisy-max-exp", {}),
    "gumbel-top-k": ("gumbel-top-k", {}),
    "em-peeling": ("em-peeling", {}),
}
STYLE = {SVT_EXP: ("tab:red", "o", "-"), "report-noisy-max (Laplace)": ("tab:blue", "v", "-"),
         "permute-and-flip": ("tab:green", "^", "-"), "report-noisy-max-exp": ("k", "x", ":"),
         "gumbel-top-k": ("tab:purple", "s", "-"), "em-peeling": ("tab:orange", "+", ":")}
PAPER_TRIALS = 400
NCR_BOUND = 0.005  # two NCRs both within this of 0 or 1: at the bound, not evidence


@dataclasses.dataclass
class Config:
    datasets: Sequence[str] = liu2024.DEFAULT_DATASETS
    epsilons: Sequence[float] = liu2024.PAPER_EPSILONS
    passes: int = liu2024.Config.passes  # SVT-Exp's traversals, as in Liu's Figure 7
    trials: int = PAPER_TRIALS
    seed: int = 0
    out: str = os.path.join("results", NAME)
    cache_dir: Optional[str] = None
    verbose: bool = True


# --quick: Adult (123 items, c = 5: the smallest compile), at ε 0.01 where the selection
# mechanisms still miss items (at 0.1 they pick Adult's top 5 almost always), 50 runs.
QUICK = dict(datasets=("adult",), epsilons=(0.01, 0.1), passes=2, trials=50)


# ---------------------------------------------------------------------------------------------
# The runs: one svtjax.sweep per dataset
# ---------------------------------------------------------------------------------------------
def _setting(data) -> tuple[float, int]:
    """(threshold, c) of Liu's Table 2 / Figure 7 for a dataset."""
    liu = data.metadata["thresholds"]["liu24"]
    return float(liu["threshold"]), int(liu["c"])


def sweep_config(config: Config, name: str, data) -> dict[str, Any]:
    """The ``svtjax.sweep`` config of one dataset: every method × ε at Liu's c and threshold."""
    threshold, c = _setting(data)
    m = len(data.scores)
    tables = []
    for label, (mech, params) in METHODS.items():
        p = dict(params)
        if mech == "svt-exp":  # as experiments.liu2024 runs Figure 7
            p.update(append=True, max_passes=int(config.passes), correction_k=max(1, m // c))
        tables.append({"name": mech, "label": label, **p})
    return {"sweep": {"name": f"{NAME}-{name}", "trials": config.trials, "seed": config.seed,
                      "datasets": [sweep_dataset(name, config.cache_dir)],
                      "metrics": ["ncr", "f1", "picks"], "shuffle": True,
                      "threshold": threshold},
            "grid": {"epsilon": [float(e) for e in config.epsilons], "c": [c]},
            "mechanisms": tables}


def _privacy(label: str, eps: float, c: int, m: int, passes: int) -> str:
    import svtjax

    mech, params = METHODS[label]
    p = dict(params, epsilon=eps)
    if mech == "svt-exp":
        p.update(c=c, append=True, max_passes=passes, correction_k=max(1, m // c))
    else:
        p["c" if mech == "em-peeling" else "k"] = c
    return str(svtjax.get(mech, **p).privacy())


def run(config: Config, log=print) -> dict[str, Any]:
    """Every (dataset, ε, method) point; returns {"rows": [...], "missing": {...}}."""
    import jax

    from svtjax import sweep

    loaded, missing = load_available(config.datasets, config.cache_dir)
    for name, why in missing.items():
        log(f"[{NAME}] {name}: MISSING ({why})")
    rows = []
    for name, data in loaded.items():
        start = time.perf_counter()
        threshold, c = _setting(data)
        m = len(data.scores)
        result = sweep.run(sweep_config(config, name, data),
                           os.path.join(config.out, "sweep", name),
                           log=log if config.verbose else (lambda msg: None))
        for by in group_rows(result.rows, "point_id", "label").values():
            r = next(iter(by.values()))
            label, eps = r["label"], float(r["epsilon"])
            row = {"dataset": name, "epsilon": eps, "method": label,
                   "mechanism": METHODS[label][0], "c": c, "threshold": threshold,
                   "passes": config.passes if label == SVT_EXP else 1,
                   "trials": int(r["trials"])}
            for metric in ("ncr", "f1", "picks"):
                se = float(by[metric]["se"])
                row[metric] = float(by[metric]["mean"])
                row[f"{metric}_se"] = se if math.isfinite(se) else 0.0  # one trial
            row["seconds"] = float(r["seconds"])
            row["privacy"] = _privacy(label, eps, c, m, config.passes)
            rows.append(row)
        if config.verbose:
            log(f"[{NAME}] {name}: {time.perf_counter() - start:.1f}s")
        jax.clear_caches()  # each dataset size compiles its own kernels
    order = {label: i for i, label in enumerate(METHODS)}
    rows.sort(key=lambda r: (r["dataset"], r["epsilon"], order[r["method"]]))
    return {"rows": rows, "missing": missing}


# ---------------------------------------------------------------------------------------------
# Claims: declared before the numbers are read; every verdict by experiments._claims.judge
# ---------------------------------------------------------------------------------------------
def _cells(rows) -> list[tuple[str, float, int]]:
    """(dataset, ε, c) of every cell run, in table order."""
    return list(dict.fromkeys((r["dataset"], r["epsilon"], r["c"]) for r in rows))


def _identity(cid: str, a: str, b: str, theory: str, source: str, cells, covers) -> Claim:
    parts = []
    for metric in ("ncr", "f1"):
        for ds in dict.fromkeys(d for d, _, _ in cells):
            c = next(cc for d, _, cc in cells if d == ds)
            part = Part("within", "all", tol=1.0 / c, name=f"{metric.upper()}, {ds} (tol 1/{c})")
            for d, eps, _ in cells:
                if d == ds:
                    part.add(f"{metric.upper()} {ds} ε={eps:g}",
                             ref(FILE, metric, f"{metric}_se", dataset=ds, epsilon=eps, method=a),
                             ref(FILE, metric, f"{metric}_se", dataset=ds, epsilon=eps, method=b))
            parts.append(part)
    return Claim(
        cid, f"[{BEYOND}; theory, not a claim of the four papers] {a} is identical in law to {b} "
        f"({theory}), so their NCR and F1 agree at every (dataset, ε) run",
        f"{BEYOND}: theory ({theory}); Liu et al. 2024, Fig. 7 settings", source,
        f"NCR and F1 of {a} minus those of {b}, per (dataset, ε)",
        "fixed before the runs: |difference| <= 1/c (c = the dataset's top-c size: the average "
        "weight of one of the c top items in NCR, one item in F1), shown by two one-sided tests "
        "at family-wise 0.05 (Holm over every comparison of the claim)",
        covers, parts, paper=f"no paper number ({BEYOND}); the theory predicts a difference of 0",
        family=f"{cid}: NCR and F1 at every (dataset, ε)", bounds=(0.0, 1.0))


def claims(rows, missing: Sequence[str] = ()) -> list[Claim]:
    """The three claims of the module docstring, over the cells in ``rows`` (``missing``: the
    datasets of the grid that could not be loaded, named in the coverage text; the claims are
    ours and declared over the cells run, so they do not count as exclusions)."""
    cells = _cells(rows)
    covers = "every (dataset, ε) run: " + ", ".join(dict.fromkeys(d for d, _, _ in cells)) + (
        "; not run (not available offline): " + ", ".join(missing) if missing else "")
    out = [
        _identity("sb-pf-rnmexp", "permute-and-flip", "report-noisy-max-exp",
                  "Ding, Kifer, Saghaian, Steinke, Wang, Xiao, Zhang 2021: permute-and-flip "
                  "is identical to report-noisy-max with exponential noise; peeled, round by "
                  "round", "arXiv:2105.07260, title and main theorem", cells, covers),
        _identity("sb-gumbel-em", "gumbel-top-k", "em-peeling",
                  "Durfee & Rogers 2019: one-shot top-k with Gumbel noise has the law of k "
                  "rounds of the exponential mechanism, picks removed",
                  "Durfee & Rogers, NeurIPS 2019", cells, covers)]
    part = Part("greater", "none against", name="NCR, every (dataset, ε)")
    for ds, eps, _ in cells:
        part.add(f"NCR {ds} ε={eps:g}",
                 ref(FILE, "ncr", "ncr_se", dataset=ds, epsilon=eps, method="permute-and-flip"),
                 ref(FILE, "ncr", "ncr_se", dataset=ds, epsilon=eps, method="em-peeling"))
    out.append(Claim(
        "sb-pf-vs-em", f"[{BEYOND}; our hypothesis, not a claim of the four papers] peeled "
        "permute-and-flip's NCR is not below em-peeling's at any (dataset, ε) run, and above it "
        "somewhere (extrapolated from McKenna & Sheldon 2020: \"The expected score of our "
        "mechanism is always at least as large as the exponential mechanism\", one selection)",
        f"{BEYOND}: our hypothesis; McKenna & Sheldon, NeurIPS 2020, abstract; Liu et al. 2024, "
        "Fig. 7 settings", "McKenna & Sheldon, NeurIPS 2020, abstract (one selection only)",
        "NCR of permute-and-flip minus NCR of em-peeling, per (dataset, ε)",
        "fixed before the runs: a difference significantly below 0 (two-sided z-test, Holm at "
        "family-wise 0.05 over every cell) contradicts it, significantly above 0 supports it; "
        "a cell where both NCRs are within 0.005 of 0 or 1 is at the bound (no evidence)",
        covers, [part], paper=f"no paper number ({BEYOND}); McKenna & Sheldon prove it for "
        "k = 1 in expected score, not for peeled top-c NCR", family="sb-pf-vs-em: NCR at every "
        "(dataset, ε)", bounds=(0.0, 1.0), bound_margin=NCR_BOUND))
    return out


def claim_notes(rows) -> dict[str, str]:
    """Reading aids for the explanations (never read by the verdicts): how many cells of each
    identity are uninformative because both sides sit at NCR 0 or 1."""
    by = {(r["dataset"], r["epsilon"], r["method"]): r for r in rows}
    notes = {}
    for cid, a, b in (("sb-pf-rnmexp", "permute-and-flip", "report-noisy-max-exp"),
                      ("sb-gumbel-em", "gumbel-top-k", "em-peeling")):
        cells = _cells(rows)
        edge = sum(all(min(by[(d, e, x)]["ncr"], 1 - by[(d, e, x)]["ncr"]) <= NCR_BOUND
                       for x in (a, b)) for d, e, _ in cells)
        notes[cid] = (f"{edge} of {len(cells)} cells have both NCRs within {NCR_BOUND} of 0 or 1,"
                      " where agreement says little about the identity")
    return notes


# ---------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------
def _write_csv(rows, path) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r)) or ["dataset"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=keys, lineterminator="\n")
        w.writeheader()
        w.writerows({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()}
                    for r in rows)


TITLE = (f"Selection baselines beside SVT-Exp, Liu et al. 2024 Fig. 7 settings ({BEYOND}: "
         "no paper reports these curves)")


def plot(rows, out) -> Optional[str]:
    """NCR (top row) and F1 (bottom row) against ε per dataset, every method, ± 2 SE."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    if not datasets:
        return None
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.0 * len(datasets) + 2.5, 6.6),
                             squeeze=False)
    for j, ds in enumerate(datasets):
        at = [r for r in rows if r["dataset"] == ds]
        grid = sorted({r["epsilon"] for r in at})
        for i, metric in enumerate(("ncr", "f1")):
            ax = axes[i][j]
            for label in METHODS:
                rs = sorted((r for r in at if r["method"] == label), key=lambda r: r["epsilon"])
                color, marker, ls = STYLE[label]
                ax.errorbar([r["epsilon"] for r in rs], [r[metric] for r in rs],
                            yerr=[2 * r[f"{metric}_se"] for r in rs], color=color,
                            marker=marker, ls=ls, ms=4, capsize=2, label=label)
            ax.set_xscale("log")
            ax.set_xticks(grid)
            ax.set_xticklabels([f"{e:g}" for e in grid])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set(xlabel="ε", ylabel=f"{metric.upper()} (± 2 SE)",
                   title=f"{ds} (c = {at[0]['c']}): {metric.upper()}")
            fit_unit_axis(ax, [r[metric] for r in at])
            ax.grid(alpha=0.3, which="both")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.suptitle(TITLE, fontsize=9)
    fig.tight_layout()
    path = os.path.join(out, "selection_baselines.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def summary_markdown(res, config: Config, seconds: float, table) -> str:
    rows = res["rows"]
    out = [f"# Selection baselines beside SVT-Exp ({BEYOND})", "",
           f"**{BEYOND.capitalize()}.** No paper of the four reports these curves or states a "
           "claim about them. The rows below check identities in law proved elsewhere (theory) "
           "and one hypothesis of ours, each declared before the runs; none is a claim of the "
           "four papers.", "",
           f"Settings: Liu et al. 2024's Figure 7 (Table 2 thresholds and c, items shuffled per "
           f"run); SVT-Exp (optimal) with {config.passes} traversals (APPEND) as in "
           "`liu2024`; the selection mechanisms release the top c at the same total ε, general "
           "(non-monotonic) scales. "
           f"Runs per point: {config.trials}; seed {config.seed}; wall time {seconds:.1f}s.", ""]
    if res["missing"]:
        out += ["Missing datasets (not available offline, not run): " + ", ".join(
            f"{k} ({v})" for k, v in res["missing"].items()), ""]
    out += [f"## Claims checked ({BEYOND})", "", markdown(table), "",
            "## NCR (± SE) per dataset and ε", ""]
    labels = list(METHODS)
    out += ["| dataset | ε | " + " | ".join(labels) + " |",
            "|---|---|" + "---|" * len(labels)]
    by = {(r["dataset"], r["epsilon"], r["method"]): r for r in rows}
    for ds, eps, _ in _cells(rows):
        out.append(f"| {ds} | {eps:g} | " + " | ".join(
            f"{by[(ds, eps, m)]['ncr']:.4f} ± {by[(ds, eps, m)]['ncr_se']:.4f}"
            if (ds, eps, m) in by else "—" for m in labels) + " |")
    out += ["", "F1 and every standard error: `selection_baselines.csv`; the figure: "
            "`selection_baselines.png`.", "", "## Privacy of each method (its `privacy()`)", ""]
    eps0 = rows[0]["epsilon"] if rows else None
    for m in labels:
        r = next((r for r in rows if r["method"] == m and r["epsilon"] == eps0), None)
        if r is not None:
            out.append(f"* {m} (`{r['mechanism']}`, {r['dataset']}, ε = {eps0:g}): "
                       f"{r['privacy']}")
    out += ["", "SVT-Exp reads the stream up to its traversal cap and may stop with fewer than "
            "c items; the selection mechanisms always release c (`picks` in the CSV)."]
    return "\n".join(out) + "\n"


def write_outputs(res, config: Config, seconds: float, log=print) -> str:
    os.makedirs(config.out, exist_ok=True)
    _write_csv(res["rows"], os.path.join(config.out, FILE))
    png = plot(res["rows"], config.out)
    table = evaluate(claims(res["rows"], list(res["missing"])), config.out,
                     explain=claim_notes(res["rows"]))
    text = summary_markdown(res, config, seconds, table)
    with open(os.path.join(config.out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    log(text)
    log(f"[{NAME}] wrote {FILE}, claims.csv, summary.md" + (f" and {os.path.basename(png)}"
                                                           if png else "")
        + f" to {config.out}")
    return text


def _positive(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0; got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0; got {text!r}")
    return value


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = experiment_parser(
        NAME, __doc__.splitlines()[0], quick="< 1 minute: Adult, ε 0.01 and 0.1, 50 runs",
        paper=f"Liu's Figure 7 grid, {PAPER_TRIALS} runs (default)",
        trials=f"runs per point (default {PAPER_TRIALS})", out=os.path.join("results", NAME))
    parser.add_argument("--datasets", nargs="+",
                        help=f"default: {' '.join(liu2024.DEFAULT_DATASETS)}")
    parser.add_argument("--epsilons", nargs="+", type=_positive,
                        help=f"default: {' '.join(f'{e:g}' for e in liu2024.PAPER_EPSILONS)}")
    args = parser.parse_args(argv)
    config = Config(**(QUICK if args.quick else {}), out=args.out, seed=args.seed)
    if args.trials is not None:
        config.trials = args.trials
    if args.datasets:
        from svtjax import datasets

        for name in args.datasets:
            if datasets.canonical(name) not in liu2024.DEFAULT_DATASETS:
                parser.error(f"--datasets: {name!r} is not one of Liu et al. 2024's datasets "
                             "(Table 2: its threshold and c); allowed: "
                             + ", ".join(liu2024.DEFAULT_DATASETS))
        config.datasets = tuple(args.datasets)
    if args.epsilons:
        if len(set(args.epsilons)) != len(args.epsilons):
            parser.error("--epsilons: a value is listed twice")
        config.epsilons = tuple(args.epsilons)
    enable_cache(NAME)
    start = time.perf_counter()
    res = run(config)
    write_outputs(res, config, time.perf_counter() - start)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
