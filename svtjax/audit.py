"""Empirical privacy auditing: a statistical lower bound on a mechanism's ε.

If a mechanism M is (ε, δ)-DP then for every pair of neighbouring inputs D, D′ (here: query
vectors q, q′ with |q_i − q′_i| ≤ Δ, all of one sign for monotonic mechanisms) and every output
event E,

    P[M(D) ∈ E] ≤ e^ε · P[M(D′) ∈ E] + δ.

Counting E in trials on each side turns this into a lower confidence bound on ε, in one of two
ways:

* **conditional** (pure DP, δ = 0; :func:`conditional_lower_bound`): the validation trials are
  allotted to D and D′ by fair coin flips (the number on D is Binomial(total, 1/2)). Among the
  s trials that land in E, the number from D is then exactly Binomial(s, θ) with
  θ = p/(p + p′), p = P[M(D) ∈ E], p′ = P[M(D′) ∈ E]; ε-DP gives logit θ = log(p/p′) ≤ ε, so a
  one-sided Clopper–Pearson lower bound θ_low gives ε ≥ logit θ_low with probability
  ≥ confidence. One bound at the full level instead of two at half the level each: at 95-99%
  confidence the margin is 35-40% narrower than the two-bound form's for the same trials;
* **clopper-pearson** ((ε, δ) claims; :func:`epsilon_lower_bound`): one-sided Clopper–Pearson
  bounds p_low ≤ p and p′_high ≥ p′ at level (1 − confidence)/2 each (union bound) give
  ε ≥ log((p_low − δ)/p′_high) (Jagielski et al. 2020).

Both are valid for every (ε, δ) the mechanism satisfies, with probability ≥ confidence,
provided E and the pair were fixed before the trials were drawn.

**Output features** (:func:`output_cells`). An event is a union of cells of one of four
low-dimensional summaries of an Outcome, so that it is estimated from many samples per cell and
does not overfit (a union of long exact answer patterns chosen on one sample fails on the
next):

* ``first-two`` — the items of the first and second ⊤ (n: none): the whole output of a
  cut-off-1 SVT, the first two picks of a selection mechanism;
* ``counts`` — the number of ⊤ among the items q′ raises, among those it lowers, and
  elsewhere (capped at 3): the statistic for SVTs without a cut-off (the output ⊥^m ⊤^m of
  Lyu et al.'s Theorem 5, whose loss grows with m);
* ``value`` — the item of the first released value and the bin of that value (bin edges at
  ``VALUE_GRID`` x Δ/ε, the scale of ε-DP noise): released noisy answers and gaps;
* ``halt`` — the number of evaluated positions and of ⊤: when a mechanism stops.

Histograms of these cells are computed on-device inside every compiled chunk
(``svtjax.simulate(..., reduce=)``, memory O(chunk)), so one compiled function per mechanism
serves the whole audit: selection, early dropping and validation.

**Decision rule** (:func:`search`): per pair, family and direction, cells are ranked by a
pessimistic likelihood ratio (one-sided Clopper–Pearson estimates of the two cell
probabilities at ~2.3σ: the Neyman–Pearson order, which DP-Sniper's classifier-based threshold
attack approximates) and the proposed event is the prefix of that ranking (at most
``MAX_CELLS`` cells) whose bound, predicted at the validation size, is largest; the best single
cell and, for values, the best thresholds per item (StatDP's event families) are proposed too.
A rare cell must be seen often to rank high, which regularises the choice towards few,
high-mass cells. Events are proposed on a pair's earlier samples and *scored* on its latest,
independent one, so that no cell wins by chance among the thousands looked at.

**Adaptive allocation** (successive halving): every candidate pair (:func:`candidate_pairs`) is
sampled (twice: one half proposes, the other scores); after each round the better half of the
pairs by score survives, hopeless pairs (whose optimistic score is below the leader's
pessimistic one) are dropped at once, and the survivors are sampled again with twice the
trials, until one pair is left. With a time budget (``seconds``), after compiling and timing
the sampler, ``SEARCH_SHARE`` of the time goes to the rounds (in equal shares) and the rest to
validation, each sized from the measured trial rate. The **validation** draws fresh trials (new
seeds) of the one chosen (pair, event), so the bound carries no selection bias and needs no
multiple-testing correction. ``progress`` records the leader's predicted bound after every
round, then the validated bound: bound versus seconds.

**Claims** (:func:`claim`): ``nominal_epsilon`` is the ε the mechanism is run at (what its
paper claims: Lee & Clifton's Algorithm 4 claims ε), ``proven_epsilon`` what ``privacy()``
proves (None when nothing finite is proved; for a guarantee finite only for δ > 0 and a
mechanism without ``delta``, it is taken at ``DEFAULT_DELTA`` and the bound uses that δ).
``exceeds_nominal`` flags a violation of the claim; ``exceeds_proven`` should never be true for
a correct kernel (except with probability 1 − confidence).

References:
  Lyu, Su, Li. Understanding the Sparse Vector Technique for Differential Privacy. PVLDB 10(6),
  2017, Algorithms 1-6, Theorems 3-5.
  Ding, Wang, Wang, Zhang, Kifer. Detecting Violations of Differential Privacy. CCS 2018
  (StatDP: the input patterns, event search on one sample, a test on a fresh one).
  Bichsel, Steffen, Bogunovic, Vechev. DP-Sniper: Black-Box Discovery of Differential Privacy
  Violations using Classifiers. IEEE S&P 2021 (threshold attacks on a learned ratio; the
  SVT1-SVT6 benchmark at ε = 0.1, c = 1).
  Jagielski, Ullman, Oprea. Auditing Differentially Private Machine Learning: How Private is
  Private SGD? NeurIPS 2020 (Clopper–Pearson bounds on ε and the (ε, δ) form).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

__all__ = ["AuditFailure", "Pair", "Event", "Bound", "Witness", "AuditResult", "SearchResult",
           "SimulationSampler", "epsilon_lower_bound", "conditional_lower_bound",
           "candidate_pairs", "check_pair", "output_cells", "family_shapes", "value_edges",
           "count_event", "audit_pair", "search", "audit", "claim", "mechanism_params",
           "format_result", "main", "DEFAULT_CONFIDENCE", "DEFAULT_DELTA", "DEFAULT_CUTOFF",
           "DEFAULT_SECONDS", "NUM_QUERIES", "FAMILIES", "VALUE_GRID", "MAX_CELLS",
           "SEARCH_SHARE", "MAX_TRIALS"]

DEFAULT_CONFIDENCE = 0.99
DEFAULT_DELTA = 1e-6
"""δ at which a guarantee that is finite only for δ > 0 is checked, and given to a mechanism
that cannot be calibrated without one."""
DEFAULT_CUTOFF = 2
"""Cut-off (``c``, or ``k``) of an audited mechanism when none is given."""
DEFAULT_SECONDS = 60.0
NUM_QUERIES = 10
"""Length every candidate pair is padded to (one compiled kernel for all pairs); DP-Sniper's
SVT inputs have 10 queries too."""
PAD = -1e9
"""Padding query value (times Δ): far below any threshold, so a padded query is always ⊥ (or
never picked); identical in q and q′."""
CHUNK = 2048
"""Trials per compiled chunk (fixed: one compile per mechanism). Small, so that the first
halving rounds (a few thousand trials per pair) are not padded; on the 2-core CPU larger
chunks were not faster for streams of ``NUM_QUERIES``."""
FAMILIES = ("first-two", "counts", "value", "halt")
"""The output summaries an event is a union of cells of (:func:`output_cells`)."""
VALUE_GRID = (-16.0, -8.0, -4.0, -2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0,
              16.0)
"""Bin edges of released values, in units of Δ/ε (the scale of an ε-DP Laplace noise)."""
REST_CAP = 3
"""``counts`` caps the ⊤ count on items the pair does not move at this value."""
MAX_CELLS = 64
"""Most cells one event may be a union of."""
PROPOSALS = 24
"""Events each pair proposes per round (from its earlier samples) for scoring on its fresh
one."""
SEARCH_SHARE = 0.25
"""With a time budget: the share of the time left after compilation given to the search; the
rest goes to validation, whose size sets the margin of the bound."""
_INT32_MAX = 2**31 - 1  # svtjax._validate.INT32_MAX (not imported here: it imports jax)
MAX_TRIALS = _INT32_MAX // 2
"""Most validation trials per side: with δ = 0 one side may get up to twice as many (a fair coin
split of both sides' runs), and one ``svtjax.simulate`` call runs at most 2**31 − 1 trials."""
_PESSIMISM = 0.16  # one-sided 1σ: selection scores use Clopper–Pearson estimates at this level
_RANK_LEVEL = 0.01  # ~2.3σ: cells are ranked by likelihood-ratio estimates at this level
_CHECK_LEVEL = 0.5  # point estimates: on fresh samples, the expected validation bound (a
# pessimistic score would favour frequent, weaker events over rare, stronger ones)


# =============================================================================================
# Bounds
# =============================================================================================

def _cp_lower(k, n, alpha):
    """One-sided (1 − alpha) Clopper–Pearson lower bound on p from k of n (k may be real)."""
    from scipy import special  # imported where used: `import svtjax` stays fast

    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    safe = np.where(k > 0, k, 1.0)
    return np.where(k > 0, special.betaincinv(safe, np.maximum(n - safe + 1.0, 1e-300), alpha),
                    0.0)


def _cp_upper(k, n, alpha):
    """One-sided (1 − alpha) Clopper–Pearson upper bound on p from k of n (k may be real)."""
    from scipy import special  # imported where used: `import svtjax` stays fast

    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    safe = np.where(k < n, k, n - 1.0)
    return np.where(k < n, special.betaincinv(safe + 1.0, np.maximum(n - safe, 1e-300),
                                              1.0 - alpha), 1.0)


def _log_ratio(p_low, p_high, delta):
    """log((p_low − δ)/p_high), −inf where p_low ≤ δ."""
    num = np.asarray(p_low, dtype=float) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num > 0, np.log(np.maximum(num, 1e-300) / p_high), -np.inf)


