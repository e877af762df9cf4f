"""Top-c utility metrics: hand-computed cases, plain-Python oracles, batching, jit, summaries.

Two oracles share no code with ``svtjax.metrics``: a brute force over every valid Top-c (every
descending ordering of the scores, ties permuted) for n <= 7, and a loop over the written
definitions for larger n.
"""

import itertools
import math
import statistics

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import svtjax
from svtjax import _answer_set as AS
from svtjax import metrics as M

NAMES = ("precision", "recall", "f1", "fnr", "ser", "ncr", "ncs")


def _values(p, r, f, ncs, ncr):
    return {"precision": p, "recall": r, "f1": f, "fnr": 1 - r, "ser": 1 - ncs, "ncr": ncr,
            "ncs": ncs}


PERFECT = _values(1, 1, 1, 1, 1)
EMPTY = _values(0, 0, 0, 0, 0)
S5 = [10, 8, 6, 4, 2]  # top-3 = {0, 1, 2}, support 24, NCR weights 3, 2, 1 (ideal 6)
TIE = [5, 3, 3, 3, 1]  # c = 2: item 0 plus one of {1, 2, 3}; support 8; relevance 2, 1, 1, 1, 0

# (id, scores, c, selected, expected values)
HAND = [
    ("perfect", S5, 3, [0, 1, 2], PERFECT),
    ("perfect-any-order", S5, 3, [2, 0, 1], PERFECT),
    ("short", S5, 3, [0, 3, -1], _values(1 / 2, 1 / 3, 2 / 5, 14 / 24, 3 / 6)),
    ("empty", S5, 3, [-1, -1, -1], EMPTY),
    ("wrong", S5, 3, [4, 2, 1], _values(2 / 3, 2 / 3, 2 / 3, 16 / 24, 3 / 6)),
    ("k<c", S5, 3, [1], _values(1, 1 / 3, 1 / 2, 8 / 24, 2 / 6)),
    ("more-than-c-picks", S5, 3, [3, 0, 1, 2], _values(2 / 3, 2 / 3, 2 / 3, 22 / 24, 5 / 6)),
    ("duplicate", S5, 3, [0, 0, 1], _values(1, 2 / 3, 4 / 5, 18 / 24, 5 / 6)),
    ("duplicate-then-more", S5, 3, [0, 0, 3, 1, 2], _values(2 / 3, 2 / 3, 2 / 3, 22 / 24, 5 / 6)),
    ("c=1", S5, 1, [0, 4], PERFECT),
    ("c=n", [3, 1, 2], 3, [1, -1, -1], _values(1, 1 / 3, 1 / 2, 1 / 6, 1 / 6)),
    # ties at the c-th score: any tied item completes the top-c ...
    ("tie-boundary-a", TIE, 2, [0, 2], PERFECT),
    ("tie-boundary-b", TIE, 2, [3, 0], PERFECT),
    # ... but there is one slot at the c-th score, and {1, 2} misses item 0 whichever tie counts
    ("tie-boundary-two-tied", TIE, 2, [1, 2], _values(1 / 2, 1 / 2, 1 / 2, 6 / 8, 2 / 3)),
    ("tie-boundary-vs-below", TIE, 2, [1, 4], _values(1 / 2, 1 / 2, 1 / 2, 4 / 8, 1 / 3)),
    ("tie-boundary-short", TIE, 2, [2, -1], _values(1, 1 / 2, 2 / 3, 3 / 8, 1 / 3)),
    # a tie inside the top-c shares the mid-rank relevance: (3 + 2) / 2 each
    ("tie-inside", [4, 4, 2, 1], 3, [1, 3, -1], _values(1 / 2, 1 / 3, 2 / 5, 5 / 10, 2.5 / 6)),
    ("tie-inside-perfect", [4, 4, 2, 1], 3, [2, 1, 0], PERFECT),
    # the tie group spans position c exactly: both items fill the two slots
    ("tie-spans-c", [4, 4, 2, 1], 2, [1, 2], _values(1 / 2, 1 / 2, 1 / 2, 6 / 8, 1.5 / 3)),
    ("all-tied", [2, 2, 2, 2], 2, [3, 1, -1], PERFECT),
    ("all-tied-extra", [2, 2, 2, 2], 2, [0, 1, 2], PERFECT),
    ("all-tied-short", [2, 2, 2, 2], 2, [2, -1, -1], _values(1, 1 / 2, 2 / 3, 1 / 2, 1 / 2)),
]


