"""Issue 58: no stale number, no resume that does not resume, no registry name that changes
meaning, no conflicting parameters, no stored record trusted on its name, and one line (exit 2)
for every bad input before any work."""

import importlib
import json
import pathlib
import shlex
import subprocess
import sys
import textwrap

import pytest

import svtjax
from svtjax import _identity, _plugins, _validate, sweep
from svtjax.mechanisms import base, register
from svtjax.sweep import grid, runner
from tests.stand_ins import no_kernels, run_cli
from tests.test_cli import SHARED, TINY  # the command-line tests' sweeps

ROOT = pathlib.Path(__file__).resolve().parents[1]



@pytest.fixture(autouse=True)
def _registry():
    """Mechanisms that these tests' plugins register stay out of the tests that follow."""
    before = dict(base._REGISTRY)
    yield
    base._REGISTRY.clear()
    base._REGISTRY.update(before)


def _tiny(tmp_path, text=TINY, name="tiny.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _quiet(_msg):
    pass


# -- item 1: a point's id covers the code of the mechanism that computes it ----------------------

PLUGIN = """
from svtjax.mechanisms import register
from svtjax.mechanisms.classic import LyuAlg1

@register
class TrustProbe(LyuAlg1):
    name = "trust-probe-{tag}"
    def threshold_noise(self):
        return super().threshold_noise()  # {edit}
"""


def test_a_plugin_edit_between_two_cli_runs_recomputes_the_point(tmp_path):
    """Two runs into one --out with the plugin unchanged reuse the point; after an edit of the
    plugin's mechanism the point is computed again (each run is its own process, as a user's).
    The probe computes as svt-s does, on the shapes of tests/test_cli.py's ``SHARED`` sweep, so
    its compiled chunk is the one the tests' compilation cache holds for that sweep."""
    probe = PLUGIN.replace("LyuAlg1", "SVTS")
    plugin = tmp_path / "probe.py"
    plugin.write_text(probe.format(tag="cli", edit="first"))
    cfg = _tiny(tmp_path, SHARED.replace('name = "svt-s"', 'name = "trust-probe-cli"')
                .replace("epsilon = [0.5, 2.0]", "epsilon = [1.0]"))
    out = tmp_path / "out"

    def run():
        res = subprocess.run([sys.executable, "-m", "svtjax.cli", "--plugin", str(plugin),
                              "sweep", cfg, "--out", str(out), "--no-plot", "--json"],
                             capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert res.returncode == 0, res.stderr
        summary = json.loads(res.stdout)
        return summary["computed"], summary["reused"]

    assert run() == (1, 0)
    assert run() == (0, 1)
    plugin.write_text(probe.format(tag="cli", edit="edited"))
    assert run() == (1, 0)


def test_the_code_hash_follows_the_plugins_own_helper_modules(tmp_path, monkeypatch):
    """A plugin that imports a helper file of its own: editing the helper changes the hash of
    the mechanism class (what the plugin imports from outside svtjax is covered)."""
    (tmp_path / "trust_helper_mod.py").write_text("SCALE = 1.0\n")
    plugin = tmp_path / "with_helper.py"
    plugin.write_text(textwrap.dedent("""
        import trust_helper_mod
        from svtjax.mechanisms import register
        from svtjax.mechanisms.classic import LyuAlg1

        @register
        class HelperProbe(LyuAlg1):
            name = "trust-probe-helper"
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = _plugins.load(str(plugin))
    cls = module.HelperProbe
    before = _identity.user_code_hash(cls)
    assert before == _identity.user_code_hash(cls)
    (tmp_path / "trust_helper_mod.py").write_text("SCALE = 2.0\n")
    assert _identity.user_code_hash(cls) != before
    # svtjax's own classes are covered by code_version, not hashed again
    assert _identity.user_code_hash(svtjax.mechanisms.entry("lyu-alg1").cls) == \
        _identity.user_code_hash(svtjax.mechanisms.entry("lyu-alg1").cls)


def test_point_ids_differ_for_two_plugin_sources_of_one_name(tmp_path):
    """The id names the mechanism's code: the same name registered from another source gives
    another id (and so is never resumed from the first one's records)."""
    raw = sweep.load_config(_tiny(tmp_path)).raw
    config = sweep.load_config(raw)
    point = config.points[0]
    original = point.point_id(config)
    probe = _plugins.load(str(_write(tmp_path / "p1.py", PLUGIN.format(tag="ids", edit="a"))))
    cls_a = probe.TrustProbe
    raw_a = {**raw, "mechanisms": [{"name": "trust-probe-ids"}]}
    id_a = sweep.load_config(raw_a).points[0].point_id(sweep.load_config(raw_a))
    base._REGISTRY.pop("trust-probe-ids")
    try:
        _plugins.load(str(_write(tmp_path / "p2.py", PLUGIN.format(tag="ids", edit="b"))))
        id_b = sweep.load_config(raw_a).points[0].point_id(sweep.load_config(raw_a))
    finally:
        base._REGISTRY["trust-probe-ids"] = base.Registration(cls_a)
    assert len({original, id_a, id_b}) == 3


def _write(path, text):
    path.write_text(text)
    return path


# -- item 3: the printed resume command resumes -----------------------------------------------

def test_the_printed_resume_command_reuses_every_saved_point(tmp_path, monkeypatch):
    """Ctrl-C after the first point of a sweep run with --trials, --seed and --plugin: running
    the printed command reuses the saved point and computes only the other one."""
    plugin = _write(tmp_path / "resume_plugin.py", PLUGIN.format(tag="resume", edit="x"))
    cfg = _tiny(tmp_path)
    out = tmp_path / "out dir"  # a space: the command must be quoted
    calls = []

    def update(self, amount, what, _update=runner._Progress.update):
        calls.append(what)
        if len(calls) == 2:
            raise KeyboardInterrupt
        _update(self, amount, what)

    argv = ["--plugin", str(plugin), "sweep", cfg, "--out", str(out), "--trials", "64",
            "--seed", "3", "--no-plot", "--no-progress"]
    with pytest.MonkeyPatch.context() as mp, no_kernels(mp):
        mp.setattr(runner._Progress, "update", update)
        code, _, err = run_cli(argv)
    assert code == 130, err
    printed = err.strip().splitlines()[-1].split("resume with: ", 1)[1]
    words = shlex.split(printed)
    assert words[0] == "svtjax"
    with no_kernels(monkeypatch):
        code, stdout, err = run_cli(words[1:] + ["--no-plot"])
    assert code == 0 and "1 point(s) computed, 1 reused" in stdout, (printed, err)


# -- item 5: a registered name never changes meaning ---------------------------------------------

def test_a_plugin_cannot_replace_a_built_in_even_with_the_same_qualname():
    original = svtjax.mechanisms.entry("lyu-alg1").cls

    class LyuAlg1(original):
        name = "lyu-alg1"

    for replace in (False, True):
        with pytest.raises(ValueError, match="built-in"):
            register(LyuAlg1, replace=replace)
    assert svtjax.mechanisms.entry("lyu-alg1").cls is original


def test_a_second_class_object_cannot_take_a_registered_name():
    original = svtjax.mechanisms.entry("lyu-alg1").cls

    def make():
        class Twin(original):
            name = "trust-twin"
        return Twin

    first = register(make())
    try:
        assert register(first) is first  # the same class object again: no change of meaning
        with pytest.raises(ValueError, match="already taken"):
            register(make())  # same qualname, another object
        second = register(make(), replace=True)  # an explicit, own replacement
        assert svtjax.mechanisms.entry("trust-twin").cls is second
    finally:
        base._REGISTRY.pop("trust-twin", None)


# -- item 6: no parameter set twice ---------------------------------------------------------------

@pytest.mark.parametrize("argv, word", [
    (["simulate", "-m", "lyu-alg1:c=5", "--c", "50"], "sets c"),
    (["simulate", "-m", "lyu-alg1:epsilon=0.5", "-e", "0.1", "-e", "1"], "sets epsilon"),
])
def test_simulate_refuses_a_spec_that_sets_what_an_option_sets(argv, word):
    code, out, err = run_cli(argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and word in err, err


def test_a_sweep_refuses_a_table_value_that_conflicts_with_the_grid(tmp_path):
    text = TINY.replace("epsilon = [0.5, 2.0]", "epsilon = [0.5]") + "epsilon = [1.0]\n"
    with pytest.raises(sweep.SweepConfigError, match="conflicts with \\[grid\\] epsilon"):
        sweep.load_config(_tiny(tmp_path, text))
    code, _, err = run_cli(["sweep", _tiny(tmp_path, text), "--out", str(tmp_path / "o")])
    assert code == 2 and err.count("\n") == 1 and "set a parameter in one place" in err, err
    # the same values in both places say the same thing: accepted
    same = TINY.replace("epsilon = [0.5, 2.0]", "epsilon = [0.5]") + "epsilon = 0.5\n"
    assert len(sweep.load_config(_tiny(tmp_path, same)).points) == 1


# -- item 8: a stored record is checked before it is reused ------------------------------------

def _corruptions(rec):
    stats = rec["stats"]
    first = next(iter(stats))
    yield "empty list", []
    yield "null", None
    yield "no stats", {k: v for k, v in rec.items() if k != "stats"}
    yield "a metric missing", {**rec, "stats": {k: v for k, v in stats.items() if k != first}}
    yield "malformed stats", {**rec, "stats": {**stats, first: "oops"}}
    yield "n = -5", {**rec, "stats": {**stats, first: [-5.0] + stats[first][1:]}}
    yield "n != trials", {**rec, "stats": {**stats, first: [39.0] + stats[first][1:]}}
    yield "another seed", {**rec, "seed": rec["seed"] + 1}


def test_an_unusable_point_record_is_recomputed_and_said(tmp_path, monkeypatch):
    cfg = sweep.load_config(_tiny(tmp_path, TINY.replace("epsilon = [0.5, 2.0]",
                                                         "epsilon = [0.5]")))
    out = tmp_path / "out"
    with no_kernels(monkeypatch):
        first = sweep.run(cfg, out, progress=False, log=_quiet)
        assert (first.computed, first.reused) == (1, 0)
        (path,) = (out / "points").glob("*.json")
        good = json.loads(path.read_text())
        again = sweep.run(cfg, out, progress=False, log=_quiet)
        assert (again.computed, again.reused) == (0, 1)
        for what, bad in list(_corruptions(good)) + [("not JSON", "{")]:
            path.write_text(bad if isinstance(bad, str) else json.dumps(bad))
            said = []
            res = sweep.run(cfg, out, progress=False, log=said.append)
            assert (res.computed, res.reused) == (1, 0), what
            assert any("recomputing the point" in m for m in said), (what, said)
            assert json.loads(path.read_text())["stats"] == good["stats"], what


# -- items 10-13, 15, 16: one line, exit 2, before any work ----------------------------------

def test_a_deeply_nested_toml_is_one_line(tmp_path):
    deep = "[sweep]\nname = \"x\"\n[grid]\nepsilon = " + "[" * 1500 + "]" * 1500 + "\n"
    code, _, err = run_cli(["sweep", _tiny(tmp_path, deep), "--out", str(tmp_path / "o")])
    assert code == 2 and err.count("\n") == 1 and "nested" in err, err[:500]
    shallow = "[sweep]\nname = \"x\"\n[grid]\nepsilon = " + "[" * 40 + "]" * 40 + "\n"
    code, _, err = run_cli(["sweep", _tiny(tmp_path, shallow), "--out", str(tmp_path / "o")])
    assert code == 2 and err.count("\n") == 1 and "more than 16 levels" in err, err[:500]


def test_a_huge_grid_is_refused_without_expanding_it(tmp_path, monkeypatch):
    eps = ", ".join(f"{0.001 * (i + 1):.4f}" for i in range(3000))
    cs = ", ".join(str(c) for c in range(1, 1001))
    text = TINY.replace("epsilon = [0.5, 2.0]", f"epsilon = [{eps}]").replace("c = [4]",
                                                                                f"c = [{cs}]")
    monkeypatch.setattr(grid, "Point", None)  # building any point would fail loudly
    code, _, err = run_cli(["sweep", _tiny(tmp_path, text), "--out", str(tmp_path / "o")])
    assert code == 2 and err.count("\n") == 1 and "3,000,000 points" in err, err


def test_the_grid_is_checked_once_per_cell(tmp_path, monkeypatch):
    """Every point is built and checked once, however often the points are asked for."""
    eps = ", ".join(f"{0.01 * (i + 1):.2f}" for i in range(50))
    text = TINY.replace("epsilon = [0.5, 2.0]", f"epsilon = [{eps}]").replace(
        'datasets = [{ name = "zipf", n = 120 }]',
        'datasets = [{ name = "zipf", n = 120 }, { name = "zipf", n = 100 }]')
    calls = []
    real = _validate.computable
    monkeypatch.setattr(_validate, "computable",
                        lambda mech, dtype, **k: (calls.append(str(dtype)),
                                                  real(mech, dtype, **k))[1])
    config = sweep.load_config(_tiny(tmp_path, text))
    for _ in range(3):
        assert len(sweep.expand(config)) == 100
    assert calls.count("float32") == 50  # (and svtjax.get's float64 check of the first cell)


@pytest.mark.parametrize("value", ["1e308", "0", "-1", "1e-9"])
def test_memory_budget_out_of_range_is_one_line(tmp_path, value):
    text = TINY.replace("shuffle = false", f"shuffle = false\nmemory_budget_mb = {value}")
    with pytest.raises(sweep.SweepConfigError, match="megabytes from"):
        sweep.load_config(_tiny(tmp_path, text))


def test_output_paths_are_checked_before_any_work(tmp_path, monkeypatch):
    cfg = _tiny(tmp_path)
    monkeypatch.setattr(importlib.import_module("svtjax._driver"), "run_chunk", None)
    code, _, err = run_cli(["sweep", cfg, "--out", ""])
    assert code == 2 and "--out is empty" in err, err
    taken = tmp_path / "points_file"
    taken.mkdir()
    (taken / "points").write_text("not a directory")
    code, _, err = run_cli(["sweep", cfg, "--out", str(taken), "--no-plot"])
    assert code == 2 and err.count("\n") == 1 and "is a file" in err, err
    dirs = tmp_path / "csv_dir"
    (dirs / "results.csv").mkdir(parents=True)
    code, _, err = run_cli(["sweep", cfg, "--out", str(dirs), "--no-plot"])
    assert code == 2 and err.count("\n") == 1 and "is a directory" in err, err


def test_bench_checks_its_output_directory_before_timing(monkeypatch):
    harness = importlib.import_module("benchmarks.harness")
    monkeypatch.setattr(harness, "run", lambda *a, **k: pytest.fail("ran the benchmark"))
    code = harness.main(["--quick", "--out", "/dev/null"])
    assert code == 2


def test_a_plugin_that_exits_at_import_is_a_user_error(tmp_path):
    plugin = _write(tmp_path / "exits.py", "import sys\nsys.exit(0)\n")
    code, out, err = run_cli(["--plugin", str(plugin), "list"])
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert f"plugin '{plugin}' cannot be imported: SystemExit: 0" in err


def test_a_non_utf8_toml_names_its_file(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(TINY.replace("tiny", "caf\xe9").encode("latin-1"))
    code, _, err = run_cli(["sweep", str(path), "--out", str(tmp_path / "o")])
    assert code == 2 and err.count("\n") == 1 and str(path) in err and "UTF-8" in err, err


def test_too_large_integers_say_the_range(tmp_path):
    text = TINY.replace("c = [4]", "c = [4294967296]")
    with pytest.raises(sweep.SweepConfigError, match="from 1 to 2147483647"):
        sweep.load_config(_tiny(tmp_path, text))


def test_a_sweep_refuses_what_simulate_refuses_for_svt_gap():
    """svt-gap's gaps of queries 3e38 against a threshold -3e38 cannot be held in float32:
    ``simulate`` refuses them, and so does a sweep, before anything compiles."""
    raw = {"sweep": {"name": "gaps", "trials": 4, "threshold": -3e38, "shuffle": False,
                     "datasets": [{"name": "binary", "n": 50, "positives": 5, "high": 3e38}]},
           "grid": {"epsilon": [1.0], "c": [2]}, "mechanisms": [{"name": "svt-gap"}]}
    with pytest.raises(sweep.SweepConfigError, match="svt-gap.*gap"):
        sweep.load_config(raw)
    raw["sweep"]["threshold"] = 0.0
    raw["sweep"]["datasets"][0]["high"] = 1000.0
    assert len(sweep.load_config(raw).points) == 1


def test_a_mechanism_without_a_source_file_is_hashed_by_its_source_or_never_reused():
    """A class defined where no file holds it (a notebook cell, ``python -c``): its own source
    names it where ``inspect`` finds it; otherwise its hash is unique to the process, so a
    stored point is recomputed rather than trusted."""
    import types

    from svtjax.mechanisms.classic import LyuAlg1

    def make(body):
        module = types.ModuleType("notebook_cell")  # no __file__
        sys.modules["notebook_cell"] = module
        try:
            exec(f"class Cell(LyuAlg1):\n    name = 'cell'\n    {body}\n",
                 {"LyuAlg1": LyuAlg1, "__name__": "notebook_cell"}, module.__dict__)
            return module.Cell
        finally:
            del sys.modules["notebook_cell"]

    first, again = make("x = 1"), make("x = 1")
    edited = make("x = 2")
    # no source is findable for exec'd code: never equal across definitions, so never reused
    hashes = {_identity.user_code_hash(c) for c in (first, again, edited)}
    assert len(hashes) == 3
    assert _identity.user_code_hash(first) == _identity.user_code_hash(first)
