"""The block-wise early-exit kernel shared by every threshold-comparison (SVT) mechanism.

A stream is processed in blocks of ``BLOCK`` positions inside a ``lax.while_loop`` that ends as
soon as every trial of the batch has halted, so noise is drawn only for the blocks that are
needed (a top-c SVT typically halts after a few percent of the stream). The per-trial block
function is written for one trial and vmapped; the loop runs at batch level with one shared
block counter so that block writes stay ``dynamic_update_slice``s.

Within a block, mechanisms that never redraw the threshold use a vectorised formulation (a
comparison and a cumulative count of ⊤ decide halting); those that redraw it after each ⊤ use a
``lax.scan`` over the block's positions. Both are also available on every mechanism
(``vectorized=False`` forces the scan) and are tested equal on the same draws.

A per-trial random item order (``shuffle``) is a Fisher–Yates shuffle performed lazily: block b
applies the swaps of its own positions only, so a trial that halts early never pays for the rest
of the permutation, and the items it visits are exactly the prefix of the full shuffle.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax import lax

from svtjax._core import Draws, Outcome
from svtjax._loops import compacting_block_loop
from svtjax._types import Array, DTypeLike, Key
from svtjax.mechanisms.base import (
    BLOCK,
    block_order,
    block_variates,
    num_blocks,
    stream_key,
    stream_order,
    stream_variates,
)

RELEASES = ("none", "noisy-query", "answer", "gap")


@dataclasses.dataclass(frozen=True)
class SVTSpec:
    """Static structure of a threshold-comparison mechanism.

    Attributes:
      threshold_noise: Noise class of the threshold noise ρ.
      query_noise: Noise class of the query noise ν, or None for noiseless comparisons.
      resample: redraw ρ after every ⊤ (Dwork & Roth's Algorithm 2).
      release: what ``values`` holds at a ⊤: ``"none"`` (NaN), ``"noisy-query"`` (q + ν),
        ``"answer"`` (q + a fresh answer-noise variate times ``answer`` scale), ``"gap"``
        (q + ν − (T + ρ)).
      answer_noise: Noise class of the released answer noise (``release="answer"``).
      cutoff: halt after ``c`` ⊤ answers.
      max_passes: passes over the items (retraversal, Lyu'17 §4.4). Pass 1 visits every item;
        each later pass revisits, in the same order, the items not answered ⊤ so far. The stream
        has L = n × max_passes positions, pass p occupying positions p·n .. p·n + n − 1.
      capped: a length cap ``scales.k_max`` (Zhu & Wang 2020, Algorithm 2's k_max): stream
        positions p ≥ k_max are not evaluated; with ``stagewise``, a cap on the positions of
        each stage instead (Algorithm 3's k′_max). One pass only.
      stagewise: Zhu & Wang 2020, Algorithm 3: ⌈c/c′⌉ stages (c′ = ``scales.c_stage``); a
        stage ends after c̃ ⊤ in it (c′, the last stage c − c′(⌈c/c′⌉ − 1)) or k′_max positions
        when ``capped``, and the next starts with a fresh threshold noise, ``refresh[p]`` for a
        stage ending at position p (the number RESAMPLE uses after a ⊤ at p). The run halts
        after the last stage. Always runs the scan.
    """

    threshold_noise: type
    query_noise: Optional[type]
    resample: bool = False
    release: str = "none"
    answer_noise: Optional[type] = None
    cutoff: bool = True
    max_passes: int = 1
    capped: bool = False
    stagewise: bool = False

    @property
    def refreshes(self) -> bool:
        """Whether the ``refresh`` stream is drawn (RESAMPLE or stage-wise restarts)."""
        return self.resample or self.stagewise


class SVTScales(NamedTuple):
    """Traced numbers of one mechanism instance."""

    threshold: Array  # scale of ρ
    query: Array  # scale of ν (ignored when spec.query_noise is None)
    answer: Array  # scale of released-answer noise (ignored unless release == "answer")
    c: Array  # cut-off
    top_cost: Array  # budget charged at each ⊤
    shift: Array = 0.0  # added to every threshold (SVT-ReTr's raised threshold)
    k_max: Array = 0  # length cap (spec.capped): of the stream, or of each stage (stagewise)
    c_stage: Array = 1  # ⊤ per stage (spec.stagewise; Algorithm 3's c′)


class _State(NamedTuple):
    """Per-trial loop state. Only what cannot be derived afterwards is carried: ``items`` only
    for shuffled runs (fixed order: item = position), ``values`` only for mechanisms that
    release numbers; ``cost`` is derived from the answers. Carrying less is what keeps a run
    that halts after a few blocks from paying for O(trials x n) buffer traffic."""

    count: Array
    rho: Array
    answers: Array
    items: Optional[Array]
    values: Optional[Array]
    stage: Optional[Array] = None  # int32[3]: ⊤ in the stage, its length, stages done


class _BlockDraws(NamedTuple):
    query: Optional[Array]
    refresh: Optional[Array]
    answer: Optional[Array]
    order: Optional[Array]


# -- randomness ----------------------------------------------------------------------------

def _pass_variates(skey: Key, n: int, passes: int, standard, dtype) -> Array:
    """float[passes * n]: position p·n + i comes from block p·nb + i // BLOCK (nb blocks per
    pass), so every pass starts on a block boundary. One pass is ``stream_variates``."""
    if passes == 1:
        return stream_variates(skey, n, standard, dtype)
    nb = num_blocks(n)
    blocks = jax.vmap(lambda g: block_variates(skey, g, standard, dtype))(
        jnp.arange(passes * nb))
    return blocks.reshape(passes, nb * BLOCK)[:, :n].reshape(-1)


def draw(spec: SVTSpec, key: Key, n: int, *, shuffle: bool, dtype: DTypeLike) -> Draws:
    """All random numbers of one trial on a stream of ``n`` queries (standard variates)."""
    t_key = stream_key(key, "threshold")
    passes = spec.max_passes

    def stream(name, noise):
        return _pass_variates(stream_key(key, name), n, passes, noise.standard, dtype)

    return Draws(
        threshold=spec.threshold_noise.standard(t_key, (), dtype),
        query=None if spec.query_noise is None else stream("query", spec.query_noise),
        refresh=stream("refresh", spec.threshold_noise) if spec.refreshes else None,
        answer=stream("answer", spec.answer_noise) if spec.release == "answer" else None,
        order=stream_order(stream_key(key, "order"), n) if shuffle else None,
    )


def _lazy_block_draws(spec, keys, b, n, shuffle, dtype) -> _BlockDraws:
    """Block ``b`` (counted over all passes) of every stream for a batch of trial keys, drawn on
    demand. The order stream is only read in the first pass."""
    def variates(name, noise):
        skeys = jax.vmap(lambda k: stream_key(k, name))(keys)
        return jax.vmap(lambda s: block_variates(s, b, noise.standard, dtype))(skeys)

    order = None
    if shuffle:
        skeys = jax.vmap(lambda k: stream_key(k, "order"))(keys)
        b_order = jnp.minimum(b, num_blocks(n) - 1)
        order = jax.vmap(lambda s: block_order(s, b_order, n))(skeys)
    return _BlockDraws(
        query=None if spec.query_noise is None else variates("query", spec.query_noise),
        refresh=variates("refresh", spec.threshold_noise) if spec.refreshes else None,
        answer=variates("answer", spec.answer_noise) if spec.release == "answer" else None,
        order=order,
    )


def _padded(x: Optional[Array], n_pad: int, fill=0) -> Optional[Array]:
    if x is None:
        return None
    pad = n_pad - x.shape[-1]
    widths = [(0, 0)] * (x.ndim - 1) + [(0, pad)]
    return jnp.pad(x, widths, constant_values=fill)


def _sliced_block_draws(draws: Draws, b, n: int, passes: int) -> _BlockDraws:
    """Block ``b`` (counted over all passes) of batched, pre-drawn ``Draws``."""
    n_pad = num_blocks(n) * BLOCK

    def cut(x, fill=0):
        if x is None:
            return None
        x = _padded(x.reshape(x.shape[:-1] + (passes, n)), n_pad, fill)
        x = x.reshape(x.shape[:-2] + (passes * n_pad,))
        return lax.dynamic_slice_in_dim(x, b * BLOCK, BLOCK, axis=x.ndim - 1)

    order = None
    if draws.order is not None:
        pos = jnp.arange(n_pad, dtype=jnp.int32)
        full = jnp.where(pos < n, _padded(draws.order, n_pad), pos)
        b_order = jnp.minimum(b, num_blocks(n) - 1)
        order = lax.dynamic_slice_in_dim(full, b_order * BLOCK, BLOCK, axis=full.ndim - 1)
    return _BlockDraws(cut(draws.query), cut(draws.refresh), cut(draws.answer), order)


# -- one trial, one block ------------------------------------------------------------------

class _Shuffle(NamedTuple):
    """Batch-level Fisher–Yates state: the permutation and one pending write.

    The permutation is stored transposed, ``[n_pad, batch]``, so that reading position p for
    every trial is one contiguous row, and as int16 when n_pad < 2**15: the random accesses of a
    swap then touch half the cache lines (about 5x faster than int32 row-major on a CPU).
    """

    perm: Array  # int16/int32[n_pad, batch]
    j: Array  # int32[batch]: position of the pending write
    a: Array  # [batch]: value of the pending write


def _perm_dtype(n_pad: int):
    return jnp.int16 if n_pad < 2**15 else jnp.int32


def _shuffle_init(batch: int, n_pad: int) -> _Shuffle:
    dtype = _perm_dtype(n_pad)
    perm = jnp.broadcast_to(jnp.arange(n_pad, dtype=dtype)[:, None], (n_pad, batch))
    return _Shuffle(perm, jnp.zeros((batch,), jnp.int32), perm[0])


def _take_shuffle(fy: Optional[_Shuffle], idx: Array) -> Optional[_Shuffle]:
    if fy is None:
        return None
    return _Shuffle(jnp.take(fy.perm, idx, axis=1), fy.j[idx], fy.a[idx])


def _fisher_yates_block(fy: _Shuffle, order: Array, b) -> tuple[_Shuffle, Array]:
    """Applies the swaps of block ``b`` for a batch; returns the state and the block's items.

    Step p swaps perm[p] and perm[j_p]; position p is never touched again, so only the write to
    perm[j_p] matters. That write is deferred to the next step: a scatter whose update does not
    depend on a gather from the same buffer in the same iteration stays in place on XLA's CPU
    backend (otherwise every step copies the whole permutation).

    The permutation is addressed flat, with unsigned indices j·batch + trial computed for the
    whole block before the loop, so a step is one scatter, one gather, one contiguous read and
    one row write, with no per-step index arithmetic (about 6 XLA thunks instead of 11; 1.2x
    faster at 1000 trials, 4x at 16). Indices outside the permutation (impossible for ``Draws``
    made by ``draw``) are dropped on write and read as 0, so hand-made ``Draws`` passed to
    ``decide`` can never write outside it.
    """
    n_pad, batch = fy.perm.shape
    size = n_pad * batch
    if size >= 2**32:  # flat unsigned indices would overflow
        return _fisher_yates_block_2d(fy, order, b)
    cols = jnp.arange(batch, dtype=jnp.uint32)

    def flat(j):
        j = j.astype(jnp.int32)
        inside = (j >= 0) & (j < n_pad)
        return jnp.where(inside, j.astype(jnp.uint32) * jnp.uint32(batch) + cols,
                         jnp.uint32(size))

    # Row k + 1 addresses step k's swap partner; row 0 is the write still pending from the
    # previous block.
    at = jnp.concatenate([flat(fy.j)[None], flat(order.T)], axis=0)

    def step(k, carry):
        perm, a, items = carry
        perm = perm.at[at[k]].set(a, mode="drop", unique_indices=True)
        item = perm.at[at[k + 1]].get(mode="fill", fill_value=0)
        row = (b * BLOCK + k).astype(jnp.uint32) * jnp.uint32(batch)
        a = lax.dynamic_slice_in_dim(perm, row, batch)
        items = lax.dynamic_update_index_in_dim(items, item, k, axis=0)
        return perm, a, items

    items = jnp.zeros((BLOCK, batch), fy.perm.dtype)
    perm, a, items = lax.fori_loop(0, BLOCK, step, (fy.perm.reshape(-1), fy.a, items))
    fy = _Shuffle(perm.reshape(n_pad, batch), order[:, -1].astype(jnp.int32), a)
    return fy, items.T.astype(jnp.int32)


def _fisher_yates_block_2d(fy: _Shuffle, order: Array, b) -> tuple[_Shuffle, Array]:
    """:func:`_fisher_yates_block` with (position, trial) indices, for permutations of 2**32
    entries or more."""
    cols = jnp.arange(order.shape[0])

    def step(k, carry):
        fy, items = carry
        perm = fy.perm.at[fy.j, cols].set(fy.a, mode="drop")
        p = b * BLOCK + k
        j = order[:, k].astype(jnp.int32)
        item = perm.at[j, cols].get(mode="clip")
        a = lax.dynamic_index_in_dim(perm, p, axis=0, keepdims=False)
        items = lax.dynamic_update_index_in_dim(items, item, k, axis=0)
        return _Shuffle(perm, j, a), items

    items = jnp.zeros((BLOCK, order.shape[0]), fy.perm.dtype)
    fy, items = lax.fori_loop(0, BLOCK, step, (fy, items))
    return fy, items.T.astype(jnp.int32)


def _decide_block(spec: SVTSpec, sc: SVTScales, vectorized: bool, state: _State,
                  bd: _BlockDraws, items: Optional[Array], g, q_pad: Array, t_pad: Array,
                  n: int) -> _State:
    """Block ``g`` counted over all passes: pass ``g // nb``, in-pass block ``g % nb``."""
    dtype = q_pad.dtype
    nb = num_blocks(n)
    passes = spec.max_passes
    b = g % nb if passes > 1 else g
    pos = b * BLOCK + jnp.arange(BLOCK, dtype=jnp.int32)
    valid = pos < n
    if passes > 1:
        # Later passes revisit the first pass's items, skipping those already answered ⊤.
        past = jnp.stack([_get_block(state.answers, k * n + b * BLOCK, b * BLOCK, n, -1)
                          for k in range(passes)])
        earlier = jnp.arange(passes)[:, None] < g // nb
        valid = valid & ~jnp.any((past == 1) & earlier, axis=0)
        if state.items is not None:
            first = _get_block(state.items, b * BLOCK, b * BLOCK, n, -1)
            items = jnp.where(g < nb, items, jnp.maximum(first, 0)) if items is not None \
                else jnp.maximum(first, 0)
    if spec.capped and not spec.stagewise:  # Algorithm 2: i = 1, ..., k_max
        valid = valid & (g * BLOCK + jnp.arange(BLOCK, dtype=jnp.int32) < sc.k_max)
    if items is not None:
        q_blk, t_blk = q_pad[items], t_pad[items]
    else:
        items = pos
        q_blk = lax.dynamic_slice_in_dim(q_pad, b * BLOCK, BLOCK)
        t_blk = lax.dynamic_slice_in_dim(t_pad, b * BLOCK, BLOCK)

    if spec.query_noise is None:
        noisy_q = q_blk
    else:
        noisy_q = q_blk + jnp.asarray(sc.query, dtype) * bd.query

    stage = state.stage
    if vectorized and not spec.resample and not spec.stagewise:
        noisy_t = t_blk + state.rho
        above = (noisy_q >= noisy_t) & valid
        if spec.cutoff:
            before = state.count + jnp.cumsum(above, dtype=jnp.int32) - above
            active = valid & (before < sc.c)
        else:
            active = valid
        top = above & active
        count = state.count + jnp.sum(top, dtype=jnp.int32)
        rho_at = jnp.broadcast_to(state.rho, (BLOCK,))
        rho = state.rho
    elif spec.stagewise:
        (count, rho, stage), (active, top, rho_at) = _stagewise_scan(
            spec, sc, state, noisy_q, t_blk, bd.refresh, valid)
    else:
        refresh = bd.refresh if spec.resample else jnp.zeros((BLOCK,), dtype)
        t_scale = jnp.asarray(sc.threshold, dtype)

        def step(carry, x):
            count, rho = carry
            nq, t, z_ref, v = x
            active = v & (count < sc.c) if spec.cutoff else v
            top = active & (nq >= t + rho)
            new_rho = jnp.where(top, t_scale * z_ref, rho) if spec.resample else rho
            return (count + top.astype(jnp.int32), new_rho), (active, top, rho)

        (count, rho), (active, top, rho_at) = lax.scan(
            step, (state.count, state.rho), (noisy_q, t_blk, refresh, valid))

    nan = jnp.full((BLOCK,), jnp.nan, dtype)
    if spec.release == "none":
        values = nan
    elif spec.release == "noisy-query":
        values = jnp.where(top, noisy_q, nan)
    elif spec.release == "answer":
        values = jnp.where(top, q_blk + jnp.asarray(sc.answer, dtype) * bd.answer, nan)
    elif spec.release == "gap":
        values = jnp.where(top, noisy_q - (t_blk + rho_at), nan)
    else:  # pragma: no cover - guarded by the spec's construction
        raise ValueError(f"unknown release {spec.release!r}")

    answers = jnp.where(active, top.astype(jnp.int8), jnp.int8(-1))
    at = (g // nb) * n + b * BLOCK if passes > 1 else g * BLOCK  # pass-major, exact length

    def put(buf, blk):
        if buf is None:
            return None
        return _put_block(buf, blk, at, b * BLOCK, n)

    return _State(count, rho, put(state.answers, answers),
                  put(state.items, jnp.where(active, items, -1)), put(state.values, values),
                  stage)


def _put_block(buf: Array, blk: Array, at, in_pass, n: int) -> Array:
    """Writes ``blk[k]`` to ``buf[at + k]`` for the k with ``in_pass + k < n`` (the positions
    of the block that lie in its pass); the rest of ``buf`` is unchanged.

    Buffers hold exactly the L = passes × n positions of the Outcome (no padding, so nothing is
    copied to trim them afterwards), so a pass's last block may reach past the end of its pass
    or of the buffer. It is written as one ``dynamic_update_slice`` of BLOCK slots starting at
    ``min(at, len(buf) - BLOCK)``, each slot taking the block's value or keeping its old one.
    """
    start = jnp.minimum(at, buf.shape[0] - BLOCK)
    shift = at - start  # > 0 only for a block that would run past the end of the buffer
    slot = jnp.arange(BLOCK, dtype=jnp.int32)
    blk = blk.astype(buf.dtype)
    shifted = lax.dynamic_slice_in_dim(jnp.concatenate([blk, blk]), BLOCK - shift, BLOCK)
    fresh = (slot >= shift) & (in_pass + slot - shift < n)
    old = lax.dynamic_slice_in_dim(buf, start, BLOCK)
    return lax.dynamic_update_slice_in_dim(buf, jnp.where(fresh, shifted, old), start, axis=0)


def _get_block(buf: Array, at, in_pass, n: int, fill) -> Array:
    """``buf[at + k]`` for k < BLOCK where ``in_pass + k < n``, else ``fill`` (the read that
    matches :func:`_put_block`)."""
    k = jnp.arange(BLOCK, dtype=jnp.int32)
    vals = buf[jnp.clip(at + k, 0, buf.shape[0] - 1)]
    return jnp.where(in_pass + k < n, vals, jnp.asarray(fill, buf.dtype))


def _stagewise_scan(spec, sc, state, noisy_q, t_blk, refresh, valid):
    """Zhu & Wang 2020, Algorithm 3 over one block: Algorithm 2 (lines 3-9) per position, plus
    the stage bookkeeping of Algorithm 3 (lines 2-4): stage ℓ of m = ⌈c/c′⌉ ends after c̃ ⊤
    (line 3: c′, the last stage c − c′(m − 1)) or k′_max evaluated positions (``capped``); the
    next stage draws a fresh threshold (line 4 → Algorithm 2 line 1); nothing is evaluated after
    stage m."""
    t_scale = jnp.asarray(sc.threshold, noisy_q.dtype)
    num_stages = _num_stages(sc)

    def step(carry, x):
        count, rho, stage = carry
        nq, t, z_ref, v = x
        active = v & (count < sc.c) & (stage[2] < num_stages)
        top = active & (nq >= t + rho)
        s_top = stage[0] + top.astype(jnp.int32)
        s_len = stage[1] + active.astype(jnp.int32)
        c_tilde = jnp.where(stage[2] == num_stages - 1, sc.c - sc.c_stage * (num_stages - 1),
                            sc.c_stage)
        end = s_top >= c_tilde
        if spec.capped:
            end = end | (s_len >= sc.k_max)
        end = active & end
        fresh = end | top if spec.resample else end
        new_rho = jnp.where(fresh, t_scale * z_ref, rho)
        zero = jnp.zeros((), jnp.int32)
        new_stage = jnp.where(end, jnp.stack([zero, zero, stage[2] + 1]),
                              jnp.stack([s_top, s_len, stage[2]]))
        return (count + top.astype(jnp.int32), new_rho, new_stage), (active, top, rho)

    return lax.scan(step, (state.count, state.rho, state.stage),
                    (noisy_q, t_blk, refresh, valid))


def _num_stages(sc: SVTScales) -> Array:
    """m = ⌈c/c′⌉ (Algorithm 3, line 2), in integers."""
    c = jnp.asarray(sc.c, jnp.int32)
    c_stage = jnp.asarray(sc.c_stage, jnp.int32)
    return (c + c_stage - 1) // c_stage


# -- batch drivers -------------------------------------------------------------------------

def _buffer_length(spec, n: int) -> int:
    """Positions of the loop's output buffers: the Outcome length L = passes × n, or one
    block when L is shorter (see :func:`_put_block`)."""
    return max(spec.max_passes * n, BLOCK)


def _init_state(spec, sc, z0, n, dtype, shuffle) -> _State:
    length = _buffer_length(spec, n)
    return _State(
        count=jnp.zeros((), jnp.int32),
        rho=jnp.asarray(sc.threshold, dtype) * z0,
        answers=jnp.full((length,), -1, jnp.int8),
        items=jnp.full((length,), -1, jnp.int32) if shuffle else None,
        values=None if spec.release == "none" else jnp.full((length,), jnp.nan, dtype),
        stage=jnp.zeros((3,), jnp.int32) if spec.stagewise else None,
    )


def _finish(spec, sc, state: _State, n: int, dtype) -> Outcome:
    passes = spec.max_passes

    def unpad(x):  # [batch, max(passes * n, BLOCK)] -> [batch, passes * n]
        return x if x.shape[1] == passes * n else x[:, :passes * n]

    answers = unpad(state.answers)
    evaluated = answers >= 0
    if state.items is None:
        position = jnp.tile(jnp.arange(n, dtype=jnp.int32), passes)
        items = jnp.where(evaluated, position, jnp.int32(-1))
    else:
        items = unpad(state.items)
    if state.values is None:
        values = jnp.full(answers.shape, jnp.nan, dtype)
    else:
        values = unpad(state.values)
    cost = jnp.where(answers == 1, jnp.asarray(sc.top_cost, dtype), jnp.zeros((), dtype))
    return Outcome(answers, items, values, cost)


def _loop(spec, sc, vectorized, z0, src, get_block, q, t, shuffle) -> Outcome:
    """Runs a batch block by block until every trial has halted (finished trials compacted away,
    see ``svtjax._loops``). ``src`` (keys or pre-drawn draws, leading batch axis) feeds
    ``get_block(src, b)``."""
    n = q.shape[0]
    nb = num_blocks(n)
    n_pad = nb * BLOCK
    dtype = q.dtype
    q_pad = _padded(q, n_pad)
    t_pad = _padded(t + jnp.asarray(sc.shift, dtype), n_pad)
    state = jax.vmap(lambda z: _init_state(spec, sc, z, n, dtype, shuffle))(z0)
    fy = _shuffle_init(z0.shape[0], n_pad) if shuffle else None

    def running(state):
        if not spec.cutoff:
            return jnp.ones(state.count.shape, bool)
        if spec.stagewise:
            return (state.count < sc.c) & (state.stage[:, 2] < _num_stages(sc))
        return state.count < sc.c

    def body(b, state, work):
        fy, src = work
        bd = get_block(src, b)
        items = None
        if fy is not None and spec.max_passes == 1:
            fy, items = _fisher_yates_block(fy, bd.order, b)
        elif fy is not None:  # the shuffle happens in the first pass only
            fy, items = lax.cond(
                b < nb, lambda f: _fisher_yates_block(f, bd.order, b),
                lambda f: (f, jnp.zeros((bd.order.shape[0], BLOCK), jnp.int32)), fy)
        state = jax.vmap(
            lambda s, d, i: _decide_block(spec, sc, vectorized, s, d, i, b, q_pad, t_pad, n)
        )(state, bd, items)
        return state, (fy, src)

    take_work = lambda work, idx: (  # noqa: E731
        _take_shuffle(work[0], idx),
        jax.tree_util.tree_map(lambda x: jnp.take(x, idx, axis=0), work[1]))
    state = compacting_block_loop(body, running, state, (fy, src), nb * spec.max_passes,
                                  take_work=take_work)
    return _finish(spec, sc, state, n, dtype)


def run_keys(spec: SVTSpec, sc: SVTScales, keys: Key, q: Array, t: Array, *, shuffle: bool,
             vectorized: bool = True) -> Outcome:
    """A batch of trials (leading axis of ``keys``), drawing noise block by block."""
    dtype = q.dtype
    z0 = jax.vmap(lambda k: spec.threshold_noise.standard(stream_key(k, "threshold"), (),
                                                          dtype))(keys)
    n = q.shape[0]
    get_block = lambda ks, b: _lazy_block_draws(spec, ks, b, n, shuffle, dtype)  # noqa: E731
    return _loop(spec, sc, vectorized, z0, keys, get_block, q, t, shuffle)


def run_draws(spec: SVTSpec, sc: SVTScales, draws: Draws, q: Array, t: Array, *,
              vectorized: bool = True) -> Outcome:
    """A batch of trials from pre-drawn (batched) ``Draws``."""
    n, passes = q.shape[0], spec.max_passes
    get_block = lambda d, b: _sliced_block_draws(d, b, n, passes)  # noqa: E731
    return _loop(spec, sc, vectorized, jnp.asarray(draws.threshold, q.dtype), draws, get_block,
                 q, t, draws.order is not None)
