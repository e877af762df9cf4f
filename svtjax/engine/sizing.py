"""A trial's working memory and a chunk's memory budget, derived by the engine from what a
mechanism declares; a mechanism writes no sizing code of its own.

* A threshold rule (:class:`svtjax.mechanisms.ThresholdMechanism`) declares its streams
  (``streams()``, drawn at every position; ``initial_streams()``, one number per trial), what a
  position writes (``Written.value`` where ``has_values()``, ``Written.cost`` where
  ``per_position_cost``) and its passes; the engine lays its stream out
  (:func:`~svtjax.engine.layout.layout`) and sizes the buffers it keeps for them
  (:func:`rule_bytes`).
* A mechanism outside the rule engine (the selection kernels) declares a
  :class:`~svtjax.mechanisms.base.Footprint`: the arrays a trial holds besides its Outcome, per
  item or per Outcome position, and whether its kernel is cache-bound (:func:`held_bytes`).

A run's chunk is the largest whose trials' working memory fits the memory budget, a
cache-bound kernel's budget at most the platform's
:attr:`~svtjax.engine.platform.Platform.cache_chunk_bytes` (:func:`chunk_budget`). None of this
changes a number: trial t always draws from ``fold_in(root, t)``.
"""

from __future__ import annotations

from typing import Optional

import jax.numpy as jnp

from svtjax.engine.layout import layout
from svtjax.engine.platform import Platform, resolve
from svtjax.engine.shuffle import perm_dtype
from svtjax.mechanisms.base import Footprint, Held
from svtjax.mechanisms.rules import ThresholdMechanism

__all__ = ["working_bytes", "rule_bytes", "held_bytes", "chunk_budget", "footprint",
           "DEFAULT_FOOTPRINT"]

OUTCOME_POSITION_BYTES = (1, 4)
"""A full Outcome's fixed-size bytes per position: answers int8 and items int32 (its values and
costs take one float each)."""


DEFAULT_FOOTPRINT = Footprint(held=(
    Held("the standard variates, the noisy scores and a scratch copy", floats=3),
    Held("the random order", bytes=4, shuffled=True)))
"""The footprint of a mechanism outside the rule engine that declares none: a stream's standard
variates, its noisy scores and a copy per item, and an int32 random order when shuffled."""


def working_bytes(mech, n: int, itemsize: int, shuffle: bool,
                  config: Optional[Platform] = None) -> int:
    """Working memory of one trial of ``mech`` on ``n`` queries inside a compiled chunk
    (``itemsize``: the bytes of the run's float dtype; ``shuffle``: each trial in its own random
    order; ``config``: the platform, None: JAX's default backend's), from what the mechanism
    declares: :func:`rule_bytes` for a threshold rule, else :func:`held_bytes` of its
    :class:`~svtjax.mechanisms.base.Footprint`."""
    if isinstance(mech, ThresholdMechanism):
        return rule_bytes(mech, n, itemsize, shuffle, config)
    return held_bytes(footprint(mech), mech.stream_length(n), n, itemsize, shuffle)


def rule_bytes(mech: ThresholdMechanism, n: int, itemsize: int, shuffle: bool,
               config: Optional[Platform] = None) -> int:
    """A threshold rule's trial, from its declared streams and outputs: the buffers of its
    compact Outcome at every stream position (answers int8; items int32 when shuffled or
    retraversed, except where a single pass's items are read from the compiled block's
    permutation; a float for each of ``Written.value`` and ``Written.cost`` the rule writes),
    one eighth more for the rows gathered when finished trials are compacted away, the
    permutation when shuffled, and for each per-position stream (at least one) four buffers of
    one processing block (its variates and the arrays a block computes from them). The initial
    streams' few numbers per trial are not counted."""
    if config is None:
        config = resolve()
    lay = layout(mech, n, config=config)
    in_perm = shuffle and lay.passes == 1 and config.native
    items = 4 if (shuffle and not in_perm) or lay.passes > 1 else 0
    written = (itemsize if mech.has_values() else 0) + \
        (itemsize if mech.per_position_cost else 0)
    outputs = lay.buffer * (1 + items + written) * 9 // 8
    perm = jnp.dtype(perm_dtype(lay.n_pad)).itemsize * lay.n_pad if shuffle else 0
    draws = 4 * max(1, len(mech.streams())) * lay.width * itemsize
    return outputs + perm + draws


def held_bytes(fp: Footprint, length: int, n: int, itemsize: int, shuffle: bool) -> int:
    """A trial of a mechanism outside the rule engine: its full Outcome at each of its
    ``length`` positions (:data:`OUTCOME_POSITION_BYTES` and a value and a cost float) and the
    arrays its :class:`~svtjax.mechanisms.base.Footprint` declares (those marked ``shuffled``
    only when ``shuffle``)."""
    total = length * (sum(OUTCOME_POSITION_BYTES) + 2 * itemsize)
    for held in fp.held:
        if held.shuffled and not shuffle:
            continue
        count = n if held.per == "item" else length
        total += count * (held.floats * itemsize + held.bytes)
    return total


def footprint(mech) -> Footprint:
    """The :class:`~svtjax.mechanisms.base.Footprint` ``mech`` declares (``footprint``, a class
    attribute; none: :data:`DEFAULT_FOOTPRINT`); a threshold rule's is empty (the engine
    derives its memory instead)."""
    if isinstance(mech, ThresholdMechanism):
        return Footprint()
    fp = getattr(mech, "footprint", DEFAULT_FOOTPRINT)
    if not isinstance(fp, Footprint):
        raise TypeError(f"{type(mech).__name__}.footprint must be a svtjax.mechanisms.base."
                        f"Footprint (what a trial holds, for chunk sizing); got {fp!r}")
    return fp


def chunk_budget(mech, budget: float, config: Optional[Platform] = None) -> float:
    """The bytes a chunk of ``mech``'s trials may take on ``config``'s platform (None: JAX's
    default backend's): ``budget``, at most the platform's
    :attr:`~svtjax.engine.platform.Platform.cache_chunk_bytes` for a mechanism whose
    :class:`~svtjax.mechanisms.base.Footprint` is ``cache_bound``."""
    if config is None:
        config = resolve()
    if footprint(mech).cache_bound and config.cache_chunk_bytes is not None:
        return min(budget, config.cache_chunk_bytes)
    return budget
