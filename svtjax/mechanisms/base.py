"""Mechanism base class, the registry, and block-wise random streams.

Randomness layout (``docs/guides/performance.md``): a trial key is split into named
streams with ``fold_in(key, stream_id(name))``; position ``p`` of a stream comes from block
``p // BLOCK``, drawn as ``standard(fold_in(stream_key, p // BLOCK), (BLOCK,))[p % BLOCK]``.
The number at a position therefore depends only on (trial key, stream, position): a kernel that
stops after a few blocks reads exactly the numbers a full scan would, so early exit never changes
an outcome.

The registry (:func:`register`, :func:`get`, :func:`names`) holds the package's mechanisms and
any a user registers; each entry carries its numpy reference, its table of test cases, its
privacy claims and its distribution tests, which is how ``svtjax.reference``, ``svtjax.testing``
and the test suite find every mechanism.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from typing import Any, Callable, ClassVar, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from svtjax import _validate
from svtjax._core import Draws, Outcome
from svtjax._pytree import pytree_dataclass
from svtjax._types import Array, DTypeLike, Key

__all__ = ["BLOCK", "STREAM", "Mechanism", "Registration", "register", "get", "names",
           "registry", "parameters", "entry", "stream_id", "stream_key", "block_variates",
           "stream_variates", "block_order", "stream_order", "suggest", "Held", "Footprint"]

BLOCK = 64
"""Positions per random block. Part of the numbers' definition: changing it changes outcomes."""

STREAM = {"threshold": 0, "query": 1, "refresh": 2, "answer": 3, "order": 4, "query2": 5}
"""Stream ids of the built-in streams (part of the numbers' definition)."""


def stream_id(name: str) -> int:
    """The ``fold_in`` index of stream ``name``: :data:`STREAM` for the built-in names, else
    ``2**30 + crc32(name) % 2**30`` (stable across processes and versions, never a built-in
    id)."""
    if name in STREAM:
        return STREAM[name]
    return 2**30 + zlib.crc32(name.encode()) % 2**30


def stream_key(key: Key, name: str) -> Key:
    return jax.random.fold_in(key, stream_id(name))


def num_blocks(length: int) -> int:
    return max(1, math.ceil(length / BLOCK))


def block_variates(skey: Key, b, standard: Callable, dtype: DTypeLike) -> Array:
    """Standard variates for positions ``b*BLOCK .. b*BLOCK+BLOCK-1`` of one stream."""
    return standard(jax.random.fold_in(skey, b), (BLOCK,), dtype)


def stream_variates(skey: Key, length: int, standard: Callable, dtype: DTypeLike) -> Array:
    """All ``length`` variates of one stream (the concatenation of its blocks)."""
    blocks = jax.vmap(lambda b: block_variates(skey, b, standard, dtype))(
        jnp.arange(num_blocks(length)))
    return blocks.reshape(-1)[:length]


def _mulhi32(a: Array, r: Array) -> tuple[Array, Array]:
    """(high, low) 32-bit words of the 64-bit product a·r of uint32 arrays, with r < 2**31,
    in 16-bit limbs (uint32 arithmetic only, so it needs no x64 and vectorises)."""
    m16 = jnp.uint32(0xFFFF)
    a1, a0 = a >> 16, a & m16
    r1, r0 = r >> 16, r & m16
    low_low, mid1, mid2 = a0 * r0, a1 * r0, a0 * r1  # each < 2**32
    carry = (low_low >> 16) + (mid1 & m16) + (mid2 & m16)
    high = a1 * r1 + (mid1 >> 16) + (mid2 >> 16) + (carry >> 16)
    return high, a * r


