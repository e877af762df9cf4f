"""Bad input gets a clear error (naming the parameter and what is allowed) before any compile."""

import importlib

import numpy as np
import pytest

import svtjax
from svtjax import _driver

sim = importlib.import_module("svtjax.simulate")
Q = np.array([3.0, 1.0, 2.0, 0.5])


def _mech():
    return svtjax.get("svt-s", epsilon=1.0, c=2)


SIMULATE_ERRORS = [
    ("nan score", dict(queries=np.array([1.0, np.nan, 2.0])), ValueError, "queries must be finite"),
    ("inf score", dict(queries=np.array([1.0, np.inf])), ValueError, "queries must be finite"),
    ("2-D scores", dict(queries=np.ones((2, 3))), ValueError, "queries must be 1-D"),
    ("empty scores", dict(queries=np.array([])), ValueError, "at least one query"),
    ("string scores", dict(queries=np.array(["a", "b"])), TypeError, "queries must be"),
    ("nan threshold", dict(thresholds=np.nan), ValueError, "thresholds must be finite"),
    ("threshold shape", dict(thresholds=np.ones(3)), ValueError, "thresholds must be a scalar"),
    ("trials 0", dict(trials=0), ValueError, "trials must be an integer >= 1"),
    ("trials float", dict(trials=2.5), ValueError, "trials must be an integer >= 1"),
    ("trials str", dict(trials="10"), TypeError, "trials must be an integer"),
    ("chunk 0", dict(chunk_size=0), ValueError, "chunk_size must be an integer >= 1"),
    ("seed float", dict(seed=1.5), TypeError, "seed must be an integer"),
    ("shuffle str", dict(shuffle="yes"), TypeError, "shuffle must be True or False"),
    ("too many devices", dict(num_devices=10_000), ValueError, "num_devices must be at most"),
    ("not a mechanism", dict(mech="svt-s"), TypeError, "svtjax.mechanisms.get"),
]


@pytest.mark.parametrize("label,override,exc,message", SIMULATE_ERRORS,
                         ids=[e[0] for e in SIMULATE_ERRORS])
def test_simulate_rejects_bad_input_before_compiling(label, override, exc, message):
    args = dict(mech=_mech(), queries=Q, thresholds=1.0, trials=10)
    args.update(override)
    before = _driver.run_chunk._cache_size()
    with pytest.raises(exc, match=message):
        svtjax.simulate(args.pop("mech"), args.pop("queries"), args.pop("thresholds"), **args)
    assert _driver.run_chunk._cache_size() == before


