"""The benchmark workload: the researchers' top-c selection on Zipf scores.

Scores q_i = 10,000 / i (i = 1..n, float32), threshold T = the mean of the c-th and (c+1)-th
largest score (Lyu, Su, Li 2017, Section 5, the threshold rule of their top-c experiments),
``svt-s`` with monotonic queries and the 1:c^(2/3) split (Lyu'17 Algorithm 7, Section 4.3),
ε = 0.5, c = 50. Per trial the mechanism's output is the selected items and the halting
position.

Item orders (``order=``):

* ``"fixed"`` — the headline: the items stored once in a random order, a permutation drawn with
  a fixed seed (:data:`ORDER_SEED`), the same for every trial and every engine. This is how the
  papers' published experiment code prepares its data: Ding, Wang, Zhang, Kifer's code for
  "Free Gap Information from the Differentially Private Sparse Vector and Noisy Max Mechanisms"
  (github.com/yxwangcs/freegap, ``freegap/__main__.py``, ``process_datasets``) counts the items
  of each dataset and shuffles the counts once with ``np.random.RandomState(0)`` before any
  trial runs.
* ``"sorted"`` — decreasing scores (the SVT halts after reading under 1% of the stream at
  n = 10^4); kept as an extra mode, not the headline.

A per-trial random order (``"shuffle"`` mode of the harness) runs on the fixed order's array with
``simulate(..., shuffle=True)``; the numba loop shuffles it per trial.

The RNG floor (:func:`floor_timer`): how fast JAX draws the noise, under each of its generators.

For each generator (``jax.random.key(seed, impl=...)``: ``threefry2x32``, JAX's default, and the
XLA ``rbg`` and ``unsafe_rbg`` generators), each distribution (float32 Laplace, the noise svt-s
draws; raw uint32 bits, what every distribution is made from) and each way of keying:

* ``array`` — one key, one big array of trials × (blocks · 64) variates;
* ``block`` — svtjax's keying: trial key ``fold_in(key, t)``, then ``fold_in(trial_key, b)`` and
  64 variates per block b, vmapped over trials and blocks (position p of a stream is variate
  p % 64 of block p // 64).

A floor is jitted and warm, its output materialised (``block_until_ready``); the rate is variates
per second. The headline's physical limit uses the default generator's ``array`` Laplace floor:
a run that reads a fraction f of its stream cannot beat (floor rate / f) query evaluations per
second, so svtjax's evaluated positions per second divided by the floor rate is its fraction of
that limit.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Optional

import numpy as np

__all__ = ["HEADLINE", "EPSILON", "C", "ORDER_SEED", "ORDERS", "zipf_workload", "top_c",
           "selection_metrics", "headline_params", "svt_s_scales", "mechanism_params",
           "MetricReducer", "count_reduce", "halting_positions", "selected_and_halts",
           "IMPLS", "DISTS", "FORMS", "BLOCK", "DEFAULT_IMPL", "floor_shape", "floor_timer"]

HEADLINE = "svt-s"
EPSILON = 0.5
C = 50
ORDER_SEED = 0
"""Seed of the fixed random item order (``np.random.RandomState(ORDER_SEED).permutation(n)``)."""
ORDERS = ("fixed", "sorted")


def size_arg(text: str) -> tuple[int, int]:
    """``NxTRIALS`` (e.g. ``10000x1000``) as (n, trials): the ``type=`` of the benchmarks'
    size options, an ``argparse.ArgumentTypeError`` (one line) when malformed."""
    import argparse

    try:
        n, trials = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a size is NxTRIALS, e.g. 10000x1000; got {text!r}") from None
    if n < 1 or trials < 1:
        raise argparse.ArgumentTypeError(f"n and trials must be >= 1; got {text!r}")
    return (n, trials)


def zipf_workload(n: int, c: int = C, order: str = "fixed", seed: int = ORDER_SEED
                  ) -> tuple[np.ndarray, float]:
    """Zipf scores 10,000 / i in the stored order, and the threshold T.

    Args:
      n: number of items (> c).
      c: the cut-off; T sits between the c-th and (c+1)-th largest score.
      order: ``"fixed"`` (one random order, a permutation drawn with ``seed``) or ``"sorted"``
        (decreasing scores).
      seed: seed of the fixed order.

    Returns:
      (float32[n] scores in stored order, T as a Python float).

    Raises:
      ValueError: n <= c or an unknown order.
    """
    if n <= c:
        raise ValueError(f"the workload needs n > c (T sits between the c-th and (c+1)-th "
                         f"largest score); got n={n}, c={c}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}; got {order!r}")
    q = (10_000.0 / np.arange(1, n + 1, dtype=np.float64)).astype(np.float32)
    threshold = float((float(q[c - 1]) + float(q[c])) / 2.0)
    if order == "fixed":
        q = q[np.random.RandomState(seed).permutation(n)]
    return q, threshold


def top_c(scores: np.ndarray, c: int) -> np.ndarray:
    """Indices of the c largest scores (the workload's scores have no ties at the c-th)."""
    return np.argsort(-np.asarray(scores, np.float64), kind="stable")[:c]


def selection_metrics(picks: np.ndarray, scores: np.ndarray, c: int) -> tuple[float, float]:
    """Mean F1 and mean SER of top-c selections ``picks`` [trials, k] (-1 padded), in numpy.

    F1 = 2 |S ∩ Top-c| / (|S| + c) (Lyu'17 slides, F-measure); SER = 1 − Σ_{i∈S} s_i /
    Σ_{i∈Top-c} s_i (Lyu'17 Section 5; missing picks count as zero support). A sanity value
    beside the timings (every engine simulates the same law), computed outside the timed region;
    the picks of one trial are distinct (each item is evaluated at most once).
    """
    scores = np.asarray(scores, np.float64)
    picks = np.asarray(picks)
    top = top_c(scores, c)
    in_top = np.zeros(scores.shape[0], bool)
    in_top[top] = True
    valid = picks >= 0
    safe = np.where(valid, picks, 0)
    size = valid.sum(axis=1)
    hits = (valid & in_top[safe]).sum(axis=1)
    support = np.where(valid, scores[safe], 0.0).sum(axis=1)
    f1 = 2.0 * hits / (size + c)
    ser = 1.0 - support / scores[top].sum()
    return float(f1.mean()), float(ser.mean())


def headline_params(epsilon: float = EPSILON, c: int = C) -> dict:
    """svt-s's parameters in the headline: monotonic queries, ε1 : ε2 = 1 : c^(2/3)."""
    return {"epsilon": epsilon, "c": c, "monotonic": True, "allocation": "1:c^(2/3)"}


def svt_s_scales(epsilon: float = EPSILON, c: int = C, sensitivity: float = 1.0
                 ) -> tuple[float, float]:
    """(threshold noise scale, query noise scale) of the headline's svt-s, for the baselines.

    Lyu, Su, Li 2017, Algorithm 7: line 1 ρ = Lap(Δ/ε1); line 3 ν_i = Lap(cΔ/ε2) for monotonic
    queries (Section 4.3, Theorem 7); Section 4.3's split ε1 : ε2 = 1 : c^(2/3). Written from the
    paper, not read from the mechanism, so that a baseline cannot inherit a scaling bug
    (tests/test_bench.py checks the baselines' halting law against svtjax's).
    """
    w = float(c) ** (2.0 / 3.0)
    eps2 = epsilon * w / (1.0 + w)
    eps1 = epsilon - eps2
    return sensitivity / eps1, c * sensitivity / eps2


def _registered_class(name: str) -> type:
    import svtjax

    return svtjax.mechanisms.registry()[name]


def mechanism_params(name: str, *, epsilon: float = EPSILON, c: int = C,
                     n: Optional[int] = None) -> dict:
    """The parameters a registered mechanism runs with in the all-mechanisms table: the class's
    ``example_params(epsilon=, c=, n=)`` (ε, the cut-off c or k, and any required parameter),
    plus this workload's choices where the mechanism takes them: ``monotonic=True`` (Zipf scores
    are counts: monotonic queries) and ``allocation="1:c^(2/3)"``.
    """
    from svtjax.mechanisms import parameters

    params = dict(_registered_class(name).example_params(epsilon=epsilon, c=c, n=n))
    accepted = parameters(name)
    for key, value in (("monotonic", True), ("allocation", "1:c^(2/3)")):
        if key in accepted and key not in params:
            params[key] = value
    return params


def halting_positions(outcome):
    """Per trial, the number of positions evaluated before the mechanism halted.

    Uses ``svtjax.prefix_counts`` (reads each trial only up to its halt) where svtjax has it;
    svt-s evaluates exactly a prefix of its stream, so this is ``sum(answers >= 0)``.
    """
    import jax.numpy as jnp

    import svtjax

    prefix_counts = getattr(svtjax, "prefix_counts", None)
    if prefix_counts is not None:
        return prefix_counts(outcome)[0]
    return jnp.sum(outcome.answers >= 0, axis=-1, dtype=jnp.int32)


@functools.lru_cache(maxsize=None)
def selected_and_halts(c: int):
    """``jax.jit`` of ``outcome -> (svtjax.selected(outcome, c), halting_positions(outcome))``.

    The headline's post-processing of full Outcomes, one compiled call per ``c``. (Called
    outside ``jit``, ``svtjax.selected`` and ``svtjax.prefix_counts`` at f3322fe retrace and
    recompile their block loop on every call, about a second each on the 2-core VM, whatever the
    size: a user should wrap them in ``jit`` as done here.)
    """
    import jax

    import svtjax

    return jax.jit(lambda outcome: (svtjax.selected(outcome, c), halting_positions(outcome)))


def count_reduce(outcome):
    """Per-trial (evaluated positions, ⊤ answers): the count-only reducer.

    The like-for-like partner of the numba loop that only counts. Reads each trial up to its
    halt (``svtjax.prefix_counts``) where svtjax has it.
    """
    import jax.numpy as jnp

    import svtjax

    prefix_counts = getattr(svtjax, "prefix_counts", None)
    if prefix_counts is not None:
        return prefix_counts(outcome)
    answers = outcome.answers
    return (jnp.sum(answers >= 0, axis=-1, dtype=jnp.int32),
            jnp.sum(answers == 1, axis=-1, dtype=jnp.int32))


@dataclasses.dataclass(frozen=True)
class MetricReducer:
    """``reduce=`` computing per-trial F1 and SER of the top-c selection, and the halt.

    Bind the true scores with ``jax.tree_util.Partial(MetricReducer(c), scores)`` (as
    ``svtjax.simulate``'s docstring says): they are then a traced argument, and the frozen
    dataclass compares equal for equal ``c``, so a new reducer object reuses the compiled chunk.
    F1 is Lyu'17 slides' F-measure, SER Lyu'17 Section 5's support error rate
    (``svtjax.metrics``).

    Returns (per trial): (F1, SER, halting position), from ``svtjax.metrics.evaluate_outcome``
    (one block-wise pass over each trial up to its halt, no picks array).
    """

    c: int

    def __call__(self, scores, outcome):
        import svtjax

        metrics = svtjax.metrics.evaluate_outcome(outcome, scores, self.c)
        return metrics["f1"], metrics["ser"], metrics["evaluated"]


# -- the RNG floor -----------------------------------------------------------------------------

IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")
DISTS = ("laplace", "bits")
FORMS = ("array", "block")
BLOCK = 64
DEFAULT_IMPL = "threefry2x32"


def floor_shape(n: int, trials: int, max_draws: int) -> tuple[int, int]:
    """(trials, blocks) of a floor for an n × trials case, capped at ``max_draws`` variates.

    The rate does not depend on the size once the array is large, so a GPU case of 10^9
    positions is measured on at most ``max_draws`` of them.
    """
    blocks = max(1, math.ceil(n / BLOCK))
    return max(1, min(trials, max_draws // (blocks * BLOCK))), blocks


def _draw_fn(impl: str, dist: str, form: str, trials: int, blocks: int):
    import jax
    import jax.numpy as jnp

    def sample(key, shape):
        if dist == "laplace":
            return jax.random.laplace(key, shape, jnp.float32)
        return jax.random.bits(key, shape, jnp.uint32)

    if form == "array":
        def draw(key):
            return sample(key, (trials, blocks * BLOCK))
    else:
        def draw(key):
            def one_trial(t):
                trial_key = jax.random.fold_in(key, t)
                return jax.vmap(lambda b: sample(jax.random.fold_in(trial_key, b), (BLOCK,)))(
                    jnp.arange(blocks, dtype=jnp.uint32))
            return jax.vmap(one_trial)(jnp.arange(trials, dtype=jnp.uint32))
    return jax.jit(draw)


def floor_timer(impl: str, dist: str, form: str, trials: int, blocks: int, seed: int = 0):
    """A timing function ``fn(repeats) -> row`` for :func:`benchmarks.machine.interleaved`.

    The first call compiles (its time is ``first_call_s``); each call then draws
    trials × blocks × 64 variates.
    """
    import jax

    from benchmarks.machine import calls_per_sample, timed

    if impl not in IMPLS or dist not in DISTS or form not in FORMS:
        raise ValueError(f"unknown floor {impl}/{dist}/{form}; generators {IMPLS}, "
                         f"distributions {DISTS}, forms {FORMS}")
    draw = _draw_fn(impl, dist, form, trials, blocks)
    key = jax.random.key(seed, impl=impl)
    state: dict = {}

    def fn(repeats: int) -> dict:
        call = lambda: jax.block_until_ready(draw(key))  # noqa: E731
        if "first" not in state:
            t0 = time.perf_counter()
            call()
            state["first"] = time.perf_counter() - t0
            state["number"] = calls_per_sample(call)
        times, _, number = timed(call, repeats, number=state["number"])
        return {"times_s": times, "first_call_s": state["first"], "calls_per_sample": number,
                "impl": impl, "dist": dist, "form": form, "draws": trials * blocks * BLOCK,
                "shape": [trials, blocks, BLOCK]}

    return fn
