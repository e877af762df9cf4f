"""The ``svtjax`` console entry point, run as a subprocess as a user would."""

import json
import shutil
import subprocess
import sys

import pytest

EXE = [shutil.which("svtjax")] if shutil.which("svtjax") else [sys.executable, "-m", "svtjax.cli"]


def _run(*args, timeout=600):
    return subprocess.run(EXE + list(args), capture_output=True, text=True, timeout=timeout)


def test_list_json_names_every_mechanism():
    import svtjax

    res = _run("list", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert set(data["mechanisms"]) == set(svtjax.names())
    assert "zipf" in data["datasets"]


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
