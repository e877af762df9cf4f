"""Pieces every experiment script shares: the command line (one-line errors, exit status 2),
loading the datasets available offline, turning on the persistent compilation cache the way the
``svtjax`` command line does, small adapters to the sweep engine (``svtjax.sweep``), the
family-wise multiple-comparison procedure (the claims themselves: ``_claims``).

Public svtjax API only (``svtjax.datasets.canonical`` / ``is_synthetic``, ``svtjax.sweep``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Optional, Sequence


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the project's error style: one line on stderr, exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        print(f"{self.prog}: error: {' '.join(message.split())}", file=sys.stderr)
        raise SystemExit(2)


def count_at_least(minimum: int):
    """An argparse ``type`` for an integer >= ``minimum`` (refused with a one-line error)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer >= {minimum}; got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}; got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def prog_name(name: str) -> str:
    """How experiment ``name`` was started, for its usage line: ``python -m
    experiments.NAME``, ``python PATH/NAME.py``, or (called from the command line's
    ``reproduce``) ``svtjax reproduce NAME``."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name == f"experiments.{name}":
        return f"python -m experiments.{name}"
    script = getattr(main, "__file__", None) or ""
    if spec is None and os.path.basename(script) == f"{name}.py":
        shown = sys.argv[0] if os.path.basename(sys.argv[0]) == f"{name}.py" else script
        return f"python {shown}"
    return f"svtjax reproduce {name}"


def experiment_parser(name: str, description: str, *, quick: str, paper: str, trials: str,
                      out: str, min_trials: int = 1) -> ArgumentParser:
    """The parser of experiment ``name`` with the options every experiment takes: ``--quick``
    | ``--paper``, ``--trials N`` (an integer >= ``min_trials``; 0 and negative numbers are
    refused, never replaced by the default), ``--out DIR`` and ``--seed``."""
    parser = ArgumentParser(prog=prog_name(name), description=description)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help=quick)
    mode.add_argument("--paper", action="store_true", help=paper)
    parser.add_argument("--trials", type=count_at_least(min_trials), help=trials)
    parser.add_argument("--out", default=out, help=f"output directory (default: {out})")
    parser.add_argument("--seed", type=int, default=0)
    return parser


def load_available(names: Sequence[str], cache_dir: Optional[str] = None):
    """(datasets loaded, {name: reason it is missing}) for the given dataset names."""
    from svtjax import datasets

    loaded, missing = {}, {}
    for name in names:
        key = datasets.canonical(name)
        kwargs = {}
        if cache_dir is not None and not datasets.is_synthetic(key):
            kwargs["cache_dir"] = cache_dir
        try:
            loaded[key] = datasets.load(key, **kwargs)
        except datasets.DatasetNotAvailableError as err:
            missing[key] = str(err).splitlines()[0]
    return loaded, missing


def enable_cache(tag: str) -> None:
    """Enables the persistent compilation cache unless ``SVTJAX_NO_CACHE=1``; a cache directory
    that cannot be used is reported on stderr (prefixed ``[tag]``) and the run goes on."""
    if os.environ.get("SVTJAX_NO_CACHE") == "1":
        return
    from svtjax import enable_compilation_cache

    try:
        enable_compilation_cache()
    except OSError as err:
        print(f"[{tag}] compilation cache disabled ({err})", file=sys.stderr)


def sweep_dataset(name: str, cache_dir: Optional[str] = None, **extra) -> dict:
    """A sweep config's dataset entry for a dataset :func:`load_available` loaded (its cache
    directory passed on for the real datasets, which take one)."""
    from svtjax import datasets

    entry = {"name": name, **extra}
    if cache_dir is not None and not datasets.is_synthetic(name):
        entry["cache_dir"] = cache_dir
    return entry


def sweep_dtype() -> str:
    """The sweep ``dtype`` matching JAX's default float where this is called (float64 under
    ``jax_enable_x64``, set globally or by a ``with jax.enable_x64(True):`` block)."""
    import jax
    import numpy as np

    return str(jax.dtypes.canonicalize_dtype(np.float64))


def group_rows(rows, *keys: str) -> dict:
    """A sweep's tidy rows grouped by the given columns: ``{key value(s): {metric: row}}`` (one
    key: its value; several: a tuple).

    Group by every column that tells two results apart: a sweep keeps one point per distinct
    computation, so two ``[[mechanisms]]`` tables with different labels can share a
    ``point_id`` (both labels get their own rows); grouping by ``point_id`` alone would merge
    them and keep one label. Two rows of one group with the same metric raise ``ValueError``
    rather than one silently replacing the other.
    """
    out: dict = {}
    for r in rows:
        ident = r[keys[0]] if len(keys) == 1 else tuple(r[k] for k in keys)
        group = out.setdefault(ident, {})
        if r["metric"] in group:
            raise ValueError(f"two rows for metric {r['metric']!r} in the group {ident!r} of "
                             f"{keys}: group by more columns (e.g. 'label')")
        group[r["metric"]] = r
    return out


def jsonable(value: Any) -> Any:
    """``value`` with numpy/JAX scalars and arrays, tuples and objects made JSON-friendly
    (objects by their ``repr``), for the parameter columns of a table."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if hasattr(value, "shape") and hasattr(value, "tolist"):
        return jsonable(value.tolist())
    return repr(value)


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value))


