"""Property-based fuzz tests of the public entry points (issue 20): ``svtjax.get`` with random
parameter dictionaries, ``svtjax.simulate`` with random arrays, ``svtjax.sweep.load_config``
with random TOML fragments, and ``svtjax.cli.main`` with random argv.

The property: every outcome is a result or one of the documented exceptions — ``TypeError`` /
``ValueError`` (``SweepConfigError`` is a ``ValueError``) with a one-line message; the command
line exits 0, or 2 with exactly one line on stderr — never another exception, never a
traceback. Hypothesis runs with a fixed seed (``derandomize=True``) and a bounded number of
examples, so the tests are deterministic; they are cheap because every example shares a few
compiled functions (``simulate``: one chunk size, one mechanism structure, two dtypes) or
compiles nothing (the CLI examples run the sweep driver on a stand-in for the compiled chunk,
which returns per-trial metric values without tracing anything).
"""

import atexit
import contextlib
import io
import json
import math
import os
import pathlib
import shutil
import tempfile

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import svtjax
from svtjax import _driver, _validate, cli, sweep
from svtjax.noise import Exponential, Gaussian, Laplace
from tests.stand_ins import stand_in_chunk

SETTINGS = dict(derandomize=True, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

BUILTIN = [n for n in svtjax.names()
           if svtjax.mechanisms.registry()[n].__module__.startswith("svtjax.")]
KEYS = sorted({k for n in BUILTIN for k in svtjax.mechanisms.parameters(n)} - {"composition"})
# (stage-wise SVT's composition="optimal" calibrates for seconds: fuzzed in its own values below)

SPECIAL = [0, 1, 2, 3, -1, 0.5, -0.0, 1e-40, 1e39, 1e-320, 5e-324, 1e308, 2**31, 2**31 - 1,
           2**40, 2**64, 2**70, math.nan, math.inf, -math.inf, 1e-7, 0.999999]
NUMBERS = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True),
                    st.integers(min_value=-2**70, max_value=2**70))
WORDS = ["1:1", "1:c", "1:(2c)^(2/3)", "explicit", "table4", "optimal", "mean", "none", "value",
         "laplace", "gumbel", "exponential", "gaussian", "zero", "auto", "fft", "kov", "strong",
         "", "svt-s"]
VALUES = st.one_of(
    st.none(), st.booleans(), NUMBERS, st.sampled_from(WORDS), st.text(max_size=4),
    st.lists(NUMBERS, max_size=3), st.tuples(NUMBERS, NUMBERS),
    st.lists(NUMBERS, min_size=0, max_size=3).map(np.array),
    st.sampled_from([Laplace(1.0), Gaussian(2.0), Exponential(0.5), np.float32(0.5),
                     np.int64(3), np.bool_(True), 1 + 2j, object(), {"a": 1}]))


def _one_line(err: BaseException) -> None:
    text = str(err)
    assert text.strip() and "\n" not in text.strip(), f"not one line: {text!r}"


PLAUSIBLE = st.one_of(st.sampled_from(SPECIAL), st.floats(1e-3, 1e3), st.integers(1, 40),
                     st.sampled_from(WORDS + [Laplace(1.0), Gaussian(2.0)]))


@settings(max_examples=250, **SETTINGS)
@given(name=st.sampled_from(BUILTIN), data=st.data(), base=st.booleans(),
       composition=st.sampled_from([None, "kov", "strong", "nope", 3]))
def test_get_builds_a_mechanism_or_says_why_in_one_line(name, data, base, composition):
    """``get`` with random parameters: a mechanism whose ``privacy()`` is a guarantee with a
    number (never NaN) and which either fits float32 or is refused for it in one line; or a
    ``TypeError``/``ValueError`` in one line. Keys are mostly the mechanism's own parameters,
    values mostly numbers at the edges (0, NaN, inf, 1e-40, 1e39, 2**31, 2**70, ...)."""
    own = [k for k in svtjax.mechanisms.parameters(name) if k != "composition"]
    keys = st.one_of(st.sampled_from(own), st.sampled_from(KEYS + ["bogus", "Epsilon"]))
    overrides = data.draw(st.dictionaries(keys, st.one_of(PLAUSIBLE, PLAUSIBLE, VALUES),
                                          max_size=3), label="overrides")
    cls = svtjax.mechanisms.registry()[name]
    params = {**(cls.example_params(n=20) if base else {}), **overrides}
    if composition is not None and "composition" in svtjax.mechanisms.parameters(name):
        params["composition"] = composition
    try:
        mech = svtjax.get(name, **params)
    except (TypeError, ValueError) as err:
        _one_line(err)
        event(f"refused: {type(err).__name__}")
        return
    event("built")
    guarantee = mech.privacy()
    assert not math.isnan(guarantee.epsilon()), (name, params, guarantee)
    assert str(guarantee) and guarantee.scope
    try:
        _validate.computable(mech, np.float32)
    except ValueError as err:
        _one_line(err)


