"""Where a shuffled run's extra time goes: the engine's lazy Fisher–Yates swaps, per swap.

A shuffled trial (``shuffle=True``) applies one Fisher–Yates swap per position it reaches
(``svtjax.mechanisms._engine.fisher_yates_block``: per block of W positions a loop of W steps,
each one scatter, one gather, one contiguous row read and one row write over the batch's
trials). This times that function alone, compiled in a loop over ``--blocks`` consecutive
blocks of a batch of trials (the compaction levels' widths: 25, 125, 200 and 1,000 rows), for
permutations of n = 10^3 and 10^4 items, and a probe with the same loop but no swap (the row
read and row write only: what remains when the random accesses are taken away). Each case runs
in this process (every CPU) and again in a subprocess restricted to one CPU before JAX starts:
XLA's CPU backend splits a loop's scatter across threads by the size of the whole permutation
(``outer_dimension_partitions``), and the difference is what that split costs per step.
Medians of interleaved rounds; ``ns_per_swap`` = seconds ÷ (blocks × W × batch).

This is the pure-JAX block (its state made with ``native=False``): on the CPU the engine now
runs the compiled block of ``svtjax/_native`` instead, which ``benchmarks/bench_native.py``
times against this one inside whole runs.

    python benchmarks/bench_fisher_yates.py [--blocks 10] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing  # noqa: E402

HERE = Path(__file__).resolve().parent
CASES = ((10000, 25), (10000, 200), (10000, 1000), (1000, 25), (1000, 200), (1000, 1000))


def _rows_only(fy, order, start):
    """The swap loop's skeleton without its random accesses: per step the contiguous row read
    and the row write of ``fisher_yates_block``, no scatter and no gather (a probe)."""
    import jax.numpy as jnp
    from jax import lax

    n_pad, batch = fy.perm.shape
    width = order.shape[1]
    flat = fy.perm.reshape(-1)

    def step(k, carry):
        a, items = carry
        row = (start + k).astype(jnp.uint32) * jnp.uint32(batch)
        items = lax.dynamic_update_index_in_dim(items, a, k, axis=0)
        return lax.dynamic_slice_in_dim(flat, row, batch), items

    a, items = lax.fori_loop(0, width, step, (fy.a, jnp.zeros((width, batch), fy.perm.dtype)))
    return fy._replace(a=a), items.T.astype(jnp.int32)


def _program(block_fn, n: int, batch: int, blocks: int):
    """A compiled loop applying ``block_fn`` to ``blocks`` consecutive blocks, and its input
    (the swap partners j_p = p + ⌊u (n − p)⌋ of a real shuffle)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    from svtjax.mechanisms import _engine

    width = _engine.block_width(n)
    n_pad = -(-n // width) * width
    positions = np.arange(blocks * width)
    u = np.random.default_rng(0).random((batch, blocks * width))
    order = (positions + np.floor(u * (n - positions))).astype(np.int32)
    order = jnp.asarray(order.reshape(batch, blocks, width).transpose(1, 0, 2))

    @jax.jit
    def run(order):
        def body(b, carry):
            fy, acc = carry
            fy, items = block_fn(fy, order[b], b * width)
            return fy, acc + jnp.sum(items, dtype=jnp.int32)

        fy, acc = lax.fori_loop(0, blocks, body, (
            _engine._shuffle_init(batch, n_pad, native=False), jnp.int32(0)))
        return acc, fy.perm

    return run, order, width


def measure(blocks: int, rounds: int, log=print) -> list[dict]:
    import jax

    from svtjax.mechanisms import _engine

    rows = []
    for n, batch in CASES:
        fns = {}
        for name, block_fn in (("swaps", _engine.fisher_yates_block), ("no swap", _rows_only)):
            run, order, width = _program(block_fn, n, batch, blocks)

            def sample(repeats, run=run, order=order):
                times, _, number = timing.timed(lambda: jax.block_until_ready(run(order)),
                                                repeats)
                return {"times_s": times, "calls_per_sample": number}

            fns[name] = sample
        result = timing.interleaved(fns, rounds=rounds, warmup=1)
        for name, row in result.items():
            swaps = blocks * width * batch
            row.update(n=n, batch=batch, blocks=blocks, width=width, variant=name,
                       cpus=machine.usable_cores(),
                       ns_per_swap=1e9 * row["median_s"] / swaps if "median_s" in row else None)
            if row["ns_per_swap"] is not None:
                log(f"n={n} batch={batch} {name} cpus={row['cpus']}: "
                    f"{1e3 * row['median_s']:.2f} ms, {row['ns_per_swap']:.1f} ns per swap")
            rows.append(row)
    return rows


def _one_cpu(blocks: int, rounds: int) -> list[dict]:
    """The same cases in a subprocess that JAX starts in with one CPU."""
    proc = subprocess.run([sys.executable, __file__, "--worker", "--blocks", str(blocks),
                           "--rounds", str(rounds)], capture_output=True, text=True,
                          check=True)
    print(proc.stderr, end="", file=sys.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    machine.tune_allocator()
    if args.worker:  # one CPU from before JAX starts (its thread pool and its compiler)
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        rows = measure(args.blocks, args.rounds, log=lambda m: print(m, file=sys.stderr))
        print(json.dumps(rows))
        return 0
    t0 = time.perf_counter()
    rows = measure(args.blocks, args.rounds)
    if machine.usable_cores() > 1:
        if hasattr(os, "sched_setaffinity"):
            rows += _one_cpu(args.blocks, args.rounds)
        else:  # no affinity masks (macOS): the one-CPU column stays empty
            print("this OS cannot start a process on one CPU: no single-CPU timings",
                  file=sys.stderr)
    machine.write_record("fisher-yates", "fisher-yates", args.out, rows=rows,
                         wall_s=time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
