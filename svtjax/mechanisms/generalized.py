"""Generalized and stage-wise SVT of Zhu & Wang (2020), Algorithms 2 and 3.

Zhu, Wang. "Improving Sparse Vector Technique with Rényi Differential Privacy", NeurIPS 2020:
Algorithm 2 (generalized SVT: any noise-adding mechanisms M_ρ, M_ν, cut-off c, max-length k_max,
option RESAMPLE), Algorithm 3 (stage-wise generalized SVT: Algorithm 2 restarted with a fresh
threshold after every c′ ⊤, per-stage cap k′_max), and their privacy: Theorem 8, Proposition 10,
Theorem 11, Theorem 12, Lemma 7 (see ``svtjax.accounting``).

Both are rules on the one engine. Algorithm 2 is Lyu et al.'s Figure 1 loop
(``classic.Figure1``) with the noise-adding mechanisms T̂ = T + ρ and q̂_i = q_i + ν_i for any
``svtjax.noise`` families (static; their scales are traced leaves), RESAMPLE and the cap k_max
(the engine's ``cap``). Algorithm 3 is its own rule (:meth:`StagewiseSVT.step`): stage
bookkeeping in the state, a fresh threshold per stage, scan only.

Choices where the paper is silent (documented and tested):

* The fresh threshold after a ⊤ at stream position p (RESAMPLE, Algorithm 2 line 6) and the
  fresh threshold of the stage that starts after position p (Algorithm 3, line 4 → Algorithm 2
  line 1) are the same number, ``Draws.refresh[p]``: when a ⊤ both resamples and ends a stage
  the resampled value is never used, so one draw is equivalent in distribution.
* ``Outcome.cost`` is 0 everywhere: the guarantees are RDP / (ε, δ) statements about the whole
  run (``privacy()``), not a per-⊤ charge.
* Noise from a target (ε, δ): with ``epsilon`` (and ``delta``; 0 or omitted for pure DP) the
  given noises are templates — their *ratio* is kept and a common factor is calibrated with
  ``svtjax.accounting.calibrate`` to the smallest noise whose ``privacy()`` meets (ε, δ).
  Without any noise the template is Algorithm 1's Laplace pair ρ ~ Lap(1), ν ~ Lap(2)
  (λ2/λ1 = 2 as in the paper's experiments).

Baselines of Section 4 (the Gaussian mechanism on every query, noisy screening) release no SVT
answer vector; they are accounting functions (``svtjax.accounting.gaussian_mechanism_guarantee``,
``noisy_screening_rdp``) used by ``experiments/zhu_wang2020.py``, not registry entries.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax.numpy as jnp

from svtjax import _validate, accounting
from svtjax._pytree import draft, is_concrete, pytree_dataclass, static_field
from svtjax.accounting import Unproven
from svtjax.mechanisms.base import register
from svtjax.mechanisms.classic import Figure1
from svtjax.mechanisms.rules import Written
from svtjax.noise import FAMILIES, Laplace, Noise
from svtjax.reference import generalized as ref
from svtjax.testing import Case, Claim, LawTestedIn

__all__ = ["GeneralizedSVT", "StagewiseSVT"]

_ACCOUNTED = ("laplace", "gaussian")


def _scaled(noise: Noise, factor: float) -> Noise:
    return type(noise)(float(noise.scale_value) * factor)


def _noises(threshold_family, query_family, capped=True, stagewise=False):
    """Test-case sampler: noise objects with random (traced) scales, c, k_max, c_stage."""
    def numeric(rng):
        d = {"c": int(rng.integers(1, 6)),
             "threshold_noise": FAMILIES[threshold_family](float(rng.uniform(0.2, 3.0))),
             "query_noise": FAMILIES[query_family](float(rng.uniform(0.2, 3.0)))}
        if capped:
            d["k_max"] = int(rng.integers(1, 40))
        if stagewise:
            d["c_stage"] = int(rng.integers(1, 4))
        return d
    return numeric


@register(reference=ref.generalized_svt, cases=[
    Case("generalized-svt-gaussian", {}, _noises("gaussian", "gaussian")),
    Case("generalized-svt-laplace-resample", {"resample": True},
         _noises("laplace", "laplace", capped=False)),
    Case("generalized-svt-mixed", {}, _noises("gaussian", "laplace")),
    Case("generalized-svt-mixed-resample", {"resample": True}, _noises("laplace", "gaussian")),
], privacy=[Claim("calibrated", {"epsilon": 1.0, "c": 2}, 1.0, "RDP",
                  ("Zhu & Wang 2020", "Algorithm 2", "Lemma 7"), rel=1e-9)],
    distribution=LawTestedIn("tests/test_generalized_svt.py", "the answer vectors' exact law"))
@pytree_dataclass
class GeneralizedSVT(Figure1):
    """Generalized SVT (Zhu & Wang 2020, Algorithm 2).

    Line 1: T̂ = T + ρ, ρ ~ ``threshold_noise``; line 2: for i = 1, ..., k_max; line 3:
    q̂_i = q_i + ν_i, ν_i ~ ``query_noise``; line 4: q̂_i ≥ T̂ → line 5: ⊤, count + 1; line 6:
    with RESAMPLE a fresh T̂ (``Draws.refresh[i]``); line 7: abort when count ≥ c; line 9: ⊥.

    ``privacy()`` (``accounting.generalized_svt_guarantee``): the pointwise minimum of every bound
    that applies — Theorem 8 (1) (k_max finite, sup E[K|ρ] ≤ k_max + 1), Theorem 8 (3) (Laplace
    query noise), Proposition 10 (Gaussian noises, σ2 ≥ √3σ1, ``margin`` T given: the caller
    promises non-negative queries and thresholds ≤ T), Theorem 11 (c > 1, k_max finite),
    Lemma 7 + Lemma 4 (Laplace noises); RESAMPLE composes c rounds of the c = 1 bound. Gaussian
    query noise with neither k_max nor margin is :class:`~svtjax.accounting.Unproven`.

    Args:
      c: cut-off (integer ≥ 1, traced).
      threshold_noise: noise of ρ, a ``svtjax.noise`` object (family static, scale traced).
      query_noise: noise of ν_i.
      k_max: stream cap (integer ≥ 1, traced; None = ∞, structural).
      sensitivity: Δ > 0.
      epsilon, delta: optional target (ε, δ) (δ = 0 / None: pure DP); the noises are then
        calibrated (see the module docstring).
      margin: threshold T for Proposition 10 (non-negative queries), or None.
      resample: RESAMPLE (static).
    """

    c: Any = dataclasses.field(default=None, metadata={"required": True})
    threshold_noise: Any = None
    query_noise: Any = None
    k_max: Any = None
    sensitivity: Any = 1.0
    epsilon: Any = None
    delta: Any = None
    margin: Any = None
    resample: bool = static_field(default=False)
    name = "generalized-svt"

    @classmethod
    def _normalize(cls, values):
        """Construction (``svtjax._pytree``): checks the parameters, stores the numbers as
        Python numbers and, given a target ε (and δ), the calibrated noises
        (:meth:`_calibrated`)."""
        v = dict(values)
        if v["c"] is None:
            raise TypeError(f"{cls.name} requires parameter c (the cut-off, an integer >= 1)")
        for name in ("c", "k_max", "sensitivity", "epsilon", "delta", "margin"):
            _validate.scalar(name, v[name])
        _validate.integer("c", v["c"], minimum=1)
        _validate.positive("sensitivity", v["sensitivity"])
        if v["epsilon"] is not None:
            _validate.positive("epsilon", v["epsilon"])
        if v["delta"] is not None:
            _validate.probability("delta", v["delta"], open_low=False)
        if v["k_max"] is not None:
            _validate.integer("k_max", v["k_max"], minimum=1)
        if v["margin"] is not None:
            _validate.nonnegative("margin", v["margin"])
        if not isinstance(v["resample"], bool):
            raise TypeError(f"resample must be True or False; got {v['resample']!r}")
        for field in ("threshold_noise", "query_noise"):
            value = v[field]
            if value is not None and not isinstance(value, Noise):
                raise TypeError(f"{field} must be a svtjax.noise object such as "
                                f"Gaussian(sigma) or Laplace(scale); got {value!r}")
        for field, kind in (("c", int), ("k_max", int), ("sensitivity", float),
                            ("epsilon", float), ("delta", float), ("margin", float)):
            value = v[field]
            if value is not None and is_concrete(value) and jnp.ndim(value) == 0:
                v[field] = kind(value)
        if (v["threshold_noise"] is None) != (v["query_noise"] is None):
            raise TypeError(f"{cls.name}: give both threshold_noise and query_noise, or "
                            "neither (with epsilon)")
        if v["threshold_noise"] is None and v["epsilon"] is None:
            raise TypeError(f"{cls.name} requires threshold_noise and query_noise (Noise "
                            "objects), or a target epsilon (and delta) to calibrate them")
        if v["epsilon"] is not None and is_concrete((v["epsilon"], v["threshold_noise"],
                                                      v["query_noise"])):
            v["threshold_noise"], v["query_noise"] = cls._calibrated(v)
        return v

    @classmethod
    def _calibrated(cls, v: dict):
        """The noises (given, or Algorithm 1's Laplace pair) scaled by the factor at which
        ``privacy()`` reaches the target (ε, δ) (``accounting.calibrate``)."""
        rho = Laplace(1.0) if v["threshold_noise"] is None else v["threshold_noise"]
        nu = Laplace(2.0) if v["query_noise"] is None else v["query_noise"]
        delta = 0.0 if v["delta"] is None else float(v["delta"])
        mech = draft(cls, **v)  # its privacy bound, before construction ends

        def guarantee(factor):
            return mech._guarantee(_scaled(rho, factor), _scaled(nu, factor))

        try:
            factor = accounting.calibrate(guarantee, float(v["epsilon"]), delta)
        except ValueError as err:
            raise ValueError(f"{cls.name}: cannot calibrate {rho.family}/{nu.family} noise to "
                             f"epsilon={v['epsilon']}, delta={delta}: "
                             f"{guarantee(1.0).statement}") from err
        return _scaled(rho, factor), _scaled(nu, factor)

    def _guarantee(self, rho: Noise, nu: Noise):
        if rho.family not in _ACCOUNTED or nu.family not in _ACCOUNTED:
            return Unproven(f"Zhu & Wang 2020 bound RDP for Gaussian and Laplace noise only; "
                            f"got {rho.family} threshold and {nu.family} query noise")
        return accounting.generalized_svt_guarantee(
            rho, nu, int(self.c), k_max=self.k_max, resample=self.resample,
            sensitivity=float(self.sensitivity), margin=self.margin)

    # -- the rule: Lyu et al.'s Figure 1 loop with Algorithm 2's noises and options ----------------
    # (the fields ``threshold_noise`` / ``query_noise`` are the noise objects themselves, so the
    # Figure 1 hooks return them; ``cap`` is line 2's k_max)
    def initial_streams(self):
        return {"threshold": self.threshold_noise}  # line 1: T̂ = T + ρ

    def streams(self):
        out = {"query": self.query_noise}  # line 3: q̂_i = q_i + ν_i
        if self.resample:
            out["refresh"] = self.threshold_noise  # line 6: RESAMPLE
        return out

    def resamples(self):
        return self.resample

    def cap(self):
        return self.k_max  # line 2: i = 1, ..., k_max

    def privacy(self):
        return self._guarantee(self.threshold_noise, self.query_noise)

    @classmethod
    def example_params(cls, *, epsilon=1.0, c=2, n=None):
        """ε and c: the noises are then Algorithm 1's Laplace pair calibrated to ε."""
        del n
        return {"epsilon": epsilon, "c": c}


class StageState(NamedTuple):
    """Algorithm 3's state: ⊤ in total, the current ρ, and the stage: its ⊤, its length and the
    number of stages done (int32[3])."""

    count: Any
    rho: Any
    stage: Any


@register(reference=ref.stagewise_svt, cases=[
    Case("stagewise-svt", {}, _noises("gaussian", "gaussian", stagewise=True)),
    Case("stagewise-svt-resample-uncapped", {"resample": True},
         _noises("laplace", "gaussian", capped=False, stagewise=True)),
], privacy=[Claim("calibrated", {"epsilon": 1.0, "delta": 1e-6, "c": 2}, 1.0, "EpsilonOfDelta",
                  ("Zhu & Wang 2020", "Algorithm 3", "Theorem 12"), delta=1e-6, rel=1e-9)],
    distribution=LawTestedIn("tests/test_generalized_svt.py", "the answer vectors' exact law"))
@pytree_dataclass
class StagewiseSVT(GeneralizedSVT):
    """Stage-wise generalized SVT (Zhu & Wang 2020, Algorithm 3).

    Line 2: for stages ℓ = 1, ..., ⌈c/c′⌉; line 3: cut-off c̃ = c′ (the last stage:
    c − c′(⌈c/c′⌉ − 1)); line 4: Algorithm 2 with c̃, per-stage cap k′_max (``k_max``) and
    RESAMPLE on the current front of the stream — a fresh threshold (``Draws.refresh[p]`` for the
    position p that ended the previous stage), count and length per stage; line 5: outputs
    appended. The run halts after c ⊤ in total or at the end of the stream.

    ``privacy()`` (``accounting.stagewise_svt_guarantee``): ε(δ) is the better of the m stage
    RDP curves composed and Theorem 12's hybrid (each stage (ε_s(δ′), δ′)-DP by the best bound
    of Theorem 8/11 + Lemma 3, the stages composed with ``composition``: "optimal" (Kairouz et
    al. 2015 Thm 3.3, default), "kov" (Thm 3.5) or "strong" (Dwork-Rothblum-Vadhan)).

    Args (besides generalized-svt's):
      c_stage: c′, ⊤ per stage (integer ≥ 1, traced; default ⌊√c⌋ — autodp's default).
      k_max: k′_max, the cap on each stage's length (None = ∞).
      composition: how stages compose in ``privacy()`` (static).
    """

    c_stage: Any = None
    composition: str = static_field(default="optimal")
    name = "stagewise-svt"

    @classmethod
    def _normalize(cls, values):
        v = dict(values)
        for name in ("c", "c_stage"):
            _validate.scalar(name, v[name])
        if v["c"] is not None:
            _validate.integer("c", v["c"], minimum=1)
        if v["c_stage"] is None and v["c"] is not None and is_concrete(v["c"]):
            v["c_stage"] = max(1, math.isqrt(int(v["c"])))
        if v["c_stage"] is not None:
            _validate.integer("c_stage", v["c_stage"], minimum=1)
            if is_concrete(v["c_stage"]) and jnp.ndim(v["c_stage"]) == 0:
                v["c_stage"] = int(v["c_stage"])
        _validate.one_of("composition", v["composition"], ("optimal", "kov", "strong"))
        return super()._normalize(v)

    def _guarantee(self, rho: Noise, nu: Noise):
        if rho.family not in _ACCOUNTED or nu.family not in _ACCOUNTED:
            return super()._guarantee(rho, nu)
        return accounting.stagewise_svt_guarantee(
            rho, nu, int(self.c), int(self.c_stage), k_stage=self.k_max, resample=self.resample,
            sensitivity=float(self.sensitivity), margin=self.margin,
            composition=self.composition)

    # -- the rule -----------------------------------------------------------------------------
    def streams(self):
        # a fresh threshold per stage (line 4 -> Algorithm 2 line 1) and after each ⊤ (RESAMPLE):
        # ``refresh[p]`` for the stage that starts, or the ⊤, at position p (module docstring)
        return {"query": self.query_noise, "refresh": self.threshold_noise}

    def cap(self):
        return None  # k_max caps each stage (k′_max), in the state

    def has_block(self):
        return False

    def num_stages(self):
        """m = ⌈c/c′⌉ (line 2), in integers."""
        c = jnp.asarray(self.c, jnp.int32)
        c_stage = jnp.asarray(self.c_stage, jnp.int32)
        return (c + c_stage - 1) // c_stage

    def init(self, noise):
        return StageState(jnp.zeros((), jnp.int32), noise["threshold"],
                          jnp.zeros((3,), jnp.int32))

    def step(self, state, x):
        """Algorithm 2, lines 3-9, at one position of the current stage, and Algorithm 3's
        bookkeeping (lines 2-4): stage ℓ of m ends after c̃ ⊤ (line 3: c′, the last stage
        c − c′(m − 1)) or k′_max evaluated positions; the next stage starts with a fresh
        threshold."""
        m = self.num_stages()
        top = x.query + x.noise["query"] >= x.threshold + state.rho  # Alg. 2 line 4
        s_top = state.stage[0] + top.astype(jnp.int32)
        s_len = state.stage[1] + 1
        c_tilde = jnp.where(state.stage[2] == m - 1, self.c - self.c_stage * (m - 1),
                            self.c_stage)  # line 3
        end = s_top >= c_tilde
        if self.k_max is not None:
            end = end | (s_len >= self.k_max)
        fresh = end | top if self.resample else end  # line 4 (and Alg. 2 line 6)
        rho = jnp.where(fresh, x.noise["refresh"], state.rho)
        zero = jnp.zeros((), jnp.int32)
        stage = jnp.where(end, jnp.stack([zero, zero, state.stage[2] + 1]),
                          jnp.stack([s_top, s_len, state.stage[2]]))
        return StageState(state.count + top.astype(jnp.int32), rho, stage), Written(top)

    def halted(self, state):
        return (state.count >= self.c) | (state.stage[2] >= self.num_stages())

    @classmethod
    def example_params(cls, *, epsilon=1.0, c=2, n=None):
        """ε, c and k′_max = n: Gaussian noises calibrated to (ε, δ = 10⁻⁶) with Kairouz et
        al.'s composition (Zhu & Wang 2020's experimental setting)."""
        from svtjax.noise import Gaussian

        params = {"epsilon": epsilon, "c": c, "delta": 1e-6, "threshold_noise": Gaussian(1.0),
                  "query_noise": Gaussian(2.0), "composition": "kov"}
        if n is not None:
            params["k_max"] = int(n)
        return params
