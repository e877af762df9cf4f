"""experiments/lyu2017.py (Lyu'17 Figure 3 / Table 3): a tiny run, and a fetched-dataset
fixture."""

import csv
import dataclasses
import os

import pytest

from experiments import lyu2017
from svtjax import datasets
from svtjax.datasets import _registry

FAST = ("SVT-DPBook", "SVT-S-1:c^(2/3)", "EM")


def test_table3_transcription():
    assert len(lyu2017.TABLE3) == 240
    # spot checks against the paper's text (Sec. 5 quotes Kosarak, ε = 0.1, c = 50: 0.705)
    assert lyu2017.TABLE3[("kosarak", 0.1, 50, "SVT-DPBook")] == (0.705, 0.142)
    assert lyu2017.TABLE3[("aol", 0.5, 300, "EM")] == (0.005, 0.001)
    assert lyu2017.TABLE3[("bms-pos", 0.1, 50, "SVT-ReTr-1:c^(2/3)")] == (0.001, 0.001)


def test_tiny_run_writes_outputs(tmp_path):
    config = lyu2017.Config(datasets=("zipf",), cs=(25, 50), epsilons=(0.5,), methods=FAST,
                            trials=8, out=str(tmp_path), verbose=False)
    rows, missing = lyu2017.run(config, log=lambda *a: None)
    assert missing == {}
    assert len(rows) == 2 * len(FAST)
    assert all(0.0 <= r["ser_mean"] <= 1.0 and r["ser_std"] >= 0.0 for r in rows)
    text = lyu2017.write_outputs(rows, missing, config, 1.0, log=lambda *a: None)
    with open(tmp_path / "ser.csv") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    assert (tmp_path / "fig3_zipf_eps0.5.png").stat().st_size > 0
    assert (tmp_path / "table3.md").read_text() == text
    assert "ranking check:" in text and "| zipf | 0.5 | 25 | EM |" in text


def test_ranking_check_explains_exceptions():
    row = dict(dataset="d", epsilon=0.5, c=50, trials=100)
    rows = [dict(row, method="SVT-DPBook", ser_mean=0.1, ser_std=0.01),
            dict(row, method="SVT-S-1:1", ser_mean=0.5, ser_std=0.01),
            dict(row, method="EM", ser_mean=0.0, ser_std=0.0)]
    messages = lyu2017.ranking_check(rows)
    assert any("SVT-S-1:1" in m and "SIGNIFICANT" in m for m in messages)
    assert messages[-1].endswith("1 of them significant")


def _write_fimi(path, items=80, transactions=400):
    # item i (1-based) occurs in the first max(1, transactions // i) transactions
    baskets = [[i for i in range(1, items + 1) if t < max(1, transactions // i)]
               for t in range(transactions)]
    path.write_text("".join(" ".join(map(str, b)) + "\n" for b in baskets))
    return transactions, items


def test_fetched_dataset_gets_paper_columns(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv(datasets.ENV_VAR, str(cache))
    # before the fetch, the Table 1 datasets are reported missing
    _, missing = lyu2017.load_available(("kosarak", "aol"))
    assert set(missing) == {"kosarak", "aol"}

    raw = tmp_path / "kosarak.dat"
    n_tx, n_items = _write_fimi(raw)
    small = dataclasses.replace(_registry.SPECS["kosarak"], num_transactions=n_tx,
                                num_items=n_items)
    monkeypatch.setitem(_registry.SPECS, "kosarak", small)
    datasets.fetch("kosarak", url=str(raw))  # as the user would, with a local copy

    out = tmp_path / "out"
    config = lyu2017.Config(datasets=("kosarak", "aol"), cs=(50,), epsilons=(0.5,),
                            methods=("SVT-S-1:c^(2/3)", "EM"), trials=5, out=str(out))
    rows, missing = lyu2017.run(config)
    assert set(missing) == {"aol"} and {r["dataset"] for r in rows} == {"kosarak"}
    lyu2017.write_outputs(rows, missing, config, 1.0)
    printed = capsys.readouterr().out
    assert "MISSING aol" in printed
    # the paper's Table 3 values are printed beside ours
    mean, std = lyu2017.TABLE3[("kosarak", 0.5, 50, "SVT-S-1:c^(2/3)")]
    assert f"| kosarak | 0.5 | 50 | SVT-S-1:c^(2/3) | {mean:.3f} ± {std:.3f} |" in printed
    with open(out / "ser.csv") as f:
        got = {r["method"]: r for r in csv.DictReader(f)}
    assert float(got["EM"]["paper_mean"]) == lyu2017.TABLE3[("kosarak", 0.5, 50, "EM")][0]
    assert os.path.exists(out / "fig3_kosarak_eps0.5.png")


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