def bounded_uniform(key: Key, span: Array) -> Array:
    """Integers exactly uniform on {0, ..., span-1}, elementwise (int32 ``span`` in [1, 2**31)).

    Lemire's multiply-and-reject method (D. Lemire, "Fast random integer generation in an
    interval", ACM TOMACS 29(1), 2019): for a uniform 32-bit word X, the product X·span has
    high word ⌊X·span/2**32⌋ and low word X·span mod 2**32; rejecting the X whose low word is
    below 2**32 mod span leaves exactly ⌊2**32/span⌋ words for every value of the high word, so
    the accepted high word is exactly uniform. A rejected element (probability below
    span/2**32, 2.3e-6 for span = 10^4) takes the next word of its own sequence: attempt r ≥ 1
    draws from ``fold_in(key, r)``, so every element's value depends only on ``key`` and its
    index. One 32-bit word per draw — half the random bits of a 64-bit product and none of
    ``jax.random.randint``'s integer remainders (the dearest part of a shuffled run on a CPU).
    """
    span = jnp.asarray(span, jnp.int32).astype(jnp.uint32)
    floor = (jnp.uint32(0) - span) % span  # 2**32 mod span: the rejected low words

    def attempt(k):
        high, low = _mulhi32(jax.random.bits(k, span.shape, jnp.uint32), span)
        return high, low < floor

    def redraw(carry):
        r, value, rejected = carry
        high, again = attempt(jax.random.fold_in(key, r))
        return r + 1, jnp.where(rejected, high, value), rejected & again

    value, rejected = attempt(key)
    _, value, _ = lax.while_loop(lambda c: jnp.any(c[2]), redraw, (jnp.int32(1), value, rejected))
    return value.astype(jnp.int32)


def block_order(skey: Key, b, n: int) -> Array:
    """Fisher–Yates swap indices for the positions of block ``b``.

    Position p (< n) gets j_p uniform on {p, ..., n-1} (:func:`bounded_uniform`); positions past
    the stream get j_p = p.
    """
    pos = b * BLOCK + jnp.arange(BLOCK, dtype=jnp.int32)
    j = pos + bounded_uniform(jax.random.fold_in(skey, b), jnp.maximum(n - pos, 1))
    return jnp.where(pos < n, j, pos)


def stream_order(skey: Key, n: int) -> Array:
    blocks = jax.vmap(lambda b: block_order(skey, b, n))(jnp.arange(num_blocks(n)))
    return blocks.reshape(-1)[:n]


REQUIRED = "REQUIRED"


class Held(NamedTuple):
    """One array a trial of a mechanism outside the rule engine holds inside a compiled chunk,
    besides its Outcome: ``floats`` numbers of the run's float dtype and ``bytes`` bytes of
    fixed-size ones, per item (``per="item"``: one per query) or per Outcome position
    (``per="position"``), held in every run or only in shuffled ones (``shuffled``). ``what``
    names it (what the kernel keeps there)."""

    what: str
    per: str = "item"
    floats: int = 0
    bytes: int = 0
    shuffled: bool = False


@dataclasses.dataclass(frozen=True)
class Footprint:
    """What a mechanism outside the rule engine (a selection kernel) declares about its memory,
    as data, for the engine to size chunks from (:func:`svtjax.engine.working_bytes`): the
    arrays a trial holds besides its Outcome (``held``, :class:`Held` records), and whether the
    kernel is cache-bound (it reads whole per-item arrays of every trial, so a chunk that fits
    the caches runs faster than one large one: the engine then caps a chunk at the platform's
    ``svtjax.engine.Platform.cache_chunk_bytes``). A threshold rule declares none: the engine
    derives its memory from its streams and what a position writes. A mechanism declares it as
    its class attribute ``footprint``; one outside the rule engine that declares none is sized
    by :data:`svtjax.engine.sizing.DEFAULT_FOOTPRINT`."""

    held: tuple = ()
    cache_bound: bool = False

    def __post_init__(self):
        for h in self.held:
            if not isinstance(h, Held) or h.per not in ("item", "position"):
                raise ValueError(f"a Footprint holds Held records with per='item' or "
                                 f"'position'; got {h!r}")


