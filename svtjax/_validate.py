"""Input checks shared by the public wrappers.

Every check runs in Python on concrete values, before anything is traced or compiled, and raises
a ``ValueError``/``TypeError`` whose message names the parameter, what was received and what is
allowed. Traced values (inside ``jit``/``vmap``) are not checked: they were checked when the
object holding them was built.
"""

from __future__ import annotations

import difflib
import functools
import math
import numbers
from typing import Any, NamedTuple, Sequence

import numpy as np

from svtjax._pytree import is_concrete

INT32_MAX = 2**31 - 1
"""The largest integer parameter accepted (counts, cut-offs, trials and stream positions are
int32 inside the kernels)."""

NOISE_HEADROOM = 64.0
"""A noise scale b must satisfy b · NOISE_HEADROOM <= the dtype's largest number, so that a scaled
variate stays finite: standard Laplace, exponential and Gumbel variates are below 17 in float32
and 37 in float64 (−log of the smallest uniform), Gaussian ones below 9."""


def _values(x: Any) -> np.ndarray:
    return np.asarray(x)


_PLAIN = (int, float)  # Python numbers: checked without numpy (the common, fast path)


def positive(name: str, value: Any, *, allow_inf: bool = False) -> Any:
    """Checks ``value > 0`` (elementwise) and finite unless ``allow_inf``."""
    if type(value) in _PLAIN and value > 0 and (allow_inf or value != math.inf):
        return value
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
    if type(value) in _PLAIN and 0 <= value < math.inf:
        return value
    if not is_concrete(value):
        return value
    if isinstance(value, bool) or not _is_number_like(value):
        raise TypeError(f"{name} must be a non-negative number; got {value!r}")
    v = _values(value).astype(float)
    if np.any(~np.isfinite(v)) or np.any(v < 0):
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return value


def integer(name: str, value: Any, *, minimum: int = 1, maximum: int = INT32_MAX) -> Any:
    """Checks that ``value`` is a whole number in ``[minimum, maximum]`` (elementwise; the
    default maximum is :data:`INT32_MAX`, what the kernels' int32 counters hold). Every refusal
    states the whole range, whichever end was crossed."""
    if type(value) is int and minimum <= value <= maximum:
        return value
    if not is_concrete(value):
        return value
    allowed = f"an integer >= {minimum} and <= {maximum}"
    if isinstance(value, bool) or not _is_number_like(value):
        raise TypeError(f"{name} must be {allowed}; got {brief(value)} of type "
                        f"{type(value).__name__}")
    if isinstance(value, (int, np.integer)):  # exact, however large: no float conversion
        v = int(value)
        if v < minimum:
            raise ValueError(f"{name} must be {allowed}; got {v}")
        if v > maximum:
            raise ValueError(f"{name} must be {allowed}; got {v} (larger than the kernels' "
                             "int32 counters hold)")
        return value
    v = _values(value)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            f = v.astype(float)
    except OverflowError:  # an object array of Python ints beyond any float
        raise ValueError(f"{name} must be {allowed}; got {brief(value)} (larger than any "
                         "float)") from None
    if np.any(np.isnan(f)) or np.any(np.isfinite(f) & (f != np.round(f))):
        raise ValueError(f"{name} must be {allowed}; got {brief(value)} (not a whole number)")
    if np.any(f < minimum):
        raise ValueError(f"{name} must be {allowed}; got {brief(value)}")
    if np.any(f > maximum):
        raise ValueError(f"{name} must be {allowed}; got {brief(value)} (larger than the "
                         "kernels' int32 counters hold)")
    return value


SEED_RANGE = (0, 2**64)
"""Seeds accepted: integers 0 <= seed < 2**64, each giving its own trials (no two alias)."""


def seed(name: str, value: Any) -> int:
    """Checks a seed: a Python or numpy integer in :data:`SEED_RANGE`; returns it as ``int``.

    A jax PRNG key (new-style, or a legacy ``uint32[2]``) is not a seed: the message says so in
    one line instead of printing the key's multi-line repr.
    """
    if type(value) is int and SEED_RANGE[0] <= value < SEED_RANGE[1]:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        dtype = str(getattr(value, "dtype", ""))
        key = dtype.startswith("key<") or (dtype == "uint32" and np.shape(value) == (2,))
        hint = (" (a jax PRNG key is not a seed: pass the integer the key was made from)"
                if key else "")
        raise TypeError(f"{name} must be an integer in [0, 2**64); got {brief(value)}{hint}")
    value = int(value)
    if not SEED_RANGE[0] <= value < SEED_RANGE[1]:
        raise ValueError(f"{name} must be an integer in [0, 2**64) (each seed its own trials); "
                         f"got {value}")
    return value


def brief(value: Any, limit: int = 80) -> str:
    """A one-line description of ``value`` for a message: its repr on one line, or for an
    array whose repr is long or spans lines, its type, shape and dtype."""
    text = " ".join(repr(value).split())
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None and ("\n" in repr(value) or len(text) > limit):
        return f"a {type(value).__name__} of shape {tuple(shape)} and dtype {dtype}"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def probability(name: str, value: Any, *, open_low: bool = True, open_high: bool = True) -> Any:
    """Checks ``0 < value < 1`` (or closed ends as requested)."""
    if not is_concrete(value):
        return value
    if isinstance(value, bool) or not _is_number_like(value):
        raise TypeError(f"{name} must be a number in (0, 1); got {value!r}")
    scalar(name, value)
    v = float(value)
    low_ok = v > 0 if open_low else v >= 0
    high_ok = v < 1 if open_high else v <= 1
    if not (low_ok and high_ok):
        lo = "(" if open_low else "["
        hi = ")" if open_high else "]"
        raise ValueError(f"{name} must lie in {lo}0, 1{hi}; got {value!r}")
    return value


REAL_DTYPES = "float32, float64, integer or bool"
"""What query and threshold arrays may hold: a run computes in float32 or float64 (integers and
bools are converted); float16, bfloat16, complex, extended-precision and object arrays are
refused before anything is traced."""


def _real_dtype(name: str, dtype: Any) -> None:
    """Refuses an array dtype outside :data:`REAL_DTYPES`, naming it and what is allowed."""
    dt = np.dtype(dtype)
    if dt.kind in "iub" or dt in (np.dtype(np.float32), np.dtype(np.float64)):
        return
    if dt.kind == "c":
        why = " (complex numbers cannot be compared with a threshold)"
    elif dt.kind in "fV" or dt.name == "bfloat16":
        why = f" (cast first, e.g. np.asarray({name}, np.float32))"
    else:
        why = ""
    raise TypeError(f"{name} must be an array of {REAL_DTYPES} values; got dtype {dt}{why}")


def finite_vector(name: str, value: Any) -> np.ndarray:
    """Checks a non-empty 1-D array of finite real numbers of a supported dtype
    (:data:`REAL_DTYPES`) and returns it as numpy."""
    try:
        arr = np.asarray(value)
    except Exception as err:  # noqa: BLE001 - re-raised with context
        raise TypeError(f"{name} must be a 1-D array of real numbers; got {type(value).__name__}"
                        ) from err
    _real_dtype(name, arr.dtype)
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
    """Checks a finite scalar or an array shaped ``(n,)`` of a supported dtype
    (:data:`REAL_DTYPES`)."""
    arr = np.asarray(value)
    _real_dtype(name, arr.dtype)
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
    try:
        ok = isinstance(value, str) and value in allowed
    except TypeError:  # an unhashable value against a dict or set
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {sorted(allowed)!r}; got {value!r}"
                         f"{suggest(value, list(allowed))}")
    return value


def _is_number_like(value: Any) -> bool:
    """A real number or an array of them (not bool-typed, not complex, not strings)."""
    if isinstance(value, numbers.Number):
        return not isinstance(value, numbers.Complex) or isinstance(value, numbers.Real)
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001
        return False
    return (arr.dtype != object and np.issubdtype(arr.dtype, np.number)
            and not np.iscomplexobj(arr))


def scalar(name: str, value: Any) -> Any:
    """Checks that a concrete numeric ``value`` is a single number (0-d), not an array.

    A mechanism holds one value per parameter; a batch of mechanisms is built one by one and
    stacked (``jax.tree_util.tree_map(lambda *x: jnp.stack(x), *mechs)``), then vmapped.
    """
    if value is None or type(value) in _PLAIN or isinstance(value, (str, bool)):
        return value
    if not is_concrete(value):
        return value
    if isinstance(value, (list, tuple)) or np.ndim(value) != 0:
        if isinstance(value, (list, tuple)) or _is_number_like(value):
            shape = f"shape {np.shape(value)}" if not isinstance(value, (list, tuple)) else \
                f"a {type(value).__name__} of {len(value)}"
            raise ValueError(f"{name} must be a single number; got {shape} (build one "
                             "mechanism per value; stack built mechanisms to vmap over them)")
    return value


