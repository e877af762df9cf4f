"""The checks of a sweep configuration, section by section, before anything compiles: names
(with a "did you mean"), ranges, values listed twice, numbers the ``dtype`` cannot hold,
``[plot]`` axes (:func:`plot_axes`), and the datasets themselves (loaded; c against their
size; each mechanism's own checks of its inputs)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional, Sequence

import numpy as np

from svtjax import _validate
from svtjax.sweep.config import (
    _SWEEP_KEYS,
    _TOP_KEYS,
    BUILTIN_THRESHOLD_RULES,
    EXTRA_METRICS,
    Metric,
    SweepConfig,
    ThresholdRule,
    _extensions,
    _fail,
    metric_names,
)
from svtjax.sweep.grid import Point, _load_datasets, _threshold, expand, param_columns

MIN_BUDGET_MB = 1 / 1024
MAX_BUDGET_MB = 2.0**30
"""The range of ``[sweep] memory_budget_mb`` (1 kB to 1 PB): the planner's chunk arithmetic is
exact there, and a budget beyond any machine's memory means nothing."""


def _suggest(word: Any, choices) -> str:
    return _validate.suggest(word, list(choices))


def _validate_config(raw: dict, extra_metrics: tuple = (), threshold_rules: tuple = ()
                     ) -> SweepConfig:
    """The :class:`SweepConfig` of a raw config: each section checked in turn, then every
    point built and every dataset loaded, so that nothing a run would refuse compiles first."""
    from svtjax import metrics as M

    extra_metrics = _extensions("metrics", extra_metrics, Metric,
                                list(M.METRICS) + list(EXTRA_METRICS))
    threshold_rules = _extensions("threshold rules", threshold_rules, ThresholdRule,
                                  ["lyu"] + list(BUILTIN_THRESHOLD_RULES))
    rule_names = list(BUILTIN_THRESHOLD_RULES) + [r.name for r in threshold_rules]
    _check_tables(raw)
    sweep = dict(raw.get("sweep", {}))
    settings = _sweep_settings(sweep)
    settings.update(_sweep_numbers(sweep, settings["dtype"], rule_names))
    metric_list = _metric_list(sweep, extra_metrics)
    datasets = _datasets(sweep)
    grid = _grid(raw)
    tables = _mechanism_tables(raw, grid)
    plot = _plot(raw)
    config = SweepConfig(datasets=tuple(datasets), mechanisms=tuple(tables), grid=grid,
                         metrics=tuple(metric_list), plot=plot, raw=raw,
                         extra_metrics=tuple(m for m in extra_metrics if m.name in metric_list),
                         threshold_rules=threshold_rules, **settings)
    # builds every mechanism (bad parameter values, or numbers the dtype cannot hold, fail
    # here), loads every dataset and checks c against it: all before anything compiles
    points = expand(config)
    _check_datasets(config, points)
    if plot:
        plot_axes(config, points=points)
    return dataclasses.replace(config, points=tuple(points))


def _check_tables(raw: dict) -> None:
    """The top-level tables: known names, each a table (``[[mechanisms]]`` a list of them), and
    only known ``[sweep]`` keys."""
    for key, value in raw.items():
        if key not in _TOP_KEYS:
            raise _fail(f"unknown top-level table {key!r}{_suggest(key, _TOP_KEYS)}; valid: "
                        f"{sorted(_TOP_KEYS)}")
        if key != "mechanisms" and not isinstance(value, dict):
            raise _fail(f"[{key}] must be a table of key = value; got {value!r}")
    bad = [k for k in dict(raw.get("sweep", {})) if k not in _SWEEP_KEYS]
    if bad:
        raise _fail(f"unknown [sweep] key(s) {bad}{_suggest(bad[0], _SWEEP_KEYS)}; valid: "
                    f"{sorted(_SWEEP_KEYS)}")


