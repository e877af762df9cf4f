"""Sweep results do not depend on the memory budget (issue 58, item 2).

The budget sets the trials per compiled chunk, and the per-trial metric values are computed
inside the chunk: a float reduction there (the support of a trial's answer set, a trial's cost)
was vectorised by XLA differently for different chunk shapes, so lyu-alg1's SER changed in the
10th digit between ``memory_budget_mb = 256`` and 64. For every registered mechanism and every
metric a sweep reports, the numbers must be bit-identical across budgets whose chunks differ,
including chunks that do not divide the trial count."""

import numpy as np
import pytest

import svtjax
from svtjax import _driver, engine, sweep
from svtjax.sweep import runner

C = 50
TRIALS = 4000  # the reported case: Zipf's 10^4 items, c = 50, ε = 0.1, 4,000 shuffled trials
SIZES = (10_000, 1_000, 200)  # the first whose planned chunks differ with the budget (a
# cache-bound kernel, capped at the platform's ``cache_chunk_bytes``, plans small chunks at
# 10^4 items)
SLOTS = (4096, 800, 300, 600)  # trials per budget: chunks of 4,096, 768 and 256 where
# nothing caps them (768 and 256 do not divide 4,000; on the old code only the largest chunk
# changed a trial's SER, in about one trial in 300; chunks of at most 960 trials compile two
# compaction levels of the engine loop, a larger one three: svtjax._loops.bucket_sizes); under
# a cap the largest budget is the cap's and the first three different chunks are used
EXTRA = {"stagewise-svt": {"delta": 1e-6}}  # pure DP cannot be calibrated for its stages
METRICS = sweep.metric_names()  # the built-in ones: svtjax.metrics.METRICS and the extras


def _raw(name, n, budget_mb):
    return {"sweep": {"name": "chunks", "trials": TRIALS, "seed": 7, "shuffle": True,
                      "datasets": [{"name": "zipf", "n": n}], "metrics": METRICS,
                      "memory_budget_mb": budget_mb},
            "grid": {"epsilon": [0.1], "c": [C]},
            "mechanisms": [{"name": name, **EXTRA.get(name, {})}]}


def _plan(name):
    """(items, budgets in MB, their planned chunks): the first size of :data:`SIZES` at which
    the budgets of :data:`SLOTS` give three different chunks, one not dividing the trials."""
    for n in SIZES:
        point = sweep.expand(sweep.load_config(_raw(name, n, 1.0)))[0]
        mech = point.build()
        per_trial = runner._bytes_per_trial(mech, n, 4, True, point.c, len(METRICS))
        budgets = [per_trial * slots for slots in SLOTS]
        budgets[0] = engine.chunk_budget(mech, budgets[0])  # a cache-bound kernel's CPU cap
        by_chunk = {}
        for b in budgets:
            chunk = _driver.plan(mech, n, TRIALS, shuffle=True, mode="values", budget=b,
                                 extra_bytes=runner._extra_bytes(point.c, len(METRICS)),
                                 block=sweep.BLOCK_TRIALS).chunk
            by_chunk.setdefault(chunk, b / 2**20)
        chunks = list(by_chunk)[:3]
        if len(chunks) == 3 and any(TRIALS % chunk for chunk in chunks):
            return n, [by_chunk[chunk] for chunk in chunks], chunks
    raise AssertionError(f"{name}: no size gives three chunkings")


def _run(name, n, budget_mb):
    result = sweep.run(sweep.load_config(_raw(name, n, budget_mb)), None, progress=False,
                       log=lambda m: None)
    return {(row["metric"], key): row[key] for row in result.rows
            for key in ("mean", "std", "trials")}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=() if name == "lyu-alg1" else pytest.mark.slow)
    for name in svtjax.names()])
def test_sweep_numbers_do_not_depend_on_the_memory_budget(name, monkeypatch):
    """lyu-alg1 (the reported case) always; every other registered mechanism with --runslow
    (three kernels each)."""
    used = []
    plan = _driver.plan

    def recording_plan(*args, **kwargs):
        out = plan(*args, **kwargs)
        used.append(out.chunk)
        return out

    monkeypatch.setattr(_driver, "plan", recording_plan)
    n, budgets, chunks = _plan(name)
    used.clear()
    runs = [_run(name, n, mb) for mb in budgets]
    assert used == chunks, (used, chunks)  # the sweeps ran the three chunkings
    assert {metric for metric, _ in runs[0]} == set(METRICS)
    for other in runs[1:]:
        for key, value in runs[0].items():
            assert other[key] == value or (np.isnan(value) and np.isnan(other[key])), \
                (name, key, value, other[key])
