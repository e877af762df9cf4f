"""Public entry points of ``svtjax.exact``: selection laws and expected utility, no sampling.

References: Lyu, Su, Li 2017, Section 5 (SER, FNR; the
top-c experiments); the slides of Lyu, Su, Li 2017 (NCR).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from svtjax import _answer_set, _validate
from svtjax._pytree import is_concrete
from svtjax.exact import _laws, _quadrature
from svtjax.exact._adapter import ThresholdLaw, law

__all__ = ["SelectionLaw", "quadrature", "selection_law", "selection_laws",
           "selection_probabilities", "expected_metrics", "expected_metrics_many", "METRIC_KEYS"]

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
        128 when evaluated, so that every chunk of nodes belongs to one law).
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
    draws it): item i is evaluated iff fewer than c of the items before it pass, which is
    integrated exactly over its uniform arrival time (:func:`svtjax.exact._laws.random_order`).

    Args:
      mech: a mechanism of :func:`svtjax.exact.supported` or a :class:`ThresholdLaw`.
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
    return selection_laws([mech], queries, thresholds, shuffle=shuffle, c=c,
                           rules=None if rule is None else [rule])[0]


def _answer_size(law_: ThresholdLaw, c: Optional[int]) -> int:
    if c is None:
        if law_.c is None:
            raise ValueError("this mechanism has no cut-off; give c (the size of the answer set "
                             "the metrics score)")
        c = law_.c
    return int(_validate.integer("c", c, minimum=1))


def selection_laws(mechs: Sequence[Any], queries: Any, thresholds: Any, *,
                   shuffle: bool = False, c: Optional[int] = None,
                   rules: Optional[Sequence[_quadrature.Rule]] = None,
                   ties: bool = True) -> list[SelectionLaw]:
    """:func:`selection_law` of several mechanisms of one structure in one kernel call.

    Their quadrature nodes are concatenated (each law's density weights in its own column, the
    query noise's scale and the threshold shift per node), so a curve over ε runs once (with
    concrete laws the chunks of nodes are driven from the host: the kernels compile once per
    stream and cut-off, not per node count or curve length). All must share the cut-off,
    k_max, resampling and the query-noise family (a resampling mechanism's chain couples its
    nodes, so those run one law at a time).
    ``rules``: one per mechanism, or None for the defaults. ``ties`` (random order): scores
    shared by at least ``c`` items are taken as one binomial group each (the same law, fewer
    steps; ``False`` steps through every item).
    """
    if not isinstance(shuffle, bool):
        raise TypeError(f"shuffle must be True or False; got {shuffle!r}")
    laws = [_as_law(m) for m in mechs]
    if not laws:
        raise ValueError("give at least one mechanism")
    q, t = _offsets(queries, thresholds)
    n = q.shape[0]
    first = laws[0]
    c = _answer_size(first, c)
    _check_together(laws)
    if first.resample and len(laws) > 1:  # its chain couples all nodes: one law at a time
        return [selection_laws([m], q, t, shuffle=shuffle, c=c, ties=ties,
                                rules=None if rules is None else [r])[0]
                for m, r in zip(mechs, rules if rules is not None else [None] * len(laws))]
    c_mech = first.c
    c_eff = c if c_mech is None else min(c, c_mech)
    if shuffle and (first.resample or first.k_max is not None):
        what = "resamples the threshold" if first.resample else "caps the stream at k_max"
        raise ValueError(f"svtjax.exact: random order is not supported for a mechanism that "
                         f"{what}; use shuffle=False")
    if rules is None:
        rules = [quadrature(law_, q, t) for law_ in laws]
    if len(rules) != len(laws):
        raise ValueError(f"give one rule per mechanism; got {len(rules)} for {len(laws)}")
    num_nodes = [int(r.nodes.size) for r in rules]
    dtype = _dtype()
    z, W, query, host = _nodes(laws, [_quadrature.padded(r) for r in rules], dtype)
    length = n if first.k_max is None else min(n, first.k_max)
    d_run = jnp.asarray((q - t)[:length], dtype)
    states = min(c_mech if c_mech is not None else c_eff, max(length, 1))
    c_mech_s = None if c_mech is None else min(c_mech, states)
    c_eff_s = min(c_eff, states)
    rows = None
    if first.resample:
        out = _laws.resample_fixed_order(z, W[:, 0], d_run, query, c=c_mech_s, c_eff=c_eff_s)
        out = jax.tree_util.tree_map(lambda x: x[..., None], out)
    else:
        kernel = _laws.fixed_order
        if host is not None:  # chunks driven from the host: no compile per node count
            z, W, scale = host
            query = first.query_noise if scale is None else \
                jax.tree_util.tree_map(lambda _: scale, first.query_noise)
            kernel = _laws.fixed_order_host
        if shuffle:
            out, rows = _random_order(z, W, (q - t)[:length], d_run, query, states=states,
                                      c_mech=c_mech_s, c_eff=c_eff_s, ties=ties)
        else:
            out = kernel(z, W, d_run, query, states=states, c_mech=c_mech_s, c_eff=c_eff_s,
                         group=_quadrature.PAD)
    return _split_laws(out, rows, n, length, num_nodes)


def _check_together(laws: Sequence[ThresholdLaw]) -> None:
    """Laws evaluated in one kernel call share the cut-off, k_max, resampling and the
    query-noise family."""
    first = laws[0]
    for other in laws[1:]:
        same = (other.c == first.c and other.resample == first.resample
                and other.k_max == first.k_max
                and type(other.query_noise) is type(first.query_noise))
        if not same:
            raise ValueError("mechanisms evaluated together must share the cut-off c, k_max, "
                             "resampling and the query-noise family")


def _nodes(laws: Sequence[ThresholdLaw], rules: Sequence[_quadrature.Rule], dtype):
    """The laws' (padded) quadrature nodes concatenated: (z [G], W [G, L] with each law's
    density weights in its own column, the query noise with its scale per node, and for
    concrete laws the host copies (z, W, scale) the host-driven kernels take, else None)."""
    first = laws[0]
    sizes = [r.nodes.size for r in rules]
    starts = np.cumsum([0] + sizes)
    # ⊤ iff q_i + ν ≥ T_i + shift + z, i.e. sf_ν(z + shift − (q_i − T_i)): the shift moves
    # each law's nodes.
    query = first.query_noise
    has_scale = query is not None and bool(jax.tree_util.tree_leaves(query))
    if is_concrete(laws):  # host arrays: no eager JAX op compiles per shape
        z = np.concatenate([r.nodes + float(np.asarray(law_.shift)) for r, law_ in
                            zip(rules, laws)])
        W = np.zeros((z.size, len(laws)))
        for k, (r, law_) in enumerate(zip(rules, laws)):
            W[starts[k]:starts[k + 1], k] = _quadrature.host_density_weights(
                r, law_.threshold_noise)
        scale = np.concatenate([np.full(size, float(np.asarray(law_.query_noise.scale_value)))
                                for size, law_ in zip(sizes, laws)]) if has_scale else None
        host = (z.astype(dtype), W.astype(dtype), None if scale is None else scale.astype(dtype))
        z, W = jnp.asarray(z, dtype), jnp.asarray(W, dtype)
    else:
        host = None
        z = jnp.concatenate([jnp.asarray(r.nodes, dtype) + jnp.asarray(law_.shift, dtype)
                             for r, law_ in zip(rules, laws)])
        W = jnp.zeros((int(starts[-1]), len(laws)), dtype)
        for k, (r, law_) in enumerate(zip(rules, laws)):
            W = W.at[starts[k]:starts[k + 1], k].set(
                _quadrature.density_weights(r, law_.threshold_noise, dtype))
        scale = jnp.concatenate([jnp.full((size,), 1.0, dtype) *
                                 jnp.asarray(law_.query_noise.scale_value, dtype)
                                 for size, law_ in zip(sizes, laws)]) if has_scale else None
    if has_scale:
        scale = jnp.asarray(scale, dtype)
        query = jax.tree_util.tree_map(lambda _: scale, query)
    return z, W, query, host


def _split_laws(out, rows, n: int, length: int, num_nodes: Sequence[int]
                ) -> list[SelectionLaw]:
    """One :class:`SelectionLaw` per column of the kernel's output, its items in the caller's
    order (``rows``: every item's row with tie groups) and padded past ``length`` (k_max) with
    the probabilities of positions never reached."""
    def full(x, fill=0.0):
        if x is None or length == n:
            return x
        return jnp.concatenate([x, jnp.full((n - length,) + x.shape[1:], fill, x.dtype)])

    top, member, evaluated = full(out.top), full(out.member), full(out.evaluated)
    halted = None if out.halted is None else full(out.halted, 1.0)
    fields = (top, member, evaluated, out.count, halted)
    if is_concrete(fields):  # split on the host: one transfer, no per-law device ops
        fields = jax.tree_util.tree_map(np.asarray, fields)
        wrap = _to_device
    else:
        wrap = lambda x: x  # noqa: E731
    top, member, evaluated, count, halted = fields
    if rows is not None:  # tie groups: every item's row, in the caller's order
        top, member, evaluated = top[rows], member[rows], evaluated[rows]
    return [SelectionLaw(wrap(top[:, k]), wrap(member[:, k]), wrap(evaluated[:, k]),
                         wrap(count[:, k]), None if halted is None else wrap(halted[:, k]),
                         num_nodes[k])
            for k in range(len(num_nodes))]


def _to_device(x: np.ndarray) -> jax.Array:
    """A host array on the device as ``jnp.asarray`` gives it (canonical dtype), without the
    conversion program ``jnp.asarray`` of a host array (or a strided view of one) compiles for
    every new shape under jax 0.10."""
    dtype = jax.dtypes.canonicalize_dtype(x.dtype)
    return jax.device_put(np.ascontiguousarray(x, dtype=dtype))


def _random_order(z, W, d_host, d_run, query, *, states, c_mech, c_eff, ties: bool):
    """:func:`_laws.random_order`, with scores shared by at least ``states`` items taken as
    tie groups when ``ties`` (:func:`_laws.tie_groups`; the law is the same, computed with
    fewer steps). Returns (law, rows): with tie groups the law has one row per single item,
    then one per group, and ``rows`` gives every item's row in the caller's order (else None).

    The groups' offsets, sizes and binomial coefficients are gathered on the host (``d_host``
    rounded to ``d_run``'s dtype gives ``d_run``'s values): eager gathers on the device compile
    six small programs each for every stream length."""
    kwargs = dict(states=states, c_mech=c_mech, c_eff=c_eff, group=_quadrature.PAD)
    kernel = _laws.random_order_host if isinstance(z, np.ndarray) else _laws.random_order
    single, tied, m, rows = _laws.tie_groups(d_host, states)
    if not ties or tied.size == 0:
        return kernel(z, W, d_run, query, **kwargs), None
    d = np.asarray(d_host, d_run.dtype)
    group = (_to_device(d[tied]), _to_device(m), _to_device(_laws._log_binomial(m, states)),
             _to_device(_laws._log_binomial(m - 1, states)), d_run)
    return kernel(z, W, _to_device(d[single]), query, ties=group, **kwargs), rows


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
    """Per-item contributions to SER's support, NCR and TP of a single pick — what
    ``svtjax.metrics.evaluate`` gives for the answer set {i} (``tests/test_exact.py`` checks
    that it does) — and whether TP is linear in the picks (no tie of the c-th score straddles
    the Top-c boundary)."""

    scores = np.asarray(scores, np.float64)
    above, at, slots, relevance, top_support = _answer_set.item_tables(scores, c, np.float64, np)
    support = scores / top_support
    ncr = relevance.astype(np.float64) / (c * (c + 1) / 2)
    tp = above.astype(np.float64) + np.minimum(at.astype(np.int64), int(slots))
    linear = bool(tp.sum() <= c)  # items above the c-th score plus those tied with it
    return support, ncr, tp, linear


def expected_metrics(mech: Any, queries: Any, thresholds: Any, *, shuffle: bool = False,
                     c: Optional[int] = None, rule: Optional[_quadrature.Rule] = None
                     ) -> dict[str, jax.Array]:
    """Exact expected utility of one run of ``mech`` (no Monte Carlo).

    ``queries`` are the item scores (supports, ≥ 0 with a positive top-c total, as
    ``svtjax.metrics.ser`` requires); S is the answer set the metrics score: the first c ⊤
    (``svtjax.metrics``). Exact expectations, because the metric is linear in the indicators
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
    return expected_metrics_many([mech], queries, thresholds, shuffle=shuffle, c=c,
                                 rules=None if rule is None else [rule])[0]


