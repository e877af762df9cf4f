"""A block loop over a batch of independent rows that compacts finished rows away.

Monte Carlo trials finish at very different points of a stream: most of a top-c SVT batch halts
within a block or two while a few stragglers run on. A batch-level ``while_loop`` would make
every row pay for the slowest one. :func:`compacting_block_loop` runs the batch until at most
1/``factor`` of its rows are still running, gathers those into a smaller batch (static bucket
sizes, so it compiles a bounded number of times), continues with them only, and scatters their
rows back. Rows are independent and the body deterministic, so compaction never changes a result.

Every level is a separate ``while_loop`` with its own copy of the body, so each level costs a full
trace, lowering and XLA compilation of the body. A level narrower than :data:`MIN_LEVEL` rows is
not made: at that width a block's cost is the loop's fixed per-iteration cost, not its rows, so the
level saved no measurable run time while adding a level's compilation per SVT kernel on a CPU
(benchmarks/RESULTS.md, Decisions: MIN_LEVEL).
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
from jax import lax

COMPACTION = 8
MIN_LEVEL = 16
"""The narrowest compaction level, in rows (see the module doc)."""


def bucket_sizes(batch: int, factor: int = COMPACTION, min_level: int = MIN_LEVEL) -> list[int]:
    """Static batch sizes of the compaction levels: batch, ⌈batch/8⌉, ⌈batch/64⌉, ..., each
    level at least ``min_level`` rows wide (the first is the batch, whatever its size)."""
    sizes = [batch]
    while -(-sizes[-1] // factor) >= max(min_level, 2) and sizes[-1] > factor:
        sizes.append(-(-sizes[-1] // factor))
    return sizes


def compacting_block_loop(body: Callable[[Any, Any, Any], tuple[Any, Any]],
                          running: Callable[[Any], Any], rows: Any, work: Any, num_blocks: int,
                          *, factor: int = COMPACTION,
                          take_work: Callable[[Any, Any], Any] | None = None,
                          shared: Callable[[Any], Any] | None = None) -> Any:
    """Applies ``rows, work = body(b, rows, work)`` for b = 0, 1, ... while any row is running.

    Args:
      body: ``(b, rows, work) -> (rows, work)``; ``b`` is the shared block index (a traced int32
        scalar). A row that is no longer running must come out of ``rows`` unchanged.
      running: ``rows -> bool[batch]``.
      rows: the result: a pytree whose leaves have the batch as leading axis; the rows of a
        compacted level are scattered back.
      work: per-row inputs and scratch state (keys, draws, a permutation), leading batch axis;
        gathered on compaction, never scattered back.
      num_blocks: the loop never goes past this many blocks.
      factor: compaction factor.
      take_work: ``(work, idx) -> work`` gathering rows ``idx`` of ``work`` (default: along the
        leading axis of every leaf), for work laid out with the batch elsewhere.
      shared: ``work -> pytree``: a part of ``work`` that every level carries whole (its
        ``take_work`` passes it on ungathered, e.g. state addressed through a slot per row);
        its value after the last block is returned too.

    Returns:
      The final ``rows``; with ``shared``, ``(rows, shared(final work))``.
    """
    batch = jax.tree_util.tree_leaves(rows)[0].shape[0]
    take = lambda tree, idx: jax.tree_util.tree_map(  # noqa: E731
        lambda x: jnp.take(x, idx, axis=0), tree)
    take_work = take if take_work is None else take_work

    def level(sizes, b, rows, work):
        limit = sizes[1] if len(sizes) > 1 else 0

        def cond(carry):
            b, rows, _ = carry
            return (b < num_blocks) & (jnp.sum(running(rows), dtype=jnp.int32) > limit)

        def step(carry):
            b, rows, work = carry
            rows, work = body(b, rows, work)
            return b + 1, rows, work

        b, rows, work = lax.while_loop(cond, step, (b, rows, work))
        if len(sizes) == 1:
            return rows, (None if shared is None else shared(work))
        # Gather the (at most `limit`) running rows; pad with finished rows, which the body
        # leaves unchanged, so scattering every gathered row back is harmless.
        idx = jnp.nonzero(running(rows), size=limit, fill_value=0)[0]
        sub, last = level(sizes[1:], b, take(rows, idx), take_work(work, idx))
        rows = jax.tree_util.tree_map(lambda full, part: full.at[idx].set(part), rows, sub)
        return rows, last

    # A level runs at least one block before it hands its stragglers on, so a loop of
    # `num_blocks` blocks never reaches more than `num_blocks` levels: the deeper ones would
    # only be compiled (a short stream, e.g. the tests' few-item cases, compiles one level).
    sizes = bucket_sizes(batch, factor)[:max(1, num_blocks)]
    rows, last = level(sizes, jnp.int32(0), rows, work)
    return rows if shared is None else (rows, last)
