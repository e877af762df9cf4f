"""Types shared by the dataset modules: :class:`Dataset`, :class:`ItemCounts` and the errors."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Dataset", "ItemCounts", "DatasetNotAvailableError", "DatasetVerificationError",
           "DownloadError"]


@dataclasses.dataclass(frozen=True)
class Dataset:
    """Item scores (e.g. support counts) and where they come from.

    Attributes:
      name: registry name.
      scores: float64[n] item scores, in the dataset's natural item order (``zipf``: s_1 ≥ s_2 ≥
        …; transaction data: ascending item id, imputed items last).
      metadata: ``source``, ``num_items``, ``num_transactions``, ``thresholds`` (per paper, where
        a paper states one), ``notes``, and for real data ``published`` counts and provenance.
      items: the item id of each score (``None`` for the synthetic datasets).
    """

    name: str
    scores: np.ndarray
    metadata: dict[str, Any]
    items: np.ndarray | None = None

    @property
    def num_items(self) -> int:
        return int(self.scores.shape[0])

    def top(self, c: int) -> np.ndarray:
        """Indices of the c highest scores (ties broken by index)."""
        return np.argsort(-self.scores, kind="stable")[:c]


class ItemCounts(NamedTuple):
    """Support counts read from a transaction file.

    Attributes:
      items: item ids (int64 when every id is an integer, else str), count descending then id.
      counts: int64, number of transactions containing each item.
      num_transactions: number of transactions read (blank and comment lines excluded).
    """

    items: np.ndarray
    counts: np.ndarray
    num_transactions: int

    @property
    def num_items(self) -> int:
        return int(self.counts.shape[0])


class DatasetNotAvailableError(LookupError):
    """A registered dataset whose item counts are neither shipped nor in the cache."""


class DatasetVerificationError(ValueError):
    """Downloaded or user-supplied data whose counts or checksum differ from the published ones."""


class DownloadError(ConnectionError):
    """A download that failed (no network, server error, or a URL that does not exist)."""
