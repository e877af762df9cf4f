"""svtjax: Monte Carlo simulation of the sparse vector technique (SVT) in JAX.

Public surface (DESIGN.md, "Core contracts"):

* ``svtjax.noise`` — Laplace, Gaussian, Exponential, Gumbel, Zero.
* ``svtjax.budget`` — ε split rules (Lyu'17, Ding'19, Liu'24 Table 4).
* ``svtjax.accounting`` — guarantees (pure, (ε, δ), RDP), composition, the SVT bounds.
* ``svtjax.correction`` — Liu'24 threshold corrections (closed form and FFT).
* ``svtjax.estimators`` — Ding'19 free-gap estimators (BLUE, Lemma 5 bound, MSE ratios).
* ``svtjax.mechanisms.get(name, **params)`` / ``names()`` — the registry.
* ``svtjax.simulate`` — many trials, chunked and sharded, compiled once per structure.
* ``svtjax.selected`` — the ⊤ items of an Outcome in stream order; ``svtjax.prefix_counts`` —
  the evaluated prefix's length and ⊤ count, read only up to each trial's halting point.
* ``svtjax.reference`` — plain numpy loops written from the papers; ``svtjax.testing`` — the
  common-random-number harness that checks a mechanism against its reference.
* ``svtjax.tune_allocator()`` — an explicit, process-wide glibc tuning for large runs (never
  done on import).
* ``svtjax.metrics``, ``svtjax.datasets`` — utility metrics and the offline datasets.
* ``svtjax.sweep`` (grids), ``svtjax.audit`` (empirical privacy audits) — imported on first
  use: ``import svtjax.sweep``. The papers' tables and figures are reproduced by the
  repository's top-level ``experiments/`` (not part of the package; ``svtjax reproduce``).
"""

from svtjax import (
    accounting,
    budget,
    correction,
    datasets,
    estimators,
    mechanisms,
    metrics,
    noise,
    reference,
)
from svtjax._cache import enable_compilation_cache
from svtjax._core import Draws, Outcome, prefix_counts, selected
from svtjax._malloc import tune_allocator
from svtjax.accounting import RDP, ApproxDP, Guarantee, NotPrivate, PureDP
from svtjax.mechanisms import get, names
from svtjax.simulate import simulate

__version__ = "0.1.0"

__all__ = [
    "RDP",
    "ApproxDP",
    "Draws",
    "Guarantee",
    "NotPrivate",
    "Outcome",
    "PureDP",
    "accounting",
    "budget",
    "correction",
    "datasets",
    "enable_compilation_cache",
    "estimators",
    "get",
    "mechanisms",
    "metrics",
    "names",
    "noise",
    "prefix_counts",
    "reference",
    "selected",
    "simulate",
    "tune_allocator",
]
