"""The ``svtjax`` command line.

Subcommands:
  list       mechanisms (with parameters and defaults), datasets, metrics, sweep configs and
             experiments
  simulate   run mechanisms on a dataset and print a utility table (or JSON)
  sweep      run a grid of datasets x mechanisms x parameters (``svtjax.sweep``): tidy results,
             a table and a plot; resumable; sharded over devices and split over processes
  reproduce  reproduce a paper's tables and figures (the repository's ``experiments/``,
             found as ``svtjax.cli._tools`` describes)
  audit      empirical privacy audits (``svtjax.audit``)
  bench      run the benchmark suite (``benchmarks/harness.py`` of a source checkout)

Each subcommand is a module of this package (``listing``, ``simulate``, ``sweep``,
``reproduce``, ``audit``, ``bench``) with a ``command`` function; ``parser`` holds the parsers,
``errors`` what counts as the user's fault, ``_tools`` where a checkout's ``experiments/`` and
``benchmarks/`` are found.

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

import os
import sys
from typing import Optional, Sequence

from svtjax.cli import audit, bench, listing, reproduce, simulate, sweep
from svtjax.cli._tools import EXPERIMENTS_ENV, EXPERIMENTS_MISSING, find_experiments
from svtjax.cli.errors import (
    INTERRUPTED,
    USER_ERRORS,
    UsageError,
    _one_line,
    _user_error,
    user_input,
)
from svtjax.cli.errors import _writable_dir as _writable_dir  # the checkout's benchmark harness
from svtjax.cli.parser import PLUGIN_HELP, _split_plugins, build_parser, parse_mechanism
from svtjax.cli.simulate import format_table, run_simulation, simulation_config
from svtjax.cli.sweep import resume_command

__all__ = ["main", "build_parser", "parse_mechanism", "simulation_config", "run_simulation",
           "format_table", "resume_command", "find_experiments", "user_input", "UsageError",
           "USER_ERRORS", "INTERRUPTED", "PLUGIN_HELP", "EXPERIMENTS_ENV", "EXPERIMENTS_MISSING"]


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
            return bench.command(argv[1:])
        return audit.command(argv[1:])
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
    except SystemExit as exit_:  # --help
        return exit_.code if isinstance(exit_.code, int) else 0
    if extra and args.command != "reproduce":
        raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see svtjax "
                         f"{args.command} --help)")
    if args.command == "list":
        return listing.command(args)
    if args.command == "simulate":
        return simulate.command(args)
    if args.command == "sweep":
        return sweep.command(args, plugins)
    return reproduce.command(args, extra, plugins)


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
