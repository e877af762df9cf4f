"""Common random numbers: the JAX kernel and the numpy reference, fed the same ``Draws``, agree.

Every registered mechanism, through its registered cases and reference, with the harness a
mechanism author uses (``svtjax.testing.assert_matches_reference``): in float64 and float32, on
2 stream lengths x 110 random cases (220 per configuration and dtype; one lax.map, so each shape
compiles once): c in 1..5, integer scores with many ties or real scores, scalar or per-query
thresholds, fixed order on streams of one narrow block (n = 9, 50) and, in float64, shuffled
order on a narrow block (n = 9) and on several blocks whose last one runs past the stream's end
(n = 130). Answers and items must be identical; values and costs equal to 1e-12
(float64) or float32 rounding. In float64 the general per-position scan (``vectorized=False``)
must equal the vectorised block form bit for bit.
"""

import numpy as np
import pytest

import svtjax
from svtjax import reference, testing
from tests.cases import CASES, build, case_ids

SHAPES = (9, 50)
CASES_PER_SHAPE = 110


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_kernel_matches_reference(case, dtype):
    checked = testing.assert_matches_reference(
        case.name, cases=[case.case], shapes=SHAPES, cases_per_shape=CASES_PER_SHAPE,
        dtypes=(dtype,), shuffle=False, seed=1000 + CASES.index(case))
    assert checked == len(SHAPES) * CASES_PER_SHAPE


LONG_N = 130  # three blocks, the last of which runs past the end of the stream


@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_kernel_matches_reference_shuffled(case):
    """Shuffled order against the reference on a stream of one narrow block (n = 9) and on a
    stream of several blocks whose last block runs past its end (and, with retraversal, past the
    end of each pass), so that every output buffer is written by the kernel. One program holds
    both lengths; each stream length is a copy of the kernel to compile, so the shuffled order
    is checked on these two (the block classes: narrow, and whole blocks with a partial last
    one) rather than also on a second narrow length (the fixed-order tests check n = 9 and 50)."""
    testing.assert_matches_reference(
        case.name, cases=[case.case], shapes=(SHAPES[0], LONG_N), cases_per_shape=CASES_PER_SHAPE,
        dtypes=(np.float64,), shuffle=True, seed=2000 + CASES.index(case), check_scan=False)


@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_call_equals_decide_of_draw(case):
    """``mech(key, ...)`` (lazy, early-exit) equals ``decide(draw(key, n), ...)``."""
    rng = np.random.default_rng(7)
    mech = build(case, rng, **({"c": 3} if case.has_cutoff else {}))
    q = rng.normal(0, 2, 600)  # several random blocks: early exit is exercised
    testing.assert_call_equals_decide(mech, q, 0.5)


def test_registry_is_fully_referenced():
    """Every mechanism of the package has a numpy reference and at least one test case."""
    own = {name for name, cls in svtjax.mechanisms.registry().items()
           if cls.__module__.startswith("svtjax.")}
    assert own <= set(reference.REFERENCES)
    assert own <= {c.name for c in CASES}


def test_harness_catches_a_wrong_reference():
    """The harness fails when the reference disagrees (here: Algorithm 1's reference run for
    DP-Book, whose threshold noise and redraw differ)."""
    ref = reference.REFERENCES["lyu-alg1"]
    with pytest.raises(AssertionError, match="answers"):
        testing.assert_matches_reference(
            "dpbook", reference=ref, cases=[testing.Case("wrong", {}, testing.eps_c)],
            shapes=(20,), cases_per_shape=30)
