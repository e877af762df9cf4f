"""Pieces every experiment script shares: loading the datasets available offline, turning on the
persistent compilation cache the way the ``svtjax`` command line does, and the small adapters
between an experiment and the sweep engine (``svtjax.sweep``)."""

from __future__ import annotations

import os
import sys
from typing import Optional, Sequence


def load_available(names: Sequence[str], cache_dir: Optional[str] = None):
    """(datasets loaded, {name: reason it is missing}) for the given dataset names."""
    from svtjax import datasets

    loaded, missing = {}, {}
    for name in names:
        key = datasets._registry.canonical(name)
        kwargs = {}
        if cache_dir is not None and key in datasets._registry.SPECS:
            kwargs["cache_dir"] = cache_dir
        try:
            loaded[key] = datasets.load(key, **kwargs)
        except datasets.DatasetNotAvailableError as err:
            missing[key] = str(err).splitlines()[0]
    return loaded, missing


def enable_cache(tag: str) -> None:
    """Enables the persistent compilation cache unless ``SVTJAX_NO_CACHE=1``; a cache directory
    that cannot be used is reported on stderr (prefixed ``[tag]``) and the run goes on."""
    if os.environ.get("SVTJAX_NO_CACHE") == "1":
        return
    from svtjax import enable_compilation_cache

    try:
        enable_compilation_cache()
    except OSError as err:
        print(f"[{tag}] compilation cache disabled ({err})", file=sys.stderr)


def sweep_dataset(name: str, cache_dir: Optional[str] = None, **extra) -> dict:
    """A sweep config's dataset entry for a dataset :func:`load_available` loaded (its cache
    directory passed on for the real datasets, which take one)."""
    from svtjax import datasets

    entry = {"name": name, **extra}
    if cache_dir is not None and datasets._registry.canonical(name) in datasets._registry.SPECS:
        entry["cache_dir"] = cache_dir
    return entry


def sweep_dtype() -> str:
    """The sweep ``dtype`` matching JAX's default float (float64 under ``jax_enable_x64``)."""
    import jax

    return "float64" if jax.config.jax_enable_x64 else "float32"


def group_rows(rows, *keys: str) -> dict:
    """A sweep's tidy rows grouped by point: ``{key value(s): {metric: row}}`` (one key: its
    value; several: a tuple)."""
    out: dict = {}
    for r in rows:
        ident = r[keys[0]] if len(keys) == 1 else tuple(r[k] for k in keys)
        out.setdefault(ident, {})[r["metric"]] = r
    return out
