"""Fast pdf, cdf and sf of the noise laws the tests' exact oracles integrate.

The oracles integrate products of densities and tail probabilities by quadrature, which calls
the integrand 10^4-10^5 times per test; a method call of a frozen ``scipy.stats`` distribution
costs tens of microseconds of argument handling, most of those tests' time. :func:`fast` gives
the same functions of a frozen Laplace, normal, exponential or Gumbel distribution as plain
math / numpy / ``scipy.special`` expressions (the formulas scipy itself evaluates, so the values
agree to rounding: ``tests/test_laws.py`` checks them against scipy), on scalars and arrays
alike. :func:`laplace_pdf` and :func:`laplace_cdf` are plain scalar functions written from the
definition of Lap(b) (density e^(−|z|/b) / (2b)). Nothing here comes from svtjax.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np
from scipy import special


class Law(NamedTuple):
    pdf: Callable
    cdf: Callable
    sf: Callable


def _exp(x):  # e^x for a float, 0 or inf where math.exp would under- or overflow
    return math.exp(x) if x < 709.0 else math.inf


def _laplace(x):
    if isinstance(x, float):
        tail = 0.5 * _exp(-abs(x))
        return tail, (tail if x < 0 else 1 - tail), (tail if x > 0 else 1 - tail)
    tail = 0.5 * np.exp(-np.abs(x))
    return tail, np.where(x < 0, tail, 1 - tail), np.where(x > 0, tail, 1 - tail)


def _norm(x):
    if isinstance(x, float):
        return _exp(-0.5 * x * x) / math.sqrt(2 * math.pi), float(special.ndtr(x)), \
            float(special.ndtr(-x))
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi), special.ndtr(x), special.ndtr(-x)


def _expon(x):
    if isinstance(x, float):
        return (_exp(-x) if x >= 0 else 0.0), (-math.expm1(-x) if x > 0 else 0.0), \
            (_exp(-x) if x > 0 else 1.0)
    e = np.exp(-np.maximum(x, 0.0))
    return np.where(x >= 0, e, 0.0), np.where(x > 0, -np.expm1(-np.maximum(x, 0.0)), 0.0), \
        np.where(x > 0, e, 1.0)


def _gumbel_r(x):
    if isinstance(x, float):
        e = _exp(-x)
        return _exp(-(x + e)), _exp(-e), -math.expm1(-e)
    with np.errstate(over="ignore"):
        e = np.exp(-x)
        return np.exp(-(x + e)), np.exp(-e), -np.expm1(-e)


_STANDARD = {"laplace": _laplace, "norm": _norm, "expon": _expon, "gumbel_r": _gumbel_r}


def fast(frozen) -> Law:
    """pdf, cdf and sf of a frozen ``scipy.stats`` distribution in :data:`_STANDARD` (any loc and
    scale, keyword or positional)."""
    name = frozen.dist.name
    if name not in _STANDARD:
        raise ValueError(f"no fast law for scipy.stats.{name}")
    given = dict(zip(("loc", "scale"), frozen.args), **frozen.kwds)  # no shape parameters
    loc, scale = float(given.get("loc", 0.0)), float(given.get("scale", 1.0))
    standard = _STANDARD[name]

    def parts(x):
        if isinstance(x, (float, int, np.floating, np.integer)):
            return standard(float((x - loc) / scale))
        return standard((np.asarray(x, float) - loc) / scale)

    return Law(pdf=lambda x: parts(x)[0] / scale, cdf=lambda x: parts(x)[1],
               sf=lambda x: parts(x)[2])


def laplace_pdf(b: float):
    return lambda z: math.exp(-abs(z) / b) / (2 * b)


def laplace_cdf(b: float):
    return lambda x: 0.5 * math.exp(x / b) if x < 0 else 1.0 - 0.5 * math.exp(-x / b)
