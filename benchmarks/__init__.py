"""svtjax's timing tools: they live in the source checkout, never in the installed package.

One harness runs every case; one record format; one renderer (``python benchmarks/<script>.py``
runs a script with the checkout on ``sys.path``; ``svtjax bench`` runs :mod:`benchmarks.harness`
from a checkout):

* :mod:`benchmarks.cases` — the cases (data only: a kind and its settings) and the table of
  tuning decisions with the numbers behind each.
* :mod:`benchmarks.harness` — runs a case (``--case NAME``; ``svtjax bench``: ``default``, the
  researchers' top-c workload against the numba loops and the RNG floor, every registered
  mechanism: the ``throughput`` kind) and writes its record; ``--render`` regenerates
  ``RESULTS.md``.
* :mod:`benchmarks.kinds` — the other kinds of case: ``platform`` (the engine's per-platform
  settings), ``checkouts`` (every mechanism in several checkouts, same run) and ``command`` (a
  shell command timed as a whole: the README's test command, ``svtjax reproduce all``).
* :mod:`benchmarks.machine` — the record format (:func:`~benchmarks.machine.new_record`,
  :func:`~benchmarks.machine.save`): machine, device, versions, load, peak RSS (``/proc``),
  the subprocess checks (persistent compilation cache, peak memory), warm timing and
  interleaved rounds.
* :mod:`benchmarks.workload` — the Zipf workload, svt-s's noise scales, the mechanisms' example
  parameters, the metric/count reducers and the RNG floor under each JAX generator.
* :mod:`benchmarks.baselines` — the authors' numba loop (single thread, process pool) and numpy.
* :mod:`benchmarks.render` — the text tables of a record and ``RESULTS.md``.
* ``check_regression.py`` (CI, under a minute), ``gpu_suite.py`` (the ``gpu-*`` cases in one
  call on a GPU machine), ``stress_sigint.py`` (Ctrl-C under load) and ``suite_profile.py`` (a
  pytest plugin: where the test suite's time goes).

Nothing here runs on import.
"""
