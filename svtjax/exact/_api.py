"""Public entry points of ``svtjax.exact``: selection laws and expected utility, no sampling.

References: Lyu, Su, Li 2017 (``seeds/002_8d07cd5bae315f2f.txt``), Section 5 (SER, FNR; the
top-c experiments); the slides (``seeds/001_4cfba993e2d10002.txt``: NCR); DESIGN.md "Metrics".
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from svtjax import _validate
from svtjax._pytree import is_concrete
from svtjax.exact import _laws, _quadrature
from svtjax.exact._adapter import ThresholdLaw, law

__all__ = ["SelectionLaw", "quadrature", "selection_law", "selection_probabilities",
           "expected_metrics", "METRIC_KEYS"]

METRIC_KEYS = ("ser", "ncs", "ncr", "picks", "correct", "recall", "fnr", "tops", "evaluated",
               "cost", "halt")
"""Keys of :func:`expected_metrics` (see its docstring for which are exact expectations)."""


class SelectionLaw(NamedTuple):
    """The exact law of one run's selections (items in the caller's order).

    Attributes:
      top: float[n], P(item answered ⊤).
      member: float[n], P(item in the answer set S: among the first c ⊤, c the metric cut-off).
      evaluated: float[n], P(item evaluated before the run halts).
      count: float[k + 1], P(number of ⊤ = j) for j < k, P(≥ k) last (k = the mechanism's
        cut-off, or the metric's c for mechanisms without one). The same in both orders.
      halted: float[n] (fixed order) — P(the run has halted once the item at that stream
        position has been read); None in random order.
      nodes: int, quadrature nodes of the rule (padded with zero weights to a multiple of
        128 when evaluated, so similar rules share a compiled kernel).
    """

    top: jax.Array
    member: jax.Array
    evaluated: jax.Array
    count: jax.Array
    halted: Optional[jax.Array]
    nodes: int


def _as_law(mech: Any) -> ThresholdLaw:
    return mech if isinstance(mech, ThresholdLaw) else law(mech)


def _offsets(queries: Any, thresholds: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 queries and per-item thresholds (host)."""
    if not is_concrete((queries, thresholds)):
        raise ValueError("svtjax.exact needs concrete queries and thresholds (the quadrature is "
                         "fitted to them on the host); only mechanism numbers may be traced")
    q = _validate.finite_vector("queries", queries).astype(np.float64)
    t = np.broadcast_to(_validate.thresholds_like("thresholds", thresholds, q.shape[0]),
                        q.shape).astype(np.float64)
    return q, t


def quadrature(mech: Any, queries: Any, thresholds: Any, *, all_kinks: bool = False,
               **accuracy: Any) -> _quadrature.Rule:
    """The quadrature rule over ρ for ``mech`` on these inputs (host, from concrete numbers).

    Pass it as ``rule=`` to evaluate a *traced* law (e.g. :func:`law_at_share` under
    ``jax.grad``) with the nodes fitted at a concrete reference.

    Args:
      mech: a mechanism or a concrete :class:`ThresholdLaw`.
      queries, thresholds: as for :func:`selection_law`.
      all_kinks: every kink of the query noise becomes a panel edge (short streams).
      **accuracy: ``tol``, ``kink_tol``, ``refine``, ``max_order``, ``max_kinks`` of
        :func:`svtjax.exact._quadrature.build`.
    """
    law_ = _as_law(mech)
    if not is_concrete((law_.threshold_noise, law_.query_noise, law_.shift)):
        raise ValueError("svtjax.exact.quadrature needs a concrete law (build it at a concrete "
                         "share) to place its nodes")
    q, t = _offsets(queries, thresholds)
    d = q - t - float(np.asarray(law_.shift))
    return _quadrature.build(law_.threshold_noise, law_.query_noise, d, all_kinks=all_kinks,
                             **accuracy)


def _dtype():
    return jnp.zeros((), float).dtype


def selection_law(mech: Any, queries: Any, thresholds: Any, *, shuffle: bool = False,
                  c: Optional[int] = None, rule: Optional[_quadrature.Rule] = None
                  ) -> SelectionLaw:
    """The exact selection law of one run of ``mech`` on ``queries`` (no Monte Carlo).

    Fixed order (``shuffle=False``, the stream is the caller's order): a forward recursion over
    positions carrying the distribution of the ⊤ count given ρ, integrated over ρ; with
    ``resample`` (``dpbook``) a Markov chain over (position, count) with a fresh ρ per segment.
    Random order (``shuffle=True``, each trial a fresh uniform order as ``svtjax.simulate``
    draws it): item i is evaluated iff fewer than c of the items passing before it, integrated
    exactly over its uniform arrival time (see :func:`svtjax.exact._laws.random_order`).

    Args:
      mech: a mechanism of :data:`svtjax.exact.SUPPORTED` or a :class:`ThresholdLaw`.
      queries: float[n] true answers (scores), any finite reals.
      thresholds: a scalar or float[n].
      shuffle: random order, as ``svtjax.simulate(..., shuffle=True)``.
      c: cut-off of the answer set S (``member``); default the mechanism's cut-off (required
        for mechanisms without one). Values above the mechanism's cut-off change nothing.
      rule: a quadrature rule (default: :func:`quadrature` of the concrete law).

    Returns:
      :class:`SelectionLaw` (JAX arrays, float64 under ``jax_enable_x64`` — recommended; in
      float32 the probabilities carry ~1e-6 rounding).

    Raises:
      ValueError: an unsupported mechanism, a bad input, ``shuffle`` with a resampling or
        length-capped mechanism, or a traced law without ``rule``.
    """
    law_ = _as_law(mech)
    q, t = _offsets(queries, thresholds)
    n = q.shape[0]
    if not isinstance(shuffle, bool):
        raise TypeError(f"shuffle must be True or False; got {shuffle!r}")
    if c is None:
        if law_.c is None:
            raise ValueError("this mechanism has no cut-off; give c (the size of the answer set "
                             "the metrics score)")
        c = law_.c
    c = int(_validate.integer("c", c, minimum=1))
    c_mech = law_.c
    c_eff = c if c_mech is None else min(c, c_mech)
    if shuffle and (law_.resample or law_.k_max is not None):
        what = "resamples the threshold" if law_.resample else "caps the stream at k_max"
        raise ValueError(f"svtjax.exact: random order is not supported for a mechanism that "
                         f"{what}; use shuffle=False")
    if rule is None:
        rule = quadrature(law_, q, t)
    num_nodes = int(rule.nodes.size)
    rule = _quadrature.padded(rule)
    dtype = _dtype()
    z = jnp.asarray(rule.nodes, dtype)
    wz = _quadrature.density_weights(rule, law_.threshold_noise, dtype)
    shift = jnp.asarray(law_.shift, dtype)
    d = jnp.asarray(q, dtype) - jnp.asarray(t, dtype) - shift
    length = n if law_.k_max is None else min(n, law_.k_max)
    d_run = d[:length]
    states = min(c_mech if c_mech is not None else c_eff, max(length, 1))
    c_mech_s = None if c_mech is None else min(c_mech, states)
    c_eff_s = min(c_eff, states)
    if law_.resample:
        out = _laws.resample_fixed_order(z, wz, d_run, law_.query_noise, c=c_mech_s,
                                         c_eff=c_eff_s)
    elif shuffle:
        out = _laws.random_order(z, wz, d_run, law_.query_noise, states=states,
                                 c_mech=c_mech_s, c_eff=c_eff_s)
    else:
        out = _laws.fixed_order(z, wz, d_run, law_.query_noise, states=states, c_mech=c_mech_s,
                                c_eff=c_eff_s)

    def full(x, fill=0.0):
        if x is None or length == n:
            return x
        return jnp.concatenate([x, jnp.full((n - length,), fill, x.dtype)])

    halted = None if out.halted is None else full(out.halted, 1.0)
    if halted is not None and length < n:
        halted = halted.at[length:].set(1.0)
    return SelectionLaw(full(out.top), full(out.member), full(out.evaluated), out.count, halted,
                        num_nodes)


def selection_probabilities(mech: Any, queries: Any, thresholds: Any, *, shuffle: bool = False,
                            rule: Optional[_quadrature.Rule] = None) -> jax.Array:
    """P(item i is selected), i.e. answered ⊤, for every item in the caller's order (float[n]).

    See :func:`selection_law` for the arguments and the method.
    """
    c = None
    law_ = _as_law(mech)
    if law_.c is None:
        c = 1  # no cut-off: ⊤ probabilities do not depend on the answer-set size
    return selection_law(law_, queries, thresholds, shuffle=shuffle, c=c, rule=rule).top


def _item_weights(scores: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Per-item contributions to SER's support, NCR and TP of a single pick, from the public
    ``svtjax.metrics`` (so the tie rules are exactly the metrics'), and whether TP is linear in
    the picks (no tie of the c-th score straddles the Top-c boundary)."""
    from svtjax import metrics

    picks = np.arange(scores.shape[0], dtype=np.int32)[:, None]
    with jax.ensure_compile_time_eval():  # host numbers, also when called under jit / grad
        one = metrics.evaluate(picks, scores, c)
    support = 1.0 - np.asarray(one["ser"], np.float64)
    ncr = np.asarray(one["ncr"], np.float64)
    tp = np.rint(np.asarray(one["recall"], np.float64) * c)
    linear = bool(tp.sum() <= c)  # items above the c-th score plus those tied with it
    return support, ncr, tp, linear


def expected_metrics(mech: Any, queries: Any, thresholds: Any, *, shuffle: bool = False,
                     c: Optional[int] = None, rule: Optional[_quadrature.Rule] = None
                     ) -> dict[str, jax.Array]:
    """Exact expected utility of one run of ``mech`` (no Monte Carlo).

    ``queries`` are the item scores (supports, ≥ 0 with a positive top-c total, as
    ``svtjax.metrics.ser`` requires); S is the answer set the metrics score: the first c ⊤
    (DESIGN.md "Metrics"). Exact expectations, because the metric is linear in the indicators
    {i ∈ S}:

    * ``"ser"`` E[SER] (Lyu'17 §5) and ``"ncs"`` = 1 − E[SER]; ``"ncr"`` E[NCR] (slides);
    * ``"picks"`` E[|S|]; ``"correct"`` E[|S ∩ Top-c|] (under the metrics' tie rule this is
      linear unless ties at the c-th score straddle the Top-c boundary; then it is NaN), with
      ``"recall"`` = correct / c and ``"fnr"`` = 1 − recall (Lyu'17 §5);
    * ``"tops"`` E[number of ⊤], ``"evaluated"`` E[positions read], ``"cost"`` E[Σ
      Outcome.cost] = top_cost · E[number of ⊤] (the privacy budget spent per answer; the
      threshold's up-front ε1 is in ``privacy()``), ``"halt"`` P(the run reaches its cut-off).

    Not given: precision and F1 (ratios of the picks, not linear; E[TP]/E[|S|] is not
    E[precision]).

    Args:
      mech, queries, thresholds, shuffle, rule: as :func:`selection_law`.
      c: the Top-c size the metrics use; default the mechanism's cut-off.

    Returns:
      dict of JAX scalars (differentiable with respect to a traced law's numbers).
    """
    law_ = _as_law(mech)
    q, t = _offsets(queries, thresholds)
    if c is None:
        if law_.c is None:
            raise ValueError("this mechanism has no cut-off; give c (the Top-c size)")
        c = law_.c
    c = int(_validate.integer("c", c, minimum=1))
    if c > q.shape[0]:
        raise ValueError(f"c must be at most the number of items n={q.shape[0]}; got c={c}")
    support, ncr, tp, linear = _item_weights(q, c)
    sl = selection_law(law_, q, t, shuffle=shuffle, c=c, rule=rule)
    dtype = sl.member.dtype
    member = sl.member
    picks = jnp.sum(member)
    ser = 1.0 - member @ jnp.asarray(support, dtype)
    correct = member @ jnp.asarray(tp, dtype) if linear else jnp.asarray(math.nan, dtype)
    tops = jnp.sum(sl.top)
    halt = sl.count[-1] if law_.c is not None else jnp.zeros((), dtype)
    return {
        "ser": ser,
        "ncs": 1.0 - ser,
        "ncr": member @ jnp.asarray(ncr, dtype),
        "picks": picks,
        "correct": correct,
        "recall": correct / c,
        "fnr": 1.0 - correct / c,
        "tops": tops,
        "evaluated": jnp.sum(sl.evaluated),
        "cost": jnp.asarray(law_.top_cost, dtype) * tops,
        "halt": halt,
    }
