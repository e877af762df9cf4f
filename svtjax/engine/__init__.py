"""The one engine every threshold mechanism runs on (``docs/architecture.md``).

A mechanism supplies a rule (:class:`svtjax.mechanisms.ThresholdMechanism`: streams, state,
step, halting, optionally a block form); this package runs it for a batch of trials:

* :mod:`~svtjax.engine.platform`: the per-platform choices (block width, compaction factor,
  draws made once, the shuffle's compiled prefix), resolved once per traced batch into a frozen
  :class:`~svtjax.engine.platform.Platform`; none of them changes a number;
* :mod:`~svtjax.engine.layout`: a stream cut into processing blocks, the output buffers;
* :mod:`~svtjax.engine.draws`: block-keyed draws, so that the number at a position depends only
  on (trial key, stream, position) and noise is drawn only for the blocks reached;
* :mod:`~svtjax.engine.shuffle`: the lazy Fisher–Yates shuffle (pure JAX and compiled);
* :mod:`~svtjax.engine.loop`: the block loop with early exit and compaction, retraversal
  passes and caps, the rule vectorised or scanned;
* :mod:`~svtjax.engine.outcome`: the compact Outcome;
* :mod:`~svtjax.engine.sizing`: a trial's working memory and a chunk's budget, derived from
  what a mechanism declares (a rule's streams and outputs; a selection kernel's
  :class:`~svtjax.mechanisms.base.Footprint`).
"""

from svtjax.engine.draws import draw, fast_block_order
from svtjax.engine.layout import Layout
from svtjax.engine.loop import run_draws, run_keys
from svtjax.engine.platform import (
    BLOCK_WIDTH,
    CACHE_CHUNK_BYTES,
    COMPACTION,
    DRAW_ONCE,
    NARROW,
    SHUFFLE_PREFIX,
    Platform,
    block_width,
    compaction_factor,
    resolve,
)
from svtjax.engine.shuffle import (
    fisher_yates_block,
    fisher_yates_prefix,
    perm_dtype,
    shuffle_init,
    shuffle_prefix,
)
from svtjax.engine.sizing import chunk_budget, working_bytes
from svtjax.mechanisms.base import BLOCK, Footprint, Held

__all__ = ["BLOCK", "BLOCK_WIDTH", "CACHE_CHUNK_BYTES", "COMPACTION", "DRAW_ONCE", "Footprint",
           "Held", "NARROW", "SHUFFLE_PREFIX", "Layout", "Platform", "block_width",
           "chunk_budget", "compaction_factor", "draw",
           "fast_block_order", "fisher_yates_block", "fisher_yates_prefix", "perm_dtype",
           "resolve", "run_draws", "run_keys", "shuffle_init", "shuffle_prefix", "working_bytes"]
