"""A sweep's results: the tidy rows (one per point × metric), the files written from them
(``results.csv``, ``results.parquet``, ``results.json``), reading them back, and the plain-text
table the command line prints."""

from __future__ import annotations

import importlib
import json
import math
import os
import pathlib
import platform
from typing import Optional, Sequence

from svtjax._identity import code_version
from svtjax.sweep.config import EXTRA_METRICS, SweepConfig
from svtjax.sweep.exact import _Exact
from svtjax.sweep.grid import param_columns
from svtjax.sweep.reduce import _summarise
from svtjax.sweep.store import _atomic_write, _write_json

_CSV_FIXED = ["dataset", "mechanism", "label"]
_CSV_STATS = ["threshold", "metric", "mean", "std", "se", "ci_low", "ci_high", "trials",
              "seconds", "seed", "point_id"]



def versions() -> dict[str, str]:
    """Versions of Python and the packages that produce or read the results, and whether the
    compiled kernels ran (``svtjax._native.status``)."""
    import jax

    import svtjax
    from svtjax import _native

    out = {"python": platform.python_version(), "svtjax": svtjax.__version__,
           "svtjax_code": code_version(), "jax": jax.__version__,
           "native_kernels": _native.status()}
    for mod in ("jaxlib", "numpy", "scipy", "matplotlib", "pyarrow", "tqdm"):
        try:
            out[mod] = importlib.import_module(mod).__version__
        except Exception:  # noqa: BLE001 - optional packages
            pass
    return out


def _quantile_column(q: float) -> str:
    return f"q{q:g}"


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
            cells.append("" if r is None else mean_pm(r["mean"], r["ci_low"], r["ci_high"]))
            exact = None if r is None else r.get(f"exact_{m}")
            if isinstance(exact, (int, float)) and not isinstance(exact, bool):
                cells[-1] += f" (exact {exact:.3f})"
        cells.append(f"{ms['_seconds']:.2f}")
        lines.append(cells)
    return render(header, lines)


def mean_pm(mean: float, low: float, high: float) -> str:
    """``mean ± half-width`` of an interval (the results' ``ci_low``/``ci_high``: Student t at
    95% for every command), or the mean alone where the interval is not finite (one trial)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{mean:.3f}"
    return f"{mean:.3f} ± {(high - low) / 2:.3f}"


def render(header: Sequence[str], lines: Sequence[Sequence[str]]) -> str:
    """The one plain-text table of the command line: left-aligned columns under a rule."""
    widths = [max(len(h), *(len(x[i]) for x in lines)) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(x) for x in lines])
