"""The types every mechanism shares: ``Outcome``, ``Draws``; ``selected`` and ``prefix_counts``.

See ``DESIGN.md`` ("Core contracts"). One ``Outcome`` type serves every mechanism; a batch of
trials carries a leading trial axis on every field.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from svtjax._types import Array

__all__ = ["Outcome", "Draws", "selected", "prefix_counts", "NOT_EVALUATED"]

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


class Draws:
    """Every random number one trial may use, as *standard* (unit-scale) variates, by stream.

    A mechanism multiplies by its noise scales inside ``decide``, so the same ``Draws`` serve every
    ε (common random numbers across a sweep). Each stream is named after what it feeds, and
    ``draws.<name>`` (or ``draws["<name>"]``) returns it, ``None`` when the mechanism does not
    draw that stream. Position ``p`` of a per-position stream is drawn from block ``p // BLOCK``
    of that stream's key (``svtjax.mechanisms.BLOCK``), so the value at a position depends only on
    (trial key, stream, position) — never on how far a kernel reads.

    The built-in mechanisms use these streams:

    * ``threshold``: scalar; the initial threshold noise ρ.
    * ``query``: float[L]; query noise ν at each stream position.
    * ``refresh``: float[L]; fresh threshold noise drawn after a ⊤ (or a stage's end) at that
      position (``dpbook``, RESAMPLE, stage-wise SVT).
    * ``answer``: float[L]; noise of the released answer at that position (``svt-s`` with ε3 > 0).
    * ``query2``: float[L]; a second query noise (``adaptive-svt-gap``'s η_i; ξ_i is ``query``).
    * ``order``: int32[n]; Fisher–Yates swap indices: at step p, positions p and ``order[p]``
      (uniform on p..n-1) are swapped. Present only for shuffled runs.

    A rule of one's own may name other streams (``ThresholdMechanism.streams``).
    """

    __slots__ = ("_streams",)

    def __init__(self, streams=None, /, **named):
        merged = dict(streams or {})
        merged.update(named)
        object.__setattr__(self, "_streams",
                           {k: v for k, v in sorted(merged.items()) if v is not None})

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._streams.get(name)

    def __getitem__(self, name):
        return self._streams[name]

    def __contains__(self, name):
        return name in self._streams

    def __setattr__(self, name, value):
        raise AttributeError("Draws is immutable; build a new one with Draws({...})")

    def names(self):
        return tuple(self._streams)

    def items(self):
        return self._streams.items()

    def replace(self, **changes):
        return Draws({**self._streams, **changes})

    def __repr__(self):
        inner = ", ".join(f"{k}={getattr(v, 'shape', v)}" for k, v in self._streams.items())
        return f"Draws({inner})"


def _draws_flatten(d: Draws):
    names = tuple(d._streams)
    return [d._streams[k] for k in names], names


def _draws_flatten_with_keys(d: Draws):
    names = tuple(d._streams)
    return [(jax.tree_util.DictKey(k), d._streams[k]) for k in names], names


def _draws_unflatten(names, children):
    out = object.__new__(Draws)
    object.__setattr__(out, "_streams", dict(zip(names, children)))
    return out


jax.tree_util.register_pytree_with_keys(Draws, _draws_flatten_with_keys, _draws_unflatten,
                                        _draws_flatten)


_SELECT_BLOCK = 256


def _row_block(x: Array, b, width: int) -> tuple[Array, Array]:
    """Block ``b`` (``width`` positions) of every row of ``x`` [R, L], and which of its slots are
    new: the last block starts at L − width and may overlap the previous one."""
    length = x.shape[1]
    start = jnp.minimum(b * width, length - width)
    blk = jax.lax.dynamic_slice_in_dim(x, start, width, axis=1)
    return blk, (start + jnp.arange(width)) >= b * width


@functools.partial(jax.jit, static_argnums=(2,))
def _selected_rows(answers: Array, items: Array, k: int) -> Array:
    """``selected`` for a 2-D batch [R, L], reading blocks only until a row has k picks.

    SVT outcomes are mostly -1 past the halting point, so for a top-c run this touches the first
    few blocks of most rows instead of the whole stream (a cumulative sum over trials x n costs
    more than the mechanism itself); rows that need more are compacted (``svtjax._loops``).
    """
    from svtjax._loops import compacting_block_loop

    rows, length = answers.shape
    width = min(_SELECT_BLOCK, length)
    num_blocks = -(-length // width)

    def body(b, carry, work):
        count, picks = carry
        answers, items = work
        blk, fresh = _row_block(answers, b, width)
        blk_items, _ = _row_block(items, b, width)
        top = (blk == 1) & fresh[None, :] & (count < k)[:, None]
        rank = count[:, None] + jnp.cumsum(top, axis=1, dtype=jnp.int32) - 1
        slot = jnp.where(top & (rank < k), rank, k)  # slot k is a discard column
        row_ids = jnp.arange(picks.shape[0])[:, None]
        picks = picks.at[row_ids, slot].set(blk_items.astype(jnp.int32), mode="drop")
        return (count + jnp.sum(top, axis=1, dtype=jnp.int32), picks), work

    init = (jnp.zeros((rows,), jnp.int32), jnp.full((rows, k + 1), -1, jnp.int32))
    out = compacting_block_loop(body, lambda c: c[0] < k, init, (answers, items), num_blocks)
    return out[1][:, :k]


@jax.jit
def _prefix_rows(answers: Array) -> tuple[Array, Array]:
    """``prefix_counts`` for a 2-D batch [R, L], reading blocks only until a row's first -1."""
    from svtjax._loops import compacting_block_loop

    rows, length = answers.shape
    width = min(_SELECT_BLOCK, length)
    num_blocks = -(-length // width)

    def body(b, carry, answers):
        evaluated, tops, done = carry
        blk, fresh = _row_block(answers, b, width)
        slot = jnp.arange(width, dtype=jnp.int32)
        first_stop = jnp.min(jnp.where((blk < 0) & fresh[None, :], slot, width), axis=1)
        stop = first_stop < width
        inside = fresh[None, :] & (slot[None, :] < first_stop[:, None]) & ~done[:, None]
        # Fresh slots are a suffix of the block, so the prefix gains first_stop - (first fresh
        # slot) positions; the ⊤ are summed in int16 (a same-width reduction, which XLA's CPU
        # backend vectorises; width <= 256 fits).
        gained = first_stop - (b * width - jnp.minimum(b * width, length - width))
        evaluated = evaluated + jnp.where(done, 0, gained)
        tops = tops + jnp.sum((inside & (blk == 1)).astype(jnp.int16), axis=1,
                              dtype=jnp.int16).astype(jnp.int32)
        return (evaluated, tops, done | stop), answers

    init = (jnp.zeros((rows,), jnp.int32), jnp.zeros((rows,), jnp.int32),
            jnp.zeros((rows,), bool))
    evaluated, tops, _ = compacting_block_loop(body, lambda c: ~c[2], init, answers, num_blocks)
    return evaluated, tops


def _rows_of(outcome: Outcome) -> tuple[Array, Array, tuple[int, ...]]:
    answers, items = jnp.asarray(outcome.answers), jnp.asarray(outcome.items)
    if answers.shape != items.shape or answers.ndim < 1:
        raise ValueError("outcome.answers and outcome.items must share a shape [..., L]; got "
                         f"{answers.shape} and {items.shape}")
    length = answers.shape[-1]
    return answers.reshape(-1, length), items.reshape(-1, length), answers.shape[:-1]


def prefix_counts(outcome: Outcome) -> tuple[Array, Array]:
    """Length of the evaluated prefix of each stream, and the ⊤ answers in it.

    The prefix ends at the first position with ``answers == -1`` (or at L). A single-pass
    mechanism evaluates exactly a prefix of its stream (every SVT variant without retraversal
    stops for good at its c-th ⊤, its cap or its last stage), so for those the two numbers are
    the totals ``sum(answers >= 0)`` and ``sum(answers == 1)``; with retraversal (later passes
    skip the items already answered ⊤) they are not. Unlike the totals this reads each row only
    up to its halting point, block by block (like :func:`selected`), so a reducer built on it
    costs O(positions reached) rather than O(L) per trial.

    Args:
      outcome: an ``Outcome``, with any number of leading batch axes.

    Returns:
      Two int32 arrays shaped like the batch axes: (prefix length, ⊤ in the prefix).
    """
    answers, _, batch = _rows_of(outcome)
    evaluated, tops = _prefix_rows(answers)
    return evaluated.reshape(batch), tops.reshape(batch)


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
    answers, items, batch = _rows_of(outcome)
    picks = _selected_rows(answers, items, k)
    return picks.reshape(batch + (k,))