def _sweep_settings(sweep: dict) -> dict:
    """``[sweep]`` name, description, trials, seed, shuffle, exact (with its accuracy) and
    dtype, checked: the :class:`SweepConfig` fields of the same names."""
    name = sweep.get("name", "sweep")
    if not isinstance(name, str) or not name.strip() or name in (".", "..") \
            or any(sep in name for sep in ("/", "\\")):
        raise _fail(f"[sweep] name must be a non-empty string without / or \\ (it names the "
                    f"default output directory); got {name!r}")
    if not isinstance(sweep.get("description", ""), str):
        raise _fail(f"[sweep] description must be a string; got {sweep['description']!r}")
    trials = sweep.get("trials", 1000)
    if isinstance(trials, bool) or not isinstance(trials, int) or not \
            1 <= trials <= _validate.INT32_MAX:
        raise _fail(f"[sweep] trials must be an integer from 1 to {_validate.INT32_MAX}; "
                    f"got {trials!r}")
    seed = sweep.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise _fail(f"[sweep] seed must be an integer in [0, 2**64) (each seed its own trials, "
                    f"as svtjax.simulate); got {seed!r}")
    shuffle = sweep.get("shuffle", True)
    if not isinstance(shuffle, bool):
        raise _fail(f"[sweep] shuffle must be true or false; got {shuffle!r}")
    exact = sweep.get("exact", False)
    if not isinstance(exact, bool):
        raise _fail(f"[sweep] exact must be true or false (true adds the exact expected metrics "
                    f"of svtjax.exact beside the Monte Carlo ones); got {exact!r}")
    exact_accuracy = _exact_accuracy(sweep, exact)
    dtype = sweep.get("dtype", "float32")
    if not isinstance(dtype, str) or dtype not in ("float32", "float64"):
        raise _fail(f"[sweep] dtype must be \"float32\" or \"float64\"; got {dtype!r}")
    return {"name": name, "trials": trials, "seed": seed, "shuffle": shuffle, "exact": exact,
            "exact_accuracy": exact_accuracy, "dtype": dtype}


def _sweep_numbers(sweep: dict, dtype: str, rule_names: list) -> dict:
    """``[sweep]`` threshold, quantiles, memory_budget_mb and points_per_batch, checked: the
    :class:`SweepConfig` fields of the same names."""
    threshold = sweep.get("threshold", "lyu")
    if not (threshold == "lyu" or (isinstance(threshold, str) and threshold in rule_names)
            or (isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
                and math.isfinite(threshold))):
        rules = ", ".join(f'"{r}"' for r in rule_names)
        raise _fail(f"[sweep] threshold must be \"lyu\", a per-trial rule ({rules}) or a finite "
                    f"number; got {threshold!r}{_suggest(threshold, ['lyu'] + rule_names)}")
    if isinstance(threshold, (int, float)):
        try:
            _validate.fits("[sweep] threshold", threshold, dtype)
        except ValueError as err:
            raise _fail(str(err)) from None
    quantiles = sweep.get("quantiles", [])
    if not isinstance(quantiles, list) or not all(
            isinstance(q, (int, float)) and not isinstance(q, bool) and 0 <= q <= 1
            for q in quantiles):
        raise _fail(f"[sweep] quantiles must be a list of numbers in [0, 1]; got {quantiles!r}")
    _no_duplicates("[sweep] quantiles", quantiles)
    budget = sweep.get("memory_budget_mb", 256)
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not \
            MIN_BUDGET_MB <= budget <= MAX_BUDGET_MB:
        raise _fail(f"[sweep] memory_budget_mb must be a number of megabytes from "
                    f"{MIN_BUDGET_MB:g} to {MAX_BUDGET_MB:g}; got {budget!r}")
    ppb = sweep.get("points_per_batch", "auto")
    if ppb != "auto" and (isinstance(ppb, bool) or not isinstance(ppb, int) or not
                          1 <= ppb <= _validate.INT32_MAX):
        raise _fail(f"[sweep] points_per_batch must be \"auto\" or an integer from 1 to "
                    f"{_validate.INT32_MAX}; got {ppb!r}")
    return {"threshold": threshold, "quantiles": tuple(float(q) for q in quantiles),
            "memory_budget_mb": float(budget), "points_per_batch": ppb}


def _metric_list(sweep: dict, extra_metrics: tuple) -> list:
    """``[sweep] metrics``: known names (built in or the config's own), at least one, each
    once."""
    metric_list = sweep.get("metrics", list(SweepConfig.metrics))
    if isinstance(metric_list, str):
        metric_list = [metric_list]
    if not isinstance(metric_list, list):
        raise _fail(f"[sweep] metrics must be a list of metric names; got {metric_list!r}")
    valid_metrics = metric_names() + [m.name for m in extra_metrics]
    for m in metric_list:
        if not isinstance(m, str) or m not in valid_metrics:
            raise _fail(f"unknown metric {m!r}{_suggest(m, valid_metrics)}; valid metrics: "
                        f"{', '.join(valid_metrics)}")
    if not metric_list:
        raise _fail("[sweep] metrics must name at least one metric")
    _no_duplicates("[sweep] metrics", metric_list)
    return metric_list


