"""Utility curves from sweep results (matplotlib).

``utility_curves(results, x="epsilon", y="f1")`` draws one panel per dataset (and per value of
c when c varies and is not on the x axis), one line per mechanism label and value of any other
swept parameter, with the 95% interval of each point's mean (Student t, the ``ci_low`` /
``ci_high`` columns) as a shaded band of the line's colour; the legend says so. ``results`` is a
``results.csv`` / ``results.parquet`` path, a sweep output directory, or the rows of
:func:`svtjax.sweep.run`.
"""

from __future__ import annotations

import os
from typing import Any, Optional

__all__ = ["utility_curves", "PANEL_SIZE", "DPI", "BAND_ALPHA"]

PANEL_SIZE = (7.0, 5.0)
"""Inches per panel (width, height): large enough for the bands and a legend of several lines."""

DPI = 130
"""Resolution of a saved PNG (a one-panel plot is 910 x 650 pixels)."""

BAND_ALPHA = 0.3
"""Opacity of the interval bands (each outlined in its line's colour, so narrow bands show)."""


def utility_curves(results: Any, out: Optional[str | os.PathLike] = None, *,
                   x: str = "epsilon", y: str = "f1", logx: Optional[bool] = None,
                   title: Optional[str] = None) -> Any:
    """Draws ``y`` (a metric) against ``x`` (a swept parameter); saves a PNG if ``out``.

    Args:
      results: rows, or a path to a results file or sweep directory.
      out: where to save the figure (PNG); None returns the figure without saving.
      x: the parameter column on the x axis (``epsilon``, ``c``, ...).
      y: the metric to draw (a value of the ``metric`` column).
      logx: log-scaled x axis (default: when x spans more than a factor of 20).
      title: figure title (default: the metric's name).

    Returns:
      The matplotlib Figure.

    Raises:
      ValueError: ``y`` is not a metric of the results, or ``x`` not a numeric column.
    """
    import matplotlib

    if out is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

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
    stats = {"threshold", "metric", "mean", "std", "se", "ci_low", "ci_high", "trials",
             "seconds", "seed", "point_id", "mechanism", "label", "dataset", x}
    varying = [k for k in rows[0] if k not in stats and not k.startswith("exact_")
               and len({str(r[k]) for r in rows}) > 1]
    # c (the top-c size) gets its own panels; other varying parameters split a label's line
    panel_cols = ["dataset"] + [k for k in varying if k == "c"]
    line_cols = [k for k in varying if k != "c"]
    panel_of = lambda r: tuple(str(r[k]) for k in panel_cols)  # noqa: E731
    panels = sorted({panel_of(r) for r in rows})
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(PANEL_SIZE[0] * ncols, PANEL_SIZE[1] * nrows),
                             squeeze=False)
    xs = [float(r[x]) for r in rows]
    if logx is None:
        logx = min(xs) > 0 and max(xs) / min(xs) > 20

    def line_of(r):
        extra = ", ".join(f"{k}={r[k]}" for k in line_cols if str(r[k]) != "")
        return r["label"] + (f" ({extra})" if extra else "")

    for ax, panel in zip(axes.flat, panels):
        mine = [r for r in rows if panel_of(r) == panel]
        for line in dict.fromkeys(line_of(r) for r in mine):
            pts = sorted((float(r[x]), r["mean"], r["ci_low"], r["ci_high"]) for r in mine
                         if line_of(r) == line)
            px, py, lo, hi = zip(*pts)
            handle, = ax.plot(px, py, "-o", ms=4, lw=1.6, label=line)
            ax.fill_between(px, lo, hi, color=handle.get_color(), alpha=BAND_ALPHA, lw=0.8,
                            edgecolor=handle.get_color())
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(", ".join(f"{k}={v}" if k != "dataset" else v
                               for k, v in zip(panel_cols, panel)), fontsize=9)
        ax.grid(alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        band = Patch(facecolor="0.5", alpha=BAND_ALPHA, edgecolor="0.5",
                     label="shaded: 95% interval of the mean")
        ax.legend(handles + [band], labels + [band.get_label()], fontsize=9)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title or f"{y} against {x} (mean, 95% interval)", fontsize=12)
    fig.tight_layout()
    if out is not None:
        fig.savefig(out, dpi=DPI)
        plt.close(fig)
    return fig
