"""Measures ``svtjax.mechanisms._engine.DRAW_ONCE``: a block's draws made once, not per consumer.

XLA's fusion pass copies cheap elementwise producers into every fusion that reads them, and a
Threefry hash is only cheap integer ops, so on the CPU backend each consumer of a block's
variates recomputed the hash. The engine now makes a block's draws inside a conditional on the
platforms in ``DRAW_ONCE`` (the CPU), whose result no fusion reaches into. This script compiles
the engine's chunk (``svtjax.simulate.run_chunk``) both ways, checks that both give the same
numbers, counts the Threefry copies in each compiled program (fusions holding at least 80
shift-left/xor instructions: a block's 20-round hash has about 85), and times them in
interleaved rounds:

* the headline workload (svt-s, monotonic, 1:c^(2/3), ε = 0.5, c = 50, Zipf 10,000/i in one
  fixed random order, or a fresh order per trial), full Outcomes and count-only ``reduce=``;
* with ``--mechanisms [NAME ...]``, those (none named: every) registered mechanisms on the
  fixed-order case (n = 10^4, 1,000 trials, count-only ``reduce=``), to show that none gets
  slower.

    python benchmarks/bench_draw_once.py [--sizes 10000x1000 1000x10000] [--rounds 9]
        [--mechanisms [NAME ...]]
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing, workload  # noqa: E402

HERE = Path(__file__).resolve().parent


def threefry_copies(hlo: str) -> int:
    """Fusion computations of a compiled program's text that hold a block's Threefry hash (at
    least 80 shift-left/xor instructions; the smaller per-block key derivation is not
    counted)."""
    copies = 0
    for block in re.split(r"\n(?=%?\S+ \()", hlo):
        head = block.split("\n", 1)[0]
        if "fused_computation" in head or head.startswith("%fused"):
            if len(re.findall(r"\b(?:shift-left|xor)\(", block)) >= 80:
                copies += 1
    return copies


def _compiled(mech, q, t, trials: int, shuffle: bool, reduce, once: bool):
    """The chunk compiled with the draws made once (``once``) or per consumer."""
    import jax

    simulate = importlib.import_module("svtjax.simulate")
    engine = importlib.import_module("svtjax.mechanisms._engine")
    saved = engine.DRAW_ONCE
    want = {jax.default_backend()} if once else set()
    changed = want != saved
    if changed:  # the setting is read when the chunk is traced: drop traces made under another
        engine.DRAW_ONCE = want
        jax.clear_caches()
    try:
        qq, tt = mech._prepare(q, t)
        if reduce is not None:  # as simulate wraps it
            reduce = jax.tree_util.Partial(simulate._ignore_context, jax.tree_util.Partial(reduce))
        args = (mech, qq, tt, simulate.seed_key(0), 0, trials, reduce)
        kwargs = dict(chunk=trials, shuffle=shuffle, mode="outcome" if reduce is None else "sum",
                      width=engine.block_width(qq.shape[0]))
        compiled = simulate.run_chunk.lower(*args, **kwargs).compile()
    finally:
        if changed:
            engine.DRAW_ONCE = saved
            jax.clear_caches()
    return compiled, args, threefry_copies(compiled.as_text())


def case_rows(label: str, mech, q, t, trials: int, shuffle: bool, reduce, rounds: int,
              log=print) -> list[dict]:
    import jax
    import numpy as np

    fns, copies, outs = {}, {}, {}
    for once in (False, True):
        compiled, args, copies[once] = _compiled(mech, q, t, trials, shuffle, reduce, once)
        outs[once] = jax.tree_util.tree_map(np.asarray, compiled(*args))

        def run(repeats, compiled=compiled, args=args):
            return {"times_s": timing.timed(lambda: jax.block_until_ready(compiled(*args)),
                                            1)[0]}
        fns["once" if once else "per consumer"] = run
    same = all(np.array_equal(a, b, equal_nan=True) for a, b in
               zip(jax.tree_util.tree_leaves(outs[False]), jax.tree_util.tree_leaves(outs[True])))
    result = timing.interleaved(fns, rounds=rounds, warmup=1)
    rows = []
    for key, row in result.items():
        once = key == "once"
        row.update(case=label, draws=key, threefry_copies=copies[once], same_numbers=same)
        rows.append(row)
    if all("median_s" in r for r in rows):
        per, one = (r["median_s"] for r in rows)
        log(f"{label}: per consumer {1e3 * per:.2f} ms ({copies[False]} hash copies), once "
            f"{1e3 * one:.2f} ms ({copies[True]}), {per / one:.2f}x, same numbers: {same}")
    return rows


def measure(sizes, rounds: int, mechanisms=None, log=print) -> list[dict]:
    import svtjax

    rows = []
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    for n, trials in sizes:
        for mode in ("fixed", "shuffle"):
            q, t = workload.zipf_workload(n)
            for reduce, what in ((None, "outcome"), (workload.count_reduce, "count")):
                rows += case_rows(f"svt-s {n}x{trials} {mode} {what}", mech, q, t, trials,
                                  mode == "shuffle", reduce, rounds, log)
    if mechanisms is not None:
        n, trials = 10_000, 1000
        q, t = workload.zipf_workload(n)
        for name in mechanisms or sorted(svtjax.mechanisms.registry()):
            m = svtjax.get(name, **workload.mechanism_params(name, n=n))
            rows += case_rows(f"{name} {n}x{trials} fixed count", m, q, t, trials, False,
                              workload.count_reduce, rounds, log)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workload.add_sizes_option(p)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--mechanisms", nargs="*", default=None, metavar="NAME",
                   help="also these registered mechanisms (none named: every one), fixed "
                        "order, count-only reducer")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    machine.tune_allocator()
    rows = measure(args.sizes, args.rounds, args.mechanisms)
    machine.write_record("draw-once", "draw-once", args.out, rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
