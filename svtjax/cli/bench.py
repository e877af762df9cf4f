"""``svtjax bench``: the benchmark harness of a source checkout (``benchmarks/harness.py``,
found as :mod:`svtjax.cli._tools` describes), which parses its own arguments."""

from __future__ import annotations

from svtjax.cli import _tools


def command(rest: list[str]) -> int:
    """Runs the checkout's harness with ``rest``; returns its exit status. The timing tools
    are not part of the package."""
    harness = _tools.import_harness(_tools.find_benchmarks())
    try:
        return int(harness.main(rest) or 0)
    except SystemExit as exit_:  # its argparse: --help (0)
        return exit_.code if isinstance(exit_.code, int) else 0
