"""Output features and events: the cells of four low-dimensional summaries of an Outcome
(on the host and on-device) and events as unions of cells."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Optional

import numpy as np

from svtjax.audit.constants import FAMILIES, MAX_CELLS, REST_CAP, VALUE_GRID
from svtjax.audit.pairs import _unit


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
