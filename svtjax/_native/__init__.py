"""svtjax's optional compiled kernel: one block of the lazy Fisher–Yates shuffle on the CPU.

XLA's CPU backend runs the engine's swap loop (:func:`svtjax.mechanisms._engine.fisher_yates_block`)
as a while loop of about six small kernels per position, whose dispatch costs more than the
swaps (``benchmarks/profile_thunks.py``); ``fisher_yates.cc`` does a whole block in one XLA FFI
call, the same swaps in the same order, so every result is bit-identical. It is built when
svtjax is installed (``setup.py``) and used only

* on the CPU backend,
* when the extension was built against the jaxlib that runs it (the FFI's binary interface is
  versioned with jaxlib),
* unless the environment variable ``SVTJAX_NATIVE`` is ``0`` (the pure-JAX block then runs
  everywhere, e.g. to compare the two).

Nothing happens on import: the handler is registered with XLA the first time a shuffled run is
traced for the CPU.
"""

from __future__ import annotations

import functools
import os
from typing import Optional

__all__ = ["FISHER_YATES_TARGET", "fisher_yates_target", "status"]

FISHER_YATES_TARGET = "svtjax_fisher_yates"


def _module():
    try:
        from svtjax._native import _fisher_yates
    except ImportError:
        return None
    return _fisher_yates


def status() -> str:
    """Why the compiled block is used or not, in one line (recorded by the benchmarks)."""
    if os.environ.get("SVTJAX_NATIVE", "1") == "0":
        return "off (SVTJAX_NATIVE=0)"
    module = _module()
    if module is None:
        return "not built (the pure-JAX block runs)"
    import jaxlib.version

    if module.jaxlib_version != jaxlib.version.__version__:
        return (f"built for jaxlib {module.jaxlib_version}, running jaxlib "
                f"{jaxlib.version.__version__} (the pure-JAX block runs)")
    return f"on (jaxlib {module.jaxlib_version})"


@functools.cache
def _registered() -> bool:
    module = _module()
    if module is None or not status().startswith("on"):
        return False
    import jax

    jax.ffi.register_ffi_target(FISHER_YATES_TARGET, module.handler(), platform="cpu")
    return True


def fisher_yates_target() -> Optional[str]:
    """The FFI target of the compiled block when it can run here (CPU backend, built for this
    jaxlib, not switched off), registering it on first use; otherwise None."""
    if os.environ.get("SVTJAX_NATIVE", "1") == "0":
        return None
    import jax

    if jax.default_backend() != "cpu" or not _registered():
        return None
    return FISHER_YATES_TARGET
