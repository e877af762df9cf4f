"""svtjax._rng: the unrolled Threefry draws exactly the numbers of ``jax.random``.

Bit for bit, for every noise family with a fast transform, in float32 and float64, for many
keys and block indices (the way the engine keys its streams: ``fold_in(stream_key, b)`` then
BLOCK variates), and for raw bits (the Fisher–Yates swap indices).
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from svtjax import _rng
from svtjax.mechanisms.base import BLOCK, block_variates, num_blocks, stream_key, stream_order
from svtjax.noise import FAMILIES

FOLDS = np.array([0, 1, 5, 2**31 + 7], np.uint32)
"""Block indices of :func:`test_fast_standard_equals_jax_random` (one past int32's range)."""

WIDTHS = (1, 5, 8)
"""Narrow block widths of :func:`test_block_prefixes_equal_whole_blocks`."""

PREFIX_FOLD = 2
"""Which of :data:`FOLDS` (block 5) :func:`test_block_prefixes_equal_whole_blocks` draws
narrow: its whole blocks are those of :func:`test_fast_standard_equals_jax_random`."""


@pytest.fixture(scope="module")
def family_draws():
    """For every family with an unrolled sampler and both dtypes, in one compiled program: the
    unrolled sampler and ``jax.random`` on 257 keys folded with each of :data:`FOLDS` (64
    variates), the unrolled sampler's first W variates of block :data:`PREFIX_FOLD` of the
    same keys for each of :data:`WIDTHS` (the whole blocks are the first ones'), and the
    once-per-run variates of the engine's ``initial_variates`` and of ``jax.random`` on 257
    keys and on one of them."""
    from svtjax.engine.draws import initial_variates as _initial_variates

    keys = jax.random.split(jax.random.key(11), 257)
    ikeys = jax.random.split(jax.random.key(17), 257)

    @jax.jit
    def run(keys, ikeys, folds):
        kd, ikd = _rng.key_data(keys), _rng.key_data(ikeys)
        out = {}
        for family in _rng.TRANSFORMS:
            cls, fast = FAMILIES[family], _rng.fast_standard(FAMILIES[family])
            for dt, dtype in (("f32", np.float32), ("f64", np.float64)):
                out[family, dt] = {
                    "want": jax.vmap(lambda b: jax.vmap(lambda k: cls.standard(
                        jax.random.fold_in(k, b), (64,), dtype))(keys))(folds),
                    "got": jax.vmap(lambda b: fast(_rng.fold_in(kd, b), 64, dtype))(folds),
                    "prefixes": [fast(_rng.fold_in(kd, FOLDS[PREFIX_FOLD]), w, dtype)
                                 for w in WIDTHS],
                    "initial_want": jax.vmap(lambda k: cls.standard(
                        stream_key(k, "threshold"), (), dtype))(ikeys),
                    "initial": _initial_variates(ikeys, ikd, "threshold", cls, dtype),
                    "initial_one": _initial_variates(ikeys[3], ikd[3], "threshold", cls,
                                                     dtype)}
        return out

    return jax.device_get(run(keys, ikeys, jnp.asarray(FOLDS)))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("family", sorted(_rng.TRANSFORMS))
def test_fast_standard_equals_jax_random(family_draws, family, dtype):
    """``fast_standard(family)(fold_in(kd, b), 64, dtype)`` is ``family.standard(fold_in(key,
    b), (64,), dtype)`` bit for bit, for 257 keys and the block indices :data:`FOLDS`."""
    d = family_draws[family, dtype]
    assert d["got"].dtype == d["want"].dtype == np.dtype(dtype.replace("f", "float"))
    for i, b in enumerate(FOLDS):
        np.testing.assert_array_equal(d["got"][i], d["want"][i], err_msg=f"b={b}")


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("family", sorted(_rng.TRANSFORMS))
def test_block_prefixes_equal_whole_blocks(family_draws, family, dtype):
    """The first W variates of a block are the numbers of a whole block: the engine's narrow
    blocks (``svtjax.engine.NARROW``) draw only those."""
    d = family_draws[family, dtype]
    whole = d["got"][PREFIX_FOLD]  # block FOLDS[PREFIX_FOLD] of the same keys, drawn whole
    for width, prefix in zip(WIDTHS, d["prefixes"]):
        assert prefix.shape == (len(whole), width)
        np.testing.assert_array_equal(prefix, whole[:, :width], err_msg=f"W={width}")


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("family", sorted(_rng.TRANSFORMS))
def test_initial_variates_equal_jax_random(family_draws, family, dtype):
    """A trial's once-per-run variates (e.g. the threshold noise), drawn by the engine and by
    ``draw`` through the unrolled sampler: ``standard(stream_key(key, name), ())`` bit for
    bit, for a batch of keys and for one key."""
    d = family_draws[family, dtype]
    got, want, one = d["initial"], d["initial_want"], d["initial_one"]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert one.shape == () and one == want[3]


def _documented_draw(mech, key, n, dtype):
    """A trial's Draws as ``svtjax.mechanisms.base`` defines them, through ``jax.random``."""
    out = {name: type(noise).standard(stream_key(key, name), (), dtype)
           for name, noise in mech.initial_streams().items()}
    nb = num_blocks(n)
    for name, noise in mech.streams().items():
        standard = type(noise).standard
        blocks = jax.vmap(lambda b, s=name, f=standard: block_variates(
            stream_key(key, s), b, f, dtype))(jnp.arange(mech.passes() * nb))
        out[name] = blocks.reshape(mech.passes(), nb * BLOCK)[:, :n].reshape(-1)
    out["order"] = stream_order(stream_key(key, "order"), n).astype(jnp.int32)
    return out


def _draw_components(mech) -> set:
    """What a threshold mechanism's ``draw`` is made of: ``svtjax.engine.draw`` reads of the
    mechanism only the names and noise families of its once-per-trial streams
    (``initial_streams``) and of its per-position streams (``streams``) and its ``passes()``,
    and draws each stream from its own key (``stream_key(key, name)``), so its numbers are
    those of these components, each fixed by the stream's name, family (and for a per-position
    stream, the passes)."""
    return ({("initial", name, type(noise)) for name, noise in mech.initial_streams().items()}
            | {("stream", name, type(noise), mech.passes())
               for name, noise in mech.streams().items()})


def _draw_representatives():
    """(every registered threshold mechanism, the ones compared number by number): the
    mechanisms whose class defines its own ``draw`` (whose numbers may depend on anything), then
    the fewest registered mechanisms whose components, with theirs, are every component of every
    registered threshold mechanism's draw (each one compared adds its draw's kernels, in both
    dtypes, to the compiled program), in registry order."""
    from svtjax.mechanisms.rules import ThresholdMechanism
    from tests.cases import CASES, build

    mechs = [(c, m) for c in CASES
             for m in [build(c, np.random.default_rng(0))] if hasattr(m, "initial_streams")]
    chosen = [(c, m) for c, m in mechs if type(m).draw is not ThresholdMechanism.draw]
    covered = set().union(set(), *(_draw_components(m) for _, m in chosen))
    need = set().union(*(_draw_components(m) for _, m in mechs))
    parts = [_draw_components(m) for _, m in mechs]

    def fewest(missing: frozenset) -> list:
        """The fewest indices of ``mechs`` whose components hold ``missing`` (exact: branch on
        the missing component that the fewest mechanisms hold, over those mechanisms)."""
        if not missing:
            return []
        holders = min(([i for i, p in enumerate(parts) if c in p] for c in missing), key=len)
        return min(([i] + fewest(missing - parts[i]) for i in holders), key=len)

    picked = sorted(fewest(frozenset(need - covered)))
    return mechs, chosen + [mechs[i] for i in picked]


DRAW_DTYPES = {"float32": np.float32, "float64": np.float64}


@pytest.fixture(scope="module")
def draws_and_definition():
    """Every representative's ``draw`` in float32 and float64 on 4 Threefry keys, and the
    documented numbers of every component, in one compiled program: per once-per-trial stream
    ``standard(stream_key(key, name), (), dtype)``, per per-position stream its blocks
    ``block_variates(stream_key(key, name), b, standard, dtype)`` for b below the most passes
    any representative takes times the blocks of a pass (a stream of fewer passes uses a prefix
    of them), and the swap partners ``stream_order(stream_key(key, "order"), n)``. The first
    representative draws with ``shuffle=True`` in each dtype (its partners are the same for every
    mechanism and dtype), the others without. The blocks of a family's streams are drawn
    together, ``block_variates`` vmapped over the streams' keys (the same numbers, in fewer
    kernels than one computation per stream), for the most passes any of them takes."""
    mechs, reps = _draw_representatives()
    keys = jax.random.split(jax.random.key(29), 4)
    n = 2 * BLOCK + 3  # several blocks, the last partial
    initial = {(name, type(noise)) for _, m in reps for name, noise in m.initial_streams().items()}
    passes, names = {}, {}
    for _, m in reps:
        for name, noise in m.streams().items():
            passes[type(noise)] = max(passes.get(type(noise), 0), m.passes())
            names.setdefault(type(noise), set()).add(name)
    names = {family: sorted(streams) for family, streams in names.items()}
    label = lambda name, family: f"{name}:{family.__name__}"  # noqa: E731

    def blocks(key, family, dtype):
        """[streams of ``family``, blocks, BLOCK]: its streams' blocks under ``key``."""
        skeys = jnp.stack([stream_key(key, name) for name in names[family]])
        return jax.vmap(lambda skey: jax.vmap(lambda b: block_variates(
            skey, b, family.standard, dtype))(jnp.arange(passes[family] * num_blocks(n))))(skeys)

    @jax.jit
    def run(keys):
        got = {dt: [jax.vmap(lambda k, m=m, i=i: m.draw(k, n, shuffle=i == 0, dtype=dtype))(keys)
                    for i, (_, m) in enumerate(reps)] for dt, dtype in DRAW_DTYPES.items()}
        doc = {}
        for dt, dtype in DRAW_DTYPES.items():
            doc[dt] = {label(name, fam): jax.vmap(lambda k, s=name, f=fam: f.standard(
                stream_key(k, s), (), dtype))(keys) for name, fam in initial}
            for fam in names:
                drawn = jax.vmap(lambda k, f=fam: blocks(k, f, dtype))(keys)
                doc[dt] |= {label(name, fam): drawn[:, i] for i, name in enumerate(names[fam])}
        order = jax.vmap(lambda k: stream_order(stream_key(k, "order"), n).astype(jnp.int32))(
            keys)
        return got, doc, order

    got, doc, order = jax.device_get(run(keys))
    return mechs, reps, n, got, doc, order


def test_draw_representatives_hold_every_registered_draw(draws_and_definition):
    """Every registered threshold mechanism's draw is made of components that the compared
    mechanisms' draws hold (so a newly registered mechanism is covered, or compared itself);
    the compared ones are fewer than the mechanisms."""
    from svtjax.mechanisms.rules import ThresholdMechanism

    mechs, reps, *_ = draws_and_definition
    covered = set().union(*(_draw_components(m) for _, m in reps))
    for case, mech in mechs:
        assert _draw_components(mech) <= covered, case.id
        if type(mech).draw is not ThresholdMechanism.draw:
            assert any(c.id == case.id for c, _ in reps), case.id
    assert {name for _, m in reps for name in m.streams()} >= {"query", "refresh"}
    assert len({m.passes() for _, m in reps}) >= 3  # one pass, and retraversals of 2 and 3


@pytest.mark.parametrize("dt", sorted(DRAW_DTYPES))
def test_draw_equals_the_documented_jax_random_streams(draws_and_definition, dt):
    """``Mechanism.draw`` with Threefry keys (the unrolled sampler) returns the numbers its
    definition gives through ``jax.random`` (block-keyed streams, every pass, the swap
    partners), bit for bit, on a stream of several blocks whose last is partial: for each of
    the representatives of :func:`_draw_representatives`, whose draws hold every stream
    (name, family, passes) of every registered threshold mechanism's draw. Its names and
    dtypes are the documented ones: the streams, and the partners (int32) when shuffled."""
    mechs, reps, n, got, doc, order = draws_and_definition
    dtype = np.dtype(DRAW_DTYPES[dt])
    nb = num_blocks(n)
    for i, (case, mech) in enumerate(reps):
        want = {name: doc[dt][f"{name}:{type(noise).__name__}"]
                for name, noise in mech.initial_streams().items()}
        for name, noise in mech.streams().items():
            blocks = doc[dt][f"{name}:{type(noise).__name__}"][:, :mech.passes() * nb]
            want[name] = blocks.reshape(len(blocks), mech.passes(), nb * BLOCK)[:, :, :n].reshape(
                len(blocks), -1)
        if i == 0:
            want["order"] = order
        mine = dict(got[dt][i].items())
        assert set(mine) == set(want), case.id
        for name in want:
            assert mine[name].dtype == (np.int32 if name == "order" else dtype), name
            np.testing.assert_array_equal(mine[name], want[name],
                                          err_msg=f"{case.id} {name} {dt}")


def test_other_key_implementations_draw_through_jax_random():
    """Keys of another implementation (rbg) take the ``jax.random`` path of the initial
    variates (batched and single keys) and of ``draw`` (streams, passes, swap partners), which
    gives the documented numbers and an int32 order."""
    from svtjax.engine.draws import initial_variates as _initial_variates
    from tests.cases import CASES, build

    cls = FAMILIES["laplace"]
    keys = jax.random.split(jax.random.key(3, impl="rbg"), 5)

    @jax.jit  # the initial variates and jax.random's, in one program
    def initial(keys):
        want = jax.vmap(lambda k: cls.standard(stream_key(k, "threshold"), (), np.float32))(keys)
        # rbg's numbers depend on batching, so one key is compared with its own unbatched draw
        return (_initial_variates(keys, None, "threshold", cls, np.float32), want,
                _initial_variates(keys[2], None, "threshold", cls, np.float32),
                cls.standard(stream_key(keys[2], "threshold"), (), np.float32))

    got, want, one, want_one = jax.device_get(initial(keys))
    np.testing.assert_array_equal(got, want)
    assert one.shape == () and one == want_one
    case = next(c for c in CASES if c.name == "svt-retr")
    mech = build(case, np.random.default_rng(0))
    n = 2 * BLOCK + 3
    got, want = jax.jit(jax.vmap(lambda k: (mech.draw(k, n, shuffle=True, dtype=np.float32),
                                             _documented_draw(mech, k, n, np.float32))))(keys)
    got = dict(got.items())
    assert set(got) == set(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), err_msg=name)


