"""svtjax's optional compiled kernels (``kernels.cc``), XLA FFI handlers for the CPU.

XLA's CPU backend runs some of svtjax's loops as many small kernels per step, whose dispatch
costs more than the work (``benchmarks/profile_thunks.py``). Seven of them have a compiled
handler that does the whole loop in one call and computes what the pure-JAX function computes;
the first three bit for bit:

* the engine's lazy Fisher–Yates block (:func:`svtjax.mechanisms._engine.fisher_yates_block`;
  after a prefix it draws the swap partners itself, from each trial's key), target
  :data:`FISHER_YATES_TARGET`;
* the first positions of every trial's lazy Fisher–Yates shuffle at once, trial by trial, with
  the swap partners drawn in the kernel (:func:`svtjax.mechanisms._engine.fisher_yates_prefix`),
  target :data:`FISHER_YATES_PREFIX_TARGET`;
* the first ⊤ of every row of an Outcome batch (:func:`svtjax._core._first_tops_blocks`, behind
  :func:`svtjax.selected` and the metrics of shuffled Outcomes), target
  :data:`FIRST_TOPS_TARGET`;
* the forward and backward Poisson-binomial recursions of ``svtjax.exact``'s random order
  (:func:`svtjax.exact._laws._random_chunk`, for concrete float64 laws driven from the host),
  targets :data:`PB_FORWARD_TARGET` and :data:`PB_BACKWARD_TARGET`, and its inner integral
  E[1/(M_{−i}+1)] (:func:`svtjax.exact._laws._inverse_means`), targets
  :data:`LOG_PRODUCTS_TARGET` and :data:`INVERSE_SUMS_TARGET`: the same operations item by
  item, whose sums may round differently (``tests/test_native.py``).

The extension is built when svtjax is installed (``setup.py``) and used only

* on the CPU backend,
* when it was built against the jaxlib that runs it (the FFI's binary interface is versioned
  with jaxlib) and from this source (an editable install keeps an extension built from an
  older checkout until it is reinstalled: one missing a handler is not used),
* unless the environment variable ``SVTJAX_NATIVE`` is ``0`` (the pure-JAX functions then run
  everywhere, e.g. to compare the two).

Nothing happens on import: the handlers are registered with XLA the first time a program that
uses one is traced for the CPU.
"""

from __future__ import annotations

import functools
import os
from typing import Optional

__all__ = ["FISHER_YATES_TARGET", "FISHER_YATES_PREFIX_TARGET", "FIRST_TOPS_TARGET",
           "PB_FORWARD_TARGET", "PB_BACKWARD_TARGET", "LOG_PRODUCTS_TARGET",
           "INVERSE_SUMS_TARGET", "fisher_yates_target", "first_tops_target", "exact_target",
           "status"]

FISHER_YATES_TARGET = "svtjax_fisher_yates"
FISHER_YATES_PREFIX_TARGET = "svtjax_fisher_yates_prefix"
FIRST_TOPS_TARGET = "svtjax_first_tops"
PB_FORWARD_TARGET = "svtjax_pb_forward"
PB_BACKWARD_TARGET = "svtjax_pb_backward"
LOG_PRODUCTS_TARGET = "svtjax_log_products"
INVERSE_SUMS_TARGET = "svtjax_inverse_sums"


def _module():
    try:
        from svtjax._native import _kernels
    except ImportError:
        return None
    return _kernels


def status() -> str:
    """Why the compiled kernels are used or not, in one line (recorded by the benchmarks)."""
    if os.environ.get("SVTJAX_NATIVE", "1") == "0":
        return "off (SVTJAX_NATIVE=0)"
    module = _module()
    if module is None:
        return "not built (the pure-JAX functions run)"
    import jaxlib.version

    if module.jaxlib_version != jaxlib.version.__version__:
        return (f"built for jaxlib {module.jaxlib_version}, running jaxlib "
                f"{jaxlib.version.__version__} (the pure-JAX functions run)")
    missing = [name for name in _HANDLERS if not hasattr(module, name)]
    if missing:  # an editable install whose extension predates this source
        return (f"built from an older svtjax (no {', '.join(missing)}; the pure-JAX functions "
                f"run): reinstall svtjax (pip install -e .) to rebuild it")
    return f"on (jaxlib {module.jaxlib_version})"


_HANDLERS = ("fisher_yates", "fisher_yates_prefix", "first_tops", "pb_forward", "pb_backward",
             "log_products", "inverse_sums")
"""The extension's functions returning the handlers, all of which this source uses."""


@functools.cache
def _registered() -> bool:
    module = _module()
    if module is None or not status().startswith("on"):
        return False
    import jax

    jax.ffi.register_ffi_target(FISHER_YATES_TARGET, module.fisher_yates(), platform="cpu")
    jax.ffi.register_ffi_target(FISHER_YATES_PREFIX_TARGET, module.fisher_yates_prefix(),
                                platform="cpu")
    jax.ffi.register_ffi_target(FIRST_TOPS_TARGET, module.first_tops(), platform="cpu")
    jax.ffi.register_ffi_target(PB_FORWARD_TARGET, module.pb_forward(), platform="cpu")
    jax.ffi.register_ffi_target(PB_BACKWARD_TARGET, module.pb_backward(), platform="cpu")
    jax.ffi.register_ffi_target(LOG_PRODUCTS_TARGET, module.log_products(), platform="cpu")
    jax.ffi.register_ffi_target(INVERSE_SUMS_TARGET, module.inverse_sums(), platform="cpu")
    return True


def _target(name: str) -> Optional[str]:
    if os.environ.get("SVTJAX_NATIVE", "1") == "0":
        return None
    import jax

    if jax.default_backend() != "cpu" or not _registered():
        return None
    return name


def fisher_yates_target() -> Optional[str]:
    """The FFI target of the compiled Fisher–Yates block when it can run here (CPU backend,
    built for this jaxlib, not switched off), registering it on first use; otherwise None."""
    return _target(FISHER_YATES_TARGET)


def first_tops_target() -> Optional[str]:
    """The FFI target of the compiled first-tops loop when it can run here (as
    :func:`fisher_yates_target`); otherwise None."""
    return _target(FIRST_TOPS_TARGET)


def exact_target() -> bool:
    """Whether the compiled kernels of ``svtjax.exact``'s random order (:data:`PB_FORWARD_TARGET`,
    :data:`PB_BACKWARD_TARGET`, :data:`LOG_PRODUCTS_TARGET`, :data:`INVERSE_SUMS_TARGET`) can
    run here (as :func:`fisher_yates_target`), registering them on first use."""
    return _target(PB_FORWARD_TARGET) is not None
