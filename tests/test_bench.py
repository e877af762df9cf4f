"""The benchmark harness (``benchmarks/``): record format, baselines' law, renderer, cases, CLI.

Kept cheap: one small harness run (one compiled simulate: the count-only reducer) shared by the
format, law and renderer tests; the numba loop compiles once (cached on disk).
"""

import ast
import importlib.util
import json
import os
import pathlib

import numpy as np
import pytest

from benchmarks import baselines, cases, harness, kinds, machine, render, workload

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
HAVE_NUMBA = importlib.util.find_spec("numba") is not None
N, TRIALS = 1_000, 512
ENGINES = ("svtjax-count", "numba", "numba-count", "numpy-vectorized", "rng-floor")


def test_package_imports_no_numba_and_reads_no_proc():
    """The library holds no timing tools (issue 16 item 4): no module of svtjax/ imports numba
    or names a /proc path, and svtjax.bench is gone."""
    offenders = []
    for path in sorted((ROOT / "svtjax").rglob("*.py")):
        source = path.read_text()
        tree = ast.parse(source)
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Constant) and node.value == "numba":
                names = ["numba"]  # importlib.import_module("numba") and the like
            offenders += [f"{path}: imports {n}" for n in names if n.split(".")[0] == "numba"]
        if "/proc" in source:
            offenders.append(f"{path}: mentions /proc")
    assert not offenders, offenders
    assert not (ROOT / "svtjax" / "bench.py").exists()


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    argv = ["--quick", "--size", f"{N}x{TRIALS}", "--mode", "fixed", "--repeats", "2",
            "--no-mechanisms", "--floor-impl", "threefry2x32", "--floor-max-draws", "4096",
            "--out", str(out), "--quiet", "--machine", "test box"]
    for engine in ENGINES:
        argv += ["--engine", engine]
    assert harness.main(argv) == 0
    files = sorted(out.glob("*.json"))
    assert len(files) == 1 and files[0].name.startswith("quick-test-box-")
    with open(files[0]) as f:
        return json.load(f), out


def test_record_format(record):
    rec, _ = record
    assert rec["schema"] == machine.SCHEMA == harness.SCHEMA and rec["case"] == "quick"
    for key in ("created", "machine", "device", "versions", "source", "config", "load_average",
                "results", "headline", "rng_floors", "compile_cache", "memory", "wall_s",
                "pool", "allocator_tuned"):
        assert key in rec, key
    for key in ("cpu_model", "logical_cores", "usable_cores", "memory_gib", "machine_id"):
        assert rec["machine"][key] not in (None, ""), key
    for key in ("python", "jax", "jaxlib", "numpy", "numba", "svtjax"):
        assert key in rec["versions"], key
    assert rec["device"]["backend"] and rec["device"]["count"] >= 1
    assert rec["config"]["quick"] and rec["config"]["engines"] == list(ENGINES)
    assert rec["config"]["workload"]["baseline_scales"]["query"] > 0
    assert len(rec["load_average"]["start"]) == 3 and len(rec["load_average"]["end"]) == 3
    assert rec["compile_cache"]["status"] == rec["memory"]["status"] == "skipped"


def test_rows_keep_every_sample(record):
    rec, _ = record
    rows = {r["engine"]: r for r in rec["results"]}
    expected = set(ENGINES) if HAVE_NUMBA else {"svtjax-count", "numpy-vectorized", "rng-floor"}
    assert {e for e, r in rows.items() if r["status"] == "ok"} == expected
    for r in rows.values():
        if r["status"] != "ok":
            assert "numba" in r["reason"]
            continue
        assert (r["n"], r["trials"], r["mode"], r["table"]) == (N, TRIALS, "fixed", "headline")
        assert len(r["times_s"]) == 2 and len(r["warmup_times_s"]) == 1
        assert r["interleaved_rounds"] == 2 and r["median_s"] == np.median(r["times_s"])
        assert r["throughput"] > 0 and r["first_call_s"] > 0
        if r["engine"] != "rng-floor":
            assert 0 < r["evaluated_fraction"] <= 1
            assert r["throughput"] == pytest.approx(N * TRIALS / r["median_s"])
    floor = rows["rng-floor"]
    assert floor["throughput"] == pytest.approx(floor["draws"] / floor["median_s"])
    table = rec["rng_floors"]
    assert {(f["dist"], f["form"]) for f in table} == {
        (d, f) for d in ("laplace", "bits") for f in ("array", "block")}
    assert all(f["status"] == "ok" and f["rate"] > 0 and f["draws"] >= 4096 - 64 for f in table)


