"""Tests for ``svtjax.noise``: samplers, distribution functions, jit/dtype behaviour, validation.

Oracles are independent of svtjax: ``scipy.stats`` (``laplace``, ``norm``, ``expon``,
``gumbel_r``) and, where scipy itself is inaccurate, the closed form evaluated with ``mpmath``.

Statistical tests: each sampler is checked with a one-sample Kolmogorov-Smirnov test on 10^5
variates against the scipy distribution, in float32 and float64, and must give p > 1e-4. A
correct sampler would fail one such test with probability 1e-4 *if the seeds were random*; the
seeds here are fixed, so the outcome is deterministic (a failure means the sampler or the JAX PRNG
changed, never bad luck). With 12 such tests the suite-wide false-alarm rate under random seeds
would be below 1.2e-3.

Deterministic comparisons (float64): relative tolerance 1e-12 everywhere, with one exception: where
the true value is below the smallest normal float64 (``np.finfo(float64).tiny`` ~ 2.2e-308), the
result only has to be below ``tiny`` in absolute value. XLA on CPU flushes subnormals to zero, so
there JAX returns 0 where scipy returns a subnormal such as 2e-322; that absolute tolerance is the
only one used.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st

from svtjax import noise

try:
    import mpmath
except ImportError:  # pragma: no cover - mpmath ships with scipy's test deps, but be safe
    mpmath = None

N_KS = 100_000
KS_PVALUE = 1e-4
RTOL = 1e-12
TINY64 = np.finfo(np.float64).tiny

# (class, name of its scale parameter, scipy distribution)
FAMILIES = [
    (noise.Laplace, "scale", st.laplace),
    (noise.Gaussian, "sigma", st.norm),
    (noise.Exponential, "scale", st.expon),
    (noise.Gumbel, "scale", st.gumbel_r),
]
FAMILY_IDS = [cls.__name__ for cls, _, _ in FAMILIES]
SCALES = [0.3, 1.0, 2.5]

# Standardised points z = x / scale: centre, both tails, the far tails where values underflow,
# and points on each side of 0 (where Laplace/Exponential/Zero change branch).
Z_GRID = np.array([-1000.0, -800.0, -745.0, -740.0, -700.0, -300.0, -50.0, -38.5, -37.0, -20.0,
                   -8.0, -5.0, -2.0, -1.0, -0.3, -1e-12, 0.0, 1e-12, 0.25, 1.0, 2.0, 5.0, 8.0,
                   20.0, 37.0, 38.5, 50.0, 300.0, 700.0, 740.0, 745.0, 800.0, 1000.0])


def assert_close_or_underflow(actual, expected, rtol=RTOL, what=""):
    """Relative tolerance ``rtol``; where |expected| < tiny, only |actual| < tiny is required."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    under = np.abs(expected) < TINY64
    bad_under = under & ~(np.abs(actual) < TINY64)
    assert not bad_under.any(), (
        f"{what}: expected an underflowing value (|v| < {TINY64:.3g}) at "
        f"{np.flatnonzero(bad_under)}; got {actual[bad_under]} vs expected {expected[bad_under]}")
    keep = ~under
    np.testing.assert_allclose(actual[keep], expected[keep], rtol=rtol, atol=0, err_msg=what)


def _make(cls, param, scale):
    return cls(**{param: scale})


def _seed(*parts) -> int:
    """A fixed seed per test case (stable across runs and Python processes)."""
    return sum((i + 1) * 1009 * (ord(ch) + 7) for i, ch in enumerate(":".join(map(str, parts))))


# --------------------------------------------------------------------------------------------
# Samplers against scipy (KS)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_sampler_matches_scipy_ks(cls, param, dist, dtype):
    scale = 2.5
    key = jax.random.key(_seed(cls.__name__, jnp.dtype(dtype).name))
    x = _make(cls, param, scale).sample(key, (N_KS,), dtype)
    assert x.dtype == jnp.dtype(dtype) and x.shape == (N_KS,)
    x = np.asarray(x, dtype=np.float64)
    assert np.all(np.isfinite(x))
    res = st.kstest(x, dist(loc=0.0, scale=scale).cdf)
    assert res.pvalue > KS_PVALUE, (
        f"{cls.__name__}({param}={scale}) {jnp.dtype(dtype).name}: KS statistic "
        f"{res.statistic:.5f}, p = {res.pvalue:.3g} <= {KS_PVALUE}; sample mean {x.mean():.5f} "
        f"vs expected {dist(scale=scale).mean():.5f}, sample var {x.var():.5f} vs expected "
        f"{dist(scale=scale).var():.5f}")


