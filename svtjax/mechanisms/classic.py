"""The classic SVT variants of Lyu, Su & Li (2017): Algorithms 1-7, as rules on the one engine.

Lyu, Su, Li. "Understanding the Sparse Vector Technique for Differential Privacy", PVLDB 10(6),
2017: Figure 1 (Algorithms 1-6), Figure 2 (their noise
scales and privacy properties), Section 3 (Theorems 2-5), Section 4 (Algorithm 7, Theorems 6-7,
budget allocation Eq. 13), §4.4 and §5 (SVT-ReTr).

Figure 1 writes Algorithms 1-6 as one loop, and so does svtjax (:class:`Figure1`, in
``svtjax.mechanisms.figure1``):

=====  ==================================================  ===================================
line   Figure 1                                            here
=====  ==================================================  ===================================
1      ρ = Lap(·)                                          :meth:`Figure1.threshold_noise`
2      for each query q_i                                  the engine's stream
3      ν_i = Lap(·)                                        :meth:`Figure1.query_noise`
4      if q_i + ν_i ≥ T_i + ρ                              :meth:`Figure1.step`
5      output a_i = ⊤ (Alg. 3: q_i + ν_i)                  ``Written``, :meth:`Figure1.release`
5      (Alg. 2) ρ = Lap(·) anew                            :meth:`Figure1.resamples`
6      count = count + 1, abort if count ≥ c               ``CountState.count``, ``halted``
8      output a_i = ⊥                                      ``Written(False)``
=====  ==================================================  ===================================

Each class below states its row of Figure 2 (noise scales, cut-off, what a ⊤ releases, whether
ρ is redrawn). Algorithm 7 (SVT-S) adds a budget split and noisy answers; SVT-ReTr runs it on
the retraversal stream; Ding et al.'s Sparse-Vector-with-Gap releases the noisy gap.

Choices where the paper is silent (documented and tested):

* Thresholds: every variant accepts a scalar T or per-query thresholds T_i. Figure 2's footnote
  notes the difference is syntactic (q_i − T_i against 0).
* ``Outcome.cost``: the budget the proof charges to each ⊤, i.e. ε2/c with ε2 the query budget
  implied by the noise scale through Theorem 6's argument (ν = Lap(2cΔ/ε2)), plus ε3/c for a
  released answer; ``dpbook`` charges ε/c per ⊤ (each ⊤ closes one of c independent
  AboveThreshold segments, threshold included). Variants without a cut-off charge nothing per
  answer. The threshold's ε1 is up-front and lives in ``privacy()``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from svtjax import _validate, budget
from svtjax._pytree import is_concrete, pytree_dataclass, replace_leaves, static_field
from svtjax.accounting import NotPrivate, PureDP
from svtjax.mechanisms._checks import explicit_params, gaps_fit, resolve_allocation
from svtjax.mechanisms.base import register
from svtjax.mechanisms.figure1 import Figure1, canonical_number
from svtjax.noise import Laplace
from svtjax.reference import classic as ref
from svtjax.testing import (
    Q6,
    R6,
    T6,
    Case,
    Claim,
    Distribution,
    DistributionCase,
    Figure1Law,
    LawTestedIn,
    eps,
    eps_c,
    eps_c_eps3,
    eps_c_raise,
)

__all__ = ["Figure1", "LyuAlg1", "DPBook", "Roth11", "LeeClifton", "Stoddard", "Chen", "SVTS",
           "SVTReTr", "SVTGap"]


# -- test declarations: each mechanism's paper, for the tests (``svtjax.testing``) ------------
# Privacy claims and Figure 2's noise (Figure1Law), written from the paper, never from the code.
_EPSILONS = (0.05, 0.5, 1.0, 3.7)


def _total(p):
    return p["epsilon"]


def _sens(p):
    return p.get("sensitivity", 1.0)


def _eds(p):
    return p["epsilon"], p.get("sensitivity", 1.0), p.get("c")


def _not_private(algorithm: int, theorem: int, **params):
    """Lyu'17 Theorems 3-5: no finite ε (the authors claimed ε), for every ε of a grid."""
    others = tuple(f"Theorem {t}" for t in (3, 4, 5) if t != theorem)
    return [Claim(f"eps{e}", {"epsilon": e, "sensitivity": 2.5, **params}, math.inf,
                  "NotPrivate", ("Lyu", f"Algorithm {algorithm}", f"Theorem {theorem}"),
                  others, nominal=e) for e in _EPSILONS]


