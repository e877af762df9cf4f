"""The baselines svtjax is timed against: the papers' numba loop, its process pool, numpy.

The numba loop is written as the SVT papers' published experiment code writes its SVT
(github.com/yxwangcs/freegap, Ding, Wang, Zhang, Kifer's code for "Free Gap Information from the
Differentially Private Sparse Vector and Noisy Max Mechanisms", ``freegap/adaptivesvt.py``: a
``numba.njit(fastmath=True)`` while-loop over the items that draws one ``np.random.laplace``
variate per item inside the loop and stops at the k-th ⊤): per trial, one threshold noise
draw, then per item one Laplace variate, early stop at the c-th ⊤. For a per-trial random order
it adds a Fisher–Yates shuffle that performs only the swaps of the positions a trial reaches
(a full ``np.random.shuffle`` per trial would cost n draws even when the trial halts after a few
percent of the stream, so this is the stronger baseline). Arithmetic in float64 with numba's
``np.random`` (Mersenne Twister, Laplace by inversion), one thread.

The pool runs that loop the way the papers' code runs its trials: ``freegap/evaluate.py``
creates ``multiprocessing.Pool(cpu_count())`` once and splits the trials into one equal chunk
per core (``imap_unordered``), each worker seeding its own generator. Here the pool (``spawn``
start method: the parent is a multi-threaded JAX process, which must not ``fork``) is created and
every worker has compiled the loop before anything is timed.

Every engine returns, per trial, the selected items (int32[trials, c], -1 padded) and the
halting position (int64[trials]: positions evaluated), or only the total of the halting
positions (``store=False``, the counting variant).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import time
from typing import Optional

import numpy as np

__all__ = ["numba_kernel", "run_numba", "NumbaPool", "numpy_vectorized", "split_trials"]


def _svt_loop(q, threshold, rho_scale, nu_scale, c, trials, shuffle, store, seed, picks, halts):
    """svt-s (Lyu'17 Algorithm 7, monotonic) for ``trials`` trials; returns Σ halting positions.

    ``picks[t, :]`` gets trial t's ⊤ items in stream order and ``halts[t]`` its halting position
    when ``store``. Compiled by :func:`numba_kernel`.
    """
    np.random.seed(seed)
    n = q.shape[0]
    perm = np.arange(n)
    swaps = np.empty(n, np.int64)
    total = 0
    for t in range(trials):
        noisy_threshold = threshold + np.random.laplace(0.0, rho_scale)  # line 1
        count = 0
        p = 0
        while p < n and count < c:  # line 11: abort after c ⊤
            if shuffle:  # Fisher–Yates step p: only the positions reached
                j = p + np.random.randint(0, n - p)
                tmp = perm[p]
                perm[p] = perm[j]
                perm[j] = tmp
                swaps[p] = j
                i = perm[p]
            else:
                i = p
            if q[i] + np.random.laplace(0.0, nu_scale) >= noisy_threshold:  # lines 3-4
                if store:
                    picks[t, count] = i
                count += 1
            p += 1
        if shuffle:  # undo the swaps: perm is the identity again for the next trial
            for k in range(p - 1, -1, -1):
                j = swaps[k]
                tmp = perm[k]
                perm[k] = perm[j]
                perm[j] = tmp
        if store:
            halts[t] = p
        total += p
    return total


@functools.lru_cache(maxsize=None)
def numba_kernel():
    """The compiled loop; raises ImportError when numba is not importable."""
    import numba

    return numba.njit(fastmath=True, cache=True)(_svt_loop)


def run_numba(q, threshold, rho_scale, nu_scale, c, trials, shuffle, seed, store=True):
    """Runs the single-thread numba loop.

    Returns:
      (picks int32[trials, c] or None, halts int64[trials] or None, Σ halting positions).
    """
    kernel = numba_kernel()
    picks = np.full((trials, c) if store else (1, 1), -1, np.int32)
    halts = np.zeros(trials if store else 1, np.int64)
    total = kernel(np.asarray(q, np.float64), float(threshold), float(rho_scale),
                   float(nu_scale), int(c), int(trials), bool(shuffle), bool(store), int(seed),
                   picks, halts)
    return (picks, halts, int(total)) if store else (None, None, int(total))


def split_trials(trials: int, parts: int) -> list[int]:
    """Equal chunks, the remainder to the last (as freegap/evaluate.py splits its iterations)."""
    sizes = [trials // parts] * parts
    sizes[-1] += trials - sum(sizes)
    return [s for s in sizes if s > 0]


def _pool_init():
    """Worker start-up: compile the loop (numba's on-disk cache makes later workers quick)."""
    q = np.linspace(10.0, 1.0, 8)
    run_numba(q, 5.0, 1.0, 1.0, 2, 2, True, 0)


def _pool_ready(_):
    time.sleep(0.05)
    return os.getpid()


def _pool_chunk(task):
    q, threshold, rho_scale, nu_scale, c, trials, shuffle, seed, store = task
    return run_numba(q, threshold, rho_scale, nu_scale, c, trials, shuffle, seed, store)


class NumbaPool:
    """A process pool over ``workers`` cores, each running the numba loop on a chunk of trials.

    Created once and warm (every worker has compiled the loop) before it is timed; use as a
    context manager, or call :meth:`close`.
    """

    def __init__(self, workers: Optional[int] = None):
        numba_kernel()  # ImportError here, in the parent, when numba is missing
        if workers is None:
            try:
                workers = len(os.sched_getaffinity(0))
            except AttributeError:
                workers = os.cpu_count() or 1
        self.workers = int(workers)
        self._pool = multiprocessing.get_context("spawn").Pool(self.workers,
                                                                initializer=_pool_init)
        seen: set = set()
        for _ in range(20):  # a worker takes a task only once its initializer has finished
            seen.update(self._pool.map(_pool_ready, range(self.workers), chunksize=1))
            if len(seen) >= self.workers:
                break

    def run(self, q, threshold, rho_scale, nu_scale, c, trials, shuffle, seed, store=True):
        """Like :func:`run_numba`; chunk i of the trials is seeded ``seed + i``."""
        q64 = np.asarray(q, np.float64)
        tasks = [(q64, threshold, rho_scale, nu_scale, c, size, shuffle, seed + i, store)
                 for i, size in enumerate(split_trials(int(trials), self.workers))]
        parts = self._pool.map(_pool_chunk, tasks, chunksize=1)
        total = sum(p[2] for p in parts)
        if not store:
            return None, None, total
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                total)

    def close(self):
        self._pool.terminate()
        self._pool.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def numpy_vectorized(q, threshold, rho_scale, nu_scale, c, trials, shuffle, seed,
                     max_elements: int = 1 << 22):
    """svt-s for a chunk of trials at once in numpy (float32), the same outputs as the loop.

    All noise of a chunk of trials × n positions is drawn at once (Laplace as the difference of
    two standard exponentials), a trial halts where the cumulative count of ⊤ reaches c;
    ``rng.permuted`` gives per-trial orders.
    """
    n = q.shape[0]
    rng = np.random.default_rng(seed)
    f32 = np.float32
    q32 = np.asarray(q, f32)
    picks = np.full((trials, c), -1, np.int32)
    halts = np.empty(trials, np.int64)
    idx = np.arange(n, dtype=np.int32)
    step = max(1, max_elements // n)
    for s in range(0, trials, step):
        k = min(step, trials - s)
        rho = f32(rho_scale) * (rng.standard_exponential(k, dtype=f32)
                                - rng.standard_exponential(k, dtype=f32))
        noisy = rng.standard_exponential((k, n), dtype=f32)
        noisy -= rng.standard_exponential((k, n), dtype=f32)
        noisy *= f32(nu_scale)
        order = rng.permuted(np.broadcast_to(idx, (k, n)), axis=1) if shuffle else None
        noisy += q32[order] if shuffle else q32
        above = noisy >= f32(threshold) + rho[:, None]
        rank = np.cumsum(above, axis=1, dtype=np.int32)  # ⊤ up to and including a position
        # a trial halts right after its c-th ⊤, else reads all n positions
        halts[s:s + k] = np.where(rank[:, -1] >= c, np.argmax(rank >= c, axis=1) + 1, n)
        rows, cols = np.nonzero(above & (rank <= c))
        items = order[rows, cols] if shuffle else cols
        picks[s + rows, rank[rows, cols] - 1] = items
    return picks, halts, int(halts.sum())
