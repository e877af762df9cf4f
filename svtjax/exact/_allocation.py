"""The ε1 : ε2 split that maximises the exact expected utility on a given dataset.

Lyu, Su, Li 2017 (PVLDB 10(6), §4.2 Eq. 13, §4.3) choose ε1 : ε2 = 1 : (2c)^(2/3) (1 : c^(2/3) for
monotonic queries) by minimising the variance of ν − ρ; Liu, Wang, Liu, Li, Chen 2024 (PVLDB
18(2), Eq. 6, Table 4) do the same for other query-noise families. Both ignore the data. With the
exact E[SER] the split can be optimised for the data itself: :func:`optimal_allocation` searches
the threshold share θ = ε1 / (ε1 + ε2) on a logit grid, then refines with bounded Brent
iterations, each point an exact evaluation. """

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from svtjax import _validate, budget
from svtjax.exact._adapter import SHARE_SUPPORTED, law_at_share
from svtjax.exact._api import _offsets, expected_metrics_many, quadrature

__all__ = ["Allocation", "optimal_allocation", "share_of", "OBJECTIVES", "SEARCH_ACCURACY"]

OBJECTIVES = {"ser": -1.0, "correct": 1.0, "ncr": 1.0}
"""Objective name -> +1 (maximise) or −1 (minimise)."""


class Allocation(NamedTuple):
    """Result of :func:`optimal_allocation`.

    Attributes:
      share: θ = ε1 / (ε1 + ε2) at the optimum.
      eps1, eps2: the budgets there (ε1 + ε2 = ε − ε3).
      value: the objective there (E[SER], E[|S ∩ Top-c|] or E[NCR]).
      objective: its name.
      evaluations: exact evaluations used.
      grid: ((share, value), ...) of the initial grid, for plots.
    """

    share: float
    eps1: float
    eps2: float
    value: float
    objective: str
    evaluations: int
    grid: tuple


SEARCH_ACCURACY = {"kink_tol": 1e-3}
"""Quadrature options of :func:`optimal_allocation`'s search: an item's kink becomes a panel
edge only where its cost exceeds 1e-3 (the default rule: 1e-8), which keeps a third to three
fifths of the nodes. The search only has to rank points that differ by far more than the rule's
error: on svt-s (monotonic, ε = 0.1, c = 50, random order) at shares 0.0014 and 0.1 on retail
and Zipf n = 10^4, E[SER] moved by at most 8.1e-12 with about half the nodes or fewer
(benchmarks/RESULTS.md, Decisions). Over the 20 rows of ``python -m
experiments.optimal_allocation --datasets retail zipf`` the grid's values moved by at most
2.8e-8 against kink_tol 1e-4 (svt-exp, Zipf, ε = 2, far from the optimum), and the optimum's
E[SER] by at most 2.5e-9 against the earlier search (kink_tol 1e-4, Brent started from
scratch), while E[SER] changes by
~1e-6 or more over Brent's tolerance. The value returned is recomputed with the default rule
at the share found."""


def share_of(name: str, c: int, *, allocation: Any = None, monotonic: bool = False,
             noise: str = "exponential") -> float:
    """θ = ε1/(ε1+ε2) of a mechanism's named split rule (its default when ``allocation`` is
    None): svt-s / svt-gap Lyu'17 Eq. 13 (1:(2c)^(2/3), or 1:c^(2/3) monotonic); svt-exp Liu'24
    Table 4 for the query-noise family (``allocation="table4"``) or any ``budget.RULES`` name."""
    if name not in SHARE_SUPPORTED:
        raise ValueError(f"{name!r} has no split rule; supported: {', '.join(SHARE_SUPPORTED)}")
    if name == "svt-exp" and allocation in (None, "table4"):
        x = float(budget.liu_ratio(noise, int(c), monotonic))
    else:
        rule = allocation if allocation is not None else budget.optimal_rule(monotonic)
        x = float(budget.ratio(rule, int(c)))
    return 1.0 / (1.0 + x)


_GOLDEN = 0.5 * (3.0 - math.sqrt(5.0))
_SQRT_EPS = math.sqrt(2.2e-16)