def scalars(obj: Any, names: Sequence[str]) -> None:
    """:func:`scalar` for the attributes ``names`` of ``obj`` (a mechanism's numeric
    parameters, before any other check compares them)."""
    for name in names:
        scalar(name, getattr(obj, name, None))


def suggest(word: Any, choices: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to ``word`` (case, ``_`` and
    ``-`` ignored, then difflib's closest match), or ``""``."""
    if not isinstance(word, str):
        return ""
    choices = [c for c in choices if isinstance(c, str)]
    lowered = {c.lower().replace("_", "-"): c for c in choices}
    key = word.strip().lower().replace("_", "-")
    if key in lowered and lowered[key] != word:
        return f" (did you mean {lowered[key]!r}?)"
    close = difflib.get_close_matches(key, list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[close[0]]!r}?)" if close else ""


# -- what a run's dtype can hold -----------------------------------------------------------------

def _dtype_name(dtype: Any) -> str:
    return np.dtype(dtype).name


class _Info(NamedTuple):
    tiny: float
    max: float


_INFO: dict = {}


def _finfo(dtype: Any) -> _Info:
    """The smallest normal and the largest number of a floating dtype, as Python floats."""
    key = np.dtype(dtype)
    if key not in _INFO:
        info = np.finfo(key)
        _INFO[key] = _Info(float(info.tiny), float(info.max))
    return _INFO[key]


def _x64_hint(dtype: Any) -> str:
    if np.dtype(dtype) == np.float64:
        return ""
    return (" or compute in float64 (jax.config.update('jax_enable_x64', True); a sweep's "
            "dtype = \"float64\")")


def fits(name: str, value: Any, dtype: Any) -> None:
    """Checks that the finite numbers ``value`` stay finite, and non-zero ones non-zero and
    normal, when cast to the floating ``dtype`` (float32 flushes subnormals to zero on CPUs
    and GPUs, so a value below the smallest normal number computes as 0).

    Raises:
      ValueError: naming ``name``, the value, the dtype's range and what to do instead.
    """
    if value is None:
        return
    info = _finfo(dtype)
    if type(value) in _PLAIN:
        v = abs(float(value))
        if v == 0 or not math.isfinite(v) or info.tiny <= v <= info.max:
            return
    elif not is_concrete(value) or not _is_number_like(value):
        return
    elif isinstance(value, np.ndarray) and value.dtype == np.dtype(dtype):
        # already in dtype: nothing can overflow, only its subnormals compute as 0
        with np.errstate(invalid="ignore"):
            magnitude = np.abs(value)
            if not np.any((magnitude < info.tiny) & (magnitude > 0)):
                return
    v = np.asarray(value, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        cast = v.astype(dtype)
    big = np.isfinite(v) & ~np.isfinite(cast)
    small = (v != 0) & np.isfinite(v) & (np.abs(cast) < info.tiny)
    if np.any(big) or np.any(small):
        bad = float(v[big | small].flat[0])
        what = (f"overflows {_dtype_name(dtype)} (largest {float(info.max):.3g})" if np.any(big)
                else f"is below {_dtype_name(dtype)}'s smallest normal number "
                     f"({float(info.tiny):.3g}) and computes as 0")
        raise ValueError(f"{name} = {bad:.6g} {what}; use a value in its range"
                         f"{_x64_hint(dtype)}")


def computable(mech: Any, dtype: Any, *, queries: Any = None, thresholds: Any = None) -> None:
    """Checks, before anything is compiled, that ``mech`` computes meaningful numbers in the
    floating ``dtype`` of a run (float32 unless x64 is on; a sweep's ``dtype``).

    Every numeric leaf of the mechanism (its traced parameters: ε, Δ, shifts, corrections, the
    scales of noise objects) must fit ``dtype`` (:func:`fits`), integer leaves the kernels'
    int32 (:data:`INT32_MAX`), and every noise scale the mechanism draws with (``noises()``:
    name -> ``svtjax.noise`` object; every built-in mechanism has it, a mechanism of one's own
    on ``ThresholdMechanism`` too) must be finite and positive on the host and in ``dtype``,
    with room for a scaled variate (:data:`NOISE_HEADROOM`). ``queries`` and ``thresholds``,
    if given, must fit ``dtype`` as well. This covers every mechanism, user-registered ones
    included, because it reads only the pytree and ``noises()``.

    The mechanism's part is checked once per (mechanism, dtype) where the mechanism is hashable
    (a frozen pytree dataclass of plain numbers; equal mechanisms pass or fail alike): at every
    ``simulate`` call it cost a few percent of a 10-ms run.

    Raises:
      ValueError: one line naming the mechanism, the number, the dtype and what to do.
    """
    name = getattr(mech, "name", "") or type(mech).__name__
    what = f"{name} cannot run in {_dtype_name(dtype)}"
    try:
        _mechanism_computable_once(mech, np.dtype(dtype).name)
    except TypeError:  # unhashable (array leaves): checked every time
        _mechanism_computable(mech, dtype, what)
    for label, value in (("queries", queries), ("thresholds", thresholds)):
        if value is not None:
            try:
                fits(label, value, dtype)
            except ValueError as err:
                raise ValueError(f"{what}: {err}") from None


@functools.lru_cache(maxsize=1024)
def _mechanism_computable_once(mech: Any, dtype_name: str) -> None:
    """:func:`_mechanism_computable`, remembered for a hashable mechanism that passed (a failure
    raises, and is not remembered)."""
    name = getattr(mech, "name", "") or type(mech).__name__
    _mechanism_computable(mech, np.dtype(dtype_name), f"{name} cannot run in {dtype_name}")


def _mechanism_computable(mech: Any, dtype: Any, what: str) -> None:
    """The mechanism's part of :func:`computable`: its numeric leaves and noise scales."""
    import jax

    try:
        leaves = jax.tree_util.tree_leaves_with_path(mech)
    except Exception:  # noqa: BLE001 - not a pytree: nothing to check
        leaves = []
    for path, leaf in leaves:
        if type(leaf) is float:
            try:
                fits("", leaf, dtype)
                continue
            except ValueError:
                pass  # reported below, with the leaf's name
        elif type(leaf) is int and abs(leaf) <= INT32_MAX:
            continue
        if not is_concrete(leaf) or not _is_number_like(leaf):
            continue
        label = jax.tree_util.keystr(path).lstrip(".") or "parameter"
        arr = np.asarray(leaf)
        if arr.dtype.kind in "iu":
            if np.any(np.abs(arr.astype(float)) > INT32_MAX):
                raise ValueError(f"{what}: {label} = {arr.flat[0]} does not fit the kernels' "
                                 f"int32 (at most {INT32_MAX})")
            continue
        try:
            fits(label, arr, dtype)
        except ValueError as err:
            raise ValueError(f"{what}: {err}") from None
    noises = getattr(mech, "noises", None)
    if callable(noises):
        try:
            streams = noises()
        except (TypeError, ValueError, ArithmeticError) as err:
            raise ValueError(f"{what}: its noise scales cannot be computed from these "
                             f"parameters ({' '.join(str(err).split())})") from None
        info = _finfo(dtype)
        for stream, noise in dict(streams).items():
            scale = getattr(noise, "scale_value", None)
            if getattr(noise, "family", "") == "zero" or not is_concrete(scale):
                continue
            if type(scale) in _PLAIN and info.tiny <= scale <= info.max / NOISE_HEADROOM:
                continue
            b = np.asarray(scale, dtype=np.float64)
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                cast = b.astype(dtype)
                ok = (np.all(np.isfinite(b)) and np.all(b > 0) and np.all(cast >= info.tiny)
                      and np.all(cast * NOISE_HEADROOM <= info.max))
            if not ok:
                value = float(b.flat[0]) if b.size else float("nan")
                raise ValueError(f"{what}: its {stream} noise scale is {value:.6g}, outside "
                                 f"[{float(info.tiny):.3g}, {float(info.max) / NOISE_HEADROOM:.3g}]"
                                 " where noise stays finite and non-zero; change the "
                                 f"parameters (e.g. epsilon){_x64_hint(dtype)}")
