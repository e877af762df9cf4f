"""The worked example of a mechanism of one's own (``examples/rising_svt.py``) runs everywhere a
registered mechanism runs, with no edit to ``svtjax/``: the testing harness against its numpy
reference, ``simulate``, a sweep TOML that imports it as a plugin, and ``svtjax audit``."""

import json
import pathlib
import subprocess
import sys

import jax
import numpy as np

import svtjax
from svtjax import _plugins, sweep, testing
from tests.conftest import subprocess_env

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
NAME = "example-rising-svt"


def _load():
    _plugins.load(str(EXAMPLES / "rising_svt.py"))
    assert NAME in svtjax.names()


def test_example_matches_its_reference_and_runs_in_simulate():
    """The harness's default checks (float64 and float32, the given order and shuffled) on 320
    random cases, ``mech(key, ...)``, and ``simulate``.

    ``mech(key, ...)`` equals ``decide`` on ``draw``'s numbers: the harness's lazy check
    (``check_lazy``) compares, bit for bit on every case, ``run_batch(key[None], ...)``, which is
    what ``mech(key, ...)`` runs (``svtjax.mechanisms.rules._call_jit``: ``run_keys`` on the
    one key); here the call itself runs once, with picks as in ``simulate``
    (``testing.assert_call_equals_decide`` would compile the lazy run, ``draw`` and ``decide``
    once more, in one program of their own, for the same comparison).

    One stream length (40: a single narrow block of the engine, as 9 is, so the same code
    path) keeps each of the four compiled harness programs to one copy of the kernels;
    ``simulate`` runs its 200 trials in chunks of 100 (one compaction level of the engine loop
    instead of two; the Outcomes do not depend on the chunking)."""
    _load()
    assert testing.assert_matches_reference(NAME, shapes=(40,), cases_per_shape=80) == 320
    mech = svtjax.get(NAME, epsilon=1.0, c=3, rise=50.0)
    q = np.full(30, 100.0)
    one = mech(jax.random.key(0), q, 0.0)
    assert int(np.sum(np.asarray(one.answers) == 1)) in (2, 3)
    out = svtjax.simulate(mech, q, 0.0, trials=200, seed=1, chunk_size=100)
    picks = np.sum(np.asarray(out.answers) == 1, axis=1)
    assert picks.max() <= 3 and picks.min() >= 2  # q - T = 100 clears rises of 0 and 50
    assert "Theorem 2" in mech.privacy().statement


def test_example_sweep_toml_imports_the_plugin(tmp_path):
    import tomllib

    full = sweep.load_config(str(EXAMPLES / "rising_svt.toml"))  # plugin path: next to the TOML
    assert [t["name"] for t in full.mechanisms] == [NAME, "lyu-alg1"]
    raw = tomllib.loads((EXAMPLES / "rising_svt.toml").read_text())
    raw["sweep"].update(trials=64, datasets=[{"name": "zipf", "n": 500}],
                        plugins=[str(EXAMPLES / "rising_svt.py")])
    raw["grid"] = {"epsilon": [1.0], "c": [5]}
    result = sweep.run(raw, tmp_path, progress=False, log=lambda msg: None)
    assert {r["label"] for r in result.rows} == {"rising (rise = 2)", "Algorithm 1"}
    assert all(r["trials"] == 64 for r in result.rows)


def test_example_audit_from_the_command_line():
    """``svtjax audit`` with the example as a plugin, on a time budget (the command line's
    ``--seconds`` path, which no other test runs to the end): a budget of 1 s, compilation
    included, still runs the search's first round and the validation; what the audit finds is
    tested on the built-in mechanisms by tests/test_audit.py."""
    env = subprocess_env()
    out = subprocess.run(
        [sys.executable, "-m", "svtjax.cli", "audit", NAME, "--plugin",
         str(EXAMPLES / "rising_svt.py"), "--epsilon", "1", "--seconds", "1", "--json"],
        capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["mechanism"] == NAME
    assert [p["stage"] for p in record["progress"]][-1] == "validation", record["progress"]
