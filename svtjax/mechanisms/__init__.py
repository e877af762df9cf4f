"""The mechanism registry and the rule contract.

* ``get(name, **params)``, ``names()``, ``parameters(name)``, ``registry()`` — the registry
  (a registered name never changes meaning).
* ``ThresholdMechanism``, ``Inputs``, ``Written``, ``CountState``, ``cutoff_block`` — how a
  threshold mechanism is written: a rule of a few pure functions that the one engine runs
  (``svtjax.mechanisms.rules``; the guide ``docs/guides/own-mechanism.md``).
* ``register`` — adds a mechanism (one's own too) with its numpy reference, test cases,
  privacy claims and distribution tests; ``static_field`` marks a structural parameter. A
  module added to this package is imported with it, so its mechanisms are registered.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from svtjax._pytree import static_field
from svtjax.mechanisms.base import (
    BLOCK,
    Mechanism,
    Registration,
    entry,
    get,
    names,
    parameters,
    register,
    registry,
    to_numpy_draws,
)
from svtjax.mechanisms.rules import CountState, Inputs, ThresholdMechanism, Written, cutoff_block

__all__ = ["BLOCK", "CountState", "Inputs", "Mechanism", "Registration", "ThresholdMechanism",
           "Written", "cutoff_block", "entry", "get", "names", "parameters", "register",
           "registry", "static_field", "to_numpy_draws"]


FAMILIES = ("classic", "selection", "adaptive", "exponential", "generalized", "flip")
"""The family modules in registry order (the README's table): classic (Lyu'17 Algorithms 1-7,
svt-retr, svt-gap), selection (em-peeling, report-noisy-max, noisy-top-k-gap), adaptive
(adaptive-svt-gap), exponential (svt-exp), generalized (generalized-svt, stagewise-svt), flip
(permute-and-flip, report-noisy-max-exp, gumbel-top-k)."""


def _import_modules() -> None:
    """Imports every public module of this package once (importing a module runs its
    ``register`` calls): the :data:`FAMILIES` in their order, then any other, by name. A new
    mechanism of the package is therefore a new module here and nothing else."""
    found = sorted(m.name for m in _pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    for module in FAMILIES + tuple(m for m in found if m not in FAMILIES):
        _importlib.import_module(f"{__name__}.{module}")


_import_modules()
