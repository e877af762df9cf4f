"""The selection mechanisms ``em-peeling`` and ``report-noisy-max``: equivalence, law, privacy.

Sources: Lyu, Su, Li 2017, Section 4.4 (EM run c times at ε/c, weight ε/(2cΔ), ε/(cΔ) for
monotonic queries, picked items removed; PVLDB 10(6)); Ding, Wang, Zhang, Kifer 2019, Section
5, Algorithm 1 and Theorem 2 (noisy top-k with Lap(2k/ε), ε/2-DP for counting queries; PVLDB
13(3)); Durfee & Rogers 2019 (one-shot Gumbel top-k
equals EM peeling in law); McKenna & Sheldon 2020 and Ding, Kifer et al. 2021 (report-noisy-max
with exponential noise is permute-and-flip, ε-DP, k = 1).

* Common random numbers: kernel (``top_k`` path and peeling path) against the numpy reference on
  220 random cases per structure and dtype (n in {8, 50}, integer scores with many ties or real
  scores), in one compiled call per shape (lax.map over the cases). Exact ties of noisy scores
  go to the lower index in every implementation.
* Distribution: the empirical law of the ordered pick tuple over 10^5 trials (n = 5, k <= 3)
  against exact probabilities: for EM (and Gumbel noise) the product of peeling probabilities
  Π_r exp(w q_{j_r}) / Σ_{remaining} exp(w q_i); for Laplace and exponential noise
  P(X_{j_1} > ... > X_{j_k} > max_{rest} X_l), X_i = q_i + η_i, by nested cumulative quadrature
  on a fine grid (trapezoid rule, each segment between score values integrated separately so the
  exponential density's jumps and the Laplace kinks are nodes). The quadrature is checked against
  the closed peeling formula (Gumbel) and scipy's adaptive ``quad`` (k = 1) to < 1e-6, far below
  the sampling error (~1e-3). Pearson's chi-square (``tests.test_distribution.chi_square``, cells
  with expected count < 5 pooled) must give p > 1e-4; deliberately wrong mechanisms (the
  monotonic weight on general queries, half the Laplace noise, Laplace noise in place of
  exponential) must give p < 1e-4, after checking that the test has power > 1 - 1e-6 against
  them (non-centrality from their exact law).
* Privacy: each ``privacy()`` against its paper's statement, ε re-derived from the noise scale the
  kernel uses, and an exact audit: on neighbouring score vectors (every vertex of the Δ-box, or of
  [0, Δ]^n for monotonic scores) the exact output laws differ by at most a factor e^ε.

Failure rate: fixed seeds make the suite deterministic; the seeds were not tuned. Under correct
kernels each acceptance has probability 1e-4 of failing over the seed, about 1e-3 for the 10
acceptances here.
"""

from __future__ import annotations

import importlib
import itertools
import math
import re

import jax
import numpy as np
import pytest
from scipy import integrate, stats

import svtjax
from svtjax import _driver, accounting, mechanisms, reference
from svtjax._core import Draws
from svtjax.accounting import PureDP, Unproven
from svtjax.mechanisms.selection import EMPeeling, ReportNoisyMax
from svtjax.noise import Exponential, Gumbel, Laplace
from tests.test_distribution import ALPHA, _count_rows, chi_square, noncentrality

sim = importlib.import_module("svtjax.simulate")

TRIALS = 100_000

# --------------------------------------------------------------------------------------------
# Common random numbers: kernel == reference on the same draws
# --------------------------------------------------------------------------------------------

SHAPES = (8, 50)
CASES_PER_SHAPE = 110

# (registry name, static parameters). tests/cases.py adds em-peeling c=3, laplace k=3, gumbel
# k=2 monotonic and exponential k=1 to the generic harness in tests/test_equivalence.py.
STRUCTURES = [
    ("em-peeling", {"c": 1}),
    ("em-peeling", {"c": 4, "monotonic": True}),
    ("report-noisy-max", {"k": 1, "noise": "laplace"}),
    ("report-noisy-max", {"k": 5, "noise": "laplace", "monotonic": True}),
    ("report-noisy-max", {"k": 1, "noise": "gumbel"}),
    ("report-noisy-max", {"k": 5, "noise": "gumbel", "monotonic": True}),
    ("report-noisy-max", {"k": 5, "noise": "exponential"}),
    ("report-noisy-max", {"k": 1, "noise": "exponential", "monotonic": True}),
]