@register(reference=ref.lyu_alg1, cases=[Case("lyu-alg1", {}, eps_c)], privacy=[
    Claim(f"eps{e}-c{c}", {"epsilon": e, "c": c, "sensitivity": 2.5}, _total, "PureDP",
          ("Lyu", "Theorem 2")) for e, c in ((0.05, 1), (3.7, 37))],
    distribution=Distribution(  # Figure 2: ρ = Lap(2Δ/ε), ν = Lap(4cΔ/ε)
        lambda p: Figure1Law(2 * _sens(p) / p["epsilon"], 4 * p["c"] * _sens(p)
                             / p["epsilon"], p["c"]), (
            DistributionCase("lyu-alg1-c2", {"epsilon": 2.0, "c": 2}, Q6, 1.0, 11),
            DistributionCase("lyu-alg1-c3-per-query", {"epsilon": 4.0, "c": 3}, Q6, T6, 12),
            DistributionCase("lyu-alg1-c1-sens2", {"epsilon": 2.0, "c": 1, "sensitivity": 2.0},
                             tuple(2 * r for r in R6), 2.0, 13))))
@pytree_dataclass
class LyuAlg1(Figure1):
    """Lyu et al. 2017, Algorithm 1 (their instantiation of SVT).

    Line 1: ρ = Lap(2Δ/ε); line 3: ν_i = Lap(4cΔ/ε); line 4: q_i + ν_i ≥ T_i + ρ; line 6: abort
    after c ⊤. Figure 2: ε-DP (Theorem 2).

    Args:
      epsilon: total budget ε > 0.
      c: cut-off, the number of ⊤ before halting (integer ≥ 1).
      sensitivity: Δ > 0.
    """

    epsilon: Any
    c: Any
    sensitivity: Any = 1.0
    name = "lyu-alg1"

    def threshold_noise(self):
        return Laplace(2.0 * self.sensitivity / self.epsilon)  # line 1: Lap(2Δ/ε)

    def query_noise(self):
        return Laplace(4.0 * self.c * self.sensitivity / self.epsilon)  # line 3: Lap(4cΔ/ε)

    def top_cost(self):
        return self.epsilon / 2.0 / self.c

    def privacy(self):
        return PureDP("Lyu, Su, Li 2017, Theorem 2 (Algorithm 1 is ε-DP)", float(self.epsilon))


@register(reference=ref.dpbook, cases=[Case("dpbook", {}, eps_c)], privacy=[
    Claim("eps1-c5", {"epsilon": 1.0, "c": 5}, 1.0, "PureDP", ("Algorithm 2",))],
    distribution=Distribution(  # Figure 2: ρ = Lap(2cΔ/ε), redrawn after a ⊤; ν = Lap(4cΔ/ε)
        lambda p: Figure1Law(2 * p["c"] * _sens(p) / p["epsilon"],
                             4 * p["c"] * _sens(p) / p["epsilon"], p["c"], resample=True), (
            DistributionCase("dpbook-c2", {"epsilon": 4.0, "c": 2}, R6, 1.0, 21),
            DistributionCase("dpbook-c3-per-query", {"epsilon": 6.0, "c": 3}, Q6, T6, 22))))
