"""One-shot selection mechanisms: exponential-mechanism peeling and report-noisy-max (top-k).

Both pick an ordered list of k distinct items, best first, from the whole score vector at once;
they are the non-interactive alternatives SVT is compared with for top-c selection (Lyu, Su, Li
2017, Section 4.4). Their ``Outcome`` has length L = k (``c`` for ``em-peeling``): ``answers``
are all 1, ``items`` are the picks in order, ``values`` are NaN (nothing numeric is released; the
gap-releasing variant is ``noisy-top-k-gap``) and ``cost`` is the budget charged per pick.

Randomness: one standard variate per *item*, ``Draws.query[i]`` from the ``"query"`` stream
(``stream_variates(stream_key(key, "query"), n, ...)``), so the noise of item i depends only on
(trial key, i). A mechanism multiplies it by its noise scale b and ranks the noisy scores
q_i + b·z_i. ``Draws.threshold`` is None (there is no threshold noise).

Choices (documented here, tested in ``tests/test_selection.py``):

* **Thresholds are ignored.** The signature is the registry's ``mech(key, queries, thresholds)``;
  ``thresholds`` is validated like everywhere else and then unused.
* **Order does not matter.** ``draw(..., shuffle=True)`` and ``run_batch(..., shuffle=True)`` are
  accepted and ignored: picks are a function of (scores, per-item noise) only, so a random visiting
  order changes neither the outcome (noise is indexed by item, not by stream position) nor its
  law. ``Draws.order`` is always None.
* **Ties** between equal noisy scores (probability 0 for continuous noise; possible in floating
  point, see Ding et al. 2019 Section 5, "Implementation issues") go to the lower item index —
  ``jax.lax.top_k``'s documented rule and the reference's.
* **k is static.** ``c`` (``em-peeling``) and ``k`` (``report-noisy-max``) fix the Outcome's
  shape, so unlike every other numeric parameter they are static (part of the pytree structure):
  each value compiles once. ε and Δ stay traced, so a sweep over them compiles once. k must not
  exceed the number of queries n (a ``ValueError`` before anything is compiled).
* **Kernel.** ``jax.lax.top_k`` on the noisy scores (``vectorized=True``, the default). The
  general path (``vectorized=False``) is the peeling loop itself: k rounds of ``argmax`` over the
  items not yet picked. Both are tested equal on the same draws; on CPU ``top_k`` was faster
  for every size measured (n = 50 .. 10^4, k = 1 .. 50), so it is the default.

References:
  Lyu, Su, Li. Understanding the Sparse Vector Technique for Differential Privacy. PVLDB 10(6),
  2017, Section 4.4.
  Ding, Wang, Zhang, Kifer. Free Gap Information from the Differentially Private Sparse Vector
  and Noisy Max Mechanisms. PVLDB 13(3), 2019, Section 5, Algorithm 1, Definition 7, Theorem 2.
  Durfee, Rogers. Practical Differentially Private Top-k Selection with Pay-what-you-get
  Composition. NeurIPS 2019 (one-shot Gumbel top-k equals exponential-mechanism peeling in law).
  McSherry, Talwar. Mechanism Design via Differential Privacy. FOCS 2007 (the exponential
  mechanism).
  McKenna, Sheldon. Permute-and-Flip: A New Mechanism for Differentially Private Selection.
  NeurIPS 2020; Ding, Kifer, Saghaian, Steinke, Wang, Xiao, Zhang. The Permute-and-Flip Mechanism
  is Identical to Report-Noisy-Max with Exponential Noise. arXiv:2105.07260, 2021.
  Dwork, Roth. The Algorithmic Foundations of Differential Privacy, 2014, Claim 3.9 (Report
  Noisy Max).
  Liu, Wang, Liu, Li, Chen. Unleash the Power of Ellipsis: Accuracy-enhanced SVT with Exponential
  Noise. PVLDB 18(2), 2024, Section 6 / Table 3, "SVT-Exp upper bound".
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax import _validate
from svtjax._core import Draws, Outcome
from svtjax._pytree import is_concrete, pytree_dataclass, staged_call, static_field
from svtjax.accounting import PureDP, Unproven
from svtjax.mechanisms.base import (
    Footprint,
    Held,
    Mechanism,
    register,
    stream_key,
    stream_variates,
)
from svtjax.noise import Exponential, Gumbel, Laplace
from svtjax.reference import selection as ref
from svtjax.testing import Case, Claim, LawTestedIn, eps_sensitivity

__all__ = ["SelectionMechanism", "EMPeeling", "ReportNoisyMax", "NoisyTopKGap", "NOISES"]

NOISES = {"laplace": Laplace, "gumbel": Gumbel, "exponential": Exponential}
"""``report-noisy-max``'s noise families, by the name its ``noise`` parameter takes."""


