"""The mechanism registry and the rule contract.

* ``get(name, **params)``, ``names()``, ``parameters(name)``, ``registry()`` — the registry
  (a registered name never changes meaning).
* ``ThresholdMechanism``, ``Inputs``, ``Written``, ``CountState``, ``cutoff_block`` — how a
  threshold mechanism is written: a rule of a few pure functions that the one engine runs
  (``svtjax.mechanisms.rules``; the guide ``docs/guides/own-mechanism.md``).
* ``register`` — adds a mechanism (one's own too) with its numpy reference and test cases;
  ``static_field`` marks a structural parameter.
"""

# Importing a family module registers its mechanisms; the import order is the registry order
# (the README's table): classic (Lyu'17 Algorithms 1-7, svt-retr, svt-gap), selection
# (em-peeling, report-noisy-max, noisy-top-k-gap), adaptive (adaptive-svt-gap), exponential
# (svt-exp), generalized (generalized-svt, stagewise-svt), flip (permute-and-flip,
# report-noisy-max-exp, gumbel-top-k).
from svtjax.mechanisms import classic  # noqa: F401, I001
from svtjax.mechanisms import selection  # noqa: F401, I001
from svtjax.mechanisms import adaptive  # noqa: F401, I001
from svtjax.mechanisms import exponential  # noqa: F401, I001
from svtjax.mechanisms import generalized  # noqa: F401, I001
from svtjax.mechanisms import flip  # noqa: F401, I001
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
