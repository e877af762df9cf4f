"""What a stored result's identity covers: every line of code that computes it.

A sweep point's id (``svtjax.sweep.Point.point_id``) must change whenever a number it holds
could change, so that a resumed sweep never reuses a point computed by other code. svtjax's own
sources are covered by :func:`code_version`. Code from outside the package — a plugin's
mechanism class, its metrics and threshold rules, and the user modules those import — is
covered by :func:`user_code_hash`: the source of every defining module that is not svtjax,
not the standard library and not an installed third-party package, followed through the
modules it refers to.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pathlib
import sys
import sysconfig
import types
from typing import Any, Iterable, Optional

__all__ = ["code_version", "class_code_hash", "user_code_hash", "SOURCE_ATTR"]

SOURCE_ATTR = "__svtjax_source_sha256__"
"""Set by ``svtjax._plugins.load`` on a plugin file's module: the hash of the exact bytes it
executed (a later edit of the file on disk does not change what that module computes)."""

_SKIP = ("audit/", "cli/", "plot.py")
"""Package files that compute no number of a result (the audits, the command line, the
plots)."""

_SOURCES = (".py", ".cc", ".h")
"""What the numbers are computed from: the Python sources and the compiled kernels' sources."""


@functools.lru_cache(maxsize=None)
def code_version() -> str:
    """``svtjax.__version__`` plus a hash of the package sources that determine the numbers."""
    import svtjax

    root = pathlib.Path(svtjax.__file__).parent
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in _SOURCES):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(_SKIP):
            continue
        h.update(rel.encode())
        h.update(path.read_bytes())
    return f"{svtjax.__version__}+{h.hexdigest()[:12]}"


@functools.lru_cache(maxsize=None)
def _installed_roots() -> tuple[str, ...]:
    """Folders whose modules are the standard library or installed packages: their code is
    identified by the package versions, not hashed."""
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.realpath(path))
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        roots.add(os.path.realpath(os.path.join(prefix, "lib")))
    return tuple(sorted(roots))


def _is_user_module(module: types.ModuleType) -> bool:
    """A module of the user's own code: not svtjax, not built in, not installed."""
    name = getattr(module, "__name__", "") or ""
    if name == "svtjax" or name.startswith("svtjax."):
        return False
    file = getattr(module, "__file__", None)
    if not file:
        return False
    real = os.path.realpath(file)
    return not any(real.startswith(root + os.sep) for root in _installed_roots())


def _module_source(module: types.ModuleType) -> bytes:
    """The hash input for one module: what it executed where known, else its file's bytes."""
    recorded = getattr(module, SOURCE_ATTR, None)
    if isinstance(recorded, str):
        return recorded.encode()
    path = getattr(module, "__file__", None)
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest().encode()
    except (OSError, TypeError):
        # a module without a readable file (e.g. defined in a notebook cell): its objects'
        # own source where inspect can find it, else its name only
        try:
            return hashlib.sha256(inspect.getsource(module).encode()).hexdigest().encode()
        except (OSError, TypeError):
            return f"<no source: {module.__name__}>".encode()


def _referenced_modules(module: types.ModuleType) -> Iterable[types.ModuleType]:
    """The modules a module refers to at top level: imported modules, and the defining
    modules of the functions and classes it imported."""
    for value in list(vars(module).values()):
        if isinstance(value, types.ModuleType):
            yield value
            continue
        owner = getattr(value, "__module__", None)
        if isinstance(owner, str) and owner in sys.modules and (
                isinstance(value, (type, types.FunctionType)) or callable(value)):
            yield sys.modules[owner]


def _roots(obj: Any) -> list[types.ModuleType]:
    """The defining modules of ``obj`` (a class: every class of its MRO; a function or
    ``functools.partial``: its function's)."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    classes = obj.__mro__ if isinstance(obj, type) else (obj,)
    out = []
    for item in classes:
        module = inspect.getmodule(item)
        if module is not None:
            out.append(module)
    return out


def _unfiled(obj: Any) -> list:
    """The classes (of a class's MRO) or function of ``obj`` defined outside svtjax in a module
    without a source file (``__main__`` of a notebook or ``python -c``): hashed by their own
    source where ``inspect`` finds it."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    out = []
    for item in (obj.__mro__ if isinstance(obj, type) else (obj,)):
        module = inspect.getmodule(item)
        name = getattr(item, "__module__", "") or ""
        if name in ("builtins", "abc") or name == "svtjax" or name.startswith("svtjax."):
            continue
        if module is None or not getattr(module, "__file__", None):
            out.append(item)
    return out


def _partial_args(obj: Any) -> str:
    args = []
    while isinstance(obj, functools.partial):
        args.append((repr(obj.args), repr(sorted(obj.keywords.items()))))
        obj = obj.func
    return repr(args)


@functools.lru_cache(maxsize=None)
def class_code_hash(cls: type) -> str:
    """:func:`user_code_hash` of a class, computed once per class object (a class's code does
    not change while it exists; re-registering a mechanism makes a new class object)."""
    return user_code_hash(cls)


def user_code_hash(*objs: Optional[Any]) -> str:
    """A hash of the user code (outside svtjax and installed packages) that ``objs`` run.

    Each object (a class, a function or a ``functools.partial``) contributes its qualified
    name, the bound arguments of a partial, and the source of its defining modules that are
    user code, followed transitively through the user modules those refer to (a plugin
    importing a helper file of its own is covered). Objects defined inside svtjax contribute
    their name only: :func:`code_version` covers them.
    """
    h = hashlib.sha256()
    seen: dict[str, bytes] = {}
    for obj in objs:
        if obj is None:
            continue
        base = obj
        while isinstance(base, functools.partial):
            base = base.func
        h.update(f"{getattr(base, '__module__', '')}.{getattr(base, '__qualname__', '')}"
                 .encode())
        h.update(_partial_args(obj).encode())
        stack = [m for m in _roots(obj) if _is_user_module(m)]
        for item in _unfiled(obj):  # e.g. a class defined in a notebook cell
            try:
                h.update(inspect.getsource(item).encode())
            except (OSError, TypeError):  # no source to name it by: never reused elsewhere
                h.update(f"<unsourced {item!r} in process {os.getpid()} at {id(item)}>".encode())
        while stack:
            module = stack.pop()
            if module.__name__ in seen:
                continue
            seen[module.__name__] = _module_source(module)
            stack.extend(m for m in _referenced_modules(module)
                         if _is_user_module(m) and m.__name__ not in seen)
    for name in sorted(seen):
        h.update(name.encode())
        h.update(seen[name])
    return h.hexdigest()[:16]
