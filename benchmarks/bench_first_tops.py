"""``svtjax.selected`` through the compiled first-tops loop (``svtjax/_native``) against the
pure-JAX loop, in one run.

On the headline workload's full Outcomes (svt-s, monotonic, 1:c^(2/3), ε = 0.5, c = 50, Zipf
10,000/i in the fixed random order, stored order or a per-trial shuffle;
:mod:`benchmarks.workload`), times the top-c selection of the headline's svtjax row in
interleaved rounds two ways: ``native`` (:func:`svtjax._core._first_tops`, the CPU default) and
``pure`` (:func:`svtjax._core._first_tops_blocks`, the loop XLA runs elsewhere). Checks that
both give the same picks, counts and evaluated positions, and writes one JSON record::

    python benchmarks/bench_first_tops.py [--sizes 10000x1000 1000x10000] [--rounds 9]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing, workload  # noqa: E402


def measure(sizes, rounds: int, log=print) -> list[dict]:
    import jax
    import jax.numpy as jnp

    import svtjax
    from svtjax import _core, _native

    if _native.first_tops_target() is None:
        raise SystemExit(f"the compiled loop does not run here: {_native.status()}")
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    c = workload.headline_params()["c"]
    ways = {"native": _core._first_tops,
            "pure": jax.jit(_core._first_tops_blocks, static_argnums=(3, 4, 5))}
    rows = []
    for n, trials in sizes:
        q, threshold = workload.zipf_workload(n)
        for mode in ("fixed", "shuffle"):
            out = jax.block_until_ready(svtjax.simulate(
                mech, q, threshold, trials=trials, seed=0, shuffle=mode == "shuffle"))
            answers, items, _ = _core._rows_of(out)

            def run(way):
                return jax.block_until_ready(ways[way](answers, items, jnp.int32(c), c, n, False))

            row = {"n": n, "trials": trials, "mode": mode,
                   **timing.native_and_pure(run, ways, rounds)}
            med, same = row["median_s"], row["same_numbers"]
            log(f"n={n} trials={trials} {mode}: native {1e3 * med['native']:.2f} ms, pure "
                f"{1e3 * med['pure']:.2f} ms (pure/native {row['pure_over_native']:.2f}x, "
                f"same numbers: {same})")
            rows.append(row)
    return rows


def main(argv=None) -> int:
    return machine.sizes_rounds_main(argv, __doc__.splitlines()[0], measure, "first_tops",
                                     "first-tops", rounds=9)


if __name__ == "__main__":
    sys.exit(main())
