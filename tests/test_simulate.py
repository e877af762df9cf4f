"""``simulate``: per-trial keys, chunk/device invariance, one compile per structure, reducers,
and the per-trial random order."""

import dataclasses
import functools
import importlib
import math
import subprocess
import sys
import textwrap
from itertools import permutations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import svtjax
from svtjax import _driver
from tests.conftest import subprocess_env

simulate_module = importlib.import_module("svtjax.simulate")

N = 130
ZIPF = 100.0 / np.arange(1, N + 1)
# The file's shapes, shared by most tests so that they share compiled programs: svt-s with
# released values (the block form, a numeric answer per ⊤) on ZIPF (float64) at a scalar
# threshold of 10; a chunk of ONE = 17 trials is tests/test_bit_identity.py's program (its
# stream length, trials and dtype, and the structure of its svt-s-eps3 and dpbook cases), and
# runs of TRIALS = 130 trials go in chunks of 17 (never compacting, the last padded: 130 =
# 7 x 17 + 11) or in one chunk of 256 (compacting at 256/32, mostly padding).
CANON = dict(epsilon=1.0, c=4, eps3=0.2)
ONE = 17
TRIALS = 130
BIG = 256


def _assert_same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("name,params", [
    ("svt-s", CANON),  # the block form, with released values
    ("dpbook", dict(epsilon=1.0, c=3)),  # no block form: the per-position scan
])
def test_chunk_size_does_not_change_outcomes(name, params):
    """Chunks change no Outcome, in a fixed order and shuffled: 130 trials in chunks of 17 (which
    never compact, svtjax._loops.bucket_sizes; the last is padded, 130 = 7 x 17 + 11) and in
    one chunk of 256, larger than the run, which compacts (levels 256/32) and is mostly
    padding; and the first 17 trials run alone (in one chunk of 17, the same program) are the
    first chunk's. The chunk of 17 is tests/test_bit_identity.py's program, the chunk of 256
    svt-s's that of the trial-group tests (shuffled) and of the compaction-factor test."""
    mech = svtjax.get(name, **params)
    for shuffle in (False, True):
        run = functools.partial(svtjax.simulate, mech, ZIPF, 10.0, seed=3, shuffle=shuffle)
        small, whole = run(trials=TRIALS, chunk_size=ONE), run(trials=TRIALS, chunk_size=BIG)
        assert whole.answers.shape == (TRIALS, N)
        _assert_same(small, whole)
        alone = run(trials=ONE)
        assert alone.answers.shape == (ONE, N)
        _assert_same(alone, jax.tree_util.tree_map(lambda x: np.asarray(x)[:ONE], whole))


def test_the_compaction_factor_changes_no_number(monkeypatch):
    """The engine's compaction factor (``svtjax.engine.COMPACTION``, per platform) reaches the
    trace of ``simulate``'s chunk (in its plan, the one static argument: each factor its own
    program) and changes no number, in a fixed order and shuffled: 130 trials in the file's
    chunk of 256 compact as 256/32 at the CPU's factor 8, and their first 33 trials, run alone,
    as 33/17 at 2 (at 8 a chunk of 33 would not compact; each trial's numbers depend on its
    index only: test_trial_t_uses_fold_in_of_seed). (A run that never compacts gives the same
    numbers too: test_chunk_size_does_not_change_outcomes's chunks of 17.)"""
    from svtjax import _loops
    from svtjax import engine as _engine

    seen = []
    sizes = _loops.bucket_sizes
    monkeypatch.setattr(_loops, "bucket_sizes", lambda b, f=8, **kw: (seen.append((b, f)),
                                                                      sizes(b, f, **kw))[1])
    mech = svtjax.get("svt-s", **CANON)
    default = _engine.COMPACTION["cpu"]
    for shuffle in (False, True):
        monkeypatch.setitem(_engine.COMPACTION, "cpu", default)
        base = svtjax.simulate(mech, ZIPF, 10.0, trials=TRIALS, seed=3, shuffle=shuffle,
                               chunk_size=BIG)
        monkeypatch.setitem(_engine.COMPACTION, "cpu", 2)
        assert _engine.compaction_factor() == 2
        seen.clear()
        head = jax.tree_util.tree_map(lambda x: np.asarray(x)[:33], base)
        _assert_same(head, svtjax.simulate(mech, ZIPF, 10.0, trials=33, seed=3,
                                           shuffle=shuffle))
        assert (33, 2) in seen and sizes(33, 2) == [33, 17] and sizes(33, default) == [33]
    with pytest.raises(ValueError, match="integer >= 2"):
        dataclasses.replace(_engine.resolve(), compaction=1)


