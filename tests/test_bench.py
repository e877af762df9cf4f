"""The benchmark harness (``benchmarks/``): record schema, baselines' law, renderer, CLI entry.

Kept cheap: one small harness run (one compiled simulate: the count-only reducer) shared by the
schema, law and renderer tests; the numba loop compiles once (cached on disk).
"""

import ast
import importlib.util
import json
import os
import pathlib

import numpy as np
import pytest

from benchmarks import baselines, harness, render, timing, workload

ROOT = pathlib.Path(__file__).resolve().parents[1]
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
    assert len(files) == 1 and files[0].name.startswith("test-box-")
    with open(files[0]) as f:
        return json.load(f), out


def test_record_schema(record):
    rec, _ = record
    assert rec["schema"] == harness.SCHEMA
    for key in ("created", "machine", "device", "versions", "source", "config", "load_average",
                "results", "headline", "rng_floors", "compile_cache", "memory", "wall_s",
                "pool", "allocator_tuned"):
        assert key in rec, key
    for key in ("cpu_model", "logical_cores", "usable_cores", "memory_gib", "machine_id"):
        assert rec["machine"][key] not in (None, ""), key
    for key in ("python", "jax", "jaxlib", "numpy", "numba", "svtjax"):
        assert key in rec["versions"], key
    assert rec["device"]["backend"] and rec["device"]["count"] >= 1
    assert rec["config"]["suite"] == "quick" and rec["config"]["engines"] == list(ENGINES)
    assert rec["config"]["workload"]["baseline_scales"]["query"] > 0
    assert len(rec["load_average"]["start"]) == 3
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
    rec, out = record
    md = tmp_path / "RESULTS.md"
    render.write_results_md(out, md)  # quick records are not "full": none listed
    assert "No full benchmark records yet." in md.read_text()
    render.write_results_md(out, md, suites=("quick",))
    text = md.read_text()
    assert "## test-box" in text and "Do not edit by hand" in text
    assert "RNG floor under each JAX generator" in text
    count = next(r for r in rec["results"] if r["engine"] == "svtjax-count")
    assert render.fmt_rate(count["throughput"]) in text  # numbers come from the JSON


def test_results_md_renders_the_repository_records(tmp_path):
    """Every committed record renders, schema-1 records with their sorted order named so."""
    md = render.write_results_md(ROOT / "benchmarks" / "results", tmp_path / "RESULTS.md")
    text = md.read_text()
    assert "## glibc allocator tuning" in text and "## svtjax reproduce all" in text
    assert "## Cost breakdown of the headline engine" in text
    v1 = [r for r in render.load_records(ROOT / "benchmarks" / "results")
          if r["schema"] == "svtjax-bench/1"]
    if v1:
        assert "schema `svtjax-bench/1`" in text and "| sorted |" in text