def expected_metrics_many(mechs: Sequence[Any], queries: Any, thresholds: Any, *,
                          shuffle: bool = False, c: Optional[int] = None,
                          rules: Optional[Sequence[_quadrature.Rule]] = None
                          ) -> list[dict[str, jax.Array]]:
    """:func:`expected_metrics` of several mechanisms of one structure (e.g. an ε curve) in one
    kernel call (:func:`selection_laws`); all must share the cut-off, k_max, resampling and
    the query-noise family. ``rules`` (one per mechanism) as ``rule`` of
    :func:`expected_metrics`."""
    laws = [_as_law(m) for m in mechs]
    if not laws:
        raise ValueError("give at least one mechanism")
    q, t = _offsets(queries, thresholds)
    if c is None:
        if laws[0].c is None:
            raise ValueError("this mechanism has no cut-off; give c (the Top-c size)")
        c = laws[0].c
    c = int(_validate.integer("c", c, minimum=1))
    if c > q.shape[0]:
        raise ValueError(f"c must be at most the number of items n={q.shape[0]}; got c={c}")
    support, ncr, tp, linear = _item_weights(q, c)
    out = []
    for law_, sl in zip(laws, selection_laws(laws, q, t, shuffle=shuffle, c=c, rules=rules)):
        if is_concrete((law_, sl)):  # host arithmetic: no per-shape device ops
            xp, member, top = np, np.asarray(sl.member), np.asarray(sl.top)
            evaluated, count = np.asarray(sl.evaluated), np.asarray(sl.count)
            top_cost = float(np.asarray(law_.top_cost))
        else:
            xp, member, top, evaluated, count = jnp, sl.member, sl.top, sl.evaluated, sl.count
            top_cost = law_.top_cost
        ser = 1.0 - member @ xp.asarray(support, member.dtype)
        correct = member @ xp.asarray(tp, member.dtype) if linear else math.nan
        tops = xp.sum(top)
        values = {
            "ser": ser,
            "ncs": 1.0 - ser,
            "ncr": member @ xp.asarray(ncr, member.dtype),
            "picks": xp.sum(member),
            "correct": correct,
            "recall": correct / c,
            "fnr": 1.0 - correct / c,
            "tops": tops,
            "evaluated": xp.sum(evaluated),
            "cost": top_cost * tops,
            "halt": count[-1] if law_.c is not None else 0.0,
        }
        dtype = member.dtype
        out.append({k: jnp.asarray(v, dtype) for k, v in values.items()})
    return out
