"""Plain-Python/numpy reference implementations, one per registry name.

Each is written from its paper's pseudo-code, line by line, never from the JAX kernels, and takes
the same ``Draws`` (as numpy arrays). A mechanism is registered together with its reference
(``svtjax.mechanisms.register(..., reference=fn)``); ``run(mech, draws, queries, thresholds)``
calls it with the mechanism's parameters, and the common-random-number tests
(``svtjax.testing.assert_matches_reference``) check that it returns exactly what
``mech.decide`` returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Callable, Iterator

import numpy as np

from svtjax._core import Draws, Outcome
from svtjax.reference import adaptive, classic, exponential, generalized, selection
from svtjax.reference.classic import stream_order

__all__ = ["REFERENCES", "run", "stream_order", "adaptive", "classic", "exponential",
           "generalized", "selection"]


class _References(Mapping):
    """Registry name -> numpy reference, read from the mechanism registry (a live view)."""

    def _entries(self) -> dict[str, Callable[..., Outcome]]:
        from svtjax.mechanisms import base

        return {name: base.entry(name).reference for name in base.names()
                if base.entry(name).reference is not None}

    def __getitem__(self, name: str) -> Callable[..., Outcome]:
        return self._entries()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())


REFERENCES: Mapping[str, Callable[..., Outcome]] = _References()
"""Registry name -> reference function (every registered mechanism that has one)."""


def run(mech, draws: Draws, queries, thresholds) -> Outcome:
    """The reference outcome of ``mech`` (a registered mechanism) on the given draws."""
    name = mech.name
    if name not in REFERENCES:
        raise ValueError(f"no numpy reference for {name!r}; references exist for "
                         f"{sorted(REFERENCES)}")
    draws = Draws({k: np.asarray(v) for k, v in draws.items()})
    return REFERENCES[name](draws, np.asarray(queries), np.asarray(thresholds),
                            **mech.reference_params())
