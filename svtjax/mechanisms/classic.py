"""The classic SVT variants of Lyu, Su & Li (2017): Algorithms 1-7, as rules on the one engine.

Lyu, Su, Li. "Understanding the Sparse Vector Technique for Differential Privacy", PVLDB 10(6),
2017: Figure 1 (Algorithms 1-6), Figure 2 (their noise
scales and privacy properties), Section 3 (Theorems 2-5), Section 4 (Algorithm 7, Theorems 6-7,
budget allocation Eq. 13), §4.4 and §5 (SVT-ReTr).

Figure 1 writes Algorithms 1-6 as one loop, and so does this module (:class:`Figure1`):

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
from typing import Any, Optional

import jax.numpy as jnp
import numpy as np

from svtjax import _validate, budget
from svtjax._pytree import is_concrete, pytree_dataclass, static_field
from svtjax.accounting import NotPrivate, PureDP
from svtjax.mechanisms.base import register
from svtjax.mechanisms.rules import CountState, ThresholdMechanism, Written, cutoff_block
from svtjax.noise import Laplace
from svtjax.reference import classic as ref
from svtjax.testing import Case, eps, eps_c, eps_c_eps3, eps_c_raise

__all__ = ["Figure1", "LyuAlg1", "DPBook", "Roth11", "LeeClifton", "Stoddard", "Chen", "SVTS",
           "SVTReTr", "SVTGap"]


def canonical_number(value: Any, kind: type) -> Any:
    """Python scalars stay weakly typed under jit, so every sweep point shares one compile."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return kind(value)
    if is_concrete(value) and jnp.ndim(value) == 0:
        return kind(value)
    return value


class Figure1(ThresholdMechanism):
    """Lyu et al. 2017, Figure 1: the loop shared by Algorithms 1-7 (module docstring).

    A subclass gives its Figure 2 row: :meth:`threshold_noise` (line 1), :meth:`query_noise`
    (line 3; None for no query noise), :meth:`resamples` (line 5 of Algorithm 2), :meth:`cutoff`
    (line 6; None for none), :meth:`top_cost` and, if a ⊤ releases a number, :meth:`release`.
    The same loop serves the generalized SVTs of Zhu & Wang 2020 (Algorithm 2: any noise pair,
    RESAMPLE, k_max) and Liu et al. 2024 (Algorithm 2: exponential query noise, correction r,
    RESAMPLE, APPEND), whose classes cite their own lines.
    """

    # -- Figure 2 row ------------------------------------------------------------------------
    def threshold_noise(self):
        """Line 1: the law of ρ (a ``svtjax.noise`` object)."""
        raise NotImplementedError

    def query_noise(self):
        """Line 3: the law of ν_i, or None for noiseless comparisons (Algorithm 5)."""
        raise NotImplementedError

    def resamples(self) -> bool:
        """Line 5 (Algorithm 2, RESAMPLE): a fresh ρ after each ⊤ (static)."""
        return False

    def cutoff(self) -> Optional[Any]:
        return self.c

    def threshold_shift(self) -> Optional[Any]:
        """Added to every T_i before the comparison (SVT-ReTr's raise, SVT-Exp's r)."""
        return None

    def release(self, top, noisy_q, noisy_t, x):
        """What a ⊤ releases (``Written.value``, NaN at ⊥); None: nothing (``⊤`` only)."""
        del top, noisy_q, noisy_t, x
        return None

    # -- the rule ----------------------------------------------------------------------------
    def initial_streams(self):
        return {"threshold": self.threshold_noise()}  # line 1

    def streams(self):
        out = {}
        nu = self.query_noise()
        if nu is not None:
            out["query"] = nu  # line 3
        if self.resamples():
            out["refresh"] = self.threshold_noise()  # line 5: the ρ drawn after a ⊤ at p
        return out

    def has_block(self):
        return not self.resamples()

    def init(self, noise):
        return CountState(count=jnp.zeros((), jnp.int32), rho=noise["threshold"])

    def _compare(self, x, rho):
        noisy_q = x.query + x.noise["query"] if "query" in x.noise else x.query  # line 3
        shift = self.threshold_shift()
        t = x.threshold if shift is None else x.threshold + jnp.asarray(shift, x.query.dtype)
        noisy_t = t + rho
        return noisy_q, noisy_t, noisy_q >= noisy_t  # line 4

    def step(self, state, x):
        noisy_q, noisy_t, top = self._compare(x, state.rho)
        count = state.count + top.astype(jnp.int32)  # line 6
        rho = jnp.where(top, x.noise["refresh"], state.rho) if self.resamples() else state.rho
        return CountState(count, rho), Written(top, self.release(top, noisy_q, noisy_t, x))

    def halted(self, state):
        c = self.cutoff()
        return jnp.zeros((), bool) if c is None else state.count >= c  # line 6: abort

    def block(self, state, xs, valid):
        """Lines 3-8 over a block: ρ is fixed inside it, so the comparisons are vectorised and
        the cut-off is a cumulative count of ⊤ (:func:`cutoff_block`)."""
        noisy_q, noisy_t, above = self._compare(xs, state.rho)
        top, active = cutoff_block(above, valid, state.count, self.cutoff())
        count = state.count + jnp.sum(top, dtype=jnp.int32)
        answer = jnp.where(active, top.astype(jnp.int8), jnp.int8(-1))
        return CountState(count, state.rho), Written(answer, self.release(top, noisy_q, noisy_t,
                                                                          xs))

    # -- construction --------------------------------------------------------------------------
    def _check_common(self) -> None:
        _validate.scalars(self, ("epsilon", "sensitivity", "c"))
        object.__setattr__(self, "epsilon", canonical_number(
            _validate.positive("epsilon", self.epsilon), float))
        object.__setattr__(self, "sensitivity", canonical_number(
            _validate.positive("sensitivity", self.sensitivity), float))
        if hasattr(self, "c"):
            object.__setattr__(self, "c", canonical_number(
                _validate.integer("c", self.c, minimum=1), int))


