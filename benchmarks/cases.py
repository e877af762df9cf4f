"""The benchmark cases and the tuning decisions they justified: data only, nothing runs here.

:data:`CASES` maps a case name to its definition, run by ``python benchmarks/harness.py --case
NAME`` (``svtjax bench`` runs ``default``). A definition is a ``kind`` and its settings:

* ``throughput`` — the headline (svt-s on the researchers' workload against the authors' numba
  loop, its process pool, numpy and the RNG floor), every registered mechanism, the RNG floor of
  every JAX generator and the subprocess checks; every other key is a field of
  :class:`benchmarks.harness.Config`.
* ``platform`` — the engine's per-platform settings (positions per loop iteration ``widths``,
  compaction ``factors``, trials per ``chunks``; 0: ``simulate``'s default) on the headline
  workload through ``simulate(reduce=)`` computing F1 and SER; none of them changes a number.
* ``checkouts`` — every registered mechanism's ``simulate(reduce=)`` in this checkout and in
  each ``--checkout DIR`` (e.g. a git worktree of an older commit), same run: one long-lived
  process per checkout, timed in interleaved rounds (``rounds``), at ``sizes`` and ``modes``.
* ``command`` — a shell command timed as a whole: ``command`` (``"readme-tests"``: the README's
  test command, which must be a line of ``.ci/run``), ``clone`` (run it in a fresh clone of
  ``HEAD`` with a new virtual environment, as CI does), ``cache`` (``"user"``: the caches as they
  are; ``"cold"``: empty compilation caches; ``"warm"``: run twice, record the second) and
  ``parse`` (``"pytest"``: pytest's summary and slowest tests; ``"reproduce"``: each
  experiment's exit line).

``check_regression.py`` (CI), ``gpu_suite.py`` (the ``gpu-*`` cases in one device call) and
``stress_sigint.py`` write records of the same format under the case names ``regression``,
``gpu-*`` and ``stress-sigint``.

:data:`DECISIONS` lists each tuning constant of the package with the value chosen, the
alternatives measured and the record that measured them; RESULTS.md prints it as a table. The
scripts that produced those records were retired once their decision was made; their records are
in the git history of ``benchmarks/results/`` (``git log --all -- benchmarks/results/NAME``).
"""

NO_RECORD = "none committed (the numbers the constant's docstring gave)"

LARGE = [[1_000, 1_000_000], [10_000, 100_000]]
HEADLINE = [[10_000, 1_000], [1_000, 10_000]]

CASES = {
    "default": {"kind": "throughput"},
    "quick": {"kind": "throughput", "sizes": [[1_000, 200]], "repeats": 2, "only": ["svt-s"],
              "pool_workers": 2, "floor_max_draws": 1 << 16, "cache_check": False,
              "memory_check": False, "quick": True},
    "gpu-large": {"kind": "throughput", "sizes": LARGE, "repeats": 3, "numpy": False,
                  "baseline_max_trials": 20_000, "mechanisms": False, "cache_check": False,
                  "memory_check": False, "floor_max_draws": 1 << 28},
    "gpu-platform": {"kind": "platform", "sizes": LARGE, "modes": ["fixed", "shuffle"],
                     "widths": [64, 256, 1024], "factors": [8, 1 << 30], "chunks": [0, 1 << 16],
                     "rounds": 2},
    "gpu-default": {"kind": "throughput", "sizes": HEADLINE, "repeats": 5, "mechanisms": False,
                    "rng_floors": False, "cache_check_cold": False, "memory_check": False},
    "gpu-mechanisms": {"kind": "throughput", "sizes": [[10_000, 1_000]], "repeats": 3,
                       "headline": False, "rng_floors": False, "cache_check": False,
                       "memory_check": False},
    "platform": {"kind": "platform", "sizes": HEADLINE, "modes": ["fixed", "shuffle"],
                 "widths": [64, 128], "factors": [4, 8, 16, 1 << 30], "chunks": [0],
                 "rounds": 5},
    "checkouts": {"kind": "checkouts", "sizes": HEADLINE[:1], "modes": ["fixed", "shuffle"],
                  "rounds": 7},
    "suite": {"kind": "command", "command": "readme-tests", "clone": True, "cache": "user",
              "parse": "pytest"},
    "suite-cold": {"kind": "command", "command": "readme-tests", "clone": True,
                   "cache": "cold", "parse": "pytest"},
    "reproduce": {"kind": "command", "command": "python -m svtjax.cli reproduce all --paper",
                  "clone": False, "cache": "warm", "parse": "reproduce"},
    # every experiment's --paper run from an empty compilation cache, two at a time (the
    # 15-minute bound of the --paper suite), its outputs kept under results/paper for reading
    "reproduce-cold": {"kind": "command", "command": "python -m svtjax.cli reproduce all "
                       "--paper --jobs 2 --out results/paper", "clone": False, "cache": "cold",
                       "parse": "reproduce"},
}
"""Case name -> definition (see the module docstring)."""