# -- simulate with random arrays ----------------------------------------------------------------

MECHS = [svtjax.get("svt-s", epsilon=1.0, c=2), svtjax.get("svt-s", epsilon=1e39, c=2),
         svtjax.get("svt-s", epsilon=1e-40, c=2),
         svtjax.get("svt-s", epsilon=1.0, c=2, sensitivity=1e30)]  # one structure: one compile
                                                                    # per dtype
ELEMENTS = st.one_of(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3), st.floats(-1e3, 1e3),
                     st.sampled_from([0.0, 1e39, -1e39, 1e300, math.nan, math.inf, 1e-40]))
QUERY_DTYPES = st.sampled_from([np.float64, np.float32] * 4 + [np.int64, np.bool_,
                                                                np.complex128, np.str_])


@st.composite
def _arrays(draw, shapes):
    dtype = draw(QUERY_DTYPES)
    shape = draw(st.sampled_from(shapes))
    if dtype is np.str_:
        return np.full(shape, "a")
    if dtype is np.bool_:
        return draw(hnp.arrays(dtype, shape))
    if dtype is np.int64:
        return draw(hnp.arrays(dtype, shape, elements=st.integers(-5, 10**6)))
    if dtype is np.complex128:
        return draw(hnp.arrays(dtype, shape, elements=st.just(1 + 1j)))
    values = draw(hnp.arrays(np.float64, shape, elements=ELEMENTS))
    with np.errstate(over="ignore"):
        return values.astype(dtype)


@settings(max_examples=80, **SETTINGS)
@given(mech=st.sampled_from(range(len(MECHS))),
       queries=_arrays([(6,)] * 8 + [(), (0,), (2, 3)]),
       thresholds=st.one_of(ELEMENTS, ELEMENTS, _arrays([(6,), (6,), (5,)])),
       trials=st.sampled_from([1, 2, 3, 4] * 4 + [0, -1, 2.5, "3", 10**10]),
       seed=st.sampled_from([0, 7, 2**32, 2**64 - 1] * 4 + [2**64, -1, 1.5]))
def test_simulate_returns_outcomes_or_says_why_in_one_line(mech, queries, thresholds, trials,
                                                           seed):
    """``simulate`` on random arrays (dtypes, shapes, NaN/inf/float32-overflowing values) and
    random trials and seeds: Outcomes of the right shape with finite costs, or a one-line
    ``TypeError``/``ValueError`` raised before compiling. Valid examples share one mechanism
    structure and one chunk size, so the whole test compiles two kernels (float32, float64)."""
    mech = MECHS[mech]
    try:
        out = svtjax.simulate(mech, queries, thresholds, trials=trials, seed=seed,
                              chunk_size=4)
    except (TypeError, ValueError) as err:
        _one_line(err)
        event(f"refused: {type(err).__name__}")
        return
    event("ran")
    n = np.shape(queries)[0]
    assert out.answers.shape == (trials, mech.stream_length(n))
    assert np.all(np.isfinite(np.asarray(out.cost)))


# -- sweep configs from random TOML fragments ---------------------------------------------------

TOML_VALUES = ['1', '0', '-1', '3', '2.5', '1e39', '1e-40', 'nan', 'inf', 'true', '"zipf"',
               '"lyu"', '"ding"', '"float64"', '"float32"', '"auto"', '"f1"', '"svt-s"', '[]',
               '[0.5, 0.5]', '[0.5, 1.0]', '[1, 2]', '[1, 1.0]', '["f1"]', '["f1", "f1"]',
               '["f2"]', '[3, 3]', '"1:1"', '["1:1", "1:c"]', '"epsilon"', '"c"', '"allocation"',
               '18446744073709551615', '9223372036854775807', '"no_such_plugin_xyz"',
               '[{ name = "zipf", n = 30 }]', '[{ name = "zipf", n = 0 }]', '["zipff"]',
               '[{ name = "zipf", m = 3 }]', '[{ name = "binary", n = 30, high = nan }]',
               '{ x = 1 }', '"a/b"', '""']
