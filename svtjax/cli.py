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
  bench      run the benchmark suite (``svtjax.bench``)

Errors in the user's input end the command with exit status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
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


def _metric_sums(c, scores, out):
    """Per-trial metrics and their squares (summed over trials by ``simulate``)."""
    import jax.numpy as jnp

    import svtjax
    from svtjax import metrics

    picks = svtjax.selected(out, c)
    every = metrics.evaluate(picks, scores, c)
    values = {m: every[m] for m in REPORTED}
    values["picks"] = jnp.sum(picks >= 0, axis=-1).astype(scores.dtype)
    values["evaluated"] = jnp.mean(out.answers >= 0, axis=-1).astype(scores.dtype)
    return {k: (v, v * v) for k, v in values.items()}


def _reducer(scores, c: int):
    import jax
    import jax.numpy as jnp

    # c fixes the shape of the picks, so it is bound statically (one function per c, cached);
    # the scores are a traced argument.
    return jax.tree_util.Partial(_metric_sums_for(int(c)), jnp.asarray(scores))


@functools.lru_cache(maxsize=None)
def _metric_sums_for(c: int):
    return functools.partial(_metric_sums, c)


def run_simulation(mechanisms: Sequence[str], dataset: str, epsilons: Sequence[float], c: int,
                   trials: int, seed: int, shuffle: bool) -> list[dict[str, Any]]:
    """Runs each mechanism at each ε; returns one row per (mechanism, ε)."""
    import jax

    import svtjax
    from svtjax import datasets

    data = datasets.load(dataset)
    threshold = datasets.lyu_threshold(data.scores, c)
    reduce = _reducer(data.scores, c)
    rows = []
    for spec in mechanisms:
        name, params = parse_mechanism(spec)
        for eps in epsilons:
            kwargs = {"epsilon": eps, **params}
            if name in svtjax.names() and "c" in svtjax.mechanisms.parameters(name):
                kwargs.setdefault("c", c)
            mech = svtjax.get(name, **kwargs)
            start = time.perf_counter()
            sums = jax.block_until_ready(svtjax.simulate(
                mech, data.scores, threshold, trials=trials, seed=seed, shuffle=shuffle,
                reduce=reduce))
            seconds = time.perf_counter() - start
            row = {"mechanism": _label(name, params), "dataset": dataset, "epsilon": eps,
                   "c": c, "trials": trials, "threshold": threshold, "seconds": seconds,
                   "privacy": str(mech.privacy())}
            for metric, (s1, s2) in sums.items():
                mean = float(s1) / trials
                var = max(float(s2) / trials - mean * mean, 0.0) * trials / max(trials - 1, 1)
                row[metric] = mean
                row[f"{metric}_se"] = math.sqrt(var / trials)
            rows.append(row)
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    header = ["mechanism", "eps", "F1", "precision", "SER", "NCR", "picks", "evaluated", "sec"]
    lines = []
    for r in rows:
        lines.append([r["mechanism"], f"{r['epsilon']:g}",
                      f"{r['f1']:.3f} ± {1.96 * r['f1_se']:.3f}", f"{r['precision']:.3f}",
                      f"{r['ser']:.3f}", f"{r['ncr']:.3f}", f"{r['picks']:.1f}",
                      f"{100 * r['evaluated']:.1f}%", f"{r['seconds']:.2f}"])
    widths = [max(len(h), *(len(x[i]) for x in lines)) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    out = [fmt(header), fmt(["-" * w for w in widths])]
    out += [fmt(x) for x in lines]
    return "\n".join(out)


def _cmd_list(args) -> int:
    import svtjax
    from svtjax import datasets, sweep

    def plain(v):
        return v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)

    def doc(obj):
        return ((obj.__doc__ or "").strip().splitlines() or [""])[0]

    folder = find_experiments()
    exps = ({} if folder is None else
            {name: {"path": str(folder / f"{name}.py"), "description": summary}
             for name, summary in _experiment_summaries(folder).items()})
    if args.json:
        print(json.dumps({
            "mechanisms": {n: {k: plain(v) for k, v in svtjax.mechanisms.parameters(n).items()}
                           for n in svtjax.names()},
            "datasets": datasets.names(),
            "metrics": sweep.metric_names(),
            "sweep_configs": {k: str(v) for k, v in sorted(sweep.builtin_configs().items())},
            "experiments": exps,
            "experiments_folder": None if folder is None else str(folder),
            **({"experiments_note": EXPERIMENTS_MISSING} if folder is None else {})},
            indent=2))
        return 0
    print("mechanisms:")
    for n in svtjax.names():
        params = ", ".join(f"{k}={v}" for k, v in svtjax.mechanisms.parameters(n).items())
        print(f"  {n:<18} {doc(svtjax.mechanisms.registry()[n])}\n  {'':<18} parameters: "
              f"{params}")
    print("datasets:\n  " + " ".join(datasets.names()))
    print("metrics:\n  " + " ".join(sweep.metric_names()))
    print("sweep configs (svtjax sweep NAME):\n  " + " ".join(sorted(sweep.builtin_configs())))
    if folder is None:
        print(f"experiments (svtjax reproduce NAME):\n  none found: {EXPERIMENTS_MISSING}")
        return 0
    print(f"experiments (svtjax reproduce NAME; from {folder}):")
    for name, summary in exps.items():
        print(f"  {name:<18} {summary['description']}")
    return 0


