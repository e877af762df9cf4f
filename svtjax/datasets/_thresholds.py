"""Threshold rules of the seed papers' top-c experiments.

* :func:`lyu_threshold` — mean of the c-th and (c+1)-th largest scores (Lyu et al. 2017, as
  described by Ding et al. 2019, footnote 7).
* :func:`fixed_threshold` — a paper's fixed per-dataset threshold (Liu et al. 2024, Table 2).
* :func:`ding_threshold` — Ding et al. 2019, Sec. 7: a threshold at a random rank between the
  top 2k and the top 8k, redrawn every run.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

from svtjax import _validate
from svtjax.datasets import _registry
from svtjax.datasets._types import Dataset

__all__ = ["lyu_threshold", "ding_threshold", "fixed_threshold", "RankedThreshold",
           "ThresholdRule", "THRESHOLD_RULES"]


def _descending(scores) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1:
        raise ValueError(f"scores must be a 1-D array; got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    return np.sort(s)[::-1]


def lyu_threshold(scores, c: int) -> float:
    """Mean of the c-th and (c+1)-th largest scores (Lyu et al. 2017, Section 5).

    Exactly the c largest scores lie above it when those two scores differ.

    Raises:
      ValueError: c < 1 or c >= the number of items.
    """
    s = _descending(scores)
    _validate.integer("c", c, minimum=1)
    if c >= s.shape[0]:
        raise ValueError(f"c must be smaller than the number of items ({s.shape[0]}); got {c}")
    return float((s[c - 1] + s[c]) / 2)


class RankedThreshold(NamedTuple):
    """A threshold and the rank it was drawn at.

    Attributes:
      threshold: float (or float64[size]): mean of the rank-th and (rank+1)-th largest scores.
      rank: int (or int64[size]): how many items lie above the threshold when those two scores
        differ — the "true positives" of the run.
    """

    threshold: Any
    rank: Any


def ding_threshold(scores, k: int, *, rng: int | np.random.Generator | None = None,
                   size: int | None = None, low: int = 2, high: int = 8) -> RankedThreshold:
    """Ding et al. 2019's random threshold: "randomly picked from the top 2k to top 8k".

    Follows the authors' code (``cmla-psu/freegap``, ``freegap/evaluate.py``,
    ``_evaluate_algorithm``): an index ``i`` is drawn uniformly from ``{low*k, ..., high*k - 1}``
    (numpy ``randint``, upper end exclusive) and the threshold is the mean of the sorted scores at
    0-based positions ``i`` and ``i + 1``, i.e. ``lyu_threshold(scores, i + 1)``. So ``rank =
    i + 1`` is uniform on ``{2k + 1, ..., 8k}`` and the largest score used is the (8k + 1)-th.
    (That code then takes the top ``i`` items as the truth, one fewer than lie above the
    threshold; :attr:`RankedThreshold.rank` counts all of them.)

    Args:
      scores: float[n] item scores.
      k: the number of ⊤ answers the SVT run stops after (Ding'19: k = 2..22; code 2..24).
      rng: a seed or ``numpy.random.Generator`` (``None``: fresh entropy).
      size: ``None`` for one draw, else the number of draws (one per run).
      low, high: the rank window in units of k (2 and 8 in the paper).

    Returns:
      :class:`RankedThreshold` of floats (``size=None``) or arrays.

    Raises:
      ValueError: k < 1, ``1 <= low < high`` violated, or fewer than ``high*k + 1`` items.
    """
    s = _descending(scores)
    _validate.integer("k", k, minimum=1)
    _validate.integer("low", low, minimum=1)
    _validate.integer("high", high, minimum=1)
    if low >= high:
        raise ValueError(f"low must be smaller than high; got low={low}, high={high}")
    if high * k + 1 > s.shape[0]:
        raise ValueError(f"ding_threshold needs at least high*k + 1 = {high * k + 1} items; the "
                         f"dataset has {s.shape[0]} (use a smaller k)")
    if size is not None:
        _validate.integer("size", size, minimum=1)
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    i = gen.integers(low * k, high * k, size=size)
    threshold = (s[i] + s[i + 1]) / 2
    if size is None:
        return RankedThreshold(float(threshold), int(i) + 1)
    return RankedThreshold(threshold.astype(np.float64), (i + 1).astype(np.int64))


def fixed_threshold(dataset: Dataset | str, paper: str = "liu24") -> float:
    """The fixed threshold ``paper`` used on ``dataset`` (Liu et al. 2024, Table 2).

    Table 2 of Liu'24: Binary 500, Zipf 200, T40I10D100K 11,850, BMS-POS 13,600, Kosarak 10,500,
    Adult 200 (c = 5 on Adult, 50 elsewhere).

    Args:
      dataset: a :class:`Dataset` or a registry name.
      paper: key into ``metadata["thresholds"]`` (only ``"liu24"`` states fixed values).

    Raises:
      ValueError: the paper states no fixed threshold for this dataset.
    """
    if isinstance(dataset, Dataset):
        name, rules = dataset.name, dataset.metadata.get("thresholds", {})
    else:
        name = _registry.canonical(dataset)
        if name in _registry.SYNTHETIC:
            from svtjax.datasets import load
            rules = load(name).metadata["thresholds"]
        else:
            rules = _registry.paper_thresholds(_registry.spec(name))
    rule = rules.get(paper)
    if rule is None or rule.get("rule") != "fixed":
        have = sorted(p for p, r in rules.items() if r.get("rule") == "fixed")
        raise ValueError(f"{paper!r} states no fixed threshold for dataset {name!r}; fixed "
                         f"thresholds known for it: {have or 'none'} (use lyu_threshold or "
                         "ding_threshold)")
    return float(rule["threshold"])


@dataclasses.dataclass(frozen=True)
class ThresholdRule:
    """A per-trial threshold rule: each trial of a sweep point draws its own threshold.

    Attributes:
      name: the name a sweep config gives as ``threshold``.
      draw: ``draw(key, sorted_scores, c) -> float``, one trial's threshold, traced inside the
        compiled chunk: ``key`` a per-trial PRNG key independent of the mechanism's,
        ``sorted_scores`` the scores in descending order, ``c`` the point's top-c size (int32,
        traced).
      description: one line, recorded in a sweep's ``results.json``.
      check: optional ``check(n, c)`` run on the host before compiling; raises ValueError when
        the rule cannot serve a dataset of n items at top-c size c.
    """

    name: str
    draw: Callable
    description: str
    check: Optional[Callable] = None


def _ding_draw(key, sorted_scores, c):
    """:func:`ding_threshold` for one trial, in JAX: index i uniform on {2c, ..., 8c − 1}
    (``jax.random.randint``, int32), threshold = mean of the descending scores at i, i + 1."""
    import jax
    import jax.numpy as jnp

    i = jax.random.randint(key, (), 2 * c, 8 * c, dtype=jnp.int32)
    return (sorted_scores[i] + sorted_scores[i + 1]) / 2


def _ding_check(n: int, c: int) -> None:
    if 8 * c + 1 > n:
        raise ValueError(f"threshold \"ding\" needs at least 8c + 1 = {8 * c + 1} items; the "
                         f"dataset has {n} (use a smaller c)")


THRESHOLD_RULES = types.MappingProxyType({
    "ding": ThresholdRule(
        "ding", _ding_draw, "Ding et al. 2019, Sec. 7 (svtjax.datasets.ding_threshold): index i "
        "uniform on {2c, ..., 8c - 1} (jax.random.randint, int32), threshold = mean of the "
        "descending scores at 0-based positions i, i + 1, redrawn every trial",
        check=_ding_check),
})
"""The built-in per-trial threshold rules, by name (read-only). A sweep names one as
``threshold = "ding"``; rules of one's own are passed to ``svtjax.sweep.run`` /
``load_config`` as ``threshold_rules=[ThresholdRule(...)]``."""
