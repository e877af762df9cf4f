"""Input checks of the audit functions: one clear line, before anything is computed."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from svtjax.audit.constants import VALUE_GRID

if TYPE_CHECKING:
    from svtjax.audit.pairs import Pair


def _check_int(name: str, value: Any, minimum: int, maximum: Optional[int] = None) -> None:
    allowed = f"an integer >= {minimum}" + ("" if maximum is None else f" and <= {maximum}")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be {allowed}; got {_brief(value)}")
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {allowed}; got {value}")


def _brief(value: Any) -> str:
    from svtjax import _validate

    return _validate.brief(value)


def _check_seed(seed: Any, name: str = "seed") -> int:
    """The seed rule of ``svtjax.simulate``: an integer in [0, 2**64), all 64 bits used."""
    from svtjax import _validate

    return _validate.seed(name, seed)


def _run_dtype() -> np.dtype:
    """The floating dtype an audit's trials run in: float32 unless ``jax_enable_x64`` is on."""
    import jax

    return np.dtype(jax.dtypes.canonicalize_dtype(np.float64))


def _check_computable(mech, pairs: Sequence[Pair] = (), edges=None) -> None:
    """Refuses, in one line and before anything is computed, a mechanism, an input pair or value
    bins that the run's dtype cannot hold (e.g. ε = 1e-40 is below float32's smallest normal
    number, and bins of 16·Δ/ε then overflow it): checked on the host, so no computation
    warns first."""
    from svtjax import _validate

    dtype = _run_dtype()
    _validate.computable(mech, dtype)
    name = getattr(mech, "name", "") or type(mech).__name__
    checks = []
    for pair in pairs:
        checks += [(f"a query of input pair {pair.name!r}", pair.queries),
                   (f"a query of input pair {pair.name!r}", pair.queries_prime),
                   (f"a threshold of input pair {pair.name!r}", pair.thresholds)]
    if edges is not None and np.size(edges):
        magnitude = np.abs(np.asarray(edges, float))
        checks += [(f"its largest value bin edge ({max(VALUE_GRID):g}·Δ/ε)", magnitude.max()),
                   ("its smallest non-zero value bin edge",
                    np.min(magnitude[magnitude > 0], initial=1.0))]
    try:
        for label, value in checks:
            _validate.fits(label, np.asarray(value, float), dtype)
    except ValueError as err:
        raise ValueError(f"{name} cannot be audited in {dtype.name}: {err}") from None


def _check_confidence(confidence: Any) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)):
        raise TypeError(f"confidence must be a number in (0, 1); got {confidence!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), e.g. 0.99; got {confidence}")
    return float(confidence)


def _check_delta(delta: Any) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)):
        raise TypeError(f"delta must be a number in [0, 1); got {delta!r}")
    if not 0.0 <= float(delta) < 1.0:
        raise ValueError(f"delta must lie in [0, 1); got {delta}")
    return float(delta)


def _check_seconds(seconds: Any) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float, np.integer,
                                                             np.floating)):
        raise TypeError(f"seconds must be a number of seconds > 0, e.g. 60; got {seconds!r}")
    if not (math.isfinite(float(seconds)) and float(seconds) > 0):
        raise ValueError(f"seconds must be a finite number of seconds > 0, e.g. 60; got "
                         f"{seconds}")
    return float(seconds)
