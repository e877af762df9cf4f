"""What the engine's loop returns: a batch's compact Outcome, and the memory it needs."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax.numpy as jnp

from svtjax._core import Outcome
from svtjax._types import Array
from svtjax.engine.layout import Layout, layout
from svtjax.engine.platform import Platform, resolve
from svtjax.engine.shuffle import perm_dtype

__all__ = ["Rows", "finish", "working_bytes"]


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


def working_bytes(mech, n: int, itemsize: int, shuffle: bool,
                  config: Optional[Platform] = None) -> int:
    """Working memory of one trial of a chunk: the buffers of its compact Outcome (answers
    int8; items int32 when shuffled or retraversed, except where a single pass's items are
    read from the compiled block's permutation; values and costs when the rule writes them),
    the rows gathered when finished trials are compacted away (at most 1/8 of the batch), one
    block of draws and, shuffled, the permutation. ``config``: the platform (None: JAX's
    default backend's)."""
    if config is None:
        config = resolve()
    lay = layout(mech, n, config=config)
    length = max(lay.length, lay.width)
    in_perm = shuffle and lay.passes == 1 and config.native
    outputs = 1 + (4 if (shuffle and not in_perm) or lay.passes > 1 else 0) + \
        (itemsize if mech.has_values() else 0) + (itemsize if mech.per_position_cost else 0)
    perm = jnp.dtype(perm_dtype(lay.n_pad)).itemsize * lay.n_pad if shuffle else 0
    streams = max(1, len(mech.streams()))
    return length * outputs * 9 // 8 + perm + 4 * streams * lay.width * itemsize
