"""A sweep's configuration: :class:`SweepConfig`, its errors, metrics of one's own, and
:func:`load_config`, which reads a TOML file, a built-in config or a dict and hands it to the
checks of :mod:`svtjax.sweep.validate`. The TOML form is described in the sweeps guide
(``docs/guides/sweeps.md``)."""

from __future__ import annotations

import copy
import dataclasses
import importlib.resources
import os
import pathlib
from typing import Any, Callable, NamedTuple, Optional, Sequence

from svtjax.datasets._thresholds import THRESHOLD_RULES as BUILTIN_THRESHOLD_RULES
from svtjax.datasets._thresholds import ThresholdRule

EXTRA_METRICS = {
    "picks": "number of items selected (⊤ answers counted by the metrics, at most c)",
    "evaluated": "fraction of the stream evaluated before halting",
    "cost": "privacy budget charged per trial (sum of Outcome.cost)",
}

_SWEEP_KEYS = {"name", "seed", "trials", "datasets", "metrics", "shuffle", "threshold",
               "memory_budget_mb", "dtype", "description", "points_per_batch", "quantiles",
               "plugins", "exact", "exact_accuracy"}
_TOP_KEYS = {"sweep", "grid", "mechanisms", "plot"}


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
    """A validated sweep description (its TOML form: the sweeps guide, ``docs/guides/sweeps.md``).

    Attributes:
      name: sweep name (output directory default, plot titles).
      datasets: list of ``(dataset id, load name, load kwargs)``.
      mechanisms: list of mechanism tables (``name``, optional ``label``, parameters; list
        values are axes).
      grid: axes shared by every mechanism that takes the parameter (``c`` by every one).
      trials, seed, metrics, shuffle, threshold, memory_budget_mb, dtype, points_per_batch,
        quantiles, exact, exact_accuracy: the ``[sweep]`` keys of the same names (the sweeps
        guide's TOML reference).
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
    from svtjax.sweep.validate import _validate_config

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
