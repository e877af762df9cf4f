"""Common random numbers: the JAX kernel and the numpy reference, fed the same ``Draws``, agree;
and the engine's lazy run (noise drawn block by block, early exit) draws those same numbers.

Every registered mechanism, through its registered cases and reference, with the harness a
mechanism author uses (``svtjax.testing.assert_matches_reference``), 110 random cases per stream
length and configuration (one lax.map, so each shape compiles once): c in 1..5, integer scores
with many ties or real scores, scalar or per-query thresholds. Answers and items must be
identical; values and costs equal to 1e-12 (float64) or to float32 rounding of their operands.

* **Fixed order, one narrow block** (n = 50: one block of 56 positions, 6 past the stream's
  end), in float64 and float32. In float64 the general per-position scan (``vectorized=False``)
  must equal the vectorised block form bit for bit.
* **Shuffled order** (float64) on a narrow block (n = 9) and on several blocks whose last one
  runs past the stream's end (n = 130; with retraversal, past the end of each pass), so that
  every output buffer is written by the kernel.
* **The lazy run** (``run_batch``, what ``mech(key, ...)`` and ``simulate`` run) equals
  ``decide(draw(key, n))`` bit for bit in every configuration, fixed order and shuffled: in the
  narrow block (a stream shorter than BLOCK runs one block of its length rounded up to NARROW,
  whose draws are the first of a whole block's; shuffled, each position's query is gathered
  through the permutation) and across blocks with early exit (the shuffled multi-block stream).

Each stream length, order, dtype and path is a copy of the kernel to compile, so the lengths are
these block classes, not more of each: narrow fixed, narrow shuffled, several blocks shuffled.
The harness's draws come from programs shared by every case (one per noise family and dtype for
every stream, length and number of passes; one for every length's swap partners), which
``test_harness_draws_are_the_mechanisms_draws`` checks are ``mech.draw``'s numbers bit for bit.
"""

import numpy as np
import pytest

import svtjax
from svtjax import reference, testing
from tests.cases import CASES, case_ids

NARROW_N = 50  # one narrow block of 56 positions
SHORT_N = 9  # one narrow block of 16 positions
LONG_N = 130  # three blocks, the last of which runs past the end of the stream
CASES_PER_SHAPE = 110


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_kernel_matches_reference(case, dtype):
    checked = testing.assert_matches_reference(
        case.name, cases=[case.case], shapes=(NARROW_N,), cases_per_shape=CASES_PER_SHAPE,
        dtypes=(dtype,), shuffle=False, seed=1000 + CASES.index(case))
    assert checked == CASES_PER_SHAPE


@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_kernel_matches_reference_shuffled(case):
    """Shuffled order against the reference on a stream of one narrow block and on a stream of
    several blocks whose last block runs past its end; on both, the lazy run equals
    decide(draw) bit for bit."""
    checked = testing.assert_matches_reference(
        case.name, cases=[case.case], shapes=(SHORT_N, LONG_N), cases_per_shape=CASES_PER_SHAPE,
        dtypes=(np.float64,), shuffle=True, seed=2000 + CASES.index(case))
    assert checked == 2 * CASES_PER_SHAPE


def test_registry_is_fully_referenced():
    """Every mechanism of the package has a numpy reference and at least one test case."""
    own = {name for name, cls in svtjax.mechanisms.registry().items()
           if cls.__module__.startswith("svtjax.")}
    assert own <= set(reference.REFERENCES)
    assert own <= {c.name for c in CASES}


def test_harness_catches_a_wrong_reference():
    """The harness fails when the reference disagrees (here: Algorithm 1's reference run for
    DP-Book, whose threshold noise, redraw and costs differ), naming the case and the field.
    On the shape of DP-Book's float64 case of ``test_kernel_matches_reference`` (the same
    structure, length and number of cases), whose compiled programs it reuses."""
    ref = reference.REFERENCES["lyu-alg1"]
    with pytest.raises(AssertionError, match=rf"wrong n={NARROW_N} case=\d+ DPBook\(.*\) "
                       r"dtype=float64 shuffle=False: (answers|items|values|cost)"):
        testing.assert_matches_reference(
            "dpbook", reference=ref, cases=[testing.Case("wrong", {}, testing.eps_c)],
            shapes=(NARROW_N,), cases_per_shape=CASES_PER_SHAPE)


def test_tolerance_scales_with_the_operands():
    """float32 rounding is allowed relative to the operands of a released value, not to the
    (possibly cancelled) value: a correct svt-gap case once came out 1.9e-6 from its float64
    reference (0.8463535 against 0.8463516, after q + ν − (T + ρ) with |q| up to ~3), which a
    tolerance scaled by the largest value (1.85e-6) rejected; an error of 1e-4 is still caught."""
    q = np.array([3.0, -2.0, 0.5])
    t = np.array([1.0, 1.0, 1.0])
    ref = np.array([np.nan, 0.8463516235351562, np.nan])
    rtol, atol, _ = testing._tolerances(np.float32, ref, q, t)
    assert testing._close(ref + [0, 1.9073486e-06, 0], ref, rtol, atol)
    assert not testing._close(ref + [0, 1e-4, 0], ref, rtol, atol)
    # float64 alike: a noisy-top-k-gap gap of 3.8e-4 between scores near 10 came out 3.6e-15
    # from its reference, 9e-12 relative to the gap
    q64, t64 = np.array([8.0, -7.7]), np.array([2.2, 2.2])
    gap = np.array([10.09310, 0.00037993927070090194])
    rtol, atol, _ = testing._tolerances(np.float64, gap, q64, t64)
    assert testing._close(gap + [0, 3.55e-15], gap, rtol, atol)
    assert not testing._close(gap + [0, 1e-9], gap, rtol, atol)


@pytest.mark.parametrize("name, n, shuffle", [("svt-s", LONG_N, True), ("svt-retr", SHORT_N, True),
                                              ("dpbook", NARROW_N, False)])
def test_harness_draws_are_the_mechanisms_draws(name, n, shuffle):
    """The harness draws every stream of a noise family in one program per dtype (the stream's
    id an argument) and the swap partners of every stream length in one program (the length an
    argument), shared by every rule, and cuts each stream's passes and length from the blocks
    drawn (``svtjax.testing._draws``); those numbers are ``mech.draw``'s bit for bit (fixed and
    shuffled, one and several passes, one and several blocks)."""
    import jax
    import jax.numpy as jnp

    mech = svtjax.get(name, **svtjax.mechanisms.registry()[name].example_params())
    keys = jax.random.split(jax.random.key(7), 5)
    got = testing._draws(mech, keys, n, shuffle, np.float64)
    # one program (op by op, the vmapped draw was ~50-100 programs of its own)
    want = jax.jit(jax.vmap(lambda k: mech.draw(k, n, shuffle=shuffle, dtype=jnp.float64)))(keys)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