def test_headline_summary(record):
    rec, _ = record
    (h,) = rec["headline"]
    assert h == harness.headline(rec)[0]  # recomputed alike from the rows (RESULTS.md does)
    count = next(r for r in rec["results"] if r["engine"] == "svtjax-count")
    floor = next(r for r in rec["results"] if r["engine"] == "rng-floor")
    assert (h["n"], h["trials"], h["mode"]) == (N, TRIALS, "fixed")
    assert h["rng_floor_rate"] == floor["throughput"]
    assert h["ratio_to_physical_limit"]["svtjax-count"] == pytest.approx(
        count["evaluated_rate"] / floor["throughput"])
    assert h["physical_limit"] == pytest.approx(floor["throughput"] / count["evaluated_fraction"])
    block = next(f for f in rec["rng_floors"] if (f["dist"], f["form"]) == ("laplace", "block"))
    assert h["ratio_to_block_keyed_limit"]["svtjax-count"] == pytest.approx(
        count["evaluated_rate"] / block["rate"])
    assert h["throughput_of"]["svtjax"] is None and h["ratio"]["svtjax/numba"] is None
    if HAVE_NUMBA:
        numba = next(r for r in rec["results"] if r["engine"] == "numba-count")
        assert h["ratio"]["svtjax-count/numba-count"] == pytest.approx(
            count["throughput"] / numba["throughput"])


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_baselines_and_svtjax_share_the_law(record):
    """The numba loop (scales written from Lyu'17 Alg. 7), numpy and svtjax sample the same
    halting position: two-sample z-test of each engine's mean halt over the record's 512 trials
    against 4,000 trials of the numba loop (another seed), |z| < 4.5: a correct implementation
    fails with probability < 1e-5 per comparison (3 comparisons); a 10% error in the
    query-noise scale moves the mean halt by about 6 standard errors at these sizes."""
    rec, _ = record
    q, threshold = workload.zipf_workload(N)
    rho, nu = workload.svt_s_scales()
    ref = 4_000
    _, halts, _ = baselines.run_numba(q, threshold, rho, nu, workload.C, ref, False, 12345)
    se = halts.std() * np.sqrt(1 / TRIALS + 1 / ref)
    for r in rec["results"]:
        if r["engine"] in ("svtjax-count", "numba-count", "numpy-vectorized"):
            z = (r["evaluated"] / TRIALS - halts.mean()) / se
            assert abs(z) < 4.5, (r["engine"], r["evaluated"] / TRIALS, halts.mean(), se)


def test_results_md_from_records(record, tmp_path):
    """RESULTS.md shows the cases of ``cases.SHOWN`` (a quick run is not one), with the
    Decisions table; a shown case's numbers come from its JSON."""
    rec, out = record
    md = tmp_path / "RESULTS.md"
    render.write_results_md(out, md)
    text = md.read_text()
    assert "No benchmark records yet." in text and "## Decisions" in text
    render.write_results_md(out, md, shown=("quick",))
    text = md.read_text()
    assert "## test-box" in text and "### quick" in text and "Do not edit by hand" in text
    assert "RNG floor under each JAX generator" in text
    count = next(r for r in rec["results"] if r["engine"] == "svtjax-count")
    assert render.fmt_rate(count["throughput"]) in text  # numbers come from the JSON