def test_random_bits_and_fold_in_equal_jax_random():
    """Both sides in one compiled program (not an eager program per operation)."""
    DATA = (0, 3, 4_000_000_000)

    @jax.jit
    def both(keys):
        kd = _rng.key_data(keys)
        folds = [(_rng.fold_in(kd, np.uint32(data)), jax.random.key_data(
            jax.vmap(lambda k, d=data: jax.random.fold_in(k, d))(keys))) for data in DATA]
        bits = (_rng.random_bits(kd, 64),
                jax.vmap(lambda k: jax.random.bits(k, (64,), jnp.uint32))(keys))
        return folds, bits

    folds, (bits, want_bits) = jax.device_get(both(jax.random.split(jax.random.key(5), 100)))
    for data, (got, want) in zip(DATA, folds):
        np.testing.assert_array_equal(got, want, err_msg=f"data={data}")
    np.testing.assert_array_equal(bits, want_bits)


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
def test_fold_in_keys_equals_jax_random_fold_in(impl):
    """``_rng.fold_in_keys`` (simulate's trial keys) gives ``jax.random.fold_in``'s keys, of the
    same implementation: one key with many data, many keys with one datum, in and out of jit.
    (As many keys as data: the two broadcast to one shape, whose eager programs they share.)"""
    root = jax.random.key(7, impl=impl)
    keys = jax.random.split(root, 5)
    data = np.asarray([0, 1, 2, 77, 2**31 - 1], np.int32)
    wants = jax.jit(lambda root, keys: (  # jax.random's keys, in one program
        jax.vmap(lambda d: jax.random.fold_in(root, d))(data),
        jax.vmap(lambda k: jax.random.fold_in(k, 3))(keys),
        jax.random.fold_in(root, np.uint32(4_000_000_000))))(root, keys)
    cases = list(zip((root, keys, root), (jnp.asarray(data), 3, 4_000_000_000), wants))
    for k, d, want in cases:
        for fn in (_rng.fold_in_keys, jax.jit(_rng.fold_in_keys)):
            got = fn(k, d)
            assert jax.random.key_impl(got) == jax.random.key_impl(want)
            assert got.shape == want.shape
            np.testing.assert_array_equal(np.asarray(jax.random.key_data(got)),
                                          np.asarray(jax.random.key_data(want)))


