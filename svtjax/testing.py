"""Testing helpers for mechanisms: common-random-number equivalence against a numpy reference.

``docs/guides/correctness.md``: because ``decide`` is deterministic, a mechanism's JAX
kernel and its numpy reference, fed the same ``Draws``, must return identical ``answers`` and
``items`` (and ``values`` / ``cost`` to 1e-12 in float64, to float32 rounding in float32, of their
operands' magnitude). This module is the harness the project's own tests use for every
registered mechanism, and what a mechanism author uses for theirs::

    from svtjax import testing

    testing.assert_matches_reference("my-variant")       # its registered reference and cases
    testing.assert_matches_reference("my-variant", reference=my_numpy_loop,
                                     cases=[testing.Case("base", {}, testing.eps_c)])
    testing.assert_privacy_claims("my-variant")          # its registered privacy claims

A :class:`Case` is a mechanism structure (static parameters) plus a sampler of its numeric
parameters; each shape's cases are run in one compiled call (``lax.map`` over the cases), so
hundreds of random cases compile a handful of times.

A mechanism also declares, where it is registered (``register(..., privacy=...,
distribution=...)``), what its paper states: :class:`Claim` s, the privacy statements
``privacy()`` must make for given parameters (:func:`assert_privacy_claims` checks them), and
either a :class:`Distribution` — the Figure 1 loop of Lyu, Su & Li (2017) with the paper's
Laplace scales (:class:`Figure1Law`), whose exact law the project's distribution tests compare
simulated answer vectors with — or a :class:`LawTestedIn`, naming the test module that checks a
law of its own. The project's tests read these declarations from the registry, so a mechanism is
tested by being registered.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import re
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

__all__ = ["Case", "Claim", "Distribution", "DistributionCase", "Figure1Law", "LawTestedIn",
           "Q6", "R6", "T6", "eps", "eps_c", "eps_sensitivity", "eps_c_eps3", "eps_c_raise",
           "build", "cases", "random_inputs", "assert_matches_reference",
           "assert_privacy_claims", "assert_block_equals_scan", "assert_call_equals_decide"]


@dataclasses.dataclass(frozen=True)
class Case:
    """A mechanism structure plus a sampler of its numeric parameters.

    Attributes:
      id: a name for the case (test ids).
      static: parameters fixed for the case (structure, e.g. ``{"monotonic": True}``).
      numeric: ``numeric(rng) -> dict``: random numeric parameters (traced leaves), drawn anew
        for every random case.
    """

    id: str
    static: dict
    numeric: Callable[[np.random.Generator], dict]


@dataclasses.dataclass(frozen=True)
class Claim:
    """A privacy statement a mechanism's ``privacy()`` must make, as its paper states it.

    Attributes:
      id: a name for the claim (test ids).
      params: ``svtjax.get(name, **params)``.
      epsilon: the ε the paper proves for these parameters (a number, or a function of
        ``params``); ``math.inf`` where no finite ε holds.
      guarantee: the class name of the ``svtjax.accounting`` guarantee (``"PureDP"``,
        ``"NotPrivate"``, ``"Unproven"``, ...).
      cites: phrases the statement contains, each as whole words (``"Theorem 2"`` is not
        matched by ``"Theorem 23"``).
      excludes: phrases the statement must not contain (e.g. a neighbouring theorem).
      nominal: for a guarantee without a finite ε, the ε the authors claimed or the noise was
        calibrated to (None: not checked).
      delta: the δ at which ``epsilon`` holds (0 for pure DP).
      rel: the relative error allowed on ε (looser only for an ε found numerically, e.g. noise
        calibrated to a target ε by root finding).
    """

    id: str
    params: dict
    epsilon: Union[float, Callable[[dict], float]]
    guarantee: str = "PureDP"
    cites: tuple = ()
    excludes: tuple = ()
    nominal: Optional[float] = None
    delta: float = 0.0
    rel: float = 1e-14

    def expected_epsilon(self) -> float:
        return float(self.epsilon(self.params) if callable(self.epsilon) else self.epsilon)


@dataclasses.dataclass(frozen=True)
class Figure1Law:
    """The noise of one instance of Lyu, Su & Li (2017)'s Figure 1 loop, as a paper states it:
    ρ ~ Lap(threshold), ν_i ~ Lap(query) (0: no query noise), halt after ``cutoff`` ⊤ (None: no
    cut-off), ρ redrawn after every ⊤ when ``resample`` (Algorithm 2)."""

    threshold: float
    query: float
    cutoff: Optional[int]
    resample: bool = False


Q6 = (0.0, 1.0, 2.0, 1.5, 0.5, 1.0)
R6 = (2.0, 0.0, 1.0, 0.5, 1.5, 0.0)
T6 = (1.0, 0.5, 1.5, 1.0, 0.0, 2.0)
"""Streams of the distribution tests (queries Q6, R6; per-query thresholds T6): one length,
n = 6, for every case, so that each mechanism structure compiles once."""


@dataclasses.dataclass(frozen=True)
class DistributionCase:
    """One distribution test: ``svtjax.simulate(get(name, **params), queries, thresholds,
    seed=seed)`` in float64 against the exact law of its whole answer vectors."""

    id: str
    params: dict
    queries: tuple
    thresholds: Any
    seed: int


@dataclasses.dataclass(frozen=True)
class Distribution:
    """A Figure 1 mechanism's distribution tests: ``law(params)`` gives the paper's noise for
    the parameters (a :class:`Figure1Law`, written from the paper, never from the mechanism's
    code), ``cases`` the runs whose answer vectors must follow it."""

    law: Callable[[dict], Figure1Law]
    cases: tuple


@dataclasses.dataclass(frozen=True)
class LawTestedIn:
    """Where a mechanism whose law is not a :class:`Figure1Law` has its distribution tested:
    ``module``, a path of the project's test suite (which the suite checks exists and names
    the mechanism); ``what`` says which law."""

    module: str
    what: str


def eps(rng: np.random.Generator) -> dict:
    """ε uniform on [0.2, 4]."""
    return {"epsilon": float(rng.uniform(0.2, 4.0))}


def eps_c(rng: np.random.Generator) -> dict:
    """ε uniform on [0.2, 4], c uniform on 1..5."""
    return {"epsilon": float(rng.uniform(0.2, 4.0)), "c": int(rng.integers(1, 6))}


def eps_sensitivity(rng: np.random.Generator) -> dict:
    """ε uniform on [0.2, 4], Δ uniform on [0.5, 3]."""
    return {"epsilon": float(rng.uniform(0.2, 4.0)), "sensitivity": float(rng.uniform(0.5, 3.0))}


def eps_c_eps3(rng: np.random.Generator) -> dict:
    """:func:`eps_c` plus ε3 a random 10-50% of ε (SVT-S's noisy answers)."""
    d = eps_c(rng)
    d["eps3"] = float(d["epsilon"] * rng.uniform(0.1, 0.5))
    return d


def eps_c_raise(rng: np.random.Generator) -> dict:
    """:func:`eps_c` plus SVT-ReTr's ``raise_by`` in {0, 1, 3, 5}."""
    d = eps_c(rng)
    d["raise_by"] = float(rng.choice([0.0, 1.0, 3.0, 5.0]))
    return d


def cases(name: str) -> tuple:
    """The registered test cases of mechanism ``name``."""
    from svtjax.mechanisms import base

    return base.entry(name).cases


def build(name: str, case: Case, rng: np.random.Generator, **overrides: Any):
    """A mechanism of ``case``'s structure with random numeric parameters."""
    import svtjax

    return svtjax.get(name, **{**case.static, **case.numeric(rng), **overrides})


def random_inputs(rng: np.random.Generator, n: int, k: int, dtype) -> tuple:
    """``k`` random query vectors of length ``n`` and their thresholds: half integer scores with
    many ties, half real; half scalar thresholds (broadcast), half per-query. Returns
    ``(queries [k, n], thresholds [k, n], per_query bool[k])``."""
    ties = rng.random(k) < 0.5
    q_ties = rng.integers(0, 4, (k, n)).astype(dtype)
    q_real = rng.normal(0.0, 3.0, (k, n)).astype(dtype)
    q = np.where(ties[:, None], q_ties, q_real).astype(dtype)
    per_query = rng.random(k) < 0.5
    t_scalar = np.repeat(rng.normal(1.0, 1.5, (k, 1)), n, axis=1)
    t_vec = rng.normal(1.0, 1.5, (k, n))
    t = np.where(per_query[:, None], t_vec, t_scalar).astype(dtype)
    return q, t, per_query


@contextlib.contextmanager
def _precision(dtype):
    import jax

    if np.dtype(dtype) == np.float64 and not jax.config.jax_enable_x64:
        with jax.enable_x64(True):
            yield
    else:
        yield


def _stack(trees):
    import jax
    import jax.numpy as jnp

    return jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *trees)