SECTION_KEYS = {
    "sweep": ["name", "seed", "trials", "datasets", "metrics", "shuffle", "threshold",
              "memory_budget_mb", "dtype", "points_per_batch", "quantiles", "description",
              "plugins", "bogus"],
    "grid": ["epsilon", "c", "monotonic", "allocation", "sensitivity", "k", "bogus"],
    "mechanisms": ["name", "label", "epsilon", "c", "monotonic", "allocation", "eps3",
                   "sensitivity", "k", "monotonc"],
    "plot": ["x", "y", "z"],
}
BASE = {"sweep": {"name": '"fuzz"', "trials": "4", "datasets": '[{ name = "zipf", n = 30 }]',
                  "metrics": '["f1", "picks"]', "shuffle": "false"},
        "grid": {"epsilon": "[0.5, 1.0]", "c": "[3]"},
        "mechanisms": {"name": '"svt-s"', "monotonic": "true"},
        "plot": {}}
FUZZ_DIR = pathlib.Path(tempfile.mkdtemp(prefix="svtjax-fuzz-"))
atexit.register(shutil.rmtree, FUZZ_DIR, ignore_errors=True)


def _render(tables: dict, junk: str) -> str:
    lines = []
    for section, items in tables.items():
        if not items and section == "plot":
            continue
        lines.append(f"[[{section}]]" if section == "mechanisms" else f"[{section}]")
        lines += [f"{k} = {v}" for k, v in items.items()]
    return "\n".join(lines) + ("\n" + junk if junk else "") + "\n"


@settings(max_examples=120, **SETTINGS)
@given(changes=st.lists(st.tuples(st.sampled_from(list(SECTION_KEYS)), st.data()), max_size=3),
       drop=st.lists(st.sampled_from(["sweep", "grid", "mechanisms"]), max_size=1),
       junk=st.sampled_from([""] * 6 + ["x", "[sweep", "a = ", "= 1", "[other]\na = 1"]))
def test_sweep_config_loads_or_says_why_in_one_line(changes, drop, junk):
    """A TOML file made of a small valid sweep with random keys set to random values (and
    random junk appended) either loads — its points expand and its plot axes resolve — or
    raises one ``SweepConfigError`` (a ``ValueError``) or ``TypeError`` in one line."""
    tables = {k: dict(v) for k, v in BASE.items()}
    for section, data in changes:
        key = data.draw(st.sampled_from(SECTION_KEYS[section]))
        tables[section][key] = data.draw(st.sampled_from(TOML_VALUES))
    for section in drop:
        tables.pop(section)
    path = FUZZ_DIR / "fuzz.toml"
    path.write_text(_render(tables, junk))
    try:
        config = sweep.load_config(path)
    except (TypeError, ValueError) as err:
        _one_line(err)
        event(f"refused: {type(err).__name__}")
        return
    event("loaded")
    points = sweep.expand(config)
    assert points and len({p.point_id(config) for p in points}) == len(points)
    x, y = sweep.plot_axes(config)
    assert y in config.metrics and x in sweep.param_columns(points)


# -- the command line with random argv --------------------------------------------------------

CLI_FILE = FUZZ_DIR / "a-file"
CLI_FILE.write_text("not a directory\n")
CLI_TOML = FUZZ_DIR / "cli.toml"
CLI_TOML.write_text(_render(BASE, ""))
CLI_PLUGIN_OK = FUZZ_DIR / "cli_plugin_ok.py"
CLI_PLUGIN_OK.write_text("from svtjax.mechanisms import register\n"
                         "from svtjax.mechanisms.classic import LyuAlg1\n"
                         "@register\nclass FuzzCli(LyuAlg1):\n    name = 'fuzz-cli-ok'\n")
CLI_PLUGIN_EXIT = FUZZ_DIR / "cli_plugin_exit.py"
CLI_PLUGIN_EXIT.write_text("import sys\nsys.exit(1)\n")
PLUGINS = [str(CLI_PLUGIN_OK), str(CLI_PLUGIN_EXIT), str(FUZZ_DIR / "missing_plugin.py"),
           "no_such_plugin_module"]