def _cmd_simulate(args) -> int:
    epsilons = args.epsilon or list(DEFAULT_EPSILONS)
    mechanisms = args.mechanism or list(DEFAULT_MECHANISMS)
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
        print(format_table(rows))
        print("F1 is shown with a 95% interval (±1.96 standard errors); 'evaluated' is the "
              "fraction of the stream read before halting.")
    return 0


def _cmd_bench(args, rest: list[str]) -> int:
    from svtjax import bench

    return int(bench.main(rest) or 0)


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


def _cmd_sweep(args) -> int:
    from svtjax import sweep

    config = sweep.load_config(args.config)
    changes = {}
    if args.trials is not None:
        if args.trials < 1:
            raise UsageError(f"--trials must be >= 1; got {args.trials}")
        changes["trials"] = args.trials
    if args.seed is not None:
        changes["seed"] = args.seed
    if changes:
        config = sweep.load_config(config.replace(**changes).raw)
    if config.dtype == "float64":
        import jax

        jax.config.update("jax_enable_x64", True)
    _init_distributed(args)
    import jax

    out = args.out or _default_out(config.name)
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if args.json else \
        (lambda msg: print(msg, flush=True))
    if not args.json and jax.process_index() == 0:
        npts = len(sweep.expand(config))
        print(f"svtjax sweep {config.name}: {npts} points x {config.trials} trials on "
              f"{len(jax.local_devices())} device(s) x {jax.process_count()} process(es) -> "
              f"{out}", flush=True)
    result = sweep.run(config, out, resume=not args.no_resume, progress=args.progress, log=log,
                       num_devices=args.num_devices)
    if jax.process_index() != 0:
        if not args.json:
            print(f"process {jax.process_index()}: computed {result.computed} point(s); "
                  "process 0 writes the results")
        return 0
    files = list(result.files)
    plot_error = None
    if args.plot:
        columns = sweep.param_columns(sweep.expand(config))
        x = args.x or config.plot.get("x") or ("epsilon" if "epsilon" in columns else columns[0])
        y = args.y or config.plot.get("y", config.metrics[0])
        try:
            from svtjax import plot

            path = os.path.join(out, f"{y}_vs_{x}.png")
            plot.utility_curves(result.rows, path, x=x, y=y, title=f"{config.name}: {y} vs {x}")
            files.append(path)
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

    package = _import_experiments(folder)
    out = {}
    for name in package.names():
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        out[name] = ((ast.get_docstring(tree) or "").strip().splitlines() or [""])[0]
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


def _cmd_reproduce(args, extra: list[str]) -> int:
    if args.trials is not None and args.trials < 1:
        raise UsageError(f"--trials must be at least 1; got {args.trials}")
    folder = find_experiments()
    if folder is None:
        raise UsageError(EXPERIMENTS_MISSING)
    experiments = _import_experiments(folder)
    known = experiments.names()
    if args.name != "all" and args.name not in known:
        raise UsageError(f"unknown experiment {args.name!r}; known experiments: "
                         f"{', '.join(known)} (or all)")
    names = known if args.name == "all" else [args.name]
    failed = []
    for name in names:
        argv = []
        if args.quick:
            argv.append("--quick")
        if args.paper:
            argv.append("--paper")
        if args.trials is not None:
            argv += ["--trials", str(args.trials)]
        if args.out is not None:
            argv += ["--out", os.path.join(args.out, name) if args.name == "all" else args.out]
        argv += extra
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="svtjax", description="Monte Carlo simulation of the sparse vector technique.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list mechanisms and datasets")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("simulate", help="run mechanisms on a dataset and print a utility table",
                       description="Runs each mechanism at each ε for top-c selection and prints "
                                   "F1, precision, SER, NCR with 95%% intervals. Mechanisms are "
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

    p = sub.add_parser(
        "sweep", help="run a grid of datasets x mechanisms x parameters (svtjax.sweep)",
        description="Runs every point of a sweep config (a TOML file or a built-in name; "
                    "svtjax list shows them) and writes results.csv (one row per point x "
                    "metric: mean, std, se, 95%% interval, trials, seconds), results.parquet "
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

    p = sub.add_parser(
        "reproduce", help="reproduce a paper's tables and figures (NAME or all)",
        description="Runs an experiment of the repository's experiments/ folder (svtjax list "
                    "shows them). The folder is not installed with the package: it is found "
                    f"at ${EXPERIMENTS_ENV}, beside the package source (a clone or an "
                    "editable install) or in the current directory. Other options are passed "
                    "to the experiment (see svtjax reproduce NAME -- --help).")
    p.add_argument("name", help="experiment name, or all")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a small grid that runs in seconds")
    mode.add_argument("--paper", action="store_true", help="the paper's full grid")
    p.add_argument("--trials", type=int, help="trials (runs) per cell (>= 1)")
    p.add_argument("--out", help="output directory (with all: one subdirectory per experiment)")

    sub.add_parser("audit", help="empirical privacy audits (options: svtjax audit --help)",
                   add_help=False)
    sub.add_parser("bench", help="run the benchmark suite (options: svtjax bench --help)",
                   add_help=False)
    return parser


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if os.environ.get("SVTJAX_NO_CACHE") != "1":
        from svtjax import enable_compilation_cache

        try:
            enable_compilation_cache()
        except OSError as err:  # an unwritable cache only costs compile time
            print(f"svtjax: compilation cache disabled ({err})", file=sys.stderr)
    parser = build_parser()
    if argv and argv[0] in ("bench", "audit"):
        try:
            if argv[0] == "bench":
                return _cmd_bench(None, argv[1:])
            return _cmd_audit(argv[1:])
        except (UsageError, ValueError, TypeError) as err:
            print(f"svtjax {argv[0]}: error: {_one_line(err)}", file=sys.stderr)
            return 2
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "reproduce":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "simulate":
            return _cmd_simulate(args)
        if args.command == "sweep":
            return _cmd_sweep(args)
        if args.command == "reproduce":
            return _cmd_reproduce(args, extra)
    except (UsageError, ValueError, TypeError, LookupError) as err:
        print(f"svtjax {args.command}: error: {_one_line(err)}", file=sys.stderr)
        return 2
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
