"""Where histograms come from: :class:`SimulationSampler` (``svtjax.simulate`` with an
on-device reducer), the seeds of an audit's phases and the trial-rate meter."""

from __future__ import annotations

import math
import time
from typing import Mapping

import numpy as np

from svtjax.audit.constants import CHUNK, FAMILIES
from svtjax.audit.events import _histograms, family_shapes, value_edges
from svtjax.audit.pairs import Pair


class SimulationSampler:
    """Histograms of output cells of a mechanism, through ``svtjax.simulate(..., reduce=)``.

    The cells of every trial are counted inside each compiled chunk (memory O(chunk)); the
    pair's item groups and the value bin edges are traced arguments of the reducer and the
    chunk size is fixed, so a mechanism compiles once for the whole audit.

    Any object with a ``histograms`` method of the same signature (and ``chunk_size``) can
    stand in for it in :func:`search`; the tests use exact samplers of mechanisms with a known ε.
    """

    def __init__(self, mech, *, chunk_size: int = CHUNK, edges=None):
        self.mech = mech
        self.chunk_size = int(chunk_size)
        self.edges = np.asarray(value_edges(mech) if edges is None else edges, dtype=float)

    def histograms(self, queries, thresholds, groups, trials: int, seed: int
                   ) -> dict[str, np.ndarray]:
        """{family: int64[cells]}: how many of ``trials`` runs on ``queries`` fall in each cell
        (``groups`` as in :func:`output_cells`)."""
        import jax
        import jax.numpy as jnp

        import svtjax

        q = jnp.asarray(queries)
        if not jnp.issubdtype(q.dtype, jnp.floating):
            q = q.astype(jnp.zeros((), float).dtype)
        reduce = jax.tree_util.Partial(_histograms, jnp.asarray(groups, jnp.int32),
                                       jnp.asarray(self.edges, q.dtype))
        total = svtjax.simulate(self.mech, q, thresholds, trials=int(trials), seed=int(seed),
                                chunk_size=self.chunk_size, reduce=reduce, progress=False)
        return {f: np.asarray(h, np.int64).ravel()
                for f, h in zip(FAMILIES, jax.device_get(total))}


def _shapes_of(hist: Mapping[str, np.ndarray], n: int, num_edges: int
               ) -> dict[str, tuple[int, ...]]:
    length = hist["halt"].size // (n + 1) - 1
    shapes = family_shapes(n, length, num_edges)
    for f in FAMILIES:
        if hist[f].size != math.prod(shapes[f]):
            raise ValueError(f"the sampler's {f} histogram has {hist[f].size} cells; "
                             f"expected {shapes[f]}")
    return shapes


# =============================================================================================


def _subseed(seed: int, *tags: int) -> int:
    """The seed of one phase (``tags``) of an audit with ``seed``: both 32-bit halves of the
    seed are the entropy and the tags the spawn key, so every (seed, tags) has its own stream
    (seeds s and s + 2**32 differ); 64 bits out, as ``svtjax.simulate`` accepts."""
    seed = int(seed)
    return int(np.random.SeedSequence([seed & 0xFFFFFFFF, seed >> 32], spawn_key=tags)
               .generate_state(1, np.uint64)[0])


class _Meter:
    """Runs the sampler and measures its trial rate, leaving out the first (compiling) call."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.calls = 0
        self.trials = 0
        self.busy = 0.0
        self.compile_seconds = 0.0

    def __call__(self, pair: Pair, side: int, groups, trials: int, seed: int):
        queries = pair.queries_prime if side else pair.queries
        t0 = time.perf_counter()
        hist = self.sampler.histograms(queries, pair.thresholds, groups, int(trials), int(seed))
        dt = time.perf_counter() - t0
        if self.calls == 0:
            self.compile_seconds = dt
        else:
            self.trials += int(trials)
            self.busy += dt
        self.calls += 1
        return hist

    @property
    def rate(self) -> float:
        """Trials per second over every call after the first (a lower estimate before any)."""
        if self.trials and self.busy > 0:
            return self.trials / self.busy
        return 1.0 / max(self.compile_seconds, 1e-3)
