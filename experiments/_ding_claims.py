"""Ding'19 Sec. 7's statements declared on the claims protocol (``experiments._claims``), their
reading aids, and the text of the bias re-run (``experiments.ding2019``)."""

from __future__ import annotations

import math
from typing import Any, Optional

from ._claims import Claim, Part, best, const, ref
from ._ding_data import (
    PAPER_EXTRA_ANSWERS,
    PAPER_EXTRA_K,
    PAPER_F_RATIO,
    PAPER_FIG_DATASETS,
    PAPER_REMAINING_PCT,
    Config,
)

SEED = "seed 003_7d16f83d65b45607.txt"
CURVE_TOL = 1.0  # percentage points: the paper's figures cannot show less
STABLE_TOL = 2.0  # percentage points from the ε-independent theory: "stable"


def _ding(cid, words, where, line, quantity, tolerance, covers, parts, missing, **kw):
    return Claim(cid, words, f"Ding et al. 2019, {where}", f"{SEED} line {line}", quantity,
                 tolerance, covers, parts, excluded=kw.pop("excluded", missing), **kw)


def _mse_ref(r):
    return ref("mse.csv", "improvement_pct", "improvement_se_pct", dataset=r["dataset"],
               figure=r["figure"], mechanism=r["mechanism"], epsilon=r["epsilon"], k=r["k"])


def _ad_ref(r, col, se=None):
    return ref("adaptive.csv", col, se, dataset=r["dataset"], epsilon=r["epsilon"], k=r["k"])


