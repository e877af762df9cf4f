"""svtjax's optional compiled kernels (``*.cc`` in this folder), XLA FFI handlers for the CPU.

XLA's CPU backend runs some of svtjax's loops as many small kernels per step, whose dispatch
costs more than the work (seen in a profile of the compiled chunk). Seven of them have a compiled
handler that does the whole loop in one call and computes what the pure-JAX function computes;
the first three bit for bit:

* the engine's lazy Fisher–Yates block (:func:`svtjax.engine.shuffle.fisher_yates_block`;
  after a prefix it draws the swap partners itself, from each trial's key), target
  :data:`FISHER_YATES_TARGET`;
* the first positions of every trial's lazy Fisher–Yates shuffle at once, trial by trial, with
  the swap partners drawn in the kernel (:func:`svtjax.engine.shuffle.fisher_yates_prefix`),
  target :data:`FISHER_YATES_PREFIX_TARGET`;
* the first ⊤ of every row of an Outcome batch (:func:`svtjax._core._first_tops_blocks`, behind
  :func:`svtjax.selected` and the metrics of shuffled Outcomes), target
  :data:`FIRST_TOPS_TARGET`;
* the forward and backward Poisson-binomial recursions of ``svtjax.exact``'s random order
  (:func:`svtjax.exact._random.random_chunk`, for concrete float64 laws driven from the host),
  targets :data:`PB_FORWARD_TARGET` and :data:`PB_BACKWARD_TARGET`, and its inner integral
  E[1/(M_{−i}+1)] (:func:`svtjax.exact._inverse.inverse_means`), targets
  :data:`LOG_PRODUCTS_TARGET` and :data:`INVERSE_SUMS_TARGET`: the same operations item by
  item, whose sums may round differently (``tests/test_native.py``).

The extension is built when svtjax is installed (``setup.py``), compiled against the XLA FFI
headers of the jaxlib in the build environment, and used only

* on the CPU backend,
* under a jaxlib whose FFI API version (read from its ``c_api.h``) has the build's major version
  and at least its minor version: XLA keeps older FFI API versions working ("old API version are
  supported for at least 12 months", ``xla/ffi/api/c_api.h``), so one build serves a range of
  jaxlib versions, not only the one it was built with; XLA also checks the version when the
  handlers are registered, and a refusal is reported, not raised,
* when it was built from this source (an editable install keeps an extension built from an
  older checkout until it is reinstalled: one missing a handler is not used),
* unless the environment variable ``SVTJAX_NATIVE`` is ``0`` (the pure-JAX functions then run
  everywhere, e.g. to compare the two).

When a built extension is not used for any reason but the switch, svtjax says why once on stderr
(the pure-JAX functions give the same numbers, only slower); :func:`status` says it in one line,
and ``svtjax list`` and a sweep's ``results.json`` record it.

Nothing happens on import: the handlers are registered with XLA the first time a program that
uses one is traced for the CPU.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from typing import Optional

__all__ = ["FISHER_YATES_TARGET", "FISHER_YATES_PREFIX_TARGET", "FIRST_TOPS_TARGET",
           "PB_FORWARD_TARGET", "PB_BACKWARD_TARGET", "LOG_PRODUCTS_TARGET",
           "INVERSE_SUMS_TARGET", "fisher_yates_target", "first_tops_target", "exact_target",
           "status", "runtime_api"]

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


def _api_of(header: str) -> Optional[tuple[int, int]]:
    """(XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR) defined in the text of a ``c_api.h``."""
    found = [re.search(rf"^#define XLA_FFI_API_{part} (\d+)", header, re.M)
             for part in ("MAJOR", "MINOR")]
    if not all(found):
        return None
    return int(found[0].group(1)), int(found[1].group(1))


@functools.cache
def runtime_api() -> Optional[tuple[int, int]]:
    """The FFI API version of the running jaxlib, from the headers it ships (None when it ships
    none)."""
    import jax

    try:
        include = jax.ffi.include_dir()
        with open(os.path.join(include, "xla", "ffi", "api", "c_api.h"), encoding="utf-8") as f:
            return _api_of(f.read())
    except (AttributeError, OSError):
        return None


def _mismatch(module) -> Optional[str]:
    """Why an extension cannot serve the running jaxlib's FFI API, or None when it can."""
    built = (getattr(module, "ffi_api_major", None), getattr(module, "ffi_api_minor", None))
    if None in built:
        return ("built by an older svtjax that records no FFI API version: reinstall svtjax "
                "(pip install -e .) to rebuild it")
    import jaxlib.version

    running = runtime_api()
    if running is None:
        return (f"the running jaxlib {jaxlib.version.__version__} ships no FFI headers to read "
                "its FFI API version from")
    if running[0] != built[0] or running[1] < built[1]:
        return (f"built for the XLA FFI API {built[0]}.{built[1]} (jaxlib "
                f"{module.jaxlib_version}); the running jaxlib {jaxlib.version.__version__} has "
                f"{running[0]}.{running[1]}: reinstall svtjax under this jaxlib to rebuild it")
    return None


_REFUSED: list[str] = []
"""Why XLA refused to register the handlers, once it did."""


def status() -> str:
    """Why the compiled kernels are used or not, in one line (``svtjax list``, results.json)."""
    if os.environ.get("SVTJAX_NATIVE", "1") == "0":
        return "off (SVTJAX_NATIVE=0)"
    module = _module()
    if module is None:
        return "not built (the pure-JAX functions run)"
    missing = [name for name in _HANDLERS if not hasattr(module, name)]
    if missing:  # an editable install whose extension predates this source
        return (f"not used: built from an older svtjax (no {', '.join(missing)}): reinstall "
                "svtjax (pip install -e .) to rebuild it; the pure-JAX functions run")
    why = _mismatch(module) or (_REFUSED[0] if _REFUSED else None)
    if why is not None:
        return f"not used: {why}; the pure-JAX functions run"
    major, minor = runtime_api()
    return (f"on (built with jaxlib {module.jaxlib_version}, XLA FFI API "
            f"{module.ffi_api_major}.{module.ffi_api_minor}; running FFI API {major}.{minor})")


@functools.cache
def _say_once(line: str) -> None:
    print(f"svtjax: compiled kernels {line}", file=sys.stderr)


_HANDLERS = ("fisher_yates", "fisher_yates_prefix", "first_tops", "pb_forward", "pb_backward",
             "log_products", "inverse_sums")
"""The extension's functions returning the handlers, all of which this source uses."""


@functools.cache
def _registered() -> bool:
    module = _module()
    if module is None:
        return False
    state = status()
    if not state.startswith("on"):
        if not state.startswith("off"):
            _say_once(state)
        return False
    import jax

    handlers = {FISHER_YATES_TARGET: module.fisher_yates, FISHER_YATES_PREFIX_TARGET:
                module.fisher_yates_prefix, FIRST_TOPS_TARGET: module.first_tops,
                PB_FORWARD_TARGET: module.pb_forward, PB_BACKWARD_TARGET: module.pb_backward,
                LOG_PRODUCTS_TARGET: module.log_products, INVERSE_SUMS_TARGET: module.inverse_sums}
    for name, handler in handlers.items():
        try:
            jax.ffi.register_ffi_target(name, handler(), platform="cpu")
        except Exception as err:  # noqa: BLE001 - XLA's refusal is reported, never raised
            _REFUSED.append(f"XLA refused to register {name}: {str(err).splitlines()[0]}")
            _say_once(status())
            return False
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