def _logit_lower(k, s, alpha):
    """logit of the one-sided (1 − alpha) Clopper–Pearson lower bound on a share from k of s
    (−inf where k = 0)."""
    theta = _cp_lower(k, s, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(theta > 0, np.log(np.maximum(theta, 1e-300)) - np.log1p(-theta),
                        -np.inf)


@dataclasses.dataclass(frozen=True)
class Bound:
    """A lower confidence bound on ε and the counts behind it.

    With probability ≥ ``confidence`` (over the trials) every (ε, ``delta``) the mechanism
    satisfies has ε ≥ ``epsilon``.

    Attributes:
      epsilon: the bound (≥ 0).
      count, trials: E happened ``count`` times in ``trials`` runs on D.
      count_prime, trials_prime: the same on D′.
      method: "conditional" (:func:`conditional_lower_bound`) or "clopper-pearson"
        (:func:`epsilon_lower_bound`).
      p_low, p_prime_high: the two Clopper–Pearson bounds ("clopper-pearson" only).
      share_low: the lower bound on P[D | E] under fair allocation ("conditional" only).
    """

    epsilon: float
    count: int
    trials: int
    count_prime: int
    trials_prime: int
    confidence: float
    delta: float
    method: str
    p_low: Optional[float] = None
    p_prime_high: Optional[float] = None
    share_low: Optional[float] = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check_counts(count, trials, count_prime, trials_prime, minimum_trials: int) -> None:
    for name, k, n in (("count", count, trials), ("count_prime", count_prime, trials_prime)):
        _check_int(name.replace("count", "trials"), n, minimum_trials)
        _check_int(name, k, 0)
        if k > n:
            raise ValueError(f"{name} ({k}) cannot exceed its number of trials ({n})")


def epsilon_lower_bound(count: int, trials: int, count_prime: int, trials_prime: int, *,
                        confidence: float = DEFAULT_CONFIDENCE, delta: float = 0.0) -> Bound:
    """The largest ε with ``p_low ≥ e^ε p′_high + δ`` (0 if none): a lower confidence bound.

    Args:
      count, trials: E happened ``count`` times in ``trials`` runs on D.
      count_prime, trials_prime: the same on D′ (independent runs; any sizes fixed in advance).
      confidence: joint level of the two one-sided Clopper–Pearson bounds (each at
        (1 − confidence)/2; union bound).
      delta: δ of the (ε, δ) form (0: pure DP).

    Returns:
      A :class:`Bound` with ``method="clopper-pearson"``.

    Raises:
      ValueError: counts outside [0, trials], trials < 1, confidence outside (0, 1), δ outside
        [0, 1).
    """
    _check_counts(count, trials, count_prime, trials_prime, 1)
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    alpha = (1.0 - confidence) / 2.0
    p_low = float(_cp_lower(count, trials, alpha))
    p_high = float(_cp_upper(count_prime, trials_prime, alpha))
    eps = max(0.0, float(_log_ratio(p_low, p_high, delta)))
    return Bound(eps, int(count), int(trials), int(count_prime), int(trials_prime), confidence,
                 delta, "clopper-pearson", p_low=p_low, p_prime_high=p_high)


def conditional_lower_bound(count: int, trials: int, count_prime: int, trials_prime: int, *,
                            confidence: float = DEFAULT_CONFIDENCE) -> Bound:
    """Pure-DP lower bound on ε from the share of E's occurrences that came from D.

    Valid when each of the ``trials + trials_prime`` runs was sent to D or D′ by an independent
    fair coin (so ``trials`` ~ Binomial(total, 1/2), drawn independently of the runs, as
    :func:`audit` and :func:`audit_pair` do). Then, given the s = count + count_prime runs in E,
    count ~ Binomial(s, θ) exactly, with θ = p/(p + p′); an ε-DP mechanism has
    log(p/p′) = logit θ ≤ ε, so the one-sided Clopper–Pearson bound θ_low at level
    1 − confidence gives ε ≥ logit θ_low with probability ≥ confidence. Not for δ > 0 (use
    :func:`epsilon_lower_bound`).

    Args:
      count, trials: E happened ``count`` times in ``trials`` runs on D (trials may be 0).
      count_prime, trials_prime: the same on D′.
      confidence: the level of the bound.

    Returns:
      A :class:`Bound` with ``method="conditional"`` (ε = 0 when count is 0).

    Raises:
      ValueError: counts outside [0, trials], confidence outside (0, 1).
    """
    _check_counts(count, trials, count_prime, trials_prime, 0)
    confidence = _check_confidence(confidence)
    share = float(_cp_lower(count, count + count_prime, 1.0 - confidence)) if count else 0.0
    eps = max(0.0, float(_logit_lower(count, count + count_prime, 1.0 - confidence))
              if count else 0.0)
    return Bound(eps, int(count), int(trials), int(count_prime), int(trials_prime), confidence,
                 0.0, "conditional", share_low=share)


def _predicted(x, y, n, n_val, alpha, delta, optimistic=False, level=None):
    """The bound expected from ``n_val`` validation trials per side for events seen x and y
    times in ``n`` trials per side: pessimistic (optimistic: the reverse) one-sided
    Clopper–Pearson estimates of the two probabilities at ``level`` (default 1σ), scaled to
    ``n_val``; at level 1/2, the point estimates (k + 1/2)/(n + 1)."""
    level = _PESSIMISM if level is None else level
    if level == 0.5:
        p1 = (np.asarray(x, float) + 0.5) / (n + 1.0)
        p2 = (np.asarray(y, float) + 0.5) / (n + 1.0)
    elif optimistic:
        p1, p2 = _cp_upper(x, n, level), _cp_lower(y, n, level)
    else:
        p1, p2 = _cp_lower(x, n, level), _cp_upper(y, n, level)
    if delta == 0.0:
        return _logit_lower(p1 * n_val, (p1 + p2) * n_val, alpha)
    k1 = np.minimum(p1 * n_val, n_val)
    k2 = np.minimum(p2 * n_val, n_val - 1e-9)
    return _log_ratio(_cp_lower(k1, n_val, alpha / 2), _cp_upper(k2, n_val, alpha / 2), delta)


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

    def groups(self) -> np.ndarray:
        """int32[n]: 0 where q′ > q, 1 where q′ < q, 2 where they are equal (``counts``)."""
        d = np.asarray(self.queries_prime, float) - np.asarray(self.queries, float)
        return np.where(d > 0, 0, np.where(d < 0, 1, 2)).astype(np.int32)

    def to_dict(self) -> dict[str, Any]:
        t = np.asarray(self.thresholds, dtype=float)
        return {"name": self.name, "queries": [float(x) for x in self.queries],
                "queries_prime": [float(x) for x in self.queries_prime],
                "thresholds": float(t) if t.ndim == 0 else [float(x) for x in t]}

    def describe(self) -> str:
        return (f"{self.name}: q = {_short(self.queries)}, q′ = {_short(self.queries_prime)}, "
                f"T = {_short(np.atleast_1d(self.thresholds))}")


def _short(x) -> str:
    """``[0, 0, 1] + 7×-1e+09`` (the padding collapsed)."""
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


def _unit(mech) -> float:
    """Δ/ε at the mechanism's nominal ε (Δ when it has none): the scale of its noise."""
    eps = getattr(mech, "epsilon", None)
    try:
        eps = float(eps)
    except (TypeError, ValueError):
        return _sensitivity(mech)
    return _sensitivity(mech) / eps if math.isfinite(eps) and eps > 0 else _sensitivity(mech)


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
                         "all move in one direction (q' >= q everywhere or q' <= q everywhere); "
                         "the pair mixes signs")
    return q, qp


