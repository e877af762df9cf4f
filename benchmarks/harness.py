"""The benchmark suite behind ``svtjax bench``: svtjax on the researchers' own workload.

The headline (issue 19) is the workload of the SVT papers' experiments (:mod:`benchmarks.workload`):
Zipf scores 10,000 / i stored in one fixed random order, ``svt-s`` with monotonic queries and the
1:c^(2/3) split, ε = 0.5, c = 50; per trial the selected items and the halting position. Cases:
n = 10^4 × 10^3 trials and n = 10^3 × 10^4 trials, each in the fixed random order (``fixed``)
and with a fresh random order per trial (``shuffle``); the sorted order (``sorted``) is an extra
mode. How the papers' code prepares and runs this (read in Ding, Wang, Zhang, Kifer's published
experiment code for the Free Gap paper, github.com/yxwangcs/freegap): ``freegap/__main__.py``
(``process_datasets``) shuffles each dataset's item counts once with
``np.random.RandomState(0)``; ``freegap/adaptivesvt.py`` runs the SVT as a
``numba.njit(fastmath=True)`` while-loop drawing ``np.random.laplace`` per item inside the loop
until the k-th ⊤; ``freegap/evaluate.py`` splits the trials into one equal chunk per core of a
``multiprocessing.Pool(cpu_count())``, each worker seeding its own generator. The baselines
follow that (:mod:`benchmarks.baselines`). The engines of a case, timed in interleaved rounds
(one sample of each in turn, after one untimed warm-up round that also compiles;
:func:`benchmarks.machine.interleaved`):

* ``svtjax`` — ``simulate`` returning full Outcomes, then ``svtjax.selected(out, c)`` and the
  halting positions (``svtjax.prefix_counts``) in one jitted call
  (:func:`benchmarks.workload.selected_and_halts`), ``block_until_ready``;
* ``svtjax-f1`` — ``simulate(..., reduce=)`` computing per-trial F1 and SER of the selection
  (``svtjax.metrics``, scores bound with ``jax.tree_util.Partial``) and the halting position;
* ``svtjax-count`` — ``simulate(..., reduce=)`` counting evaluated positions and ⊤ only;
* ``numba`` — the papers' loop (:mod:`benchmarks.baselines`), one thread, writing the selected
  items and halting positions; ``numba-count`` — the same loop writing nothing, only counting;
* ``numba-pool`` — that loop in a process pool over all cores (created and warmed before any
  timing), as the papers' code runs its trials;
* ``numpy-vectorized`` — all noise of a chunk of trials at once, a cumsum finds the halt;
* ``rng-floor`` — the default generator's float32 Laplace floor
  (:func:`benchmarks.workload.floor_timer`).

Figures: throughput = n × trials / median wall seconds; evaluated rate = positions evaluated /
s; ratios of the svtjax engines to the numba engines; the ratio to the physical limit = svtjax's
throughput ÷ (RNG-floor rate ÷ fraction of the stream read) = evaluated rate ÷ floor rate. Then
every registered mechanism (``svtjax.names()``, with the parameters of its ``example_params``
hook) runs ``simulate`` with full Outcomes on the same cases (engine ``simulate``), the RNG floor
of every JAX generator is measured, and two subprocess checks follow (:mod:`benchmarks.machine`).

Every case is defined in :mod:`benchmarks.cases` (data only) and run here, each by its kind
(:mod:`benchmarks.kinds`): ``throughput`` (the engines above; ``svtjax bench`` runs the
``default`` case), ``platform`` (the engine's per-platform block width, compaction
factor and chunk size), ``checkouts`` (every mechanism in several checkouts, same run) and
``command`` (a shell command timed as a whole: the README's test command on a clean clone,
``svtjax reproduce all``). Each run writes one JSON record of the one format (schema
``svtjax-bench/3``, :mod:`benchmarks.machine`) to
``benchmarks/results/<case>-<machine>-<time>.json``; ``benchmarks/RESULTS.md`` is generated
from the records (:mod:`benchmarks.render`), never typed by hand.

    svtjax bench [options]                       # from a source checkout: the default case
    python benchmarks/harness.py [--case NAME] [options]
    python benchmarks/harness.py --render        # regenerate RESULTS.md from the records
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

if __package__ in (None, ""):  # run as a script: the checkout root goes on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import baselines, cases, kinds, machine, render, workload  # noqa: E402
from benchmarks.kinds import (  # noqa: E402,F401 - re-exported: the harness's public names
    _baseline_engines,
    _row,
    _skipped,
    headline_case,
    mechanism_case,
    mechanism_engine,
    rng_floor_table,
)
from benchmarks.render import headline  # noqa: E402

__all__ = ["SCHEMA", "Config", "quick_config", "run", "headline_case", "mechanism_case",
           "mechanism_engine",
           "rng_floor_table", "headline", "main", "MODES", "HEADLINE_ENGINES"]

SCHEMA = machine.SCHEMA  # "svtjax-bench/3": the text svtjax bench finds this file by
HEADLINE = workload.HEADLINE
MODES = ("fixed", "shuffle", "sorted")
HEADLINE_ENGINES = kinds.HEADLINE_ENGINES
RESULTS_DIR = machine.RESULTS_DIR


@dataclasses.dataclass(frozen=True)
class Config:
    """What one benchmark run measures.

    Attributes:
      sizes: ``(n, trials)`` cases.
      modes: subset of :data:`MODES`.
      repeats: timed samples per engine (interleaved rounds, after one warm-up round).
      only: mechanism names to run (None: every registered one); the headline runs when svt-s
        is among them.
      epsilon, c, seed: the workload's ε and cut-off, and the root seed of every engine.
      headline: run the headline cases (when svt-s is among the mechanisms).
      engines: the headline engines to run (subset of :data:`HEADLINE_ENGINES`).
      baselines: run the headline's baselines (numba, process pool, numpy, RNG floor).
      pool: run the process-pool baseline; ``pool_workers`` its size (default: usable cores).
      numpy: run the numpy-vectorized baseline.
      baseline_max_trials: time the CPU baselines on at most this many trials and scale the
        times linearly (GPU cases of 10^6 trials); None: all trials.
      mechanisms: time every mechanism (``simulate``, full Outcomes).
      rng_floors: measure the RNG floor of every generator, distribution and keying;
        ``floor_impls`` the generators.
      floor_max_draws: variates per RNG-floor call at most.
      cache_check, cache_check_size, cache_check_cold: the persistent compilation-cache check.
      memory_check, memory_n, memory_trials, memory_chunks: the peak-RSS check.
      quick: the smoke-test configuration (the ``quick`` case).
    """

    sizes: tuple = ((10_000, 1_000), (1_000, 10_000))
    modes: tuple = ("fixed", "shuffle")
    repeats: int = 5
    only: Optional[tuple] = None
    epsilon: float = workload.EPSILON
    c: int = workload.C
    seed: int = 0
    headline: bool = True
    engines: tuple = HEADLINE_ENGINES
    baselines: bool = True
    pool: bool = True
    pool_workers: Optional[int] = None
    numpy: bool = True
    baseline_max_trials: Optional[int] = None
    mechanisms: bool = True
    rng_floors: bool = True
    floor_impls: tuple = workload.IMPLS
    floor_max_draws: int = 1 << 24
    cache_check: bool = True
    cache_check_size: tuple = (10_000, 1_000)
    cache_check_cold: bool = True
    memory_check: bool = True
    memory_n: int = 1_000
    memory_trials: int = 1_000_000
    memory_chunks: tuple = (1_000, 10_000, 100_000)
    quick: bool = False


def quick_config(**overrides) -> Config:
    """A smoke test of the whole pipeline: svt-s only, one tiny case, no subprocess checks (its
    time is mostly compilation: about a minute on the 2-core VM)."""
    return dataclasses.replace(case_config("quick"), **overrides)


def case_config(name: str) -> Config:
    """The :class:`Config` of a ``throughput`` case of :data:`benchmarks.cases.CASES`."""
    spec = {k: v for k, v in cases.CASES[name].items() if k != "kind"}
    fields = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(spec) - fields)
    if unknown:
        raise ValueError(f"case {name!r}: unknown Config fields {unknown}")
    return Config(**{k: tuple(tuple(x) if isinstance(x, list) else x for x in v)
                     if isinstance(v, list) else v for k, v in spec.items()})


# -- the run ---------------------------------------------------------------------------------

def _log(msg: str, verbose: bool) -> None:
    if verbose:
        print(msg, file=sys.stderr, flush=True)


def _mechanisms(cfg: Config) -> list:
    import svtjax

    names = list(svtjax.names())
    return [x for x in names if x in cfg.only] if cfg.only else names


def _open_pool(cfg: Config, verbose: bool):
    if not (cfg.baselines and cfg.pool and "numba-pool" in cfg.engines):
        return None, {"status": "skipped", "reason": "disabled"}
    try:
        t0 = time.perf_counter()
        pool = baselines.NumbaPool(cfg.pool_workers)
    except ImportError as err:
        return None, {"status": "skipped", "reason": f"numba is not importable ({err})"}
    except Exception as err:  # noqa: BLE001 - the rest of the run goes on without it
        return None, {"status": "skipped", "reason": f"failed: {type(err).__name__}: {err}"}
    info = {"status": "ok", "workers": pool.workers, "start_method": "spawn",
            "startup_s": time.perf_counter() - t0}
    _log(f"[bench] process pool: {pool.workers} workers, warm in {info['startup_s']:.1f} s",
         verbose)
    return pool, info


def new_record(cfg: Config, argv: Optional[Sequence[str]] = None, case: str = "default"
               ) -> dict:
    """The record's header (:func:`benchmarks.machine.new_record`) with the workload's
    description."""
    import svtjax

    rho_scale, nu_scale = workload.svt_s_scales(cfg.epsilon, cfg.c)
    config = dict(dataclasses.asdict(cfg), argv=list(argv) if argv is not None else None,
                  workload={"scores": "q_i = 10000 / i (float32)",
                            "order": f"fixed: np.random.RandomState({workload.ORDER_SEED})"
                                     ".permutation(n); sorted: decreasing",
                            "threshold": f"mean of the {cfg.c}th and {cfg.c + 1}th largest",
                            "headline_params": workload.headline_params(cfg.epsilon, cfg.c),
                            "baseline_scales": {"threshold": rho_scale, "query": nu_scale},
                            "dtype": "float32"},
                  registered=list(svtjax.names()))
    record = machine.new_record(case, config)
    record["allocator_tuned"] = machine.tune_allocator()
    return record


def run(cfg: Config, *, verbose: bool = True, argv: Optional[Sequence[str]] = None,
        deadline: Optional[float] = None,
        checkpoint: Optional[Callable[[dict], None]] = None, case: str = "default") -> dict:
    """Runs the benchmark described by ``cfg``; returns the JSON record.

    Args:
      cfg: what to measure.
      verbose: progress lines on stderr.
      argv: the command line, recorded.
      deadline: a ``time.monotonic()`` after which no new case starts (the cases left are
        recorded as skipped); None: no limit.
      checkpoint: called with the record so far after every case (e.g. to write a partial
        record to disk).
      case: the case name the record carries.
    """
    started = time.perf_counter()
    record = new_record(cfg, argv, case)
    results = record["results"]
    names = _mechanisms(cfg)
    with_headline = cfg.headline and HEADLINE in names

    def out_of_time() -> bool:
        return deadline is not None and time.monotonic() > deadline

    def step(label: str, fn: Callable[[], list], skipped: Callable[[str], list]) -> None:
        if out_of_time():
            results.extend(skipped("skipped: the run's time budget was spent"))
        else:
            _log(f"[bench] {label}", verbose)
            try:
                results.extend(fn())
            except Exception as err:  # noqa: BLE001 - one failing case must not stop the run
                results.extend(skipped(f"failed: {type(err).__name__}: {err}"))
        if checkpoint is not None:
            checkpoint(record)

    pool, record["pool"] = (_open_pool(cfg, verbose) if with_headline
                            else (None, {"status": "skipped", "reason": "no headline"}))
    try:
        for n, trials in cfg.sizes if with_headline else ():
            for mode in cfg.modes:
                step(f"headline n={n} trials={trials} {mode} ({cfg.repeats} interleaved rounds)",
                     lambda: headline_case(cfg, n, trials, mode, pool),
                     lambda why: [_skipped(e, HEADLINE, n, trials, mode, why)
                                  for e in cfg.engines])
    finally:
        if pool is not None:
            pool.close()
    for n, trials in cfg.sizes if cfg.mechanisms else ():
        for name in names:
            for mode in cfg.modes:
                step(f"simulate {name} n={n} trials={trials} {mode}",
                     lambda: [mechanism_case(name, cfg, n, trials, mode)],
                     lambda why: [_skipped("simulate", name, n, trials, mode, why)])
    if cfg.rng_floors and not out_of_time():
        n, trials = max(cfg.sizes, key=lambda s: s[0] * s[1])
        _log("[bench] RNG floors: " + ", ".join(cfg.floor_impls), verbose)
        record["rng_floors"] = rng_floor_table(cfg, n, trials)
    if cfg.cache_check and not out_of_time():
        _log("[bench] persistent compilation cache check (subprocesses)", verbose)
        n, trials = cfg.cache_check_size
        record["compile_cache"] = machine.cache_check(n, trials, epsilon=cfg.epsilon, c=cfg.c,
                                                     cold=cfg.cache_check_cold)
    else:
        record["compile_cache"] = {"status": "skipped",
                                   "reason": "disabled" if not cfg.cache_check else "time"}
    if cfg.memory_check and not out_of_time():
        _log(f"[bench] peak-memory check ({len(cfg.memory_chunks)} subprocesses)", verbose)
        record["memory"] = machine.memory_check(cfg.memory_n, cfg.memory_trials,
                                               cfg.memory_chunks, epsilon=cfg.epsilon, c=cfg.c)
    else:
        record["memory"] = {"status": "skipped",
                            "reason": "disabled" if not cfg.memory_check else "time"}
    record["headline"] = headline(record)
    record["load_average"]["end"] = machine.load()
    record["wall_s"] = time.perf_counter() - started
    if checkpoint is not None:
        checkpoint(record)
    return record


# -- command line ----------------------------------------------------------------------------

class UsageError(ValueError):
    """Bad command-line input: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not usage + message
        raise UsageError(message)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="svtjax bench", description="Time svtjax on the SVT papers' top-c workload "
                "against their numba loop (one thread and a process pool) and the RNG floor, "
                "every registered mechanism and every JAX generator; write a JSON record.")
    p.add_argument("--case", choices=sorted(cases.CASES), default=None,
                   help="the case of benchmarks/cases.py to run (default: default; the "
                        "options below narrow a throughput case)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test (the quick case): svt-s only, one tiny case, no subprocess "
                        "checks")
    p.add_argument("--checkout", action="append", metavar="DIR",
                   help="the checkouts case: another checkout to time against this one in the "
                        "same run (e.g. a git worktree of an older commit; repeatable)")
    p.add_argument("--render", action="store_true",
                   help="only regenerate benchmarks/RESULTS.md from the records, run nothing")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                   help="import a module or .py file of your own first (repeatable): its "
                        "registered mechanisms are timed with the others (--only NAME)")
    p.add_argument("--out", type=Path, default=None,
                   help="directory for the JSON record (default: benchmarks/results)")
    p.add_argument("--repeats", type=_positive, default=None,
                   help="timed samples per engine, in interleaved rounds (default 5, quick 2)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="run only this mechanism (repeatable; the headline runs with svt-s)")
    p.add_argument("--size", action="append", type=workload.size_arg, metavar="NxTRIALS",
                   dest="sizes",
                   help="workload size, e.g. 10000x1000 (repeatable)")
    p.add_argument("--mode", action="append", choices=MODES, dest="modes",
                   help="item order: fixed (one random order), shuffle (per trial), sorted "
                        "(repeatable; default fixed and shuffle)")
    p.add_argument("--no-headline", action="store_true",
                   help="skip the headline cases (svt-s against the baselines)")
    p.add_argument("--engine", action="append", choices=HEADLINE_ENGINES, dest="engines",
                   help="run only this headline engine (repeatable; default all)")
    p.add_argument("--no-baselines", action="store_true",
                   help="skip numba, the process pool, numpy and the headline's RNG floor")
    p.add_argument("--no-pool", action="store_true", help="skip the process-pool baseline")
    p.add_argument("--pool-workers", type=_positive, default=None,
                   help="processes of the pool baseline (default: usable cores)")
    p.add_argument("--no-numpy", action="store_true", help="skip the numpy baseline")
    p.add_argument("--baseline-max-trials", type=_positive, default=None,
                   help="time the CPU baselines on at most this many trials, scaled linearly")
    p.add_argument("--no-mechanisms", action="store_true",
                   help="skip the every-mechanism table")
    p.add_argument("--no-rng-floors", action="store_true",
                   help="skip the RNG floor of every generator")
    p.add_argument("--floor-impl", action="append", choices=workload.IMPLS, dest="floor_impls",
                   help="generator of the RNG-floor table (repeatable; default all)")
    p.add_argument("--floor-max-draws", type=_positive, default=None,
                   help="variates per RNG-floor call at most (default 2^24)")
    p.add_argument("--no-cache-check", action="store_true",
                   help="skip the persistent compilation cache check")
    p.add_argument("--no-memory-check", action="store_true", help="skip the peak-RSS check")
    p.add_argument("--memory-trials", type=_positive, default=None,
                   help="trials of the peak-memory run (default 10^6)")
    p.add_argument("--machine", default=None, help="machine id used in the file name")
    p.add_argument("--update-results", action="store_true",
                   help="regenerate RESULTS.md next to the output directory afterwards")
    p.add_argument("--no-save", action="store_true", help="print only, write no JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


_FLAGS = {"no_headline": "headline", "no_baselines": "baselines", "no_pool": "pool",
          "no_numpy": "numpy", "no_mechanisms": "mechanisms", "no_rng_floors": "rng_floors",
          "no_cache_check": "cache_check", "no_memory_check": "memory_check"}
_VALUES = {"repeats": "repeats", "pool_workers": "pool_workers",
           "baseline_max_trials": "baseline_max_trials", "floor_max_draws": "floor_max_draws",
           "memory_trials": "memory_trials"}


def config_from_args(args: argparse.Namespace, case: str = "default") -> Config:
    """The Config of a throughput case narrowed by the parsed options; raises UsageError on an
    unknown mechanism."""
    import svtjax

    cfg = case_config(case)
    changes: dict = {}
    if args.only:
        unknown = sorted(set(args.only) - set(svtjax.names()))
        if unknown:
            raise UsageError(f"unknown mechanism(s) {unknown}; registered: "
                             f"{', '.join(svtjax.names())}")
        changes["only"] = tuple(dict.fromkeys(args.only))
    if args.sizes:
        for n, _ in args.sizes:
            if n <= cfg.c:
                raise UsageError(f"--size: n must exceed c = {cfg.c} (the threshold sits "
                                 f"between the c-th and (c+1)-th score); got n = {n}")
        changes["sizes"] = tuple(args.sizes)
    if args.machine is not None and not args.machine.strip():
        raise UsageError("--machine must be a non-empty name")
    if args.modes:
        changes["modes"] = tuple(m for m in MODES if m in args.modes)
    if args.engines:
        changes["engines"] = tuple(e for e in HEADLINE_ENGINES if e in args.engines)
    if args.floor_impls:
        changes["floor_impls"] = tuple(i for i in workload.IMPLS if i in args.floor_impls)
    changes.update({field: False for flag, field in _FLAGS.items() if getattr(args, flag)})
    changes.update({field: getattr(args, opt) for opt, field in _VALUES.items()
                    if getattr(args, opt) is not None})
    return dataclasses.replace(cfg, **changes)


def case_name(args: argparse.Namespace) -> str:
    """The case a command line runs: ``--case``, ``quick`` with ``--quick``, else ``default``;
    a throughput case narrowed by options other than ``--repeats`` is recorded as ``custom``
    (RESULTS.md does not show those)."""
    name = args.case or ("quick" if args.quick else "default")
    narrowed = [opt for opt in ("only", "sizes", "modes", "engines", "floor_impls",
                                *_FLAGS, *(v for v in _VALUES if v != "repeats"))
                if getattr(args, opt)]
    if narrowed and name != "quick" and cases.CASES[name]["kind"] == "throughput":
        return "custom"
    return name


def _check_out_dir(out_dir: Path) -> None:
    """Creates the record's directory or says in one line why it cannot be used (the command
    line's own check of a directory option)."""
    from svtjax import cli

    try:
        cli._writable_dir("--out", str(out_dir))
    except cli.UsageError as err:
        raise UsageError(str(err)) from err


def save(record: dict, out_dir: Path) -> Path:
    """Writes the record as JSON (:func:`benchmarks.machine.save`)."""
    return machine.save(record, out_dir)


# -- command line ----------------------------------------------------------------------------

def _run_case(name: str, args: argparse.Namespace, argv: list) -> dict:
    spec = cases.CASES[name] if name != "custom" else cases.CASES[args.case or "default"]
    if spec["kind"] == "throughput":
        cfg = config_from_args(args, args.case or ("quick" if args.quick else "default"))
        return run(cfg, verbose=not args.quiet, argv=argv, case=name)
    started = time.perf_counter()
    record = machine.new_record(name, dict(spec, argv=argv))
    log = (lambda line: None) if args.quiet else (  # noqa: E731
        lambda line: print(line, file=sys.stderr, flush=True))
    if spec["kind"] == "platform":
        rows = kinds.platform_rows(spec, log)
    elif spec["kind"] == "checkouts":
        roots = [str(Path(r).resolve()) for r in [*args.checkout, machine.ROOT]]
        record["config"]["checkouts"] = [{"path": r, "commit": kinds.commit(r)} for r in roots]
        rows = kinds.checkouts_rows(spec, roots, args.only, log)
    else:
        rows = kinds.command_rows(spec, log)
    record["results"] = rows
    record["load_average"]["end"] = machine.load()
    record["wall_s"] = time.perf_counter() - started
    return record


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``svtjax bench``: run a case, print its tables, write the JSON record. Returns an exit
    status. Bad options print one line (``svtjax bench: error: ...``) and return 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser().parse_args(argv)
        if args.render:
            md = render.write_results_md(RESULTS_DIR, RESULTS_DIR.parent / "RESULTS.md")
            print(f"wrote {md}")
            return 0
        if args.plugin:  # svtjax bench takes them out before this parser; a direct call does not
            from svtjax import _plugins

            for entry in args.plugin:
                try:
                    _plugins.load(entry)
                except _plugins.PluginError as err:
                    raise UsageError(str(err)) from err
        if args.machine is not None and not args.machine.strip():
            raise UsageError("--machine must be a non-empty name")
        name = case_name(args)
        if cases.CASES.get(name, {}).get("kind") == "checkouts" and not args.checkout:
            raise UsageError("--case checkouts needs --checkout DIR: the checkout to compare "
                             "this one with (e.g. a git worktree of an older commit)")
        if cases.CASES.get(args.case or "default", {}).get("kind") == "throughput" or args.quick:
            config_from_args(args, args.case or ("quick" if args.quick else "default"))
        if not args.no_save:  # the record's directory is checked before the timings, not after
            _check_out_dir(Path(args.out) if args.out is not None else RESULTS_DIR)
    except UsageError as err:
        print(f"svtjax bench: error: {err}", file=sys.stderr)
        return 2
    record = _run_case(name, args, argv)
    if args.machine is not None:
        record["machine"]["machine_id"] = machine.safe_id(args.machine)
    print(render.tables(record))
    print(f"\nwall {record['wall_s']:.1f} s; load average {record['load_average']}")
    if not args.no_save:
        out_dir = Path(args.out) if args.out is not None else RESULTS_DIR
        print(f"wrote {save(record, out_dir)}")
        if args.update_results:
            md = render.write_results_md(out_dir, out_dir.parent / "RESULTS.md")
            print(f"wrote {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