def test_committed_results_are_one_record_per_machine_and_case_and_render_as_committed():
    """benchmarks/results/ holds only records of the one format, the latest (only) one per
    machine and case, each of a shown case; RESULTS.md is what the renderer makes of them."""
    names = sorted(p.name for p in RESULTS.iterdir())
    records = render.load_records(RESULTS)
    assert [pathlib.Path(r["_path"]).name for r in records] == names  # nothing of another format
    keys = [(r["machine"]["machine_id"], r["case"]) for r in records]
    assert len(keys) == len(set(keys)), keys
    assert all(r["case"] in cases.SHOWN for r in records)
    assert all(machine.record_path(r, RESULTS).name == pathlib.Path(r["_path"]).name
               for r in records)
    committed = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    assert render.render_results_md(records) == committed, (
        "benchmarks/RESULTS.md is stale: run python benchmarks/harness.py --render")


def test_decisions_table_lists_each_decision_with_its_numbers_and_record():
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    for constant, value, alternatives, source in cases.DECISIONS:
        assert constant and value and any(ch.isdigit() for ch in alternatives) and source
        assert f"| {constant} | {value} | {alternatives} | `{source}` |" in text


def test_benchmarks_folder_holds_at_most_12_python_files():
    files = sorted((ROOT / "benchmarks").rglob("*.py"))
    assert len(files) <= 12, [str(p.relative_to(ROOT)) for p in files]


def test_every_case_is_runnable_by_its_kind():
    """Every throughput case builds a Config (no unknown field); the other kinds name what
    their runner reads; the case names the command line takes are the cases."""
    for name, spec in cases.CASES.items():
        if spec["kind"] == "throughput":
            assert isinstance(harness.case_config(name), harness.Config)
        elif spec["kind"] == "platform":
            assert {"sizes", "modes", "widths", "factors", "chunks", "rounds"} <= set(spec)
        elif spec["kind"] == "checkouts":
            assert {"sizes", "modes", "rounds"} <= set(spec)
        else:
            assert spec["kind"] == "command" and {"command", "cache", "parse"} <= set(spec)
    assert set(cases.SHOWN) - set(cases.CASES) == {"regression", "stress-sigint"}
    assert harness.quick_config() == harness.case_config("quick")
    with pytest.raises(ValueError, match="unknown Config fields"):
        cases.CASES["broken"] = {"kind": "throughput", "size": 3}
        try:
            harness.case_config("broken")
        finally:
            del cases.CASES["broken"]


@pytest.mark.parametrize("argv, case", [
    ([], "default"), (["--quick"], "quick"), (["--repeats", "3"], "default"),
    (["--only", "svt-s"], "custom"), (["--case", "gpu-large", "--no-numpy"], "custom"),
    (["--case", "suite"], "suite"), (["--quick", "--size", "100x10"], "quick"),
])
def test_case_name_of_a_command_line(argv, case):
    assert harness.case_name(harness.parser().parse_args(argv)) == case


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("shuffle", [False, True])
def test_baselines_halt_at_c(shuffle):
    q, threshold = workload.zipf_workload(300, 5)
    outs = [baselines.run_numba(q, threshold, 2.0, 20.0, 5, 60, shuffle, 1),
            baselines.numpy_vectorized(q, threshold, 2.0, 20.0, 5, 60, shuffle, 1)]
    for picks, halts, total in outs:
        assert picks.shape == (60, 5) and halts.shape == (60,) and total == halts.sum()
        tops = (picks >= 0).sum(axis=1)
        assert np.all((tops == 5) | (halts == 300)) and np.all(halts >= tops)
        for row, k in zip(picks, tops):
            assert np.all(row[k:] == -1) and len(set(row[:k].tolist())) == k
            assert np.all((row[:k] >= 0) & (row[:k] < 300))
        if not shuffle:  # stream order is item order: picks increase, the last one at the halt
            assert all(np.all(np.diff(row[:k]) > 0) for row, k in zip(picks, tops))
            halted = tops == 5
            np.testing.assert_array_equal(picks[halted, 4] + 1, halts[halted])


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_pool_chunks_are_the_serial_loop():
    """Chunk i of the pool runs the serial loop seeded seed + i on its share of the trials."""
    q, threshold = workload.zipf_workload(300, 5)
    with baselines.NumbaPool(2) as pool:
        picks, halts, total = pool.run(q, threshold, 2.0, 20.0, 5, 31, True, 7)
    sizes = baselines.split_trials(31, 2)
    assert sizes == [15, 16] and picks.shape == (31, 5) and total == halts.sum()
    start = 0
    for i, size in enumerate(sizes):
        p, h, _ = baselines.run_numba(q, threshold, 2.0, 20.0, 5, size, True, 7 + i)
        np.testing.assert_array_equal(picks[start:start + size], p)
        np.testing.assert_array_equal(halts[start:start + size], h)
        start += size