@register(reference=ref.lyu_alg1, cases=[Case("lyu-alg1", {}, eps_c)])
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

    def __post_init__(self):
        self._check_common()

    def threshold_noise(self):
        return Laplace(2.0 * self.sensitivity / self.epsilon)  # line 1: Lap(2Δ/ε)

    def query_noise(self):
        return Laplace(4.0 * self.c * self.sensitivity / self.epsilon)  # line 3: Lap(4cΔ/ε)

    def top_cost(self):
        return self.epsilon / 2.0 / self.c

    def privacy(self):
        return PureDP("Lyu, Su, Li 2017, Theorem 2 (Algorithm 1 is ε-DP)", float(self.epsilon))


@register(reference=ref.dpbook, cases=[Case("dpbook", {}, eps_c)])
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

    def __post_init__(self):
        self._check_common()

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


@register(reference=ref.roth11, cases=[Case("roth11", {}, eps_c)])
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

    def __post_init__(self):
        self._check_common()

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


@register(reference=ref.lee_clifton, cases=[Case("lee-clifton", {}, eps_c)])
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

    def __post_init__(self):
        self._check_common()

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


@register(reference=ref.stoddard, cases=[Case("stoddard", {}, eps)])
@pytree_dataclass
class Stoddard(Figure1):
    """Stoddard et al. 2014 (Lyu et al. 2017, Algorithm 5).

    Line 1: ρ = Lap(2Δ/ε); line 3: ν_i = 0; no cut-off (every query is answered). Not ε′-DP for
    any finite ε′ (Theorem 4). The nominal claim was ε.
    """

    epsilon: Any
    sensitivity: Any = 1.0
    name = "stoddard"

    def __post_init__(self):
        self._check_common()

    def threshold_noise(self):
        return Laplace(2.0 * self.sensitivity / self.epsilon)  # line 1: Lap(2Δ/ε)

    def query_noise(self):
        return None  # line 3: ν_i = 0

    def cutoff(self):
        return None

    def privacy(self):
        return NotPrivate("Lyu, Su, Li 2017, Theorem 4 (Algorithm 5 is not ε′-DP for any finite "
                          "ε′)", float(self.epsilon))


@register(reference=ref.chen, cases=[Case("chen", {}, eps)])
@pytree_dataclass
class Chen(Figure1):
    """Chen et al. 2015 (Lyu et al. 2017, Algorithm 6).

    Line 1: ρ = Lap(2Δ/ε); line 3: ν_i = Lap(2Δ/ε); line 4 uses per-query thresholds T_i; no
    cut-off. Not ε′-DP for any finite ε′ (Theorem 5). The nominal claim was ε.
    """

    epsilon: Any
    sensitivity: Any = 1.0
    name = "chen"

    def __post_init__(self):
        self._check_common()

    def threshold_noise(self):
        return Laplace(2.0 * self.sensitivity / self.epsilon)  # line 1: Lap(2Δ/ε)

    def query_noise(self):
        return Laplace(2.0 * self.sensitivity / self.epsilon)  # line 3: Lap(2Δ/ε)

    def cutoff(self):
        return None

    def privacy(self):
        return NotPrivate("Lyu, Su, Li 2017, Theorem 5 (Algorithm 6 is not ε′-DP for any finite "
                          "ε′)", float(self.epsilon))