class Mechanism:
    """Base class of every registered mechanism (a frozen pytree dataclass).

    Threshold mechanisms derive from :class:`svtjax.mechanisms.ThresholdMechanism` (a rule on
    the one engine), the top-k selection mechanisms from ``selection.SelectionMechanism``; both
    implement the contract (``draw``, ``decide``, ``__call__``, the batched ``run_batch``) once.
    A mechanism states ``name`` and ``privacy()``.
    """

    name: ClassVar[str] = ""
    #: Parameters this mechanism no longer takes -> where their meaning went (one sentence);
    #: read, for the class itself only, by :func:`get`'s unknown-parameter message.
    moved_parameters: ClassVar[dict] = {}

    # -- contract -------------------------------------------------------------------------
    def __call__(self, key: Key, queries, thresholds) -> Outcome:
        """One trial: ``decide(draw(key, n), queries, thresholds)`` (possibly computed lazily)."""
        raise NotImplementedError

    def draw(self, key: Key, n: int, *, shuffle: bool = False, dtype: DTypeLike = None) -> Draws:
        raise NotImplementedError

    def decide(self, draws: Draws, queries, thresholds) -> Outcome:
        raise NotImplementedError

    def run_batch(self, keys: Key, queries: Array, thresholds: Array, *, shuffle: bool,
                  offsets: Optional[Array] = None, width: Optional[int] = None,
                  engine=None) -> Outcome:
        """A batch of trials (leading axis of ``keys``); ``offsets`` (float[batch]) are added to
        every threshold of a trial; ``width`` is the engine's positions per loop iteration and
        ``engine`` its per-platform choices (``svtjax.engine.Platform``; None: the default
        backend's)."""
        raise NotImplementedError

    def privacy(self):
        raise NotImplementedError

    def stream_length(self, n: int) -> int:
        """Length L of the Outcome arrays for ``n`` queries."""
        return n

    @classmethod
    def example_params(cls, *, epsilon: float = 1.0, c: int = 2, n: Optional[int] = None
                       ) -> dict:
        """Parameters for a standard run of this mechanism on ``n`` queries: ``epsilon`` and the
        cut-off ``c`` (``k`` for top-k selection) where it takes them. A mechanism with other
        required parameters overrides this (e.g. ``svt-exp``'s ``correction_k``); audits,
        benchmarks and the CLI build mechanisms from it."""
        del n
        accepted = _public_names(cls)
        values = {"epsilon": epsilon, "c": c, "k": c}
        return {k: v for k, v in values.items() if k in accepted}

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _prepare(queries, thresholds) -> tuple[Array, Array]:
        from svtjax._pytree import is_concrete

        if is_concrete((queries, thresholds)):
            q = _validate.finite_vector("queries", queries)
            t = _validate.thresholds_like("thresholds", thresholds, q.shape[0])
            if not isinstance(queries, jax.Array) and not isinstance(thresholds, jax.Array):
                # Host inputs: converted in numpy and handed to the compiled call as they are
                # (jnp.asarray and jnp.broadcast_to of a host array each compile a small program
                # per shape). Not device_put here: the compiled call's own transfer of a numpy
                # argument is cheaper (benchmarks/RESULTS.md, Decisions).
                if not np.issubdtype(q.dtype, np.floating):
                    q = q.astype(float)
                dtype = jax.dtypes.canonicalize_dtype(q.dtype)
                q = np.asarray(q, dtype)
                t = np.ascontiguousarray(np.broadcast_to(np.asarray(t, dtype), q.shape))
                return q, t
        q = jnp.asarray(queries)
        if not jnp.issubdtype(q.dtype, jnp.floating):
            q = q.astype(jnp.zeros((), float).dtype)
        t = jnp.broadcast_to(jnp.asarray(thresholds, q.dtype), q.shape)
        return q, t

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in _public_fields(type(self))}

    def reference_params(self) -> dict[str, Any]:
        """The keyword arguments of this mechanism's numpy reference: its parameters, arrays as
        Python numbers."""
        out = {}
        for key, value in self.params().items():
            if isinstance(value, np.ndarray) or hasattr(value, "shape"):
                arr = np.asarray(value)
                value = arr.item() if arr.ndim == 0 else arr
            out[key] = value
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{self.name}({args})"


