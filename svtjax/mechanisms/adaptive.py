"""Adaptive-Sparse-Vector-with-Gap (Ding, Wang, Zhang, Kifer 2019, Algorithm 2).

Line 1: ε0 = θε, ε1 = (1−θ)ε/k, ε2 = ε1/2, σ = 4√2Δ/ε2 (two standard deviations of
Lap(2Δ/ε2), footnote 5); line 2-3: T̃ = T + η, η ~ Lap(Δ/ε0); per query (line 6) ξ_i ~ Lap(2Δ/ε2),
η_i ~ Lap(2Δ/ε1) (Lap(Δ/ε2), Lap(Δ/ε1) for monotonic queries, footnote 6);
lines 7-9 (top branch): if q_i + ξ_i − T̃ ≥ σ, output (⊤, gap q_i + ξ_i − T̃, ε2);
lines 10-12 (middle branch): else if q_i + η_i − T̃ ≥ 0, output (⊤, gap, ε1); else ⊥ (cost 0);
line 15: stop when cost > ε − ε1.

Outcome: ``answers`` 1/0/-1, ``values`` the released gap (NaN on ⊥), ``cost`` the per-query
budget (ε2 top, ε1 middle, 0 ⊥) — the branch of a ⊤ is read from its cost. The threshold's ε0 is
up-front (``privacy()``); :meth:`AdaptiveSVTGap.remaining` gives the budget left over.

Stopping is decided exactly (DESIGN.md): with n1 middle and n2 top answers,
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
does the same in Python floats.

σ for monotonic queries: line 1 fixes σ = 4√2Δ/ε2 and footnote 6 changes only the noise
(Lap(Δ/ε2) in the top branch), not σ; the authors' code does the same. So σ = 4√2Δ/ε2 for
both query types — for monotonic queries that is four standard deviations of the top branch's
actual noise, a stricter top branch than "two standard deviations" would give.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax import _validate
from svtjax._core import Draws, Outcome
from svtjax._pytree import is_concrete, pytree_dataclass, static_field
from svtjax.accounting import PureDP
from svtjax.mechanisms.base import Mechanism, register, stream_key, stream_order, stream_variates
from svtjax.noise import Laplace

__all__ = ["AdaptiveSVTGap", "STOPPING_RULES", "authors_shares"]

#: Values of ``AdaptiveSVTGap.stopping``: line 15 on integer counts, or the authors' float sum.
STOPPING_RULES = ("exact", "authors")


@register
@pytree_dataclass
class AdaptiveSVTGap(Mechanism):
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
    # the query share of the budget (1 − θ, or the authors' y/(1 + y) under stopping="authors")
    _share: Any = dataclasses.field(default=None, init=False)
    name = "adaptive-svt-gap"

    def __post_init__(self):
        if not isinstance(self.monotonic, bool):
            raise TypeError(f"monotonic must be True or False; got {self.monotonic!r}")
        if self.stopping not in STOPPING_RULES:
            raise ValueError(f"stopping must be one of {', '.join(map(repr, STOPPING_RULES))}; "
                             f"got {self.stopping!r}")
        if self.stopping == "authors" and jax.dtypes.canonicalize_dtype(jnp.float64) != \
                jnp.float64:
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
            theta = self.theta
            if theta is not None:
                _validate.probability("theta", theta)
            theta, share = authors_shares(int(self.c), self.monotonic,
                                          None if theta is None else float(theta))
            object.__setattr__(self, "theta", theta)
            object.__setattr__(self, "_share", share)
        if self.theta is None:
            x = (self.c if self.monotonic else 2 * self.c) ** (2 / 3)
            object.__setattr__(self, "theta", 1.0 / (1.0 + x))
        elif is_concrete(self.theta):
            _validate.probability("theta", self.theta)
            object.__setattr__(self, "theta", float(self.theta))

    # -- budgets and scales ---------------------------------------------------------------
    def budgets(self):
        """(ε0, ε1, ε2) of Algorithm 2 line 1."""
        eps0 = self.theta * self.epsilon
        share = 1.0 - self.theta if self._share is None else self._share
        eps1 = share * self.epsilon / self.c
        return eps0, eps1, eps1 / 2.0

    def scales(self):
        """(threshold scale, top-branch scale, middle-branch scale, σ)."""
        eps0, eps1, eps2 = self.budgets()
        f = 1.0 if self.monotonic else 2.0
        top = f * self.sensitivity / eps2
        sigma = 4.0 * math.sqrt(2.0) * self.sensitivity / eps2  # line 1, for both query types
        return self.sensitivity / eps0, top, f * self.sensitivity / eps1, sigma

    def remaining(self, outcome: Outcome):
        """Budget left over: ε − ε0 − Σ cost (per trial for batched outcomes)."""
        eps0, _, _ = self.budgets()
        return self.epsilon - eps0 - jnp.sum(jnp.asarray(outcome.cost), axis=-1)

    def privacy(self):
        return PureDP("Ding, Wang, Zhang, Kifer 2019, Theorem 4: Adaptive-Sparse-Vector-with-Gap "
                      "(Algorithm 2) is ε-DP", float(self.epsilon))

    # -- contract -------------------------------------------------------------------------
    def draw(self, key, n: int, *, shuffle: bool = False, dtype=None) -> Draws:
        _validate.integer("n", n, minimum=1)
        dtype = jnp.zeros((), float).dtype if dtype is None else jnp.dtype(dtype)
        return _draw_jit(key, int(n), shuffle, dtype)

    def decide(self, draws: Draws, queries, thresholds, *, vectorized: bool = True) -> Outcome:
        """The output rule on ``draws`` (one trial). The kernel is the general per-position scan
        (the branch-weighted stopping rule has no separate vectorised path), so ``vectorized``
        is accepted for interface parity and has no effect."""
        del vectorized
        q, t = self._prepare(queries, thresholds)
        return _decide_jit(self, draws, q, t)

    def __call__(self, key, queries, thresholds) -> Outcome:
        q, t = self._prepare(queries, thresholds)
        return _decide_jit(self, self.draw(key, q.shape[0], dtype=q.dtype), q, t)

    def run_batch(self, keys, queries, thresholds, *, shuffle: bool, vectorized: bool = True
                  ) -> Outcome:
        del vectorized
        n, dtype = queries.shape[0], queries.dtype
        draws = jax.vmap(lambda k: _draw(k, n, shuffle, dtype))(keys)
        items = None if not shuffle else _batch_permutations(draws.order, n)
        return jax.vmap(lambda d, i: _decide(self, d, queries, thresholds, i))(draws, items)


def authors_shares(k: int, monotonic: bool, theta=None) -> tuple[float, float]:
    """(θ, query share) as the authors' ``freegap/evaluate.py`` computes ``allocate_x`` and
    ``allocate_y``: y = numpy.power(k, 2/3) (of 2k for non-monotonic queries), θ = 1/(1 + y),
    share = y/(1 + y). A given θ other than that keeps the share 1 − θ."""
    y = float(np.power(np.int64(k if monotonic else 2 * k), 2.0 / 3.0))
    default = 1 / (1 + y)
    if theta is None or theta == default:
        return default, y / (1 + y)
    return theta, 1.0 - theta


def _draw(key, n: int, shuffle: bool, dtype) -> Draws:
    return Draws(threshold=Laplace.standard(stream_key(key, "threshold"), (), dtype),
                 query=stream_variates(stream_key(key, "query"), n, Laplace.standard, dtype),
                 query2=stream_variates(stream_key(key, "query2"), n, Laplace.standard, dtype),
                 order=stream_order(stream_key(key, "order"), n) if shuffle else None)


def _permutation(order, n: int):
    """The Fisher–Yates permutation encoded by ``order`` (swap p with order[p])."""
    def swap(p, perm):
        j = order[p]
        a, b = perm[p], perm[j]
        return perm.at[p].set(b).at[j].set(a)
    return lax.fori_loop(0, n, swap, jnp.arange(n, dtype=jnp.int32))


def _batch_permutations(order, n: int):
    """Fisher–Yates permutations of a batch (int32[batch, n]) with the SVT kernel's in-place
    batch-level shuffle (a per-trial vmapped swap loop copies the whole table every step)."""
    from svtjax.mechanisms import _svt_engine as engine
    from svtjax.mechanisms.base import BLOCK, num_blocks

    nb = num_blocks(n)
    n_pad = nb * BLOCK
    pos = jnp.arange(n_pad, dtype=jnp.int32)
    full = jnp.where(pos < n, jnp.pad(order.astype(jnp.int32), ((0, 0), (0, n_pad - n))), pos)

    def block(b, carry):
        fy, items = carry
        fy, blk = engine._fisher_yates_block(fy, lax.dynamic_slice_in_dim(full, b * BLOCK, BLOCK,
                                                                          axis=1), b)
        return fy, lax.dynamic_update_slice_in_dim(items, blk, b * BLOCK, axis=1)

    init = (engine._shuffle_init(order.shape[0], n_pad),
            jnp.zeros((order.shape[0], n_pad), jnp.int32))
    return lax.fori_loop(0, nb, block, init)[1][:, :n]


def _decide(mech: AdaptiveSVTGap, draws: Draws, q, t, items=None) -> Outcome:
    dtype = q.dtype
    n = q.shape[0]
    eps0, eps1, eps2 = mech.budgets()
    s_rho, s_top, s_mid, sigma = (jnp.asarray(x, dtype) for x in mech.scales())
    if items is None:
        items = jnp.arange(n, dtype=jnp.int32) if draws.order is None else _permutation(
            jnp.asarray(draws.order, jnp.int32), n)
    rho = s_rho * jnp.asarray(draws.threshold, dtype)
    limit = 2 * (mech.c - 1)
    authors = mech.stopping == "authors"
    if authors:  # the authors' running sum: float64 whatever the queries' dtype
        f64 = jnp.float64
        e0, e1, e2 = (jnp.asarray(x, f64) for x in (eps0, eps1, eps2))
        bound = jnp.asarray(mech.epsilon, f64) - e1  # cost <= epsilon - epsilon_1 (paper's ε1)

    def step(carry, x):
        n1, n2, stopped, spent = carry
        qi, ti, xi, eta = x
        t_noisy = ti + rho
        gap_top = (qi + s_top * xi) - t_noisy
        gap_mid = (qi + s_mid * eta) - t_noisy
        top = ~stopped & (gap_top >= sigma)
        mid = ~stopped & ~top & (gap_mid >= 0)
        n1, n2 = n1 + mid.astype(jnp.int32), n2 + top.astype(jnp.int32)
        answer = jnp.where(stopped, jnp.int8(-1), (top | mid).astype(jnp.int8))
        value = jnp.where(top, gap_top, jnp.where(mid, gap_mid, jnp.nan))
        cost = jnp.where(top, jnp.asarray(eps2, dtype), jnp.where(mid, jnp.asarray(eps1, dtype),
                                                                  jnp.zeros((), dtype)))
        if authors:
            spent = jnp.where(top, spent + e2, jnp.where(mid, spent + e1, spent))
            done = spent > bound
        else:
            done = 2 * n1 + n2 > limit
        return (n1, n2, stopped | done, spent), (answer, value, cost)

    xs = (q[items], t[items], jnp.asarray(draws.query, dtype), jnp.asarray(draws.query2, dtype))
    # the authors' loop tests its condition before the first query too (cost = ε0 already)
    init = (jnp.int32(0), jnp.int32(0), e0 > bound if authors else jnp.zeros((), bool),
            e0 if authors else jnp.zeros((), jnp.int32))
    _, (answers, values, cost) = lax.scan(step, init, xs)
    return Outcome(answers, jnp.where(answers >= 0, items, -1), values, cost)


_draw_jit = jax.jit(_draw, static_argnums=(1, 2, 3))


@jax.jit
def _decide_jit(mech, draws, q, t):
    return _decide(mech, draws, q, t)