def check_allocation(mech, extra: float, default, named: tuple = ()) -> None:
    """Validates ``mech.allocation``: an explicit ``(eps1, eps2)`` pair (stored by
    :func:`explicit_split`), ``None`` (``default()``, the paper's rule) or a rule name of
    ``svtjax.budget.RULES`` (or of ``named``, the mechanism's own). ``"explicit"`` is what a
    pair becomes once stored; given by hand, without the pair, it is refused."""
    allocation = mech.allocation
    if isinstance(allocation, (tuple, list)):
        explicit_split(mech, allocation, extra)
    elif allocation is None:
        object.__setattr__(mech, "allocation", default())
    elif isinstance(allocation, str) and allocation == "explicit":
        if mech._split is None:
            raise ValueError("allocation='explicit' needs the pair itself: pass "
                             "allocation=(eps1, eps2)")
    elif not (isinstance(allocation, str) and allocation in named):
        budget.check_rule(allocation)


def explicit_split(mech, allocation, extra: float) -> None:
    """An explicit ``(eps1, eps2)`` allocation: stored as traced leaves in ``_split``."""
    if len(allocation) != 2:
        raise ValueError(f"an explicit allocation must be a pair (eps1, eps2); got {allocation!r}")
    e1 = float(_validate.positive("allocation eps1", allocation[0]))
    e2 = float(_validate.positive("allocation eps2", allocation[1]))
    total = e1 + e2 + extra
    if mech.epsilon is None:
        object.__setattr__(mech, "epsilon", total)
    elif not math.isclose(float(mech.epsilon), total, rel_tol=1e-12):
        what = "eps1 + eps2 + eps3" if hasattr(mech, "eps3") else "eps1 + eps2"
        raise ValueError(f"epsilon ({mech.epsilon}) must equal {what} ({total}) when "
                         "allocation is an explicit pair")
    object.__setattr__(mech, "_split", (e1, e2))
    object.__setattr__(mech, "allocation", "explicit")


_SVT_S_CASES = [
    Case("svt-s", {}, eps_c),
    Case("svt-s-monotonic", {"monotonic": True}, eps_c),
    Case("svt-s-1:1", {"allocation": "1:1"}, eps_c),
    Case("svt-s-1:3-monotonic", {"allocation": "1:3", "monotonic": True}, eps_c),
    Case("svt-s-1:c", {"allocation": "1:c"}, eps_c),
    Case("svt-s-eps3", {}, eps_c_eps3),
    Case("svt-s-eps3-monotonic", {"monotonic": True}, eps_c_eps3),
]


@register(reference=ref.svt_s, cases=_SVT_S_CASES)
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

    def __post_init__(self):
        if self.c is None:
            raise TypeError(f"{self.name} requires parameter c (the cut-off, an integer >= 1)")
        _validate.scalars(self, ("epsilon", "c", "sensitivity", "eps3"))
        if not isinstance(self.monotonic, bool):
            raise TypeError(f"monotonic must be True or False; got {self.monotonic!r}")
        _validate.nonnegative("eps3", self.eps3)
        check_allocation(self, float(self.eps3) if is_concrete(self.eps3) else 0.0,
                         lambda: budget.optimal_rule(self.monotonic))
        if self.epsilon is None:
            raise TypeError(f"{self.name} requires parameter epsilon (total budget > 0)")
        self._check_common()
        if is_concrete(self.eps3):
            object.__setattr__(self, "eps3", float(self.eps3))
            if self.eps3 >= self.epsilon:
                raise ValueError(f"eps3 must be smaller than epsilon ({self.epsilon}) so that "
                                 f"eps1 + eps2 > 0; got eps3={self.eps3}")
            object.__setattr__(self, "_noisy_answers", self.eps3 > 0)

    def budgets(self):
        """``(eps1, eps2, eps3)``: threshold, query and answer budgets."""
        if self.allocation == "explicit":
            eps1, eps2 = self._split
        else:
            eps1, eps2 = budget.split(self.epsilon - self.eps3, self.c, self.allocation)
        return eps1, eps2, self.eps3

    def threshold_noise(self):
        eps1, _, _ = self.budgets()
        return Laplace(self.sensitivity / eps1)  # line 1: ρ = Lap(Δ/ε1)

    def query_noise(self):
        _, eps2, _ = self.budgets()
        k = 1.0 if self.monotonic else 2.0
        return Laplace(k * self.c * self.sensitivity / eps2)  # line 3: Lap(2cΔ/ε2) (cΔ/ε2)

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

    def reference_params(self):
        out = super().reference_params()
        if self.allocation == "explicit":
            out["allocation"] = tuple(float(x) for x in self._split)
        return out

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
])
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

    def __post_init__(self):
        super().__post_init__()
        _validate.scalar("raise_by", self.raise_by)
        _validate.nonnegative("raise_by", self.raise_by)
        object.__setattr__(self, "raise_by", canonical_number(self.raise_by, float))
        if isinstance(self.max_passes, bool) or not isinstance(self.max_passes, int):
            raise TypeError(f"max_passes must be an integer >= 1; got {self.max_passes!r}")
        _validate.integer("max_passes", self.max_passes, minimum=1)

    def passes(self):
        return self.max_passes

    def threshold_shift(self):
        return self.raise_by * self.query_noise().scale  # §5: T + raise_by · D

    def privacy(self):
        base = super().privacy()
        return PureDP(base.statement.replace("Algorithm 7", "Algorithm 7 on the retraversal "
                                             "stream (§4.4)"), base.eps)


