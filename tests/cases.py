"""One table of named mechanism configurations drives the equivalence, distribution and
no-retrace tests (STYLE.md, "Tests: table-driven")."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np


@dataclasses.dataclass(frozen=True)
class Case:
    """A mechanism structure plus a sampler of its numeric parameters."""

    id: str
    name: str
    static: dict
    numeric: Callable[[np.random.Generator], dict]
    has_cutoff: bool = True


def _eps_c(rng):
    return {"epsilon": float(rng.uniform(0.2, 4.0)), "c": int(rng.integers(1, 6))}


def _eps(rng):
    return {"epsilon": float(rng.uniform(0.2, 4.0))}


def _eps_sensitivity(rng):
    return {"epsilon": float(rng.uniform(0.2, 4.0)), "sensitivity": float(rng.uniform(0.5, 3.0))}


def _eps_c_eps3(rng):
    d = _eps_c(rng)
    d["eps3"] = float(d["epsilon"] * rng.uniform(0.1, 0.5))
    return d


def _eps_c_raise(rng):
    d = _eps_c(rng)
    d["raise_by"] = float(rng.choice([0.0, 1.0, 3.0, 5.0]))
    return d


def _generalized(threshold_family, query_family, capped=True, stagewise=False):
    """Zhu & Wang'20 Algorithms 2-3: noise objects with random (traced) scales, c, k_max."""
    from svtjax.noise import FAMILIES

    def numeric(rng):
        d = {"c": int(rng.integers(1, 6)),
             "threshold_noise": FAMILIES[threshold_family](float(rng.uniform(0.2, 3.0))),
             "query_noise": FAMILIES[query_family](float(rng.uniform(0.2, 3.0)))}
        if capped:
            d["k_max"] = int(rng.integers(1, 40))
        if stagewise:
            d["c_stage"] = int(rng.integers(1, 4))
        return d
    return numeric


def _svt_exp(rng):
    """Liu'24 SVT-Exp: ε, c, and k of the optimal correction (Eq. 8) are leaves."""
    d = _eps_c(rng)
    d["correction_k"] = int(rng.integers(1, 12))
    return d


def _svt_exp_gaussian(rng):
    d = _eps_c(rng)
    d["delta"] = float(rng.uniform(1e-4, 0.1))
    return d


def _svt_exp_value(rng):
    d = _eps_c(rng)
    d["correction"] = float(rng.normal(0.0, 3.0))
    return d


