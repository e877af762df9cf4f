"""Test configuration: CPU only, strict dtype promotion, x64 available (opt-in per test)."""

import gc
import os
import sys

# The README's test command installs with ``pip install --no-compile`` (pip would otherwise
# byte-compile every module of every dependency, ~20 s of the install, most of them never
# imported here), so the suite writes the bytecode of the modules it imports, once, as Python
# does by default, also where PYTHONDONTWRITEBYTECODE is set: without that, every test worker and
# subprocess would compile jax, scipy, ... from source again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # xdist workers and subprocesses inherit this
os.environ.setdefault("JAX_PLATFORMS", "cpu")

OPT_LEVEL = os.environ.get("SVTJAX_TEST_OPT_LEVEL", "1")
"""LLVM's optimisation level for the suite's XLA programs (``--xla_backend_optimization_level``);
empty: XLA's default (3). See :data:`SUITE_XLA_FLAGS`."""

SUITE_XLA_FLAGS = {} if os.environ.get("SVTJAX_TEST_AS_USERS") else {
    "xla_backend_optimization_level": OPT_LEVEL,
    "xla_cpu_use_fusion_emitters": "false",
}
"""How XLA compiles the suite's programs (set before JAX starts its backend, inherited by the
suite's subprocesses): each flag is added to ``XLA_FLAGS`` unless ``XLA_FLAGS`` names it already.

Most of a cold run is XLA compiling the suite's programs (about a thousand distinct ones), and
most of that is per-kernel work: each fusion is a kernel of its own, emitted and compiled by
LLVM separately. Two settings make that cheaper and compute the same numbers:

* **LLVM level 1** instead of XLA's default 3: the bit-identity test file from an empty cache
  compiled in about 60% of the time. Neither level reorders floating-point arithmetic (XLA CPU
  runs without fast math) and both contract ``a*b + c`` into fused multiply-adds where XLA
  allows it (level 0, which also skips that contraction, changes the numbers). It gives up run
  time (no loop vectorisation), which the suite's small runs do not notice.
* **XLA's elemental kernel emitter** (``--xla_cpu_use_fusion_emitters=false``) instead of its
  MLIR fusion emitters, which pay a large fixed cost per kernel: small kernels (scalar budget
  arithmetic, broadcasts, pads; an engine program has dozens) compile in about a third of the
  time, large ones in about the same. A cold run of the whole suite (``-n 1``, empty caches,
  both settings side by side on the 2-core VM) took 792 CPU-seconds with it against 990
  without. XLA aborts at start on a flag it does not know: a jaxlib outside the pinned range
  may need this entry removed (every jaxlib 0.10 knows it).

``tests/test_bit_identity.py``'s Outcome hashes, recorded with XLA's defaults (every case of
every mechanism registered then, float64 in the suite and float32 with
``tests/data/check_outcomes.py f32``), hold bit for bit under both settings: on those cases the
suite's programs compute what users' programs compute. The speed
benchmarks and the command line compile with XLA's defaults. ``SVTJAX_TEST_AS_USERS=1`` runs
the suite as users compile (adds nothing to ``XLA_FLAGS``); ``SVTJAX_TEST_OPT_LEVEL=N`` sets
the level alone (empty: XLA's default)."""
_named = os.environ.get("XLA_FLAGS", "")
os.environ["XLA_FLAGS"] = " ".join(filter(None, [_named] + [
    f"--{flag}={value}" for flag, value in SUITE_XLA_FLAGS.items() if value and flag not in _named]))

import jax  # noqa: E402
import pytest  # noqa: E402

# float64 is needed by the equivalence tests (values to 1e-12); tests that need float32 ask for
# it explicitly through dtypes, never through the default.
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "standard")

GC_THRESHOLD = (100_000, 50, 100)
"""CPython's cyclic collector thresholds in the test processes (the default is (2000, 10, 10)).

The suite stages ~2,500 JAX programs, and tracing and lowering allocate millions of small
objects, so with the defaults the collector ran ~8,500 times per xdist worker and took 24.6
of ~370 worker-seconds (a full run on the 2-core VM, 2026-12-05, timed through
``gc.callbacks``); with these thresholds it ran ~30 times for 6.8 s. Collection still happens
(memory stays bounded); only how often changes, so no test sees anything else."""
gc.set_threshold(*GC_THRESHOLD)


CACHE_DIR = None
"""The tests' compilation cache directory, or None when it is off (see :func:`subprocess_env`)."""


