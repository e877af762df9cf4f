"""Measures ``svtjax.mechanisms._engine.NARROW``: a stream of a few queries run in one narrow block.

Before it, a stream of n <= 8 queries was processed in one whole block of ``BLOCK`` = 64
positions per trial: 64 variates hashed per stream and 64 positions decided, for 5 used. Variate
i of a block is Threefry's word for counter i, so the first 8 variates are the same numbers
whether 8 or 64 are drawn, and the engine now processes such a stream in one block of
``NARROW`` positions. Short streams are what privacy audits (``svtjax.audit``, ``svtjax
reproduce audit``: millions of trials on neighbouring inputs of a few queries) and the
exact-law distribution tests run.

For every registered mechanism (or those named) and every stream length of ``--lengths``, this
runs ``svtjax.simulate(..., reduce=)`` (a count-only reducer) with the narrow width and with the
whole block (``block_width`` replaced for the second), checks that both give the same sums, and
times them in interleaved rounds (medians, ns per trial). Other widths below 64 (multiples of
8) can be timed with ``--widths``: a stream of up to 8 queries fits each of them, and that is how
``NARROW`` was chosen (on the 2-core CPU, 16 and 32 ran svt-s and chen slower than 64).

    python benchmarks/bench_short_streams.py [--mechanisms NAME ...] [--lengths 1 5 8]
        [--trials 1000000] [--rounds 5] [--widths 8 16 32 64]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing  # noqa: E402

HERE = Path(__file__).resolve().parent


def _count(outcome):
    """Per trial: the ⊤ answers (a reducer that reads the whole short Outcome)."""
    import jax.numpy as jnp

    return (jnp.sum(outcome.answers == 1, axis=1, dtype=jnp.int32),)


def case(name: str, n: int, trials: int, widths: list[int], rounds: int) -> dict:
    import jax
    import numpy as np

    import svtjax
    from svtjax import audit
    from svtjax.mechanisms import _engine

    mech = svtjax.get(name, **audit.mechanism_params(name, 1.0))
    q = np.linspace(-1.0, 1.0, n)  # half the queries above the threshold 0
    default = _engine.block_width
    try:
        svtjax.simulate(mech, q, 0.0, trials=1, seed=1, reduce=_count)
    except ValueError as err:  # e.g. a mechanism that picks more items than the stream has
        return {"mechanism": name, "n": n, "trials": trials, "status": "skipped",
                "reason": str(err)}

    def run(width):
        _engine.block_width = lambda n, platform=None: width  # read by simulate per call
        try:
            return jax.block_until_ready(svtjax.simulate(mech, q, 0.0, trials=trials, seed=1,
                                                         reduce=_count))
        finally:
            _engine.block_width = default

    sums = {w: [int(np.asarray(x)) for x in run(w)] for w in widths}
    same = all(s == sums[widths[0]] for s in sums.values())

    def timed(w):
        return lambda r: _time(lambda: run(w))

    rows = timing.interleaved({str(w): timed(w) for w in widths}, rounds=rounds, warmup=1)
    ns = {w: 1e9 * rows[str(w)]["median_s"] / trials for w in widths}
    return {"mechanism": name, "n": n, "trials": trials, "default_width": default(n),
            "same_numbers": same, "ns_per_trial": {str(w): v for w, v in ns.items()},
            "timings": rows}


def _time(fn):
    import time

    t0 = time.perf_counter()
    fn()
    return {"times_s": [time.perf_counter() - t0]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mechanisms", nargs="+", default=None,
                   help="registered names (default: every one)")
    p.add_argument("--lengths", nargs="+", type=int, default=[1, 5, 8])
    p.add_argument("--trials", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--widths", nargs="+", type=int, default=[8, 64])
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    if any(n > 8 for n in args.lengths) or any(w < 8 or w % 8 for w in args.widths):
        p.error("--lengths must be at most 8 and --widths multiples of 8 (a short stream)")
    machine.tune_allocator()
    import svtjax

    names = args.mechanisms or svtjax.names()
    cases = []
    for name in names:
        for n in args.lengths:
            row = case(name, n, args.trials, args.widths, args.rounds)
            cases.append(row)
            if row.get("status") == "skipped":
                print(f"{name} n={n}: skipped ({row['reason']})", flush=True)
                continue
            ns = row["ns_per_trial"]
            print(f"{name} n={n}: " + ", ".join(f"width {w} {v:.0f} ns" for w, v in ns.items())
                  + f", same numbers: {row['same_numbers']}", flush=True)
    machine.write_record("short-streams", "short-streams", args.out, cases=cases)
    return 0 if all(c.get("same_numbers", True) for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
