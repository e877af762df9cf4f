"""Adaptive-Sparse-Vector-with-Gap (Ding, Wang, Zhang, Kifer 2019, Algorithm 2), as a rule.

Line 1: ε0 = θε, ε1 = (1−θ)ε/k, ε2 = ε1/2, σ = 4√2Δ/ε2 (two standard deviations of
Lap(2Δ/ε2), footnote 5); line 2-3: T̃ = T + η, η ~ Lap(Δ/ε0); per query (line 6) ξ_i ~ Lap(2Δ/ε2),
η_i ~ Lap(2Δ/ε1) (Lap(Δ/ε2), Lap(Δ/ε1) for monotonic queries, footnote 6);
lines 7-9 (top branch): if q_i + ξ_i − T̃ ≥ σ, output (⊤, gap q_i + ξ_i − T̃, ε2);
lines 10-12 (middle branch): else if q_i + η_i − T̃ ≥ 0, output (⊤, gap, ε1); else ⊥ (cost 0);
line 15: stop when cost > ε − ε1.

Outcome: ``answers`` 1/0/-1, ``values`` the released gap (NaN on ⊥), ``cost`` the per-query
budget (ε2 top, ε1 middle, 0 ⊥) — the branch of a ⊤ is read from its cost. The threshold's ε0 is
up-front (``privacy()``); :meth:`AdaptiveSVTGap.remaining` gives the budget left over.

Stopping is decided exactly: with n1 middle and n2 top answers,
cost = ε0 + n1 ε1 + n2 ε2 > ε − ε1  ⟺  2 n1 + n2 > 2(k − 1), evaluated on integers.

Stopping rule (``stopping``, static): ``"exact"`` (default) decides line 15 on the integer
branch counts as above. ``"authors"`` replays the authors' code instead (github.com/cmla-psu/
freegap, ``freegap/adaptivesvt.py``, ``adaptive_sparse_vector``, numba ``njit(fastmath=True)``):
``cost`` starts at ε0 and the loop runs ``while i < len(q) and cost <= epsilon - epsilon_2``
(their ``epsilon_2`` is the paper's ε1, their ``epsilon_1`` the paper's ε2), adding ε2 on a top
answer and ε1 on a middle one — a running float64 sum compared with ε − ε1 before each query.
Mathematically this is line 15; in floating point the sum can land one ulp above ε − ε1 when
2 n1 + n2 reaches exactly 2(k − 1) (cost = ε − ε1 exactly, one middle answer of budget left),
and the run then stops one answer early: the authors' rule gives one answer fewer than the
exact rule in exactly those runs (never more; no other difference). The option reproduces that
arithmetic: IEEE float64 additions in stream order, with the budgets computed as the authors'
``evaluate.py`` does: y = ``numpy.power(k, 2/3)`` (of 2k for non-monotonic queries), θ =
1/(1 + y) (``allocate_x``) and the query share y/(1 + y) (``allocate_y``, which can differ from
1 − θ in the last bit, and that bit decides some runs: at ε = 0.7, k = 6 and 9); ε0 = θε,
ε1 = share·ε/k, ε2 = ε1/2 (= share·ε/(2k) exactly). An explicit θ other than 1/(1 + y) gets
the share 1 − θ. (The authors compile with numba ``fastmath=True``, which permits LLVM to
reorder such arithmetic; ``tests/test_adaptive_stopping.py`` checks, where numba is installed,
that their expressions compiled that way give these same floats.) It needs float64
(``jax_enable_x64``) and is refused without it; the reference (``svtjax.reference.adaptive``)
does the same in Python floats. The running sum is carried in the rule's state (``spent``,
float64 whatever the run's dtype); a float sum in stream order is no cumulative count, so this
rule runs the per-position scan (no block form).

σ for monotonic queries: line 1 fixes σ = 4√2Δ/ε2 and footnote 6 changes only the noise
(Lap(Δ/ε2) in the top branch), not σ; the authors' code does the same. So σ = 4√2Δ/ε2 for
both query types — for monotonic queries that is four standard deviations of the top branch's
actual noise, a stricter top branch than "two standard deviations" would give.

Streams: ``threshold`` (η), ``query`` (ξ_i) and ``query2`` (η_i). The exact rule has a block
form: the stopping rule is a cumulative weighted count (2 per middle ⊤, 1 per top ⊤), vectorised
like the cut-off of the classic SVT.
"""

from __future__ import annotations

import dataclasses
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
from svtjax.mechanisms.rules import ThresholdMechanism, Written
from svtjax.noise import Laplace
from svtjax.reference import adaptive as ref
from svtjax.testing import Case, Claim, LawTestedIn, eps_c

__all__ = ["AdaptiveSVTGap", "STOPPING_RULES", "authors_shares"]

#: Values of ``AdaptiveSVTGap.stopping``: line 15 on integer counts, or the authors' float sum.
STOPPING_RULES = ("exact", "authors")


class AdaptiveState(NamedTuple):
    """Middle (n1) and top (n2) answers so far, the noisy threshold's noise η, and (only under
    ``stopping="authors"``) the authors' running float64 cost, ε0 plus ε2 per top and ε1 per
    middle answer."""

    n1: Any
    n2: Any
    rho: Any
    spent: Any = None


@register(reference=ref.adaptive_svt_gap, cases=[
    Case("adaptive-svt-gap", {}, eps_c),
    Case("adaptive-svt-gap-monotonic-theta", {"monotonic": True, "theta": 0.3}, eps_c),
    Case("adaptive-svt-gap-authors", {"monotonic": True, "stopping": "authors"}, eps_c),
], privacy=[Claim("eps1-c2", {"epsilon": 1.0, "c": 2}, 1.0, "PureDP", ("Ding", "Theorem 4"))],
    distribution=LawTestedIn("tests/test_adaptive_svt_gap.py", "the branch labels' exact law"))
