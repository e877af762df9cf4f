"""What the engine's loop returns: a batch's compact Outcome (its memory:
:mod:`svtjax.engine.sizing`)."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax.numpy as jnp

from svtjax._core import Outcome
from svtjax._types import Array
from svtjax.engine.layout import Layout

__all__ = ["Rows", "finish"]


class Rows(NamedTuple):
    """Per-trial loop state. Only what cannot be derived afterwards is carried: ``items`` only
    for shuffled runs (fixed order: item = in-pass position), ``values`` only for rules that
    release numbers, ``cost`` only for rules that charge per position. Carrying less is what
    keeps a run that halts after a few blocks from paying for O(trials × n) buffer traffic."""

    state: Any
    done: Array
    answers: Array
    items: Optional[Array]
    values: Optional[Array]
    cost: Optional[Array]


def finish(mech, lay: Layout, rows: Rows, dtype, perm: Optional[Array] = None) -> Outcome:
    """The batch's compact Outcome: answers, and only the fields the answers do not determine
    (items of a shuffled run, released values, per-position costs); see ``Outcome.compact``.
    ``perm`` (a single-pass shuffled run through the compiled block): the permutation rows,
    whose first positions hold each trial's items, stored as they are."""
    length = lay.length

    def trim(x):  # [batch, max(L, W)] -> [batch, L]
        return None if x is None else (x if x.shape[1] == length else x[:, :length])

    answers = trim(rows.answers)
    top_cost = None
    if rows.cost is None:
        top_cost = jnp.broadcast_to(jnp.asarray(mech.top_cost(), dtype), answers.shape[:1])
    if perm is not None:
        return Outcome.compact(answers, n=lay.n, dtype=dtype, items=perm,
                               values=trim(rows.values), cost=trim(rows.cost), top_cost=top_cost,
                               items_evaluated_only=True)
    return Outcome.compact(answers, n=lay.n, dtype=dtype, items=trim(rows.items),
                           values=trim(rows.values), cost=trim(rows.cost), top_cost=top_cost)
