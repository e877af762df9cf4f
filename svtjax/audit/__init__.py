"""Empirical privacy auditing: a statistical lower bound on a mechanism's ε.

If a mechanism M is (ε, δ)-DP then for every pair of neighbouring inputs D, D′ (here: query
vectors q, q′ with |q_i − q′_i| ≤ Δ, all of one sign for monotonic mechanisms) and every output
event E,

    P[M(D) ∈ E] ≤ e^ε · P[M(D′) ∈ E] + δ.

Counting E in trials on each side turns this into a lower confidence bound on ε, in one of two
ways:

* **conditional** (pure DP, δ = 0; :func:`conditional_lower_bound`): the validation trials are
  allotted to D and D′ by fair coin flips (the number on D is Binomial(total, 1/2)). Among the
  s trials that land in E, the number from D is then exactly Binomial(s, θ) with
  θ = p/(p + p′), p = P[M(D) ∈ E], p′ = P[M(D′) ∈ E]; ε-DP gives logit θ = log(p/p′) ≤ ε, so a
  one-sided Clopper–Pearson lower bound θ_low gives ε ≥ logit θ_low with probability
  ≥ confidence. One bound at the full level instead of two at half the level each: at 95-99%
  confidence the margin is 35-40% narrower than the two-bound form's for the same trials;
* **clopper-pearson** ((ε, δ) claims; :func:`epsilon_lower_bound`): one-sided Clopper–Pearson
  bounds p_low ≤ p and p′_high ≥ p′ at level (1 − confidence)/2 each (union bound) give
  ε ≥ log((p_low − δ)/p′_high) (Jagielski et al. 2020).

Both are valid for every (ε, δ) the mechanism satisfies, with probability ≥ confidence,
provided E and the pair were fixed before the trials were drawn.

**Output features** (:func:`output_cells`). An event is a union of cells of one of four
low-dimensional summaries of an Outcome, so that it is estimated from many samples per cell and
does not overfit (a union of long exact answer patterns chosen on one sample fails on the
next):

* ``first-two`` — the items of the first and second ⊤ (n: none): the whole output of a
  cut-off-1 SVT, the first two picks of a selection mechanism;
* ``counts`` — the number of ⊤ among the items q′ raises, among those it lowers, and
  elsewhere (capped at 3): the statistic for SVTs without a cut-off (the output ⊥^m ⊤^m of
  Lyu et al.'s Theorem 5, whose loss grows with m);
* ``value`` — the item of the first released value and the bin of that value (bin edges at
  ``VALUE_GRID`` x Δ/ε, the scale of ε-DP noise): released noisy answers and gaps;
* ``halt`` — the number of evaluated positions and of ⊤: when a mechanism stops.

Histograms of these cells are computed on-device inside every compiled chunk
(``svtjax.simulate(..., reduce=)``, memory O(chunk)), so one compiled function per mechanism
serves the whole audit: selection, early dropping and validation.

**Decision rule** (:func:`search`): per pair, family and direction, cells are ranked by a
pessimistic likelihood ratio (one-sided Clopper–Pearson estimates of the two cell
probabilities at ~2.3σ: the Neyman–Pearson order, which DP-Sniper's classifier-based threshold
attack approximates) and the proposed event is the prefix of that ranking (at most
``MAX_CELLS`` cells) whose bound, predicted at the validation size, is largest; the best single
cell and, for values, the best thresholds per item (StatDP's event families) are proposed too.
A rare cell must be seen often to rank high, which regularises the choice towards few,
high-mass cells. Events are proposed on a pair's earlier samples and *scored* on its latest,
independent one, so that no cell wins by chance among the thousands looked at.

**Adaptive allocation** (successive halving): every candidate pair (:func:`candidate_pairs`) is
sampled (twice: one half proposes, the other scores); after each round the better half of the
pairs by score survives, hopeless pairs (whose optimistic score is below the leader's
pessimistic one) are dropped at once, and the survivors are sampled again with twice the
trials, until one pair is left. With a time budget (``seconds``), after compiling and timing
the sampler, ``SEARCH_SHARE`` of the time goes to the rounds (in equal shares) and the rest to
validation, each sized from the measured trial rate. The **validation** draws fresh trials (new
seeds) of the one chosen (pair, event), so the bound carries no selection bias and needs no
multiple-testing correction. ``progress`` records the leader's predicted bound after every
round, then the validated bound: bound versus seconds.

**Claims** (:func:`claim`): ``nominal_epsilon`` is the ε the mechanism is run at (what its
paper claims: Lee & Clifton's Algorithm 4 claims ε), ``proven_epsilon`` what ``privacy()``
proves (None when nothing finite is proved; for a guarantee finite only for δ > 0 and a
mechanism without ``delta``, it is taken at ``DEFAULT_DELTA`` and the bound uses that δ).
``exceeds_nominal`` flags a violation of the claim; ``exceeds_proven`` should never be true for
a correct kernel (except with probability 1 − confidence).

References:
  Lyu, Su, Li. Understanding the Sparse Vector Technique for Differential Privacy. PVLDB 10(6),
  2017, Algorithms 1-6, Theorems 3-5.
  Ding, Wang, Wang, Zhang, Kifer. Detecting Violations of Differential Privacy. CCS 2018
  (StatDP: the input patterns, event search on one sample, a test on a fresh one).
  Bichsel, Steffen, Bogunovic, Vechev. DP-Sniper: Black-Box Discovery of Differential Privacy
  Violations using Classifiers. IEEE S&P 2021 (threshold attacks on a learned ratio; the
  SVT1-SVT6 benchmark at ε = 0.1, c = 1).
  Jagielski, Ullman, Oprea. Auditing Differentially Private Machine Learning: How Private is
  Private SGD? NeurIPS 2020 (Clopper–Pearson bounds on ε and the (ε, δ) form).

Layout: ``svtjax.audit.bounds`` (the bounds), ``pairs`` (input pairs), ``events`` (output
cells and events), ``sampler`` (histograms from ``svtjax.simulate``), ``selection`` (proposing
and scoring events), ``halving`` (the search), ``report`` (:func:`audit`, claims, results). The
command line, ``svtjax audit``, is ``svtjax.cli.audit``.
"""