def test_headline_history_lists_every_recent_full_record_newest_first(tmp_path):
    """RESULTS.md's history of a machine's headline: one row per full schema-2 record of that
    machine (at most ``render.HISTORY``), newest first, each cell recomputed from its record's
    rows (× numba, × pool, of limit); a machine with one record gets no history."""
    results = ROOT / "benchmarks" / "results"
    full = [r for r in render.load_records(results) if r.get("schema") == "svtjax-bench/2"
            and r["config"].get("suite") == "full"]
    latest = render.latest_per_machine(full)
    rec = max(latest, key=lambda r: sum(x["machine"]["machine_id"] == r["machine"]["machine_id"]
                                        for x in full))
    mine = sorted((r for r in full if r["machine"]["machine_id"] == rec["machine"]["machine_id"]),
                  key=lambda r: r["created"], reverse=True)[:render.HISTORY]
    assert len(mine) >= 2
    text = "\n".join(render._history_md(rec, results))
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [pathlib.Path(r["_path"]).name for r in mine]
    h = harness.headline(mine[-1])[0]
    cell = (f"{render._fmt(h['ratio']['svtjax/numba'])} / "
            f"{render._fmt(h['ratio']['svtjax/numba-pool'])} / "
            f"{render._pct(h['ratio_to_physical_limit']['svtjax'])}")
    assert cell in rows[-1]
    (tmp_path / "one.json").write_text(pathlib.Path(rec["_path"]).read_text())
    assert render._history_md(rec, tmp_path) == []


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
    import jax.numpy as jnp

    import svtjax

    scores = np.array([9.0, 1.0, 8.0, 2.0, 7.0, 3.0], np.float32)
    answers = np.array([[0, 1, 1, -1, -1, -1], [1, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 0]], np.int8)
    items = np.array([[1, 0, 2, -1, -1, -1], [4, 3, 5, 2, 0, 1], [0, 1, 2, 3, 4, 5]], np.int32)
    out = svtjax.Outcome(answers=jnp.asarray(answers), items=jnp.asarray(items),
                         values=jnp.full(answers.shape, jnp.nan, jnp.float32),
                         cost=jnp.zeros(answers.shape, jnp.float32))
    f1, ser, halts = jax.jit(lambda s, o: workload.MetricReducer(2)(s, o))(scores, out)
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

    rows = timing.interleaved({"a": engine("a", [9.0, 3.0, 1.0, 2.0]), "broken": broken,
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


def test_versions_section_renders_the_latest_record(tmp_path):
    """RESULTS.md's two-checkout section comes from bench_versions.py's JSON, numbers included."""
    def rec(date, new_s):
        return {"benchmark": "versions", "date": date, "cpu_count": 2, "repeats": 3,
                "load": {"start": [1.0, 1.0, 1.0], "end": [1.0, 1.0, 1.0]},
                "roots": [{"path": "/a", "commit": "aaaaaaa"}, {"path": "/b", "commit": "bbbbbbb"}],
                "n": 100, "trials": 10, "epsilon": 0.5, "c": 5,
                "rows": [{"mechanism": "svt-s", "mode": "fixed", "median_s": [0.02, new_s],
                          "speedup_vs_first": [0.02 / new_s]}]}
    (tmp_path / "versions-1.json").write_text(json.dumps(rec("2026-01-01T00:00:00", 0.01)))
    (tmp_path / "versions-2.json").write_text(json.dumps(rec("2026-02-01T00:00:00", 0.04)))
    text = "\n".join(render.versions_md(tmp_path))
    assert "| svt-s | fixed | 20.0 | 40.0 | 0.50x |" in text  # the later record only
    assert "aaaaaaa ms" in text and "bbbbbbb ÷ aaaaaaa" in text
    assert "No record yet" in "\n".join(render.versions_md(tmp_path / "missing"))


def test_reproduce_section_sets_an_older_commit_beside_the_latest(tmp_path):
    """RESULTS.md's reproduce section: the latest record of this checkout, never one of an older
    tree (``bench_reproduce.py --tree``), which is shown beside it instead, totals compared."""
    def rec(created, total, rows, tree=None, cache="warm", jobs=2):
        return {"schema": "svtjax-reproduce/1", "created": created, "mode": "paper",
                "cache": cache, "jobs": jobs, "tree": tree, "commit": "abcdef0123",
                "machine": {"machine_id": "m", "cpu_model": "cpu", "logical_cores": 2},
                "load_average": {"start": [1, 1, 1], "end": [1, 1, 1]},
                "total_seconds": total, "warmup_seconds": None, "all_succeeded": True,
                "experiments": [{"experiment": e, "seconds": s, "returncode": 0}
                                for e, s in rows]}
    (tmp_path / "reproduce-a.json").write_text(json.dumps(
        rec("2026-01-02T00:00:00", 300.0, [("lyu2017", 200.0), ("audit", 250.0)])))
    (tmp_path / "reproduce-b.json").write_text(json.dumps(  # newer, but of an older tree
        rec("2026-01-03T00:00:00", 500.0, [("lyu2017", 150.0), ("audit", 350.0)],
            tree="/tmp/old", cache="user", jobs=1)))
    text = "\n".join(render.reproduce_md(tmp_path))
    assert "**300 s (5.0 min)**" in text  # the checkout's own record is the headline
    assert "### Against commit abcdef0" in text
    assert "| lyu2017 | 150 | 0 | 200 |" in text
    assert "abcdef0 **500 s** for 2 experiments; above **300 s** for 2" in text


def test_reproduce_section_shows_the_empty_cache_pass_per_experiment(tmp_path):
    """A ``--cache warm`` record keeps the warm-up (empty cache) pass's per-experiment times,
    and the table shows them beside the warm ones; older records keep the two-column table."""
    rec = {"schema": "svtjax-reproduce/1", "created": "2026-01-02T00:00:00", "mode": "paper",
           "cache": "warm", "jobs": 2, "tree": None, "commit": "abcdef0123",
           "machine": {"machine_id": "m", "cpu_model": "cpu", "logical_cores": 2},
           "load_average": {"start": [1, 1, 1], "end": [1, 1, 1]},
           "total_seconds": 300.0, "warmup_seconds": 700.0, "all_succeeded": True,
           "experiments": [{"experiment": "lyu2017", "seconds": 200.0, "returncode": 0},
                           {"experiment": "audit", "seconds": 100.0, "returncode": 0}],
           "warmup_experiments": [{"experiment": "audit", "seconds": 250.0, "returncode": 0},
                                  {"experiment": "lyu2017", "seconds": 450.0,
                                   "returncode": 0}]}
    (tmp_path / "reproduce-a.json").write_text(json.dumps(rec))
    text = "\n".join(render.reproduce_md(tmp_path))
    assert "| experiment | wall s | empty cache s | exit status |" in text
    assert "| lyu2017 | 200 | 450 | 0 |" in text and "| audit | 100 | 250 | 0 |" in text
    del rec["warmup_experiments"]
    (tmp_path / "reproduce-a.json").write_text(json.dumps(rec))
    text = "\n".join(render.reproduce_md(tmp_path))
    assert "| experiment | wall s | exit status |" in text and "| lyu2017 | 200 | 0 |" in text


def test_cost_section_renders_every_record_oldest_first(tmp_path):
    """RESULTS.md's cost breakdown comes from cost_breakdown.py's JSON: every record (a kernel
    change shows as a before/after pair), numbers included."""
    def rec(time, commit, engine_s):
        medians = {"rng": 0.001, "rng_jax": 0.003, "engine": engine_s, "counts": engine_s,
                   "f1_ser": 0.02, "outcome": engine_s, "outcome_selected": 0.004}
        shuffled = dict(medians, engine_no_swaps=0.0015)  # a newer record's shuffled case
        return {"benchmark": "cost-breakdown", "time": time,
                "source": {"git_commit": commit, "git_dirty": False},
                "cases": [{"n": 100, "trials": 10, "mode": "fixed", "medians_s": medians},
                          {"n": 100, "trials": 10, "mode": "shuffle", "medians_s": shuffled}]}
    (tmp_path / "cost-b.json").write_text(json.dumps(rec("2026-02-01T00:00:00", "b" * 40, 0.002)))
    (tmp_path / "cost-a.json").write_text(json.dumps(rec("2026-01-01T00:00:00", "a" * 40, 0.003)))
    text = "\n".join(render.cost_md(tmp_path))
    before, after = text.index("(aaaaaaa)"), text.index("(bbbbbbb)")
    assert before < after
    assert "| 100 | 10 | fixed | 1.0 | 3.0 | 2.0 | — | — | 3.0 | 20.0 | 4.0 | 25% |" in text
    assert "| 100 | 10 | fixed | 1.0 | 2.0 | 1.0 | — | — | 2.0 | 20.0 | 4.0 | 25% |" in text
    # no swaps and swaps = engine − no swaps, for the shuffled cases that have the probe
    assert "| 100 | 10 | shuffle | 1.0 | 3.0 | 2.0 | 1.5 | 1.5 | 3.0 | 20.0 | 4.0 | 25% |" in text
    assert render.cost_md(tmp_path / "missing") == []


def _older_and_newer(tmp_path, benchmark: str, older: list, newer: list) -> None:
    """Two records of ``benchmark`` (rows ``older``, then a month later ``newer``) as
    ``machine.write_record`` writes them, in ``tmp_path``."""
    for suffix, time, rows in (("a", "2026-01-01T00:00:00", older),
                               ("b", "2026-02-01T00:00:00", newer)):
        (tmp_path / f"{benchmark}-{suffix}.json").write_text(json.dumps(
            {"benchmark": benchmark, "time": time, "rows": rows,
             "source": {"git_commit": "c" * 40, "git_dirty": False},
             "machine": {"cpu_model": "test cpu"}}))


def test_fisher_yates_section_renders_the_latest_record(tmp_path):
    """RESULTS.md's swap-cost section comes from bench_fisher_yates.py's JSON (the latest
    record): ns per swap with and without the swaps, for every CPU count measured."""
    def rows(ns):
        return [{"n": 1000, "batch": 25, "blocks": 10, "width": 64, "variant": v, "cpus": c,
                 "ns_per_swap": x, "median_s": 1e-3}
                for v, c, x in (("swaps", 2, ns), ("no swap", 2, 2.0), ("swaps", 1, ns / 2),
                                ("no swap", 1, 1.0))]
    _older_and_newer(tmp_path, "fisher-yates", rows(80.0), rows(10.0))
    text = "\n".join(render.fisher_yates_md(tmp_path))
    assert "| ns per swap, 2 CPUs | no swap, 2 CPUs | ns per swap, 1 CPU | no swap, 1 CPU |" in text
    assert "| 1000 | 25 | 10.0 | 2.0 | 5.0 | 1.0 |" in text  # the later record
    assert "80.0" not in text and "test cpu" in text and "10 consecutive blocks" in text
    assert render.fisher_yates_md(tmp_path / "missing") == []


def test_block_width_section_renders_every_record_newest_first(tmp_path):
    """RESULTS.md's per-platform section lists every bench_block_width.py record (the GPU
    suite's platform stage writes the same), newest first, each setting's time over the
    fastest of its case; a record from before the compaction factor shows it as —."""
    def row(width, factor, ms):
        r = {"n": 1000, "trials": 100, "mode": "fixed", "width": width, "chunk": 0,
             "median_s": ms / 1e3}
        return r if factor is None else {**r, "factor": factor}
    _older_and_newer(tmp_path, "block-width", [row(64, None, 4.0), row(128, None, 5.0)],
                     [row(64, 8, 3.0), row(64, 2**30, 6.0)])
    text = "\n".join(render.block_width_md(tmp_path))
    assert text.index("block-width-b.json") < text.index("block-width-a.json")
    assert "| 1000 | 100 | fixed | 64 | 0 | 8 | 3.00 | 1.00 |" in text
    assert "| 1000 | 100 | fixed | 64 | 0 | 1073741824 | 6.00 | 2.00 |" in text
    assert "| 1000 | 100 | fixed | 128 | 0 | — | 5.00 | 1.25 |" in text
    assert render.block_width_md(tmp_path / "missing") == []


def test_thunks_section_renders_the_latest_record(tmp_path):
    """RESULTS.md's kernel-by-kernel section comes from profile_thunks.py's JSON (the latest
    record), the top kernels of each case with their runs and times."""
    def cases(us):
        kernels = [{"name": "wrapped_scatter", "count": 640, "total_us": us,
                    "mean_us": us / 640}]
        return [{"n": 1000, "trials": 200, "mode": "shuffle", "warm_s": 0.01,
                 "profiled_s": 0.02, "kernel_events": 700, "kernel_us": us, "kernels": kernels}]
    for suffix, time, us in (("a", "2026-01-01T00:00:00", 9000.0),
                             ("b", "2026-02-01T00:00:00", 1280.0)):
        (tmp_path / f"thunk-profile-{suffix}.json").write_text(json.dumps(
            {"benchmark": "thunk-profile", "time": time, "cases": cases(us),
             "source": {"git_commit": "c" * 40, "git_dirty": False},
             "machine": {"cpu_model": "test cpu"}}))
    text = "\n".join(render.thunks_md(tmp_path))
    assert ("n = 1000, 200 trials, shuffle: warm 10.0 ms, profiled 20.0 ms, 700 kernel runs "
            "(the profiler's 14.29 µs per run)") in text
    assert "| `wrapped_scatter` | 640 | 1.28 | 2.00 |" in text  # the later record
    assert "9.00" not in text and "test cpu" in text
    assert render.thunks_md(tmp_path / "missing") == []


def test_shuffle_groups_section_renders_the_latest_record(tmp_path):
    """RESULTS.md's shuffled-groups section comes from bench_shuffle_groups.py's JSON (the
    latest record), with each budget's speed relative to one group."""
    def rows(ms):
        return [{"n": 100, "trials": 256, "reducer": "f1", "budget_mib": b, "groups": g,
                 "median_s": s / 1e3, "same_numbers": True}
                for b, g, s in ((0, 1, 40.0), (4, 2, ms))]
    _older_and_newer(tmp_path, "shuffle-groups", rows(80), rows(20))
    text = "\n".join(render.shuffle_groups_md(tmp_path))
    assert "| 100 | 256 | f1 | 4 | 2 | 20.0 | 2.00x | yes |" in text  # the later record
    assert "| 100 | 256 | f1 | 0 | 1 | 40.0 | 1.00x | yes |" in text
    assert "80.0" not in text and "test cpu" in text
    assert render.shuffle_groups_md(tmp_path / "missing") == []


def test_shuffle_prefix_section_renders_the_latest_record(tmp_path):
    """RESULTS.md's shuffle-prefix section comes from bench_shuffle_prefix.py's JSON (the latest
    record), each prefix with the positions it uses and its speed relative to no prefix."""
    def rows(ms):
        return [{"n": 1000, "trials": 64, "prefixes": [0, 1024], "used": {"0": 0, "1024": 448},
                 "default": 1024, "same_numbers": True,
                 "median_s": {"0": 0.04, "1024": ms / 1e3}}]
    _older_and_newer(tmp_path, "shuffle-prefix", rows(80), rows(20))
    text = "\n".join(render.shuffle_prefix_md(tmp_path))
    assert "| 1000 | 64 | 1024 (default) | 448 | 20.00 | 2.00x | yes |" in text  # the later
    assert "| 1000 | 64 | 0 | 0 | 40.00 | 1.00x | yes |" in text
    assert "80.00" not in text and "test cpu" in text
    assert render.shuffle_prefix_md(tmp_path / "missing") == []


def test_exact_section_renders_the_latest_full_records(tmp_path):
    """RESULTS.md's svtjax.exact section: speed, accuracy and the Monte Carlo check, each from
    the latest full (not --quick) bench_exact record that holds it."""
    import json

    machine = {"host": "vm", "cpus": 2, "jax": "0.10.2", "commit": "abc", "loadavg_end": [1, 1, 1]}
    speed = {"dataset": "zipf", "n": 10, "c": 2, "epsilons": [0.1, 1.0], "mechanism": "svt-s",
             "fixed": {"seconds_first_call_new_process": 1.25, "seconds_second_call": 0.5,
                       "mc_seconds_for_se_1e-4_extrapolated": 99.0,
                       "doubled_max_abs_change_member": 1e-12}}
    rows = [{"dataset": "zipf", "c": 2, "mechanism": "svt-s", "ok": True, "z_ser": 1.5,
             "z_picks": -0.5},
            {"dataset": "zipf", "c": 2, "mechanism": "svt-s x1.1 (must be rejected)",
             "ok": True, "z_ser": 9.0, "z_picks": 0.1}]
    records = {"exact-vm-1.json": {"created": "2026-01-01", "speed": speed},
               "exact-vm-2.json": {"created": "2026-01-02", "quick": True,
                                   "speed": {**speed, "c": 99}},
               "exact-vm-3.json": {"created": "2026-01-03", "check": {
                   "epsilon": 0.5, "trials": 1000, "z": 4, "rows": rows, "failures": 0}}}
    for name, rec in records.items():
        (tmp_path / name).write_text(json.dumps({"schema": "svtjax-bench-exact/1",
                                                 "machine": machine, **rec}))
    text = "\n".join(render.exact_md(tmp_path))
    assert "| fixed | 1.25 | 0.50 | 99 | 1.0e-12 |" in text and "c = 2:" in text
    assert "exact-vm-1.json" in text and "exact-vm-2.json" not in text  # --quick is skipped
    assert "No accuracy record yet" in text
    assert "1 of 1 cases within 4 standard errors (largest |z| 1.50)" in text
    assert "rejected in 1 of 1 (smallest |z| 9.0)" in text


def test_cost_breakdown_no_swap_probe_runs_the_stored_order():
    """cost_breakdown's ``engine_no_swaps`` probe is what its column claims: a shuffled run
    with no swap reads the items in the stored order, so it returns the fixed-order run's
    numbers (and the engine's Fisher–Yates block is restored afterwards)."""
    import svtjax
    from benchmarks import cost_breakdown
    from svtjax.mechanisms import _engine

    real = _engine.fisher_yates_block
    mech = svtjax.get(workload.HEADLINE, **workload.headline_params(c=5))
    q, t = workload.zipf_workload(300, c=5)

    def per_trial(o):  # ⊤ count and halting position, one number per trial
        return (o.answers == 1).sum(axis=1) * 1000 + (o.answers >= 0).sum(axis=1)

    def run(shuffle):
        return svtjax.simulate(mech, q, t, trials=64, seed=3, shuffle=shuffle,
                               reduce=lambda o: per_trial(o))

    prefix = dict(_engine.SHUFFLE_PREFIX)
    probe = cost_breakdown._without_swaps(lambda: run(True))
    assert _engine.fisher_yates_block is real and _engine.SHUFFLE_PREFIX == prefix
    assert int(probe) == int(run(False))
    assert int(run(True)) != int(probe)  # the real shuffle is another run


def test_reproduce_section_lists_the_earlier_runs_of_its_mode(tmp_path):
    """Under the latest record, the totals of the earlier runs of the same mode of this checkout
    (newest first, at most ``render.EARLIER_RUNS``), not those of another mode or tree."""
    def rec(created, total, warmup=None, mode="paper", tree=None):
        return {"schema": "svtjax-reproduce/1", "created": created, "mode": mode,
                "cache": "warm", "jobs": 2, "tree": tree, "commit": "abcdef0123",
                "machine": {"machine_id": "m", "cpu_model": "cpu", "logical_cores": 2},
                "load_average": {"start": [1, 1, 1], "end": [1, 1, 1]},
                "total_seconds": total, "warmup_seconds": warmup, "all_succeeded": True,
                "experiments": [{"experiment": "audit", "seconds": total, "returncode": 0}]}
    runs = [rec(f"2026-01-0{d}T00:00:00", 300.0 + d, 800.0 + d) for d in range(1, 7)]
    runs += [rec("2026-01-07T00:00:00", 50.0, mode="quick"),
             rec("2026-01-08T00:00:00", 900.0, tree="/tmp/old")]
    for k, r in enumerate(runs):
        (tmp_path / f"reproduce-{k}.json").write_text(json.dumps(r))
    text = "\n".join(render.reproduce_md(tmp_path))
    assert "**306 s (5.1 min)**" in text
    line = next(x for x in text.splitlines() if x.startswith("Earlier runs"))
    assert line.index("305 s, empty cache 805 s") < line.index("302 s, empty cache 802 s")
    assert line.count(" s, empty cache ") == render.EARLIER_RUNS
    assert "301 s" not in line and "50 s" not in line and "900 s" not in line
    for k in (0, 1, 2, 3, 4, 6, 7):  # the latest paper run alone: no earlier one to list
        (tmp_path / f"reproduce-{k}.json").unlink()
    text = "\n".join(render.reproduce_md(tmp_path))
    assert "**306 s (5.1 min)**" in text and "Earlier runs" not in text


def test_suite_benchmark_times_the_command_ci_runs(tmp_path):
    """bench_suite.py times exactly the README's test command, which .ci/run runs as a line of
    its own; it reads pytest's summary and slowest tests, and the section lists every record,
    newest first."""
    from benchmarks import bench_suite

    command = bench_suite.readme_test_command()
    assert "pytest" in command and "--durations=20" in command
    (tmp_path / "README.md").write_text("## Quick start\n\n```bash\na\nb\n```\n")
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "run").write_text("#!/usr/bin/env bash\na\nb && c\n")
    with pytest.raises(ValueError, match="does not run"):
        bench_suite.readme_test_command(tmp_path)
    (tmp_path / ".ci" / "run").write_text("#!/usr/bin/env bash\na\nb\n# c\nc\n")
    assert bench_suite.readme_test_command(tmp_path) == "b"
    out = ("...\n===== slowest 20 durations =====\n10.13s call     tests/t.py::a\n"
           "5.04s setup    tests/t.py::b\n===== short test summary info =====\n"
           "1546 passed, 2 skipped, 2 warnings in 267.35s (0:04:27)\n")
    parsed = bench_suite.parse_pytest(out)
    assert parsed == {"summary": "1546 passed, 2 skipped, 2 warnings", "pytest_s": 267.35,
                      "passed": 1546, "slowest": ["10.13s call     tests/t.py::a",
                                                  "5.04s setup    tests/t.py::b"]}
    assert bench_suite.parse_pytest("error")["pytest_s"] is None
    for k, (t, wall) in enumerate([("2026-01-01T00:00:00", 297.0), ("2026-01-02T00:00:00",
                                                                     239.4)]):
        rec = {"benchmark": "suite", "time": t, "command": command, "commit": "abcdef0123",
               "returncode": 0, "wall_s": wall, "machine": {"cpu_model": "cpu"},
               "load_average": {"start": [1.0, 1.0, 1.0], "end": [2.0, 2.0, 2.0]}, **parsed}
        (tmp_path / f"suite-{k}.json").write_text(json.dumps(rec))
    text = "\n".join(render.suite_md(tmp_path))
    assert text.index("| 3 min 59 s | 267.4 |") < text.index("| 4 min 57 s | 267.4 |")
    assert "[1.00, 1.00, 1.00] → [2.00, 2.00, 2.00]" in text


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
    per_file = [line.split() for line in lines if line.startswith("tests/")]
    assert [row[:2] for row in per_file] == [["tests/test_b.py", "4.0"],
                                              ["tests/test_a.py", "3.0"]]
    run = next(line.split() for line in lines if line.startswith("run "))
    assert run == ["run", "2", "2.0", "1.0", "1.0", "2000"]  # 4 s of staging over 2 programs
    assert lines[-1].split()[0] == "add"


def test_gpu_suite_platform_stage_times_widths_factors_and_chunks(tmp_path):
    """The GPU suite's ``platform`` stage (issue 19: the engine's per-platform choices made
    measurable in the one prepared call) times every block width x compaction factor, then the
    extra chunk sizes at the platform's own width and factor, writes a ``block-width`` record,
    and leaves the platform's tables as they were for the stages after it."""
    from benchmarks import gpu_suite
    from svtjax.mechanisms import _engine

    before = (dict(_engine.BLOCK_WIDTH), dict(_engine.COMPACTION))
    cfg = gpu_suite.Platform(sizes=((200, 16),), modes=("fixed",), widths=(64, 128),
                             factors=(2,), chunks=(0, 8), rounds=1)
    path = gpu_suite.platform_stage(cfg, tmp_path, deadline=float("inf"))
    rows = json.loads(path.read_text())["rows"]
    assert path.name.startswith("block-width-")
    assert [(r["width"], r["chunk"], r["factor"]) for r in rows] == [
        (64, 0, 2), (128, 0, 2), (64, 8, _engine.compaction_factor())]
    assert all(r["median_s"] > 0 and r["evaluated"] > 0 for r in rows)
    assert (dict(_engine.BLOCK_WIDTH), dict(_engine.COMPACTION)) == before
    assert "platform" in [name for name, _ in gpu_suite.stages()]
