"""``svtjax reproduce`` / ``svtjax list`` and the experiments' shared command line: the
top-level ``experiments/`` folder is found (beside the package source, in the current directory
or at ``$SVTJAX_EXPERIMENTS``) and said to be missing in one line otherwise; every experiment
refuses ``--trials 0`` and negative counts with one line and exit status 2; ``svtjax`` itself
neither imports nor ships ``experiments``."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import experiments
import svtjax
from svtjax import cli

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXE = [shutil.which("svtjax")] if shutil.which("svtjax") else [sys.executable, "-m", "svtjax.cli"]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))


def _run(*args, cwd=None, env=None):
    return subprocess.run(EXE + list(args), capture_output=True, text=True, timeout=600,
                          env=env or ENV, cwd=cwd)


def test_reproduce_dispatches_to_the_top_level_folder():
    res = _run("reproduce", "lyu2017", "--", "--help")
    assert res.returncode == 0, res.stderr
    assert "--quick" in res.stdout and "Table 3" in res.stdout
    res = _run("reproduce", "nope")
    assert res.returncode == 2 and "unknown experiment 'nope'" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_package_does_not_import_or_ship_the_experiments():
    assert not (ROOT / "svtjax" / "experiments").exists()
    assert pathlib.Path(experiments.__file__).parent == ROOT / "experiments"
    text = (ROOT / "pyproject.toml").read_text()
    assert 'include = ["svtjax*"]' in text  # setuptools' find: svtjax and its subpackages only
    code = ("import sys, svtjax, svtjax.sweep, svtjax.cli, svtjax.audit; "
            "print(any(m == 'experiments' or m.startswith('experiments.') for m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=ENV, cwd=ROOT)
    assert res.stdout.strip() == "False", res.stderr


def _fake_install(monkeypatch, tmp_path):
    """svtjax as if installed from a wheel: no experiments/ beside the package, none in the
    current directory, no SVTJAX_EXPERIMENTS."""
    monkeypatch.setattr(svtjax, "__file__", str(tmp_path / "site" / "svtjax" / "__init__.py"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(cli.EXPERIMENTS_ENV, raising=False)


def test_missing_experiments_are_explained(monkeypatch, tmp_path, capsys):
    _fake_install(monkeypatch, tmp_path)
    assert cli.find_experiments() is None
    assert cli.main(["reproduce", "lyu2017", "--quick"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "clone of the repository" in err and cli.EXPERIMENTS_ENV in err
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "none found" in out and cli.EXPERIMENTS_ENV in out
    # a variable that points elsewhere is refused in one line
    monkeypatch.setenv(cli.EXPERIMENTS_ENV, str(tmp_path))
    assert cli.main(["reproduce", "lyu2017"]) == 2
    assert "no __init__.py" in capsys.readouterr().err


def test_environment_variable_and_current_directory(monkeypatch, tmp_path):
    _fake_install(monkeypatch, tmp_path)
    monkeypatch.setenv(cli.EXPERIMENTS_ENV, str(ROOT / "experiments"))
    assert cli.find_experiments() == ROOT / "experiments"
    monkeypatch.delenv(cli.EXPERIMENTS_ENV)
    monkeypatch.chdir(ROOT)
    assert cli.find_experiments() == ROOT / "experiments"


def _fake_experiments(tmp_path, monkeypatch, codes):
    """A throwaway experiments folder whose modules record their argv and return ``code``."""
    folder = tmp_path / "fake" / "experiments"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text((ROOT / "experiments" / "__init__.py").read_text())
    for name, code in codes.items():
        (folder / f"{name}.py").write_text(
            f'"""Fake experiment {name}."""\nimport json, pathlib\nCALLS = []\n\n\n'
            f"def main(argv):\n    CALLS.append(list(argv))\n"
            f"    pathlib.Path(__file__).with_suffix('.argv').write_text(json.dumps(argv))\n"
            f"    print('fake {name} ran')\n    return {code}\n")
    for mod in [m for m in sys.modules if m == "experiments" or m.startswith("experiments.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setenv(cli.EXPERIMENTS_ENV, str(folder))
    return folder


def test_reproduce_all_passes_options_to_every_experiment(monkeypatch, tmp_path, capsys):
    _fake_experiments(tmp_path, monkeypatch, {"fake_a": 0, "fake_b": 3})
    out = str(tmp_path / "d")  # reproduce creates --out before running anything
    assert cli.main(["reproduce", "fake_a", "--quick", "--trials", "7", "--out", out,
                     "--datasets", "zipf"]) == 0
    calls = sys.modules["experiments.fake_a"].CALLS
    assert calls == [["--quick", "--trials", "7", "--out", out, "--datasets", "zipf"]]
    calls.clear()
    assert cli.main(["reproduce", "all", "--paper", "--out", str(tmp_path), "--jobs", "1"]) == 1
    assert calls == [["--paper", "--out", str(tmp_path / "fake_a")]]
    assert sys.modules["experiments.fake_b"].CALLS == [["--paper", "--out",
                                                        str(tmp_path / "fake_b")]]
    assert "failed: fake_b" in capsys.readouterr().err
    # a single experiment's own exit status comes back
    assert cli.main(["reproduce", "fake_b"]) == 3
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "fake_a" in out and "Fake experiment fake_b." in out


def test_reproduce_all_in_parallel_processes(monkeypatch, tmp_path, capsys):
    """``--jobs 2`` (the default on a 2-core CPU) runs every experiment in its own process with
    the same options, prints each one's output whole, and reports the failed ones."""
    import json

    folder = _fake_experiments(tmp_path, monkeypatch, {"fake_a": 0, "fake_b": 3, "fake_c": 0})
    monkeypatch.chdir(tmp_path)
    assert cli.main(["reproduce", "all", "--quick", "--out", str(tmp_path / "o"),
                     "--jobs", "2"]) == 1
    for name in ("fake_a", "fake_b", "fake_c"):
        argv = json.loads((folder / f"{name}.argv").read_text())
        assert argv == ["--quick", "--out", str(tmp_path / "o" / name)]
    captured = capsys.readouterr()
    assert "3 experiments, 2 at a time" in captured.out
    for name in ("fake_a", "fake_b", "fake_c"):
        assert f"fake {name} ran" in captured.out
    assert "reproduce fake_b --quick" in captured.out and "exit 3" in captured.out
    assert "failed: fake_b" in captured.err and "fake_a" not in captured.err
    # --jobs is for `all`, and counts from 1
    assert cli.main(["reproduce", "fake_a", "--jobs", "2"]) == 2
    assert cli.main(["reproduce", "all", "--jobs", "0"]) == 2
    err = capsys.readouterr().err
    assert "--jobs applies to reproduce all" in err and "--jobs must be an integer from 1" in err