def test_trial_t_uses_fold_in_of_seed():
    # 17 trials: the chunk of 17 of test_chunk_size_does_not_change_outcomes; the one-trial call
    # is test_vmap_over_a_stacked_batch_of_mechanisms's
    mech = svtjax.get("svt-s", epsilon=0.7, c=3, eps3=0.2)
    out = svtjax.simulate(mech, ZIPF, 10.0, trials=ONE, seed=11)
    for t in (0, ONE - 1):
        one = mech(jax.random.fold_in(jax.random.key(11), t), ZIPF, 10.0)
        _assert_same(jax.tree_util.tree_map(lambda x: np.asarray(x)[t], out), one)
    other = svtjax.simulate(mech, ZIPF, 10.0, trials=ONE, seed=12)
    assert not np.array_equal(np.asarray(out.answers), np.asarray(other.answers))


_SHARDED = textwrap.dedent("""
    import jax, numpy as np, svtjax
    jax.config.update("jax_enable_x64", True)
    assert len(jax.devices()) == 4, jax.devices()
    q = 100.0 / np.arange(1, 131)
    out = {}
    for shuffle in (False, True):
        mech = svtjax.get("svt-s", epsilon=1.0, c=4, eps3=0.2)
        o = svtjax.simulate(mech, q, 10.0, trials=130, seed=5, shuffle=shuffle, chunk_size=12)
        for f in o._fields:
            out[f"{f}_{shuffle}"] = np.asarray(getattr(o, f))
    np.savez(OUT, **out)
""")


def test_sharded_over_four_cpu_devices_is_bit_identical(tmp_path):
    path = tmp_path / "sharded.npz"
    # the tests' compilation cache (keyed by XLA_FLAGS too): the child loads its programs
    env = subprocess_env(XLA_FLAGS="--xla_force_host_platform_device_count=4")
    subprocess.run([sys.executable, "-c", f"OUT = {str(path)!r}\n" + _SHARDED], check=True,
                   env=env, timeout=600)
    got = np.load(path)
    mech = svtjax.get("svt-s", **CANON)  # here: the file's programs of the chunk of 256
    for shuffle in (False, True):
        here = svtjax.simulate(mech, ZIPF, 10.0, trials=TRIALS, seed=5, shuffle=shuffle,
                               chunk_size=BIG, num_devices=1)
        for f in here._fields:
            np.testing.assert_array_equal(got[f"{f}_{shuffle}"], np.asarray(getattr(here, f)))


def test_sweep_of_20_epsilons_by_3_cutoffs_compiles_once():
    q = 50.0 / np.arange(1, 38)  # a shape no other test uses: the first call compiles
    before = _driver.run_chunk._cache_size()
    for c in (1, 3, 5):  # c is a traced leaf, like epsilon
        for eps in np.linspace(0.1, 2.0, 20):
            mech = svtjax.get("svt-s", epsilon=float(eps), c=c, monotonic=True)
            svtjax.simulate(mech, q, 5.0, trials=20)
    assert _driver.run_chunk._cache_size() - before == 1
    # a structural change (monotonic) does compile again
    svtjax.simulate(svtjax.get("svt-s", epsilon=0.5, c=3), q, 5.0, trials=20)
    assert _driver.run_chunk._cache_size() - before == 2


def test_vmap_over_a_stacked_batch_of_mechanisms():
    mechs = [svtjax.get("svt-s", epsilon=e, c=c, eps3=0.2) for e, c in
             [(0.3, 1), (1.0, 2), (2.0, 4)]]
    # stacked and sliced in numpy, vmapped under jit: a jax.numpy operation outside jit is a
    # program of its own
    stacked = jax.tree_util.tree_map(lambda *x: np.stack(x), *mechs)
    key = jax.random.key(2)
    batched = jax.jit(jax.vmap(lambda m: m(key, ZIPF, 10.0)))(stacked)
    for i, m in enumerate(mechs):
        _assert_same(jax.tree_util.tree_map(lambda x: np.asarray(x)[i], batched),
                     m(key, ZIPF, 10.0))