def test_other_key_implementations_are_not_claimed():
    assert _rng.key_data(jax.random.key(0, impl="rbg")) is None
    assert _rng.fast_standard(FAMILIES["zero"]) is None


def threefry_copies(hlo: str) -> int:
    """Fusion computations of a compiled program's text that hold a block's Threefry hash (at
    least 80 shift-left/xor instructions; the smaller per-block key derivation is not
    counted)."""
    copies = 0
    for block in re.split(r"\n(?=%?\S+ \()", hlo):
        head = block.split("\n", 1)[0]
        if "fused_computation" in head or head.startswith("%fused"):
            if len(re.findall(r"\b(?:shift-left|xor)\(", block)) >= 80:
                copies += 1
    return copies


def _compiled(mech, q, t, trials: int, shuffle: bool, reduce, once: bool):
    """The chunk compiled with the draws made once (``once``) or per consumer."""
    import importlib

    from svtjax import _driver

    simulate = importlib.import_module("svtjax.simulate")
    engine = importlib.import_module("svtjax.engine.platform")
    saved = engine.DRAW_ONCE
    want = {jax.default_backend()} if once else set()
    changed = want != saved
    if changed:  # the setting is read when the chunk is traced: drop traces made under another
        engine.DRAW_ONCE = want
        jax.clear_caches()
    try:
        qq, tt = mech._prepare(q, t)
        if reduce is not None:  # as simulate wraps it
            reduce = jax.tree_util.Partial(simulate._ignore_context, jax.tree_util.Partial(reduce))
        args = (mech, qq, tt, simulate.seed_key(0), 0, trials, reduce)
        plan = _driver.Plan(chunk=trials, shuffle=shuffle,
                            mode="outcome" if reduce is None else "sum",
                            width=engine.block_width(qq.shape[0]))
        compiled = _driver.run_chunk.lower(*args, plan=plan).compile()
    finally:
        if changed:
            engine.DRAW_ONCE = saved
            jax.clear_caches()
    return compiled, args, threefry_copies(compiled.as_text())


