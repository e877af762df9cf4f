"""SVT with exponential query noise, threshold correction and appending (Liu et al. 2024).

Liu, Wang, Liu, Li, Chen. "Unleash the Power of Ellipsis: Accuracy-enhanced Sparse Vector
Technique with Exponential Noise", PVLDB 18(2), 2024:
Algorithm 2 (SVT-Exp), Theorem 3 (privacy), Eq. 6 / Table 4 (allocation), Eq. 8-9 and
Algorithms 3-4 (optimal correction), Section 4.4 (appending), Table 3 (baselines).

One registered mechanism, ``svt-exp``, whose query-noise family and correction are selectable so
that every SVT row of Table 3 is a configuration:

=========================  =====================================================
Table 3 row                ``svtjax.get("svt-exp", ...)``
=========================  =====================================================
SVT-Exp (optimal), Alg. 2  ``noise="exponential", correction="optimal"``
SVT-Exp (mean)             ``noise="exponential", correction="mean"``
SVT-Exp (no)               ``noise="exponential", correction="none"``
SVT-Gumbel                 ``noise="gumbel", correction="mean"``
SVT-Lap                    ``noise="laplace", correction="none"``
SVT-Gau                    ``noise="gaussian", correction="none", delta=1/n``
=========================  =====================================================

(Table 3's "Noise for query" / "Noise for threshold" headings are swapped by the text
extraction: queries get the exponential noise, the threshold Laplace noise, as in Algorithm 2.)
The "upper bound" row (rank all scores perturbed with Exp(Δ/ε2)) is not an SVT; the experiment
computes it directly (``experiments/liu2024.py`` at the top level of the repository).

Algorithm 2, line by line, as a rule on the one engine (Lyu et al.'s Figure 1 loop,
``classic.Figure1``, with these noises and options):

* line 2: ρ ~ Lap(b), b = Δ/ε1 (Gaussian N(0, σ1²) for SVT-Gau);
* line 3: r = CorrectionTerm(...) — computed once, on the host, at construction
  (:mod:`svtjax.correction`), and stored in the traced leaf ``correction_value``; the rule adds
  it to every threshold (``threshold_shift``);
* line 6: ν_i ~ Exp(1/λ), λ = ε2/(2cΔ), i.e. mean 2cΔ/ε2; ``monotonic=True`` uses λ = ε2/(cΔ)
  (mean cΔ/ε2; by analogy with Lyu et al. 2017, Theorem 7). Gumbel and Laplace query noise take
  the same scale, Gaussian σ2 = s·2cΔ/ε2 (see below);
* line 9: ⊤ iff q_i + ν_i ≥ (T_i + r) + ρ;
* line 14: RESAMPLE redraws ρ after each ⊤ (``Draws.refresh``);
* line 15: abort after c ⊤ (k_max: the stream ends);
* lines 18-19: APPEND re-queues each ⊥ query. The queue is all items, then the items answered ⊥
  in pass 1 (in order), then those answered ⊥ again, ...; ``max_passes`` caps the number of
  traversals (the paper's "number of traverses", Figure 8). This is the engine's multi-pass
  stream (``passes``): ``Outcome.items`` shows which item each position evaluated, pass p
  occupying positions p·n .. p·n + n − 1.

Which λ Table 5 used: its "Mean" row is 52.32/ε (ε = 0.05 ... 2; the 0.01 entry, 5332.08, is
5232.08 with one digit wrong), which equals cΔ/ε2 with c = 50 and ε2 = ε·w/(1 + w), w = (2c)^(2/3)
(the Laplace split, not Table 4's (√2 c)^(2/3)). So Table 5 used the *monotonic* rate
λ = ε2/(cΔ); ``experiments/liu2024.py`` reproduces it with ``monotonic=True,
allocation="1:(2c)^(2/3)"``.

SVT-Gau calibration (δ > 0): σ1 = s·Δ/ε1, σ2 = s·2cΔ/ε2 (s·cΔ/ε2 monotonic) with
s = sqrt(2 ln(1.25/δ)), the classic Gaussian-mechanism calibration (Dwork & Roth 2014,
Theorem A.1) applied to each noise as the Laplace scales are, which is the calibration under
which Liu et al.'s Table 4 gives SVT-Gau the same w = (2c)^(2/3) as SVT-Lap. Liu et al. prove
nothing for it (the Gaussian fails Theorem 2's conditions), so ``privacy()`` is ``Unproven``
with that nominal ε; Zhu & Wang 2020, Theorem 11 gives a proved (ε, δ) bound for these σ's that
depends on the stream length (``svtjax.accounting.theorem11_gaussian_epsilon``).

Budget allocation (``allocation``): by default the ε2 = w·ε1 of Table 4 for the query-noise
family (``svtjax.budget.liu_ratio``: (√2 c)^(2/3) exponential, (πc/√3)^(2/3) Gumbel, (2c)^(2/3)
Laplace and Gaussian; with ``monotonic`` the same Eq. 6 minimiser with the halved query scale),
any rule of ``svtjax.budget.RULES``, or an explicit ``(eps1, eps2)``.

``Outcome.cost``: each ⊤ is charged ε2/c; with RESAMPLE also (c − 1)ε1/c, so that c ⊤ plus the
up-front ε1 of the first threshold add up to Theorem 3's cε1 + ε2.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax.numpy as jnp

from svtjax import _validate, budget, correction
from svtjax._pytree import is_concrete, pytree_dataclass, static_field
from svtjax.accounting import PureDP, Unproven
from svtjax.mechanisms._checks import check_allocation
from svtjax.mechanisms.base import register
from svtjax.mechanisms.figure1 import Figure1, canonical_number
from svtjax.noise import Exponential, Gaussian, Gumbel, Laplace
from svtjax.reference import exponential as ref
from svtjax.testing import Case, Claim, LawTestedIn, eps_c

__all__ = ["SVTExp", "NOISES", "CORRECTIONS"]

NOISES = {"exponential": Exponential, "gumbel": Gumbel, "laplace": Laplace,
          "gaussian": Gaussian}
CORRECTIONS = ("optimal", "mean", "none")


def _svt_exp(rng):
    """Test cases: ε, c, and k of the optimal correction (Eq. 8) are leaves."""
    d = eps_c(rng)
    d["correction_k"] = int(rng.integers(1, 12))
    return d


def _svt_exp_gaussian(rng):
    d = eps_c(rng)
    d["delta"] = float(rng.uniform(1e-4, 0.1))
    return d


def _svt_exp_value(rng):
    d = eps_c(rng)
    d["correction"] = float(rng.normal(0.0, 3.0))
    return d


@register(reference=ref.svt_exp, cases=[
    # noise family, correction kind, RESAMPLE, APPEND and max_passes are static; ε, c,
    # correction_k (hence the host-computed r), δ are leaves.
    Case("svt-exp", {}, _svt_exp),
    Case("svt-exp-mean-monotonic", {"correction": "mean", "monotonic": True}, eps_c),
    Case("svt-exp-none-resample", {"correction": "none", "resample": True}, eps_c),
    Case("svt-exp-append", {"append": True, "max_passes": 3}, _svt_exp),
    Case("svt-exp-gumbel-mean-append-resample", {"noise": "gumbel", "correction": "mean",
                                                 "append": True, "max_passes": 2,
                                                 "resample": True}, eps_c),
    Case("svt-exp-laplace-1:1", {"noise": "laplace", "correction": "none", "allocation": "1:1"},
         eps_c),
    Case("svt-exp-gaussian-append", {"noise": "gaussian", "correction": "none", "append": True,
                                     "max_passes": 2}, _svt_exp_gaussian),
    Case("svt-exp-value", {"noise": "laplace"}, _svt_exp_value),
], privacy=[
    Claim("eps1-c2", {"epsilon": 1.0, "c": 2, "correction_k": 10}, 1.0, "PureDP",
          ("Liu et al. 2024", "Theorem 3")),
    # RESAMPLE: cε1 + ε2, with ε1 = ε2 = ε/2
    Claim("resample-1:1", {"epsilon": 1.0, "c": 3, "correction": "none", "resample": True,
                           "allocation": "1:1"}, 2.0, "PureDP", ("Liu et al. 2024", "Theorem 3"))],
    distribution=LawTestedIn("tests/test_svt_exp.py", "the answer vectors' exact law"))
@pytree_dataclass
class SVTExp(Figure1):
    """SVT-Exp (Liu et al. 2024, Algorithm 2) and its Table 3 baselines (see the module doc).

    Args:
      epsilon: total budget ε = ε1 + ε2 > 0 (may be omitted with an explicit allocation).
      c: cut-off, the number of ⊤ before halting (integer ≥ 1).
      sensitivity: Δ > 0.
      correction_k: k of Eq. 8 (negatives per positive), needed by ``correction="optimal"``;
        the paper's experiments use ⌊m/c⌋ for m queries, and so do ``svtjax sweep`` and
        ``svtjax simulate`` when it is not given (the dataset's item count m).
      alpha: error tolerance α ≥ 0 of Eq. 8 (paper default 0).
      delta: δ of SVT-Gau's calibration (``noise="gaussian"`` only; the paper uses 1/n).
      correction_value: the r added to every threshold. Set from ``correction``; pass a number
        as ``correction`` instead of setting this.
      noise: query-noise family: ``"exponential"`` (Algorithm 2), ``"gumbel"``, ``"laplace"``,
        ``"gaussian"`` (static).
      correction: ``"optimal"`` (Eq. 9, :func:`svtjax.correction.optimal`), ``"mean"``
        (r = E[ν]), ``"none"`` (r = 0) or a number r (static, except the number).
      monotonic: halve the query-noise scale (λ = ε2/(cΔ)) for monotonic queries.
      allocation: ``None`` (Table 4 for the family), a ``svtjax.budget.RULES`` name, or an
        explicit ``(eps1, eps2)``.
      resample: RESAMPLE of Algorithm 2 line 14 (redraw ρ after each ⊤).
      append: APPEND of lines 18-19 (re-query each ⊥ in later traversals).
      max_passes: traversals when appending (default 10; 1 without APPEND).
      correction_method: method of :func:`svtjax.correction.optimal` (``"auto"``: closed form for
        exponential − Laplace, FFT otherwise).
    """

    epsilon: Any = dataclasses.field(default=None, metadata={
        "required_when": "allocation is not an explicit (eps1, eps2) pair"})
    c: Any = dataclasses.field(default=None, metadata={"required": True})
    sensitivity: Any = 1.0
    correction_k: Any = dataclasses.field(default=None, metadata={
        "required_when": "correction='optimal' (the default); a sweep sets floor(n/c) for n "
                         "items",
        "from_data": lambda params, n, c: (
            max(1, n // c) if params.get("correction", "optimal") == "optimal" else None)})
    alpha: Any = 0.0
    delta: Any = None
    correction_value: Any = None
    _split: Any = None
    noise: str = static_field(default="exponential")
    correction: Any = static_field(default="optimal")
    monotonic: bool = static_field(default=False)
    allocation: Any = static_field(default=None)
    resample: bool = static_field(default=False)
    append: bool = static_field(default=False)
    max_passes: Any = static_field(default=None)
    correction_method: str = static_field(default="auto")
    name = "svt-exp"

    def __post_init__(self):
        if self.c is None:
            raise TypeError("svt-exp requires parameter c (the cut-off, an integer >= 1)")
        _validate.scalars(self, ("epsilon", "c", "sensitivity", "correction_k", "alpha",
                                 "delta", "correction_value"))
        _validate.one_of("noise", self.noise, tuple(NOISES))
        for flag in ("monotonic", "resample", "append"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be True or False; got {getattr(self, flag)!r}")
        self._init_allocation()
        if self.epsilon is None:
            raise TypeError("svt-exp requires parameter epsilon (total budget > 0)")
        self._check_common()
        self._init_passes()
        _validate.nonnegative("alpha", self.alpha)
        object.__setattr__(self, "alpha", canonical_number(self.alpha, float))
        self._init_delta()
        self._init_correction()

    # -- construction helpers -----------------------------------------------------------------
    def _init_allocation(self):
        check_allocation(self, 0.0, lambda: "table4", named=("table4",))

    def _init_passes(self):
        passes = self.max_passes
        if passes is None:
            passes = 10 if self.append else 1
        if isinstance(passes, bool) or not isinstance(passes, int):
            raise TypeError(f"max_passes must be an integer >= 1; got {passes!r}")
        _validate.integer("max_passes", passes, minimum=1)
        if passes > 1 and not self.append:
            raise ValueError("max_passes > 1 needs append=True (only ⊥ queries are re-queried, "
                             "Algorithm 2 lines 18-19)")
        object.__setattr__(self, "max_passes", passes)

    def _init_delta(self):
        if self.noise == "gaussian":
            if self.delta is None:
                raise TypeError("svt-exp with noise='gaussian' requires delta (SVT-Gau's δ; the "
                                "paper uses δ = 1/n)")
            _validate.probability("delta", self.delta)
            object.__setattr__(self, "delta", canonical_number(self.delta, float))
        elif self.delta is not None:
            raise ValueError(f"delta is only used by noise='gaussian'; got delta={self.delta!r} "
                             f"with noise={self.noise!r}")

    def _init_correction(self):
        corr = self.correction
        if isinstance(corr, str):
            _validate.one_of("correction", corr, CORRECTIONS + ("value",))
            if corr == "value":
                if self.correction_value is None:
                    raise ValueError("correction='value' needs correction_value")
                value = self.correction_value
                if isinstance(value, bool) or not _validate._is_number_like(value) or (
                        is_concrete(value) and not math.isfinite(float(value))):
                    raise ValueError(f"correction_value must be a finite number; got {value!r}")
                return
        else:
            if isinstance(corr, bool) or not is_concrete(corr) or jnp.ndim(corr) != 0:
                raise TypeError("correction must be 'optimal', 'mean', 'none' or a number; got "
                                f"{corr!r}")
            value = float(corr)
            if not math.isfinite(value):
                raise ValueError(f"correction must be a finite number; got {corr!r}")
            object.__setattr__(self, "correction", "value")
            object.__setattr__(self, "correction_value", value)
            return
        if self.correction_value is not None:
            raise ValueError("correction_value is set from correction; pass the number as "
                             "correction=r")
        if corr == "optimal":
            if self.correction_k is None:
                raise TypeError("svt-exp with correction='optimal' requires correction_k (k of "
                                "Eq. 8: negatives per positive; the paper uses k = ⌊m/c⌋ for m "
                                "queries)")
            _validate.integer("correction_k", self.correction_k, minimum=1)
            object.__setattr__(self, "correction_k", int(self.correction_k))
        if not is_concrete((self.epsilon, self.c, self.sensitivity, self.alpha, self.delta)):
            raise TypeError("svt-exp computes its correction on the host at construction; build "
                            "it from concrete numbers (outside jit/vmap) and batch the built "
                            "mechanisms instead")
        object.__setattr__(self, "correction_value", self.compute_correction())

    def compute_correction(self) -> float:
        """Algorithm 2 line 3: r from the concrete parameters (on the host, in float64: the
        budgets and noises below are Python numbers when the parameters are)."""
        if self.correction == "none":
            return 0.0
        q_noise = self.query_noise()
        if self.correction == "mean":
            return correction.mean(q_noise)
        return correction.optimal(q_noise, self.threshold_noise(), self.correction_k,
                                  float(self.alpha), method=self.correction_method)

    # -- budgets and noises (on the host with Python numbers, traced under jit) ----------------
    def budgets(self):
        """``(eps1, eps2)``: threshold and query budgets (Table 4's split by default)."""
        if self.allocation == "explicit":
            return self._split
        if self.allocation == "table4":
            x = budget.liu_ratio(self.noise, self.c, self.monotonic)
        else:
            x = budget.ratio(self.allocation, self.c)
        eps2 = self.epsilon * x / (1.0 + x)
        return self.epsilon - eps2, eps2

    def _calibration(self):
        """s = sqrt(2 ln(1.25/δ)) for SVT-Gau (Dwork & Roth 2014, Thm A.1), else 1."""
        return budget.gaussian_factor(self.delta) if self.noise == "gaussian" else 1.0

    def threshold_noise(self):
        eps1, _ = self.budgets()
        family = Gaussian if self.noise == "gaussian" else Laplace
        return family(self._calibration() * self.sensitivity / eps1)  # line 2: Lap(Δ/ε1)

    def query_noise(self):
        _, eps2 = self.budgets()
        k = 1.0 if self.monotonic else 2.0  # line 6: Exp(1/λ), λ = ε2/(2cΔ) (ε2/(cΔ) monotonic)
        return NOISES[self.noise](self._calibration() * (k * self.c * self.sensitivity / eps2))

    def threshold_shift(self):
        return self.correction_value  # lines 3, 9: T_i + r

    def resamples(self):
        return self.resample  # line 14

    def passes(self):
        return self.max_passes  # lines 18-19: APPEND

    def top_cost(self):
        eps1, eps2 = self.budgets()
        top_cost = eps2 / self.c
        if self.resample:
            top_cost = top_cost + eps1 * (self.c - 1) / self.c
        return top_cost

    def reference_params(self):
        out = super().reference_params()
        if self.allocation == "explicit":
            out["allocation"] = tuple(float(x) for x in self._split)
        return out

    @classmethod
    def example_params(cls, *, epsilon=1.0, c=2, n=None):
        """ε, c and the optimal correction's k = ⌊n/c⌋ (Liu et al. 2024, §6; 8 without n)."""
        return {"epsilon": epsilon, "c": c,
                "correction_k": max(1, n // c) if n is not None else 8}

    def privacy(self):
        eps1, eps2 = (float(x) for x in self.budgets())
        c = int(self.c)
        if self.noise == "gaussian":
            return Unproven(
                "Liu et al. 2024 (SVT-Gau, Table 3) calibrate σ1 = sΔ/ε1, σ2 = s·2cΔ/ε2 with "
                "s = sqrt(2 ln(1.25/δ)) (Dwork & Roth 2014, Thm A.1) but prove nothing for "
                "Gaussian SVT: Theorem 2's conditions fail for Gaussian noise; see Zhu & Wang "
                "2020, Theorem 11 for a length-dependent (ε, δ) bound", eps1 + eps2)
        fam = {"exponential": "exponential (k2 = λ)", "gumbel": "Gumbel (k2 = 1/scale)",
               "laplace": "Laplace (k2 = 1/scale)"}[self.noise]
        mono = (" with the monotonic-query scale cΔ/ε2 (Lyu, Su, Li 2017, Theorem 7's argument)"
                if self.monotonic else "")
        tail = "; APPEND re-queries ⊥ answers at no extra cost (Section 4.4)" if self.append \
            else ""
        if self.resample:
            return PureDP(
                f"Liu et al. 2024, Theorem 3 (RESAMPLE = True: (cε1, ε2)-DP as printed, i.e. "
                f"cε1 + ε2 by sequential composition), {fam} query noise satisfying Theorem 2"
                f"{mono}{tail}", c * eps1 + eps2)
        return PureDP(f"Liu et al. 2024, Theorem 3 (RESAMPLE = False: (ε1 + ε2)-DP), {fam} "
                      f"query noise satisfying Theorem 2{mono}{tail}", eps1 + eps2)
