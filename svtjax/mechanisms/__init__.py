"""The mechanism registry: ``get(name, **params)`` and ``names()``.

Registry names are part of the API (DESIGN.md, "Registry"); a name never changes meaning.
"""

# Importing a family module registers its mechanisms (classic: Lyu'17 Algorithms 1-7;
# selection: em-peeling, report-noisy-max).
from svtjax.mechanisms import classic, selection  # noqa: F401
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