@pytree_dataclass
class DPBook(Figure1):
    """Dwork & Roth 2014 (Lyu et al. 2017, Algorithm 2).

    Line 1: ρ = Lap(2cΔ/ε); line 3: ν_i = Lap(4cΔ/ε); line 5: after a ⊤, ρ is redrawn from
    Lap(2cΔ/ε); abort after c ⊤. Figure 2: ε-DP (c compositions of an ε/c AboveThreshold).
    ``Draws.refresh[p]`` is the fresh threshold noise used after a ⊤ at position p.
    """

    epsilon: Any
    c: Any
    sensitivity: Any = 1.0
    name = "dpbook"

    def threshold_noise(self):
        return Laplace(2.0 * self.c * self.sensitivity / self.epsilon)  # lines 1, 5: Lap(2cΔ/ε)

    def query_noise(self):
        return Laplace(4.0 * self.c * self.sensitivity / self.epsilon)  # line 3: Lap(4cΔ/ε)

    def resamples(self):
        return True  # line 5

    def top_cost(self):
        return self.epsilon / self.c

    def privacy(self):
        return PureDP("Dwork & Roth 2014, Thm 3.25 (Lyu et al. 2017, Algorithm 2 and Figure 2: "
                      "ε-DP)", float(self.epsilon))


@register(reference=ref.roth11, cases=[Case("roth11", {}, eps_c)],
          privacy=_not_private(3, 3, c=3),
          distribution=Distribution(  # Figure 2: ρ = Lap(2Δ/ε), ν = Lap(2cΔ/ε)
              lambda p: Figure1Law(2 * _sens(p) / p["epsilon"],
                                   2 * p["c"] * _sens(p) / p["epsilon"], p["c"]),
              (DistributionCase("roth11-c2", {"epsilon": 2.0, "c": 2}, Q6, 1.0, 91),)))
@pytree_dataclass
class Roth11(Figure1):
    """Roth's 2011 lecture notes (Lyu et al. 2017, Algorithm 3).

    Line 1: ρ = Lap(2Δ/ε); line 3: ν_i = Lap(2cΔ/ε); line 5: outputs a_i = q_i + ν_i (in
    ``Outcome.values``) instead of ⊤; abort after c. Not ε′-DP for any finite ε′ (Theorem 3):
    the released q_i + ν_i reveals a lower bound on ρ. The nominal claim was ε.
    """

    epsilon: Any
    c: Any
    sensitivity: Any = 1.0
    name = "roth11"
    releases = True

    def threshold_noise(self):
        return Laplace(2.0 * self.sensitivity / self.epsilon)  # line 1: Lap(2Δ/ε)

    def query_noise(self):
        return Laplace(2.0 * self.c * self.sensitivity / self.epsilon)  # line 3: Lap(2cΔ/ε)

    def top_cost(self):
        # ν = Lap(2cΔ/ε) = Lap(2cΔ/ε2) with ε2 = ε: each ⊤ is charged ε/c.
        return self.epsilon / self.c

    def release(self, top, noisy_q, noisy_t, x):
        return jnp.where(top, noisy_q, jnp.nan)  # line 5: a_i = q_i + ν_i

    def privacy(self):
        return NotPrivate("Lyu, Su, Li 2017, Theorem 3 (Algorithm 3 is not ε′-DP for any finite "
                          "ε′)", float(self.epsilon))


@register(reference=ref.lee_clifton, cases=[Case("lee-clifton", {}, eps_c)], privacy=[
    Claim(f"eps{e}-c{c}", {"epsilon": e, "c": c}, (1 + 6 * c) / 4 * e, "PureDP",
          ("Algorithm 4", "Theorem 6")) for e, c in ((0.5, 1), (3.7, 5))],
    distribution=Distribution(  # Figure 2: ρ = Lap(4Δ/ε), ν = Lap(4Δ/(3ε))
        lambda p: Figure1Law(4 * _sens(p) / p["epsilon"], 4 * _sens(p) / (3 * p["epsilon"]),
                             p["c"]), (
            DistributionCase("lee-clifton-c2", {"epsilon": 1.0, "c": 2}, Q6, 1.0, 31),
            DistributionCase("lee-clifton-c3-per-query", {"epsilon": 1.5, "c": 3}, Q6, T6,
                             32))))