@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_standard_is_unit_scale_and_sample_is_scaled_standard(cls, param, dist):
    # The class docstring's contract: sample(key, shape) == scale * standard(key, shape).
    key = jax.random.key(_seed("std", cls.__name__))
    scale = 1.7
    std = cls.standard(key, (N_KS,), jnp.float64)
    smp = _make(cls, param, scale).sample(key, (N_KS,), jnp.float64)
    np.testing.assert_array_equal(np.asarray(smp), np.asarray(std) * scale)
    # standard() is a static method on the class: unit scale, same law as scipy's standard one.
    res = st.kstest(np.asarray(std), dist().cdf)
    assert res.pvalue > KS_PVALUE, (cls.__name__, res)


# --------------------------------------------------------------------------------------------
# cdf / sf / logpdf / mean / variance against scipy in float64
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("method", ["cdf", "sf"])
@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_cdf_sf_match_scipy(cls, param, dist, method, scale):
    x = Z_GRID * scale
    got = getattr(_make(cls, param, scale), method)(jnp.asarray(x, jnp.float64))
    assert got.dtype == jnp.float64
    with np.errstate(over="ignore"):
        want = getattr(dist(loc=0.0, scale=scale), method)(x)
    assert_close_or_underflow(got, want, what=f"{cls.__name__}({scale}).{method}")


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_logpdf_matches_scipy(cls, param, dist, scale):
    x = Z_GRID * scale
    got = np.asarray(_make(cls, param, scale).logpdf(jnp.asarray(x, jnp.float64)))
    with np.errstate(over="ignore"):
        want = dist(loc=0.0, scale=scale).logpdf(x)
    if cls is noise.Laplace:
        # scipy.stats.laplace.logpdf takes the log of the pdf, which underflows beyond
        # |x/b| ~ 708 (it returns -inf at 745 and is off by 1e-5 at 740); the far tail is
        # checked against the closed form in test_laplace_logpdf_far_tail instead. (Evaluated
        # on the whole grid, the shape of the other eager evaluations: no programs of its own.)
        near = np.abs(Z_GRID) <= 700
        got, want = got[near], want[near]
    # Values here are finite or -inf (Exponential for x < 0, Gumbel far left); none underflow.
    assert_close_or_underflow(got, want, what=f"{cls.__name__}({scale}).logpdf")


@pytest.mark.skipif(mpmath is None, reason="mpmath not installed")
def test_laplace_logpdf_far_tail():
    # Z_GRID's points (the shape of the other tests' eager calls: no program of its own), its
    # ends moved further out
    scale = 0.7
    x = np.concatenate([[-2000.0], Z_GRID[1:-1], [5000.0]]) * scale
    got = np.asarray(noise.Laplace(scale).logpdf(jnp.asarray(x)))
    mpmath.mp.dps = 40
    want = [float(-abs(mpmath.mpf(v)) / mpmath.mpf(scale) - mpmath.log(2 * mpmath.mpf(scale)))
            for v in x]
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=0)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_mean_variance_match_scipy(cls, param, dist, scale):
    n = _make(cls, param, scale)
    d = dist(loc=0.0, scale=scale)
    np.testing.assert_allclose(float(n.mean), d.mean(), rtol=RTOL, atol=0)
    np.testing.assert_allclose(float(n.variance), d.var(), rtol=RTOL, atol=0)


@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_sf_is_complement_of_cdf(cls, param, dist):
    # 627 points, evaluated in slices of Z_GRID's length: the eager operations of the cdf/sf
    # tests on the same shape, so no program of its own
    x = np.linspace(-30.0, 30.0, 19 * Z_GRID.size).reshape(19, Z_GRID.size)
    n = _make(cls, param, 1.3)
    total = np.stack([np.asarray(n.cdf(jnp.asarray(row))) + np.asarray(n.sf(jnp.asarray(row)))
                      for row in x])
    np.testing.assert_allclose(total, 1.0, rtol=0, atol=4e-16)


@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_batched_scale_broadcasts(cls, param, dist):
    """An array of scales broadcasts against the points and in the moments. (Evaluated in one
    jitted program, not an eager program per operation: the same broadcasting rules, and
    test_jit_matches_eager checks that eager calls equal jitted ones, for a scalar scale.)"""
    scales = np.array([0.5, 1.0, 4.0])
    x = np.array([-1.0, 0.7, 3.0])
    n = _make(cls, param, jnp.asarray(scales))
    cdf, variance = jax.jit(lambda n, x: (n.cdf(x), n.variance))(n, jnp.asarray(x))
    assert cdf.shape == variance.shape == (3,)
    assert_close_or_underflow(cdf, dist(scale=scales).cdf(x))
    assert_close_or_underflow(variance, dist(scale=scales).var())