MECHANISM_ERRORS = [
    ("svt-s", dict(epsilon=0.0, c=2), ValueError, "epsilon must be a positive number"),
    ("svt-s", dict(epsilon=-1.0, c=2), ValueError, "epsilon must be a positive number"),
    ("lyu-alg1", dict(epsilon=float("nan"), c=2), ValueError, "epsilon must be a positive"),
    ("lyu-alg1", dict(epsilon=float("inf"), c=2), ValueError, "epsilon must be a positive"),
    ("lyu-alg1", dict(epsilon=1.0, c=0), ValueError, r"c must be an integer >= 1"),
    ("dpbook", dict(epsilon=1.0, c=2.5), ValueError, r"c must be an integer >= 1.*whole"),
    ("dpbook", dict(epsilon=1.0, c="3"), TypeError, r"c must be an integer"),
    ("lee-clifton", dict(epsilon=1.0, c=2, sensitivity=0), ValueError, "sensitivity must be"),
    ("svt-s", dict(epsilon=1.0, c=2, allocation="1:2"), ValueError, "allocation must be one of"),
    ("svt-s", dict(epsilon=1.0, c=2, eps3=1.0), ValueError, "eps3 must be smaller than epsilon"),
    ("svt-s", dict(epsilon=1.0, c=2, eps3=-0.1), ValueError, "eps3 must be a finite number >= 0"),
    ("svt-s", dict(epsilon=1.0, c=2, allocation=(0.3, 0.3)), ValueError,
     "must equal eps1 \\+ eps2 \\+ eps3"),
    ("svt-s", dict(epsilon=1.0, c=2, monotonic="yes"), TypeError, "monotonic must be True"),
    ("svt-s", dict(epsilon=1.0), TypeError, "requires parameter"),
    ("stoddard", dict(epsilon=1.0, c=3), TypeError, "valid parameters are: epsilon, sensitivity"),
    ("nope", dict(epsilon=1.0), ValueError, "unknown mechanism 'nope'; registered mechanisms are: "
     "lyu-alg1"),
    # issue 20, item 6: accepted, then broken later
    ("svt-s", dict(epsilon=1.0, c=3, allocation="explicit"), ValueError,
     r"allocation='explicit' needs the pair itself: pass allocation=\(eps1, eps2\)"),
    ("svt-exp", dict(epsilon=1.0, c=3, correction_k=4, allocation="explicit"), ValueError,
     "allocation='explicit' needs the pair"),
    ("svt-s", dict(epsilon=np.array([1.0, 2.0]), c=3), ValueError,
     r"epsilon must be a single number; got shape \(2,\)"),
    ("lyu-alg1", dict(epsilon=np.array([1.0, 2.0]), c=3), ValueError,
     "epsilon must be a single number"),
    ("adaptive-svt-gap", dict(epsilon=1.0, c=3, theta=np.array([0.2, 0.3])), ValueError,
     "theta must be a single number"),
    ("report-noisy-max", dict(epsilon=[1.0], k=2), ValueError, "epsilon must be a single number"),
    ("svt-exp", dict(epsilon=1.0, c=3), TypeError, "requires correction_k"),
    ("svt-exp", dict(epsilon=1.0, c=3, correction="value", correction_value="x"), ValueError,
     "correction_value must be a finite number"),
    ("svt-s", dict(epsilon=1.0, c=2**40), ValueError,
     r"c must be an integer >= 1 and <= 2147483647; got 1099511627776 \(.*int32"),
    ("svt-s", dict(epsilon=1e-320, c=3), ValueError, "svt-s cannot run in float64: epsilon"),
    ("lyu-alg1", dict(epsilon=1.0, c=3, sensitivity=1e-320), ValueError,
     "cannot run in float64: sensitivity"),
    ("svt-s", dict(epsilon=1.0), TypeError, r"svt-s requires parameter\(s\) \['c'\]"),
    ("report-noisy-max", dict(epsilon=1.0, k=2, noise="laplase"), ValueError,
     "did you mean 'laplace'"),
    # issue 20, item 9: did you mean
    ("svt_s", dict(epsilon=1.0, c=3), ValueError, "unknown mechanism 'svt_s' \\(did you mean "
     "'svt-s'\\?\\)"),
    ("SVT-S", dict(epsilon=1.0, c=3), ValueError, "did you mean 'svt-s'"),
    ("svt-s", dict(epsilon=1.0, c=3, monotonc=True), TypeError, "did you mean 'monotonic'"),
]


@pytest.mark.parametrize("name,params,exc,message", MECHANISM_ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(MECHANISM_ERRORS)])
def test_get_rejects_bad_parameters(name, params, exc, message):
    with pytest.raises(exc, match=message):
        svtjax.get(name, **params)


def test_mechanism_call_validates_concrete_inputs():
    mech = _mech()
    import jax

    with pytest.raises(ValueError, match="queries must be finite"):
        mech(jax.random.key(0), np.array([1.0, np.nan]), 0.0)
    with pytest.raises(ValueError, match="thresholds must be a scalar"):
        mech.decide(mech.draw(jax.random.key(0), 4), Q, np.ones(5))
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        mech.draw(jax.random.key(0), 0)


def test_selected_validates_k():
    out = svtjax.simulate(_mech(), Q, 1.0, trials=3)
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        svtjax.selected(out, 0)