@pytree_dataclass
class LeeClifton(Figure1):
    """Lee & Clifton 2014 (Lyu et al. 2017, Algorithm 4).

    Line 1: ρ = Lap(4Δ/ε); line 3: ν_i = Lap(4Δ/(3ε)); abort after c ⊤. Claimed ε-DP; Lyu et al.
    (Section 3.3, Figure 2) show it is ((1+6c)/4)ε-DP via Theorem 6 with ε1 = ε/4 and
    ε2 = 3cε/2 (ν = Lap(2cΔ/ε2)).
    """

    epsilon: Any
    c: Any
    sensitivity: Any = 1.0
    name = "lee-clifton"

    def threshold_noise(self):
        return Laplace(4.0 * self.sensitivity / self.epsilon)  # line 1: Lap(4Δ/ε)

    def query_noise(self):
        return Laplace(4.0 * self.sensitivity / (3.0 * self.epsilon))  # line 3: Lap(4Δ/3ε)

    def top_cost(self):
        # ε2/c = 3ε/2 per ⊤ (Theorem 6 applied as in Lyu et al. Section 3.3).
        return 3.0 * self.epsilon / 2.0

    def privacy(self):
        eps_, c = float(self.epsilon), int(self.c)
        return PureDP("Lyu, Su, Li 2017, Section 3.3 and Figure 2 via Theorem 6: Algorithm 4 is "
                      "((1+6c)/4)ε-DP (claimed ε-DP)", (1 + 6 * c) / 4 * eps_)


@register(reference=ref.stoddard, cases=[Case("stoddard", {}, eps)],
          privacy=_not_private(5, 4),
          distribution=Distribution(  # Figure 2: ρ = Lap(2Δ/ε), no query noise, no cut-off
              lambda p: Figure1Law(2 * _sens(p) / p["epsilon"], 0.0, None),
              (DistributionCase("stoddard-scalar", {"epsilon": 1.0}, Q6, 1.0, 92),)))
@pytree_dataclass
class Stoddard(Figure1):
    """Stoddard et al. 2014 (Lyu et al. 2017, Algorithm 5).

    Line 1: ρ = Lap(2Δ/ε); line 3: ν_i = 0; no cut-off (every query is answered). Not ε′-DP for
    any finite ε′ (Theorem 4). The nominal claim was ε.
    """

    epsilon: Any
    sensitivity: Any = 1.0
    name = "stoddard"

    def threshold_noise(self):
        return Laplace(2.0 * self.sensitivity / self.epsilon)  # line 1: Lap(2Δ/ε)

    def query_noise(self):
        return None  # line 3: ν_i = 0

    def cutoff(self):
        return None

    def privacy(self):
        return NotPrivate("Lyu, Su, Li 2017, Theorem 4 (Algorithm 5 is not ε′-DP for any finite "
                          "ε′)", float(self.epsilon))


@register(reference=ref.chen, cases=[Case("chen", {}, eps)], privacy=_not_private(6, 5),
          distribution=Distribution(  # Figure 2: ρ = ν_i = Lap(2Δ/ε), no cut-off
              lambda p: Figure1Law(2 * _sens(p) / p["epsilon"], 2 * _sens(p) / p["epsilon"],
                                   None), (
                  DistributionCase("chen-per-query", {"epsilon": 2.0}, Q6, T6, 41),
                  DistributionCase("chen-scalar", {"epsilon": 1.0}, R6, 1.0, 42))))
@pytree_dataclass
class Chen(Figure1):
    """Chen et al. 2015 (Lyu et al. 2017, Algorithm 6).

    Line 1: ρ = Lap(2Δ/ε); line 3: ν_i = Lap(2Δ/ε); line 4 uses per-query thresholds T_i; no
    cut-off. Not ε′-DP for any finite ε′ (Theorem 5). The nominal claim was ε.
    """

    epsilon: Any
    sensitivity: Any = 1.0
    name = "chen"

    def threshold_noise(self):
        return Laplace(2.0 * self.sensitivity / self.epsilon)  # line 1: Lap(2Δ/ε)

    def query_noise(self):
        return Laplace(2.0 * self.sensitivity / self.epsilon)  # line 3: Lap(2Δ/ε)

    def cutoff(self):
        return None

    def privacy(self):
        return NotPrivate("Lyu, Su, Li 2017, Theorem 5 (Algorithm 6 is not ε′-DP for any finite "
                          "ε′)", float(self.epsilon))


