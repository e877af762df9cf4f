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
script runs them and prints the paper's Table 3 beside ours. Offline, it runs zipf, retail,
T40I10D100K and BMS-WebView-1 (no paper values; the check there is the paper's stated ranking).

Runs on the sweep engine (``svtjax.sweep``): one sweep per dataset, one compilation per method
structure, every cell seeded from ``--seed`` and the cell; finished cells are kept in
``<out>/sweep/<dataset>/`` (with the engine's tidy ``results.csv``), so a rerun resumes.

Outputs (``--out``, default ``results/lyu2017/``): ``ser.csv`` (one row per dataset, ε, c,
method), ``fig3_<dataset>_eps<ε>.png`` (SER against c, one line per method, as Figure 3),
``table3.md`` (paper's Table 3 beside ours with the difference in units of the paper's standard
deviation, plus the ranking check).

Usage::

    svtjax reproduce lyu2017 --quick          # seconds: zipf + retail, c in {25, 50}, ε 0.5
    svtjax reproduce lyu2017 --paper          # 100 runs per cell, as the paper (default)
    svtjax reproduce lyu2017 --trials 1000 --datasets zipf kosarak
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import re
import sys
import time
from typing import Any, Optional, Sequence

from ._common import enable_cache, experiment_parser, load_available, sweep_dataset

# The methods, in the paper's column order: label -> (registry name, parameters).
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "SVT-DPBook": ("dpbook", {}),
    "SVT-S-1:1": ("svt-s", {"allocation": "1:1", "monotonic": True}),
    "SVT-S-1:3": ("svt-s", {"allocation": "1:3", "monotonic": True}),
    "SVT-S-1:c": ("svt-s", {"allocation": "1:c", "monotonic": True}),
    "SVT-S-1:c^(2/3)": ("svt-s", {"allocation": "1:c^(2/3)", "monotonic": True}),
    "SVT-ReTr-1:1": ("svt-retr", {"allocation": "1:1", "monotonic": True, "raise_by": 1.0,
                                  "max_passes": 10}),
    "SVT-ReTr-1:c^(2/3)": ("svt-retr", {"allocation": "1:c^(2/3)", "monotonic": True,
                                        "raise_by": 1.0, "max_passes": 10}),
    "EM": ("em-peeling", {"monotonic": True}),
}
SVT_S = ("SVT-S-1:1", "SVT-S-1:3", "SVT-S-1:c", "SVT-S-1:c^(2/3)")

PAPER_DATASETS = ("bms-pos", "kosarak", "aol")  # Lyu'17 Table 1
OFFLINE_DATASETS = ("zipf", "retail", "t40i10d100k", "bms-webview-1")
DEFAULT_DATASETS = OFFLINE_DATASETS + PAPER_DATASETS
PAPER_CS = tuple(range(25, 301, 25))
PAPER_EPSILONS = (0.1, 0.5)
PAPER_TRIALS = 100

# ---------------------------------------------------------------------------------------------
# Lyu'17 Table 3, transcribed from the text extraction of the paper
# (../shared/seeds/002_8d07cd5bae315f2f.txt, the block before "Table 3: Comparison of ...").
# The extraction prints each cell as "<mean><std>" run together (e.g. "0.0720.051" = 0.072 ±
# 0.051), some as "0 .0010 .001"; every one of the 240 cells (8 columns x 3 datasets x 2 ε x
# 5 c) parses as two 3-decimal numbers. Rows: dataset BMS-POS, Kosarak, AOL at ε = 0.1, then
# the same at ε = 0.5; c = 50, 100, 150, 200, 300 within each. Columns (the paper's order):
# SVT-DPBook; SVT-S 1:1, 1:3, 1:c, 1:c^(2/3); SVT-ReTr 1:1, 1:c^(2/3); EM.
# ---------------------------------------------------------------------------------------------
_TABLE3_COLUMNS = ("SVT-DPBook",) + SVT_S + ("SVT-ReTr-1:1", "SVT-ReTr-1:c^(2/3)", "EM")
_TABLE3_ROWS = [(d, e, c) for e in PAPER_EPSILONS for d in PAPER_DATASETS
                for c in (50, 100, 150, 200, 300)]
_TABLE3_TEXT = """
0.0720.051 0.5610.085 0.6690.073 0.6820.071 0.6210.069 0.7050.142 0.9680.043 0.9720.037
0.9740.037 0.9710.040 0.2250.062 0.9930.008 0.9980.003 0.9990.002 0.9990.002 0.0090.011
0.0400.034 0.1130.047 0.3690.067 0.5160.068 0.0200.044 0.1400.104 0.6400.126 0.8690.075
0.9360.051 0.0080.010 0.0170.015 0.1360.029 0.8000.032 0.9880.007
0.0170.027 0.2550.078 0.5050.079 0.6280.069 0.6310.065 0.0470.061 0.8960.080 0.9560.046
0.9670.044 0.9710.034 0.0160.016 0.7390.046 0.9860.009 0.9960.005 0.9980.003 0.0080.017
0.0110.012 0.0120.014 0.1230.051 0.4290.068 0.0210.053 0.0360.056 0.0420.050 0.4300.112
0.8450.077 0.0050.009 0.0100.009 0.0130.010 0.0160.009 0.7480.031
0.0160.025 0.0960.047 0.3410.080 0.5620.070 0.6070.064 0.0320.062 0.6400.142 0.9040.075
0.9600.034 0.9610.039 0.0130.015 0.0720.029 0.9020.028 0.9870.009 0.9970.003 0.0060.016
0.0090.017 0.0070.005 0.0400.023 0.3120.061 0.0020.005 0.0180.032 0.0080.013 0.0850.061
0.6280.095 0.0050.009 0.0070.007 0.0080.008 0.0080.005 0.0980.017
0.0300.040 0.1010.097 0.2890.221 0.5080.223 0.5350.225 0.0330.063 0.3730.247 0.7720.208
0.8650.177 0.9450.065 0.0230.023 0.0930.093 0.5320.215 0.9240.090 0.9860.033 0.0070.017
0.0130.021 0.0170.019 0.0480.057 0.2840.224 0.0060.028 0.0390.082 0.0620.109 0.0770.102
0.4230.270 0.0060.011 0.0220.018 0.0200.021 0.0320.031 0.0740.070
0.0170.029 0.0630.055 0.2200.083 0.4780.101 0.5810.083 0.0250.049 0.3980.144 0.8180.108
0.9420.045 0.9500.052 0.0110.013 0.0250.017 0.5870.075 0.9550.019 0.9950.005 0.0040.006
0.0080.016 0.0080.008 0.0240.031 0.2370.069 0.0010.003 0.0250.052 0.0150.036 0.0370.045
0.4120.123 0.0040.005 0.0090.009 0.0070.007 0.0080.007 0.0180.012
0.0040.016 0.0540.022 0.1970.057 0.3160.058 0.2920.049 0.0070.018 0.7690.109 0.9000.069
0.9330.063 0.9500.046 0.0020.004 0.5490.047 0.9750.015 0.9940.007 0.9980.003 0.0000.000
0.0020.006 0.0040.001 0.0180.003 0.1100.043 0.0020.012 0.0010.001 0.0090.002 0.1300.081
0.6720.106 0.0010.004 0.0010.000 0.0020.001 0.0050.002 0.5330.031
0.0010.001 0.0100.019 0.0490.012 0.1730.067 0.2240.092 0.0090.034 0.1030.098 0.6270.134
0.8330.107 0.9020.079 0.0020.005 0.0070.006 0.3460.082 0.8940.031 0.9900.006 0.0000.002
0.0000.001 0.0010.001 0.0030.001 0.0340.028 0.0020.012 0.0020.018 0.0010.000 0.0040.003
0.1080.086 0.0010.004 0.0000.001 0.0000.000 0.0010.000 0.0050.002
0.0010.001 0.0070.003 0.0480.006 0.0920.008 0.1410.009 0.0000.000 0.0330.005 0.1390.007
0.2190.008 0.3150.007 0.0010.001 0.0050.002 0.1530.015 0.4120.014 0.6830.014 0.0000.000
0.0000.000 0.0010.000 0.0030.001 0.0220.002 0.0000.000 0.0000.000 0.0010.000 0.0040.001
0.0480.004 0.0000.000 0.0000.000 0.0000.000 0.0010.000 0.0050.001
"""


def _parse_table3() -> dict[tuple[str, float, int, str], tuple[float, float]]:
    cells = re.findall(r"(\d\.\d{3})(\d\.\d{3})", _TABLE3_TEXT)
    assert len(cells) == len(_TABLE3_COLUMNS) * len(_TABLE3_ROWS), len(cells)
    table = {}
    for j, method in enumerate(_TABLE3_COLUMNS):
        for i, (dataset, eps, c) in enumerate(_TABLE3_ROWS):
            mean, std = cells[j * len(_TABLE3_ROWS) + i]
            table[(dataset, eps, c, method)] = (float(mean), float(std))
    return table


#: (dataset, ε, c, method) -> (mean SER, std SER), Lyu'17 Table 3.
TABLE3 = _parse_table3()


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


QUICK = dict(datasets=("zipf", "retail"), cs=(25, 50), epsilons=(0.5,), trials=20)


# ---------------------------------------------------------------------------------------------
# Simulation
# ---------------------------------------------------------------------------------------------


def sweep_config(config: Config, name: str, cs: Sequence[int],
                 dataset_kwargs: Optional[dict] = None) -> dict[str, Any]:
    """The ``svtjax.sweep`` grid of one dataset: every method x ε x c, SER, shuffled trials."""
    entry = sweep_dataset(name, config.cache_dir, **(dataset_kwargs or {}))
    return {
        "sweep": {"name": f"lyu2017-{name}", "trials": config.trials, "seed": config.seed,
                  "datasets": [entry], "metrics": ["ser"], "shuffle": True, "threshold": "lyu"},
        "grid": {"epsilon": [float(e) for e in config.epsilons], "c": [int(c) for c in cs]},
        "mechanisms": [{"name": METHODS[m][0], "label": m, **METHODS[m][1]}
                       for m in config.methods],
    }


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
        for r in result.rows:
            std = r["std"] if math.isfinite(r["std"]) else 0.0  # one run: no spread
            rows.append({"dataset": name, "epsilon": r["epsilon"], "c": r["c"],
                         "method": r["label"], "ser_mean": r["mean"], "ser_std": std,
                         "trials": r["trials"], "threshold": float(r["threshold"]),
                         "seconds": r["seconds"]})
        if config.verbose:
            log(f"[lyu2017] {name}: {len(cs)} c x {len(config.epsilons)} eps x "
                f"{len(config.methods)} methods, {config.trials} runs each, "
                f"{time.perf_counter() - start_ds:.1f}s ({result.reused} cells reused)")
    rows.sort(key=lambda r: (list(loaded).index(r["dataset"]), r["c"], r["epsilon"],
                             order[r["method"]]))
    return rows, missing


# ---------------------------------------------------------------------------------------------
# Ranking check (Sec. 5: "SVT-DPBook performs the worst, followed by the four SVT-S algorithms,
# then by SVT-ReTr-1:c2/3, and then by EM")
# ---------------------------------------------------------------------------------------------
_TIERS = (("SVT-DPBook",), SVT_S, ("SVT-ReTr-1:c^(2/3)",), ("EM",))
SATURATED = 0.005  # both SERs below this: the methods are equally perfect, order is noise


def ranking_check(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One message per (dataset, ε, c) cell and adjacent-tier pair out of the paper's order.

    An exception is explained as "within noise" (the gap is < 2 standard errors), "saturated"
    (both SER < 0.005) or reported as significant. The last message is a summary.
    """
    cells: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        cells.setdefault((r["dataset"], r["epsilon"], r["c"]), {})[r["method"]] = r
    messages, checked, significant = [], 0, 0
    for (dataset, eps, c), by in sorted(cells.items()):
        tiers = [[by[m] for m in tier if m in by] for tier in _TIERS]
        tiers = [t for t in tiers if t]
        for worse, better in zip(tiers, tiers[1:]):
            for a in worse:
                for b in better:
                    checked += 1
                    gap = b["ser_mean"] - a["ser_mean"]  # > 0: out of the paper's order
                    if gap <= 0:
                        continue
                    se = math.sqrt(a["ser_std"] ** 2 / a["trials"]
                                   + b["ser_std"] ** 2 / b["trials"])
                    if max(a["ser_mean"], b["ser_mean"]) < SATURATED:
                        why = f"saturated: both SER < {SATURATED}"
                    elif gap < 2 * se:
                        why = f"within noise: gap < 2 standard errors ({2 * se:.4f})"
                    else:
                        significant += 1
                        why = "SIGNIFICANT: " + _explain(a["method"], b["method"], by)
                    messages.append(
                        f"{dataset} eps={eps:g} c={c}: {b['method']} ({b['ser_mean']:.4f}) worse "
                        f"than {a['method']} ({a['ser_mean']:.4f}) -- {why}")
    messages.append(f"ranking check: {checked} ordered pairs, {len(messages)} out of the paper's "
                    f"order, {significant} of them significant")
    return messages


def _explain(worse: str, better: str, by: dict[str, dict]) -> str:
    if better == "SVT-S-1:c" or worse == "SVT-S-1:c":
        return ("1:c gives almost all budget to the query noise; its SER varies most across runs "
                "(the paper notes its large standard deviation)")
    if worse == "SVT-DPBook":
        return ("DPBook's threshold noise Lap(2c/ε) is harmless when the top-c supports are far "
                "above the rest relative to c/ε")
    if better == "SVT-ReTr-1:c^(2/3)":
        return ("ReTr raises the threshold by one query-noise scale; when few items are near the "
                "threshold it can stop before c picks within max_passes=10 and lose support")
    if better == "EM":
        return ("EM (Gumbel noise, scale c/ε per pick for monotonic counts) and "
                "ReTr-1:c^(2/3) (Laplace query noise, scale about c/ε, threshold raised, items "
                "retraversed) add noise of the same size; on datasets whose supports near the "
                "c-th are flat (BMS-WebView-1, T40I10D100K at large c) ReTr can edge ahead by a "
                "few percent of SER -- the paper itself finds ReTr 'quite close to EM' and "
                "reports only BMS-POS, Kosarak and AOL")
    return "no explanation known; see the SER table"


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------
def write_csv(rows: Sequence[dict[str, Any]], path: str) -> None:
    fields = ["dataset", "epsilon", "c", "method", "ser_mean", "ser_std", "trials", "threshold",
              "seconds", "paper_mean", "paper_std"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            p = TABLE3.get((r["dataset"], r["epsilon"], r["c"], r["method"]))
            w.writerow({**r, "paper_mean": "" if p is None else p[0],
                        "paper_std": "" if p is None else p[1]})


def plot(rows: Sequence[dict[str, Any]], out: str) -> list[str]:
    """One PNG per (dataset, ε): SER against c, one line per method (Figure 3's layout)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"SVT-DPBook": "k-o", "SVT-S-1:1": "b-s", "SVT-S-1:3": "g-^", "SVT-S-1:c": "c-v",
              "SVT-S-1:c^(2/3)": "r-D", "SVT-ReTr-1:1": "y--x", "SVT-ReTr-1:c^(2/3)": "m--*",
              "EM": "k--+"}
    paths = []
    for dataset, eps in sorted({(r["dataset"], r["epsilon"]) for r in rows}):
        fig, ax = plt.subplots(figsize=(5, 3.6))
        for method in METHODS:
            pts = sorted((r["c"], r["ser_mean"]) for r in rows
                         if (r["dataset"], r["epsilon"], r["method"]) == (dataset, eps, method))
            if pts:
                ax.plot(*zip(*pts), styles.get(method, "-"), label=method, ms=4, lw=1)
        ax.set_xlabel("c")
        ax.set_ylabel("SER")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{dataset}, ε = {eps:g}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        path = os.path.join(out, f"fig3_{dataset}_eps{eps:g}.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    return paths


def table3_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """Paper's Table 3 (where it has the cell) beside ours, with (ours - paper) / paper std.

    A paper std printed as 0.000 is taken as 0.0005 (half its last digit) for the ratio.
    """
    lines = ["| dataset | ε | c | method | paper SER | ours SER | (ours − paper) / σ_paper |",
             "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["dataset"], r["epsilon"], r["c"],
                                         list(METHODS).index(r["method"]))):
        p = TABLE3.get((r["dataset"], r["epsilon"], r["c"], r["method"]))
        ours = f"{r['ser_mean']:.3f} ± {r['ser_std']:.3f}"
        if p is None:
            paper, z = "—", "—"
        else:
            paper = f"{p[0]:.3f} ± {p[1]:.3f}"
            z = f"{(r['ser_mean'] - p[0]) / max(p[1], 0.0005):+.1f}"
        lines.append(f"| {r['dataset']} | {r['epsilon']:g} | {r['c']} | {r['method']} | "
                     f"{paper} | {ours} | {z} |")
    return "\n".join(lines)


def report(rows, missing, config: Config, seconds: float) -> str:
    checks = ranking_check(rows)
    in_table3 = sorted({r["dataset"] for r in rows} & set(PAPER_DATASETS))
    parts = [
        "# Lyu, Su, Li 2017 — Figure 3 / Table 3 (SER), reproduced with svtjax", "",
        f"{config.trials} runs per cell, fresh item order per run, seed {config.seed}; "
        "threshold = mean of the c-th and (c+1)-th largest supports; SVT-ReTr raise_by = 1 "
        f"query-noise scale, max_passes = 10. Total {seconds:.0f} s.", "",
        "Paper's Table 3 datasets run here: " + (", ".join(in_table3) or "none") + ".",
    ]
    for name, why in missing.items():
        parts.append(f"* MISSING {name}: {why}. Fetch it (`svtjax.datasets.fetch({name!r})`) "
                     "and rerun; the paper's values will appear beside ours.")
    parts += ["", "## Ranking check (paper: DPBook worst, then SVT-S, then SVT-ReTr-1:c^(2/3), "
              "then EM)", ""] + [f"* {m}" for m in checks]
    parts += ["", "## SER: paper's Table 3 beside ours", "", table3_markdown(rows), ""]
    return "\n".join(parts)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = experiment_parser(
        "lyu2017", __doc__.splitlines()[0], quick="seconds: zipf + retail, c 25/50, ε 0.5, 20 runs",
        paper="the paper's grid, 100 runs (default)", trials="runs per cell (paper: 100)",
        out=os.path.join("results", "lyu2017"))
    parser.add_argument("--datasets", nargs="+", help=f"default: {' '.join(DEFAULT_DATASETS)}")
    args = parser.parse_args(argv)

    config = Config(**(QUICK if args.quick else {}), out=args.out, seed=args.seed)
    if args.trials is not None:
        config.trials = args.trials
    if args.datasets:
        config.datasets = tuple(args.datasets)
    enable_cache("lyu2017")
    start = time.perf_counter()
    rows, missing = run(config)
    seconds = time.perf_counter() - start
    write_outputs(rows, missing, config, seconds)
    return 0


def write_outputs(rows, missing, config: Config, seconds: float, log=print) -> str:
    os.makedirs(config.out, exist_ok=True)
    write_csv(rows, os.path.join(config.out, "ser.csv"))
    pngs = plot(rows, config.out)
    text = report(rows, missing, config, seconds)
    md = os.path.join(config.out, "table3.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write(text)
    log(text)
    log(f"[lyu2017] wrote {os.path.join(config.out, 'ser.csv')}, {md} and {len(pngs)} PNG(s)")
    return text


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
