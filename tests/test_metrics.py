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
TIE2 = [4, 4, 2, 1, 0]  # items 0, 1 tied at the top

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
    ("c=n", [3, 1, 2, 5, 4], 5, [1, -1, -1], _values(1, 1 / 5, 1 / 3, 1 / 15, 1 / 15)),
    # ties at the c-th score: any tied item completes the top-c ...
    ("tie-boundary-a", TIE, 2, [0, 2], PERFECT),
    ("tie-boundary-b", TIE, 2, [3, 0], PERFECT),
    # ... but there is one slot at the c-th score, and {1, 2} misses item 0 whichever tie counts
    ("tie-boundary-two-tied", TIE, 2, [1, 2], _values(1 / 2, 1 / 2, 1 / 2, 6 / 8, 2 / 3)),
    ("tie-boundary-vs-below", TIE, 2, [1, 4], _values(1 / 2, 1 / 2, 1 / 2, 4 / 8, 1 / 3)),
    ("tie-boundary-short", TIE, 2, [2, -1], _values(1, 1 / 2, 2 / 3, 3 / 8, 1 / 3)),
    # a tie inside the top-c shares the mid-rank relevance: (3 + 2) / 2 each
    ("tie-inside", TIE2, 3, [1, 3, -1], _values(1 / 2, 1 / 3, 2 / 5, 5 / 10, 2.5 / 6)),
    ("tie-inside-perfect", TIE2, 3, [2, 1, 0], PERFECT),
    # the tie group spans position c exactly: both items fill the two slots
    ("tie-spans-c", TIE2, 2, [1, 2], _values(1 / 2, 1 / 2, 1 / 2, 6 / 8, 1.5 / 3)),
    ("all-tied", [2, 2, 2, 2, 2], 2, [3, 1, -1], PERFECT),
    ("all-tied-extra", [2, 2, 2, 2, 2], 2, [0, 1, 2], PERFECT),
    ("all-tied-short", [2, 2, 2, 2, 2], 2, [2, -1, -1], _values(1, 1 / 2, 2 / 3, 1 / 2, 1 / 2)),
]


# One shape for every hand case (n = 5 scores, WIDTH picks; extra -1 padding changes nothing):
# one compiled program per scores dtype. WIDTH is the longest selection above.
WIDTH = 5
assert all(len(h[1]) == 5 and len(h[3]) <= WIDTH for h in HAND)


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
    """k = 4 < c = 5: the answer holds at most four picks. The rows are those of
    test_random_against_brute_force[7-4] (40 rows of 4 picks, n = 7: its program), padded with
    rows of no pick."""
    scores = np.asarray([12, 10, 8, 6, 4, 2, 1], float)  # top-5 = {0, ..., 4}, support 40
    sel = np.full((40, 4), -1, np.int32)
    sel[0, :2] = [1, 6]
    sel[1] = [0, 1, 2, 3]
    got = M.evaluate(sel, scores, 5)
    rest = np.zeros(37)
    np.testing.assert_allclose(np.asarray(got["recall"]), [1 / 5, 4 / 5, 0, *rest])
    np.testing.assert_allclose(np.asarray(got["precision"]), [1 / 2, 1, 0, *rest])
    np.testing.assert_allclose(np.asarray(got["ser"]), [29 / 40, 1 / 10, 1, *(rest + 1)])
    np.testing.assert_allclose(np.asarray(got["ncr"]), [4 / 15, 14 / 15, 0, *rest])


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
    """Both repeat detectors (jitted, as the metrics run them; every width in one program) flag
    exactly the entries seen earlier in their row."""
    rng = np.random.default_rng(8)
    keys = [rng.integers(-1, k // 2 + 1, (50, k)).astype(np.int32)
            for k in (5, 40, AS.PAIRWISE_MAX_K + 3)]
    both = jax.jit(lambda keys: [(AS.repeat_pairwise(key), AS.repeat_sorted(key))
                                 for key in keys])
    for key, (pairwise, by_sort) in zip(keys, jax.device_get(both(keys))):
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
    """[4, 10, k] selections: the same numbers as the 40 rows flat and row by row. The flat rows
    have the shape of test_random_against_brute_force[5-5] and a row that of test_hand_computed
    (n = 5 float64 scores; their programs)."""
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 6, 5).astype(np.float64) + 1
    sel = _random_selected(rng, 5, WIDTH, 3, trials=40).reshape(4, 10, WIDTH)
    fn = M.METRICS[name]
    got = fn(sel, scores, 3)
    assert got.shape == (4, 10)
    flat = fn(sel.reshape(40, WIDTH), scores, 3)
    rows = np.array([float(fn(row, scores, 3)) for row in sel.reshape(40, WIDTH)])
    np.testing.assert_array_equal(np.asarray(got).reshape(40), np.asarray(flat))
    np.testing.assert_allclose(np.asarray(flat), rows, rtol=0, atol=1e-15)


