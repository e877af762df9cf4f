"""What a sweep keeps of its trials: per-trial metric values computed inside the compiled
chunk (the reducer handed to ``svtjax._driver.run_chunk``), merged on the host in fixed blocks
of :data:`BLOCK_TRIALS` trials, so no number depends on the chunking."""

from __future__ import annotations

import functools
import math
from typing import Optional

import numpy as np

from svtjax.sweep.config import MetricContext

BLOCK_TRIALS = 256
"""Trials per host-side merge block: per-trial values are summed in blocks of this many trials
(in trial order) and the blocks merged in order, so results do not depend on the chunking."""


TRACES: dict[str, int] = {}
"""Mechanism name -> number of times a group's chunk was traced (each trace is one compile)."""


def _per_trial(out, scores, c, *, k: int, metrics: tuple, own: tuple = (),
               ctx: Optional[MetricContext] = None):
    """float[len(metrics), trials]: per-trial metric values of a batch of Outcomes.

    Every built-in value is a function of its trial alone, bit for bit: the metrics' sums are
    exact and a trial's cost is summed in a fixed order (``svtjax._fixedpoint``), not by float
    reductions whose rounding follows the chunk's shape, so the memory budget (the chunk size)
    never changes a number."""
    import jax.numpy as jnp

    from svtjax import _fixedpoint
    from svtjax import metrics as M

    dtype = scores.dtype
    length = out.answers.shape[-1]
    single_pass = length == scores.shape[0]
    needs = any(m in M.METRICS or m == "picks" or (m == "evaluated" and single_pass)
                for m in metrics)
    every = M.evaluate_outcome(out, scores, c, max_c=k) if needs else {}
    rows = []
    own = {m.name: m for m in own}
    for m in metrics:
        if m in own:
            rows.append(jnp.broadcast_to(own[m].fn(out, scores, c, ctx),
                                         out.answers.shape[:1]).astype(dtype))
        elif m in M.METRICS or m == "picks":
            rows.append(every[m].astype(dtype))
        elif m == "evaluated":  # a single-pass trial evaluates the prefix up to its halt
            rows.append(every[m].astype(dtype) / length if single_pass else
                        jnp.mean(out.answers >= 0, axis=-1).astype(dtype))
        elif m == "cost":
            top_cost = getattr(out, "_top_cost", None)
            if getattr(out, "_cost", None) is None and top_cost is not None:
                # a compact Outcome charges top_cost at each ⊤: (number of ⊤) x top_cost
                tops = jnp.sum(out.answers == 1, axis=-1, dtype=jnp.int32)
                rows.append(tops.astype(dtype) * jnp.asarray(top_cost).astype(dtype))
            else:
                rows.append(_fixedpoint.tree_sum(out.cost.astype(dtype)))
    return jnp.stack(rows)


def _point_values(k, metrics, own, rule, scores, out, ctx):
    """The reducer a sweep hands to ``_driver.run_chunk``: per-trial metric values of one
    point (``ctx.extra``: its c, threshold and prepared values)."""
    import jax.numpy as jnp

    name = getattr(ctx.mech, "name", type(ctx.mech).__name__)
    TRACES[name] = TRACES.get(name, 0) + 1
    extra = ctx.extra
    thresholds = ctx.thresholds if rule else jnp.broadcast_to(
        extra["threshold"].astype(scores.dtype), ctx.index.shape)
    mctx = MetricContext(thresholds, ctx.keys, ctx.mech, k, extra["prepared"])
    return _per_trial(out, scores, extra["c"], k=k, metrics=metrics, own=own, ctx=mctx)


@functools.lru_cache(maxsize=None)
def _reducer_fn(k: int, metrics: tuple, own: tuple, rule: bool):
    """One function object per static configuration, so the compiled chunk is reused."""
    return functools.partial(_point_values, k, metrics, own, rule)


# -- host-side statistics -------------------------------------------------------------------------

class _Stats:
    """Count, mean and sum of squared deviations per (point, metric), merged block by block
    (Chan et al.'s pairwise update) in trial order: deterministic for a given trial sequence."""

    def __init__(self, shape):
        self.n = np.zeros(shape)
        self.mean = np.zeros(shape)
        self.m2 = np.zeros(shape)

    def add_blocks(self, values: np.ndarray, valid: int) -> None:
        """``values``: float[..., T] per-trial values, T a multiple of BLOCK_TRIALS except for a
        last block; only the first ``valid`` trials count."""
        values = np.asarray(values, np.float64)[..., :valid]
        for lo in range(0, valid, BLOCK_TRIALS):
            blk = np.zeros(values.shape[:-1] + (BLOCK_TRIALS,))
            part = values[..., lo:lo + BLOCK_TRIALS]
            blk[..., :part.shape[-1]] = part
            nb = part.shape[-1]
            mb = np.sum(blk, axis=-1) / nb
            dev = np.where(np.arange(BLOCK_TRIALS) < nb, blk - mb[..., None], 0.0)
            m2b = np.sum(dev * dev, axis=-1)
            n_new = self.n + nb
            delta = mb - self.mean
            self.mean = self.mean + delta * (nb / n_new)
            self.m2 = self.m2 + m2b + delta * delta * (self.n * nb / n_new)
            self.n = n_new


def _summarise(n: float, mean: float, m2: float) -> dict:
    from scipy import stats

    n = int(n)
    std = math.sqrt(m2 / (n - 1)) if n > 1 else math.nan
    se = std / math.sqrt(n) if n > 1 else math.nan
    q = float(stats.t.ppf(0.975, n - 1)) if n > 1 else math.nan
    return {"mean": mean, "std": std, "se": se, "ci_low": mean - q * se,
            "ci_high": mean + q * se, "trials": n}