def _canonical_float(value: Any) -> Any:
    """Python scalars stay weakly typed under jit, so every sweep point shares one compile."""
    if is_concrete(value) and jnp.ndim(value) == 0:
        return float(value)
    return value


class SelectionMechanism(Mechanism):
    """One-shot top-k selection: noisy scores q + b·z, their top-k (one path for every selection
    mechanism, :func:`_decide`), and the Outcome."""

    noise_family: ClassVar[type] = Gumbel
    picks_param: ClassVar[str] = "k"
    releases_gaps: ClassVar[bool] = False  # values[i] = noisy(i-th pick) - noisy((i+1)-th best)
    footprint: ClassVar[Footprint] = Footprint(held=(
        Held("the standard variates, the noisy scores and top_k's copy of them", floats=3),),
        cache_bound=True)
    """A trial holds its whole noisy score vector, and the kernel reads all of it: cache-bound
    (a CPU runs it in cache-sized chunks, ``svtjax.engine.platform.CACHE_CHUNK_BYTES``).
    ``shuffle`` is ignored, so no order is held."""

    def num_picks(self) -> int:
        """k: the Outcome length (static)."""
        return getattr(self, self.picks_param)

    def scale(self):
        """The noise scale b applied to the standard variates: 2·picks·Δ/ε, or picks·Δ/ε for
        monotonic scores (every selection mechanism here: Lyu'17 §4.4, Ding'19 Algorithm 1)."""
        factor = 1.0 if self.monotonic else 2.0
        return factor * self.num_picks() * self.sensitivity / self.epsilon

    def pick_cost(self):
        """``Outcome.cost`` at each pick: ε / picks."""
        return self.epsilon / self.num_picks()

    def stream_length(self, n: int) -> int:
        return self.num_picks()

    def noises(self) -> dict:
        """The noise added to every score: ``{"query": family(scale())}`` (what
        ``svtjax._validate.computable`` checks against a run's dtype)."""
        return {"query": self.noise_family(self.scale())}

    @classmethod
    def _normalize(cls, values: dict) -> dict:
        """Construction (``svtjax._pytree``): checks ε, Δ, the number of picks and
        ``monotonic`` (:meth:`_checked`) and stores ε and Δ as Python floats, the picks as a
        Python int."""
        v = dict(values)
        cls._checked(v)
        v["epsilon"] = _canonical_float(v["epsilon"])
        v["sensitivity"] = _canonical_float(v["sensitivity"])
        v[cls.picks_param] = int(v[cls.picks_param])
        return v

    def _check_common(self) -> None:
        """The checks of :meth:`_normalize` on a built mechanism (they hold: construction ran
        them)."""
        self._checked({f: getattr(self, f) for f in ("epsilon", "sensitivity", "monotonic",
                                                      self.picks_param)})

    @classmethod
    def _checked(cls, v: dict) -> None:
        picks_name = cls.picks_param
        for name in ("epsilon", "sensitivity"):
            _validate.scalar(name, v.get(name))
        _validate.positive("epsilon", v["epsilon"])
        _validate.positive("sensitivity", v["sensitivity"])
        picks = v[picks_name]
        if not is_concrete(picks) or isinstance(picks, bool):
            raise TypeError(f"{picks_name} must be a Python integer >= 1 (it fixes the output "
                            f"shape, so it is static and cannot be traced); got {picks!r}")
        _validate.integer(picks_name, picks, minimum=1)
        if np.ndim(picks) != 0:
            raise ValueError(f"{picks_name} must be a single integer >= 1; got {picks!r}")
        if not isinstance(v["monotonic"], bool):
            raise TypeError(f"monotonic must be True or False; got {v['monotonic']!r}")

    def _check_n(self, n: int) -> None:
        k = self.num_picks()
        if self.releases_gaps and k >= n:
            raise ValueError(f"{self.picks_param} ({k}) must be smaller than the number of "
                             f"queries ({n}): {self.name} ranks the k+1 largest noisy values")
        if k > n:
            raise ValueError(f"{self.picks_param} ({k}) must not exceed the number of queries "
                             f"({n}): {self.name} picks {k} distinct items")

    def _prepare(self, queries, thresholds):
        q, t = Mechanism._prepare(queries, thresholds)
        self._check_n(q.shape[0])
        return q, t

    # -- contract -------------------------------------------------------------------------
    def draw(self, key, n: int, *, shuffle: bool = False, dtype=None) -> Draws:
        """One standard variate per item (``Draws.query``, float[n]).

        ``shuffle`` is accepted and ignored: the picks do not depend on a visiting order (module
        docstring), so no ``Draws.order`` is drawn.
        """
        del shuffle
        _validate.integer("n", n, minimum=1)
        self._check_n(int(n))
        dtype = jnp.zeros((), float).dtype if dtype is None else jnp.dtype(dtype)
        return staged_call(_draw_jit, self.noise_family, key, int(n), dtype)

    def decide(self, draws: Draws, queries, thresholds, *, vectorized: bool = True) -> Outcome:
        """The picks for ``draws`` (one trial); ``thresholds`` are ignored.

        ``vectorized=False`` runs the peeling loop (k rounds of argmax) instead of ``top_k``.
        """
        q, _ = self._prepare(queries, thresholds)
        return staged_call(self._compiled("decide"), self, draws, q, vectorized)

    def __call__(self, key, queries, thresholds) -> Outcome:
        q, _ = self._prepare(queries, thresholds)
        return staged_call(self._compiled("call"), self, key, q)

    def _compiled(self, which: str):
        """The compiled one-trial kernel ``decide`` (``which="decide"``: mech, draws, q,
        vectorized) or ``__call__`` (``"call"``: mech, key, q) runs; a subclass with its own
        kernel (``svtjax.mechanisms.flip.PeeledSelection``) returns its own."""
        return {"decide": _decide_jit, "call": _call_jit}[which]

    def run_batch(self, keys, queries, thresholds, *, shuffle: bool, offsets=None,
                  vectorized: bool = True, width=None, engine=None) -> Outcome:
        """A batch of trials; ``thresholds``, ``offsets``, ``shuffle`` and ``width`` are ignored
        (module docstring)."""
        del thresholds, shuffle, offsets, width, engine
        return jax.vmap(lambda key: _trial(self, key, queries, vectorized))(keys)


