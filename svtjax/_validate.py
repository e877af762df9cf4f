"""Input checks shared by the public wrappers.

Every check runs in Python on concrete values, before anything is traced or compiled, and raises
a ``ValueError``/``TypeError`` whose message names the parameter, what was received and what is
allowed. Traced values (inside ``jit``/``vmap``) are not checked: they were checked when the
object holding them was built.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from svtjax._pytree import is_concrete


def _values(x: Any) -> np.ndarray:
    return np.asarray(x)


def positive(name: str, value: Any, *, allow_inf: bool = False) -> Any:
    """Checks ``value > 0`` (elementwise) and finite unless ``allow_inf``."""
    if not is_concrete(value):
        return value
    if isinstance(value, bool) or not _is_number_like(value):
        raise TypeError(f"{name} must be a positive number; got {value!r} of type "
                        f"{type(value).__name__}")
    v = _values(value).astype(float)
    if np.any(np.isnan(v)) or np.any(v <= 0) or (not allow_inf and np.any(np.isinf(v))):
        allowed = "a positive number (0 < {0} < inf)".format(name)
        if allow_inf:
            allowed = f"a positive number or inf ({name} > 0)"
        raise ValueError(f"{name} must be {allowed}; got {value!r}")
    return value


def nonnegative(name: str, value: Any) -> Any:
    """Checks ``0 <= value < inf`` (elementwise)."""
    if not is_concrete(value):
        return value
    if isinstance(value, bool) or not _is_number_like(value):
        raise TypeError(f"{name} must be a non-negative number; got {value!r}")
    v = _values(value).astype(float)
    if np.any(~np.isfinite(v)) or np.any(v < 0):
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return value


def integer(name: str, value: Any, *, minimum: int = 1) -> Any:
    """Checks that ``value`` is a whole number ``>= minimum`` (elementwise)."""
    if not is_concrete(value):
        return value
    if isinstance(value, bool) or not _is_number_like(value):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {value!r} of type "
                        f"{type(value).__name__}")
    v = _values(value)
    f = v.astype(float)
    if not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r} "
                         "(not a whole number)")
    if np.any(v < minimum):
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return value


def probability(name: str, value: Any, *, open_low: bool = True, open_high: bool = True) -> Any:
    """Checks ``0 < value < 1`` (or closed ends as requested)."""
    if not is_concrete(value):
        return value
    if isinstance(value, bool) or not _is_number_like(value):
        raise TypeError(f"{name} must be a number in (0, 1); got {value!r}")
    v = float(value)
    low_ok = v > 0 if open_low else v >= 0
    high_ok = v < 1 if open_high else v <= 1
    if not (low_ok and high_ok):
        lo = "(" if open_low else "["
        hi = ")" if open_high else "]"
        raise ValueError(f"{name} must lie in {lo}0, 1{hi}; got {value!r}")
    return value


def finite_vector(name: str, value: Any) -> np.ndarray:
    """Checks a non-empty 1-D array of finite real numbers and returns it as numpy."""
    try:
        arr = np.asarray(value)
    except Exception as err:  # noqa: BLE001 - re-raised with context
        raise TypeError(f"{name} must be a 1-D array of real numbers; got {type(value).__name__}"
                        ) from err
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                   or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be a 1-D array of real numbers; got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real-valued; got complex dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with shape (n,); got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one query; got an empty array")
    bad = ~np.isfinite(arr.astype(float))
    if np.any(bad):
        where = np.flatnonzero(bad)[:5].tolist()
        raise ValueError(f"{name} must be finite; got NaN or inf at positions {where} "
                         f"({int(bad.sum())} in all)")
    return arr


def thresholds_like(name: str, value: Any, n: int) -> np.ndarray:
    """Checks a finite scalar or an array shaped ``(n,)``."""
    arr = np.asarray(value)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be a number or an array of shape ({n},); got dtype "
                        f"{arr.dtype}")
    if arr.ndim not in (0, 1) or (arr.ndim == 1 and arr.shape[0] != n):
        raise ValueError(f"{name} must be a scalar or have the queries' shape ({n},); got shape "
                         f"{arr.shape}")
    bad = ~np.isfinite(arr.astype(float))
    if np.any(bad):
        raise ValueError(f"{name} must be finite; got NaN or inf "
                         f"({int(np.sum(bad))} value(s))")
    return arr


def one_of(name: str, value: Any, allowed: Any) -> Any:
    """Checks membership in a fixed set of names."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)!r}; got {value!r}")
    return value


def _is_number_like(value: Any) -> bool:
    if isinstance(value, numbers.Number):
        return True
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001
        return False
    return arr.dtype != object and (np.issubdtype(arr.dtype, np.number))
