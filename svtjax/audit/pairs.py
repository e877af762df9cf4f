"""Neighbouring input pairs: the candidates from the SVT counterexample literature and the
check that a pair is neighbouring for a mechanism."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from svtjax.audit.constants import NUM_QUERIES, PAD


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