STANDARD = {Laplace: lambda rng, shape: rng.laplace(size=shape),
            Gumbel: lambda rng, shape: rng.gumbel(size=shape),
            Exponential: lambda rng, shape: rng.exponential(size=shape)}


def _structure_id(s):
    name, static = s
    return name + "-" + "-".join(f"{k}={v}" for k, v in static.items())


def _stack(trees):
    # numpy on the host: jnp.stack would be a program of its own per shape
    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


@jax.jit
def _both_paths(stacked, draws, q, t):
    """Every case's ``top_k`` and peeling decisions in one program (lax.map over the cases:
    batching the peeling loop with vmap costs more staging than the tiny runs)."""
    return jax.lax.map(lambda a: (a[0].decide(a[1], a[2], a[3]),
                                  a[0].decide(a[1], a[2], a[3], vectorized=False)),
                       (stacked, draws, q, t))


def _scores(rng, n, count, dtype):
    ties = rng.random(count) < 0.5
    q = np.where(ties[:, None], rng.integers(0, 4, (count, n)),
                 rng.normal(0.0, 3.0, (count, n)))
    return q.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("structure", STRUCTURES, ids=[_structure_id(s) for s in STRUCTURES])
def test_kernel_matches_reference(structure, dtype):
    name, static = structure
    rng = np.random.default_rng(3000 + STRUCTURES.index(structure))
    # float32 (its own arithmetic, independent of the stream's length) on the longer stream
    # alone with as many cases: one program to compile, not one per length.
    shapes = SHAPES if dtype == np.float64 else SHAPES[1:]
    per_shape = len(SHAPES) * CASES_PER_SHAPE // len(shapes)
    checked = 0
    for n in shapes:
        mechs = [svtjax.get(name, epsilon=float(rng.uniform(0.1, 5.0)),
                            sensitivity=float(rng.uniform(0.3, 3.0)), **static)
                 for _ in range(per_shape)]
        stacked = _stack(mechs)
        # Standard variates of the mechanism's family, drawn with numpy: ``decide`` is what is
        # tested here (``draw`` is covered by the generic harness and the tests below), and a
        # JAX draw would add a slow threefry compile per shape and dtype.
        z = STANDARD[mechs[0].noise_family](rng, (per_shape, n)).astype(dtype)
        draws = Draws(threshold=None, query=z)
        q = _scores(rng, n, per_shape, dtype)
        t = rng.normal(size=(per_shape, n)).astype(dtype)  # ignored by selection
        out, peel = jax.device_get(_both_paths(stacked, draws, q, t))
        for i, mech in enumerate(mechs):
            d = jax.tree_util.tree_map(lambda x: np.asarray(x[i]), draws)
            ref = reference.run(mech, d, q[i], 0.0)
            msg = f"{mech!r} n={n} case={i} dtype={dtype.__name__}"
            for path, res in (("top_k", out), ("peeling", peel)):
                got = jax.tree_util.tree_map(lambda x: x[i], res)
                np.testing.assert_array_equal(got.answers, ref.answers, err_msg=f"{path} {msg}")
                np.testing.assert_array_equal(got.items, ref.items, err_msg=f"{path} {msg}")
                assert np.all(np.isnan(got.values)) and got.values.dtype == dtype, msg
                np.testing.assert_allclose(got.cost, ref.cost, rtol=1e-12 if dtype == np.float64
                                           else 1e-6, err_msg=msg)
            assert len(set(ref.items.tolist())) == mech.num_picks() == ref.items.size, msg
            checked += 1
    assert checked >= 200


