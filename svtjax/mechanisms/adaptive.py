"""Adaptive-Sparse-Vector-with-Gap (Ding, Wang, Zhang, Kifer 2019, Algorithm 2), as two rules.

Line 1: ε0 = θε, ε1 = (1−θ)ε/k, ε2 = ε1/2, σ = 4√2Δ/ε2 (two standard deviations of
Lap(2Δ/ε2), footnote 5); line 2-3: T̃ = T + η, η ~ Lap(Δ/ε0); per query (line 6) ξ_i ~ Lap(2Δ/ε2),
η_i ~ Lap(2Δ/ε1) (Lap(Δ/ε2), Lap(Δ/ε1) for monotonic queries, footnote 6);
lines 7-9 (top branch): if q_i + ξ_i − T̃ ≥ σ, output (⊤, gap q_i + ξ_i − T̃, ε2);
lines 10-12 (middle branch): else if q_i + η_i − T̃ ≥ 0, output (⊤, gap, ε1); else ⊥ (cost 0);
line 15: stop when cost > ε − ε1.

Outcome: ``answers`` 1/0/-1, ``values`` the released gap (NaN on ⊥), ``cost`` the per-query
budget (ε2 top, ε1 middle, 0 ⊥) — the branch of a ⊤ is read from its cost. The threshold's ε0 is
up-front (``privacy()``); :meth:`AdaptiveSVTGap.remaining` gives the budget left over.

``adaptive-svt-gap`` (:class:`AdaptiveSVTGap`) decides line 15 exactly: with n1 middle and n2
top answers, cost = ε0 + n1 ε1 + n2 ε2 > ε − ε1  ⟺  2 n1 + n2 > 2(k − 1), evaluated on integers.
It has a block form: the stopping rule is a cumulative weighted count (2 per middle ⊤, 1 per top
⊤), vectorised like the cut-off of the classic SVT.

``adaptive-svt-gap-authors`` (:class:`AdaptiveSVTGapAuthors`) replays the authors' code instead
(github.com/cmla-psu/freegap, ``freegap/adaptivesvt.py``, ``adaptive_sparse_vector``, numba
``njit(fastmath=True)``): ``cost`` starts at ε0 and the loop runs ``while i < len(q) and cost <=
epsilon - epsilon_2`` (their ``epsilon_2`` is the paper's ε1, their ``epsilon_1`` the paper's
ε2), adding ε2 on a top answer and ε1 on a middle one — a running float64 sum compared with
ε − ε1 before each query. Mathematically this is line 15; in floating point the sum can land one
ulp above ε − ε1 when 2 n1 + n2 reaches exactly 2(k − 1) (cost = ε − ε1 exactly, one middle
answer of budget left), and the run then stops one answer early: the authors' rule gives one
answer fewer than the exact rule in exactly those runs (never more; no other difference). The
rule reproduces that arithmetic: IEEE float64 additions in stream order, with the budgets
computed as the authors' ``evaluate.py`` does: y = ``numpy.power(k, 2/3)`` (of 2k for
non-monotonic queries), θ = 1/(1 + y) (``allocate_x``) and the query share y/(1 + y)
(``allocate_y``, which can differ from 1 − θ in the last bit, and that bit decides some runs: at
ε = 0.7, k = 6 and 9); ε0 = θε, ε1 = share·ε/k, ε2 = ε1/2 (= share·ε/(2k) exactly). An explicit
θ other than 1/(1 + y) gets the share 1 − θ. (The authors compile with numba ``fastmath=True``,
which permits LLVM to reorder such arithmetic; ``tests/test_adaptive_stopping.py`` checks, where
numba is installed, that their expressions compiled that way give these same floats.) It needs
float64 (``jax_enable_x64``) and is refused without it; its reference
(``svtjax.reference.adaptive``) does the same in Python floats. Its state is the threshold
noise and the running sum (``spent``, float64 whatever the run's dtype); a float sum in stream
order is no cumulative count, so it has no block form (the engine runs the per-position scan).

σ for monotonic queries: line 1 fixes σ = 4√2Δ/ε2 and footnote 6 changes only the noise
(Lap(Δ/ε2) in the top branch), not σ; the authors' code does the same. So σ = 4√2Δ/ε2 for
both query types — for monotonic queries that is four standard deviations of the top branch's
actual noise, a stricter top branch than "two standard deviations" would give.

Streams (both rules): ``threshold`` (η), ``query`` (ξ_i) and ``query2`` (η_i).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from svtjax import _validate
from svtjax._core import Outcome
from svtjax._pytree import is_concrete, pytree_dataclass, static_field
from svtjax.accounting import PureDP
from svtjax.mechanisms.base import register
from svtjax.mechanisms.figure1 import canonical_number
from svtjax.mechanisms.rules import ThresholdMechanism, Written
from svtjax.noise import Laplace
from svtjax.reference import adaptive as ref
from svtjax.testing import Case, Claim, LawTestedIn, eps_c

__all__ = ["AdaptiveSVTGap", "AdaptiveSVTGapAuthors", "authors_shares"]


class AdaptiveState(NamedTuple):
    """Middle (n1) and top (n2) answers so far and the noisy threshold's noise η."""

    n1: Any
    n2: Any
    rho: Any


