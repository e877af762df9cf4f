"""The ``svtjax`` command line.

Subcommands:
  list       mechanisms (with parameters and defaults), datasets, metrics, sweep configs and
             experiments
  simulate   run mechanisms on a dataset and print a utility table (or JSON)
  sweep      run a grid of datasets x mechanisms x parameters (``svtjax.sweep``): tidy results,
             a table and a plot; resumable; sharded over devices and split over processes
  reproduce  reproduce a paper's tables and figures (the repository's ``experiments/``, found
             next to an editable install, in the current directory or at
             ``$SVTJAX_EXPERIMENTS``)
  audit      empirical privacy audits (``svtjax.audit``)
  bench      run the benchmark suite (``benchmarks/harness.py`` of a source checkout)

Errors in the user's input (and file-system errors) end the command with exit status 2 and one
line on stderr, checked before anything compiles or any header is printed; Ctrl-C ends it with
exit status 130 and one line (for a sweep: the points saved and the command that resumes). A
failure while computing, after the input was checked, is a bug in svtjax (or in a plugin): it
keeps its traceback and ends with exit status 1. Progress lines go to stderr; stdout holds the
table or the JSON.

Every subcommand takes ``--plugin MODULE_OR_FILE`` (repeatable): the module is imported first,
so mechanisms it registers (``svtjax.mechanisms.register``) can be named like built-in ones.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional, Sequence

DEFAULT_MECHANISMS = (
    "svt-s:monotonic=true",
    "svt-s:allocation=1:1,monotonic=true",
    "lyu-alg1",
    "dpbook",
)
DEFAULT_EPSILONS = (0.1, 0.5, 1.0)
REPORTED = ("f1", "precision", "recall", "ser", "ncr")


class UsageError(Exception):
    """A problem with the command's input: reported in one line, exit status 2."""


USER_ERRORS = (UsageError, OSError)
"""Exceptions that report a problem with the input or the environment (a bad value, a missing
or unwritable file): one line on stderr and exit status 2, never a traceback (with svtjax's own
input errors: :func:`_user_error`). A ``ValueError``, ``TypeError``, ``LookupError`` or
``ArithmeticError`` is the input's fault only when an input check raises it (``with
user_input():``); anywhere else it is a bug in svtjax and keeps its traceback."""

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT, the shell's convention)."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as :class:`UsageError` (one line) instead of usage + exit."""

    def error(self, message):
        raise UsageError(f"{message} (see {self.prog} --help)")


def _count(flag: str, value: Optional[int]) -> None:
    """Checks a count given on the command line (trials, c, devices): 1 <= value < 2**31."""
    from svtjax._validate import INT32_MAX

    if value is not None and not 1 <= value <= INT32_MAX:
        raise UsageError(f"{flag} must be an integer from 1 to {INT32_MAX}; got {value}")


def _seed(value: Optional[int]) -> None:
    """Checks a seed given on the command line: the range ``svtjax.simulate`` accepts."""
    from svtjax.simulate import SEED_RANGE

    if value is not None and not SEED_RANGE[0] <= value < SEED_RANGE[1]:
        raise UsageError(f"--seed must be an integer in [0, 2**64) (each seed its own trials); "
                         f"got {value}")


def _once(flag: str, values: Sequence[Any]) -> None:
    """Refuses a repeated option value (it would compute the same rows twice)."""
    seen = []
    for v in values:
        if v in seen:
            raise UsageError(f"{flag} {v} is given more than once; give each value once")
        seen.append(v)


def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_mechanism(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name"`` or ``"name:key=value,key=value"`` -> (name, params)."""
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    if rest:
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key:
                raise UsageError(f"cannot parse mechanism option {item!r} in {spec!r}; write "
                                 "name:key=value,key=value")
            params[key.strip()] = _parse_value(value.strip())
    return name.strip(), params


def _label(name: str, params: dict[str, Any]) -> str:
    extra = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name}[{extra}]" if extra else name


SIMULATE_METRICS = REPORTED + ("picks", "evaluated")


def simulation_config(mechanisms: Sequence[str], dataset: str, epsilons: Sequence[float],
                      c: int, trials: int, seed: int, shuffle: bool) -> dict[str, Any]:
    """The sweep config ``svtjax simulate`` runs: one ``[[mechanisms]]`` table per spec, ε as a
    grid axis, top-``c`` with Lyu's threshold. The command is a sweep without an output
    directory, so it runs on the same compiled chunk and the same statistics as ``svtjax
    sweep`` and ``svtjax.simulate`` (one driver)."""
    tables = []
    for spec in mechanisms:
        name, params = parse_mechanism(spec)
        for key, flag in (("epsilon", "--epsilon/-e"), ("c", "--c")):
            if key in params:  # one value per row: the row's label must be what was computed
                raise UsageError(f"mechanism spec {spec!r} sets {key}, which svtjax simulate "
                                 f"takes from {flag} for every mechanism (a row is labelled "
                                 f"with it); give it there, or use svtjax sweep for "
                                 "per-mechanism values")
        tables.append({"name": name, "label": _label(name, params), **params})
    return {"sweep": {"name": "simulate", "trials": trials, "seed": seed, "shuffle": shuffle,
                      "datasets": [dataset], "metrics": list(SIMULATE_METRICS),
                      "threshold": "lyu"},
            "grid": {"epsilon": [float(e) for e in epsilons], "c": [int(c)]},
            "mechanisms": tables}