@pytest.mark.parametrize("vectorized", [True, False], ids=["top_k", "peeling"])
def test_exact_ties_go_to_the_lower_index(vectorized):
    """With zero noise the picks are the scores sorted descending, equal scores by index."""
    q = np.array([1.0, 3.0, 2.0, 3.0, 1.0, 3.0, 2.0])
    want = [1, 3, 5, 2, 6]
    draws = Draws(threshold=None, query=np.zeros(7))
    for mech in (svtjax.get("em-peeling", epsilon=1.0, c=5),
                 svtjax.get("report-noisy-max", epsilon=1.0, k=5, noise="exponential")):
        got = mech.decide(draws, q, 0.0, vectorized=vectorized)
        np.testing.assert_array_equal(got.items, want)
        np.testing.assert_array_equal(reference.run(mech, draws, q, 0.0).items, want)
    # Ties between different items' noisy scores: q + b·z equal for items 0 and 2.
    mech = svtjax.get("report-noisy-max", epsilon=2.0, k=2)  # b = 2
    draws = Draws(threshold=None, query=np.array([0.5, -3.0, 0.0, -1.0]))
    q = np.array([0.0, 0.0, 1.0, 0.0])  # noisy: 1, -6, 1, -2
    np.testing.assert_array_equal(mech.decide(draws, q, 0.0, vectorized=vectorized).items, [0, 2])
    np.testing.assert_array_equal(reference.run(mech, draws, q, 0.0).items, [0, 2])
    # -0.0 and +0.0 are equal numbers: a tie (lax.top_k alone would rank +0.0 first).
    draws = Draws(threshold=None, query=np.array([-0.0, 0.0, -1.0, -2.0]))
    q = np.array([-0.0, 0.0, -1.0, -1.0])
    np.testing.assert_array_equal(mech.decide(draws, q, 0.0, vectorized=vectorized).items, [0, 1])
    np.testing.assert_array_equal(reference.run(mech, draws, q, 0.0).items, [0, 1])


@jax.jit
def _em_and_gumbel_picks(q):
    """em-peeling's and Gumbel report-noisy-max's outcomes on em-peeling's draws of 300 trials,
    general and monotonic, in one program (vmap outside jit runs every operation as a program
    of its own)."""
    keys = jax.random.split(jax.random.key(5), 300)
    out = []
    for mono in (False, True):
        em = svtjax.get("em-peeling", epsilon=1.3, c=4, sensitivity=2.0, monotonic=mono)
        rnm = svtjax.get("report-noisy-max", epsilon=1.3, k=4, sensitivity=2.0, monotonic=mono,
                         noise="gumbel")
        draws = jax.vmap(lambda k, em=em: em.draw(k, q.size))(keys)
        out.append((jax.vmap(lambda d, em=em: em.decide(d, q, 0.0))(draws),
                    jax.vmap(lambda d, rnm=rnm: rnm.decide(d, q, 0.0))(draws)))
    return out