def _hash_fusions_by_scope(hlo: str) -> tuple[int, int]:
    """Call sites of fusions holding a full Threefry hash (:func:`threefry_copies`'s criterion)
    in a compiled program's text: (inside a ``while`` loop or a conditional branch, anywhere
    else)."""
    comps, name = {}, None
    for line in hlo.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith("{"):
            name = line.replace("ENTRY ", "").split()[0].lstrip("%")
            comps[name] = []
        elif name is not None:
            comps[name].append(line)
    ref = r"%([\w.\-]+)"
    refs = {c: set(re.findall(r"(?:calls|body|condition|to_apply|true_computation|"
                              r"false_computation)=" + ref, "\n".join(body)))
            | {r for group in re.findall(r"branch_computations=\{([^}]*)\}", "\n".join(body))
               for r in re.findall(ref, group)}
            for c, body in comps.items()}
    scoped = {r for body in comps.values() for r in re.findall(
        r"(?:body|condition|true_computation|false_computation)=" + ref, "\n".join(body))}
    scoped |= {r for body in comps.values()
               for group in re.findall(r"branch_computations=\{([^}]*)\}", "\n".join(body))
               for r in re.findall(ref, group)}
    todo = list(scoped)
    while todo:  # everything a loop body or a branch calls runs there too
        for r in refs.get(todo.pop(), ()):
            if r not in scoped:
                scoped.add(r)
                todo.append(r)
    hashed = {c for c, body in comps.items() if c.startswith("fused")
              and threefry_copies("%" + c + " () {\n" + "\n".join(body)) == 1}
    inside = outside = 0
    for c, body in comps.items():
        sites = sum(len(re.findall(r"calls=%" + re.escape(h) + r"(?![\w.\-])", "\n".join(body)))
                    for h in hashed)
        if c in scoped:
            inside += sites
        else:
            outside += sites
    return inside, outside