def test_numba_missing_makes_skipped_rows(monkeypatch):
    def unavailable():
        raise ImportError("No module named 'numba'")

    monkeypatch.setattr(baselines, "numba_kernel", unavailable)
    q, threshold = workload.zipf_workload(100, 5)
    cfg = harness.quick_config(c=5, numpy=False)
    engines = harness._baseline_engines(cfg, q, threshold, 10, False, None)
    assert set(engines) == {"numba", "numba-count", "numba-pool"}
    for fn in engines.values():
        row = fn(1)
        assert row["status"] == "skipped" and "numba is not importable" in row["reason"]


def test_metric_reducer_matches_numpy():
    """MetricReducer's per-trial F1, SER and halt equal a numpy computation on the same
    Outcomes (hand-made: the reducer reads answers and items only)."""
    import jax

    import svtjax

    scores = np.array([9.0, 1.0, 8.0, 2.0, 7.0, 3.0], np.float32)
    answers = np.array([[0, 1, 1, -1, -1, -1], [1, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 0]], np.int8)
    items = np.array([[1, 0, 2, -1, -1, -1], [4, 3, 5, 2, 0, 1], [0, 1, 2, 3, 4, 5]], np.int32)
    # numpy in and out of the one compiled call (no eager jax.numpy op, each its own program)
    out = svtjax.Outcome(answers=answers, items=items,
                         values=np.full(answers.shape, np.nan, np.float32),
                         cost=np.zeros(answers.shape, np.float32))
    f1, ser, halts = jax.device_get(
        jax.jit(lambda s, o: workload.MetricReducer(2)(s, o))(scores, out))
    picks = np.array([[0, 2], [4, 2], [-1, -1]])
    for t in range(3):
        want_f1, want_ser = workload.selection_metrics(picks[t:t + 1], scores, 2)
        assert float(f1[t]) == pytest.approx(want_f1, abs=1e-6)
        assert float(ser[t]) == pytest.approx(want_ser, abs=1e-6)
    np.testing.assert_array_equal(np.asarray(halts), [3, 6, 6])
    assert workload.selection_metrics(picks, scores, 2)[0] == pytest.approx((1 + 0.5 + 0) / 3)


def test_workload_orders():
    q, threshold = workload.zipf_workload(1000)
    sorted_q, same_threshold = workload.zipf_workload(1000, order="sorted")
    assert threshold == same_threshold == pytest.approx((10_000 / 50 + 10_000 / 51) / 2)
    assert np.all(np.diff(sorted_q) < 0) and not np.all(np.diff(q) < 0)
    np.testing.assert_array_equal(np.sort(q), np.sort(sorted_q))
    np.testing.assert_array_equal(q, workload.zipf_workload(1000)[0])  # one fixed order
    rho, nu = workload.svt_s_scales(0.5, 50)
    eps1 = 0.5 / (1 + 50 ** (2 / 3))
    assert rho == pytest.approx(1 / eps1) and nu == pytest.approx(50 / (0.5 - eps1))
    with pytest.raises(ValueError, match="n > c"):
        workload.zipf_workload(50)


