"""Selection: the events a pair proposes from its histograms, best predicted bound first, and
their scores on an independent sample."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from svtjax.audit.bounds import _cp_lower, _cp_upper, _predicted
from svtjax.audit.constants import _CHECK_LEVEL, _RANK_LEVEL, FAMILIES, MAX_CELLS, PROPOSALS
from svtjax.audit.events import Event


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