@register(reference=ref.svt_gap, cases=[Case("svt-gap", {}, eps_c),
                                        Case("svt-gap-monotonic", {"monotonic": True}, eps_c)])
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

    def __post_init__(self):
        _validate.scalar("eps3", self.eps3)
        if self.eps3 is None or isinstance(self.eps3, (bool, str)) or self.eps3 != 0:
            raise ValueError("svt-gap releases the noisy gap for free and takes no eps3; got "
                             f"eps3={self.eps3!r} (use svt-s for noisy answers)")
        super().__post_init__()

    def has_values(self):
        return True

    def release(self, top, noisy_q, noisy_t, x):
        return jnp.where(top, noisy_q - noisy_t, jnp.nan)  # the gap γ_i = q_i + ν_i − (T_i + ρ)

    def _prepare(self, queries, thresholds):
        q, t = SVTS._prepare(queries, thresholds)
        if is_concrete((q, t)):
            _gaps_fit(self, np.asarray(q), np.asarray(t))
        return q, t

    def privacy(self):
        eps1, eps2, _ = (float(x) for x in self.budgets())
        return PureDP("Ding, Wang, Zhang, Kifer 2019, Theorem 4 (Algorithm 2 with σ = ∞, "
                      "Sparse-Vector-with-Gap): ε-DP", eps1 + eps2)


def _gaps_fit(mech: SVTGap, q: np.ndarray, t: np.ndarray) -> None:
    """Refuses queries and thresholds whose released gaps the run's dtype cannot hold.

    A gap q_i + ν_i − (T_i + ρ) is computed from the noisy query and the noisy threshold, so
    each of those and their difference must stay finite: |q_i| + r_ν, |T_i| + r_ρ and q_i − T_i
    + r_ν + r_ρ at most the dtype's largest number, with r the room for a scaled variate that
    ``svtjax._validate.computable`` keeps for every noise (``NOISE_HEADROOM`` times the scale).
    Queries 3e38 with a threshold −3e38 fit float32, their gaps (6e38) do not.

    Raises:
      ValueError: one line with the largest gap bound, the dtype's largest number and what to
        do.
    """
    if q.size == 0 or not np.issubdtype(q.dtype, np.floating):
        return
    scales = [mech.noises()[s].scale_value for s in ("query", "threshold")]
    if not is_concrete(scales):  # a traced mechanism: its own checks ran where it was built
        return
    room_q, room_t = (_validate.NOISE_HEADROOM * abs(float(b)) for b in scales)
    with np.errstate(over="ignore", invalid="ignore"):
        qf, tf = q.astype(np.float64), t.astype(np.float64)
        widest = max(float(np.max(np.abs(qf))) + room_q, float(np.max(np.abs(tf))) + room_t,
                     float(np.max(qf - tf)) + room_q + room_t)
    largest = float(np.finfo(q.dtype).max)
    if not widest <= largest:
        raise ValueError(
            f"svt-gap cannot run in {q.dtype.name}: a released gap q_i + noise - (T_i + noise) "
            f"can reach {widest:.3g} (queries up to {float(np.max(qf)):.3g}, thresholds down to "
            f"{float(np.min(tf)):.3g}), more than {q.dtype.name} holds ({largest:.3g}); shift "
            "or scale the queries and thresholds")
