"""The sampler of peeled permute-and-flip (≡ peeled report-noisy-max with exponential noise).

One round on the remaining candidates R, scores q, scale b: permute-and-flip flips, for every
r ∈ R, a coin with heads probability p_r = exp((q_r − q*)/b) (q* = max_R q) and returns the
heads candidate that comes first in a uniformly random order (McKenna & Sheldon 2020,
Algorithm 1). Give each candidate a point T_r: with probability p_r uniform on [0, 1] (its
place in the order), else none. The round returns the candidate with the smallest point;
P(T_r ≤ u) = p_r·u, so T_r has hazard h_r(u) = p_r / (1 − p_r·u) on [0, 1].

The smallest point is the first point of a Poisson process with intensity Σ_r h_r(u), marked
r with probability ∝ h_r(u) (the first event of independent point processes), and a Poisson
process with a larger intensity thinned by the ratio has that law (Lewis & Shedler, "Simulation
of nonhomogeneous Poisson processes by thinning", Naval Res. Logist. Q. 26(3), 1979). Since
every p_r ≤ 1, h_r(u) ≤ p_r / (1 − u) =: g_r(u). The dominating process with intensity
Σ_r g_r(u) = P/(1 − u), P = Σ_r p_r, has its points at u_j = 1 − exp(−Γ_j/P) (Γ_j the sums of
standard exponentials, the "gap" variates) and marks r with probability p_r / P whatever u is,
so a mark is one inverse-CDF look-up ("mark" uniforms) in the suffix sums of exp(q/b) over
the scores sorted in decreasing order. A point (u, r) is kept with probability
h_r(u)/g_r(u) = (1 − u)/(1 − p_r·u) ("accept" uniforms; the best candidate, p = 1, is always
kept), and the round returns the mark of the first kept point. Peeling: the proposals range
over the sorted positions from the best remaining one, t, on (the positions before it are all
picked); a picked candidate after t is proposed with its weight and never kept (its h is 0),
which the domination allows.

The proposals of round r come in blocks of :data:`PROPOSALS`; after :data:`BLOCKS` blocks
without a kept point (at level u = 1 − exp(−Γ/P)) the round is finished exactly from the
conditional law given no point below u (the thinned process after a stopping time is a fresh
one): P(T_r ≤ x | T_r > u) = p_r(x − u)/(1 − p_r·u), which u + (1/p_r − u)·V_r has on
[u, 1] for V_r uniform on (0, 1] ("fallback" uniforms, one per item), a value above 1
standing for "no point"; the smallest of these is the pick, and since the best candidate's is
at most 1, a value above 1 never wins. Each round uses fresh numbers. A proposal is kept with
probability at least 1 − u (and the best candidate's always), so few proposals are made and
the fallback, which draws n numbers for its round, is rare.

Random numbers of a trial key: block (r, blk) is 3 × ``PROPOSALS`` uniforms of the key
fold_in(stream_key(key, "proposal"), r·BLOCKS + blk) (:func:`block_variates`); round r's
fallback is ``stream_variates(fold_in(stream_key(key, "fallback"), r), n)``, item i's number at
index i. ``Draws.gap``/``mark``/``accept`` are float[k, BLOCKS, PROPOSALS], ``Draws.fallback``
float[k, n]. Same numbers, same picks: :func:`svtjax.reference.flip.permute_and_flip` is this
construction in numpy loops. Scores are sorted in decreasing order, equal ones by index (the
order among equal scores does not change the law).

The batch kernel (:func:`peel_batch`) steps every trial of a batch one block at a time in one
``while_loop`` (a trial moves to its next round when a block keeps a point), so a batch runs
about k + (a few) blocks; the fallback runs under a ``cond`` only when some trial of the batch
needs it (under an outer ``vmap``, e.g. a sweep batching its points, the ``cond`` becomes a
select and every step computes the fallback: the same picks, at the cost of n numbers a step).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from svtjax.mechanisms.base import Footprint, Held, stream_key, stream_variates

PROPOSALS = 1
"""Proposals per block (one vectorised step)."""
BLOCKS = 64
"""Blocks of proposals per round before the fallback."""


def uniform(key, shape=(), dtype=None):
    """Standard uniform variates on [0, 1)."""
    return jax.random.uniform(key, shape, dtype)


FOOTPRINT = Footprint(held=(
    Held("a round's fallback: its uniforms, its values and the inverse probabilities", floats=3),
    Held("the fallback's mask of picked items (bool)", bytes=1),
    Held("the loop's state per pick: the picks (int32) and the picked sorted positions (bool), "
         "a word each", per="position", bytes=8)))
"""What a trial of :func:`peel_batch` holds besides its Outcome, for the engine's chunk sizing
(``svtjax.engine.sizing``): per pick its slot of the loop's state, per item the numbers of a
round's fallback (only in the rare step that needs them, counted so that such a step fits).
Not cache-bound: a batch reads the scores only through the shared sort and suffix sums, so one
chunk of all trials runs fastest."""

BLOCK_STREAMS = ("gap", "mark", "accept")
"""The three numbers of a proposal, in the order of a block's rows."""