_SVT_S_CASES = [
    Case("svt-s", {}, eps_c),
    Case("svt-s-monotonic", {"monotonic": True}, eps_c),
    Case("svt-s-1:1", {"allocation": "1:1"}, eps_c),
    Case("svt-s-1:3-monotonic", {"allocation": "1:3", "monotonic": True}, eps_c),
    Case("svt-s-1:c", {"allocation": "1:c"}, eps_c),
    Case("svt-s-eps3", {}, eps_c_eps3),
    Case("svt-s-eps3-monotonic", {"monotonic": True}, eps_c_eps3),
]


def _svt_s_law(p):
    """Algorithm 7 (lines 1, 3): ε − ε3 split as ε1 : ε2 = 1 : x (Sec. 4.2, Eq. 13; Sec. 4.3;
    Sec. 5), ρ = Lap(Δ/ε1), ν = Lap(2cΔ/ε2), Lap(cΔ/ε2) for monotonic queries."""
    e, d, c = _eds(p)
    monotonic = p.get("monotonic", False)
    rule = p.get("allocation") or ("1:c^(2/3)" if monotonic else "1:(2c)^(2/3)")
    x = {"1:1": 1.0, "1:3": 3.0, "1:c": float(c), "1:c^(2/3)": c ** (2.0 / 3.0),
         "1:(2c)^(2/3)": (2.0 * c) ** (2.0 / 3.0)}[rule]
    total = e - p.get("eps3", 0.0)  # ε3 only perturbs released answers
    eps1, eps2 = total / (1 + x), total * x / (1 + x)
    return Figure1Law(d / eps1, (1 if monotonic else 2) * c * d / eps2, c)


@register(reference=ref.svt_s, cases=_SVT_S_CASES, privacy=[
    Claim("general", {"epsilon": 1.3, "c": 7, "sensitivity": 50.0, "eps3": 0.2}, 1.3, "PureDP",
          ("Lyu", "Algorithm 7", "Theorem 6"), ("Theorem 7",)),
    Claim("monotonic", {"epsilon": 0.5, "c": 37, "monotonic": True}, 0.5, "PureDP",
          ("Lyu", "Algorithm 7", "Theorem 7"), ("Theorem 6",))],
    distribution=Distribution(_svt_s_law, (
        DistributionCase("svt-s-c3", {"epsilon": 3.0, "c": 3}, Q6, 1.0, 51),
        DistributionCase("svt-s-c2-per-query-eps3", {"epsilon": 3.0, "c": 2, "eps3": 1.0}, Q6,
                         T6, 52),
        DistributionCase("svt-s-c2-1:c", {"epsilon": 2.0, "c": 2, "allocation": "1:c"}, Q6,
                         1.0, 53),
        DistributionCase("svt-s-monotonic-c2", {"epsilon": 2.0, "c": 2, "monotonic": True}, R6,
                         1.0, 61),
        DistributionCase("svt-s-monotonic-c3-per-query",
                         {"epsilon": 3.0, "c": 3, "monotonic": True}, Q6, T6, 62))))
