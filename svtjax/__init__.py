"""svtjax: Monte Carlo simulation of the sparse vector technique (SVT) in JAX.

Public surface (DESIGN.md, "Core contracts"):

* ``svtjax.noise`` — Laplace, Gaussian, Exponential, Gumbel, Zero.
* ``svtjax.budget`` — ε split rules.
* ``svtjax.mechanisms.get(name, **params)`` / ``names()`` — the registry.
* ``svtjax.simulate`` — many trials, chunked and sharded, compiled once per structure.
* ``svtjax.selected`` — the ⊤ items of an Outcome in stream order.
* ``svtjax.reference`` — plain numpy loops written from the papers.
"""

from svtjax import accounting, budget, datasets, mechanisms, metrics, noise, reference
from svtjax._cache import enable_compilation_cache
from svtjax._core import Draws, Outcome, selected
from svtjax.accounting import Guarantee, NotPrivate, PureDP
from svtjax.mechanisms import get, names
from svtjax.simulate import simulate

__version__ = "0.1.0"

__all__ = [
    "Draws",
    "Guarantee",
    "NotPrivate",
    "Outcome",
    "PureDP",
    "accounting",
    "budget",
    "datasets",
    "enable_compilation_cache",
    "get",
    "mechanisms",
    "metrics",
    "names",
    "noise",
    "reference",
    "selected",
    "simulate",
]
