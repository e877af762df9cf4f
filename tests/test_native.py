"""The compiled kernels (svtjax._native) give exactly the pure-JAX functions' results: the
Fisher–Yates block, the shuffle's prefix, and the first ⊤ of Outcome rows (``svtjax.selected``,
the shuffled metrics); and to rounding: ``svtjax.exact``'s random-order recursions.

Every shuffled case of ``tests/test_bit_identity.py`` also runs through it (it is the default on
the CPU); here it is compared with the pure-JAX block directly, block by block on hand-made
states (compaction included), through the engine (with and without the shuffle's prefix) and
under ``vmap`` (a sweep's stacked points), for one mechanism of each engine path. The engine runs
take the shapes and parameters of ``tests/test_bit_identity.py``'s records, so that their runs
with the compiled block are that test's programs.
"""

import functools
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import svtjax
from svtjax import _native
from svtjax import engine as _engine
from svtjax.engine import shuffle as _shuffle
from svtjax.mechanisms.rules import ThresholdMechanism

from .cases import CASES

NATIVE = _native.fisher_yates_target() is not None


def test_built_where_a_compiler_is():
    """An install on a machine with a C++ compiler builds the block and uses it (a failed build
    must not pass silently)."""
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("no C++ compiler: the extension is optional")
    assert _native.status().startswith("on"), _native.status()
    assert NATIVE


def test_off_switch(monkeypatch):
    monkeypatch.setenv("SVTJAX_NATIVE", "0")
    assert _native.fisher_yates_target() is None
    assert _native.first_tops_target() is None
    assert not _native.exact_target()
    assert _native.status() == "off (SVTJAX_NATIVE=0)"


def test_an_extension_missing_a_handler_is_not_used(monkeypatch):
    """An extension built from an older checkout (an editable install not rebuilt) lacks the
    newer handlers: it is not used, and the status says how to rebuild it."""
    class Old:
        jaxlib_version = __import__("jaxlib.version").version.__version__
        fisher_yates = first_tops = staticmethod(lambda: None)

    monkeypatch.setattr(_native, "_module", lambda: Old)
    assert "fisher_yates_prefix" in _native.status() and "pip install -e" in _native.status()
    _native._registered.cache_clear()
    try:
        assert _native.fisher_yates_target() is None and _native.first_tops_target() is None
    finally:
        _native._registered.cache_clear()


class _Built:
    """A stand-in for the compiled module: every handler, the given FFI API version."""

    jaxlib_version = "0.0.0"

    def __init__(self, major=None, minor=None):
        if major is not None:
            self.ffi_api_major, self.ffi_api_minor = major, minor
        for name in _native._HANDLERS:
            setattr(self, name, lambda: None)


def test_ffi_api_version_read_from_the_header_text():
    text = "// c_api.h\n#define XLA_FFI_API_MAJOR 0\n\n#define XLA_FFI_API_MINOR 12\n"
    assert _native._api_of(text) == (0, 12)
    assert _native._api_of("#define XLA_FFI_API_MAJOR 0\n") is None
    assert _native.runtime_api() is not None  # the installed jaxlib ships its FFI headers


@pytest.mark.parametrize("built,used", [((0, 0), True), ("runtime", True), ((0, 99), False),
                                        ((1, 0), False), ((None, None), False)])
def test_a_build_serves_every_jaxlib_with_a_compatible_ffi_api(monkeypatch, built, used):
    """Used under the same FFI major version and at least the build's minor version (XLA keeps
    older minor versions working); a newer minor, another major or an unrecorded version is
    not used, and the status says why and how to rebuild."""
    major, minor = _native.runtime_api() if built == "runtime" else built
    monkeypatch.setattr(_native, "_module", lambda: _Built(major, minor))
    state = _native.status()
    assert state.startswith("on") == used, state
    if not used:
        assert "not used" in state and "reinstall svtjax" in state, state


def test_a_built_extension_that_is_not_used_says_so_once_on_stderr(monkeypatch, capfd):
    """XLA refusing a handler (or a mismatched build) falls back to the pure-JAX functions with
    one line on stderr, whatever the number of programs traced."""
    import jax

    def refuse(*args, **kwargs):
        raise RuntimeError("FFI handler API version 0.99 is not supported\nmore detail")

    monkeypatch.setattr(_native, "_module", lambda: _Built(*_native.runtime_api()))
    monkeypatch.setattr(jax.ffi, "register_ffi_target", refuse)
    monkeypatch.setattr(_native, "_REFUSED", [])
    _native._registered.cache_clear()
    _native._say_once.cache_clear()
    try:
        assert _native.fisher_yates_target() is None and not _native.exact_target()
        assert _native.first_tops_target() is None
        state = _native.status()
        assert state.startswith("not used: XLA refused to register svtjax_fisher_yates: FFI "
                                "handler API version 0.99 is not supported;"), state
        err = capfd.readouterr().err.splitlines()
        assert err == [f"svtjax: compiled kernels {state}"], err
    finally:
        _native._registered.cache_clear()
        _native._say_once.cache_clear()


