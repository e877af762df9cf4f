"""Where the time of a headline run goes: a cost breakdown of svtjax's engine (issue 19).

For each case of the headline workload (svt-s, monotonic, 1:c^(2/3), ε = 0.5, c = 50, Zipf
10,000/i in one fixed random order or with a per-trial shuffle) this times, in interleaved
rounds:

* ``rng`` — drawing exactly as many Laplace variates as the run draws (the blocks its trials
  reach: Σ_t ⌈h_t / W⌉ · W for halting positions h_t and block width W) with svtjax's unrolled
  Threefry in one kernel, and ``rng_jax`` — the same count with ``jax.random.laplace`` (the
  "RNG floor" of the headline table);
* ``engine`` — ``simulate(reduce=)`` with a reducer that reads one number per trial (the
  engine: loop, draws, decisions, compaction, answer writes);
* ``engine_no_swaps`` (shuffled cases) — the same with the engine's lazy Fisher–Yates block
  (``svtjax.mechanisms._engine.fisher_yates_block``) replaced, while it compiles, by a probe
  that applies no swap (every trial reads the items in the stored order), and no shuffle prefix
  (``svtjax.mechanisms._engine.SHUFFLE_PREFIX``: its kernel's swaps): the shuffled run's
  structure (its trial groups, compaction of the permutation, items gathered by position)
  without the swaps. swaps = engine − engine_no_swaps (the swaps and, as the probe never reads
  them, possibly the draws of the swap partners too: XLA may drop unread draws); the rest of
  the shuffled run's extra time = engine_no_swaps − the fixed-order case's engine (both read
  about the same positions);
* ``counts`` — the count-only reducer (``svtjax.prefix_counts``);
* ``f1_ser`` — the F1/SER reducer (``svtjax.selected`` + ``svtjax.metrics``);
* ``outcome`` — full (compact) Outcomes returned to the host, and ``outcome_selected`` — plus
  ``svtjax.selected`` on them, jitted (the headline's "full Outcome" engine).

The differences are the breakdown: loop and decisions = engine − rng, reducer = f1_ser − engine,
Outcome = outcome_selected − engine. Writes ``benchmarks/results/cost-<machine>-<time>.json``
and prints a table::

    python benchmarks/cost_breakdown.py [--sizes 10000x1000 1000x10000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing, workload  # noqa: E402

HERE = Path(__file__).resolve().parent


def case(n: int, trials: int, mode: str, rounds: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import svtjax
    from svtjax import _rng
    from svtjax.mechanisms import _engine

    shuffle = mode == "shuffle"
    q, threshold = workload.zipf_workload(n)
    scores = jnp.asarray(q)
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    width = _engine.block_width(n)
    run = lambda reduce: jax.block_until_ready(svtjax.simulate(  # noqa: E731
        mech, q, threshold, trials=trials, seed=0, shuffle=shuffle, reduce=reduce))
    full = svtjax.simulate(mech, q, threshold, trials=trials, seed=0, shuffle=shuffle)
    halts = np.asarray(workload.selected_and_halts(workload.C)(full)[1])  # per trial
    draws = int(np.sum(np.ceil(halts / width) * width))
    reached = float(np.sum(halts)) / (trials * n)
    blocks = max(1, math.ceil(draws / 64))
    kd = _rng.key_data(jax.random.split(jax.random.key(1), blocks))

    @jax.jit
    def rng_fast(kd):
        return _rng.fast_standard(svtjax.noise.Laplace)(kd, 64, jnp.float32).sum()

    @jax.jit
    def rng_jax(key):
        return jax.random.laplace(key, (blocks * 64,), jnp.float32).sum()

    def full():  # the full Outcome, as a user without reduce= gets it
        return svtjax.simulate(mech, q, threshold, trials=trials, seed=0, shuffle=shuffle)

    fns = {
        "rng": lambda r: _time(lambda: rng_fast(kd)),
        "rng_jax": lambda r: _time(lambda: rng_jax(jax.random.key(2))),
        "engine": lambda r: _time(lambda: run(first_answer)),
        "counts": lambda r: _time(lambda: run(workload.count_reduce)),
        "f1_ser": lambda r: _time(lambda: run(jax.tree_util.Partial(
            workload.MetricReducer(workload.C), scores))),
        "outcome": lambda r: _time(lambda: jax.block_until_ready(full().answers)),
        "outcome_selected": lambda r: _time(lambda: jax.block_until_ready(
            workload.selected_and_halts(workload.C)(full()))),
    }
    if shuffle:
        fns["engine_no_swaps"] = lambda r: _time(lambda: _without_swaps(
            lambda: run(first_answer_no_swaps)))
    rows = timing.interleaved(fns, rounds=rounds, warmup=1)
    med = {k: v.get("median_s") for k, v in rows.items()}
    breakdown = {
        "rng_s": med["rng"],
        "swaps_s": med["engine"] - med["engine_no_swaps"] if shuffle else None,
        "loop_and_decisions_s": med["engine"] - med["rng"],
        "counts_reducer_s": med["counts"] - med["engine"],
        "f1_ser_reducer_s": med["f1_ser"] - med["engine"],
        "outcome_and_selected_s": med["outcome_selected"] - med["engine"],
    }
    return {"n": n, "trials": trials, "mode": mode, "width": width, "draws": draws,
            "reached": reached, "timings": rows, "medians_s": med, "breakdown_s": breakdown}


def first_answer(outcome):
    """A reducer that reads one number per trial: what remains is the engine itself. (Module
    level, so every call reuses one compiled chunk.)"""
    return outcome.answers[:, 0]


def first_answer_no_swaps(outcome):
    """:func:`first_answer` for the no-swap probe: another function, so its chunk is traced (with
    the probe in place) and cached apart from the real engine's."""
    return outcome.answers[:, 0]