def test_em_peeling_equals_gumbel_report_noisy_max_on_the_same_draws():
    q = np.random.default_rng(1).integers(0, 5, 40).astype(float)
    for a, b in jax.device_get(_em_and_gumbel_picks(q)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@jax.jit
def _call_and_draws(mech, key, q, t):
    """What the test below compares, in one program per mechanism structure: the draws with and
    without shuffle, ``mech(key)``, ``decide`` on the shuffled draws with thresholds ``t``, and
    the draws of a 5-item stream."""
    draws = mech.draw(key, q.size, shuffle=True)
    return (draws, mech.draw(key, q.size).query, mech(key, q, 0.5), mech.decide(draws, q, t),
            mech.draw(key, 5).query)


def test_call_draw_shuffle_and_thresholds():
    """``mech(key)`` == ``decide(draw(key))``; shuffle and thresholds change nothing; an item's
    noise depends only on (trial key, item)."""
    rng = np.random.default_rng(2)
    q = rng.normal(0, 2, 300)  # two random blocks
    for mech in (svtjax.get("em-peeling", epsilon=2.0, c=3),
                 svtjax.get("report-noisy-max", epsilon=2.0, k=4, noise="laplace")):
        for seed in range(3):
            draws, plain, lazy, full, prefix = jax.device_get(_call_and_draws(
                mech, jax.random.key(seed), q, rng.normal(size=q.size)))
            assert draws.threshold is None and draws.order is None
            np.testing.assert_array_equal(draws.query, plain)
            for a, b in zip(lazy, full):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(draws.query[:5], prefix)


def test_simulate_ignores_shuffle_and_thresholds():
    q = np.random.default_rng(3).normal(0, 2, 300)
    mech = svtjax.get("report-noisy-max", epsilon=2.0, k=4, noise="laplace")
    plain = svtjax.simulate(mech, q, 0.0, trials=64, seed=9)
    shuffled = svtjax.simulate(mech, q, np.linspace(-1, 1, q.size), trials=64, seed=9,
                               shuffle=True)
    for a, b in zip(plain, shuffled):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert plain.items.shape == (64, 4)
    np.testing.assert_array_equal(np.asarray(svtjax.selected(plain, 4)), np.asarray(plain.items))
    # trial t is mech(fold_in(key(seed), t)): ``mech(key, q, 0.5)`` from the program of the test
    # above (same structure and stream length; thresholds change nothing, as tested there), not
    # a program of its own
    one = jax.device_get(_call_and_draws(mech, jax.random.fold_in(jax.random.key(9), 17), q,
                                         np.zeros(q.size)))[2]
    np.testing.assert_array_equal(one.items, np.asarray(plain.items)[17])


def test_one_compile_per_structure():
    """ε and Δ are traced: a sweep reuses the compiled chunk; k is static (new shape).

    The sweep has the structure and shape of the rnm-gumbel-k3 distribution case below (Q5,
    TRIALS trials in float64), so its program is that case's; whether the case ran first in
    this process or not, the six runs add at most one entry to the jit cache, and k = 4 one
    more (a single chunk of 50 trials: no output concatenation programs for its shapes)."""
    base = _driver.run_chunk._cache_size()
    sizes = []
    for eps in (0.1, 0.7, 3.0):
        for delta in (1.0, 2.5):
            svtjax.simulate(svtjax.get("report-noisy-max", epsilon=eps, k=3, sensitivity=delta,
                                       noise="gumbel"), Q5, 0.0, trials=TRIALS)
            sizes.append(_driver.run_chunk._cache_size())
    assert sizes[0] <= base + 1 and sizes == sizes[:1] * 6, (base, sizes)
    svtjax.simulate(svtjax.get("report-noisy-max", epsilon=1.0, k=4, noise="gumbel"), Q5, 0.0,
                    trials=50, chunk_size=50)
    assert _driver.run_chunk._cache_size() == sizes[0] + 1


def test_parameter_errors():
    with pytest.raises(ValueError, match=r"^c \(6\) must not exceed the number of queries \(5\)"):
        svtjax.simulate(svtjax.get("em-peeling", epsilon=1.0, c=6), np.ones(5), 0.0, trials=2)
    mech = svtjax.get("report-noisy-max", epsilon=1.0, k=3)
    with pytest.raises(ValueError, match=r"^k \(3\) must not exceed"):
        mech(jax.random.key(0), np.ones(2), 0.0)
    with pytest.raises(ValueError, match=r"^k \(3\) must not exceed"):
        mech.draw(jax.random.key(0), 2)
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match=r"^k must be an integer >= 1"):
            svtjax.get("report-noisy-max", epsilon=1.0, k=bad)
    with pytest.raises(TypeError, match=r"^k must be a Python integer"):
        svtjax.get("report-noisy-max", epsilon=1.0, k=True)
    with pytest.raises(ValueError, match=r"^noise must be one of \['exponential', 'gumbel', "):
        svtjax.get("report-noisy-max", epsilon=1.0, noise="cauchy")
    with pytest.raises(TypeError, match=r"^monotonic must be True or False"):
        svtjax.get("em-peeling", epsilon=1.0, c=2, monotonic=1)
    with pytest.raises(TypeError, match=r"requires parameter\(s\) \['c'\]"):
        svtjax.get("em-peeling", epsilon=1.0)
    with pytest.raises(TypeError, match="valid parameters are"):
        svtjax.get("em-peeling", epsilon=1.0, k=2)
    assert int(np.asarray(svtjax.get("em-peeling", epsilon=1.0, c=np.int64(2)).c)) == 2
    assert mechanisms.parameters("report-noisy-max")["k"] == 1  # Report Noisy Max


# --------------------------------------------------------------------------------------------
# The oracle (numpy/scipy only, written from the papers)
# --------------------------------------------------------------------------------------------

FAMILIES = {"laplace": stats.laplace, "gumbel": stats.gumbel_r, "exponential": stats.expon}


def paper_scale(name: str, params: dict) -> float:
    """b: Lyu'17 §4.4 (EM weight 1/b) and Ding'19 Alg. 1 / Thm 2 (Lap(2kΔ/ε), kΔ/ε monotonic)."""
    k = params["c"] if name == "em-peeling" else params.get("k", 1)
    factor = 1.0 if params.get("monotonic", False) else 2.0
    return factor * k * params.get("sensitivity", 1.0) / params["epsilon"]


