"""Laplace density and distribution function as plain scalar functions, for the tests' numerical
integrals (``scipy.integrate.quad`` calls its integrand hundreds of times per integral; a frozen
``scipy.stats`` distribution costs tens of microseconds a call, these well under one). Written
from the definition of Lap(b): density e^(−|z|/b) / (2b)."""

import math


def laplace_pdf(b: float):
    return lambda z: math.exp(-abs(z) / b) / (2 * b)


def laplace_cdf(b: float):
    return lambda x: 0.5 * math.exp(x / b) if x < 0 else 1.0 - 0.5 * math.exp(-x / b)
