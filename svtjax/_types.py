"""Type aliases used at svtjax's public boundaries (one place, as chex's ``pytypes``)."""

from __future__ import annotations

from typing import Any, Union

import jax
import numpy as np

Array = jax.Array
ArrayLike = Union[jax.Array, np.ndarray, np.number, float, int]
DTypeLike = Any
Key = jax.Array  # a typed PRNG key from ``jax.random.key``
Seed = Union[int, Key]
