"""Test configuration: CPU only, strict dtype promotion, x64 available (opt-in per test)."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import pytest  # noqa: E402

# float64 is needed by the equivalence tests (values to 1e-12); tests that need float32 ask for
# it explicitly through dtypes, never through the default.
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "standard")


@pytest.fixture
def strict_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield
