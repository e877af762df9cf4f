"""Plain-Python/numpy reference implementations, one per registry name.

Each is written from its paper's pseudo-code, line by line, never from the JAX kernels, and takes
the same ``Draws`` (as numpy arrays). ``run(mech, draws, queries, thresholds)`` dispatches on the
mechanism's registry name and parameters; the common-random-number tests check that it returns
exactly what ``mech.decide`` returns.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from svtjax._core import Draws, Outcome
from svtjax.reference import adaptive, classic, selection
from svtjax.reference import exponential as exponential_ref
from svtjax.reference import generalized as generalized_ref
from svtjax.reference.classic import stream_order

__all__ = ["REFERENCES", "run", "stream_order", "classic", "selection"]

REFERENCES: dict[str, Callable[..., Outcome]] = {
    "lyu-alg1": classic.lyu_alg1,
    "dpbook": classic.dpbook,
    "roth11": classic.roth11,
    "lee-clifton": classic.lee_clifton,
    "stoddard": classic.stoddard,
    "chen": classic.chen,
    "svt-s": classic.svt_s,
    "svt-retr": classic.svt_retr,
    "svt-gap": classic.svt_gap,
    "em-peeling": selection.em_peeling,
    "report-noisy-max": selection.report_noisy_max,
    "noisy-top-k-gap": selection.noisy_top_k_gap,
    "adaptive-svt-gap": adaptive.adaptive_svt_gap,
    "svt-exp": exponential_ref.svt_exp,
    "generalized-svt": generalized_ref.generalized_svt,
    "stagewise-svt": generalized_ref.stagewise_svt,
}


def _numpy(x):
    if x is None:
        return None
    return np.asarray(x)


def run(mech, draws: Draws, queries, thresholds) -> Outcome:
    """The reference outcome of ``mech`` (a registered mechanism) on the given draws."""
    name = mech.name
    if name not in REFERENCES:
        raise ValueError(f"no numpy reference for {name!r}; references exist for "
                         f"{sorted(REFERENCES)}")
    params = dict(mech.params())
    explicit = params.get("allocation") == "explicit"
    if name in ("svt-s", "svt-retr", "svt-gap", "svt-exp") and explicit:
        params["allocation"] = tuple(float(x) for x in mech._split)
    for key, value in list(params.items()):
        if isinstance(value, np.ndarray) or hasattr(value, "shape"):
            arr = np.asarray(value)
            params[key] = arr.item() if arr.ndim == 0 else arr
    draws = Draws(*(_numpy(x) for x in draws))
    return REFERENCES[name](draws, np.asarray(queries), np.asarray(thresholds), **params)
