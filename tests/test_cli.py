"""The ``svtjax`` console entry point, run as a subprocess as a user would."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from svtjax import cli

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXE = [shutil.which("svtjax")] if shutil.which("svtjax") else [sys.executable, "-m", "svtjax.cli"]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

TINY = """
[sweep]
name = "tiny"
trials = 40
datasets = [{ name = "zipf", n = 120 }]
metrics = ["f1", "ser"]
shuffle = false
[grid]
epsilon = [0.5, 2.0]
c = [4]
[[mechanisms]]
name = "svt-s"
monotonic = true
"""


def _run(*args, timeout=600, cwd=None):
    return subprocess.run(EXE + list(args), capture_output=True, text=True, timeout=timeout,
                          env=ENV, cwd=cwd)


def test_list_json_names_every_mechanism():
    import svtjax

    res = _run("list", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert set(data["mechanisms"]) == set(svtjax.names())
    assert "zipf" in data["datasets"]
    assert "lyu2017" in data["experiments"] and "default" in data["sweep_configs"]
    assert {"f1", "ser", "picks"} <= set(data["metrics"])


def test_simulate_json_rows():
    res = _run("simulate", "-m", "svt-s:monotonic=true", "-m", "dpbook", "-e", "0.5",
               "--trials", "200", "--c", "10", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["mechanism"] for r in rows] == ["svt-s[monotonic=True]", "dpbook"]
    for r in rows:
        assert 0 <= r["f1"] <= 1 and 0 <= r["ser"] <= 1 and r["trials"] == 200


@pytest.mark.parametrize("args,needle", [
    (("simulate", "-m", "nope"), "unknown mechanism 'nope'"),
    (("simulate", "-m", "svt-s:epsilonx=1"), "does not take parameter"),
    (("simulate", "-e", "-1"), "epsilon must be a positive number"),
    (("simulate", "-d", "nodata"), "unknown dataset 'nodata'"),
    (("simulate", "-m", "svt-s:bad"), "cannot parse mechanism option"),
])
def test_bad_input_exits_nonzero_with_one_line(args, needle):
    res = _run(*args)
    assert res.returncode == 2
    assert needle in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_sweep_writes_results_table_and_plot(tmp_path):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    res = _run("sweep", str(cfg), "--out", str(tmp_path / "out"), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["computed"] == 2 and len(data["rows"]) == 4
    names = {pathlib.Path(f).name for f in data["files"]}
    assert {"results.csv", "results.json", "f1_vs_epsilon.png"} <= names
    again = _run("sweep", str(cfg), "--out", str(tmp_path / "out"), "--no-plot")
    assert again.returncode == 0, again.stderr
    assert "0 point(s) computed, 2 reused" in again.stdout and "svt-s" in again.stdout


@pytest.mark.parametrize("text,needle", [
    ("[sweep\n", "invalid TOML"),
    (TINY.replace('name = "svt-s"', 'name = "nope"'), "unknown mechanism 'nope'"),
    (TINY.replace("monotonic = true", "monotonc = true"), "does not take parameter 'monotonc'"),
    (None, "no such sweep config"),
], ids=["invalid-toml", "unknown-mechanism", "unknown-parameter", "missing-file"])
def test_sweep_bad_config_exits_nonzero_with_one_line(tmp_path, text, needle):
    cfg = tmp_path / "bad.toml"
    if text is not None:
        cfg.write_text(text)
    res = _run("sweep", str(cfg), "--out", str(tmp_path / "out"))
    assert res.returncode == 2
    assert needle in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_audit_without_the_module_fails_with_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "svtjax.audit", None)  # import fails as if absent
    assert cli.main(["audit", "--help"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "svtjax.audit" in err


def test_audit_and_bench_help_through_the_console_script():
    res = _run("audit", "--help")
    assert res.returncode == 0 or "svtjax.audit" in res.stderr, res.stderr
    res = _run("bench", "--help")
    assert res.returncode == 0, res.stderr
    assert "usage" in res.stdout.lower()


def test_help_lists_every_subcommand():
    res = _run("--help")
    assert res.returncode == 0
    for command in ("list", "simulate", "sweep", "reproduce", "audit", "bench"):
        assert command in res.stdout