def peeling_law(q, weight: float, k: int) -> dict:
    """P(j_1..j_k) = Π_r exp(w q_{j_r}) / Σ_{i not yet picked} exp(w q_i)."""
    q = np.asarray(q, float)
    out = {}
    for picks in itertools.permutations(range(q.size), k):
        p, pool = 1.0, list(range(q.size))
        for j in picks:
            p *= math.exp(weight * q[j]) / sum(math.exp(weight * q[i]) for i in pool)
            pool.remove(j)
        out[picks] = p
    return out


def _grid(q, b, family, per_segment):
    """Quadrature nodes, and where to evaluate there (one-sided limits at segment ends)."""
    lo = q.min() - (6.0 if family == "gumbel" else 45.0) * b  # Gumbel's left tail is e^{-e^x}
    if family == "exponential":
        lo = q.min()
    hi = q.max() + 45.0 * b
    cuts = np.unique(np.concatenate([[lo, hi], q[(q > lo) & (q < hi)]]))
    nodes, where = [], []
    for a, c in zip(cuts[:-1], cuts[1:]):
        x = np.linspace(a, c, per_segment)
        e = x.copy()
        e[0], e[-1] = np.nextafter(a, c), np.nextafter(c, a)
        nodes.append(x)
        where.append(e)
    return np.concatenate(nodes), np.concatenate(where)


def _cumulative_trapezoid(y, x):
    out = np.zeros_like(y)
    out[1:] = np.cumsum(0.5 * (y[1:] + y[:-1]) * np.diff(x))
    return out


def topk_law(q, b: float, family: str, k: int, per_segment: int = 20001) -> dict:
    """P(X_{j_1} > ... > X_{j_k} > max_{l not picked} X_l), X_i = q_i + b·Z_i.

    g_k(x) = ∫_{-∞}^x f_{j_k}(y) Π_{rest} F_l(y) dy, g_r(x) = ∫_{-∞}^x f_{j_r}(y) g_{r+1}(y) dy,
    P = g_1(∞).
    """
    q = np.asarray(q, float)
    x, at = _grid(q, b, family, per_segment)
    dist = FAMILIES[family]
    pdf = np.array([dist.pdf(at, loc=qi, scale=b) for qi in q])
    cdf = np.array([dist.cdf(at, loc=qi, scale=b) for qi in q])
    out = {}
    for picks in itertools.permutations(range(q.size), k):
        rest = [i for i in range(q.size) if i not in picks]
        g = np.prod(cdf[rest], axis=0) if rest else np.ones_like(x)
        for j in reversed(picks):
            g = _cumulative_trapezoid(pdf[j] * g, x)
        out[picks] = float(g[-1])
    return out


def law(name: str, params: dict, q) -> dict:
    """Exact law of the ordered picks, from the papers' statements."""
    b = paper_scale(name, params)
    if name == "em-peeling":
        return peeling_law(q, 1.0 / b, params["c"])  # Lyu'17 §4.4: weight ε/(2cΔ) or ε/(cΔ)
    k, noise = params.get("k", 1), params.get("noise", "laplace")
    if noise == "gumbel":
        return peeling_law(q, 1.0 / b, k)
    return topk_law(q, b, noise, k)


