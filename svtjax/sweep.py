"""Sweeps: datasets × mechanisms × parameter values × trials × metrics, one compile per structure.

A sweep is described by a TOML file or an equivalent dict (:func:`load_config`)::

    [sweep]
    name = "example"
    seed = 0                      # the sweep seed; every point's seed derives from it
    trials = 1000                 # trials per grid point
    datasets = ["zipf", { name = "zipf", n = 1000 }]   # svtjax.datasets.load(name, **kwargs)
    metrics = ["f1", "precision", "ser", "ncr"]        # svtjax.metrics.METRICS, picks,
                                                       # evaluated, cost, or registered
    shuffle = true                # a fresh random item order per trial (Lyu'17 Sec. 5)
    threshold = "lyu"             # mean of the c-th and (c+1)-th scores, or a number
    memory_budget_mb = 256        # working memory of one compiled chunk
    dtype = "float32"             # or "float64"
    points_per_batch = "auto"     # points vmapped together in one call (see below)
    quantiles = [0.5]             # optional: per-trial quantiles of every metric (columns q0.5)
    exact = false                 # true: exact expected metrics beside them (see below)
    exact_accuracy = { kink_tol = 1e-4 }   # optional: the exact rule's error targets

    [grid]                        # axes shared by every mechanism that takes the parameter
    epsilon = [0.1, 0.5, 1.0]
    c = [25, 50]                  # the top-c size: a mechanism's c (or k), and the metrics' c

    [[mechanisms]]
    name = "svt-s"                # registry name (svtjax.names())
    label = "SVT-S 1:c^(2/3)"     # optional; the legend and the `label` column
    monotonic = true              # a fixed parameter ...
    allocation = ["1:1", "1:c^(2/3)"]   # ... or a list: one more axis for this mechanism

    [[mechanisms]]
    name = "dpbook"
    c = 10                        # a table may fix its own top-c size (also with k-mechanisms)

    [plot]                        # optional: what `svtjax sweep` draws
    x = "epsilon"
    y = "f1"

A *point* is one (dataset, mechanism, parameter values). Points whose mechanisms share a pytree
structure (same class and static fields: noise family, flags, ``max_passes``), dataset and leaf
shapes form a *group*: the group runs through one jitted function ``vmap``-ed over a stacked
batch of ``points_per_batch`` mechanisms (numeric parameters such as ε and c are traced leaves),
so a group compiles once whatever its size. SVT kernels stop early, and a vmapped batch runs
until its slowest point halts: on a 2-core CPU a batch of 10 ε values took 3-7x the time of
the same points one at a time, on an H200 0.64x, so ``points_per_batch = "auto"`` (the
default) is 1 on a CPU and 10 on an accelerator (:data:`AUTO_POINTS_PER_BATCH`). Trials are
chunked so that (points per batch) × (trials per chunk) fits the memory budget; per-trial metric
values come back to the host per chunk and are merged there in fixed blocks of
:data:`BLOCK_TRIALS` trials, so the numbers never depend on the chunk size, the number of
devices or processes, or on which other points are in the sweep (the built-in metrics' sums
are exact, ``svtjax._fixedpoint``; a float sum inside a metric of one's own may change in its
last bit when several points are vmapped). A batch of one point is not vmapped: that
would only add tracing time (about 0.3 s per group on the 2-core CPU, which adds up over the
many small groups of an experiment), and without it a point's numbers equal ``svtjax.simulate``
reduced by the same metrics bit for bit.

Seeds: point ``p`` runs trial ``t`` with ``fold_in(key(point_seed(p)), t)``, where
``point_seed`` is a hash of the sweep seed, the dataset and the mechanism with its parameters,
so that adding or removing a point never changes another point's numbers, and the numbers of a
point equal ``svtjax.simulate(mech, scores, T, trials=..., seed=point_seed(p))`` reduced by the
same metrics.

Extension points, for experiments whose numbers are not a mean of a built-in metric. Nothing is
registered globally: a sweep's own pieces travel with its config.

* ``metrics=[Metric(name, fn, description, prepare=None)]`` (an argument of :func:`load_config`
  and :func:`run`) adds a named per-trial metric ``fn(outcome, scores, c, ctx) ->
  float[trials]`` computed inside the compiled chunk (``ctx``: :class:`MetricContext` with each
  trial's threshold, a per-trial key independent of the mechanism's, the point's mechanism and
  host-side values its ``prepare(mech, c)`` computed per point); the config names it in
  ``metrics`` like a built-in one.
* ``threshold`` may name a per-trial threshold rule: a built-in one
  (``svtjax.datasets.THRESHOLD_RULES``: ``"ding"``, Ding et al. 2019's random rank between the
  top 2c and 8c) or one passed as ``threshold_rules=[ThresholdRule(...)]``; each trial draws its
  own threshold inside the compiled chunk.
* ``[sweep] plugins = ["module", "path/to/file.py"]`` imports those modules before the config
  is checked: a plugin registers mechanisms of its own (``svtjax.mechanisms.register``), so
  that ``[[mechanisms]] name = ...`` can name them, and may define ``SWEEP_METRICS`` and
  ``SWEEP_THRESHOLD_RULES`` (sequences of :class:`Metric` / ``ThresholdRule``), which the
  config then knows by name.
* A dataset entry may carry ``permute = <seed>`` (an int or a list of ints): the items are put in
  the fixed order ``numpy.random.default_rng(seed).permutation(n)`` before anything runs (an
  item order fixed per dataset, where ``shuffle`` draws one per trial).

Seeds of the extensions: trial ``t`` of a point draws its threshold and its metric randomness
from ``fold_in(fold_in(fold_in(key(point_seed), 2**32 - 1), t), i)`` with ``i = 0`` (threshold)
and ``i = 1`` (metrics), never from the mechanism's key ``fold_in(key(point_seed), t)``; with a
per-trial threshold rule a point's numbers equal ``mech(fold_in(key(point_seed), t), scores,
threshold_t)`` trial by trial.

Exact columns (``exact = true``): every point whose mechanism has an exact law
(``svtjax.exact.supported()``: single-pass Figure 1 rules; resampling only with ``shuffle =
false``) gets the columns ``exact_ser``, ``exact_ncr``, ``exact_picks``, ``exact_correct`` (E[|S ∩
Top-c|]) and, beside a Monte Carlo metric of the same name and definition, ``exact_ncs``,
``exact_recall``, ``exact_fnr``, ``exact_evaluated`` (a fraction of the stream) and ``exact_cost``
(:data:`EXACT_METRICS`): ``svtjax.exact.expected_metrics`` of the point's mechanism, scores,
threshold, order and c, computed once per point on the host (CPU), in float64 where
``jax_enable_x64`` is on (recommended: ``dtype = "float64"``; in float32 the exact values carry
about 1e-6 of rounding, and the run says so in one line). The other points' exact columns are
empty, and the run logs one line per mechanism saying why; a per-trial threshold rule has no
single threshold to integrate over, so all are empty (one line). ``exact_accuracy`` (optional,
only with ``exact = true``) sets the quadrature rule's error targets, ``tol`` (per panel; default
1e-16) and ``kink_tol`` (an unresolved kink of the query noise; default 1e-8), of
``svtjax.exact.quadrature``: a sweep whose Monte Carlo means have standard errors of 1e-3 loses
nothing with ``kink_tol = 1e-4``, whose rule has fewer nodes (on the exact groups of ``svtjax
reproduce lyu2017``, SVT-S in random order on Lyu's Zipf and retail, c = 25 to 300: 10-44% less
time, E[SER] moved by at most 1.1e-10; ``benchmarks/bench_sweep_exact_accuracy.py``). The targets
are stored with the point's exact values, and a record computed with other targets is recomputed.
``exact`` is not part of a point's hash: the Monte Carlo numbers do not depend on it, so turning
it on or off reuses every finished point. The exact values are stored in the point's record with
the float dtype they were computed in; a reused record without them (or computed in another dtype)
gets them computed and rewritten, and a sweep without ``exact`` ignores them, so no resumed row is
wrong either way.

Output (``out`` directory): ``results.csv`` (tidy: one row per point × metric with mean, std,
standard error, 95% interval, trials, seconds), ``results.parquet`` when pyarrow is installed,
``results.json`` (the full config, package versions, devices, timing) and ``points/`` (one JSON
per finished point, named by a content hash of the point and the code version: rerunning an
interrupted sweep recomputes only the missing points). Every file is written under a unique
temporary name and renamed into place; one live sweep at a time writes to a directory (a lock,
``LOCK_FILE``, that dies with its process; a second sweep gets :class:`SweepLockedError`);
Ctrl-C raises :class:`SweepInterrupted` with the number of points saved.

Everything a config can get wrong is checked when it is loaded, before anything compiles:
names (with a "did you mean"), ranges, values listed twice, numbers the ``dtype`` cannot hold,
``[plot]`` axes (:func:`plot_axes`), and the datasets themselves (loaded; c against their size).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import hashlib
import importlib.resources
import itertools
import json
import math
import os
import pathlib
import platform
import socket
import sys
import time
import uuid
from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np

from svtjax import _interrupt, _validate
from svtjax._identity import class_code_hash, code_version, user_code_hash
from svtjax.datasets._thresholds import THRESHOLD_RULES as BUILTIN_THRESHOLD_RULES
from svtjax.datasets._thresholds import ThresholdRule

__all__ = [
    "BLOCK_TRIALS",
    "EXTRA_METRICS",
    "Metric",
    "MetricContext",
    "Point",
    "SweepConfig",
    "SweepConfigError",
    "SweepInterrupted",
    "SweepLockedError",
    "SweepResult",
    "ThresholdRule",
    "builtin_configs",
    "expand",
    "load_config",
    "metric_names",
    "plot_axes",
    "read_results",
    "run",
]

BLOCK_TRIALS = 256
"""Trials per host-side merge block: per-trial values are summed in blocks of this many trials
(in trial order) and the blocks merged in order, so results do not depend on the chunking."""

EXTRA_METRICS = {
    "picks": "number of items selected (⊤ answers counted by the metrics, at most c)",
    "evaluated": "fraction of the stream evaluated before halting",
    "cost": "privacy budget charged per trial (sum of Outcome.cost)",
}

_SWEEP_KEYS = {"name", "seed", "trials", "datasets", "metrics", "shuffle", "threshold",
               "memory_budget_mb", "dtype", "description", "points_per_batch", "quantiles",
               "plugins", "exact", "exact_accuracy"}
_TOP_KEYS = {"sweep", "grid", "mechanisms", "plot"}
_CSV_FIXED = ["dataset", "mechanism", "label"]
_CSV_STATS = ["threshold", "metric", "mean", "std", "se", "ci_low", "ci_high", "trials",
              "seconds", "seed", "point_id"]


class SweepConfigError(ValueError):
    """A sweep description that cannot be run; the message names the offending entry."""


class SweepLockedError(SweepConfigError):
    """Another live sweep is writing to the same output directory (see :func:`run`)."""


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run`: how many of the sweep's points are saved for a rerun.

    Attributes:
      saved: points whose results are in ``out/points`` (reused or finished before the
        interrupt); 0 without ``out``.
      total: points in the sweep.
      out: the output directory (None when nothing is written).
    """

    def __init__(self, saved: int, total: int, out: Optional[pathlib.Path]):
        super().__init__(saved, total, out)
        self.saved, self.total, self.out = saved, total, out

    def __str__(self) -> str:
        if self.out is None:
            return f"interrupted; nothing is saved (no output directory), {self.total} point(s)"
        return (f"interrupted; {self.saved} of {self.total} point(s) are saved in "
                f"{self.out / 'points'}: run the same sweep with the same out to resume")