WIDTH = 6  # extra -1 padding changes nothing; one width keeps the compile count low


@pytest.mark.parametrize("case", HAND, ids=[h[0] for h in HAND])
def test_hand_computed(case):
    label, scores, c, sel, expected = case
    padded = np.full(WIDTH, -1, np.int32)
    padded[: len(sel)] = sel
    for dtype in (np.float64, np.int64):  # supports are often integer counts
        for name in NAMES:
            got = M.METRICS[name](padded, np.asarray(scores, dtype), c)
            assert got.shape == ()
            assert got.dtype == jnp.float64
            np.testing.assert_allclose(float(got), expected[name], rtol=0, atol=1e-12,
                                       err_msg=f"{label} {name} dtype={dtype.__name__}")
        every = M.evaluate(padded, np.asarray(scores, dtype), c)
        assert {k: float(v) for k, v in every.items()} == pytest.approx(expected, abs=1e-12)


def test_width_below_c():
    # k = 1 < c = 3: the answer can hold at most one pick
    got = M.evaluate(np.asarray([[1], [4], [-1]], np.int32), np.asarray(S5, float), 3)
    np.testing.assert_allclose(np.asarray(got["recall"]), [1 / 3, 0, 0])
    np.testing.assert_allclose(np.asarray(got["ser"]), [2 / 3, 22 / 24, 1])


def test_named_functions_match_registry():
    assert set(M.METRICS) == set(NAMES)
    for name in NAMES:
        assert M.METRICS[name] is getattr(M, name)


# ---------------------------------------------------------------------------------------------
# Oracles written from the definitions (module docstring), sharing no code with the kernel.


def _answer(sel, n, c):
    answer = []
    for i in sel:
        if 0 <= i < n and i not in answer and len(answer) < c:
            answer.append(int(i))
    return answer


def _finish(answer, scores, c, tp, relevance):
    top = sum(sorted(scores, reverse=True)[:c])
    support = sum(scores[i] for i in answer)
    size = len(answer)
    return {
        "precision": tp / size if size else 0.0,
        "recall": tp / c,
        "f1": 2 * tp / (size + c),
        "fnr": 1 - tp / c,
        "ser": 1 - support / top,
        "ncs": support / top,
        "ncr": sum(relevance[i] for i in answer) / (c * (c + 1) / 2),
    }


class BruteForce:
    """Enumerates every descending ordering of the scores (ties in every order); n <= 7."""

    def __init__(self, scores, c):
        n = len(scores)
        self.scores, self.c = list(scores), c
        orders = [p for p in itertools.permutations(range(n))
                  if all(scores[p[j]] >= scores[p[j + 1]] for j in range(n - 1))]
        self.tops = {frozenset(p[:c]) for p in orders}
        # an item's relevance: its mean rank weight over the orderings that put it in the top-c
        self.relevance = []
        for i in range(n):
            weights = [c - p.index(i) for p in orders if i in p[:c]]
            self.relevance.append(statistics.mean(weights) if weights else 0.0)

    def __call__(self, sel):
        answer = _answer(sel, len(self.scores), self.c)
        tp = max(len(set(answer) & top) for top in self.tops)
        return _finish(answer, self.scores, self.c, tp, self.relevance)


def loop_reference(sel, scores, c):
    """The definitions as loops: TP over the best-matching top-c, tie-group mean relevance."""
    scores = list(scores)
    n = len(scores)
    answer = _answer(sel, n, c)
    t = sorted(scores, reverse=True)[c - 1]
    above = sum(1 for x in scores if x > t)
    tp = (sum(1 for i in answer if scores[i] > t)
          + min(sum(1 for i in answer if scores[i] == t), c - above))
    relevance = []
    for x in scores:
        a = 1 + sum(1 for y in scores if y > x)
        b = sum(1 for y in scores if y >= x)
        slots = [c - p + 1 for p in range(a, min(b, c) + 1)]
        relevance.append(statistics.mean(slots) if slots else 0.0)
    return _finish(answer, scores, c, tp, relevance)


def _random_selected(rng, n, k, c, trials):
    """SVT-like rows (distinct picks, then -1 padding), some with repeats or more than c picks."""
    rows = np.full((trials, k), -1, np.int32)
    for r in range(trials):
        picks = rng.permutation(n)[: rng.integers(0, min(k, n) + 1)]
        if rng.random() < 0.15 and len(picks):
            picks = rng.choice(picks, len(picks))  # repeats
        rows[r, : len(picks)] = picks
    return rows


