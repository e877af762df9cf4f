"""Times the pieces of a shuffled run: swap indices and Fisher–Yates steps, per 64-position block.

* Swap indices for one block of every trial: ``svtjax.mechanisms.base.block_order`` (Lemire's
  multiply-and-reject, one 32-bit word per index) against ``jax.random.randint`` on the same
  spans (four integer remainders per index), as a reference point.
* Fisher–Yates steps of one block: the engine's kernel (flat permutation, indices computed
  before the 64-step loop) against its (position, trial)-indexed variant, which the engine keeps
  for permutations of 2**32 entries or more and which was the kernel before this benchmark.

Batch sizes 1000, 125, 16 and 2 are those the compacting loop runs the n = 10^4 headline at.
Each timing is the median of ``--repeats`` samples of a jitted loop over 20 blocks.
Writes ``benchmarks/results/shuffle-<machine>-<UTC time>.json``.

    python benchmarks/bench_shuffle.py [--repeats 11]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SCHEMA = "svtjax-shuffle/1"
N = 10_000
BLOCKS = 20
BATCHES = (1000, 125, 16, 2)


def _median_ms(fn, repeats: int) -> float:
    import statistics

    fn()  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def measure(repeats: int) -> list:
    import jax
    import jax.numpy as jnp
    from jax import lax

    from svtjax.mechanisms import _engine as engine
    from svtjax.mechanisms.base import BLOCK, block_order, num_blocks, stream_key

    n_pad = num_blocks(N) * BLOCK
    rows = []
    for batch in BATCHES:
        keys = jax.vmap(lambda t: stream_key(jax.random.fold_in(jax.random.key(0), t), "order"))(
            jnp.arange(batch))

        @jax.jit
        def lemire(keys):
            def body(b, acc):
                return acc + jax.vmap(lambda k: block_order(k, b, N))(keys).sum()
            return lax.fori_loop(0, BLOCKS, body, jnp.int32(0))

        @jax.jit
        def randint(keys):
            def body(b, acc):
                pos = b * BLOCK + jnp.arange(BLOCK, dtype=jnp.int32)
                j = jax.vmap(lambda k: jax.random.randint(jax.random.fold_in(k, b), (BLOCK,),
                                                          pos, N))(keys)
                return acc + j.sum()
            return lax.fori_loop(0, BLOCKS, body, jnp.int32(0))

        orders = jnp.stack([jax.vmap(lambda k: block_order(k, b, N))(keys)
                            for b in range(BLOCKS)])

        def fisher_yates(kernel):
            @jax.jit
            def run(orders):
                def body(b, carry):
                    fy, acc = carry
                    fy, items = kernel(fy, orders[b], b * BLOCK)
                    return fy, acc + items.sum()
                return lax.fori_loop(0, BLOCKS, body,
                                     (engine._shuffle_init(batch, n_pad), jnp.int32(0)))[1]
            return run

        flat, indexed = (fisher_yates(engine.fisher_yates_block),
                         fisher_yates(engine._fisher_yates_block_2d))
        assert int(flat(orders)) == int(indexed(orders))  # same items
        timings = {
            "swap_indices_lemire": lambda: lemire(keys),
            "swap_indices_randint": lambda: randint(keys),
            "fisher_yates_flat": lambda: flat(orders),
            "fisher_yates_indexed": lambda: indexed(orders),
        }
        row = {"n": N, "batch": batch}
        for name, fn in timings.items():
            row[f"{name}_ms_per_block"] = _median_ms(
                lambda: jax.block_until_ready(fn()), repeats) / BLOCKS
        rows.append(row)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in row.items()), flush=True)
    return rows


def main(argv=None) -> int:
    from benchmarks import machine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    record = {
        "schema": SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine.machine_info(),
        "device": machine.device_info(),
        "versions": machine.versions(),
        "source": machine.source_state(),
        "load_average": {"start": machine.load()},
        "config": {"n": N, "blocks": BLOCKS, "batches": list(BATCHES), "repeats": args.repeats},
        "rows": measure(args.repeats),
    }
    record["load_average"]["end"] = machine.load()
    record["wall_s"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = record["created"].replace("+00:00", "").replace(":", "")
    path = args.out / f"shuffle-{record['machine']['machine_id']}-{stamp}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