def metric_names(config: Optional["SweepConfig"] = None) -> list[str]:
    """Every metric a sweep can report: ``svtjax.metrics.METRICS``, :data:`EXTRA_METRICS` and
    the config's own metrics (passed as ``metrics=`` to :func:`load_config` / :func:`run`, or
    defined by its plugins)."""
    from svtjax import metrics

    own = [] if config is None else [m.name for m in config.extra_metrics]
    return list(metrics.METRICS) + list(EXTRA_METRICS) + own


# -- extension points: metrics and per-trial threshold rules of one's own ---------------------

class MetricContext(NamedTuple):
    """What a metric of one's own sees besides the Outcomes, the scores and c (inside the jit).

    Attributes:
      thresholds: float[trials], each trial's threshold (the point's threshold broadcast, or
        the per-trial draws of a threshold rule).
      keys: key[trials], per-trial PRNG keys independent of the mechanism's (for randomness a
        metric adds, e.g. an independent measurement of the selected queries).
      mech: the point's mechanism (numeric parameters traced, structure static).
      k: the group's largest c (a Python int): a static bound on c for fixed-size arrays.
      prepared: metric name -> its ``prepare(mech, c)`` value for this point.
    """

    thresholds: Any
    keys: Any
    mech: Any
    k: int
    prepared: dict


@dataclasses.dataclass(frozen=True)
class Metric:
    """A per-trial metric of one's own, for a sweep to name in ``metrics``.

    Pass it to :func:`load_config` / :func:`run` as ``metrics=[Metric(...)]`` (or define it in a
    plugin module, see :func:`load_config`); nothing is registered globally.

    Attributes:
      name: the metric's name (not a built-in one).
      fn: ``fn(outcome, scores, c, ctx) -> float[trials]``, traced inside the compiled chunk:
        ``outcome`` a batch of Outcomes (leading trial axis), ``scores`` float[n] in stream
        order, ``c`` the point's top-c size (int32, traced), ``ctx`` a :class:`MetricContext`.
      description: one line, recorded in ``results.json``.
      prepare: optional ``prepare(mech, c) -> float`` (or a dict of floats, the same keys for
        every point), run on the host once per point with the concrete mechanism (for what
        cannot be traced, e.g. a quantile found by bisection); the value reaches ``fn`` as
        ``ctx.prepared[name]`` (a traced scalar, or a dict of them).

    A point's id (what resume matches) includes a hash of the source of ``fn`` and ``prepare``,
    so editing them recomputes the points that use the metric.
    """

    name: str
    fn: Callable
    description: str
    prepare: Optional[Callable] = None

    def __post_init__(self):
        from svtjax import metrics

        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a metric's name must be a non-empty string; got {self.name!r}")
        if self.name in metrics.METRICS or self.name in EXTRA_METRICS:
            raise ValueError(f"{self.name!r} is a built-in metric; give yours another name")
        if not callable(self.fn) or (self.prepare is not None and not callable(self.prepare)):
            raise TypeError(f"metric {self.name!r}: fn (and prepare, if given) must be "
                            "callable")


def _extensions(kind: str, given: Sequence, cls: type, builtin: Sequence[str]) -> tuple:
    out: dict[str, Any] = {}
    for item in given:
        if not isinstance(item, cls):
            raise TypeError(f"{kind} must be {cls.__name__} objects; got {item!r}")
        if item.name in builtin:
            raise SweepConfigError(f"{kind[:-1]} {item.name!r} is built in; give yours another "
                                   "name")
        if item.name in out and out[item.name] != item:
            raise SweepConfigError(f"two different {kind} are named {item.name!r}")
        out[item.name] = item
    return tuple(out.values())


# -- configuration -----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """A validated sweep description (see the module docstring for the TOML form).

    Attributes:
      name: sweep name (output directory default, plot titles).
      datasets: list of ``(dataset id, load name, load kwargs)``.
      mechanisms: list of mechanism tables (``name``, optional ``label``, parameters; list
        values are axes).
      grid: axes shared by every mechanism that takes the parameter (``c`` by every one).
      trials, seed, metrics, shuffle, threshold, memory_budget_mb, dtype, points_per_batch,
        quantiles: see the module docstring.
      plot: plot settings (``x``, ``y``).
      raw: the config as given (a dict), recorded in the sidecar JSON.
      extra_metrics: the config's own :class:`Metric` objects (``metrics=`` and plugins).
      threshold_rules: its own per-trial ``ThresholdRule`` objects.
      points: its grid points, expanded once when the config is validated (:func:`expand`).
    """

    name: str
    datasets: tuple
    mechanisms: tuple
    grid: dict
    trials: int
    seed: int = 0
    metrics: tuple = ("f1", "precision", "recall", "ser", "ncr")
    shuffle: bool = True
    threshold: Any = "lyu"
    memory_budget_mb: float = 256.0
    dtype: str = "float32"
    points_per_batch: Any = "auto"
    quantiles: tuple = ()
    exact: bool = False
    exact_accuracy: dict = dataclasses.field(default_factory=dict)
    plot: dict = dataclasses.field(default_factory=dict)
    raw: dict = dataclasses.field(default_factory=dict)
    extra_metrics: tuple = ()
    threshold_rules: tuple = ()
    points: tuple = dataclasses.field(default=(), compare=False, repr=False)

    def metric(self, name: str) -> Optional[Metric]:
        """The config's own :class:`Metric` called ``name`` (None for a built-in metric)."""
        return next((m for m in self.extra_metrics if m.name == name), None)

    def threshold_rule(self) -> Optional[ThresholdRule]:
        """The per-trial threshold rule the config names (None for ``"lyu"`` or a number)."""
        if not isinstance(self.threshold, str) or self.threshold == "lyu":
            return None
        own = {r.name: r for r in self.threshold_rules}
        return own.get(self.threshold, BUILTIN_THRESHOLD_RULES.get(self.threshold))

    def replace(self, **changes) -> "SweepConfig":
        raw = copy.deepcopy(self.raw)
        for k, v in changes.items():
            if k in _SWEEP_KEYS:
                raw.setdefault("sweep", {})[k] = v
        return dataclasses.replace(self, raw=raw, points=(), **changes)

    def with_extensions(self, metrics: Sequence[Metric] = (),
                        threshold_rules: Sequence[ThresholdRule] = ()) -> "SweepConfig":
        """The same config knowing these metrics and threshold rules as well (re-validated)."""
        if not metrics and not threshold_rules:
            return self
        return load_config(self.raw, metrics=tuple(self.extra_metrics) + tuple(metrics),
                           threshold_rules=tuple(self.threshold_rules) + tuple(threshold_rules))


