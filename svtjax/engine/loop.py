"""The engine's block loop: a batch of trials of one rule, block by block, until all halt.

* **Early exit with compaction.** A ``lax.while_loop`` over blocks ends once every trial has
  halted; when at most 1/factor of the trials still run they are gathered into a smaller batch
  (``svtjax._loops``). Noise is drawn only for the blocks reached.
* **Retraversal passes** (``passes() > 1``): pass k revisits, in the first pass's order, the
  items not answered ⊤ in passes before it; **caps** (``cap()``): positions at or past the cap
  are not evaluated.
* **The rule, vectorised or scanned.** Within a block the rule's ``block`` form runs where it
  has one (and ``vectorized``), else ``lax.scan`` of its ``step`` with the engine's masking: a
  position is evaluated iff it is valid and the trial has not halted before it.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax import _rng
from svtjax._core import Draws, Outcome
from svtjax._loops import compacting_block_loop
from svtjax._types import Array, Key
from svtjax.engine.draws import families, initial_variates, lazy_block, once, sliced_block
from svtjax.engine.layout import Layout, get_block, layout, pad_last, put_block
from svtjax.engine.outcome import Rows, finish
from svtjax.engine.platform import Platform, resolve
from svtjax.engine.shuffle import (
    fisher_yates_block,
    fisher_yates_prefix,
    perm_dtype,
    shuffle_init,
    shuffle_prefix,
    take_shuffle,
)
from svtjax.mechanisms.base import stream_id, stream_key
from svtjax.mechanisms.rules import Inputs, Written

__all__ = ["run_keys", "run_draws"]


class Run(NamedTuple):
    """The static description of one batch run of the loop.

    ``in_perm``: a single-pass shuffled run through the compiled block reads its items from the
    permutation rows (partners drawn by the engine, each at or after its position, so no swap
    reaches a position already visited). ``prefix``: the shuffle's first positions made before
    the loop (:func:`~svtjax.engine.shuffle.fisher_yates_prefix`), whose blocks read their items
    from the rows; the compiled block draws the partners of the blocks past it from the rows'
    keys."""

    mech: Any
    lay: Layout
    config: Platform
    shuffle: bool
    vectorized: bool
    in_perm: bool
    prefix: int


def _plan(mech, lay: Layout, config: Platform, shuffle: bool, vectorized: bool,
          from_perm: bool = True, prefix: int = 0) -> Run:
    """The :class:`Run`; ``from_perm``: the items may be read from the compiled block's rows
    (not for pre-drawn Draws, whose partners may be anything)."""
    in_perm = from_perm and shuffle and config.native and lay.passes == 1
    if prefix and not in_perm:
        raise ValueError("a shuffle prefix needs the compiled block and a single pass")
    return Run(mech, lay, config, shuffle, vectorized, in_perm, prefix)


def _scaled(x: Inputs, scales: dict) -> Inputs:
    return x._replace(noise={name: scales[name] * x.noise[name] for name in scales})


def _scan_block(mech, state, xs: Inputs, valid: Array, scales: dict):
    """The rule's ``step`` over a block, with the engine's masking: a position is evaluated iff
    it is valid and the trial has not halted before it; otherwise the state is unchanged.

    ``xs.noise`` holds standard variates, scaled inside the scan's body: XLA contracts
    ``q + s·z`` into one fused multiply-add wherever the product and the sum meet in one
    computation, so scaling inside the body (as :meth:`block` does inside its fusion) keeps the
    scan and the block form bit-identical."""
    dtype = xs.query.dtype

    def f(state, xv):
        x, v = xv
        x = _scaled(x, scales)
        active = v & ~mech.halted(state)
        new, w = mech.step(state, x)
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(active, a, b), new, state)
        answer = jnp.where(active, jnp.asarray(w.answer).astype(jnp.int8), jnp.int8(-1))
        value = None if w.value is None else jnp.where(active, w.value, jnp.nan).astype(dtype)
        cost = None if w.cost is None else jnp.where(active, w.cost, 0).astype(dtype)
        return state, Written(answer, value, cost)

    return lax.scan(f, state, (xs, valid))


def _decide_block(run: Run, rows: Rows, noise: dict, items, k, j, q_pad, t_pad, offset,
                  cap) -> Rows:
    """Processing block j of pass k for one trial."""
    mech, lay = run.mech, run.lay
    dtype = q_pad.dtype
    width, n = lay.width, lay.n
    pos = j * width + jnp.arange(width, dtype=jnp.int32)
    valid = pos < n
    if lay.passes > 1:
        # Later passes revisit the first pass's items, skipping those already answered ⊤.
        past = jnp.stack([get_block(rows.answers, p * n + j * width, j * width, n, width, -1)
                          for p in range(lay.passes)])
        earlier = jnp.arange(lay.passes)[:, None] < k
        valid = valid & ~jnp.any((past == 1) & earlier, axis=0)
        if rows.items is not None:
            first = get_block(rows.items, j * width, j * width, n, width, -1)
            items = jnp.where(k == 0, items, jnp.maximum(first, 0))
    position = k * n + pos
    if cap is not None:
        valid = valid & (position < cap)
    if items is not None:
        q_blk, t_blk = q_pad[items], t_pad[items]
    else:
        items = pos
        q_blk = lax.dynamic_slice_in_dim(q_pad, j * width, width)
        t_blk = lax.dynamic_slice_in_dim(t_pad, j * width, width)
    if offset is not None:
        t_blk = t_blk + offset
    scales = {name: jnp.asarray(s.scale_value, dtype) for name, s in mech.streams().items()}
    xs = Inputs(q_blk, t_blk, items, position, {name: noise[name] for name in scales})
    if run.vectorized and mech.has_block():
        state, w = mech.block(rows.state, _scaled(xs, scales), valid)
    else:
        state, w = _scan_block(mech, rows.state, xs, valid, scales)
    answers = jnp.asarray(w.answer).astype(jnp.int8)
    at = k * n + j * width  # pass-major, exact length

    def put(buf, blk):
        return None if buf is None else put_block(buf, blk, at, j * width, n)

    return rows._replace(state=state, answers=put(rows.answers, answers),
                         items=put(rows.items, jnp.where(answers >= 0, items, -1)),
                         values=put(rows.values, w.value), cost=put(rows.cost, w.cost))


def _shuffle_items(run: Run, fy, blk: dict, k, j, done):
    """The Fisher–Yates swaps of processing block j of pass k: (state, items int32[B, W])."""
    lay = run.lay

    def shuffle_block(f):
        return fisher_yates_block(f, blk["order"], j * lay.width, done, run.in_perm)

    if run.prefix:
        # the kernel reads the prefix's items from the rows and draws the partners of the
        # blocks past it from the rows' keys (a conditional around the kernel would copy the
        # rows)
        return fisher_yates_block(fy, None, j * lay.width, done, True, run.prefix, lay.width)
    if lay.passes == 1:
        return shuffle_block(fy)
    # the shuffle happens in the first pass only
    return lax.cond(k == 0, shuffle_block, lambda f: (
        f, jnp.zeros((f.j.shape[0], lay.width), jnp.int32)), fy)


def _block_body(run: Run, get_draws: Callable, q_pad: Array, t_pad: Array) -> Callable:
    """The loop's body: block g (pass g // npb, block g % npb) for every running trial."""
    mech, lay = run.mech, run.lay
    cap = mech.cap()
    total = lay.passes * lay.npb

    def body(g, rows, work):
        fy, src, offsets = work
        # one pass: block g is block j = g of pass 0 (no division left for XLA to compile)
        k, j = (0, g) if lay.passes == 1 else (g // lay.npb, g % lay.npb)
        blk = get_draws(src, k, j)
        items = None
        if fy is not None:
            fy, items = _shuffle_items(run, fy, blk, k, j, rows.done)
        noise = {name: blk[name] for name in mech.streams()}
        rows = jax.vmap(
            lambda r, z, i, o: _decide_block(run, r, z, i, k, j, q_pad, t_pad, o, cap),
            in_axes=(0, 0, None if items is None else 0, None if offsets is None else 0),
        )(rows, noise, items, offsets)
        nxt = g + 1
        done = jax.vmap(mech.halted)(rows.state) | (nxt >= total)
        if cap is not None:  # the next block's first position (one pass: nxt · width)
            first = (nxt * lay.width if lay.passes == 1 else
                     (nxt // lay.npb) * lay.n + (nxt % lay.npb) * lay.width)
            done = done | (first >= cap)
        return rows._replace(done=rows.done | done), (fy, src, offsets)

    return body


def _take_work(work, idx):
    fy, src, offsets = work
    take = lambda x: jnp.take(x, idx, axis=0)  # noqa: E731
    return (take_shuffle(fy, idx), jax.tree_util.tree_map(take, src),
            None if offsets is None else take(offsets))


def _start(run: Run, batch: int, z0: dict, work_src: dict, dtype):
    """The loop's initial rows, shuffle state and per-trial work sources."""
    mech, lay = run.mech, run.lay
    init_scales = {name: jnp.asarray(s.scale_value, dtype)
                   for name, s in mech.initial_streams().items()}
    state = jax.vmap(lambda z: mech.init({name: init_scales[name] * z[name]
                                          for name in init_scales}))(z0)
    buf = lay.buffer
    # The compiled block leaves each trial's order in the first positions of its permutation
    # row (never moved by the compaction), which then serve as the Outcome's items, its rows as
    # long as the stream (no copy); otherwise (the pure-JAX block, whose compaction gathers
    # permutations; retraversal, whose later passes read the first pass's items; pre-drawn
    # Draws, whose partners may be anything) they are written to a buffer block by block.
    if run.prefix:
        fy = fisher_yates_prefix(work_src["order"], lay.n, run.prefix, perm_dtype(lay.n_pad))
        # the kernel draws every partner from fy.keys: the loop carries no "order" keys
        work_src = {name: key for name, key in work_src.items() if name != "order"}
    elif run.shuffle:
        fy = shuffle_init(batch, lay.n_pad, run.config.native, lay.n if run.in_perm else None)
    else:
        fy = None
    rows = Rows(
        state=state,
        done=jnp.zeros((batch,), bool),
        answers=jnp.full((batch, buf), -1, jnp.int8),
        items=(jnp.full((batch, buf), -1, jnp.int32) if run.shuffle and not run.in_perm
               else None),
        values=jnp.full((batch, buf), jnp.nan, dtype) if mech.has_values() else None,
        cost=jnp.zeros((batch, buf), dtype) if mech.per_position_cost else None,
    )
    return rows, fy, work_src


def _loop(run: Run, batch: int, z0: dict, work_src: dict, get_draws: Callable, q: Array,
          t: Array, offsets: Optional[Array]) -> Outcome:
    """Runs a batch block by block until every trial has halted (finished trials compacted
    away, see ``svtjax._loops``). ``get_draws(src, k, j)``: block j of pass k's draws from the
    work sources ``work_src`` (per-trial stream keys or pre-drawn draws)."""
    dtype = q.dtype
    q_pad = pad_last(q, run.lay.n_pad)
    t_pad = pad_last(t, run.lay.n_pad)
    rows, fy, work_src = _start(run, batch, z0, work_src, dtype)
    body = _block_body(run, get_draws, q_pad, t_pad)
    total = run.lay.passes * run.lay.npb
    args = (body, lambda r: ~r.done, rows, (fy, work_src, offsets), total)
    kwargs = dict(factor=run.config.compaction, take_work=_take_work)
    if not run.in_perm:
        return finish(run.mech, run.lay, compacting_block_loop(*args, **kwargs), dtype)
    rows, perm = compacting_block_loop(*args, **kwargs, shared=lambda w: w[0].perm)
    return finish(run.mech, run.lay, rows, dtype, perm)


def run_keys(mech, keys: Key, q: Array, t: Array, *, shuffle: bool,
             offsets: Optional[Array] = None, vectorized: bool = True,
             width: Optional[int] = None, config: Optional[Platform] = None) -> Outcome:
    """A batch of trials (leading axis of ``keys``), drawing noise block by block.

    ``offsets`` (float[batch], optional) are added to every threshold of a trial (per-trial
    thresholds, e.g. Ding et al.'s rule); ``width`` the positions per loop iteration (default:
    the platform's); ``config`` the platform's choices (None: JAX's default backend's,
    :func:`~svtjax.engine.platform.resolve`)."""
    if config is None:
        config = resolve()
    dtype = q.dtype
    lay = layout(mech, q.shape[0], width, config)
    kd = _rng.key_data(keys)
    # Inside a conditional (once), as the blocks' draws: each initial variate is hashed once,
    # not again in every fusion that reads it.
    z0 = {name: once(lambda f=family, s=name: initial_variates(keys, kd, s, f, dtype), 0,
                     config.draw_once)
          if kd is not None else initial_variates(keys, kd, name, family, dtype)
          for name, family in families(mech.initial_streams()).items()}
    names = list(mech.streams()) + (["order"] if shuffle else [])
    if kd is not None:  # raw Threefry keys: the unrolled sampler (svtjax._rng)
        skeys = {name: _rng.fold_in(kd, np.uint32(stream_id(name))) for name in names}
    else:
        skeys = {name: jax.vmap(lambda k, s=name: stream_key(k, s))(keys) for name in names}
    made_once = vectorized and mech.has_block()  # the block form: many consumers of each draw
    # the compiled prefix (its kernel draws the partners from raw Threefry keys), where the
    # compiled block runs and a single pass reads its items from the rows (Run.in_perm)
    prefix = shuffle_prefix(lay, config) if (shuffle and kd is not None and lay.passes == 1 and
                                             config.native) else 0
    drawn = [name for name in names if not (prefix and name == "order")]

    def get_draws(src, k, j):
        return lazy_block(mech, lay, {name: src[name] for name in drawn}, k, j, dtype,
                          made_once, config.draw_once)
    run = _plan(mech, lay, config, shuffle, vectorized, prefix=prefix)
    return _loop(run, keys.shape[0], z0, skeys, get_draws, q, t, offsets)


def run_draws(mech, draws: Draws, q: Array, t: Array, *, vectorized: bool = True,
              config: Optional[Platform] = None) -> Outcome:
    """A batch of trials from pre-drawn (batched) ``Draws``."""
    if config is None:
        config = resolve()
    dtype = q.dtype
    lay = layout(mech, q.shape[0], config=config)
    z0 = {name: jnp.asarray(draws[name], dtype) for name in mech.initial_streams()}
    src = {name: jnp.asarray(draws[name], dtype) for name in mech.streams()}
    shuffle = draws.order is not None
    if shuffle:
        src["order"] = jnp.asarray(draws.order)
    get_draws = lambda d, k, j: sliced_block(lay, d, k, j)  # noqa: E731
    batch = jax.tree_util.tree_leaves(draws)[0].shape[0]
    run = _plan(mech, lay, config, shuffle, vectorized, from_perm=False)
    return _loop(run, batch, z0, src, get_draws, q, t, None)