def _brent(f, a: float, b: float, x: float, fx: float, known, xtol: float):
    """Minimises ``f`` on [a, b] by Brent's method (R. P. Brent, *Algorithms for Minimization
    without Derivatives*, 1973, ch. 5: golden sections safeguarding successive parabolic
    interpolation), started at the known best point ``x`` (value ``fx``) with ``known``, up to
    two more evaluated points ``(u, f(u))``, as the method's other two points, so that its
    first step can be the parabola through the three. Stops, as Brent's procedure, when the
    bracket around the best point is within ``2 · tol`` (tol = √ε · |x| + xtol / 3, the
    tolerance of ``scipy.optimize.fminbound``). Returns (x, f(x), evaluations)."""
    known = sorted(known, key=lambda p: p[1])
    w, fw = known[0] if known else (x, fx)
    v, fv = known[1] if len(known) > 1 else (w, fw)
    d = e = b - a  # the bracket's width: a first parabolic step is allowed
    evaluations = 0
    while True:
        m = 0.5 * (a + b)
        tol = _SQRT_EPS * abs(x) + xtol / 3.0
        if abs(x - m) <= 2.0 * tol - 0.5 * (b - a):
            return x, fx, evaluations
        parabolic = False
        if abs(e) > tol:
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            before, e = e, d
            if abs(p) < abs(0.5 * q * before) and q * (a - x) < p < q * (b - x):
                d = p / q  # the parabola's vertex, inside the bracket
                if (x + d) - a < 2.0 * tol or b - (x + d) < 2.0 * tol:
                    d = tol if x < m else -tol
                parabolic = True
        if not parabolic:
            e = (a - x) if x >= m else (b - x)
            d = _GOLDEN * e
        u = x + (d if abs(d) >= tol else math.copysign(tol, d))
        fu = f(u)
        evaluations += 1
        if fu <= fx:
            if u >= x:
                a = x
            else:
                b = x
            v, fv, w, fw, x, fx = w, fw, x, fx, u, fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, fv, w, fw = w, fw, u, fu
            elif fu <= fv or v == x or v == w:
                v, fv = u, fu


def optimal_allocation(name: str, queries: Any, thresholds: Any, *, epsilon: float, c: int,
                       shuffle: bool = False, objective: str = "ser", grid: int = 9,
                       bounds: tuple = (1e-3, 0.8), xtol: float = 1e-3,
                       accuracy: dict | None = None, search_accuracy: dict | None = None,
                       **params: Any) -> Allocation:
    """The threshold share θ = ε1 / (ε1 + ε2) optimising an exact expected metric.

    Args:
      name: ``svt-s``, ``svt-gap`` or ``svt-exp`` (:data:`svtjax.exact.SHARE_SUPPORTED`).
      queries, thresholds: the dataset's scores and threshold(s).
      epsilon: total ε (ε3 included for svt-s with ``eps3``).
      c: cut-off (also the Top-c size of the metrics).
      shuffle: random item order.
      objective: ``"ser"`` (minimise E[SER]), ``"correct"`` (maximise E[|S ∩ Top-c|]) or
        ``"ncr"`` (maximise E[NCR]).
      grid: points of the initial logit grid over ``bounds``.
      bounds: the range of θ searched.
      xtol: Brent's tolerance on logit θ.
      accuracy: quadrature options (:func:`svtjax.exact.quadrature`) of the returned value.
      search_accuracy: quadrature options of the search's evaluations (the grid and Brent's
        points), on top of ``accuracy``; default :data:`SEARCH_ACCURACY`, ``{}`` to search
        with ``accuracy`` itself.
      **params: the mechanism's other parameters (``monotonic``, ``noise``, ``correction``,
        ``correction_k``, ``delta``, ...).

    Returns:
      :class:`Allocation`. The objective is evaluated exactly at each point; Brent's method
      assumes it is unimodal near the best grid point (the grid plot shows whether it is).
      ``value`` is computed with ``accuracy`` at the share found; ``grid`` holds the search's
      values (``search_accuracy``).

    Raises:
      FloatingPointError: the objective is not finite at a share the search evaluated (no
        optimum is reported rather than a wrong one).
    """
    c, grid, lo, hi = _checked(name, objective, epsilon, c, grid, bounds)
    q, t = _offsets(queries, thresholds)
    sign = OBJECTIVES[objective]
    accuracy = dict(accuracy or {})
    search = dict(accuracy, **(SEARCH_ACCURACY if search_accuracy is None else search_accuracy))
    f = _Objective(name, q, t, epsilon, c, shuffle, objective, search, params)
    logits = np.linspace(math.log(lo / (1 - lo)), math.log(hi / (1 - hi)), grid)
    values = f.values(logits)  # one kernel call for the whole grid
    x_best, f_best = _refine(f, sign, logits, values, xtol)
    v_best = -sign * f_best
    share = 1.0 / (1.0 + math.exp(-x_best))
    if search != accuracy:  # the value at the share found, with the returned value's rule
        law = law_at_share(name, share, epsilon=epsilon, c=c, **params)
        rule = quadrature(law, q, t, **accuracy)
        f.evaluations += 1
        v_best = float(expected_metrics_many([law], q, t, shuffle=shuffle, c=c,
                                             rules=[rule])[0][objective])
    total = float(epsilon) - float(params.get("eps3", 0.0))
    return Allocation(share, share * total, (1 - share) * total, float(v_best), objective,
                      f.evaluations, tuple((1.0 / (1.0 + math.exp(-x)), float(v))
                                           for x, v in zip(logits, values)))


