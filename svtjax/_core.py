"""The types every mechanism shares: ``Outcome``, ``Draws``; ``selected`` and ``prefix_counts``.

See ``docs/architecture.md``. One ``Outcome`` type serves every mechanism; a batch of
trials carries a leading trial axis on every field.
"""

from __future__ import annotations

import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from svtjax import _bits
from svtjax._types import Array

__all__ = ["Outcome", "Draws", "selected", "prefix_counts", "NOT_EVALUATED"]

NOT_EVALUATED = -1


_FIELDS = ("answers", "items", "values", "cost")


# -- the fields a compact Outcome derives from its answers (module docstring of Outcome) -------
def _masked_items(xp, answers, items):
    """Stored items where something was evaluated, -1 elsewhere, as int32."""
    return xp.where(answers >= 0, items.astype(np.int32), np.int32(-1)).astype(np.int32)


def _position_items(xp, answers, *, n):
    """The position mod ``n`` where something was evaluated, -1 elsewhere, as int32."""
    position = (xp.arange(answers.shape[-1], dtype=np.int32) % np.int32(n)).astype(np.int32)
    return xp.where(answers >= 0, position, np.int32(-1)).astype(np.int32)


def _no_values(xp, answers, *, dtype):
    """NaN at every position: the mechanism releases no value."""
    return xp.full(answers.shape, np.nan, dtype)


def _top_cost(xp, answers, top_cost, *, dtype):
    """Each trial's charge of a ⊤ (``top_cost``) at its ⊤, 0 elsewhere."""
    top = xp.asarray(top_cost, dtype)[..., None]
    return xp.where(answers == 1, top, xp.zeros((), dtype)).astype(dtype)


_COMPILED = {f: jax.jit(functools.partial(f, jnp), static_argnames=static)
             for f, static in ((_masked_items, ()), (_position_items, ("n",)),
                               (_no_values, ("dtype",)), (_top_cost, ("dtype",)))}


class Outcome:
    """What one trial of a mechanism released, position by position along the stream.

    Attributes:
      answers: int8[L]; 1 = ⊤, 0 = ⊥, -1 = not evaluated (halted or budget exhausted).
      items: int32[L]; index into the caller's ``queries`` of the query evaluated at each stream
        position, -1 where nothing was evaluated.
      values: float[L]; released number (noisy answer, noisy gap), NaN where none.
      cost: float[L]; privacy budget charged at that position, 0 where none. Up-front costs
        (a threshold's ε1) are part of ``privacy()``, not of ``cost``.

    A batch of trials carries a leading trial axis on every field. ``Outcome(answers, items,
    values, cost)`` builds one from four arrays; it behaves like the named tuple it used to be
    (``_fields``, iteration, indexing, ``_replace``, ``_asdict``).

    The engine returns *compact* Outcomes (:meth:`compact`): a field that is a function of the
    answers is not stored but computed when read — ``items`` in a fixed order (the position, mod
    n), ``values`` of a mechanism that releases nothing (NaN), ``cost`` of a mechanism that
    charges the same at every ⊤ (that charge at ⊤, 0 elsewhere) — and a shuffled run's items
    may be stored only where something was evaluated, in a narrower integer type (the engine's
    permutations, whose first positions are each trial's order: ``items_evaluated_only``).
    Reading such a field returns the same array a stored field would (computed once per object
    and kept); what a compact Outcome saves is writing and moving trials × L arrays that carry
    no information, which on a CPU costs more than a top-c SVT run itself.
    ``svtjax.selected`` and ``prefix_counts`` read only what they need.
    """

    __slots__ = ("answers", "_items", "_values", "_cost", "_top_cost", "_n", "_dtype", "_partial",
                 "_cache")

    def __init__(self, answers, items, values, cost):
        self._set(answers, items, values, cost, None, None, None)

    def _set(self, answers, items, values, cost, top_cost, n, dtype, partial=False):
        set_ = object.__setattr__
        set_(self, "answers", answers)
        set_(self, "_items", items)
        set_(self, "_values", values)
        set_(self, "_cost", cost)
        set_(self, "_top_cost", top_cost)
        set_(self, "_n", n)
        set_(self, "_dtype", dtype)
        set_(self, "_partial", bool(partial))
        set_(self, "_cache", {})

    @classmethod
    def compact(cls, answers, *, n: int, dtype, items=None, values=None, cost=None,
                top_cost=None, items_evaluated_only: bool = False) -> "Outcome":
        """An Outcome that stores only what the answers do not determine.

        Args:
          answers: int8[..., L].
          n: the number of queries (items default to the position mod n where evaluated).
          dtype: the float dtype of ``values`` and ``cost``.
          items, values: stored arrays, or None (derived: position mod n; NaN).
          cost: a stored array, or None with ``top_cost`` (float[...], the charge of a ⊤ for
            each trial): ``top_cost`` at ⊤, 0 elsewhere.
          items_evaluated_only: the stored ``items`` (any integer type) hold the item only where
            ``answers >= 0``, anything elsewhere; reading ``items`` gives int32 with -1 there.
        """
        if cost is None and top_cost is None:
            raise ValueError("a compact Outcome needs cost or top_cost")
        out = object.__new__(cls)
        out._set(answers, items, values, cost, top_cost, int(n), jnp.dtype(dtype).name,
                 items_evaluated_only and items is not None)
        return out

    # -- fields ---------------------------------------------------------------------------
    def _xp(self):
        return np if isinstance(self.answers, np.ndarray) else jnp

    def _derived(self, name, make):
        cache = self._cache
        if name not in cache:
            cache[name] = make()
        return cache[name]

    @property
    def items(self):
        if self._items is not None and not self._partial:
            return self._items
        if self._items is not None:
            return self._derived("items", lambda: self._derive(_masked_items, self._items))
        return self._derived("items", lambda: self._derive(_position_items, n=self._n))

    @property
    def values(self):
        if self._values is not None:
            return self._values
        return self._derived("values", lambda: self._derive(_no_values, dtype=self._dtype))

    @property
    def cost(self):
        if self._cost is not None:
            return self._cost
        return self._derived("cost", lambda: self._derive(_top_cost, self._top_cost,
                                                          dtype=self._dtype))

    def _derive(self, make, *args, **static):
        """``make(xp, answers, *args, **static)``: with numpy on numpy arrays, traced under a
        transformation, and compiled on concrete JAX arrays (one program per field and shape,
        where the operations one by one would each compile a program of their own)."""
        xp = self._xp()
        if xp is np or isinstance(self.answers, jax.core.Tracer):
            return make(xp, self.answers, *args, **static)
        return _COMPILED[make](self.answers, *args, **static)

    @property
    def stored_items(self):
        """The stored ``items`` array (as ``items`` reads it), or None when they are the position
        mod n."""
        return None if self._items is None else self.items

    # -- the named-tuple interface ----------------------------------------------------------
    _fields = _FIELDS

    def __iter__(self):
        return iter((self.answers, self.items, self.values, self.cost))

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i):
        return tuple(self)[i]

    def _asdict(self) -> dict:
        return dict(zip(_FIELDS, self))

    def _replace(self, **changes) -> "Outcome":
        unknown = set(changes) - set(_FIELDS)
        if unknown:
            raise ValueError(f"Outcome has no field(s) {sorted(unknown)}; fields: {_FIELDS}")
        return Outcome(**{**self._asdict(), **changes})

    def __setattr__(self, name, value):
        raise AttributeError("Outcome is immutable; use _replace")

    def __repr__(self) -> str:
        return "Outcome(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS) + ")"


