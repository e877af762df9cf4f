"""Regenerates benchmarks/RESULTS.md from the JSON records in benchmarks/results/.

Every number in RESULTS.md comes from a record written by ``svtjax bench`` (the latest full run
per machine) or by a ``bench_*.py`` script; nothing is typed by hand.

    python benchmarks/update_results.py [--results DIR] [--output FILE] [--include-custom]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.render import write_results_md  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=HERE / "results",
                   help="directory of JSON records (default: benchmarks/results)")
    p.add_argument("--output", type=Path, default=HERE / "RESULTS.md",
                   help="markdown file to write (default: benchmarks/RESULTS.md)")
    p.add_argument("--include-custom", action="store_true",
                   help="also consider runs narrowed with --only/--size/--mode")
    args = p.parse_args(argv)
    suites = ("full", "custom") if args.include_custom else ("full",)
    path = write_results_md(args.results, args.output, suites)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