def _counts(out):
    """A reducer's per-trial integers: positions evaluated, ⊤ answers and their square (a value
    that is not linear in the Outcome). The file's reduced runs share it, and so their
    programs."""
    tops = jnp.sum(out.answers == 1, axis=-1)
    return jnp.sum(out.answers >= 0, axis=-1), tops, tops * tops


def test_reduce_sums_per_trial_values_inside_chunks():
    """300 trials in chunks of 256, in random orders (the reducer sees Outcomes, whatever their
    order): the reduced run's sums over its two chunks (the second holds 44 trials and 212 of
    padding, masked) are the sums of the 300 trials' Outcomes (the same chunks' Outcomes). The
    programs of the chunk of 256, Outcomes and sums, are those of
    test_shuffled_trial_groups_change_no_number, whose 200 trials in one chunk of 256 check a
    run of one chunk. At c = 40 the trials' ⊤ counts differ (some trials reach the end of the
    stream), so the squares' sum is not the square of a sum."""
    mech = svtjax.get("svt-s", epsilon=1.0, c=40, eps3=0.2)
    q, t = mech._prepare(ZIPF, 10.0)
    plan = _driver.plan(mech, N, 300, shuffle=True, itemsize=8, chunk_size=BIG)
    # the chunks' Outcomes (the chunk loop of simulate, without joining them: each join is a
    # small program of its own), padding dropped
    answers = np.concatenate([np.asarray(out.answers)[:300 - start] for start, out in
                              _driver.chunks(plan, mech, q, t, simulate_module.seed_key(1), 300)])
    assert answers.shape == (300, N)
    tops = np.sum(answers == 1, axis=1)
    want = [np.sum(answers >= 0), tops.sum(), (tops ** 2).sum()]
    assert len(set(tops)) > 1 and len(set(tops[256:])) > 1  # trials differ, in both chunks
    sums = svtjax.simulate(mech, ZIPF, 10.0, trials=300, seed=1, shuffle=True, chunk_size=BIG,
                           reduce=_counts)
    np.testing.assert_array_equal(np.asarray(sums), want)


def test_shuffled_trial_groups_change_no_number(monkeypatch):
    """A reduced shuffled chunk run in groups (``shuffle_groups``) gives every trial the numbers
    it gets ungrouped: per-trial values (``mode="values"``, with each trial's index), against
    the same values computed in numpy from each trial's ungrouped Outcome, and ``simulate``'s
    sums (``mode="sum"``, the padded trials of its one chunk of 256 masked)."""
    mech = svtjax.get("svt-s", **CANON)
    root = simulate_module.seed_key(11)

    def per_trial(out, ctx):  # mode "values": the trials on the last axis, as a sweep's
        pos = jnp.arange(out.answers.shape[-1])
        evaluated = jnp.sum(out.answers >= 0, axis=-1)
        return {"evaluated": evaluated,
                "items": jnp.sum(jnp.where(out.answers == 1, (out.items + 1) * (pos + 1), 0),
                                 axis=-1),
                "trial": ctx.index,
                "rows": jnp.stack([ctx.index, evaluated])}  # [2, trials]

    # the ungrouped numbers: the Outcomes of the same 256 trials (seed_key(11)) in one ungrouped
    # chunk of 256 (test_chunk_size_does_not_change_outcomes's program), reduced in numpy
    whole = svtjax.simulate(mech, ZIPF, 10.0, trials=256, seed=11, shuffle=True, chunk_size=256)
    answers, items = np.asarray(whole.answers), np.asarray(whole.items)
    evaluated = np.sum(answers >= 0, axis=-1)
    want = {"evaluated": evaluated,
            "items": np.sum(np.where(answers == 1, (items + 1) * (np.arange(N) + 1), 0), axis=-1),
            "trial": np.arange(256), "rows": np.stack([np.arange(256), evaluated])}
    assert evaluated.min() < N and len(set(evaluated)) > 1  # trials halt at different positions
    grouped = _driver.run_chunk(mech, ZIPF, np.full(N, 10.0), root, 0, 256,
                                jax.tree_util.Partial(per_trial),
                                plan=_driver.Plan(chunk=256, shuffle=True, mode="values",
                                                  groups=4))
    assert set(grouped) == set(want)
    for name, values in want.items():
        np.testing.assert_array_equal(np.asarray(grouped[name]), values, err_msg=name)

    # mode "sum": 200 trials in one chunk of 256, 56 of them padding (the Outcomes: the first
    # 200 trials of 256, test_chunk_size_does_not_change_outcomes's program of 256)
    run = functools.partial(svtjax.simulate, mech, ZIPF, 10.0, trials=200, seed=4, shuffle=True,
                            chunk_size=256)
    answers = np.asarray(run(trials=256).answers)[:200]
    tops = np.sum(answers == 1, axis=-1)
    ungrouped = run(reduce=_counts)
    np.testing.assert_array_equal(np.asarray(ungrouped),
                                  [np.sum(answers >= 0), tops.sum(), (tops ** 2).sum()])
    monkeypatch.setattr(_driver, "SHUFFLE_GROUP_BYTES", 1)
    assert _driver.shuffle_groups(mech, N, 256) == 2  # groups of the 128-trial minimum
    _assert_same(ungrouped, run(reduce=_counts))


