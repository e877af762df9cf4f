"""``svtjax reproduce``: a paper's tables and figures, from the checkout's ``experiments/``
(found as :mod:`svtjax.cli._tools` describes); ``--verify OUT`` rechecks the claims tables."""

from __future__ import annotations

import os
import sys
from typing import Sequence

from svtjax.cli._tools import (
    EXPERIMENTS_ENV,
    EXPERIMENTS_MISSING,
    find_experiments,
    import_experiments,
)
from svtjax.cli.errors import UsageError, _count, _writable_dir


def _reproduce_in_processes(names, argv_of, jobs: int, folder, plugins) -> int:
    """``reproduce all`` with ``jobs`` experiments at once, each in its own process
    (``python -m svtjax.cli reproduce NAME ...``), started in the experiments' order as
    processes finish. Most of a cold reproduction is XLA compiling, which runs on one core, so
    experiments side by side use the other cores. Each experiment's output is printed, whole,
    when it finishes (with its wall time); its numbers do not depend on what runs beside it
    (every point has its own seed)."""
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
    import_experiments(folder)
    import importlib

    verify = importlib.import_module("experiments.verify")
    try:
        return int(verify.main([args.verify], prog="svtjax reproduce --verify"))
    except SystemExit as exit_:  # its argparse printed one line
        return exit_.code if isinstance(exit_.code, int) else 2


def command(args, extra: list[str], plugins: Sequence[str] = ()) -> int:
    """``svtjax reproduce NAME|all [options] [-- experiment options]``: checks the options,
    finds the experiments and runs them (``all``: ``--jobs`` at a time, each in its own
    process)."""
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
    experiments = import_experiments(folder)
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
    return _reproduce_here(experiments, names, argv_of)


def _reproduce_here(experiments, names, argv_of) -> int:
    """The experiments ``names`` one after another in this process; returns the exit status
    (one experiment: its own; several: 1 if any failed)."""
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