def claims(results, config: Config) -> list[Claim]:
    """Ding'19 Sec. 7's statements, declared on the protocol (``experiments._claims``); judged
    on the paper's datasets that ran (BMS-WebView-1, a stand-in, is reported, never judged)."""
    from svtjax import estimators

    mse = [r for r in results["mse"] if r["dataset"] in PAPER_FIG_DATASETS]
    adaptive = [r for r in results["adaptive"] if r["dataset"] in PAPER_FIG_DATASETS]
    ran = {r["dataset"] for r in mse}
    gone = results.get("missing", {})
    missing = ", ".join(f"{d} ({'not available offline' if d in gone else 'not run'})"
                        for d in PAPER_FIG_DATASETS if d not in ran)
    out = []
    names = {"noisy-top-k-gap": "Noisy-Top-K-with-Gap", "svt-gap": "Sparse-Vector-with-Gap"}
    for mech, title in names.items():
        part = Part("within", "all", tol=CURVE_TOL)
        for r in mse:
            if r["mechanism"] == mech:
                part.add(f"{r['dataset']} Fig {r['figure']} ε={r['epsilon']:g} k={r['k']}",
                         _mse_ref(r), ref("mse.csv", "theory_pct", dataset=r["dataset"],
                                          figure=r["figure"], mechanism=mech,
                                          epsilon=r["epsilon"], k=r["k"]))
        out.append(_ding(
            f"ding-curve-{mech}", "These figures plot the theoretical and empirical percent "
            "improvement in MSE as a function of k and show the power of the free gap "
            "information.", f"Sec. 7.2, Figs 1-2 ({title})", 440,
            "empirical MSE improvement (%) minus the theory (Thm 3 / Corollary 1, Sec. 6.2)",
            f"|empirical − theory| <= {CURVE_TOL:g} point at every (figure, ε, k), shown by two "
            "one-sided tests (Holm over every point)", "every point of Figs 1-2 run", [part],
            missing))
    fig1 = [r for r in mse if r["figure"] == 1]
    kk = max((r["k"] for r in fig1), default=None)
    lim = Part("within", "all", tol=0.5, name="theory's limit")
    for m in names:
        limit = 100 * (1 - float(estimators.topk_mse_ratio(10 ** 6, 1.0) if m ==
                                 "noisy-top-k-gap" else estimators.svt_mse_ratio(10 ** 6, True)))
        lim.add(f"{m} theory at k = 10^6", const(limit), const(50.0))
    at = Part("within", "all", tol=CURVE_TOL, name="empirical at the largest k")
    for r in fig1:
        if r["k"] == kk:
            at.add(f"{r['dataset']} {r['mechanism']} k={kk}", _mse_ref(r),
                   ref("mse.csv", "theory_pct", dataset=r["dataset"], figure=1,
                       mechanism=r["mechanism"], epsilon=r["epsilon"], k=kk))
    out.append(_ding(
        "ding-50", "Our theoretical analysis in Sections 5.2 and 6.2 suggested that the "
        "improvements can reach up to 50% in case of monotonic queries ... as k increases. This "
        "is confirmed in Figures 1a, for Sparse-Vectorwith-Gap and Figures 1b, for our Top-K "
        "algorithm", "Sec. 7.2, Fig. 1", 440, "the theory's improvement at k = 10^6, and the "
        "empirical one at the largest k run", f"theory within 0.5 point of 50% at k = 10^6; "
        f"empirical within {CURVE_TOL:g} point of the theory at the largest k",
        "Fig. 1 at its largest k", [lim, at] if fig1 else [], missing))
    lim20 = Part("within", "all", tol=0.5)
    for name, v in (("SVT", estimators.svt_mse_ratio(10 ** 6, False)),
                    ("top-k (λ = 4)", estimators.topk_mse_ratio(10 ** 6, 4.0))):
        lim20.add(f"{name} at k = 10^6", const(100 * (1 - float(v))), const(20.0))
    out.append(_ding(
        "ding-20", "the improvement in accuracy approaches 20% as k increases",
        "Sec. 6.2", 413, "the theory's improvement for non-monotonic queries at k = 10^6",
        "within 0.5 point of 20% (exact; theory only: the paper's experiments use counting "
        "queries)", "theory", [lim20], missing, excluded=""))
    fig2 = [r for r in mse if r["figure"] == 2]
    for mech, fig in (("svt-gap", "2a"), ("noisy-top-k-gap", "2b")):
        rows = [r for r in fig2 if r["mechanism"] == mech]
        part = Part("within", "all", tol=STABLE_TOL)
        if len({r["epsilon"] for r in rows}) >= 2:
            for r in rows:
                part.add(f"{r['dataset']} ε={r['epsilon']:g}", _mse_ref(r),
                         ref("mse.csv", "theory_pct", dataset=r["dataset"], figure=2,
                             mechanism=mech, epsilon=r["epsilon"], k=r["k"]))
        out.append(_ding(
            f"ding-stable-{mech}", f"Figures {fig} confirms that this improvement is "
            + ("stable for different ε values" if mech == "svt-gap" else
               "also stable for different values of ε"), f"Sec. 7.2, Fig. {fig}", 442,
            "empirical MSE improvement (%) at fixed k against the theory, which does not "
            "depend on ε", f"every ε within {STABLE_TOL:g} points of the theory (a stated "
            "effect size, two one-sided tests, Holm over every ε), not a homogeneity test",
            "every ε of Fig. 2 run (at least two needed)", [part] if part.comparisons else [],
            missing))
    kk = max((r["k"] for r in adaptive), default=None)
    extra = Part("within", "all", tol=1.0)
    if kk == PAPER_EXTRA_K:
        extra.add(f"largest gain at k = {kk}", best(*(_ad_ref(r, "authors_extra_answers",
                                                               "authors_extra_answers_se")
                                                      for r in adaptive if r["k"] == kk)),
                  const(PAPER_EXTRA_ANSWERS))
    out.append(_ding(
        "ding-18", "(up to an average of 18 more answers when k was set to 22)", "Sec. 7.3, "
        "Fig. 3a-c", 469, "the largest (over datasets) mean extra answers of "
        "Adaptive-SVT-with-Gap (the authors' stopping rule) over Sparse Vector at k = 22",
        "within 1 answer of 18 (two one-sided tests)", "k = 22 on every dataset run",
        [extra] if extra.comparisons else [], missing))
    prec = Part("within", "all", tol=0.05)
    for r in adaptive:
        for lab in ("adaptive", "authors"):
            prec.add(f"{r['dataset']} k={r['k']} {lab}",
                     _ad_ref(r, f"{lab}_precision", f"{lab}_precision_se"),
                     _ad_ref(r, "svt_precision", "svt_precision_se"))
    out.append(_ding(
        "ding-precision", "Generally we see very little difference in precision.",
        "Sec. 7.3, Fig. 3d-f", 471, "precision of Adaptive-SVT-with-Gap (both stopping rules) "
        "minus Sparse Vector's", "|difference| <= 0.05 at every k (two one-sided tests, Holm)",
        "every k and dataset run", [prec], missing))
    for lab, name in (("", "exact rule"), ("authors_", "authors' rule")):
        part = Part("within", "most", margin=math.log(PAPER_F_RATIO), tol=0.17, scale="log")
        for r in adaptive:
            part.add(f"{r['dataset']} k={r['k']}", _ad_ref(r, f"{lab or 'adaptive_'}f",
                                                           f"{lab or 'adaptive_'}f_se"),
                     _ad_ref(r, "svt_f", "svt_f_se"))
        out.append(_ding(
            f"ding-f-{lab or 'exact_'}".rstrip("_"), "thus leading to the F-Measure being "
            "roughly 1.5 times that of Sparse Vector", "Sec. 7.3, Fig. 3d-f", 479,
            f"F(adaptive, {name}) / F(Sparse Vector)", "the ratio within a factor e^0.17 of "
            "1.5 (1.27-1.77) at more than half the k (log scale, two one-sided tests)",
            "every k and dataset run", [part], missing))
    rem = Part("within", "most", tol=10.0)
    for r in adaptive:
        rem.add(f"{r['dataset']} k={r['k']}", _ad_ref(r, "remaining_pct", "remaining_pct_se"),
                const(PAPER_REMAINING_PCT))
    out.append(_ding(
        "ding-40", "We see that roughly 40% of the privacy budget is left over",
        "Sec. 7.3, Fig. 4", 483, "remaining privacy budget (%) after k answers",
        "within 10 points of 40% at more than half the k (two one-sided tests)",
        "every k and dataset run", [rem], missing))
    return out