# --------------------------------------------------------------------------------------------
# jit, vmap, no retrace, float32
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_jit_matches_eager(cls, param, dist):
    """The eager calls and one jitted program agree. (Their shapes are those of the other
    tests' eager calls, so the eager calls here compile nothing of their own: the sample is
    N_KS variates in float64, the KS tests' program, and the points, 25 on [-6, 6] the first 8
    of them twice, are as many as Z_GRID's, the cdf/sf/logpdf tests'.)"""
    n = _make(cls, param, 1.9)
    x = jnp.asarray(np.resize(np.linspace(-6.0, 6.0, 25), Z_GRID.size))
    key = jax.random.key(3)

    def everything(n, key, x):
        return (n.cdf(x), n.sf(x), n.logpdf(x), n.mean, n.variance,
                n.sample(key, (N_KS,), x.dtype))

    eager = everything(n, key, x)
    jitted = jax.jit(everything)(n, key, x)
    for e, j in zip(eager, jitted, strict=True):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-14, atol=1e-300)
        assert j.dtype == e.dtype


@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_scale_is_traced_one_compile_and_vmappable(cls, param, dist):
    traces = []

    @jax.jit
    def f(scale, x):
        traces.append(None)  # runs once per trace
        return _make(cls, param, scale).cdf(x)

    x = jnp.asarray([-1.0, 0.5, 2.0])
    for scale in (0.5, 1.5, 3.0):
        assert_close_or_underflow(f(scale, x), dist(scale=scale).cdf(np.asarray(x)))
    assert len(traces) == 1, (
        f"{cls.__name__}: the scale must be a traced leaf; traced {len(traces)} times")

    # A stacked batch of noise objects vmaps (the scale is the pytree's only leaf); under jit,
    # one program rather than an eager one per batched operation.
    stacked = _make(cls, param, jnp.asarray([0.5, 1.5, 3.0]))
    out = jax.jit(jax.vmap(lambda n: n.sf(jnp.asarray(1.0))))(stacked)
    assert_close_or_underflow(out, dist(scale=np.array([0.5, 1.5, 3.0])).sf(1.0))


@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_float32_dtype_preserved(cls, param, dist, strict_promotion):
    """Eager and jitted: the dtypes of the eager calls are those their trace gives
    (``jax.eval_shape``, the same Python and promotion rules, nothing compiled); the values, in
    one compiled program, agree with scipy to float32 accuracy."""
    n = _make(cls, param, 2.0)
    x32 = jnp.asarray(np.linspace(-5.0, 5.0, 41), jnp.float32)
    key = jax.random.key(11)

    def everything(n, key, x):
        outs = {m: getattr(n, m)(x) for m in ("cdf", "sf", "logpdf")}
        outs["sample"] = n.sample(key, (4, 3), jnp.float32)
        outs["standard"] = cls.standard(key, (4, 3), jnp.float32)
        return outs

    traced = jax.eval_shape(everything, n, key, x32)
    outs = jax.jit(everything)(n, key, x32)
    for how, got in (("eager", traced), ("jit", outs)):
        for name, v in got.items():
            assert v.dtype == jnp.float32, (
                f"{cls.__name__}.{name} ({how}) returned {v.dtype} for float32")
        assert got["sample"].shape == got["standard"].shape == (4, 3)
    # float32 values agree with scipy to float32 accuracy
    xs = np.asarray(x32, np.float64)
    d = dist(scale=2.0)
    for m in ("cdf", "sf"):
        np.testing.assert_allclose(np.asarray(outs[m], np.float64), getattr(d, m)(xs),
                                   rtol=2e-6, atol=1e-30, err_msg=f"{cls.__name__}.{m} float32")
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(np.asarray(outs["logpdf"], np.float64), d.logpdf(xs),
                                   rtol=2e-6, atol=0, err_msg=f"{cls.__name__}.logpdf float32")


@pytest.mark.parametrize("cls,param,dist", [
    pytest.param(noise.Laplace, "scale", st.laplace, id="Laplace"),
    pytest.param(noise.Gaussian, "sigma", st.norm, id="Gaussian"),
    pytest.param(noise.Exponential, "scale", st.expon, id="Exponential"),
    pytest.param(noise.Gumbel, "scale", st.gumbel_r, id="Gumbel"),
])
def test_mean_variance_dtype_follow_float32_scale(cls, param, dist):
    n = _make(cls, param, jnp.float32(2.0))
    assert n.variance.dtype == jnp.float32
    assert n.mean.dtype == jnp.float32