def test_quadrature_against_closed_forms():
    q = np.array([0.0, 1.0, 2.0, 2.0, 0.5])
    got = topk_law(q, 1.5, "gumbel", 3)
    want = peeling_law(q, 1 / 1.5, 3)
    assert max(abs(got[t] - want[t]) for t in want) < 1e-6
    for family in ("laplace", "exponential"):
        dist = FAMILIES[family]
        law3 = topk_law(q, 1.5, family, 3)
        assert abs(sum(law3.values()) - 1) < 1e-5
        law1 = topk_law(q, 1.5, family, 1)
        for i in range(q.size):
            rest = np.delete(q, i)  # the other items' locations: one cdf call per point

            def f(x, i=i, rest=rest):
                return dist.pdf(x, loc=q[i], scale=1.5) * np.prod(dist.cdf(x, loc=rest,
                                                                           scale=1.5))
            start = q[i] if family == "exponential" else -np.inf
            edges = [start, *sorted(v for v in set(q) if v > start), np.inf]
            want1 = sum(integrate.quad(f, a, c, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
                        for a, c in zip(edges[:-1], edges[1:]))
            assert abs(law1[(i,)] - want1) < 1e-6, (family, i, law1[(i,)], want1)
        # the k = 1 marginal of the top-3 law is the top-1 law
        for i in range(q.size):
            marginal = sum(p for t, p in law3.items() if t[0] == i)
            assert abs(marginal - law1[(i,)]) < 1e-5


# --------------------------------------------------------------------------------------------
# Distribution of the ordered picks
# --------------------------------------------------------------------------------------------

Q5 = np.array([0.0, 1.0, 2.0, 2.0, 0.5])

# Every case and every wrong mechanism below runs on Q5 with TRIALS trials in float64, and each
# wrong mechanism has the structure (class, k, noise, monotonic) of an accepted case, so a
# simulation compiles one program per structure: seven in all. The rejection of one-shot
# exponential top-k in tests/test_selection_baselines.py runs the structure of
# rnm-exponential-k2-monotonic on the same shape.
DIST_CASES = [
    ("em-peeling-c3", "em-peeling", {"epsilon": 6.0, "c": 3, "sensitivity": 1.5}, Q5, 101),
    ("em-peeling-c2-monotonic", "em-peeling", {"epsilon": 2.0, "c": 2, "monotonic": True}, Q5,
     102),
    ("rnm-gumbel-k3", "report-noisy-max", {"epsilon": 4.0, "k": 3, "noise": "gumbel"}, Q5, 103),
    ("rnm-laplace-k2", "report-noisy-max", {"epsilon": 3.0, "k": 2, "sensitivity": 0.5}, Q5,
     104),
    ("rnm-laplace-k3-monotonic", "report-noisy-max",
     {"epsilon": 3.0, "k": 3, "monotonic": True}, Q5, 105),
    ("rnm-exponential-k1", "report-noisy-max", {"epsilon": 2.0, "noise": "exponential"}, Q5, 106),
    ("rnm-exponential-k2-monotonic", "report-noisy-max",
     {"epsilon": 2.0, "k": 2, "noise": "exponential", "monotonic": True}, Q5, 107),
]


def _pick_counts(mech, q, seed) -> dict:
    out = svtjax.simulate(mech, np.asarray(q, np.float64), 0.0, trials=TRIALS, seed=seed)
    assert np.all(np.asarray(out.answers) == 1)
    return _count_rows(out.items)


@pytest.mark.parametrize("case", DIST_CASES, ids=[c[0] for c in DIST_CASES])
def test_ordered_picks_distribution(case):
    cid, name, params, q, seed = case
    probs = law(name, params, q)
    assert abs(sum(probs.values()) - 1) < 1e-5
    p, stat, df, report = chi_square(probs, _pick_counts(svtjax.get(name, **params), q, seed),
                                     TRIALS)
    print(f"{cid}: p={p:.4g} chi2={stat:.1f} df={df}")
    assert df >= min(5, len(probs) - 1), report
    assert p > ALPHA, f"{cid}: the ordered picks do not follow the exact law\n{report}"


# (id, claimed (name, params), simulated mechanism, its actual law, scores, seed)
WRONG = [
    ("em-monotonic-weight-on-general", ("em-peeling", {"epsilon": 3.0, "c": 2}),
     EMPeeling(epsilon=3.0, c=2, monotonic=True), lambda q: peeling_law(q, 1.5, 2), Q5, 111),
    ("rnm-laplace-half-noise", ("report-noisy-max", {"epsilon": 3.0, "k": 2}),
     ReportNoisyMax(epsilon=6.0, k=2), lambda q: topk_law(q, 2 / 3, "laplace", 2), Q5, 112),
    # Laplace noise at the claimed scale (kΔ/ε = 1) in place of exponential: the structure of
    # rnm-laplace-k2 (ε = 4 gives 2kΔ/ε = 1).
    ("rnm-laplace-instead-of-exponential",
     ("report-noisy-max", {"epsilon": 2.0, "k": 2, "noise": "exponential", "monotonic": True}),
     ReportNoisyMax(epsilon=4.0, k=2), lambda q: topk_law(q, 1.0, "laplace", 2), Q5, 113),
]


@pytest.mark.parametrize("case", WRONG, ids=[c[0] for c in WRONG])
def test_rejects_wrong_mechanism(case):
    cid, (name, params), wrong_mech, wrong_law, q, seed = case
    probs = law(name, params, q)
    wrong = wrong_law(q)
    lam = noncentrality(wrong, probs, TRIALS)
    df = len(probs) - 1
    power = stats.ncx2.sf(stats.chi2.isf(ALPHA, df), df, lam)
    assert power > 1 - 1e-6, (lam, power)
    counts = _pick_counts(wrong_mech, q, seed)
    p, stat, df, report = chi_square(probs, counts, TRIALS)
    print(f"{cid}: p={p:.3g} chi2={stat:.1f} df={df} noncentrality={lam:.0f}")
    assert p < ALPHA, f"{cid}: the wrong mechanism was not rejected\n{report}"
    p_own, *_, report = chi_square(wrong, counts, TRIALS)
    assert p_own > ALPHA, f"{cid}: the wrong mechanism against its own law\n{report}"


# --------------------------------------------------------------------------------------------
# privacy()
# --------------------------------------------------------------------------------------------

EPSILONS = [0.05, 0.5, 1.0, 3.7]
PICKS = [1, 2, 5, 37]
SENSITIVITY = 2.5  # Δ ≠ 1 so that a scale missing Δ is caught
ORDERS = [1.5, 2.0, 10.0]


def _assert_pick_cost(name, picks, **static):
    """Every pick of a simulated run costs ε/k (ε = 0.3k). k is that of the DIST_CASES
    structure with these static parameters (3 where there is none), so the run is that case's
    compiled program."""
    k = next((params.get(picks, 1) for _, n, params, *_ in DIST_CASES
              if n == name and all(params.get(f, False if f == "monotonic" else "laplace") == v
                                   for f, v in static.items())), 3)
    mech = svtjax.get(name, epsilon=0.3 * k, **{picks: k}, **static)
    out = svtjax.simulate(mech, Q5, 0.0, trials=TRIALS, seed=1)
    assert np.asarray(out.cost).shape == (TRIALS, k)
    np.testing.assert_allclose(np.asarray(out.cost), 0.3, rtol=1e-15)


@pytest.mark.parametrize("monotonic", [False, True], ids=["general", "monotonic"])
def test_em_peeling_privacy(monotonic):
    for eps in EPSILONS:
        for c in PICKS:
            mech = svtjax.get("em-peeling", epsilon=eps, c=c, sensitivity=SENSITIVITY,
                              monotonic=monotonic)
            g = mech.privacy()
            assert isinstance(g, PureDP) and g.private
            assert g.epsilon() == pytest.approx(eps, rel=1e-15)
            assert g.epsilon(delta=1e-6) == pytest.approx(eps, rel=1e-15)
            assert "Lyu" in g.statement and "Section 4.4" in g.statement
            # Each round is EM with weight w: (2wΔ)-DP, (wΔ)-DP for monotonic quality
            # (McSherry & Talwar 2007); c rounds compose. w must be ε/(2cΔ) (ε/(cΔ)).
            w = float(mech.weight())
            per_round = (1.0 if monotonic else 2.0) * w * SENSITIVITY
            assert c * per_round == pytest.approx(eps, rel=1e-13)
            assert w == pytest.approx(paper_scale("em-peeling", {
                "epsilon": eps, "c": c, "sensitivity": SENSITIVITY,
                "monotonic": monotonic}) ** -1, rel=1e-13)
            np.testing.assert_allclose(np.asarray(mech.privacy().rdp(ORDERS)),
                                       accounting.pure_dp_rdp(eps, ORDERS), rtol=0, atol=0)
            assert float(mech.pick_cost()) == pytest.approx(eps / c, rel=1e-15)
    _assert_pick_cost("em-peeling", "c", monotonic=monotonic)


@pytest.mark.parametrize("monotonic", [False, True], ids=["general", "monotonic"])
@pytest.mark.parametrize("noise", ["laplace", "gumbel", "exponential"])
def test_report_noisy_max_privacy(noise, monotonic):
    for eps in EPSILONS:
        for k in PICKS:
            mech = svtjax.get("report-noisy-max", epsilon=eps, k=k, sensitivity=SENSITIVITY,
                              monotonic=monotonic, noise=noise)
            b = float(mech.scale())
            # The scale the papers calibrate: 2kΔ/ε, or kΔ/ε for monotonic scores.
            assert b == pytest.approx((1 if monotonic else 2) * k * SENSITIVITY / eps, rel=1e-14)
            g = mech.privacy()
            assert float(mech.pick_cost()) == pytest.approx(eps / k, rel=1e-15)
            if noise == "exponential" and k > 1:
                assert isinstance(g, Unproven) and not g.private
                assert g.epsilon() == math.inf and g.epsilon(delta=0.1) == math.inf
                assert np.all(np.isinf(g.rdp(ORDERS)))
                assert g.nominal == pytest.approx(eps)
                assert "no pure-DP guarantee" in g.statement
                assert str(g).startswith("no proved guarantee")
                continue
            assert isinstance(g, PureDP) and g.private
            assert g.epsilon() == pytest.approx(eps, rel=1e-15)
            if noise == "laplace":
                # Ding'19 Thm 2: Lap(2k/ε) on sensitivity-1 queries is ε-DP, ε/2-DP on counting
                # queries; with scores/Δ: ε = 2kΔ/b (kΔ/b monotonic).
                assert "Ding" in g.statement and re.search(r"\bTheorem 2\b", g.statement)
            elif noise == "gumbel":
                assert "Durfee & Rogers" in g.statement and "McSherry" in g.statement
            else:
                assert "McKenna & Sheldon" in g.statement and "permute-and-flip" in g.statement
            derived = (1 if monotonic else 2) * k * SENSITIVITY / b
            assert derived == pytest.approx(eps, rel=1e-13)
            np.testing.assert_allclose(g.rdp(ORDERS), accounting.pure_dp_rdp(eps, ORDERS),
                                       rtol=0, atol=0)
    _assert_pick_cost("report-noisy-max", "k", monotonic=monotonic, noise=noise)


def _neighbours(n, delta, monotonic):
    """Score shifts d with q' = q + d: every vertex of [-Δ, Δ]^n, or of [0, Δ]^n and [-Δ, 0]^n."""
    if monotonic:
        return ([np.array(v) for v in itertools.product((0.0, delta), repeat=n)]
                + [-np.array(v) for v in itertools.product((0.0, delta), repeat=n)])
    return [np.array(v) for v in itertools.product((-delta, 0.0, delta), repeat=n)]


def _max_log_ratio(name, params, q, shifts) -> float:
    base = law(name, params, q)
    worst = 0.0
    for d in shifts:
        other = law(name, params, q + d)
        worst = max(worst, max(abs(math.log(base[t] / other[t])) for t in base))
    return worst


AUDITS = [
    ("em-peeling", {"epsilon": 1.0, "c": 2, "sensitivity": 1.5}),
    ("em-peeling", {"epsilon": 1.0, "c": 2, "monotonic": True}),
    ("report-noisy-max", {"epsilon": 1.0, "k": 1}),
    ("report-noisy-max", {"epsilon": 1.0, "k": 1, "monotonic": True}),
    ("report-noisy-max", {"epsilon": 1.0, "k": 2, "sensitivity": 0.5}),
    ("report-noisy-max", {"epsilon": 1.0, "k": 2, "monotonic": True}),
    ("report-noisy-max", {"epsilon": 1.0, "k": 1, "noise": "exponential"}),
    ("report-noisy-max", {"epsilon": 1.0, "k": 1, "noise": "exponential", "monotonic": True}),
]


@pytest.mark.parametrize("name,params", AUDITS,
                         ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in p.items())}"
                              for n, p in AUDITS])
