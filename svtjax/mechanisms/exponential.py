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
from svtjax._pytree import is_concrete, pytree_dataclass, replace_leaves, static_field
from svtjax.accounting import PureDP, Unproven
from svtjax.mechanisms._checks import explicit_params, resolve_allocation
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


def _passes(passes, append: bool) -> int:
    """max_passes: 10 with APPEND by default, else 1 (only with APPEND may it exceed 1)."""
    if passes is None:
        passes = 10 if append else 1
    if isinstance(passes, bool) or not isinstance(passes, int):
        raise TypeError(f"max_passes must be an integer >= 1; got {passes!r}")
    _validate.integer("max_passes", passes, minimum=1)
    if passes > 1 and not append:
        raise ValueError("max_passes > 1 needs append=True (only ⊥ queries are re-queried, "
                         "Algorithm 2 lines 18-19)")
    return passes


def _delta(noise: str, delta):
    """δ: required by SVT-Gau (a probability), refused by the other families."""
    if noise == "gaussian":
        if delta is None:
            raise TypeError("svt-exp with noise='gaussian' requires delta (SVT-Gau's δ; the "
                            "paper uses δ = 1/n)")
        _validate.probability("delta", delta)
        return canonical_number(delta, float)
    if delta is not None:
        raise ValueError(f"delta is only used by noise='gaussian'; got delta={delta!r} "
                         f"with noise={noise!r}")
    return delta


def _finite_number(name: str, value) -> None:
    if isinstance(value, bool) or not _validate._is_number_like(value) or (
            is_concrete(value) and not math.isfinite(float(value))):
        raise ValueError(f"{name} must be a finite number; got {value!r}")


def _correction_term(kind, laws, k, alpha, method):
    """r of the correction ``kind`` for the noise laws ``(ρ, ν)`` (Algorithm 2 line 3)."""
    threshold_noise, query_noise = laws
    return correction.term(kind, query_noise, threshold_noise, k, alpha, method=method)


