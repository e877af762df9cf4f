"""The shuffle's prefix (``svtjax.mechanisms._engine.SHUFFLE_PREFIX``): how many positions of
every trial's lazy Fisher–Yates shuffle the compiled prefix kernel makes before the block loop.

Times the headline workload with a per-trial shuffle (svt-s, monotonic, 1:c^(2/3), ε = 0.5,
c = 50, Zipf 10,000/i in the fixed random order; :mod:`benchmarks.workload`) through
``simulate(reduce=)`` computing F1 and SER, once per prefix value (0: the blocks alone, as
before the prefix kernel), in interleaved rounds. Each value has its own reducer object, so
that each is traced and compiled apart with the value set while it is traced; the prefix used
at each size (the value, at most half the stream, in whole blocks) is recorded. Checks that
every value gives the same numbers (the prefix is a choice of speed only), and writes one JSON
record::

    python benchmarks/bench_shuffle_prefix.py [--sizes 10000x1000 1000x10000] [--rounds 9]
        [--prefixes 0 512 1024]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing, workload  # noqa: E402

PREFIXES = (0, 512, 768, 1024, 1536)


@dataclasses.dataclass(frozen=True)
class _F1At:
    """The F1/SER reducer, one compiled chunk per ``prefix`` (the field only keys the cache)."""

    c: int
    prefix: int

    def __call__(self, scores, outcome):
        return workload.MetricReducer(self.c)(scores, outcome)


def measure(sizes, rounds: int, prefixes=PREFIXES, log=print) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import svtjax
    from svtjax import _native
    from svtjax.mechanisms import _engine

    if _native.fisher_yates_target() is None:
        raise SystemExit(f"the compiled kernels do not run here: {_native.status()}")
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    platform = jax.default_backend()
    real = _engine.SHUFFLE_PREFIX.get(platform, 0)
    rows = []
    for n, trials in sizes:
        q, threshold = workload.zipf_workload(n)
        scores = jnp.asarray(q)

        def run(prefix):
            reduce = jax.tree_util.Partial(_F1At(workload.C, prefix), scores)
            _engine.SHUFFLE_PREFIX[platform] = prefix
            try:
                return jax.block_until_ready(svtjax.simulate(
                    mech, q, threshold, trials=trials, seed=0, shuffle=True, reduce=reduce))
            finally:
                _engine.SHUFFLE_PREFIX[platform] = real

        results = {p: jax.device_get(run(p)) for p in prefixes}
        same = all(np.array_equal(a, b) for p in prefixes for a, b in zip(
            jax.tree_util.tree_leaves(results[prefixes[0]]),
            jax.tree_util.tree_leaves(results[p])))
        timings, med = timing.interleaved_calls(
            {str(p): (lambda p=p: run(p)) for p in prefixes}, rounds)
        used = {}
        for p in prefixes:
            _engine.SHUFFLE_PREFIX[platform] = p
            used[str(p)] = _engine.shuffle_prefix(_engine._layout(mech, n))
        _engine.SHUFFLE_PREFIX[platform] = real
        base = med[str(prefixes[0])]
        log(f"n={n} trials={trials}: " + ", ".join(
            f"prefix {p} (uses {used[str(p)]}) {1e3 * med[str(p)]:.2f} ms "
            f"({base / med[str(p)]:.2f}x)" for p in prefixes) + f"; same numbers: {same}")
        rows.append({"n": n, "trials": trials, "prefixes": list(prefixes), "used": used,
                     "default": real, "same_numbers": bool(same), "timings": timings,
                     "median_s": med})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workload.add_sizes_option(p)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--prefixes", type=int, nargs="+", default=list(PREFIXES))
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = p.parse_args(argv)
    if any(x < 0 for x in args.prefixes):
        p.error("--prefixes must be >= 0")
    machine.tune_allocator()
    t0 = time.perf_counter()
    rows = measure(args.sizes, args.rounds, tuple(args.prefixes))
    machine.write_record("shuffle-prefix", "shuffle-prefix", args.out, rows=rows,
                         wall_s=time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
