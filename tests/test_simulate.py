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
from tests.cases import CASES, build, case_ids
from tests.conftest import subprocess_env

simulate_module = importlib.import_module("svtjax.simulate")

ZIPF = 100.0 / np.arange(1, 301)


def _assert_same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("name,params", [
    ("svt-s", dict(epsilon=1.0, c=4, eps3=0.2)),
    ("dpbook", dict(epsilon=1.0, c=3)),
    ("chen", dict(epsilon=1.0)),
])
@pytest.mark.parametrize("shuffle", [False, True])
def test_chunk_size_does_not_change_outcomes(name, params, shuffle):
    # 130 trials in one chunk compact once (levels 130/17, svtjax._loops.bucket_sizes); chunks
    # of 7 never do.
    mech = svtjax.get(name, **params)
    runs = [svtjax.simulate(mech, ZIPF, 10.0, trials=130, seed=3, shuffle=shuffle, chunk_size=cs)
            for cs in (None, 7, 1000)]
    assert runs[0].answers.shape == (130, ZIPF.shape[0])
    _assert_same(runs[0], runs[1])
    _assert_same(runs[0], runs[2])


@pytest.mark.parametrize("shuffle", [False, True])
def test_the_compaction_factor_changes_no_number(shuffle, monkeypatch):
    """The engine's compaction factor (``svtjax.engine.COMPACTION``, per platform) reaches the
    trace of ``simulate``'s chunk (in its plan, the one static argument: each factor its own
    program) and changes no number: 130 trials compact as 130/17 at the CPU's factor 8,
    130/65/33/17 at 2, never at 10^9."""
    from svtjax import _loops
    from svtjax import engine as _engine

    seen = []
    sizes = _loops.bucket_sizes
    monkeypatch.setattr(_loops, "bucket_sizes", lambda b, f=8, **kw: (seen.append((b, f)),
                                                                      sizes(b, f, **kw))[1])
    mech = svtjax.get("svt-s", epsilon=1.0, c=4, eps3=0.2)
    base = svtjax.simulate(mech, ZIPF, 10.0, trials=130, seed=3, shuffle=shuffle)
    for factor in (2, 10**9):
        monkeypatch.setitem(_engine.COMPACTION, "cpu", factor)
        assert _engine.compaction_factor() == factor
        _assert_same(base, svtjax.simulate(mech, ZIPF, 10.0, trials=130, seed=3,
                                           shuffle=shuffle))
        assert (130, factor) in seen
    with pytest.raises(ValueError, match="integer >= 2"):
        dataclasses.replace(_engine.resolve(), compaction=1)


@pytest.mark.parametrize("case", CASES, ids=case_ids())
def test_a_narrow_block_gives_the_numbers_of_a_whole_block(case):
    """A stream shorter than BLOCK runs in one block of its length rounded up to a multiple of
    ``NARROW`` (``_engine.block_width``); every registered case gives the Outcomes of the
    whole-BLOCK layout, bit for bit, in a fixed order and shuffled (one program per case; the
    CRN tests' streams of 9 and 50 queries run narrow blocks of 16 and 56)."""
    from svtjax import engine as _engine

    rng = np.random.default_rng(17)
    n = 5
    mech = build(case, rng, **({"c": 2} if case.has_cutoff else {}))
    q = jnp.asarray(rng.normal(0.0, 2.0, n))
    t = jnp.full((n,), 0.5)
    keys = jax.random.split(jax.random.key(9), 40)
    assert _engine.block_width(n) == _engine.NARROW < _engine.BLOCK_WIDTH["cpu"]

    @jax.jit
    def runs(mech, keys, q, t):
        return [[mech.run_batch(keys, q, t, shuffle=shuffle, width=width)
                 for width in (None, _engine.BLOCK)] for shuffle in (False, True)]

    for narrow, whole in runs(mech, keys, q, t):
        for field in narrow._fields:
            np.testing.assert_array_equal(np.asarray(getattr(narrow, field)),
                                          np.asarray(getattr(whole, field)), err_msg=field)


