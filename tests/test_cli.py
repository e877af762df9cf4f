"""The ``svtjax`` console entry point, run as a subprocess as a user would (exit statuses, what
reaches the process's stdout and stderr, signals), and the command's messages through
``svtjax.cli.main`` in this process where the property is not the process's."""

import importlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from svtjax import cli
from tests.stand_ins import no_kernels, run_cli

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


SHARED = """
[sweep]
name = "shared"
trials = 120
datasets = [{ name = "zipf", n = 300 }]
metrics = ["f1", "ser", "picks", "evaluated"]
dtype = "float64"
shuffle = false
[grid]
epsilon = [0.5, 2.0]
c = [3]
[[mechanisms]]
name = "svt-s"
monotonic = true
"""
"""A sweep that computes: the shapes of tests/test_sweep.py's shared sweep (``_config``: svt-s
with monotonic = true, 120 trials on zipf's 300 items in float64, its metrics in its order; ε and
c are traced), so that its compiled chunk comes from the tests' compilation cache."""


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
    """Two ``-m`` give two rows, in order, each labelled with its options and run with them.
    The two are one structure (svt-s with monotonic = true; the sensitivity is a traced
    number), so the process compiles one chunk program, not two. The command is a sweep
    (``svtjax.cli.simulate.simulation_config``); a sweep of two mechanism classes is
    tests/test_examples.py::test_example_sweep_toml_imports_the_plugin."""
    # 100 trials: one chunk of the sweep's, which never compacts (svtjax._loops.bucket_sizes),
    # so the program holds one copy of the engine's loop
    res = _run("simulate", "-m", "svt-s:monotonic=true", "-m", "svt-s:monotonic=true,sensitivity=2",
               "-e", "0.5", "--trials", "100", "--c", "10", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["mechanism"] for r in rows] == ["svt-s[monotonic=True]",
                                               "svt-s[monotonic=True,sensitivity=2]"]
    for r in rows:
        assert 0 <= r["f1"] <= 1 and 0 <= r["ser"] <= 1 and r["trials"] == 100
    assert rows[0]["f1"] != rows[1]["f1"]  # twice the noise: the second row's option was used


@pytest.mark.parametrize("args,needle", [
    (("simulate", "-m", "nope"), "unknown mechanism 'nope'"),
    (("simulate", "-m", "svt-s:epsilonx=1"), "does not take parameter"),
    (("simulate", "-e", "-1"), "epsilon must be a positive number"),
    (("simulate", "-d", "nodata"), "unknown dataset 'nodata'"),
    (("simulate", "-m", "svt-s:bad"), "cannot parse mechanism option"),
])
def test_bad_input_exits_nonzero_with_one_line(args, needle):
    """In this process (``svtjax.cli.main``): what the console script runs;
    :func:`test_bad_input_through_the_console_script_is_exit_2_and_one_line` checks the process
    boundary (the exit status, nothing else on the process's stderr) on one case of each
    subcommand."""
    code, _, err = run_cli(args)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1, err