def run_simulation(mechanisms: Sequence[str], dataset: str, epsilons: Sequence[float], c: int,
                   trials: int, seed: int, shuffle: bool) -> list[dict[str, Any]]:
    """Runs each mechanism at each ε; returns one row per (mechanism, ε)."""
    from svtjax import sweep

    config = sweep.load_config(simulation_config(mechanisms, dataset, epsilons, c, trials, seed,
                                                 shuffle))
    result = sweep.run(config, None, progress=False, log=lambda msg: None)
    privacy = {(p.label, dict(p.axes).get("epsilon", "")): str(p.build().privacy())
               for p in sweep.expand(config)}
    rows: dict[tuple, dict[str, Any]] = {}
    for r in result.rows:
        key = (r["label"], r.get("epsilon", ""))
        row = rows.setdefault(key, {
            "mechanism": r["label"], "dataset": dataset, "epsilon": key[1], "c": c,
            "trials": r["trials"], "threshold": r["threshold"], "seconds": r["seconds"],
            "privacy": privacy.get(key, "")})
        row[r["metric"]] = r["mean"]
        row[f"{r['metric']}_se"] = r["se"]
        row[f"{r['metric']}_ci"] = [r["ci_low"], r["ci_high"]]
    return list(rows.values())


def format_table(rows: list[dict[str, Any]]) -> str:
    header = ["mechanism", "eps", "F1", "precision", "SER", "NCR", "picks", "evaluated", "sec"]
    lines = []
    for r in rows:
        eps = r["epsilon"]
        lines.append([r["mechanism"], f"{eps:g}" if isinstance(eps, float) else str(eps),
                      f"{r['f1']:.3f} ± {(r['f1_ci'][1] - r['f1_ci'][0]) / 2:.3f}",
                      f"{r['precision']:.3f}",
                      f"{r['ser']:.3f}", f"{r['ncr']:.3f}", f"{r['picks']:.1f}",
                      f"{100 * r['evaluated']:.1f}%", f"{r['seconds']:.2f}"])
    widths = [max(len(h), *(len(x[i]) for x in lines)) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    out = [fmt(header), fmt(["-" * w for w in widths])]
    out += [fmt(x) for x in lines]
    return "\n".join(out)


def _cmd_list(args) -> int:
    from svtjax import _listing, sweep

    def plain(v):
        return v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)

    folder = find_experiments()
    exps = ({} if folder is None else
            {name: {"path": str(folder / f"{name}.py"), "description": summary}
             for name, summary in _experiment_summaries(folder).items()})
    mechs, data = _listing.mechanisms(), _listing.datasets()
    if args.json:
        print(json.dumps({
            "mechanisms": {n: {k: plain(v) for k, v in m["parameters"].items()}
                           for n, m in mechs.items()},
            "mechanism_details": {n: {"summary": m["summary"], "none_means": m["defaults"]}
                                  for n, m in mechs.items()},
            "datasets": data,
            "metrics": sweep.metric_names(),
            "sweep_configs": {k: str(v) for k, v in sorted(sweep.builtin_configs().items())},
            "experiments": exps,
            "experiments_folder": None if folder is None else str(folder),
            "native_kernels": _listing.native(),
            **({"experiments_note": EXPERIMENTS_MISSING} if folder is None else {})},
            indent=2))
        return 0
    width = max(len(n) for n in mechs) + 2
    pad = " " * (width + 2)
    print(f"mechanisms ({len(mechs)}; svtjax.get(NAME, ...), -m NAME:key=value):")
    for n, m in mechs.items():
        params = ", ".join(f"{k}={v}" for k, v in m["parameters"].items())
        print(f"  {n:<{width}}{m['summary']}\n{pad}parameters: {params}")
        for k, meaning in m["defaults"].items():
            print(f"{pad}{k}=None: {meaning}")
    print(f"datasets ({len(data)}; items = distinct items, the default size of a synthetic one; "
          "'download' = not shipped: svtjax.datasets.fetch(NAME) first):")
    dwidth = max(len(n) for n in data) + 2
    for n, d in data.items():
        items = "" if d["items"] is None else f"{d['items']:,} items"
        where = d["kind"] if d["shipped"] else "real, download"
        print(f"  {n:<{dwidth}}{items:<16} {where:<15} {d['title']}")
    metrics = sweep.metric_names()
    print(f"metrics ({len(metrics)}):\n  " + " ".join(metrics))
    configs = sorted(sweep.builtin_configs())
    print(f"sweep configs ({len(configs)}; svtjax sweep NAME):\n  " + " ".join(configs))
    print(f"compiled kernels: {_listing.native()}")
    if folder is None:
        print(f"experiments (svtjax reproduce NAME):\n  none found: {EXPERIMENTS_MISSING}")
        return 0
    print(f"experiments ({len(exps)}; svtjax reproduce NAME; from {folder}):")
    for name, summary in exps.items():
        print(f"  {name:<{width}}{summary['description']}")
    return 0