@pytree_dataclass
class AdaptiveSVTGap(ThresholdMechanism):
    """Adaptive-Sparse-Vector-with-Gap (Ding et al. 2019, Algorithm 2); ε-DP (Theorem 4).

    Args:
      epsilon: total budget ε > 0 (traced).
      c: the paper's k, the number of middle-branch answers the budget guarantees (integer >= 1,
        traced).
      sensitivity: Δ > 0 (traced).
      theta: threshold share θ in (0, 1) (traced); default 1/(1 + c^(2/3)) when monotonic else
        1/(1 + (2c)^(2/3)) (Ding et al. §7.3, following Lyu et al.'s allocation).
      monotonic: monotonic queries: Lap(Δ/ε2), Lap(Δ/ε1) noise (footnote 6).
      stopping: ``"exact"`` (line 15 on integer branch counts, default) or ``"authors"`` (the
        running float64 budget sum of the authors' code; needs ``jax_enable_x64``), see the
        module docstring.
    """

    epsilon: Any
    c: Any
    sensitivity: Any = 1.0
    theta: Any = None
    monotonic: bool = static_field(default=False)
    stopping: str = static_field(default="exact")
    # the query share of the budget: None for 1 − θ, the authors' y/(1 + y) under "authors"
    _share: Any = dataclasses.field(default=None, init=False)
    name = "adaptive-svt-gap"
    releases = True
    per_position_cost = True

    def __post_init__(self):
        _validate.scalars(self, ("epsilon", "c", "sensitivity", "theta"))
        if not isinstance(self.monotonic, bool):
            raise TypeError(f"monotonic must be True or False; got {self.monotonic!r}")
        if not isinstance(self.stopping, str) or self.stopping not in STOPPING_RULES:
            raise ValueError(f"stopping must be one of {', '.join(map(repr, STOPPING_RULES))}; "
                             f"got {self.stopping!r}")
        if self.stopping == "authors" and jax.dtypes.canonicalize_dtype(float) != jnp.float64:
            raise ValueError("stopping='authors' replays the authors' float64 budget sum and "
                             "needs float64: call jax.config.update('jax_enable_x64', True) "
                             "first (or use stopping='exact')")
        _validate.positive("epsilon", self.epsilon)
        _validate.positive("sensitivity", self.sensitivity)
        _validate.integer("c", self.c, minimum=1)
        if is_concrete(self.c) and jnp.ndim(self.c) == 0:
            object.__setattr__(self, "c", int(self.c))
        for field in ("epsilon", "sensitivity"):
            value = getattr(self, field)
            if is_concrete(value) and jnp.ndim(value) == 0:
                object.__setattr__(self, field, float(value))
        if self.stopping == "authors":
            if not is_concrete((self.c, self.theta)):
                raise ValueError("stopping='authors' needs a concrete c and theta (it computes "
                                 "the authors' budget shares on the host)")
            if self.theta is not None:
                _validate.probability("theta", self.theta)
            theta, share = authors_shares(int(self.c), self.monotonic,
                                          None if self.theta is None else float(self.theta))
            object.__setattr__(self, "theta", theta)
            object.__setattr__(self, "_share", share)
        if self.theta is None:
            x = (self.c if self.monotonic else 2 * self.c) ** (2 / 3)
            object.__setattr__(self, "theta", 1.0 / (1.0 + x))
        elif is_concrete(self.theta):
            _validate.probability("theta", self.theta)
            object.__setattr__(self, "theta", float(self.theta))

    # -- budgets and scales (line 1, footnote 6) ------------------------------------------------
    def budgets(self):
        """(ε0, ε1, ε2) of Algorithm 2 line 1."""
        eps0 = self.theta * self.epsilon
        share = 1.0 - self.theta if self._share is None else self._share
        eps1 = share * self.epsilon / self.c
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

    def has_block(self):
        return self.stopping == "exact"

    def init(self, noise):
        zero = jnp.zeros((), jnp.int32)
        if self.stopping == "exact":
            return AdaptiveState(zero, zero, noise["threshold"])
        eps0, _, _ = self.budgets()  # the authors' cost = epsilon_0 before the first query
        return AdaptiveState(zero, zero, noise["threshold"], jnp.asarray(eps0, jnp.float64))

    def _branches(self, x, rho):
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
        if self.stopping == "authors":  # cost += epsilon_1 (top) or epsilon_2 (middle), float64
            _, eps1, eps2 = (jnp.asarray(e, jnp.float64) for e in self.budgets())
            state = state._replace(spent=jnp.where(
                top, state.spent + eps2, jnp.where(mid, state.spent + eps1, state.spent)))
        return state, Written(top | mid, value, cost)

    def halted(self, state):
        if self.stopping == "authors":  # the authors' loop: while cost <= epsilon - epsilon_2
            _, eps1, _ = self.budgets()
            bound = jnp.asarray(self.epsilon, jnp.float64) - jnp.asarray(eps1, jnp.float64)
            return ~(state.spent <= bound)
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


def authors_shares(k: int, monotonic: bool, theta=None) -> tuple[float, float]:
    """(θ, query share) as the authors' ``freegap/evaluate.py`` computes ``allocate_x`` and
    ``allocate_y``: y = numpy.power(k, 2/3) (of 2k for non-monotonic queries), θ = 1/(1 + y),
    share = y/(1 + y). A given θ other than that keeps the share 1 − θ."""
    y = float(np.power(np.int64(k if monotonic else 2 * k), 2.0 / 3.0))
    default = 1 / (1 + y)
    if theta is None or theta == default:
        return default, y / (1 + y)
    return theta, 1.0 - theta
