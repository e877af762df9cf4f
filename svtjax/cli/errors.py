"""What counts as the user's fault: :class:`UsageError`, the input-checking phase
(:class:`user_input`), the one-line report, and the checks of values given on the command line
(counts, seeds, repeated values, output directories)."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional, Sequence


class UsageError(Exception):
    """A problem with the command's input: reported in one line, exit status 2."""


USER_ERRORS = (UsageError, OSError)
"""Exceptions that report a problem with the input or the environment (a bad value, a missing
or unwritable file): one line on stderr and exit status 2, never a traceback (with svtjax's own
input errors: :func:`_user_error`). A ``ValueError``, ``TypeError``, ``LookupError`` or
``ArithmeticError`` is the input's fault only when an input check raises it (``with
user_input():``); anywhere else it is a bug in svtjax and keeps its traceback."""

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT, the shell's convention)."""


def _count(flag: str, value: Optional[int]) -> None:
    """Checks a count given on the command line (trials, c, devices): 1 <= value < 2**31."""
    from svtjax._validate import INT32_MAX

    if value is not None and not 1 <= value <= INT32_MAX:
        raise UsageError(f"{flag} must be an integer from 1 to {INT32_MAX}; got {value}")


def _seed(value: Optional[int]) -> None:
    """Checks a seed given on the command line: the range ``svtjax.simulate`` accepts."""
    from svtjax.simulate import SEED_RANGE

    if value is not None and not SEED_RANGE[0] <= value < SEED_RANGE[1]:
        raise UsageError(f"--seed must be an integer in [0, 2**64) (each seed its own trials); "
                         f"got {value}")


def _once(flag: str, values: Sequence[Any]) -> None:
    """Refuses a repeated option value (it would compute the same rows twice)."""
    seen = []
    for v in values:
        if v in seen:
            raise UsageError(f"{flag} {v} is given more than once; give each value once")
        seen.append(v)


def _writable_dir(flag: str, path: str) -> None:
    """Creates ``path`` (a directory an option names) or explains in one line why not."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path} is an existing file, not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{flag} {path}: cannot create the directory "
                         f"({err.strerror or err})") from err
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: the directory is not writable")


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror and err.filename:
        return f"{err.filename}: {err.strerror}"
    return " ".join(str(err).split()) or type(err).__name__


def _user_error(err: BaseException) -> bool:
    """Whether ``err`` reports a problem with the input or the environment (one line, exit
    status 2): :data:`USER_ERRORS`, or svtjax's own input errors (a sweep config, a plugin, a
    dataset that is not available or not verified), looked up only where their module is
    loaded (an error of a module that was never imported cannot have been raised)."""
    if isinstance(err, USER_ERRORS):
        return True
    for module, name in (("svtjax.sweep", "SweepConfigError"), ("svtjax._plugins", "PluginError"),
                         ("svtjax.datasets._types", "DatasetNotAvailableError"),
                         ("svtjax.datasets._types", "DatasetVerificationError")):
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(err, cls):
            return True
    return False


class user_input:  # noqa: N801 - used as ``with user_input():``
    """The input-checking phase of a command: a ``ValueError``, ``TypeError``, ``LookupError``
    or ``ArithmeticError`` raised inside is a problem with the user's input, re-raised as
    :class:`UsageError` (one line, exit status 2). The same exceptions raised outside (while
    computing) are bugs in svtjax and keep their traceback::

        with user_input():
            config = sweep.load_config(args.config)   # a bad value: one line, exit 2
        result = sweep.run(config, out)               # a ValueError here: a traceback
    """

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        if (isinstance(err, (ValueError, TypeError, LookupError, ArithmeticError))
                and not _user_error(err)):
            raise UsageError(_one_line(err)) from err
        return False
