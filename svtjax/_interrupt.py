"""Ctrl-C for the ``svtjax`` command: never lost, always exit status 130 and one line.

Python's default SIGINT handling raises ``KeyboardInterrupt`` in whatever Python code runs
when the signal is handled. Four things go wrong with that in a JAX program:

* the code may be a garbage-collector callback (JAX registers ``_xla_gc_callback`` in
  ``gc.callbacks``), a ``__del__`` or a weakref callback, where Python prints "Exception
  ignored in ..." and drops the exception: the command then runs to the end and exits 0;
* the interrupt may come during the start-up imports (before the command's ``try``), where it
  ends in the interpreter's traceback;
* raised in Python code that an extension module calls while it loads (jaxlib's, during
  ``import jax``), it ends the process with a segmentation fault;
* after the command has reported the interrupt, the interpreter's teardown can crash while
  XLA's threads still hold work (a segmentation fault after "interrupted").

:func:`console`, the ``svtjax`` console script, installs :func:`_handler` first, before any
heavy import (``import svtjax`` is light: its names load on first use). The handler records
every interrupt (:func:`requested`) and raises ``KeyboardInterrupt`` only where it cannot be
swallowed or crash the process: inside a garbage-collector callback, a ``__del__``, a
``weakref.finalize`` or the loading of an extension module it asks for the signal again
(handled once that code has returned), and a ``KeyboardInterrupt`` that is swallowed anyway
(:func:`_unraisable`) is asked for again too. Chunk loops call :func:`check` between
chunks, and ``svtjax.cli.main`` never returns 0 once an interrupt was requested. The command
reports the interrupt in one line (:func:`report`); :func:`console`
then flushes the output and ends the process with ``os._exit(130)``, skipping the teardown.
(Files the command writes are complete before that: a sweep writes each point atomically.)

A signal that arrives while the main thread is inside one long C++ call (an XLA compilation, a
compiled chunk) is handled when that call returns: Python runs signal handlers only between
bytecodes.

Nothing here changes a process that did not call :func:`install`: ``import svtjax`` and the
library's functions leave SIGINT alone, and :func:`check` is then a no-op.
"""

from __future__ import annotations

import gc
import importlib.machinery
import os
import signal
import sys
import weakref
from typing import Callable, Optional

__all__ = ["install", "installed", "requested", "check", "report", "console", "STATUS"]

STATUS = 130
"""Exit status after Ctrl-C (128 + SIGINT, the shell's convention)."""

_state = {"installed": False, "requested": False, "raised": False, "reported": False}

_NO_RAISE = frozenset({weakref.finalize.__call__.__code__,
                       importlib.machinery.ExtensionFileLoader.create_module.__code__,
                       importlib.machinery.ExtensionFileLoader.exec_module.__code__})
"""Code objects under which an interrupt waits (:func:`_unsafe`)."""


def installed() -> bool:
    """Whether this process handles SIGINT through :func:`install`."""
    return _state["installed"]


def requested() -> bool:
    """Whether an interrupt (SIGINT) arrived since :func:`install`."""
    return _state["requested"]


def check() -> None:
    """Raises ``KeyboardInterrupt`` if an interrupt was requested and not yet reported: called
    between chunks, so that an interrupt whose exception was swallowed still stops the work at
    the next chunk. A no-op without :func:`install` (a library call)."""
    if _state["requested"] and not _state["reported"]:
        _state["raised"] = True
        raise KeyboardInterrupt


def report(line: Optional[str]) -> bool:
    """Prints ``line``, the command's one line about an interrupt, on stderr (None: the command
    printed its own). Under :func:`install` only the first report prints, and further
    interrupts are ignored from then on. Returns whether it printed."""
    if _state["installed"]:
        if _state["reported"]:
            return False
        _state["reported"] = True
    if line is None:
        return False
    print(line, file=sys.stderr, flush=True)
    return True


def _unsafe(frame) -> bool:
    """Whether ``frame`` or a caller of it runs where a ``KeyboardInterrupt`` must not be
    raised: where Python drops exceptions (a garbage-collector callback, a ``__del__``, a
    ``weakref.finalize`` callback), or inside the initialisation of an extension module
    (Python code that compiled code calls while it loads, such as jaxlib's: an exception there
    ended ``import jax`` with a segmentation fault)."""
    callbacks = set()
    for cb in gc.callbacks:
        code = getattr(getattr(cb, "__func__", cb), "__code__", None)
        if code is not None:
            callbacks.add(code)
    while frame is not None:
        code = frame.f_code
        if (code in callbacks or code in _NO_RAISE or code.co_name == "__del__"):
            return True
        frame = frame.f_back
    return False


RETRY_SECONDS = 0.01
"""How long an interrupt that arrived where it cannot be raised waits before it is handled
again."""


def _again() -> None:
    """Has SIGINT's handler run again in :data:`RETRY_SECONDS`, from a helper thread (asked for
    in the handler itself, the interpreter would run the handler again at once, still inside
    the code that swallows exceptions)."""
    import _thread
    import threading

    timer = threading.Timer(RETRY_SECONDS, _thread.interrupt_main, args=(signal.SIGINT,))
    timer.daemon = True
    timer.start()


def _handler(signum, frame) -> None:
    _state["requested"] = True
    if _state["reported"] or _state["raised"]:
        return  # the interrupt is being handled; a second Ctrl-C changes nothing
    if _unsafe(frame):
        _again()
        return
    _state["raised"] = True
    raise KeyboardInterrupt


def _unraisable(previous):
    def hook(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            # dropped where Python cannot raise (a callback _unsafe did not recognise):
            # ask again instead of printing "Exception ignored in ..."
            _state["requested"] = True
            if not _state["reported"]:
                _state["raised"] = False
                _again()
            return
        previous(unraisable)

    return hook


def install() -> bool:
    """Installs the command's SIGINT handling (main thread only; once per process). A process
    that started with SIGINT ignored (a background job of a non-interactive shell) keeps
    ignoring it, as Python does. Returns whether the handling is installed."""
    if _state["installed"]:
        return True
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False  # ignored, or someone else's handler: leave it
    signal.signal(signal.SIGINT, _handler)
    sys.unraisablehook = _unraisable(sys.unraisablehook)
    _state["installed"] = True
    return True


def _exit(code: int) -> None:
    """Ends the process with ``code`` after flushing stdout and stderr, without the
    interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stream: nothing more to say
            pass
    os._exit(code)


def console(main: Optional[Callable[[], int]] = None) -> None:
    """The ``svtjax`` console script: installs the SIGINT handling, then runs
    ``svtjax.cli.main`` (or ``main``) and exits with its status; after an interrupt always
    with 130 and one line on stderr."""
    install()
    line = "svtjax: interrupted"
    try:
        from svtjax import cli

        line = f"{cli._command_name(sys.argv[1:])}: interrupted"
        code = (main or cli.main)()
    except KeyboardInterrupt:
        report(line)
        _exit(STATUS)
    except BaseException:
        if _state["requested"]:
            report(line)
            _exit(STATUS)
        raise
    if code == STATUS or _state["requested"]:
        report(line)
        _exit(STATUS)
    sys.exit(code)