def _outcome_flatten(out: Outcome):
    children = (out.answers, out._items, out._values, out._cost, out._top_cost)
    return children, (out._n, out._dtype, out._partial)


def _outcome_flatten_with_keys(out: Outcome):
    children, aux = _outcome_flatten(out)
    names = ("answers", "items", "values", "cost", "top_cost")
    return [(jax.tree_util.GetAttrKey(k), c) for k, c in zip(names, children)], aux


def _outcome_unflatten(aux, children):
    out = object.__new__(Outcome)
    out._set(*children, *aux)
    return out


jax.tree_util.register_pytree_with_keys(Outcome, _outcome_flatten_with_keys,
                                        _outcome_unflatten, _outcome_flatten)


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


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def _first_tops(answers: Array, items, limit, k: int, n: int, to_halt: bool
                ) -> tuple[Array, Array, Array]:
    """:func:`_first_tops_blocks`, through svtjax's compiled CPU loop (:mod:`svtjax._native`,
    the same results) where it runs: int8 answers, int16 or int32 items (or none)."""
    target = _first_tops_native(answers, items)
    if target is None:
        return _first_tops_blocks(answers, items, limit, k, n, to_halt)
    rows, length = answers.shape
    limit = jnp.asarray(limit, jnp.int32)
    return jax.ffi.ffi_call(
        target,
        (jax.ShapeDtypeStruct((rows, k), jnp.int32), jax.ShapeDtypeStruct((rows,), jnp.int32),
         jax.ShapeDtypeStruct((rows,), jnp.int32)),
        vmap_method="broadcast_all",
    )(answers, answers if items is None else items, limit, k=np.int64(k), n=np.int64(n),
      width=np.int64(min(_SELECT_BLOCK, length)), to_halt=np.bool_(to_halt),
      has_items=np.bool_(items is not None))


def _first_tops_native(answers: Array, items) -> Optional[str]:
    """The compiled first-⊤ loop's FFI target where it runs on these rows (int8 answers, int16
    or int32 items or none, a non-empty stream; :mod:`svtjax._native`), else None."""
    from svtjax import _native

    target = _native.first_tops_target()
    if (target is None or answers.dtype != jnp.int8 or answers.shape[1] == 0
            or (items is not None and items.dtype not in (jnp.int16, jnp.int32))):
        return None
    return target


