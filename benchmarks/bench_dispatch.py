"""What a ``simulate`` call costs besides its compiled chunk: the host side (issue 19).

A headline run (svt-s on Zipf 10^4 x 1,000 trials) computes for 5-10 ms on the 2-core VM, so a
millisecond spent before the compiled chunk starts is a tenth of the figure the harness
reports. For each case of the headline workload this times, in interleaved rounds, full-Outcome
runs (``block_until_ready`` on the Outcome):

* ``simulate`` — ``svtjax.simulate(...)``, as a user calls it;
* ``chunk`` — ``svtjax.simulate.run_chunk`` alone on inputs prepared once (device arrays and
  root key made before the timing): the compiled program and its dispatch, nothing else;
* ``chunk_numpy_inputs`` — the chunk given the scores and thresholds as numpy arrays and the
  kept root key (what ``simulate`` passes since this benchmark was written);
* ``chunk_fresh_device_inputs`` — the chunk given ``jax.device_put`` copies and a root key made
  by ``jax.random.key`` at every call (what ``simulate`` passed before).

``host overhead`` = simulate − chunk. Then the headline's post-processing of those Outcomes
(``svtjax.selected`` and the halting positions, one jitted call:
``benchmarks.workload.selected_and_halts``), warm and right after 64 MiB were written (the
caches evicted, as after a run that wrote its Outcomes; the eviction is not timed). Medians in
ms::

    python benchmarks/bench_dispatch.py [--sizes 10000x1000 1000x10000] [--rounds 25]
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing, workload  # noqa: E402


def measure(sizes, rounds: int) -> list:
    import importlib

    import jax
    import numpy as np

    import svtjax
    from svtjax.mechanisms import _engine

    sim = importlib.import_module("svtjax.simulate")
    flush = np.ones(64 << 20, np.uint8)  # written to evict the caches
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    rows = []
    for n, trials in sizes:
        q, threshold = workload.zipf_workload(n)
        q_host = np.asarray(q, np.float32)
        t_host = np.full(n, threshold, np.float32)
        q_dev, t_dev = jax.device_put(q_host), jax.device_put(t_host)
        for shuffle in (False, True):
            root = sim.seed_key(0)
            chunk = sim.default_chunk_size(mech, n, trials, itemsize=4, shuffle=shuffle)
            if chunk != trials:
                raise SystemExit(f"{n} x {trials}: simulate would run {chunk}-trial chunks; "
                                 "this benchmark compares one chunk")
            run = functools.partial(
                sim.run_chunk, chunk=chunk, shuffle=shuffle, num_devices=1, mode="outcome",
                width=_engine.block_width(n), compaction=_engine.compaction_factor(),
                groups=sim.shuffle_groups(mech, n, chunk) if shuffle else 1)
            calls = {
                "simulate": lambda: jax.block_until_ready(svtjax.simulate(
                    mech, q, threshold, trials=trials, seed=0, shuffle=shuffle)),
                "chunk": lambda: jax.block_until_ready(
                    run(mech, q_dev, t_dev, root, 0, trials, None)),
                "chunk_numpy_inputs": lambda: jax.block_until_ready(
                    run(mech, q_host, t_host, root, 0, trials, None)),
                "chunk_fresh_device_inputs": lambda: jax.block_until_ready(
                    run(mech, jax.device_put(q_host), jax.device_put(t_host),
                        jax.random.key(np.uint32(0)), 0, trials, None)),
            }
            first = {name: fn() for name, fn in calls.items()}
            same = all(np.array_equal(np.asarray(o.answers), np.asarray(first["chunk"].answers))
                       for o in first.values())
            _, med = timing.interleaved_calls(calls, rounds)
            post = workload.selected_and_halts(workload.C)
            warm, evicted = [], []
            for _ in range(rounds):
                jax.block_until_ready(post(first["simulate"]))
                t0 = time.perf_counter()
                jax.block_until_ready(post(first["simulate"]))
                warm.append(time.perf_counter() - t0)
                flush += 1  # evict the caches
                t0 = time.perf_counter()
                jax.block_until_ready(post(first["simulate"]))
                evicted.append(time.perf_counter() - t0)
            row = {"n": n, "trials": trials, "mode": "shuffle" if shuffle else "fixed",
                   "same_answers": bool(same), "rounds": rounds,
                   **{f"{name}_ms": 1e3 * s for name, s in med.items()},
                   "host_overhead_ms": 1e3 * (med["simulate"] - med["chunk"]),
                   "post_warm_ms": 1e3 * timing.median(warm),
                   "post_after_eviction_ms": 1e3 * timing.median(evicted)}
            rows.append(row)
            print(f"n={n} trials={trials} {row['mode']}: " + ", ".join(
                f"{name} {1e3 * s:.2f} ms" for name, s in med.items())
                + f"; host overhead {row['host_overhead_ms']:.2f} ms; same answers {same}; "
                f"post-processing {row['post_warm_ms']:.2f} ms warm, "
                f"{row['post_after_eviction_ms']:.2f} ms after eviction")
    return rows


def main(argv=None) -> int:
    return machine.sizes_rounds_main(argv, __doc__.splitlines()[0], measure, "dispatch",
                                     "dispatch", rounds=25)


if __name__ == "__main__":
    sys.exit(main())