def _compilation_cache() -> None:
    """Compiled kernels persist between test runs (JAX's persistent compilation cache, keyed by
    the computation, the jax/jaxlib version and the compile options, so a stale entry is never
    used): most of a cold run's time is XLA compiling the same few hundred kernels. The cache
    lives in ``$SVTJAX_TEST_CACHE_DIR`` (``SVTJAX_TEST_CACHE_DIR=`` empty turns it off), by
    default ``~/.cache/svtjax/xla-tests``, apart from the user's cache: ``svtjax.cli`` run by a
    test, in this process or a subprocess, uses the tests' directory, not
    ``~/.cache/svtjax/xla``."""
    directory = os.environ.get("SVTJAX_TEST_CACHE_DIR")
    if directory != "":
        from svtjax._cache import default_cache_dir, enable_compilation_cache

        global CACHE_DIR
        try:
            CACHE_DIR = enable_compilation_cache(directory or
                                                 default_cache_dir().parent / "xla-tests")
        except OSError:  # an unwritable home: the tests run, compiling everything
            pass
    # The command line, run in this process by the CLI tests, turns on its own cache on start
    # (``svtjax.cli._start``): point it at the tests' directory (or keep it off), so that it
    # neither moves this worker's later compilations into the user's cache nor misses there.
    if CACHE_DIR is None:
        os.environ["SVTJAX_NO_CACHE"] = "1"
    else:
        os.environ["SVTJAX_CACHE_DIR"] = CACHE_DIR


_compilation_cache()


def subprocess_env(base=None, **extra) -> dict:
    """The environment for a test's Python subprocess: ``base`` (default ``os.environ``) with
    the tests' compilation cache, both for the command line (``SVTJAX_CACHE_DIR``) and for plain
    ``jax`` code (``JAX_COMPILATION_CACHE_DIR``, every compilation cached), so that a subprocess
    does not recompile what the suite compiled before; with the cache off, ``SVTJAX_NO_CACHE``.
    An ``XLA_FLAGS`` in ``extra`` is added to the inherited flags (:data:`SUITE_XLA_FLAGS`)."""
    base = dict(os.environ if base is None else base)
    if "XLA_FLAGS" in extra:
        extra["XLA_FLAGS"] = " ".join(filter(None, [base.get("XLA_FLAGS"), extra["XLA_FLAGS"]]))
    env = dict(base, JAX_PLATFORMS="cpu", **extra)
    if CACHE_DIR is None:
        env["SVTJAX_NO_CACHE"] = "1"
        return env
    env.pop("SVTJAX_NO_CACHE", None)
    env.update(SVTJAX_CACHE_DIR=CACHE_DIR, JAX_COMPILATION_CACHE_DIR=CACHE_DIR,
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
               JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    return env


HEAVY_FIRST = ("test_equivalence.py", "test_simulate.py", "test_exact.py", "test_sweep.py",
               "test_bit_identity.py", "test_rng.py", "test_cli.py", "test_audit.py",
               "test_native.py", "test_experiment_ding2019.py", "test_distribution.py",
               "test_selection.py", "test_experiment_liu2024.py")
"""The test files that took the most worker time, most first (``python -m pytest -n 2 -q -p
benchmarks.suite_profile && python benchmarks/suite_profile.py``, 2026-12-02: 108 s down to
13 s of ~560 worker-seconds); :func:`pytest_collection_modifyitems` runs them first."""


def pytest_collection_modifyitems(config, items):
    """Runs the heaviest test files first (:data:`HEAVY_FIRST`), the rest in their usual order.

    pytest-xdist hands tests to its workers in this order as they become free, so with the long
    files first the run ends on short tests and both workers finish together; in the order of
    the file names the last long file (``test_sweep.py``) kept one worker busy alone at the end
    (per-worker test time 269 s and 291 s in the profile above). The order changes no result:
    every test is independent of the others (xdist already runs them in any order).

    Tests marked ``slow`` (stress tests of minutes) are skipped unless ``--runslow`` is given
    or ``SVTJAX_SLOW=1`` is set."""
    if not (config.getoption("--runslow") or os.environ.get("SVTJAX_SLOW") == "1"):
        skip = pytest.mark.skip(reason="slow: run with --runslow or SVTJAX_SLOW=1")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip)
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the tests marked slow (stress tests of minutes)")


@pytest.fixture
def strict_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


def _map_limit() -> int:
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read()) // 2
    except (OSError, ValueError):
        return 0


_MAP_LIMIT = _map_limit()


def _mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


_PER_TEST = 4096
"""Mappings one test is taken to add at most (a CPU program of the engine holds ~176; the most
any test added in a full run on 2026-11-29 was 2,963), so that the count is read only as often
as it could have crossed :data:`_MAP_LIMIT`: reading ``/proc/self/maps`` costs ~15 ms at
20,000 mappings, and the two workers held 8,000 and 19,000 on average, so reading it after
every one of ~1,500 tests cost ~15 worker-seconds. Overshooting by a test or two is harmless:
the limit is half of the kernel's."""

_SKIP = [0]  # tests left before the next reading


@pytest.fixture(autouse=True)
def _bounded_compiled_code():
    """Drops JAX's compiled executables when the process holds half of Linux's memory-mapping
    limit (``vm.max_map_count``, 65530 by default). Every executable XLA compiles for the CPU
    keeps a few mappings of machine code, and one test process compiles thousands (the
    equivalence tests alone reach the limit in a single process), after which the next
    compilation fails inside XLA with a segmentation fault."""
    yield
    if not _MAP_LIMIT:
        return
    if _SKIP[0] > 0:
        _SKIP[0] -= 1
        return
    count = _mappings()
    if count > _MAP_LIMIT:
        import gc

        jax.clear_caches()
        gc.collect()
        count = _mappings()
    _SKIP[0] = max(0, (_MAP_LIMIT - count) // _PER_TEST - 1)