@pytree_dataclass
class SVTS(Figure1):
    """Lyu et al.'s standard SVT (2017, Algorithm 7, Sections 4.2-4.3), "SVT-S".

    Line 1: ρ = Lap(Δ/ε1); line 3: ν_i = Lap(2cΔ/ε2), or Lap(cΔ/ε2) for monotonic queries
    (Section 4.3, Theorem 7); lines 5-7: with ε3 > 0 a ⊤ releases q_i + Lap(cΔ/ε3) (in
    ``Outcome.values``); line 11: abort after c ⊤. (ε1 + ε2 + ε3)-DP (Theorem 6; Theorem 7 when
    every query is monotonic).

    Args:
      epsilon: total budget ε = ε1 + ε2 + ε3 > 0 (may be omitted with an explicit allocation).
      c: cut-off (integer ≥ 1).
      sensitivity: Δ > 0.
      eps3: budget for released answers, 0 <= ε3 < ε (0: answers are ⊤ only).
      monotonic: use the monotonic-query noise Lap(cΔ/ε2) (Theorem 7).
      allocation: how ε − ε3 is split into ε1 : ε2 — a rule name from ``svtjax.budget.RULES``
        (default: Lyu's optimum, ``1:c^(2/3)`` when monotonic else ``1:(2c)^(2/3)``, Eq. 13), or
        an explicit ``(eps1, eps2)``.
    """

    epsilon: Any = dataclasses.field(default=None, metadata={
        "required_when": "allocation is not an explicit (eps1, eps2) pair"})
    c: Any = dataclasses.field(default=None, metadata={"required": True})
    sensitivity: Any = 1.0
    eps3: Any = 0.0
    _split: Any = None
    monotonic: bool = static_field(default=False)
    allocation: Any = static_field(default=None)
    _noisy_answers: bool = static_field(default=False)
    name = "svt-s"

    @classmethod
    def _normalize(cls, values):
        """Construction: checks the parameters and stores ε, Δ, c and ε3 as Python numbers, the
        split rule (Eq. 13's by default) or an explicit pair (``_split``), and whether a ⊤
        releases a noisy answer (ε3 > 0)."""
        v = dict(values)
        if v["c"] is None:
            raise TypeError(f"{cls.name} requires parameter c (the cut-off, an integer >= 1)")
        for name in ("epsilon", "c", "sensitivity", "eps3"):
            _validate.scalar(name, v[name])
        if not isinstance(v["monotonic"], bool):
            raise TypeError(f"monotonic must be True or False; got {v['monotonic']!r}")
        _validate.nonnegative("eps3", v["eps3"])
        eps3 = v["eps3"]
        v.update(resolve_allocation(v, float(eps3) if is_concrete(eps3) else 0.0,
                                    lambda: budget.optimal_rule(v["monotonic"])))
        if v["epsilon"] is None:
            raise TypeError(f"{cls.name} requires parameter epsilon (total budget > 0)")
        v = cls._common(v)
        if is_concrete(eps3):
            v["eps3"] = float(eps3)
            if v["eps3"] >= v["epsilon"]:
                raise ValueError(f"eps3 must be smaller than epsilon ({v['epsilon']}) so that "
                                 f"eps1 + eps2 > 0; got eps3={v['eps3']}")
            v["_noisy_answers"] = v["eps3"] > 0
        return v

    def budgets(self):
        """``(eps1, eps2, eps3)``: threshold, query and answer budgets."""
        if self._split is not None:
            eps1, eps2 = self._split
        else:
            eps1, eps2 = budget.split(self.epsilon - self.eps3, self.c, self.allocation)
        return eps1, eps2, self.eps3

    @staticmethod
    def noise_laws(eps1, eps2, *, c, sensitivity=1.0, monotonic=False):
        """Lines 1 and 3 from the budgets: ``(ρ, ν)`` = (Lap(Δ/ε1), Lap(2cΔ/ε2)), Lap(cΔ/ε2) for
        monotonic queries (Theorem 7). The one place these scales are written: the rule's streams
        (hence the engine, the dtype checks and the audit) and the exact laws
        (``svtjax.exact.law``, ``law_at_share``) read them from here, with Python numbers on the
        host or traced values under a transformation."""
        k = 1.0 if monotonic else 2.0
        return Laplace(sensitivity / eps1), Laplace(k * c * sensitivity / eps2)

    def laws(self):
        """``(ρ, ν)`` at this mechanism's budgets (:meth:`noise_laws`)."""
        eps1, eps2, _ = self.budgets()
        return self.noise_laws(eps1, eps2, c=self.c, sensitivity=self.sensitivity,
                               monotonic=self.monotonic)

    def with_budgets(self, eps1, eps2, **leaves):
        """This mechanism with the split (ε1, ε2) and the numeric ``leaves`` (e.g. ``epsilon``,
        ``sensitivity``) replaced, without construction, so the values may be traced (e.g.
        under ``jax.grad`` over the split, ``svtjax.exact.law_at_share``)."""
        return replace_leaves(self, _split=(eps1, eps2), allocation=None, **leaves)

    def unsplit_budget(self):
        """The part of ε outside ε1 + ε2: ε3, spent on released answers."""
        return self.eps3

    def threshold_noise(self):
        return self.laws()[0]  # line 1: ρ = Lap(Δ/ε1)

    def query_noise(self):
        return self.laws()[1]  # line 3: Lap(2cΔ/ε2) (cΔ/ε2)

    def streams(self):
        out = super().streams()
        if self._noisy_answers:  # line 6: Lap(cΔ/ε3)
            out["answer"] = Laplace(self.c * self.sensitivity / self.eps3)
        return out

    def has_values(self):
        return self._noisy_answers

    def release(self, top, noisy_q, noisy_t, x):
        if not self._noisy_answers:
            return None
        return jnp.where(top, x.query + x.noise["answer"], jnp.nan)  # line 6: q_i + Lap(cΔ/ε3)

    def top_cost(self):
        _, eps2, eps3 = self.budgets()
        return (eps2 + eps3) / self.c

    def params(self):
        """The parameters as given: an explicit split as ``allocation=(eps1, eps2)``."""
        return explicit_params(self, super().params())

    def privacy(self):
        eps1, eps2, eps3 = (float(x) for x in self.budgets())
        thm = ("Theorem 7 (monotonic queries, ν = Lap(cΔ/ε2))" if self.monotonic
               else "Theorem 6")
        return PureDP(f"Lyu, Su, Li 2017, {thm}: Algorithm 7 is (ε1+ε2+ε3)-DP",
                      eps1 + eps2 + eps3)


