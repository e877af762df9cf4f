"""The selection baselines with exponential and Gumbel noise: permute-and-flip, report-noisy-max
with exponential noise (both top-k by peeling) and one-shot Gumbel top-k.

Three registered mechanisms, each with the ``Outcome`` of every selection mechanism
(:mod:`svtjax.mechanisms.selection`): length k, ``answers`` all 1, ``items`` the picks best
first, ``values`` NaN, ``cost`` ε/k per pick. Scores q_1..q_n with sensitivity Δ; ``monotonic``
halves every scale as for the exponential mechanism. Every round of a peeled mechanism runs at
ε/k, so its scale is b = 2kΔ/ε (kΔ/ε monotonic), the scale of ``SelectionMechanism.scale``.

* ``permute-and-flip`` (McKenna & Sheldon, NeurIPS 2020, Algorithm 1): q* = max_r q_r; visit
  the candidates in a uniformly random order and return the first r whose coin, with heads
  probability exp((q_r − q*)/b), comes up heads. Top-k: k rounds, each pick removed from the
  candidates (as ``em-peeling`` does for the exponential mechanism).
* ``report-noisy-max-exp``: argmax_r q_r + Z_r, Z_r ~ Exp(b) (one-sided, mean b), fresh noise
  every round; top-k by the same peeling. Its law equals permute-and-flip's (Ding, Kifer,
  Saghaian, Steinke, Wang, Xiao, Zhang, "The Permute-and-Flip Mechanism is Identical to
  Report-Noisy-Max with Exponential Noise", arXiv:2105.07260, 2021), round by round, hence also
  peeled. Not the same as ``report-noisy-max`` with ``noise="exponential"`` and k > 1, which
  ranks one noisy vector once (one-shot) and has no proved guarantee.
* ``gumbel-top-k`` (Durfee & Rogers, "Practical Differentially Private Top-k Selection with
  Pay-what-you-get Composition", NeurIPS 2019): add Gumbel(b) to every score once and release
  the k largest in order. Its ordered output has the law of k rounds of the exponential mechanism
  (McSherry & Talwar 2007) at ε′ = ε/k each, picked items removed, i.e. ``em-peeling`` with
  c = k; the same kernel as ``em-peeling`` and ``report-noisy-max`` with ``noise="gumbel"``.

Randomness of the peeled mechanisms: fresh numbers every round (the rounds of a peeling are
independent mechanisms). Round r (0-based) of stream ``name`` is the stream of the key
``fold_in(stream_key(key, name), r)``, n standard variates in the blocks of
:func:`svtjax.mechanisms.base.stream_variates`, so ``Draws.<name>`` is float[k, n] and row r,
item i depends only on (trial key, stream, r, i). ``report-noisy-max-exp`` reads ``query``
(standard exponentials E). ``permute-and-flip`` reads ``query`` for its coins and
``permutation`` (standard uniforms U) for its order:

* **the order**: the remaining candidates sorted by U, a uniformly random order (equal U go to
  the lower index; this matters only between candidates whose coins both come up heads, with
  probability about h²·2^-24 for h heads in float32);
* **the coin** of r: heads iff q_r + b·E_r ≥ q*, which has probability P(E ≥ (q* − q_r)/b) =
  exp((q_r − q*)/b), exactly the paper's; written with additions and a product only, so that the
  kernel and the reference compute the same comparison bit for bit (an ``exp`` may differ by an
  ulp between libraries). The best candidate's coin is always heads (E ≥ 0).

So a round picks the remaining candidate with the smallest U among those whose coin is heads
(``vectorized=True``: one masked minimum); ``vectorized=False`` visits the permutation
position by position and stops at the first heads (the paper's loop), tested equal.
``report-noisy-max-exp``'s ``vectorized=False`` is the running maximum of a scan over the items.

``shuffle`` and thresholds are accepted and ignored, as for every selection mechanism. k is
static (it fixes the Outcome's shape); ε and Δ are traced.

Cost: a peeled mechanism draws k·n (``report-noisy-max-exp``) or 2·k·n (``permute-and-flip``)
variates per trial where a one-shot one draws n, so at k > 1 it is slower than
``report-noisy-max`` at the same k by about the factor of the extra draws (``svtjax bench``
times every mechanism side by side). Each round's pick is one ``lax.top_k`` of width 1
(XLA's CPU backend runs it far faster than ``argmax``), and the last round removes nothing.

Free gap: Ding, Wang, Xiao, Wang, Zhang, Kifer 2023 ("Free gap estimates from the exponential
mechanism, sparse vector, noisy max and related algorithms", VLDB J. 32(1)) release gaps for
noisy max; their exact statement for exponential or Gumbel noise is not reproduced here, so none
of these mechanisms releases a gap (``noisy-top-k-gap`` does, for Laplace noise, Ding et al.
2019 Theorem 2).

Exact laws: :func:`svtjax.exact.picks_law` (every ordered k-tuple's probability).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from jax import lax

from svtjax import _validate
from svtjax._core import Draws, Outcome
from svtjax._pytree import pytree_dataclass, staged_call, static_field
from svtjax.accounting import PureDP
from svtjax.mechanisms.base import register, stream_key, stream_variates
from svtjax.mechanisms.selection import SelectionMechanism, _top
from svtjax.noise import Exponential, Gumbel
from svtjax.reference import flip as ref
from svtjax.testing import Case, eps_sensitivity

__all__ = ["PeeledSelection", "PermuteAndFlip", "ReportNoisyMaxExp", "GumbelTopK"]


def _uniform(key, shape=(), dtype=None):
    """Standard uniform variates on [0, 1) (the order of permute-and-flip)."""
    return jax.random.uniform(key, shape, dtype)


def _round_variates(key, name: str, r, n: int, standard, dtype):
    """Row r of stream ``name``: n standard variates of the key fold_in(stream_key, r)."""
    return stream_variates(jax.random.fold_in(stream_key(key, name), r), n, standard, dtype)


class PeeledSelection(SelectionMechanism):
    """k rounds of a top-1 selection at ε/k, each pick removed; fresh variates every round.

    A subclass names its streams (``round_streams``: stream name -> standard sampler) and one
    round (``_round``: the pick among the remaining candidates, given that round's variates).
    """

    round_streams: ClassVar[tuple] = ()

    def noises(self) -> dict:
        """The exponential noise of every round (permute-and-flip's coins too): Exp(b)."""
        return {"query": Exponential(self.scale())}

    def draw(self, key, n: int, *, shuffle: bool = False, dtype=None) -> Draws:
        """Every round's variates: ``Draws.<stream>`` float[k, n] (module docstring)."""
        del shuffle
        _validate.integer("n", n, minimum=1)
        self._check_n(int(n))
        dtype = jnp.zeros((), float).dtype if dtype is None else jnp.dtype(dtype)
        return staged_call(_draw_jit, self.round_streams, key, int(n), self.num_picks(), dtype)

    def decide(self, draws: Draws, queries, thresholds, *, vectorized: bool = True) -> Outcome:
        q, _ = self._prepare(queries, thresholds)
        return staged_call(_decide_jit, self, draws, q, vectorized)

    def __call__(self, key, queries, thresholds) -> Outcome:
        q, _ = self._prepare(queries, thresholds)
        return staged_call(_call_jit, self, key, q)

    def run_batch(self, keys, queries, thresholds, *, shuffle: bool, offsets=None,
                  vectorized: bool = True, width=None) -> Outcome:
        del thresholds, shuffle, offsets, width
        return jax.vmap(lambda key: _trial(self, key, queries, vectorized))(keys)

    def working_bytes(self, n: int, itemsize: int, shuffle: bool) -> int:
        del shuffle
        k = self.num_picks()
        streams = len(self.round_streams)
        return k * (1 + 4 + 2 * itemsize) + n * ((2 + 2 * streams) * itemsize + 1)

    def _round(self, scores, b, variates: dict, vectorized: bool):
        """The round's pick among the candidates (``scores`` finite; picked items -inf)."""
        raise NotImplementedError


# -- kernel (one trial) --------------------------------------------------------------------

def _draw(streams: tuple, key, n: int, k: int, dtype) -> Draws:
    rows = jnp.arange(k)
    return Draws({name: jax.vmap(lambda r, name=name, standard=standard: _round_variates(
        key, name, r, n, standard, dtype))(rows) for name, standard in streams})


def _peel(mech: PeeledSelection, q, round_variates, vectorized: bool) -> Outcome:
    dtype = q.dtype
    k = mech.num_picks()
    b = jnp.asarray(mech.scale(), dtype)

    def one_round(r, carry):  # the candidates' scores, picked ones at -inf (never picked)
        scores, picks = carry
        j = mech._round(scores, b, round_variates(r), vectorized)
        return scores.at[j].set(-jnp.inf), picks.at[r].set(j)

    init = (q, jnp.zeros((k,), jnp.int32))
    scores, picks = lax.fori_loop(0, k - 1, one_round, init) if k > 1 else init
    last = mech._round(scores, b, round_variates(k - 1), vectorized)  # no removal after it
    picks = picks.at[k - 1].set(last)
    return Outcome(answers=jnp.ones((k,), jnp.int8), items=picks,
                   values=jnp.full((k,), jnp.nan, dtype),
                   cost=jnp.full((k,), jnp.asarray(mech.pick_cost(), dtype)))


def _decide(mech: PeeledSelection, draws: Draws, q, vectorized: bool) -> Outcome:
    def row(r):
        return {name: jnp.asarray(draws[name], q.dtype)[r] for name, _ in mech.round_streams}

    return _peel(mech, q, row, vectorized)


def _trial(mech: PeeledSelection, key, q, vectorized: bool = True) -> Outcome:
    n = q.shape[0]

    def row(r):  # drawn inside the round: a trial holds one round's numbers at a time
        return {name: _round_variates(key, name, r, n, standard, q.dtype)
                for name, standard in mech.round_streams}

    return _peel(mech, q, row, vectorized)


_draw_jit = jax.jit(_draw, static_argnums=(0, 2, 3, 4))


@functools.partial(jax.jit, static_argnums=(3,))
def _decide_jit(mech, draws, q, vectorized):
    return _decide(mech, draws, q, vectorized)


@jax.jit
def _call_jit(mech, key, q):
    return _trial(mech, key, q)


def _first_max(x):
    """The lowest index of the largest value: ``lax.top_k`` (selection's ``_top``, +0.0 and
    -0.0 tied), which XLA's CPU backend runs far faster than ``argmax``'s variadic reduction."""
    return _top(x, 1, True)[1][0]


# -- the mechanisms ------------------------------------------------------------------------

def _privacy_rounds(mech) -> str:
    k = mech.num_picks()
    return "" if k == 1 else f"; {k} rounds at ε/{k}, picks removed, composed"


@register(reference=ref.permute_and_flip, cases=[
    Case("permute-and-flip", {"k": 3}, eps_sensitivity),
])
@pytree_dataclass
class PermuteAndFlip(PeeledSelection):
    """Permute-and-flip (McKenna & Sheldon, NeurIPS 2020, Algorithm 1), top-k by peeling.

    One round on the remaining candidates R: q* = max_{r∈R} q_r; for r in a uniformly random
    permutation of R: with probability exp(ε′(q_r − q*)/(2Δ)) return r (ε′ = ε/k; exp(ε′(q_r −
    q*)/Δ) for monotonic scores). The best candidate is accepted with probability 1, so a round
    always returns. k rounds, each pick removed (module docstring: the coins and the order).

    Privacy: each round is ε/k-DP (McKenna & Sheldon 2020 prove permute-and-flip with
    acceptance exp(ε(q_r − q*)/(2Δ)) ε-DP); with the monotonic weight a round is identical in
    law to report-noisy-max with Exp(kΔ/ε) noise (Ding et al. 2021), ε/k-DP by Dwork & Roth
    2014, Claim 3.9's argument (``report-noisy-max``'s statement). k rounds compose to ε.

    Args:
      epsilon: total budget ε > 0 (traced).
      k: number of picks, 1 <= k <= n (static); default 1, the paper's mechanism.
      sensitivity: Δ > 0 (traced).
      monotonic: monotonic scores: acceptance exp(ε(q_r − q*)/(kΔ)).
    """

    epsilon: Any
    k: int = static_field(default=1)
    sensitivity: Any = 1.0
    monotonic: bool = static_field(default=False)
    round_streams: ClassVar[tuple] = (("permutation", _uniform),
                                      ("query", Exponential.standard))
    name = "permute-and-flip"

    def __post_init__(self):
        self._check_common()

    def _round(self, scores, b, variates, vectorized):
        q_star = jnp.max(scores)                                       # q* over the candidates
        heads = scores + b * variates["query"] >= q_star               # P = exp((q_r − q*)/b)
        u = variates["permutation"]
        inf = jnp.asarray(jnp.inf, u.dtype)
        if vectorized:  # the first heads of the permutation: the smallest U among the heads
            return _first_max(jnp.where(heads, -u, -inf))
        remaining = scores > -jnp.inf
        order = jnp.argsort(jnp.where(remaining, u, inf), stable=True).astype(jnp.int32)

        def visit(carry, r):  # the paper's loop: visit in order, stop at the first heads
            found, pick = carry
            take = ~found & heads[r]
            return (found | take, jnp.where(take, r, pick)), None

        (_, pick), _ = lax.scan(visit, (jnp.asarray(False), jnp.int32(0)), order)
        return pick

    def privacy(self):
        weight = "exp(ε(q−q*)/(kΔ)), monotonic scores" if self.monotonic else \
            "exp(ε(q−q*)/(2kΔ))"
        return PureDP("McKenna & Sheldon 2020 (NeurIPS), Algorithm 1: permute-and-flip is ε-DP, "
                      f"here at ε/k per round ({weight}"
                      + ("; identical to report-noisy-max with Exp(kΔ/ε), Ding et al. 2021, "
                         "ε/k-DP by Dwork & Roth 2014, Claim 3.9's argument"
                         if self.monotonic else "")
                      + f"){_privacy_rounds(self)}: ε-DP", float(self.epsilon))


@register(reference=ref.report_noisy_max_exp, cases=[
    Case("report-noisy-max-exp-monotonic", {"k": 2, "monotonic": True}, eps_sensitivity),
])
@pytree_dataclass
class ReportNoisyMaxExp(PeeledSelection):
    """Report-noisy-max with exponential noise, top-k by peeling.

    One round on the remaining candidates R: return argmax_{r∈R} q_r + Z_r, Z_r ~ Exp(2kΔ/ε)
    (one-sided, mean 2kΔ/ε; kΔ/ε for monotonic scores), fresh noise each round; ties to the
    lower index. Each round has permute-and-flip's law at ε/k (Ding, Kifer, Saghaian, Steinke,
    Wang, Xiao, Zhang 2021, arXiv:2105.07260: report-noisy-max with Exp(2Δ/ε) noise is
    identical to permute-and-flip at ε), so the peeled k-tuple has ``permute-and-flip``'s law.

    Privacy: ε/k-DP per round (permute-and-flip, McKenna & Sheldon 2020; for monotonic scores
    Dwork & Roth 2014, Claim 3.9's argument with Exp(kΔ/ε)); k rounds compose to ε.

    Args:
      epsilon: total budget ε > 0 (traced).
      k: number of picks, 1 <= k <= n (static); default 1.
      sensitivity: Δ > 0 (traced).
      monotonic: monotonic scores: Exp(kΔ/ε).
    """

    epsilon: Any
    k: int = static_field(default=1)
    sensitivity: Any = 1.0
    monotonic: bool = static_field(default=False)
    round_streams: ClassVar[tuple] = (("query", Exponential.standard),)
    name = "report-noisy-max-exp"

    def __post_init__(self):
        self._check_common()

    def _round(self, scores, b, variates, vectorized):
        noisy = scores + b * variates["query"]                         # -inf: picked already
        if vectorized:
            return _first_max(noisy)

        def visit(carry, x):  # the running maximum; replaced only on a strictly larger value
            best, best_value = carry
            i, value = x
            better = value > best_value
            return (jnp.where(better, i, best), jnp.where(better, value, best_value)), None

        idx = jnp.arange(scores.shape[0], dtype=jnp.int32)
        (best, _), _ = lax.scan(visit, (jnp.int32(0), noisy[0]), (idx, noisy))
        return best

    def privacy(self):
        noise = "Exp(kΔ/ε), monotonic scores, by Dwork & Roth 2014, Claim 3.9's argument" \
            if self.monotonic else "Exp(2kΔ/ε)"
        return PureDP("Ding, Kifer, Saghaian, Steinke, Wang, Xiao, Zhang 2021: report-noisy-max "
                      "with exponential noise is identical to permute-and-flip, ε-DP (McKenna & "
                      f"Sheldon 2020), here at ε/k per round ({noise}){_privacy_rounds(self)}: "
                      "ε-DP", float(self.epsilon))


@register(reference=ref.gumbel_top_k, cases=[
    Case("gumbel-top-k", {"k": 3}, eps_sensitivity),
])
@pytree_dataclass
class GumbelTopK(SelectionMechanism):
    """One-shot Gumbel top-k (Durfee & Rogers, NeurIPS 2019).

    Add Gumbel(2Δ/ε′) noise to every score, ε′ = ε/k (Gumbel(Δ/ε′) for monotonic scores), and
    release the indices of the k largest noisy scores in order (ties to the lower index).
    Durfee & Rogers show that this ordered output has the law of the exponential mechanism run
    k times at ε′ (weight ε′/(2Δ), ε′/Δ monotonic), picked items removed — ``em-peeling`` with
    c = k, which is the same kernel on the same draws.

    Privacy, as the paper states it: k·ε′ = ε by composition of k exponential mechanisms at ε′
    (McSherry & Talwar 2007). Durfee & Rogers also give tighter approximate-DP bounds for the
    k-release; they are not restated here, so ``privacy()`` claims the composition bound only.

    Args:
      epsilon: total budget ε = kε′ > 0 (traced).
      k: number of picks, 1 <= k <= n (static); default 1 (the exponential mechanism).
      sensitivity: Δ > 0 (traced).
      monotonic: monotonic scores: Gumbel(Δ/ε′).
    """

    epsilon: Any
    k: int = static_field(default=1)
    sensitivity: Any = 1.0
    monotonic: bool = static_field(default=False)
    noise_family: ClassVar[type] = Gumbel
    name = "gumbel-top-k"

    def __post_init__(self):
        self._check_common()

    def privacy(self):
        mono = ", monotonic quality" if self.monotonic else ""
        return PureDP("Durfee & Rogers 2019 (NeurIPS): one-shot top-k with Gumbel noise has the "
                      "law of k rounds of the exponential mechanism at ε′ = ε/k (McSherry & "
                      f"Talwar 2007{mono}), composed: kε′ = ε-DP", float(self.epsilon))