SHOWN = ("default", "gpu-large", "gpu-platform", "gpu-default", "gpu-mechanisms", "platform",
         "checkouts", "suite", "suite-cold", "reproduce", "reproduce-cold", "regression",
         "stress-sigint")
"""The cases RESULTS.md shows, in this order (``quick`` and narrowed ``custom`` runs are not)."""

DECISIONS = [
    # constant, value, the measured alternatives, record (in benchmarks/results/ or its history)
    ("engine BLOCK_WIDTH (CPU)", "64",
     "shuffled/fixed ms at 10^4x10^3: 64: 18.1/7.9, 128: 19.7/9.2, 192: 19.2/9.1; at "
     "10^3x10^4: 64: 74.4/27.2, 128: 80.0/35.9, 192: 86.5/39.4",
     "block-width-vm-3d1219c7-2026-11-29T123532.json"),
    ("engine COMPACTION (CPU)", "8",
     "÷ fastest, fixed/shuffled at 10^4x10^3: 4: 1.01/1.00, 8: 1.00/1.05, 16: 1.15/1.10, none: "
     "2.41/2.56; at 10^3x10^4: 4: 1.00/1.00, 8: 1.06/1.02, 16: 1.12/1.07, none: 1.73/1.74",
     "block-width-vm-3d1219c7-2026-12-05T234827.json"),
    ("engine NARROW (one block of n rounded up to 8 for n < 64)", "on",
     "ns per trial, narrow vs a 64-wide block, n = 1/5/10/33: svt-s 99/105/116/258 vs "
     "290/280/281/324; stagewise-svt 215/218/337/677 vs 1293/1282/1102/1000",
     "short-streams-vm-3d1219c7-2026-11-28T011124.json"),
    ("engine DRAW_ONCE (CPU: a block's draws made inside a conditional)", "on",
     "ms per consumer -> once: svt-s 10^4x10^3 fixed 10.06 -> 5.58, 10^3x10^4 fixed 51.54 -> "
     "24.42, shuffled 184.31 -> 143.19; lee-clifton 130.64 -> 67.58; identical outputs",
     "draw-once-vm-3d1219c7-2026-11-27T220430.json"),
    ("engine SHUFFLE_PREFIX (CPU)", "1024",
     "F1 reducer ms at 10^4x10^3 shuffled, prefix 0/512/768/1024/1536: "
     "14.76/9.67/9.42/8.83/9.28; at 10^3x10^4: 45.80/38.58/39.84/38.73/37.09",
     "shuffle-prefix-vm-3d1219c7-2026-12-06T021637.json"),
    ("simulate SHUFFLE_GROUP_BYTES", "4 MiB",
     "÷ one group with 5 groups, F1/count/outcome: 10^4x10^3 0.94/0.85/0.86x, 3000x3000 "
     "1.03/0.99/0.92x, 10^3x10^4 1.17/1.15/1.10x",
     "shuffle-groups-vm-3d1219c7-2026-11-29T103540.json"),
    ("simulate GROUP_TRIAL_BYTES", "16 KiB",
     "grouping slower at 32 KiB a trial (n = 10^4), even at 10 KiB (n = 3000), faster at "
     "4 KiB (n = 10^3): the same record's rows",
     "shuffle-groups-vm-3d1219c7-2026-11-29T103540.json"),
    ("simulate MEMORY_BUDGET (CPU)", "256 MiB",
     "10^6 trials, n = 10^4, shuffled, 10 metrics: chunk 768 trials, peak RSS 926 MiB, "
     "2,252 trials/s", "sweep-memory-vm-cpu-2026-11-26T015008.json"),
    ("simulate ACCELERATOR_MEMORY_BUDGET", "2 GiB",
     "H200, same run: chunk 7168 trials, 137,792 trials/s (about 5x the 256 MiB budget)",
     "sweep-memory-vm-gpu-2026-11-26T014815.json"),
    ("simulate seed key made once per (seed, generator) and cached", "on",
     "host overhead of a simulate call 0.41-0.65 ms of 3.9-32.7 ms (n = 10^4x10^3 fixed to "
     "10^3x10^4 shuffled)", "dispatch-vm-3d1219c7-2026-12-06T015338.json"),
    ("simulate host inputs passed as numpy (no device_put)", "on",
     "chunk ms with numpy inputs vs fresh device inputs: 3.48 vs 3.97 (10^4x10^3 fixed), "
     "32.03 vs 32.77 (10^3x10^4 shuffled)", "dispatch-vm-3d1219c7-2026-12-06T015338.json"),
    ("sweep points per compiled batch (CPU 1, accelerator 10)", "1 / 10",
     "10 ε points, 10^3 trials, n = 10^4: CPU 9.5 s one at a time vs 66.9 s vmapped; GPU "
     "0.51 s vs 0.33 s", "sweep-batching-vm-cpu-2026-11-26T015918.json, "
     "sweep-batching-vm-gpu-2026-11-26T014749.json"),
    ("_malloc tuning (mmap/trim thresholds, one arena)", "on",
     "ms default/thresholds/tuned: 40 MB fill 11.03/0.82/0.73; svt-s 10^4x10^3 full Outcomes "
     "34.98/6.13/5.80; 10^3x10^4 shuffled 136.80/71.67/70.84",
     "allocator-vm-3d1219c7-2026-11-26T080242.json"),
    ("Fisher-Yates swap indices by Lemire's method", "Lemire",
     "ms per block at batch 1000, n = 10^4: Lemire 0.195, randint 0.458; flat swaps 0.294, "
     "indexed 0.478", "shuffle-vm-3d1219c7-2026-11-26T071910.json"),
    ("native Fisher-Yates block (CPU)", "on where built",
     "ms native/pure at 10^4x10^3 shuffled: 30.1/32.6 (no swaps 12.9)",
     "native-vm-3d1219c7-2026-11-28T194217.json"),
    ("native first-⊤ kernel (CPU)", "on where built",
     "ms native/pure at 10^4x10^3: fixed 1.11/2.16, shuffled 1.06/~3.0",
     "first-tops-vm-3d1219c7-2026-11-29T153050.json"),
    ("native Fisher-Yates prefetch distance kPrefetch", "8",
     "distances 4, 8, 12, 16 in interleaved A/Bs; against no prefetch 1.00-1.24x (median "
     "1.11x) shuffled at 10^4x10^3", "versions-2026-12-02T053221.json"),
    ("_bits rank by population count (not cumsum)", "on",
     "engine ms before -> after the packed-bit rank (records of the commits before and with "
     "it): 10^4x10^3 fixed 14.7 -> 11.1, 10^3x10^4 fixed 73.5 -> 46.0",
     "cost-vm-3d1219c7-2026-11-27T090055.json, cost-vm-3d1219c7-2026-11-27T145919.json"),
    ("selection top_k behind an optimization barrier", "on",
     "noisy-top-k-gap/report-noisy-max throughput 0.12 without, 0.98 with",
     "check_regression.py bounds (regression case)"),
    ("exact selection_laws ties=True (binomial groups)", "on",
     "speed-up over item by item 2.33-4.30x on retail and Zipf (c = 25-100, ε = 0.1, 0.5), "
     "largest difference 2.0e-15", "ties-vm-3d1219c7-2026-11-27T115230.json"),
    ("exact quadrature default rule", "tol 1e-8",
     "largest error of P(i in S) against a far finer rule 1.9e-10 (4 datasets, ε = 0.1, 0.5); "
     "Monte Carlo check 96 of 96 within 4 SE", "exact-vm-2026-11-27T063120.json, "
     "exact-vm-2026-11-27T061224.json"),
    ("exact allocation search kink_tol", "1e-3",
     "E[SER] moved by at most 8.1e-12; nodes 2697 -> 1238, 884 -> 312 (kink_tol 1e-4: 1371, "
     "389)", "search-vm-3d1219c7-2026-12-02T074556.json"),
    ("sweep exact columns' rule (targets)", "default",
     "E[SER] moved by at most 1.1e-10 against the finer rule",
     "sweep-exact-accuracy-vm-3d1219c7-2026-12-02T045838.json"),
    ("_loops MIN_LEVEL (no compaction level narrower)", "16",
     "svt-s 10^4x10^3: levels 1000/125/16/2 10.5 ms, 1000/125/16 10.1 ms; compiling 3.4 s vs "
     "2.4 s; 100 trials: one level compiled in 2.5 s, three in 6.5 s", NO_RECORD),
    ("simulate default chunk on a CPU: the largest within the budget", "one chunk",
     "svt-s, counting reducer, 10^4x10^3: one chunk 3.8 ms, ten chunks of 100 6.4 ms (5.2 ms as "
     "ten sub-batches of one call); 10^3x10^4: 14 ms vs 19 ms", NO_RECORD),
    ("engine CACHE_CHUNK_BYTES (CPU; cache-bound kernels: the selection mechanisms)", "8 MiB",
     "10^3 trials of n = 10^4 (Zipf, k = 50, counting): 132-152 ms in 8 MB chunks vs 237-245 ms "
     "as one 120 MB chunk; 10^4 trials of n = 10^3: 301-323 ms vs 389-428 ms", NO_RECORD),
    ("selection kernel vectorized=True (lax.top_k, not the peeling loop)", "on",
     "top_k 2-45x faster for n = 50 .. 10^4, k = 1 .. 50 (CPU, jax 0.10.2)", NO_RECORD),
    ("_answer_set top_tables (top-k, not a sort of all n)", "on",
     "sort of 10^4 floats about 2 ms on a CPU core, top-k about a fortieth of that", NO_RECORD),
    ("_answer_set PAIRWISE_MAX_K", "128",
     "all-pairs comparison 2-5x faster than two sorts on CPU for k <= 300", NO_RECORD),
    ("engine shuffle permutation int16 and transposed (pure JAX)", "on",
     "about 5x faster swaps than int32 row-major on a CPU", NO_RECORD),
    ("correction DEFAULT_MESH", "16384",
     "r^op within about 5e-7 relative of the closed form, 10-30 ms per call",
     "correction-vm-2026-11-26T014557.json"),
]
"""(constant, value, measured alternatives, record) of every tuning decision."""