def candidate_pairs(mech, *, num_queries: int = NUM_QUERIES) -> list[Pair]:
    """Input pairs from the SVT counterexample literature, threshold 0, padded with ``PAD·Δ``.

    Query moves are ±Δ; query levels are in units of u = Δ/ε (the noise scale of an ε-DP SVT,
    :func:`value_edges`), so that the same pairs reach the tails of the noise at any ε:

    * Lyu et al. 2017 Theorem 4: q = (0, Δ), q′ = (Δ, 0);
    * Theorem 3: q = (a^m, b), q′ = ((a + Δ)^m, b − Δ) for m in 5, 9 and (a, b) in (0, Δ),
      (0, u/2), (−u/2, u/2), (u/2, u): m ⊥ raise the noisy threshold, then one ⊤ pays twice;
    * Theorem 5: q = 0^{2m}, q′ = (Δ^m, (−Δ)^m), m = 2, 5: the loss grows with the ⊤ count;
    * for monotonic mechanisms, a monotone Theorem 3: q = (a^m, b), q′ = ((a + Δ)^m, b),
      m = 4, 9, the same levels;
    * StatDP's patterns (Ding et al. 2018; DP-Sniper's SVT inputs): one above, one below, one
      above rest below, one below rest above, all above, all below, x-shape;
    * for selection mechanisms: all equal but the last, alternating, alternating signs.

    Pairs that move queries both ways are dropped for monotonic mechanisms; both directions of
    every event are searched, so a pair's mirror is not listed.
    """
    n = int(num_queries)
    if n < 2:
        raise ValueError(f"num_queries must be at least 2; got {num_queries}")
    sens = _sensitivity(mech)
    u = _unit(mech)
    raw: list[tuple[str, list, list]] = []
    levels = ((0.0, sens, "a=0 b=Δ"), (0.0, u / 2, "a=0 b=u/2"),
              (-u / 2, u / 2, "a=-u/2 b=u/2"), (u / 2, u, "a=u/2 b=u"))
    raw.append(("lyu17-thm4", [0.0, sens], [sens, 0.0]))
    for a, b, label in levels:
        for m in (5, 9):
            raw.append((f"lyu17-thm3 m={m} {label}", [a] * m + [b],
                        [a + sens] * m + [b - sens]))
    for m in (2, 5):
        raw.append((f"lyu17-thm5 m={m}", [0.0] * (2 * m), [sens] * m + [-sens] * m))
    if _monotonic(mech):  # Theorem 3's pairs move both ways: raise the prefix only
        for a, b, label in levels:
            for m in (4, 9):
                raw.append((f"monotone-thm3 m={m} {label}", [a] * m + [b],
                            [a + sens] * m + [b]))
    h = n // 2
    zeros = [0.0] * n
    raw += [
        ("one-above", zeros, [sens] + [0.0] * (n - 1)),
        ("one-below", zeros, [-sens] + [0.0] * (n - 1)),
        ("one-above-rest-below", zeros, [sens] + [-sens] * (n - 1)),
        ("one-below-rest-above", zeros, [-sens] + [sens] * (n - 1)),
        ("all-above", zeros, [sens] * n),
        ("all-below", zeros, [-sens] * n),
        ("x-shape", [sens] * h + [0.0] * (n - h), [0.0] * h + [sens] * (n - h)),
        ("all-equal-but-last", zeros, [0.0] * (n - 1) + [sens]),
        ("alternating", [0.0, sens] * (n // 2), [sens, 0.0] * (n // 2)),
        ("alternating-signs", zeros, [sens, -sens] * (n // 2)),
    ]
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
        pad = [PAD * sens] * (n - len(q))
        pairs.append(Pair(name, np.asarray(q + pad, float), np.asarray(qp + pad, float), 0.0))
    return pairs


# =============================================================================================
# Output features: cells of four summaries, on the host and on-device
# =============================================================================================

def value_edges(mech) -> np.ndarray:
    """Bin edges of released values for ``mech``: ``VALUE_GRID`` x Δ/ε (threshold 0)."""
    return np.asarray(VALUE_GRID, float) * _unit(mech)


def family_shapes(n: int, length: int, num_edges: int = len(VALUE_GRID)
                  ) -> dict[str, tuple[int, ...]]:
    """The cell grid of each family for ``n`` queries and a stream of ``length`` positions."""
    return {"first-two": (n + 1, n + 1), "counts": (n + 1, n + 1, REST_CAP + 1),
            "value": (n + 1, num_edges + 2), "halt": (length + 1, n + 1)}


def _cells(xp, answers, items, values, groups, edges, searchsorted):
    """The shared definition (``xp`` is numpy or jax.numpy): flat cell index per family."""
    n = groups.shape[0]
    length = answers.shape[1]
    num_edges = edges.shape[0]
    top = answers == 1
    pos = xp.arange(length)
    itc = xp.clip(items, 0, n - 1)
    none = xp.asarray(length)

    def first_where(mask):
        return xp.min(xp.where(mask, pos[None, :], none), axis=1)

    def item_at(p):
        got = xp.take_along_axis(itc, xp.minimum(p, length - 1)[:, None], axis=1)[:, 0]
        return xp.where(p < length, got, n)

    first = first_where(top)
    second = first_where(top & (pos[None, :] > first[:, None]))
    g = groups[itc]
    up = xp.minimum(xp.sum(top & (g == 0), axis=1), n)
    down = xp.minimum(xp.sum(top & (g == 1), axis=1), n)
    rest = xp.minimum(xp.sum(top & (g == 2), axis=1), REST_CAP)
    released = first_where(~xp.isnan(values))
    value = xp.take_along_axis(values, xp.minimum(released, length - 1)[:, None], axis=1)[:, 0]
    bins = xp.where(released < length, searchsorted(edges, value), num_edges + 1)
    evaluated = xp.sum(answers >= 0, axis=1)
    tops = xp.minimum(xp.sum(top, axis=1), n)
    return {"first-two": item_at(first) * (n + 1) + item_at(second),
            "counts": (up * (n + 1) + down) * (REST_CAP + 1) + rest,
            "value": item_at(released) * (num_edges + 2) + bins,
            "halt": evaluated * (n + 1) + tops}


def output_cells(answers, items, values, *, groups, edges) -> dict[str, np.ndarray]:
    """The cell of each of N outcomes in each family (host numpy; the on-device histograms
    count the same cells).

    Args:
      answers, items, values: [N, L] Outcome fields (1 ⊤, 0 ⊥, −1 not evaluated).
      groups: int[n] per query item: 0 where the pair's q′ > q, 1 where q′ < q, 2 elsewhere.
      edges: the sorted value bin edges (bin b holds edges[b−1] ≤ v < edges[b]).

    Returns:
      {family: int64[N]}: flat indices into ``family_shapes(n, L, len(edges))``.
    """
    a = np.asarray(answers)
    v = np.asarray(values)
    e = np.asarray(edges, dtype=v.dtype)
    out = _cells(np, a, np.asarray(items), v, np.asarray(groups), e,
                 lambda edges_, x: np.searchsorted(edges_, x, side="right"))
    return {k: np.asarray(c, np.int64) for k, c in out.items()}


def _histograms(groups, edges, out):
    """Per-trial one-hot cells of every family (``simulate`` sums them: the histograms)."""
    import jax.numpy as jnp

    n = groups.shape[0]
    length = out.answers.shape[1]
    shapes = family_shapes(n, length, edges.shape[0])
    cells = _cells(jnp, out.answers, out.items, out.values, groups, edges.astype(out.values.dtype),
                   lambda edges_, x: jnp.searchsorted(edges_, x, side="right"))
    return tuple((cells[f][:, None] == jnp.arange(math.prod(shapes[f]))[None, :]
                  ).astype(jnp.int32) for f in FAMILIES)


# =============================================================================================
# Events
# =============================================================================================

def _items_text(items) -> str:
    items = [int(i) for i in items]
    if not items:
        return "no items"
    if items == list(range(items[0], items[-1] + 1)) and len(items) > 2:
        return f"items {items[0]}-{items[-1]}"
    return ("item " if len(items) == 1 else "items ") + ",".join(map(str, items))


@dataclasses.dataclass(frozen=True, eq=False)
class Event:
    """An output event: the Outcome's cell in ``family`` is one of ``cells``.

    Attributes:
      family: one of ``FAMILIES``.
      cells: flat indices into the family's grid (``family_shapes``), 1..``MAX_CELLS``.
      shape: that grid.
      groups: the pair's item groups the ``counts`` cells refer to (0: raised by q′, 1:
        lowered, 2: unmoved), as counted when the event was chosen.
      edges: the value bin edges the ``value`` cells refer to.
    """

    family: str
    cells: tuple
    shape: tuple
    groups: Optional[tuple] = None
    edges: Optional[tuple] = None

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"unknown event family {self.family!r}; families are "
                             f"{', '.join(FAMILIES)}")
        shape = tuple(int(s) for s in self.shape)
        cells = tuple(sorted({int(c) for c in np.atleast_1d(self.cells)}))
        if not 1 <= len(cells) <= MAX_CELLS:
            raise ValueError(f"an event is a union of 1..{MAX_CELLS} cells; got {len(cells)}")
        if cells[0] < 0 or cells[-1] >= math.prod(shape):
            raise ValueError(f"event cells must lie in [0, {math.prod(shape)}) for the grid "
                             f"{shape}; got {cells[0]}..{cells[-1]}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "cells", cells)
        if self.groups is not None:
            object.__setattr__(self, "groups", tuple(int(g) for g in self.groups))
        if self.edges is not None:
            object.__setattr__(self, "edges", tuple(float(e) for e in self.edges))

    def count(self, histograms: Mapping[str, np.ndarray]) -> int:
        """How many trials of a histogram (``SimulationSampler.histograms``) lie in the event."""
        h = np.asarray(histograms[self.family]).ravel()
        if h.size != math.prod(self.shape):
            raise ValueError(f"a {self.family} histogram of {h.size} cells does not match the "
                             f"event's grid {self.shape}")
        return int(h[list(self.cells)].sum())

    def contains(self, cells: Mapping[str, np.ndarray]) -> np.ndarray:
        """bool[N]: which outcomes (their :func:`output_cells`) lie in the event."""
        return np.isin(np.asarray(cells[self.family]), self.cells)

    def _cell_text(self, cell: int) -> str:
        idx = np.unravel_index(cell, self.shape)
        none = self.shape[0] - 1

        def item(i):
            return "none" if i == none else str(int(i))

        if self.family == "first-two":
            return f"({item(idx[0])}, {item(idx[1])})"
        if self.family == "counts":
            rest = f"≥{REST_CAP}" if idx[2] == REST_CAP else str(int(idx[2]))
            return f"({int(idx[0])}, {int(idx[1])}, {rest})"
        if self.family == "value":
            b = int(idx[1])
            e = self.edges or ()
            if b == len(e) + 1:
                return "(none)"
            lo = "-inf" if b == 0 else f"{e[b - 1]:g}"
            hi = "inf" if b == len(e) else f"{e[b]:g}"
            return f"({item(idx[0])}, [{lo}, {hi}))"
        return f"({int(idx[0])}, {int(idx[1])})"

    def _axes(self) -> str:
        if self.family == "first-two":
            return "(item of the 1st ⊤, item of the 2nd ⊤)"
        if self.family == "counts":
            g = np.asarray(self.groups if self.groups is not None else ())
            up = _items_text(np.flatnonzero(g == 0))
            down = _items_text(np.flatnonzero(g == 1))
            return f"(#⊤ on {up}, #⊤ on {down}, #⊤ elsewhere)"
        if self.family == "value":
            return "(item of the first released value, its bin)"
        return "(positions evaluated, #⊤)"

    def describe(self, limit: int = 6) -> str:
        texts = [self._cell_text(c) for c in self.cells[:limit]]
        more = f", … {len(self.cells)} cells" if len(self.cells) > limit else ""
        if len(self.cells) == 1:
            return f"{self._axes()} = {texts[0]}"
        return f"{self._axes()} ∈ {{{', '.join(texts)}{more}}}"

    def to_dict(self) -> dict[str, Any]:
        return {"description": self.describe(), "family": self.family,
                "cells": [[int(i) for i in np.unravel_index(c, self.shape)] for c in self.cells],
                "shape": list(self.shape),
                "groups": list(self.groups) if self.groups is not None else None,
                "edges": list(self.edges) if self.edges is not None else None}


# =============================================================================================
# Samplers: where histograms come from
# =============================================================================================

class SimulationSampler:
    """Histograms of output cells of a mechanism, through ``svtjax.simulate(..., reduce=)``.

    The cells of every trial are counted inside each compiled chunk (memory O(chunk)); the
    pair's item groups and the value bin edges are traced arguments of the reducer and the
    chunk size is fixed, so a mechanism compiles once for the whole audit.

    Any object with a ``histograms`` method of the same signature (and ``chunk_size``) can
    stand in for it in :func:`search`; the tests use exact samplers of mechanisms with a known ε.
    """

    def __init__(self, mech, *, chunk_size: int = CHUNK, edges=None):
        self.mech = mech
        self.chunk_size = int(chunk_size)
        self.edges = np.asarray(value_edges(mech) if edges is None else edges, dtype=float)

    def histograms(self, queries, thresholds, groups, trials: int, seed: int
                   ) -> dict[str, np.ndarray]:
        """{family: int64[cells]}: how many of ``trials`` runs on ``queries`` fall in each cell
        (``groups`` as in :func:`output_cells`)."""
        import jax
        import jax.numpy as jnp

        import svtjax

        q = jnp.asarray(queries)
        if not jnp.issubdtype(q.dtype, jnp.floating):
            q = q.astype(jnp.zeros((), float).dtype)
        reduce = jax.tree_util.Partial(_histograms, jnp.asarray(groups, jnp.int32),
                                       jnp.asarray(self.edges, q.dtype))
        total = svtjax.simulate(self.mech, q, thresholds, trials=int(trials), seed=int(seed),
                                chunk_size=self.chunk_size, reduce=reduce, progress=False)
        return {f: np.asarray(h, np.int64).ravel()
                for f, h in zip(FAMILIES, jax.device_get(total))}


def _shapes_of(hist: Mapping[str, np.ndarray], n: int, num_edges: int
               ) -> dict[str, tuple[int, ...]]:
    length = hist["halt"].size // (n + 1) - 1
    shapes = family_shapes(n, length, num_edges)
    for f in FAMILIES:
        if hist[f].size != math.prod(shapes[f]):
            raise ValueError(f"the sampler's {f} histogram has {hist[f].size} cells; "
                             f"expected {shapes[f]}")
    return shapes


# =============================================================================================
# Selection: the best event of a pair from its histograms
# =============================================================================================

@dataclasses.dataclass(frozen=True)
class _Candidate:
    score: float  # predicted validation bound
    event: Event
    swap: bool  # True: E is more likely on q′ (the pair is reported swapped)
    count: int  # selection counts on the favoured side and the other
    count_prime: int


def _best_of(scores: np.ndarray) -> int:
    return int(np.argmax(np.where(np.isfinite(scores), scores, -np.inf)))


def _candidates(h1, h2, n_sel: int, n_val: int, alpha: float, delta: float, shapes,
                groups, edges) -> list[_Candidate]:
    """Events proposed from one sample per side, best predicted bound first.

    Per family and direction: the best prefix of the cells ranked by likelihood ratio
    (Neyman–Pearson) and the best single cell. Ratios and predicted bounds here use one-sided
    Clopper–Pearson estimates at the strict level ``_RANK_LEVEL``, so that a rare cell must be
    seen often to rank high among hundreds (the winner's curse of the proposal stage). For
    ``value``, also the best thresholds per item (``v < edge`` or ``v ≥ edge`` as unions of
    consecutive bins: the event family of StatDP's and DP-Sniper's threshold tests, which does
    not chase single noisy bins).
    """
    found: list[_Candidate] = []

    def add(family, cells, swap, x, y, score, extra):
        if np.isfinite(score):
            found.append(_Candidate(float(score), Event(family, cells, shapes[family], **extra),
                                    swap, int(x), int(y)))

    for family in FAMILIES:
        extra = {"groups": tuple(groups)} if family == "counts" else {}
        if family == "value":
            extra = {"edges": tuple(edges)}
        for swap in (False, True):
            x, y = (h2[family], h1[family]) if swap else (h1[family], h2[family])
            with np.errstate(divide="ignore"):
                ratio = (np.log(_cp_lower(x, n_sel, _RANK_LEVEL))
                         - np.log(_cp_upper(y, n_sel, _RANK_LEVEL)))
            order = np.argsort(-ratio, kind="stable")[:MAX_CELLS]
            order = order[np.isfinite(ratio[order])]
            if order.size:
                xs, ys = np.cumsum(x[order]), np.cumsum(y[order])
                scores = _predicted(xs, ys, n_sel, n_val, alpha, delta, level=_RANK_LEVEL)
                k = _best_of(scores)
                add(family, order[:k + 1], swap, xs[k], ys[k], scores[k], extra)
            single = _predicted(x, y, n_sel, n_val, alpha, delta, level=_RANK_LEVEL)
            j = _best_of(single)
            add(family, [j], swap, x[j], y[j], single[j], extra)
            if family == "value":
                found.extend(_thresholds(x, y, n_sel, n_val, alpha, delta, shapes[family], swap,
                                         extra))
    found.sort(key=lambda c: -c.score)
    seen, out = set(), []
    for c in found:
        key = (c.event.family, c.event.cells, c.swap)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _thresholds(x, y, n_sel, n_val, alpha, delta, shape, swap, extra, per_op=3):
    """The ``per_op`` best events {item i released first, its value < edge} and
    {…, value ≥ edge} (bins, not the "none" column)."""
    rows, cols = shape
    gx = x.reshape(shape)[:, :cols - 1]
    gy = y.reshape(shape)[:, :cols - 1]
    out = []
    for op in ("<", ">="):
        if op == "<":
            cx, cy = np.cumsum(gx, axis=1), np.cumsum(gy, axis=1)
        else:
            cx = np.cumsum(gx[:, ::-1], axis=1)[:, ::-1]
            cy = np.cumsum(gy[:, ::-1], axis=1)[:, ::-1]
        scores = _predicted(cx, cy, n_sel, n_val, alpha, delta, level=_RANK_LEVEL)
        flat = np.where(np.isfinite(scores), scores, -np.inf).ravel()
        for idx in np.argsort(-flat, kind="stable")[:per_op]:
            if not np.isfinite(flat[idx]):
                break
            i, b = divmod(int(idx), cols - 1)
            bins = np.arange(0, b + 1) if op == "<" else np.arange(b, cols - 1)
            out.append(_Candidate(float(flat[idx]), Event("value", i * cols + bins, shape,
                                                          **extra),
                                  swap, int(cx[i, b]), int(cy[i, b])))
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
    """What :func:`search` found.

    Attributes:
      bound: the validated bound (0 with ``witness`` None when no event was seen more often
        on one side than on the other).
      witness: the pair (oriented so that E is likelier on ``pair.queries``) and the event.
      predicted: the bound the selection predicted for the validation.
      selection_trials: trials of the search (both sides, all rounds).
      validation_trials: trials of the validation (both sides).
      num_pairs: candidate pairs searched.
      seconds: wall-clock time, compilation included.
      progress: one entry per search round and one for the validation: the elapsed seconds,
        the trials so far, the pairs still in the race and the leader's predicted (then the
        validated) bound.
      compile_seconds: the first sampler call (compilation and one chunk).
      trials_per_second: the sampler's measured rate after it.
    """

    bound: Bound
    witness: Optional[Witness]
    predicted: float
    selection_trials: int
    validation_trials: int
    num_pairs: int
    seconds: float
    progress: tuple = ()
    compile_seconds: float = 0.0
    trials_per_second: float = 0.0

    @property
    def total_trials(self) -> int:
        return self.selection_trials + self.validation_trials


def _subseed(seed: int, *tags: int) -> int:
    """The seed of one phase (``tags``) of an audit with ``seed``: both 32-bit halves of the
    seed are the entropy and the tags the spawn key, so every (seed, tags) has its own stream
    (seeds s and s + 2**32 differ); 64 bits out, as ``svtjax.simulate`` accepts."""
    seed = int(seed)
    return int(np.random.SeedSequence([seed & 0xFFFFFFFF, seed >> 32], spawn_key=tags)
               .generate_state(1, np.uint64)[0])


class _Meter:
    """Runs the sampler and measures its trial rate, leaving out the first (compiling) call."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.calls = 0
        self.trials = 0
        self.busy = 0.0
        self.compile_seconds = 0.0

    def __call__(self, pair: Pair, side: int, groups, trials: int, seed: int):
        queries = pair.queries_prime if side else pair.queries
        t0 = time.perf_counter()
        hist = self.sampler.histograms(queries, pair.thresholds, groups, int(trials), int(seed))
        dt = time.perf_counter() - t0
        if self.calls == 0:
            self.compile_seconds = dt
        else:
            self.trials += int(trials)
            self.busy += dt
        self.calls += 1
        return hist

    @property
    def rate(self) -> float:
        """Trials per second over every call after the first (a lower estimate before any)."""
        if self.trials and self.busy > 0:
            return self.trials / self.busy
        return 1.0 / max(self.compile_seconds, 1e-3)


def _check_seconds(seconds: Any) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float, np.integer,
                                                             np.floating)):
        raise TypeError(f"seconds must be a number of seconds > 0, e.g. 60; got {seconds!r}")
    if not (math.isfinite(float(seconds)) and float(seconds) > 0):
        raise ValueError(f"seconds must be a finite number of seconds > 0, e.g. 60; got "
                         f"{seconds}")
    return float(seconds)


def default_search_trials(trials: int) -> int:
    """First-round search trials per side per pair (each half) for ``trials`` validation
    trials per side: with the default pairs the halving rounds then cost about half as many
    trials as the validation (and at least one chunk per call)."""
    return max(CHUNK, trials // 256 // CHUNK * CHUNK)


def _merge(a, b):
    """The sum of two (histograms on q, histograms on q′, trials per side) samples."""
    if a is None:
        return b
    return ({f: a[0][f] + b[0][f] for f in FAMILIES}, {f: a[1][f] + b[1][f] for f in FAMILIES},
            a[2] + b[2])


def _checked(proposal, check, n_val, alpha, delta, shapes, groups, edges):
    """Candidates proposed on one sample, scored on an independent one (best first):
    (check score, candidate, counts on the favoured side and the other in ``check``)."""
    h1, h2, n = proposal
    out = []
    for cand in _candidates(h1, h2, n, n_val, alpha, delta, shapes, groups, edges)[:PROPOSALS]:
        c1, c2, m = check
        x = cand.event.count(c2 if cand.swap else c1)
        y = cand.event.count(c1 if cand.swap else c2)
        score = float(_predicted(x, y, m, n_val, alpha, delta, level=_CHECK_LEVEL))
        out.append((score if math.isfinite(score) else -math.inf, cand, x, y))
    out.sort(key=lambda t: -t[0])
    return out


def search(sampler, pairs: Sequence[Pair], *, trials: Optional[int] = None,
           search_trials: Optional[int] = None, seconds: Optional[float] = None,
           confidence: float = DEFAULT_CONFIDENCE, delta: float = 0.0, seed: int = 0,
           log: Optional[Callable[[str], None]] = None) -> SearchResult:
    """Successive halving over pairs, one event chosen, validated on fresh trials.

    Every round draws a fresh sample of each surviving pair. Events are *proposed* on the
    pair's earlier samples (:func:`_candidates`: per family and direction, the best
    Neyman–Pearson prefix of cells and the best single cell) and *scored* on the fresh one, so
    that a cell that looked good by chance among thousands does not win (the first round is
    drawn as two halves: one proposes, one scores). The better half of the pairs by score
    survives (and none whose optimistic score is below the leader's), with twice the trials,
    until one is left (or the search's time is up); its best-scoring event is validated on
    new trials.

    Args:
      sampler: where histograms come from (:class:`SimulationSampler` or a stand-in).
      pairs: candidate neighbouring pairs (already validated), all of one length.
      trials: validation trials per side (for δ = 0, the two sides' numbers are drawn as
        Binomial(2·trials, 1/2), :func:`conditional_lower_bound`).
      search_trials: first-round trials per side per pair (default
        :func:`default_search_trials`; each half gets this many); each later round doubles it.
      seconds: a wall-clock budget instead of ``trials`` (compilation included): after the
        first round, ``SEARCH_SHARE`` of the time left goes to the rounds, the rest to
        validation, sized from the measured trial rate.
      confidence, delta: of the bound (δ = 0: the conditional bound; else Clopper–Pearson).
      seed: an integer in [0, 2**64), as for ``svtjax.simulate`` (all 64 bits used); every
        phase uses seeds derived from it (no two calls share one).
      log: progress lines (default: none).

    Returns:
      A :class:`SearchResult`.

    Raises:
      ValueError / TypeError: no pairs, pairs of different lengths, neither or both of
        ``trials`` and ``seconds``, bad sizes, confidence or δ.
    """
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    alpha = 1.0 - confidence
    if not pairs:
        raise ValueError("search needs at least one candidate pair")
    if len({np.asarray(p.queries).size for p in pairs}) != 1:
        raise ValueError("all candidate pairs must have the same number of queries (pad "
                         "them): one length compiles once")
    if (trials is None) == (seconds is None):
        raise ValueError("give either trials (validation trials per side) or seconds (a time "
                         "budget), not both")
    seed = _check_seed(seed)
    if seconds is not None:
        seconds = _check_seconds(seconds)
    else:
        _check_int("trials", trials, 1, MAX_TRIALS)
        trials = int(trials)
    if search_trials is not None:
        _check_int("search_trials", search_trials, 1, _INT32_MAX)
    say = log or (lambda _msg: None)
    start = time.perf_counter()
    chunk = int(getattr(sampler, "chunk_size", CHUNK))
    edges = np.asarray(getattr(sampler, "edges", VALUE_GRID), float)
    n_q = int(np.asarray(pairs[0].queries).size)
    meter = _Meter(sampler)
    groups = [p.groups() for p in pairs]
    proposal: dict[int, Any] = {}  # pair -> its samples before the latest round
    check: dict[int, Any] = {}  # pair -> its latest round's sample
    progress: list[dict[str, Any]] = []
    n_val = trials
    search_end = math.inf
    base = int(search_trials) if search_trials is not None else (
        default_search_trials(trials) if trials is not None else chunk)
    alive = list(range(len(pairs)))
    shapes = None
    selection = 0

    def draw(j, n, *tags):
        nonlocal selection
        h1 = meter(pairs[j], 0, groups[j], n, _subseed(seed, 1, *tags, j, 0))
        h2 = meter(pairs[j], 1, groups[j], n, _subseed(seed, 1, *tags, j, 1))
        selection += 2 * n
        return h1, h2, n

    def rounds_left():
        return max(1, math.ceil(math.log2(len(alive))))

    if seconds is not None:
        # compile and time the sampler on one chunk per side, then split the time left:
        # SEARCH_SHARE for the rounds (equal shares), the rest for validation
        meter(pairs[0], 0, groups[0], chunk, _subseed(seed, 0, 0))
        meter(pairs[0], 1, groups[0], chunk, _subseed(seed, 0, 1))
        left = max(seconds - (time.perf_counter() - start), 0.0)
        search_end = time.perf_counter() + SEARCH_SHARE * left
        n_val = min(MAX_TRIALS, max(chunk, int((1 - SEARCH_SHARE) * left * meter.rate / 2)))
        base = int(SEARCH_SHARE * left / rounds_left() * meter.rate / (4 * len(alive)))
        base = max(chunk, base // chunk * chunk, search_trials or 0)
    scored: dict[int, list] = {}
    max_call = max(chunk, _INT32_MAX // chunk * chunk)
    for rnd in range(64):
        if seconds is not None and rnd > 0:
            left = search_end - time.perf_counter()
            rate = meter.rate
            n_r = int(left / rounds_left() * rate / (2 * len(alive))) // chunk * chunk
            if n_r < chunk and left < 2 * chunk * len(alive) / rate:
                break
            n_r = max(n_r, chunk)
        else:
            n_r = base * 2 ** rnd
        n_r = min(n_r, max_call)  # one simulate call runs at most 2**31 - 1 trials
        for j in alive:
            if rnd == 0:
                proposal[j] = draw(j, n_r, 0, 0)
                check[j] = draw(j, n_r, 0, 1)
            else:
                proposal[j] = _merge(proposal[j], check[j])
                check[j] = draw(j, n_r, rnd)
        if shapes is None:
            shapes = _shapes_of(check[alive[0]][0], n_q, edges.size)
        scores = {}
        for j in alive:
            scored[j] = _checked(proposal[j], check[j], n_val, alpha, delta, shapes, groups[j],
                                 edges)
            scores[j] = scored[j][0][0] if scored[j] else -math.inf
        ranked = sorted(alive, key=lambda j: -scores[j])
        leader = ranked[0]
        progress.append({"stage": f"search round {rnd}",
                         "seconds": round(time.perf_counter() - start, 3),
                         "trials": selection, "pairs": len(alive),
                         "leader": pairs[leader].name, "predicted": _finite(scores[leader])})
        say(f"  round {rnd}: {len(alive)} pairs x {n_r} trials per side; leader "
            f"{pairs[leader].name}, predicted {scores[leader]:.4f}"
            + (f" from {scored[leader][0][1].event.describe()}" if scored[leader] else ""))
        if len(alive) == 1:
            break
        # keep the better half, but nothing that is clearly worse than the leader: whose
        # optimistic score is below the leader's pessimistic one (both at _RANK_LEVEL)
        _, _, x0, y0 = scored[leader][0] if scored[leader] else (0, 0, 0, 0)
        floor = _predicted(x0, y0, check[leader][2], n_val, alpha, delta, level=_RANK_LEVEL)
        keep = []
        for j in ranked[:max(1, math.ceil(len(alive) / 2))]:
            if not scored[j]:
                continue
            _, _, x, y = scored[j][0]
            if j == leader or _predicted(x, y, check[j][2], n_val, alpha, delta,
                                         optimistic=True, level=_RANK_LEVEL) >= floor:
                keep.append(j)
        alive = keep or [leader]
        if len(alive) == 1:
            break  # its latest sample has scored its events: the rest is validation
    winner = max(alive, key=lambda j: scored[j][0][0] if scored[j] else -math.inf)
    if seconds is not None:
        left = seconds - (time.perf_counter() - start)
        # the rate over the whole search: on a shared machine the rate of any one call swings
        # with the load (the validation's size must be fixed before it starts, for the
        # coin-split bound; see conditional_lower_bound)
        n_val = min(MAX_TRIALS, max(chunk, int(0.95 * left * meter.rate / 2)))
        # the sizes changed: re-score the winner's proposals for the validation size
        scored[winner] = _checked(proposal[winner], check[winner], n_val, alpha, delta, shapes,
                                  groups[winner], edges)
    if not scored[winner] or not scored[winner][0][0] > -math.inf:
        bound = (conditional_lower_bound(0, 0, 0, 0, confidence=confidence) if delta == 0
                 else epsilon_lower_bound(0, 1, 0, 1, confidence=confidence, delta=delta))
        return SearchResult(bound, None, -math.inf, selection, 0, len(pairs),
                            time.perf_counter() - start, tuple(progress),
                            meter.compile_seconds, meter.rate)
    predicted, cand, _, _ = scored[winner][0]
    pair = pairs[winner].swapped() if cand.swap else pairs[winner]
    if delta == 0.0:
        n1 = int(np.random.default_rng(_subseed(seed, 2)).binomial(2 * n_val, 0.5))
        n2 = 2 * n_val - n1
    else:
        n1 = n2 = n_val
    k1 = cand.event.count(meter(pair, 0, groups[winner], n1, _subseed(seed, 3, 0))) if n1 else 0
    k2 = cand.event.count(meter(pair, 1, groups[winner], n2, _subseed(seed, 3, 1))) if n2 else 0
    if delta == 0.0:
        bound = conditional_lower_bound(k1, n1, k2, n2, confidence=confidence)
    else:
        bound = epsilon_lower_bound(k1, n1, k2, n2, confidence=confidence, delta=delta)
    elapsed = time.perf_counter() - start
    progress.append({"stage": "validation", "seconds": round(elapsed, 3),
                     "trials": selection + n1 + n2, "pairs": 1, "leader": pair.name,
                     "predicted": _finite(predicted), "bound": bound.epsilon})
    say(f"  validated {pair.name}: {k1} of {n1} vs {k2} of {n2} -> epsilon >= "
        f"{bound.epsilon:.4f} ({bound.method}) from {cand.event.describe()}")
    return SearchResult(bound, Witness(pair, cand.event), predicted, selection, n1 + n2,
                        len(pairs), elapsed, tuple(progress), meter.compile_seconds, meter.rate)


def _finite(x: float) -> Optional[float]:
    return float(x) if math.isfinite(x) else None


def claim(mech) -> dict[str, Any]:
    """What ``mech`` claims and proves: {statement, nominal_epsilon, proven_epsilon (None if
    nothing finite is proved), delta (the δ both refer to)}."""
    g = mech.privacy()
    delta = getattr(mech, "delta", None)
    delta = 0.0 if delta is None else float(delta)
    eps = g.epsilon(delta)
    if not math.isfinite(eps) and delta == 0.0:
        finite_at = g.epsilon(DEFAULT_DELTA)
        if math.isfinite(finite_at):
            delta, eps = DEFAULT_DELTA, finite_at
    proven = float(eps) if math.isfinite(eps) else None
    nominal = getattr(mech, "epsilon", None)
    if nominal is None:
        nominal = getattr(g, "nominal", None)
    try:
        nominal = float(nominal) if nominal is not None else None
    except (TypeError, ValueError):
        nominal = None
    if nominal is not None and not math.isfinite(nominal):
        nominal = None
    return {"statement": str(g), "nominal_epsilon": proven if nominal is None else nominal,
            "proven_epsilon": proven, "delta": delta}


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """One mechanism's audit: what it claims and proves, the bound found and the witness."""

    mechanism: str
    params: dict
    statement: str
    nominal_epsilon: Optional[float]
    proven_epsilon: Optional[float]
    delta: float
    bound: Bound
    witness: Optional[Witness]
    num_pairs: int
    selection_trials: int
    validation_trials: int
    seconds: float
    progress: tuple = ()
    compile_seconds: float = 0.0
    trials_per_second: float = 0.0

    @property
    def lower_bound(self) -> float:
        return self.bound.epsilon

    @property
    def confidence(self) -> float:
        return self.bound.confidence

    @property
    def exceeds_nominal(self) -> Optional[bool]:
        """The bound exceeds the ε the mechanism is run at (its paper's claim): a violation of
        the claim. None when there is no nominal ε."""
        return None if self.nominal_epsilon is None else self.lower_bound > self.nominal_epsilon

    @property
    def exceeds_proven(self) -> Optional[bool]:
        """The bound exceeds what ``privacy()`` proves: a bug in a kernel or a privacy formula
        (or a 1 − confidence accident). None when nothing finite is proved."""
        return None if self.proven_epsilon is None else self.lower_bound > self.proven_epsilon

    def to_dict(self) -> dict[str, Any]:
        b = self.bound
        return {"mechanism": self.mechanism, "params": _jsonable(self.params),
                "statement": self.statement, "nominal_epsilon": self.nominal_epsilon,
                "proven_epsilon": self.proven_epsilon, "delta": self.delta,
                "lower_bound": self.lower_bound, "confidence": self.confidence,
                "exceeds_nominal": self.exceeds_nominal,
                "exceeds_proven": self.exceeds_proven, "method": b.method,
                "count": b.count, "validation_trials": b.trials,
                "count_prime": b.count_prime, "validation_trials_prime": b.trials_prime,
                "selection_trials": self.selection_trials,
                "total_trials": self.selection_trials + self.validation_trials,
                "num_pairs": self.num_pairs,
                "witness": self.witness.to_dict() if self.witness else None,
                "seconds": self.seconds, "compile_seconds": self.compile_seconds,
                "trials_per_second": self.trials_per_second, "progress": list(self.progress)}


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in params.items():
        out[k] = v if isinstance(v, (bool, int, float, str, type(None))) else repr(v)
    return out


def _params_of(mech) -> dict[str, Any]:
    """The mechanism's parameters, read by the names ``svtjax.mechanisms.parameters`` lists."""
    from svtjax import mechanisms

    try:
        names = list(mechanisms.parameters(mech.name))
    except (ValueError, AttributeError):
        return {}
    return {k: getattr(mech, k) for k in names if hasattr(mech, k)}


class AuditFailure(RuntimeError):
    """An audit that failed while computing, after every input was checked: a bug in svtjax
    (or in a plugin mechanism), reported with its traceback, never as bad input."""


def audit(mech, *, pairs: Optional[Sequence[Pair]] = None, trials: Optional[int] = None,
          search_trials: Optional[int] = None, seconds: Optional[float] = None,
          confidence: float = DEFAULT_CONFIDENCE, delta: Optional[float] = None, seed: int = 0,
          num_queries: int = NUM_QUERIES, log: Optional[Callable[[str], None]] = None
          ) -> AuditResult:
    """Searches for a witness that ``mech`` is less private than it claims.

    Args:
      mech: a mechanism (``svtjax.get(...)``).
      pairs: candidate pairs (default :func:`candidate_pairs`); each is validated.
      trials: validation trials per side (default 200 000 when ``seconds`` is None).
      search_trials: first-round search trials per side per pair (see :func:`search`).
      seconds: wall-clock budget instead of ``trials`` (compilation included).
      confidence: of the lower bound (default 0.99).
      delta: δ of the bound (default: the δ of the mechanism's claim, :func:`claim`).
      seed: an integer in [0, 2**64) (all 64 bits used); all randomness derives from it.
      num_queries: length of the default candidate pairs.
      log: progress lines.

    Returns:
      An :class:`AuditResult`.

    Raises:
      TypeError / ValueError: not a mechanism, a pair that is not neighbouring, both
        ``trials`` and ``seconds``, bad sizes, confidence or δ (before anything compiles).
    """
    from svtjax.mechanisms import Mechanism

    if not isinstance(mech, Mechanism):
        raise TypeError("mech must be a mechanism built with svtjax.get(name, ...); "
                        f"got {type(mech).__name__}")
    seed = _check_seed(seed)
    confidence = _check_confidence(confidence)
    if seconds is not None and trials is not None:
        raise ValueError("give either trials or seconds, not both")
    if seconds is None and trials is None:
        trials = 200_000
    if seconds is not None:
        seconds = _check_seconds(seconds)
    else:
        _check_int("trials", trials, 1, MAX_TRIALS)
    if search_trials is not None:
        _check_int("search_trials", search_trials, 1, _INT32_MAX)
    _check_computable(mech)  # before anything computes with its parameters
    info = claim(mech)
    delta = info["delta"] if delta is None else _check_delta(delta)
    if pairs is None:
        pairs = candidate_pairs(mech, num_queries=num_queries)
    checked = []
    for pair in pairs:
        q, qp = check_pair(mech, pair.queries, pair.queries_prime, pair.thresholds)
        checked.append(Pair(pair.name, q, qp, pair.thresholds))
    if len({p.queries.size for p in checked}) != 1:
        raise ValueError("all candidate pairs must have the same number of queries (pad "
                         "them): one length compiles once")
    sampler = SimulationSampler(mech)
    _check_computable(mech, checked, sampler.edges)
    try:  # every input is checked above: an error from here on is svtjax's, not the user's
        result = search(sampler, checked, trials=trials, search_trials=search_trials,
                        seconds=seconds, confidence=confidence, delta=delta, seed=seed, log=log)
    except (ValueError, TypeError, LookupError, ArithmeticError) as err:
        raise AuditFailure(f"the audit of {mech.name} failed after its inputs were checked: "
                           f"{type(err).__name__}: {err}") from err
    return AuditResult(mech.name, _params_of(mech), info["statement"], info["nominal_epsilon"],
                       info["proven_epsilon"], delta, result.bound, result.witness,
                       result.num_pairs, result.selection_trials, result.validation_trials,
                       result.seconds, result.progress, result.compile_seconds,
                       result.trials_per_second)


def count_event(mech, queries, thresholds, event: Event, *, trials: int, seed: int = 0,
                chunk_size: int = CHUNK) -> int:
    """How many of ``trials`` runs of ``mech`` on ``queries`` land in ``event`` (on-device).

    A ``counts`` event counts ⊤ on the item groups it was chosen with (``event.groups``).
    """
    _check_int("trials", trials, 1, _INT32_MAX)
    seed = _check_seed(seed)
    q = np.asarray(queries, dtype=float)
    groups = _event_groups(event, q.size)
    sampler = SimulationSampler(mech, chunk_size=chunk_size, edges=event.edges)
    _check_computable(mech, [Pair("count_event", q, q, thresholds)], sampler.edges)
    return event.count(sampler.histograms(q, thresholds, groups, trials, seed))


def _event_groups(event: Event, n: int) -> np.ndarray:
    if event.groups is not None:
        if len(event.groups) != n:
            raise ValueError(f"the event counts ⊤ on groups of {len(event.groups)} items; the "
                             f"queries have {n}")
        return np.asarray(event.groups, np.int32)
    return np.full(n, 2, np.int32)


def audit_pair(mech, queries, queries_prime, event: Event, *, thresholds=0.0, trials: int,
               confidence: float = DEFAULT_CONFIDENCE, delta: float = 0.0, seed: int = 0
               ) -> Bound:
    """Lower bound on ε from ``trials`` runs per side of one fixed pair and event.

    The event must be fixed independently of these runs (e.g. chosen on other samples). For
    δ = 0 the 2·``trials`` runs are split between the sides by fair coin flips and the bound is
    :func:`conditional_lower_bound`; for δ > 0, :func:`epsilon_lower_bound`.
    """
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    _check_int("trials", trials, 1, MAX_TRIALS)
    seed = _check_seed(seed)
    _check_computable(mech)
    q, qp = check_pair(mech, queries, queries_prime, thresholds)
    _check_computable(mech, [Pair("queries", q, qp, thresholds)])
    if delta == 0.0:
        n1 = int(np.random.default_rng(_subseed(seed, 4)).binomial(2 * trials, 0.5))
        n2 = 2 * trials - n1
    else:
        n1 = n2 = trials
    k1 = count_event(mech, q, thresholds, event, trials=n1, seed=_subseed(seed, 3, 0)) if n1 else 0
    k2 = (count_event(mech, qp, thresholds, event, trials=n2, seed=_subseed(seed, 3, 1))
          if n2 else 0)
    if delta == 0.0:
        return conditional_lower_bound(k1, n1, k2, n2, confidence=confidence)
    return epsilon_lower_bound(k1, n1, k2, n2, confidence=confidence, delta=delta)


# =============================================================================================
# Checks
# =============================================================================================

def _check_int(name: str, value: Any, minimum: int, maximum: Optional[int] = None) -> None:
    allowed = f"an integer >= {minimum}" + ("" if maximum is None else f" and <= {maximum}")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be {allowed}; got {_brief(value)}")
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {allowed}; got {value}")


def _brief(value: Any) -> str:
    from svtjax import _validate

    return _validate.brief(value)


def _check_seed(seed: Any, name: str = "seed") -> int:
    """The seed rule of ``svtjax.simulate``: an integer in [0, 2**64), all 64 bits used."""
    from svtjax import _validate

    return _validate.seed(name, seed)


def _run_dtype() -> np.dtype:
    """The floating dtype an audit's trials run in: float32 unless ``jax_enable_x64`` is on."""
    import jax

    return np.dtype(jax.dtypes.canonicalize_dtype(np.float64))


def _check_computable(mech, pairs: Sequence[Pair] = (), edges=None) -> None:
    """Refuses, in one line and before anything is computed, a mechanism, an input pair or value
    bins that the run's dtype cannot hold (e.g. ε = 1e-40 is below float32's smallest normal
    number, and bins of 16·Δ/ε then overflow it): checked on the host, so no computation
    warns first."""
    from svtjax import _validate

    dtype = _run_dtype()
    _validate.computable(mech, dtype)
    name = getattr(mech, "name", "") or type(mech).__name__
    checks = []
    for pair in pairs:
        checks += [(f"a query of input pair {pair.name!r}", pair.queries),
                   (f"a query of input pair {pair.name!r}", pair.queries_prime),
                   (f"a threshold of input pair {pair.name!r}", pair.thresholds)]
    if edges is not None and np.size(edges):
        magnitude = np.abs(np.asarray(edges, float))
        checks += [(f"its largest value bin edge ({max(VALUE_GRID):g}·Δ/ε)", magnitude.max()),
                   ("its smallest non-zero value bin edge",
                    np.min(magnitude[magnitude > 0], initial=1.0))]
    try:
        for label, value in checks:
            _validate.fits(label, np.asarray(value, float), dtype)
    except ValueError as err:
        raise ValueError(f"{name} cannot be audited in {dtype.name}: {err}") from None


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
# Mechanism parameters for an audit
# =============================================================================================

def _example_params(name: str, *, epsilon: float, c: int, n: int) -> dict[str, Any]:
    """``cls.example_params(epsilon=, c=, n=)`` of the registered class (parameters for a
    standard run: ε, the cut-off, any required parameter)."""
    from svtjax import mechanisms

    return dict(mechanisms.registry()[name].example_params(epsilon=epsilon, c=c, n=n))


def mechanism_params(name: str, epsilon: float, c: Optional[int] = None,
                     extra: Optional[dict[str, Any]] = None, *,
                     num_queries: int = NUM_QUERIES) -> dict[str, Any]:
    """The parameters an audit runs ``name`` with.

    The mechanism's ``example_params`` at ε, the cut-off ``c`` (``DEFAULT_CUTOFF`` when None;
    ``c`` or ``k``, whichever it takes) and the pair length, then ``extra``, then two generic
    audit rules: a mechanism with Gaussian noise and a ``k_max`` has its stream capped at the
    pair length (its RDP claim is finite only for a finite k_max), and one that takes a
    ``delta`` and cannot be calibrated without it gets ``DEFAULT_DELTA``.

    Raises:
      ValueError: unknown name, or ``c`` given for a mechanism without a cut-off.
    """
    import svtjax
    from svtjax import mechanisms
    from svtjax.noise import Gaussian

    accepted = mechanisms.parameters(name)
    has_cutoff = any(k in accepted for k in ("c", "k"))
    if c is not None and not has_cutoff:
        raise ValueError(f"{name} has no cut-off parameter (c or k); drop --c")
    cutoff = DEFAULT_CUTOFF if c is None else c
    params = _example_params(name, epsilon=epsilon, c=cutoff, n=num_queries)
    if c is not None:
        params[next(k for k in ("c", "k") if k in accepted)] = c
    params["epsilon"] = epsilon
    params.update(extra or {})
    if "k_max" in accepted and any(isinstance(v, Gaussian) for v in params.values()):
        params["k_max"] = min(int(params.get("k_max") or num_queries), num_queries)
    if "delta" in accepted and params.get("delta") is None:
        try:
            svtjax.get(name, **params)
        except ValueError:
            params["delta"] = DEFAULT_DELTA
    return params


# =============================================================================================
# Command line: svtjax audit NAME --epsilon E [--c C] [--seconds S | --trials N] ...
# =============================================================================================

class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit status 2)."""

    def error(self, message):  # noqa: D401 - argparse's hook
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parse_value(text: str) -> Any:
    from svtjax import noise

    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for family in ("laplace", "gaussian", "exponential", "gumbel"):
        if low.startswith(family + "(") and low.endswith(")"):
            inside = low[len(family) + 1:-1]
            try:
                scale = float(inside)
            except ValueError:
                raise ValueError(f"cannot parse --param value {text!r}: {family}(SCALE) takes "
                                 f"a number, e.g. {family}(2.0); got {inside!r}") from None
            return getattr(noise, family.capitalize())(scale)
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="svtjax audit",
        description="Empirical privacy audit: a lower confidence bound on a mechanism's ε "
                    "from Monte Carlo trials on candidate neighbouring inputs.")
    parser.add_argument("mechanism", help="registry name (svtjax list)")
    parser.add_argument("--epsilon", type=float, required=True,
                        help="the ε the mechanism is run at (its nominal claim)")
    parser.add_argument("--c", type=int,
                        help=f"cut-off (c, or k for top-k mechanisms; default {DEFAULT_CUTOFF})")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="another mechanism parameter (repeatable), e.g. monotonic=true, "
                             "query_noise=gaussian(2.0)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--seconds", type=float,
                        help=f"time budget, compilation included (default {DEFAULT_SECONDS:g})")
    budget.add_argument("--trials", type=int,
                        help="validation trials per side instead of a time budget")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                        help=f"confidence of the lower bound (default {DEFAULT_CONFIDENCE})")
    parser.add_argument("--delta", type=float,
                        help="δ of the bound (default: the δ of the mechanism's claim)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                        help="import a module or .py file of your own first (repeatable): the "
                             "mechanisms it registers can then be audited by name")
    parser.add_argument("--exact", action="store_true",
                        help="no sampling: the exact loss over answer vectors on documented "
                             "short neighbouring pairs (svtjax.exact.audit)")
    return parser


def _mechanism_from_args(args):
    """The mechanism an audit's arguments describe (raises ValueError/TypeError)."""
    import svtjax

    extra = {}
    for item in args.param:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"cannot parse --param {item!r}; write KEY=VALUE")
        key = key.strip()
        # a second value would silently replace the first (or --epsilon / --c)
        if key in extra:
            raise ValueError(f"--param {key} is given more than once; give it once")
        if key == "epsilon":
            raise ValueError("give ε with --epsilon, not --param epsilon=...")
        if key in ("c", "k") and args.c is not None:
            raise ValueError(f"--param {key}={value} conflicts with --c {args.c}; give the "
                             "cut-off once")
        extra[key] = _parse_value(value)
    params = mechanism_params(args.mechanism, args.epsilon, args.c, extra)
    return svtjax.get(args.mechanism, **params)


def _run(args) -> AuditResult:
    """Checks the budget arguments, builds the mechanism and audits it (before compiling
    anything, every user error raises ValueError/TypeError)."""
    _check_seed(args.seed, "--seed")
    if args.trials is not None and not 1 <= args.trials <= MAX_TRIALS:
        raise ValueError(f"--trials must be an integer from 1 to {MAX_TRIALS}; got "
                         f"{args.trials}")
    seconds = None
    if args.trials is None:
        seconds = DEFAULT_SECONDS if args.seconds is None else args.seconds
        if not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"--seconds must be a finite number of seconds > 0, e.g. 60; got "
                             f"{args.seconds}")
    _check_confidence(args.confidence)
    if args.delta is not None:
        _check_delta(args.delta)
    mech = _mechanism_from_args(args)
    return audit(mech, trials=args.trials, seconds=seconds, confidence=args.confidence,
                 delta=args.delta, seed=args.seed)


def _run_exact(args) -> str:
    """``--exact``: the exact privacy loss on documented short neighbouring pairs
    (:func:`svtjax.exact.audit_report`); the Monte Carlo budget options do not apply."""
    ignored = [flag for flag, value in (("--seconds", args.seconds), ("--trials", args.trials),
                                        ("--delta", args.delta)) if value is not None]
    if ignored:
        verb = "does" if len(ignored) == 1 else "do"
        raise ValueError(f"{' and '.join(ignored)} {verb} not apply with --exact (no trials are "
                         "run)")
    _check_seed(args.seed, "--seed")
    from svtjax.exact import audit_report

    return audit_report(_mechanism_from_args(args), as_json=args.json)


def format_result(r: AuditResult) -> str:
    """Human-readable lines for one audit."""
    proven = "none (not private / unproven)" if r.proven_epsilon is None else (
        f"{r.proven_epsilon:.4g}")
    d = f" (δ = {r.delta:g})" if r.delta else ""
    b = r.bound

    def verdict(flag, what):
        return "n/a" if flag is None else ("YES, " + what if flag else "no")

    lines = [
        f"mechanism        {r.mechanism} {_jsonable(r.params)}",
        f"claim            {r.statement}",
        f"nominal ε        {r.nominal_epsilon}",
        f"proven ε         {proven}{d}",
        f"lower bound      ε ≥ {r.lower_bound:.4f} at {100 * r.confidence:g}% confidence{d} "
        f"({b.method})",
        f"counts           {b.count} of {b.trials} on q vs {b.count_prime} of "
        f"{b.trials_prime} on q′",
        f"trials           {r.selection_trials + r.validation_trials} in all ({r.num_pairs} "
        f"pairs searched with {r.selection_trials}; validation {r.validation_trials}), "
        f"{r.seconds:.1f} s",
        f"witness          {r.witness.describe() if r.witness else 'none'}",
        f"exceeds nominal  {verdict(r.exceeds_nominal, 'the claim is violated')}",
        f"exceeds proven   {verdict(r.exceeds_proven, 'ABOVE THE PROVEN ε: a bug')}",
    ]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``svtjax audit``: exit status 0 after an audit (whatever it found), 2 on bad input."""
    try:
        args = _build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_:  # --help (0) or a usage error (2, one line printed)
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        if args.plugin:  # svtjax audit takes them out before this parser; python -m does not
            from svtjax import _plugins

            for entry in args.plugin:
                _plugins.load(entry)
        if args.exact:  # svtjax.exact: every answer vector by quadrature over ρ, no trials
            print(_run_exact(args))
            return 0
        result = _run(args)
    except (ValueError, TypeError) as err:
        print(f"svtjax audit: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result.to_dict()) if args.json else format_result(result))
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