# -- kernel (one trial) --------------------------------------------------------------------

def _draw(family: type, key, n: int, dtype) -> Draws:
    z = stream_variates(stream_key(key, "query"), n, family.standard, dtype)
    return Draws(query=z)


def _top(scores, k: int, vectorized: bool):
    """The k largest scores, largest first, and their indices; ties to the lower index."""
    if vectorized:
        # top_k orders +0.0 above -0.0; equal numbers must tie (lower index), as in argmax.
        scores = jnp.where(scores == 0, jnp.zeros((), scores.dtype), scores)
        # The barrier keeps XLA's CPU backend on its top-k kernel: when the values feed other
        # operations (noisy-top-k-gap's gaps), XLA otherwise fuses them into the slice of a full
        # sort of every score (far slower; benchmarks/check_regression.py guards it).
        values, idx = lax.optimization_barrier(lax.top_k(scores, k))
        return values, idx.astype(jnp.int32)

    def peel(r, carry):  # one round: the best remaining item, then remove it
        remaining, values, picks = carry
        j = jnp.argmax(remaining).astype(jnp.int32)  # first maximal index
        return remaining.at[j].set(-jnp.inf), values.at[r].set(remaining[j]), picks.at[r].set(j)

    init = (scores, jnp.zeros((k,), scores.dtype), jnp.zeros((k,), jnp.int32))
    _, values, picks = lax.fori_loop(0, k, peel, init)
    return values, picks


def _decide(mech: SelectionMechanism, draws: Draws, q, vectorized: bool) -> Outcome:
    dtype = q.dtype
    k = mech.num_picks()
    noisy = q + jnp.asarray(mech.scale(), dtype) * jnp.asarray(draws.query, dtype)
    if mech.releases_gaps:  # Ding'19 Algorithm 1 lines 5-7: rank k+1, release k gaps
        # The gaps come from top_k's own values: gathering noisy[ranked] under vmap compiled
        # to a far slower kernel on XLA's CPU backend (noisy-top-k-gap was many times slower
        # than report-noisy-max at the same k).
        ranked_values, ranked = _top(noisy, k + 1, vectorized)
        picks, values = ranked[:k], ranked_values[:k] - ranked_values[1:]
    else:
        picks, values = _top(noisy, k, vectorized)[1], jnp.full((k,), jnp.nan, dtype)
    return Outcome(answers=jnp.ones((k,), jnp.int8), items=picks, values=values,
                   cost=jnp.full((k,), jnp.asarray(mech.pick_cost(), dtype)))


