"""Sweeps: datasets × mechanisms × parameter values × trials × metrics, one compile per structure.

A sweep is described by a TOML file or an equivalent dict (:func:`load_config`, which checks it
as a whole before anything compiles) and run by :func:`run`: points whose mechanisms share a
pytree structure run through one compiled function, each point's numbers equal those of
``svtjax.simulate`` with the point's own seed reduced by the same metrics, whatever the
chunking, devices, processes or other points, and every finished point is saved at once, so an
interrupted sweep resumes. The
sweeps guide (``docs/guides/sweeps.md``) describes the TOML form, metrics and threshold rules
of one's own, seeds, exact columns and the files a sweep writes.

The package's modules: ``config`` (:class:`SweepConfig`, :func:`load_config`), ``validate``
(the checks of a config), ``grid`` (:class:`Point`, :func:`expand`), ``reduce`` (per-trial
metrics and their host-side merge), ``runner`` (:func:`run`), ``store`` (the output directory,
its lock and the point records), ``exact`` (the exact columns), ``picks`` (em-peeling points
that differ only in c share one compiled chunk) and ``report`` (rows, results files, tables).
"""

# the public names (__all__), and (``x as x``) private ones that svtjax.cli, svtjax.plot and the
# benchmarks use
from svtjax.sweep.config import BUILTIN_THRESHOLD_RULES as BUILTIN_THRESHOLD_RULES
from svtjax.sweep.config import (
    EXTRA_METRICS,
    MAX_NESTING,
    Metric,
    MetricContext,
    SweepConfig,
    SweepConfigError,
    SweepInterrupted,
    SweepLockedError,
    ThresholdRule,
    builtin_configs,
    load_config,
    metric_names,
)
from svtjax.sweep.exact import EXACT_METRICS, exact_columns
from svtjax.sweep.grid import MAX_POINTS, Point, expand, grid_size, param_columns
from svtjax.sweep.reduce import BLOCK_TRIALS, TRACES
from svtjax.sweep.report import _is_quantile as _is_quantile
from svtjax.sweep.report import add_files, format_table, read_results, versions
from svtjax.sweep.runner import (
    AUTO_POINTS_PER_BATCH,
    AUTO_POINTS_PER_BATCH_ACCELERATOR,
    SweepResult,
    run,
)
from svtjax.sweep.runner import _bytes_per_trial as _bytes_per_trial
from svtjax.sweep.store import LOCK_FILE, OUTPUT_FILES
from svtjax.sweep.store import _OutputLock as _OutputLock
from svtjax.sweep.store import _prepare_out as _prepare_out
from svtjax.sweep.validate import EXACT_ACCURACY_KEYS, MAX_BUDGET_MB, MIN_BUDGET_MB, plot_axes

__all__ = [
    "AUTO_POINTS_PER_BATCH",
    "AUTO_POINTS_PER_BATCH_ACCELERATOR",
    "BLOCK_TRIALS",
    "EXACT_ACCURACY_KEYS",
    "EXACT_METRICS",
    "EXTRA_METRICS",
    "LOCK_FILE",
    "MAX_BUDGET_MB",
    "MAX_NESTING",
    "MAX_POINTS",
    "MIN_BUDGET_MB",
    "Metric",
    "MetricContext",
    "OUTPUT_FILES",
    "Point",
    "SweepConfig",
    "SweepConfigError",
    "SweepInterrupted",
    "SweepLockedError",
    "SweepResult",
    "TRACES",
    "ThresholdRule",
    "add_files",
    "builtin_configs",
    "exact_columns",
    "expand",
    "format_table",
    "grid_size",
    "load_config",
    "metric_names",
    "param_columns",
    "plot_axes",
    "read_results",
    "run",
    "versions",
]