def _random_scores(rng, n):
    if rng.random() < 0.6:
        return rng.integers(0, 4, n).astype(np.float64)  # many ties
    return rng.exponential(5.0, n).round(rng.integers(0, 3))


def _assert_all_metrics(sel, scores, c, oracle, label):
    got = {name: np.asarray(M.METRICS[name](sel, scores, c)) for name in NAMES}
    for r in range(sel.shape[0]):
        want = oracle(sel[r].tolist())
        for name in NAMES:
            assert got[name][r] == pytest.approx(want[name], abs=1e-12), (
                f"{label} row={r} {name}: selected={sel[r].tolist()} scores={scores.tolist()} "
                f"c={c}: expected {want[name]}, observed {got[name][r]}")


def _ensure_positive_top(scores, c):
    if np.sort(scores)[::-1][:c].sum() <= 0:
        scores = scores.copy()
        scores[0] = 1.0
    return scores


@pytest.mark.parametrize("n,k", [(5, 5), (7, 4)])
def test_random_against_brute_force(n, k):
    rng = np.random.default_rng(n * 100 + k)
    for case in range(12):
        c = int(rng.integers(1, n + 1))
        scores = _ensure_positive_top(_random_scores(rng, n), c)
        sel = _random_selected(rng, n, k, c, trials=40)
        _assert_all_metrics(sel, scores, c, BruteForce(scores, c), f"n={n} case={case}")


@pytest.mark.parametrize("n,k", [(12, 6), (60, 20)])
def test_random_against_loop_reference(n, k):
    rng = np.random.default_rng(n * 100 + k)
    for case in range(8):
        c = int(rng.integers(1, min(n, k + 3) + 1))
        scores = _ensure_positive_top(_random_scores(rng, n), c)
        sel = _random_selected(rng, n, k, c, trials=60)
        oracle = lambda s, scores=scores, c=c: loop_reference(s, scores, c)
        _assert_all_metrics(sel, scores, c, oracle, f"n={n} case={case}")


def test_repeat_detection_paths_agree():
    """Both repeat detectors (jitted, as the metrics run them: one program per path and width)
    flag exactly the entries seen earlier in their row."""
    rng = np.random.default_rng(8)
    both = jax.jit(lambda key: (AS.repeat_pairwise(key), AS.repeat_sorted(key)))
    for k in (5, 40, AS.PAIRWISE_MAX_K + 3):
        key = rng.integers(-1, k // 2 + 1, (50, k)).astype(np.int32)
        pairwise, by_sort = both(key)
        np.testing.assert_array_equal(np.asarray(pairwise), np.asarray(by_sort))
        first = [[v in row[:j] for j, v in enumerate(row)] for row in key.tolist()]
        np.testing.assert_array_equal(np.asarray(pairwise), np.asarray(first))


def test_wide_selection_against_loop_reference():
    rng = np.random.default_rng(9)
    n, k = 300, AS.PAIRWISE_MAX_K + 2  # the sort path
    scores = _random_scores(rng, n) + 1
    for c in (3, 140):
        sel = _random_selected(rng, n, k, c, trials=6)
        oracle = lambda s, c=c: loop_reference(s, scores, c)
        _assert_all_metrics(sel, scores, c, oracle, f"wide c={c}")


def test_loop_reference_agrees_with_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 7))
        c = int(rng.integers(1, n + 1))
        scores = _ensure_positive_top(_random_scores(rng, n), c)
        brute = BruteForce(scores, c)
        for sel in _random_selected(rng, n, n + 1, c, trials=10):
            assert loop_reference(sel.tolist(), scores, c) == pytest.approx(brute(sel.tolist()))


# ---------------------------------------------------------------------------------------------
# Shapes, batching, jit, dtypes.


@pytest.mark.parametrize("name", NAMES)
def test_two_leading_axes(name):
    # the flat rows are the shape of test_random_against_loop_reference[60-20] (its program)
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 6, 60).astype(np.float64) + 1
    sel = _random_selected(rng, 60, 20, 8, trials=60).reshape(6, 10, 20)
    fn = M.METRICS[name]
    got = fn(sel, scores, 8)
    assert got.shape == (6, 10)
    flat = fn(sel.reshape(60, 20), scores, 8)
    rows = np.array([float(fn(row, scores, 8)) for row in sel.reshape(60, 20)])
    np.testing.assert_array_equal(np.asarray(got).reshape(60), np.asarray(flat))
    np.testing.assert_allclose(np.asarray(flat), rows, rtol=0, atol=1e-15)


