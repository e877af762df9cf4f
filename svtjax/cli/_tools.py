"""Where ``svtjax reproduce`` and ``svtjax bench`` find a source checkout's tools.

The paper reproductions (``experiments/``) and the benchmark harness (``benchmarks/``) are
folders of the svtjax repository, not installed with the package. Each is looked for, in order:

1. the environment variable (``SVTJAX_EXPERIMENTS``, ``SVTJAX_BENCHMARKS``): the folder
   itself; when set, it must be such a folder (anything else is a usage error);
2. beside the package source, ``Path(svtjax.__file__).parents[1] / NAME`` (a clone, an
   editable install or ``PYTHONPATH``);
3. ``./NAME`` in the current directory.

A folder qualifies as ``experiments/`` when it holds ``__init__.py``, and as ``benchmarks/``
when it holds the harness, ``harness.py`` with a ``main(argv)``. They are imported under their
own names, ``experiments`` and ``benchmarks.harness`` (their modules import each other by
those names); a different module already imported under either name is refused rather than
shadowed.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

from svtjax.cli.errors import UsageError

EXPERIMENTS_ENV = "SVTJAX_EXPERIMENTS"
"""Where ``svtjax reproduce`` looks for the repository's ``experiments/`` folder first."""
EXPERIMENTS_MISSING = ("the paper reproductions are not installed with the package; they live "
                       "in the experiments/ folder of the svtjax repository: run svtjax from a "
                       f"clone of the repository, or set {EXPERIMENTS_ENV}=/path/to/experiments")
BENCHMARKS_ENV = "SVTJAX_BENCHMARKS"
"""Where ``svtjax bench`` looks for the repository's ``benchmarks/`` folder first."""
HARNESS_MARK = "svtjax-bench/"
"""Text of svtjax's ``benchmarks/harness.py`` that tells it from another project's."""


def find_experiments() -> Optional[os.PathLike]:
    """The repository's ``experiments/`` folder (a ``pathlib.Path``), or None when it cannot
    be found.

    Looked for, in order: ``$SVTJAX_EXPERIMENTS`` (which must then be such a folder), the folder
    beside the package source (a clone or an editable install: ``Path(svtjax.__file__).parent
    .parent / "experiments"``), and ``./experiments``. A folder qualifies when it holds
    ``__init__.py``.

    Raises:
      UsageError: ``$SVTJAX_EXPERIMENTS`` is set but is not an experiments folder.
    """
    import pathlib

    import svtjax

    env = os.environ.get(EXPERIMENTS_ENV)
    if env:
        folder = pathlib.Path(env).expanduser().resolve()
        if not (folder / "__init__.py").is_file():
            raise UsageError(f"{EXPERIMENTS_ENV}={env} is not the repository's experiments/ "
                             "folder (it has no __init__.py); point it there or unset it")
        return folder
    for folder in (pathlib.Path(svtjax.__file__).resolve().parent.parent / "experiments",
                   pathlib.Path.cwd() / "experiments"):
        if (folder / "__init__.py").is_file():
            return folder.resolve()
    return None


def import_experiments(folder):
    """The ``experiments`` package at ``folder``, imported under the name ``experiments``
    (reused when that name already refers to this folder)."""
    import importlib.util
    import pathlib

    loaded = sys.modules.get("experiments")
    if loaded is not None:
        paths = [pathlib.Path(p).resolve() for p in getattr(loaded, "__path__", [])]
        if pathlib.Path(folder).resolve() in paths:
            return loaded
        raise UsageError(f"another module named 'experiments' ({paths or loaded!r}) is already "
                         f"imported in this process; cannot load {folder}")
    spec = importlib.util.spec_from_file_location(
        "experiments", pathlib.Path(folder) / "__init__.py",
        submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["experiments"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["experiments"]
        raise
    return module


def _is_harness(folder) -> bool:
    try:
        return HARNESS_MARK in (folder / "harness.py").read_text()
    except OSError:
        return False


def find_benchmarks():
    """The repository's ``benchmarks/`` folder (a ``pathlib.Path``): ``$SVTJAX_BENCHMARKS``,
    beside the package source, then ``./benchmarks``.

    Raises:
      UsageError: ``$SVTJAX_BENCHMARKS`` is set but holds no harness, or none is found.
    """
    import pathlib

    import svtjax

    named = os.environ.get(BENCHMARKS_ENV)
    if named:
        candidates = [pathlib.Path(named).expanduser().resolve()]
        if not _is_harness(candidates[0]):
            raise UsageError(f"{BENCHMARKS_ENV}={named} is not svtjax's benchmarks/ folder (no "
                             "harness.py there); point it at the benchmarks/ of a checkout")
    else:
        candidates = [pathlib.Path(svtjax.__file__).resolve().parents[1] / "benchmarks",
                      pathlib.Path.cwd().resolve() / "benchmarks"]
    folder = next((c for c in candidates if _is_harness(c)), None)
    if folder is None:
        raise UsageError("svtjax bench runs the benchmark harness of a source checkout "
                         "(benchmarks/harness.py), which is not installed with the package: "
                         "clone the svtjax repository and run svtjax bench from the checkout, or "
                         f"set {BENCHMARKS_ENV} to its benchmarks/ folder")
    return folder


def import_harness(folder):
    """``benchmarks.harness`` of the checkout whose ``benchmarks/`` is ``folder`` (its parent
    is put on ``sys.path``)."""
    import importlib
    import pathlib

    root = str(folder.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    harness = importlib.import_module("benchmarks.harness")
    if pathlib.Path(harness.__file__).resolve().parent != folder:
        raise UsageError(f"a different 'benchmarks' package is already imported "
                         f"({harness.__file__}); run svtjax bench in a fresh process")
    return harness