CASES = [
    Case("lyu-alg1", "lyu-alg1", {}, _eps_c),
    Case("dpbook", "dpbook", {}, _eps_c),
    Case("roth11", "roth11", {}, _eps_c),
    Case("lee-clifton", "lee-clifton", {}, _eps_c),
    Case("stoddard", "stoddard", {}, _eps, has_cutoff=False),
    Case("chen", "chen", {}, _eps, has_cutoff=False),
    Case("svt-s", "svt-s", {}, _eps_c),
    Case("svt-s-monotonic", "svt-s", {"monotonic": True}, _eps_c),
    Case("svt-s-1:1", "svt-s", {"allocation": "1:1"}, _eps_c),
    Case("svt-s-1:3-monotonic", "svt-s", {"allocation": "1:3", "monotonic": True}, _eps_c),
    Case("svt-s-1:c", "svt-s", {"allocation": "1:c"}, _eps_c),
    Case("svt-s-eps3", "svt-s", {}, _eps_c_eps3),
    Case("svt-s-eps3-monotonic", "svt-s", {"monotonic": True}, _eps_c_eps3),
    Case("svt-gap", "svt-gap", {}, _eps_c),
    Case("svt-gap-monotonic", "svt-gap", {"monotonic": True}, _eps_c),
    Case("adaptive-svt-gap", "adaptive-svt-gap", {}, _eps_c),
    Case("adaptive-svt-gap-monotonic-theta", "adaptive-svt-gap", {"monotonic": True, "theta": 0.3},
         _eps_c),
    Case("adaptive-svt-gap-authors", "adaptive-svt-gap", {"monotonic": True,
                                                          "stopping": "authors"}, _eps_c),
    # Retraversal: the stream is max_passes x n long (static); raise_by is traced.
    Case("svt-retr", "svt-retr", {"max_passes": 3}, _eps_c_raise),
    Case("svt-retr-monotonic-1:1", "svt-retr", {"max_passes": 2, "monotonic": True,
                                                "allocation": "1:1"}, _eps_c_raise),
    # Selection: c / k fix the Outcome's shape, so they are static (fixed per case).
    Case("em-peeling", "em-peeling", {"c": 3}, _eps_sensitivity),
    Case("report-noisy-max", "report-noisy-max", {"k": 3}, _eps_sensitivity, has_cutoff=False),
    Case("report-noisy-max-gumbel-monotonic", "report-noisy-max",
         {"k": 2, "noise": "gumbel", "monotonic": True}, _eps_sensitivity, has_cutoff=False),
    Case("report-noisy-max-exponential", "report-noisy-max", {"noise": "exponential"},
         _eps_sensitivity, has_cutoff=False),
    Case("noisy-top-k-gap", "noisy-top-k-gap", {"k": 3}, _eps_sensitivity, has_cutoff=False),
    Case("noisy-top-k-gap-monotonic", "noisy-top-k-gap", {"k": 1, "monotonic": True},
         _eps_sensitivity, has_cutoff=False),
    # Zhu & Wang'20: any noise pair, k_max cap (traced; None is structural), RESAMPLE (static).
    Case("generalized-svt-gaussian", "generalized-svt", {}, _generalized("gaussian", "gaussian")),
    Case("generalized-svt-laplace-resample", "generalized-svt", {"resample": True},
         _generalized("laplace", "laplace", capped=False)),
    Case("generalized-svt-mixed", "generalized-svt", {}, _generalized("gaussian", "laplace")),
    Case("generalized-svt-mixed-resample", "generalized-svt", {"resample": True},
         _generalized("laplace", "gaussian")),
    Case("stagewise-svt", "stagewise-svt", {}, _generalized("gaussian", "gaussian",
                                                             stagewise=True)),
    Case("stagewise-svt-resample-uncapped", "stagewise-svt", {"resample": True},
         _generalized("laplace", "gaussian", capped=False, stagewise=True)),
    # Liu'24 SVT-Exp and its Table 3 baselines: noise family, correction kind, RESAMPLE, APPEND
    # and max_passes are static; ε, c, correction_k (hence the host-computed r), δ are leaves.
    Case("svt-exp", "svt-exp", {}, _svt_exp),
    Case("svt-exp-mean-monotonic", "svt-exp", {"correction": "mean", "monotonic": True},
         _eps_c),
    Case("svt-exp-none-resample", "svt-exp", {"correction": "none", "resample": True}, _eps_c),
    Case("svt-exp-append", "svt-exp", {"append": True, "max_passes": 3}, _svt_exp),
    Case("svt-exp-gumbel-mean-append-resample", "svt-exp",
         {"noise": "gumbel", "correction": "mean", "append": True, "max_passes": 2,
          "resample": True}, _eps_c),
    Case("svt-exp-laplace-1:1", "svt-exp", {"noise": "laplace", "correction": "none",
                                            "allocation": "1:1"}, _eps_c),
    Case("svt-exp-gaussian-append", "svt-exp", {"noise": "gaussian", "correction": "none",
                                                "append": True, "max_passes": 2},
         _svt_exp_gaussian),
    Case("svt-exp-value", "svt-exp", {"noise": "laplace"}, _svt_exp_value),
]


def case_ids():
    return [c.id for c in CASES]


def build(case: Case, rng: np.random.Generator, **overrides: Any):
    import svtjax

    params = {**case.static, **case.numeric(rng), **overrides}
    return svtjax.get(case.name, **params)
