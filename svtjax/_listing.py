"""What ``svtjax list`` shows: whole one-line summaries, what each default means, the
datasets with their item counts and whether they ship with the package, and the state of the
compiled kernels."""

from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = ["summary", "parameter_notes", "mechanisms", "datasets", "native"]

_SECTION = re.compile(r"^\s*(Args|Arguments|Attributes|Parameters):\s*$")


def summary(doc: str | None) -> str:
    """The first paragraph of a docstring on one line (never cut mid-sentence)."""
    text = inspect.cleandoc(doc or "")
    return " ".join(text.split("\n\n", 1)[0].split())


def parameter_notes(cls: type) -> dict[str, str]:
    """Parameter name -> its description in the class docstring's ``Args:`` (or
    ``Attributes:``) section, on one line."""
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    notes: dict[str, str] = {}
    inside, indent, current = False, None, None
    for line in lines:
        if _SECTION.match(line):
            inside, indent, current = True, None, None
            continue
        if not inside:
            continue
        if not line.strip():
            current = None
            continue
        width = len(line) - len(line.lstrip())
        if indent is None:
            indent = width
        if width < indent:
            inside = False
            continue
        match = re.match(r"\s*([A-Za-z_][\w, ]*):\s*(.*)$", line)
        if width == indent and match:
            names = [n.strip() for n in match.group(1).split(",")]
            current = names
            for n in names:
                notes[n] = match.group(2).strip()
        elif current:
            for n in current:
                notes[n] = f"{notes[n]} {line.strip()}".strip()
    return notes


def _default_note(note: str) -> str:
    """What a ``None`` default means, from the parameter's description: its ``(default: ...)``
    part where it has one, else the description."""
    match = re.search(r"\(default:?\s*([^()]*(?:\([^()]*\)[^()]*)*)\)", note)
    return match.group(1).strip() if match else note


def mechanisms() -> dict[str, dict[str, Any]]:
    """name -> {"summary", "parameters": {name: default}, "defaults": {name: meaning of a
    ``None`` default}} for every registered mechanism."""
    import svtjax

    out = {}
    for name, cls in svtjax.mechanisms.registry().items():
        params = svtjax.mechanisms.parameters(name)
        notes: dict[str, str] = {}
        for base in reversed(cls.__mro__):  # a subclass's own description wins
            notes.update(parameter_notes(base) if base.__doc__ else {})
        meanings = {k: _default_note(notes[k]) for k, v in params.items()
                    if v is None and notes.get(k)}
        out[name] = {"summary": summary(cls.__doc__), "parameters": params,
                     "defaults": meanings}
    return out


def datasets() -> dict[str, dict[str, Any]]:
    """name -> {"items", "shipped", "kind", "title"} for every registered dataset (``items``:
    the default size of a synthetic one)."""
    from svtjax import datasets as ds
    from svtjax.datasets import _registry

    out = {}
    for name in ds.names():
        key = _registry.canonical(name)
        if key in _registry.SPECS:
            spec = _registry.SPECS[key]
            out[name] = {"kind": "real", "title": spec.title, "items": spec.num_items,
                         "shipped": bool(spec.shipped)}
        else:
            builder = ds._BUILTIN[key]
            default = inspect.signature(builder).parameters.get("n")
            items = None if default is None else default.default
            out[name] = {"kind": "synthetic", "title": summary(builder.__doc__),
                         "items": items, "shipped": True}
    return out


def native() -> str:
    """The compiled kernels' state, in one line."""
    from svtjax import _native

    return _native.status()
