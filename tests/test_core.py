"""The public surface and ``selected``."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import svtjax
from svtjax import Outcome
from svtjax.mechanisms.base import bounded_uniform


def test_public_surface_imports():
    for name in svtjax.__all__:
        assert getattr(svtjax, name) is not None, name
    for module in ("noise", "budget", "accounting", "mechanisms", "metrics", "datasets",
                   "reference", "simulate", "cli"):
        importlib.import_module(f"svtjax.{module}")
    assert svtjax.names() == svtjax.mechanisms.names()
    for name in ("lyu-alg1", "dpbook", "roth11", "lee-clifton", "stoddard", "chen", "svt-s"):
        assert name in svtjax.names()


def _outcome(answers, items):
    """An Outcome of host arrays (built in numpy: no program per shape). The readers under test
    take their fields through ``jnp.asarray``, as they take the engine's device arrays."""
    answers = np.asarray(answers, np.int8)
    return Outcome(answers, np.asarray(items, np.int32), np.full(answers.shape, np.nan),
                   np.zeros(answers.shape))


def test_selected_in_stream_order_padded():
    out = _outcome([0, 1, 0, 1, 1, -1], [4, 2, 0, 5, 1, -1])
    np.testing.assert_array_equal(svtjax.selected(out, 2), [2, 5])
    np.testing.assert_array_equal(svtjax.selected(out, 5), [2, 5, 1, -1, -1])
    none = _outcome([0, 0, -1], [1, 0, -1])
    np.testing.assert_array_equal(svtjax.selected(none, 3), [-1, -1, -1])


def test_selected_batched():
    out = _outcome([[[1, 0, 1]], [[0, 0, 1]]], [[[7, 8, 9]], [[9, 7, 8]]])
    got = svtjax.selected(out, 2)
    assert got.shape == (2, 1, 2)
    np.testing.assert_array_equal(got[:, 0], [[7, 9], [8, -1]])


def test_outcome_types_from_simulate():
    # tests/test_simulate.py's run of test_trial_t_uses_fold_in_of_seed (svt-s with released
    # values on its 130 Zipf scores at threshold 10, 17 trials, seed 11): the same compiled program
    mech = svtjax.get("svt-s", epsilon=0.7, c=3, eps3=0.2)
    out = svtjax.simulate(mech, 100.0 / np.arange(1, 131), 10.0, trials=17, seed=11)
    assert out.answers.dtype == jnp.int8 and out.items.dtype == jnp.int32
    assert out.answers.shape == out.items.shape == out.values.shape == out.cost.shape == (17, 130)
    answered = np.asarray(out.answers) == 1
    assert answered.any() and not answered.all()
    assert np.all(np.isnan(np.asarray(out.values)[~answered]))
    assert np.all(np.isfinite(np.asarray(out.values)[answered]))
    np.testing.assert_allclose(np.asarray(out.cost)[answered], (mech.budgets()[1] + 0.2) / 3)


def test_prefix_counts_stop_at_the_first_unevaluated_position():
    out = _outcome([[1, 0, 1, -1, 1, 0], [0, 0, 0, 0, 0, 0], [-1, 1, 1, 1, 1, 1]],
                   [[0] * 6] * 3)
    evaluated, tops = svtjax.prefix_counts(out)
    np.testing.assert_array_equal(evaluated, [3, 6, 0])
    np.testing.assert_array_equal(tops, [2, 0, 0])


@pytest.mark.parametrize("length", [5, 256, 700])
def test_prefix_counts_equal_totals_on_prefix_streams(length):
    """Random prefix-shaped rows (as single-pass SVT outcomes are), several blocks long and with
    a batch axis: the early-exit read equals the full sums."""
    rng = np.random.default_rng(length)
    halt = rng.integers(0, length + 1, (3, 40))
    answers = rng.integers(0, 2, (3, 40, length)).astype(np.int8)
    answers[np.arange(length)[None, None, :] >= halt[..., None]] = -1
    evaluated, tops = svtjax.prefix_counts(_outcome(answers, np.zeros_like(answers, np.int32)))
    np.testing.assert_array_equal(evaluated, (answers >= 0).sum(-1))
    np.testing.assert_array_equal(tops, (answers == 1).sum(-1))


