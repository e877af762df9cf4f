"""A sweep's files: every file listed in results.json, statistics at the run's precision, the
exact values in their own table, and results read back by the recorded column types."""

import importlib
import json

import numpy as np
import pytest

from svtjax import sweep
from tests.stand_ins import no_kernels, run_cli, stand_in_chunk

TOML = """
[sweep]
name = "outputs"
trials = 40
datasets = [{ name = "zipf", n = 120 }]
metrics = ["f1", "ser"]
shuffle = false
[grid]
epsilon = [0.5, 1000.0]
c = [4]
[[mechanisms]]
name = "svt-s"
label = "nan"
monotonic = true
[[mechanisms]]
name = "svt-s"
label = "1e3"
"""


def _float32_chunk(*args, **kwargs):
    """The stand-in chunk with per-trial values that float32 cannot hold exactly (0.98)."""
    return stand_in_chunk(*args, **kwargs) * 0 + np.float32(0.98)


def test_every_file_is_listed_and_numbers_are_written_at_the_runs_precision(tmp_path,
                                                                               monkeypatch):
    pytest.importorskip("matplotlib")
    cfg = tmp_path / "o.toml"
    cfg.write_text(TOML)
    out = tmp_path / "out"
    with no_kernels(monkeypatch):
        monkeypatch.setattr(importlib.import_module("svtjax._driver"), "run_chunk",
                            _float32_chunk)
        code, stdout, err = run_cli(["sweep", str(cfg), "--out", str(out), "--no-progress"])
    assert code == 0, err
    side = json.loads((out / "results.json").read_text())
    written = sorted(p.name for p in out.iterdir() if p.is_file() and not p.name.startswith("."))
    assert side["files"] == written and "f1_vs_epsilon.png" in written
    text = (out / "results.csv").read_text()
    assert ",0.98," in text and "0.9799999952316284" not in text
    rows = sweep.read_results(out)
    assert {r["label"] for r in rows} == {"nan", "1e3"}  # labels stay strings
    assert all(isinstance(r["epsilon"], float) and isinstance(r["trials"], int) for r in rows)
    assert side["schema"]["results.csv"]["label"] == "str"


def test_a_csv_without_its_sidecar_is_typed_column_by_column(tmp_path):
    (tmp_path / "results.csv").write_text(
        "dataset,label,epsilon,metric,mean,trials,point_id\n"
        "zipf,nan,0.5,f1,0.25,10,a\nzipf,SVT,1e3,f1,0.5,10,b\n")
    rows = sweep.read_results(tmp_path)
    assert [r["label"] for r in rows] == ["nan", "SVT"]
    assert [r["epsilon"] for r in rows] == [0.5, 1000.0] and rows[0]["trials"] == 10
