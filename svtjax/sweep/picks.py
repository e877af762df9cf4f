"""Points that differ only in their pick count share one compiled chunk.

``em-peeling``'s c is static (it fixes the Outcome's length), so a sweep over c compiled one
chunk per c. Its c enters a trial in two places only: the noise scale b = c·Δ/ε (2c·Δ/ε) and
the number of picks, the top c of q + b·G. The top c of a vector are the first c of its top m
for any m >= c (``jax.lax.top_k``: largest first, equal values to the lower index), so a trial
run with c traced and a static Outcome length m (:class:`SharedPicks`) has the same first c
picks, bit for bit (the same draws: one Gumbel variate per item, whatever c; the same scale,
computed from the same numbers in the same order). A sweep's answer set is the first c ⊤ of
an Outcome (``svtjax.metrics.evaluate_outcome``), so every metric of
``svtjax.metrics.METRICS`` (and ``picks``) is the same number; ``evaluated``, ``cost`` and
registered metrics read the whole Outcome, so a sweep that asks for them keeps one chunk per c
(:func:`share_picks`). Tested in ``tests/test_sweep_shared_picks.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from svtjax._pytree import draft, pytree_dataclass, static_field
from svtjax.mechanisms.selection import EMPeeling

SAFE_METRICS = frozenset({"ser", "ncs", "ncr", "precision", "recall", "f1", "fnr", "picks"})
"""Metrics that read only a trial's answer set (its first c ⊤)."""


@pytree_dataclass
class SharedPicks(EMPeeling):
    """``em-peeling`` with c traced and the Outcome's length ``bound`` (>= c) static: its first
    c picks are ``EMPeeling(epsilon, c, ...)``'s (module docstring). Built only by
    :func:`share_picks` from a checked ``EMPeeling``; never registered (a point keeps its
    mechanism's name, parameters and seed)."""

    c: Any = None
    bound: int = static_field(default=1)

    def num_picks(self) -> int:
        """The Outcome's length: ``bound`` (static)."""
        return self.bound

    def scale(self):
        """b = c·Δ/ε (2c·Δ/ε), c traced: ``EMPeeling.scale`` with c in place of the length."""
        factor = 1.0 if self.monotonic else 2.0
        return factor * self.c * self.sensitivity / self.epsilon

    def pick_cost(self):
        return self.epsilon / self.c


def shared(mech: EMPeeling, bound: int) -> SharedPicks:
    """``mech`` (a checked ``EMPeeling``) as :class:`SharedPicks` with Outcome length ``bound``;
    no construction step (as JAX rebuilds a pytree)."""
    if not bound >= mech.c:
        raise ValueError(f"bound ({bound}) must be at least c ({mech.c})")
    values = {f.name: getattr(mech, f.name) for f in dataclasses.fields(EMPeeling)}
    return draft(SharedPicks, **values, bound=int(bound))


def share_picks(points: Sequence[Any], mechs: Sequence[Any], metrics: Sequence[str],
                own: Sequence[str] = ()) -> list:
    """The sweep's mechanisms with every ``em-peeling`` point of a dataset given the largest
    c of that dataset's ``em-peeling`` points as its Outcome length (:class:`SharedPicks`), so
    that they share a compiled chunk; unchanged when a metric (``own``: the config's registered
    ones) reads more than the answer set."""
    if not set(metrics) <= SAFE_METRICS or set(metrics) & set(own):
        return list(mechs)
    bound: dict[str, int] = {}
    for p, m in zip(points, mechs):
        if type(m) is EMPeeling:
            bound[p.dataset] = max(bound.get(p.dataset, 0), int(m.c))
    return [shared(m, bound[p.dataset]) if type(m) is EMPeeling else m
            for p, m in zip(points, mechs)]
