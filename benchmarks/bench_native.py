"""The compiled Fisher–Yates block (``svtjax/_native``) against the pure-JAX block, in one run.

Times the headline workload with a per-trial shuffle (svt-s, monotonic, 1:c^(2/3), ε = 0.5,
c = 50, Zipf 10,000/i in the fixed random order; :mod:`benchmarks.workload`) through
``simulate`` in interleaved rounds, three ways: with the compiled block (``native``), with the
pure-JAX block (``pure``: :func:`svtjax._native.fisher_yates_target` answering None while the
chunk is traced), and, as a floor, with the block replaced by a probe that applies no swap
(``no_swaps``, :func:`benchmarks.cost_breakdown._no_swaps`: no permutation, and XLA drops the
swap partners' draws too). Each way has its own count-only reducer, so that each is traced
and compiled apart. Checks that native and pure give the same numbers, and writes one JSON
record::

    python benchmarks/bench_native.py [--sizes 10000x1000 1000x10000] [--rounds 7]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing, workload  # noqa: E402


def _count_native(outcome):
    return workload.count_reduce(outcome)


def _count_pure(outcome):
    return workload.count_reduce(outcome)


def _count_no_swaps(outcome):
    return workload.count_reduce(outcome)


def measure(sizes, rounds: int, log=print) -> list[dict]:
    import jax

    import svtjax
    from benchmarks.cost_breakdown import _no_swaps
    from svtjax import _native
    from svtjax.mechanisms import _engine

    if _native.fisher_yates_target() is None:
        raise SystemExit(f"the compiled block does not run here: {_native.status()}")
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    real_target, real_block = _native.fisher_yates_target, _engine.fisher_yates_block
    rows = []
    for n, trials in sizes:
        q, threshold = workload.zipf_workload(n)

        def run(way):
            reduce = {"native": _count_native, "pure": _count_pure,
                      "no_swaps": _count_no_swaps}[way]
            if way == "pure":
                _native.fisher_yates_target = lambda: None
            if way == "no_swaps":
                _engine.fisher_yates_block = _no_swaps
            try:
                return jax.block_until_ready(svtjax.simulate(
                    mech, q, threshold, trials=trials, seed=0, shuffle=True, reduce=reduce))
            finally:
                _native.fisher_yates_target, _engine.fisher_yates_block = real_target, real_block

        row = {"n": n, "trials": trials,
               **timing.native_and_pure(run, ("native", "pure", "no_swaps"), rounds)}
        med, same = row["median_s"], row["same_numbers"]
        log(f"n={n} trials={trials}: native {1e3 * med['native']:.1f} ms, pure "
            f"{1e3 * med['pure']:.1f} ms, no swaps {1e3 * med['no_swaps']:.1f} ms "
            f"(pure/native {row['pure_over_native']:.2f}x, same numbers: {same})")
        rows.append(row)
    return rows


def main(argv=None) -> int:
    return machine.sizes_rounds_main(argv, __doc__.splitlines()[0], measure, "native", "native",
                                     rounds=7)


if __name__ == "__main__":
    sys.exit(main())
