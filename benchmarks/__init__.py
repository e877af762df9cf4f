"""svtjax's timing tools: they live in the source checkout, never in the installed package.

Modules (``python benchmarks/<script>.py`` runs a script with the checkout on ``sys.path``;
``svtjax bench`` runs :mod:`benchmarks.harness` from a checkout):

* :mod:`benchmarks.harness` — the benchmark suite: the researchers' top-c workload against the
  numba loops and the RNG floor, every registered mechanism, JSON records (``svtjax bench``).
* :mod:`benchmarks.workload` — the Zipf workload, its stored random order, svt-s's noise scales,
  the mechanisms' example parameters and the metric/count reducers.
* :mod:`benchmarks.baselines` — numba (single thread, process pool) and numpy baselines.
* :mod:`benchmarks.rng` — the RNG floor under each JAX generator.
* :mod:`benchmarks.timing` — warm timing and interleaved rounds.
* :mod:`benchmarks.machine` — machine, device, versions, load average and peak RSS (``/proc``).
* :mod:`benchmarks.probes` — subprocess checks: persistent compilation cache, peak memory.
* :mod:`benchmarks.render` — the text tables and ``RESULTS.md`` from the JSON records.
* ``check_regression.py`` (CI, under a minute), ``gpu_suite.py`` (one call on a GPU machine),
  ``update_results.py`` and the ``bench_*.py`` scripts.

Nothing here runs on import.
"""