def test_mechanism_params_use_the_hook(monkeypatch):
    import svtjax

    cls = type(svtjax.get("svt-s", epsilon=1.0, c=3))
    monkeypatch.setattr(cls, "example_params", classmethod(
        lambda cls, *, epsilon, c, n: {"epsilon": epsilon, "c": c, "eps3": 0.1}), raising=False)
    # the hook's parameters, plus the workload's choices the mechanism takes (Zipf counts are
    # monotonic queries; the allocation of the papers' experiments)
    assert workload.mechanism_params("svt-s", epsilon=0.5, c=7, n=100) == {
        "epsilon": 0.5, "c": 7, "eps3": 0.1, "monotonic": True, "allocation": "1:c^(2/3)"}


def test_interleaved_rounds_alternate_engines():
    """Each round times one sample of every engine in turn; the warm-up round's samples are
    kept apart; rows keep every timed sample and their median; a failing engine becomes a
    skipped row and is not called again."""
    calls = []

    def engine(name, times):
        def fn(repeats):
            assert repeats == 1
            calls.append(name)
            return {"times_s": [times[calls.count(name) - 1]], "first_call_s": 5.0,
                    "evaluated": 7}
        return fn

    def broken(repeats):
        calls.append("broken")
        raise RuntimeError("no device")

    rows = machine.interleaved({"a": engine("a", [9.0, 3.0, 1.0, 2.0]), "broken": broken,
                               "b": engine("b", [9.0, 0.5, 0.7, 0.6])}, rounds=3)
    assert calls == ["a", "broken", "b"] + ["a", "b"] * 3
    assert rows["a"]["warmup_times_s"] == [9.0]
    assert rows["a"]["times_s"] == [3.0, 1.0, 2.0] and rows["a"]["median_s"] == 2.0
    assert rows["b"]["median_s"] == 0.6 and rows["b"]["interleaved_rounds"] == 3
    assert rows["a"]["compile_s"] == 3.0  # first call minus the median
    assert rows["broken"]["status"] == "skipped"
    assert "RuntimeError: no device" in rows["broken"]["reason"]


@pytest.mark.parametrize("argv, message", [
    (["--size", "10x"], "a size is NxTRIALS"),
    (["--size", "40x10"], "n must exceed c"),
    (["--only", "no-such-mechanism"], "unknown mechanism"),
    (["--repeats", "0"], "integer >= 1"),
    (["--engine", "fortran"], "invalid choice"),
    (["--case", "no-such-case"], "invalid choice"),
])
def test_bad_options_exit_2_with_one_line(argv, message, capsys):
    assert harness.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("svtjax bench: error:") and message in err