def _datasets(sweep: dict) -> list[tuple]:
    """``[sweep] datasets``: ``(dataset id, load name, load kwargs)`` per entry, each a known
    dataset, listed once, with a valid ``permute``."""
    from svtjax import datasets as ds

    entries = sweep.get("datasets", ["zipf"])
    if isinstance(entries, (str, dict)):
        entries = [entries]
    if not isinstance(entries, list):
        raise _fail(f"[sweep] datasets must be a list of names or tables; got {entries!r}")
    datasets, seen = [], set()
    for entry in entries:
        if isinstance(entry, str):
            load_name, kwargs = entry, {}
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            kwargs = {k: v for k, v in entry.items() if k != "name"}
            load_name = entry["name"]
        else:
            raise _fail(f"a dataset must be a name or a table with a name; got {entry!r}")
        if "permute" in kwargs:
            perm = kwargs["permute"]
            parts = perm if isinstance(perm, list) else [perm]
            if not parts or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                    for x in parts):
                raise _fail(f"dataset {load_name!r}: permute must be an integer >= 0 or a list "
                            f"of them (a seed of the fixed item order); got {perm!r}")
        if ds._registry.canonical(load_name) not in ds.names():
            raise _fail(f"unknown dataset {load_name!r}{_suggest(load_name, ds.names())}; known "
                        f"datasets: {', '.join(ds.names())}")
        ident = load_name + ("[" + ",".join(f"{k}={v}" for k, v in sorted(kwargs.items())) + "]"
                             if kwargs else "")
        if ident in seen:
            raise _fail(f"dataset {ident!r} is listed twice")
        seen.add(ident)
        datasets.append((ident, load_name, kwargs))
    if not datasets:
        raise _fail("[sweep] datasets must name at least one dataset")
    return datasets


def _grid(raw: dict) -> dict:
    """``[grid]``: each axis a non-empty list of distinct values; ``c`` (default ``[50]``)
    positive integers."""
    grid = {}
    for k, v in dict(raw.get("grid", {})).items():
        values = v if isinstance(v, list) else [v]
        if not isinstance(k, str):
            raise _fail(f"[grid] keys must be parameter names; got {k!r}")
        if not values:
            raise _fail(f"[grid] {k} is an empty list")
        _no_duplicates(f"[grid] {k}", values)
        grid[k] = values
    grid.setdefault("c", [50])
    for c in grid["c"]:
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= _validate.INT32_MAX:
            raise _fail(f"[grid] c must hold integers from 1 to {_validate.INT32_MAX}; got {c!r}")
    return grid


def _mechanism_tables(raw: dict, grid: dict) -> list[dict]:
    """``[[mechanisms]]``: each table checked (:func:`_mechanism_table`) and labelled, the labels
    distinct, a parameter set in one place (the grid or the table), and every grid axis a
    parameter of some mechanism of the sweep."""
    import svtjax

    mechs = raw.get("mechanisms")
    if not isinstance(mechs, list) or not mechs:
        raise _fail("the config needs at least one [[mechanisms]] table with a name")
    tables, labels = [], set()
    for table in mechs:
        table = _mechanism_table(table)
        if table["label"] in labels:
            raise _fail(f"two [[mechanisms]] tables share the label {table['label']!r}; give "
                        "each a distinct label")
        labels.add(table["label"])
        tables.append(table)
    _check_set_once(raw.get("grid", {}), grid, tables)
    for axis in grid:
        if axis == "c":
            continue
        if not any(axis in svtjax.mechanisms.parameters(t["name"]) for t in tables):
            every = sorted({k for t in tables for k in svtjax.mechanisms.parameters(t["name"])})
            raise _fail(f"[grid] axis {axis!r} is not a parameter of any mechanism in the sweep"
                        f"{_suggest(axis, every)}")
    return tables


