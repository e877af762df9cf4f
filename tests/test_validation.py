"""Bad input gets a clear error (naming the parameter and what is allowed) before any compile."""

import importlib

import numpy as np
import pytest

import svtjax

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
    before = sim.run_chunk._cache_size()
    with pytest.raises(exc, match=message):
        svtjax.simulate(args.pop("mech"), args.pop("queries"), args.pop("thresholds"), **args)
    assert sim.run_chunk._cache_size() == before


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
