"""The types every mechanism shares: ``Outcome``, ``Draws``, and ``selected``.

See ``DESIGN.md`` ("Core contracts"). One ``Outcome`` type serves every mechanism; a batch of
trials carries a leading trial axis on every field.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from svtjax._types import Array

__all__ = ["Outcome", "Draws", "selected", "NOT_EVALUATED"]

NOT_EVALUATED = -1


class Outcome(NamedTuple):
    """What one trial of a mechanism released, position by position along the stream.

    Attributes:
      answers: int8[L]; 1 = ⊤, 0 = ⊥, -1 = not evaluated (halted or budget exhausted).
      items: int32[L]; index into the caller's ``queries`` of the query evaluated at each stream
        position, -1 where nothing was evaluated.
      values: float[L]; released number (noisy answer, noisy gap), NaN where none.
      cost: float[L]; privacy budget charged at that position, 0 where none. Up-front costs
        (a threshold's ε1) are part of ``privacy()``, not of ``cost``.
    """

    answers: Array
    items: Array
    values: Array
    cost: Array


class Draws(NamedTuple):
    """Every random number one trial may use, as *standard* (unit-scale) variates.

    A mechanism multiplies by its noise scales inside ``decide``, so the same ``Draws`` serve every
    ε (common random numbers across a sweep). Position ``p`` of each stream array is drawn from
    block ``p // BLOCK`` of that stream's key (``svtjax.mechanisms.base.BLOCK``), so the value at a
    position depends only on (trial key, stream, position) — never on how far a kernel reads.
    Fields a mechanism does not use are ``None``.

    Attributes:
      threshold: scalar; the initial threshold noise ρ (standard variate).
      query: float[L]; query noise ν at each stream position.
      refresh: float[L]; fresh threshold noise drawn after a ⊤ at that position (mechanisms that
        redraw ρ, e.g. ``dpbook``).
      answer: float[L]; noise of the released answer at that position (``svt-s`` with ε3 > 0).
      order: int32[n]; Fisher–Yates swap indices: at step p, positions p and ``order[p]`` (drawn
        uniformly from p..n-1) are swapped. Present only for shuffled runs.
    """

    threshold: Array
    query: Optional[Array] = None
    refresh: Optional[Array] = None
    answer: Optional[Array] = None
    order: Optional[Array] = None


def _selected_one(answers: Array, items: Array, k: int) -> Array:
    top = answers == 1
    rank = jnp.cumsum(top) - 1
    slot = jnp.where(top & (rank < k), rank, k)  # slot k is dropped
    return jnp.full((k,), -1, jnp.int32).at[slot].set(items.astype(jnp.int32), mode="drop")


def selected(outcome: Outcome, k: int) -> Array:
    """Indices of the ⊤ items in stream order, padded with -1.

    Args:
      outcome: an ``Outcome``, with any number of leading batch axes.
      k: how many picks to return (the first ``k`` ⊤ in stream order).

    Returns:
      int32 array ``[..., k]``.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be an integer >= 1; got {k!r}")
    answers, items = jnp.asarray(outcome.answers), jnp.asarray(outcome.items)
    if answers.shape != items.shape or answers.ndim < 1:
        raise ValueError("outcome.answers and outcome.items must share a shape [..., L]; got "
                         f"{answers.shape} and {items.shape}")
    fn = lambda a, i: _selected_one(a, i, k)  # noqa: E731
    for _ in range(answers.ndim - 1):
        fn = jax.vmap(fn)
    return fn(answers, items)
