"""Ding, Wang, Zhang, Kifer 2019 (PVLDB 13(3)): the datasets, grid and settings of Figures 1-4,
the paper's stated numbers, the names of the per-trial metrics each sweep records, and the
experiment's ``Config`` (``experiments.ding2019``)."""

from __future__ import annotations

import dataclasses
import os
from typing import Optional, Sequence

PAPER_DATASETS = ("bms-pos", "kosarak")  # Ding'19 Table 2, besides the shipped T40I10D100K
OFFLINE_DATASETS = ("t40i10d100k", "bms-webview-1")
DEFAULT_DATASETS = OFFLINE_DATASETS + PAPER_DATASETS
PAPER_KS = tuple(range(2, 23))  # Section 7.3: "k is varied from 2 to 22"
PAPER_EPSILONS = tuple(round(0.1 * i, 1) for i in range(1, 16))  # authors' code: 0.1 .. 1.5
FIG1_EPSILON = 0.7
FIG2_K = 10
PAPER_TRIALS = 10_000
#: The paper's numbers (Sec. 7.3): "up to an average of 18 more answers when k was set to 22"
#: (the largest over its three datasets), "roughly 40% of the privacy budget is left over",
#: "the F-Measure being roughly 1.5 times that of Sparse Vector".
PAPER_EXTRA_ANSWERS, PAPER_EXTRA_K = 18, 22
PAPER_REMAINING_PCT = 40.0
PAPER_F_RATIO = 1.5
THEORY_REF = {"svt-gap": "Sec. 6.2", "noisy-top-k-gap": "Corollary 1"}
PAPER_FIG_DATASETS = ("t40i10d100k", "bms-pos", "kosarak")  # Ding'19 Figs 1-4
#: The per-trial metrics (``experiments._ding_metrics``) each sweep records: Figures 1-2's,
#: Figures 3-4's.
MSE_METRICS = ("ding_selected", "ding_used", "ding_mse_measure", "ding_mse_combined",
               "ding_mse_diff", "ding_covered", "ding_threshold")
ADAPTIVE_METRICS = ("ding_answers", "ding_top", "ding_precision", "ding_f", "ding_remaining",
                    "ding_reached")


@dataclasses.dataclass
class Config:
    datasets: Sequence[str] = DEFAULT_DATASETS
    ks: Sequence[int] = PAPER_KS
    epsilons: Sequence[float] = PAPER_EPSILONS
    trials: int = PAPER_TRIALS
    seed: int = 0
    out: str = os.path.join("results", "ding2019")
    cache_dir: Optional[str] = None  # dataset cache (default: svtjax.datasets.cache_dir())
    fig1_epsilon: float = FIG1_EPSILON
    fig2_k: int = FIG2_K
    order: str = "fixed"  # "fixed": one seeded shuffle per dataset; "per-run": one per run
    verbose: bool = True
    # re-run the Noisy-Top-K-with-Gap point farthest from the theory with bias_factor × trials
    # fresh runs (another seed), to tell a real bias from noise; 0 = skip (main(): 10 unless
    # --quick)
    bias_factor: int = 0
