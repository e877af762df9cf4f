"""The table of mechanism configurations that drives the equivalence and no-retrace tests,
read from the registry (table-driven): every registered mechanism's test
cases (``svtjax.mechanisms.register(..., cases=[...])``), so a new mechanism is tested by being
registered, with no list here to edit."""

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
