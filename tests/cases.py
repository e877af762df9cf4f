"""The tables that drive the equivalence, no-retrace, privacy and distribution tests, read from
the registry (table-driven): every registered mechanism's test cases, privacy claims and
distribution tests (``svtjax.mechanisms.register(..., cases=[...], privacy=[...],
distribution=...)``), so a new mechanism is tested by being registered, with no list here to
edit."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

import svtjax
from svtjax import testing


@dataclasses.dataclass(frozen=True)
class RegisteredCase:
    """A registered mechanism's test case (``svtjax.testing.Case``) with its registry name."""

    id: str
    name: str
    case: testing.Case

    @property
    def static(self) -> dict:
        return self.case.static

    @property
    def numeric(self) -> Callable[[np.random.Generator], dict]:
        return self.case.numeric

    @property
    def has_cutoff(self) -> bool:
        """Whether the mechanism takes a cut-off ``c``."""
        return "c" in svtjax.mechanisms.parameters(self.name)


def registered_cases() -> list[RegisteredCase]:
    return [RegisteredCase(case.id, name, case) for name in svtjax.names()
            for case in testing.cases(name)]


CASES = registered_cases()


def case_ids():
    return [c.id for c in CASES]


def build(case: RegisteredCase, rng: np.random.Generator, **overrides: Any):
    return testing.build(case.name, case.case, rng, **overrides)


def package_names() -> list[str]:
    """The registered mechanisms defined in the svtjax package (a test may also have registered
    one of its own from outside it, e.g. ``tests/test_examples.py``'s rising-svt)."""
    return [name for name, cls in svtjax.mechanisms.registry().items()
            if cls.__module__.startswith("svtjax.")]


@dataclasses.dataclass(frozen=True)
class RegisteredClaim:
    """A registered mechanism's privacy claim (``svtjax.testing.Claim``)."""

    id: str
    name: str
    claim: testing.Claim


def registered_claims() -> list[RegisteredClaim]:
    return [RegisteredClaim(f"{name}:{claim.id}", name, claim) for name in svtjax.names()
            for claim in svtjax.mechanisms.entry(name).privacy]


@dataclasses.dataclass(frozen=True)
class RegisteredDistribution:
    """One registered distribution test (``svtjax.testing.DistributionCase``) with its
    mechanism's name and the paper's law for its parameters."""

    id: str
    name: str
    params: dict
    queries: np.ndarray
    thresholds: Any
    seed: int
    law: testing.Figure1Law


def registered_distributions() -> list[RegisteredDistribution]:
    out = []
    for name in svtjax.names():
        declared = svtjax.mechanisms.entry(name).distribution
        if isinstance(declared, testing.Distribution):
            out += [RegisteredDistribution(
                case.id if case.id.startswith(name) else f"{name}:{case.id}", name, case.params,
                np.asarray(case.queries, np.float64), np.asarray(case.thresholds, np.float64),
                case.seed, declared.law(case.params)) for case in declared.cases]
    return out
