"""Measures short streams: one narrow block and a conditional that hashes it once (``_engine``).

Before, a stream shorter than ``BLOCK`` = 64 queries was processed in one whole block of 64
positions per trial: 64 variates hashed per stream and 64 positions decided, for 5 used. Variate
i of a block is Threefry's word for counter i, so the first W variates are the same numbers
whether W or 64 are drawn, and the engine now processes such a stream in one block of its length
rounded up to a multiple of ``NARROW`` = 8. Such a stream's block loop runs once, and XLA
replaced it by its body: the block index became the constant 0, XLA folded the predicate of the
conditional that makes the draws once (``_engine._once``, ``DRAW_ONCE``) and hashed the block in
every consumer again; the predicate now reads the index through an ``optimization_barrier``.
Short streams are what privacy audits (``svtjax.audit``, ``svtjax reproduce audit``: millions of
trials on neighbouring inputs of 10 queries) and the exact-law distribution tests run.

For every registered mechanism (or those named) and every stream length of ``--lengths``, this
runs ``svtjax.simulate(..., reduce=)`` (a count-only reducer) with each width of ``--widths``
(``default``: the engine's choice; a number replaces ``block_width`` for that run), checks that
all give the same sums, and times them in interleaved rounds (medians, ns per trial). Every
width runs with the barrier; the barrier itself is checked by ``tests/test_rng.py``, which counts
the hash copies of a one-block stream's compiled chunk.

    python benchmarks/bench_short_streams.py [--mechanisms NAME ...] [--lengths 1 5 10 33]
        [--trials 200000] [--rounds 5] [--widths default 64]
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


def case(name: str, n: int, trials: int, widths: list, rounds: int) -> dict:
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
        if width != "default":
            _engine.block_width = lambda n, platform=None: int(width)  # read per call
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
            "widths": {str(w): _engine._layout(mech, n, None if w == "default" else int(w)).width
                       if hasattr(mech, "passes") else None for w in widths},  # threshold rules
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
    p.add_argument("--lengths", nargs="+", type=int, default=[1, 5, 10, 33])
    p.add_argument("--trials", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--widths", nargs="+", default=["default", "64"],
                   help="'default' (the engine's width) or multiples of 8 up to 64")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    bad = [w for w in args.widths if w != "default" and not (w.isdigit() and 0 < int(w) <= 64
                                                              and int(w) % 8 == 0)]
    if any(not 1 <= n < 64 for n in args.lengths) or bad:
        p.error("--lengths must be in [1, 63] (a stream shorter than a block) and --widths "
                f"'default' or multiples of 8 up to 64; got {args.lengths} {args.widths}")
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