@pytest.mark.parametrize("cls,param,dist", [
    pytest.param(noise.Laplace, "scale", st.laplace, id="Laplace"),
    pytest.param(noise.Gaussian, "sigma", st.norm, id="Gaussian"),
    pytest.param(noise.Exponential, "scale", st.expon, id="Exponential"),
    pytest.param(noise.Gumbel, "scale", st.gumbel_r, id="Gumbel"),
])
def test_mean_variance_floating_for_integer_scale(cls, param, dist):
    n = _make(cls, param, 3)
    assert n.mean.dtype == jnp.float64 and n.variance.dtype == jnp.float64
    assert float(n.variance) == pytest.approx(dist(scale=3).var(), rel=RTOL)


@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_default_dtype_is_float64_under_x64_and_integer_dtype_rejected(cls, param, dist):
    # dtypes as the eager calls give them, from their trace (jax.eval_shape: nothing compiled)
    n = _make(cls, param, 1.0)
    key = jax.random.key(0)
    assert jax.eval_shape(lambda: n.sample(key, (3,))).dtype == jnp.float64
    # an integer point is promoted to the default float
    assert jax.eval_shape(lambda: n.cdf(1)).dtype == jnp.float64
    with pytest.raises(TypeError, match="dtype"):
        n.sample(key, (3,), jnp.int32)


# --------------------------------------------------------------------------------------------
# Zero
# --------------------------------------------------------------------------------------------

_ZERO_X = np.array([-np.inf, -1e300, -1.0, -1e-300, -0.0, 0.0, 1e-300, 1.0, 1e300, np.inf])


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64], ids=["float32", "float64"])
def test_zero_samples_are_zero(dtype):
    z = noise.Zero()
    key = jax.random.key(5)
    for out in (z.sample(key, (4, 5), dtype), noise.Zero.standard(key, (4, 5), dtype),
                jax.jit(lambda n, k: n.sample(k, (4, 5), dtype))(z, key)):
        assert out.shape == (4, 5) and out.dtype == jnp.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(out), 0.0)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64], ids=["float32", "float64"])
def test_zero_cdf_sf_logpdf(dtype):
    z = noise.Zero()
    with np.errstate(over="ignore"):  # in float32, ±1e300 become ±inf and ±1e-300 become ±0
        x = jnp.asarray(_ZERO_X.astype(dtype))
    xn = np.asarray(x, np.float64)
    cdf, sf, logpdf = (np.asarray(f(x)) for f in (z.cdf, z.sf, z.logpdf))
    for out in (cdf, sf, logpdf):
        assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(cdf, (xn >= 0).astype(float))  # P(0 <= x): step at 0
    np.testing.assert_array_equal(sf, (xn < 0).astype(float))  # P(0 > x)
    np.testing.assert_array_equal(cdf + sf, 1.0)
    np.testing.assert_array_equal(logpdf, np.where(xn == 0, 0.0, -np.inf))
    assert cdf[list(_ZERO_X).index(-1.0)] == 0 and cdf[list(_ZERO_X).index(1.0)] == 1
    jitted = jax.jit(lambda n, x: (n.cdf(x), n.sf(x), n.logpdf(x)))(z, x)
    for a, b in zip(jitted, (cdf, sf, logpdf), strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)


def test_zero_moments_and_pytree():
    z = noise.Zero()
    assert float(z.mean) == 0.0 and float(z.variance) == 0.0
    assert jax.tree_util.tree_leaves(z) == []  # no numeric parameter


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

_BAD_VALUE = [0, 0.0, -1.0, -1e-300, math.nan, math.inf, -math.inf, np.array([1.0, -1.0]),
              np.array([1.0, np.nan])]
_BAD_TYPE = ["a", "1.0", None, True, [None]]


@pytest.mark.parametrize("bad", _BAD_VALUE, ids=repr)
@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_invalid_scale_value_raises_value_error_naming_parameter(cls, param, dist, bad):
    with pytest.raises(ValueError, match=rf"\b{param}\b"):
        _make(cls, param, bad)
    with pytest.raises(ValueError, match=rf"\b{param}\b"):
        cls(bad)  # positional construction is validated too


@pytest.mark.parametrize("bad", _BAD_TYPE, ids=repr)
@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_invalid_scale_type_raises_type_error_naming_parameter(cls, param, dist, bad):
    with pytest.raises(TypeError, match=rf"\b{param}\b"):
        _make(cls, param, bad)


@pytest.mark.parametrize("cls,param,dist", FAMILIES, ids=FAMILY_IDS)
def test_valid_scales_accepted(cls, param, dist):
    for good in (1e-300, 0.5, 3, np.float32(2.0), jnp.asarray([0.1, 2.0]), 1e300):
        n = _make(cls, param, good)
        assert getattr(n, param) is good
