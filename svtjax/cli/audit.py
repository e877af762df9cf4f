"""``svtjax audit NAME --epsilon E [--c C] [--seconds S | --trials N] ...``: the command line of
the empirical privacy audit (the library is ``svtjax.audit``; ``--exact`` runs
``svtjax.exact.audit_report`` instead). This command parses its own arguments."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Optional, Sequence

from svtjax.cli.errors import UsageError
from svtjax.cli.parser import _Parser, parse_value


def command(rest: list[str]) -> int:
    """``svtjax audit``: :func:`main`, once ``svtjax.audit`` is importable."""
    import importlib

    try:
        importlib.import_module("svtjax.audit")
    except ModuleNotFoundError as err:
        if err.name in ("svtjax.audit",):
            raise UsageError("the audit module (svtjax.audit) is not part of this installation "
                             "of svtjax") from err
        raise UsageError(f"svtjax.audit cannot be imported: {err}") from err
    return int(main(rest) or 0)


def build_parser() -> argparse.ArgumentParser:
    from svtjax.audit import DEFAULT_CONFIDENCE, DEFAULT_CUTOFF, DEFAULT_SECONDS

    parser = _Parser(
        prog="svtjax audit",
        description="Empirical privacy audit: a lower confidence bound on a mechanism's ε "
                    "from Monte Carlo trials on candidate neighbouring inputs.")
    parser.add_argument("mechanism", help="registry name (svtjax list)")
    parser.add_argument("--epsilon", type=float, required=True,
                        help="the ε the mechanism is run at (its nominal claim)")
    parser.add_argument("--c", type=int,
                        help=f"cut-off (c, or k for top-k mechanisms; default {DEFAULT_CUTOFF})")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="another mechanism parameter (repeatable), e.g. monotonic=true, "
                             "query_noise=gaussian(2.0)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--seconds", type=float,
                        help=f"time budget, compilation included (default {DEFAULT_SECONDS:g})")
    budget.add_argument("--trials", type=int,
                        help="validation trials per side instead of a time budget")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                        help=f"confidence of the lower bound (default {DEFAULT_CONFIDENCE})")
    parser.add_argument("--delta", type=float,
                        help="δ of the bound (default: the δ of the mechanism's claim)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                        help="import a module or .py file of your own first (repeatable): the "
                             "mechanisms it registers can then be audited by name")
    parser.add_argument("--exact", action="store_true",
                        help="no sampling: the exact loss over answer vectors on documented "
                             "short neighbouring pairs (svtjax.exact.audit)")
    return parser


def _mechanism_from_args(args):
    """The mechanism an audit's arguments describe (raises ValueError/TypeError)."""
    import svtjax
    from svtjax.audit import mechanism_params

    extra = {}
    for item in args.param:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"cannot parse --param {item!r}; write KEY=VALUE")
        key = key.strip()
        # a second value would silently replace the first (or --epsilon / --c)
        if key in extra:
            raise ValueError(f"--param {key} is given more than once; give it once")
        if key == "epsilon":
            raise ValueError("give ε with --epsilon, not --param epsilon=...")
        if key in ("c", "k") and args.c is not None:
            raise ValueError(f"--param {key}={value} conflicts with --c {args.c}; give the "
                             "cut-off once")
        extra[key] = parse_value(value)
    params = mechanism_params(args.mechanism, args.epsilon, args.c, extra)
    return svtjax.get(args.mechanism, **params)


def _run(args):
    """Checks the budget arguments, builds the mechanism and audits it (before compiling
    anything, every user error raises ValueError/TypeError); returns the ``AuditResult``."""
    from svtjax.audit import DEFAULT_SECONDS, MAX_TRIALS, audit
    from svtjax.audit._checks import _check_confidence, _check_delta, _check_seed

    _check_seed(args.seed, "--seed")
    if args.trials is not None and not 1 <= args.trials <= MAX_TRIALS:
        raise ValueError(f"--trials must be an integer from 1 to {MAX_TRIALS}; got "
                         f"{args.trials}")
    seconds = None
    if args.trials is None:
        seconds = DEFAULT_SECONDS if args.seconds is None else args.seconds
        if not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"--seconds must be a finite number of seconds > 0, e.g. 60; got "
                             f"{args.seconds}")
    _check_confidence(args.confidence)
    if args.delta is not None:
        _check_delta(args.delta)
    mech = _mechanism_from_args(args)
    return audit(mech, trials=args.trials, seconds=seconds, confidence=args.confidence,
                 delta=args.delta, seed=args.seed)


def _run_exact(args) -> str:
    """``--exact``: the exact privacy loss on documented short neighbouring pairs
    (``svtjax.exact.audit_report``); the Monte Carlo budget options do not apply."""
    from svtjax.audit._checks import _check_seed

    ignored = [flag for flag, value in (("--seconds", args.seconds), ("--trials", args.trials),
                                        ("--delta", args.delta)) if value is not None]
    if ignored:
        verb = "does" if len(ignored) == 1 else "do"
        raise ValueError(f"{' and '.join(ignored)} {verb} not apply with --exact (no trials are "
                         "run)")
    _check_seed(args.seed, "--seed")
    from svtjax.exact import audit_report

    return audit_report(_mechanism_from_args(args), as_json=args.json)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``svtjax audit``: exit status 0 after an audit (whatever it found), 2 on bad input
    (one line on stderr, before anything compiles)."""
    from svtjax.audit import format_result

    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_:  # --help (0)
        return exit_.code if isinstance(exit_.code, int) else 2
    except UsageError as err:  # a usage error: one line
        print(f"svtjax audit: error: {err}", file=sys.stderr)
        return 2
    try:
        if args.plugin:  # svtjax.cli.main takes them out before this parser; a direct call not
            from svtjax import _plugins

            for entry in args.plugin:
                _plugins.load(entry)
        if args.exact:  # svtjax.exact: every answer vector by quadrature over ρ, no trials
            print(_run_exact(args))
            return 0
        result = _run(args)
    except (ValueError, TypeError) as err:
        print(f"svtjax audit: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result.to_dict()) if args.json else format_result(result))
    return 0
