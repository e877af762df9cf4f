"""The outputs of ``experiments.lyu2017``: ``ser.csv``, the figures, ``summary.md``."""

from __future__ import annotations

import csv
import math
import os
from typing import Any, Optional, Sequence

from ._claims import markdown, read_csv
from ._lyu_checks import (
    FWER,
    LARGE_Z,
    OFF_BOUND_MIN,
    SATURATED,
    _cell_label,
    _exact_markdown,
    _explain,
    exact_check,
    large_z,
    local_exponent,
    ranking_check,
    table3_comparison,
)
from ._lyu_claims import ser_columns
from ._lyu_data import METHODS, PAPER_DATASETS, TABLE3


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------
def write_csv(rows: Sequence[dict[str, Any]], path: str) -> None:
    fields = ["dataset", "epsilon", "c", "method", "ser_mean", "ser_std", "ser_se", "ser_std_se",
              "ser_off_bound", "ser_piled", "trials", "threshold", "seconds", "exact_ser",
              "paper_mean", "paper_std"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            p = TABLE3.get((r["dataset"], r["epsilon"], r["c"], r["method"]))
            exact = r.get("exact_ser")
            w.writerow({**r, **ser_columns(r), "exact_ser": "" if exact is None else exact,
                        "paper_mean": "" if p is None else p[0],
                        "paper_std": "" if p is None else p[1]})


STYLES = {"SVT-DPBook": ("k", "o", "-"), "SVT-S-1:1": ("tab:blue", "s", "-"),
          "SVT-S-1:3": ("tab:green", "^", "-"), "SVT-S-1:c": ("tab:cyan", "v", "-"),
          "SVT-S-1:c^(2/3)": ("tab:red", "D", "-"), "SVT-ReTr-1:1": ("tab:olive", "x", "--"),
          "SVT-ReTr-1:c^(2/3)": ("tab:purple", "*", "--"), "EM": ("tab:brown", "+", "--")}


def plot(rows: Sequence[dict[str, Any]], out: str, flat: Optional[dict] = None) -> list[str]:
    """One PNG per (dataset, ε): SER against c, one line per method (Figure 3's layout), the
    paper's Table 3 values (mean ± std, hollow markers) where it has the cell; SER on a
    symmetric-log axis (linear below 0.01) since it spans decades; and the flatness test.
    A method whose rows carry an exact E[SER] (SVT-S: ``svtjax.exact``) is drawn as that exact
    line with its Monte Carlo means as markers on it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for dataset, eps in sorted({(r["dataset"], r["epsilon"]) for r in rows}):
        fig, ax = plt.subplots(figsize=(7.5, 4))
        cs = set()
        any_exact = False
        for method in METHODS:
            pts = sorted((r["c"], r["ser_mean"]) for r in rows
                         if (r["dataset"], r["epsilon"], r["method"]) == (dataset, eps, method))
            if not pts:
                continue
            color, marker, ls = STYLES[method]
            exact = sorted((r["c"], r["exact_ser"]) for r in rows
                           if (r["dataset"], r["epsilon"], r["method"]) == (dataset, eps, method)
                           and r.get("exact_ser") is not None)
            if exact:  # the exact curve, the runs' means as markers on it
                ax.plot(*zip(*exact), color=color, ls=ls, lw=1.2)
                ax.plot(*zip(*pts), color=color, marker=marker, ls="none",
                        label=f"{method} (line: exact)", ms=4)
                any_exact = True
            else:
                ax.plot(*zip(*pts), color=color, marker=marker, ls=ls, label=method, ms=4, lw=1)
            cs |= {c for c, _ in pts}
            paper = [(c, *TABLE3[(dataset, eps, c, method)]) for c, _ in pts
                     if (dataset, eps, c, method) in TABLE3]
            if paper:
                c_, m_, s_ = zip(*paper)
                ax.errorbar(c_, m_, yerr=s_, color=color, marker=marker, ls="none", ms=7,
                            mfc="none", capsize=2, lw=0.8,
                            label=f"{method} (paper, Table 3)")
        ax.set_xlabel("c")
        ax.set_ylabel("SER")
        ax.set_yscale("symlog", linthresh=0.01, linscale=0.5)
        ax.set_ylim(0, 1.05)
        ax.set_yticks([0, 0.005, 0.01, 0.03, 0.1, 0.3, 1])
        ax.set_yticklabels(["0", "0.005", "0.01", "0.03", "0.1", "0.3", "1"])
        ticks = sorted(cs)
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(c) for c in ticks], fontsize=7)
        ax.set_title(f"Lyu et al. 2017 Fig. 3 / Table 3: {dataset}, ε = {eps:g}"
                     + ("\nmarkers: Monte Carlo means; lines marked exact: E[SER] by svtjax.exact"
                        if any_exact else ""), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        fig.tight_layout()
        path = os.path.join(out, f"fig3_{dataset}_eps{eps:g}.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    if flat and flat["rows"]:
        fig, ax = plt.subplots(figsize=(6.5, 3.8))
        for ratio in sorted({r["ratio"] for r in flat["rows"]}):
            rs = [r for r in flat["rows"] if r["ratio"] == ratio]
            ax.errorbar([r["exponent"] for r in rs], [r["diff"] for r in rs],
                        yerr=[2 * r["diff_se"] for r in rs], fmt="o-", ms=4, capsize=2,
                        label=f"s_c = {ratio:g} · c/ε (± 2 SE)")
        ax.axhline(0, color="k", lw=0.8)
        ax.set_xscale("log")
        xs = sorted({r["exponent"] for r in flat["rows"]})
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:g}" for x in xs])
        ax.set_xlabel("flatness exponent a (supports s_c·(c/i)^a; smaller = flatter)")
        ax.set_ylabel("SER(ReTr-1:c^(2/3)) − SER(EM)")
        ax.set_title(f"Flat supports conjecture: n = {flat['rows'][0]['n']}, "
                     f"c = {flat['rows'][0]['c']}, ε = {flat['rows'][0]['epsilon']:g} "
                     "(below 0: ReTr better)", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out, "flatness.png")
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


def _flatness_markdown(flat: dict[str, Any], rows) -> list[str]:
    parts = ["", "## Is the ReTr-over-EM reversal explained by flat supports?", "",
             "Synthetic profiles s_i = s_c·(c/i)^a (`flat_profile`) vary only the flatness a "
             "of the supports at the c-th item, at two values of s_c relative to the noise "
             f"scale c/ε (SER depends on no other scale); {flat['rows'][0]['trials']} shuffled "
             "runs per method and profile; the SER test, Holm at "
             f"{FWER:g} over the profiles (a profile with a side piled at a bound of SER is "
             "not tested).", "",
             "Profiles run at c/n = " + ", ".join(sorted({f"{r['c'] / r['n']:.0%}"
                                                        for r in flat["rows"]}))
             + " (the observed EM reversals sit at c/n >= 27%, local exponents 0.77-4.8).", "",
             "| c/n | a | s_c·ε/c | SER ReTr-1:c^(2/3) | SER EM | ReTr − EM (± SE) | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in flat["rows"]:
        v = ("piled at a bound: not tested" if r["retr_piled"] or r["em_piled"] else
             "ReTr better" if r["retr_better"] else "ReTr worse" if r["retr_worse"] else
             "no significant difference")
        parts.append(f"| {r['c'] / r['n']:.0%} | {r['exponent']:g} | {r['ratio']:g} | "
                     f"{r['retr_ser']:.4f} | "
                     f"{r['em_ser']:.4f} | {r['diff']:+.4f} ± {r['diff_se']:.4f} | {v} |")
    parts += ["", ("**Conjecture supported**: " if flat["supported"] else
                   "**Conjecture not supported**: ") + flat["explanation"] + "."]
    seen = sorted({(r["dataset"], r["c"]) for r in rows})
    if seen:
        from svtjax import datasets

        parts += ["", "Local exponent a of the offline datasets at the c of the significant "
                  "reversals (for comparison with the synthetic axis): " + ", ".join(
                      f"{d} c={c}: a = {local_exponent(datasets.load(d).scores, c):.2f}"
                      for d, c in seen) + "."]
    return parts


def report(rows, missing, config, seconds: float,
           flat: Optional[dict[str, Any]] = None, table=()) -> str:
    ranking = ranking_check(rows, config.alpha)
    t3 = table3_comparison(rows, config.alpha)
    in_table3 = sorted({r["dataset"] for r in rows} & set(PAPER_DATASETS))
    parts = [
        "# Lyu, Su, Li 2017 — Figure 3 / Table 3 (SER), reproduced with svtjax", "",
        f"{config.trials} runs per cell, fresh item order per run, seed {config.seed}; "
        "threshold = mean of the c-th and (c+1)-th largest supports; SVT-ReTr raise_by = 1 "
        f"query-noise scale, max_passes = 10. Total {seconds:.0f} s. Zipf is Lyu's "
        "(`lyu-zipf`: 1,000,000 records over 10,000 items, s_i ≈ 102,170/i), not Liu's.", "",
        "Paper's Table 3 datasets run here: " + (", ".join(in_table3) or "none") + ".",
    ]
    for name, why in missing.items():
        parts.append(f"* MISSING {name}: {why}. Fetch it (`svtjax.datasets.fetch({name!r})`) "
                     "and rerun; the paper's values will appear beside ours.")
    parts += ["", "## The SER test", "",
              "One test for every SER comparison below and in the claims: z = (difference of "
              "the two means) / SE, SE² = Σ std²/n (independent runs; an exact value has no "
              "error), two-sided normal p-value, Holm's step-down procedure at family-wise "
              f"error rate {FWER:g} over each family (a claim's comparisons, each check's "
              "cells). SER lies in [0, 1]; where a mean's runs pile at 0 or 1 (fewer than "
              f"{OFF_BOUND_MIN} runs provably off that bound, column `ser_piled` of ser.csv) "
              "the normal approximation does not hold and the comparison is not evidence "
              "('at bound', 'piled'). Large standardized differences (|z| > "
              f"{LARGE_Z:g}) are listed for every family, significant or not."]
    parts += ["", "## Claims checked", "", markdown(table)]
    parts += ["", "Claims' comparisons: " + "\n".join(
        large_z(_claim_comparisons(config.out), lambda c: f"{c['id']}: {c['label']}"))]
    parts += ["", "## Ranking check (paper: DPBook worst, then SVT-S, then SVT-ReTr-1:c^(2/3), "
              "then EM)", "",
              f"Each adjacent-tier pair of each (dataset, ε, c) cell is one comparison of the "
              f"SER test (z = gap / SE, gap > 0: out of the paper's order); the family of all "
              f"{ranking['tested']} tested pairs is controlled by Holm at family-wise error "
              f"rate {ranking['alpha']:g} ({ranking['saturated']} pairs with both SER < "
              f"{SATURATED} and {ranking['piled']} with a side piled at a bound not tested). "
              f"{len(ranking['reversed'])} pairs are out of order, "
              f"{len(ranking['significant'])} significantly:", ""]
    for p in ranking["significant"]:
        parts.append(f"* {p['dataset']} ε={p['epsilon']:g} c={p['c']}: {p['better']} "
                     f"({p['ser_better']:.4f}) worse than {p['worse']} ({p['ser_worse']:.4f}), "
                     f"z = {p['z']:.1f}, p = {p['p']:.2g} — {_explain(p, flat)}")
    if not ranking["significant"]:
        parts.append("* none")
    parts += [""] + large_z(ranking["pairs"], lambda p: (
        f"{p['dataset']} ε={p['epsilon']:g} c={p['c']}: {p['better']} "
        f"({p['ser_better']:.4f}) vs {p['worse']} ({p['ser_worse']:.4f})"))
    if flat:
        parts += _flatness_markdown(flat, [p for p in ranking["significant"]
                                           if p["better"] == "EM"])
    if t3["cells"] or t3["piled"]:
        parts += ["", f"## Table 3 cells differing beyond Monte Carlo error (Holm at "
                  f"{t3['alpha']:g}, {len(t3['cells'])} cells; {t3['piled']} with a side piled "
                  "at a bound of SER not compared)", ""]
        parts += [f"* {c['dataset']} ε={c['epsilon']:g} c={c['c']} {c['method']}: paper "
                  f"{c['paper']:.3f} ± {c['paper_std']:.3f}, ours {c['ours']:.3f} ± "
                  f"{c['ours_std']:.3f}, z = {c['z']:+.1f}" for c in t3["significant"]] or [
                      "* none"]
        parts += [""] + large_z(t3["cells"], lambda c: f"{_cell_label(c)}: paper "
                                                       f"{c['paper']:.3f}, ours {c['ours']:.3f}")
    parts += _exact_markdown(exact_check(rows, config.alpha))
    parts += ["", "## SER: paper's Table 3 beside ours", "", table3_markdown(rows), ""]
    return "\n".join(parts)


def _claim_comparisons(out: str) -> list[dict[str, Any]]:
    """The claims' comparisons as written (``claims_comparisons.csv``), with z = d/se and
    whether Holm rejected them (at bound: not tested), for :func:`large_z`."""
    path = os.path.join(out, "claims_comparisons.csv")
    if not os.path.exists(path):
        return []
    rows = read_csv(path)
    got = []
    for r in rows:
        d, se = float(r["d"]), float(r["se"])
        if r["outcome"] == "at bound" or not (math.isfinite(d) and se > 0):
            continue
        got.append({"id": r["id"], "label": r["label"], "z": d / se,
                    "significant": r["outcome"] in ("supports", "contradicts")})
    return got
