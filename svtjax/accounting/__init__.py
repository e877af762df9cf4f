"""Privacy guarantees as objects: what a mechanism's paper proves, and how it composes.

Every ``mech.privacy()`` returns a :class:`Guarantee` with

* ``epsilon(delta=0.0)`` — the ε it proves at that δ (``inf`` when nothing finite is proved),
* ``rdp(orders)`` — an RDP curve ε(α) where one follows from the guarantee,
* ``statement`` — a one-line citation of the theorem,
* ``scope`` — what the guarantee covers (:data:`SCOPE`).

What a guarantee covers: it is the paper's theorem for the **idealised** mechanism, whose noise is
an exact real-valued draw. svtjax's samplers are floating-point transforms of uniform bits
(float32 unless x64 is on), written for Monte Carlo simulation of utility and of the laws the
theorems are about; they are not samplers for releasing real data. Textbook floating-point
Laplace sampling leaks the exact value through the pattern of representable outputs and breaks
differential privacy entirely (Mironov, "On significance of the least significant bits for
differential privacy", CCS 2012); releasing real data needs a sampler built for it (e.g. a
discrete or snapping mechanism). A ``Guarantee`` never refers to the bits svtjax draws.

Guarantee kinds: :class:`PureDP` (ε), :class:`ApproxDP` ((ε, δ)), :class:`RDP` (a curve ε(α),
optionally with a pure-DP cap ε(∞)), :class:`EpsilonOfDelta` (a family of (ε(δ), δ) statements,
e.g. Theorem 12's stage-wise bound), and the non-guarantees :class:`NotPrivate` /
:class:`Unproven`. :func:`compose` adds guarantees (RDP curves add, Mironov 2017 Prop. 1).

Building blocks (all numpy, vectorised over the RDP orders α):

* noise mechanisms: :func:`gaussian_rdp` (α Δ²/(2σ²)), :func:`laplace_rdp` (Mironov 2017,
  Prop. 6), :func:`noise_rdp` / :func:`noise_pure_epsilon` for a ``svtjax.noise`` object;
* conversions: :func:`pure_dp_rdp` (Lemma 4, the sinh bound), :func:`cdp_rdp` (αε²/2),
  :func:`rdp_to_dp` (Lemma 3), :func:`rdp_to_dp_improved` (Canonne, Kamath, Steinke 2020
  Prop. 12 / Asoodeh et al. 2020 — what ``dp_accounting`` uses);
* (ε, δ) composition: :func:`strong_composition` (Dwork, Rothblum, Vadhan 2010),
  :func:`kov_composition` (Kairouz, Oh, Viswanath 2015 Thm 3.5, heterogeneous),
  :func:`optimal_composition` (Kairouz et al. 2015 Thm 3.3, homogeneous, exact);
* SVT bounds of Zhu & Wang (2020): :func:`lemma7_epsilon`, :func:`lemma7_resample_scale`,
  :func:`theorem8_rdp` (bounds (1)-(3)), :func:`proposition10_rdp`, :func:`theorem11_rdp`,
  :func:`theorem11_gaussian_epsilon` (the remark's closed form), :func:`theorem12_epsilon`
  (stage-wise, strong / KOV / optimal composition), and :func:`generalized_svt_guarantee`,
  which picks every bound that applies to a noise pair and takes the pointwise minimum;
* baselines of Section 4: :func:`gaussian_mechanism_guarantee` and
  :func:`noisy_screening_rdp` (data-dependent, Papernot et al. 2018 Thm 6 / Zhu et al. 2020
  Private-kNN Thm 7);
* :func:`calibrate`: the smallest noise scale whose guarantee meets a target (ε, δ).

References:
  Lyu, Su, Li (2017), Theorems 2-7 and Figure 2.
  Zhu & Wang (2020), "Improving sparse vector technique with Rényi differential privacy",
  Lemmas 3, 4, 7, Theorems 8, 11, 12, Proposition 10.
  Mironov (2017), "Rényi differential privacy", Prop. 1 (composition), Prop. 6 (Laplace).
  Kairouz, Oh, Viswanath (2015), "The composition theorem for differential privacy".

The package's modules: ``_guarantees`` (the guarantee objects, noise curves and conversions) and
``_bounds`` (composition theorems, the SVT bounds, the baselines and :func:`calibrate`).
"""

from svtjax.accounting._bounds import (
    calibrate,
    gaussian_mechanism_guarantee,
    generalized_svt_guarantee,
    kov_composition,
    lemma7_epsilon,
    lemma7_resample_scale,
    noisy_screening_rdp,
    optimal_composition,
    proposition10_log_moment,
    proposition10_rdp,
    stagewise_svt_guarantee,
    strong_composition,
    theorem8_rdp,
    theorem11_gaussian_epsilon,
    theorem11_rdp,
    theorem12_epsilon,
)
from svtjax.accounting._guarantees import (
    DEFAULT_ORDERS,
    RDP,
    SCOPE,
    ApproxDP,
    EpsilonOfDelta,
    Guarantee,
    NotPrivate,
    PureDP,
    Unproven,
    cdp_rdp,
    compose,
    gaussian_rdp,
    laplace_rdp,
    noise_pure_epsilon,
    noise_rdp,
    pure_dp_rdp,
    rdp_to_dp,
    rdp_to_dp_improved,
)

__all__ = ["SCOPE", "Guarantee", "PureDP", "ApproxDP", "RDP", "EpsilonOfDelta", "NotPrivate",
           "Unproven", "DEFAULT_ORDERS", "compose", "pure_dp_rdp", "cdp_rdp", "rdp_to_dp",
           "rdp_to_dp_improved", "gaussian_rdp", "laplace_rdp", "noise_rdp", "noise_pure_epsilon",
           "strong_composition", "kov_composition", "optimal_composition", "lemma7_epsilon",
           "lemma7_resample_scale", "theorem8_rdp", "proposition10_log_moment",
           "proposition10_rdp", "theorem11_rdp", "theorem11_gaussian_epsilon",
           "theorem12_epsilon", "generalized_svt_guarantee", "stagewise_svt_guarantee",
           "gaussian_mechanism_guarantee",
           "noisy_screening_rdp", "calibrate"]

