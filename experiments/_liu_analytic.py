"""The analytical parts of the Liu et al. 2024 reproduction (``experiments.liu2024``): Table
5's correction terms, Figures 3, 4, 5(a-d) and 6, and Table 5's markdown and notes."""

from __future__ import annotations

import functools
import math
from typing import Any

from ._liu_common import _setting

# Table 5 as printed (c = 50, α = 0).
TABLE5_EPS = (0.01, 0.05, 0.1, 1.0, 2.0)
TABLE5_OPTIMAL = (35450.45, 7147.15, 2803.30, 280.78, 138.89)
TABLE5_MEAN = (5332.08, 1046.42, 523.21, 52.32, 26.16)


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