def _pure(monkeypatch):
    monkeypatch.setattr(_native, "fisher_yates_target", lambda: None)


needs_native = pytest.mark.skipif(not NATIVE, reason=_native.status())


@needs_native
@pytest.mark.parametrize("n_pad,batch,width", [(64, 5, 16), (192, 33, 64), (40_000, 3, 64),
                                               (256, 1100, 64)])
def test_block_equals_pure_block(monkeypatch, n_pad, batch, width):
    """Block by block from the identity, with a compaction half-way (a subset of the trials,
    padded with copies of a row, which share its permutation) and partners outside the
    permutation (dropped on write, read as 0). The positions not yet visited agree; with
    ``write_items`` the compiled block's visited positions hold the items drawn there (the pure
    block leaves them stale: neither block reads them again). The batch of 1,100 rows is split
    among threads (at least 2^12 positions a task), before and after the compaction."""
    rng = np.random.default_rng(n_pad)
    # each init a program of its own (a new function: traced under its own setting)
    native = jax.jit(lambda: _engine.shuffle_init(batch, n_pad))()
    with monkeypatch.context() as m:
        _pure(m)
        pure = jax.jit(lambda: _engine.shuffle_init(batch, n_pad))()
    assert native.slot is not None and pure.slot is None

    @jax.jit
    def block(native, pure, order, start):  # both blocks in one program
        return (_engine.fisher_yates_block(native, order, start, None, True),
                _engine.fisher_yates_block(pure, order, start, None, True))

    take = jax.jit(lambda native, pure, keep: (_shuffle.take_shuffle(native, keep),
                                               _shuffle.take_shuffle(pure, keep)))
    origin = np.arange(batch)  # the trial of each row: copies draw the same partners
    seen = np.zeros((batch, 0), np.int64)  # each row's items so far
    for k in range(min(4, n_pad // width)):
        if k == 2:
            # as the engine's compaction: the running rows, padded with copies of row 0
            running = np.sort(rng.choice(batch, size=max(1, batch // 2), replace=False))
            keep = np.concatenate([running, [0, 0]])
            origin = origin[keep]
            native, pure = take(native, pure, keep)  # host arrays: no conversion programs
        start = k * width
        pos = start + np.arange(width)
        partners = (pos + rng.random((batch, width)) * (n_pad - pos)).astype(np.int32)
        partners[0, 1] = n_pad + 7  # outside: never written, read as 0
        order = partners[origin]
        (native, items_n), (pure, items_p) = block(native, pure, order, start)
        np.testing.assert_array_equal(items_n, items_p)
        np.testing.assert_array_equal(native.a, pure.a)
        np.testing.assert_array_equal(native.j, pure.j)
        rows = np.asarray(native.perm)[np.asarray(native.slot)]
        np.testing.assert_array_equal(rows[:, start + width:],
                                      np.asarray(pure.perm).T[:, start + width:])
        if k == 2:  # the compacted rows' items so far (copies: their row's)
            seen = seen[keep]
        seen = np.concatenate([seen, np.asarray(items_n)], axis=1)
        np.testing.assert_array_equal(rows[:, :start + width], seen)


@needs_native
@pytest.mark.parametrize("n,width", [(5, 8), (100, 64), (1000, 64)])
def test_rows_as_long_as_the_stream(n, width):
    """The engine's layout for a single-pass shuffled run: permutation rows of the stream's
    length n (not the blocks' n_pad), so that they are the Outcome's items without a copy. The
    last block reaches past the row; its positions there (partner = position, as the engine
    draws them; never evaluated) read 0 and store nothing, leaving the row's last items in
    place: every position of the stream gets the pure block's item, and the row ends holding
    them."""
    batch = 7
    n_pad = -(-n // width) * width
    rng = np.random.default_rng(n)
    native, pure = jax.jit(lambda: (_engine.shuffle_init(batch, n_pad, native=True, n=n),
                                    _engine.shuffle_init(batch, n_pad, native=False)))()
    assert native.perm.shape == (batch, n)
    block = jax.jit(lambda native, pure, partners, start: (  # both blocks in one program
        _engine.fisher_yates_block(native, partners, start, None, True),
        _engine.fisher_yates_block(pure, partners, start, None, True)))
    seen = []
    for start in range(0, n_pad, width):
        pos = start + np.arange(width)
        partners = np.where(pos < n, pos + np.floor(rng.random((batch, width)) *
                                                    np.maximum(n - pos, 1)), pos).astype(np.int32)
        (native, items_n), (pure, items_p) = block(native, pure, partners, start)
        inside = pos < n
        np.testing.assert_array_equal(np.asarray(items_n)[:, inside],
                                      np.asarray(items_p)[:, inside])
        np.testing.assert_array_equal(np.asarray(items_n)[:, ~inside], 0)
        seen.append(np.asarray(items_n)[:, inside])
    items = np.concatenate(seen, axis=1)
    np.testing.assert_array_equal(np.asarray(native.perm), items)
    np.testing.assert_array_equal(np.sort(items, axis=1), np.broadcast_to(np.arange(n),
                                                                           (batch, n)))


@needs_native
def test_shuffled_chunk_holds_no_padded_permutation():
    """A single-pass shuffled run keeps its permutations as long as the stream (n = 100, blocks
    to 128), so the Outcome's items are the permutation rows themselves: no int16[batch, 128]
    array, and no copy of one into the items, is in the program."""
    mech = svtjax.get("svt-s", epsilon=1.0, c=3)
    # lowered only: the arguments' shapes suffice (eager arrays would compile programs)
    q = jax.ShapeDtypeStruct((100,), jnp.float32)
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), 3))
    text = jax.jit(lambda k, q: _engine.run_keys(mech, k, q, jnp.full((100,), 2.0, jnp.float32),
                                                 shuffle=True)).lower(keys, q).as_text()
    assert "3x100xi16" in text and "x128xi16" not in text


@needs_native
@pytest.mark.parametrize("batch", [6, 1200])
def test_halted_trials_are_skipped(batch):
    """The compiled block skips the trials marked done (items 0; permutation row and pending
    value untouched) and swaps the others exactly as without the mark (1,200 rows: split among
    threads)."""
    n_pad, width = 256, 64
    rng = np.random.default_rng(5)
    pos = np.arange(width)
    state, _ = jax.jit(lambda order: _engine.fisher_yates_block(  # the first block, one program
        _engine.shuffle_init(batch, n_pad), order, 0))(
        (pos + rng.random((batch, width)) * (n_pad - pos)).astype(np.int32))  # a host array
    pos = width + np.arange(width)
    order = (pos + rng.random((batch, width)) * (n_pad - pos)).astype(np.int32)
    done = np.array([False, True, False, False, True, False]) if batch == 6 else \
        rng.random(batch) < 0.3
    (all_, items_all), (some, items_some) = jax.jit(lambda state, order, done: (  # one program
        _engine.fisher_yates_block(state, order, width),
        _engine.fisher_yates_block(state, order, width, done)))(state, order, done)
    before = np.asarray(state.perm)
    np.testing.assert_array_equal(np.asarray(items_some)[~done], np.asarray(items_all)[~done])
    np.testing.assert_array_equal(np.asarray(items_some)[done], 0)
    np.testing.assert_array_equal(np.asarray(some.perm)[~done], np.asarray(all_.perm)[~done])
    np.testing.assert_array_equal(np.asarray(some.perm)[done], before[done])
    np.testing.assert_array_equal(np.asarray(some.a)[done], np.asarray(state.a)[done])
    np.testing.assert_array_equal(np.asarray(some.a)[~done], np.asarray(all_.a)[~done])


def _rejected_trials(okeys, n: int, blocks: int) -> np.ndarray:
    """Trials whose partners in blocks 0 .. blocks − 1 include a word that Lemire's method
    rejects (redrawn from fold_in(block key, r)): each position's first word, as
    ``fast_block_order`` draws it."""
    from svtjax import _rng
    from svtjax.mechanisms.base import _mulhi32

    @jax.jit
    def rejected(okeys):
        b = jnp.arange(blocks, dtype=jnp.uint32)
        bits = _rng.random_bits(_rng.fold_in(okeys[:, None, :], b[None, :]), 64)  # [B, m, 64]
        pos = (b[:, None] * 64 + jnp.arange(64, dtype=jnp.uint32)).astype(jnp.int32)
        span = jnp.maximum(n - pos, 1).astype(jnp.uint32)
        _, low = _mulhi32(bits, span)
        return jnp.any(low < (jnp.uint32(0) - span) % span, axis=(1, 2))

    return np.flatnonzero(np.asarray(rejected(okeys)))


@needs_native
@pytest.mark.parametrize("n,batch,prefix", [(200, 5, 64), (30000, 6, 1024), (40000, 3, 256)])
def test_prefix_equals_the_blocks(n, batch, prefix):
    """The prefix kernel (partners drawn in C++, swaps trial by trial) leaves every trial's row
    (its pending write made), pending position and pending value exactly as the compiled block
    does after blocks 0 .. prefix/64 − 1 from the identity with ``fast_block_order``'s
    partners, and the compiled block drawing the next partners itself from the rows' keys
    (``order`` None) swaps as the block given ``fast_block_order``'s: int16 rows, and
    int32 rows (n ≥ 2^15). At n = 30000 the trials include some whose partners were rejected by
    Lemire's method and redrawn (found among 2,048 keys). The raw keys come from numpy (any
    words are keys; eager jax.random draws would compile programs of their own)."""
    okeys = np.random.default_rng(n).integers(0, 2**32, (batch, 2), dtype=np.uint32)
    if n == 30000:
        pool = np.random.default_rng(1).integers(0, 2**32, (2048, 2), dtype=np.uint32)
        hit = _rejected_trials(pool, n, prefix // 64)
        assert hit.size >= 1
        okeys = np.concatenate([okeys, pool[hit[:4]]])
        batch = okeys.shape[0]
    dtype = _engine.perm_dtype(-(-n // 64) * 64)
    assert (dtype == jnp.int32) == (n >= 2**15)
    width = 128

    @jax.jit
    def run(okeys):  # the prefix kernel, the blocks, and the two next blocks: one program
        made = _engine.fisher_yates_prefix(okeys, n, prefix, dtype)
        # the partners of every block, drawn at once (one copy of their draw's program), and
        # those of the two blocks past the prefix, for the second half below
        orders = _engine.fast_block_order(okeys, jnp.arange(prefix // 64 + 2, dtype=jnp.int32),
                                          n)  # [batch, blocks, 64]

        def block(b, state):  # blocks 0 .. prefix/64 - 1 in a loop (one copy of the block)
            order = jax.lax.dynamic_index_in_dim(orders, b, axis=1, keepdims=False)
            state, _ = _engine.fisher_yates_block(state, order, b * 64, None, True)
            return state

        state = _engine.shuffle_init(batch, -(-n // 64) * 64, native=True, n=n)
        want = jax.lax.fori_loop(0, prefix // 64, block, state)
        # The blocks past the prefix, partners drawn by the kernel from the rows' keys (order
        # None; two random blocks at once) against fast_block_order's partners applied by the
        # blocks.
        order = orders[:, prefix // 64:].reshape(batch, width)
        return (made, want, _engine.fisher_yates_block(want, order, prefix, None, True, 0, None),
                _engine.fisher_yates_block(made, None, prefix, None, True, prefix, width))

    made, want, (want_next, want_items), (got_next, got_items) = run(okeys)
    assert made.perm.dtype == want.perm.dtype and made.perm.shape == (batch, n)
    # The blocks leave the last swap's write pending (the next block makes it first); the prefix
    # kernel makes it and passes it on too, so that making it again changes nothing.
    rows = np.array(want.perm)
    rows[np.arange(batch), np.asarray(want.j)] = np.asarray(want.a)
    np.testing.assert_array_equal(made.perm, rows)
    np.testing.assert_array_equal(made.j, want.j)
    np.testing.assert_array_equal(made.a, want.a)
    np.testing.assert_array_equal(np.sort(np.asarray(made.perm), axis=1),
                                  np.broadcast_to(np.arange(n), (batch, n)))
    np.testing.assert_array_equal(made.keys, okeys)
    # the two blocks past the prefix: the kernel's own partners as fast_block_order's
    np.testing.assert_array_equal(got_items, want_items)
    for field in ("perm", "j", "a"):
        np.testing.assert_array_equal(getattr(got_next, field), getattr(want_next, field),
                                      err_msg=field)


@needs_native
def test_engine_with_prefix_equals_blocks_alone(monkeypatch):
    """A shuffled run whose first positions come from the prefix kernel (and whose blocks past
    it swap lazily) equals the run without a prefix, field by field: trials halting inside the
    prefix and past it; the prefix is in the program, and not in the other. The run is
    ``tests/test_bit_identity.py``'s record of svt-s on Zipf's 10^4 items, shuffled (its
    program, with the prefix, is that test's)."""
    from svtjax import _driver
    from svtjax.simulate import seed_key

    from .test_bit_identity import F64, params_of

    record = next(r for r in F64 if r["case"] == "zipf-svt-s" and r["shuffle"])
    n, trials, seed = record["n"], record["trials"], record["seed"]
    scores = 10000 / np.arange(1, n + 1)
    q = scores[np.random.default_rng(0).permutation(n)]
    t = np.full(n, record["threshold"])  # about 50 items above: trials halt anywhere
    mech = svtjax.get(record["name"], **params_of(record["params"]))
    lay = _engine.layout.layout(mech, n)
    prefix = _engine.shuffle_prefix(lay)
    assert prefix == 1024
    plans = []
    plan = _driver.plan

    def recording_plan(*args, **kwargs):
        plans.append(plan(*args, **kwargs))
        return plans[-1]

    monkeypatch.setattr(_driver, "plan", recording_plan)

    def run():  # the run and the text of its compiled chunk (lowered again: nothing compiled)
        out = jax.device_get(svtjax.simulate(mech, q, t, trials=trials, seed=seed, shuffle=True))
        text = _driver.run_chunk.lower(mech, q, t, seed_key(seed), 0, trials, None, None,
                                       plan=plans[-1]).as_text()
        return text, out

    text, with_prefix = run()
    with monkeypatch.context() as m:
        m.setitem(_engine.SHUFFLE_PREFIX, "cpu", 0)
        assert _engine.shuffle_prefix(lay) == 0
        text_without, without = run()
    assert plans[0].chunk == plans[1].chunk == trials
    assert _native.FISHER_YATES_PREFIX_TARGET in text
    assert _native.FISHER_YATES_PREFIX_TARGET not in text_without
    halts = (np.asarray(with_prefix.answers) >= 0).sum(axis=1)
    assert halts.min() < prefix < halts.max()
    for f in with_prefix._fields:
        np.testing.assert_array_equal(getattr(with_prefix, f), getattr(without, f), err_msg=f)


@needs_native
def test_hand_made_partners_equal_pure(monkeypatch):
    """``decide`` on hand-made Draws whose partners point back to positions already visited
    (not a Fisher–Yates draw, so no swap may be assumed to spare the visited prefix) gives the
    pure-JAX block's Outcome: items come from the buffer written as they are drawn."""
    mech = svtjax.get("chen", epsilon=1.0)  # no cut-off: every position is evaluated
    n = 150
    q = np.random.default_rng(2).normal(0.0, 2.0, n)
    draws = jax.jit(jax.vmap(lambda k: mech.draw(k, n, shuffle=True)))(  # one program
        jax.random.split(jax.random.key(4), 3))
    order = np.array(draws.order)
    order[:, 70:90] = np.arange(20)  # partners before their positions
    bad = draws.replace(order=order)  # a host array into the jitted run
    run = jax.jit(jax.vmap(lambda d: mech.decide(d, q, 0.5)))
    native = jax.device_get(run(bad))
    with monkeypatch.context() as m:
        _pure(m)
        pure = jax.device_get(jax.jit(jax.vmap(lambda d: mech.decide(d, q, 0.5)))(bad))
    for f in native._fields:
        np.testing.assert_array_equal(getattr(native, f), getattr(pure, f), err_msg=f)


ENGINE_N, ENGINE_TRIALS, SEED = 130, 17, 3
"""The runs of :func:`test_engine_equals_pure_engine` take the shapes of
``tests/test_bit_identity.py``'s records (130 float64 queries: three blocks; 17 trials, one
compaction level) and their mechanisms' parameters, so that their runs with the compiled block are
that test's programs; the other engine runs here take the same shapes (and svt-s's structure), so
that they reuse these programs."""


def _run(mech, q, t, seed=SEED):
    """A shuffled run through ``svtjax.simulate`` (``ENGINE_TRIALS`` trials of ``seed``), with the
    compiled block where it runs: ``tests/test_bit_identity.py``'s program for its records'
    shapes and mechanisms."""
    return jax.device_get(svtjax.simulate(mech, q, t, trials=ENGINE_TRIALS, seed=seed,
                                          shuffle=True))


@jax.jit
def _trial_keys(root):
    """``svtjax.simulate``'s trial keys: trial i's ``fold_in(root, i)`` (a small program of its
    own: hashed in an engine program, the keys would cost more of its compile)."""
    from svtjax import _rng

    return _rng.fold_in_keys(root, jnp.arange(ENGINE_TRIALS, dtype=jnp.uint32))


@functools.partial(jax.jit, static_argnums=4)
def _run_jit(mech, keys, q, t, native: bool):
    return _engine.run_keys(mech, keys, q, t, shuffle=True)


def _run_pure(mech, q, t, seed=SEED):
    """:func:`_run`'s trials through the engine with the pure-JAX block: the same trial keys,
    the mechanism an argument (mechanisms of one structure share the program). Whether the
    compiled block is on is part of the program's cache key (``native``), so that this run
    neither reuses nor leaves behind a program traced with the compiled block."""
    from svtjax.simulate import seed_key

    with pytest.MonkeyPatch.context() as m:
        _pure(m)
        native = _native.fisher_yates_target() is not None
        return jax.device_get(_run_jit(mech, _trial_keys(seed_key(seed)), q, t, native))


# One mechanism per engine path: the vectorised block (svt-s), the scan with a redrawn threshold
# (dpbook), retraversal passes (svt-retr), released values and per-position cost
# (adaptive-svt-gap). Every shuffled case of every mechanism is checked against the pure-JAX
# engine's recorded hashes in tests/test_bit_identity.py.
PATHS = ("svt-s-monotonic", "dpbook", "svt-retr", "adaptive-svt-gap")
THRESHOLD = [c for c in CASES if c.id in PATHS]


def test_every_path_has_a_case():
    assert sorted(c.id for c in THRESHOLD) == sorted(PATHS)


def _engine_inputs(case):
    """The mechanism (the parameters of ``case``'s first shuffled record in
    ``tests/test_bit_identity.py``), scores (with ties) and thresholds of ``case``'s run."""
    from .test_bit_identity import F64, params_of

    record = next(r for r in F64 if r["case"] == case.id and r["shuffle"])
    assert (record["n"], record["trials"]) == (ENGINE_N, ENGINE_TRIALS)
    mech = svtjax.get(record["name"], **params_of(record["params"]))
    q = np.random.default_rng(7).normal(0.0, 2.0, ENGINE_N).round()  # ties
    return mech, q, np.full(ENGINE_N, 1.0)


@needs_native
@pytest.mark.parametrize("case", THRESHOLD, ids=lambda c: c.id)
def test_engine_equals_pure_engine(case):
    """Shuffled, through the engine's block loop: a stream of three blocks, trials halting at
    different blocks; ``svtjax.simulate``'s run with the compiled block equals the pure-JAX
    block's on the same trial keys. (17 trials are one compaction level of the engine loop; the
    compiled block on compacted rows, gathered as the engine gathers them, is
    :func:`test_block_equals_pure_block`'s.)"""
    mech, q, t = _engine_inputs(case)
    assert isinstance(mech, ThresholdMechanism)
    native = _run(mech, q, t)
    pure = _run_pure(mech, q, t)
    halts = (np.asarray(native.answers) >= 0).sum(axis=-1)
    assert halts.min() < halts.max(), halts  # trials halt at different positions
    for f in native._fields:
        a, b = getattr(native, f), getattr(pure, f)
        if a is not None or b is not None:
            np.testing.assert_array_equal(a, b, err_msg=f)


@needs_native
def test_vmapped_points_equal_pure():
    """Stacked points (a sweep's ``vmap``) through the compiled block equal one point at a
    time through the pure block (svt-s-monotonic's structure and shapes of
    :func:`test_engine_equals_pure_engine`: the same pure program). The trial keys are
    ``svtjax.simulate``'s: trial i's ``fold_in(seed_key(seed), i)``."""
    from svtjax.simulate import seed_key

    case = next(c for c in THRESHOLD if c.id == "svt-s-monotonic")
    structure, _, _ = _engine_inputs(case)
    n = ENGINE_N
    scores = 10000 / np.arange(1, n + 1)  # 11 items above the threshold: trials halt anywhere
    q = scores[np.random.default_rng(0).permutation(n)]
    t = np.full(n, 900.0)
    mechs = [svtjax.get("svt-s", epsilon=e, c=structure.c, monotonic=True) for e in (0.5, 2.0)]
    stacked = jax.tree_util.tree_map(lambda *x: np.stack(x), *mechs)  # host stack: no programs

    both = jax.device_get(jax.jit(jax.vmap(lambda m, k, q, t: _engine.run_keys(
        m, k, q, t, shuffle=True), in_axes=(0, None, None, None)))(
            stacked, _trial_keys(seed_key(1)), q, t))
    assert 0 < (both.answers >= 0).sum(axis=-1).min() < n  # some trials halt before the end
    for i, mech in enumerate(mechs):
        one = _run_pure(mech, q, t, seed=1)
        np.testing.assert_array_equal(both.answers[i], one.answers)
        np.testing.assert_array_equal(both.items[i], one.items)


# -- first tops ------------------------------------------------------------------------------

def _answers(rng, rows: int, length: int) -> np.ndarray:
    """Random answers: most rows a halting prefix (⊤/⊥, then -1), the others -1 anywhere (as a
    retraversal's later passes leave them)."""
    ans = rng.choice([-1, 0, 1], size=(rows, length), p=[0.2, 0.65, 0.15]).astype(np.int8)
    for r in range(rows):
        if rng.random() < 0.7:
            h = int(rng.integers(0, length + 1))
            ans[r, :h] = np.maximum(ans[r, :h], 0)
            ans[r, h:] = -1
    return ans


@needs_native
@pytest.mark.parametrize("items", [None, np.int16, np.int32], ids=["position", "int16", "int32"])
def test_first_tops_equal_the_pure_blocks(items):
    """The compiled loop equals ``_first_tops_blocks`` (picks, counts and evaluated positions,
    which count whole blocks of 256) on random batches: a stream shorter than a block (9 rows,
    items by position wrapping at n = 37 < length), and 4,300 rows (split among threads) of a
    stream with an overlapping last block (257 positions: the last block starts one past the
    first); limits (traced) below 1, below k, at k and above it; reading to the halt and to
    the limit-th ⊤. (The overlapping stream and the many rows share one batch: each shape is
    one more copy of both loops in the program.)"""
    from svtjax import _core
    from svtjax._loops import bucket_sizes

    rng = np.random.default_rng(11)
    k = 5
    shapes = ((9, 100, 37), (4300, 257, 257))
    batches = []
    for rows, length, _ in shapes:
        ans = _answers(rng, rows, length)  # host arrays into the jitted program
        its = None if items is None else rng.integers(-3, 30000, (rows, length)).astype(items)
        batches.append((ans, its))

    def pure(ans, its, limit, k, n, to_halt):
        """``_first_tops_blocks`` row by row (each row's result is its own), on chunks of 100
        rows: one compaction level, one copy of its loop (``svtjax._loops.bucket_sizes``;
        compaction changes no row's result: tests/test_loops.py), where the whole batch would
        compile three."""
        rows, chunk = ans.shape[0], 100
        if rows <= chunk:
            return _core._first_tops_blocks(ans, its, limit, k, n, to_halt)
        assert rows % chunk == 0 and bucket_sizes(chunk) == [chunk]
        split = lambda x: None if x is None else x.reshape(rows // chunk, chunk, -1)  # noqa: E731
        out = jax.lax.map(lambda a: _core._first_tops_blocks(a[0], a[1], limit, k, n, to_halt),
                          (split(ans), split(its)))
        return tuple(x.reshape(rows, *x.shape[2:]) for x in out)

    @jax.jit
    def both(batches, limit):  # every batch and reading, compiled and pure, in one program
        return [(_core._first_tops(*args), pure(*args))
                for (ans, its), (_, _, n) in zip(batches, shapes) for to_halt in (False, True)
                for args in [(ans, its, limit, k, n, to_halt)]]

    for limit in (0, 2, 5, 9):
        results = iter(jax.device_get(both(batches, jnp.int32(limit))))
        for rows, length, _ in shapes:
            for to_halt in (False, True):
                got, want = next(results)
                for name, g, w in zip(("picks", "count", "evaluated"), got, want):
                    np.testing.assert_array_equal(
                        g, w, err_msg=f"{name}: rows={rows} L={length} limit={limit} "
                        f"to_halt={to_halt}")


@needs_native
def test_first_tops_vmapped_with_a_limit_per_point():
    """Under ``vmap`` (a sweep's stacked points, each with its own c) the compiled loop gets
    the points' limits and equals the pure loop."""
    from svtjax import _core

    rng = np.random.default_rng(12)
    ans = np.stack([_answers(rng, 11, 300) for _ in range(3)])  # host arrays into the jit
    limits = np.asarray([1, 5, 40], np.int32)

    def run(fn):  # as a sweep runs it: under jit (one program, not one per operation)
        return jax.jit(jax.vmap(lambda a, c: fn(a, None, c, 50, 300, True)))(ans, limits)

    for g, w in zip(run(_core._first_tops), run(_core._first_tops_blocks)):
        np.testing.assert_array_equal(g, w)


@needs_native
def test_selected_uses_the_compiled_loop():
    """``svtjax.selected`` on a shuffled Outcome runs the compiled loop (an ffi_call in its
    program) and gives the pure loop's picks. The Outcome is svt-s-monotonic's shuffled run of
    :func:`test_engine_equals_pure_engine` (its program reused), whose trials stop at their
    c-th ⊤."""
    from svtjax import _core

    case = next(c for c in THRESHOLD if c.id == "svt-s-monotonic")
    mech, q, t = _engine_inputs(case)
    out = _run(mech, q, t)
    assert isinstance(out, svtjax.Outcome) and out.stored_items is not None
    k, n = int(mech.c), ENGINE_N
    assert (np.asarray(out.answers) == 1).sum(axis=-1).max() == k
    answers, items, _ = _core._rows_of(out)
    text = _core._first_tops.lower(answers, items, jnp.int32(k), k, n, False).as_text()
    assert "svtjax_first_tops" in text
    want, _, _ = jax.jit(_core._first_tops_blocks, static_argnums=(3, 4, 5))(  # one program
        answers, items, np.int32(k), k, n, False)
    np.testing.assert_array_equal(svtjax.selected(out, k), want)


@needs_native
def test_prefix_counts_use_the_compiled_loop(monkeypatch):
    """``svtjax.prefix_counts`` runs the compiled loop (an ffi_call in its program, reading each
    row to its first -1) and equals the XLA block loop it replaced, ``_prefix_rows``, which it
    still uses where the compiled loop does not run: on random rows (not only prefixes: a -1
    before later answers ends the read), a stream shorter than a block (9 rows), and 4,300 rows
    (split among threads) of a stream with an overlapping last block (257 positions), with a
    batch axis: the shapes of :func:`test_first_tops_equal_the_pure_blocks`."""
    from svtjax import _core, _native

    rng = np.random.default_rng(13)
    for rows, length in ((9, 100), (4300, 257)):
        ans = _answers(rng, rows, length)
        # on the device as jax.device_put puts it (jnp.asarray would compile a program)
        out = svtjax.Outcome.compact(jax.device_put(ans.reshape(rows, 1, length)), n=length,
                                     dtype=jnp.float32, top_cost=np.ones((rows, 1)))
        assert "svtjax_first_tops" in jax.jit(svtjax.prefix_counts).lower(out).as_text()
        got = svtjax.prefix_counts(out)
        want = _core._prefix_rows(ans)
        with monkeypatch.context() as m:
            m.setattr(_native, "first_tops_target", lambda: None)
            fallback = svtjax.prefix_counts(out)
        for g, f, w in zip(got, fallback, want):
            assert g.shape == (rows, 1)
            np.testing.assert_array_equal(g[:, 0], w, err_msg=f"rows={rows} L={length}")
            np.testing.assert_array_equal(f[:, 0], w, err_msg=f"rows={rows} L={length}")


# -- svtjax.exact's random order ------------------------------------------------------------------

EXACT_CASES = [
    ("svt-s", {"epsilon": 0.5, "c": 6, "monotonic": True}, None, "zipf", False),
    ("svt-s", {"epsilon": 0.5, "c": 6}, 3, "zipf", True),  # metric cut-off below the mechanism's
    ("svt-s", {"epsilon": 0.5, "c": 6}, None, "tied", False),  # tie groups before the items
    ("generalized-svt", {"c": 6, "threshold_noise": svtjax.noise.Gaussian(3.0),
                         "query_noise": svtjax.noise.Gaussian(5.0)}, None, "zipf", True),
    ("stoddard", {"epsilon": 1.0}, 6, "zipf", False),  # no cut-off: every item evaluated
]


@pytest.mark.parametrize("name,params,c,scores,full", EXACT_CASES,
                         ids=[f"{n}-{i}" for i, (n, *_) in enumerate(EXACT_CASES)])
def test_exact_random_order_equals_pure(monkeypatch, name, params, c, scores, full):
    """svtjax.exact's random-order law through the compiled recursions and inner integrals
    (``_native.exact_target``) equals the pure-JAX law to 1e-14 in every field, with the
    skipped paths on (``full`` False) and off (``tail = 0``: every chunk takes the full
    recursion); the compiled kernels did run."""
    from svtjax import exact
    from svtjax.exact import _laws

    if not _native.exact_target():
        pytest.skip("the compiled kernels do not run here")
    n = 600
    q = (np.floor(np.random.default_rng(5).pareto(1.1, n)) + 1.0 if scores == "tied"
         else n / np.arange(1.0, n + 1))
    mech = svtjax.get(name, **params)
    t = svtjax.datasets.lyu_threshold(q, c or mech.c)
    host = _laws.random_order_host
    if full:
        monkeypatch.setattr(_laws, "random_order_host",
                            lambda *a, **k: host(*a, **dict(k, tail=0.0)))
    chunk = _laws._random_chunk_jit
    used = []

    def spy(*a, **k):
        used.append(k["native"] and a[0].shape[0] % 8 == 0)
        return chunk(*a, **k)

    monkeypatch.setattr(_laws, "_random_chunk_jit", spy)
    native = exact.selection_law(mech, q, t, shuffle=True, c=c)
    assert any(used), used
    monkeypatch.setattr(_native, "exact_target", lambda: False)
    pure = exact.selection_law(mech, q, t, shuffle=True, c=c)
    for field in ("top", "member", "evaluated", "count"):
        np.testing.assert_allclose(np.asarray(getattr(native, field)),
                                   np.asarray(getattr(pure, field)), rtol=0, atol=1e-14,
                                   err_msg=field)