def _cmd_simulate(args) -> int:
    from svtjax import sweep

    with user_input():  # a bad value raised here is the input's fault: one line
        epsilons = args.epsilon or list(DEFAULT_EPSILONS)
        mechanisms = args.mechanism or list(DEFAULT_MECHANISMS)
        _count("--trials", args.trials)
        _count("--c", args.c)
        _seed(args.seed)
        _once("--epsilon", epsilons)
        _once("--mechanism", mechanisms)
        # every check (mechanisms, parameters, dataset, what float32 can hold) before the header
        sweep.load_config(simulation_config(mechanisms, args.dataset, epsilons, args.c, args.trials,
                                            args.seed, args.shuffle))
    if not args.json:
        order = "random item order per trial" if args.shuffle else "fixed item order"
        print(f"svtjax simulate: top-{args.c} selection on {args.dataset}, {args.trials} trials "
              f"per row, {order}, threshold = mean of the scores ranked {args.c} and {args.c + 1} "
              "(Lyu'17 Sec. 5); sec includes compilation on a structure's first row", flush=True)
    rows = run_simulation(mechanisms, args.dataset, epsilons, args.c, args.trials, args.seed,
                          args.shuffle)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        from svtjax.accounting import SCOPE

        print(format_table(rows))
        print("F1 is shown with its 95% interval (Student t, as svtjax sweep); 'evaluated' is the "
              f"fraction of the stream read before halting. The privacy column of --json is "
              f"{SCOPE}.")
    return 0


