"""Measures the engine's block width (positions per loop iteration) and chunk size per platform.

The width never changes a number (streams are keyed in blocks of 64 positions whatever the
width); it trades the positions a trial that halts mid-block overshoots against the loop
iterations a batch pays for. On each platform this times the headline workload (svt-s,
monotonic, 1:c^(2/3), ε = 0.5, c = 50, Zipf 10,000/i in one fixed random order, and with a
per-trial shuffle) through ``simulate(reduce=)`` computing F1 and SER, for every width in
``--widths``, in interleaved rounds, and writes one JSON record::

    python benchmarks/bench_block_width.py                      # the CPU defaults
    python benchmarks/bench_block_width.py --sizes 1000x1000000 10000x100000 \\
        --widths 64 128 256 512 1024 --chunks 0 65536 262144     # a GPU

``--chunks`` are trials per compiled chunk (0: simulate's default for the platform). The result
is what ``svtjax/mechanisms/_engine.py``'s ``BLOCK_WIDTH`` table cites.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing, workload  # noqa: E402

HERE = Path(__file__).resolve().parent


def measure(sizes, modes, widths, chunks, rounds: int, log=print) -> list[dict]:
    import jax

    import svtjax
    from svtjax.mechanisms import _engine

    platform = jax.default_backend()
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    rows = []
    for n, trials in sizes:
        q, threshold = workload.zipf_workload(n)
        scores = jax.numpy.asarray(q)
        reducer = jax.tree_util.Partial(workload.MetricReducer(workload.C), scores)
        for mode in modes:
            fns = {}
            for width in widths:
                for chunk in chunks:
                    def run(repeats, width=width, chunk=chunk):
                        _engine.BLOCK_WIDTH[platform] = width
                        t0 = time.perf_counter()
                        out = jax.block_until_ready(svtjax.simulate(
                            mech, q, threshold, trials=trials, seed=0, shuffle=mode == "shuffle",
                            reduce=reducer, chunk_size=chunk or None))
                        dt = time.perf_counter() - t0
                        return {"times_s": [dt], "f1": float(out[0]) / trials,
                                "evaluated": float(out[2]) / (trials * n)}
                    fns[f"w{width}-c{chunk}"] = run
            result = timing.interleaved(fns, rounds=rounds, warmup=1)
            for name, row in result.items():
                width, chunk = (int(x[1:]) for x in name.split("-"))
                row.update(n=n, trials=trials, mode=mode, width=width, chunk=chunk,
                           platform=platform)
                if "median_s" in row:
                    row["positions_per_s"] = trials * n / row["median_s"]
                    log(f"n={n} trials={trials} {mode} width={width} chunk={chunk or 'auto'}: "
                        f"{1e3 * row['median_s']:.2f} ms (reached {row['evaluated']:.3f})")
                rows.append(row)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workload.add_sizes_option(p)
    p.add_argument("--modes", nargs="+", default=["fixed", "shuffle"],
                   choices=["fixed", "shuffle"])
    p.add_argument("--widths", nargs="+", type=int, default=[64, 128, 256])
    p.add_argument("--chunks", nargs="+", type=int, default=[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    machine.tune_allocator()
    rows = measure(args.sizes, args.modes, args.widths, args.chunks, args.rounds)
    machine.write_record("block-width", "block-width", args.out, rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
