"""Chunk sizing is the engine's, derived from what a mechanism declares (a rule's streams and
outputs; a selection kernel's ``Footprint``), with no sizing member on any mechanism; and it
gives every registered mechanism the sizes (hence the chunks, results and speed) it had when
each mechanism computed its own."""

import dataclasses
import functools
import math
import pathlib

import pytest

import svtjax
from svtjax import _driver, _plugins, engine
from svtjax.mechanisms.base import Footprint, Held, Mechanism
from svtjax.mechanisms.rules import ThresholdMechanism

SETTINGS = (  # (n, shuffle, platform, itemsize)
    (50, False, "cpu", 4), (1000, True, "cpu", 4), (10_000, False, "cpu", 4),
    (10_000, True, "cpu", 4), (10_000, True, "cpu-pure", 4), (1000, True, "cpu", 8),
    (1000, False, "gpu", 4), (10_000, True, "gpu", 4))
"""n = 50: a narrow block; "cpu": the compiled Fisher–Yates block runs (a single pass's items
are read from its permutation), "cpu-pure": it does not; "gpu": 256 positions a block."""

MiB8 = 8 * 2**20

# Bytes per trial at each of SETTINGS and the CPU chunk cap, as each mechanism computed them
# itself (``mech.working_bytes`` and ``mech.cpu_chunk_bytes``) before sizing moved into the
# engine. Parameters: ``example_params(epsilon=1.0, c=5, n=n)`` and the variant's (sizing reads
# only a mechanism's structure, so one build at n = 1,000 serves every n here).
BEFORE = {
    "lyu-alg1": ((959, 4197, 12274, 32370, 77370, 5221, 5221, 80826), None),
    "dpbook": ((1855, 5221, 13298, 33394, 78394, 7269, 9317, 84922), None),
    "roth11": ((1211, 8697, 57274, 77370, 122370, 14221, 9721, 125826), None),
    "lee-clifton": ((959, 4197, 12274, 32370, 77370, 5221, 5221, 80826), None),
    "stoddard": ((959, 4197, 12274, 32370, 77370, 5221, 5221, 80826), None),
    "chen": ((959, 4197, 12274, 32370, 77370, 5221, 5221, 80826), None),
    "svt-s": ((959, 4197, 12274, 32370, 77370, 5221, 5221, 80826), None),
    "svt-retr": ((3708, 59322, 563524, 583620, 583620, 60346, 60346, 587076), None),
    "svt-gap": ((1211, 8697, 57274, 77370, 122370, 14221, 9721, 125826), None),
    "em-peeling": ((665, 12065, 120065, 120065, 120065, 24105, 12065, 120065), MiB8),
    "report-noisy-max": ((665, 12065, 120065, 120065, 120065, 24105, 12065, 120065), MiB8),
    "noisy-top-k-gap": ((665, 12065, 120065, 120065, 120065, 24105, 12065, 120065), MiB8),
    "adaptive-svt-gap": ((2359, 14221, 103298, 123394, 168394, 25269, 18317, 174922), None),
    "svt-exp": ((959, 4197, 12274, 32370, 77370, 5221, 5221, 80826), None),
    "generalized-svt": ((959, 4197, 12274, 32370, 77370, 5221, 5221, 80826), None),
    "stagewise-svt": ((1855, 5221, 13298, 33394, 78394, 7269, 9317, 84922), None),
    "permute-and-flip": ((755, 13105, 130105, 130105, 130105, 25145, 13105, 130105), None),
    "report-noisy-max-exp": ((755, 13105, 130105, 130105, 130105, 25145, 13105, 130105), None),
    "gumbel-top-k": ((665, 12065, 120065, 120065, 120065, 24105, 12065, 120065), MiB8),
    "svt-retr max_passes=3": (
        (1739, 19947, 169774, 189870, 189870, 20971, 20971, 193326), None),
    "svt-exp append=True,max_passes=3": (
        (1739, 19947, 169774, 189870, 189870, 20971, 20971, 193326), None),
    "generalized-svt resample=True": (
        (1855, 5221, 13298, 33394, 78394, 7269, 9317, 84922), None),
    "report-noisy-max noise=laplace": (
        (665, 12065, 120065, 120065, 120065, 24105, 12065, 120065), MiB8),
}

VARIANTS = {"max_passes=3": {"max_passes": 3}, "append=True": {"append": True},
            "resample=True": {"resample": True}, "noise=laplace": {"noise": "laplace"}}
QUICK = {"stagewise-svt": {"k_max": 10}}
"""A cheaper calibration than the example's (k_max = 1,000); the cap is a traced number, so the
structure and the sizes are the same."""


def _platforms():
    cpu = engine.resolve("cpu")
    return {"cpu": dataclasses.replace(cpu, native=True),
            "cpu-pure": dataclasses.replace(cpu, native=False),
            "gpu": dataclasses.replace(engine.resolve("gpu"), native=False)}


@functools.lru_cache(maxsize=None)
def _build(row: str, n: int = 1000):
    name, _, variant = row.partition(" ")
    extra = dict(QUICK.get(name, {}))
    for part in filter(None, variant.split(",")):
        extra.update(VARIANTS[part])
    cls = svtjax.mechanisms.registry()[name]
    return svtjax.get(name, **{**cls.example_params(epsilon=1.0, c=5, n=n), **extra})