def _no_swaps(fy, order, start, done=None, write_items=False, made=0, width=None):
    """Probe for ``fisher_yates_block``: no swap; the items at positions start .. start + W − 1
    are the positions themselves (the stored order); every trial, ``done`` or not (W: the
    partners' width, or ``width`` where the compiled block would draw them)."""
    import jax.numpy as jnp

    shape = order.shape if order is not None else (fy.j.shape[0], width)
    items = start + jnp.arange(shape[1], dtype=jnp.int32)
    return fy, jnp.broadcast_to(items, shape)


def _without_swaps(fn):
    """Calls ``fn`` with the engine's Fisher–Yates block replaced by :func:`_no_swaps` and no
    shuffle prefix (``_engine.SHUFFLE_PREFIX``: the prefix kernel's swaps are swaps too), both
    read when a chunk is traced (the probe's chunk, once compiled, keeps them)."""
    import jax

    from svtjax.mechanisms import _engine

    real, prefix = _engine.fisher_yates_block, dict(_engine.SHUFFLE_PREFIX)
    _engine.fisher_yates_block = _no_swaps
    _engine.SHUFFLE_PREFIX[jax.default_backend()] = 0
    try:
        return fn()
    finally:
        _engine.fisher_yates_block = real
        _engine.SHUFFLE_PREFIX.clear()
        _engine.SHUFFLE_PREFIX.update(prefix)


def _time(fn):
    t0 = time.perf_counter()
    import jax

    jax.block_until_ready(fn())
    return {"times_s": [time.perf_counter() - t0]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workload.add_sizes_option(p)
    p.add_argument("--modes", nargs="+", default=["fixed", "shuffle"],
                   choices=["fixed", "shuffle"])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    machine.tune_allocator()
    cases = []
    for n, trials in args.sizes:
        for mode in args.modes:
            row = case(n, trials, mode, args.rounds)
            cases.append(row)
            med = row["medians_s"]
            print(f"n={n} trials={trials} {mode}: reached {row['reached']:.3f}, "
                  + ", ".join(f"{k} {1e3 * v:.2f} ms" for k, v in med.items() if v), flush=True)
    machine.write_record("cost-breakdown", "cost", args.out, cases=cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
