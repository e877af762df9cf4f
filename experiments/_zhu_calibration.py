"""Zhu & Wang 2020 (NeurIPS), Section 4, Exp 1: the methods' calibrations and the exact
(capped and uncapped) mean lengths of Figure 1 (``experiments/zhu_wang2020.py`` runs them;
its docstring states the methods, the two readings and the choices made)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

FIG1_METHODS = ("Laplace-SVT (standard, Lemma 7)", "Laplace-SVT (CDP)",
                "Laplace-SVT (sinh, Lemma 4)", "Gaussian-SVT (Thm 8 / Prop. 10)",
                "Stage-wise Gaussian-SVT (Thm 12)")
LAPLACE = FIG1_METHODS[:3]
GAUSS_UNCAPPED = "Gaussian-SVT (Prop. 10, no cap)"
#: Lemma 7's RESAMPLE form alone, λ1 = sqrt(32c log(1/δ))Δ/ε (the standard calibration above
#: takes the better of it and the pure 2cΔ/ε): exact lengths only, for the sinh claim.
LEMMA7_RESAMPLE = "Laplace-SVT (Lemma 7, RESAMPLE form)"
#: The uncapped reading of Figure 1 (exact lengths, no simulation).
FIG1_UNCAPPED = LAPLACE + (GAUSS_UNCAPPED, LEMMA7_RESAMPLE)


def _laplace_round(lam: float, kind: str):
    from svtjax import accounting as acc

    e = 2.0 / lam  # one c = 1 round, ρ ~ Lap(λ), ν ~ Lap(2λ): ε1 + ε2 = 1/λ + 2/(2λ)
    if kind == "cdp":
        return acc.RDP(f"CDP of {e:g}-DP", lambda a: acc.cdp_rdp(e, a))
    return acc.RDP(f"Lemma 4 of {e:g}-DP", lambda a: acc.pure_dp_rdp(e, a), e)


def _integrate_log(g, s: float, threshold: float) -> float:
    """log ∫ exp(g(z)) dz over z in ±40 s (scipy quad, in log space: the integrand can exceed a
    float's range), breakpoints at 0, −T and the integrand's peak."""
    from scipy import integrate

    grid = np.linspace(-40 * s, 40 * s, 20001)
    vals = g(grid)
    top = float(np.max(vals))
    z_top = float(grid[int(np.argmax(vals))])
    f = lambda z: math.exp(g(z) - top)  # noqa: E731
    pts = sorted({0.0, -threshold, z_top})
    pts = [p for p in pts if -40 * s < p < 40 * s]
    val = integrate.quad(f, -40 * s, 40 * s, points=pts, limit=500)[0]
    return top + math.log(val)


class _LogLaw:
    """logpdf and logsf of a frozen scipy.stats Laplace or normal law as numpy expressions
    (the formulas scipy evaluates, without the ~50 us of a frozen distribution's method call:
    quad calls them ~10^4 times per curve); any other law is used as it is."""

    def __init__(self, frozen):
        self.frozen, self.name = frozen, frozen.dist.name
        self.loc, std = float(frozen.mean()), float(frozen.std())
        self.scale = std / math.sqrt(2) if self.name == "laplace" else std

    def logpdf(self, z):
        u = (np.asarray(z, float) - self.loc) / self.scale
        if self.name == "laplace":
            return -np.abs(u) - math.log(2 * self.scale)
        if self.name == "norm":
            return -0.5 * u * u - math.log(self.scale * math.sqrt(2 * math.pi))
        return self.frozen.logpdf(z)

    def logsf(self, x):
        from scipy import special

        u = (np.asarray(x, float) - self.loc) / self.scale
        if self.name == "laplace":
            return np.where(u > 0, -u - math.log(2), np.log1p(-0.5 * np.exp(np.minimum(u, 0))))
        if self.name == "norm":
            return special.log_ndtr(-u)
        return self.frozen.logsf(x)


def log_expected_length(rho, nu, threshold: float) -> float:
    """log E[K] of one c = 1 round on zero queries, no cap: E[K] = ∫ f_ρ(z) / P(ν ≥ T + z) dz
    (scipy), in log space: E[K] overflows a float for large T / σ."""
    std = float(rho.std())
    rho, nu = _LogLaw(rho), _LogLaw(nu)
    g = lambda z: rho.logpdf(z) - nu.logsf(threshold + z)  # noqa: E731
    return _integrate_log(g, std, threshold)


def expected_length(rho, nu, threshold: float) -> float:
    """E[K] (``inf`` beyond float range); see :func:`log_expected_length`."""
    with np.errstate(over="ignore"):
        return float(np.exp(log_expected_length(rho, nu, threshold)))


def expected_capped_length(rho, nu, threshold: float, cap: int) -> float:
    """E[min(K, L)] of one c = 1 round on L = ``cap`` zero queries: given ρ = z the round stops
    at each query with p(z) = P(ν ≥ T + z), so E[min(K, L) | z] = Σ_{j<L} (1 − p)^j =
    (1 − (1 − p)^L)/p, integrated against f_ρ (scipy), never above L."""
    std = float(rho.std())
    rho, nu = _LogLaw(rho), _LogLaw(nu)

    def g(z):
        p = np.clip(np.exp(nu.logsf(threshold + z)), 1e-300, 1.0)
        # (1 − (1 − p)^L)/p, stable for tiny p (→ L) and p = 1 (→ 1)
        ratio = -np.expm1(cap * np.log1p(-np.minimum(p, 1 - 1e-16))) / p
        return rho.logpdf(z) + np.log(np.minimum(ratio, cap))
    return min(float(math.exp(_integrate_log(g, std, threshold))), float(cap))


def calibrate_fig1(c: int, threshold: float, epsilon: float, delta: float, k_max: int
                   ) -> dict[str, dict[str, Any]]:
    """Each Figure 1 method's mechanism, calibrated to (ε, δ), in both readings.

    Args:
      k_max: L, the length cap of the capped reading (the stream length).

    Returns:
      label -> {name, params (what ``svtjax.get(name, **params)`` takes: ``mech``), mech,
      scale, eps, log10_uncapped (log10 of the exact uncapped mean c·E[K], NaN where the
      mechanism has no uncapped form), exact_capped (E[min(K, L)] at c = 1, else NaN), capped
      (True: simulated on the L-query stream)}. ``GAUSS_UNCAPPED`` is only in the uncapped
      reading (not simulated).
    """
    from scipy import stats

    import svtjax
    from svtjax import accounting as acc
    from svtjax.noise import Gaussian, Laplace

    def lap_params(lam):
        return dict(c=c, resample=True, threshold_noise=Laplace(lam),
                    query_noise=Laplace(2 * lam))

    def laws(name, s1):
        law = stats.laplace if name == "laplace" else stats.norm
        return law(scale=s1), law(scale=2 * s1)

    def lengths(name, s1):
        rho, nu = laws(name, s1)
        log10 = (math.log(c) + log_expected_length(rho, nu, threshold)) / math.log(10)
        capped = expected_capped_length(rho, nu, threshold, k_max) if c == 1 else math.nan
        return log10, capped

    out: dict[str, dict[str, Any]] = {}
    lam = min(2 * c / epsilon, acc.lemma7_resample_scale(epsilon, delta, c))
    accounts = {LAPLACE[0]: None, LAPLACE[1]: "cdp", LAPLACE[2]: "sinh"}
    for label, kind in accounts.items():
        if kind is None:  # Lemma 7: pure 2c/λ, or its (ε, δ) form
            eps = epsilon
        else:
            account = lambda s, k=kind: acc.compose(_laplace_round(s, k), times=c)  # noqa: E731
            lam = acc.calibrate(account, epsilon, delta, rtol=1e-6)
            eps = account(lam).epsilon(delta)
        log10, capped = lengths("laplace", lam)
        out[label] = dict(mech=svtjax.get("generalized-svt", **lap_params(lam)),
                          params=lap_params(lam), scale=lam, eps=eps, log10_uncapped=log10,
                          exact_capped=capped, capped=True)
    lam7 = acc.lemma7_resample_scale(epsilon, delta, c)
    log10, capped = lengths("laplace", lam7)
    out[LEMMA7_RESAMPLE] = dict(mech=svtjax.get("generalized-svt", **lap_params(lam7)),
                                params=lap_params(lam7), scale=lam7, eps=epsilon,
                                log10_uncapped=log10, exact_capped=capped, capped=False)
    for label, cap in ((FIG1_METHODS[3], k_max), (GAUSS_UNCAPPED, None)):
        params = dict(c=c, resample=True, epsilon=epsilon, delta=delta, margin=threshold,
                      k_max=cap, threshold_noise=Gaussian(1.0), query_noise=Gaussian(2.0))
        mech = svtjax.get("generalized-svt", **params)
        s1 = float(mech.threshold_noise.sigma)
        log10, capped = lengths("gaussian", s1)
        out[label] = dict(mech=mech, params=params, scale=s1, eps=mech.privacy().epsilon(delta),
                          log10_uncapped=log10 if cap is None else math.nan,
                          exact_capped=capped if cap is not None else math.nan,
                          capped=cap is not None)
    s_gauss = out[FIG1_METHODS[3]]["scale"]
    log_ek = log_expected_length(*laws("gaussian", s_gauss), threshold)

    def stagewise_params(s, c_stage):
        k_stage = min(2 ** min(30, max(2, math.ceil(
            (math.log(4 * c_stage) + log_ek) / math.log(2)))), int(k_max))
        return dict(c=c, c_stage=c_stage, k_max=k_stage, threshold_noise=Gaussian(s),
                    query_noise=Gaussian(2 * s))

    def stagewise(s, c_stage):
        return svtjax.get("stagewise-svt", **stagewise_params(s, c_stage))

    # the paper's Remark after Theorem 13: search c′ (here ⌊√c⌋ and every power of 2 up to c)
    # and δ′ for the tightest bound, i.e. the smallest σ1 calibrated to (ε, δ); δ′ is searched
    # inside ε(δ) (stagewise_svt_guarantee: the span of delta_prime_grid, refined)
    # (a coarse calibration per candidate, then the chosen one to 1e-4)
    found = {}
    for c_stage in sorted({max(1, math.isqrt(c)), c, *(2 ** i for i in range(c.bit_length()))}):
        found[c_stage] = acc.calibrate(lambda s, cs=c_stage: stagewise(s, cs).privacy(),
                                       epsilon, delta, start=s_gauss, rtol=1e-2)
    c_stage = min(found, key=found.get)
    s1 = acc.calibrate(lambda s: stagewise(s, c_stage).privacy(), epsilon, delta,
                       start=found[c_stage], rtol=1e-4)
    k_stage = stagewise_params(s1, c_stage)["k_max"]
    mech = stagewise(s1, c_stage)
    out[FIG1_METHODS[4]] = dict(mech=mech, params=stagewise_params(s1, c_stage), scale=s1,
                                c_stage=c_stage, k_stage=k_stage,
                                eps=mech.privacy().epsilon(delta), log10_uncapped=math.nan,
                                exact_capped=math.nan, capped=True,
                                **stagewise_delta_prime(s1, c, c_stage, k_stage, delta))
    for m in out.values():
        m["name"] = m["mech"].name
    return out


def delta_prime_grid(c: int, c_stage: int, delta: float) -> np.ndarray:
    """The finite grid of δ′ searched beside c′ (Theorem 12: m = ⌈c/c′⌉ stages, each
    (ε_s(δ′), δ′)-DP, so m δ′ < δ): 26 values δ′ = (δ/m)·e^(−j), j = 0, 1, ..., 25 (the
    first just below δ/m). The calibration's own ε(δ) (``svtjax.accounting``) minimises over
    δ′ on the same span and refines between grid points, so it is never worse than this
    grid's best; the grid states the search and reports where its optimum lies."""
    m = -(-int(c) // min(int(c_stage), int(c)))
    return (delta / m) * (1 - 1e-9) * np.exp(-np.arange(26.0))


def stagewise_delta_prime(sigma1: float, c: int, c_stage: int, k_stage: int,
                          delta: float) -> dict[str, Any]:
    """Where the searched stage-wise bound's optimum lies, at the calibrated σ1: the δ′ of
    :func:`delta_prime_grid` with the smallest Theorem 12 ε (each stage Theorems 8/11 +
    Lemma 3 at δ′, the m stages by the optimal composition of Kairouz et al.), that ε
    (``eps_hybrid``), the ε of the m stage RDP curves composed (``eps_rdp``, no δ′) and the
    route the better one takes (``route``: "hybrid" or "rdp"; with one stage there is no δ′:
    "one stage")."""
    from svtjax import accounting as acc
    from svtjax.noise import Gaussian

    c_stage = min(int(c_stage), int(c))
    m = -(-int(c) // c_stage)
    stage = acc.generalized_svt_guarantee(Gaussian(sigma1), Gaussian(2 * sigma1), c_stage,
                                          k_max=int(k_stage), resample=False)
    if m == 1:
        return dict(delta_prime=math.nan, eps_hybrid=math.nan,
                    eps_rdp=stage.epsilon(delta), route="one stage")
    grid = delta_prime_grid(c, c_stage, delta)
    hybrid = [acc.optimal_composition(stage.epsilon(float(d)), float(d), m, delta)
              for d in grid]
    i = int(np.argmin(hybrid))
    rdp = acc.compose(stage, times=m).epsilon(delta)
    return dict(delta_prime=float(grid[i]), eps_hybrid=float(hybrid[i]), eps_rdp=float(rdp),
                route="hybrid" if hybrid[i] < rdp else "rdp")
