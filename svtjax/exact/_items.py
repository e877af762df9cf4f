"""The building blocks every exact law shares: an item's pass/fail probabilities given the
threshold noise ρ = z, blocks of positions, and the per-item result :class:`ItemLaw`.

Item i passes with probability p_i(z) = sf_ν(z − d_i) (fails with cdf_ν(z − d_i), computed
directly so that 1 − p keeps its accuracy), for the item offsets d_i = q_i − T_i − shift in
stream order and the query noise ν (Lyu, Su, Li 2017, Figure 1 line 4).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from svtjax.noise import Noise

__all__ = ["BLOCK", "TAIL", "ItemLaw", "pass_fail", "shift_up", "weights", "item_law",
           "blocked", "block_pass_fail"]

BLOCK = 128  # positions per block of the recursions (checkpoints, skips, output integrals)
TAIL = 1e-30
"""Probability below which work is skipped: the fixed-order recursion stops reading once every
node's P(not halted) is below it; the random-order recursion drops the part of E[min(1,
c/(M+1))] that lives on {M < c} once a Chernoff bound puts it below it, and sets E[min(1,
c/(M+1))] = 1 where P(M ≥ c) is below it. No reported probability moves by more than ``TAIL``
(sums over items by more than ``TAIL`` times the stream length)."""


class ItemLaw(NamedTuple):
    """Per-item probabilities of one run (caller's item order) and the law of the ⊤ count.

    Attributes:
      top: float[n], P(item answered ⊤).
      member: float[n], P(item among the first c_eff ⊤ — the answer set S a metric with
        cut-off c_eff scores; equals ``top`` when c_eff is the mechanism's cut-off).
      evaluated: float[n], P(item evaluated, i.e. the run has not halted before it).
      count: float[states + 1], P(number of ⊤ = k) for k < states, and P(≥ states) last.
      halted: float[n] or None, P(halted after the item's position) (fixed order only).
    """

    top: jax.Array
    member: jax.Array
    evaluated: jax.Array
    count: jax.Array
    halted: Optional[jax.Array] = None


def pass_fail(query: Optional[Noise], z, d_i):
    """(p, 1 − p) of the comparison q_i + ν_i ≥ T_i + shift + z (Lyu'17 Figure 1 line 4)."""
    x = z - d_i
    if query is None:  # ν = 0 (Lyu'17 Algorithm 5): ⊤ iff d_i ≥ z
        top = (x <= 0).astype(z.dtype)
        return top, 1 - top
    return query.sf_cdf(x)


def shift_up(D):
    """D[k − 1] at k (0 at k = 0): after a sure ⊤ the mass at k moves to k + 1 and the top state
    leaves; on a distribution function it is F[k − 1]."""
    return jnp.concatenate([jnp.zeros_like(D[:1]), D[:-1]], axis=0)


def weights(wz):
    """(W [G, L], squeeze): one column of node weights per law."""
    return (wz[:, None], True) if wz.ndim == 1 else (wz, False)


def item_law(top, member, evaluated, count, halted, squeeze: bool) -> "ItemLaw":
    if squeeze:
        top, member, evaluated, count = (x[..., 0] for x in (top, member, evaluated, count))
        halted = None if halted is None else halted[..., 0]
    return ItemLaw(top, member, evaluated, count, halted)


def blocked(d, nb: int):
    """``d`` padded to ``nb`` blocks of :data:`BLOCK` positions, and which entries are items
    (padding items never pass: p = 0, 1 − p = 1, so they change no count)."""
    n = d.shape[0]
    pad = nb * BLOCK - n
    d_pad = jnp.concatenate([d, jnp.zeros((pad,), d.dtype)]).reshape(nb, BLOCK)
    valid = (jnp.arange(nb * BLOCK) < n).reshape(nb, BLOCK)
    return d_pad, valid


def block_pass_fail(query, z, d_blk, ok):
    """(p, 1 − p) of a block of positions at every node: [B, G] each, padding never passing."""
    P, Q = jax.vmap(lambda di: pass_fail(query, z, di))(d_blk)
    return jnp.where(ok[:, None], P, 0), jnp.where(ok[:, None], Q, 1)
