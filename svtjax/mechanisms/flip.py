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

Sampler of the peeled mechanisms (:mod:`svtjax.mechanisms._peeled`): both run one exact
sampler, since a round of ``report-noisy-max-exp`` has a round of ``permute-and-flip``'s law
(Ding et al. 2021). A round returns permute-and-flip's first heads, the remaining candidate with
the smallest point T_r (T_r uniform on [0, 1] with probability p_r = exp((q_r − q*)/b), its
place in the random order when its coin is heads, else no point), found as the first kept point
of a dominating Poisson process thinned by the ratio of intensities (Lewis & Shedler 1979): a
proposal costs three uniforms and a binary search in the suffix sums of exp(q/b) over the
sorted scores, and a round on the benchmark workloads keeps its first or second proposal.
After ``BLOCKS`` rejected proposals the round ends exactly from the conditional law of the
points above the level reached (n fresh uniforms, rare). Fresh numbers every round (the rounds
of a peeling are independent mechanisms): ``Draws.gap``, ``mark``, ``accept`` float[k, BLOCKS,
PROPOSALS] (round r, proposal j) and ``Draws.fallback`` float[k, n] (round r, item i).
``vectorized=False`` runs the proposals one by one and the fallback as a running minimum,
tested equal to the batched kernel. Exactness is tested against the closed form of
permute-and-flip and the quadrature of report-noisy-max with exponential noise
(``tests/test_selection_baselines.py``), the fallback by itself included.

