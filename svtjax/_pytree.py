"""Frozen dataclasses registered as JAX pytrees with static (structural) fields.

Numeric fields are pytree *leaves*: they are traced under ``jit`` so a sweep over their values
compiles once, and ``jax.vmap`` over a stacked batch of objects works. Fields declared with
:func:`static_field` live in the tree definition: changing them changes the structure and
triggers a new compilation, which is what structural choices (a noise family, a flag, a number
of passes) should do.

Construction is one step from the values a user passes to the values stored: a class may define
a classmethod ``_normalize(cls, values: dict) -> dict`` that receives every field's value (the
defaults applied), validates them and returns the canonical values (Python floats for traced
leaves, a resolved default, a value derived from the others); the dataclass then assigns the
result once, and ``__post_init__``, if any, only checks. Nothing is set on a built object.

Unflattening bypasses ``__init__`` (and so ``_normalize`` and ``__post_init__``): construction
runs only on objects a user builds, never on objects JAX rebuilds from tracers.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any, TypeVar

import jax

_T = TypeVar("_T")


def static_field(**kwargs: Any) -> Any:
    """A dataclass field that is part of the pytree structure (hashable, never traced)."""
    return dataclasses.field(metadata={"static": True}, **kwargs)


def pytree_dataclass(cls: type[_T]) -> type[_T]:
    """Makes ``cls`` a frozen dataclass and registers it as a pytree."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)
    data_names = tuple(f.name for f in fields if not f.metadata.get("static", False))
    static_names = tuple(f.name for f in fields if f.metadata.get("static", False))

    def flatten_with_keys(obj):
        children = [(jax.tree_util.GetAttrKey(n), getattr(obj, n)) for n in data_names]
        return children, tuple(getattr(obj, n) for n in static_names)

    def flatten(obj):
        return [getattr(obj, n) for n in data_names], tuple(getattr(obj, n) for n in static_names)

    def unflatten(aux, children):
        obj = object.__new__(cls)
        for name, value in zip(data_names, children):
            object.__setattr__(obj, name, value)
        for name, value in zip(static_names, aux):
            object.__setattr__(obj, name, value)
        return obj

    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    if getattr(cls, "_normalize", None) is not None:
        cls.__init__ = _normalizing(cls.__init__)
    cls._data_fields = data_names  # type: ignore[attr-defined]
    cls._static_fields = static_names  # type: ignore[attr-defined]
    return cls


def _normalizing(init: Any) -> Any:
    """``init`` (a dataclass's generated ``__init__``) fed the values ``type(self)._normalize``
    returns for the arguments given, every field present (defaults applied)."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:
            init(self, *args, **kwargs)  # the dataclass's own message for a wrong call
            raise
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        init(self, **type(self)._normalize(values))

    return __init__


def draft(cls: type[_T], **values: Any) -> _T:
    """An instance of ``cls`` holding ``values`` as they are, without construction (no
    ``_normalize``, no ``__post_init__``; what unflattening does): for a construction step that
    needs the methods of the object being built (e.g. its privacy bound, to calibrate a noise),
    and for a copy whose traced leaves replace fields of a built one (:func:`replace_leaves`).
    Fields not given are the dataclass defaults."""
    obj = object.__new__(cls)
    for f in dataclasses.fields(cls):
        if f.name in values:
            value = values[f.name]
        elif f.default is not dataclasses.MISSING:
            value = f.default
        else:
            value = None
        object.__setattr__(obj, f.name, value)
    return obj


def replace_leaves(obj: _T, **changes: Any) -> _T:
    """A copy of the pytree dataclass ``obj`` with the fields ``changes`` replaced and no
    construction: as JAX rebuilds it from other leaves, so the new values may be traced (the
    caller keeps them consistent, as the mechanisms' own ``with_budgets`` does)."""
    values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    values.update(changes)
    return draft(type(obj), **values)


def is_concrete(x: Any) -> bool:
    """True when ``x`` holds concrete values (not a tracer), so it can be validated in Python."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


def staged_call(jitted: Any, *args: Any) -> Any:
    """``jitted(*args)``; inside a trace (an argument is a tracer), its undecorated function.

    A ``jax.jit`` called under an outer transformation is traced on its own and then traced
    again by the transformation's rule for the nested call (``vmap`` re-traces the inner
    program to batch it); calling the plain function traces it once, straight into the
    caller's program, which computes the same thing. Outside a trace the compiled function and
    its cache are used.
    """
    if is_concrete(args):
        return jitted(*args)
    return jitted.__wrapped__(*args)
