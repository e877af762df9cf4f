"""Importing plugins: modules of one's own that register mechanisms (and define sweep metrics).

A plugin is a module name (``"mypackage.mechanisms"``) or the path of a ``.py`` file; importing
it runs its ``svtjax.mechanisms.register`` calls, after which ``svtjax.get``, ``svtjax sweep``
(``[sweep] plugins = [...]``), ``svtjax simulate`` / ``svtjax audit`` (``--plugin``) and
``svtjax.testing`` find its mechanisms. A file is imported once per process under a name derived
from its absolute path.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import pathlib
import sys
from types import ModuleType
from typing import Optional

from svtjax._identity import SOURCE_ATTR

__all__ = ["load", "PluginError"]


class PluginError(ValueError):
    """A plugin that cannot be imported (the message names it and the error)."""


def load(entry: str, base: Optional[pathlib.Path] = None) -> ModuleType:
    """Imports plugin ``entry`` (a module name, or a ``.py`` path relative to ``base``).

    Raises:
      PluginError: not a string, no such file or module, or the module raised on import.
    """
    if not isinstance(entry, str) or not entry:
        raise PluginError(f"a plugin is a module name or a .py path; got {entry!r}")
    try:
        if entry.endswith(".py"):
            path = pathlib.Path(entry)
            if not path.is_absolute() and base is not None:
                path = base / path
            path = path.resolve()
            name = "svtjax_plugin_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
            if name in sys.modules:
                return sys.modules[name]
            if not path.is_file():
                raise FileNotFoundError(f"no such file {str(path)!r}")
            # the module runs exactly the bytes that are hashed: a result's identity names
            # the code that computed it, even if the file is edited while the process runs
            source = path.read_bytes()
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            setattr(module, SOURCE_ATTR, hashlib.sha256(source).hexdigest())
            sys.modules[name] = module
            try:
                exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102
            except BaseException:
                del sys.modules[name]
                raise
            return module
        return importlib.import_module(entry)
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the plugin's error is the user's
        raise PluginError(f"plugin {entry!r} cannot be imported: {type(err).__name__}: "
                          f"{' '.join(str(err).split())}") from err
