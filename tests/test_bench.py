"""The benchmark harness: ``svtjax bench --quick`` in-process, its JSON schema and RESULTS.md."""

import importlib.util
import json

import numpy as np
import pytest

from svtjax import bench

HAVE_NUMBA = importlib.util.find_spec("numba") is not None


@pytest.fixture(scope="module")
def quick_record(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    assert bench.main(["--quick", "--out", str(out), "--quiet", "--machine", "test-box"]) == 0
    files = sorted(out.glob("*.json"))
    assert len(files) == 1 and files[0].name.startswith("test-box-")
    with open(files[0]) as f:
        return json.load(f), out


def test_quick_record_schema(quick_record):
    rec, _ = quick_record
    assert rec["schema"] == bench.SCHEMA
    for key in ("created", "machine", "device", "versions", "source", "config", "load_average",
                "results", "headline", "compile_cache", "memory", "wall_s"):
        assert key in rec, key
    for key in ("cpu_model", "logical_cores", "memory_gib", "machine_id"):
        assert rec["machine"][key] not in (None, ""), key
    for key in ("python", "jax", "jaxlib", "numpy", "numba"):
        assert key in rec["versions"], key
    assert rec["device"]["backend"] and rec["device"]["count"] >= 1
    assert rec["config"]["quick"] and rec["config"]["suite"] == "quick"
    assert len(rec["load_average"]["start"]) == 3


def test_quick_results_positive(quick_record):
    rec, _ = quick_record
    ok = [r for r in rec["results"] if r["status"] == "ok"]
    engines = {r["engine"] for r in ok}
    assert {"svtjax", "svtjax-reduce", "numpy-reference", "numpy-vectorized",
            "rng-floor"} <= engines
    for r in ok:
        assert r["throughput"] > 0 and r["median_s"] > 0, r
        assert len(r["times_s"]) == rec["config"]["repeats"]
        assert 0 < r["evaluated_fraction"] <= 1, r
    for r in (x for x in ok if x["engine"] == "svtjax"):
        assert r["compile_s"] >= 0 and r["first_call_s"] > 0
        assert r["tops_per_trial"] <= rec["config"]["c"]
    ref = [r for r in ok if r["engine"] == "numpy-reference"]
    assert ref and all(r["extrapolated"]["timed_trials"] >= 1 for r in ref)


def test_numba_present_or_skipped(quick_record):
    rec, _ = quick_record
    rows = [r for r in rec["results"] if r["engine"] in ("numba", "numba-parallel",
                                                          "numba-count")]
    assert len(rows) == 3 * len(rec["config"]["modes"])
    for r in rows:
        if HAVE_NUMBA:
            assert r["status"] == "ok" and r["throughput"] > 0
        else:
            assert r["status"] == "skipped" and "numba" in r["reason"]


def test_headline_ratios(quick_record):
    rec, _ = quick_record
    assert {(h["mode"]) for h in rec["headline"]} == set(rec["config"]["modes"])
    for h in rec["headline"]:
        assert h["ratio"]["numpy-reference"] > 0 and h["ratio"]["numpy-vectorized"] > 0
        assert h["ratio_to_physical_limit"] > 0 and h["rng_floor_throughput"] > 0
        red, ref = h["throughput_of"]["svtjax-reduce"], h["throughput_of"]["numpy-reference"]
        assert h["reduce_ratio_to_numpy_reference"] == pytest.approx(red / ref)
        if HAVE_NUMBA:
            assert h["ratio"]["numba"] > 0 and h["reduce_ratio_to_numba_count"] > 0


def test_subprocess_checks(quick_record):
    rec, _ = quick_record
    cc = rec["compile_cache"]
    assert cc["status"] == "ok", cc
    assert cc["cache_entries"] > 0
    assert cc["cold_first_call_s"] > 0 and cc["cached_first_call_s"] > 0
    mem = rec["memory"]
    assert mem["status"] == "ok"
    assert [r["chunk"] for r in mem["chunks"]] == list(rec["config"]["memory_chunks"])
    for r in mem["chunks"]:
        assert r["status"] == "ok", r
        assert r["peak_rss_mib"] >= r["peak_after_one_chunk_mib"] > 0
        assert r["bounded_by_chunk"], r
        assert r["tops_per_trial"] <= rec["config"]["c"]


def test_results_md_from_records(quick_record, tmp_path):
    rec, out = quick_record
    md = tmp_path / "RESULTS.md"
    bench.write_results_md(out, md)  # quick records are not "full": none listed
    assert "No full benchmark records yet." in md.read_text()
    bench.write_results_md(out, md, suites=("quick",))
    text = md.read_text()
    assert "## test-box" in text and "Do not edit by hand" in text
    head = rec["headline"][0]
    assert bench._fmt_rate(head["throughput"]) in text  # numbers come from the JSON


def test_numba_skipped_when_unavailable(monkeypatch):
    def unavailable():
        raise ImportError("No module named 'numba'")

    monkeypatch.setattr(bench, "numba_kernels", unavailable)
    import svtjax

    mech = svtjax.get("svt-s", **bench.mechanism_params("svt-s", 0.5, 5))
    q, T = bench.zipf_workload(100, 5)
    row = bench.time_numba(mech, q, T, 10, False, 1, 0, parallel=False)
    assert row["status"] == "skipped" and "numba is not importable" in row["reason"]


@pytest.mark.parametrize("shuffle", [False, True])
def test_baselines_halt_at_c(shuffle):
    q, T = bench.zipf_workload(300, 5)
    n = q.shape[0]
    outs = [bench.numpy_vectorized(q, T, 2.0, 20.0, 5, 50, shuffle, seed=1)]
    if HAVE_NUMBA:
        serial, _ = bench.numba_kernels()
        outs.append(bench.run_numba(serial, q, T, 2.0, 20.0, 5, 50, shuffle, 1))
    for answers, items, evaluated in outs:
        assert answers.shape == (50, n)
        reached = (answers >= 0).sum(axis=1)
        assert evaluated == reached.sum()
        # evaluated positions form a prefix; a trial that stops early stops at its 5th ⊤
        assert np.all((answers >= 0) == (np.arange(n) < reached[:, None]))
        tops = (answers == 1).sum(axis=1)
        assert np.all(tops <= 5) and np.all((tops == 5) | (reached == n))
        for row, it, r in zip(answers, items, reached):
            assert np.all(it[r:] == -1)
            if shuffle:
                assert len(set(it[:r].tolist())) == r  # distinct items
            else:
                np.testing.assert_array_equal(it[:r], np.arange(r))
            if r < n:
                assert row[r - 1] == 1


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

    rows = bench._interleaved({"a": engine("a", [9.0, 3.0, 1.0, 2.0]), "broken": broken,
                               "b": engine("b", [9.0, 0.5, 0.7, 0.6])}, rounds=3)
    assert calls == ["a", "broken", "b"] + ["a", "b"] * 3
    assert rows["a"]["warmup_times_s"] == [9.0]
    assert rows["a"]["times_s"] == [3.0, 1.0, 2.0] and rows["a"]["median_s"] == 2.0
    assert rows["b"]["median_s"] == 0.6 and rows["b"]["interleaved_rounds"] == 3
    assert rows["a"]["compile_s"] == 3.0  # first call minus the median
    assert rows["broken"]["status"] == "skipped"
    assert "RuntimeError: no device" in rows["broken"]["reason"]