from svtjax.audit.bounds import Bound, conditional_lower_bound, epsilon_lower_bound
from svtjax.audit.constants import (
                                    CHUNK,
                                    DEFAULT_CONFIDENCE,
                                    DEFAULT_CUTOFF,
                                    DEFAULT_DELTA,
                                    DEFAULT_SECONDS,
                                    FAMILIES,
                                    MAX_CELLS,
                                    MAX_TRIALS,
                                    NUM_QUERIES,
                                    PAD,
                                    PROPOSALS,
                                    REST_CAP,
                                    SEARCH_SHARE,
                                    VALUE_GRID,
)
from svtjax.audit.events import Event, family_shapes, output_cells, value_edges
from svtjax.audit.halving import SearchResult, Witness, default_search_trials, search
from svtjax.audit.pairs import Pair, candidate_pairs, check_pair
from svtjax.audit.report import (
                                    AuditFailure,
                                    AuditResult,
                                    audit,
                                    audit_pair,
                                    claim,
                                    count_event,
                                    format_result,
                                    mechanism_params,
)
from svtjax.audit.sampler import SimulationSampler

__all__ = ["AuditFailure", "Pair", "Event", "Bound", "Witness", "AuditResult", "SearchResult",
           "SimulationSampler", "epsilon_lower_bound", "conditional_lower_bound",
           "candidate_pairs", "check_pair", "output_cells", "family_shapes", "value_edges",
           "count_event", "audit_pair", "search", "default_search_trials", "audit", "claim",
           "mechanism_params", "format_result", "DEFAULT_CONFIDENCE", "DEFAULT_DELTA",
           "DEFAULT_CUTOFF", "DEFAULT_SECONDS", "NUM_QUERIES", "PAD", "CHUNK", "FAMILIES",
           "VALUE_GRID", "REST_CAP", "MAX_CELLS", "PROPOSALS", "SEARCH_SHARE", "MAX_TRIALS"]