_DRAW_BLOCKS = 16
""":func:`_draws` draws the fewest multiple of this many blocks that hold a stream's passes."""
_blocks_for = lambda needed: _DRAW_BLOCKS * -(-needed // _DRAW_BLOCKS)  # noqa: E731


@functools.lru_cache(maxsize=None)
def _family_program(family: type, dtype, blocks: int):
    """Per key and stream id (an argument): the stream's initial variate and its first
    ``blocks`` blocks (variate i of ``fold_in(stream key, b)`` at b·BLOCK + i), as
    ``engine.draw`` makes them from Threefry keys, through ``svtjax._rng`` where it can."""
    import jax
    import jax.numpy as jnp

    from svtjax import _rng
    from svtjax.mechanisms.base import BLOCK, block_variates

    fast = _rng.fast_standard(family)

    def one(key, sid):
        if fast is None:
            skey = jax.random.fold_in(key, sid)
            return (family.standard(skey, (), dtype), jax.vmap(
                lambda b: block_variates(skey, b, family.standard, dtype))(jnp.arange(blocks)))
        skd = _rng.fold_in(_rng.key_data(key), sid)
        return (fast(skd, 1, dtype)[..., 0],
                fast(_rng.fold_in(skd[None, :], jnp.arange(blocks, dtype=jnp.uint32)), BLOCK,
                     dtype))

    return jax.jit(jax.vmap(one, in_axes=(0, None)))


@functools.lru_cache(maxsize=None)
def _order_program(blocks: int):
    """Per key and length ``n`` (an argument): the swap partners of the first ``blocks``
    blocks of the ``order`` stream from Threefry keys, as ``engine.draw`` makes them."""
    import jax
    import jax.numpy as jnp

    from svtjax import _rng
    from svtjax.engine.draws import fast_block_order
    from svtjax.mechanisms.base import stream_id

    def one(key, n):
        okd = _rng.fold_in(_rng.key_data(key), np.uint32(stream_id("order")))
        return fast_block_order(okd[None, :], jnp.arange(blocks, dtype=jnp.int32),
                                n)[0].reshape(-1)

    return jax.jit(jax.vmap(one, in_axes=(0, None)))


def _draws(mech, keys, n: int, shuffle: bool, dtype):
    """``vmap(mech.draw)`` over ``keys`` in programs shared by every rule, stream and length:
    position i of pass k of a stream is variate i % BLOCK of block k·nb + i // BLOCK of the
    key folded with the stream's id, so one program per noise family and dtype draws any
    stream's blocks (the id an argument), one the swap partners of any length, and numpy cuts
    the passes and lengths (``mech.draw``'s numbers bit for bit: tests/test_equivalence.py).
    A mechanism with a ``draw`` of its own, or keys other than Threefry's (whose numbers may
    depend on how many are drawn at once), is drawn by ``mech.draw``."""
    import jax

    from svtjax import _rng
    from svtjax._core import Draws
    from svtjax.mechanisms.base import BLOCK, num_blocks, stream_id
    from svtjax.mechanisms.rules import ThresholdMechanism

    if type(mech).draw is not ThresholdMechanism.draw or _rng.key_data(keys) is None:
        # closed over: mechanisms that draw alike (a selection's standard variates) share it
        return jax.jit(jax.vmap(lambda key: mech.draw(key, n, shuffle=shuffle, dtype=dtype)))(
            keys)
    dtype = np.dtype(dtype)
    nb, passes = num_blocks(n), mech.passes()
    blocks = _blocks_for(passes * nb)
    drawn = {}
    for name, noise in mech.initial_streams().items():  # scalars: the same for every n
        program = _family_program(type(noise), dtype, blocks)
        drawn[name] = np.asarray(program(keys, np.uint32(stream_id(name)))[0])
    for name, noise in mech.streams().items():
        program = _family_program(type(noise), dtype, blocks)
        x = np.asarray(program(keys, np.uint32(stream_id(name)))[1])  # [keys, blocks, BLOCK]
        x = x[:, :passes * nb].reshape(len(x), passes, nb * BLOCK)[:, :, :n]
        drawn[name] = x.reshape(len(x), passes * n)
    if shuffle:
        order = np.asarray(_order_program(_blocks_for(nb))(keys, np.int32(n)))
        drawn["order"] = order[:, :n].astype(np.int32)
    return Draws(drawn)


def _resolve(name: str, reference, case_list):
    from svtjax.mechanisms import base

    reg = base.entry(name)
    reference = reg.reference if reference is None else reference
    if reference is None:
        raise ValueError(f"mechanism {name!r} has no registered numpy reference; pass "
                         "reference=... (a function (draws, queries, thresholds, **params))")
    case_list = tuple(reg.cases if case_list is None else case_list)
    if not case_list:
        raise ValueError(f"mechanism {name!r} has no registered test cases; pass cases=[Case(...)]")
    return reference, case_list


def assert_matches_reference(name: str, *, reference: Optional[Callable] = None,
                             cases: Optional[Sequence[Case]] = None,
                             shapes: Sequence[int] = (9, 50), cases_per_shape: int = 110,
                             dtypes: Sequence = (np.float64, np.float32),
                             shuffle: Any = (False, True), seed: int = 0,
                             check_scan: bool = True, check_lazy: bool = True) -> int:
    """Checks mechanism ``name`` against its numpy reference on common random numbers.

    For every case and stream length in ``shapes``, ``cases_per_shape`` mechanisms with random
    numeric parameters run on random inputs (:func:`random_inputs`) in one compiled call of
    ``decide`` (``lax.map`` over the cases) on ``draw``'s numbers; the reference gets the same
    draws as numpy arrays. Answers and items must be identical; values and costs equal to 1e-12
    (float64) or 1e-6 (float32), relative, and to that fraction of their operands' magnitude
    (:func:`_tolerances`). With ``check_scan`` the general per-position scan
    (``decide(..., vectorized=False)``) must equal the vectorised path bit for bit; with
    ``check_lazy`` the engine's lazy run of each case's key (``run_batch``: noise drawn block by
    block, the loop left once the trial halts; what ``mech(key, ...)`` and ``simulate`` run) must
    equal ``decide`` on ``draw``'s numbers bit for bit (the draws, the decisions and the lazy
    runs are separate compiled programs, as they are for a user).

    Args:
      name: a registered mechanism.
      reference: ``reference(draws, queries, thresholds, **mech.reference_params())``; default:
        the registered one.
      cases: default: the registered ones.
      shapes, cases_per_shape, dtypes, seed: what to run (float64 is switched on for the
        duration when ``jax_enable_x64`` is off). The defaults check what svtjax checks for its
        own mechanisms: float64 and float32.
      shuffle: item orders: False (the stream as given), True (a fresh random order per
        trial), or a sequence of both (the default: both, as svtjax's own tests do).
      check_scan, check_lazy: the two bit-for-bit checks above (the scan only in float64 and
        the stream's order; the lazy run where the mechanism has ``run_batch``).

    Returns:
      The number of (case, input) pairs checked.

    Raises:
      AssertionError: the first disagreement, naming the case, the parameters and the field.
    """
    import jax

    reference, case_list = _resolve(name, reference, cases)
    orders = (shuffle,) if isinstance(shuffle, bool) else tuple(shuffle)
    if not orders or not all(isinstance(o, bool) for o in orders):
        raise TypeError(f"shuffle must be True, False or a sequence of them; got {shuffle!r}")
    checked = 0
    for ci, case in enumerate(case_list):
        for dtype in dtypes:
            for oi, order in enumerate(orders):
                with _precision(dtype):
                    checked += _check_case(name, case, reference, dtype, order,
                                           seed + 1000 * ci + 100 * oi, shapes,
                                           cases_per_shape, check_scan and not order
                                           and np.dtype(dtype) == np.float64, check_lazy)
    del jax
    return checked


def _check_case(name, case, reference, dtype, shuffle, seed, shapes, per_shape, check_scan,
                check_lazy):
    import jax

    from svtjax.mechanisms import base

    rng = np.random.default_rng(seed)
    cases = []  # per shape: (n, mechanisms, keys, queries, thresholds, per-query flags)
    for n in shapes:
        mechs = [build(name, case, rng) for _ in range(per_shape)]
        keys = jax.random.split(jax.random.key(seed + n), per_shape)
        cases.append((n, mechs, keys) + random_inputs(rng, n, per_shape, dtype))

    lazy = check_lazy and type(cases[0][1][0]).run_batch is not base.Mechanism.run_batch

    def one(args):
        m, d, key, qq, tt = args
        return (m.decide(d, qq, tt),
                m.decide(d, qq, tt, vectorized=False) if check_scan else None,
                jax.tree_util.tree_map(lambda x: x[0], m.run_batch(key[None], qq, tt,
                                                                   shuffle=shuffle))
                if lazy else None)

    def run(inputs):
        # One program for every shape: the vectorised decision and (with check_scan) the
        # general scan, (with check_lazy) the lazy run. The cases run one after another
        # (lax.map), not vmapped: batching the engine's while loops costs as much staging as
        # tracing them.
        return [jax.lax.map(one, (stacked, draws, keys, q, t))
                for keys, stacked, q, t, draws in inputs]

    drawn = [_draws(mechs[0], keys, n, shuffle, dtype) for n, mechs, keys, *_ in cases]
    results = jax.device_get(jax.jit(run)([(keys, _stack(mechs), q, t, draws) for
                                           (_, mechs, keys, q, t, _), draws in zip(cases, drawn)]))
    results = [(draws,) + out for draws, out in zip(jax.device_get(drawn), results)]
    checked = 0
    for (n, mechs, _, q, t, per_query), (draws, out, scan, ran) in zip(cases, results):
        refs = []
        for i, mech in enumerate(mechs):
            d = jax.tree_util.tree_map(lambda x: np.asarray(x[i]), draws)
            thr = t[i] if per_query[i] else t[i, 0]
            refs.append(reference(d, np.asarray(q[i]), np.asarray(thr), **mech.reference_params()))
        # All cases at once; on a disagreement, case by case for a message naming the first.
        if not (_outcomes_match(out, refs, dtype, q, t) and
                all(other is None or all(np.array_equal(getattr(out, f), getattr(other, f),
                                                        equal_nan=True) for f in out._fields)
                    for other in (scan, ran))):
            for i, (mech, ref) in enumerate(zip(mechs, refs)):
                got = jax.tree_util.tree_map(lambda x: x[i], out)
                msg = (f"{case.id} n={n} case={i} {mech!r} dtype={np.dtype(dtype).name} "
                       f"shuffle={shuffle}")
                _assert_outcomes(got, ref, dtype, msg, q[i], t[i])
                for other, what in ((scan, "scan != block"),  # the general scan path
                                    (ran, "lazy run != decide(draw)")):
                    for field in () if other is None else got._fields:
                        np.testing.assert_array_equal(
                            getattr(got, field), getattr(other, field)[i],
                            err_msg=f"{msg}: {what} ({field})")
            raise AssertionError(f"{case.id} n={n}: the batched comparison failed but no "
                                 "single case did")  # pragma: no cover (a harness bug)
        checked += len(mechs)
    return checked


def _tolerances(dtype, ref_values, queries, thresholds) -> tuple:
    """(rtol, atol) of values and rtol of costs: 1e-12 (float64) or 1e-6 (float32) relative.

    A released value is a sum such as ``q_i + ν_i − (T_i + ρ)`` (or a difference of two noisy
    scores) that XLA may round differently from numpy (e.g. contracting ``q + s·z`` into one
    fused multiply-add), so the rounding allowed is also absolute, relative to the operands'
    magnitude rather than to a (possibly cancelled) result: the relative tolerance times a bound
    on the operands, the largest |query| plus the largest |threshold| (which bound q and T)
    plus, twice, the largest |value| (which with them bounds the noises' sum,
    |v − q + T| <= |v| + |q| + |T|)."""
    rel = 1e-12 if np.dtype(dtype) == np.float64 else 1e-6
    v = np.asarray(ref_values, float)
    bound = float(np.max(np.abs(np.asarray(queries, float)), initial=0.0)
                  + np.max(np.abs(np.asarray(thresholds, float)), initial=0.0))
    vmax = float(np.nanmax(np.abs(v), initial=0.0))
    return rel, rel * max(2.0 * (bound + vmax), 1.0), rel


def _close(got, ref, rtol, atol) -> bool:
    """``np.testing.assert_allclose``'s test (NaN equals NaN) as a boolean."""
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    if got.shape != ref.shape or not np.array_equal(np.isnan(got), np.isnan(ref)):
        return False
    ok = ~np.isnan(ref)
    return bool(np.all(np.abs(got[ok] - ref[ok]) <= atol + rtol * np.abs(ref[ok])))


def _outcomes_match(out, refs, dtype, q, t) -> bool:
    """Whether every case's outcome passes :func:`_assert_outcomes` (``q``, ``t``: the cases'
    queries and thresholds, one row each)."""
    for i, ref in enumerate(refs):
        if not (np.array_equal(out.answers[i], ref.answers)
                and np.array_equal(out.items[i], ref.items)):
            return False
        rtol, atol, rtol_cost = _tolerances(dtype, ref.values, q[i], t[i])
        if not (_close(out.values[i], ref.values, rtol, atol)
                and _close(out.cost[i], ref.cost, rtol_cost, 0.0)):
            return False
    return True


def _assert_outcomes(got, ref, dtype, msg, q, t) -> None:
    np.testing.assert_array_equal(got.answers, ref.answers, err_msg=f"{msg}: answers")
    np.testing.assert_array_equal(got.items, ref.items, err_msg=f"{msg}: items")
    rtol, atol, rtol_cost = _tolerances(dtype, ref.values, q, t)
    np.testing.assert_allclose(got.values, ref.values, rtol=rtol, atol=atol,
                               err_msg=f"{msg}: values")
    np.testing.assert_allclose(got.cost, ref.cost, rtol=rtol_cost, err_msg=f"{msg}: cost")


def assert_call_equals_decide(mech, queries, thresholds, seeds: Sequence[int] = range(5)) -> None:
    """``mech(key, ...)`` (lazy, early-exit) equals ``mech.decide(mech.draw(key, n), ...)``.

    Every seed's key in one compiled call (``lax.map`` over the keys): one trace of each path.
    """
    import jax
    import jax.numpy as jnp

    from svtjax import _validate

    q = _validate.finite_vector("queries", queries)  # an unsupported dtype: one line, no trace
    if isinstance(thresholds, (list, tuple)):  # a jit argument: one array, not a pytree
        thresholds = np.asarray(thresholds)
    seeds = list(seeds)
    if not seeds:
        return

    @jax.jit
    def both(mech, keys, q, thresholds):
        return jax.lax.map(lambda key: (mech(key, q, thresholds),
                                        mech.decide(mech.draw(key, q.shape[0]), q, thresholds)),
                           keys)

    keys = jnp.stack([jax.random.key(seed) for seed in seeds])
    lazy, full = jax.device_get(both(mech, keys, q, thresholds))
    for i, seed in enumerate(seeds):
        for field in lazy._fields:
            np.testing.assert_array_equal(np.asarray(getattr(lazy, field)[i]),
                                          np.asarray(getattr(full, field)[i]),
                                          err_msg=f"{mech!r} seed={seed}: {field}")


def assert_block_equals_scan(mech, queries, thresholds, seeds: Sequence[int] = range(5),
                             shuffle: bool = False) -> None:
    """The rule's block form equals the scan of its ``step`` on the same draws."""
    import jax

    q = np.asarray(queries)
    for seed in seeds:
        d = mech.draw(jax.random.key(seed), q.shape[0], shuffle=shuffle)
        a = mech.decide(d, q, thresholds)
        b = mech.decide(d, q, thresholds, vectorized=False)
        for field in a._fields:
            np.testing.assert_array_equal(np.asarray(getattr(a, field)),
                                          np.asarray(getattr(b, field)),
                                          err_msg=f"{mech!r} seed={seed}: {field}")


def assert_privacy_claims(name: str, claims: Optional[Sequence[Claim]] = None) -> int:
    """Checks that mechanism ``name``'s ``privacy()`` makes its registered (or the given)
    :class:`Claim` s.

    For each claim: the guarantee's class; its ε at the claim's δ (to the claim's ``rel``); for
    pure DP also ε at δ = 1e-6 (pure DP holds at every δ) and the RDP curve of Zhu & Wang
    (2020)'s Lemma 4 (``accounting.pure_dp_rdp``) at orders 1.5, 2 and 10; where no finite ε
    holds, also none at δ = 0.1, an infinite RDP curve and ``private`` False; the claimed
    ``nominal``; the cited and excluded phrases of the statement.

    Returns:
      The number of claims checked.

    Raises:
      AssertionError: the first claim not made, naming the mechanism, the claim and the
        statement.
      ValueError: no claims registered or given.
    """
    import svtjax
    from svtjax import accounting
    from svtjax.mechanisms import base

    claims = tuple(base.entry(name).privacy if claims is None else claims)
    if not claims:
        raise ValueError(f"mechanism {name!r} has no registered privacy claims; pass "
                         "claims=[Claim(...)]")
    orders = [1.5, 2.0, 10.0]
    for claim in claims:
        g = svtjax.get(name, **claim.params).privacy()
        where = f"{name} {claim.id} {claim.params}: {type(g).__name__} {g.statement!r}"
        want = claim.expected_epsilon()
        assert type(g).__name__ == claim.guarantee, f"{where}: not {claim.guarantee}"
        got = g.epsilon(delta=claim.delta)
        if math.isinf(want):
            assert math.isinf(got) and math.isinf(g.epsilon(delta=0.1)), f"{where}: ε {got}"
            assert not g.private and bool(np.all(np.isinf(g.rdp(orders)))), where
        else:
            assert math.isclose(got, want, rel_tol=claim.rel), f"{where}: ε {got}, paper {want}"
        if claim.guarantee == "PureDP":
            assert g.private and g.epsilon(delta=1e-6) == got, where
            np.testing.assert_array_equal(g.rdp(orders), accounting.pure_dp_rdp(got, orders),
                                          err_msg=where)
        if claim.nominal is not None:
            assert math.isclose(g.nominal, claim.nominal, rel_tol=1e-12), f"{where}: nominal"
        for phrase in claim.cites:
            assert _mentions(g.statement, phrase), f"{where}: does not cite {phrase!r}"
        for phrase in claim.excludes:
            assert not _mentions(g.statement, phrase), f"{where}: cites {phrase!r}"
    return len(claims)


def _mentions(statement: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", statement) is not None