def builtin_configs() -> dict[str, pathlib.Path]:
    """Built-in sweep configs shipped with the package: name -> path (``default`` among them)."""
    root = importlib.resources.files("svtjax") / "configs"
    return {p.name[:-5]: pathlib.Path(str(p)) for p in root.iterdir() if p.name.endswith(".toml")}


def _read_toml(path: pathlib.Path) -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError as err:
            raise SweepConfigError("reading TOML needs Python >= 3.11 or the tomli package "
                                   "(pip install tomli)") from err
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError as err:
        raise SweepConfigError(f"no such sweep config {str(path)!r}; give a TOML file or one of "
                               f"the built-in configs: {', '.join(sorted(builtin_configs()))}"
                               ) from err
    except tomllib.TOMLDecodeError as err:
        raise SweepConfigError(f"{path}: invalid TOML ({err})") from err
    except UnicodeDecodeError as err:
        raise SweepConfigError(f"{path}: not UTF-8 text (byte {err.start}: {err.reason}); a TOML "
                               "file is UTF-8") from err
    except RecursionError as err:
        raise SweepConfigError(f"{path}: values nested too deeply to read (a sweep config "
                               f"nests at most {MAX_NESTING} levels)") from err
    except OSError as err:
        raise SweepConfigError(f"cannot read the sweep config {str(path)!r}: "
                               f"{err.strerror or err}") from err


MAX_NESTING = 16
"""How deeply a sweep config's tables and arrays may nest (a real config uses 4)."""