def _trial(mech: SelectionMechanism, key, q, vectorized: bool = True) -> Outcome:
    return _decide(mech, _draw(mech.noise_family, key, q.shape[0], q.dtype), q, vectorized)


# Keyed on the noise family only: every structure with the same family shares the compiled draw.
_draw_jit = jax.jit(_draw, static_argnums=(0, 2, 3))


@functools.partial(jax.jit, static_argnums=(3,))
def _decide_jit(mech, draws, q, vectorized):
    return _decide(mech, draws, q, vectorized)


@jax.jit
def _call_jit(mech, key, q):
    return _trial(mech, key, q)


# -- the mechanisms ------------------------------------------------------------------------

@register(reference=ref.em_peeling, cases=[Case("em-peeling", {"c": 3}, eps_sensitivity)],
          privacy=[Claim("eps1-c2", {"epsilon": 1.0, "c": 2}, 1.0, "PureDP",
                         ("Lyu", "Section 4.4", "McSherry & Talwar 2007"))],
          distribution=LawTestedIn("tests/test_selection.py", "the ordered picks' exact law"))
@pytree_dataclass
class EMPeeling(SelectionMechanism):
    """The exponential mechanism run c times at ε/c, picked items removed (Lyu et al. 2017, §4.4).

    Lyu et al. 2017, Section 4.4 ("SVT versus EM"; seed lines ~1808-1830): one runs EM c times,
    each round with budget ε/c; the quality of a query is its answer q, so each remaining query is
    selected with probability proportional to exp(ε q/(2cΔ)) in the general case and exp(ε q/(cΔ))
    in the monotonic case (the text extraction drops the q); a selected query is removed from the
    pool for the remaining rounds. So the ordered picks (j_1, ..., j_c) have probability

        Π_r exp(w q_{j_r}) / Σ_{i ∉ {j_1..j_{r-1}}} exp(w q_i),  w = ε/(2cΔ) (ε/(cΔ) monotonic).

    Implementation: each round is drawn with the Gumbel-max trick, and all rounds share one
    standard Gumbel variate per item (``Draws.query``): round r picks the remaining item with the
    largest q_i + b·G_i, b = 1/w = 2cΔ/ε (cΔ/ε monotonic). Sharing the variates across rounds
    makes the c rounds the top-c of q + b·G, which has exactly the peeling law above (Durfee &
    Rogers 2019: one-shot Gumbel top-k equals EM peeling in distribution); the distribution test
    compares the ordered picks with the product formula. On the same draws this mechanism equals
    ``report-noisy-max`` with ``noise="gumbel"`` and ``k=c``.

    ``Outcome.cost`` is ε/c per pick. Privacy: ε-DP — each round is the exponential mechanism
    (McSherry & Talwar 2007) with quality sensitivity Δ at ε/c (ε/c also with the monotonic
    weight, the monotonic case of the same theorem), and c rounds compose (Lyu et al. 2017, §4.4).

    Args:
      epsilon: total budget ε > 0 (traced).
      c: number of picks, an integer 1 <= c <= n (static: it fixes the Outcome's shape).
      sensitivity: Δ > 0, the sensitivity of every score (traced).
      monotonic: scores are monotonic (e.g. counts): weight ε/(cΔ) instead of ε/(2cΔ).
    """

    epsilon: Any
    c: int = static_field()
    sensitivity: Any = 1.0
    monotonic: bool = static_field(default=False)
    name = "em-peeling"
    noise_family = Gumbel

    picks_param = "c"

    def weight(self):
        """w in exp(w·q): ε/(2cΔ), or ε/(cΔ) for monotonic scores (Lyu et al. 2017, §4.4)."""
        return 1.0 / self.scale()

    def privacy(self):
        kind = "monotonic quality, exp(εq/(cΔ))" if self.monotonic else "exp(εq/(2cΔ))"
        return PureDP(f"Lyu, Su, Li 2017, Section 4.4: the exponential mechanism (McSherry & "
                      f"Talwar 2007) run c times at ε/c ({kind}), composed: ε-DP",
                      float(self.epsilon))