def block_variates(key, r, blk, dtype) -> tuple:
    """Block ``blk`` of round ``r``: ``PROPOSALS`` proposals, (gap, mark, accept), from the 3 rows
    of uniforms U of the key fold_in(stream_key(key, "proposal"), r·BLOCKS + blk): gap =
    −log1p(−U₀) standard exponential, mark = U₁, accept = U₂."""
    rkey = jax.random.fold_in(stream_key(key, "proposal"), r * BLOCKS + blk)
    u = uniform(rkey, (3, PROPOSALS), dtype)
    return -jnp.log1p(-u[0]), u[1], u[2]


def fallback_variates(key, r, n: int, dtype):
    """Round ``r``'s fallback: n standard uniforms, item i's at index i."""
    return stream_variates(jax.random.fold_in(stream_key(key, "fallback"), r), n, uniform, dtype)


def draw(key, n: int, k: int, dtype) -> dict:
    """Every number a trial may use: the blocks of every round and every round's fallback."""
    rounds, blocks = jnp.arange(k), jnp.arange(BLOCKS)
    rows = jax.vmap(lambda r: jax.vmap(lambda blk: block_variates(key, r, blk, dtype))(blocks))(
        rounds)
    out = dict(zip(BLOCK_STREAMS, rows))
    out["fallback"] = jax.vmap(lambda r: fallback_variates(key, r, n, dtype))(rounds)
    return out


class Sorted(NamedTuple):
    """The scores sorted in decreasing order (ties by index) and what every round reads."""

    q: jax.Array         # the scores by item (0.0 for ±0.0)
    order: jax.Array     # sorted position -> item
    rank: jax.Array      # item -> sorted position
    qs: jax.Array        # the sorted scores
    s: jax.Array         # (qs − qs[0]) / b
    log_tail: jax.Array  # log Σ_{l ≥ j} exp(s_l): the suffix sums of the proposal weights


def setup(q, b) -> Sorted:
    q = jnp.where(q == 0, jnp.zeros((), q.dtype), q)  # -0.0 and 0.0 tie, as in numpy
    n = q.shape[0]
    order = jnp.argsort(-q, stable=True).astype(jnp.int32)
    qs = q[order]
    s = (qs - qs[0]) / b
    rank = jnp.zeros((n,), jnp.int32).at[order].set(jnp.arange(n, dtype=jnp.int32))
    return Sorted(q, order, rank, qs, s, lax.cumlogsumexp(s, reverse=True))


def round_constants(sc: Sorted, t):
    """The best remaining score q_t, log of the proposal mass from t on, and P = Σ p_r."""
    log_mass = sc.log_tail[t]
    return sc.qs[t], log_mass, jnp.exp(log_mass - sc.s[t])


def propose(sc: Sorted, b, q_t, log_mass, P, gamma, mark, accept, picks):
    """One proposal (elementwise over any shape): the dominating point at Γ = ``gamma``, its
    mark, and whether it is kept. ``picks`` (last axis) are the items picked so far (-1: none).

    Returns (item, kept)."""
    w = jnp.exp(-gamma / P)                                           # 1 − u
    target = jnp.log1p(-mark) + log_mass                              # log((1 − V)·mass)
    pos = jnp.searchsorted(-sc.log_tail, -target, side="right",
                           method="scan_unrolled").astype(jnp.int32) - 1
    p = jnp.exp((sc.qs[pos] - q_t) / b)                               # heads probability
    item = sc.order[pos]
    picked = jnp.any(item[..., None] == picks, axis=-1)
    return item, ~picked & (accept * ((1 - p) + p * w) <= w)          # (1−u)/(1−p·u)


def fallback_values(sc: Sorted, b, q_t, gamma, P, v, picked):
    """Per item, its point above the level u = 1 − exp(−Γ/P), shifted by −u: (1/p − u)·(1 − V);
    a picked item +inf. The pick is the smallest (first of equal ones)."""
    u = -jnp.expm1(-gamma / P)
    inv_p = jnp.exp((q_t - sc.q) / b)
    return jnp.where(picked, jnp.inf, (1 - v) * (inv_p - u))