def _mechanism_table(table: Any) -> dict:
    """One ``[[mechanisms]]`` table, checked: a registered name, parameters it takes (and its
    own ``c``), values listed once, a string label; returned with its label filled in."""
    import svtjax

    if not isinstance(table, dict) or not isinstance(table.get("name"), str):
        raise _fail(f"every [[mechanisms]] table needs a name; got {table!r}")
    mname = table["name"]
    known = svtjax.names()
    if mname not in known:
        raise _fail(f"unknown mechanism {mname!r}{_suggest(mname, known)}; registered "
                    f"mechanisms are: {', '.join(known)}; a mechanism of your own is "
                    "loaded with --plugin FILE.py (or [sweep] plugins = [\"FILE.py\"])")
    params = svtjax.mechanisms.parameters(mname)
    for key in table:
        if key in ("name", "label"):
            continue
        if isinstance(table[key], list):
            _no_duplicates(f"{mname}: {key}", table[key])
        if key == "c":  # the table's own top-c size, also for mechanisms that take k
            for c in table[key] if isinstance(table[key], list) else [table[key]]:
                if isinstance(c, bool) or not isinstance(c, int) or not \
                        1 <= c <= _validate.INT32_MAX:
                    raise _fail(f"{mname}: c must be an integer from 1 to "
                                f"{_validate.INT32_MAX} or a list of them; got "
                                f"{table[key]!r}")
            continue
        if key not in params:
            raise _fail(f"{mname} does not take parameter {key!r}{_suggest(key, params)}; "
                        f"valid parameters are: {', '.join(params)}")
    label = table.get("label") or _default_label(table)
    if not isinstance(label, str):
        raise _fail(f"{mname}: label must be a string; got {label!r}")
    return {**table, "label": label}


def _check_set_once(given_grid: dict, grid: dict, tables: list[dict]) -> None:
    """Refuses a parameter that a mechanism table sets to other values than the ``[grid]``."""
    for table in tables:
        for key, value in table.items():
            if key in ("name", "label") or key not in given_grid:
                continue
            mine = [_value_key(v) for v in (value if isinstance(value, list) else [value])]
            if mine != [_value_key(v) for v in grid[key]]:
                raise _fail(f"{table['label']} ({table['name']}): {key} = {value!r} conflicts "
                            f"with [grid] {key} = {grid[key]!r}; set a parameter in one place "
                            "(the [grid] for every mechanism, or the [[mechanisms]] table for "
                            "this one)")


def _plot(raw: dict) -> dict:
    """``[plot]``: only ``x``, ``y`` and a true/false ``logx`` (the axes are checked against
    the points by :func:`plot_axes`)."""
    plot = dict(raw.get("plot", {}))
    for key in plot:
        if key not in ("x", "y", "logx"):
            raise _fail(f"unknown [plot] key {key!r}{_suggest(key, ['x', 'y', 'logx'])}; valid: "
                        "x, y, logx")
    if not isinstance(plot.get("logx", False), bool):
        raise _fail(f"[plot] logx must be true or false (default: by the x values' span); got "
                    f"{plot['logx']!r}")
    return plot


EXACT_ACCURACY_KEYS = {
    "tol": "absolute error target per panel of the quadrature rule (default 1e-16)",
    "kink_tol": "cost of an unresolved kink of the query noise inside a panel (default 1e-8)",
}
"""The keys of ``[sweep] exact_accuracy``: error targets of ``svtjax.exact.quadrature``."""


def _exact_accuracy(sweep: dict, exact: bool) -> dict:
    """``[sweep] exact_accuracy``, checked: a table of :data:`EXACT_ACCURACY_KEYS`, each a
    number in (0, 1), and only with ``exact = true``."""
    accuracy = sweep.get("exact_accuracy", {})
    valid = ", ".join(sorted(EXACT_ACCURACY_KEYS))
    if not isinstance(accuracy, dict):
        raise _fail(f"[sweep] exact_accuracy must be a table of error targets ({valid}), e.g. "
                    f"{{ kink_tol = 1e-4 }}; got {accuracy!r}")
    if accuracy and not exact:
        raise _fail("[sweep] exact_accuracy is set but exact is not true: it sets the accuracy "
                    "of the exact columns, so set exact = true or remove it")
    out = {}
    for key, value in accuracy.items():
        if key not in EXACT_ACCURACY_KEYS:
            raise _fail(f"unknown [sweep] exact_accuracy key {key!r}"
                        f"{_validate.suggest(key, sorted(EXACT_ACCURACY_KEYS))}; valid: {valid}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not 0 < value < 1:
            raise _fail(f"[sweep] exact_accuracy.{key} must be a number in (0, 1) (the "
                        f"{EXACT_ACCURACY_KEYS[key]}); got {value!r}")
        out[key] = float(value)
    return out


def _no_duplicates(where: str, values: Sequence) -> None:
    """Refuses a list that holds a value twice (``epsilon = [0.5, 0.5]`` would compute the same
    point twice and give duplicate rows); 1 and 1.0 count as the same value."""
    seen = set()
    for v in values:
        key = _value_key(v)
        if key in seen:
            raise _fail(f"{where} lists {v!r} more than once; give each value once")
        seen.add(key)


def _value_key(v: Any) -> Any:
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, float)):
        return ("number", float(v)) if not math.isnan(float(v)) else ("nan",)
    if isinstance(v, (list, tuple)):
        return ("list",) + tuple(_value_key(x) for x in v)
    if isinstance(v, str):
        return ("str", v)
    return ("repr", repr(v))


