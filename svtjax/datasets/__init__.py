"""Item-score workloads for top-c selection experiments.

``load(name)`` returns a :class:`Dataset` (scores plus metadata). Built in:

* ``zipf`` — n items with s_i = n / i (Lyu et al. 2017 slides, ``seeds/001``: the zipf dataset
  with 10,000 items, s_i = 10,000 / i).
* ``binary`` — n items, ``positives`` of them scoring ``high`` (default 1,000) and the rest 0
  (Lyu et al. slides; default 10,000 items and 50 positives).

Thresholds: :func:`lyu_threshold` (mean of the c-th and (c+1)-th largest scores, Lyu'17 Sec. 5).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from svtjax import _validate

__all__ = ["Dataset", "load", "names", "zipf", "binary", "lyu_threshold"]


@dataclasses.dataclass(frozen=True)
class Dataset:
    """Item scores (e.g. support counts) and where they come from.

    Attributes:
      name: registry name.
      scores: float64[n] item scores, in the dataset's natural item order.
      metadata: source, number of items and transactions, notes.
    """

    name: str
    scores: np.ndarray
    metadata: dict[str, Any]

    @property
    def num_items(self) -> int:
        return int(self.scores.shape[0])

    def top(self, c: int) -> np.ndarray:
        """Indices of the c highest scores (ties broken by index)."""
        return np.argsort(-self.scores, kind="stable")[:c]


def zipf(n: int = 10_000) -> Dataset:
    """s_i = n / i for i = 1..n (Lyu et al. 2017 slides)."""
    _validate.integer("n", n, minimum=1)
    scores = float(n) / np.arange(1, int(n) + 1, dtype=np.float64)
    return Dataset("zipf", scores, {"source": "synthetic: s_i = n / i (Lyu et al. 2017 slides)",
                                    "num_items": int(n), "num_transactions": None})


def binary(n: int = 10_000, positives: int = 50, high: float = 1000.0) -> Dataset:
    """``positives`` items score ``high``, the other n - positives score 0 (Lyu'17 slides)."""
    _validate.integer("n", n, minimum=1)
    _validate.integer("positives", positives, minimum=0)
    if positives > n:
        raise ValueError(f"positives must be at most n={n}; got {positives}")
    scores = np.zeros(int(n))
    scores[: int(positives)] = float(high)
    return Dataset("binary", scores, {"source": "synthetic: binary scores (Lyu et al. 2017 "
                                                "slides)", "num_items": int(n),
                                      "positives": int(positives), "num_transactions": None})


_BUILTIN = {"zipf": zipf, "binary": binary}


def names() -> list[str]:
    return list(_BUILTIN)


def load(name: str, **kwargs: Any) -> Dataset:
    """Loads the dataset registered as ``name`` (keyword arguments go to its builder)."""
    if name not in _BUILTIN:
        raise ValueError(f"unknown dataset {name!r}; available datasets are: {', '.join(names())}")
    return _BUILTIN[name](**kwargs)


def lyu_threshold(scores, c: int) -> float:
    """Mean of the c-th and (c+1)-th largest scores (Lyu et al. 2017, Section 5)."""
    s = np.sort(np.asarray(scores, dtype=float))[::-1]
    _validate.integer("c", c, minimum=1)
    if c >= s.shape[0]:
        raise ValueError(f"c must be smaller than the number of items ({s.shape[0]}); got {c}")
    return float((s[c - 1] + s[c]) / 2)
