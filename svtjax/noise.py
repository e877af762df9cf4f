"""Noise distributions used by the SVT family, as immutable pytrees with a traced scale.

Each distribution is a scale family: ``sample(key, shape) == scale * standard(key, shape)``.
svtjax's ``Draws`` store *standard* (unit-scale) variates, so the same draws serve every ε and
every noise scale (common random numbers across a sweep), and a mechanism multiplies by its scale
inside ``decide``.

All methods are pure and jit-able; they work in float32 and float64 (the dtype of ``x`` or the
``dtype`` argument).

References:
  Lyu, Su, Li (2017), Sec. 2 (Laplace mechanism); Liu et al. (2024), Table 1 (exponential,
  Gumbel, Laplace and Gaussian query noise); Zhu & Wang (2020), Sec. 3 (Gaussian SVT).
"""

from __future__ import annotations

import math
from typing import ClassVar

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr

from svtjax import _validate
from svtjax._pytree import pytree_dataclass
from svtjax._types import ArrayLike, DTypeLike, Key

__all__ = ["Noise", "Laplace", "Gaussian", "Exponential", "Gumbel", "Zero", "FAMILIES"]

_EULER_GAMMA = 0.57721566490153286060651209008240243


def _float_dtype(dtype: DTypeLike | None) -> jnp.dtype:
    if dtype is None:
        return jnp.zeros((), float).dtype  # float32, or float64 under jax_enable_x64
    dtype = jnp.dtype(dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"dtype must be a floating dtype such as float32 or float64; got {dtype}")
    return dtype


def _as_float(x: ArrayLike) -> jax.Array:
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(_float_dtype(None))
    return x


class Noise:
    """Base class: a location-zero scale family with leaf ``scale``."""

    family: ClassVar[str] = ""

    @property
    def scale_value(self):
        return self.scale  # type: ignore[attr-defined]

    @staticmethod
    def standard(key: Key, shape: tuple[int, ...] = (), dtype: DTypeLike | None = None
                 ) -> jax.Array:
        raise NotImplementedError

    def sample(self, key: Key, shape: tuple[int, ...] = (), dtype: DTypeLike | None = None
               ) -> jax.Array:
        """Draws ``shape`` independent variates."""
        dtype = _float_dtype(dtype)
        return (self.standard(key, shape, dtype) * jnp.asarray(self.scale_value, dtype)
                ).astype(dtype)

    def _scale_array(self) -> jax.Array:
        """The scale as a floating array (integer scales promote to the default float)."""
        return _as_float(self.scale_value)

    def _z(self, x: ArrayLike) -> jax.Array:
        x = _as_float(x)
        return x / jnp.asarray(self.scale_value, x.dtype)

    def sf_cdf(self, x: ArrayLike) -> tuple[jax.Array, jax.Array]:
        """(P(X > x), P(X ≤ x)), each computed directly (no 1 − p cancellation); families
        whose two tails share work override it (the exact laws need both at every point)."""
        return self.sf(x), self.cdf(x)


@pytree_dataclass
class Laplace(Noise):
    """Laplace(0, b): density exp(-|x|/b) / (2b); mean 0, variance 2b²."""

    scale: ArrayLike = 1.0
    family: ClassVar[str] = "laplace"

    def __post_init__(self):
        _validate.positive("Laplace scale", self.scale)

    @staticmethod
    def standard(key, shape=(), dtype=None):
        return jax.random.laplace(key, shape, _float_dtype(dtype))

    def cdf(self, x):
        return self.sf_cdf(x)[1]

    def sf(self, x):
        return self.sf_cdf(x)[0]

    def sf_cdf(self, x):
        # One exponential for both tails: the smaller is e = exp(−|z|)/2, the other 1 − e ≥ 1/2.
        z = self._z(x)
        e = 0.5 * jnp.exp(-jnp.abs(z))
        return jnp.where(z > 0, e, 1 - e), jnp.where(z < 0, e, 1 - e)

    def logpdf(self, x):
        z = self._z(x)
        return -jnp.abs(z) - jnp.log(2 * jnp.asarray(self.scale, z.dtype))

    @property
    def mean(self):
        return jnp.zeros_like(self._scale_array())

    @property
    def variance(self):
        return 2 * self._scale_array() ** 2