def test_prefix_counts_of_simulated_svt_are_the_totals():
    # The shapes (300 float64 queries, a scalar threshold, one chunk of 160 trials, in order and
    # shuffled) and the structure (svt-s, c = 3) of the chunks whose kernels
    # tests/test_rng.py::test_block_draws_are_hashed_once_per_block_on_cpu counts: the same
    # compiled programs.
    mech = svtjax.get("svt-s", epsilon=0.5, c=3)
    q = np.random.default_rng(0).normal(0.0, 3.0, 300)
    for shuffle, trials in ((False, 160), (True, 160)):
        out = svtjax.simulate(mech, q, 2.0, trials=trials, shuffle=shuffle)
        evaluated, tops = svtjax.prefix_counts(out)
        np.testing.assert_array_equal(evaluated, (np.asarray(out.answers) >= 0).sum(1))
        np.testing.assert_array_equal(tops, (np.asarray(out.answers) == 1).sum(1))


BOUNDED_DRAWS = 300_000
"""Spans per ``bounded_uniform`` call in both tests of it: one shape, one compiled program."""


_BOUNDED_UNIFORM = jax.jit(bounded_uniform)
"""``bounded_uniform`` jitted as the engine runs it; one wrapper, so one program per shape."""


def _lemire_reference(key, span):
    """Lemire's multiply-and-reject in Python integers, from the words ``bounded_uniform``
    reads: attempt 0 from ``key``, attempt r from ``fold_in(key, r)`` (``jax.random``'s words,
    both kinds of attempt in one compiled program)."""

    @jax.jit
    def words(key, attempt):
        folded = jax.random.key_data(jax.random.fold_in(key, attempt))
        k = jax.random.wrap_key_data(jnp.where(attempt == 0, jax.random.key_data(key), folded),
                                     impl=jax.random.key_impl(key))
        return jax.random.bits(k, (len(span),), jnp.uint32)

    span = [int(s) for s in span]
    value, pending, attempt = [None] * len(span), set(range(len(span))), 0
    while pending:
        w = np.asarray(words(key, np.uint32(attempt))).tolist()
        for i in sorted(pending):
            m = w[i] * span[i]
            if m % 2**32 >= 2**32 % span[i]:
                value[i] = m >> 32
                pending.discard(i)
        attempt += 1
    return np.array(value), attempt