def test_jit_and_no_retrace_across_c():
    # the eager metrics on the shape of test_random_against_loop_reference[12-6] (its program)
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 5, 12).astype(np.float64) + 1
    sel = _random_selected(rng, 12, 6, 10, trials=60)
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def every(sel, scores, c):
        return M.evaluate(sel, scores, c)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def one(sel, scores, c):
        return M.ser(sel, scores, c)

    for c in (1, 4, 10):
        got = every(sel, scores, jnp.asarray(c, jnp.int32))
        np.testing.assert_array_equal(np.asarray(one(sel, scores, c)), np.asarray(got["ser"]))
        for name in NAMES:
            want = M.METRICS[name](sel, scores, c)
            np.testing.assert_allclose(np.asarray(got[name]), np.asarray(want), rtol=0,
                                       atol=1e-15)
        oracle = lambda s, c=c: loop_reference(s, scores, c)
        _assert_all_metrics(sel, scores, c, oracle, f"c={c}")  # the program of ``want``


def test_vmap_over_c_and_scores():
    rng = np.random.default_rng(5)
    scores = rng.integers(1, 5, (3, 9)).astype(np.float64)
    sel = _random_selected(rng, 9, 4, 4, trials=7)
    cs = jnp.asarray([1, 2, 4], jnp.int32)
    got = jax.jit(jax.vmap(lambda s, c: M.ncr(sel, s, c)))(jnp.asarray(scores), cs)
    assert got.shape == (3, 7)
    for j in range(3):
        want = [loop_reference(row.tolist(), scores[j], int(cs[j]))["ncr"] for row in sel]
        np.testing.assert_allclose(np.asarray(got[j]), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_float32_strict_promotion(name, strict_promotion):
    del strict_promotion
    scores = np.asarray(S5, np.float32)
    sel = np.asarray([[0, 3, -1], [4, 2, 1]], np.int32)
    got = M.METRICS[name](sel, scores, 3)
    assert got.dtype == jnp.float32
    want = [HAND[2][4][name], HAND[4][4][name]]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_with_svtjax_selected():
    outcome = svtjax.Outcome(
        answers=jnp.asarray([[0, 1, 0, 1, -1], [0, 0, 0, 0, 0]], jnp.int8),
        items=jnp.asarray([[4, 0, 3, 2, -1], [0, 1, 2, 3, 4]], jnp.int32),
        values=jnp.full((2, 5), jnp.nan),
        cost=jnp.zeros((2, 5)),
    )
    sel = np.asarray(svtjax.selected(outcome, 3))
    np.testing.assert_array_equal(sel, [[0, 2, -1], [-1, -1, -1]])
    # two rows more, of no pick: test_summary_of_a_metric_and_edge_cases's shape (its program)
    sel = np.concatenate([sel, np.full((2, 3), -1, np.int32)])
    np.testing.assert_allclose(np.asarray(M.f1(sel, np.asarray(S5, float), 3)),
                               [4 / 5, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(np.asarray(M.ser(sel, np.asarray(S5, float), 3)),
                               [1 / 3, 1.0, 1.0, 1.0])


OUTCOME_RUNS = [  # (mechanism, parameters, shuffle): single-pass and retraversal streams
    ("svt-s", {"epsilon": 20.0, "c": 4}, False),
    ("svt-s", {"epsilon": 20.0, "c": 4}, True),
    ("svt-retr", {"epsilon": 20.0, "c": 4, "max_passes": 3, "raise_by": 1.0}, True),
]


OUTCOME_TRIALS = 120
"""Trials of each run: under 128, so the engine's block loop is one compaction level (one copy
of the loop compiled; ``svtjax._loops.bucket_sizes``), which no metric depends on."""


def _outcome_run(name, params, shuffle):
    """Scores with ties among the top ones (n = 300) and OUTCOME_TRIALS trials of the run."""
    scores = np.round(np.random.default_rng(5).exponential(3.0, 300))
    out = svtjax.simulate(svtjax.get(name, **params), scores, 12.0, trials=OUTCOME_TRIALS,
                          seed=3, shuffle=shuffle)
    return scores, out


@pytest.mark.parametrize("name,params,shuffle", OUTCOME_RUNS,
                         ids=[f"{r[0]}-{'shuffle' if r[2] else 'fixed'}" for r in OUTCOME_RUNS])
def test_evaluate_outcome_equals_evaluate_of_selected(name, params, shuffle):
    """``evaluate_outcome`` (the reducer's one pass) equals ``evaluate(selected(...))``, for a
    concrete c and for a traced c with ``max_c``: the same answer sets (their sizes exactly),
    values to float64 rounding (two programs may round a ratio differently in the last bit);
    its ``evaluated`` is the prefix length of a single-pass stream (``svtjax.prefix_counts``)."""
    scores, out = _outcome_run(name, params, shuffle)
    c = params["c"]
    want = M.evaluate(svtjax.selected(out, c), scores, c)
    got = M.evaluate_outcome(out, scores, c)
    traced = jax.jit(lambda o, s, c: M.evaluate_outcome(o, s, c, max_c=7))(out, scores, c)
    assert np.asarray(got["picks"]).min() < c <= np.asarray(got["picks"]).max()
    np.testing.assert_array_equal(np.asarray(got["picks"]),
                                  np.sum(np.asarray(svtjax.selected(out, c)) >= 0, axis=-1))
    for metric in NAMES:
        for result in (got, traced):
            np.testing.assert_allclose(np.asarray(result[metric]), np.asarray(want[metric]),
                                       rtol=1e-13, atol=1e-15, err_msg=metric)
    evaluated, _ = svtjax.prefix_counts(out)
    if name == "svt-s":
        np.testing.assert_array_equal(np.asarray(got["evaluated"]), np.asarray(evaluated))
    else:  # retraversal: the evaluated positions up to the c-th ⊤ (all the trial evaluated)
        np.testing.assert_array_equal(np.asarray(got["evaluated"]),
                                      np.sum(np.asarray(out.answers) >= 0, axis=-1))


def test_fixed_order_block_loop_equals_the_compiled_loop(monkeypatch):
    """A compact (fixed-order) Outcome's metrics: the pure-JAX block loop (an accelerator, or
    ``SVTJAX_NATIVE=0``) and the picks of svtjax's compiled first-tops loop (a CPU) give the
    same numbers, and those of ``evaluate(selected(...))``. The run is the fixed-order run of
    ``test_evaluate_outcome_equals_evaluate_of_selected`` (its programs are reused); the block
    loop runs on all its trials but one, a shape of its own, so that it is traced anew, not taken
    from the jit cache."""
    from svtjax import _native

    name, params, shuffle = OUTCOME_RUNS[0]
    assert name == "svt-s" and not shuffle
    scores, out = _outcome_run(name, params, shuffle)
    assert out.stored_items is None  # compact: items are the position mod n
    c = params["c"]
    want = M.evaluate(svtjax.selected(out, c), scores, c)
    compiled = M.evaluate_outcome(out, scores, c)
    monkeypatch.setattr(_native, "first_tops_target", lambda: None)
    h = OUTCOME_TRIALS - 1
    head = jax.tree_util.tree_map(lambda x: np.asarray(x)[:h], out)  # host slices: no programs
    assert "while" in str(jax.make_jaxpr(lambda o: M.evaluate_outcome(o, scores, c))(head))
    loop = M.evaluate_outcome(head, scores, c)
    for metric in NAMES:
        np.testing.assert_allclose(np.asarray(loop[metric]), np.asarray(compiled[metric])[:h],
                                   rtol=1e-13, atol=1e-15, err_msg=metric)
        np.testing.assert_allclose(np.asarray(compiled[metric]), np.asarray(want[metric]),
                                   rtol=1e-13, atol=1e-15, err_msg=metric)
    for key in ("picks", "evaluated"):
        np.testing.assert_array_equal(np.asarray(loop[key]), np.asarray(compiled[key])[:h])


def test_evaluate_outcome_bad_c():
    # the fixed-order run of test_evaluate_outcome_equals_evaluate_of_selected (its program)
    scores, out = _outcome_run(*OUTCOME_RUNS[0])
    n = scores.shape[0]
    with pytest.raises(ValueError, match="pass max_c"):
        jax.jit(lambda o, c: M.evaluate_outcome(o, scores, c))(out, 2)
    with pytest.raises(ValueError, match="exceeds max_c"):
        M.evaluate_outcome(out, scores, 3, max_c=2)
    with pytest.raises(ValueError, match="c must be an integer >= 1"):
        M.evaluate_outcome(out, scores, 0)
    with pytest.raises(ValueError, match="at most the number of items"):
        M.evaluate_outcome(out, scores, n + 1)
    with pytest.raises(ValueError, match="max_c must be an integer >= 1"):
        M.evaluate_outcome(out, scores, 2, max_c=2.5)


# ---------------------------------------------------------------------------------------------
# Bad input.


@pytest.mark.parametrize("name", NAMES)
def test_bad_input(name):
    fn = M.METRICS[name]
    sel = np.asarray([0, 1, -1], np.int32)
    scores = np.asarray(S5, float)
    with pytest.raises(ValueError, match="c must be an integer >= 1"):
        fn(sel, scores, 0)
    with pytest.raises(ValueError, match="at most the number of items"):
        fn(sel, scores, 6)
    with pytest.raises(ValueError, match="c must be an integer"):
        fn(sel, scores, 2.5)
    with pytest.raises(ValueError, match="c must be a scalar"):
        fn(sel, scores, np.asarray([1, 2]))
    with pytest.raises(TypeError, match="integer array"):
        fn(sel.astype(float), scores, 2)
    with pytest.raises(ValueError, match=r"indices in \[0, 5\)"):
        fn(np.asarray([0, 5]), scores, 2)
    with pytest.raises(ValueError, match=r"indices in \[0, 5\)"):
        fn(np.asarray([0, -2]), scores, 2)
    with pytest.raises(ValueError, match="finite"):
        fn(sel, np.asarray([1.0, np.nan, 2.0]), 2)
    with pytest.raises(ValueError, match=r"shape \(n,\)"):
        fn(sel, np.ones((2, 3)), 2)


@pytest.mark.parametrize("name", ["ser", "ncs"])
def test_support_metrics_need_positive_top_support(name):
    with pytest.raises(ValueError, match="must be positive"):
        M.METRICS[name](np.asarray([0]), np.asarray([0.0, 0.0, 0.0]), 2)
    # the set metrics and NCR are defined for any real scores
    assert float(M.ncr(np.asarray([1]), np.asarray([-1.0, -0.5, -3.0]), 1)) == 1.0


# ---------------------------------------------------------------------------------------------
# Summaries across trials.


def test_summary_against_scipy():
    rng = np.random.default_rng(6)
    values = rng.uniform(0, 1, 100)
    s = M.summary(values, 0.9)
    assert s.num_trials == 100
    assert float(s.mean) == pytest.approx(values.mean(), abs=1e-14)
    assert float(s.std) == pytest.approx(values.std(ddof=1), abs=1e-14)
    assert float(s.sem) == pytest.approx(scipy.stats.sem(values), abs=1e-14)
    lo, hi = scipy.stats.t.interval(0.9, 99, loc=values.mean(), scale=scipy.stats.sem(values))
    assert (float(s.lower), float(s.upper)) == pytest.approx((lo, hi), abs=1e-12)
    n = M.summary(values, 0.9, method="normal")
    half = scipy.stats.norm.ppf(0.95) * scipy.stats.sem(values)
    assert (float(n.lower), float(n.upper)) == pytest.approx(
        (values.mean() - half, values.mean() + half), abs=1e-12)


def test_summary_axis_and_hand_values():
    values = np.asarray([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])  # 3 trials x 2 sweep points
    s = M.summary(values)
    np.testing.assert_allclose(np.asarray(s.mean), [1.0, 1.0])
    np.testing.assert_allclose(np.asarray(s.std), [1.0, 0.0])
    np.testing.assert_allclose(np.asarray(s.sem), [1 / math.sqrt(3), 0.0])
    q = scipy.stats.t.ppf(0.975, 2)  # 4.302652729911275
    np.testing.assert_allclose(np.asarray(s.upper), [1 + q / math.sqrt(3), 1.0])
    t = M.summary(values.T, axis=-1)
    np.testing.assert_allclose(np.asarray(t.lower), np.asarray(s.lower))


def test_summary_of_a_metric_and_edge_cases():
    sel = np.asarray([[0, 1, 2], [0, 3, -1], [-1, -1, -1], [4, 2, 1]], np.int32)
    s = M.summary(M.f1(sel, np.asarray(S5, float), 3))
    assert float(s.mean) == pytest.approx((1 + 0.4 + 0 + 2 / 3) / 4)
    one = M.summary(np.asarray([0.5]))
    assert float(one.mean) == 0.5 and math.isnan(float(one.std)) and math.isnan(float(one.upper))
    jitted = jax.jit(lambda v: M.summary(v)[:5])(jnp.asarray([1.0, 2.0, 3.0]))
    assert float(jitted[0]) == 2.0
    with pytest.raises(ValueError, match="confidence"):
        M.summary(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="method"):
        M.summary(np.ones(3), method="bootstrap")
    with pytest.raises(ValueError, match="at least one trial"):
        M.summary(np.ones((0,)))
