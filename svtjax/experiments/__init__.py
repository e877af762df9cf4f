"""Reproductions of the source papers' tables and figures (``svtjax reproduce NAME``).

Each experiment is a module of this package with a ``main(argv) -> int`` entry point accepting
``--quick`` / ``--paper``, ``--trials N`` and ``--out DIR``; see ``README.md`` beside this file
for what each writes. ``EXPERIMENTS`` maps the name used on the command line to its module.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXPERIMENTS: dict[str, str] = {
    "lyu2017": "svtjax.experiments.lyu2017",
    "audit": "svtjax.experiments.audit",
    "zhu_wang2020": "svtjax.experiments.zhu_wang2020",
    "ding2019": "svtjax.experiments.ding2019",
    "liu2024": "svtjax.experiments.liu2024",
}


def names() -> list[str]:
    """Experiment names, in registry order."""
    return list(EXPERIMENTS)


def load(name: str) -> ModuleType:
    """The module of experiment ``name``; a clear error lists the known names."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known experiments: "
                         f"{', '.join(EXPERIMENTS)}")
    return importlib.import_module(EXPERIMENTS[name])
