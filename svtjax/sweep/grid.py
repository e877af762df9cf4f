"""A sweep's grid: its points (:class:`Point`, :func:`expand`), each one's seed and content
hash, the results' parameter columns, and the datasets the points run on (loaded once, with the
point's threshold)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import math
from typing import Any, Callable, Optional, Sequence

import numpy as np

from svtjax import _validate
from svtjax._identity import class_code_hash, code_version, user_code_hash
from svtjax.sweep.config import SweepConfig, _fail


@dataclasses.dataclass(frozen=True)
class Point:
    """One grid point: a dataset, a mechanism with its parameters, and the top-c size."""

    dataset: str
    mechanism: str
    label: str
    params: tuple  # sorted ((name, value), ...), what svtjax.get receives
    c: int
    axes: tuple  # sorted ((name, value), ...): the swept values, for the results' columns

    def describe(self, config: SweepConfig) -> dict:
        """Everything that determines this point's random numbers (not trials or metrics)."""
        return {"sweep_seed": config.seed, "dataset": self.dataset, "mechanism": self.mechanism,
                "params": [[k, _jsonable(v)] for k, v in self.params], "c": self.c,
                "threshold": config.threshold, "shuffle": config.shuffle, "dtype": config.dtype}

    def seed(self, config: SweepConfig) -> int:
        """The point's seed: a hash of :meth:`describe` (31 bits)."""
        text = json.dumps(self.describe(config), sort_keys=True)
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little") & 0x7FFFFFFF

    def point_id(self, config: SweepConfig) -> str:
        """Content hash of the point, what it computes (trials, metrics) and the code version
        (with the source of any registered metric it uses, and its quantiles)."""
        import svtjax

        what = {**self.describe(config), "trials": config.trials,
                "metrics": sorted(config.metrics), "code": code_version(),
                "mechanism_code": class_code_hash(svtjax.mechanisms.entry(self.mechanism).cls)}
        registered = {m.name: user_code_hash(m.fn, m.prepare) for m in config.extra_metrics}
        if registered:
            what["metric_code"] = registered
        rule = config.threshold_rule()
        if rule is not None:
            what["threshold_code"] = user_code_hash(rule.draw)
        if config.quantiles:
            what["quantiles"] = list(config.quantiles)
        text = json.dumps(what, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def build(self, checked: bool = True):
        """The point's mechanism: ``svtjax.get`` with every check, or (``checked=False``, for
        the points of a validated config) the registered class called directly."""
        import svtjax

        if not checked:
            return svtjax.mechanisms.entry(self.mechanism).cls(**dict(self.params))
        return svtjax.get(self.mechanism, **dict(self.params))


def _jsonable(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return repr(v)


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


MAX_POINTS = 100_000
"""The most points a sweep may hold: a larger grid is refused before any work (its points'
records and rows would not fit a results table one can read; split it into several sweeps)."""


def _accepted(name: str) -> dict:
    import svtjax

    return svtjax.mechanisms.parameters(name)


def _table_axes(config: SweepConfig, table: dict) -> dict[str, list]:
    """The axes of one mechanism table: the grid's that the mechanism takes (``c`` always),
    and the table's own values (a parameter is set in one place: see the config checks)."""
    accepted = _accepted(table["name"])
    axes = {k: v for k, v in config.grid.items() if k in accepted or k == "c"}
    for k, v in table.items():
        if k not in ("name", "label"):
            axes[k] = v if isinstance(v, list) else [v]
    return axes


def grid_size(config: SweepConfig) -> int:
    """The number of points of ``config``, counted without expanding the grid."""
    return len(config.datasets) * sum(math.prod(len(v) for v in _table_axes(config, t).values())
                                      for t in config.mechanisms)


def expand(config: SweepConfig) -> list[Point]:
    """Every grid point of ``config``, in a fixed order (dataset, mechanism table, axes).

    Raises:
      SweepConfigError: a parameter value a mechanism rejects (building it fails), or numbers
        the sweep's ``dtype`` cannot hold (``svtjax._validate.computable``).
    """
    if config.points:
        return list(config.points)
    size = grid_size(config)
    if size > MAX_POINTS:
        raise _fail(f"the sweep has {size:,} points; a sweep holds at most {MAX_POINTS:,} "
                    "(split it into several sweeps, or sweep fewer values per axis)")
    import svtjax

    sizes: Optional[dict] = None
    per_table = []  # each table's cells (params, c, swept axes), built and checked once
    for table in config.mechanisms:
        derived = _from_data(svtjax.mechanisms.entry(table["name"]).cls, table)
        if not derived:
            cells = _cells(config, table, {})
            per_table.append((table, {ident: cells for ident, _, _ in config.datasets}))
            continue
        if sizes is None:  # parameters the data determine: one set of cells per dataset size
            sizes = {ident: len(s) for ident, s in _load_datasets(config).items()}
        by_n = {n: _cells(config, table, derived, n) for n in sorted(set(sizes.values()))}
        per_table.append((table, {ident: by_n[sizes[ident]] for ident in sizes}))
    points = []
    for ident, _, _ in config.datasets:
        for table, cells in per_table:
            points += [Point(ident, table["name"], table["label"], params, c, swept)
                       for params, c, swept in cells[ident]]
    return points


def _from_data(cls: type, table: dict) -> dict[str, Callable]:
    """The parameters of ``cls`` that the table leaves to the data: fields whose metadata has
    ``from_data`` (``from_data(params, n, c)`` -> the value, or None where it does not apply)
    and that the table does not set."""
    return {f.name: f.metadata["from_data"] for f in dataclasses.fields(cls)
            if "from_data" in f.metadata and f.name not in table}


def _cells(config: SweepConfig, table: dict, derived: dict, n: Optional[int] = None) -> list:
    """One table's grid cells: (sorted params, c, swept axes), each mechanism built and checked
    (the first with every check of ``svtjax.get``, the others in the run's dtype)."""
    import svtjax

    name = table["name"]
    axes = _table_axes(config, table)
    accepted = _accepted(name)
    cls = svtjax.mechanisms.entry(name).cls
    keys = list(axes)
    cells = []
    for values in itertools.product(*(axes[k] for k in keys)):
        chosen = dict(zip(keys, values))
        c = int(chosen.pop("c"))
        params = dict(chosen)
        if "c" in accepted:
            params["c"] = c
        elif "k" in accepted and "k" not in params:
            params["k"] = c
        for key, rule in derived.items():
            value = rule(params, n, c)
            if value is not None:
                params[key] = value
        params = {k: _hashable(v) for k, v in params.items()}
        swept = {k: v for k, v in chosen.items() if len(axes[k]) > 1 or k in config.grid}
        swept["c"] = c
        try:
            mech = svtjax.get(name, **params) if not cells else cls(**params)
            _validate.computable(mech, config.dtype)
        except (TypeError, ValueError) as err:
            raise _fail(f"{table['label']} ({name}) with {params}: {err}") from err
        cells.append((tuple(sorted(params.items())), c, tuple(sorted(swept.items()))))
    return cells




def param_columns(points: Sequence[Point]) -> list[str]:
    """Parameter columns of the results: every swept parameter, ``c`` last."""
    cols: list[str] = []
    for p in points:
        for k, _ in p.axes:
            if k != "c" and k not in cols:
                cols.append(k)
    return cols + ["c"]


# -- the datasets ------------------------------------------------------------------------------

def _threshold(config: SweepConfig, scores: np.ndarray, c: int) -> float:
    from svtjax import datasets as ds

    if config.threshold == "lyu":
        return ds.lyu_threshold(scores, c)
    if isinstance(config.threshold, str):  # a per-trial rule: no single threshold
        return math.nan
    return float(config.threshold)


@functools.lru_cache(maxsize=8)
def _load_scores(name: str, kwargs: str) -> np.ndarray:
    """A dataset's scores (float64, read-only), cached: a config is validated (which loads its
    datasets) and then run."""
    from svtjax import datasets as ds

    scores = np.array(ds.load(name, **json.loads(kwargs)).scores, np.float64)
    scores.setflags(write=False)
    return scores


def _load_datasets(config: SweepConfig) -> dict[str, np.ndarray]:
    from svtjax import datasets as ds

    out = {}
    for ident, name, kwargs in config.datasets:
        kwargs = dict(kwargs)
        permute = kwargs.pop("permute", None)
        try:
            try:
                text = json.dumps(kwargs, sort_keys=True)
            except (TypeError, ValueError):  # not a TOML-like value: load without the cache
                scores = np.asarray(ds.load(name, **kwargs).scores, np.float64)
            else:
                scores = _load_scores(name, text)
        except ds.DatasetNotAvailableError as err:
            raise _fail(f"dataset {name!r} is not available: {str(err).splitlines()[0]}") from err
        except (TypeError, ValueError) as err:
            raise _fail(f"dataset {ident!r}: {' '.join(str(err).split())}") from err
        if permute is not None:
            scores = scores[np.random.default_rng(permute).permutation(scores.shape[0])]
        out[ident] = scores
    return out