def _cap(mech, platform):
    budget = engine.chunk_budget(mech, math.inf, platform)
    return None if budget == math.inf else budget


@pytest.mark.parametrize("row", sorted(BEFORE))
def test_engine_sizes_every_mechanism_as_it_sized_itself(row):
    sizes, cap = BEFORE[row]
    platforms = _platforms()
    mech = _build(row)
    got = tuple(engine.working_bytes(mech, n, itemsize, shuffle, platforms[p])
                for n, shuffle, p, itemsize in SETTINGS)
    assert got == sizes
    assert _cap(mech, engine.resolve("cpu")) == cap
    assert _cap(mech, engine.resolve("gpu")) is None  # an accelerator is never capped


def test_plan_chunks_are_those_of_the_table():
    """``plan`` sizes a run's chunks by the engine's sizing and cache cap: on this platform, the
    chunk of a large run is the one the table's bytes and cap give."""
    config = engine.resolve()
    if config.name != "cpu":
        pytest.skip("the table's chunk caps are the CPU's")
    column = 3 if config.native else 4  # n = 10^4, shuffled
    for row in ("svt-s", "svt-retr", "report-noisy-max", "permute-and-flip"):
        sizes, cap = BEFORE[row]
        budget = _driver.MEMORY_BUDGET if cap is None else min(_driver.MEMORY_BUDGET, cap)
        plan = _driver.plan(_build(row), 10_000, 10**6, shuffle=True)
        assert plan.chunk == _driver.plan_chunk(10**6, sizes[column], budget), row


def test_no_mechanism_carries_sizing_members():
    """The rule contract has no sizing members: no registered mechanism (nor the base classes)
    defines ``working_bytes`` or ``cpu_chunk_bytes``, no rule a footprint; every selection
    kernel declares a Footprint."""
    classes = [Mechanism, ThresholdMechanism, *svtjax.mechanisms.registry().values()]
    for cls in classes:
        for member in ("working_bytes", "cpu_chunk_bytes"):
            assert not hasattr(cls, member), f"{cls.__name__}.{member}"
        if cls in (Mechanism, ThresholdMechanism) or issubclass(cls, ThresholdMechanism):
            assert not hasattr(cls, "footprint"), cls.__name__
        else:
            assert isinstance(cls.footprint, Footprint), cls.__name__


def test_a_plugin_rule_with_no_sizing_members_is_sized_from_its_streams():
    """The public plugin example declares streams and outputs only: it is sized as the
    registered rule with the same streams and outputs (Lyu et al.'s Algorithm 1), one that
    also releases values as svt-gap, and ``plan`` fits its chunks to the budget."""
    _plugins.load(str(pathlib.Path(__file__).resolve().parents[1] / "examples" /
                      "rising_svt.py"))
    rising = svtjax.mechanisms.registry()["example-rising-svt"]

    class Releasing(rising):  # the same rule, releasing a value at every position
        releases = True

    platforms = _platforms()
    for label, cls, like in ((rising.name, rising, "lyu-alg1"), ("releasing", Releasing,
                                                                   "svt-gap")):
        mech = cls(epsilon=1.0, c=5)
        got = tuple(engine.working_bytes(mech, n, itemsize, shuffle, platforms[p])
                    for n, shuffle, p, itemsize in SETTINGS)
        assert got == BEFORE[like][0], label
        assert _cap(mech, engine.resolve("cpu")) is None
        per_trial = engine.working_bytes(mech, 10_000, 4, True)
        plan = _driver.plan(mech, 10_000, 10**6, shuffle=True)
        assert plan.chunk * per_trial <= _driver.MEMORY_BUDGET < 2 * plan.chunk * per_trial


def test_a_mechanism_outside_the_rule_engine_is_sized_from_its_footprint():
    """A mechanism that is not a rule is sized from its declared Footprint, or, declaring none,
    the default one (three floats per item, an int32 order per item when shuffled: what
    ``Mechanism.working_bytes`` gave); a footprint that is not a Footprint is refused with one
    line naming it."""

    class Default(Mechanism):
        pass

    class Own(Mechanism):
        footprint = Footprint(held=(Held("scores", floats=1), Held("slots", per="position",
                                                                   bytes=2)), cache_bound=True)

        def stream_length(self, n):
            return 3

    outcome = 1000 * (1 + 4 + 2 * 4)
    assert engine.working_bytes(Default(), 1000, 4, False) == outcome + 1000 * 3 * 4
    assert engine.working_bytes(Default(), 1000, 4, True) == outcome + 1000 * (3 * 4 + 4)
    assert engine.working_bytes(Own(), 1000, 8, True) == 3 * (1 + 4 + 16) + 1000 * 8 + 3 * 2
    assert engine.chunk_budget(Own(), 2**30, engine.resolve("cpu")) == engine.CACHE_CHUNK_BYTES[
        "cpu"]
    assert engine.chunk_budget(Default(), 2**30, engine.resolve("cpu")) == 2**30

    class Wrong(Mechanism):
        footprint = 5

    with pytest.raises(TypeError, match="footprint must be a svtjax.mechanisms.base.Footprint"):
        engine.working_bytes(Wrong(), 10, 4, False)
    with pytest.raises(ValueError, match="per='item' or 'position'"):
        Footprint(held=(Held("x", per="trial"),))
