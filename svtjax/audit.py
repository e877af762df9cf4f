"""Empirical privacy auditing: a statistical lower bound on a mechanism's ε.

If a mechanism M is (ε, δ)-DP then for every pair of neighbouring inputs D, D′ (here: query
vectors q, q′ with |q_i − q′_i| ≤ Δ, all of one sign for monotonic mechanisms) and every output
event E,

    P[M(D) ∈ E] ≤ e^ε · P[M(D′) ∈ E] + δ.

So counts of E in N trials on each side give, with one-sided Clopper–Pearson bounds
p_lo ≤ P[M(D) ∈ E] and p′_hi ≥ P[M(D′) ∈ E] at level (1 − confidence)/2 each (union bound:
both hold with probability ≥ confidence),

    ε ≥ log((p_lo − δ) / p′_hi)

for *every* (ε, δ) the mechanism satisfies: a lower bound on ε valid with probability ≥
confidence (:func:`epsilon_lower_bound`). A mechanism is flagged when the bound exceeds the ε it
is run at.

Search (:func:`audit`): candidate input pairs from the constructions used in the literature for
SVT counterexamples (:func:`candidate_pairs`: Lyu, Su, Li 2017 Theorems 3-5; the "one above /
one below / rest above or below / half-half / x-shape / all above" patterns of Ding et al.'s
StatDP (CCS 2018); all equal but one; alternating), padded to one length with queries far below
the threshold so that every pair shares one compiled kernel. Candidate events (:class:`Event`)
are answer vectors, answer prefixes, unions of up to ``MAX_PATTERNS`` prefixes (ranked by their
likelihood ratio, the Neyman–Pearson order), and thresholded released values (``values[p] ≤ t``
or ``≥ t``) on top of a prefix. The search runs in two independent phases:

1. *selection* — every pair gets ``search_trials`` trials per side with full Outcomes and
   every candidate event is scored by the bound it is predicted to give at the validation
   size (from pessimistic, 1σ Clopper–Pearson estimates of its two probabilities), in both
   directions. The ``REFINE`` best pairs get ``REFINE_FACTOR`` times more trials and propose
   their ``CONFIRM_TOP`` best events, which are re-scored on ``CONFIRM_FACTOR`` times more
   fresh trials counted on-device (choosing among thousands of candidates over-rates rare
   events; re-scoring a handful on new samples removes most of that winner's curse). The
   best confirmed (pair, event, direction) is kept;
2. *validation* — ``trials`` fresh trials per side (new seeds) count that one event on-device
   (``svtjax.simulate`` with ``reduce=``: memory O(chunk)) and the bound is computed from
   those counts only.

Because the event is fixed before the validation samples are drawn, the bound carries no
selection bias and needs no multiple-testing correction. The split is by independent samples,
not literally by halves: with ``seconds``, after compiling, a third of the time goes to the
proposals and two thirds to the counts of the confirmations and of validation.

Claims (:func:`claim`): the guarantee is ``mech.privacy()`` at the mechanism's own ``delta``
(0 when it has none; a guarantee that is finite only for δ > 0 and no ``delta`` parameter is
checked at ``DEFAULT_DELTA``). For δ > 0 the (ε, δ) form of the bound is used.
The *verdict* compares the bound with the **nominal** ε (the ``epsilon`` the mechanism is run
at, i.e. what its authors claim: Lee & Clifton's Algorithm 4 claims ε although only
((1+6c)/4)ε is proved); ``exceeds_proven`` compares it with what ``privacy()`` proves, which no
correct kernel can exceed (except with probability 1 − confidence).

References:
  Lyu, Su, Li. Understanding the Sparse Vector Technique for Differential Privacy. PVLDB 10(6),
  2017, Theorems 3-5 (``seeds/002_8d07cd5bae315f2f.txt``).
  Ding, Wang, Wang, Zhang, Kifer. Detecting Violations of Differential Privacy. CCS 2018
  (StatDP: input patterns, event search on one sample, hypothesis test on a fresh one).
  Jagielski, Ullman, Oprea. Auditing Differentially Private Machine Learning: How Private is
  Private SGD? NeurIPS 2020 (Clopper–Pearson lower bounds on ε and the (ε, δ) form).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np
from scipy import special

from svtjax.noise import Gaussian

__all__ = ["Pair", "Event", "Bound", "Witness", "AuditResult", "SearchResult",
           "SimulationSampler", "epsilon_lower_bound", "candidate_pairs", "check_pair",
           "count_event", "audit_pair", "search", "audit", "claim", "mechanism_params",
           "format_result", "main", "DEFAULT_CONFIDENCE", "DEFAULT_DELTA", "NUM_QUERIES",
           "MAX_PATTERNS", "MAX_EVENTS", "MECHANISM_PARAMS"]

DEFAULT_CONFIDENCE = 0.99
DEFAULT_DELTA = 1e-6
"""δ at which a guarantee that is finite only for δ > 0 is checked when the mechanism has no
``delta`` parameter."""
NUM_QUERIES = 16
"""Length every candidate pair is padded to (one compiled kernel for all pairs)."""
PAD = -1e9
"""Padding query value (times Δ): far below any threshold, so a padded query is always ⊥ (or
never picked); identical in q and q′."""
MAX_PATTERNS = 16
"""Most answer patterns one event may be a union of (a static shape of the on-device test)."""
CHUNK = 8192
"""Trials per compiled chunk in both phases (a fixed chunk: one compile per phase)."""
_QUANTILES = np.linspace(0.02, 0.98, 25)
_VALUE_BASES = 3  # best discrete events that thresholded-value events are built on
_VALUE_POSITIONS = 6  # released positions tried per base event
REFINE = 6
"""Most promising pairs re-sampled before the final choice."""
CONFIRM_TOP = 8
"""Events each refined pair proposes for confirmation on fresh samples."""
MAX_EVENTS = 8
"""Events one on-device counting pass evaluates at once (a static shape of the reducer)."""
CONFIRM_FACTOR = 16
"""Confirmation trials per side per refined pair: at least this many times ``search_trials``
and at least a quarter of the validation trials (counted on-device, ~10x cheaper per trial
than the full Outcomes the proposals need)."""
REFINE_FACTOR = 4
"""Extra selection trials for each refined pair, in units of ``search_trials``."""
_PESSIMISM = 0.16  # one-sided 1σ: selection estimates are CP bounds at this level
_CONFIRM_PESSIMISM = 0.31  # ~0.5σ: a handful of confirmed events need less protection
_SYMBOLS = {1: "⊤", 0: "⊥", -1: "·"}

MECHANISM_PARAMS: dict[str, dict[str, Any]] = {
    # Parameters every audit (``svtjax audit`` and ``svtjax reproduce audit``) runs a
    # registered mechanism with, besides ``epsilon``. "c" stands for the mechanism's cut-off
    # (``c``, or ``k`` for top-k selection); it is replaced by ``--c``. Anything else is passed
    # as is. A name missing here falls back to {epsilon, c} with the registry's defaults.
    "lyu-alg1": {"c": 2},
    "dpbook": {"c": 2},
    "roth11": {"c": 1},  # Lyu et al. Theorem 3's construction uses c = 1
    "lee-clifton": {"c": 2},  # proved ((1 + 6c)/4)ε = 3.25ε, claimed ε
    "stoddard": {},
    "chen": {},
    "svt-s": {"c": 2},
    "svt-retr": {"c": 2, "max_passes": 3},  # 3 passes keep the stream (3n) short
    "svt-gap": {"c": 2},
    "em-peeling": {"c": 2},
    "report-noisy-max": {"k": 2},
    "noisy-top-k-gap": {"k": 2},
    "adaptive-svt-gap": {"c": 2},
    # Gaussian noises (an RDP claim, checked in its (ε, δ) form), capped at the pairs' length
    "generalized-svt": {"c": 2, "delta": 1e-6, "threshold_noise": Gaussian(1.0),
                        "query_noise": Gaussian(2.0), "k_max": NUM_QUERIES},
    # Laplace templates; "kov" calibrates in < 1 s ("optimal" takes seconds, same noise here)
    "stagewise-svt": {"c": 4, "c_stage": 2, "delta": 1e-6, "composition": "kov"},
    "svt-exp": {"c": 2, "correction_k": 8},  # Liu'24: k = floor(m / c), m = NUM_QUERIES
}


# =============================================================================================
# Clopper–Pearson bounds
# =============================================================================================

def _cp_lower(k, n, alpha):
    """One-sided (1 − alpha) Clopper–Pearson lower bound on p from k of n (k may be real)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    safe = np.where(k > 0, k, 1.0)
    return np.where(k > 0, special.betaincinv(safe, n - safe + 1.0, alpha), 0.0)


