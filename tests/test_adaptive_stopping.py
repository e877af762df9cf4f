"""The two stopping rules of Adaptive-Sparse-Vector-with-Gap (issue 15 item 5, issue 62 item 2):
``adaptive-svt-gap``'s exact integer rule against ``adaptive-svt-gap-authors``, the authors'
running float64 budget sum (cmla-psu/freegap), on common random numbers — the law of the
authors' rule is the exact rule's, one answer short exactly where the float sum overshoots.
Deterministic: no statistical thresholds."""

import functools

import jax
import numpy as np
import pytest

import svtjax
from svtjax import reference

EPS = 0.7  # Ding'19 Sec. 7.3, Figures 3-4
KS = tuple(range(2, 31))


def _authors_budgets(eps: float, k: int):
    """freegap/evaluate.py's allocate_x, allocate_y (counting queries) and adaptivesvt.py's
    budgets, in the paper's names: (ε0, ε1, ε2)."""
    y = np.power(np.int64(k), 2.0 / 3.0)
    allocate_x, allocate_y = 1 / (1 + y), y / (1 + y)
    return allocate_x * eps, allocate_y * eps / k, allocate_y * eps / (2.0 * k)


def _authors_stop_early(eps: float, k: int, tops: int) -> bool:
    """The authors' loop after ``tops`` top-branch answers: cost starts at ε0 and gains ε2 per
    answer, sequential float64 additions; it stops when cost > ε − ε1. With 2(k − 1) tops the
    exact cost is ε − ε1, so this is one ulp's luck."""
    e0, e1, e2 = _authors_budgets(eps, k)
    cost = e0
    for _ in range(tops):
        cost += e2
    return cost > eps - e1


@jax.jit
def _decide(mech, draws, q):
    # lax.map, not vmap: batching the engine's loops costs more staging than the tiny runs
    return jax.lax.map(lambda d: mech.decide(d, q, 0.0), draws)


@functools.partial(jax.jit, static_argnums=2)
def _draws(mech, keys, n):
    return jax.vmap(lambda key: mech.draw(key, n, shuffle=True))(keys)


N, RUNS = 200, 50
"""Both tests run RUNS shuffled trials on N queries through ``_draws`` and ``_decide``, with c
and ε traced: the same programs for every k (two rules, two ``monotonic`` values)."""


def test_rules_differ_by_one_answer_exactly_where_the_float_sum_overshoots():
    """Every query far above the threshold: every answer is a top-branch answer (cost ε2), so
    the exact rule gives 2k − 1 answers (2·0 + n2 > 2(k − 1) first at n2 = 2k − 1). The authors'
    rule gives one fewer at the k where ε0 + (2k − 2)·ε2, summed in float64, lands above ε − ε1
    (k = 9, 11, 17, ... at ε = 0.7), and the same elsewhere. Common random numbers: the two
    outcomes agree position by position up to the authors' stop, in each of RUNS trials per k;
    the kernel's authors' run equals the numpy reference's on the first trial's draws."""
    q = np.full(N, 1e7)
    assert N > 2 * max(KS) - 1  # the stop is inside the stream
    early = [k for k in KS if _authors_stop_early(EPS, k, 2 * k - 2)]
    assert 9 in early and 2 not in early and 0 < len(early) < len(KS)  # both outcomes occur
    for k in KS:
        exact = svtjax.get("adaptive-svt-gap", epsilon=EPS, c=k, monotonic=True)
        authors = svtjax.get("adaptive-svt-gap-authors", epsilon=EPS, c=k, monotonic=True)
        draws = _draws(exact, jax.random.split(jax.random.key(k), RUNS), N)
        a, b = jax.device_get((_decide(exact, draws, q).answers,
                               _decide(authors, draws, q).answers))
        na, nb = (a == 1).sum(axis=1), (b == 1).sum(axis=1)
        assert np.all(na == 2 * k - 1), k
        stop = 2 * k - 1 - (k in early)
        assert np.all(nb == stop), (k, na, nb)
        np.testing.assert_array_equal(a[:, :stop], b[:, :stop])
        assert np.all(b[:, stop:] == -1)
        first = jax.tree_util.tree_map(lambda x: np.asarray(x[0]), jax.device_get(draws))
        np.testing.assert_array_equal(b[0], reference.run(authors, first, q, 0.0).answers)