def peel_batch(sc: Sorted, b, k: int, batch: int, blocks_of: Callable, fallback_of: Callable,
               blocks: int = BLOCKS):
    """k peeled rounds for ``batch`` trials; returns the picks, int32[batch, k].

    ``blocks_of(r, blk)`` gives the (gap, mark, accept) numbers of every trial's block, each
    [batch, PROPOSALS]; ``fallback_of(r)`` every trial's fallback uniforms [batch, n]
    (``r``, ``blk``: int32[batch]); ``blocks``: blocks of a round before its fallback.
    """
    dtype = sc.q.dtype
    n = sc.q.shape[0]
    slots = jnp.arange(k, dtype=jnp.int32)
    rows = jnp.arange(batch, dtype=jnp.int32)

    def step(state):
        r, blk, gamma, picks, low = state
        active = r < k
        rr = jnp.minimum(r, k - 1)
        t = jnp.argmin(low, axis=1).astype(jnp.int32)  # the best remaining sorted position
        q_t, log_mass, P = round_constants(sc, t)
        gap, mark, accept = blocks_of(rr, blk)
        sums, g = [], gamma
        for j in range(PROPOSALS):  # sequential sums: the reference adds in the same order
            g = g + gap[:, j]
            sums.append(g)
        gammas = jnp.stack(sums, axis=1)
        item, kept = propose(sc, b, q_t[:, None], log_mass[:, None], P[:, None], gammas,
                             mark, accept, picks[:, None, :])
        found = jnp.any(kept, axis=1)
        pick = jnp.take_along_axis(item, jnp.argmax(kept, axis=1)[:, None], axis=1)[:, 0]
        need = active & ~found & (blk + 1 >= blocks)

        def fallback(pick):
            picked = jnp.zeros((batch, n), bool).at[
                rows[:, None], jnp.where(picks >= 0, picks, n)].set(True, mode="drop")
            values = fallback_values(sc, b, q_t[:, None], g[:, None], P[:, None],
                                     fallback_of(rr), picked)
            return jnp.where(need, jnp.argmin(values, axis=1).astype(jnp.int32), pick)

        pick = lax.cond(jnp.any(need), fallback, lambda pick: pick, pick)
        done = active & (found | need)
        picks = jnp.where(done[:, None] & (slots == rr[:, None]), pick[:, None], picks)
        low = low | (done[:, None] & (slots == sc.rank[pick][:, None]))
        return (r + done.astype(jnp.int32), jnp.where(done, 0, blk + active.astype(jnp.int32)),
                jnp.where(done, jnp.zeros((), dtype), g), picks, low)

    init = (jnp.zeros((batch,), jnp.int32), jnp.zeros((batch,), jnp.int32),
            jnp.zeros((batch,), dtype), jnp.full((batch, k), -1, jnp.int32),
            jnp.zeros((batch, k), bool))
    return lax.while_loop(lambda state: jnp.any(state[0] < k), step, init)[3]


def peel_loop(sc: Sorted, b, k: int, draws):
    """One trial on ``draws``, proposal by proposal (a scan that keeps the first kept point)
    and the fallback as a running minimum over the items: equal to :func:`peel_batch`."""
    dtype = sc.q.dtype
    n = sc.q.shape[0]
    slots = jnp.arange(k, dtype=jnp.int32)

    def one_round(r, carry):
        picks, low = carry
        t = jnp.argmin(low).astype(jnp.int32)
        q_t, log_mass, P = round_constants(sc, t)

        def visit(state, x):
            found, pick, g = state
            gap, mark, accept = x
            g = g + gap
            item, kept = propose(sc, b, q_t, log_mass, P, g, mark, accept, picks)
            take = ~found & kept
            return (found | take, jnp.where(take, item, pick), g), None

        xs = tuple(jnp.asarray(draws[name], dtype)[r].reshape(-1) for name in BLOCK_STREAMS)
        (found, pick, g), _ = lax.scan(visit, (jnp.asarray(False), jnp.int32(0),
                                               jnp.zeros((), dtype)), xs)

        def fallback(_):
            picked = jnp.zeros((n,), bool).at[jnp.where(picks >= 0, picks, n)].set(
                True, mode="drop")
            values = fallback_values(sc, b, q_t, g, P, jnp.asarray(draws["fallback"], dtype)[r],
                                     picked)

            def low_scan(best, x):
                i, value = x
                better = value < best[1]
                return (jnp.where(better, i, best[0]), jnp.where(better, value, best[1])), None

            (best, _), _ = lax.scan(low_scan, (jnp.int32(0), jnp.asarray(jnp.inf, dtype)),
                                    (jnp.arange(n, dtype=jnp.int32), values))
            return best

        pick = lax.cond(found, lambda _: pick, fallback, None)
        return picks.at[r].set(pick), low | (slots == sc.rank[pick])

    init = (jnp.full((k,), -1, jnp.int32), jnp.zeros((k,), bool))
    return lax.fori_loop(0, k, one_round, init)[0]