SIMULATE_OPTIONS = {
    "-m": ["svt-s", "svt_s", "SVT-S", "dpbook", "svt-s:monotonic=true", "svt-s:bad",
           "svt-s:epsilonx=1", "svt-s:allocation=explicit", "svt-exp", "report-noisy-max:k=2",
           "lyu-alg1:c=5", "svt-s:epsilon=0.5", "fuzz-cli-ok"],
    "--plugin": PLUGINS,
    "-e": ["0.5", "1", "1e39", "-1", "nan", "inf", "1e-40", "x"],
    "--c": ["3", "0", "30", "-5", str(2**40), "x"],
    "--trials": ["2", "1", "0", "-3", str(2**31), "x"],
    "--seed": ["0", "5", "-1", str(2**64 - 1), str(2**64), str(2**70), "x"],
    "-d": ["binary", "zipf", "zipff", "BINARY", "bms-pos"],
}
SIMULATE_SWITCHES = ["--no-shuffle", "--shuffle", "--json", "--bogus", "stray"]
SWEEP_OPTIONS = {
    "--trials": ["2", "0", "x"], "--seed": ["1", str(2**64), "-3"],
    "--x": ["epsilon", "c", "epsilonn", "allocation"], "--y": ["f1", "picks", "f2"],
    "--num-devices": ["1", "0", "9"],
    "--out": [str(CLI_FILE), "/proc/nope", str(FUZZ_DIR / "out2"), ""],
    "--plugin": PLUGINS,
}
SWEEP_SWITCHES = ["--no-resume", "--no-plot", "--json", "--no-progress", "--bogus"]


@st.composite
def _argv(draw):
    """A subcommand, options with values drawn for each (mostly valid), switches, and now and
    then a stray token; simulate and sweep runs stay cheap (binary data, 2 trials)."""
    command = draw(st.sampled_from(["simulate"] * 3 + ["sweep"] * 3 + ["list", "nope"]))
    options, switches = ((SWEEP_OPTIONS, SWEEP_SWITCHES) if command == "sweep" else
                         (SIMULATE_OPTIONS, SIMULATE_SWITCHES))
    argv = [command]
    if command == "sweep":
        argv.append(draw(st.sampled_from([str(CLI_TOML)] * 4 + [str(FUZZ_DIR / "no.toml")])))
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.integers(0, 4)) == 0:
            argv.append(draw(st.sampled_from(switches)))
        else:
            flag = draw(st.sampled_from(sorted(options)))
            argv += [flag, draw(st.sampled_from(options[flag]))]
    if command == "simulate":
        argv = ["simulate", "--trials", "2", "-m", "svt-s", "-d", "binary", "--c", "3"] + argv[1:]
    if command == "sweep" and "--out" not in argv:
        argv += ["--out", str(FUZZ_DIR / "out")]
    return argv


def test_cli_exits_0_or_2_with_one_line():
    """Random argv through ``svtjax.cli.main`` (in this process, the compiled chunk and the
    plot replaced by stand-ins): exit status 0, or 2 with exactly one line on stderr."""
    from svtjax import plot


    @settings(max_examples=80, **SETTINGS)
    @given(argv=_argv())
    def run(argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
        lines = err.getvalue().strip().splitlines()
        event(f"exit {code}")
        assert code in (0, 2), (argv, code, err.getvalue())
        if code == 2:
            assert len(lines) == 1 and lines[0].startswith("svtjax"), (argv, err.getvalue())
        else:
            assert out.getvalue().strip(), argv

    from svtjax.mechanisms import base

    before = dict(base._REGISTRY)  # the plugins' mechanisms stay out of later tests
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SVTJAX_NO_CACHE", "1")
        mp.setattr(_driver, "run_chunk", stand_in_chunk)
        mp.setattr(plot, "utility_curves", lambda rows, path, **kw: None)
        mp.setattr(cli, "tune_allocator", lambda: None, raising=False)
        try:
            run()
        finally:
            base._REGISTRY.clear()
            base._REGISTRY.update(before)
    assert os.path.isdir(FUZZ_DIR)


# -- plugin files, point files and option combinations (issue 58) -----------------------------

PLUGIN_PARTS = [
    "",
    "import sys\nsys.exit(0)\n",
    "import sys\nsys.exit(3)\n",
    "raise RuntimeError('broken plugin')\n",
    "def f(:\n",
    "import no_such_module_xyz\n",
    "from svtjax.mechanisms import register\nfrom svtjax.mechanisms.classic import LyuAlg1\n"
    "@register\nclass LyuAlg1(LyuAlg1):\n    name = 'lyu-alg1'\n",
    "from svtjax.mechanisms import register\nfrom svtjax.mechanisms.classic import LyuAlg1\n"
    "@register\nclass Mine(LyuAlg1):\n    name = 'fuzz-mine-{n}'\n",
    "from svtjax.mechanisms import register\n@register\nclass NotAMechanism:\n    name = 'x'\n",
    "SWEEP_METRICS = 5\n",
    "x = 1\n",
]


@settings(max_examples=40, **SETTINGS)
@given(parts=st.lists(st.sampled_from(range(len(PLUGIN_PARTS))), min_size=1, max_size=3),
       command=st.sampled_from([["list"], ["simulate", "--trials", "2", "-d", "binary",
                                           "--c", "3", "-m", "svt-s"]]))
def test_plugin_files_load_or_say_why_in_one_line(parts, command):
    """A plugin file made of random fragments (a valid registration, a syntax error, an
    exception or ``sys.exit`` at import, a built-in name taken again, a class that is not a
    mechanism): the command exits 0, or 2 with one line, and no registered name changes."""
    from svtjax.mechanisms import base

    before = dict(base._REGISTRY)
    n = len(list(FUZZ_DIR.glob("plugin_*.py")))
    path = FUZZ_DIR / f"plugin_{n}.py"
    path.write_text("\n".join(PLUGIN_PARTS[i].replace("{n}", str(n)) for i in parts))
    out, err = io.StringIO(), io.StringIO()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("SVTJAX_NO_CACHE", "1")
            mp.setattr(_driver, "run_chunk", stand_in_chunk)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(["--plugin", str(path)] + command)
        lines = err.getvalue().strip().splitlines()
        event(f"exit {code}")
        assert code in (0, 2), (parts, code, err.getvalue())
        if code == 2:
            assert len(lines) == 1 and "plugin" in lines[0], (parts, err.getvalue())
        for name, entry in before.items():
            assert base._REGISTRY[name] is entry, name  # no name changed meaning
    finally:
        base._REGISTRY.clear()
        base._REGISTRY.update(before)


POINT_TOML = FUZZ_DIR / "points.toml"
POINT_TOML.write_text(_render(BASE, ""))
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=True),
              st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6)