def claim_notes(results) -> dict[str, str]:
    """Reading aids (never used by a verdict): the mean departure from the theory per Fig. 2
    curve (inverse-variance weighted, with its SE) and the bias re-run of
    Noisy-Top-K-with-Gap."""
    bias = results.get("bias")
    notes = {}
    for mech in ("noisy-top-k-gap", "svt-gap"):
        rows = [r for r in results["mse"] if r["figure"] == 2 and r["mechanism"] == mech
                and r["dataset"] in PAPER_FIG_DATASETS and r["improvement_se_pct"] > 0]
        if rows:
            w = [r["improvement_se_pct"] ** -2 for r in rows]
            gap = sum(wi * (r["improvement_pct"] - r["theory_pct"])
                      for wi, r in zip(w, rows)) / sum(w)
            notes[f"ding-stable-{mech}"] = (f"mean empirical − theory over ε: {gap:+.2f} ± "
                                            f"{sum(w) ** -0.5:.2f} points")
    for mech in ("noisy-top-k-gap", "svt-gap"):
        d = bias["dataset"] if bias else "t40i10d100k"
        text = _bias_text(bias, d, mech)
        if text:
            notes[f"ding-curve-{mech}"] = text
            notes[f"ding-stable-{mech}"] = "; ".join(
                x for x in (notes.get(f"ding-stable-{mech}"), text) if x)
    return notes


def _bias_text(bias: Optional[dict[str, Any]], dataset: str, mechanism: str) -> str:
    """What the re-run of the farthest point (:func:`bias_check`) says, for the explanations."""
    if mechanism != "noisy-top-k-gap":
        return ""
    if bias is None or bias["dataset"] != dataset:
        return ("Not re-run here (--quick, or no point beyond the bound): whether the "
                "departure is a selection bias (top-k winners carry upward-biased noise the "
                "theory treats as unconditioned) or noise is not tested in this run")
    head = (f"Re-run of the farthest point (Fig {bias['figure']}, ε = {bias['epsilon']:g}, "
            f"k = {bias['k']}: {bias['first_pct']:.2f} ± {bias['first_se_pct']:.2f}%, z = "
            f"{bias['first_z']:+.1f}) with {bias['trials']:,} fresh runs: {bias['pct']:.2f} ± "
            f"{bias['se_pct']:.2f}% against {bias['theory_pct']:.2f}%, z = {bias['z']:+.1f}")
    gap = bias["pct"] - bias["theory_pct"]
    if bias["bias"]:
        return (head + f": the departure persists ({gap:+.2f} points), a real bias; its "
                "cause is not tested here (a selection effect — top-k winners carry noise the "
                "theory treats as unconditioned — is one candidate, not a finding); the "
                "paper's figures, read by eye, cannot show a few tenths of a point")
    if abs(bias["z"]) > 2:
        return (head + f": most of the first departure was noise, but {gap:+.2f} points "
                "remain at 2-3 SE; this many runs cannot settle whether it is a bias, and "
                "its cause is not tested here")
    return (head + ": within 2 SE at 10x the runs, so the first estimate's departure was "
            "Monte Carlo noise (or a standard error that understated it), not a bias")