def _check_nesting(raw: Any) -> None:
    """Refuses a config nested deeper than :data:`MAX_NESTING` (checked without recursion)."""
    stack = [(raw, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING:
            raise _fail(f"the config nests tables or arrays more than {MAX_NESTING} levels deep; "
                        "a sweep config needs at most 4")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend((v, depth + 1) for v in value)


def load_config(source: Any, *, metrics: Sequence[Metric] = (),
                threshold_rules: Sequence[ThresholdRule] = ()) -> SweepConfig:
    """A :class:`SweepConfig` from a TOML path, a built-in config name, or a dict.

    Args:
      source: a TOML path, a built-in config name, a dict, or a :class:`SweepConfig`.
      metrics: :class:`Metric` objects the config may name besides the built-in metrics.
      threshold_rules: ``ThresholdRule`` objects it may name as ``threshold``.

    A config's ``[sweep] plugins`` (module names, or paths of ``.py`` files relative to the
    TOML file) are imported first: a plugin may register mechanisms
    (``svtjax.mechanisms.register``) and define ``SWEEP_METRICS`` / ``SWEEP_THRESHOLD_RULES``.

    Raises:
      SweepConfigError: a missing or invalid file, an unknown key, mechanism, parameter,
        dataset or metric, a plugin that cannot be imported, or a value out of range; the
        message names it.
    """
    if isinstance(source, SweepConfig):
        return source.with_extensions(metrics, threshold_rules)
    base = None
    if isinstance(source, dict):
        _check_nesting(source)
        raw = copy.deepcopy(source)
    else:
        text = str(source)
        builtin = builtin_configs()
        if text in builtin and not os.path.exists(text):
            path = builtin[text]
        else:
            path = pathlib.Path(text)
        raw = _read_toml(path)
        base = path.parent
    _check_nesting(raw)
    plugin_metrics, plugin_rules = _load_plugins(raw, base)
    return _validate_config(raw, tuple(metrics) + plugin_metrics,
                            tuple(threshold_rules) + plugin_rules)


def _load_plugins(raw: dict, base: Optional[pathlib.Path]) -> tuple[tuple, tuple]:
    """Imports ``[sweep] plugins``; returns the metrics and threshold rules they define."""

    plugins = raw.get("sweep", {}).get("plugins", []) if isinstance(raw.get("sweep"), dict) \
        else []
    if isinstance(plugins, str):
        plugins = [plugins]
    if not isinstance(plugins, list) or not all(isinstance(x, str) and x for x in plugins):
        raise _fail(f"[sweep] plugins must be a list of module names or .py paths; got "
                    f"{plugins!r}")
    from svtjax import _plugins

    metrics, rules = [], []
    for entry in plugins:
        try:
            module = _plugins.load(entry, base)
        except _plugins.PluginError as err:
            raise _fail(f"[sweep] {err}") from err
        metrics += list(getattr(module, "SWEEP_METRICS", ()))
        rules += list(getattr(module, "SWEEP_THRESHOLD_RULES", ()))
    return tuple(metrics), tuple(rules)


def _fail(msg: str) -> SweepConfigError:
    return SweepConfigError(msg)


MIN_BUDGET_MB = 1 / 1024
MAX_BUDGET_MB = 2.0**30
"""The range of ``[sweep] memory_budget_mb`` (1 kB to 1 PB): the planner's chunk arithmetic is
exact there, and a budget beyond any machine's memory means nothing."""


def _validate_config(raw: dict, extra_metrics: tuple = (), threshold_rules: tuple = ()
                     ) -> SweepConfig:
    import svtjax
    from svtjax import datasets as ds
    from svtjax import metrics as M

    extra_metrics = _extensions("metrics", extra_metrics, Metric,
                                list(M.METRICS) + list(EXTRA_METRICS))
    threshold_rules = _extensions("threshold rules", threshold_rules, ThresholdRule,
                                  ["lyu"] + list(BUILTIN_THRESHOLD_RULES))
    rule_names = list(BUILTIN_THRESHOLD_RULES) + [r.name for r in threshold_rules]

    def suggest(word, choices):
        return _validate.suggest(word, list(choices))

    for key, value in raw.items():
        if key not in _TOP_KEYS:
            raise _fail(f"unknown top-level table {key!r}{suggest(key, _TOP_KEYS)}; valid: "
                        f"{sorted(_TOP_KEYS)}")
        if key != "mechanisms" and not isinstance(value, dict):
            raise _fail(f"[{key}] must be a table of key = value; got {value!r}")
    sweep = dict(raw.get("sweep", {}))
    bad = [k for k in sweep if k not in _SWEEP_KEYS]
    if bad:
        raise _fail(f"unknown [sweep] key(s) {bad}{suggest(bad[0], _SWEEP_KEYS)}; valid: "
                    f"{sorted(_SWEEP_KEYS)}")
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
    threshold = sweep.get("threshold", "lyu")
    if not (threshold == "lyu" or (isinstance(threshold, str) and threshold in rule_names)
            or (isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
                and math.isfinite(threshold))):
        rules = ", ".join(f'"{r}"' for r in rule_names)
        raise _fail(f"[sweep] threshold must be \"lyu\", a per-trial rule ({rules}) or a finite "
                    f"number; got {threshold!r}{suggest(threshold, ['lyu'] + rule_names)}")
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
    metric_list = sweep.get("metrics", list(SweepConfig.metrics))
    if isinstance(metric_list, str):
        metric_list = [metric_list]
    if not isinstance(metric_list, list):
        raise _fail(f"[sweep] metrics must be a list of metric names; got {metric_list!r}")
    valid_metrics = metric_names() + [m.name for m in extra_metrics]
    for m in metric_list:
        if not isinstance(m, str) or m not in valid_metrics:
            raise _fail(f"unknown metric {m!r}{suggest(m, valid_metrics)}; valid metrics: "
                        f"{', '.join(valid_metrics)}")
    if not metric_list:
        raise _fail("[sweep] metrics must name at least one metric")
    _no_duplicates("[sweep] metrics", metric_list)

    # datasets
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
            raise _fail(f"unknown dataset {load_name!r}{suggest(load_name, ds.names())}; known "
                        f"datasets: {', '.join(ds.names())}")
        ident = load_name + ("[" + ",".join(f"{k}={v}" for k, v in sorted(kwargs.items())) + "]"
                             if kwargs else "")
        if ident in seen:
            raise _fail(f"dataset {ident!r} is listed twice")
        seen.add(ident)
        datasets.append((ident, load_name, kwargs))
    if not datasets:
        raise _fail("[sweep] datasets must name at least one dataset")

    # grid
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

    # mechanisms
    mechs = raw.get("mechanisms")
    if not isinstance(mechs, list) or not mechs:
        raise _fail("the config needs at least one [[mechanisms]] table with a name")
    known = svtjax.names()
    tables, labels = [], set()
    for table in mechs:
        if not isinstance(table, dict) or not isinstance(table.get("name"), str):
            raise _fail(f"every [[mechanisms]] table needs a name; got {table!r}")
        mname = table["name"]
        if mname not in known:
            raise _fail(f"unknown mechanism {mname!r}{suggest(mname, known)}; registered "
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
                raise _fail(f"{mname} does not take parameter {key!r}{suggest(key, params)}; "
                            f"valid parameters are: {', '.join(params)}")
        label = table.get("label") or _default_label(table)
        if not isinstance(label, str):
            raise _fail(f"{mname}: label must be a string; got {label!r}")
        if label in labels:
            raise _fail(f"two [[mechanisms]] tables share the label {label!r}; give each a "
                        "distinct label")
        labels.add(label)
        tables.append({**table, "label": label})
    given_grid = raw.get("grid", {})
    for table in tables:  # a parameter is set in one place: the grid or the table
        for key, value in table.items():
            if key in ("name", "label") or key not in given_grid:
                continue
            mine = [_value_key(v) for v in (value if isinstance(value, list) else [value])]
            if mine != [_value_key(v) for v in grid[key]]:
                raise _fail(f"{table['label']} ({table['name']}): {key} = {value!r} conflicts "
                            f"with [grid] {key} = {grid[key]!r}; set a parameter in one place "
                            "(the [grid] for every mechanism, or the [[mechanisms]] table for "
                            "this one)")
    for axis in grid:
        if axis == "c":
            continue
        if not any(axis in svtjax.mechanisms.parameters(t["name"]) for t in tables):
            every = sorted({k for t in tables for k in svtjax.mechanisms.parameters(t["name"])})
            raise _fail(f"[grid] axis {axis!r} is not a parameter of any mechanism in the sweep"
                        f"{suggest(axis, every)}")

    plot = dict(raw.get("plot", {}))
    for key in plot:
        if key not in ("x", "y", "logx"):
            raise _fail(f"unknown [plot] key {key!r}{suggest(key, ['x', 'y', 'logx'])}; valid: "
                        "x, y, logx")
    if not isinstance(plot.get("logx", False), bool):
        raise _fail(f"[plot] logx must be true or false (default: by the x values' span); got "
                    f"{plot['logx']!r}")
    config = SweepConfig(name=name, datasets=tuple(datasets), mechanisms=tuple(tables),
                         grid=grid, trials=trials, seed=seed, metrics=tuple(metric_list),
                         shuffle=shuffle, threshold=threshold, memory_budget_mb=float(budget),
                         dtype=dtype, points_per_batch=ppb,
                         quantiles=tuple(float(q) for q in quantiles), exact=exact,
                         exact_accuracy=exact_accuracy, plot=plot,
                         raw=raw,
                         extra_metrics=tuple(m for m in extra_metrics if m.name in metric_list),
                         threshold_rules=threshold_rules)
    # builds every mechanism (bad parameter values, or numbers the dtype cannot hold, fail
    # here), loads every dataset and checks c against it: all before anything compiles
    points = expand(config)
    _check_datasets(config, points)
    if plot:
        plot_axes(config, points=points)
    return dataclasses.replace(config, points=tuple(points))


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


# -- points ------------------------------------------------------------------------------------

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


# -- code version --------------------------------------------------------------------------------

def versions() -> dict[str, str]:
    """Versions of Python and the packages that produce or read the results."""
    import jax

    import svtjax

    out = {"python": platform.python_version(), "svtjax": svtjax.__version__,
           "svtjax_code": code_version(), "jax": jax.__version__}
    for mod in ("jaxlib", "numpy", "scipy", "matplotlib", "pyarrow", "tqdm"):
        try:
            out[mod] = importlib.import_module(mod).__version__
        except Exception:  # noqa: BLE001 - optional packages
            pass
    return out


# -- the per-trial metrics (the reducer of simulate's compiled chunk) ------------------------------

TRACES: dict[str, int] = {}
"""Mechanism name -> number of times a group's chunk was traced (each trace is one compile)."""


def _per_trial(out, scores, c, *, k: int, metrics: tuple, own: tuple = (),
               ctx: Optional[MetricContext] = None):
    """float[len(metrics), trials]: per-trial metric values of a batch of Outcomes.

    Every built-in value is a function of its trial alone, bit for bit: the metrics' sums are
    exact and a trial's cost is summed in a fixed order (``svtjax._fixedpoint``), not by float
    reductions whose rounding follows the chunk's shape, so the memory budget (the chunk size)
    never changes a number."""
    import jax.numpy as jnp

    from svtjax import _fixedpoint
    from svtjax import metrics as M

    dtype = scores.dtype
    length = out.answers.shape[-1]
    single_pass = length == scores.shape[0]
    needs = any(m in M.METRICS or m == "picks" or (m == "evaluated" and single_pass)
                for m in metrics)
    every = M.evaluate_outcome(out, scores, c, max_c=k) if needs else {}
    rows = []
    own = {m.name: m for m in own}
    for m in metrics:
        if m in own:
            rows.append(jnp.broadcast_to(own[m].fn(out, scores, c, ctx),
                                         out.answers.shape[:1]).astype(dtype))
        elif m in M.METRICS or m == "picks":
            rows.append(every[m].astype(dtype))
        elif m == "evaluated":  # a single-pass trial evaluates the prefix up to its halt
            rows.append(every[m].astype(dtype) / length if single_pass else
                        jnp.mean(out.answers >= 0, axis=-1).astype(dtype))
        elif m == "cost":
            top_cost = getattr(out, "_top_cost", None)
            if getattr(out, "_cost", None) is None and top_cost is not None:
                # a compact Outcome charges top_cost at each ⊤: (number of ⊤) x top_cost
                tops = jnp.sum(out.answers == 1, axis=-1, dtype=jnp.int32)
                rows.append(tops.astype(dtype) * jnp.asarray(top_cost).astype(dtype))
            else:
                rows.append(_fixedpoint.tree_sum(out.cost.astype(dtype)))
    return jnp.stack(rows)


def _point_values(k, metrics, own, rule, scores, out, ctx):
    """The reducer a sweep hands to ``simulate.run_chunk``: per-trial metric values of one
    point (``ctx.extra``: its c, threshold and prepared values)."""
    import jax.numpy as jnp

    name = getattr(ctx.mech, "name", type(ctx.mech).__name__)
    TRACES[name] = TRACES.get(name, 0) + 1
    extra = ctx.extra
    thresholds = ctx.thresholds if rule else jnp.broadcast_to(
        extra["threshold"].astype(scores.dtype), ctx.index.shape)
    mctx = MetricContext(thresholds, ctx.keys, ctx.mech, k, extra["prepared"])
    return _per_trial(out, scores, extra["c"], k=k, metrics=metrics, own=own, ctx=mctx)


@functools.lru_cache(maxsize=None)
def _reducer_fn(k: int, metrics: tuple, own: tuple, rule: bool):
    """One function object per static configuration, so the compiled chunk is reused."""
    return functools.partial(_point_values, k, metrics, own, rule)


# -- host-side statistics -------------------------------------------------------------------------

class _Stats:
    """Count, mean and sum of squared deviations per (point, metric), merged block by block
    (Chan et al.'s pairwise update) in trial order: deterministic for a given trial sequence."""

    def __init__(self, shape):
        self.n = np.zeros(shape)
        self.mean = np.zeros(shape)
        self.m2 = np.zeros(shape)

    def add_blocks(self, values: np.ndarray, valid: int) -> None:
        """``values``: float[..., T] per-trial values, T a multiple of BLOCK_TRIALS except for a
        last block; only the first ``valid`` trials count."""
        values = np.asarray(values, np.float64)[..., :valid]
        for lo in range(0, valid, BLOCK_TRIALS):
            blk = np.zeros(values.shape[:-1] + (BLOCK_TRIALS,))
            part = values[..., lo:lo + BLOCK_TRIALS]
            blk[..., :part.shape[-1]] = part
            nb = part.shape[-1]
            mb = np.sum(blk, axis=-1) / nb
            dev = np.where(np.arange(BLOCK_TRIALS) < nb, blk - mb[..., None], 0.0)
            m2b = np.sum(dev * dev, axis=-1)
            n_new = self.n + nb
            delta = mb - self.mean
            self.mean = self.mean + delta * (nb / n_new)
            self.m2 = self.m2 + m2b + delta * delta * (self.n * nb / n_new)
            self.n = n_new


def _summarise(n: float, mean: float, m2: float) -> dict:
    from scipy import stats

    n = int(n)
    std = math.sqrt(m2 / (n - 1)) if n > 1 else math.nan
    se = std / math.sqrt(n) if n > 1 else math.nan
    q = float(stats.t.ppf(0.975, n - 1)) if n > 1 else math.nan
    return {"mean": mean, "std": std, "se": se, "ci_low": mean - q * se,
            "ci_high": mean + q * se, "trials": n}


# -- planning --------------------------------------------------------------------------------------

def _bytes_per_trial(mech, n: int, itemsize: int, shuffle: bool, k: int,
                     num_metrics: int) -> int:
    """A point's working memory per trial: the mechanism's (``mech.working_bytes``) plus the
    picks and the per-trial metric values."""
    return mech.working_bytes(n, itemsize, shuffle) + 4 * k * 8 + num_metrics * 8


def plan(num_points: int, trials: int, per_trial: int, budget_bytes: float,
         points_per_batch: int = 1) -> tuple[int, int]:
    """(points per batch, trials per chunk) with points × chunk × per_trial <= budget.

    The chunk comes from ``svtjax.simulate.plan_chunk`` (simulate's planner), as a multiple of
    ``BLOCK_TRIALS`` so that the host merges whole blocks (for at most that many trials: all
    trials in one chunk, rounded up to a multiple of 8). Points are batched (vmapped) only up
    to ``points_per_batch`` and only as far as memory allows.
    """
    from svtjax.simulate import plan_chunk

    slots = max(1, int(budget_bytes // max(per_trial, 1)))
    if trials <= BLOCK_TRIALS:
        chunk = -(-trials // 8) * 8
    else:
        chunk = plan_chunk(trials, per_trial, budget_bytes, multiple=BLOCK_TRIALS)
    points = max(1, min(points_per_batch, num_points, slots // chunk))
    return points, chunk


AUTO_POINTS_PER_BATCH = {"cpu": 1}
"""``points_per_batch = "auto"``: 1 on a CPU, :data:`AUTO_POINTS_PER_BATCH_ACCELERATOR` on a GPU
or TPU. Measured (``benchmarks/bench_sweep_batching.py``, SVT-S on Zipf top-50, 10 ε values,
1,000 shuffled trials): vmapping the 10 points took 3.4x-7x the time of one at a time on a busy
2-core CPU, and 0.64x on an H200."""

AUTO_POINTS_PER_BATCH_ACCELERATOR = 10


def _points_per_batch(config: SweepConfig) -> int:
    import jax

    if config.points_per_batch != "auto":
        return int(config.points_per_batch)
    return AUTO_POINTS_PER_BATCH.get(jax.default_backend(), AUTO_POINTS_PER_BATCH_ACCELERATOR)


def _devices_for(chunk: int, available: int) -> int:
    return max(d for d in range(1, available + 1) if chunk % d == 0)


# -- running ---------------------------------------------------------------------------------------

@dataclasses.dataclass
class SweepResult:
    """What :func:`run` did.

    Attributes:
      rows: the tidy rows (one per point × metric), as written to ``results.csv``.
      out: the output directory (None when nothing was written).
      files: paths written.
      computed: points computed in this call (this process).
      reused: points read back from an earlier, interrupted or finished, run.
      compiles: group kernels traced in this call, by mechanism name.
      seconds: wall time.
    """

    rows: list
    out: Optional[str]
    files: list
    computed: int
    reused: int
    compiles: dict
    seconds: float


class _Progress:
    def __init__(self, total: int, enabled: Optional[bool], log: Callable[[str], None]):
        self.total, self.done, self.log = total, 0, log
        self.start = time.perf_counter()
        self.bar = None
        if enabled is None:
            enabled = sys.stderr.isatty()
        if enabled and total:
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=total, unit="trial", unit_scale=True, desc="sweep",
                                smoothing=0.1)
            except ImportError:
                self.bar = None

    def update(self, amount: int, what: str) -> None:
        self.done += amount
        if self.bar is not None:
            self.bar.set_postfix_str(what, refresh=False)
            self.bar.update(amount)
            return
        elapsed = time.perf_counter() - self.start
        frac = self.done / self.total if self.total else 1.0
        eta = elapsed / frac - elapsed if frac > 0 else math.nan
        self.log(f"[sweep] {100 * frac:5.1f}% ({self.done}/{self.total} point-trials) "
                 f"{elapsed:.1f}s elapsed, ETA {eta:.0f}s: {what}")

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _group_key(point: Point, mech) -> tuple:
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(mech)
    return (point.dataset, treedef, tuple(np.shape(x) for x in leaves))


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


LOCK_FILE = ".svtjax-sweep.lock"
"""The lock file of a sweep's output directory (holds the pid and host of the live sweep)."""


def _prepare_out(out: Any) -> pathlib.Path:
    """The output directory ``out``, created if missing and checked to be writable.

    Raises:
      SweepConfigError: ``out`` is a file, or the directory cannot be created or written.
    """
    if isinstance(out, bool) or not isinstance(out, (str, os.PathLike)) or not str(out):
        raise _fail(f"out must be a directory path; got {out!r}")
    path = pathlib.Path(out)
    if path.exists() and not path.is_dir():
        raise _fail(f"out {str(path)!r} is an existing file, not a directory; give a directory "
                    "(it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _fail(f"cannot create the output directory {str(path)!r}: "
                    f"{err.strerror or err}") from err
    if not os.access(path, os.W_OK | os.X_OK):
        raise _fail(f"cannot write in the output directory {str(path)!r} (permission denied); "
                    "give another out")
    points = path / "points"
    if points.exists() and not points.is_dir():
        raise _fail(f"{str(points)!r} is a file; a sweep keeps its finished points in a directory "
                    "of that name: move the file or give another out")
    if points.is_dir() and not os.access(points, os.W_OK | os.X_OK):
        raise _fail(f"cannot write in {str(points)!r} (permission denied); give another out")
    for name in OUTPUT_FILES:
        target = path / name
        if target.is_dir():
            raise _fail(f"{str(target)!r} is a directory; the sweep writes a file of that name: "
                        "move it or give another out")
    return path


OUTPUT_FILES = ("results.csv", "results.parquet", "results.json")
"""The files a sweep writes in its output directory (besides ``points/`` and the plot)."""


class _OutputLock:
    """One live sweep per output directory.

    The lock is ``fcntl.flock`` on :data:`LOCK_FILE`, which the kernel releases when its
    process ends however it ends (SIGKILL included), so a killed sweep never leaves a lock
    behind; the file records the holder's pid, host and start time for the message a second
    sweep gets. Where ``flock`` is not available (no ``fcntl``; a filesystem without locks),
    the lock is the file itself, created exclusively: a lock whose holder is on this host and
    no longer running is stale and taken over; one held from another host is reported with
    its pid and host (delete the file once that process is gone).
    """

    def __init__(self, outdir: pathlib.Path):
        self.path = pathlib.Path(outdir) / LOCK_FILE
        self.fd: Optional[int] = None
        self.owned_file = False

    @staticmethod
    def _me() -> bytes:
        return json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                           "started": time.strftime("%Y-%m-%d %H:%M:%S")}).encode()

    @staticmethod
    def _holder(path: pathlib.Path) -> dict:
        try:
            with open(path, encoding="utf-8") as f:
                rec = json.load(f)
            return rec if isinstance(rec, dict) else {}
        except (OSError, ValueError):
            return {}

    def _refuse(self, holder: dict) -> SweepLockedError:
        who = (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, started "
               f"{holder.get('started', '?')}") if holder else "a process"
        return SweepLockedError(
            f"another sweep ({who}) is writing to {str(self.path.parent)!r}; wait for it to "
            "finish or give another out (two sweeps on one directory would compute every point "
            "twice)")

    def acquire(self) -> None:
        """Takes the lock, or raises :class:`SweepLockedError` naming the live holder."""
        try:
            import fcntl
        except ImportError:  # not POSIX
            fcntl = None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise _fail(f"cannot write the lock file {str(self.path)!r}: "
                        f"{err.strerror or err}") from err
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._refuse(self._holder(self.path)) from None
            except OSError:  # no locks on this filesystem
                os.close(fd)
            else:
                os.ftruncate(fd, 0)
                os.write(fd, self._me())
                self.fd = fd
                return
        else:
            os.close(fd)
        self._acquire_file()

    def _acquire_file(self) -> None:
        path = self.path.with_name(LOCK_FILE + ".pid")
        for _ in range(3):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self._holder(path)
                if not _stale(holder, path):
                    raise self._refuse(holder) from None
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                continue
            except OSError as err:
                raise _fail(f"cannot write the lock file {str(path)!r}: "
                            f"{err.strerror or err}") from err
            os.write(fd, self._me())
            os.close(fd)
            self.owned_file = True
            return
        raise self._refuse({})

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the flock
            self.fd = None
        if self.owned_file:
            with contextlib.suppress(OSError):
                os.unlink(self.path.with_name(LOCK_FILE + ".pid"))
            self.owned_file = False


def _stale(holder: dict, path: pathlib.Path) -> bool:
    """Whether a lock file's holder is a process of this host that is no longer running (an
    unreadable lock file older than a few seconds is stale too: a holder writes its record as
    it creates the file)."""
    if not holder:
        try:
            return time.time() - path.stat().st_mtime > 5.0
        except OSError:
            return True
    if holder.get("host") != socket.gethostname():
        return False
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def _point_record_path(out: pathlib.Path, pid: str) -> pathlib.Path:
    return out / "points" / f"{pid}.json"


def _atomic_write(path: pathlib.Path, write: Callable[[Any], None], *,
                  to_path: bool = False) -> None:
    """Writes ``path`` through a temporary file of a unique name in the same directory (host,
    pid and a random token: unique across the threads, processes and hosts that share the
    directory), then renames it into place (``os.replace``, atomic on POSIX): a reader sees the
    old file or the new one, never a mix, and two writers never share a temporary file.
    ``write`` gets the open text file, or with ``to_path`` the temporary path to create."""
    path.parent.mkdir(parents=True, exist_ok=True)
    token = f"{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:12]}"
    tmp = path.with_name(f".{path.name}.{token}.tmp")
    try:
        if to_path:
            write(str(tmp))
        else:
            with open(tmp, "x", encoding="utf-8", newline="") as f:
                write(f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_json(path: pathlib.Path, obj: Any) -> None:
    # repr: e.g. Noise objects
    _atomic_write(path, lambda f: json.dump(obj, f, indent=1, sort_keys=True, default=repr))


def _read_record(path: pathlib.Path, pid: str, point: "Point", config: SweepConfig,
                 log: Optional[Callable[[str], None]] = None) -> Optional[dict]:
    """The stored record of ``point`` when it can be reused (``svtjax._records``); an unusable
    one is reported through ``log`` and None is returned, so the point is recomputed."""
    from svtjax import _records

    rec, why = _records.read(path, pid, seed=point.seed(config), metrics=config.metrics,
                             trials=config.trials, quantiles=config.quantiles)
    if why is not None and log is not None:
        log(f"[sweep] {path} {why}; recomputing the point")
    return rec


def run(config: Any, out: Optional[str | os.PathLike] = None, *, resume: bool = True,
        progress: Optional[bool] = None, num_devices: Optional[int] = None,
        log: Callable[[str], None] = print, process_index: Optional[int] = None,
        process_count: Optional[int] = None, wait_timeout: float = 3600.0,
        metrics: Sequence[Metric] = (), threshold_rules: Sequence[ThresholdRule] = ()
        ) -> SweepResult:
    """Runs a sweep; returns the tidy rows and writes them to ``out`` (if given).

    Args:
      config: a :class:`SweepConfig`, a dict, a TOML path or a built-in config name.
      out: output directory (``results.csv``, ``results.parquet``, ``results.json``,
        ``points/``). Without it nothing is written and nothing is resumed.
      resume: reuse finished points found in ``out/points`` (same content hash).
      progress: a tqdm bar (default: when stderr is a terminal), else log lines.
      num_devices: shard each chunk's trials over this many local devices (default: all).
      log: where progress lines and messages go.
      process_index, process_count: this process's share of the points (default:
        ``jax.process_index()`` / ``jax.process_count()``, i.e. one share per process of a
        ``jax.distributed`` run). Process 0 waits for the others' points (in ``out/points``,
        which must be on a filesystem every process sees) and writes the results.
      wait_timeout: seconds process 0 waits for the other processes.
      metrics: :class:`Metric` objects the config may name besides the built-in ones.
      threshold_rules: ``ThresholdRule`` objects the config may name as ``threshold``.

    Returns:
      A :class:`SweepResult`. In processes other than 0 its ``rows`` are this process's only.

    Raises:
      SweepConfigError: a bad config, or an ``out`` that cannot be used: a file, a directory
        that cannot be created or written, or one another live sweep is writing to
        (:class:`SweepLockedError`); all before anything is compiled.
      SweepInterrupted: Ctrl-C (a ``KeyboardInterrupt``) during the run; it says how many
        points are saved in ``out/points`` (a rerun resumes from them).
    """
    import jax
    import jax.numpy as jnp

    start_time = time.perf_counter()
    config = load_config(config, metrics=metrics, threshold_rules=threshold_rules)
    if config.dtype == "float64" and not jax.config.jax_enable_x64:
        raise _fail("dtype = \"float64\" needs jax_enable_x64 (set JAX_ENABLE_X64=1, or use "
                    "svtjax sweep, which enables it)")
    dtype = jnp.float64 if config.dtype == "float64" else jnp.float32
    pidx = jax.process_index() if process_index is None else int(process_index)
    pcount = jax.process_count() if process_count is None else int(process_count)
    available = len(jax.local_devices())
    if num_devices is None:
        num_devices = available
    if not 1 <= num_devices <= available:
        raise _fail(f"num_devices must be between 1 and the {available} local device(s); got "
                    f"{num_devices}")
    if pcount > 1 and out is None:
        raise _fail("a sweep split over several processes needs an output directory (out) on "
                    "a filesystem every process sees")
    outdir = _prepare_out(out) if out is not None else None
    # one live sweep per directory: process 0 (the one that writes the results) holds the lock
    lock = _OutputLock(outdir) if outdir is not None and pidx == 0 else None
    if lock is not None:
        lock.acquire()
    try:
        return _run_points(config, outdir, dtype, pidx, pcount, num_devices, resume, progress,
                           log, wait_timeout, start_time)
    finally:
        if lock is not None:
            lock.release()


def _run_points(config, outdir, dtype, pidx, pcount, num_devices, resume, progress, log,
                wait_timeout, start_time) -> SweepResult:
    """The body of :func:`run` once the output directory is ready (and locked)."""
    import jax
    import jax.numpy as jnp

    from svtjax.mechanisms._engine import block_width, compaction_factor
    from svtjax.simulate import run_chunk, seed_key, shuffle_groups

    scores_by = _load_datasets(config)
    points = expand(config)
    rule = config.threshold_rule()
    ids = [p.point_id(config) for p in points]
    records: dict[str, dict] = {}
    if outdir is not None and resume:
        for pid, point in zip(ids, points):
            rec = _read_record(_point_record_path(outdir, pid), pid, point, config, log)
            if rec is not None:
                records[pid] = rec
    reused = len(records)

    # groups of points sharing a compiled kernel; each process takes every pcount-th point
    groups: dict[tuple, list[int]] = {}
    mechs = [p.build(checked=False) for p in points]  # expand(config) checked every one
    for i, (p, m) in enumerate(zip(points, mechs)):
        groups.setdefault(_group_key(p, m), []).append(i)
    # which points get exact columns (and one line per mechanism that does not), before any
    # compilation
    exact = _Exact(config, points, mechs, scores_by, log, announce=pidx == 0)
    todo = {key: [i for j, i in enumerate(members) if j % pcount == pidx and ids[i] not in records]
            for key, members in groups.items()}
    exact.expect([i for members in todo.values() for i in members] +
                 [i for i in range(len(points)) if ids[i] in records
                  and not exact.current(records[ids[i]])])
    total = sum(len(v) for v in todo.values()) * config.trials
    bar = _Progress(total, progress, log)
    computed = 0
    traces_before = dict(TRACES)
    budget = config.memory_budget_mb * 2**20
    try:
        for key, members in todo.items():
            if not members:
                continue
            scores_np = scores_by[key[0]]
            scores = jnp.asarray(scores_np, dtype)
            n = scores.shape[0]
            group_all = groups[key]
            k = max(points[i].c for i in group_all)
            m0 = mechs[members[0]]
            per_trial = _bytes_per_trial(m0, n, scores.dtype.itemsize, config.shuffle, k,
                                         len(config.metrics))
            cap = m0.cpu_chunk_bytes if jax.default_backend() == "cpu" else None
            pb, chunk = plan(len(members), config.trials, per_trial,
                             budget if cap is None else min(budget, cap),
                             _points_per_batch(config))
            ndev = _devices_for(chunk, num_devices)
            reducer = jax.tree_util.Partial(
                _reducer_fn(k, tuple(config.metrics), tuple(config.extra_metrics),
                            rule is not None), scores)
            trial_groups = (shuffle_groups(m0, n, chunk, points=pb)
                            if config.shuffle and ndev == 1 else 1)
            run = functools.partial(
                run_chunk, chunk=chunk, shuffle=config.shuffle, num_devices=ndev,
                rule=None if rule is None else (rule.draw, "c"), mode="values",
                points=0 if pb == 1 else pb, width=block_width(n),
                compaction=compaction_factor(), groups=trial_groups)
            for b0 in range(0, len(members), pb):
                batch = members[b0:b0 + pb]
                padded = batch + [batch[-1]] * (pb - len(batch))
                thr = [_threshold(config, scores_np, points[i].c) for i in padded]
                # a per-trial rule draws each trial's threshold, added to zeros
                base_t = np.zeros((len(padded), n)) if rule is not None else \
                    np.repeat(np.asarray(thr, np.float64)[:, None], n, axis=1)
                extra = {"c": jnp.asarray([points[i].c for i in padded], jnp.int32),
                         "threshold": jnp.asarray(np.nan_to_num(thr), dtype),
                         "prepared": _prepared(config, [mechs[i] for i in padded],
                                               [points[i].c for i in padded], dtype)}
                roots = [seed_key(points[i].seed(config)) for i in padded]
                if pb == 1:
                    args = (mechs[padded[0]], jnp.asarray(base_t[0], dtype), roots[0],
                            jax.tree_util.tree_map(lambda x: x[0], extra))
                else:
                    args = (jax.tree_util.tree_map(
                        lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]),
                        *[mechs[i] for i in padded]), jnp.asarray(base_t, dtype),
                        jnp.stack(roots), extra)
                stats = _Stats((pb, len(config.metrics)))
                kept = []  # per-trial values, only for quantiles
                t0 = time.perf_counter()
                for s in range(0, config.trials, chunk):
                    _interrupt.check()  # a Ctrl-C whose exception was swallowed stops here
                    vals = run(args[0], scores, args[1], args[2], jnp.int32(s),
                               config.trials, reducer, args[3])
                    vals = np.asarray(jax.device_get(vals))
                    if pb == 1:
                        vals = vals[None]
                    stats.add_blocks(vals, min(chunk, config.trials - s))
                    if config.quantiles:
                        kept.append(np.asarray(vals, np.float64)[..., :config.trials - s])
                    label = points[batch[0]].label
                    bar.update(len(batch) * min(chunk, config.trials - s),
                               f"{points[batch[0]].dataset} {label}")
                seconds = (time.perf_counter() - t0) / len(batch)
                for j, i in enumerate(batch):
                    rec = {"point_id": ids[i], "seed": points[i].seed(config),
                           "threshold": _threshold(config, scores_np, points[i].c),
                           "seconds": seconds, "process": pidx,
                           "stats": {m: [float(stats.n[j, q]), float(stats.mean[j, q]),
                                         float(stats.m2[j, q])]
                                     for q, m in enumerate(config.metrics)}}
                    if config.quantiles:
                        every = np.concatenate(kept, axis=-1)[j]
                        rec["quantiles"] = {m: [float(v) for v in np.quantile(
                            every[q], config.quantiles)] for q, m in enumerate(config.metrics)}
                    exact_rec = exact.compute(i)
                    if exact_rec is not None:
                        rec["exact"] = exact_rec
                    records[ids[i]] = rec
                    if outdir is not None:
                        _write_json(_point_record_path(outdir, ids[i]), rec)
                    computed += 1
    except KeyboardInterrupt:
        saved = sum(1 for pid in ids if pid in records) if outdir is not None else 0
        raise SweepInterrupted(saved, len(points), outdir) from None
    finally:
        bar.close()
    compiles = {k: v - traces_before.get(k, 0) for k, v in TRACES.items()
                if v != traces_before.get(k, 0)}

    if pcount > 1 and pidx == 0 and outdir is not None:
        _wait_for(config, outdir, points, ids, records, wait_timeout, log)
    mine = [i for i in range(len(points)) if ids[i] in records]
    for i in mine:  # reused records computed without exact (or in another dtype)
        rec = records[ids[i]]
        if config.exact and i not in exact.why and not exact.current(rec):
            exact_rec = exact.compute(i)
            if exact_rec is not None:
                records[ids[i]] = rec = {**rec, "exact": exact_rec}
                if outdir is not None:
                    _write_json(_point_record_path(outdir, ids[i]), rec)
    rows = _rows(config, points, ids, records, mine, exact)
    files: list[str] = []
    if outdir is not None and pidx == 0:
        files = _write_outputs(config, rows, outdir, {
            "points": len(points), "computed": computed, "reused": reused,
            "processes": pcount, "devices": [str(d) for d in jax.local_devices()[:num_devices]],
            "compiles": compiles, "seconds": time.perf_counter() - start_time,
            **({"exact": exact.summary()} if config.exact else {})})
    return SweepResult(rows, None if outdir is None else str(outdir), files, computed, reused,
                       compiles, time.perf_counter() - start_time)


# -- exact expected metrics (``[sweep] exact = true``) ---------------------------------------------

EXACT_METRICS = {
    "ser": "E[SER] (svtjax.exact.expected_metrics, no sampling)",
    "ncr": "E[NCR]",
    "picks": "E[|S|], the expected number of picks (at most c)",
    "correct": "E[|S ∩ Top-c|] (NaN where ties at the c-th score straddle the Top-c boundary)",
    "ncs": "E[NCS] = 1 - E[SER]",
    "recall": "E[recall] = E[|S ∩ Top-c|] / c",
    "fnr": "E[FNR] = 1 - E[recall]",
    "evaluated": "E[fraction of the stream evaluated before halting]",
    "cost": "E[privacy budget charged per trial] (sum of Outcome.cost)",
}
"""Exact columns ``exact_<metric>`` of a sweep with ``exact = true``: the first four always, the
others beside a Monte Carlo metric of the same name (same definition as that metric). Precision
and F1 are ratios of the picks, whose expectation is not linear in the selection law: none."""

_EXACT_ALWAYS = ("ser", "ncr", "picks", "correct")


def exact_columns(config: SweepConfig) -> list[str]:
    """The ``exact_<metric>`` columns of the config's results (none without ``exact = true``)."""
    if not config.exact:
        return []
    names = list(_EXACT_ALWAYS) + [m for m in config.metrics
                                   if m in EXACT_METRICS and m not in _EXACT_ALWAYS]
    return [f"exact_{m}" for m in names]


def _exact_dtype() -> str:
    import jax

    return "float64" if jax.config.jax_enable_x64 else "float32"


def _on_host():
    """Places the exact computation on the CPU (small arrays; no accelerator round trips)."""
    import jax

    try:
        return jax.default_device(jax.local_devices(backend="cpu")[0])
    except RuntimeError:  # no CPU backend in this process
        return contextlib.nullcontext()


def _why(err: Exception) -> str:
    text = " ".join(str(err).split())
    return text.removeprefix("svtjax.exact: ")


_EXACT_GROUP = 16
"""At most this many points per exact call: the call's node weights are [nodes, points], so its
memory grows with the square of the group."""


class _Exact:
    """The exact columns of one run: which points qualify (and why not), computed per point.

    A point's exact values are stored in its record (``"exact"``: the values of
    ``svtjax.exact.expected_metrics``, n, the float dtype and the rule's error targets they were
    computed with) and reused when the record is, unless they were computed in another dtype or
    with other targets (``exact_accuracy``)."""

    def __init__(self, config: SweepConfig, points, mechs, scores_by, log, announce: bool):
        self.config, self.points, self.mechs, self.scores_by = config, points, mechs, scores_by
        self.log, self.announce = log, announce
        self.why: dict[int, str] = {}  # point index -> why it has no exact columns
        self.logged: set = set()
        self.wanted: set[int] = set()  # points this run will ask for (see :meth:`expect`)
        self.ready: dict[int, dict] = {}  # values computed with another point's group
        self.keys: dict[int, tuple] = {}
        if not config.exact:
            return
        rule = config.threshold_rule()
        if rule is not None:
            self.why = {i: "per-trial threshold" for i in range(len(points))}
            if announce:
                log(f"[sweep] exact: threshold = {config.threshold!r} draws a threshold per "
                    "trial, and the exact law needs one threshold per point: every exact "
                    "column is empty")
            return
        if announce and _exact_dtype() != "float64":
            log("[sweep] exact: jax_enable_x64 is off, so the exact columns are computed in "
                "float32 (about 1e-6 rounding); float64 is recommended (dtype = \"float64\")")
        gaps: dict[tuple, list[int]] = {}
        for i, mech in enumerate(mechs):
            reason = self._blocker(mech)
            if reason is not None:
                self.why[i] = reason
                gaps.setdefault((points[i].label, points[i].mechanism, reason), []).append(i)
        for (label, name, reason), which in gaps.items():
            self._say(label, name, reason, len(which))

    def _blocker(self, mech) -> Optional[str]:
        """Why ``svtjax.exact`` has no law for this mechanism in this sweep (None: it has)."""
        from svtjax import exact

        try:
            law = exact.law(mech)
        except ValueError as err:
            return _why(err)
        if self.config.shuffle and (law.resample or law.k_max is not None):
            what = "resamples the threshold" if law.resample else "caps the stream at k_max"
            return (f"random order (shuffle = true) is not supported for a mechanism that "
                    f"{what}")
        return None

    def _say(self, label: str, name: str, reason: str, count: Optional[int] = None) -> None:
        if (label, reason) in self.logged:
            return
        self.logged.add((label, reason))
        total = sum(1 for p in self.points if p.label == label)
        how_many = f"{count} of {total}" if count is not None else "a"
        self.log(f"[sweep] exact: {label} ({name}), {how_many} point(s): exact columns empty: "
                 f"{reason}")

    def current(self, rec: dict) -> bool:
        """Whether ``rec`` holds exact values made the way this sweep makes them, with a
        number (or null) for every exact column (anything else is computed again)."""
        ex = rec.get("exact")
        if not (isinstance(ex, dict) and ex.get("dtype") == _exact_dtype()
                and ex.get("accuracy", {}) == self.config.exact_accuracy):
            return False
        values = ex.get("values")
        number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
        return (isinstance(values, dict) and number(ex.get("n")) and ex["n"] > 0
                and all(number(values.get(col[len("exact_"):])) or
                        values.get(col[len("exact_"):], 0) is None
                        for col in exact_columns(self.config)))

    def _rules(self, group: Sequence[int], scores, threshold) -> Optional[list]:
        """The quadrature rules of a group's mechanisms at the config's ``exact_accuracy``
        (None: the default rule)."""
        if not self.config.exact_accuracy:
            return None
        from svtjax import exact

        return [exact.quadrature(self.mechs[j], scores, threshold, **self.config.exact_accuracy)
                for j in group]

    def expect(self, indices) -> None:
        """The points whose exact values this run will ask :meth:`compute` for: those sharing a
        dataset, cut-off, threshold and law structure with the one asked for are evaluated
        with it, in one call of ``svtjax.exact.expected_metrics_many`` (one compilation and
        one kernel call per group, not per point)."""
        self.wanted = {i for i in indices if i not in self.why}

    def _key(self, i: int) -> tuple:
        """Points with equal keys can be evaluated together."""
        if i not in self.keys:
            from svtjax import exact

            p = self.points[i]
            law = exact.law(self.mechs[i])
            thr = _threshold(self.config, self.scores_by[p.dataset], p.c)
            self.keys[i] = (p.dataset, p.c, repr(thr), law.c, law.resample, law.k_max,
                            type(law.query_noise))
        return self.keys[i]

    def compute(self, i: int) -> Optional[dict]:
        """Point ``i``'s exact record, or None (it does not qualify; logged once)."""
        if not self.config.exact or i in self.why:
            return None
        if i in self.ready:
            return self.ready.pop(i)
        from svtjax import exact

        p = self.points[i]
        scores = self.scores_by[p.dataset]
        key = self._key(i)
        group = ([i] + [j for j in sorted(self.wanted) if j != i and j not in self.ready
                        and self._key(j) == key])[:_EXACT_GROUP]
        self.wanted -= set(group)
        threshold = _threshold(self.config, scores, p.c)
        try:
            with _on_host():
                many = exact.expected_metrics_many(
                    [self.mechs[j] for j in group], scores, threshold,
                    shuffle=self.config.shuffle, c=p.c,
                    rules=self._rules(group, scores, threshold))
        except ValueError:
            if len(group) == 1:
                many = None
            else:  # one point's own message: evaluate them one by one
                self.wanted |= set(group[1:])
                group = [i]
                many = None
        if many is None:
            try:
                with _on_host():
                    rules = self._rules([i], scores, threshold)
                    many = [exact.expected_metrics(self.mechs[i], scores, threshold,
                                                   shuffle=self.config.shuffle, c=p.c,
                                                   rule=None if rules is None else rules[0])]
            except ValueError as err:
                self.why[i] = _why(err)
                self._say(p.label, p.mechanism, self.why[i])
                return None
        for j, values in zip(group, many):
            self.ready[j] = {"dtype": _exact_dtype(), "n": int(scores.shape[0]),
                             **({"accuracy": dict(self.config.exact_accuracy)}
                                if self.config.exact_accuracy else {}),
                             "values": {k: float(v) for k, v in values.items()}}
        return self.ready.pop(i)

    def cells(self, i: int, rec: dict) -> dict:
        """The ``exact_<metric>`` cells of point ``i``'s rows (None: empty)."""
        cols = exact_columns(self.config)
        ex = rec.get("exact") if i not in self.why and self.current(rec) else None
        if ex is None:
            return {col: None for col in cols}
        values = ex["values"]
        out = {}
        for col in cols:
            m = col[len("exact_"):]
            # the sweep's "evaluated" is a fraction of the stream; exact's, positions read
            out[col] = values[m] / ex["n"] if m == "evaluated" else values[m]
        return out

    def summary(self) -> dict:
        """What results.json says about the exact columns."""
        cols = exact_columns(self.config)
        empty = {}
        for i, reason in self.why.items():
            empty.setdefault(self.points[i].label, reason)
        return {"columns": {c: EXACT_METRICS[c[len("exact_"):]] for c in cols},
                "dtype": _exact_dtype(), "accuracy": dict(self.config.exact_accuracy),
                "empty": empty}


def _prepared(config: SweepConfig, mechs: Sequence, cs: Sequence[int], dtype) -> dict:
    """Registered metrics' ``prepare(mech, c)`` values of a batch of points, stacked: name ->
    float[points] (or a dict of them)."""
    import jax
    import jax.numpy as jnp

    out = {}
    for m in config.metrics:
        metric = config.metric(m)
        if metric is not None and metric.prepare is not None:
            values = [metric.prepare(mech, c) for mech, c in zip(mechs, cs)]
            out[m] = jax.tree_util.tree_map(
                lambda *xs: jnp.asarray([float(x) for x in xs], dtype), *values)
    return out


def _quantile_column(q: float) -> str:
    return f"q{q:g}"


def _wait_for(config, outdir, points, ids, records, timeout, log) -> None:
    """Process 0 collects the other processes' finished points from ``outdir/points``."""
    deadline = time.monotonic() + timeout
    announced = False
    while True:
        for pid, point in zip(ids, points):
            if pid not in records:
                rec = _read_record(_point_record_path(outdir, pid), pid, point, config)
                if rec is not None:
                    records[pid] = rec
        missing = [p for p in ids if p not in records]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(missing)} point(s) computed by other processes did not "
                               f"appear in {outdir / 'points'} within {timeout:.0f}s")
        if not announced:
            log(f"[sweep] process 0: waiting for {len(missing)} point(s) from other processes")
            announced = True
        time.sleep(0.2)


def _rows(config, points, ids, records, which, exact: Optional[_Exact] = None) -> list[dict]:
    columns = param_columns(points)
    rows = []
    for i in which:
        p, rec = points[i], records[ids[i]]
        axes = dict(p.axes)
        base = {"dataset": p.dataset, "mechanism": p.mechanism, "label": p.label}
        for col in columns:
            v = axes.get(col, dict(p.params).get(col, ""))
            base[col] = v if not isinstance(v, tuple) else json.dumps(list(v))
        cells = exact.cells(i, rec) if exact is not None else {}
        for m in config.metrics:
            n, mean, m2 = rec["stats"][m]
            quantiles = {_quantile_column(q): v for q, v in
                         zip(config.quantiles, rec.get("quantiles", {}).get(m, []))}
            rows.append({**base, "threshold": rec["threshold"], "metric": m,
                         **_summarise(n, mean, m2), **quantiles, **cells,
                         "seconds": rec["seconds"], "seed": rec["seed"], "point_id": ids[i]})
    return rows


def param_columns(points: Sequence[Point]) -> list[str]:
    """Parameter columns of the results: every swept parameter, ``c`` last."""
    cols: list[str] = []
    for p in points:
        for k, _ in p.axes:
            if k != "c" and k not in cols:
                cols.append(k)
    return cols + ["c"]


def _write_outputs(config, rows, outdir: pathlib.Path, info: dict) -> list[str]:
    """results.csv (+ exact.csv with exact columns, + .parquet with pyarrow) and results.json,
    which lists every file and the tables' column types (``svtjax._tables``)."""
    from svtjax import _tables

    files, schemas = _tables.write(rows, outdir, float32=config.dtype == "float32",
                                   atomic_write=_atomic_write, quantile=_is_quantile,
                                   empty_columns=_CSV_FIXED + _CSV_STATS)
    sidecar = {"config": config.raw, "name": config.name, "versions": versions(),
               "code_version": code_version(), "metrics": list(config.metrics),
               "metric_definitions": {m: _metric_definition(m, config) for m in config.metrics},
               "interval": "95% Student-t interval for the mean (mean ± t(0.975, trials-1) se)",
               "precision": f"statistics written at {config.dtype} precision",
               "seconds_note": "wall time of a point's batch divided by the points in it, "
                               "compilation included on a group's first batch",
               "schema": schemas, **info}
    files.append(str(outdir / "results.json"))
    _write_sidecar(outdir, sidecar, files)
    return files


def _write_sidecar(outdir: pathlib.Path, sidecar: dict, files: Sequence[str]) -> None:
    _write_json(outdir / "results.json",
                {**sidecar, "files": sorted({os.path.basename(f) for f in files})})


def add_files(out: str | os.PathLike, files: Sequence[str]) -> None:
    """Adds ``files`` (written beside the results, e.g. a plot) to ``results.json``'s list."""
    outdir = pathlib.Path(out)
    sidecar = json.loads((outdir / "results.json").read_text(encoding="utf-8"))
    _write_sidecar(outdir, sidecar, list(sidecar.get("files", [])) + list(files))


def _metric_definition(name: str, config: Optional[SweepConfig] = None) -> str:
    if config is not None and config.metric(name) is not None:
        return config.metric(name).description
    return EXTRA_METRICS.get(name, f"svtjax.metrics.{name}")


def read_results(path: str | os.PathLike) -> list[dict]:
    """Rows of a ``results.csv`` (or ``results.parquet``, or a directory holding one), each
    column converted by the type ``results.json`` records for it, exact columns joined back
    (``svtjax._tables.read``)."""
    from svtjax import _tables

    return _tables.read(path)


def _is_quantile(column: str) -> bool:
    try:
        return column.startswith("q") and 0 <= float(column[1:]) <= 1
    except ValueError:
        return False


def format_table(rows: Sequence[dict], metrics: Optional[Sequence[str]] = None) -> str:
    """A plain-text table: one line per point, ``mean ± half-width`` of each metric."""
    if not rows:
        return "(no results)"
    metrics = list(dict.fromkeys(r["metric"] for r in rows)) if metrics is None else metrics
    skip = set(_CSV_STATS) | {"mechanism"} | {k for k in rows[0] if _is_quantile(k)
                                               or k.startswith("exact_")}
    keys = [k for k in rows[0] if k not in skip]
    by: dict[tuple, dict] = {}
    for r in rows:
        ident = tuple(str(r[k]) for k in keys)
        by.setdefault(ident, {"_seconds": r["seconds"]})[r["metric"]] = r
    header = keys + list(metrics) + ["sec"]
    lines = []
    for ident, ms in by.items():
        cells = list(ident)
        for m in metrics:
            r = ms.get(m)
            cells.append("" if r is None else f"{r['mean']:.3f} ± {(r['ci_high'] - r['mean']):.3f}"
                         if math.isfinite(r["ci_high"]) else f"{r['mean']:.3f}")
            exact = None if r is None else r.get(f"exact_{m}")
            if isinstance(exact, (int, float)) and not isinstance(exact, bool):
                cells[-1] += f" (exact {exact:.3f})"
        cells.append(f"{ms['_seconds']:.2f}")
        lines.append(cells)
    widths = [max(len(h), *(len(x[i]) for x in lines)) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(x) for x in lines])
