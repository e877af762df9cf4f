"""Exact privacy loss on short streams: every answer vector's probability on two inputs.

For neighbouring query vectors q, q′ (|q_i − q′_i| ≤ Δ for every i) of up to
:data:`MAX_LENGTH` items, :func:`privacy_loss` computes P(a) and P′(a) for every feasible answer
vector a ∈ {⊤, ⊥, not evaluated}^n by quadrature over ρ (a product of per-segment integrals for
``dpbook``, whose ρ is redrawn after each ⊤), and the exact loss

    ε̂ = max_a |log P(a) − log P′(a)|,

which for pure DP equals the max over answer-vector *events* (a ratio of sums never exceeds the
largest ratio of its terms). ε̂ = ∞ when some vector is possible on one input only. The audit's
Monte Carlo lower bound (``svtjax.audit``) on the same inputs can be read against it.

Only the answer vector is covered. Mechanisms that also release numbers (roth11's q_i + ν_i,
svt-gap's gaps, svt-s's noisy answers with ε3) leak more through them; for roth11 the released
q_i + ν_i bounds ρ from one side, which makes its loss unbounded (Lyu, Su, Li 2017, Theorem 3).

Why the non-private variants fail on answer vectors alone (Lyu'17 §3, Theorems 4-5;
Lyu, Su, Li 2017, PVLDB 10(6)):

* ``stoddard`` (no query noise): ⊤ at i iff q_i ≥ T + ρ, so an answer vector pins ρ to an
  interval; on the "alternating swap" pair (q = 0, Δ, 0, Δ, …, q′ = Δ, 0, Δ, 0, …, T = Δ/2)
  the vector ⊥⊤⊥⊤… needs ρ ∈ (−Δ/2, Δ/2] on q but ρ > Δ/2 and ρ ≤ −Δ/2 on q′: P′ = 0 < P,
  loss ∞;
* ``chen`` (no cut-off): every query answers, so the all-⊤ vector on q′ = q + Δ has a ratio
  that grows with the number of queries (each ⊤ adds up to Δ/b_ν to the log-ratio), far beyond
  the claimed ε already at n = 10;
* ``roth11`` on answer vectors is the indicator part of Algorithm 1 with half its query noise:
  its loss exceeds the claimed ε; the released values make it infinite (above).
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from svtjax import _validate
from svtjax.exact import _laws, _quadrature
from svtjax.exact._adapter import law

__all__ = ["PrivacyLoss", "privacy_loss", "candidate_pairs", "audit", "format_audit",
           "audit_report", "MAX_LENGTH", "DEFAULT_LENGTH"]

MAX_LENGTH = 14
"""Longest stream :func:`privacy_loss` enumerates (≤ 2^14 answer vectors)."""

DEFAULT_LENGTH = 10
"""Stream length of :func:`candidate_pairs`."""

_PRIVACY_RULE = dict(all_kinks=True, tol=1e-300, refine=1.0, max_order=16)
"""Every kink an edge and the highest order everywhere: relative (not only absolute) accuracy
for the small probabilities whose ratios the loss compares."""


class PrivacyLoss(NamedTuple):
    """Exact loss of one mechanism on one neighbouring pair.

    Attributes:
      epsilon: max over answer vectors of |log P(a) − log P′(a)| (``inf`` if some vector has
        probability 0 on exactly one side).
      vector: the maximising answer vector (1 ⊤, 0 ⊥, −1 not evaluated).
      prob, prob_prime: its probabilities on ``queries`` and ``queries_prime``.
      vectors: the number of feasible answer vectors.
      total, total_prime: Σ_a P(a) and Σ_a P′(a) (1 up to the quadrature error).
      name: the pair's name.
      queries, queries_prime, thresholds: the inputs.
    """

    epsilon: float
    vector: tuple
    prob: float
    prob_prime: float
    vectors: int
    total: float
    total_prime: float
    name: str
    queries: tuple
    queries_prime: tuple
    thresholds: Any


def _feasible(n: int, cutoff: Optional[int]) -> np.ndarray:
    """Every answer vector the loop can output (Lyu'17 Figure 1): after c ⊤ nothing more is
    evaluated."""
    out = set()
    for bits in itertools.product((0, 1), repeat=n):
        a, ones = [], 0
        for b in bits:
            if cutoff is not None and ones >= cutoff:
                a.append(-1)
            else:
                a.append(b)
                ones += b
        out.add(tuple(a))
    return np.array(sorted(out), np.int32)


def privacy_loss(mech: Any, queries: Any, queries_prime: Any, thresholds: Any = 0.0, *,
                 name: str = "") -> PrivacyLoss:
    """The exact privacy loss of ``mech`` over answer vectors on one pair of inputs.

    Args:
      mech: a mechanism of :func:`svtjax.exact.supported` (``dpbook`` included).
      queries, queries_prime: float[n] each, n ≤ :data:`MAX_LENGTH`. Neighbouring is the
        caller's responsibility (|q_i − q′_i| ≤ Δ is what the SVT proofs assume).
      thresholds: scalar or float[n], the same on both sides.
      name: a label for reports.

    Returns:
      :class:`PrivacyLoss`.
    """
    law_ = law(mech)
    q = _validate.finite_vector("queries", queries).astype(np.float64)
    qp = _validate.finite_vector("queries_prime", queries_prime).astype(np.float64)
    if q.shape != qp.shape:
        raise ValueError(f"queries and queries_prime must have the same length; got {q.shape[0]} "
                         f"and {qp.shape[0]}")
    n = q.shape[0]
    if n > MAX_LENGTH:
        raise ValueError(f"privacy_loss enumerates every answer vector: at most {MAX_LENGTH} "
                         f"queries; got {n}")
    t = np.broadcast_to(_validate.thresholds_like("thresholds", thresholds, n), (n,))
    t = t.astype(np.float64)
    if law_.k_max is not None and law_.k_max < n:
        raise ValueError("privacy_loss does not support a length cap k_max below the stream "
                         "length; pass at most k_max queries")
    shift = float(np.asarray(law_.shift))
    d, dp = q - t - shift, qp - t - shift
    rule = _quadrature.build(law_.threshold_noise, law_.query_noise, np.concatenate([d, dp]),
                             **_PRIVACY_RULE)
    rule = _quadrature.padded(rule, 256)
    dtype = jnp.zeros((), float).dtype
    z = jnp.asarray(rule.nodes, dtype)
    wz = _quadrature.density_weights(rule, law_.threshold_noise, dtype)
    vectors = _feasible(n, law_.c)
    vec = jnp.asarray(vectors)

    def probs(offsets):
        return np.asarray(_laws.answer_probabilities(z, wz, jnp.asarray(offsets, dtype),
                                                     law_.query_noise, vec,
                                                     resample=law_.resample), np.float64)

    p, pp = probs(d), probs(dp)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where((p > 0) & (pp > 0), np.abs(np.log(p) - np.log(pp)), 0.0)
        ratio = np.where((p > 0) != (pp > 0), np.inf, ratio)
    k = int(np.argmax(ratio))
    return PrivacyLoss(float(ratio[k]), tuple(int(v) for v in vectors[k]), float(p[k]),
                       float(pp[k]), int(vectors.shape[0]), float(p.sum()), float(pp.sum()),
                       name, tuple(float(v) for v in q), tuple(float(v) for v in qp),
                       float(t[0]) if np.all(t == t[0]) else tuple(float(v) for v in t))


def candidate_pairs(sensitivity: float = 1.0, n: int = DEFAULT_LENGTH
                    ) -> list[tuple[str, np.ndarray, np.ndarray, float]]:
    """Documented neighbouring pairs (q, q′, T = 0) of ``n`` queries, |q_i − q′_i| ≤ Δ.

    The families of StatDP's SVT inputs (Ding, Wang, Wang, Zhang, Kifer, CCS 2018: one above /
    one below / half-half / all above, with the rest below or above) and of Lyu'17's proofs
    (Theorem 4's alternating pair for noiseless comparisons, Theorem 5's all-shifted pair for
    no cut-off), around the threshold T = 0.
    """
    _validate.integer("n", n, minimum=2)
    D = float(sensitivity)
    zero = np.zeros(n)
    alt = np.where(np.arange(n) % 2 == 0, 0.0, D)
    return [
        ("all-up (q' = q + Δ)", zero, zero + D, 0.0),
        ("one-above-rest-below", zero, np.r_[D, -D * np.ones(n - 1)], 0.0),
        ("one-below-rest-above", zero, np.r_[-D, D * np.ones(n - 1)], 0.0),
        ("half-half", zero, np.r_[D * np.ones(n // 2), -D * np.ones(n - n // 2)], 0.0),
        ("first-above-rest-equal", zero, np.r_[D, np.zeros(n - 1)], 0.0),
        ("alternating swap", alt, D - alt, 0.5 * D),
    ]


def audit(mech: Any, *, n: int = DEFAULT_LENGTH) -> list[PrivacyLoss]:
    """:func:`privacy_loss` of ``mech`` on every pair of :func:`candidate_pairs` (Δ = the
    mechanism's sensitivity), largest loss first."""
    sensitivity = float(getattr(mech, "sensitivity", 1.0))
    losses = [privacy_loss(mech, q, qp, t, name=label)
              for label, q, qp, t in candidate_pairs(sensitivity, n)]
    return sorted(losses, key=lambda r: -r.epsilon)


def format_audit(mech: Any, losses: list[PrivacyLoss]) -> str:
    """Lines for ``svtjax audit NAME --exact``: each pair's exact loss against the claims."""
    guarantee = mech.privacy()
    proven = float(guarantee.epsilon(0.0))
    nominal = float(getattr(mech, "epsilon", math.nan))
    top = losses[0]

    def show(x: float) -> str:
        return "inf" if math.isinf(x) else f"{x:.6f}"

    lines = [f"mechanism        {mech.name}",
             f"claim            {guarantee.statement}",
             f"nominal ε        {nominal:g}",
             f"proven ε         {'none (not private)' if math.isinf(proven) else f'{proven:g}'}",
             "exact loss over answer vectors (T = threshold, n queries; svtjax.exact.audit):"]
    for r in losses:
        lines.append(f"  {show(r.epsilon):>10}  {r.name:<24} vector {_vector(r.vector)}  "
                     f"P={r.prob:.3e} P'={r.prob_prime:.3e}")
    verdict = "exceeds the nominal ε" if top.epsilon > nominal * (1 + 1e-9) else \
        "within the nominal ε"
    if top.epsilon > proven * (1 + 1e-9):
        verdict += "; ABOVE THE PROVED ε"
    lines.append(f"exact loss       {show(top.epsilon)} ({top.name}): {verdict}")
    if math.isinf(top.epsilon):
        lines.append("                 (a vector possible on one input only: ρ is pinned to an "
                     "empty interval on the other, Lyu et al. 2017 Theorem 4)")
    if mech.has_values():  # roth11's q_i + ν_i, svt-gap's gaps, svt-s's noisy answers
        lines.append("                 (answer vectors only: the values a ⊤ releases are not "
                     "covered and can only add to the loss; the claim above covers them)")
    return "\n".join(lines)


def _vector(a: tuple) -> str:
    return "".join({1: "T", 0: "F", -1: "-"}[v] for v in a)


def audit_report(mech: Any, *, as_json: bool = False, n: int = DEFAULT_LENGTH) -> str:
    """What ``svtjax audit NAME --exact`` prints: :func:`audit` computed in float64 (a scoped
    ``jax.enable_x64``; the ratios of small probabilities need it), as text or one JSON list."""
    with jax.enable_x64(True):
        losses = audit(mech, n=n)
    if as_json:
        return json.dumps([r._asdict() for r in losses])
    return format_audit(mech, losses)
