"""Threshold mechanisms as rules: what a mechanism author writes (``docs/architecture.md``).

A threshold mechanism (an SVT variant) is a frozen pytree whose numeric parameters are traced
leaves, plus a few pure functions of **one trial** that the one engine
(:mod:`svtjax.engine`) runs for every mechanism:

* :meth:`ThresholdMechanism.streams` — the random streams read at each stream position, name ->
  a ``svtjax.noise`` object (its family is structure, its scale a traced number), and
  :meth:`~ThresholdMechanism.initial_streams`, the ones drawn once per trial (the threshold
  noise ρ). The engine keys and draws them block-wise: the number at a position depends only on
  (trial key, stream, position), so early exit never changes an outcome.
* :meth:`~ThresholdMechanism.init` — the trial's state (a small pytree: count of ⊤, current
  noisy threshold, ...) from the initial draws.
* :meth:`~ThresholdMechanism.step` — one stream position, as the paper's pseudo-code, line by
  line: ``(state, Inputs) -> (state, Written)``. The engine runs it under ``lax.scan``.
* :meth:`~ThresholdMechanism.halted` — the stopping rule (on integers where the paper counts).
* optionally :meth:`~ThresholdMechanism.block` — the same rule over a block of positions at once,
  where the rule allows it (no redraw inside the block); it must equal the scan on the same
  draws, which the tests check for every registered mechanism that has one.

The engine owns everything else once: block-keyed draws, early exit with compaction of finished
trials, the lazy Fisher–Yates shuffle (``shuffle=True``), retraversal passes
(:meth:`~ThresholdMechanism.passes`), a cap on the stream length (:meth:`~ThresholdMechanism.cap`),
batching over trials, dtype, the Outcome arrays, and the memory a trial takes (derived from the
declared streams and outputs, :mod:`svtjax.engine.sizing`: a rule writes no sizing code).
``mech(key, q, T)``, ``mech.draw``, ``mech.decide`` and the batched entry ``simulate`` uses are
provided here for every rule.

A worked example (an SVT variant of one's own, its numpy reference and its test) is in
``examples/`` and the README.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, NamedTuple, Optional

import jax
import jax.numpy as jnp

from svtjax import _validate
from svtjax._bits import nth_true
from svtjax._core import Draws, Outcome
from svtjax._pytree import staged_call
from svtjax._types import Array, DTypeLike, Key
from svtjax.mechanisms.base import Mechanism

__all__ = ["ThresholdMechanism", "Inputs", "Written", "CountState", "cutoff_block"]


class Inputs(NamedTuple):
    """What a rule sees at one stream position (each field gains a leading axis in ``block``).

    Attributes:
      query: q_i, the true answer of the query evaluated here.
      threshold: T_i, its threshold.
      item: i, the index of that query in the caller's ``queries`` (int32).
      position: p, the stream position (int32; pass k occupies positions k·n .. k·n + n − 1).
      noise: stream name -> the noise at p, already scaled (``streams()[name]`` times the
        stream's standard variate at p).
    """

    query: Array
    threshold: Array
    item: Array
    position: Array
    noise: dict


class Written(NamedTuple):
    """What a rule outputs at an evaluated position.

    Attributes:
      answer: ⊤ (True / 1) or ⊥ (False / 0). In :meth:`ThresholdMechanism.block` an int8 array
        with −1 where the position was not evaluated.
      value: the released number (NaN where none); ``None`` for rules that release nothing
        (``releases`` False).
      cost: the budget charged here; ``None`` unless the rule sets ``per_position_cost`` (the
        others charge :meth:`ThresholdMechanism.top_cost` at each ⊤).
    """

    answer: Array
    value: Optional[Array] = None
    cost: Optional[Array] = None


class CountState(NamedTuple):
    """The state of a single-threshold SVT: ⊤ answers so far and the current threshold noise."""

    count: Array
    rho: Array


def cutoff_block(above: Array, valid: Array, count: Array, c: Optional[Array]
                 ) -> tuple[Array, Array]:
    """The cut-off "abort after c ⊤" over a block, vectorised: a comparison, and the position of
    the block's (c − count)-th ⊤ decides halting (:func:`svtjax._bits.nth_true`).

    Args:
      above: bool[W], where the comparison would answer ⊤.
      valid: bool[W], the positions the engine lets the rule evaluate.
      count: ⊤ answered before the block.
      c: the cut-off, or None for no cut-off.

    Returns:
      ``(top, active)``: bool[W] ⊤ answers, and the positions evaluated (those before the c-th ⊤,
      inclusive).
    """
    above = above & valid
    if c is None:
        return above, valid
    # Evaluated: the positions up to the (c − count)-th ⊤ of the block, inclusive, i.e. those
    # with count + (⊤ before them) < c (svtjax._bits: no cumulative sum).
    last = nth_true(above, jnp.asarray(c, jnp.int32) - count)
    active = valid & (jnp.arange(above.shape[-1], dtype=jnp.int32) <= last[..., None])
    return above & active, active


class ThresholdMechanism(Mechanism):
    """Base class of threshold mechanisms written as rules (see the module docstring).

    Subclasses are frozen pytree dataclasses (``svtjax.mechanisms.register`` makes them so): the
    numeric parameters are fields (traced leaves), structural choices ``static_field`` s. They
    implement :meth:`streams`, :meth:`init`, :meth:`step`, usually :meth:`initial_streams`,
    :meth:`halted` and :meth:`top_cost`, optionally :meth:`block`, and ``privacy()``.
    """

    releases: ClassVar[bool] = False
    """Whether ``Written.value`` is written (a buffer of released values is kept). A subclass
    whose release depends on a static field overrides :meth:`has_values`."""
    per_position_cost: ClassVar[bool] = False
    """Whether ``Written.cost`` is written; otherwise ``Outcome.cost`` is ``top_cost()`` at each
    ⊤ and 0 elsewhere."""
    block: ClassVar[Any] = None
    """Optional ``block(self, state, xs: Inputs, valid: bool[W]) -> (state, Written)``: the rule
    over W positions at once (fields of ``xs`` have a leading W axis; ``Written.answer`` int8,
    −1 where not evaluated). Must equal the scan of :meth:`step` on the same draws."""

    # -- the rule ------------------------------------------------------------------------------
    def streams(self) -> dict:
        """Per-position random streams: name -> ``svtjax.noise`` object (family and scale)."""
        raise NotImplementedError

    def initial_streams(self) -> dict:
        """Streams drawn once per trial (scalars), e.g. ``{"threshold": Laplace(b)}``."""
        return {}

    def init(self, noise: dict) -> Any:
        """The trial's initial state from its initial noise (name -> scaled scalar)."""
        raise NotImplementedError

    def step(self, state: Any, x: Inputs) -> tuple[Any, Written]:
        """One evaluated stream position."""
        raise NotImplementedError

    def halted(self, state: Any) -> Array:
        """True once the trial has stopped (checked before every position). Default: never."""
        del state
        return jnp.zeros((), bool)

    def top_cost(self) -> Any:
        """``Outcome.cost`` at each ⊤ (rules without ``per_position_cost``)."""
        return 0.0

    # -- structure the engine runs (static) ----------------------------------------------------
    def passes(self) -> int:
        """Passes over the items (retraversal): pass 1 visits every item, each later pass
        revisits, in the same order, the items not answered ⊤ so far. The Outcome has
        L = passes × n positions."""
        return 1

    def cap(self) -> Optional[Array]:
        """A cap on the evaluated stream positions (positions p ≥ cap are not evaluated), or
        None. Whether there is a cap is structure; its value may be traced."""
        return None

    def has_values(self) -> bool:
        """Whether the rule releases values (static; default: the ``releases`` attribute)."""
        return self.releases

    def noises(self) -> dict:
        """Every stream's noise (initial and per-position): name -> ``svtjax.noise`` object,
        e.g. ``{"threshold": Laplace(b1), "query": Laplace(b2)}`` (the scales the kernel uses)."""
        return {**self.initial_streams(), **self.streams()}

    def has_block(self) -> bool:
        """Whether the engine may run :meth:`block` (static; default: the rule defines one)."""
        return type(self).block is not None

    def stream_length(self, n: int) -> int:
        return n * self.passes()

    # -- the contract, for every rule ------------------------------------------------------------
    def draw(self, key: Key, n: int, *, shuffle: bool = False, dtype: DTypeLike = None) -> Draws:
        """Every random number one trial on ``n`` queries may use (standard variates)."""

        _validate.integer("n", n, minimum=1)
        dtype = _default_float(dtype)
        return staged_call(_draw_jit, self, key, int(n), shuffle, dtype)

    def decide(self, draws: Draws, queries, thresholds, *, vectorized: bool = True) -> Outcome:
        """The deterministic output rule applied to ``draws`` (one trial).

        ``vectorized=False`` runs the per-position scan even where the rule has a block form
        (the two are tested equal).
        """
        q, t = self._prepare(queries, thresholds)
        return staged_call(_decide_jit, self, draws, q, t, vectorized)

    def __call__(self, key: Key, queries, thresholds) -> Outcome:
        """One trial: ``decide(draw(key, n), queries, thresholds)``, drawn lazily block by
        block (the same numbers)."""
        q, t = self._prepare(queries, thresholds)
        return staged_call(_call_jit, self, key, q, t)

    def run_batch(self, keys: Key, queries: Array, thresholds: Array, *, shuffle: bool,
                  offsets: Optional[Array] = None, vectorized: bool = True,
                  width: Optional[int] = None, engine=None) -> Outcome:
        """A batch of trials (leading axis of ``keys``), traced inside a run's compiled chunk;
        ``width`` positions per engine iteration and ``engine`` the per-platform choices
        (``svtjax.engine.Platform``; None: the default backend's)."""
        from svtjax import engine as _engine

        return _engine.run_keys(self, keys, queries, thresholds, shuffle=shuffle,
                                offsets=offsets, vectorized=vectorized, width=width,
                                config=engine)


def _default_float(dtype) -> Any:
    return jnp.zeros((), float).dtype if dtype is None else jnp.dtype(dtype)


def _unbatch(tree):
    return jax.tree_util.tree_map(lambda x: x[0], tree)


@functools.partial(jax.jit, static_argnums=(2, 3, 4))
def _draw_jit(mech, key, n, shuffle, dtype):
    from svtjax import engine as _engine

    return _engine.draw(mech, key, n, shuffle=shuffle, dtype=dtype)


@functools.partial(jax.jit, static_argnums=(4,))
def _decide_jit(mech, draws, q, t, vectorized):
    from svtjax import engine as _engine

    batched = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], draws)
    return _unbatch(_engine.run_draws(mech, batched, q, t, vectorized=vectorized))


@jax.jit
def _call_jit(mech, key, q, t):
    from svtjax import engine as _engine

    return _unbatch(_engine.run_keys(mech, jnp.asarray(key)[None], q, t, shuffle=False))
