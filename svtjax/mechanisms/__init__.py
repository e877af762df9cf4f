"""The mechanism registry: ``get(name, **params)`` and ``names()``.

Registry names are part of the API (DESIGN.md, "Registry"); a name never changes meaning.
"""

# Importing a family module registers its mechanisms; the import order is the registry order
# (DESIGN.md's table): classic (Lyu'17 Algorithms 1-7, svt-retr, svt-gap), selection
# (em-peeling, report-noisy-max, noisy-top-k-gap), adaptive (adaptive-svt-gap).
from svtjax.mechanisms import classic  # noqa: F401, I001
from svtjax.mechanisms import selection  # noqa: F401, I001
from svtjax.mechanisms import adaptive  # noqa: F401, I001
from svtjax.mechanisms import exponential  # noqa: F401, I001
from svtjax.mechanisms import generalized  # noqa: F401, I001
from svtjax.mechanisms.base import (
                                    BLOCK,
                                    Mechanism,
                                    get,
                                    names,
                                    parameters,
                                    registry,
                                    to_numpy_draws,
)

__all__ = ["BLOCK", "Mechanism", "get", "names", "parameters", "registry", "to_numpy_draws"]