@dataclasses.dataclass(frozen=True)
class Registration:
    """A registry entry: the mechanism class, its numpy reference and its test declarations.

    Attributes:
      cls: the mechanism class.
      reference: ``reference(draws, queries, thresholds, **mech.reference_params()) ->
        Outcome``, a plain numpy loop written from the paper (None for none).
      cases: ``svtjax.testing.Case`` objects: the structures (static parameters) and samplers of
        numeric parameters the equivalence tests run (the project's tests read them here).
      privacy: ``svtjax.testing.Claim`` objects: what ``privacy()`` must state for given
        parameters, from the paper (the privacy tests read them here).
      distribution: a ``svtjax.testing.Distribution`` (the paper's Figure 1 law and the runs
        that must follow it), a ``svtjax.testing.LawTestedIn`` (the test module that checks
        the mechanism's own law), or None (the distribution tests read it here).
    """

    cls: type
    reference: Optional[Callable] = None
    cases: tuple = ()
    privacy: tuple = ()
    distribution: Any = None


_REGISTRY: dict[str, Registration] = {}


def register(cls: Optional[type] = None, *, reference: Optional[Callable] = None,
             cases: Sequence = (), privacy: Sequence = (), distribution: Any = None,
             replace: bool = False):
    """Registers a mechanism class under its ``name`` (a class decorator, with or without
    arguments).

    A class that is not a dataclass yet is made a frozen pytree dataclass (its annotated fields
    become parameters: numbers are traced leaves, ``svtjax.mechanisms.static_field`` s are
    structure). After registration ``svtjax.get(name, ...)``, ``simulate``, ``svtjax sweep``
    (TOML ``name``, with a ``plugins`` entry importing the module), ``svtjax audit``, benchmarks
    and ``svtjax.testing`` all find it.

    Args:
      cls: the class (a subclass of ``ThresholdMechanism`` for a rule on the engine).
      reference: its numpy reference (see :class:`Registration`).
      cases: its test cases (``svtjax.testing.Case``).
      privacy: its privacy claims (``svtjax.testing.Claim``), checked by
        ``svtjax.testing.assert_privacy_claims``.
      distribution: its distribution tests (``svtjax.testing.Distribution`` or
        ``svtjax.testing.LawTestedIn``; see :class:`Registration`).
      replace: allow re-registering a name of one's own with another class object (e.g. a
        notebook cell run twice); otherwise any second registration of a name by a different
        class object is an error. A built-in name can never be replaced.

    Raises:
      TypeError: no ``name``, not a Mechanism subclass, a reference that is not callable, or
        privacy claims or distribution tests of the wrong type.
      ValueError: the name is taken by another class object (and ``replace`` is False), or
        is a built-in's.
    """
    def apply(cls):
        if not isinstance(cls, type) or not issubclass(cls, Mechanism):
            raise TypeError(f"register takes a subclass of svtjax.mechanisms.Mechanism "
                            f"(e.g. ThresholdMechanism); got {cls!r}")
        if not isinstance(cls.__dict__.get("name", cls.name), str) or not cls.name:
            raise TypeError(f"{cls.__name__} has no registry name (set name = \"...\")")
        if reference is not None and not callable(reference):
            raise TypeError(f"reference must be a function; got {reference!r}")
        _check_declarations(privacy, distribution)
        if not dataclasses.is_dataclass(cls) or "__dataclass_fields__" not in cls.__dict__:
            cls = pytree_dataclass(cls)
        old = _REGISTRY.get(cls.name)
        if old is not None and old.cls is not cls and old.cls.__module__.startswith("svtjax."):
            raise ValueError(f"registry name {cls.name!r} is svtjax's built-in "
                             f"{old.cls.__qualname__}; a built-in name never changes meaning, "
                             "even with replace=True: choose another name")
        if old is not None and old.cls is not cls and not replace:
            where = f"{old.cls.__module__}.{old.cls.__qualname__}"
            raise ValueError(f"registry name {cls.name!r} is already taken by {where}; choose "
                             "another name (a registered name never changes meaning)")
        _REGISTRY[cls.name] = Registration(cls, reference, tuple(cases), tuple(privacy),
                                           distribution)
        return cls

    return apply if cls is None else apply(cls)