@settings(max_examples=60, **SETTINGS)
@given(edits=st.lists(st.tuples(st.sampled_from(["drop", "set", "stat", "truncate", "whole"]),
                                st.data()), min_size=1, max_size=3))
def test_point_files_are_reused_only_when_valid(edits):
    """A finished point's record altered at random (keys dropped or set to random JSON, a
    statistic changed, the file truncated or replaced whole): the rerun never fails and never
    reports other numbers; the record is reused only if it is still a valid record of the
    point, and recomputed otherwise."""
    from svtjax import _records

    out = FUZZ_DIR / "points-out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_driver, "run_chunk", stand_in_chunk)
        config = sweep.load_config(POINT_TOML)
        first = sweep.run(config, out, resume=False, progress=False, log=lambda m: None)
        paths = sorted((out / "points").glob("*.json"))
        path = paths[0]
        good = json.loads(path.read_text())
        rec: object = json.loads(path.read_text())
        text = None
        for kind, data in edits:
            if kind == "whole":
                rec = data.draw(JSON_VALUES)
            elif kind == "truncate":
                raw = json.dumps(rec)
                text = raw[:int(data.draw(st.floats(0, 0.999)) * len(raw))]
            elif isinstance(rec, dict) and kind == "drop" and rec:
                rec.pop(data.draw(st.sampled_from(sorted(rec))))
            elif isinstance(rec, dict) and kind == "set":
                rec[data.draw(st.sampled_from(sorted(good) + ["other"]))] = data.draw(JSON_VALUES)
            elif isinstance(rec, dict) and kind == "stat" and isinstance(rec.get("stats"), dict):
                stats = rec["stats"]
                if stats:
                    m = data.draw(st.sampled_from(sorted(stats)))
                    stats[m] = data.draw(st.one_of(JSON_VALUES, st.lists(
                        st.floats(allow_nan=True), min_size=3, max_size=3)))
        path.write_text(text if text is not None else json.dumps(rec))
        pid = path.stem
        point = next(p for p in config.points if p.point_id(config) == pid)
        valid = text is None and _records.problem(
            rec, pid, seed=point.seed(config), metrics=config.metrics, trials=config.trials,
            quantiles=config.quantiles) is None
        again = sweep.run(config, out, progress=False, log=lambda m: None)
    event("valid" if valid else "recomputed")
    assert again.reused == len(paths) - (0 if valid else 1)
    if not valid or rec == good:
        assert [r["mean"] for r in again.rows] == [r["mean"] for r in first.rows]