@register(reference=ref.svt_retr, cases=[
    # Retraversal: the stream is max_passes x n long (static); raise_by is traced.
    Case("svt-retr", {"max_passes": 3}, eps_c_raise),
    Case("svt-retr-monotonic-1:1", {"max_passes": 2, "monotonic": True, "allocation": "1:1"},
         eps_c_raise),
], privacy=[Claim("monotonic", {"epsilon": 0.5, "c": 50, "monotonic": True, "raise_by": 3.0},
                  0.5, "PureDP", ("Theorem 7", "4.4"), ("Theorem 6",))],
    distribution=LawTestedIn("tests/test_distribution_retr.py", "the retraversal stream's law"))
@pytree_dataclass
class SVTReTr(SVTS):
    """SVT with retraversal and a raised threshold, "SVT-ReTr" (Lyu et al. 2017, §4.4 and §5;
    the paper's slides: SVT-ReTr-1:c^(2/3)-1D/3D/5D).

    SVT-S (Algorithm 7) run on the stream "all items, then again the items not yet selected, ..."
    with every threshold raised by ``raise_by`` times the query-noise scale D (§5: "increases the
    threshold T by the scale factor of the Laplace noise injected to each query"; the slides'
    1D, 3D, 5D are ``raise_by`` = 1, 3, 5). ρ is drawn once; pass 1 visits every item, each later
    pass revisits, in the same order, the items answered ⊥ so far, until c items are selected or
    ``max_passes`` passes are done (the paper retraverses "until c queries are selected"; a cap
    keeps the stream finite — the default 10 is svtjax's choice). Positions of items already
    selected are not evaluated (-1). The retraversal is the engine's (``passes``).

    Privacy: SVT's guarantee holds for any stream of queries chosen independently of the noise,
    and the raised threshold is data-independent, so Theorem 6 (Theorem 7 for monotonic queries)
    applies unchanged: (ε1 + ε2 + ε3)-DP.

    Args (besides SVT-S's):
      raise_by: threshold increase in units of the query-noise scale (>= 0; default 1).
      max_passes: number of passes (integer >= 1, static: it fixes the stream length).
    """

    raise_by: Any = 1.0
    max_passes: int = static_field(default=10)
    name = "svt-retr"

    @classmethod
    def _normalize(cls, values):
        v = super()._normalize(values)
        _validate.scalar("raise_by", v["raise_by"])
        _validate.nonnegative("raise_by", v["raise_by"])
        v["raise_by"] = canonical_number(v["raise_by"], float)
        passes = v["max_passes"]
        if isinstance(passes, bool) or not isinstance(passes, int):
            raise TypeError(f"max_passes must be an integer >= 1; got {passes!r}")
        _validate.integer("max_passes", passes, minimum=1)
        return v

    def passes(self):
        return self.max_passes

    def threshold_shift(self):
        return self.raise_by * self.query_noise().scale  # §5: T + raise_by · D

    def privacy(self):
        base = super().privacy()
        return PureDP(base.statement.replace("Algorithm 7", "Algorithm 7 on the retraversal "
                                             "stream (§4.4)"), base.eps)


