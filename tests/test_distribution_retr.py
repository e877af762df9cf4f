"""svt-retr's law of whole answer vectors (over all passes) against exact probabilities.

SVT-ReTr (Lyu et al. 2017, §4.4 and §5) is Algorithm 7 run on the retraversal stream with every
threshold raised by ``raise_by`` query-noise scales. ρ is drawn once and each evaluation draws
fresh query noise, so, given ρ = z, the evaluations are independent and

    P(a) = ∫ f_ρ(z) Π_{evaluated positions p} P(a_p | z) dz,

where the set of evaluated positions is a function of ``a`` itself (pass 1: every item until c ⊤;
later passes: the items not yet answered ⊤). The oracle enumerates the feasible vectors from that
rule and integrates with the scipy-only helper of ``tests/test_distribution.py``; it shares no code
with the kernel. Fixed seeds; a correct implementation fails each chi-square test (p > 1e-4) with
probability 1e-4.
"""

import numpy as np
import pytest

import svtjax
from tests.test_distribution import (
    PaperScales,
    _answer_counts,
    _integrate_patterns,
    _svt_s_ratio,
    chi_square,
)

TRIALS = 100_000


def retraversal_vectors(n: int, passes: int, c: int) -> list[tuple[int, ...]]:
    """Every answer vector of length passes*n the retraversal stream can produce."""
    out = []

    def extend(prefix, count, chosen):
        p = len(prefix)
        if p == n * passes:
            out.append(tuple(prefix))
            return
        item = p % n
        if count >= c or (p >= n and item in chosen):
            extend(prefix + [-1], count, chosen)
            return
        extend(prefix + [0], count, chosen)
        extend(prefix + [1], count + 1, chosen | {item})

    extend([], 0, frozenset())
    return out


def retr_oracle(params: dict, q, t, passes: int) -> dict:
    eps, c = params["epsilon"], params["c"]
    monotonic = params.get("monotonic", False)
    rule = params.get("allocation") or ("1:c^(2/3)" if monotonic else "1:(2c)^(2/3)")
    x = _svt_s_ratio(rule, c)
    eps1, eps2 = eps / (1 + x), eps * x / (1 + x)
    query_scale = (1 if monotonic else 2) * c / eps2       # Alg 7 line 3 (Δ = 1)
    raised = np.asarray(t, float) + params["raise_by"] * query_scale   # §5: T + D
    scales = PaperScales(1 / eps1, query_scale, None)
    vectors = retraversal_vectors(len(q), passes, c)
    probs = _integrate_patterns(np.array(vectors), np.tile(q, passes),
                                np.tile(np.broadcast_to(raised, np.shape(q)), passes), scales)
    return dict(zip(vectors, probs, strict=True))


CASES = [
    ("c2-monotonic-1D", dict(epsilon=2.0, c=2, monotonic=True, raise_by=1.0), 3, [0.0, 1.5, 3.0],
     1.0),
    ("c1-general-3D", dict(epsilon=4.0, c=1, raise_by=3.0), 2, [2.0, 0.0, 1.0], [0.5, 0.0, 1.0]),
    ("c3-1:1-0D", dict(epsilon=1.5, c=3, allocation="1:1", raise_by=0.0), 2, [0.0, 2.0, 1.0],
     1.0),
]


def test_retraversal_oracle_sums_to_one():
    for _, params, passes, q, t in CASES:
        probs = retr_oracle(params, np.asarray(q), t, passes)
        assert abs(sum(probs.values()) - 1) < 1e-8


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_svt_retr_answer_vector_distribution(case):
    label, params, passes, q, t = case
    mech = svtjax.get("svt-retr", max_passes=passes, **params)
    out = svtjax.simulate(mech, np.asarray(q, np.float64), np.asarray(t, np.float64),
                          trials=TRIALS, seed=100 + [c[0] for c in CASES].index(label))
    expected = retr_oracle(params, np.asarray(q), t, passes)
    p, _, _, report = chi_square(expected, _answer_counts(out), TRIALS)
    print(label, f"p={p:.3g}")
    assert p > 1e-4, report


def test_svt_retr_without_raise_is_rejected_by_the_raised_oracle():
    """The same test has power: simulating raise_by=0 against the 1D oracle fails."""
    _, params, passes, q, t = CASES[0]
    wrong = svtjax.get("svt-retr", max_passes=passes, **{**params, "raise_by": 0.0})
    out = svtjax.simulate(wrong, np.asarray(q, np.float64), np.float64(t), trials=TRIALS,
                          seed=5)
    p, _, _, report = chi_square(retr_oracle(params, np.asarray(q), t, passes),
                                 _answer_counts(out), TRIALS)
    assert p < 1e-4, report