def _cmd_bench(args, rest: list[str]) -> int:
    """Runs ``benchmarks/harness.py`` of a source checkout: the timing tools are not part of the
    package. The checkout's ``benchmarks/`` is looked for in ``$SVTJAX_BENCHMARKS``, next to
    the package's source (an editable install or ``PYTHONPATH``), then in the current
    directory."""
    import importlib
    import pathlib

    import svtjax

    del args

    def is_harness(folder: pathlib.Path) -> bool:
        try:
            return "svtjax-bench/" in (folder / "harness.py").read_text()
        except OSError:
            return False

    named = os.environ.get("SVTJAX_BENCHMARKS")
    if named:
        candidates = [pathlib.Path(named).expanduser().resolve()]
        if not is_harness(candidates[0]):
            raise UsageError(f"SVTJAX_BENCHMARKS={named} is not svtjax's benchmarks/ folder (no "
                             "harness.py there); point it at the benchmarks/ of a checkout")
    else:
        candidates = [pathlib.Path(svtjax.__file__).resolve().parents[1] / "benchmarks",
                      pathlib.Path.cwd().resolve() / "benchmarks"]
    folder = next((c for c in candidates if is_harness(c)), None)
    if folder is None:
        raise UsageError("svtjax bench runs the benchmark harness of a source checkout "
                         "(benchmarks/harness.py), which is not installed with the package: "
                         "clone the svtjax repository and run svtjax bench from the checkout, or "
                         "set SVTJAX_BENCHMARKS to its benchmarks/ folder")
    root = str(folder.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    harness = importlib.import_module("benchmarks.harness")
    if pathlib.Path(harness.__file__).resolve().parent != folder:
        raise UsageError(f"a different 'benchmarks' package is already imported "
                         f"({harness.__file__}); run svtjax bench in a fresh process")
    try:
        return int(harness.main(rest) or 0)
    except SystemExit as exit_:  # its argparse: --help (0)
        return exit_.code if isinstance(exit_.code, int) else 0


def _default_out(name: str) -> str:
    return os.path.join("results", "sweeps", name)


def _init_distributed(args) -> None:
    if not (args.distributed or args.coordinator):
        return
    import jax

    kwargs = {}
    if args.coordinator:
        kwargs["coordinator_address"] = args.coordinator
    if args.num_processes is not None:
        kwargs["num_processes"] = args.num_processes
    if args.process_id is not None:
        kwargs["process_id"] = args.process_id
    try:
        jax.distributed.initialize(**kwargs)
    except Exception as err:  # noqa: BLE001 - report the cluster problem in one line
        raise UsageError(f"jax.distributed.initialize failed: {err}".replace("\n", " ")) from err


def _log(msg: str) -> None:
    """Progress and log lines: stderr, so stdout holds only the table (or the JSON)."""
    print(msg, file=sys.stderr, flush=True)


def resume_command(args, out: str, plugins: Sequence[str] = ()) -> str:
    """The command that resumes an interrupted ``svtjax sweep``: the config, the output
    directory and every option that changes the points' ids (plugins, trials, seed), so that it
    reuses every saved point."""
    words = ["svtjax"]
    for plugin in plugins:
        words += ["--plugin", plugin]
    words += ["sweep", args.config, "--out", out]
    if args.trials is not None:
        words += ["--trials", str(args.trials)]
    if args.seed is not None:
        words += ["--seed", str(args.seed)]
    if args.num_devices is not None:
        words += ["--num-devices", str(args.num_devices)]
    return " ".join(_quote(w) for w in words)


def _cmd_sweep(args, plugins: Sequence[str] = ()) -> int:
    from svtjax import sweep

    with user_input():  # a bad value raised here is the input's fault: one line
        _count("--trials", args.trials)
        _seed(args.seed)
        _count("--num-devices", args.num_devices)
        if not args.plot and (args.x or args.y):
            raise UsageError("--x and --y choose the plot's axes; they have no effect with "
                             "--no-plot")
        config = sweep.load_config(args.config)
        changes = {}
        if args.trials is not None:
            changes["trials"] = args.trials
        if args.seed is not None:
            changes["seed"] = args.seed
        if changes:
            config = sweep.load_config(config.replace(**changes).raw)
        x = y = None
        if args.plot:  # --x / --y naming no column fail here, not after the sweep
            x, y = sweep.plot_axes(config, args.x, args.y)
        if args.out is not None and not args.out.strip():
            raise UsageError("--out is empty; give the output directory (default: "
                             f"{_default_out(config.name)})")
        out = args.out or _default_out(config.name)
        sweep._prepare_out(out)
        if config.dtype == "float64":
            import jax

            jax.config.update("jax_enable_x64", True)
        _init_distributed(args)
        import jax

        available = len(jax.local_devices())
        if args.num_devices is not None and args.num_devices > available:
            raise UsageError(f"--num-devices must be at most the {available} local device(s); got "
                             f"{args.num_devices}")
        if jax.process_index() == 0:  # a live sweep on OUT: refused before the header
            probe = sweep._OutputLock(out)
            probe.acquire()
            probe.release()
    if not args.json and jax.process_index() == 0:
        npts = len(sweep.expand(config))
        _log(f"svtjax sweep {config.name}: {npts} points x {config.trials} trials on "
             f"{len(jax.local_devices())} device(s) x {jax.process_count()} process(es) -> "
             f"{out}")
    try:
        result = sweep.run(config, out, resume=not args.no_resume, progress=args.progress,
                           log=_log, num_devices=args.num_devices)
    except sweep.SweepInterrupted as err:
        again = resume_command(args, out, plugins)
        print(f"svtjax sweep: interrupted; {err.saved} of {err.total} point(s) are saved in "
              f"{os.path.join(out, 'points')}; resume with: {again}", file=sys.stderr)
        return INTERRUPTED
    if jax.process_index() != 0:
        if not args.json:
            print(f"process {jax.process_index()}: computed {result.computed} point(s); "
                  "process 0 writes the results")
        return 0
    files = list(result.files)
    plot_error = None
    if args.plot:
        try:
            from svtjax import plot

            path = os.path.join(out, f"{y}_vs_{x}.png")
            plot.utility_curves(result.rows, path, x=x, y=y, logx=config.plot.get("logx"))
            files.append(path)
            sweep.add_files(out, [path])
        except ImportError as err:
            plot_error = f"no plot: {err} (pip install 'svtjax[plot]')"
        except ValueError as err:  # the results are written; only the plot is missing
            plot_error = f"no plot: {err}"
    if args.json:
        print(json.dumps({"out": out, "files": files, "computed": result.computed,
                          "reused": result.reused, "compiles": result.compiles,
                          "seconds": result.seconds, "rows": result.rows}, indent=2))
    else:
        print(sweep.format_table(result.rows))
        print(f"{result.computed} point(s) computed, {result.reused} reused from {out}/points; "
              f"{result.seconds:.1f} s. Intervals are 95% (Student t).")
        print("wrote " + ", ".join(files))
    if plot_error:
        print(f"svtjax sweep: {plot_error}", file=sys.stderr)
    return 0


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(str(text))


def _writable_dir(flag: str, path: str) -> None:
    """Creates ``path`` (a directory an option names) or explains in one line why not."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path} is an existing file, not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{flag} {path}: cannot create the directory "
                         f"({err.strerror or err})") from err
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: the directory is not writable")


#: Where ``svtjax reproduce`` looks for the repository's ``experiments/`` folder first.
EXPERIMENTS_ENV = "SVTJAX_EXPERIMENTS"
EXPERIMENTS_MISSING = ("the paper reproductions are not installed with the package; they live "
                       "in the experiments/ folder of the svtjax repository: run svtjax from a "
                       f"clone of the repository, or set {EXPERIMENTS_ENV}=/path/to/experiments")


def find_experiments() -> Optional[os.PathLike]:
    """The repository's ``experiments/`` folder (a ``pathlib.Path``), or None when it cannot
    be found.

    Looked for, in order: ``$SVTJAX_EXPERIMENTS`` (which must then be such a folder), the folder
    beside the package source (a clone or an editable install: ``Path(svtjax.__file__).parent
    .parent / "experiments"``), and ``./experiments``. A folder qualifies when it holds
    ``__init__.py``.

    Raises:
      UsageError: ``$SVTJAX_EXPERIMENTS`` is set but is not an experiments folder.
    """
    import pathlib

    import svtjax

    env = os.environ.get(EXPERIMENTS_ENV)
    if env:
        folder = pathlib.Path(env).expanduser().resolve()
        if not (folder / "__init__.py").is_file():
            raise UsageError(f"{EXPERIMENTS_ENV}={env} is not the repository's experiments/ "
                             "folder (it has no __init__.py); point it there or unset it")
        return folder
    for folder in (pathlib.Path(svtjax.__file__).resolve().parent.parent / "experiments",
                   pathlib.Path.cwd() / "experiments"):
        if (folder / "__init__.py").is_file():
            return folder.resolve()
    return None


def _experiment_summaries(folder) -> dict[str, str]:
    """name -> first docstring line of each experiment module in ``folder`` (read with ``ast``,
    nothing imported), in the package's run order."""
    import ast

    from svtjax import _listing

    package = _import_experiments(folder)
    out = {}
    for name in package.names():
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        out[name] = _listing.summary(ast.get_docstring(tree))
    return out


def _import_experiments(folder):
    """The ``experiments`` package at ``folder``, imported under the name ``experiments``
    (reused when that name already refers to this folder)."""
    import importlib.util
    import pathlib

    loaded = sys.modules.get("experiments")
    if loaded is not None:
        paths = [pathlib.Path(p).resolve() for p in getattr(loaded, "__path__", [])]
        if pathlib.Path(folder).resolve() in paths:
            return loaded
        raise UsageError(f"another module named 'experiments' ({paths or loaded!r}) is already "
                         f"imported in this process; cannot load {folder}")
    spec = importlib.util.spec_from_file_location(
        "experiments", pathlib.Path(folder) / "__init__.py",
        submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["experiments"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["experiments"]
        raise
    return module


def _reproduce_in_processes(names, argv_of, jobs: int, folder, plugins) -> int:
    """``reproduce all`` with ``jobs`` experiments at once, each in its own process
    (``python -m svtjax.cli reproduce NAME ...``), started in the experiments' order as
    processes finish. Most of a cold reproduction is XLA compiling, which runs on one core, so
    on a 2-core CPU two experiments at a time take about half the time of one after another.
    Each experiment's output is printed, whole, when it finishes (with its wall time); its
    numbers do not depend on what runs beside it (every point has its own seed)."""
    import subprocess
    import tempfile
    import time

    env = dict(os.environ, **{EXPERIMENTS_ENV: str(folder)})
    head = [sys.executable, "-m", "svtjax.cli"]
    for plugin in plugins:
        head += ["--plugin", plugin]
    print(f"== svtjax reproduce all: {len(names)} experiments, {jobs} at a time, each in its "
          "own process; each one's output follows when it finishes", flush=True)
    pending, running, failed = list(names), {}, []
    try:
        while pending or running:
            while pending and len(running) < jobs:
                name = pending.pop(0)
                log = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
                shown = " ".join([name] + argv_of(name))
                proc = subprocess.Popen(head + ["reproduce", name] + argv_of(name), stdout=log,
                                        stderr=subprocess.STDOUT, env=env)
                running[name] = (proc, log, time.perf_counter(), shown)
            time.sleep(0.2)
            for name, (proc, log, start, shown) in list(running.items()):
                code = proc.poll()
                if code is None:
                    continue
                del running[name]
                log.seek(0)
                print(f"== svtjax reproduce {shown}: exit {code} after "
                      f"{time.perf_counter() - start:.0f} s", flush=True)
                sys.stdout.write(log.read())
                sys.stdout.flush()
                log.close()
                if code:
                    failed.append((name, code))
    except KeyboardInterrupt:
        for proc, log, _, _ in running.values():
            proc.terminate()
            proc.wait()
            log.close()
        raise
    if failed:
        print(f"svtjax reproduce: error: failed: {', '.join(n for n, _ in failed)}",
              file=sys.stderr)
        return 1
    return 0


def _verify(args, extra: list[str]) -> int:
    """``svtjax reproduce --verify OUT``: the repository's ``experiments.verify``."""
    if args.name is not None or extra or args.quick or args.paper or args.trials is not None \
            or args.out is not None or args.jobs is not None:
        raise UsageError("--verify OUT takes no experiment name or other option: it only reads "
                         "the CSVs under OUT")
    folder = find_experiments()
    if folder is None:
        raise UsageError(EXPERIMENTS_MISSING)
    _import_experiments(folder)
    import importlib

    verify = importlib.import_module("experiments.verify")
    try:
        return int(verify.main([args.verify], prog="svtjax reproduce --verify"))
    except SystemExit as exit_:  # its argparse printed one line
        return exit_.code if isinstance(exit_.code, int) else 2


def _cmd_reproduce(args, extra: list[str], plugins: Sequence[str] = ()) -> int:
    if args.verify is not None:
        return _verify(args, extra)
    if args.name is None:
        raise UsageError("give an experiment name (or all), or --verify OUT (see svtjax "
                         "reproduce --help)")
    _count("--trials", args.trials)
    if args.out is not None:
        _writable_dir("--out", args.out)
    folder = find_experiments()
    if folder is None:
        raise UsageError(EXPERIMENTS_MISSING)
    experiments = _import_experiments(folder)
    known = experiments.names()
    if args.name != "all" and args.name not in known:
        from svtjax._validate import suggest

        raise UsageError(f"unknown experiment {args.name!r}{suggest(args.name, known)}; "
                         f"known experiments: {', '.join(known)} (or all)")
    names = known if args.name == "all" else [args.name]
    _count("--jobs", args.jobs)
    if args.jobs is not None and args.name != "all":
        raise UsageError("--jobs applies to reproduce all (one experiment runs in one process)")

    def argv_of(name):
        argv = []
        if args.quick:
            argv.append("--quick")
        if args.paper:
            argv.append("--paper")
        if args.trials is not None:
            argv += ["--trials", str(args.trials)]
        if args.out is not None:
            argv += ["--out", os.path.join(args.out, name) if args.name == "all" else args.out]
        return argv + extra

    jobs = min(args.jobs or os.cpu_count() or 1, len(names))
    if jobs > 1:
        return _reproduce_in_processes(names, argv_of, jobs, folder, plugins)
    failed = []
    for name in names:
        argv = argv_of(name)
        try:
            module = experiments.load(name)
        except ImportError as err:
            raise UsageError(f"experiment {name!r} cannot be imported: {err}") from err
        if len(names) > 1:
            print(f"== svtjax reproduce {name} {' '.join(argv)}", flush=True)
        try:
            code = module.main(argv)
        except SystemExit as exit_:  # argparse inside the experiment (it printed one line)
            code = exit_.code if isinstance(exit_.code, int) else 2
        if code:
            failed.append((name, code))
    if len(names) == 1:
        return failed[0][1] if failed else 0
    if failed:
        print(f"svtjax reproduce: error: failed: {', '.join(n for n, _ in failed)}",
              file=sys.stderr)
        return 1
    return 0


def _cmd_audit(rest: list[str]) -> int:
    import importlib

    try:
        audit = importlib.import_module("svtjax.audit")
    except ModuleNotFoundError as err:
        if err.name in ("svtjax.audit",):
            raise UsageError("the audit module (svtjax.audit) is not part of this installation "
                             "of svtjax") from err
        raise UsageError(f"svtjax.audit cannot be imported: {err}") from err
    main = getattr(audit, "main", None)
    if main is None:
        raise UsageError("svtjax.audit has no main(argv) entry point")
    return int(main(rest) or 0)


PLUGIN_HELP = ("import a module or .py file of your own first (repeatable): the mechanisms it "
               "registers (svtjax.mechanisms.register) can then be named like built-in ones")


def _plugin_option(parser: argparse.ArgumentParser) -> None:
    """``--plugin`` in the parser's help. The option itself is taken out of the command line
    before parsing (:func:`_split_plugins`), so it may stand anywhere."""
    parser.add_argument("--plugin", action="append", metavar="MODULE_OR_FILE",
                        help=PLUGIN_HELP)


def build_parser() -> argparse.ArgumentParser:
    import svtjax

    parser = _Parser(
        prog="svtjax", description="Monte Carlo simulation of the sparse vector technique.",
        epilog="Compiled programs are kept in a persistent XLA cache, $SVTJAX_CACHE_DIR or "
               "$XDG_CACHE_HOME/svtjax/xla (~/.cache/svtjax/xla), so that a second run starts "
               "without compiling; SVTJAX_NO_CACHE=1 turns the cache off.")
    parser.add_argument("--version", action="version", version=f"svtjax {svtjax.__version__}")
    _plugin_option(parser)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list mechanisms and datasets")
    p.add_argument("--json", action="store_true", help="print JSON")
    _plugin_option(p)

    p = sub.add_parser("simulate", help="run mechanisms on a dataset and print a utility table",
                       description="Runs each mechanism at each ε for top-c selection and prints "
                                   "F1, precision, SER, NCR with 95% intervals. Mechanisms are "
                                   "given as name or name:key=value,key=value.")
    p.add_argument("--mechanism", "-m", action="append",
                   help=f"mechanism spec (repeatable; default: {' '.join(DEFAULT_MECHANISMS)})")
    p.add_argument("--dataset", "-d", default="zipf", help="dataset name (default: zipf)")
    p.add_argument("--epsilon", "-e", type=float, action="append",
                   help="total privacy budget (repeatable; default: 0.1 0.5 1.0)")
    p.add_argument("--c", type=int, default=50, help="number of items to select (default 50)")
    p.add_argument("--trials", "-n", type=int, default=1000, help="trials per row (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                   help="fresh random item order per trial (default: on, as in Lyu'17 Sec. 5)")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    _plugin_option(p)

    p = sub.add_parser(
        "sweep", help="run a grid of datasets x mechanisms x parameters (svtjax.sweep)",
        description="Runs every point of a sweep config (a TOML file or a built-in name; "
                    "svtjax list shows them) and writes results.csv (one row per point x "
                    "metric: mean, std, se, 95% interval, trials, seconds), results.parquet "
                    "(with pyarrow), results.json (config and versions) and a plot. Finished "
                    "points are kept in OUT/points: rerunning resumes. Multi-host: one process "
                    "per host with --distributed (SLURM is detected) or --coordinator.")
    p.add_argument("config", nargs="?", default="default",
                   help="TOML file or built-in config name (default: default)")
    p.add_argument("--out", "-o", help="output directory (default: results/sweeps/NAME)")
    p.add_argument("--trials", "-n", type=int, help="override the config's trials per point")
    p.add_argument("--seed", type=int, help="override the config's sweep seed")
    p.add_argument("--no-resume", action="store_true",
                   help="recompute every point even if OUT/points has it")
    p.add_argument("--plot", action=argparse.BooleanOptionalAction, default=True,
                   help="draw the utility curves (default: on)")
    p.add_argument("--x", help="plot: x-axis parameter (default: config's [plot] x, or epsilon)")
    p.add_argument("--y", help="plot: metric (default: config's [plot] y, or the first metric)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal; else log lines)")
    p.add_argument("--num-devices", type=int,
                   help="shard trials over this many local devices (default: all)")
    p.add_argument("--distributed", action="store_true",
                   help="call jax.distributed.initialize() (cluster settings auto-detected, "
                        "e.g. under SLURM) and split the points over the processes")
    p.add_argument("--coordinator", help="host:port of process 0 (implies --distributed)")
    p.add_argument("--num-processes", type=int, help="with --coordinator: number of processes")
    p.add_argument("--process-id", type=int, help="with --coordinator: this process's index")
    p.add_argument("--json", action="store_true", help="print a JSON summary with the rows")
    _plugin_option(p)

    p = sub.add_parser(
        "reproduce", help="reproduce a paper's tables and figures (NAME or all)",
        description="Runs an experiment of the repository's experiments/ folder (svtjax list "
                    "shows them). The folder is not installed with the package: it is found "
                    f"at ${EXPERIMENTS_ENV}, beside the package source (a clone or an "
                    "editable install) or in the current directory. Other options are passed "
                    "to the experiment (see svtjax reproduce NAME -- --help).")
    p.add_argument("name", nargs="?", help="experiment name, or all")
    p.add_argument("--verify", metavar="OUT", help="recompute every verdict of the claims "
                   "tables under OUT from the CSVs beside them (nothing is rerun); exit 1 naming "
                   "each claim whose verdict the numbers do not give")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a small grid that runs in seconds")
    mode.add_argument("--paper", action="store_true", help="the paper's full grid")
    p.add_argument("--trials", type=int, help="trials (runs) per cell (>= 1)")
    p.add_argument("--out", help="output directory (with all: one subdirectory per experiment)")
    _plugin_option(p)
    p.add_argument("--jobs", type=int, help="with all: experiments run at once, each in its own "
                   "process (default: the number of CPUs; 1 runs them one after another in "
                   "this process)")

    sub.add_parser("audit", help="empirical privacy audits (options: svtjax audit --help)",
                   add_help=False)
    sub.add_parser("bench", help="run the benchmark suite of a source checkout (options: "
                   "svtjax bench --help)",
                   add_help=False)
    return parser


def _split_plugins(argv: list[str]) -> tuple[list[str], list[str]]:
    """Removes every ``--plugin MODULE_OR_FILE`` (any subcommand, any position) from argv."""
    rest, plugins = [], []
    it = iter(argv)
    for arg in it:
        if arg == "--plugin":
            value = next(it, None)
            if value is None or value.startswith("-"):
                raise UsageError("--plugin needs a module name or a .py file (a plugin that "
                                 "registers mechanisms)")
            plugins.append(value)
        elif arg.startswith("--plugin="):
            plugins.append(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    return rest, plugins


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror and err.filename:
        return f"{err.filename}: {err.strerror}"
    return " ".join(str(err).split()) or type(err).__name__


def _user_error(err: BaseException) -> bool:
    """Whether ``err`` reports a problem with the input or the environment (one line, exit
    status 2): :data:`USER_ERRORS`, or svtjax's own input errors (a sweep config, a plugin, a
    dataset that is not available or not verified), looked up only where their module is
    loaded (an error of a module that was never imported cannot have been raised)."""
    if isinstance(err, USER_ERRORS):
        return True
    for module, name in (("svtjax.sweep", "SweepConfigError"), ("svtjax._plugins", "PluginError"),
                         ("svtjax.datasets._types", "DatasetNotAvailableError"),
                         ("svtjax.datasets._types", "DatasetVerificationError")):
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(err, cls):
            return True
    return False


class user_input:  # noqa: N801 - used as ``with user_input():``
    """The input-checking phase of a command: a ``ValueError``, ``TypeError``, ``LookupError``
    or ``ArithmeticError`` raised inside is a problem with the user's input, re-raised as
    :class:`UsageError` (one line, exit status 2). The same exceptions raised outside (while
    computing) are bugs in svtjax and keep their traceback::

        with user_input():
            config = sweep.load_config(args.config)   # a bad value: one line, exit 2
        result = sweep.run(config, out)               # a ValueError here: a traceback
    """

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        if (isinstance(err, (ValueError, TypeError, LookupError, ArithmeticError))
                and not _user_error(err)):
            raise UsageError(_one_line(err)) from err
        return False


_COMMANDS = ("bench", "audit", "list", "simulate", "sweep", "reproduce")


def _command_name(argv: Sequence[str]) -> str:
    """``svtjax SUBCOMMAND`` as the error and interrupt lines name it (``svtjax`` before the
    subcommand is known)."""
    try:
        rest, _ = _split_plugins(list(argv))
    except UsageError:
        rest = list(argv)
    return f"svtjax {rest[0]}" if rest and rest[0] in _COMMANDS else "svtjax"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs one subcommand; returns the exit status: 0; 1 for a failed experiment; 2 for a
    problem with the input or the file system (:func:`_user_error`), reported in one line on
    stderr; 130 after Ctrl-C, with one line on stderr. Any other exception is a bug in svtjax:
    it propagates with its traceback (the ``svtjax`` command then exits with status 1).

    Under the ``svtjax`` command (``svtjax._interrupt.console``) an interrupt is never lost:
    once one arrived, the status is 130 whatever the command returned or raised."""
    from svtjax import _interrupt

    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_name(argv)
    notes: list[str] = []
    try:
        code = _dispatch(argv, notes)
    except KeyboardInterrupt:
        _interrupt.report(f"{command}: interrupted")
        return INTERRUPTED
    except Exception as err:
        if _interrupt.requested():  # whatever failed, it failed because of the interrupt
            _interrupt.report(f"{command}: interrupted")
            return INTERRUPTED
        if not _user_error(err):
            raise
        print(f"{command}: error: {_one_line(err)}", file=sys.stderr)
        return 2
    if code == INTERRUPTED:  # the command reported the interrupt itself (a sweep)
        _interrupt.report(None)
    elif _interrupt.requested():  # an interrupt whose exception something swallowed
        _interrupt.report(f"{command}: interrupted")
        return INTERRUPTED
    elif code == 0:
        for note in notes:
            print(f"svtjax: {note}", file=sys.stderr)
    return code


def _dispatch(argv: list[str], notes: list[str]) -> int:
    """:func:`main`'s body: runs the subcommand; adds to ``notes`` what is worth saying once
    the command has succeeded (:func:`_start`)."""
    argv, plugins = _split_plugins(argv)
    notes.extend(_start(plugins))
    if argv and argv[0] in ("bench", "audit"):
        if argv[0] == "bench":
            return _cmd_bench(None, argv[1:])
        return _cmd_audit(argv[1:])
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
    except SystemExit as exit_:  # --help
        return exit_.code if isinstance(exit_.code, int) else 0
    if extra and args.command != "reproduce":
        raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see svtjax "
                         f"{args.command} --help)")
    if args.command == "list":
        return _cmd_list(args)
    if args.command == "simulate":
        return _cmd_simulate(args)
    if args.command == "sweep":
        return _cmd_sweep(args, plugins)
    return _cmd_reproduce(args, extra, plugins)


def _start(plugins: list[str]) -> list[str]:
    """What every command does first: the allocator tuning, the compilation cache and the
    plugins (a plugin that cannot be loaded is a user error). Returns notes for the end of a
    successful command: a compilation cache that cannot be used only costs compile time, so it
    is said once the command has done its work, never as a second line of an error."""
    from svtjax import tune_allocator

    notes = []
    tune_allocator()  # a command owns its process: large buffers stay in the heap (_malloc)
    if os.environ.get("SVTJAX_NO_CACHE") != "1":
        from svtjax import enable_compilation_cache

        try:
            enable_compilation_cache()
        except OSError as err:
            notes.append(f"compilation cache disabled ({_one_line(err)}): compiled code is not "
                         "kept between runs; set SVTJAX_CACHE_DIR to a writable directory, or "
                         "SVTJAX_NO_CACHE=1 to silence this")
    if plugins:
        from svtjax import _plugins

        for entry in plugins:
            try:
                _plugins.load(entry)
            except _plugins.PluginError as err:
                raise UsageError(str(err)) from err
    return notes


if __name__ == "__main__":  # pragma: no cover - python -m svtjax.cli: as the svtjax command
    from svtjax._interrupt import console

    console(main)
