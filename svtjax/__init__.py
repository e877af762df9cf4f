"""svtjax: Monte Carlo simulation of the sparse vector technique (SVT) in JAX.

Public surface:

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

Every name above is loaded on first use: ``import svtjax`` itself imports no JAX.
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING

_LAZY = {
    # public name: (module, attribute; None for the module itself)
    **{name: (f"svtjax.{name}", None) for name in (
        "accounting", "budget", "correction", "datasets", "estimators", "mechanisms", "metrics",
        "noise", "reference")},
    "enable_compilation_cache": ("svtjax._cache", "enable_compilation_cache"),
    **{name: ("svtjax._core", name) for name in ("Draws", "Outcome", "prefix_counts", "selected")},
    "tune_allocator": ("svtjax._malloc", "tune_allocator"),
    **{name: ("svtjax.accounting", name) for name in ("RDP", "ApproxDP", "Guarantee", "NotPrivate",
                                                      "PureDP")},
    "get": ("svtjax.mechanisms", "get"),
    "names": ("svtjax.mechanisms", "names"),
    "simulate": ("svtjax.simulate", "simulate"),
    # submodules that ``import svtjax`` used to load as a side effect: still attributes
    **{name: (f"svtjax.{name}", None) for name in (
        "_bits", "_cache", "_core", "_loops", "_malloc", "_native", "_pytree", "_rng", "_types",
        "_validate", "testing")},
}
"""What ``import svtjax`` provides, loaded on first use (PEP 562): importing the package runs
no JAX, so the ``svtjax`` command can install its Ctrl-C handler before the heavy imports
(``svtjax._interrupt``), and an import of one submodule loads only what that needs."""


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'svtjax' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    """The package's module type: ``svtjax.simulate`` stays the function.

    ``svtjax.simulate`` is both a submodule and the public function it defines. Python binds a
    submodule on its package when the submodule is first imported (``from svtjax.simulate
    import run_chunk`` would make ``svtjax.simulate`` the module), so that one binding is
    replaced by the function, as the eager ``from svtjax.simulate import simulate`` did;
    ``sys.modules["svtjax.simulate"]`` (``importlib.import_module``) is the module."""

    def __setattr__(self, name, value):
        if (name == "simulate" and isinstance(value, types.ModuleType)
                and value is sys.modules.get("svtjax.simulate")):
            value = getattr(value, "simulate", value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

if TYPE_CHECKING:  # what the names above are, for type checkers and editors
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