def _check_declarations(privacy: Sequence, distribution: Any) -> None:
    from svtjax import testing

    bad = [c for c in privacy if not isinstance(c, testing.Claim)]
    if bad:
        raise TypeError(f"privacy takes svtjax.testing.Claim objects; got {bad[0]!r}")
    if not (distribution is None
            or isinstance(distribution, (testing.Distribution, testing.LawTestedIn))):
        raise TypeError("distribution takes a svtjax.testing.Distribution or "
                        f"svtjax.testing.LawTestedIn; got {distribution!r}")


def names() -> list[str]:
    """Registered mechanism names."""
    return list(_REGISTRY)


def registry() -> dict[str, type[Mechanism]]:
    """Registered mechanism classes by name."""
    return {name: r.cls for name, r in _REGISTRY.items()}


def entry(name: str) -> Registration:
    """The registry entry of ``name`` (class, reference, test cases)."""
    _lookup(name)
    return _REGISTRY[name]


def parameters(name: str) -> dict[str, Any]:
    """The parameters ``get(name, ...)`` accepts, with their defaults (``REQUIRED`` if none, or
    if the field's metadata says ``{"required": True}``; ``"REQUIRED when ..."`` for a field
    with ``{"required_when": "..."}``)."""
    cls = _lookup(name)
    out = {}
    for f in _public_fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
        else:
            out[f.name] = REQUIRED
        if f.metadata.get("required"):  # a default that only orders the fields
            out[f.name] = REQUIRED
        required_when = f.metadata.get("required_when")
        if required_when:
            out[f.name] = f"{REQUIRED} when {required_when}"
    return out


def _public_fields(cls) -> list:
    return [f for f in dataclasses.fields(cls) if not f.name.startswith("_")]


def _public_names(cls) -> set:
    if dataclasses.is_dataclass(cls):
        return {f.name for f in _public_fields(cls)}
    return set(getattr(cls, "__annotations__", {}))


suggest = _validate.suggest


def _lookup(name: str) -> type[Mechanism]:
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"unknown mechanism {name!r}{suggest(name, names())}; registered "
                         f"mechanisms are: {', '.join(names())}")
    return _REGISTRY[name].cls


def get(name: str, **params: Any) -> Mechanism:
    """Builds the mechanism registered as ``name`` with the given parameters.

    Raises:
      ValueError: unknown name (the message lists the registry), a parameter out of range, or
        parameters whose numbers (noise scales included) cannot be computed even in float64
        (``svtjax._validate.computable``; ``simulate`` and ``sweep`` check the run's dtype).
      TypeError: a parameter the mechanism does not take (the message lists the valid ones).
    """
    cls = _lookup(name)
    valid = [f.name for f in _public_fields(cls)]
    unknown = sorted(set(params) - set(valid))
    moved = {k: v for k, v in vars(cls).get("moved_parameters", {}).items() if k in unknown}
    if moved:
        key, where = next(iter(moved.items()))
        raise TypeError(f"{name} does not take parameter {key!r}: {where}")
    if unknown:
        hint = suggest(unknown[0], valid)
        raise TypeError(f"{name} does not take parameter(s) {unknown}{hint}; valid parameters "
                        f"are: {', '.join(valid)}")
    missing = [k for k, v in parameters(name).items() if v == REQUIRED and k not in params]
    if missing:
        raise TypeError(f"{name} requires parameter(s) {missing}")
    mech = cls(**params)
    _validate.computable(mech, np.float64)
    return mech


def to_numpy_draws(draws: Draws) -> Draws:
    """``Draws`` as numpy arrays (what ``svtjax.reference`` consumes)."""
    return Draws({k: np.asarray(v) for k, v in draws.items()})