def test_shuffle_groups_are_equal_cache_sized_small_trials_and_cpu_only(monkeypatch):
    mech = svtjax.get("svt-s", epsilon=1.0, c=5)
    groups = _driver.shuffle_groups
    monkeypatch.setattr(_driver, "SHUFFLE_GROUP_BYTES", 4 * 2**20)
    monkeypatch.setattr(_driver, "GROUP_TRIAL_BYTES", 16 * 2**10)
    # n = 10^4: the order adds an int16 permutation (10,048 entries; with the compiled block
    # the trials' items are read from it, without it an int32 items buffer of 10^4 too), and a
    # trial's working set (32 KiB; 76 KiB) is above the bound: not grouped
    size = functools.partial(svtjax.engine.working_bytes, mech, 10_000, 4)
    extra = size(True) - size(False)
    items = 0 if svtjax._native.fisher_yates_target() else 10_000 * 4
    assert extra == 10_048 * 2 + items * 9 // 8  # buffers: 1/8 more for the compaction
    assert size(True) > 16 * 2**10
    assert groups(mech, 10_000, 1000) == 1
    # n = 10^3: 4 KiB a trial (8 KiB), of which the order 2 KiB (6 KiB): 2,048 trials a group
    # (699), so 10^4 trials go in the nearest count of equal groups of >= 128: 5 x 2000
    # (16 x 625)
    assert groups(mech, 1_000, 10_000) == (5 if not items else 16)
    # the points share the budget: 20 x 500 (50 x 200)
    assert groups(mech, 1_000, 10_000, points=4) == (20 if not items else 50)
    assert groups(mech, 1_000, 128) == 1  # the minimum group
    assert groups(mech, 1_000, 10_007) == 1  # a prime: no equal groups
    monkeypatch.setattr(_driver, "SHUFFLE_GROUP_BYTES", 2**20)  # 499 (172) a group
    assert groups(mech, 1_000, 1000) == (2 if not items else 5)
    # a mechanism whose random order adds no working memory is not grouped
    assert groups(svtjax.get("report-noisy-max", epsilon=1.0, k=5), 1_000, 10_000) == 1
    monkeypatch.setattr(_driver, "GROUP_TRIAL_BYTES", 2**20)  # a larger bound
    monkeypatch.setattr(_driver, "SHUFFLE_GROUP_BYTES", 4 * 2**20)
    assert groups(mech, 10_000, 1000) == 5
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert groups(mech, 1_000, 10_000) == 1