def test_parameters_say_which_are_required():
    """Issue 20, item 6: ``parameters()`` shows svt-exp's correction_k (and c, and epsilon
    without an explicit split) as required instead of a bare None default."""
    exp = svtjax.mechanisms.parameters("svt-exp")
    assert exp["correction_k"].startswith("REQUIRED when correction='optimal' (the default)")
    assert exp["c"] == "REQUIRED"
    assert exp["epsilon"].startswith("REQUIRED when allocation is not an explicit")
    assert svtjax.mechanisms.parameters("svt-s")["c"] == "REQUIRED"
    assert svtjax.mechanisms.parameters("generalized-svt")["c"] == "REQUIRED"
    # what the defaults say is what get() does: svt-exp builds with correction_k, or with
    # another correction; svt-s with an explicit pair needs no epsilon
    assert svtjax.get("svt-exp", epsilon=1.0, c=3, correction_k=4).correction_k == 4
    assert svtjax.get("svt-exp", epsilon=1.0, c=3, correction="mean").correction_k is None
    assert svtjax.get("svt-s", c=3, allocation=(0.25, 0.75)).privacy().epsilon() == 1.0


def test_seeds_cover_0_to_2_64_without_aliasing():
    """Issue 20, item 7: every seed in [0, 2**64) is accepted and gives its own trials (seeds
    s and s + 2**32 used to alias, as did -1 and 2**32 - 1); negative seeds and 2**64 are
    refused with one clear line, before anything compiles."""
    import jax

    data = {s: np.asarray(jax.random.key_data(sim.seed_key(s)))
            for s in (0, 1, 2**32 - 1, 2**32, 2**32 + 1, 2**63, 2**64 - 1)}
    assert len({d.tobytes() for d in data.values()}) == len(data)
    assert np.array_equal(data[1], np.asarray(jax.random.key_data(jax.random.key(1))))
    mech, before = _mech(), _driver.run_chunk._cache_size()
    for bad, exc in ((-1, ValueError), (2**64, ValueError), (2**70, ValueError),
                     (1.0, TypeError), (True, TypeError), ("0", TypeError)):
        with pytest.raises(exc, match=r"seed must be an integer in \[0, 2\*\*64\)") as err:
            svtjax.simulate(mech, Q, 1.0, trials=2, seed=bad)
        assert "\n" not in str(err.value)
    assert _driver.run_chunk._cache_size() == before
    assert sim.SEED_RANGE == (0, 2**64)


def test_full_outcomes_larger_than_memory_are_refused_before_compiling(monkeypatch):
    """Issue 20, item 4: ``simulate`` without ``reduce`` refuses an Outcome that cannot fit in
    the machine's memory, naming its size and suggesting ``reduce=``, before compiling (10^9
    trials x 10 positions take 196 GiB in float64; the machine is taken to have 64 GiB so
    that the test does not depend on where it runs)."""
    monkeypatch.setattr(sim, "_physical_memory", lambda: 64 * 2**30)
    before = _driver.run_chunk._cache_size()
    with pytest.raises(ValueError) as err:
        svtjax.simulate(svtjax.get("svt-s", epsilon=1.0, c=3), np.arange(10.0), 4.5,
                        trials=10**9)
    text = str(err.value)
    assert "195.6 GiB, more than this machine's 64.0 GiB" in text and "reduce=" in text
    assert "10 positions" in text and "\n" not in text
    assert _driver.run_chunk._cache_size() == before


def test_did_you_mean():
    """Issue 20, item 9: misspelt names get the closest valid one (case, ``_`` and ``-`` do not
    matter); a name with nothing close gets no guess."""
    from svtjax import _validate

    assert _validate.suggest("svt_s", svtjax.names()) == " (did you mean 'svt-s'?)"
    assert _validate.suggest("SVT-S", svtjax.names()) == " (did you mean 'svt-s'?)"
    assert _validate.suggest("dpbok", svtjax.names()) == " (did you mean 'dpbook'?)"
    assert _validate.suggest("xyzzy", svtjax.names()) == ""
    assert _validate.suggest(3, svtjax.names()) == ""
    with pytest.raises(ValueError, match="unknown dataset 'Zipff' \\(did you mean 'zipf'\\?\\)"):
        svtjax.datasets.load("Zipff")
    with pytest.raises(ValueError, match="unknown argument\\(s\\) \\['nn'\\] \\(did you mean 'n'"):
        svtjax.datasets.load("zipf", nn=10)