def _check_datasets(config: "SweepConfig", points: Sequence["Point"]) -> None:
    """Loads every dataset (bad arguments fail here) and checks every point's c against it,
    the per-trial threshold rule's own conditions, and that the scores fit the dtype."""
    scores_by = _load_datasets(config)
    for ident, scores in scores_by.items():
        try:
            _validate.fits(f"dataset {ident!r}: a score", scores, config.dtype)
        except ValueError as err:
            raise _fail(str(err)) from None
    rule = config.threshold_rule()
    for p in points:
        n = scores_by[p.dataset].shape[0]
        if p.c >= n:
            raise _fail(f"c={p.c} must be smaller than the {n} items of dataset {p.dataset!r}")
        if rule is not None and rule.check is not None:
            try:
                rule.check(n, p.c)
            except ValueError as err:
                raise _fail(f"dataset {p.dataset!r}, c={p.c}: {err}") from err
    _check_inputs(config, points, scores_by)


def _check_inputs(config: "SweepConfig", points: Sequence["Point"],
                  scores_by: dict[str, np.ndarray]) -> None:
    """A mechanism's own checks of its inputs (``_prepare`` where its class has one, e.g.
    svt-gap's refusal of gaps the dtype cannot hold), on each point's scores and threshold in
    the sweep's dtype, as ``svtjax.simulate`` runs them: a sweep never computes what a
    simulation would refuse. Points of one class share one check per (dataset, c)."""
    from svtjax.mechanisms import Mechanism

    dtype = np.float64 if config.dtype == "float64" else np.float32
    seen = set()
    for p in points:
        mech = p.build(checked=False)
        own = getattr(type(mech), "_prepare", None)
        if own is None or own is getattr(Mechanism, "_prepare", None):
            continue
        key = (p.mechanism, p.params, p.dataset, p.c)
        if key in seen:
            continue
        seen.add(key)
        scores = np.asarray(scores_by[p.dataset], dtype)
        thr = _threshold(config, scores_by[p.dataset], p.c)
        if not np.isfinite(thr):  # a per-trial rule draws T among the scores: the widest gaps
            thr = float(np.min(scores_by[p.dataset]))
        thresholds = np.full(scores.shape, thr, dtype)
        try:
            mech._prepare(scores, thresholds)
        except (TypeError, ValueError) as err:
            raise _fail(f"{p.label} ({p.mechanism}) on dataset {p.dataset!r}, c={p.c}: "
                        f"{' '.join(str(err).split())}") from err


def plot_axes(config: "SweepConfig", x: Optional[str] = None, y: Optional[str] = None, *,
              points: Optional[Sequence["Point"]] = None) -> tuple[str, str]:
    """The axes a plot of this sweep draws: ``x`` (a parameter column of the results holding
    numbers) and ``y`` (a metric of the sweep): the given ones, else the config's ``[plot]``
    ones, else ``epsilon`` (or the first numeric parameter column; ``c`` always is one) and
    the first metric. ``svtjax sweep`` checks ``--x``/``--y`` with it before running.

    Raises:
      SweepConfigError: ``x`` is not a numeric parameter column or ``y`` not a metric of the
        sweep (the message lists the valid ones).
    """
    points = expand(config) if points is None else points
    columns = param_columns(points)

    def numeric(col):
        for p in points:
            v = dict(p.axes).get(col, dict(p.params).get(col))
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return True
        return False

    numeric_columns = [c for c in columns if numeric(c)]
    x = x or config.plot.get("x") or ("epsilon" if "epsilon" in numeric_columns
                                      else numeric_columns[0])
    y = y or config.plot.get("y") or config.metrics[0]
    if y not in config.metrics:
        raise _fail(f"the plot's y {y!r} is not a metric of this sweep"
                    f"{_validate.suggest(y, config.metrics)}; its metrics: "
                    f"{', '.join(config.metrics)}")
    if x not in numeric_columns:
        what = "holds no numbers" if x in columns else "is not a parameter of this sweep"
        raise _fail(f"the plot's x {x!r} {what}{_validate.suggest(x, numeric_columns)}; "
                    f"choose one of: {', '.join(numeric_columns)}")
    return x, y


def _default_label(table: dict) -> str:
    extra = ",".join(f"{k}={v}" for k, v in table.items()
                     if k not in ("name", "label") and not isinstance(v, list))
    return f"{table['name']}[{extra}]" if extra else table["name"]