def test_shuffled_outcomes_in_groups_are_the_ungrouped_outcomes(monkeypatch):
    """A chunk returning full Outcomes (no ``reduce``) run in groups gives every trial the
    Outcome it gets ungrouped, field by field, through ``run_chunk`` and ``simulate``, in 2
    groups of the 128-trial minimum (one program for both; more groups than two:
    test_shuffled_trial_groups_change_no_number's 4). The ungrouped chunk of 256 is
    test_chunk_size_does_not_change_outcomes's program."""
    mech = svtjax.get("svt-s", **CANON)
    ungrouped = svtjax.simulate(mech, ZIPF, 10.0, trials=256, seed=12, shuffle=True)
    answers = np.asarray(ungrouped.answers)
    assert answers.shape[0] == 256
    assert (answers >= 0).sum(axis=1).min() < N  # early halts
    plan = _driver.plan(mech, N, 256, shuffle=True)
    assert (plan.chunk, plan.groups) == (256, 1)
    q, t = mech._prepare(ZIPF, 10.0)
    two = _driver.run_chunk(mech, q, t, simulate_module.seed_key(12), 0, 256, None, None,
                            plan=dataclasses.replace(plan, groups=2))
    # field by field (a stored items array past a trial's halt is not part of the Outcome)
    _assert_same(ungrouped, two)
    monkeypatch.setattr(_driver, "SHUFFLE_GROUP_BYTES", 1)
    assert _driver.shuffle_groups(mech, N, 256) == 2
    _assert_same(ungrouped, svtjax.simulate(mech, ZIPF, 10.0, trials=256, seed=12,
                                            shuffle=True))


def test_shuffle_gives_uniform_orders():
    """With no cut-off every position is evaluated, so items[t] is trial t's whole order: all
    n! orders must be equally likely (chi-square, p > 1e-4 for a correct shuffle)."""
    n, trials = 4, 48_000
    mech = svtjax.get("chen", epsilon=1.0)
    out = svtjax.simulate(mech, np.arange(n, dtype=float), 1.0, trials=trials, seed=9,
                          shuffle=True)
    items = np.asarray(out.items)
    assert np.all(np.sort(items, axis=1) == np.arange(n))
    codes = {p: i for i, p in enumerate(permutations(range(n)))}
    counts = np.bincount([codes[tuple(r)] for r in items], minlength=math.factorial(n))
    p = stats.chisquare(counts).pvalue
    assert p > 1e-4, (counts, p)


def test_shuffle_order_is_a_prefix_of_the_full_permutation():
    """Early exit reads only the swaps it needs: the visited items equal the full shuffle's."""
    mech = svtjax.get("svt-s", epsilon=1.0, c=2, monotonic=True)
    q = np.linspace(0, 10, 700)
    key = jax.random.key(4)
    draws = mech.draw(key, q.shape[0], shuffle=True)
    full_order = svtjax.reference.stream_order(svtjax.mechanisms.to_numpy_draws(draws),
                                               q.shape[0])
    out = mech.decide(draws, q, 9.0)
    reached = np.asarray(out.answers) >= 0
    assert reached.sum() < q.shape[0]  # it halted early
    np.testing.assert_array_equal(np.asarray(out.items)[reached], full_order[reached])


