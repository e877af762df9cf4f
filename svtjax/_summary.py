"""Across-trial summaries of a metric: mean, spread and a Student-t (or normal) interval."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from svtjax import _validate
from svtjax._types import Array, ArrayLike


class Summary(NamedTuple):
    """Mean of a metric across trials with its spread and a confidence interval.

    Attributes:
      mean: sample mean.
      std: sample standard deviation (ddof = 1; NaN for one trial).
      sem: standard error of the mean, ``std / sqrt(num_trials)``.
      lower: lower end of the confidence interval for the mean.
      upper: upper end of the confidence interval for the mean.
      num_trials: number of trials summarised (a Python int).
    """

    mean: Array
    std: Array
    sem: Array
    lower: Array
    upper: Array
    num_trials: int


def summary(values: ArrayLike, confidence: float = 0.95, *, axis: int = 0,
            method: str = "t") -> Summary:
    """Mean, standard deviation, standard error and confidence interval across trials.

    The interval is ``mean ± q * sem`` with ``q`` the ``(1 + confidence) / 2`` quantile of
    Student's t with ``num_trials - 1`` degrees of freedom (``method="t"``, exact for normal
    per-trial values and the right choice for Lyu et al.'s 100 trials) or of the standard normal
    (``method="normal"``, the large-sample approximation; the two agree to 3 digits beyond
    ~1000 trials). NaNs propagate.

    Args:
      values: float array; one metric value per trial along ``axis`` (any other axes are kept,
        e.g. a sweep grid).
      confidence: two-sided coverage of the interval, in (0, 1).
      axis: the trial axis (0, the leading trial axis of ``svtjax.simulate``, by default).
      method: ``"t"`` or ``"normal"``.

    Returns:
      A :class:`Summary` whose array fields have ``values``' shape without ``axis``.

    Raises:
      ValueError: if ``confidence`` is not in (0, 1), ``method`` is unknown, or there are no
        trials along ``axis``.
    """
    _validate.probability("confidence", confidence)
    _validate.one_of("method", method, ("t", "normal"))
    values = jnp.asarray(values)
    if not jnp.issubdtype(values.dtype, jnp.floating):
        values = values.astype(jax.dtypes.canonicalize_dtype(jnp.float64))
    if values.ndim == 0:
        raise ValueError("values must have a trial axis; got a scalar")
    axis = axis % values.ndim
    num = values.shape[axis]
    if num < 1:
        raise ValueError(f"values must hold at least one trial along axis {axis}; got shape "
                         f"{values.shape}")
    import scipy.stats  # imported where used: `import svtjax` stays fast

    p = (1 + float(confidence)) / 2
    if method == "t":
        q = float(scipy.stats.t.ppf(p, num - 1)) if num > 1 else math.nan
    else:
        q = float(scipy.stats.norm.ppf(p))
    mean, std, sem, lower, upper = _summary(values, axis, np.asarray(q, values.dtype))
    return Summary(mean, std, sem, lower, upper, num)


@functools.partial(jax.jit, static_argnums=1)
def _summary(values: Array, axis: int, q: Array) -> tuple[Array, ...]:
    """The summary's arrays, one compiled program per shape, dtype and axis (op by op, each of
    its operations was a program of its own); ``q``, the quantile, is an argument (in the
    values' dtype, as a Python float would be rounded), so every confidence level and trial
    count of a shape shares the program."""
    num = values.shape[axis]
    mean = jnp.mean(values, axis=axis)
    std = jnp.std(values, axis=axis, ddof=1) if num > 1 else jnp.full_like(mean, jnp.nan)
    sem = std / math.sqrt(num)
    half = q * sem
    return mean, std, sem, mean - half, mean + half
