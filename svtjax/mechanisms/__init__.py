"""The mechanism registry: ``get(name, **params)`` and ``names()``.

Registry names are part of the API (DESIGN.md, "Registry"); a name never changes meaning.
"""

from svtjax.mechanisms import classic  # noqa: F401  (registers the Lyu'17 family)
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
