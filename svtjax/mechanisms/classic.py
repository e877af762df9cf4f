"""The classic SVT variants of Lyu, Su & Li (2017): Algorithms 1-7.

Lyu, Su, Li. "Understanding the Sparse Vector Technique for Differential Privacy", PVLDB 10(6),
2017 (``seeds/002_8d07cd5bae315f2f.txt``): Figure 1 (Algorithms 1-6), Figure 2 (their noise
scales and privacy properties), Section 3 (Theorems 2-5), Section 4 (Algorithm 7, Theorems 6-7,
budget allocation Eq. 13).

Every variant is the same loop (Figure 1, lines 1-10): draw ρ (line 1); for each query draw ν_i
and compare q_i + ν_i ≥ T_i + ρ (lines 3-4); output ⊤ (or a number) and count, aborting after c
⊤ (line 6), else output ⊥ (line 8). They differ in the noise scales, whether ρ is redrawn after a
⊤, what a ⊤ releases and whether there is a cut-off; each class below states its row of Figure 2.
They run on the shared block kernel in ``_svt_engine``.

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
import functools
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from svtjax import _validate, budget
from svtjax._core import Draws, Outcome
from svtjax._pytree import is_concrete, pytree_dataclass, static_field
from svtjax.accounting import NotPrivate, PureDP
from svtjax.mechanisms import _svt_engine as engine
from svtjax.mechanisms.base import Mechanism, register
from svtjax.noise import Laplace

__all__ = ["LyuAlg1", "DPBook", "Roth11", "LeeClifton", "Stoddard", "Chen", "SVTS", "SVTReTr",
           "SVTGap"]


def _canonical_number(value: Any, kind: type) -> Any:
    """Python scalars stay weakly typed under jit, so every sweep point shares one compile."""
    if is_concrete(value) and jnp.ndim(value) == 0:
        return kind(value)
    return value


class _ClassicSVT(Mechanism):
    """Shared plumbing: the spec/scales of a variant run on ``_svt_engine``."""

    draws_by_block: ClassVar[bool] = True

    def spec(self) -> engine.SVTSpec:
        raise NotImplementedError

    def scales(self) -> engine.SVTScales:
        raise NotImplementedError

    def _check_common(self) -> None:
        object.__setattr__(self, "epsilon", _canonical_number(
            _validate.positive("epsilon", self.epsilon), float))
        object.__setattr__(self, "sensitivity", _canonical_number(
            _validate.positive("sensitivity", self.sensitivity), float))
        if hasattr(self, "c"):
            object.__setattr__(self, "c", _canonical_number(
                _validate.integer("c", self.c, minimum=1), int))

    def draw(self, key, n: int, *, shuffle: bool = False, dtype=None) -> Draws:
        """Every random number of one trial on ``n`` queries (standard variates, see ``Draws``)."""
        _validate.integer("n", n, minimum=1)
        dtype = jnp.zeros((), float).dtype if dtype is None else jnp.dtype(dtype)
        return _draw_jit(self, key, int(n), shuffle, dtype)

    def decide(self, draws: Draws, queries, thresholds, *, vectorized: bool = True) -> Outcome:
        """The deterministic output rule applied to ``draws`` (one trial).

        ``vectorized=False`` forces the general per-position scan (the fast path is tested equal).
        """
        q, t = self._prepare(queries, thresholds)
        return _decide_jit(self, draws, q, t, vectorized)

    def __call__(self, key, queries, thresholds) -> Outcome:
        q, t = self._prepare(queries, thresholds)
        return _call_jit(self, key, q, t)

    def run_batch(self, keys, queries, thresholds, *, shuffle: bool, vectorized: bool = True
                  ) -> Outcome:
        return engine.run_keys(self.spec(), self.scales(), keys, queries, thresholds,
                               shuffle=shuffle, vectorized=vectorized)


def _unbatch(tree):
    return jax.tree_util.tree_map(lambda x: x[0], tree)


@functools.partial(jax.jit, static_argnums=(2, 3, 4))
def _draw_jit(mech, key, n, shuffle, dtype):
    return engine.draw(mech.spec(), key, n, shuffle=shuffle, dtype=dtype)


@functools.partial(jax.jit, static_argnums=(4,))
def _decide_jit(mech, draws, q, t, vectorized):
    batched = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], draws)
    return _unbatch(engine.run_draws(mech.spec(), mech.scales(), batched, q, t,
                                     vectorized=vectorized))


@jax.jit
def _call_jit(mech, key, q, t):
    return _unbatch(engine.run_keys(mech.spec(), mech.scales(), jnp.asarray(key)[None], q, t,
                                    shuffle=False))


def _scales(threshold, query, c, top_cost, answer=0.0) -> engine.SVTScales:
    return engine.SVTScales(threshold=threshold, query=query, answer=answer, c=c,
                            top_cost=top_cost)


@register
@pytree_dataclass
class LyuAlg1(_ClassicSVT):
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

    def spec(self):
        return engine.SVTSpec(Laplace, Laplace)

    def scales(self):
        return _scales(2.0 * self.sensitivity / self.epsilon,
                       4.0 * self.c * self.sensitivity / self.epsilon,
                       self.c, self.epsilon / 2.0 / self.c)

    def privacy(self):
        return PureDP("Lyu, Su, Li 2017, Theorem 2 (Algorithm 1 is ε-DP)", float(self.epsilon))


@register
@pytree_dataclass
class DPBook(_ClassicSVT):
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

    def spec(self):
        return engine.SVTSpec(Laplace, Laplace, resample=True)

    def scales(self):
        return _scales(2.0 * self.c * self.sensitivity / self.epsilon,
                       4.0 * self.c * self.sensitivity / self.epsilon,
                       self.c, self.epsilon / self.c)

    def privacy(self):
        return PureDP("Dwork & Roth 2014, Thm 3.25 (Lyu et al. 2017, Algorithm 2 and Figure 2: "
                      "ε-DP)", float(self.epsilon))


@register
@pytree_dataclass
class Roth11(_ClassicSVT):
    """Roth's 2011 lecture notes (Lyu et al. 2017, Algorithm 3).

    Line 1: ρ = Lap(2Δ/ε); line 3: ν_i = Lap(2cΔ/ε); line 5: outputs a_i = q_i + ν_i (in
    ``Outcome.values``) instead of ⊤; abort after c. Not ε′-DP for any finite ε′ (Theorem 3):
    the released q_i + ν_i reveals a lower bound on ρ. The nominal claim was ε.
    """

    epsilon: Any
    c: Any
    sensitivity: Any = 1.0
    name = "roth11"

    def __post_init__(self):
        self._check_common()

    def spec(self):
        return engine.SVTSpec(Laplace, Laplace, release="noisy-query")

    def scales(self):
        # ν = Lap(2cΔ/ε) = Lap(2cΔ/ε2) with ε2 = ε: each ⊤ is charged ε/c.
        return _scales(2.0 * self.sensitivity / self.epsilon,
                       2.0 * self.c * self.sensitivity / self.epsilon,
                       self.c, self.epsilon / self.c)

    def privacy(self):
        return NotPrivate("Lyu, Su, Li 2017, Theorem 3 (Algorithm 3 is not ε′-DP for any finite "
                          "ε′)", float(self.epsilon))


@register
@pytree_dataclass
class LeeClifton(_ClassicSVT):
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

    def spec(self):
        return engine.SVTSpec(Laplace, Laplace)

    def scales(self):
        # ε2/c = 3ε/2 per ⊤ (Theorem 6 applied as in Lyu et al. Section 3.3).
        return _scales(4.0 * self.sensitivity / self.epsilon,
                       4.0 * self.sensitivity / (3.0 * self.epsilon),
                       self.c, 3.0 * self.epsilon / 2.0)

    def privacy(self):
        eps = float(self.epsilon)
        c = int(self.c)
        return PureDP("Lyu, Su, Li 2017, Section 3.3 and Figure 2 via Theorem 6: Algorithm 4 is "
                      "((1+6c)/4)ε-DP (claimed ε-DP)", (1 + 6 * c) / 4 * eps)


@register
@pytree_dataclass
class Stoddard(_ClassicSVT):
    """Stoddard et al. 2014 (Lyu et al. 2017, Algorithm 5).

    Line 1: ρ = Lap(2Δ/ε); line 3: ν_i = 0; no cut-off (every query is answered). Not ε′-DP for
    any finite ε′ (Theorem 4). The nominal claim was ε.
    """

    epsilon: Any
    sensitivity: Any = 1.0
    name = "stoddard"

    def __post_init__(self):
        self._check_common()

    def spec(self):
        return engine.SVTSpec(Laplace, None, cutoff=False)

    def scales(self):
        return _scales(2.0 * self.sensitivity / self.epsilon, 0.0, 0, 0.0)

    def privacy(self):
        return NotPrivate("Lyu, Su, Li 2017, Theorem 4 (Algorithm 5 is not ε′-DP for any finite "
                          "ε′)", float(self.epsilon))


@register
@pytree_dataclass
class Chen(_ClassicSVT):
    """Chen et al. 2015 (Lyu et al. 2017, Algorithm 6).

    Line 1: ρ = Lap(2Δ/ε); line 3: ν_i = Lap(2Δ/ε); line 4 uses per-query thresholds T_i; no
    cut-off. Not ε′-DP for any finite ε′ (Theorem 5). The nominal claim was ε.
    """

    epsilon: Any
    sensitivity: Any = 1.0
    name = "chen"

    def __post_init__(self):
        self._check_common()

    def spec(self):
        return engine.SVTSpec(Laplace, Laplace, cutoff=False)

    def scales(self):
        return _scales(2.0 * self.sensitivity / self.epsilon,
                       2.0 * self.sensitivity / self.epsilon, 0, 0.0)

    def privacy(self):
        return NotPrivate("Lyu, Su, Li 2017, Theorem 5 (Algorithm 6 is not ε′-DP for any finite "
                          "ε′)", float(self.epsilon))


@register
@pytree_dataclass
class SVTS(_ClassicSVT):
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

    epsilon: Any = None
    c: Any = None
    sensitivity: Any = 1.0
    eps3: Any = 0.0
    _split: Any = None
    monotonic: bool = static_field(default=False)
    allocation: Any = static_field(default=None)
    _noisy_answers: bool = static_field(default=False)
    name = "svt-s"

    def __post_init__(self):
        if self.c is None:
            raise TypeError("svt-s requires parameter c (the cut-off, an integer >= 1)")
        if not isinstance(self.monotonic, bool):
            raise TypeError(f"monotonic must be True or False; got {self.monotonic!r}")
        _validate.nonnegative("eps3", self.eps3)
        allocation = self.allocation
        if isinstance(allocation, (tuple, list)):
            if len(allocation) != 2:
                raise ValueError("an explicit allocation must be a pair (eps1, eps2); got "
                                 f"{allocation!r}")
            e1 = _validate.positive("allocation eps1", allocation[0])
            e2 = _validate.positive("allocation eps2", allocation[1])
            total = float(e1) + float(e2) + float(self.eps3)
            if self.epsilon is None:
                object.__setattr__(self, "epsilon", total)
            elif not math.isclose(float(self.epsilon), total, rel_tol=1e-12):
                raise ValueError(f"epsilon ({self.epsilon}) must equal eps1 + eps2 + eps3 "
                                 f"({total}) when allocation is an explicit pair")
            object.__setattr__(self, "_split", (float(e1), float(e2)))
            object.__setattr__(self, "allocation", "explicit")
        elif allocation is None:
            object.__setattr__(self, "allocation", budget.optimal_rule(self.monotonic))
        elif allocation != "explicit":
            budget.check_rule(allocation)
        if self.epsilon is None:
            raise TypeError("svt-s requires parameter epsilon (total budget > 0)")
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

    def spec(self):
        return engine.SVTSpec(Laplace, Laplace, release="answer" if self._noisy_answers else "none",
                              answer_noise=Laplace if self._noisy_answers else None)

    def scales(self):
        eps1, eps2, eps3 = self.budgets()
        k = 1.0 if self.monotonic else 2.0
        answer = self.c * self.sensitivity / eps3 if self._noisy_answers else 0.0
        return _scales(self.sensitivity / eps1, k * self.c * self.sensitivity / eps2, self.c,
                       (eps2 + eps3) / self.c, answer)

    def privacy(self):
        eps1, eps2, eps3 = (float(x) for x in self.budgets())
        thm = ("Theorem 7 (monotonic queries, ν = Lap(cΔ/ε2))" if self.monotonic
               else "Theorem 6")
        return PureDP(f"Lyu, Su, Li 2017, {thm}: Algorithm 7 is (ε1+ε2+ε3)-DP",
                      eps1 + eps2 + eps3)


@register
@pytree_dataclass
class SVTReTr(SVTS):
    """SVT with retraversal and a raised threshold, "SVT-ReTr" (Lyu et al. 2017, §4.4 and §5;
    slides ``seeds/001``: SVT-ReTr-1:c^(2/3)-1D/3D/5D).

    SVT-S (Algorithm 7) run on the stream "all items, then again the items not yet selected, ..."
    with every threshold raised by ``raise_by`` times the query-noise scale D (§5: "increases the
    threshold T by the scale factor of the Laplace noise injected to each query"; the slides'
    1D, 3D, 5D are ``raise_by`` = 1, 3, 5). ρ is drawn once; pass 1 visits every item, each later
    pass revisits, in the same order, the items answered ⊥ so far, until c items are selected or
    ``max_passes`` passes are done (the paper retraverses "until c queries are selected"; a cap
    keeps the stream finite — the default 10 is svtjax's choice). Positions of items already
    selected are not evaluated (-1).

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
        _validate.nonnegative("raise_by", self.raise_by)
        object.__setattr__(self, "raise_by", _canonical_number(self.raise_by, float))
        if isinstance(self.max_passes, bool) or not isinstance(self.max_passes, int):
            raise TypeError(f"max_passes must be an integer >= 1; got {self.max_passes!r}")
        _validate.integer("max_passes", self.max_passes, minimum=1)

    def spec(self):
        return dataclasses.replace(super().spec(), max_passes=self.max_passes)

    def scales(self):
        sc = super().scales()
        return sc._replace(shift=self.raise_by * sc.query)

    def stream_length(self, n: int) -> int:
        return n * self.max_passes

    def privacy(self):
        base = super().privacy()
        return PureDP(base.statement.replace("Algorithm 7", "Algorithm 7 on the retraversal "
                                             "stream (§4.4)"), base.eps)


@register
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
        if self.eps3 not in (0, 0.0):
            raise ValueError("svt-gap releases the noisy gap for free and takes no eps3; got "
                             f"eps3={self.eps3!r} (use svt-s for noisy answers)")
        super().__post_init__()

    def spec(self):
        return engine.SVTSpec(Laplace, Laplace, release="gap")

    def privacy(self):
        eps1, eps2, _ = (float(x) for x in self.budgets())
        return PureDP("Ding, Wang, Zhang, Kifer 2019, Theorem 4 (Algorithm 2 with σ = ∞, "
                      "Sparse-Vector-with-Gap): ε-DP", eps1 + eps2)