@pytest.mark.parametrize("trials", ["0", "-5"])
def test_reproduce_refuses_non_positive_trials(trials, capsys):
    assert cli.main(["reproduce", "lyu2017", "--trials", trials]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--trials must be an integer from 1" in err


@pytest.mark.parametrize("name", experiments.names())
@pytest.mark.parametrize("trials", ["0", "-3"])
def test_every_experiment_refuses_non_positive_trials(name, trials, capsys):
    """Before this fix ``if args.trials:`` silently ran the default for ``--trials 0``."""
    module = experiments.load(name)
    with pytest.raises(SystemExit) as done:
        module.main(["--quick", "--trials", trials, "--out", "/nonexistent/never-written"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--trials" in err and "must be an integer >=" in err


@pytest.mark.parametrize("how", ["module", "script"])
def test_entry_points_work_and_name_themselves(how):
    """Issue 59 item 19: ``python experiments/lyu2017.py`` failed on its relative imports and
    ``python -m experiments.lyu2017 --help`` called itself ``svtjax reproduce lyu2017``."""
    args = (["-m", "experiments.lyu2017"] if how == "module" else
            [os.path.join("experiments", "lyu2017.py")])
    res = subprocess.run([sys.executable, *args, "--help"], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    shown = "-m experiments.lyu2017" if how == "module" else args[0]
    assert res.stdout.startswith(f"usage: python {shown} "), res.stdout[:80]


def test_experiments_use_public_api_only():
    """No private svtjax name (``svtjax._x``, ``svtjax.mod._x``, ``mech._x``), no global
    registration, no ``scales()`` / ``budgets()`` / ``spec()`` internals in experiments/."""
    import re

    private = re.compile(r"svtjax(\.\w+)*\._\w+|from svtjax(\.\w+)* import _|"
                         r"\.(scales|budgets|host_budgets|spec|run_batch)\(|register_metric|"
                         r"_registry|_jsonable")
    for path in sorted((ROOT / "experiments").glob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not private.search(line), f"{path.name}:{i}: {line.strip()}"


def test_readme_lists_what_is_out_of_reach_offline():
    """Issue 15 item 9: one table in experiments/README.md of the papers' items that need data
    not available offline, with what fetch does once online."""
    text = (ROOT / "experiments" / "README.md").read_text(encoding="utf-8")
    table = text[text.index("## What cannot be reproduced offline"):]
    for needle in ("BMS-POS", "Kosarak", "AOL", "CIFAR-10", "svtjax.datasets.fetch"):
        assert needle in table, needle
    for name in experiments.names():
        assert f"`{name}.py`" in text, name