def test_sweep_writes_results_table_and_plot(tmp_path):
    cfg = tmp_path / "shared.toml"
    cfg.write_text(SHARED)
    res = _run("sweep", str(cfg), "--out", str(tmp_path / "out"), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["computed"] == 2 and len(data["rows"]) == 2 * 4
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
    """In this process, as :func:`test_bad_input_exits_nonzero_with_one_line`."""
    cfg = tmp_path / "bad.toml"
    if text is not None:
        cfg.write_text(text)
    code, _, err = run_cli(["sweep", str(cfg), "--out", str(tmp_path / "out")])
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("args,needle", [
    (("simulate", "-d", "nodata"), "unknown dataset 'nodata'"),
    (("sweep", "{cfg}", "--out", "{out}"), "does not take parameter 'monotonc'"),
], ids=["simulate", "sweep"])
def test_bad_input_through_the_console_script_is_exit_2_and_one_line(tmp_path, args, needle):
    """The console script as a user runs it: bad input is exit status 2 and one line on the
    process's stderr (nothing printed on start-up, by JAX or Python's warnings, around it). One
    case per subcommand, each refused after its arguments parsed (simulate: a dataset name;
    sweep: a loaded config's mechanism parameter); every message is checked in this process by
    the two tests above."""
    cfg = _tiny(tmp_path, TINY.replace("monotonic = true", "monotonc = true"))
    res = _run(*(a.format(cfg=cfg, out=tmp_path / "out") for a in args))
    assert res.returncode == 2
    assert needle in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert res.stdout == ""


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
    """In this process: ``--help`` through the console script (exit 0, usage on stdout) is
    :func:`test_audit_and_bench_help_through_the_console_script`'s ``bench --help``."""
    code, out, err = run_cli(["--help"])
    assert code == 0, err
    for command in ("list", "simulate", "sweep", "reproduce", "audit", "bench"):
        assert command in out


# -- issue 20: no traceback, one line, exit 2; Ctrl-C; output hygiene ---------------------------

def _tiny(tmp_path, text=TINY):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(text)
    return str(cfg)


def _no_chunk(*args, **kwargs):
    raise AssertionError("the sweep ran although the command should have been refused")


@pytest.mark.parametrize("argv,needle", [
    (["sweep", "{cfg}", "--out", "/proc/forbidden"],
     "cannot create the output directory '/proc/forbidden'"),
    (["sweep", "{cfg}", "--out", "{file}"], "is an existing file, not a directory"),
    (["reproduce", "lyu2017", "--quick", "--out", "/proc/nope"],
     "--out /proc/nope: cannot create the directory"),
    (["reproduce", "lyu2017", "--quick", "--trials", "0"], "--trials must be an integer from 1"),
    (["simulate", "--seed", str(2**70)], "--seed must be an integer in [0, 2**64)"),
    (["simulate", "--seed", "-1"], "--seed must be an integer in [0, 2**64)"),
    (["sweep", "{cfg}", "--seed", str(2**64), "--out", "{out}"], "--seed must be an integer"),
    (["simulate", "--trials", "0"], "--trials must be an integer from 1"),
    (["simulate", "--c", "0"], "--c must be an integer from 1"),
    (["simulate", "-e", "0.5", "-e", "0.5"], "--epsilon 0.5 is given more than once"),
    (["simulate", "-m", "svt_s"], "unknown mechanism 'svt_s' (did you mean 'svt-s'?)"),
    (["simulate", "-m", "SVT-S"], "(did you mean 'svt-s'?)"),
    (["simulate", "-d", "Zipff"], "unknown dataset 'Zipff' (did you mean 'zipf'?)"),
    (["simulate", "-m", "svt-s:monotonc=true"], "(did you mean 'monotonic'?)"),
    (["simulate", "--trials", "abc"], "invalid int value: 'abc'"),
    (["sweep", "{cfg}", "--x", "epsilonn", "--out", "{out}"],
     "the plot's x 'epsilonn' is not a parameter of this sweep (did you mean 'epsilon'?)"),
    (["sweep", "{cfg}", "--y", "F1", "--out", "{out}"],
     "the plot's y 'F1' is not a metric of this sweep (did you mean 'f1'?)"),
    (["sweep", "{cfg}", "--no-plot", "--x", "c", "--out", "{out}"], "no effect with --no-plot"),
    (["sweep", "{cfg}", "--num-devices", "64", "--out", "{out}"], "--num-devices must be at most"),
    (["reproduce", "lyu2018"], "unknown experiment 'lyu2018' (did you mean 'lyu2017'?)"),
    ([], "the following arguments are required"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_user_errors_are_one_line_with_exit_status_2(argv, needle, tmp_path, monkeypatch):
    """Issue 20, items 1, 7, 8, 9: each of these printed a traceback (exit 1), ran anyway
    (--trials 0, --seed 2**70), or failed only after the whole sweep (--x, --y). Now: exit 2,
    one line on stderr, nothing on stdout (no header before the check), no sweep run."""
    afile = tmp_path / "a-file"
    afile.write_text("x")
    fill = {"cfg": _tiny(tmp_path), "file": str(afile), "out": str(tmp_path / "out")}
    argv = [a.format(**fill) for a in argv]
    monkeypatch.setenv("SVTJAX_NO_CACHE", "1")
    monkeypatch.setattr(importlib.import_module("svtjax._driver"), "run_chunk", _no_chunk)
    code, out, err = run_cli(argv)
    assert code == 2 and needle in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert out == ""
    assert not (tmp_path / "out" / "points").exists()


def test_an_os_error_escaping_the_audit_is_one_line(monkeypatch):
    """A file-system error (an unwritable path) is the environment's: one line, exit 2."""
    audit = importlib.import_module("svtjax.cli.audit")

    def main(argv):
        raise OSError(13, "Permission denied", "/proc/x")

    monkeypatch.setattr(audit, "main", main)
    code, out, err = run_cli(["audit", "svt-s", "--epsilon", "1"])
    assert code == 2 and err.startswith("svtjax audit: error: ") and err.count("\n") == 1, err
    assert out == ""


@pytest.mark.parametrize("error", [
    OverflowError("cannot convert float infinity to integer"),
    ValueError("seconds must be a positive number;\ngot inf"),
    KeyError("nope"),
    ZeroDivisionError("float division by zero"),
])
def test_a_bug_escaping_the_audit_keeps_its_traceback(error, monkeypatch):
    """``svtjax.cli.audit.main`` reports its own input errors in one line; anything else
    escaping it is a bug in svtjax, reported with its traceback, never as bad input (issue 58,
    item 16)."""
    audit = importlib.import_module("svtjax.cli.audit")

    def main(argv):
        raise error

    monkeypatch.setattr(audit, "main", main)
    with pytest.raises(type(error)):
        run_cli(["audit", "svt-s", "--epsilon", "1"])


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch):
    audit = importlib.import_module("svtjax.cli.audit")
    monkeypatch.setattr(audit, "main", lambda argv: (_ for _ in ()).throw(KeyboardInterrupt))
    code, out, err = run_cli(["audit", "svt-s"])
    assert (code, out, err) == (130, "", "svtjax audit: interrupted\n")


def test_ctrl_c_during_a_sweep_says_what_is_saved_and_how_to_resume(tmp_path, monkeypatch):
    """Ctrl-C after the first of two points: exit 130 and one line with the number of points
    saved and the command that resumes; the rerun reuses the saved point."""
    from svtjax.sweep import runner

    cfg, out = _tiny(tmp_path), tmp_path / "out"
    calls = []

    def update(self, amount, what, _update=runner._Progress.update):
        calls.append(what)
        if len(calls) == 2:  # the second point's chunk: the first point is saved
            raise KeyboardInterrupt
        _update(self, amount, what)

    with pytest.MonkeyPatch.context() as mp, no_kernels(mp):
        mp.setattr(runner._Progress, "update", update)
        code, stdout, err = run_cli(["sweep", cfg, "--out", str(out), "--no-plot",
                                     "--no-progress"])
    assert code == 130 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last == (f"svtjax sweep: interrupted; 1 of 2 point(s) are saved in {out / 'points'}; "
                    f"resume with: svtjax sweep {cfg} --out {out}"), last
    assert not any(line.startswith("svtjax") for line in err.strip().splitlines()[1:-1])
    with no_kernels(monkeypatch):
        code, stdout, err = run_cli(["sweep", cfg, "--out", str(out), "--no-plot"])
    assert code == 0 and "1 point(s) computed, 1 reused" in stdout, err


def test_sigint_during_a_real_sweep_process(tmp_path):
    """A real SIGINT (Ctrl-C) to a running ``svtjax sweep`` process: exit 130, no traceback, the
    resume line. A plugin replaces the compiled chunk by a slow stand-in, so the process spends
    its time in the sweep loop, not compiling."""
    plugin = tmp_path / "slow_chunk.py"
    plugin.write_text(
        "import importlib, time\n"
        "from tests.stand_ins import stand_in_chunk\n"
        "def slow(*args, **kwargs):\n"
        "    time.sleep(0.5)\n"
        "    return stand_in_chunk(*args, **kwargs)\n"
        "importlib.import_module('svtjax._driver').run_chunk = slow\n")
    cfg = _tiny(tmp_path, TINY.replace("epsilon = [0.5, 2.0]",
                                       "epsilon = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0, 3.0]"))
    out = tmp_path / "out"
    proc = subprocess.Popen(EXE + ["--plugin", str(plugin), "sweep", cfg, "--out", str(out),
                                   "--no-plot", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(ENV, SVTJAX_NO_CACHE="1"), cwd=ROOT,
                            # as from a terminal: a suite started in the background by a
                            # non-interactive shell inherits SIGINT ignored, and so would the CLI
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    watchdog = threading.Timer(300, proc.kill)  # never hang the suite
    watchdog.start()
    seen = []
    for line in proc.stderr:  # wait for the second progress line: a point is saved
        seen.append(line)
        if line.startswith("[sweep]") and sum(x.startswith("[sweep]") for x in seen) == 2:
            break
    proc.send_signal(signal.SIGINT)
    stdout, rest = proc.communicate(timeout=300)
    watchdog.cancel()
    err = "".join(seen) + rest
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("svtjax sweep: interrupted; ") and "of 8 point(s) are saved" in last
    assert f"resume with: svtjax --plugin {plugin} sweep {cfg} --out {out}" in last
    assert stdout == ""


def test_progress_goes_to_stderr_and_the_table_to_stdout(tmp_path, monkeypatch):
    """Issue 20, item 9: progress lines (and the sweep's header) on stderr, never mixed with the
    table on stdout."""
    with no_kernels(monkeypatch):
        code, out, err = run_cli(["sweep", _tiny(tmp_path), "--out", str(tmp_path / "out"),
                                  "--no-plot", "--no-progress"])
    assert code == 0, err
    assert "[sweep]" in err and "svtjax sweep tiny: 2 points" in err
    assert "[sweep]" not in out and "svtjax sweep tiny" not in out
    lines = out.strip().splitlines()
    assert lines[0].split()[:3] == ["dataset", "label", "epsilon"]
    assert lines[-2].startswith("2 point(s) computed") and lines[-1].startswith("wrote ")


def test_duplicate_grid_values_are_refused(tmp_path, monkeypatch):
    """Issue 20, item 8: ``epsilon = [0.5, 0.5]`` computed the point twice (duplicate rows)."""
    cfg = _tiny(tmp_path, TINY.replace("epsilon = [0.5, 2.0]", "epsilon = [0.5, 0.5]"))
    monkeypatch.setattr(importlib.import_module("svtjax._driver"), "run_chunk", _no_chunk)
    code, out, err = run_cli(["sweep", cfg, "--out", str(tmp_path / "out")])
    assert code == 2 and "[grid] epsilon lists 0.5 more than once; give each value once" in err
