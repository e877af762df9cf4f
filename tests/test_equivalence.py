"""Common random numbers: the JAX kernel and the numpy reference, fed the same ``Draws``, agree.

For every mechanism configuration, in float64 and float32, on 2 stream lengths x 110 random
cases (220 per configuration and dtype; vmapped, so each shape compiles once): n <= 50, c in
1..5, integer scores with many ties or real scores, scalar or per-query thresholds, fixed or
shuffled order. Answers and items must be
identical; values and costs equal to 1e-12 (float64) or float32 rounding.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import svtjax
from svtjax import reference
from tests.cases import CASES, build, case_ids

SHAPES = (9, 50)
CASES_PER_SHAPE = 110


def _stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *trees)


def _inputs(rng, n, k, dtype):
    ties = rng.random(k) < 0.5
    q_ties = rng.integers(0, 4, (k, n)).astype(dtype)
    q_real = rng.normal(0.0, 3.0, (k, n)).astype(dtype)
    q = np.where(ties[:, None], q_ties, q_real).astype(dtype)
    per_query = rng.random(k) < 0.5
    t_scalar = np.repeat(rng.normal(1.0, 1.5, (k, 1)), n, axis=1)
    t_vec = rng.normal(1.0, 1.5, (k, n))
    t = np.where(per_query[:, None], t_vec, t_scalar).astype(dtype)
    return q, t, per_query


def _check(case, dtype, shuffle, seed, check_scan=False):
    rng = np.random.default_rng(seed)
    checked = 0
    for n in SHAPES:
        mechs = [build(case, rng) for _ in range(CASES_PER_SHAPE)]
        stacked = _stack(mechs)
        keys = jax.random.split(jax.random.key(seed + n), CASES_PER_SHAPE)
        draws = jax.vmap(lambda k: mechs[0].draw(k, n, shuffle=shuffle, dtype=dtype))(keys)
        q, t, per_query = _inputs(rng, n, CASES_PER_SHAPE, dtype)
        out = jax.vmap(lambda m, d, qq, tt: m.decide(d, qq, tt))(stacked, draws, q, t)
        out = jax.device_get(out)
        if check_scan:
            scan = jax.device_get(jax.vmap(
                lambda m, d, qq, tt: m.decide(d, qq, tt, vectorized=False))(stacked, draws, q, t))
        for i, mech in enumerate(mechs):
            d = jax.tree_util.tree_map(lambda x: np.asarray(x[i]), draws)
            thr = t[i] if per_query[i] else t[i, 0]
            ref = reference.run(mech, d, q[i], thr)
            got = jax.tree_util.tree_map(lambda x: x[i], out)
            msg = f"{case.id} n={n} case={i} {mech!r} dtype={dtype.__name__} shuffle={shuffle}"
            np.testing.assert_array_equal(got.answers, ref.answers, err_msg=msg)
            np.testing.assert_array_equal(got.items, ref.items, err_msg=msg)
            # float32: XLA may contract q + s*z into one fused multiply-add, so allow rounding
            # relative to the operands' magnitude, not to a (possibly cancelled) result.
            rtol, atol = (1e-12, 0.0) if dtype == np.float64 else (
                1e-6, 1e-6 * float(np.nanmax(np.abs(ref.values), initial=1.0)))
            np.testing.assert_allclose(got.values, ref.values, rtol=rtol, atol=atol, err_msg=msg)
            np.testing.assert_allclose(got.cost, ref.cost, rtol=1e-12 if dtype == np.float64
                                       else 1e-6, err_msg=msg)
            if check_scan:  # the general scan path equals the vectorised fast path
                for field in got._fields:
                    np.testing.assert_array_equal(getattr(got, field),
                                                  getattr(scan, field)[i], err_msg=msg)
            checked += 1
    assert checked >= 200


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_kernel_matches_reference(case, dtype):
    _check(case, dtype, shuffle=False, seed=1000 + CASES.index(case),
           check_scan=dtype == np.float64)


@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_kernel_matches_reference_shuffled(case):
    _check(case, np.float64, shuffle=True, seed=2000 + CASES.index(case))


LONG_N = 130  # three blocks, the last of which runs past the end of the stream
LONG_CASES = 12


@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_kernel_matches_reference_long_streams(case):
    """A stream of several blocks whose last block runs past its end (and, with retraversal,
    past the end of each pass), shuffled so that every output buffer is written by the kernel,
    against the reference."""
    rng = np.random.default_rng(3000 + CASES.index(case))
    for n in (LONG_N,):
        for shuffle in (True,):
            mechs = [build(case, rng) for _ in range(LONG_CASES)]
            keys = jax.random.split(jax.random.key(n + shuffle), LONG_CASES)
            draws = jax.vmap(lambda k: mechs[0].draw(k, n, shuffle=shuffle,
                                                     dtype=np.float64))(keys)
            q, t, per_query = _inputs(rng, n, LONG_CASES, np.float64)
            out = jax.device_get(jax.vmap(lambda m, d, qq, tt: m.decide(d, qq, tt))(
                _stack(mechs), draws, q, t))
            for i, mech in enumerate(mechs):
                d = jax.tree_util.tree_map(lambda x: np.asarray(x[i]), draws)
                ref = reference.run(mech, d, q[i], t[i] if per_query[i] else t[i, 0])
                msg = f"{case.id} n={n} shuffle={shuffle} case={i} {mech!r}"
                for field in ref._fields:
                    np.testing.assert_allclose(getattr(out, field)[i], getattr(ref, field),
                                               rtol=1e-12, err_msg=f"{msg} {field}")


@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_call_equals_decide_of_draw(case):
    """``mech(key, ...)`` (lazy, early-exit) equals ``decide(draw(key, n), ...)``."""
    rng = np.random.default_rng(7)
    mech = build(case, rng, **({"c": 3} if case.has_cutoff else {}))
    q = rng.normal(0, 2, 600)  # three random blocks: early exit is exercised
    for seed in range(5):
        key = jax.random.key(seed)
        lazy = mech(key, q, 0.5)
        full = mech.decide(mech.draw(key, q.shape[0]), q, 0.5)
        for a, b in zip(lazy, full):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_registry_is_fully_referenced():
    assert set(svtjax.names()) <= set(reference.REFERENCES)
    assert {c.name for c in CASES} == set(svtjax.names())