@pytree_dataclass
class Gaussian(Noise):
    """Normal(0, σ²)."""

    sigma: ArrayLike = 1.0
    family: ClassVar[str] = "gaussian"

    def __post_init__(self):
        _validate.positive("Gaussian sigma", self.sigma)

    @property
    def scale_value(self):
        return self.sigma

    @staticmethod
    def standard(key, shape=(), dtype=None):
        return jax.random.normal(key, shape, _float_dtype(dtype))

    def cdf(self, x):
        return ndtr(self._z(x))

    def sf(self, x):
        return ndtr(-self._z(x))

    def logpdf(self, x):
        z = self._z(x)
        return -0.5 * z * z - jnp.log(jnp.asarray(self.sigma, z.dtype)) - 0.5 * math.log(
            2 * math.pi)

    @property
    def mean(self):
        return jnp.zeros_like(self._scale_array())

    @property
    def variance(self):
        return self._scale_array() ** 2


@pytree_dataclass
class Exponential(Noise):
    """Exponential with mean ``scale`` (rate 1/scale), support [0, ∞)."""

    scale: ArrayLike = 1.0
    family: ClassVar[str] = "exponential"

    def __post_init__(self):
        _validate.positive("Exponential scale", self.scale)

    @staticmethod
    def standard(key, shape=(), dtype=None):
        return jax.random.exponential(key, shape, _float_dtype(dtype))

    def cdf(self, x):
        z = self._z(x)
        return jnp.where(z < 0, jnp.zeros_like(z), -jnp.expm1(-jnp.maximum(z, 0)))

    def sf(self, x):
        z = self._z(x)
        return jnp.where(z < 0, jnp.ones_like(z), jnp.exp(-jnp.maximum(z, 0)))

    def logpdf(self, x):
        z = self._z(x)
        return jnp.where(z < 0, -jnp.inf, -z - jnp.log(jnp.asarray(self.scale, z.dtype)))

    @property
    def mean(self):
        return self._scale_array()

    @property
    def variance(self):
        return self._scale_array() ** 2


@pytree_dataclass
class Gumbel(Noise):
    """Gumbel (maximum), location 0, scale β: cdf exp(-exp(-x/β)) (``scipy.stats.gumbel_r``)."""

    scale: ArrayLike = 1.0
    family: ClassVar[str] = "gumbel"

    def __post_init__(self):
        _validate.positive("Gumbel scale", self.scale)

    @staticmethod
    def standard(key, shape=(), dtype=None):
        return jax.random.gumbel(key, shape, _float_dtype(dtype))

    def cdf(self, x):
        return jnp.exp(-jnp.exp(-self._z(x)))

    def sf(self, x):
        return -jnp.expm1(-jnp.exp(-self._z(x)))

    def logpdf(self, x):
        z = self._z(x)
        return -z - jnp.exp(-z) - jnp.log(jnp.asarray(self.scale, z.dtype))

    @property
    def mean(self):
        return _EULER_GAMMA * self._scale_array()

    @property
    def variance(self):
        return (math.pi ** 2 / 6) * self._scale_array() ** 2


@pytree_dataclass
class Zero(Noise):
    """No noise: a point mass at 0 (Stoddard et al.'s queries, Lyu'17 Alg 5).

    ``logpdf`` is the log of the probability mass: 0 at x = 0, -inf elsewhere.
    """

    family: ClassVar[str] = "zero"

    @property
    def scale_value(self):
        return 0.0

    @staticmethod
    def standard(key, shape=(), dtype=None):
        del key
        return jnp.zeros(shape, _float_dtype(dtype))

    def cdf(self, x):
        x = _as_float(x)
        return (x >= 0).astype(x.dtype)

    def sf(self, x):
        x = _as_float(x)
        return (x < 0).astype(x.dtype)

    def logpdf(self, x):
        x = _as_float(x)
        return jnp.where(x == 0, jnp.zeros_like(x), -jnp.inf)

    @property
    def mean(self):
        return jnp.zeros(())

    @property
    def variance(self):
        return jnp.zeros(())


FAMILIES: dict[str, type[Noise]] = {
    cls.family: cls for cls in (Laplace, Gaussian, Exponential, Gumbel, Zero)
}
