"""Outcomes are bit-identical to those of the engine before the rules redesign (commit f3322fe).

``tests/data/outcomes_f3322fe_*.json`` hold sha256 hashes of every Outcome field for a recorded
set of cases, made at f3322fe by ``tests/data/record_outcomes_f3322fe.py``: every case of the
test table (two random parameter sets each) on a stream of 130 random queries (three blocks),
fixed order and shuffled, 17 trials, plus svt-s, lyu-alg1 and dpbook on the Zipf workload
(10^4 items in one random order), in float32 and float64. The float64 records are checked here
for every registered mechanism's cases; ``python tests/data/check_outcomes.py f32`` checks the
float32 ones (the same engine code path, a second compile of everything, so it is kept out of
the suite's time budget). A mechanism added later has no record, which is fine: the records
pin what existed.

The records were made with XLA's default compile settings; the suite compiles at LLVM level 1
with XLA's elemental kernel emitter (``tests/conftest.py``, ``SUITE_XLA_FLAGS``), so these
hashes also check that the suite's programs compute what users' programs compute, bit for bit.
"""

import hashlib
import json
import pathlib

import numpy as np
import pytest

import svtjax
from svtjax.noise import FAMILIES

DATA = pathlib.Path(__file__).parent / "data"


def digest(x) -> str:
    a = np.ascontiguousarray(np.asarray(x))
    return hashlib.sha256(a.tobytes() + str(a.dtype).encode() + str(a.shape).encode()
                          ).hexdigest()[:16]


def params_of(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and "noise" in v:
            v = FAMILIES[v["noise"]](v["scale"])
        elif isinstance(v, list):
            v = tuple(v)
        out[k] = v
    return out


def records(tag: str) -> list[dict]:
    return json.loads((DATA / f"outcomes_f3322fe_{tag}.json").read_text())


def check(record: dict) -> list[str]:
    """The fields whose hash differs from the record (empty: bit-identical)."""
    mech = svtjax.get(record["name"], **params_of(record["params"]))
    if record.get("q") == "zipf-perm0":
        scores = 10000 / np.arange(1, 10001)
        q = scores[np.random.default_rng(0).permutation(10000)]
    else:
        q = np.asarray(record["queries"])
    out = svtjax.simulate(mech, q, record["threshold"], trials=record["trials"],
                          seed=record["seed"], shuffle=record["shuffle"])
    return [f for f in out._fields if digest(getattr(out, f)) != record["hash"][f]]


F64 = records("f64")


@pytest.mark.parametrize("name", sorted({r["name"] for r in F64}))
def test_outcomes_equal_f3322fe(name):
    assert name in svtjax.names()
    changed = {(r["case"], r["rep"] if "rep" in r else 0, r["shuffle"]): check(r)
               for r in F64 if r["name"] == name}
    assert not any(changed.values()), {k: v for k, v in changed.items() if v}
