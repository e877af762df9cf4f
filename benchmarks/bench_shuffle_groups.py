"""Measures ``svtjax.simulate.SHUFFLE_GROUP_BYTES``: reduced shuffled chunks run in trial groups.

A shuffled trial keeps a Fisher–Yates permutation of its n items; a chunk's permutations
together (trials x n_pad entries, 20 MB for 1,000 trials of n = 10^4) are far larger than a
CPU core's caches, so each swap misses. ``simulate`` therefore runs a shuffled chunk of small
trials in equal groups one after another inside the compiled chunk, the group's
permutations taking about ``SHUFFLE_GROUP_BYTES``. Grouping never changes a number (each trial
is keyed by its index). This times the headline workload (svt-s, monotonic, 1:c^(2/3),
ε = 0.5, c = 50, Zipf 10,000/i, a fresh random order per trial) through ``simulate(reduce=)``
with the F1/SER reducer and the count-only reducer, and with full Outcomes (``outcome``: no
``reduce``, then the top-c selection and halting positions); ``simulate`` groups a chunk only
within ``svtjax.simulate.GROUP_TRIAL_BYTES`` a trial, lifted here so both sides are timed (the
record's ``default_groups`` is what ``simulate`` picks), for each budget in ``--budgets`` (MiB;
0: no grouping), in interleaved rounds, and writes one JSON record::

    python benchmarks/bench_shuffle_groups.py [--budgets 0 1 2 4 8] [--rounds 7]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import machine, timing, workload  # noqa: E402

HERE = Path(__file__).resolve().parent


def measure(sizes, budgets, rounds: int, log=print) -> list[dict]:
    import jax

    import svtjax

    simulate = importlib.import_module("svtjax.simulate")
    default = simulate.SHUFFLE_GROUP_BYTES
    default_trial = simulate.GROUP_TRIAL_BYTES
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params())
    rows = []
    for n, trials in sizes:
        q, threshold = workload.zipf_workload(n)
        reducers = {"f1": jax.tree_util.Partial(workload.MetricReducer(workload.C),
                                                jax.numpy.asarray(q)),
                    "count": workload.count_reduce,
                    "outcome": None}  # full Outcomes, then the selection and halts
        selected = workload.selected_and_halts(workload.C)
        default_groups = {name: simulate.shuffle_groups(mech, n, trials) for name in reducers}
        fns, groups, sums = {}, {}, {}
        for budget in budgets:
            simulate.SHUFFLE_GROUP_BYTES = int(budget * 2**20) or 2**62
            simulate.GROUP_TRIAL_BYTES = 2**62  # the budget alone decides: both sides timed
            groups[budget] = simulate.shuffle_groups(mech, n, trials)
            for name, reducer in reducers.items():
                def run(repeats, budget=budget, reducer=reducer, name=name):
                    simulate.SHUFFLE_GROUP_BYTES = int(budget * 2**20) or 2**62
                    t0 = time.perf_counter()
                    out = svtjax.simulate(mech, q, threshold, trials=trials, seed=0,
                                          shuffle=True, reduce=reducer)
                    if reducer is None:
                        out = [x.sum() for x in selected(out)]
                    out = jax.block_until_ready(out)
                    dt = time.perf_counter() - t0
                    sums[(budget, name)] = [float(x) for x in out]
                    return {"times_s": [dt]}
                fns[f"{budget}:{name}"] = run
        result = timing.interleaved(fns, rounds=rounds, warmup=1)
        simulate.SHUFFLE_GROUP_BYTES = default
        simulate.GROUP_TRIAL_BYTES = default_trial
        for key, row in result.items():
            budget, name = key.split(":")
            budget = float(budget)
            got = sums.get((budget, name))
            row.update(n=n, trials=trials, budget_mib=budget, groups=groups[budget],
                       default_groups=default_groups[name], reducer=name, sums=got,
                       same_numbers=got is not None and got == sums.get((budgets[0], name)))
            if "median_s" in row:
                log(f"n={n} trials={trials} {name} budget={budget:g} MiB "
                    f"({groups[budget]} groups): {1e3 * row['median_s']:.1f} ms")
            rows.append(row)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    workload.add_sizes_option(p)
    p.add_argument("--budgets", nargs="+", type=float, default=[0, 1, 2, 4, 8])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    machine.tune_allocator()
    rows = measure(args.sizes, args.budgets, args.rounds)
    machine.write_record("shuffle-groups", "shuffle-groups", args.out, rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