def _cp_upper(k, n, alpha):
    """One-sided (1 − alpha) Clopper–Pearson upper bound on p from k of n (k may be real)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    safe = np.where(k < n, k, n - 1.0)
    return np.where(k < n, special.betaincinv(safe + 1.0, n - safe, 1.0 - alpha), 1.0)


def _log_ratio(p_low, p_high, delta):
    """log((p_low − δ)/p_high), −inf where p_low ≤ δ."""
    num = np.asarray(p_low, dtype=float) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num > 0, np.log(np.maximum(num, 1e-300) / p_high), -np.inf)


@dataclasses.dataclass(frozen=True)
class Bound:
    """A lower confidence bound on ε and the counts behind it.

    With probability ≥ ``confidence`` (over the trials), ``p_low ≤ P[M(D) ∈ E]`` and
    ``p_prime_high ≥ P[M(D′) ∈ E]``, hence every (ε, ``delta``) the mechanism satisfies has
    ε ≥ ``epsilon`` = max(0, log((p_low − δ)/p_prime_high)).
    """

    epsilon: float
    count: int
    trials: int
    count_prime: int
    trials_prime: int
    p_low: float
    p_prime_high: float
    confidence: float
    delta: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def epsilon_lower_bound(count: int, trials: int, count_prime: int, trials_prime: int, *,
                        confidence: float = DEFAULT_CONFIDENCE, delta: float = 0.0) -> Bound:
    """The largest ε with ``p_low ≥ e^ε p′_high + δ`` (0 if none): a lower confidence bound.

    Args:
      count, trials: E happened ``count`` times in ``trials`` runs on D.
      count_prime, trials_prime: the same on D′ (independent runs).
      confidence: joint level of the two one-sided Clopper–Pearson bounds (each at
        (1 − confidence)/2; union bound).
      delta: δ of the (ε, δ) form (0: pure DP).

    Returns:
      A :class:`Bound`.

    Raises:
      ValueError: counts outside [0, trials], trials < 1, confidence outside (0, 1), δ outside
        [0, 1).
    """
    for name, k, n in (("count", count, trials), ("count_prime", count_prime, trials_prime)):
        _check_int(f"{name.replace('count', 'trials')}", n, 1)
        _check_int(name, k, 0)
        if k > n:
            raise ValueError(f"{name} ({k}) cannot exceed its number of trials ({n})")
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    alpha = (1.0 - confidence) / 2.0
    p_low = float(_cp_lower(count, trials, alpha))
    p_high = float(_cp_upper(count_prime, trials_prime, alpha))
    eps = max(0.0, float(_log_ratio(p_low, p_high, delta)))
    return Bound(eps, int(count), int(trials), int(count_prime), int(trials_prime), p_low,
                 p_high, confidence, delta)


def _predicted(x, y, n_sel, n_val, alpha, delta, pessimism=None):
    """Bound expected at ``n_val`` trials per side for events seen x / y times in ``n_sel``:
    pessimistic (one-sided CP at level ``pessimism``, default 1σ) estimates of the two
    probabilities, scaled to ``n_val``."""
    level = _PESSIMISM if pessimism is None else pessimism
    p1 = _cp_lower(x, n_sel, level)
    p2 = _cp_upper(y, n_sel, level)
    k1 = np.minimum(p1 * n_val, n_val)
    k2 = np.minimum(p2 * n_val, n_val - 1e-9)
    return _log_ratio(_cp_lower(k1, n_val, alpha), _cp_upper(k2, n_val, alpha), delta)


# =============================================================================================
# Input pairs
# =============================================================================================

@dataclasses.dataclass(frozen=True, eq=False)
class Pair:
    """Neighbouring inputs: query answers on D (``queries``) and on D′ (``queries_prime``)."""

    name: str
    queries: np.ndarray
    queries_prime: np.ndarray
    thresholds: Any = 0.0

    def swapped(self) -> "Pair":
        name = self.name[:-8] if self.name.endswith(" swapped") else self.name + " swapped"
        return Pair(name, self.queries_prime, self.queries, self.thresholds)

    def to_dict(self) -> dict[str, Any]:
        t = np.asarray(self.thresholds, dtype=float)
        return {"name": self.name, "queries": [float(x) for x in self.queries],
                "queries_prime": [float(x) for x in self.queries_prime],
                "thresholds": float(t) if t.ndim == 0 else [float(x) for x in t]}

    def describe(self) -> str:
        return (f"{self.name}: q = {_short(self.queries)}, q′ = {_short(self.queries_prime)}, "
                f"T = {_short(np.atleast_1d(self.thresholds))}")


def _short(x) -> str:
    """``[0, 0, 1] + 13×pad`` (the padding collapsed)."""
    x = np.asarray(x, dtype=float)
    body = x
    pads = 0
    while body.size and body[-1] <= PAD / 2:
        body = body[:-1]
        pads += 1
    text = "[" + ", ".join(f"{v:g}" for v in body) + "]"
    return text + (f" + {pads}×{x[-1]:.0e}" if pads else "")


def _sensitivity(mech) -> float:
    return float(getattr(mech, "sensitivity", 1.0) or 1.0)


def _monotonic(mech) -> bool:
    return bool(getattr(mech, "monotonic", False))


def check_pair(mech, queries, queries_prime, thresholds=0.0) -> tuple[np.ndarray, np.ndarray]:
    """Validates a neighbouring pair for ``mech``; returns both query vectors as float arrays.

    Raises:
      ValueError: not 1-D, empty, shapes differ, non-finite, |q_i − q′_i| > Δ, mixed signs for a
        monotonic mechanism, thresholds not finite or not shaped like the queries.
    """
    q = np.asarray(queries, dtype=float)
    qp = np.asarray(queries_prime, dtype=float)
    if q.ndim != 1 or q.size == 0:
        raise ValueError(f"queries must be a non-empty 1-D vector; got shape {q.shape}")
    if qp.shape != q.shape:
        raise ValueError(f"queries_prime must have the shape of queries {q.shape}; got "
                         f"{qp.shape}")
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qp))):
        raise ValueError("queries and queries_prime must be finite")
    t = np.asarray(thresholds, dtype=float)
    if not np.all(np.isfinite(t)) or (t.ndim and t.shape != q.shape):
        raise ValueError(f"thresholds must be a finite scalar or a vector shaped like the "
                         f"queries {q.shape}; got {thresholds!r}")
    delta_q = qp - q
    sens = _sensitivity(mech)
    worst = float(np.max(np.abs(delta_q)))
    if worst > sens * (1 + 1e-12):
        i = int(np.argmax(np.abs(delta_q)))
        raise ValueError(f"not neighbouring inputs: |q[{i}] - q'[{i}]| = {worst:g} exceeds the "
                         f"sensitivity {sens:g} of {getattr(mech, 'name', 'the mechanism')}")
    if _monotonic(mech) and np.any(delta_q > 0) and np.any(delta_q < 0):
        raise ValueError(f"{mech.name} is run with monotonic=True, so neighbouring queries must "
                         "all move in one direction (q'_i - q_i all >= 0 or all <= 0); this "
                         "pair mixes signs")
    return q, qp


def _pad(values, n: int, sens: float) -> np.ndarray:
    values = np.asarray(values, dtype=float) * sens
    return np.concatenate([values, np.full(n - values.size, PAD * sens)])


def candidate_pairs(mech, *, num_queries: int = NUM_QUERIES) -> list[Pair]:
    """Input pairs from the SVT counterexample literature, in units of Δ, threshold 0.

    Each pattern is padded to ``num_queries`` queries with ``PAD·Δ`` (always ⊥, identical on
    both sides). Pairs that move queries in both directions are dropped for monotonic
    mechanisms; both directions of every event are searched, so a pair's mirror is not listed.
    """
    n = int(num_queries)
    if n < 2:
        raise ValueError(f"num_queries must be at least 2; got {num_queries}")
    raw: list[tuple[str, list, list]] = []
    for m in (1, 2, 3, 4, 6, 8, 12, 15):  # Lyu'17 Thm 3 (m=1: Thm 4's q=(0,1), q'=(1,0))
        raw.append((f"lyu17-thm3 m={m}", [0] * m + [1], [1] * m + [0]))
    for m in (1, 2, 3, 4, 6, 8):  # Lyu'17 Thm 5
        raw.append((f"lyu17-thm5 m={m}", [0] * (2 * m), [1] * m + [-1] * m))
    for m in (2, 4, 8, 15):  # monotone Thm 3: the first m move up, the last stays
        raw.append((f"monotone-thm3 m={m}", [0] * (m + 1), [1] * m + [0]))
    raw += [  # StatDP (Ding et al. 2018) patterns around the threshold
        ("one-above", [0] * 5, [1] + [0] * 4),
        ("one-below", [0] * 5, [-1] + [0] * 4),
        ("one-above-rest-below", [0] * 5, [1] + [-1] * 4),
        ("one-below-rest-above", [0] * 5, [-1] + [1] * 4),
        ("half-half", [0] * 10, [-1] * 5 + [1] * 5),
        ("x-shape", [1] * 5 + [0] * 5, [0] * 5 + [1] * 5),
    ]
    for k in (1, 5, n):
        raw.append((f"all-above k={k}", [0] * k, [1] * k))
    for k in (2, 8, n):
        raw.append((f"all-equal-but-last k={k}", [0] * k, [0] * (k - 1) + [1]))
    raw.append((f"all-equal-but-first k={n}", [0] * n, [1] + [0] * (n - 1)))
    for k in (4, n):
        raw.append((f"alternating k={k}", [0, 1] * (k // 2), [1, 0] * (k // 2)))
    raw.append((f"alternating-signs k={n}", [0] * n, [1, -1] * (n // 2)))
    sens = _sensitivity(mech)
    pairs = []
    seen = set()
    for name, q, qp in raw:
        if len(q) > n:
            continue
        d = np.asarray(qp) - np.asarray(q)
        if _monotonic(mech) and np.any(d > 0) and np.any(d < 0):
            continue
        key = (tuple(q), tuple(qp))
        if key in seen or (tuple(qp), tuple(q)) in seen:
            continue
        seen.add(key)
        pairs.append(Pair(name, _pad(q, n, sens), _pad(qp, n, sens), 0.0))
    return pairs


# =============================================================================================
# Events
# =============================================================================================

@dataclasses.dataclass(frozen=True, eq=False)
class Event:
    """An output event: the first ``length`` positions of (answers, items) equal one of the
    patterns, and, if ``value_position >= 0``, ``values[value_position] <= value_threshold``
    (``value_op="<="``) or ``>=`` (NaN never satisfies it).

    Attributes:
      answers: int[K, length] answer patterns (1 ⊤, 0 ⊥, -1 not evaluated), 1 <= K <=
        ``MAX_PATTERNS``; length 0 matches every output.
      items: int[K, length] the items evaluated at those positions (-1 where none).
    """

    answers: np.ndarray
    items: np.ndarray
    value_position: int = -1
    value_op: str = "<="
    value_threshold: float = 0.0

    def __post_init__(self):
        a = np.asarray(self.answers, dtype=np.int64)
        i = np.asarray(self.items, dtype=np.int64)
        if a.ndim != 2 or i.shape != a.shape:
            raise ValueError("event answers and items must both be [K, length] arrays of one "
                             f"shape; got {a.shape} and {i.shape}")
        if not 1 <= a.shape[0] <= MAX_PATTERNS:
            raise ValueError(f"an event is a union of 1..{MAX_PATTERNS} patterns; got "
                             f"{a.shape[0]}")
        if np.any((a < -1) | (a > 1)):
            raise ValueError("event answers must be -1, 0 or 1")
        if self.value_op not in ("<=", ">="):
            raise ValueError(f"value_op must be '<=' or '>='; got {self.value_op!r}")
        if int(self.value_position) < -1:
            raise ValueError(f"value_position must be >= 0 (or -1: none); got "
                             f"{self.value_position}")
        if int(self.value_position) >= 0 and not math.isfinite(float(self.value_threshold)):
            raise ValueError("value_threshold must be finite")
        object.__setattr__(self, "answers", a.astype(np.int8))
        object.__setattr__(self, "items", i.astype(np.int32))
        object.__setattr__(self, "value_position", int(self.value_position))
        object.__setattr__(self, "value_threshold", float(self.value_threshold))

    @property
    def length(self) -> int:
        return self.answers.shape[1]

    def matches(self, answers, items, values) -> np.ndarray:
        """bool[N]: which of N outcomes (numpy [N, L] arrays) lie in the event."""
        answers = np.asarray(answers)
        items = np.asarray(items)
        ln = self.length
        eq = ((answers[:, None, :ln] == self.answers[None])
              & (items[:, None, :ln] == self.items[None]))
        hit = np.any(np.all(eq, axis=-1), axis=-1)
        if self.value_position >= 0:
            values = np.asarray(values)
            v = values[:, self.value_position]
            t = np.asarray(self.value_threshold, dtype=values.dtype)
            with np.errstate(invalid="ignore"):
                hit &= (v <= t) if self.value_op == "<=" else (v >= t)
        return hit

    def device_arrays(self, stream_length: int, dtype) -> tuple:
        """The event as fixed-shape arrays ([MAX_PATTERNS, L] patterns, masks, the value test)
        so that every event of a stream length shares one compiled reducer."""
        import jax.numpy as jnp

        L = int(stream_length)
        if self.length > L:
            raise ValueError(f"the event looks at {self.length} positions but the stream has "
                             f"only {L}")
        if self.value_position >= L:
            raise ValueError(f"value_position {self.value_position} is past the stream "
                             f"(length {L})")
        k = self.answers.shape[0]
        pa = np.zeros((MAX_PATTERNS, L), np.int8)
        pi = np.zeros((MAX_PATTERNS, L), np.int32)
        pa[:k, :self.length] = self.answers
        pi[:k, :self.length] = self.items
        mask = np.arange(L) < self.length
        valid = np.arange(MAX_PATTERNS) < k
        on = self.value_position >= 0
        sign = 1.0 if self.value_op == "<=" else -1.0
        return (jnp.asarray(pa), jnp.asarray(pi), jnp.asarray(mask), jnp.asarray(valid),
                jnp.asarray(max(self.value_position, 0), jnp.int32), jnp.asarray(on),
                jnp.asarray(sign, dtype), jnp.asarray(self.value_threshold, dtype))

    def describe(self) -> str:
        if self.length == 0:
            text = "any output"
        else:
            rows = [_pattern_text(a, i) for a, i in zip(self.answers, self.items)]
            if len(rows) == 1:
                text = f"out[0:{self.length}] = {rows[0]}"
            else:
                text = f"out[0:{self.length}] ∈ {{{', '.join(rows)}}}"
        if self.value_position >= 0:
            text += (f" and values[{self.value_position}] {self.value_op} "
                     f"{self.value_threshold:.4g}")
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"description": self.describe(), "length": self.length,
                "answers": self.answers.tolist(), "items": self.items.tolist(),
                "value_position": self.value_position if self.value_position >= 0 else None,
                "value_op": self.value_op if self.value_position >= 0 else None,
                "value_threshold": self.value_threshold if self.value_position >= 0 else None}


def _pattern_text(answers, items) -> str:
    in_order = all((it == p) if a >= 0 else (it == -1)
                   for p, (a, it) in enumerate(zip(answers, items)))
    if in_order:
        return "".join(_SYMBOLS[int(a)] for a in answers)
    return "(" + " ".join(f"{int(it)}{_SYMBOLS[int(a)]}" if a >= 0 else "·"
                          for a, it in zip(answers, items)) + ")"


def _indicator(event_arrays, out):
    """int32[B]: 1 where an Outcome of the batch lies in the event (``Event.device_arrays``)."""
    import jax.numpy as jnp

    pa, pi, mask, valid, pos, on, sign, thr = event_arrays
    eq = (out.answers[:, None, :] == pa[None]) & (out.items[:, None, :] == pi[None])
    eq = eq | ~mask[None, None, :]
    hit = jnp.any(jnp.all(eq, axis=-1) & valid[None, :], axis=-1)
    v = jnp.take(out.values, pos, axis=-1).astype(thr.dtype)
    ok = jnp.where(on, sign * v <= sign * thr, True)
    return (hit & ok).astype(jnp.int32)


def _indicators(stacked, out):
    """int32[B, MAX_EVENTS]: ``_indicator`` for each of a stack of events (``_stack``)."""
    import jax

    return jax.vmap(lambda ev: _indicator(ev, out), out_axes=1)(stacked)


def _stack(events: Sequence[Event], stream_length: int, dtype) -> tuple:
    """Up to MAX_EVENTS events as one pytree with a leading event axis; unused slots never
    match (no valid pattern), so one compiled reducer serves any number of events."""
    import jax.numpy as jnp

    if not 1 <= len(events) <= MAX_EVENTS:
        raise ValueError(f"one counting pass takes 1..{MAX_EVENTS} events; got {len(events)}")
    arrays = [e.device_arrays(stream_length, dtype) for e in events]
    never = list(arrays[0])
    never[3] = jnp.zeros_like(never[3])  # no valid pattern
    arrays += [tuple(never)] * (MAX_EVENTS - len(events))
    return tuple(jnp.stack(field) for field in zip(*arrays))


# =============================================================================================
# Samplers: where outcomes and event counts come from
# =============================================================================================

class SimulationSampler:
    """Outcomes and event counts of a registered mechanism through ``svtjax.simulate``.

    The selection phase asks for full Outcomes (host numpy arrays); the validation phase
    counts one event with ``reduce=`` inside each compiled chunk. Both use a fixed chunk, so a
    mechanism compiles once per phase whatever the pair, event, seed or number of trials.

    Any object with the same two methods (and ``stream_length``) can stand in for it in
    :func:`search` — the tests use exact samplers for trivially simulable mechanisms.
    """

    def __init__(self, mech, *, chunk_size: int = CHUNK):
        self.mech = mech
        self.chunk_size = int(chunk_size)

    def stream_length(self, n: int) -> int:
        return int(self.mech.stream_length(n))

    def outcomes(self, queries, thresholds, trials: int, seed: int):
        """(answers int8[N, L], items int32[N, L], values float[N, L]) of ``trials`` runs."""
        import jax

        from svtjax.simulate import simulate

        out = jax.block_until_ready(simulate(
            self.mech, queries, thresholds, trials=int(trials), seed=int(seed),
            chunk_size=self.chunk_size, progress=False))
        return np.asarray(out.answers), np.asarray(out.items), np.asarray(out.values)

    def count(self, queries, thresholds, events: Sequence[Event], trials: int, seed: int
              ) -> np.ndarray:
        """int64[len(events)]: how many of ``trials`` runs land in each event (counted
        on-device, ``MAX_EVENTS`` per pass over the same trials)."""
        import jax
        import jax.numpy as jnp

        from svtjax.simulate import simulate

        q = jnp.asarray(queries)
        if not jnp.issubdtype(q.dtype, jnp.floating):
            q = q.astype(jnp.zeros((), float).dtype)
        L = self.stream_length(q.shape[0])
        counts = []
        for i in range(0, len(events), MAX_EVENTS):
            group = list(events[i:i + MAX_EVENTS])
            reduce = jax.tree_util.Partial(_indicators, _stack(group, L, q.dtype))
            total = simulate(self.mech, q, thresholds, trials=int(trials), seed=int(seed),
                             chunk_size=self.chunk_size, reduce=reduce, progress=False)
            counts.append(np.asarray(jax.device_get(total))[:len(group)])
        return np.concatenate(counts).astype(np.int64)


# =============================================================================================
# Selection: the best event of a pair from one sample per side
# =============================================================================================

@dataclasses.dataclass(frozen=True)
class _Candidate:
    score: float  # predicted validation bound
    event: Event
    swap: bool  # True: E is more likely on q′ (the pair is reported swapped)
    count: int  # selection counts on the favoured side and the other
    count_prime: int


def _prefix_lengths(L: int) -> list[int]:
    lengths = set(range(1, min(L, 24) + 1)) | {L}
    lengths |= {x for x in (32, 48, 64, 96, 128, 192, 256) if x < L}
    return sorted(lengths)


def _best_of(scores: np.ndarray) -> int:
    finite = np.where(np.isfinite(scores), scores, -np.inf)
    return int(np.argmax(finite))


def _select(s1, s2, n_val: int, alpha: float, delta: float) -> list[_Candidate]:
    """Candidate events for one pair, best first, from outcomes ``s1`` (on q) and ``s2`` (q′)."""
    a1, i1, v1 = s1
    a2, i2, v2 = s2
    n1, n2 = a1.shape[0], a2.shape[0]
    n_sel = min(n1, n2)
    answers = np.concatenate([a1, a2]).astype(np.int64)
    items = np.concatenate([i1, i2]).astype(np.int64)
    L = answers.shape[1]
    width = 3 * (int(items.max(initial=-1)) + 2)
    token = (answers + 1) * (width // 3) + (items + 1)
    code = np.zeros(n1 + n2, np.int64)
    wanted = set(_prefix_lengths(L))
    found: list[_Candidate] = []
    singles: list[tuple] = []  # (score, length, first row, member mask)
    for ln in range(1, L + 1):
        code = code * width + token[:, ln - 1]
        _, first, code = np.unique(code, return_index=True, return_inverse=True)
        code = code.reshape(-1)
        if ln not in wanted:
            continue
        c1 = np.bincount(code[:n1], minlength=first.size)
        c2 = np.bincount(code[n1:], minlength=first.size)
        for swap, (x, y) in ((False, (c1, c2)), (True, (c2, c1))):
            score = _predicted(x, y, n_sel, n_val, alpha, delta)
            # single patterns
            best = _best_of(score)
            if np.isfinite(score[best]):
                ev = Event(answers[first[best], None, :ln], items[first[best], None, :ln])
                found.append(_Candidate(float(score[best]), ev, swap, int(x[best]),
                                        int(y[best])))
                top = np.argsort(-np.where(np.isfinite(score), score, -np.inf))[:_VALUE_BASES]
                for j in top:
                    if np.isfinite(score[j]):
                        singles.append((float(score[j]), ln, first[j], code == j))
            # unions, in Neyman-Pearson order of the pessimistic likelihood ratio
            ratio = np.log(np.maximum(_cp_lower(x, n_sel, _PESSIMISM), 1e-300)) - np.log(
                _cp_upper(y, n_sel, _PESSIMISM))
            order = np.argsort(-ratio, kind="stable")[:MAX_PATTERNS]
            xs, ys = np.cumsum(x[order]), np.cumsum(y[order])
            uscore = _predicted(xs, ys, n_sel, n_val, alpha, delta)
            k = _best_of(uscore)
            if k > 0 and np.isfinite(uscore[k]):
                rows = first[order[:k + 1]]
                ev = Event(answers[rows, :ln], items[rows, :ln])
                found.append(_Candidate(float(uscore[k]), ev, swap, int(xs[k]), int(ys[k])))
    found += _value_candidates(singles, answers, items, np.concatenate([v1, v2]), n1, n_sel,
                               n_val, alpha, delta)
    found.sort(key=lambda c: -c.score)
    return found


def _distinct(cands: list[_Candidate]) -> list[_Candidate]:
    """Drops repeated events (same patterns, value test and direction), keeping the first."""
    seen, out = set(), []
    for c in cands:
        e = c.event
        key = (c.swap, e.answers.tobytes(), e.items.tobytes(), e.answers.shape,
               e.value_position, e.value_op, e.value_threshold)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _value_candidates(singles, answers, items, values, n1, n_sel, n_val, alpha, delta):
    """Thresholded released values on top of the best few discrete events (and of no event)."""
    out: list[_Candidate] = []
    if not np.any(np.isfinite(values)):
        return out
    singles = sorted(singles, key=lambda s: -s[0])
    bases = [(0, None, np.ones(answers.shape[0], bool))]
    seen = set()
    for _, ln, row, member in singles:
        key = (ln, row)
        if key not in seen and len(bases) <= _VALUE_BASES:
            seen.add(key)
            bases.append((ln, row, member))
    for ln, row, member in bases:
        released = np.isfinite(values) & member[:, None]
        counts = released.sum(axis=0)
        positions = np.argsort(-counts, kind="stable")[:_VALUE_POSITIONS]
        for p in positions:
            if counts[p] < 2:
                continue
            col = values[:, p]
            sel = released[:, p]
            v1 = np.sort(col[:n1][sel[:n1]])
            v2 = np.sort(col[n1:][sel[n1:]])
            thresholds = np.unique(np.quantile(np.concatenate([v1, v2]), _QUANTILES,
                                               method="lower").astype(values.dtype))
            for op in ("<=", ">="):
                if op == "<=":
                    x = np.searchsorted(v1, thresholds, "right")
                    y = np.searchsorted(v2, thresholds, "right")
                else:
                    x = v1.size - np.searchsorted(v1, thresholds, "left")
                    y = v2.size - np.searchsorted(v2, thresholds, "left")
                for swap, (cx, cy) in ((False, (x, y)), (True, (y, x))):
                    score = _predicted(cx, cy, n_sel, n_val, alpha, delta)
                    j = _best_of(score)
                    if not np.isfinite(score[j]):
                        continue
                    if row is None:
                        a = np.zeros((1, 0), np.int64)
                        it = a
                    else:
                        a, it = answers[row, None, :ln], items[row, None, :ln]
                    ev = Event(a, it, int(p), op, float(thresholds[j]))
                    out.append(_Candidate(float(score[j]), ev, swap, int(cx[j]), int(cy[j])))
    return out


# =============================================================================================
# Search and audit
# =============================================================================================

@dataclasses.dataclass(frozen=True)
class Witness:
    """Inputs and event behind a bound: P[M(pair.queries) ∈ E] ≥ e^ε P[M(pair.queries_prime)
    ∈ E] + δ at the stated confidence."""

    pair: Pair
    event: Event

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair.to_dict(), "event": self.event.to_dict()}

    def describe(self) -> str:
        return f"{self.pair.describe()}; E: {self.event.describe()}"


@dataclasses.dataclass(frozen=True)
class SearchResult:
    bound: Bound
    witness: Optional[Witness]
    predicted: float  # the bound its confirmation predicted for the validation
    selection_trials: int  # per side, per pair
    validation_trials: int  # per side
    num_pairs: int
    total_trials: int
    seconds: float


def _subseed(seed: int, *tags: int) -> int:
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, *tags]).generate_state(1)[0])


def _plan(sampler, pairs, seconds, start, seed, alpha, delta) -> tuple[int, int]:
    """(selection trials per side per pair, validation trials per side) that fill ``seconds``
    (from ``start``): compiles both phases, times one chunk of each, then gives a third of the
    time left to the proposals (full Outcomes) and two thirds to the on-device counts of the
    confirmations (``n_val // 4`` per side for each of ``REFINE`` pairs) and validation."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"seconds must be a positive number; got {seconds!r}")
    chunk = int(getattr(sampler, "chunk_size", CHUNK))
    p0 = pairs[0]
    anything = Event(np.zeros((1, 0)), np.zeros((1, 0)))
    sampler.outcomes(p0.queries, p0.thresholds, chunk, _subseed(seed, 9, 0))
    sampler.count(p0.queries, p0.thresholds, [anything], chunk, _subseed(seed, 9, 1))
    t0 = time.perf_counter()
    sample = sampler.outcomes(p0.queries, p0.thresholds, chunk, _subseed(seed, 9, 2))
    _select(sample, sample, 10**6, alpha, delta)  # the analysis costs as much as the sampling
    per_selection_trial = (time.perf_counter() - t0) / chunk
    t0 = time.perf_counter()
    sampler.count(p0.queries, p0.thresholds, [anything], 4 * chunk, _subseed(seed, 9, 3))
    per_validation_trial = max((time.perf_counter() - t0) / (4 * chunk), 1e-9)
    third = max(seconds - (time.perf_counter() - start), 0.0) / 3
    refined = min(REFINE, len(pairs))
    runs = len(pairs) + REFINE_FACTOR * refined
    n_sel = int(third / (2 * runs * per_selection_trial)) // 1024 * 1024
    # confirmation (2 x n_val/4 per refined pair) and validation (2 x n_val) share 2/3
    counted_per_n_val = 2 * (1 + refined / 4)
    n_val = int(2 * third / (counted_per_n_val * per_validation_trial)) // chunk * chunk
    return max(n_sel, 1024), max(n_val, chunk)


def search(sampler, pairs: Sequence[Pair], *, trials: Optional[int] = None,
           search_trials: Optional[int] = None, seconds: Optional[float] = None,
           confidence: float = DEFAULT_CONFIDENCE, delta: float = 0.0, seed: int = 0,
           log: Optional[Callable[[str], None]] = None) -> SearchResult:
    """Selection on one set of samples, validation of the single best event on fresh ones.

    Args:
      sampler: where samples come from (:class:`SimulationSampler` or a stand-in).
      pairs: candidate neighbouring pairs (already validated), all of one length.
      trials: validation trials per side (with ``seconds``: a minimum).
      search_trials: n_sel, the selection trials per side per pair (default
        ``min(16384, max(2048, trials // 32))``; with ``seconds``: derived from the time). The
        ``REFINE`` leading pairs get ``REFINE_FACTOR`` x n_sel more full Outcomes and
        ``CONFIRM_FACTOR`` x n_sel counting trials per side.
      seconds: a wall-clock budget instead (compilation included; a third of the rest for the
        proposals, two thirds for confirmation and validation counts, sized from timed
        warm-up chunks).
      confidence, delta: of the bound.
      seed: the phases use seeds derived from it (selection and validation never share one).
      log: progress lines (default: none).

    Returns:
      A :class:`SearchResult`; ``bound.epsilon`` is 0 with ``witness`` None when no event was
      seen more often on one side than the other.
    """
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    alpha = (1.0 - confidence) / 2.0
    if not pairs:
        raise ValueError("search needs at least one candidate pair")
    say = log or (lambda _msg: None)
    start = time.perf_counter()
    if seconds is not None:
        n_sel, n_val = _plan(sampler, pairs, seconds, start, seed, alpha, delta)
        n_sel = max(n_sel, search_trials or 0)
        n_val = max(n_val, trials or 0)
    else:
        _check_int("trials", trials, 1)
        n_sel = (int(search_trials) if search_trials is not None
                 else min(16384, max(2048, trials // 32)))
        _check_int("search_trials", n_sel, 1)
        n_val = int(trials)
    # stage 1: every pair at n_sel trials per side; the REFINE best keep their samples
    ranked: list[tuple[float, int, tuple, tuple]] = []  # (score, pair index, samples q, q')
    for j, pair in enumerate(pairs):
        s1 = sampler.outcomes(pair.queries, pair.thresholds, n_sel, _subseed(seed, 1, j, 0))
        s2 = sampler.outcomes(pair.queries_prime, pair.thresholds, n_sel,
                              _subseed(seed, 1, j, 1))
        found = _select(s1, s2, n_val, alpha, delta)
        score = found[0].score if found else -math.inf
        if found:
            say(f"  {pair.name}: predicted {score:.3f} from {found[0].event.describe()}")
        ranked.append((score, j, s1, s2))
        ranked.sort(key=lambda r: -r[0])
        ranked = [r if i < REFINE else (r[0], r[1], None, None)  # keep the leaders' samples
                  for i, r in enumerate(ranked)]
    # stage 2: the leaders again with REFINE_FACTOR x the samples propose CONFIRM_TOP events
    # each; stage 3: CONFIRM_FACTOR x fresh trials, counted on-device, re-score those events
    # without the winner's curse of choosing among thousands of candidates.
    best: Optional[tuple[float, _Candidate, Pair]] = None
    n_more = REFINE_FACTOR * n_sel
    n_conf = max(CONFIRM_FACTOR * n_sel, n_val // 4)
    refined = 0
    count_time, count_trials = 0.0, 0
    for score, j, s1, s2 in ranked[:REFINE]:
        if not score > -math.inf:
            continue
        refined += 1
        pair = pairs[j]
        more1 = sampler.outcomes(pair.queries, pair.thresholds, n_more, _subseed(seed, 4, j, 0))
        more2 = sampler.outcomes(pair.queries_prime, pair.thresholds, n_more,
                                 _subseed(seed, 4, j, 1))
        s1 = tuple(np.concatenate([a, b]) for a, b in zip(s1, more1))
        s2 = tuple(np.concatenate([a, b]) for a, b in zip(s2, more2))
        found = _distinct(_select(s1, s2, n_val, alpha, delta))[:CONFIRM_TOP]
        if not found:
            continue
        events = [c.event for c in found]
        t0 = time.perf_counter()
        k1 = sampler.count(pair.queries, pair.thresholds, events, n_conf, _subseed(seed, 5, j, 0))
        k2 = sampler.count(pair.queries_prime, pair.thresholds, events, n_conf,
                           _subseed(seed, 5, j, 1))
        count_time += time.perf_counter() - t0
        count_trials += 2 * n_conf
        for cand, x, y in zip(found, k1, k2):
            if cand.swap:
                x, y = y, x
            confirmed = float(_predicted(x, y, n_conf, n_val, alpha, delta,
                                         _CONFIRM_PESSIMISM))
            if best is None or confirmed > best[0]:
                best = (confirmed, cand, pair)
        say(f"  refined {pair.name}: proposed {found[0].score:.3f} from "
            f"{found[0].event.describe()}; best confirmed so far {best[0] if best else None}")
    if best is not None and not best[0] > -math.inf:
        best = None
    selection_total = 2 * (n_sel * (len(pairs) + REFINE_FACTOR * refined) + n_conf * refined)
    if best is None:
        bound = epsilon_lower_bound(0, 1, 0, 1, confidence=confidence, delta=delta)
        return SearchResult(bound, None, -math.inf, n_sel, 0, len(pairs), selection_total,
                            time.perf_counter() - start)
    predicted, cand, pair = best
    if cand.swap:
        pair = pair.swapped()
    event = cand.event
    if seconds is not None and count_trials:
        # spend what the plan left over: the confirmations timed the counting rate
        per_trial = count_time / count_trials
        left = seconds - (time.perf_counter() - start)
        n_val = max(n_val, int(left / (2 * per_trial * 1.1)) // 1024 * 1024)
    k1 = int(sampler.count(pair.queries, pair.thresholds, [event], n_val,
                           _subseed(seed, 2, 0))[0])
    k2 = int(sampler.count(pair.queries_prime, pair.thresholds, [event], n_val,
                           _subseed(seed, 2, 1))[0])
    bound = epsilon_lower_bound(k1, n_val, k2, n_val, confidence=confidence, delta=delta)
    say(f"  validated {pair.name}: {k1} vs {k2} of {n_val} -> epsilon >= {bound.epsilon:.3f}")
    return SearchResult(bound, Witness(pair, event), predicted, n_sel, n_val, len(pairs),
                        selection_total + 2 * n_val, time.perf_counter() - start)


def claim(mech) -> dict[str, Any]:
    """What ``mech`` claims: {statement, nominal_epsilon, claimed_epsilon (None if nothing
    finite is proved), delta}."""
    g = mech.privacy()
    delta = getattr(mech, "delta", None)
    delta = 0.0 if delta is None else float(delta)
    eps = g.epsilon(delta)
    if not math.isfinite(eps) and delta == 0.0 and type(g).__name__ not in (
            "NotPrivate", "Unproven"):
        finite_at = g.epsilon(DEFAULT_DELTA)
        if math.isfinite(finite_at):
            delta, eps = DEFAULT_DELTA, finite_at
    nominal = getattr(mech, "epsilon", None)
    if nominal is None:
        nominal = getattr(g, "nominal", None)
    nominal = None if nominal is None or not math.isfinite(float(nominal)) else float(nominal)
    claimed = float(eps) if math.isfinite(eps) else None
    return {"statement": str(g), "nominal_epsilon": nominal if nominal is not None else claimed,
            "claimed_epsilon": claimed, "delta": delta}


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """One mechanism's audit: its claim, the best lower bound found and the witness."""

    mechanism: str
    params: dict[str, Any]
    statement: str
    nominal_epsilon: Optional[float]
    claimed_epsilon: Optional[float]
    delta: float
    lower_bound: float
    confidence: float
    trials: int  # all trials run, both phases, both sides
    validation_trials: int  # per side
    selection_trials: int  # per side per pair
    num_pairs: int
    count: int
    count_prime: int
    witness: Optional[Witness]
    seconds: float

    @property
    def verdict(self) -> str:
        """"violation" when the bound exceeds the nominal ε (the ε the mechanism is run at)."""
        ref = self.nominal_epsilon if self.nominal_epsilon is not None else self.claimed_epsilon
        return "violation" if ref is not None and self.lower_bound > ref else "none-found"

    @property
    def exceeds_proven(self) -> bool:
        """The bound exceeds what ``privacy()`` proves (a bug, or a 1 − confidence accident)."""
        return self.claimed_epsilon is not None and self.lower_bound > self.claimed_epsilon

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "params": _jsonable(self.params),
                "statement": self.statement, "nominal_epsilon": self.nominal_epsilon,
                "claimed_epsilon": self.claimed_epsilon, "delta": self.delta,
                "lower_bound": self.lower_bound, "confidence": self.confidence,
                "trials": self.trials, "validation_trials": self.validation_trials,
                "selection_trials": self.selection_trials, "num_pairs": self.num_pairs,
                "count": self.count, "count_prime": self.count_prime,
                "verdict": self.verdict, "exceeds_proven": self.exceeds_proven,
                "witness": self.witness.to_dict() if self.witness else None,
                "seconds": self.seconds}


def _jsonable(params: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in params.items():
        out[k] = v if isinstance(v, (bool, int, float, str, type(None))) else repr(v)
    return out


def audit(mech, *, pairs: Optional[Sequence[Pair]] = None, trials: Optional[int] = None,
          search_trials: Optional[int] = None, seconds: Optional[float] = None,
          confidence: float = DEFAULT_CONFIDENCE, delta: Optional[float] = None, seed: int = 0,
          num_queries: int = NUM_QUERIES, log: Optional[Callable[[str], None]] = None
          ) -> AuditResult:
    """Searches for a witness that ``mech`` is less private than it claims.

    Args:
      mech: a mechanism (``svtjax.mechanisms.get(...)``).
      pairs: candidate pairs (default :func:`candidate_pairs`); each is validated.
      trials: validation trials per side (default 200 000 when ``seconds`` is None).
      search_trials: selection trials per side per pair (see :func:`search`).
      seconds: wall-clock budget instead of ``trials`` (compilation included).
      confidence: of the lower bound (default 0.99).
      delta: δ of the bound (default: the δ of the mechanism's claim, :func:`claim`).
      seed: all randomness derives from it.
      num_queries: length of the default candidate pairs.
      log: progress lines.

    Returns:
      An :class:`AuditResult`.
    """
    from svtjax.mechanisms.base import Mechanism

    if not isinstance(mech, Mechanism):
        raise TypeError("mech must be a mechanism built with svtjax.mechanisms.get(name, ...); "
                        f"got {type(mech).__name__}")
    info = claim(mech)
    delta = info["delta"] if delta is None else _check_delta(delta)
    if seconds is None and trials is None:
        trials = 200_000
    if pairs is None:
        pairs = candidate_pairs(mech, num_queries=num_queries)
    checked = []
    for pair in pairs:
        q, qp = check_pair(mech, pair.queries, pair.queries_prime, pair.thresholds)
        checked.append(Pair(pair.name, q, qp, pair.thresholds))
    if len({p.queries.size for p in checked}) != 1:
        raise ValueError("all candidate pairs must have the same number of queries (pad "
                         "them): one length compiles once")
    result = search(SimulationSampler(mech), checked, trials=trials, search_trials=search_trials,
                    seconds=seconds, confidence=confidence, delta=delta, seed=seed, log=log)
    b = result.bound
    return AuditResult(mech.name, mech.params(), info["statement"], info["nominal_epsilon"],
                       info["claimed_epsilon"], delta, b.epsilon, b.confidence,
                       result.total_trials, result.validation_trials, result.selection_trials,
                       result.num_pairs, b.count, b.count_prime, result.witness, result.seconds)


def count_event(mech, queries, thresholds, event: Event, *, trials: int, seed: int = 0,
                chunk_size: int = CHUNK) -> int:
    """How many of ``trials`` runs of ``mech`` on ``queries`` land in ``event`` (on-device)."""
    _check_int("trials", trials, 1)
    return int(SimulationSampler(mech, chunk_size=chunk_size).count(
        np.asarray(queries, dtype=float), thresholds, [event], trials, seed)[0])


def audit_pair(mech, queries, queries_prime, event: Event, *, thresholds=0.0, trials: int,
               confidence: float = DEFAULT_CONFIDENCE, delta: float = 0.0, seed: int = 0
               ) -> Bound:
    """Lower bound on ε from ``trials`` runs per side of one fixed pair and event.

    The event must be fixed independently of these runs (e.g. chosen on other samples).
    """
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    _check_int("trials", trials, 1)
    q, qp = check_pair(mech, queries, queries_prime, thresholds)
    k1 = count_event(mech, q, thresholds, event, trials=trials, seed=_subseed(seed, 3, 0))
    k2 = count_event(mech, qp, thresholds, event, trials=trials, seed=_subseed(seed, 3, 1))
    return epsilon_lower_bound(k1, trials, k2, trials, confidence=confidence, delta=delta)


# =============================================================================================
# Checks
# =============================================================================================

def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value}")


def _check_confidence(confidence: Any) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)):
        raise TypeError(f"confidence must be a number in (0, 1); got {confidence!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), e.g. 0.99; got {confidence}")
    return float(confidence)


def _check_delta(delta: Any) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)):
        raise TypeError(f"delta must be a number in [0, 1); got {delta!r}")
    if not 0.0 <= float(delta) < 1.0:
        raise ValueError(f"delta must lie in [0, 1); got {delta}")
    return float(delta)


# =============================================================================================
# Command line: svtjax audit NAME --epsilon E [--c C] [--seconds S] [--confidence P] [--json]
# =============================================================================================

def mechanism_params(name: str, epsilon: float, c: Optional[int] = None,
                     extra: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The parameters an audit runs ``name`` with: ``MECHANISM_PARAMS`` (or a generic
    fallback), ε, ``c`` for the cut-off (``c`` or ``k``), then ``extra``."""
    from svtjax import mechanisms

    accepted = mechanisms.parameters(name)
    params = dict(MECHANISM_PARAMS.get(name, {}))
    if name not in MECHANISM_PARAMS:
        for key in ("c", "k"):
            if accepted.get(key) in ("REQUIRED", None) and key in accepted:
                params[key] = 2
    if c is not None:
        keys = [k for k in ("c", "k") if k in accepted]
        if not keys:
            raise ValueError(f"{name} has no cut-off parameter (c or k); drop --c")
        params[keys[0]] = int(c)
    params["epsilon"] = epsilon
    params.update(extra or {})
    return params


def _parse_value(text: str) -> Any:
    from svtjax import noise

    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for family in ("laplace", "gaussian", "exponential", "gumbel"):
        if low.startswith(family + "(") and low.endswith(")"):
            return getattr(noise, family.capitalize())(float(low[len(family) + 1:-1]))
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="svtjax audit",
        description="Empirical privacy audit: a lower confidence bound on a mechanism's ε "
                    "from Monte Carlo trials on candidate neighbouring inputs.")
    parser.add_argument("mechanism", help="registry name (svtjax list)")
    parser.add_argument("--epsilon", type=float, required=True,
                        help="the ε the mechanism is run at (its nominal claim)")
    parser.add_argument("--c", type=int, help="cut-off (c, or k for top-k mechanisms)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="another mechanism parameter (repeatable), e.g. monotonic=true, "
                             "query_noise=gaussian(2.0)")
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="time budget, compilation included (default 60)")
    parser.add_argument("--trials", type=int,
                        help="validation trials per side instead of a time budget")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                        help="confidence of the lower bound (default 0.99)")
    parser.add_argument("--delta", type=float,
                        help="δ of the bound (default: the δ of the mechanism's claim)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--exact", action="store_true",
                        help="no sampling: the exact loss over answer vectors on documented "
                             "short neighbouring pairs (svtjax.exact.audit)")
    return parser


def format_result(r: AuditResult) -> str:
    """Human-readable lines for one audit."""
    claimed = "none (not private)" if r.claimed_epsilon is None else f"{r.claimed_epsilon:.4g}"
    lines = [
        f"mechanism        {r.mechanism} {_jsonable(r.params)}",
        f"claim            {r.statement}",
        f"nominal ε        {r.nominal_epsilon}",
        f"proved ε         {claimed}" + (f" at δ = {r.delta:g}" if r.delta else ""),
        f"lower bound      ε ≥ {r.lower_bound:.4f} at {100 * r.confidence:g}% confidence"
        + (f" (δ = {r.delta:g})" if r.delta else ""),
        f"counts           {r.count} vs {r.count_prime} of {r.validation_trials} per side",
        f"trials           {r.trials} in all (selection: {r.num_pairs} pairs x "
        f"{r.selection_trials} x 2, then the leaders refined and confirmed; validation: "
        f"{r.validation_trials} x 2), {r.seconds:.1f} s",
        f"witness          {r.witness.describe() if r.witness else 'none'}",
        f"verdict          {r.verdict}" + ("  (ABOVE THE PROVED ε)" if r.exceeds_proven else ""),
    ]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``svtjax audit``: exit status 0 after an audit (whatever its verdict), 2 on bad input."""
    try:
        args = _build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_:  # --help (0) or argparse's own usage error (2)
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        import svtjax

        extra = {}
        for item in args.param:
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise ValueError(f"cannot parse --param {item!r}; write KEY=VALUE")
            extra[key.strip()] = _parse_value(value)
        if args.trials is not None and args.trials < 1:
            raise ValueError(f"--trials must be >= 1; got {args.trials}")
        if not args.seconds > 0:
            raise ValueError(f"--seconds must be positive; got {args.seconds}")
        params = mechanism_params(args.mechanism, args.epsilon, args.c, extra)
        mech = svtjax.get(args.mechanism, **params)
        if args.exact:  # svtjax.exact: every answer vector by quadrature over ρ, no trials
            from svtjax.exact import audit_report

            print(audit_report(mech, as_json=args.json))
            return 0
        result = audit(mech, trials=args.trials,
                       seconds=None if args.trials is not None else args.seconds,
                       confidence=args.confidence, delta=args.delta, seed=args.seed)
    except (ValueError, TypeError) as err:
        print(f"svtjax audit: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(format_result(result))
    return 0


if __name__ == "__main__":  # pragma: no cover
    import os

    if os.environ.get("SVTJAX_NO_CACHE") != "1":  # as ``svtjax audit`` does
        from svtjax import enable_compilation_cache

        try:
            enable_compilation_cache()
        except OSError as err:
            print(f"svtjax audit: compilation cache disabled ({err})", file=sys.stderr)
    sys.exit(main())