def test_fisher_yates_kernels_match_the_reference_shuffle():
    """The block Fisher–Yates kernels (the compiled one where it runs, flat addressing, and the
    (position, trial) one used for permutations of 2**32 entries or more) give every trial the
    reference's order, block after block with the pending write carried across blocks, on one
    stream of n = 130 (three blocks): swap partners collide within a block (two positions of a
    block swap with the same partner, a position swaps with a later one of its block) and its
    last block has padded positions; the partners are checked to do so. (A stream of one padded
    block, n = 9, is tests/test_equivalence.py's test_kernel_matches_reference_shuffled,
    through the engine's default kernel.)"""
    from svtjax import engine
    from svtjax.engine import shuffle as engine_shuffle
    from svtjax.mechanisms.base import BLOCK, block_order, num_blocks, stream_key, stream_order

    batch, n = 5, 130

    @functools.partial(jax.jit, static_argnums=(0, 1))
    def blocks(kernel, layout):
        # One program per (kernel, layout): the blocks one after another in a loop, as the
        # engine's loop runs them, the pending write carried from block to block (one copy of
        # the kernel in the program, not one per block).
        skeys = jax.vmap(lambda t: stream_key(jax.random.key(100 + t), "order"))(
            jnp.arange(batch, dtype=jnp.int32))

        def block(fy, b):
            order = jax.vmap(lambda k: block_order(k, b, n))(skeys)
            return kernel(fy, order, b * BLOCK)

        fy = engine.shuffle_init(batch, num_blocks(n) * BLOCK, native=layout)
        _, items = jax.lax.scan(block, fy, jnp.arange(num_blocks(n), dtype=jnp.int32))
        return jnp.moveaxis(items, 0, 1).reshape(batch, -1)[:, :n]

    partners = np.asarray(jax.jit(lambda: jnp.stack([
        stream_order(stream_key(jax.random.key(100 + t), "order"), n) for t in range(batch)]))())
    assert num_blocks(n) == 3 and n % BLOCK  # a padded last block
    pos = np.arange(n)
    block = pos // BLOCK
    later = partners > pos
    assert np.any(later & (partners // BLOCK == block))  # a later partner in the same block
    assert any(len(set(row[later_row & (block == b)])) < np.sum(later_row & (block == b))
               for row, later_row in zip(partners, later) for b in range(3))  # shared partners
    want = np.stack([svtjax.reference.stream_order(svtjax.Draws(threshold=0.0, order=order), n)
                     for order in partners])
    native = svtjax._native.fisher_yates_target() is not None
    for kernel, layout in ((engine.fisher_yates_block, native),
                           (engine.fisher_yates_block, False),
                           (engine_shuffle._fisher_yates_block_2d, False)):
        np.testing.assert_array_equal(np.asarray(blocks(kernel, layout)), want,
                                      err_msg=f"{kernel.__name__} {layout}")


def _chunk(mech, n, trials, platform, monkeypatch, **kwargs):
    """The chunk :func:`svtjax._driver.plan` makes on ``platform`` (its only platform read)."""
    with monkeypatch.context() as patch:
        patch.setattr(jax, "default_backend", lambda: platform)
        return _driver.plan(mech, n, trials, shuffle=False, **kwargs).chunk


def test_default_chunk_fits_the_platform_memory_budget(monkeypatch):
    mech = svtjax.get("svt-s", epsilon=1.0, c=5)
    size = functools.partial(_chunk, monkeypatch=monkeypatch)
    assert size(mech, 10_000, 1000, "cpu") == 1000  # fits 256 MiB: one chunk
    cpu = size(mech, 10_000, 100_000, "cpu")
    gpu = size(mech, 10_000, 100_000, "gpu")
    per_trial = svtjax.engine.working_bytes(mech, 10_000, 4, False)
    largest = _driver.MEMORY_BUDGET // per_trial
    assert cpu * per_trial <= _driver.MEMORY_BUDGET < (largest + 1) * per_trial
    assert cpu == math.ceil(100_000 / math.ceil(100_000 / largest))  # equal chunks
    assert gpu * per_trial <= _driver.ACCELERATOR_MEMORY_BUDGET
    assert gpu > 4 * cpu
    assert size(mech, 10_000, 100_000, "cpu", budget=per_trial) == 1


def test_selection_chunks_are_cache_sized_on_a_cpu_only(monkeypatch):
    """A cache-bound kernel's CPU chunk is capped at the platform's cache_chunk_bytes (the
    selection family holds whole noisy streams per trial and declares so in its Footprint),
    whatever the budget; an accelerator is not capped."""
    mech = svtjax.get("report-noisy-max", epsilon=1.0, k=5)
    size = functools.partial(_chunk, monkeypatch=monkeypatch)
    per_trial = svtjax.engine.working_bytes(mech, 10_000, 4, False)
    cpu = size(mech, 10_000, 1000, "cpu")
    cap = svtjax.engine.resolve("cpu").cache_chunk_bytes
    assert mech.footprint.cache_bound and cap == 8 * 2**20
    assert cpu * per_trial <= cap < 2 * cpu * per_trial
    assert size(mech, 10_000, 1000, "gpu") == 1000
    assert size(mech, 10_000, 1000, "cpu", budget=2**30) == cpu
    svts = svtjax.get("svt-s", epsilon=1.0, c=5)
    assert svtjax.engine.chunk_budget(svts, 2**30, svtjax.engine.resolve("cpu")) == 2**30
