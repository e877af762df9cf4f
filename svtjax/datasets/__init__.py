"""Item-score workloads for top-c selection experiments.

``load(name)`` returns a :class:`Dataset`: scores plus metadata (``source``, ``num_items``,
``num_transactions``, ``thresholds`` per paper, ``notes``; real data also ``published`` counts and
provenance).

Synthetic:

* ``zipf`` — n items with s_i = n / i (Lyu et al. 2017 slides; Liu et al. 2024 Table 2: 10,000
  items, s_i = 10,000 / i, threshold 200).
* ``binary`` — n items, ``positives`` of them scoring ``high`` and the rest 0 (Liu et al. 2024
  Table 2: 10,000 items, positives score 1,000, threshold 500). Liu'24 does not state how many
  items are positive; the default is 50 = the c its experiments use.
* ``lyu-zipf`` — Lyu et al. 2017's zipf dataset (slides: 1,000,000 records over 10,000 items):
  the integer supports of a Zipf law with exponent 1, s_i ≈ 10^6 / (H_10000 · i) ≈ 102,170 / i,
  about 10.2 times ``zipf``'s; see :func:`lyu_zipf` for the derivation.

Real, shipped inside the package (item counts, so ``load`` works offline): ``adult`` (UCI Adult
as LIBSVM a9a + a9a.t), ``t40i10d100k`` (the 755 items with support >= 1,000 exactly, 187 rare
items imputed — see :func:`impute_t40_rare`), ``retail``, ``bms-webview-1``, ``t10i4d100k``,
``chess``, ``mushroom``.

Real, not shipped: ``bms-pos``, ``kosarak``, ``aol``. :func:`fetch` downloads one from its public
home into :func:`cache_dir`, checks the published numbers of transactions and items and records
the file's sha256; ``load`` then reads it from the cache. With a local copy, use
:func:`from_transactions` (or :func:`fetch` with ``url=`` the file's path);
:func:`load_transactions` reads FIMI/SPMF transaction files (gzip accepted) into item counts.

Thresholds: :func:`lyu_threshold` (mean of the c-th and (c+1)-th largest scores, Lyu'17),
:func:`fixed_threshold` (Liu'24 Table 2), :func:`ding_threshold` (Ding'19: a random rank between
the top 2k and 8k).
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from svtjax import _validate
from svtjax.datasets import _registry, _shipped
from svtjax.datasets._fetch import ENV_VAR, fetch, load_cached, verify_counts
from svtjax.datasets._fetch import cache_root as cache_dir
from svtjax.datasets._readers import FORMATS, load_transactions
from svtjax.datasets._shipped import T40_TOTAL_OCCURRENCES, impute_t40_rare
from svtjax.datasets._thresholds import (
    THRESHOLD_RULES,
    RankedThreshold,
    ThresholdRule,
    ding_threshold,
    fixed_threshold,
    lyu_threshold,
)
from svtjax.datasets._types import (
    Dataset,
    DatasetNotAvailableError,
    DatasetVerificationError,
    DownloadError,
    ItemCounts,
)

__all__ = [
    "Dataset", "load", "names", "zipf", "binary", "lyu_zipf", "LYU17_ZIPF_RECORDS",
    "LYU17_ZIPF_ITEMS", "lyu_threshold",
    "ding_threshold", "fixed_threshold", "RankedThreshold", "ThresholdRule", "THRESHOLD_RULES",
    "canonical", "is_synthetic",
    "ItemCounts", "load_transactions", "from_transactions", "fetch", "cache_dir", "FORMATS",
    "impute_t40_rare", "T40_TOTAL_OCCURRENCES", "ENV_VAR",
    "DatasetNotAvailableError", "DatasetVerificationError", "DownloadError",
]


def canonical(name: str) -> str:
    """The registry name of a dataset name or alias (e.g. ``"BMS-WebView-1"`` ->
    ``"bms-webview-1"``); unknown names are returned unchanged (``load`` reports them)."""
    return _registry.canonical(name)


def is_synthetic(name: str) -> bool:
    """True for the generated datasets (``zipf``, ``binary``, ``lyu-zipf``), which take no
    ``cache_dir``."""
    return _registry.canonical(name) in _registry.SYNTHETIC


def zipf(n: int = 10_000) -> Dataset:
    """s_i = n / i for i = 1..n (Lyu et al. 2017 slides; Liu et al. 2024 Table 2)."""
    _validate.integer("n", n, minimum=1)
    scores = float(n) / np.arange(1, int(n) + 1, dtype=np.float64)
    thresholds = {}
    if int(n) == 10_000:
        thresholds = {"liu24": {"rule": "fixed", "threshold": 200.0, "c": 50,
                                "ref": f"{_registry.LIU24} (threshold); c = 50 in Figs. 7-8"}}
    return Dataset("zipf", scores, {
        "source": "synthetic: s_i = n / i (Liu et al. 2024 Table 2)",
        "num_items": int(n), "num_transactions": None, "thresholds": thresholds,
        "notes": "s_50 = 200 = Liu'24's threshold at n = 10,000, so exactly 50 items reach it. "
                 "Lyu et al. 2017's zipf dataset has 1,000,000 records over 10,000 items, "
                 "scores about 10.2 times these: load('lyu-zipf')."})


#: Lyu et al. 2017 slides, dataset table: "zipf 10,00,000 [records] 10,000 [items]".
LYU17_ZIPF_RECORDS = 1_000_000
LYU17_ZIPF_ITEMS = 10_000


def lyu_zipf(records: int = LYU17_ZIPF_RECORDS, n: int = LYU17_ZIPF_ITEMS) -> Dataset:
    """Lyu et al. 2017's zipf dataset: ``records`` records over ``n`` items, as item supports.

    Derivation. The slides' dataset table (the slides of Lyu, Su, Li 2017, "Experiment") lists
    ``zipf | 10,00,000 | 10,000`` under #Records and #Items; 10,00,000 is Indian digit grouping
    for 1,000,000 (ten lakh). The paper (Sec. 5) and slides state no exponent; Zipf's law
    without one is exponent 1, P(item i) = (1/i)/H_n with H_n = Σ_{j<=n} 1/j (H_10000 =
    9.78760603604...), and a record is one occurrence of one item (the only reading under which
    a record count and an item count determine the supports; transaction data would need the
    record length). The supports are then the expected counts N·(1/i)/H_n, s_1 = 102,169.8,
    s_50 = 2,043.4, s_300 = 340.6 — 10^6/H_10000 = 102,170 / i, about 10.2 times
    :func:`zipf`'s 10,000 / i (Liu et al. 2024's Zipf). Supports of a real dataset are
    integers summing to its number of records, so the expected counts are rounded by largest
    remainder (floor, then +1 for the items with the largest fractional parts, ties to the
    lower index) to integers summing to exactly N; every support differs from its expectation
    by less than 1. Item order: i = 1..n (descending supports).

    The top 328 supports are distinct (s_i − s_{i+1} ≈ 102,170/i² > 0.95 there), so the top-c set
    and :func:`lyu_threshold` are unambiguous for Lyu'17's c = 25..300; further down, rounding
    ties neighbouring items (first at i = 328, 329), as integer supports do.

    Args:
      records: N, the number of records (>= 1).
      n: the number of items (>= 1).

    Returns:
      The dataset ``"lyu-zipf"``: float64 integer-valued scores, ``metadata["expected"]`` the
      unrounded expectations.
    """
    _validate.integer("records", records, minimum=1)
    _validate.integer("n", n, minimum=1)
    weights = 1.0 / np.arange(1, int(n) + 1, dtype=np.float64)
    expected = int(records) * weights / weights.sum()
    counts = np.floor(expected).astype(np.int64)
    extra = int(records) - int(counts.sum())
    order = np.argsort(-(expected - counts), kind="stable")
    counts[order[:extra]] += 1
    thresholds = {}
    if (int(records), int(n)) == (LYU17_ZIPF_RECORDS, LYU17_ZIPF_ITEMS):
        thresholds = {"lyu17": {**_registry.LYU17_RULE, "ref": "Lyu et al. 2017 slides (zipf "
                                "dataset); threshold rule as in the paper, Sec. 5"}}
    return Dataset("lyu-zipf", counts.astype(np.float64), {
        "source": f"synthetic: {int(records):,} records over {int(n):,} items drawn by Zipf's "
                  "law (exponent 1) at their expected counts, rounded by largest remainder "
                  "(Lyu et al. 2017 slides, dataset table)",
        "num_items": int(n), "num_transactions": int(records), "thresholds": thresholds,
        "expected": expected,
        "notes": "support s_i = round(N / (H_n i)); Lyu'17 reports SER on it in the slides "
                 "only (the paper's Table 3 uses BMS-POS, Kosarak, AOL)."})


def binary(n: int = 10_000, positives: int = 50, high: float = 1000.0) -> Dataset:
    """``positives`` items score ``high``, the other n - positives score 0 (Liu et al. 2024).

    Liu'24 Table 2: 10,000 items, positives score 1,000, negatives 0, threshold 500. The paper
    does not state the number of positives; the default, 50, equals its c = 50, so the top-c set
    is exactly the positives.
    """
    _validate.integer("n", n, minimum=1)
    _validate.integer("positives", positives, minimum=0)
    _validate.scalar("high", high)
    _validate.nonnegative("high", high)
    if positives > n:
        raise ValueError(f"positives must be at most n={n}; got {positives}")
    scores = np.zeros(int(n))
    scores[: int(positives)] = float(high)
    thresholds = {}
    if float(high) == 1000.0:
        thresholds = {"liu24": {"rule": "fixed", "threshold": 500.0, "c": 50,
                                "ref": f"{_registry.LIU24} (threshold); c = 50 in Figs. 7-8"}}
    return Dataset("binary", scores, {
        "source": "synthetic: binary scores (Liu et al. 2024 Table 2, Sec. 5.1)",
        "num_items": int(n), "positives": int(positives), "num_transactions": None,
        "thresholds": thresholds,
        "notes": "positives come first in item order; the number of positives is not stated in "
                 "Liu'24 (default 50 = its c)."})


_BUILTIN = {"zipf": zipf, "binary": binary, "lyu-zipf": lyu_zipf}


def names() -> list[str]:
    """Every registered dataset: synthetic, shipped, then fetch-only (``bms-pos``, ...)."""
    shipped = [n for n, s in _registry.SPECS.items() if s.shipped]
    remote = [n for n, s in _registry.SPECS.items() if not s.shipped]
    return list(_BUILTIN) + shipped + remote


def load(name: str, **kwargs: Any) -> Dataset:
    """Loads the dataset registered as ``name``.

    Args:
      name: see :func:`names` (case-insensitive; aliases such as ``a9a``, ``bms1``, ``t40``).
      **kwargs: for ``zipf``/``binary``/``lyu-zipf``, their builder's arguments. For real datasets:
        ``cache_dir`` (where :func:`fetch` stored data), ``from_cache`` (bool: read the fetched
        copy even if the package ships one — for ``t40i10d100k`` that gives the exact counts of
        all 942 items), and for ``t40i10d100k`` ``rare_items`` (``"impute"``, default, or
        ``"drop"`` to keep only the 755 items known exactly).

    Raises:
      ValueError: unknown name or argument.
      DatasetNotAvailableError: a fetch-only dataset (``bms-pos``, ``kosarak``, ``aol``) that is
        not in the cache: run :func:`fetch` or use :func:`from_transactions`.
    """
    key = _registry.canonical(name)
    if key in _BUILTIN:
        builder = _BUILTIN[key]
        allowed = list(inspect.signature(builder).parameters)
        unknown = sorted(set(kwargs) - set(allowed))
        if unknown:
            hint = _validate.suggest(unknown[0], allowed)
            raise ValueError(f"unknown argument(s) {unknown}{hint} for dataset {key!r}; allowed: "
                             f"{allowed}")
        for arg in ("n", "positives"):
            _validate.scalar(arg, kwargs.get(arg))
        return builder(**kwargs)
    if key not in _registry.SPECS:
        raise ValueError(f"unknown dataset {name!r}{_validate.suggest(key, names())}; available "
                         f"datasets are: {', '.join(names())}")
    spec = _registry.SPECS[key]
    allowed = {"cache_dir", "from_cache"} | ({"rare_items"} if key == "t40i10d100k" else set())
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(f"unknown argument(s) {unknown}{_validate.suggest(unknown[0], allowed)}"
                         f" for dataset {key!r}; allowed: {sorted(allowed)}")
    if spec.shipped and not kwargs.get("from_cache", False):
        return _shipped.load_shipped(spec, rare_items=kwargs.get("rare_items", "impute"))
    return load_cached(spec, kwargs.get("cache_dir"))


def _sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def from_transactions(path: str | os.PathLike | Sequence[str | os.PathLike],
                      name: str = "custom", *, format: str | None = None,
                      verify: bool = True) -> Dataset:
    """A :class:`Dataset` of item support counts from the user's transaction file(s).

    With a registered ``name`` (e.g. ``"kosarak"``, ``"bms-pos"``) the dataset gets that entry's
    metadata (paper thresholds, published counts), its reader format by default, and — unless
    ``verify=False`` — its published numbers of transactions and items are checked. To keep the
    result for :func:`load`, cache it with ``fetch(name, url=path)`` instead.

    Args:
      path: a FIMI/SPMF transaction file (or see ``format``), plain or gzip; or several files.
      name: a registered real dataset, or any other label for the user's own data.
      format: ``"fimi"``, ``"libsvm"``, ``"pairs"`` or ``"aol"`` (see
        :func:`load_transactions`); default: the registered format, else ``"fimi"``.
      verify: check a registered dataset's published counts.

    Raises:
      DatasetVerificationError: the counts differ from the published ones.
    """
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    key = _registry.canonical(name)
    spec = _registry.SPECS.get(key)
    counts = load_transactions(paths, format=format or (spec.format if spec else "fimi"))
    files = [{"file": os.fspath(p), "bytes": os.path.getsize(p), "sha256": _sha256(p)}
             for p in paths]
    if spec is None:
        custom = _registry.Spec(
            name=key, title=name, source=f"user file(s): {', '.join(map(os.fspath, paths))}",
            num_transactions=None, num_items=counts.num_items, published=(), thresholds={},
            urls=(), notes="user-supplied transactions")
        return _shipped.to_dataset(custom, counts, {"origin": "file", "files": files,
                                                    "imputed_items": 0})
    check = (verify_counts(spec, counts, what=f"file(s) {', '.join(map(os.fspath, paths))}")
             if verify else {"verified": False})
    return _shipped.to_dataset(spec, counts, {"origin": "file", "files": files,
                                              "verified": check["verified"],
                                              "imputed_items": 0})
