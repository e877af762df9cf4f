"""Figures 1 and 2 of ``experiments.zhu_wang2020`` (``fig1.png``: halting lengths, capped and
uncapped; ``fig2.png``: composed ε against the number of queries)."""

from __future__ import annotations

import os

import numpy as np

from ._zhu_calibration import FIG1_METHODS, FIG1_UNCAPPED, GAUSS_UNCAPPED, LEMMA7_RESAMPLE
from ._zhu_claims import FIG2_METHODS

STYLE = {FIG1_METHODS[0]: ("tab:blue", "o", "-"), FIG1_METHODS[1]: ("tab:orange", "s", "--"),
         FIG1_METHODS[2]: ("tab:green", "^", ":"), FIG1_METHODS[3]: ("tab:red", "D", "-"),
         FIG1_METHODS[4]: ("tab:purple", "v", "-."), GAUSS_UNCAPPED: ("tab:red", "D", "--"),
         LEMMA7_RESAMPLE: ("tab:blue", "x", ":")}


def plot(fig1, uncapped, fig2, out: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    paths = []
    ts = sorted({r["threshold"] for r in fig1})
    cap = fig1[0]["cap"]
    fig, axes = plt.subplots(2, len(ts), figsize=(4.6 * len(ts), 7.6), squeeze=False)
    cs = sorted({r["c"] for r in fig1})
    for ax, t in zip(axes[0], ts):
        for i, m in enumerate(FIG1_METHODS):
            pts = sorted((r["c"], r["mean_length"], r["se_length"]) for r in fig1
                         if r["threshold"] == t and r["method"] == m)
            color, marker, ls = STYLE[m]
            x = np.array([p[0] for p in pts]) * (1 + 0.04 * (i - 2))  # side by side, visible
            ax.errorbar(x, [p[1] for p in pts], yerr=[2 * p[2] for p in pts], color=color,
                        marker=marker, ls=ls, ms=5, mfc="none", capsize=2, label=m)
        ax.axhline(cap, color="gray", lw=0.8, ls=":")
        ax.text(cs[0], cap * 1.15, f"cap L = {cap}", fontsize=7, color="gray")
        ax.set(xscale="log", yscale="log", ylim=(0.8, cap * 2.5),
               title=f"capped (stream of L queries), T = {t:g}")
        ax.set_ylabel("mean queries before halting (± 2 SE)")
    for ax, t in zip(axes[1], ts):
        for i, m in enumerate(FIG1_UNCAPPED):
            pts = sorted((r["c"], r["log10_mean_length"]) for r in uncapped
                         if r["threshold"] == t and r["method"] == m)
            color, marker, ls = STYLE[m]
            x = np.array([p[0] for p in pts]) * (1 + 0.04 * (i - 1.5))
            ax.plot(x, [p[1] for p in pts], color=color, marker=marker, ls=ls, ms=5,
                    mfc="none", label=m)
        ax.set(xscale="log", title=f"uncapped (exact c·E[K]), T = {t:g}")
        ax.set_ylabel("log10 mean queries before halting")
    for ax in axes.flat:
        ax.set_xlabel("cut-off c")
        ax.set_xticks(cs)
        ax.set_xticklabels([str(c) for c in cs])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.grid(alpha=0.3)
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=3, fontsize=8,
               frameon=False)
    fig.suptitle("Zhu & Wang 2020, Figure 1 (svtjax): ε = 1, δ = 1e-6", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.97))
    paths.append(os.path.join(out, "fig1.png"))
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4.4))
    styles = {"Laplace-SVT": ("tab:blue", "-"), "Gaussian-SVT": ("tab:red", "-"),
              "Gaussian mechanism": ("k", "--"), "Noisy screening": ("tab:green", "-.")}
    for m in FIG2_METHODS:
        pts = sorted((r["queries"], r["epsilon"]) for r in fig2 if r["method"] == m)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=styles[m][0], ls=styles[m][1],
                label=m)
    g = sorted((r["queries"], r["gaussian_thm8_kmax_t"], r["gaussian_prop10_no_cap"])
               for r in fig2 if r["method"] == "Gaussian-SVT")
    ax.plot([p[0] for p in g], [p[1] for p in g], color="salmon", ls="--", lw=2.5, zorder=1,
            label="Gaussian-SVT by Thm 8 (1) alone (cap k_max = t)")
    ax.plot([p[0] for p in g], [p[2] for p in g], color="maroon", ls=":", lw=1.5, zorder=1,
            label="Gaussian-SVT by Prop. 10 alone (no cap)")
    ax.set(xscale="log", yscale="log", xlabel="number of queries t",
           ylabel="composed ε (δ = 1e-6)",
           title="Zhu & Wang 2020, Figure 2 (svtjax): T = 1000, σ1 = 210\n(Gaussian-SVT = the "
                 "lower of its two bounds, drawn over it)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    paths.append(os.path.join(out, "fig2.png"))
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths
