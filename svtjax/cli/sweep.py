"""``svtjax sweep``: a grid of datasets x mechanisms x parameters (``svtjax.sweep``): tidy
results, a table and a plot; resumable; sharded over devices and split over processes."""

from __future__ import annotations

import json
import os
import sys
from typing import Optional, Sequence

from svtjax.cli.errors import INTERRUPTED, UsageError, _count, _seed, user_input


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


def command(args, plugins: Sequence[str] = ()) -> int:
    """``svtjax sweep``: checks everything, runs the sweep, plots it and prints the table (or
    the JSON summary); after Ctrl-C, says what is saved and the command that resumes."""
    from svtjax import sweep

    config, out, x, y = _checked(args)
    import jax

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
    plot_error = _plot(result, config, out, x, y, files) if args.plot else None
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


def _checked(args):
    """The sweep's input checks, before any header: (config, output directory, plot x, plot
    y). A bad value raised here is the input's fault: one line."""
    from svtjax import sweep

    with user_input():
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
    return config, out, x, y


def _plot(result, config, out: str, x: str, y: str, files: list[str]) -> Optional[str]:
    """Draws the utility curves into ``out`` (added to ``files``); returns why there is no
    plot, or None. The results are written either way."""
    from svtjax import sweep

    try:
        from svtjax import plot

        path = os.path.join(out, f"{y}_vs_{x}.png")
        plot.utility_curves(result.rows, path, x=x, y=y, logx=config.plot.get("logx"))
        files.append(path)
        sweep.add_files(out, [path])
    except ImportError as err:
        return f"no plot: {err} (pip install 'svtjax[plot]')"
    except ValueError as err:  # the results are written; only the plot is missing
        return f"no plot: {err}"
    return None


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(str(text))
