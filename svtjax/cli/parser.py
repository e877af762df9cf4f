"""The ``svtjax`` command's parsers: the top-level parser and its subcommands (``audit`` and
``bench`` parse their own arguments: :mod:`svtjax.cli.audit`, the checkout's harness),
``--plugin`` taken out of any position, and mechanism specs (``name:key=value,...``)."""

from __future__ import annotations

import argparse
from typing import Any

from svtjax.cli._tools import EXPERIMENTS_ENV
from svtjax.cli.errors import UsageError

DEFAULT_MECHANISMS = (
    "svt-s:monotonic=true",
    "svt-s:allocation=1:1,monotonic=true",
    "lyu-alg1",
    "dpbook",
)
DEFAULT_EPSILONS = (0.1, 0.5, 1.0)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as :class:`UsageError` (one line) instead of usage + exit."""

    def error(self, message):
        raise UsageError(f"{message} (see {self.prog} --help)")


def parse_value(text: str) -> Any:
    """A parameter value given on the command line (``--param KEY=VALUE``, ``-m
    name:KEY=VALUE``): true/false, none/null, a noise (``laplace(2.0)``, ``gaussian(…)``,
    ``exponential(…)``, ``gumbel(…)``: the ``svtjax.noise`` object of that scale), an int, a
    float, else the text itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for family in ("laplace", "gaussian", "exponential", "gumbel"):
        if low.startswith(family + "(") and low.endswith(")"):
            inside = low[len(family) + 1:-1]
            try:
                scale = float(inside)
            except ValueError:
                raise ValueError(f"cannot parse the parameter value {text!r}: {family}(SCALE) "
                                 f"takes a number, e.g. {family}(2.0); got {inside!r}") from None
            from svtjax import noise

            return getattr(noise, family.capitalize())(scale)
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
            params[key.strip()] = parse_value(value.strip())
    return name.strip(), params


def _label(name: str, params: dict[str, Any]) -> str:
    extra = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name}[{extra}]" if extra else name


PLUGIN_HELP = ("import a module or .py file of your own first (repeatable): the mechanisms it "
               "registers (svtjax.mechanisms.register) can then be named like built-in ones")


def _plugin_option(parser: argparse.ArgumentParser) -> None:
    """``--plugin`` in the parser's help. The option itself is taken out of the command line
    before parsing (:func:`_split_plugins`), so it may stand anywhere."""
    parser.add_argument("--plugin", action="append", metavar="MODULE_OR_FILE",
                        help=PLUGIN_HELP)


def build_parser() -> argparse.ArgumentParser:
    """The ``svtjax`` parser, one subparser per subcommand (``audit`` and ``bench`` parse their
    own arguments: here they only appear in ``svtjax --help``)."""
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
    _add_simulate(sub)
    _add_sweep(sub)
    _add_reproduce(sub)
    sub.add_parser("audit", help="empirical privacy audits (options: svtjax audit --help)",
                   add_help=False)
    sub.add_parser("bench", help="run the benchmark suite of a source checkout (options: "
                   "svtjax bench --help)",
                   add_help=False)
    return parser


def _add_simulate(sub) -> None:
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


def _add_sweep(sub) -> None:
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


def _add_reproduce(sub) -> None:
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