class AuthorsState(NamedTuple):
    """The noisy threshold's noise η and the authors' running float64 ``cost``: ε0 plus ε2 per
    top and ε1 per middle answer, summed in stream order."""

    rho: Any
    spent: Any


@register(reference=ref.adaptive_svt_gap, cases=[
    Case("adaptive-svt-gap", {}, eps_c),
    Case("adaptive-svt-gap-monotonic-theta", {"monotonic": True, "theta": 0.3}, eps_c),
], privacy=[Claim("eps1-c2", {"epsilon": 1.0, "c": 2}, 1.0, "PureDP", ("Ding", "Theorem 4"))],
    distribution=LawTestedIn("tests/test_adaptive_svt_gap.py", "the branch labels' exact law"))
@pytree_dataclass
class AdaptiveSVTGap(ThresholdMechanism):
    """Adaptive-Sparse-Vector-with-Gap (Ding et al. 2019, Algorithm 2); ε-DP (Theorem 4).

    Line 15 is decided exactly, on integer branch counts; ``adaptive-svt-gap-authors`` stops by
    the authors' running float64 sum instead (module docstring).

    Args:
      epsilon: total budget ε > 0 (traced).
      c: the paper's k, the number of middle-branch answers the budget guarantees (integer >= 1,
        traced).
      sensitivity: Δ > 0 (traced).
      theta: threshold share θ in (0, 1) (traced); default 1/(1 + c^(2/3)) when monotonic else
        1/(1 + (2c)^(2/3)) (Ding et al. §7.3, following Lyu et al.'s allocation).
      monotonic: monotonic queries: Lap(Δ/ε2), Lap(Δ/ε1) noise (footnote 6).
    """

    epsilon: Any
    c: Any
    sensitivity: Any = 1.0
    theta: Any = None
    monotonic: bool = static_field(default=False)
    name = "adaptive-svt-gap"
    releases = True
    per_position_cost = True
    moved_parameters = {"stopping": "the authors' stopping rule (stopping='authors') is the "
                                    "mechanism 'adaptive-svt-gap-authors'"}

    # -- construction (``svtjax._pytree``: values in, canonical values out) ----------------------
    @classmethod
    def _normalize(cls, values: dict) -> dict:
        """Checks ε > 0, Δ > 0, c (an integer >= 1), θ in (0, 1) and ``monotonic``; stores the
        concrete numbers as Python numbers and the default θ of Ding et al. §7.3."""
        v = cls._checked(values)
        if v["theta"] is None:
            x = (v["c"] if v["monotonic"] else 2 * v["c"]) ** (2 / 3)
            v["theta"] = 1.0 / (1.0 + x)
        elif is_concrete(v["theta"]):
            _validate.probability("theta", v["theta"])
            v["theta"] = float(v["theta"])
        return v

    @staticmethod
    def _checked(values: dict) -> dict:
        """``values`` with ε, c, Δ and ``monotonic`` checked and ε, c, Δ canonical."""
        for name in ("epsilon", "c", "sensitivity", "theta"):
            _validate.scalar(name, values[name])
        if not isinstance(values["monotonic"], bool):
            raise TypeError(f"monotonic must be True or False; got {values['monotonic']!r}")
        v = dict(values)
        v["epsilon"] = canonical_number(_validate.positive("epsilon", v["epsilon"]), float)
        v["sensitivity"] = canonical_number(_validate.positive("sensitivity", v["sensitivity"]),
                                            float)
        v["c"] = canonical_number(_validate.integer("c", v["c"], minimum=1), int)
        return v

    # -- budgets and scales (line 1, footnote 6) ------------------------------------------------
    def query_share(self):
        """The share of ε spent on queries, k·ε1/ε: 1 − θ (line 1)."""
        return 1.0 - self.theta

    def budgets(self):
        """(ε0, ε1, ε2) of Algorithm 2 line 1."""
        eps0 = self.theta * self.epsilon
        eps1 = self.query_share() * self.epsilon / self.c
        return eps0, eps1, eps1 / 2.0

    def sigma(self):
        """σ = 4√2Δ/ε2 (line 1, for both query types)."""
        _, _, eps2 = self.budgets()
        return 4.0 * math.sqrt(2.0) * self.sensitivity / eps2

    def remaining(self, outcome: Outcome):
        """Budget left over: ε − ε0 − Σ cost (per trial for batched outcomes)."""
        eps0, _, _ = self.budgets()
        return self.epsilon - eps0 - jnp.sum(jnp.asarray(outcome.cost), axis=-1)

    def privacy(self):
        return PureDP("Ding, Wang, Zhang, Kifer 2019, Theorem 4: Adaptive-Sparse-Vector-with-Gap "
                      "(Algorithm 2) is ε-DP", float(self.epsilon))

    # -- the rule -----------------------------------------------------------------------------
    def initial_streams(self):
        eps0, _, _ = self.budgets()
        return {"threshold": Laplace(self.sensitivity / eps0)}  # line 2: η ~ Lap(Δ/ε0)

    def streams(self):
        _, eps1, eps2 = self.budgets()
        f = 1.0 if self.monotonic else 2.0
        return {"query": Laplace(f * self.sensitivity / eps2),  # line 6: ξ_i ~ Lap(2Δ/ε2)
                "query2": Laplace(f * self.sensitivity / eps1)}  # η_i ~ Lap(2Δ/ε1)

    def init(self, noise):
        zero = jnp.zeros((), jnp.int32)
        return AdaptiveState(zero, zero, noise["threshold"])

    def _branches(self, x, rho):
        """Lines 6-14 at one position (or a block): the top and middle branch, the released gap
        and the position's cost."""
        dtype = x.query.dtype
        t_noisy = x.threshold + rho  # line 3: T̃ = T + η
        gap_top = (x.query + x.noise["query"]) - t_noisy
        gap_mid = (x.query + x.noise["query2"]) - t_noisy
        top = gap_top >= jnp.asarray(self.sigma(), dtype)  # line 7
        mid = ~top & (gap_mid >= 0)  # line 10
        _, eps1, eps2 = self.budgets()
        value = jnp.where(top, gap_top, jnp.where(mid, gap_mid, jnp.nan))  # lines 8, 11
        cost = jnp.where(top, jnp.asarray(eps2, dtype),
                         jnp.where(mid, jnp.asarray(eps1, dtype), jnp.zeros((), dtype)))
        return top, mid, value, cost

    def step(self, state, x):
        top, mid, value, cost = self._branches(x, state.rho)
        state = state._replace(n1=state.n1 + mid.astype(jnp.int32),
                               n2=state.n2 + top.astype(jnp.int32))
        return state, Written(top | mid, value, cost)

    def halted(self, state):
        return 2 * state.n1 + state.n2 > 2 * (self.c - 1)  # line 15, on integers

    def block(self, state, xs, valid):
        """Lines 6-15 over a block: the noisy threshold is fixed, and line 15's weighted count
        (2 per middle, 1 per top answer) before each position decides whether it is reached."""
        top, mid, value, cost = self._branches(xs, state.rho)
        weight = jnp.where(valid, 2 * mid.astype(jnp.int32) + top.astype(jnp.int32), 0)
        before = 2 * state.n1 + state.n2 + jnp.cumsum(weight, dtype=jnp.int32) - weight
        active = valid & (before <= 2 * (self.c - 1))
        top, mid = top & active, mid & active
        state = state._replace(n1=state.n1 + jnp.sum(mid, dtype=jnp.int32),
                               n2=state.n2 + jnp.sum(top, dtype=jnp.int32))
        answer = jnp.where(active, (top | mid).astype(jnp.int8), jnp.int8(-1))
        return state, Written(answer, jnp.where(active, value, jnp.nan),
                              jnp.where(active, cost, jnp.zeros((), cost.dtype)))