def test_exact_output_laws_of_neighbours_within_e_eps(name, params):
    """The proven ε bounds every likelihood ratio of neighbouring inputs (exact laws, n = 3)."""
    mech = svtjax.get(name, **params)
    eps = mech.privacy().epsilon()
    delta = params.get("sensitivity", 1.0)
    shifts = _neighbours(3, delta, params.get("monotonic", False))
    worst = max(_max_log_ratio(name, params, q, shifts)
                for q in (np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.7, 2.0]) * delta))
    print(f"{name} {params}: max |log ratio| = {worst:.6f} (ε = {eps})")
    assert worst <= eps * (1 + 1e-4), (worst, eps)
    if params.get("noise") == "exponential" and params.get("monotonic"):
        # Tight: q = (0, 0, 0) vs (Δ, 0, 0); item 2's probability drops by exactly e^{-ε}.
        assert worst == pytest.approx(eps, rel=1e-4)


def test_audit_detects_the_monotonic_scale_on_general_queries():
    """The audit has teeth: Lap(kΔ/ε) (the monotonic scale) on non-monotonic neighbours."""
    params = {"epsilon": 1.0, "k": 1, "monotonic": True}
    worst = _max_log_ratio("report-noisy-max", params, np.zeros(3),
                           _neighbours(3, 1.0, monotonic=False))
    assert worst > 1.2, worst  # n = 2 analogue: 2ε − log(1 + ε) = 1.31 for ε = 1

