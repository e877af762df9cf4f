"""Exact selection laws, expected utility and privacy loss of single-threshold SVT, no sampling.

Given the threshold noise ρ = z, the items' comparisons q_i + ν_i ≥ T_i + z are independent,
so a run is a Poisson-binomial process along the stream; integrating over ρ with a quadrature
fitted to its law and to the kinks of the query noise gives every selection probability
without sampling (accuracy: ``benchmarks/RESULTS.md``, Decisions; the test oracles are
matched to 1e-10). Everything is a pure JAX function of the mechanism's numbers, so
``jax.grad`` works (e.g. of E[SER] with respect to the ε1 : ε2 share).

Public API:

* :func:`selection_probabilities` — P(item i answered ⊤), float[n], caller's order.
* :func:`expected_metrics` — E[SER], E[NCR], E[|S|], E[|S ∩ Top-c|], expected positions read,
  expected budget spent, P(halt), ...
* :func:`expected_metrics_many` — the same for several mechanisms of one structure (an ε curve)
  in one kernel call (with concrete numbers, one compiled program per stream and cut-off,
  whatever the curve's length and node counts).
* :func:`selection_law` — the whole per-item law, the law of the ⊤ count, the halting law.
* :func:`optimal_allocation` — the ε1 : ε2 split minimising E[SER] (or maximising
  E[|S ∩ Top-c|] / E[NCR]) on a dataset.
* :func:`privacy_loss`, :func:`audit` — exact probabilities of every answer vector on two
  neighbouring short streams, and the exact max log-ratio (``svtjax audit NAME --exact``).
* :func:`law`, :func:`law_at_share`, :class:`ThresholdLaw`, :func:`quadrature` — the adapter
  and the rule, for differentiating with respect to a traced share.
* :func:`picks_law`, :func:`round_law` — the ordered picks of the peeling selection mechanisms
  (em-peeling, gumbel-top-k, permute-and-flip, report-noisy-max-exp), host-side float64.

Supported (:func:`supported`): every registered rule that runs Lyu'17's Figure 1 loop unchanged
(a ``Figure1`` subclass without a custom step) in one pass — lyu-alg1, dpbook (fixed order),
roth11, lee-clifton, stoddard, chen, svt-s (any allocation, noisy answers or not), svt-retr with
``max_passes=1``, svt-gap, svt-exp (any query-noise family and correction; RESAMPLE in fixed
order; not APPEND), generalized-svt (any noise pair, k_max and RESAMPLE in fixed order), and a
variant of one's own of that form. Other mechanisms raise ``ValueError`` naming the list. float64
(``jax.config.update("jax_enable_x64", True)``) is recommended.

References:
  Lyu, Su, Li. Understanding the Sparse Vector Technique for Differential Privacy. PVLDB 10(6),
  2017: Figure 1, Algorithms 1-7, Section 5 metrics.
  Liu et al. 2024: Algorithm 2, Table 4.
  Zhu, Wang 2020: Algorithm 2.
"""

from svtjax.exact._adapter import SHARE_SUPPORTED, ThresholdLaw, law, law_at_share, supported
from svtjax.exact._allocation import SEARCH_ACCURACY, Allocation, optimal_allocation, share_of
from svtjax.exact._api import (
    METRIC_KEYS,
    SelectionLaw,
    expected_metrics,
    expected_metrics_many,
    quadrature,
    selection_law,
    selection_laws,
    selection_probabilities,
)
from svtjax.exact._picks import picks_law, picks_law_supported, round_law
from svtjax.exact._privacy import (
    PrivacyLoss,
    audit,
    audit_report,
    candidate_pairs,
    format_audit,
    privacy_loss,
)

__all__ = [
    "SHARE_SUPPORTED",
    "SEARCH_ACCURACY",
    "METRIC_KEYS",
    "ThresholdLaw",
    "SelectionLaw",
    "Allocation",
    "PrivacyLoss",
    "law",
    "law_at_share",
    "supported",
    "quadrature",
    "selection_law",
    "selection_laws",
    "selection_probabilities",
    "expected_metrics",
    "expected_metrics_many",
    "optimal_allocation",
    "share_of",
    "privacy_loss",
    "candidate_pairs",
    "audit",
    "format_audit",
    "audit_report",
    "picks_law",
    "picks_law_supported",
    "round_law",
]
