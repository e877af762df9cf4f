"""The Figure 1 loop of Lyu, Su & Li (2017) as one rule on the engine, shared by Algorithms 1-7
(``svtjax.mechanisms.classic``), the generalized SVTs of Zhu & Wang (2020)
(``svtjax.mechanisms.generalized``) and SVT-Exp of Liu et al. (2024)
(``svtjax.mechanisms.exponential``); the table of its lines is in ``classic``'s docstring.
"""

from __future__ import annotations

from typing import Any, Optional

import jax.numpy as jnp

from svtjax import _validate
from svtjax._pytree import is_concrete
from svtjax.mechanisms.rules import CountState, ThresholdMechanism, Written, cutoff_block

__all__ = ["Figure1", "canonical_number"]


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

    # -- construction (``svtjax._pytree``: values in, canonical values out) ----------------------
    @classmethod
    def _normalize(cls, values: dict) -> dict:
        """Checks ε > 0, Δ > 0 and the cut-off c (an integer ≥ 1) of a Figure 1 rule and
        stores them as Python numbers (:func:`canonical_number`); a subclass with more
        parameters extends this."""
        return cls._common(values)

    @staticmethod
    def _common(values: dict) -> dict:
        """``values`` with ε, Δ and (if the rule has one) c checked and canonical."""
        for name in ("epsilon", "sensitivity", "c"):
            _validate.scalar(name, values.get(name))
        out = dict(values)
        out["epsilon"] = canonical_number(_validate.positive("epsilon", values["epsilon"]), float)
        out["sensitivity"] = canonical_number(
            _validate.positive("sensitivity", values["sensitivity"]), float)
        if "c" in values:
            out["c"] = canonical_number(_validate.integer("c", values["c"], minimum=1), int)
        return out
