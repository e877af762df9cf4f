# ruff: noqa  (run at commit f3322fe to make the records; kept as it ran)
"""Records sha256 hashes of simulate() Outcomes for every mechanism case (run at f3322fe)."""
import hashlib
import json
import sys

import numpy as np

x64 = sys.argv[1] == "f64"
import jax

jax.config.update("jax_enable_x64", x64)
sys.path.insert(0, "/work/main")
import svtjax
from tests.cases import CASES


def h(x):
    a = np.ascontiguousarray(np.asarray(x))
    return hashlib.sha256(a.tobytes() + str(a.dtype).encode() + str(a.shape).encode()).hexdigest()[:16]

def jsonable(v):
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if hasattr(v, "family"):
        return {"noise": v.family, "scale": float(v.scale_value)}
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v

out = []
for ci, case in enumerate(CASES):
    rng = np.random.default_rng(100 + ci)
    for rep in range(2):
        params = {**case.static, **case.numeric(rng)}
        mech = svtjax.get(case.name, **params)
        n = 130
        q = np.round(rng.normal(0, 3, n), 3)
        t = float(np.round(rng.normal(1, 1), 3))
        for shuffle in (False, True):
            seed = 7 * ci + rep
            o = svtjax.simulate(mech, q, t, trials=17, seed=seed, shuffle=shuffle)
            out.append({"case": case.id, "name": case.name, "params": jsonable(params),
                        "n": n, "q_seed": 100 + ci, "rep": rep, "threshold": t, "shuffle": shuffle,
                        "seed": seed, "trials": 17,
                        "hash": {f: h(getattr(o, f)) for f in o._fields}})
# headline-like cases
scores = 10000 / np.arange(1, 10001)
perm = np.random.default_rng(0).permutation(10000)
T = svtjax.datasets.lyu_threshold(scores, 50)
for name, params in [("svt-s", {"epsilon": 0.5, "c": 50, "monotonic": True, "allocation": "1:c^(2/3)"}),
                     ("lyu-alg1", {"epsilon": 0.5, "c": 50}), ("dpbook", {"epsilon": 0.5, "c": 50})]:
    mech = svtjax.get(name, **params)
    for shuffle in (False, True):
        o = svtjax.simulate(mech, scores[perm], T, trials=64, seed=3, shuffle=shuffle)
        out.append({"case": "zipf-" + name, "name": name, "params": params, "n": 10000,
                    "q": "zipf-perm0", "threshold": T, "shuffle": shuffle, "seed": 3, "trials": 64,
                    "hash": {f: h(getattr(o, f)) for f in o._fields}})
json.dump(out, open(f"/work/notes/outcomes_{sys.argv[1]}.json", "w"), indent=0)
print(len(out))