def _checked(name: str, objective: str, epsilon: float, c: int, grid: int,
             bounds: tuple) -> tuple[int, int, float, float]:
    """:func:`optimal_allocation`'s arguments checked: (c, grid, low, high)."""
    if name not in SHARE_SUPPORTED:
        raise ValueError(f"optimal_allocation supports {', '.join(SHARE_SUPPORTED)}; got {name!r}")
    _validate.one_of("objective", objective, tuple(OBJECTIVES))
    _validate.positive("epsilon", epsilon)
    c = int(_validate.integer("c", c, minimum=1))
    grid = int(_validate.integer("grid", grid, minimum=3))
    lo, hi = (float(b) for b in bounds)
    if not 0.0 < lo < hi < 1.0:
        raise ValueError(f"bounds must satisfy 0 < low < high < 1; got {bounds!r}")
    return c, grid, lo, hi


class _Objective:
    """The exact objective of :func:`optimal_allocation` at shares given as logits, counting
    its evaluations.

    The laws are concrete: their kernels are driven from the host, one compiled program per
    (stream, states) whatever the node counts of the grid's and Brent's rules."""

    def __init__(self, name, q, t, epsilon, c, shuffle, objective, search, params):
        self.name, self.q, self.t, self.epsilon, self.c = name, q, t, epsilon, c
        self.shuffle, self.objective, self.search, self.params = shuffle, objective, search, params
        self.evaluations = 0

    def values(self, logits) -> np.ndarray:
        laws = [law_at_share(self.name, 1.0 / (1.0 + math.exp(-x)), epsilon=self.epsilon,
                             c=self.c, **self.params) for x in logits]
        rules = [quadrature(law_, self.q, self.t, **self.search) for law_ in laws]
        self.evaluations += len(laws)
        metrics = expected_metrics_many(laws, self.q, self.t, shuffle=self.shuffle, c=self.c,
                                        rules=rules)
        values = np.array([float(m[self.objective]) for m in metrics])
        bad = ~np.isfinite(values)
        if bad.any():  # np.argmax would rank a nan first: never report it as the optimum
            x = float(np.asarray(logits)[np.argmax(bad)])
            raise FloatingPointError(
                f"the exact E[{self.objective}] of {self.name} is {values[bad][0]} at share "
                f"θ = {1.0 / (1.0 + math.exp(-x)):.6g} (ε = {self.epsilon}, c = {self.c}); no "
                "optimum is reported")
        return values

    def value(self, logit: float) -> float:
        return float(self.values([logit])[0])


def _refine(f: _Objective, sign: float, logits: np.ndarray, values: np.ndarray,
            xtol: float) -> tuple[float, float]:
    """Brent's method on the best grid point's bracket, started from what the grid already
    knows: the best point and its neighbours are the method's three points, so its first step
    can be the parabola through them (a search from scratch spends its first evaluations
    re-locating the grid's best point by golden sections). Returns (logit, −sign · value)."""
    grid = len(logits)
    best = int(np.argmax(sign * values))
    lo_i, hi_i = max(best - 1, 0), min(best + 1, grid - 1)
    # the two nearest other grid points (both on one side when the best is at a bound)
    near = sorted((i for i in range(grid) if i != best), key=lambda i: abs(i - best))[:2]
    known = [(float(logits[i]), float(-sign * values[i])) for i in near]
    x_best, f_best, _ = _brent(lambda x: -sign * f.value(x), float(logits[lo_i]),
                               float(logits[hi_i]), float(logits[best]),
                               float(-sign * values[best]), known, xtol)
    return x_best, f_best
