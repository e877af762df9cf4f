"""Frozen dataclasses registered as JAX pytrees with static (structural) fields.

Numeric fields are pytree *leaves*: they are traced under ``jit`` so a sweep over their values
compiles once, and ``jax.vmap`` over a stacked batch of objects works. Fields declared with
:func:`static_field` live in the tree definition: changing them changes the structure and
triggers a new compilation, which is what structural choices (a noise family, a flag, a number
of passes) should do.

Unflattening bypasses ``__init__`` so validation in ``__post_init__`` runs only on objects a user
builds, never on objects JAX rebuilds from tracers.
"""

from __future__ import annotations

import dataclasses
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
    cls._data_fields = data_names  # type: ignore[attr-defined]
    cls._static_fields = static_names  # type: ignore[attr-defined]
    return cls


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
