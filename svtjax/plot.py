"""Utility curves from sweep results (matplotlib).

``utility_curves(results, x="epsilon", y="f1")`` draws one panel per dataset (and per value of
c when c varies and is not on the x axis) and one line per mechanism label and value of any
other swept parameter, with the 95% interval of each point's mean (Student t, the ``ci_low`` /
``ci_high`` columns) as a shaded band. ``results`` is a ``results.csv`` / ``results.parquet``
path, a sweep output directory, or the rows of :func:`svtjax.sweep.run`.

How a figure is laid out, so that it reads the same way every time:

* **Colour** names the mechanism label (the same colour in every panel), **line style and
  marker** the value of the other swept parameters (see :data:`STYLES`).
* **One legend**, outside the panels on the right, so it never covers data.
* **Log x axis** when every x value is positive and the values span at least
  :data:`LOG_SPAN` (a factor of 10, one decade); ``logx=`` or the sweep config's ``[plot]
  logx`` decides otherwise.
* **The title** names the metric, the trials per point and every parameter that is the same
  in all the lines (e.g. ``c=50``); the legend says how wide the widest band is when the bands
  are too narrow to see.
* The figure is a :class:`matplotlib.figure.Figure` made without ``pyplot``: drawing or saving
  one never changes the caller's backend or opens a window.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

__all__ = ["utility_curves", "PANEL_SIZE", "DPI", "BAND_ALPHA", "LOG_SPAN", "STYLES"]

PANEL_SIZE = (7.0, 5.0)
"""Inches per panel (width, height)."""

DPI = 130
"""Resolution of a saved PNG."""

BAND_ALPHA = 0.3
"""Opacity of the interval bands (each outlined in its line's colour)."""

LOG_SPAN = 10.0
"""The x axis is logarithmic when its positive values span at least this factor."""

STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v"),
          ((0, (1, 3)), "P"))
"""(line style, marker) per value of the swept parameters other than the label and x."""

_STATS = {"threshold", "metric", "mean", "std", "se", "ci_low", "ci_high", "trials", "seconds",
          "seed", "point_id", "mechanism", "label", "dataset"}

_VISIBLE = 0.01
"""A band narrower than this fraction of the y range is hard to see: the legend says so."""


def _palette(n: int) -> list:
    """``n`` distinct colours: tab10, then tab20 for up to 20 labels, then evenly spaced
    hues (a colour never repeats within a figure)."""
    from matplotlib import colormaps

    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [colormaps["tab20"](i) for i in range(n)]
    return [colormaps["hsv"](i / n) for i in range(n)]


def _split(rows: list, x: str) -> tuple[list, list, dict]:
    """The parameters that vary across rows (for panels and lines) and those that do not."""
    from svtjax.sweep import _is_quantile

    params = [k for k in rows[0] if k not in _STATS and k != x and not k.startswith("exact_")
              and not _is_quantile(k)]
    varying = [k for k in params if len({str(r.get(k)) for r in rows}) > 1]
    fixed = {k: rows[0][k] for k in params if k not in varying and str(rows[0][k]) != ""}
    panel_cols = ["dataset"] + [k for k in varying if k == "c"]
    line_cols = [k for k in varying if k != "c"]
    return panel_cols, line_cols, fixed


def _title(y: str, x: str, rows: list, fixed: dict) -> str:
    trials = sorted({int(r["trials"]) for r in rows})
    count = (f"{trials[0]:,} trials per point" if len(trials) == 1 else
             f"{trials[0]:,}-{trials[-1]:,} trials per point")
    held = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in fixed.items())
    return f"{y} against {x} (mean and 95% interval; {count}" + (f"; {held})" if held else ")")


