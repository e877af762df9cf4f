"""(ε, δ) composition theorems, the SVT bounds of Zhu & Wang (2020), Section 4's baselines and
:func:`calibrate` (documented in :mod:`svtjax.accounting`)."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

import numpy as np

from svtjax import _validate
from svtjax.accounting._guarantees import (
    DEFAULT_ORDERS,
    RDP,
    EpsilonOfDelta,
    Guarantee,
    Unproven,
    _check_delta,
    _NoFiniteEpsilon,
    _orders,
    compose,
    gaussian_rdp,
    noise_pure_epsilon,
    noise_rdp,
    pure_dp_rdp,
    rdp_to_dp,
)


def strong_composition(eps: float, delta: float, k: int, delta_tilde: float
                       ) -> tuple[float, float]:
    """k-fold adaptive composition of (ε, δ)-DP (Dwork, Rothblum, Vadhan 2010; Dwork & Roth
    2014, Thm 3.20): (sqrt(2k log(1/δ̃)) ε + k ε (e^ε − 1), k δ + δ̃)."""
    _check_delta(delta_tilde, allow_zero=False)
    eps = float(eps)
    return (math.sqrt(2 * k * math.log(1 / delta_tilde)) * eps + k * eps * math.expm1(eps),
            k * float(delta) + float(delta_tilde))


def kov_composition(epsilons, deltas, delta: float) -> float:
    """Heterogeneous composition (Kairouz, Oh, Viswanath 2015, Theorem 3.5): for δ̃ with
    1 − δ = (1 − δ̃) Π(1 − δ_i), ε = min{Σε_i, Σ(e^ε_i − 1)ε_i/(e^ε_i + 1) +
    sqrt(2Σε_i² log(e + sqrt(Σε_i²)/δ̃)), Σ(e^ε_i − 1)ε_i/(e^ε_i + 1) + sqrt(2Σε_i² log(1/δ̃))}.
    ``inf`` when δ ≤ 1 − Π(1 − δ_i). (autodp's ``DP_acct.get_eps``.)"""
    delta = _check_delta(delta, allow_zero=False)
    e = np.asarray(epsilons, dtype=float)
    d = np.asarray(deltas, dtype=float)
    delta_tilde = -math.expm1(math.log1p(-delta) - float(np.sum(np.log1p(-d))))
    if delta_tilde <= 0:
        return math.inf
    s1 = float(np.sum(e))
    s2 = float(np.sum(np.expm1(e) * e / (np.exp(e) + 1)))
    s3 = float(np.sum(e ** 2))
    return min(s1, s2 + math.sqrt(2 * s3 * math.log(math.e + math.sqrt(s3) / delta_tilde)),
               s2 + math.sqrt(2 * s3 * math.log(1 / delta_tilde)))


def _optimal_delta0(eps: float, k: int, eps_g: float) -> float:
    """δ of the k-fold composition of ε-DP at ε_g (Kairouz et al. 2015, Thm 3.3, extended to
    every ε_g by Murtagh & Vadhan 2016): Σ_l C(k,l) [e^{(k−l)ε} − e^{ε_g + lε}]_+ / (1+e^ε)^k."""
    return _optimal_delta0_of(eps, k)(eps_g)


def _optimal_delta0_of(eps: float, k: int):
    """:func:`_optimal_delta0` as a function of ε_g, with the terms that do not depend on ε_g
    computed once (a bisection evaluates it ~45 times): the same operations in the same order,
    so the same numbers."""
    from scipy.special import gammaln

    j = np.arange(k + 1)
    gap = (k - 2 * j) * eps
    log_c = gammaln(k + 1) - gammaln(j + 1) - gammaln(k - j + 1)
    head = log_c + (k - j) * eps
    tail = k * np.logaddexp(0.0, eps)

    def delta0(eps_g: float) -> float:
        live = gap > eps_g
        if not np.any(live):
            return 0.0
        log_terms = head[live] + np.log(-np.expm1(eps_g - gap[live])) - tail
        return float(np.exp(np.logaddexp.reduce(log_terms)))

    return delta0


def optimal_composition(eps: float, delta_each: float, k: int, delta: float) -> float:
    """Smallest ε_g such that k-fold composition of (ε, δ_each)-DP is (ε_g, δ)-DP (Kairouz,
    Oh, Viswanath 2015, Theorem 3.3, optimal for homogeneous composition): the total δ is
    1 − (1 − δ_each)^k (1 − δ0(ε_g)) with δ0 from :func:`_optimal_delta0`; solved by
    bisection. ``inf`` when δ ≤ 1 − (1 − δ_each)^k."""
    delta = _check_delta(delta, allow_zero=False)
    eps = float(eps)
    need = -math.expm1(math.log1p(-delta) - k * math.log1p(-float(delta_each)))  # δ0 allowed
    if need <= 0:
        return math.inf
    delta0 = _optimal_delta0_of(eps, k)
    if delta0(0.0) <= need:
        return 0.0
    lo, hi = 0.0, k * eps
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if delta0(mid) > need:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * max(hi, 1e-300):
            break
    return hi


# ============================================================================================
# Zhu & Wang (2020): SVT bounds
# ============================================================================================

def lemma7_epsilon(eps1: float, eps2: float, c: int) -> float:
    """Lemma 7 (no RESAMPLE): Algorithm 1 with ρ ~ Lap(Δ/ε1), ν ~ Lap(2Δ/ε2) is
    (ε1 + c ε2)-DP."""
    return float(eps1) + int(c) * float(eps2)


def lemma7_resample_scale(epsilon: float, delta: float, c: int, sensitivity: float = 1.0
                          ) -> float:
    """Lemma 7 (RESAMPLE): Δ/ε1 = Δ/ε2 = sqrt(32 c log(1/δ)) Δ/ε gives (ε, δ)-DP, i.e. ρ ~ Lap(b)
    and ν ~ Lap(2b) with the returned b (Dwork & Roth 2014, Thm 3.25)."""
    _check_delta(delta, allow_zero=False)
    return math.sqrt(32 * int(c) * math.log(1 / float(delta))) * float(sensitivity) / float(
        epsilon)


def theorem8_rdp(orders, rho_rdp: Callable, nu_rdp: Callable, *, bound: int,
                 log_sup_k: Optional[float] = None, gamma: Optional[float] = None,
                 log_moment: Optional[float] = None, nu_pure: Optional[float] = None
                 ) -> np.ndarray:
    """Theorem 8: RDP of Algorithm 2 with c = 1, from the RDP of its noise-adding mechanisms.

    ``rho_rdp`` is ε_ρ(α) of M_ρ for Δ-sensitive queries and ``nu_rdp`` ε_ν(α) of M_ν for
    **2Δ**-sensitive queries (the theorem's hypotheses); K is the stopping time (#⊥ + 1).

    * bound 1 (eq. 1): ε_ρ(α) + ε_ν(α) + log sup_z E[K|ρ=z] / (α−1), ``log_sup_k`` the log of
      that supremum (log(1 + k_max) for a length cap k_max, the Remark "Bounded-length SVT");
    * bound 2 (eq. 2): (α − (γ−1)/γ)/(α−1) ε_ρ(γα/(γ−1)) + ε_ν(α) + log E[E[K|ρ]^γ]/(γ(α−1)),
      ``log_moment`` the log of that moment;
    * bound 3 (eq. 3): ε_ρ(α) + ε_ν(∞), ``nu_pure`` = ε_ν(∞).
    """
    alpha = _orders(orders)
    if bound == 1:
        return rho_rdp(alpha) + nu_rdp(alpha) + float(log_sup_k) / (alpha - 1)
    if bound == 2:
        g = float(gamma)
        if not g > 1:
            raise ValueError(f"gamma must be > 1; got {gamma}")
        return ((alpha - (g - 1) / g) / (alpha - 1) * rho_rdp(g * alpha / (g - 1))
                + nu_rdp(alpha) + float(log_moment) / (g * (alpha - 1)))
    if bound == 3:
        return rho_rdp(alpha) + float(nu_pure)
    raise ValueError(f"Theorem 8 has bounds 1, 2 and 3; got {bound!r}")


def proposition10_log_moment(sigma1: float, margin: float) -> float:
    """log of Proposition 10's bound on E[E[K|ρ]^γ] at γ = 2, as in its RDP statement:
    log(1 + 2√3 π (1 + 9T²/σ1²) e^{T²/σ1²})."""
    x = float(margin) ** 2 / float(sigma1) ** 2
    return float(np.logaddexp(0.0, math.log(2 * math.sqrt(3) * math.pi) + math.log1p(9 * x) + x))


def proposition10_rdp(orders, sigma1: float, sigma2: float, margin: float,
                      sensitivity: float = 1.0) -> np.ndarray:
    """Proposition 10 (Gaussian SVT, c = 1, non-negative queries Q+(Δ), threshold T = margin,
    σ2 ≥ √3 σ1), as stated: αΔ²/σ1² + 2αΔ²/σ2² + log(1 + 2√3π(1 + 9T²/σ1²)e^{T²/σ1²})/(2(α−1)).

    No length cap is needed. (The ε_ρ term αΔ²/σ1² is the paper's statement; it is what
    autodp's ``RDP_gaussian_svt_c1`` implements too.)

    Raises:
      ValueError: σ2 < √3 σ1 or T < 0.
    """
    s1, s2, d = float(sigma1), float(sigma2), float(sensitivity)
    if s2 < math.sqrt(3) * s1:
        raise ValueError(f"Proposition 10 needs sigma2 >= sqrt(3) * sigma1; got sigma1={s1}, "
                         f"sigma2={s2}")
    _validate.nonnegative("margin", margin)
    alpha = _orders(orders)
    return (alpha * d ** 2 / s1 ** 2 + 2 * alpha * d ** 2 / s2 ** 2
            + proposition10_log_moment(s1, margin) / (2 * (alpha - 1)))


def _log_binomial_prefix(k_max: int, c: int) -> float:
    """log Σ_{j=0}^{c} C(k_max, j) (terms with j > k_max vanish)."""
    from scipy.special import gammaln

    j = np.arange(min(int(c), int(k_max)) + 1)
    log_c = gammaln(k_max + 1) - gammaln(j + 1) - gammaln(k_max - j + 1)
    return float(np.logaddexp.reduce(log_c))


def theorem11_rdp(orders, rho_rdp: Callable, nu_rdp: Callable, c: int, k_max: int
                  ) -> np.ndarray:
    """Theorem 11 (length-capped generalized SVT, c > 1, no RESAMPLE):
    ε_ρ(α) + c ε_ν(α) + (1 + log Σ_{k=0}^{c} C(k_max, k)) / (α−1), with ε_ν for 2Δ."""
    alpha = _orders(orders)
    return (rho_rdp(alpha) + int(c) * nu_rdp(alpha)
            + (1.0 + _log_binomial_prefix(int(k_max), int(c))) / (alpha - 1))


def theorem11_gaussian_epsilon(sigma1: float, sigma2: float, c: int, k_max: int, delta: float,
                               sensitivity: float = 1.0) -> float:
    """The closed form printed after Theorem 11 (both noises Gaussian): with
    A = Δ²/(2σ1²) + 2cΔ²/σ2², ε(δ) ≤ A + sqrt(2A (log(1/δ) + log(c C(k_max, c)))).

    Caution: minimising Theorem 11 + Lemma 3 exactly over α gives A + 2 sqrt(A B) with
    B = 1 + log Σ_{j≤c} C(k_max, j) + log(1/δ), so the printed sqrt(2AB) is below what the
    theorem proves (tests/test_accounting.py checks both). Kept for comparison only; svtjax's
    guarantees use Theorem 11 + Lemma 3 numerically (:func:`theorem12_epsilon`'s default)."""
    from scipy.special import gammaln

    _check_delta(delta, allow_zero=False)
    d = float(sensitivity)
    a = d ** 2 / (2 * float(sigma1) ** 2) + 2 * c * d ** 2 / float(sigma2) ** 2
    log_count = math.log(c) + float(gammaln(k_max + 1) - gammaln(c + 1) - gammaln(k_max - c + 1))
    return a + math.sqrt(2 * a * (math.log(1 / float(delta)) + log_count))


def theorem12_epsilon(sigma1: float, c: int, c_stage: int, k_stage: int, delta: float, *,
                      sigma2: Optional[float] = None, sensitivity: float = 1.0,
                      composition: str = "optimal", stage_bound: str = "theorem11") -> float:
    """Theorem 12 evaluated numerically (its Remark: "use the optimal advanced composition ...
    and search for the best parameters"): Algorithm 3 with Gaussian noises, RESAMPLE = False,
    per-stage cut-off c′ and cap k′ is (ε, δ̃ + m δ′)-DP, m = ⌈c/c′⌉.

    Each stage is (ε_s(δ′), δ′)-DP by Theorem 11 (with c′, k′) converted by Lemma 3 over
    ``DEFAULT_ORDERS`` (``stage_bound="theorem11"``) or by the closed form after Theorem 11
    (``"remark"``); every stage is charged the worst stage's c′ (the last stage's c̃ ≤ c′). The
    m stages compose by ``composition``: ``"strong"`` (DRV'10, δ̃ = δ − mδ′), ``"kov"``
    (Kairouz et al. Thm 3.5) or ``"optimal"`` (Kairouz et al. Thm 3.3). δ′ is chosen to minimise
    ε. The conditions of the asymptotic statement (σ2 = 2σ1, σ1 ≥ 8Δ sqrt(c log(1/δ′)),
    c′ C(k′, c′) ≤ 1/δ′) are not needed for this numeric bound (Theorem 11 and the composition
    theorems hold without them). With m = 1 this is Theorem 11 + Lemma 3.
    """
    delta = _check_delta(delta, allow_zero=False)
    _validate.integer("c", c, minimum=1)
    _validate.integer("c_stage", c_stage, minimum=1)
    _validate.integer("k_stage", k_stage, minimum=1)
    s1 = float(sigma1)
    s2 = 2 * s1 if sigma2 is None else float(sigma2)
    c_stage = min(int(c_stage), int(c))
    m = -(-int(c) // c_stage)
    d = float(sensitivity)

    def stage_eps(delta_stage):
        if stage_bound == "remark":
            return theorem11_gaussian_epsilon(s1, s2, c_stage, k_stage, delta_stage, d)
        rdp = theorem11_rdp(DEFAULT_ORDERS, lambda a: gaussian_rdp(s1, a, d),
                            lambda a: gaussian_rdp(s2, a, 2 * d), c_stage, k_stage)
        return rdp_to_dp(DEFAULT_ORDERS, rdp, delta_stage)

    if m == 1:
        return stage_eps(delta)
    return _compose_stages(stage_eps, m, delta, composition)


def _compose_stages(stage_eps: Callable[[float], float], m: int, delta: float,
                    composition: str) -> float:
    """min over δ′ of the ε of m adaptive stages, each (stage_eps(δ′), δ′)-DP, composed by
    ``composition`` ("strong", "kov" or "optimal") into a total δ."""
    from scipy.optimize import minimize_scalar

    if composition not in ("strong", "kov", "optimal"):
        raise ValueError(f"composition must be 'strong', 'kov' or 'optimal'; got {composition!r}")

    def total(log_ds):
        ds = math.exp(log_ds)
        es = stage_eps(ds)
        if not math.isfinite(es):
            return math.inf
        if composition == "strong":
            rest = delta - m * ds
            return math.inf if rest <= 0 else strong_composition(es, ds, m, rest)[0]
        if composition == "kov":
            return kov_composition([es] * m, [ds] * m, delta)
        return optimal_composition(es, ds, m, delta)

    hi = math.log(delta / m) + math.log1p(-1e-9)
    grid = np.linspace(hi - 25.0, hi, 60)
    vals = np.array([total(x) for x in grid])
    i = int(np.argmin(vals))
    if not math.isfinite(vals[i]):
        return math.inf
    lo_b, hi_b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = minimize_scalar(total, bounds=(lo_b, hi_b), method="bounded", options={"xatol": 1e-9})
    return float(min(res.fun, vals[i]))


def stagewise_svt_guarantee(threshold_noise, query_noise, c: int, c_stage: int, *,
                            k_stage: Optional[int] = None, resample: bool = False,
                            sensitivity: float = 1.0, margin: Optional[float] = None,
                            composition: str = "optimal") -> Guarantee:
    """Algorithm 3 (stage-wise generalized SVT): m = ⌈c/c′⌉ adaptive stages, each Algorithm 2
    with cut-off ≤ c′ and cap k′ (``k_stage``), guaranteed by :func:`generalized_svt_guarantee`.

    ε(δ) is the smaller of (a) the m stage RDP curves composed (Mironov Prop. 1) and converted
    by Lemma 3, and (b) Theorem 12's hybrid: each stage (ε_s(δ′), δ′)-DP via Lemma 3, the m
    stages composed by ``composition`` (strong, KOV Thm 3.5 or optimal KOV Thm 3.3), δ′
    optimised (:func:`theorem12_epsilon` is (b) for Gaussian noise with Theorem 11 per stage).
    """
    c, c_stage = int(c), min(int(c_stage), int(c))
    m = -(-c // c_stage)
    stage = generalized_svt_guarantee(threshold_noise, query_noise, c_stage, k_max=k_stage,
                                      resample=resample, sensitivity=sensitivity, margin=margin)
    where = (f"Zhu & Wang 2020, Algorithm 3 / Theorem 12 ({m} stages of c′ = {c_stage}, "
             f"k′_max = {k_stage if k_stage is not None else '∞'}, {composition} composition); "
             f"each stage: {stage.statement}")
    if isinstance(stage, _NoFiniteEpsilon):
        return Unproven(where)
    if m == 1:
        return dataclasses.replace(stage, statement=where)
    rdp_total = compose(stage, times=m)

    def fn(delta):
        return min(rdp_total.epsilon(delta),
                   _compose_stages(stage.epsilon, m, delta, composition))

    return EpsilonOfDelta(where, fn)


def generalized_svt_guarantee(threshold_noise, query_noise, c: int, *,
                              k_max: Optional[int] = None, resample: bool = False,
                              sensitivity: float = 1.0, margin: Optional[float] = None
                              ) -> Guarantee:
    """Every bound of Zhu & Wang (2020) that applies to Algorithm 2 with these noises; the RDP
    curve is their pointwise minimum.

    With ε_ρ = RDP of ``threshold_noise`` at sensitivity Δ, ε_ν = RDP of ``query_noise`` at 2Δ:

    * one SVT with cut-off 1 (c = 1, or each of the c rounds when RESAMPLE: a ⊤ followed by a
      fresh threshold starts an independent c = 1 SVT on the rest of the stream, so the c rounds
      compose, Mironov 2017 Prop. 1): Theorem 8 (1) with sup E[K|ρ] ≤ k_max + 1 when k_max is
      finite; Theorem 8 (3) when ε_ν(∞) < ∞ (Laplace query noise); Proposition 10 when both
      noises are Gaussian with σ2 ≥ √3σ1 and ``margin`` (the threshold T, queries in Q+(Δ)) is
      given; with both noises Laplace also Lemma 4 applied to the pure ε_ρ(∞) + ε_ν(∞)
      (Lemma 7's ε1 + ε2);
    * c > 1 without RESAMPLE: Theorem 11 when k_max is finite; with both noises Laplace,
      Lemma 7's pure ε_ρ(∞) + c ε_ν(∞) and its Lemma 4 curve.

    Returns :class:`Unproven` when no bound applies (e.g. Gaussian query noise with neither a
    length cap nor ``margin``: Theorem 8 (1)-(2) "do not imply RDP" for k_max = ∞).
    """
    d = float(sensitivity)
    c = int(c)
    rho = lambda a: noise_rdp(threshold_noise, a, d)  # noqa: E731
    nu = lambda a: noise_rdp(query_noise, a, 2 * d)  # noqa: E731
    rho_pure = noise_pure_epsilon(threshold_noise, d)
    nu_pure = noise_pure_epsilon(query_noise, 2 * d)
    finite_k = k_max is not None and math.isfinite(k_max)
    curves: list[Callable] = []
    names: list[str] = []
    per_round = c == 1 or resample
    rounds = c if resample else 1
    if per_round:
        pure = rho_pure + nu_pure
        if finite_k:
            log_k = math.log1p(float(k_max))
            curves.append(lambda a: theorem8_rdp(a, rho, nu, bound=1, log_sup_k=log_k))
            names.append("Theorem 8 (1) with sup E[K|ρ] ≤ k_max + 1")
        if math.isfinite(nu_pure):
            curves.append(lambda a: theorem8_rdp(a, rho, nu, bound=3, nu_pure=nu_pure))
            names.append("Theorem 8 (3)")
        if (margin is not None and threshold_noise.family == "gaussian"
                and query_noise.family == "gaussian"
                and float(query_noise.sigma) >= math.sqrt(3) * float(threshold_noise.sigma)):
            s1, s2 = float(threshold_noise.sigma), float(query_noise.sigma)
            curves.append(lambda a: proposition10_rdp(a, s1, s2, margin, d))
            names.append(f"Proposition 10 (queries in Q+(Δ), T = {float(margin):g})")
    else:
        pure = rho_pure + c * nu_pure
        if finite_k:
            curves.append(lambda a: theorem11_rdp(a, rho, nu, c, int(k_max)))
            names.append("Theorem 11")
    if math.isfinite(pure):
        curves.append(lambda a: pure_dp_rdp(pure, a))
        names.append(f"Lemma 7 ({'ε1 + ε2' if per_round else 'ε1 + cε2'} = {pure:.6g}) "
                     "with Lemma 4")
    where = (f"Zhu & Wang 2020, Algorithm 2 ({threshold_noise.family} threshold noise, "
             f"{query_noise.family} query noise, c = {c}, k_max = "
             f"{k_max if finite_k else '∞'}, RESAMPLE = {bool(resample)})")
    if not curves:
        return Unproven(f"{where}: no bound applies — Theorem 8 (1)-(2) need k_max < ∞ or the "
                        "non-negative-query margin of Proposition 10, Theorem 8 (3) needs "
                        "ε_ν(∞) < ∞, Theorem 11 needs k_max < ∞")
    fns = tuple(curves)

    def curve(a):
        return rounds * np.min(np.stack([np.broadcast_to(f(a), np.shape(a)) for f in fns]),
                               axis=0)

    how = f"{rounds} rounds composed (RDP), each: " if rounds > 1 else ""
    return RDP(f"{where}: {how}min of {', '.join(names)}", curve, rounds * pure)


def gaussian_mechanism_guarantee(sigma: float, k: int, sensitivity: float = 1.0) -> RDP:
    """Section 4's baseline: releasing k Δ-sensitive answers with N(0, σ²) noise, composed
    under RDP: ε(α) = kαΔ²/(2σ²)."""
    s, d = float(sigma), float(sensitivity)
    return RDP(f"Gaussian mechanism, σ = {s:g}, composed {int(k)} times (Mironov 2017)",
               lambda a: int(k) * gaussian_rdp(s, a, d))


def _bernoulli_renyi(log_p, log_q, alpha):
    """D_α(Bern(p) || Bern(q)) from log p, log q (vectorised over α)."""
    log1p_ = np.log(-np.expm1(log_p))
    log1q_ = np.log(-np.expm1(log_q))
    t1 = alpha * log_p - (alpha - 1) * log_q
    t2 = alpha * log1p_ - (alpha - 1) * log1q_
    return np.logaddexp(t1, t2) / (alpha - 1)


def noisy_screening_rdp(orders, sigma: float, threshold: float, query: float,
                        sensitivity: float = 1.0) -> np.ndarray:
    """Data-dependent RDP of one noisy-screening step (Section 4, Figure 2: answer whether
    q(D) + N(0, σ²) ≥ T; Papernot et al. 2018 Thm 6 form, autodp ``RDP_noisy_screen``): the
    Rényi divergence of the two Bernoulli outputs, maximised over the neighbours
    q(D′) = q(D) ± Δ and both directions. Data-dependent: the value is itself sensitive."""
    from scipy.stats import norm

    alpha = _orders(orders)
    s, t, q, d = float(sigma), float(threshold), float(query), float(sensitivity)
    log_p = float(norm.logsf((t - q) / s))
    worst = np.zeros_like(alpha)
    for q2 in (q - d, q + d):
        log_p2 = float(norm.logsf((t - q2) / s))
        worst = np.maximum(worst, _bernoulli_renyi(log_p, log_p2, alpha))
        worst = np.maximum(worst, _bernoulli_renyi(log_p2, log_p, alpha))
    return worst


def calibrate(guarantee_of_scale: Callable[[float], Guarantee], epsilon: float,
              delta: float = 0.0, *, start: float = 1.0, rtol: float = 1e-10) -> float:
    """The smallest noise scale s whose guarantee meets the target: ``guarantee_of_scale(s)
    .epsilon(delta) <= epsilon`` (ε(δ) must be non-increasing in s). Bracketing by doubling,
    then bisection in log scale to relative tolerance ``rtol``; returns the upper end (which
    meets the target).

    Raises:
      ValueError: no scale in [1e-12, 1e12] × ``start`` meets the target.
    """
    _validate.positive("epsilon", epsilon)
    target = float(epsilon)
    ok = lambda s: guarantee_of_scale(s).epsilon(delta) <= target  # noqa: E731
    lo = hi = float(start)
    if ok(hi):
        while ok(lo):
            lo /= 2
            if lo < 1e-12 * start:
                return lo
    else:
        while not ok(hi):
            hi *= 2
            if hi > 1e12 * start:
                raise ValueError(f"no noise scale up to {hi:g} meets epsilon={epsilon} at "
                                 f"delta={delta}")
        lo = hi / 2
    while hi / lo - 1 > rtol:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
