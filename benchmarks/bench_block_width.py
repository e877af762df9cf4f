"""Measures the engine's block width (positions per loop iteration), chunk size and compaction
factor per platform.

The width never changes a number (streams are keyed in blocks of 64 positions whatever the
width); it trades the positions a trial that halts mid-block overshoots against the loop
iterations a batch pays for. On each platform this times the headline workload (svt-s,
monotonic, 1:c^(2/3), ε = 0.5, c = 50, Zipf 10,000/i in one fixed random order, and with a
per-trial shuffle) through ``simulate(reduce=)`` computing F1 and SER, for every width in
``--widths``, in interleaved rounds, and writes one JSON record::

    python benchmarks/bench_block_width.py                      # the CPU defaults
    python benchmarks/bench_block_width.py --sizes 1000x1000000 10000x100000 \\
        --widths 64 128 256 512 1024 --chunks 0 65536 262144     # a GPU

``--chunks`` are trials per compiled chunk (0: simulate's default for the platform);
``--factors`` the engine's compaction factors (``_engine.COMPACTION``; a factor at least the
chunk means no compaction; default: the platform's). None of them changes a number. The
results are what ``svtjax/mechanisms/_engine.py``'s ``BLOCK_WIDTH`` and ``COMPACTION`` tables
cite; ``benchmarks/gpu_suite.py``'s ``platform`` stage runs this on a GPU.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing, workload  # noqa: E402

HERE = Path(__file__).resolve().parent


def measure(sizes, modes, widths, chunks, rounds: int, log=print, factors=None,
            deadline=None) -> list[dict]:
    """Rows of every (size, mode, width, chunk, factor), sampled in interleaved rounds per
    (size, mode); ``factors`` None: the platform's; no (size, mode) starts after
    ``deadline`` (a ``time.monotonic()`` value)."""
    import jax

    import svtjax
    from svtjax.mechanisms import _engine

    platform = jax.default_backend()
    factors = factors or [_engine.compaction_factor()]
    saved = (dict(_engine.BLOCK_WIDTH), dict(_engine.COMPACTION))
    try:
        return _measure(svtjax, _engine, platform, sizes, modes, widths, chunks, factors,
                        rounds, log, deadline)
    finally:  # the platform's own choices again for whatever runs next in this process
        for table, before in zip((_engine.BLOCK_WIDTH, _engine.COMPACTION), saved):
            table.clear()
            table.update(before)


def _measure(svtjax, _engine, platform, sizes, modes, widths, chunks, factors, rounds, log,
             deadline) -> list[dict]:
    import jax

    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    rows = []
    for n, trials in sizes:
        q, threshold = workload.zipf_workload(n)
        scores = jax.numpy.asarray(q)
        reducer = jax.tree_util.Partial(workload.MetricReducer(workload.C), scores)
        for mode in modes:
            if deadline is not None and time.monotonic() > deadline:
                log(f"n={n} trials={trials} {mode}: skipped (out of time)")
                continue
            fns = {}
            for width, chunk, factor in itertools.product(widths, chunks, factors):
                def run(repeats, width=width, chunk=chunk, factor=factor):
                    _engine.BLOCK_WIDTH[platform] = width
                    _engine.COMPACTION[platform] = factor
                    t0 = time.perf_counter()
                    out = jax.block_until_ready(svtjax.simulate(
                        mech, q, threshold, trials=trials, seed=0, shuffle=mode == "shuffle",
                        reduce=reducer, chunk_size=chunk or None))
                    dt = time.perf_counter() - t0
                    return {"times_s": [dt], "f1": float(out[0]) / trials,
                            "evaluated": float(out[2]) / (trials * n)}
                fns[f"w{width}-c{chunk}-f{factor}"] = run
            result = timing.interleaved(fns, rounds=rounds, warmup=1)
            for name, row in result.items():
                width, chunk, factor = (int(x[1:]) for x in name.split("-"))
                row.update(n=n, trials=trials, mode=mode, width=width, chunk=chunk,
                           factor=factor, platform=platform)
                if "median_s" in row:
                    row["positions_per_s"] = trials * n / row["median_s"]
                    log(f"n={n} trials={trials} {mode} width={width} chunk={chunk or 'auto'} "
                        f"factor={factor}: {1e3 * row['median_s']:.2f} ms "
                        f"(reached {row['evaluated']:.3f})")
                rows.append(row)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workload.add_sizes_option(p)
    p.add_argument("--modes", nargs="+", default=["fixed", "shuffle"],
                   choices=["fixed", "shuffle"])
    p.add_argument("--widths", nargs="+", type=int, default=[64, 128, 256])
    p.add_argument("--chunks", nargs="+", type=int, default=[0])
    p.add_argument("--factors", nargs="+", type=int, default=None,
                   help="compaction factors, each >= 2 (default: the platform's)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    machine.tune_allocator()
    if args.factors and min(args.factors) < 2:
        p.error("--factors must be integers >= 2")
    rows = measure(args.sizes, args.modes, args.widths, args.chunks, args.rounds,
                   factors=args.factors)
    machine.write_record("block-width", "block-width", args.out, rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