def test_jit_and_no_retrace_across_c():
    """Under jit with a traced c (an int32 array for ``evaluate``, a Python int for ``ser``):
    one trace for every c, the eager numbers. Both in one program; the eager metrics on the
    shape of test_random_against_loop_reference[12-6] (its program)."""
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 5, 12).astype(np.float64) + 1
    sel = _random_selected(rng, 12, 6, 10, trials=60)
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def every_and_one(sel, scores, c, c_int):
        return M.evaluate(sel, scores, c), M.ser(sel, scores, c_int)

    for c in (1, 4, 10):
        got, one = every_and_one(sel, scores, np.int32(c), c)
        np.testing.assert_array_equal(np.asarray(one), np.asarray(got["ser"]))
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
    cs = np.asarray([1, 2, 4], np.int32)  # host arrays: no eager programs
    got = jax.jit(jax.vmap(lambda s, c: M.ncr(sel, s, c)))(scores, cs)
    assert got.shape == (3, 7)
    got = np.asarray(got)
    for j in range(3):
        want = [loop_reference(row.tolist(), scores[j], int(cs[j]))["ncr"] for row in sel]
        np.testing.assert_allclose(got[j], want, rtol=0, atol=1e-12)


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
    # padded with picks and rows of none to test_random_against_brute_force[5-5]'s shape (its
    # program)
    rows = np.full((40, WIDTH), -1, np.int32)
    rows[:2, :3] = sel
    np.testing.assert_allclose(np.asarray(M.f1(rows, np.asarray(S5, float), 3)),
                               [4 / 5, *np.zeros(39)])
    np.testing.assert_allclose(np.asarray(M.ser(rows, np.asarray(S5, float), 3)),
                               [1 / 3, *np.ones(39)])


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
    selected = np.asarray(svtjax.selected(out, c))  # host picks: checked on the host
    want = M.evaluate(selected, scores, c)
    got = M.evaluate_outcome(out, scores, c)
    traced = jax.jit(lambda o, s, c: M.evaluate_outcome(o, s, c, max_c=7))(out, scores, c)
    assert np.asarray(got["picks"]).min() < c <= np.asarray(got["picks"]).max()
    np.testing.assert_array_equal(np.asarray(got["picks"]), np.sum(selected >= 0, axis=-1))
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
    ``test_evaluate_outcome_equals_evaluate_of_selected`` (its programs are reused). Which loop
    runs is decided when the reducer is traced, so its jit cache is emptied before the block
    loop runs on the same shape (traced anew, not taken from the cache) and again after it (so
    that no later call gets the block loop from the cache)."""
    from svtjax import _native

    name, params, shuffle = OUTCOME_RUNS[0]
    assert name == "svt-s" and not shuffle
    scores, out = _outcome_run(name, params, shuffle)
    assert out.stored_items is None  # compact: items are the position mod n
    c = params["c"]
    want = M.evaluate(np.asarray(svtjax.selected(out, c)), scores, c)
    compiled = M.evaluate_outcome(out, scores, c)
    with monkeypatch.context() as patch:
        patch.setattr(_native, "first_tops_target", lambda: None)
        M._outcome_counts.clear_cache()
        try:
            jaxpr = str(jax.make_jaxpr(lambda o: M.evaluate_outcome(o, scores, c))(out))
            assert "while" in jaxpr
            loop = M.evaluate_outcome(out, scores, c)
        finally:
            M._outcome_counts.clear_cache()
    if _native.first_tops_target() is not None:  # the compiled loop is back for later calls
        assert "while" not in str(jax.make_jaxpr(lambda o: M.evaluate_outcome(o, scores,
                                                                               c))(out))
    for metric in NAMES:
        np.testing.assert_allclose(np.asarray(loop[metric]), np.asarray(compiled[metric]),
                                   rtol=1e-13, atol=1e-15, err_msg=metric)
        np.testing.assert_allclose(np.asarray(compiled[metric]), np.asarray(want[metric]),
                                   rtol=1e-13, atol=1e-15, err_msg=metric)
    for key in ("picks", "evaluated"):
        np.testing.assert_array_equal(np.asarray(loop[key]), np.asarray(compiled[key]))


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
    # the set metrics and NCR are defined for any real scores (test_hand_computed's shape: its
    # program)
    sel = np.asarray([1, -1, -1, -1, -1], np.int32)
    assert float(M.ncr(sel, np.asarray([-1.0, -0.5, -3.0, -2.0, -4.0]), 1)) == 1.0


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
    # four rows, padded to test_random_against_brute_force[5-5]'s shape (its program)
    sel = np.full((40, WIDTH), -1, np.int32)
    sel[:4, :3] = [[0, 1, 2], [0, 3, -1], [-1, -1, -1], [4, 2, 1]]
    s = M.summary(np.asarray(M.f1(sel, np.asarray(S5, float), 3))[:4])
    assert float(s.mean) == pytest.approx((1 + 0.4 + 0 + 2 / 3) / 4)
    one = M.summary(np.asarray([0.5]))
    assert float(one.mean) == 0.5 and math.isnan(float(one.std)) and math.isnan(float(one.upper))
    jitted = jax.jit(lambda v: M.summary(v)[:5])(np.asarray([1.0, 2.0, 3.0]))
    assert float(jitted[0]) == 2.0
    with pytest.raises(ValueError, match="confidence"):
        M.summary(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="method"):
        M.summary(np.ones(3), method="bootstrap")
    with pytest.raises(ValueError, match="at least one trial"):
        M.summary(np.ones((0,)))