def test_cli_bench_without_a_checkout_says_what_to_do(monkeypatch, tmp_path, capsys):
    from svtjax import cli

    monkeypatch.setenv("SVTJAX_NO_CACHE", "1")
    monkeypatch.setenv("SVTJAX_BENCHMARKS", str(tmp_path))
    assert cli.main(["bench", "--help"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SVTJAX_BENCHMARKS" in err and "checkout" in err


def test_cli_bench_finds_the_checkout(monkeypatch, capsys):
    from svtjax import cli

    monkeypatch.setenv("SVTJAX_NO_CACHE", "1")
    monkeypatch.delenv("SVTJAX_BENCHMARKS", raising=False)
    monkeypatch.chdir(ROOT)
    assert cli.main(["bench", "--size", "bad"]) == 2  # the harness parsed it: it was found
    assert "a size is NxTRIALS" in capsys.readouterr().err
    monkeypatch.setenv("SVTJAX_BENCHMARKS", os.fspath(ROOT / "benchmarks"))
    assert cli.main(["bench", "--repeats", "0"]) == 2
    assert "integer >= 1" in capsys.readouterr().err


def test_suite_case_times_the_command_ci_runs(tmp_path):
    """The suite cases time exactly the README's test command, which .ci/run runs as a line of
    its own; pytest's summary and slowest tests and reproduce's exit lines are read from the
    output."""
    command = kinds.readme_test_command()
    assert "pytest" in command and "--durations=20" in command
    (tmp_path / "README.md").write_text("## Quick start\n\n```bash\na\nb\n```\n")
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "run").write_text("#!/usr/bin/env bash\na\nb && c\n")
    with pytest.raises(ValueError, match="does not run"):
        kinds.readme_test_command(tmp_path)
    (tmp_path / ".ci" / "run").write_text("#!/usr/bin/env bash\na\nb\n# c\nc\n")
    assert kinds.readme_test_command(tmp_path) == "b"
    out = ("...\n===== slowest 20 durations =====\n10.13s call     tests/t.py::a\n"
           "5.04s setup    tests/t.py::b\n===== short test summary info =====\n"
           "1546 passed, 2 skipped, 2 warnings in 267.35s (0:04:27)\n")
    assert kinds.parse_output("pytest", out) == {
        "summary": "1546 passed, 2 skipped, 2 warnings", "pytest_s": 267.35, "passed": 1546,
        "slowest": ["10.13s call     tests/t.py::a", "5.04s setup    tests/t.py::b"]}
    assert kinds.parse_output("pytest", "error")["pytest_s"] is None
    # the line ``svtjax reproduce all --jobs N`` prints as each experiment ends
    lines = ("== svtjax reproduce all: 2 experiments, 2 at a time\n== svtjax reproduce lyu2017 "
             "--paper --out results/paper/lyu2017: exit 0 after 179.2 s\nrows\n"
             "== svtjax reproduce audit --paper: exit 1 after 12 s\n")
    assert kinds.parse_output("reproduce", lines)["experiments"] == [
        {"experiment": "lyu2017", "returncode": 0, "seconds": 179.2},
        {"experiment": "audit", "returncode": 1, "seconds": 12.0}]


def test_command_case_records_one_row_per_run_and_renders():
    spec = {"kind": "command", "command": "echo '3 passed in 1.50s'; exit 3", "clone": False,
            "cache": "user", "parse": "pytest"}
    (row,) = kinds.command_rows(spec, log=lambda line: None)
    assert (row["returncode"], row["status"], row["summary"], row["pytest_s"]) == (
        3, "failed", "3 passed", 1.5)
    rec = {"case": "suite", "results": [row]}
    assert "| `echo '3 passed in 1.50s'; exit 3` | user |" in render.tables(rec, markdown=True)


def test_checkouts_case_renders_each_checkout_and_the_ratio_to_the_first():
    """The checkouts kind's rows (one per mechanism, mode and checkout) render as one row per
    mechanism and mode: each checkout's median ms and its speed relative to the first."""
    def row(commit, mode, median_s):
        return {"engine": "simulate", "mechanism": "svt-s", "n": 100, "trials": 10,
                "mode": mode, "commit": commit, "median_s": median_s, "status": "ok"}
    rec = {"case": "checkouts", "results": [row("aaaaaaa", "fixed", 0.02),
                                            row("bbbbbbb", "fixed", 0.01),
                                            row("aaaaaaa", "shuffle", 0.03),
                                            {**row("bbbbbbb", "shuffle", None),
                                             "status": "skipped"}]}
    text = render.tables(rec, markdown=True)
    assert "| mechanism | n | trials | mode | aaaaaaa ms | bbbbbbb ms | bbbbbbb ÷ aaaaaaa |" in text
    assert "| svt-s | 100 | 10 | fixed | 20.0 | 10.0 | 2.00 |" in text
    assert "| svt-s | 100 | 10 | shuffle | 30.0 | — | — |" in text
    assert harness.main(["--case", "checkouts"]) == 2  # needs --checkout


def test_suite_profile_report_sums_the_workers_per_file_and_per_program(tmp_path):
    """``benchmarks/suite_profile.py``'s report adds the workers' records: per test file, and
    per jitted function (tracing and lowering counted under one name)."""
    from benchmarks import suite_profile as sp

    def worker(name, tests, programs):
        (tmp_path / f"{name}.json").write_text(json.dumps(
            {"tests": tests, "keys": [["k-" + name, "jit_run", None]], "programs": programs}))

    worker("gw0", {"tests/test_a.py::t1": {"wall": 2.0, sp.TRACE: 0.5, sp.LOWER: 0.25,
                                           sp.LOWER + "#n": 1, sp.COMPILE: 0.25}},
           {"run": {sp.TRACE: 0.5, sp.TRACE + "#n": 1, sp.LOWER: 0.25, sp.LOWER + "#n": 1,
                    sp.COMPILE: 0.25, sp.COMPILE + "#n": 1}})
    worker("gw1", {"tests/test_a.py::t2": {"wall": 1.0}, "tests/test_b.py::t3": {"wall": 4.0}},
           {"run": {sp.TRACE: 1.5, sp.TRACE + "#n": 1, sp.LOWER: 0.75, sp.LOWER + "#n": 1,
                    sp.COMPILE: 0.75, sp.COMPILE + "#n": 1},
            "add": {sp.LOWER: 0.01, sp.LOWER + "#n": 1}})
    lines = sp.report(tmp_path).splitlines()
    assert lines[0].startswith("tests 3; wall 7.0 s; tracing 0.5 s")
    assert "distinct keys 2" in lines[1]
    per_file = [line.split() for line in lines
                if line.startswith("tests/") and "::" not in line.split()[0]]
    per_test = [line.split()[0] for line in lines if "::" in line.split(" ")[0]]
    assert sorted(per_test) == ["tests/test_a.py::t1", "tests/test_a.py::t2",
                                "tests/test_b.py::t3"]  # the tests by compile time
    assert [row[:2] for row in per_file] == [["tests/test_b.py", "4.0"],
                                              ["tests/test_a.py", "3.0"]]
    run = next(line.split() for line in lines if line.startswith("run "))
    assert run == ["run", "2", "2.0", "1.0", "1.0", "2000"]  # 4 s of staging over 2 programs
    assert lines[-1].split()[0] == "add"


def test_gpu_suite_platform_stage_times_widths_factors_and_chunks(tmp_path):
    """The GPU suite's ``platform`` stage (issue 19: the engine's per-platform choices made
    measurable in the one prepared call) times every block width x compaction factor, then the
    extra chunk sizes at the platform's own width and factor, writes a ``gpu-platform`` record
    and leaves the platform's tables as they were for the stages after it.

    The extra chunk size is the run's 16 trials (one chunk): with the CPU's own width (64) its
    program is the (64, auto, 2) row's, since a batch of 16 has one compaction level whatever
    the factor, and loads from the compilation cache; the stage passes every chunk size to
    ``svtjax.simulate`` alike, and that chunking changes no number is
    tests/test_simulate.py::test_chunk_size_does_not_change_outcomes."""
    from benchmarks import gpu_suite

    module, (widths, factors) = kinds.engine_tables()
    before = (dict(widths), dict(factors))
    spec = dict(cases.CASES["gpu-platform"], sizes=[[200, 16]], modes=["fixed"],
                widths=[64, 128], factors=[2], chunks=[0, 16], rounds=1)
    path = gpu_suite.platform_stage(spec, tmp_path, float("inf"), "gpu-test")
    rec = json.loads(path.read_text())
    rows = rec["results"]
    assert path.name.startswith("gpu-platform-gpu-test-") and rec["case"] == "gpu-platform"
    assert [(r["width"], r["chunk"], r["factor"]) for r in rows] == [
        (64, 0, 2), (128, 0, 2), (widths["cpu"], 16, module.compaction_factor())]
    assert all(r["median_s"] > 0 and r["evaluated"] > 0 for r in rows)
    assert (dict(widths), dict(factors)) == before
    assert "platform" in [name for name, _ in gpu_suite.stages()]
    assert "| 200 | 16 | fixed | 128 | 0 | 2 |" in render.tables(rec, markdown=True)