def utility_curves(results: Any, out: Optional[str | os.PathLike] = None, *,
                   x: str = "epsilon", y: str = "f1", logx: Optional[bool] = None,
                   title: Optional[str] = None) -> Any:
    """Draws ``y`` (a metric) against ``x`` (a swept parameter); saves a PNG if ``out``.

    Args:
      results: rows, or a path to a results file or sweep directory.
      out: where to save the figure (PNG); None returns the figure without saving.
      x: the parameter column on the x axis (``epsilon``, ``c``, ...).
      y: the metric to draw (a value of the ``metric`` column).
      logx: log-scaled x axis; default: by the data's span (:data:`LOG_SPAN`).
      title: figure title (default: the metric, trial count and fixed parameters).

    Returns:
      The :class:`matplotlib.figure.Figure` (not registered with ``pyplot``).

    Raises:
      ValueError: ``y`` is not a metric of the results, or ``x`` not a numeric column.
    """
    from matplotlib.figure import Figure

    rows = _rows_of(results, x, y)
    panel_cols, line_cols, fixed = _split(rows, x)
    panels = sorted({_key(r, panel_cols) for r in rows})
    labels = list(dict.fromkeys(r["label"] for r in rows))
    colour = dict(zip(labels, _palette(len(labels))))
    styles = list(dict.fromkeys(_key(r, line_cols) for r in rows))
    style = {s: STYLES[i % len(STYLES)] for i, s in enumerate(styles)}
    if logx is None:
        xs = [float(r[x]) for r in rows]
        logx = min(xs) > 0 and max(xs) / min(xs) >= LOG_SPAN

    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig = Figure(figsize=(PANEL_SIZE[0] * ncols + 3.2, PANEL_SIZE[1] * nrows),
                 layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    widest = 0.0
    for ax, panel in zip(axes.flat, panels):
        mine = [r for r in rows if _key(r, panel_cols) == panel]
        widest = max(widest, _draw_panel(ax, mine, x, labels, colour, line_cols, style))
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(", ".join(f"{k}={v}" if k != "dataset" else v
                               for k, v in zip(panel_cols, panel)), fontsize=9)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles = _legend(rows, labels, colour, line_cols, style, widest)
    fig.legend(handles=handles, loc="outside right center", fontsize=9)
    fig.suptitle(title or _title(y, x, rows, fixed), fontsize=11)
    if out is not None:
        fig.savefig(out, dpi=DPI)
    return fig


def _key(row: dict, cols: Sequence[str]) -> tuple:
    return tuple(str(row[k]) for k in cols)


def _rows_of(results: Any, x: str, y: str) -> list[dict]:
    """The rows of metric ``y`` with a number in column ``x``; a clear error otherwise."""
    from svtjax.sweep import read_results

    rows = read_results(results) if isinstance(results, (str, os.PathLike)) else list(results)
    metrics = sorted({r["metric"] for r in rows})
    if y not in metrics:
        raise ValueError(f"metric {y!r} is not in the results; they hold: {', '.join(metrics)}")
    rows = [r for r in rows if r["metric"] == y]
    if not rows or x not in rows[0]:
        cols = [k for k in (rows[0] if rows else {}) if k not in ("metric",)]
        raise ValueError(f"x={x!r} is not a column of the results; columns: {', '.join(cols)}")
    rows = [r for r in rows if isinstance(r[x], (int, float)) and not isinstance(r[x], bool)]
    if not rows:
        raise ValueError(f"column {x!r} holds no numbers to plot against")
    return rows


def _draw_panel(ax, rows: list[dict], x: str, labels: list, colour: dict,
                line_cols: Sequence[str], style: dict) -> float:
    """One panel's curves with their interval bands; returns the widest band drawn."""
    widest = 0.0
    for label in labels:
        for s, (ls, marker) in style.items():
            pts = sorted((float(r[x]), r["mean"], r["ci_low"], r["ci_high"]) for r in rows
                         if r["label"] == label and _key(r, line_cols) == s)
            if not pts:
                continue
            px, py, lo, hi = zip(*pts)
            ax.plot(px, py, linestyle=ls, marker=marker, ms=4, lw=1.6, color=colour[label])
            ax.fill_between(px, lo, hi, color=colour[label], alpha=BAND_ALPHA, lw=0.8,
                            edgecolor=colour[label])
            widest = max([widest] + [h - low for low, h in zip(lo, hi) if h == h and low == low])
    return widest


def _legend(rows: list[dict], labels: list, colour: dict, line_cols: Sequence[str],
            style: dict, widest: float) -> list:
    """Legend handles: one colour per label, one line style per other column's value, and the
    band's meaning (with its width when it is narrower than the lines)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Line2D([], [], color=colour[label], lw=2, label=label) for label in labels]
    if line_cols:
        for s, (ls, marker) in style.items():
            text = ", ".join(f"{k}={v}" for k, v in zip(line_cols, s))
            handles.append(Line2D([], [], color="0.3", linestyle=ls, marker=marker, label=text))
    span = max(abs(max(r["mean"] for r in rows) - min(r["mean"] for r in rows)), 1e-300)
    note = "shaded: 95% interval of the mean"
    if widest < _VISIBLE * span:
        note += f" (at most {widest:.2g} wide: narrower than the lines)"
    handles.append(Patch(facecolor="0.5", alpha=BAND_ALPHA, edgecolor="0.5", label=note))
    return handles
