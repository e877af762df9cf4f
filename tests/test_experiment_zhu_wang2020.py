"""experiments/zhu_wang2020.py (Zhu & Wang 2020, Figures 1-2): a tiny run writes every
output, calibrations meet the target, and the exact mean length agrees with the simulation."""

import csv
import math

import numpy as np
from scipy import stats

from experiments import zhu_wang2020 as zw


def test_tiny_run_writes_outputs(tmp_path):
    config = zw.Config(cs=(1, 4), thresholds=(5.0,), trials=16, stream=256, fig2_queries=200,
                       fig2_trials=4, out=str(tmp_path), verbose=False)
    fig1, fig2 = zw.run(config, log=lambda *a: None)
    assert len(fig1) == 2 * len(zw.FIG1_METHODS)
    assert {r["method"] for r in fig2} == set(zw.FIG2_METHODS)
    for r in fig1:  # every method is calibrated to (ε, δ) by its own accounting
        assert r["epsilon"] <= config.epsilon * (1 + 1e-9), r
        assert r["epsilon"] >= 0.99 * config.epsilon, r
        assert 1 <= r["mean_length"] <= config.stream
        assert 1 <= r["median_length"] <= config.stream and 0 <= r["censored"] <= 1
        assert r["trials"] == config.trials
    # ε of the Gaussian mechanism grows with t; noisy screening is data-dependent and smaller
    gm = [r["epsilon"] for r in fig2 if r["method"] == "Gaussian mechanism"]
    assert all(np.diff(gm) > 0)
    text = zw.write_outputs(fig1, fig2, config, 1.0, log=lambda *a: None)
    for name in ("fig1_lengths.csv", "fig2_epsilon.csv", "fig1.png", "fig2.png", "summary.md"):
        assert (tmp_path / name).stat().st_size > 0
    with open(tmp_path / "fig1_lengths.csv") as f:
        assert len(list(csv.DictReader(f))) == len(fig1)
    assert "Exp 3" in text and "CIFAR-10" in text
    # the simulations ran on the sweep engine, which kept its tidy results
    for sub in ("fig1_T5", "fig2"):
        assert (tmp_path / "sweep" / sub / "results.csv").stat().st_size > 0
    assert text.count("| yes |") + text.count("| no |") == 5


def test_expected_length_closed_form():
    """E[K] = ∫ f_ρ(z)/P(ν ≥ T + z) dz: with (nearly) no threshold noise K is geometric with
    mean 1/P(ν ≥ T) = 2e^{T/λ} for ν ~ Lap(λ), T > 0."""
    lam, t = 1.5, 2.0
    got = zw.expected_length(stats.laplace(scale=1e-6), stats.laplace(scale=lam), t)
    assert abs(got - 2 * math.exp(t / lam)) < 1e-3 * got