def test_bounded_uniform_is_lemires_method():
    """Fisher–Yates swap indices: the high word of X·span for 32-bit words X, rejecting X whose
    low word is below 2**32 mod span and retrying with the next word, checked against Python
    integers with spans up to 2**31 - 1. Spans just above 2**31 / 1.5 and 2**30 reject about a
    third and a quarter of the words, so the retry path (several rounds) is exercised. (The
    spans are padded with random ones to the shape of test_bounded_uniform_frequencies.)"""

    rng = np.random.default_rng(0)
    span = np.concatenate([[1, 2, 3, 2**31 - 1], rng.integers(1, 2**31, 2000),
                           np.full(300, 2**31 // 3 * 2 + 1), np.full(300, 2**30 + 1)])
    span = np.concatenate([span, rng.integers(1, 2**31, BOUNDED_DRAWS - span.size)])
    span = span.astype(np.int32)
    key = jax.random.key(5)
    got = np.asarray(_BOUNDED_UNIFORM(key, span))
    want, attempts = _lemire_reference(key, span)
    assert attempts >= 3  # rejected words were redrawn, some more than once
    np.testing.assert_array_equal(got, want)
    assert np.all((got >= 0) & (got < span))


def test_bounded_uniform_is_exactly_uniform_over_all_words():
    """Exactness, not just closeness: over all 2**32 words (here all 2**16 words of a 16-bit
    analogue of the same arithmetic), every accepted value is hit equally often."""
    for span in (3, 7, 1000, 40_000, 65_535):
        x = np.arange(2**16, dtype=np.uint64)
        m = x * span
        keep = (m % 2**16) >= (2**16 % span)
        counts = np.bincount((m[keep] >> 16).astype(np.int64), minlength=span)
        assert counts.shape == (span,)
        assert np.all(counts == counts[0]), span


def test_bounded_uniform_frequencies():
    from scipy import stats

    for span in (6, 7, 1000):  # one program for the three spans and the test above
        draws = np.asarray(_BOUNDED_UNIFORM(jax.random.key(span),
                                            np.full(BOUNDED_DRAWS, span, np.int32)))
        counts = np.bincount(draws, minlength=span)
        assert counts.shape == (span,)
        assert stats.chisquare(counts).pvalue > 1e-5, span


def test_items_stored_only_where_evaluated():
    """A compact Outcome whose stored items (int16, as the engine's permutations) are meaningful
    only where something was evaluated reads as int32 items with -1 elsewhere, through every
    accessor, a pytree round trip and ``_replace``; ``selected`` and the metrics read the
    stored items at ⊤ only."""

    answers = np.array([[1, 0, 1, -1, -1], [0, 1, -1, -1, -1]], np.int8)
    stored = np.array([[4, 2, 0, 3, 1], [1, 3, 0, 2, 4]], np.int16)  # past the halt: stale
    out = Outcome.compact(jnp.asarray(answers), n=5, dtype="float32", items=jnp.asarray(stored),
                          top_cost=jnp.zeros(2), items_evaluated_only=True)
    want = np.array([[4, 2, 0, -1, -1], [1, 3, -1, -1, -1]], np.int32)
    for got in (out.items, out.stored_items, out[1], out._asdict()["items"],
                jax.tree_util.tree_map(lambda x: x, out).items,
                jax.device_get(out).items, out._replace(cost=jnp.zeros((2, 5))).items):
        assert np.asarray(got).dtype == np.int32
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(svtjax.selected(out, 3), [[4, 0, -1], [3, -1, -1]])
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    m = svtjax.metrics.evaluate_outcome(out, scores, 2)
    full = Outcome(*(np.asarray(x) for x in out))  # the same Outcome, every field stored
    for name, value in svtjax.metrics.evaluate_outcome(full, scores, 2).items():
        np.testing.assert_array_equal(m[name], value, err_msg=name)
    np.testing.assert_array_equal(m["picks"], [2, 1])


def compiles(fn, *args):
    """``(fn(*args), the number of XLA programs compiled during the call)``."""
    from jax._src import monitoring

    compiled = []

    def listen(event, duration, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(event)

    monitoring.register_event_duration_secs_listener(listen)
    try:
        return fn(*args), len(compiled)
    finally:
        monitoring.unregister_event_duration_listener(listen)


def test_derived_fields_compile_one_program_each():
    """A compact Outcome of JAX arrays derives each field it does not store in one compiled
    program (per field and shape; one operation at a time compiled four or five), with the
    numbers of the same Outcome on numpy arrays."""
    answers = np.array([[1, 0, -1, 1, 0, 1, -1, -1, 0, 1, 1],
                        [0, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1],
                        [-1] * 11], np.int8)  # a shape no other test reads these fields at
    top = np.array([0.5, 0.25, 0.125], np.float32)
    stored = np.arange(33, dtype=np.int16).reshape(3, 11) % 7
    for items in (None, stored):
        host = Outcome.compact(answers, n=4, dtype=np.float32, top_cost=top, items=items,
                               items_evaluated_only=items is not None)
        dev = Outcome.compact(jnp.asarray(answers), n=4, dtype=np.float32, top_cost=top,
                              items=None if items is None else jnp.asarray(items),
                              items_evaluated_only=items is not None)
        for field in ("items", "values", "cost"):
            value, count = compiles(getattr, dev, field)
            assert count <= 1, (field, count)
            assert isinstance(value, jax.Array) and value.dtype == getattr(host, field).dtype
            np.testing.assert_array_equal(value, getattr(host, field), err_msg=field)


def test_host_inputs_reach_the_device_without_compiling():
    """A mechanism's inputs given as host arrays are converted in numpy and stay numpy arrays
    (no small program compiled per input shape; the compiled call that takes them transfers
    them itself, cheaper than a device_put each: benchmarks/RESULTS.md), with the dtypes
    jnp.asarray gives them: integer queries as the default float, per-query or scalar
    thresholds in the queries' dtype."""
    prepare = svtjax.mechanisms.base.Mechanism._prepare
    cases = [(np.arange(13, dtype=np.int64), 2), (np.linspace(0, 1, 17, dtype=np.float32), 0.25),
             (np.linspace(0, 1, 19), np.arange(19) % 3), ([1.0, 2.0, 3.5], [0.5, 1.0, 9.0])]
    for queries, thresholds in cases:
        (q, t), count = compiles(prepare, queries, thresholds)
        assert count == 0, queries
        assert isinstance(q, np.ndarray) and isinstance(t, np.ndarray)
        want = jnp.asarray(queries)
        if not jnp.issubdtype(want.dtype, jnp.floating):
            want = want.astype(jnp.float64)
        assert q.dtype == want.dtype and t.dtype == want.dtype and t.shape == q.shape
        np.testing.assert_array_equal(q, want)
        np.testing.assert_array_equal(
            t, np.broadcast_to(np.asarray(thresholds, want.dtype), q.shape))
    # A metric of host arrays compiles the metric alone (at most: it may be cached already).
    selected = np.array([[0, 5, -1, 2, 7], [1, 2, 3, 4, 36], [-1, -1, -1, -1, -1]])
    scores = np.arange(37.0)[::-1]
    f1, count = compiles(svtjax.metrics.f1, selected, scores, 5)
    assert count <= 1
    np.testing.assert_allclose(f1, [4 / 9, 0.8, 0.0])  # 2 of 4 picks in the top 5; 4 of 5