def _correction(cls, v: dict) -> dict:
    """The stored correction: ``{"correction": kind or None, "correction_value": r, ...}``.

    A number r (``correction=r``, or the spelling ``correction="value"`` with
    ``correction_value=r``) is stored as the leaf r with kind None (a built mechanism given back
    to ``dataclasses.replace`` has that form too); "optimal", "mean" and "none" are computed
    here, on the host, from the noise laws at the budgets (a ``correction_value`` given with
    them must be that r: a built mechanism's own).
    """
    corr, value = v["correction"], v["correction_value"]
    if corr is None and value is not None:  # a given r, as stored
        _finite_number("correction_value", value)
        return {}
    if isinstance(corr, str):
        _validate.one_of("correction", corr, CORRECTIONS + ("value",))
        if corr == "value":
            if value is None:
                raise ValueError("correction='value' needs correction_value")
            _finite_number("correction_value", value)
            return {"correction": None}
    else:
        if corr is None or isinstance(corr, bool) or not is_concrete(corr) or \
                jnp.ndim(corr) != 0:
            raise TypeError("correction must be 'optimal', 'mean', 'none' or a number; got "
                            f"{corr!r}")
        if not math.isfinite(float(corr)):
            raise ValueError(f"correction must be a finite number; got {corr!r}")
        return {"correction": None, "correction_value": float(corr)}
    out = {}
    if corr == "optimal":
        if v["correction_k"] is None:
            raise TypeError("svt-exp with correction='optimal' requires correction_k (k of "
                            "Eq. 8: negatives per positive; the paper uses k = ⌊m/c⌋ for m "
                            "queries)")
        _validate.integer("correction_k", v["correction_k"], minimum=1)
        out["correction_k"] = int(v["correction_k"])
    if not is_concrete((v["epsilon"], v["c"], v["sensitivity"], v["alpha"], v["delta"])):
        raise TypeError("svt-exp computes its correction on the host at construction; build "
                        "it from concrete numbers (outside jit/vmap) and batch the built "
                        "mechanisms instead")
    split = v["_split"] if v["_split"] is not None else cls.split(
        v["epsilon"], v["c"], v["allocation"], v["noise"], v["monotonic"])
    laws = cls.noise_laws(*split, c=v["c"], sensitivity=v["sensitivity"], noise=v["noise"],
                          monotonic=v["monotonic"], delta=v["delta"])
    k = out.get("correction_k", v["correction_k"])
    out["correction_value"] = _correction_term(corr, laws, k, v["alpha"], v["correction_method"])
    if value is not None and value != out["correction_value"]:  # a built one's own r passes
        raise ValueError("correction_value is set from correction; pass the number as "
                         "correction=r")
    return out


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
      correction_value: the r added to every threshold (a traced leaf), computed at
        construction from ``correction``; pass a number as ``correction`` instead of setting
        this.
      noise: query-noise family: ``"exponential"`` (Algorithm 2), ``"gumbel"``, ``"laplace"``,
        ``"gaussian"`` (static).
      correction: ``"optimal"`` (Eq. 9, :func:`svtjax.correction.optimal`), ``"mean"``
        (r = E[ν]), ``"none"`` (r = 0) — the kind is static — or a number r (stored as
        ``correction_value``, the kind then None).
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

    # -- construction (``svtjax._pytree``: values in, canonical values out) ----------------------
    @classmethod
    def _normalize(cls, values):
        """Checks the parameters and stores their canonical form: ε, Δ, c, α, δ as Python
        numbers, the split rule (Table 4's by default) or an explicit pair (``_split``), the
        number of passes, and line 3's correction r in the ``correction_value`` leaf, computed
        here on the host (:func:`svtjax.correction.term`) from the budgets' noise laws
        (:meth:`noise_laws`); ``correction`` keeps the kind (None for a given number r)."""
        v = dict(values)
        if v["c"] is None:
            raise TypeError("svt-exp requires parameter c (the cut-off, an integer >= 1)")
        for name in ("epsilon", "c", "sensitivity", "correction_k", "alpha", "delta",
                     "correction_value"):
            _validate.scalar(name, v[name])
        _validate.one_of("noise", v["noise"], tuple(NOISES))
        for flag in ("monotonic", "resample", "append"):
            if not isinstance(v[flag], bool):
                raise TypeError(f"{flag} must be True or False; got {v[flag]!r}")
        v.update(resolve_allocation(v, 0.0, lambda: "table4", named=("table4",)))
        if v["epsilon"] is None:
            raise TypeError("svt-exp requires parameter epsilon (total budget > 0)")
        v = cls._common(v)
        v["max_passes"] = _passes(v["max_passes"], v["append"])
        _validate.nonnegative("alpha", v["alpha"])
        v["alpha"] = canonical_number(v["alpha"], float)
        v["delta"] = _delta(v["noise"], v["delta"])
        v.update(_correction(cls, v))
        return v

    def compute_correction(self) -> float:
        """Algorithm 2 line 3: r from the concrete parameters (on the host, in float64)."""
        return _correction_term(self.correction, self.laws(), self.correction_k, self.alpha,
                                self.correction_method)

    # -- budgets and noises (on the host with Python numbers, traced under jit) ----------------
    @staticmethod
    def split(epsilon, c, allocation, noise="exponential", monotonic=False):
        """``(eps1, eps2)`` of a split rule: Table 4's ε2 = w·ε1 for the query-noise family
        (``"table4"``, :func:`svtjax.budget.liu_ratio`) or a ``svtjax.budget.RULES`` name."""
        if allocation == "table4":
            x = budget.liu_ratio(noise, c, monotonic)
        else:
            x = budget.ratio(allocation, c)
        eps2 = epsilon * x / (1.0 + x)
        return epsilon - eps2, eps2

    def budgets(self):
        """``(eps1, eps2)``: threshold and query budgets (Table 4's split by default)."""
        if self._split is not None:
            return self._split
        return self.split(self.epsilon, self.c, self.allocation, self.noise, self.monotonic)

    @staticmethod
    def noise_laws(eps1, eps2, *, c, sensitivity=1.0, noise="exponential", monotonic=False,
                   delta=None):
        """Lines 2 and 6 from the budgets: ``(ρ, ν)`` = (Lap(Δ/ε1), Exp(1/λ)) with mean
        1/λ = 2cΔ/ε2 (cΔ/ε2 monotonic), ν of the family ``noise``; SVT-Gau multiplies both
        scales by s = sqrt(2 ln(1.25/δ)) (Dwork & Roth 2014, Thm A.1; ρ Gaussian). The one place
        these scales are written: the rule's streams, the correction r and the exact laws
        (``svtjax.exact.law``, ``law_at_share``) read them from here, with Python numbers on
        the host or traced values under a transformation."""
        s = budget.gaussian_factor(delta) if noise == "gaussian" else 1.0
        family = Gaussian if noise == "gaussian" else Laplace
        k = 1.0 if monotonic else 2.0
        return (family(s * sensitivity / eps1),
                NOISES[noise](s * (k * c * sensitivity / eps2)))

    def laws(self):
        """``(ρ, ν)`` at this mechanism's budgets (:meth:`noise_laws`)."""
        eps1, eps2 = self.budgets()
        return self.noise_laws(eps1, eps2, c=self.c, sensitivity=self.sensitivity,
                               noise=self.noise, monotonic=self.monotonic, delta=self.delta)

    def with_budgets(self, eps1, eps2, **leaves):
        """This mechanism with the split (ε1, ε2) and the numeric ``leaves`` (e.g. ``epsilon``,
        ``sensitivity``) replaced, without construction, so the values may be traced (e.g.
        under ``jax.grad`` over the split, ``svtjax.exact.law_at_share``); r is recomputed
        from the new laws ("mean": E[ν], traced too; "optimal" on the host only).

        Raises:
          ValueError: ``correction="optimal"`` with traced budgets.
        """
        out = replace_leaves(self, _split=(eps1, eps2), allocation=None, **leaves)
        if self.correction in ("optimal", "mean"):
            if self.correction == "optimal" and not is_concrete(out.laws()):
                raise ValueError(
                    "svt-exp's optimal correction is computed on the host from concrete scales; "
                    "evaluate at a concrete share, or use correction='mean', 'none' or a number "
                    "to differentiate")
            out = replace_leaves(out, correction_value=out.compute_correction())
        return out

    def unsplit_budget(self):
        """The part of ε outside ε1 + ε2: none."""
        return 0.0

    def threshold_noise(self):
        return self.laws()[0]  # line 2: Lap(Δ/ε1)

    def query_noise(self):
        return self.laws()[1]  # line 6: Exp(1/λ), λ = ε2/(2cΔ) (ε2/(cΔ) monotonic)

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

    def params(self):
        """The parameters as given: an explicit split as ``allocation=(eps1, eps2)``, a given
        correction as the number ``correction=r``."""
        out = explicit_params(self, super().params())
        if self.correction is None:
            out["correction"] = self.correction_value
        else:
            out["correction_value"] = None  # set from the correction kind
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