def test_rules_agree_away_from_the_boundary():
    """On random inputs the two rules give the same outcome except in runs that reach
    2 n1 + n2 = 2(k − 1) exactly, where the authors' rule may drop the last answer; checked run
    by run on common random numbers (shuffled, 400 runs of 8 configurations)."""
    rng = np.random.default_rng(0)
    checked = differ = 0
    for k in (2, 3, 6, 9):
        for monotonic in (True, False):
            q = rng.normal(0, 30, N)
            kw = dict(epsilon=float(rng.uniform(0.3, 2.0)), c=k, monotonic=monotonic)
            exact = svtjax.get("adaptive-svt-gap", **kw)
            authors = svtjax.get("adaptive-svt-gap-authors", **kw)
            e2 = authors.budgets()[2]
            draws = _draws(exact, jax.random.split(jax.random.key(k), RUNS), N)
            a, b = (_decide(m, draws, q) for m in (exact, authors))
            ans_a, ans_b = np.asarray(a.answers), np.asarray(b.answers)
            for t in range(ans_a.shape[0]):
                checked += 1
                if np.array_equal(ans_a[t], ans_b[t]):
                    continue
                differ += 1
                stop = int(np.sum(ans_b[t] >= 0))  # the authors' run is a prefix ...
                np.testing.assert_array_equal(ans_b[t][:stop], ans_a[t][:stop])
                assert np.sum(ans_a[t] == 1) == np.sum(ans_b[t] == 1) + 1  # ... one ⊤ short
                weight = np.sum(np.asarray(b.cost)[t]) / e2  # top 1, middle 2
                assert round(weight) == 2 * (k - 1) and abs(weight - round(weight)) < 1e-9
    print(f"{differ} of {checked} runs differ")
    assert checked == 400 and 0 < differ < checked, differ


def test_authors_rule_needs_float64():
    with jax.enable_x64(False):
        with pytest.raises(ValueError, match="^adaptive-svt-gap-authors .* needs float64"):
            svtjax.get("adaptive-svt-gap-authors", epsilon=1.0, c=3)


def test_the_authors_rule_is_its_own_mechanism():
    """Issue 62 item 2: the authors' stopping rule is a rule of its own, registered with its own
    reference, not an option of adaptive-svt-gap: the paper's rule keeps its block form, the
    authors' has none (a float sum in stream order), and ``stopping`` is no parameter."""
    assert "stopping" not in svtjax.mechanisms.parameters("adaptive-svt-gap")
    assert (svtjax.mechanisms.parameters("adaptive-svt-gap")
            == svtjax.mechanisms.parameters("adaptive-svt-gap-authors"))
    with pytest.raises(TypeError, match=r"adaptive-svt-gap does not take parameter 'stopping': "
                                        r".* is the mechanism 'adaptive-svt-gap-authors'$"):
        svtjax.get("adaptive-svt-gap", epsilon=1.0, c=3, stopping="authors")
    with pytest.raises(TypeError, match=r"does not take parameter\(s\) \['stopping'\]"):
        svtjax.get("adaptive-svt-gap-authors", epsilon=1.0, c=3, stopping="authors")
    exact = svtjax.get("adaptive-svt-gap", epsilon=1.0, c=3)
    authors = svtjax.get("adaptive-svt-gap-authors", epsilon=1.0, c=3)
    assert exact.has_block() and not authors.has_block()
    assert reference.REFERENCES["adaptive-svt-gap-authors"] is not reference.REFERENCES[
        "adaptive-svt-gap"]
    assert "authors' stopping rule" in authors.privacy().statement
    with pytest.raises(ValueError, match="needs a concrete c and theta"):
        jax.jit(lambda c: svtjax.get("adaptive-svt-gap-authors", epsilon=1.0, c=c).theta)(3)


def test_budgets_are_the_authors_floats():
    """adaptive-svt-gap-authors' (ε0, ε1, ε2) are bit for bit the authors' (y/(1 + y), not
    1 − θ: ε1 differs in the last bit at k = 6, 7, 9, 20, 21, ε = 0.7), and the exact rule's
    budgets are line 1's with 1 − θ."""
    for k in range(2, 25):
        mech = svtjax.get("adaptive-svt-gap-authors", epsilon=EPS, c=k, monotonic=True)
        assert tuple(map(float, mech.budgets())) == tuple(map(float, _authors_budgets(EPS, k)))
        exact = svtjax.get("adaptive-svt-gap", epsilon=EPS, c=k, monotonic=True)
        theta = 1 / (1 + k ** (2 / 3))
        assert float(exact.budgets()[1]) == (1 - theta) * EPS / k
    assert float(svtjax.get("adaptive-svt-gap-authors", epsilon=1.0, c=4,
                            theta=0.3).budgets()[1]) == 0.7 / 4


def test_authors_budget_expressions_compiled_with_fastmath():
    """The authors compile adaptive_sparse_vector with numba njit(fastmath=True), which lets
    LLVM rewrite floating-point expressions (e.g. a division as a reciprocal multiply). Their
    budget expressions compiled that way give the same floats as IEEE arithmetic on Ding'19's
    grid (k = 2..24, ε = 0.1..1.5), so the rule's IEEE floats are theirs. (Their running sum
    calls numpy's random generator between additions, which keeps it sequential.)"""
    numba = pytest.importorskip("numba")

    @numba.njit(fastmath=True)
    def budgets(epsilon, k, allocate_x, allocate_y):
        e_0 = allocate_x * epsilon
        e_top = allocate_y * epsilon / (2.0 * k)
        e_mid = allocate_y * epsilon / k
        return e_0, e_mid, e_top, epsilon - e_mid

    for eps in np.round(np.arange(0.1, 1.6, 0.1), 1):
        for k in range(2, 25):
            y = np.power(np.int64(k), 2.0 / 3.0)
            got = budgets(float(eps), k, 1 / (1 + y), y / (1 + y))
            e0, e1, e2 = _authors_budgets(float(eps), k)
            assert got == (e0, e1, e2, eps - e1), (eps, k)