@register(reference=ref.report_noisy_max, cases=[
    Case("report-noisy-max", {"k": 3}, eps_sensitivity),
    Case("report-noisy-max-gumbel-monotonic", {"k": 2, "noise": "gumbel", "monotonic": True},
         eps_sensitivity),
    Case("report-noisy-max-exponential", {"noise": "exponential"}, eps_sensitivity),
], privacy=[
    Claim("laplace", {"epsilon": 1.0, "k": 2}, 1.0, "PureDP", ("Ding", "Theorem 2")),
    Claim("gumbel", {"epsilon": 0.5, "k": 3, "noise": "gumbel"}, 0.5, "PureDP",
          ("Durfee & Rogers 2019",))],
    distribution=LawTestedIn("tests/test_selection.py", "the ordered picks' exact law"))
@pytree_dataclass
class ReportNoisyMax(SelectionMechanism):
    """One-shot noisy top-k: add noise to every score, report the k largest (best first).

    Ding et al. 2019, Algorithm 1 without the gaps (lines 2-5: η_i ~ Lap(2k/ε), q̃_i = q_i + η_i,
    (j_1, ..., j_k) = argmax_k q̃); k = 1 is Dwork & Roth's Report Noisy Max. Here with sensitivity
    Δ (scores divided by Δ have sensitivity 1) and a choice of noise family, all with the scale
    b = 2kΔ/ε, or kΔ/ε for monotonic scores (Ding et al. Definition 7: on neighbouring data every
    score moves in the same direction; counting queries are monotonic):

    * ``"laplace"``: η ~ Lap(b). ε-DP (Ding et al. 2019, Theorem 2: Lap(2k/ε) noise gives ε-DP,
      and ε/2-DP for counting/monotonic queries, hence Lap(kΔ/ε) gives ε-DP for monotonic ones).
    * ``"gumbel"``: η ~ Gumbel(b). The top-k of q + Gumbel(b) has the law of k rounds of the
      exponential mechanism with weight 1/b = ε/(2kΔ) (ε/(kΔ) monotonic), picked items removed
      (Durfee & Rogers 2019), i.e. ``em-peeling`` with c = k: ε-DP by composition of k
      exponential mechanisms at ε/k (McSherry & Talwar 2007; Lyu et al. 2017 §4.4). Identical to
      ``em-peeling`` on the same draws.
    * ``"exponential"``: η ~ Exp(b) (one-sided, mean b). For k = 1 this is report-noisy-max with
      exponential noise Exp(2Δ/ε), identical in law to permute-and-flip (Ding, Kifer et al. 2021),
      which is ε-DP (McKenna & Sheldon 2020); for monotonic scores Exp(Δ/ε) is ε-DP by Dwork &
      Roth's Claim 3.9 argument (a winner stays the winner on a neighbour when its noise grows by
      Δ, and P(E ≥ r + Δ) ≥ e^{-ε} P(E ≥ r) for E ~ Exp(Δ/ε)). For k > 1 **no pure-DP guarantee
      is proved in the sources** (Durfee & Rogers note that one-shot top-k with exponential noise
      had not been studied): ``privacy()`` returns :class:`Unproven`, and the scale 2kΔ/ε (kΔ/ε)
      is by analogy with the Laplace and Gumbel cases. Note: exponential noise gives
      permute-and-flip, *not* the exponential mechanism (that is Gumbel noise).

    Liu et al. 2024's "SVT-Exp upper bound" baseline (Table 3) ranks all scores perturbed with
    Exp(Δ/ε2): ``noise="exponential", monotonic=True, k=c, epsilon=c*ε2``.

    ``Outcome.cost`` is ε/k per pick (nominal for the exponential family with k > 1).

    Args:
      epsilon: total budget ε > 0 (traced).
      k: number of picks, an integer 1 <= k <= n (static: it fixes the Outcome's shape); default
        1, Report Noisy Max.
      sensitivity: Δ > 0 (traced).
      monotonic: scores are monotonic: scale kΔ/ε instead of 2kΔ/ε.
      noise: ``"laplace"`` (default, Ding et al.'s Algorithm 1), ``"gumbel"`` or
        ``"exponential"`` (static).
    """

    epsilon: Any
    k: int = static_field(default=1)
    sensitivity: Any = 1.0
    monotonic: bool = static_field(default=False)
    noise: str = static_field(default="laplace")
    name = "report-noisy-max"

    def __post_init__(self):
        _validate.one_of("noise", self.noise, tuple(NOISES))

    @property
    def noise_family(self) -> type:  # type: ignore[override]
        return NOISES[self.noise]

    def privacy(self):
        eps = float(self.epsilon)
        mono = " (monotonic scores)" if self.monotonic else ""
        if self.noise == "laplace":
            return PureDP("Ding, Wang, Zhang, Kifer 2019, Theorem 2 (Noisy Top-K, Algorithm 1 "
                          "without gaps): Lap(2kΔ/ε) noise is ε-DP, Lap(kΔ/ε) for monotonic "
                          f"queries{mono}", eps)
        if self.noise == "gumbel":
            return PureDP("Durfee & Rogers 2019: top-k with Gumbel(2kΔ/ε) noise (kΔ/ε monotonic) "
                          "equals k rounds of the exponential mechanism at ε/k (McSherry & "
                          f"Talwar 2007), composed: ε-DP{mono}", eps)
        if self.k == 1:
            return PureDP("McKenna & Sheldon 2020 (permute-and-flip is ε-DP), identical to "
                          "report-noisy-max with Exp(2Δ/ε) noise (Ding, Kifer et al. 2021); "
                          "Exp(Δ/ε) for monotonic scores by Dwork & Roth 2014, Claim 3.9's "
                          f"argument{mono}", eps)
        return Unproven("one-shot top-k (k > 1) with exponential noise: no pure-DP guarantee "
                        "in the sources (Durfee & Rogers; Ding et al. 2021 cover k = 1 only); "
                        f"noise calibrated by analogy to Exp({'' if self.monotonic else '2'}"
                        "kΔ/ε)", eps)