@register(reference=ref.svt_gap, cases=[Case("svt-gap", {}, eps_c),
                                        Case("svt-gap-monotonic", {"monotonic": True}, eps_c)],
          privacy=[Claim("eps2-c4", {"epsilon": 2.0, "c": 4}, 2.0, "PureDP",
                         ("Ding", "Theorem 4"))],
          # Ding et al. 2019's Algorithm 2 with σ = ∞ has SVT-S's noise
          distribution=Distribution(_svt_s_law, (
              DistributionCase("svt-gap-monotonic-c2", {"epsilon": 2.0, "c": 2, "monotonic": True},
                               Q6, 1.0, 71),)))
@pytree_dataclass
class SVTGap(SVTS):
    """Sparse-Vector-with-Gap (Ding, Wang, Zhang, Kifer 2019, §6.1: Algorithm 2 with σ = ∞;
    Wang et al.'s free gap): SVT that releases, with each ⊤, the noisy gap
    γ_i = q_i + ν_i − (T_i + ρ) ≥ 0 in ``Outcome.values``.

    With σ = ∞ Algorithm 2 keeps only its middle branch: ρ ~ Lap(Δ/ε0) with ε0 = θε, ν_i ~
    Lap(2Δ/ε1) (Lap(Δ/ε1) for monotonic queries, footnote 6) with ε1 = (1−θ)ε/k, and "cost > ε −
    ε1" stops it exactly after k ⊤. That is SVT-S's noise with ε1 : ε2 = θ : (1−θ), so this class
    is SVT-S releasing gaps; the default split is Ding et al.'s 1:k^(2/3) (monotonic) or
    1:(2k)^(2/3) (§6.2, following Lyu et al.). No answer budget ε3: the gap is free.

    Privacy: ε-DP (Ding et al. 2019, Theorem 4 with σ = ∞).
    """

    name = "svt-gap"

    @classmethod
    def _normalize(cls, values):
        eps3 = values["eps3"]
        _validate.scalar("eps3", eps3)
        if eps3 is None or isinstance(eps3, (bool, str)) or eps3 != 0:
            raise ValueError("svt-gap releases the noisy gap for free and takes no eps3; got "
                             f"eps3={eps3!r} (use svt-s for noisy answers)")
        return super()._normalize(values)

    def has_values(self):
        return True

    def release(self, top, noisy_q, noisy_t, x):
        return jnp.where(top, noisy_q - noisy_t, jnp.nan)  # the gap γ_i = q_i + ν_i − (T_i + ρ)

    def _prepare(self, queries, thresholds):
        q, t = SVTS._prepare(queries, thresholds)
        if is_concrete((q, t)):
            gaps_fit(self, np.asarray(q), np.asarray(t))
        return q, t

    def privacy(self):
        eps1, eps2, _ = (float(x) for x in self.budgets())
        return PureDP("Ding, Wang, Zhang, Kifer 2019, Theorem 4 (Algorithm 2 with σ = ∞, "
                      "Sparse-Vector-with-Gap): ε-DP", eps1 + eps2)
