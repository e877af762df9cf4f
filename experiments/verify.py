"""``python -m experiments.verify OUT``: recompute every claims table under OUT from its CSVs.

For each ``claims.csv`` under OUT (one experiment's output directory, or the directory of
``svtjax reproduce all``), every claim's numbers are read again from the CSVs beside it through
the references its ``spec`` column declares, the verdict is recomputed by the one shared
function (``experiments._claims.judge``) and compared with the written verdict, family size and
every row of ``claims_comparisons.csv``. Nothing is rerun. Exit status 0 when everything
matches, 1 when a claim does not (each one named on stderr), 2 when OUT holds no claims table.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Optional, Sequence

if not __package__:  # run as a script, ``python experiments/verify.py``: import as the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "experiments"  # noqa: A001
    import experiments  # noqa: F401,E402

from ._claims import Tables, judge, read_csv  # noqa: E402
from ._common import ArgumentParser  # noqa: E402

_NUMBERS = ("a", "a_se", "b", "b_se", "d", "se", "p")


def tables_under(root: str) -> list[str]:
    """The directories under ``root`` (itself included) that hold a ``claims.csv`` written by
    the claims protocol; sweep caches are skipped."""
    found = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != "sweep")
        if "claims.csv" in files:
            found.append(directory)
    return found


def _read(path: str) -> list[dict]:
    return read_csv(path)


def _same_number(text: str, value: float) -> bool:
    try:
        written = float(text)
    except ValueError:
        return False
    if math.isnan(written) or math.isnan(value):
        return math.isnan(written) and math.isnan(value)
    return written == value or math.isclose(written, value, rel_tol=1e-12, abs_tol=1e-300)


def check_directory(directory: str) -> list[str]:
    """Every mismatch between ``directory``'s claims tables and its CSVs (empty: none)."""
    problems = []
    claims = _read(os.path.join(directory, "claims.csv"))
    if claims and "spec" not in claims[0]:
        return [f"{directory}: claims.csv has no 'spec' column (not written by the claims "
                "protocol)"]
    comp_path = os.path.join(directory, "claims_comparisons.csv")
    written = _read(comp_path) if os.path.exists(comp_path) else []
    by_id: dict[str, list[dict]] = {}
    for r in written:
        by_id.setdefault(r["id"], []).append(r)
    tables = Tables(directory)
    for c in claims:
        name = f"{directory}: claim {c['id']} ({c['claim'][:60]!r})"
        try:
            verdict, rows = judge(json.loads(c["spec"]), tables)
        except (LookupError, KeyError, ValueError, TypeError) as err:
            problems.append(f"{name}: its numbers cannot be read from the CSVs ({err})")
            continue
        if verdict != c["verdict"]:
            problems.append(f"{name}: claims.csv says {c['verdict']!r}, the CSVs give "
                            f"{verdict!r}")
        if str(len(rows)) != c["family_size"]:
            problems.append(f"{name}: family size {c['family_size']} written, {len(rows)} "
                            "comparisons declared")
        mine = by_id.pop(c["id"], [])
        if len(mine) != len(rows):
            problems.append(f"{name}: {len(mine)} rows in claims_comparisons.csv, "
                            f"{len(rows)} comparisons declared")
            continue
        for w, r in zip(mine, rows):
            bad = [k for k in _NUMBERS if not _same_number(w[k], float(r[k]))]
            bad += [k for k in ("label", "outcome") if w[k] != str(r[k])]
            bad += [] if w["part"] == str(r["part"]) else ["part"]
            if bad:
                problems.append(f"{name}: comparison {r['label']!r}: {', '.join(bad)} in "
                                "claims_comparisons.csv differ from the CSVs ("
                                + ", ".join(f"{k} {w[k]} vs {r[k]!r}" for k in bad) + ")")
    for cid in by_id:
        problems.append(f"{directory}: claims_comparisons.csv has rows for claim {cid}, "
                        "which claims.csv does not declare")
    return problems


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m experiments.verify") -> int:
    """Verifies OUT (``argv``: ``[OUT]``); ``prog`` names the command in messages (the command
    line's ``svtjax reproduce --verify`` passes its own). Returns the exit status."""
    parser = ArgumentParser(
        prog=prog,
        description="Recompute every verdict of the claims tables under OUT from the CSVs "
                    "beside them (nothing is rerun); exit 1 naming each claim that differs.")
    parser.add_argument("out", metavar="OUT", help="an experiment's output directory, or the "
                        "directory of `svtjax reproduce all`")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.out):
        parser.error(f"OUT must be a directory; {args.out!r} is not")
    found = tables_under(args.out)
    if not found:
        parser.error(f"no claims.csv under {args.out!r}: run an experiment with --out first")
    problems, n = [], 0
    for directory in found:
        problems += check_directory(directory)
        n += len(_read(os.path.join(directory, "claims.csv")))
    for p in problems:
        print(f"verify: {p}", file=sys.stderr)
    if problems:
        print(f"verify: {len(problems)} mismatch(es) in {len(found)} claims table(s)",
              file=sys.stderr)
        return 1
    print(f"verify: {n} claims in {len(found)} table(s) recomputed from their CSVs: all match")
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["check_directory", "main", "tables_under"]