@register(reference=ref.noisy_top_k_gap, cases=[
    Case("noisy-top-k-gap", {"k": 3}, eps_sensitivity),
    Case("noisy-top-k-gap-monotonic", {"k": 1, "monotonic": True}, eps_sensitivity),
], privacy=[Claim("eps1-k2", {"epsilon": 1.0, "k": 2}, 1.0, "PureDP",
                  ("Ding", "Theorem 2", "Algorithm 1"))],
    distribution=LawTestedIn("tests/test_noisy_top_k_gap.py", "the pick and gap of two items"))
@pytree_dataclass
class NoisyTopKGap(SelectionMechanism):
    """Noisy-Top-K-with-Gap (Ding, Wang, Zhang, Kifer 2019, Algorithm 1).

    Lines 2-4: η_i ~ Lap(2kΔ/ε), q̃_i = q_i + η_i (Lap(kΔ/ε) for monotonic/counting queries);
    line 5: (j_1, ..., j_{k+1}) = argmax_{k+1} q̃; lines 6-8: return the k indices (``items``,
    best first) with the gaps g_i = q̃_{j_i} − q̃_{j_{i+1}} (``values``). Needs k < n.
    Ties are broken toward the lower index, as in ``report-noisy-max``.

    Privacy: ε-DP, the gaps for free (Ding et al. 2019, Theorem 2; ε/2-DP at Lap(2kΔ/ε) for
    counting queries, hence Lap(kΔ/ε) is ε-DP for monotonic ones).

    Args:
      epsilon: total budget ε > 0 (traced).
      k: number of picks, 1 <= k < n (static: it fixes the Outcome's shape); default 1.
      sensitivity: Δ > 0 (traced).
      monotonic: monotonic (e.g. counting) queries: scale kΔ/ε instead of 2kΔ/ε.
    """

    epsilon: Any
    k: int = static_field(default=1)
    sensitivity: Any = 1.0
    monotonic: bool = static_field(default=False)
    noise_family: ClassVar[type] = Laplace
    releases_gaps: ClassVar[bool] = True
    name = "noisy-top-k-gap"

    def privacy(self):
        mono = " (monotonic queries, Lap(kΔ/ε))" if self.monotonic else ""
        return PureDP("Ding, Wang, Zhang, Kifer 2019, Theorem 2: Noisy-Top-K-with-Gap "
                      f"(Algorithm 1) is ε-DP{mono}", float(self.epsilon))