``shuffle`` and thresholds are accepted and ignored, as for every selection mechanism. k is
static (it fixes the Outcome's shape); ε and Δ are traced.

Cost: a trial of a peeled mechanism draws a few numbers per round and reads the scores only
through one sort and one suffix sum per batch (shared by its trials), so it does not grow with
n like ``report-noisy-max``'s n draws per trial; ``svtjax bench`` times both side by side.

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

from svtjax import _validate
from svtjax._core import Draws, Outcome
from svtjax._pytree import pytree_dataclass, staged_call, static_field
from svtjax.accounting import PureDP
from svtjax.mechanisms import _peeled as peeled
from svtjax.mechanisms.base import Footprint, register
from svtjax.mechanisms.selection import SelectionMechanism
from svtjax.noise import Exponential, Gumbel
from svtjax.reference import flip as ref
from svtjax.testing import Case, Claim, LawTestedIn, eps_sensitivity

__all__ = ["PeeledSelection", "PermuteAndFlip", "ReportNoisyMaxExp", "GumbelTopK"]


class PeeledSelection(SelectionMechanism):
    """k rounds of permute-and-flip at ε/k, each pick removed, fresh numbers every round: the
    exact sampler of :mod:`svtjax.mechanisms._peeled` (thinning of a dominating Poisson
    process), shared by ``permute-and-flip`` and ``report-noisy-max-exp``, whose rounds have
    the same law (Ding et al. 2021)."""

    footprint: ClassVar[Footprint] = peeled.FOOTPRINT

    def noises(self) -> dict:
        """The exponential noise of every round (permute-and-flip's coins): Exp(b)."""
        return {"query": Exponential(self.scale())}

    def draw(self, key, n: int, *, shuffle: bool = False, dtype=None) -> Draws:
        """Every number a trial may use (module docstring of :mod:`svtjax.mechanisms._peeled`):
        ``gap``, ``mark``, ``accept`` float[k, BLOCKS, PROPOSALS], ``fallback`` float[k, n]."""
        del shuffle
        _validate.integer("n", n, minimum=1)
        self._check_n(int(n))
        dtype = jnp.zeros((), float).dtype if dtype is None else jnp.dtype(dtype)
        return staged_call(_draw_jit, key, int(n), self.num_picks(), dtype)

    def _compiled(self, which: str):
        return {"decide": _decide_jit, "call": _call_jit}[which]

    def run_batch(self, keys, queries, thresholds, *, shuffle: bool, offsets=None,
                  vectorized: bool = True, width=None, engine=None) -> Outcome:
        """A batch of trials in one kernel (:func:`svtjax.mechanisms._peeled.peel_batch`);
        ``thresholds``, ``offsets``, ``shuffle``, ``width`` and ``vectorized`` are ignored."""
        del thresholds, shuffle, offsets, width, vectorized, engine
        return _batch(self, keys, queries)


# -- kernel --------------------------------------------------------------------------------

def _outcome(mech: PeeledSelection, picks, dtype) -> Outcome:
    shape = picks.shape
    return Outcome(answers=jnp.ones(shape, jnp.int8), items=picks,
                   values=jnp.full(shape, jnp.nan, dtype),
                   cost=jnp.full(shape, jnp.asarray(mech.pick_cost(), dtype)))


def _batch(mech: PeeledSelection, keys, q) -> Outcome:
    dtype = q.dtype
    n, k, batch = q.shape[0], mech.num_picks(), keys.shape[0]
    b = jnp.asarray(mech.scale(), dtype)

    def blocks_of(r, blk):
        return jax.vmap(lambda key, r, blk: peeled.block_variates(key, r, blk, dtype))(
            keys, r, blk)

    def fallback_of(r):
        return jax.vmap(lambda key, r: peeled.fallback_variates(key, r, n, dtype))(keys, r)

    picks = peeled.peel_batch(peeled.setup(q, b), b, k, batch, blocks_of, fallback_of)
    return _outcome(mech, picks, dtype)


def _decide(mech: PeeledSelection, draws: Draws, q, vectorized: bool) -> Outcome:
    dtype = q.dtype
    k = mech.num_picks()
    b = jnp.asarray(mech.scale(), dtype)
    sc = peeled.setup(q, b)
    if not vectorized:
        return _outcome(mech, peeled.peel_loop(sc, b, k, draws), dtype)

    def blocks_of(r, blk):
        return tuple(jnp.asarray(draws[name], dtype)[r, blk] for name in peeled.BLOCK_STREAMS)

    def fallback_of(r):
        return jnp.asarray(draws["fallback"], dtype)[r]

    blocks = jnp.shape(draws["gap"])[1]  # draws with fewer blocks reach the fallback sooner
    picks = peeled.peel_batch(sc, b, k, 1, blocks_of, fallback_of, blocks)[0]
    return _outcome(mech, picks, dtype)


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _draw_jit(key, n, k, dtype):
    return Draws(peeled.draw(key, n, k, dtype))


@functools.partial(jax.jit, static_argnums=(3,))
def _decide_jit(mech, draws, q, vectorized):
    return _decide(mech, draws, q, vectorized)


@jax.jit
def _call_jit(mech, key, q):
    out = _batch(mech, key[None], q)
    return jax.tree_util.tree_map(lambda x: x[0], out)


# -- the mechanisms ------------------------------------------------------------------------

def _privacy_rounds(mech) -> str:
    k = mech.num_picks()
    return "" if k == 1 else f"; {k} rounds at ε/{k}, picks removed, composed"


@register(reference=ref.permute_and_flip, cases=[
    Case("permute-and-flip", {"k": 3}, eps_sensitivity),
], privacy=[Claim("eps1-k2", {"epsilon": 1.0, "k": 2}, 1.0, "PureDP",
                  ("McKenna & Sheldon 2020", "Algorithm 1"))],
    distribution=LawTestedIn("tests/test_selection_baselines.py", "the ordered picks' exact law"))
@pytree_dataclass
class PermuteAndFlip(PeeledSelection):
    """Permute-and-flip (McKenna & Sheldon, NeurIPS 2020, Algorithm 1), top-k by peeling.

    One round on the remaining candidates R: q* = max_{r∈R} q_r; for r in a uniformly random
    permutation of R: with probability exp(ε′(q_r − q*)/(2Δ)) return r (ε′ = ε/k; exp(ε′(q_r −
    q*)/Δ) for monotonic scores). The best candidate is accepted with probability 1, so a round
    always returns. k rounds, each pick removed (module docstring: the sampler).

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
    name = "permute-and-flip"

    def __post_init__(self):
        self._check_common()

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
], privacy=[Claim("eps1-k2", {"epsilon": 1.0, "k": 2}, 1.0, "PureDP",
                  ("Ding, Kifer", "McKenna & Sheldon 2020"))],
    distribution=LawTestedIn("tests/test_selection_baselines.py", "the ordered picks' exact law"))
@pytree_dataclass
class ReportNoisyMaxExp(PeeledSelection):
    """Report-noisy-max with exponential noise, top-k by peeling.

    One round on the remaining candidates R: return argmax_{r∈R} q_r + Z_r, Z_r ~ Exp(2kΔ/ε)
    (one-sided, mean 2kΔ/ε; kΔ/ε for monotonic scores), fresh noise each round; ties to the
    lower index. Each round has permute-and-flip's law at ε/k (Ding, Kifer, Saghaian, Steinke,
    Wang, Xiao, Zhang 2021, arXiv:2105.07260: report-noisy-max with Exp(2Δ/ε) noise is
    identical to permute-and-flip at ε), so the peeled k-tuple has ``permute-and-flip``'s law,
    and the kernel samples it with ``permute-and-flip``'s exact sampler (module docstring): the
    same picks on the same key. (Ties between noisy values have probability 0.)

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
    name = "report-noisy-max-exp"

    def __post_init__(self):
        self._check_common()

    def privacy(self):
        noise = "Exp(kΔ/ε), monotonic scores, by Dwork & Roth 2014, Claim 3.9's argument" \
            if self.monotonic else "Exp(2kΔ/ε)"
        return PureDP("Ding, Kifer, Saghaian, Steinke, Wang, Xiao, Zhang 2021: report-noisy-max "
                      "with exponential noise is identical to permute-and-flip, ε-DP (McKenna & "
                      f"Sheldon 2020), here at ε/k per round ({noise}){_privacy_rounds(self)}: "
                      "ε-DP", float(self.epsilon))


@register(reference=ref.gumbel_top_k, cases=[
    Case("gumbel-top-k", {"k": 3}, eps_sensitivity),
], privacy=[Claim("eps1-k2", {"epsilon": 1.0, "k": 2}, 1.0, "PureDP", ("Durfee & Rogers 2019",))],
    distribution=LawTestedIn("tests/test_selection_baselines.py", "the ordered picks' exact law"))
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
