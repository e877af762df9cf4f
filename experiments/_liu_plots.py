"""The figures of the Liu et al. 2024 reproduction (``experiments.liu2024``): Table 5 beside
the paper's values, Figures 3, 4, 5(a-d), 6, 7 (NCR and F1) and 8, one PNG each (Figures 7-8:
per dataset)."""

from __future__ import annotations

import os

from ._common import fit_unit_axis
from ._liu_common import H1, SVT_METHODS, UPPER, UPPER_SVT


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

