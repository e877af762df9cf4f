"""Reproductions of the source papers' tables and figures (``svtjax reproduce NAME``).

This folder is not part of the installed ``svtjax`` package: it lives at the top of the
repository (the design card's layout) and uses svtjax's public API only. Run an experiment from
a clone, ``python -m experiments.lyu2017 --quick``, or through the command line, ``svtjax
reproduce lyu2017 --quick`` (which finds this folder next to an editable install, in the current
directory, or where ``SVTJAX_EXPERIMENTS`` points).

Each experiment is a module of this folder with a ``main(argv) -> int`` entry point accepting
``--quick`` / ``--paper``, ``--trials N`` and ``--out DIR``; see ``README.md`` beside this file
for what each writes. Every module here whose name does not start with ``_`` is an experiment,
except the tools in :data:`TOOLS` (``python -m experiments.verify OUT`` recomputes every claims
table under OUT from its CSVs).
"""

from __future__ import annotations

import importlib
import pathlib
from types import ModuleType

#: The order ``svtjax reproduce all`` runs the known experiments in; modules added later (one
#: file each) run after them, alphabetically. Heaviest first, by their ``--paper`` cost from an
#: empty compilation cache on the 2-core CPU (the ``reproduce-cold`` record of
#: ``benchmarks/RESULTS.md`` gives each one's wall time): with ``--jobs`` above 1 the longest
#: ones start first, so the cores stay busy to the end (longest-processing-time-first).
ORDER = ("lyu2017", "audit", "ding2019", "optimal_allocation", "liu2024", "zhu_wang2020",
         "selection_baselines")

HERE = pathlib.Path(__file__).resolve().parent

#: Modules of this folder that are tools, not experiments: ``python -m experiments.verify OUT``
#: recomputes every claims table under OUT from its CSVs.
TOOLS = ("verify",)


def names() -> list[str]:
    """Every experiment in this folder (modules not starting with ``_``, except
    :data:`TOOLS`), in run order."""
    found = {p.stem for p in HERE.glob("*.py")
             if not p.stem.startswith("_") and p.stem not in TOOLS}
    return [n for n in ORDER if n in found] + sorted(found - set(ORDER))


def load(name: str) -> ModuleType:
    """The module of experiment ``name``; a clear error lists the known names."""
    known = names()
    if name not in known:
        raise ValueError(f"unknown experiment {name!r}; known experiments: {', '.join(known)}")
    return importlib.import_module(f"{__name__}.{name}")