@register(reference=ref.adaptive_svt_gap_authors, cases=[
    Case("adaptive-svt-gap-authors", {"monotonic": True}, eps_c),
], privacy=[Claim("eps1-c2", {"epsilon": 1.0, "c": 2}, 1.0, "PureDP", ("Ding", "Theorem 4"))],
    distribution=LawTestedIn(
        "tests/test_adaptive_stopping.py", "adaptive-svt-gap's outcome on the same draws, one "
        "answer short exactly where the float64 sum overshoots ε − ε1"))
@pytree_dataclass
class AdaptiveSVTGapAuthors(AdaptiveSVTGap):
    """Adaptive-Sparse-Vector-with-Gap stopped as the authors' code stops it (cmla-psu/freegap):
    a running float64 budget sum compared with ε − ε1 before each query, with their budget
    shares (module docstring). Needs ``jax_enable_x64``.

    Args:
      epsilon: total budget ε > 0.
      c: the paper's k (integer >= 1, concrete: the budget shares are computed on the host).
      sensitivity: Δ > 0 (traced).
      theta: threshold share θ in (0, 1), concrete; default the authors' 1/(1 + y), y =
        numpy.power(c, 2/3) when monotonic else numpy.power(2c, 2/3) (``authors_shares``).
      monotonic: monotonic queries: Lap(Δ/ε2), Lap(Δ/ε1) noise (footnote 6).
    """

    _share: Any = None  # the query share, the authors' y/(1 + y) (construction sets it)
    name = "adaptive-svt-gap-authors"
    block = None  # a float sum in stream order: the per-position scan only

    @classmethod
    def _normalize(cls, values: dict) -> dict:
        """The checks of ``adaptive-svt-gap``, float64, a concrete c and θ, and the authors'
        (θ, query share) (:func:`authors_shares`)."""
        if jax.dtypes.canonicalize_dtype(float) != jnp.float64:
            raise ValueError(f"{cls.name} replays the authors' float64 budget sum and needs "
                             "float64: set JAX_ENABLE_X64=1 or call jax.config.update("
                             "'jax_enable_x64', True) first (or use adaptive-svt-gap)")
        v = cls._checked(values)
        if not is_concrete((v["c"], v["theta"])):
            raise ValueError(f"{cls.name} needs a concrete c and theta (it computes the "
                             "authors' budget shares on the host)")
        if v["theta"] is not None:
            _validate.probability("theta", v["theta"])
            v["theta"] = float(v["theta"])
        v["theta"], v["_share"] = authors_shares(int(v["c"]), v["monotonic"], v["theta"])
        return v

    def query_share(self):
        """The authors' ``allocate_y`` (y/(1 + y)), or 1 − θ for an explicit θ of one's own."""
        return self._share

    def privacy(self):
        return PureDP("Ding, Wang, Zhang, Kifer 2019, Theorem 4: Adaptive-Sparse-Vector-with-Gap "
                      "(Algorithm 2) is ε-DP; the authors' stopping rule is a function of the "
                      "released branches that stops no later than line 15, so every run spends "
                      "at most ε", float(self.epsilon))

    def init(self, noise):
        eps0, _, _ = self.budgets()  # the authors' cost = epsilon_0 before the first query
        return AuthorsState(noise["threshold"], jnp.asarray(eps0, jnp.float64))

    def step(self, state, x):
        top, mid, value, cost = self._branches(x, state.rho)
        # cost += epsilon_1 (top) or epsilon_2 (middle) in their names, in float64
        _, eps1, eps2 = (jnp.asarray(e, jnp.float64) for e in self.budgets())
        spent = jnp.where(top, state.spent + eps2, jnp.where(mid, state.spent + eps1, state.spent))
        return state._replace(spent=spent), Written(top | mid, value, cost)

    def halted(self, state):
        """The authors' loop condition, negated: ``while cost <= epsilon - epsilon_2``."""
        _, eps1, _ = self.budgets()
        bound = jnp.asarray(self.epsilon, jnp.float64) - jnp.asarray(eps1, jnp.float64)
        return ~(state.spent <= bound)


def authors_shares(k: int, monotonic: bool, theta=None) -> tuple[float, float]:
    """(θ, query share) as the authors' ``freegap/evaluate.py`` computes ``allocate_x`` and
    ``allocate_y``: y = numpy.power(k, 2/3) (of 2k for non-monotonic queries), θ = 1/(1 + y),
    share = y/(1 + y). A given θ other than that keeps the share 1 − θ."""
    y = float(np.power(np.int64(k if monotonic else 2 * k), 2.0 / 3.0))
    default = 1 / (1 + y)
    if theta is None or theta == default:
        return default, y / (1 + y)
    return theta, 1.0 - theta