def fit_unit_axis(ax, values, span: float = 20.0) -> None:
    """A y-axis for a metric in [0, 1] that shows its data: the data's range (padded) rather
    than 0-1 when every value is small, and a log axis (symlog when zeros are present) when
    the positive values span more than ``span``×, so curves near zero are not drawn flat."""
    vals = [float(v) for v in values if math.isfinite(float(v))]
    if not vals:
        return
    lo, hi = min(vals), max(vals)
    pos = [v for v in vals if v > 0]
    if pos and max(pos) / min(pos) > span:
        if lo > 0:
            ax.set_yscale("log")
            ax.set_ylim(min(pos) / 1.5, min(1.5, hi * 1.5))
        else:
            ax.set_yscale("symlog", linthresh=min(pos))
            ax.set_ylim(0.0, min(1.5, hi * 1.5))
        return
    pad = max(0.01, 0.08 * (hi - lo))
    ax.set_ylim(max(-0.02, lo - pad), min(1.02, hi + pad))


# ---------------------------------------------------------------------------------------------
# Multiple comparisons
# ---------------------------------------------------------------------------------------------
def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down procedure (Holm 1979): which hypotheses to reject at family-wise error
    rate ``alpha``.

    Sort the m p-values p_(1) <= ... <= p_(m); reject H_(1), ..., H_(j) for the largest j with
    p_(i) <= alpha / (m − i + 1) for every i <= j. The probability of rejecting any true
    hypothesis is at most ``alpha`` whatever the dependence between the tests (tested on a null
    simulation in ``tests/test_experiment_common.py``).

    Returns:
      One bool per p-value, in the input order: True where rejected (the difference is
      significant at family-wise level ``alpha``).
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    reject = [False] * m
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (m - rank):
            break
        reject[i] = True
    return reject


def two_sided_p(z: float) -> float:
    """P(|Z| >= |z|) for a standard normal Z."""
    return math.erfc(abs(z) / math.sqrt(2.0))


def one_sided_p(z: float) -> float:
    """P(Z >= z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


# ---------------------------------------------------------------------------------------------
# Monte Carlo means against exact expectations (svtjax.exact)
# ---------------------------------------------------------------------------------------------
def bernoulli_kl(a: float, b: float) -> float:
    """KL(Bernoulli(a) ‖ Bernoulli(b)), with 0·log 0 = 0 (``inf`` where b is 0 or 1 and a
    is not)."""
    def term(x, y):
        if x == 0.0:
            return 0.0
        return math.inf if y == 0.0 else x * math.log(x / y)

    return term(a, b) + term(1.0 - a, 1.0 - b)


def hoeffding_p(mean: float, mu: float, n: int) -> float:
    """Two-sided p-value of "E[X] = mu" from the mean of ``n`` independent [0, 1] variables,
    valid for every law on [0, 1]: by Hoeffding (1963, Theorem 1 and §4),
    P(mean ≥ x) ≤ exp(−n·KL(x ‖ μ)) for x ≥ μ (Bernoulli laws' KL; the mirror bound below),
    so p = min(1, 2·exp(−n·KL(mean ‖ μ))). For n values all 0 it is 2(1 − μ)^n."""
    clip = lambda x: min(max(float(x), 0.0), 1.0)  # noqa: E731
    return min(1.0, 2.0 * math.exp(-n * bernoulli_kl(clip(mean), clip(mu))))


def hoeffding_gap(mu: float, n: int, level: float) -> float:
    """The smallest d with n·KL(μ + d ‖ μ) ≥ ``level`` (bisection; 1 − μ if none): the gap
    above μ that :func:`hoeffding_p` flags at p ≤ 2·exp(−level)."""
    mu = min(max(float(mu), 0.0), 1.0)
    lo, hi = 0.0, 1.0 - mu
    if n * bernoulli_kl(mu + hi, mu) < level:
        return hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if n * bernoulli_kl(mu + mid, mu) < level else (lo, mid)
    return hi


def exact_agreement(cells: Sequence[dict], alpha: float = 0.05) -> dict:
    """Monte Carlo means of a [0, 1] metric against their exact expectations.

    ``cells``: dicts with ``mean``, ``exact`` (None: not a cell), ``trials`` and ``se`` (the
    Monte Carlo standard error), plus any labels. A metric's law is often far from normal at
    the papers' 100 runs (SER: mostly 0, rarely large), so each cell is tested with
    :func:`hoeffding_p`, valid for every law, and the family with Holm at ``alpha``; ``z``
    (the normal approximation) is kept for reading only. Returns the tested cells (with ``z``,
    ``p``, ``significant``), the significant ones, the largest finite |z| and the median gap
    the test can flag (its resolution at these run counts)."""
    tested = []
    for cell in cells:
        exact = cell.get("exact")
        if exact is None or not math.isfinite(exact) or cell["trials"] < 2:
            continue
        gap = cell["mean"] - exact
        z = gap / cell["se"] if cell["se"] > 0 else (math.copysign(math.inf, gap) if gap
                                                     else 0.0)
        tested.append({**cell, "z": z, "p": hoeffding_p(cell["mean"], exact, cell["trials"])})
    for cell, rejected in zip(tested, holm([c["p"] for c in tested], alpha)):
        cell["significant"] = rejected
    finite = [abs(c["z"]) for c in tested if math.isfinite(c["z"])]
    level = math.log(2.0 * max(len(tested), 1) / alpha)  # Holm's first step
    resolution = sorted(hoeffding_gap(c["exact"], c["trials"], level) for c in tested)
    return {"alpha": alpha, "cells": tested, "max_abs_z": max(finite, default=math.nan),
            "significant": [c for c in tested if c["significant"]],
            "median_detectable_gap": resolution[len(resolution) // 2] if tested else math.nan}