def test_trial_t_uses_fold_in_of_seed():
    mech = svtjax.get("lyu-alg1", epsilon=0.7, c=3)
    out = svtjax.simulate(mech, ZIPF, 10.0, trials=6, seed=11)
    for t in (0, 5):
        one = mech(jax.random.fold_in(jax.random.key(11), t), ZIPF, 10.0)
        _assert_same(jax.tree_util.tree_map(lambda x: x[t], out), one)
    other = svtjax.simulate(mech, ZIPF, 10.0, trials=6, seed=12)
    assert not np.array_equal(np.asarray(out.answers), np.asarray(other.answers))


_SHARDED = textwrap.dedent("""
    import jax, numpy as np, svtjax
    jax.config.update("jax_enable_x64", True)
    assert len(jax.devices()) == 4, jax.devices()
    q = 100.0 / np.arange(1, 301)
    out = {}
    for shuffle in (False, True):
        mech = svtjax.get("svt-s", epsilon=1.0, c=4, monotonic=True)
        o = svtjax.simulate(mech, q, 10.0, trials=50, seed=5, shuffle=shuffle, chunk_size=12)
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
    mech = svtjax.get("svt-s", epsilon=1.0, c=4, monotonic=True)
    for shuffle in (False, True):
        here = svtjax.simulate(mech, ZIPF, 10.0, trials=50, seed=5, shuffle=shuffle,
                               num_devices=1)
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
    mechs = [svtjax.get("svt-s", epsilon=e, c=c, monotonic=True) for e, c in
             [(0.3, 1), (1.0, 2), (2.0, 4)]]
    stacked = jax.tree_util.tree_map(lambda *x: jax.numpy.stack(x), *mechs)
    key = jax.random.key(2)
    batched = jax.vmap(lambda m: m(key, ZIPF, 10.0))(stacked)
    for i, m in enumerate(mechs):
        _assert_same(jax.tree_util.tree_map(lambda x: x[i], batched), m(key, ZIPF, 10.0))


def test_reduce_sums_per_trial_values_inside_chunks():
    mech = svtjax.get("svt-s", epsilon=1.0, c=5)
    full = svtjax.simulate(mech, ZIPF, 10.0, trials=37, seed=1)
    tops = np.sum(np.asarray(full.answers) == 1, axis=1)

    def reducer(out):
        k = (out.answers == 1).sum(axis=1)
        return {"tops": k, "tops2": k * k}

    for chunk in (None, 8):
        red = svtjax.simulate(mech, ZIPF, 10.0, trials=37, seed=1, chunk_size=chunk,
                              reduce=reducer)
        assert int(red["tops"]) == tops.sum()
        assert int(red["tops2"]) == (tops ** 2).sum()


def test_shuffled_trial_groups_change_no_number(monkeypatch):
    """A reduced shuffled chunk run in groups (``shuffle_groups``) gives every trial the numbers
    it gets ungrouped: per-trial values (``mode="values"``) and ``simulate``'s sums."""
    mech = svtjax.get("svt-s", epsilon=2.0, c=3)
    root = simulate_module.seed_key(11)

    def per_trial(out, ctx):  # mode "values": the trials on the last axis, as a sweep's
        pos = jnp.arange(out.answers.shape[-1])
        evaluated = jnp.sum(out.answers >= 0, axis=-1)
        return {"evaluated": evaluated,
                "items": jnp.sum(jnp.where(out.answers == 1, (out.items + 1) * (pos + 1), 0),
                                 axis=-1),
                "trial": ctx.index,
                "rows": jnp.stack([ctx.index, evaluated])}  # [2, trials]

    reduce = jax.tree_util.Partial(per_trial)
    runs = [_driver.run_chunk(mech, ZIPF, jnp.full(300, 10.0), root, 0, 256, reduce,
                              plan=_driver.Plan(chunk=256, shuffle=True, mode="values", groups=g))
            for g in (1, 2, 4)]
    assert np.asarray(runs[0]["evaluated"]).min() < 300  # trials halt at different positions
    for run in runs[1:]:
        _assert_same(jax.tree_util.tree_leaves(runs[0]), jax.tree_util.tree_leaves(run))
    np.testing.assert_array_equal(np.asarray(runs[0]["trial"]), np.arange(256))
    np.testing.assert_array_equal(np.asarray(runs[2]["rows"]),
                                  np.stack([np.arange(256), np.asarray(runs[0]["evaluated"])]))
    # mode "sum": the trials on the leading axis ([trials, 2] here)
    sums = [_driver.run_chunk(
        mech, ZIPF, jnp.full(300, 10.0), root, 0, 200,
        jax.tree_util.Partial(lambda out, ctx: jnp.stack(
            [jnp.sum(out.answers >= 0, axis=-1), ctx.index], axis=1)),
        plan=_driver.Plan(chunk=256, shuffle=True, mode="sum", groups=g)) for g in (1, 4)]
    _assert_same(sums[0], sums[1])
    np.testing.assert_array_equal(np.asarray(sums[1])[1], np.arange(200).sum())

    def count(out):
        return jnp.sum(out.answers >= 0, axis=-1), jnp.sum(out.answers == 1, axis=-1)

    ungrouped = svtjax.simulate(mech, ZIPF, 10.0, trials=512, seed=4, shuffle=True, reduce=count)
    monkeypatch.setattr(_driver, "SHUFFLE_GROUP_BYTES", 1)
    assert _driver.shuffle_groups(mech, 300, 512) == 4  # groups of the 128-trial minimum
    grouped = svtjax.simulate(mech, ZIPF, 10.0, trials=512, seed=4, shuffle=True, reduce=count)
    _assert_same(ungrouped, grouped)


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
    Outcome it gets ungrouped, field by field, through ``run_chunk`` and ``simulate``."""
    mech = svtjax.get("svt-s", epsilon=2.0, c=3)
    root = simulate_module.seed_key(12)
    runs = [_driver.run_chunk(mech, ZIPF, jnp.full(300, 10.0), root, 0, 256,
                              plan=_driver.Plan(chunk=256, shuffle=True, groups=g))
            for g in (1, 4)]
    assert np.asarray(runs[0].answers).shape[0] == 256
    assert (np.asarray(runs[0].answers) >= 0).sum(axis=1).min() < 300  # early halts
    # field by field (a stored items array past a trial's halt is not part of the Outcome)
    _assert_same(runs[0], runs[1])
    ungrouped = svtjax.simulate(mech, ZIPF, 10.0, trials=512, seed=4, shuffle=True)
    monkeypatch.setattr(_driver, "SHUFFLE_GROUP_BYTES", 1)
    assert _driver.shuffle_groups(mech, 300, 512) == 4
    grouped = svtjax.simulate(mech, ZIPF, 10.0, trials=512, seed=4, shuffle=True)
    _assert_same(ungrouped, grouped)


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
    reference's order, block after block with the pending write carried across blocks; n = 100
    makes swap partners collide within a block, n = 5 and 130 leave padded positions in the
    last block."""
    from svtjax import engine
    from svtjax.engine import shuffle as engine_shuffle
    from svtjax.mechanisms.base import BLOCK, block_order, num_blocks, stream_key, stream_order

    batch = 5

    @functools.partial(jax.jit, static_argnums=(0, 1, 2))
    def blocks(kernel, layout, n):
        # One program per (kernel, layout, n): the blocks one after another, as the engine's
        # loop runs them, the pending write carried from block to block.
        skeys = [stream_key(jax.random.key(100 + t), "order") for t in range(batch)]
        fy = engine.shuffle_init(batch, num_blocks(n) * BLOCK, native=layout)
        got = []
        for b in range(num_blocks(n)):
            order = jnp.stack([block_order(k, b, n) for k in skeys])
            fy, items = kernel(fy, order, b * BLOCK)
            got.append(items)
        return jnp.concatenate(got, axis=1)[:, :n]

    @functools.partial(jax.jit, static_argnums=0)
    def orders(n):
        return jnp.stack([stream_order(stream_key(jax.random.key(100 + t), "order"), n)
                          for t in range(batch)])

    native = svtjax._native.fisher_yates_target() is not None
    for n in (5, 100, 130):
        want = [svtjax.reference.stream_order(svtjax.Draws(threshold=0.0, order=order), n)
                for order in np.asarray(orders(n))]
        for kernel, layout in ((engine.fisher_yates_block, native),
                               (engine.fisher_yates_block, False),
                               (engine_shuffle._fisher_yates_block_2d, False)):
            got = np.asarray(blocks(kernel, layout, n))
            np.testing.assert_array_equal(got, np.stack(want),
                                          err_msg=f"{kernel.__name__} {layout} n={n}")


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
