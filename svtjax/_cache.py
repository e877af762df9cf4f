"""Persistent XLA compilation cache: a second process with the same mechanism structure starts
without recompiling (the compiled executables are read from disk)."""

from __future__ import annotations

import os
import pathlib
from typing import Optional

import jax

_ENABLED: Optional[str] = None


def default_cache_dir() -> pathlib.Path:
    """``$SVTJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/svtjax/xla`` (``~/.cache/svtjax/xla``)."""
    if os.environ.get("SVTJAX_CACHE_DIR"):
        return pathlib.Path(os.environ["SVTJAX_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "svtjax" / "xla"


def enable_compilation_cache(directory: Optional[str | os.PathLike] = None) -> str:
    """Turns on JAX's persistent compilation cache in ``directory`` (default
    :func:`default_cache_dir`) for every compilation, however short; returns the directory.

    The command line calls this on start (``SVTJAX_NO_CACHE=1`` turns it off).
    """
    global _ENABLED
    path = pathlib.Path(directory) if directory is not None else default_cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    _ENABLED = str(path)
    return _ENABLED
