"""The RNG floor: how fast JAX draws the noise, under each of its generators.

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

import math
import time

__all__ = ["IMPLS", "DISTS", "FORMS", "BLOCK", "DEFAULT_IMPL", "floor_shape", "floor_timer"]

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
    """A timing function ``fn(repeats) -> row`` for :func:`benchmarks.timing.interleaved`.

    The first call compiles (its time is ``first_call_s``); each call then draws
    trials × blocks × 64 variates.
    """
    import jax

    from benchmarks.timing import calls_per_sample, timed

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