def _first_tops_blocks(answers: Array, items, limit, k: int, n: int, to_halt: bool
                       ) -> tuple[Array, Array, Array]:
    """The first ⊤ of every row of a 2-D batch [R, L], read block by block only as far as needed.

    SVT outcomes are mostly -1 past the halting point, so for a top-c run this touches the first
    few blocks of most rows instead of the whole stream (a cumulative sum over trials x n costs
    more than the mechanism itself); rows that need more are compacted (``svtjax._loops``).

    Args:
      answers, items: [R, L]; ``items`` None: the item at position p is p mod n (a compact
        Outcome's fixed order).
      limit: how many ⊤ to collect (int32, may be traced; at most ``k``).
      k: the static width of the picks.
      n: the number of items.
      to_halt: read a row up to its first -1 (a single-pass stream: its halt), counting every ⊤
        on the way; otherwise up to its ``limit``-th ⊤.

    Returns:
      (picks int32[R, k]: the items of the first ``limit`` ⊤ in stream order, padded with -1;
      the number of ⊤ in the part read, int32[R]; the evaluated positions (``answers >= 0``) in
      the part read, int32[R]: with ``to_halt``, the prefix length).
    """
    from svtjax._loops import compacting_block_loop

    rows, length = answers.shape
    width = min(_SELECT_BLOCK, length)
    num_blocks = -(-length // width)
    slot = jnp.arange(width, dtype=jnp.int32)
    wanted = jnp.arange(1, k + 1, dtype=jnp.int32)[None, :]  # [1, k]: picks 1..k

    def body(b, carry, work):
        count, picks, evaluated, done = carry
        answers, items = work
        blk, fresh = _row_block(answers, b, width)
        live = fresh[None, :] & ~done[:, None]
        if to_halt:  # nothing after a row's first -1
            first_stop = jnp.min(jnp.where((blk < 0) & live, slot, width), axis=1)
            live = live & (slot[None, :] < first_stop[:, None])
        top = (blk == 1) & live
        # Slot s takes the block's (s + 1 − count)-th ⊤, where there is one: a rank query on
        # the block's bits (svtjax._bits), neither a cumulative sum nor a scatter, both slow on
        # XLA's CPU backend.
        packed, counts = _bits.pack(top)
        rank = wanted - count[:, None]  # [R, k]
        at = _bits.nth_packed(packed, counts, rank, width)
        fill = (rank >= 1) & (at < width) & (wanted <= limit)
        at = jnp.clip(at, 0, width - 1)
        if items is None:
            item = (jnp.minimum(b * width, length - width) + at) % n
        else:
            item = jnp.take_along_axis(_row_block(items, b, width)[0], at, axis=1)
        picks = jnp.where(fill, item.astype(jnp.int32), picks)
        count = count + jnp.sum(counts, axis=1, dtype=jnp.int32)
        if to_halt:  # the fresh slots are a suffix of the block: first_stop − first fresh slot
            fresh_from = b * width - jnp.minimum(b * width, length - width)
            evaluated = evaluated + jnp.where(done, 0, first_stop - fresh_from)
        else:  # summed in int16, a same-width reduction that XLA's CPU backend vectorises
            evaluated = evaluated + jnp.sum((live & (blk >= 0)).astype(jnp.int16), axis=1,
                                            dtype=jnp.int16).astype(jnp.int32)
        stop = (first_stop < width) if to_halt else count >= limit
        return (count, picks, evaluated, done | stop), work

    init = (jnp.zeros((rows,), jnp.int32), jnp.full((rows, k), -1, jnp.int32),
            jnp.zeros((rows,), jnp.int32), jnp.zeros((rows,), bool))
    count, picks, evaluated, _ = compacting_block_loop(body, lambda c: ~c[3], init,
                                                       (answers, items), num_blocks)
    return picks, count, evaluated


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
    """answers and items as 2-D batches [R, L] (items None when a compact Outcome derives them
    from the position), and the batch shape. The items are as stored: only positions with
    ``answers >= 0`` are meaningful (every reader here reads the items at ⊤ only)."""
    answers = jnp.asarray(outcome.answers)
    stored = outcome._items if isinstance(outcome, Outcome) else outcome.items
    items = None if stored is None else jnp.asarray(stored)
    if answers.ndim < 1 or (items is not None and answers.shape != items.shape):
        raise ValueError("outcome.answers and outcome.items must share a shape [..., L]; got "
                         f"{answers.shape} and {None if items is None else items.shape}")
    length = answers.shape[-1]
    items = None if items is None else items.reshape(-1, length)
    return answers.reshape(-1, length), items, answers.shape[:-1]


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
    if _first_tops_native(answers, None) is not None:
        # the compiled loop of `selected`, each row read to its first -1, collecting no item
        # (one pass in compiled code where the XLA block loop pays per block and level)
        _, tops, evaluated = _first_tops(answers, None, jnp.int32(0), 1, answers.shape[1], True)
    else:
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
    n = outcome._n if isinstance(outcome, Outcome) and outcome._n else answers.shape[-1]
    picks, _, _ = _first_tops(answers, items, jnp.int32(k), k, int(n), False)
    return picks.reshape(batch + (k,))
