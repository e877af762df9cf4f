"""Pieces every experiment script shares: loading the datasets available offline, and turning on
the persistent compilation cache the way the ``svtjax`` command line does."""

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
