"""Item counts shipped inside the package (``svtjax/datasets/data/<name>/``), and the
T40I10D100K completion."""

from __future__ import annotations

import csv
import functools
import importlib.resources
import io
from typing import Any

import numpy as np

from svtjax.datasets import _registry
from svtjax.datasets._types import Dataset, ItemCounts

__all__ = ["read_counts_csv", "shipped_counts", "impute_t40_rare", "T40_TOTAL_OCCURRENCES",
           "to_dataset"]

#: Occurrences implied by T40I10D100K's published density: 4.20% (the data set's .desc file,
#: ``100000 942 4.20``) x 942 items x 100,000 transactions. The density is rounded to 0.01%, so
#: the true total lies in [3,951,690, 3,961,110); this is the midpoint.
T40_TOTAL_OCCURRENCES = 3_956_400
#: Every item with support >= 1,000 is known exactly; the rest are below this bound.
T40_KNOWN_MIN_SUPPORT = 1_000


def read_counts_csv(text: str) -> ItemCounts:
    """Parses an ``item,count`` file (header line first)."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or [h.strip() for h in rows[0]] != ["item", "count"]:
        raise ValueError("item-count file must start with the header 'item,count'")
    body = [r for r in rows[1:] if r]
    items = np.array([int(r[0]) for r in body], dtype=np.int64)
    counts = np.array([int(r[1]) for r in body], dtype=np.int64)
    return ItemCounts(items, counts, -1)


@functools.lru_cache(maxsize=None)
def _read_shipped(name: str, filename: str) -> ItemCounts:
    resource = importlib.resources.files("svtjax.datasets").joinpath("data", name, filename)
    return read_counts_csv(resource.read_text(encoding="utf-8"))


def shipped_counts(spec: _registry.Spec) -> ItemCounts:
    """The package's item counts for ``spec`` (num_transactions from the registry)."""
    counts = _read_shipped(spec.name, spec.shipped)
    return counts._replace(num_transactions=spec.num_transactions)


def impute_t40_rare(known_counts: np.ndarray, *, num_items: int = 942,
                    total: int = T40_TOTAL_OCCURRENCES) -> np.ndarray:
    """Counts for T40I10D100K's items with support < 1,000, which no obtainable file lists.

    The ``num_items - len(known_counts)`` missing counts are spread linearly from ``h`` down to 1,
    with ``h`` chosen so that all counts sum to ``total`` (their mean is then (h + 1) / 2), and
    rounded to integers by largest remainder so the sum is exact.

    Returns:
      int64[num_items - len(known_counts)], descending, every value in [1, 999].
    """
    known_counts = np.asarray(known_counts, dtype=np.int64)
    missing = int(num_items) - known_counts.shape[0]
    mass = int(total) - int(known_counts.sum())
    if missing <= 0:
        return np.zeros(0, dtype=np.int64)
    high = 2.0 * mass / missing - 1.0
    if not 1.0 <= high < T40_KNOWN_MIN_SUPPORT:
        raise ValueError(f"cannot impute {missing} counts in [1, 999] summing to {mass}")
    raw = np.linspace(high, 1.0, missing)
    base = np.floor(raw).astype(np.int64)
    extra = mass - int(base.sum())
    order = np.argsort(-(raw - base), kind="stable")
    base[order[:extra]] += 1
    return np.sort(base)[::-1]


def _t40(spec: _registry.Spec, rare_items: str) -> tuple[ItemCounts, dict[str, Any]]:
    known = shipped_counts(spec)
    if rare_items == "drop":
        return known, {"imputed_items": 0,
                       "notes": "Only the 755 items with support >= 1,000 (rare items dropped). "
                                + spec.notes}
    if rare_items != "impute":
        raise ValueError(f"rare_items must be 'impute' or 'drop'; got {rare_items!r}")
    rare = impute_t40_rare(known.counts, num_items=spec.num_items)
    items = np.concatenate([known.items, -np.arange(1, rare.shape[0] + 1, dtype=np.int64)])
    counts = np.concatenate([known.counts, rare])
    return (ItemCounts(items, counts, known.num_transactions),
            {"imputed_items": int(rare.shape[0]), "notes": spec.notes})


def to_dataset(spec: _registry.Spec, counts: ItemCounts, extra: dict[str, Any]) -> Dataset:
    """Scores in ascending item-id order; imputed placeholder ids (-1, -2, ...) last."""
    items = counts.items
    if items.dtype.kind in "iu":
        order = np.lexsort((np.abs(items), items < 0))
    else:
        order = np.argsort(items, kind="stable")
    metadata = {
        "source": spec.source,
        "title": spec.title,
        "num_items": int(counts.num_items),
        "num_transactions": int(counts.num_transactions),
        "thresholds": _registry.paper_thresholds(spec),
        "notes": spec.notes,
        "published": [dict(p) for p in spec.published],
    }
    metadata.update(extra)
    return Dataset(spec.name, counts.counts[order].astype(np.float64), metadata,
                   items=items[order])


def load_shipped(spec: _registry.Spec, *, rare_items: str = "impute") -> Dataset:
    """The shipped dataset ``spec`` (T40I10D100K completed per ``rare_items``)."""
    if spec.name == "t40i10d100k":
        counts, extra = _t40(spec, rare_items)
    else:
        counts, extra = shipped_counts(spec), {"imputed_items": 0}
    extra = {"origin": f"package data svtjax/datasets/data/{spec.name}/{spec.shipped}",
             **extra}
    return to_dataset(spec, counts, extra)