UNSUPPORTED_DTYPES = ["float16", "bfloat16", "complex64", "complex128", "object", "str"]


def _unsupported(dtype):
    import ml_dtypes

    if dtype == "bfloat16":
        return np.asarray(Q, ml_dtypes.bfloat16)
    if dtype == "object":
        return np.array([3.0, 1, 2.0, 0.5], dtype=object)
    if dtype == "str":
        return np.array(["3", "1", "2", "0.5"])
    return Q.astype(dtype)


@pytest.mark.parametrize("dtype", UNSUPPORTED_DTYPES)
def test_unsupported_array_dtypes_are_refused_before_tracing(dtype):
    """Issue 58, item 14: float16 queries passed validation and failed inside tracing with an
    internal message ("Changing the dtype of a 0d array ..."). Every public entry point that
    takes query or score arrays refuses a dtype outside float32/float64/integer/bool in one
    line naming it and what is allowed, before anything compiles; thresholds likewise."""
    import jax

    from svtjax import exact, metrics

    mech, bad = _mech(), _unsupported(dtype)
    shown = str(bad.dtype)
    before = _driver.run_chunk._cache_size()
    calls = [lambda: svtjax.simulate(mech, bad, 1.0, trials=3),
             lambda: svtjax.simulate(mech, Q, bad, trials=3),
             lambda: mech(jax.random.key(0), bad, 1.0),
             lambda: exact.selection_law(mech, bad, 1.0),
             lambda: metrics.f1(np.array([[0, 1]]), bad, 2)]
    for i, call in enumerate(calls):
        with pytest.raises(TypeError) as err:
            call()
        text = str(err.value)
        assert "\n" not in text, (i, text)
        assert f"got dtype {shown}" in text, (i, text)
        assert "float32, float64, integer or bool" in text, (i, text)
    assert _driver.run_chunk._cache_size() == before
    if dtype == "float16":  # what the rule keeps: integers and bools, converted as before
        for q in (Q.astype(np.int32), Q.astype(np.int64) > 1):
            assert svtjax.simulate(mech, q, 1.0, trials=3).answers.shape[0] == 3


def test_a_jax_key_passed_as_seed_is_refused_in_one_line():
    """Issue 58, item 16: a jax PRNG key passed as ``seed`` gave a two-line message (the key's
    repr); it is one line saying what a seed is, for new-style and legacy keys alike."""
    import jax

    for key in (jax.random.key(0), jax.random.PRNGKey(0)):
        with pytest.raises(TypeError) as err:
            svtjax.simulate(_mech(), Q, 1.0, trials=3, seed=key)
        text = str(err.value)
        assert "\n" not in text and "seed must be an integer in [0, 2**64)" in text, text
        assert "PRNG key is not a seed" in text, text


@pytest.mark.parametrize("value", [0, -5, 2**40, 10**400, 2.5, 1e400, "3", np.int64(2**40)],
                         ids=["0", "-5", "2**40", "10**400", "2.5", "1e400", "str", "np-2**40"])
def test_integer_refusals_state_the_whole_range(value):
    """Issue 58, item 16: an integer parameter outside its range was refused as "must be an
    integer >= 1" (1e400 included: it reads as not a whole number), and 10**400 raised a bare
    OverflowError; every refusal now states the range, in one line."""
    with pytest.raises((TypeError, ValueError)) as err:
        svtjax.get("lyu-alg1", epsilon=1.0, c=value)
    text = str(err.value)
    assert text.startswith("c must be an integer >= 1 and <= 2147483647; got "), text
    assert "\n" not in text