@pytest.mark.parametrize("n", [300, 5], ids=["5-blocks", "1-block"])
@pytest.mark.parametrize("shuffle", [False, True], ids=["fixed", "shuffle"])
def test_block_draws_are_hashed_once_per_block_on_cpu(shuffle, n):
    """XLA's CPU fusion copies a block's Threefry hash into every fusion that reads the draws
    (the headline kernel held four copies per loop); the engine draws inside a conditional
    (``svtjax.engine.DRAW_ONCE``) so that each block is hashed once: one hash per
    compaction level for the query noise, and with a random order drawn in XLA two more (the
    swap indices' first attempt and the redraw loop of Lemire's rejection; where the shuffle
    has a compiled prefix, ``svtjax.engine.shuffle_prefix``, the compiled kernels draw every swap
    index and XLA none); and once per chunk the threshold noise (one variate per trial, drawn
    before the loop inside a conditional of its own).
    Outside every loop and conditional, once per chunk: the trial keys, whose hash XLA may
    fuse into each stream's key derivation (at most one fusion per stream)."""
    if jax.default_backend() != "cpu":
        pytest.skip("DRAW_ONCE is a CPU setting")
    import svtjax
    from svtjax._loops import bucket_sizes

    mech = svtjax.get("svt-s", epsilon=1.0, c=3)
    trials = 160  # the 300-item chunks: tests/test_core.py's simulated svt-s runs compile them too
    q = np.arange(float(n))
    compiled, _, copies = _compiled(mech, q, n / 2, trials, shuffle, None, once=True)
    inside, outside = _hash_fusions_by_scope(compiled.as_text())
    assert inside + outside == copies == threefry_copies(compiled.as_text())
    # A level runs at least one block (svtjax._loops): 300 items make 5 blocks of 64, and 5 items
    # one narrow block, whose one-iteration loop XLA replaces by its body (the conditional's
    # predicate must not fold then: ``svtjax.engine.draws.once``).
    levels = len(bucket_sizes(trials)[:-(-n // 64)])
    from svtjax import _native
    from svtjax import engine as _engine

    compiled = _native.fisher_yates_target() is not None  # the engine's condition for a prefix
    prefix = _engine.shuffle_prefix(_engine.layout.layout(mech, n)) if shuffle and compiled else 0
    assert prefix == (128 if shuffle and compiled and n == 300 else 0)
    order = 2 if shuffle and not prefix else 0  # hashes of the swap indices per level
    assert inside == levels * (1 + order) + len(mech.initial_streams())
    assert outside <= len(mech.streams()) + shuffle


def test_mulhi32_words_match_the_64_bit_product():
    """Lemire's product in 16-bit limbs against numpy's uint64 product, extreme words
    included."""
    from svtjax.mechanisms.base import _mulhi32

    rng = np.random.default_rng(3)
    a = np.concatenate([rng.integers(0, 2**32, 4000, dtype=np.uint64),
                        [0, 1, 2**16 - 1, 2**16, 2**32 - 1, 2**32 - 1]]).astype(np.uint32)
    r = np.concatenate([rng.integers(1, 2**31, 4000, dtype=np.uint64),
                        [1, 2**31 - 1, 2**16, 1, 2**31 - 1, 2]]).astype(np.uint32)
    want = a.astype(np.uint64) * r.astype(np.uint64)
    high, low = jax.jit(_mulhi32)(jnp.asarray(a), jnp.asarray(r))
    np.testing.assert_array_equal(np.asarray(high), (want >> np.uint64(32)).astype(np.uint32))
    np.testing.assert_array_equal(np.asarray(low),
                                  (want & np.uint64(2**32 - 1)).astype(np.uint32))


def test_swap_partners_first_attempt_is_hashed_once_on_cpu():
    """Lemire's first attempt gives the swap partners and the rejection mask from one hash per
    position: both leave the conditional packed in one array, so XLA's CPU fusion does not copy
    the hash into one fusion per output (it did, doubling the partners' hashing; on two cores
    XLA ran the two copies at once, on one core dropping a copy made shuffled runs 1.05-1.12x
    faster). Counted: fusions of the compiled ``fast_block_order`` holding one Threefry hash
    (40-79 shift-left/xor instructions; the redraw loop's hold two) over a block's positions."""
    if jax.default_backend() != "cpu":
        pytest.skip("DRAW_ONCE is a CPU setting")
    import re

    from svtjax.engine import fast_block_order

    kd = _rng.key_data(jax.random.split(jax.random.key(1), 300))
    hlo = jax.jit(lambda kd, b: fast_block_order(kd, b, 1000)).lower(
        kd, jnp.arange(1, dtype=jnp.int32)).compile().as_text()
    block_hashes = 0
    for block in re.split(r"\n(?=%?\S+ \()", hlo):
        head = block.split("\n", 1)[0]
        ops = len(re.findall(r"\b(?:shift-left|xor)\(", block))
        if 40 <= ops < 80 and re.search(r"-> \w+\[300,1,64\]", head):
            block_hashes += 1
    assert block_hashes == 1
