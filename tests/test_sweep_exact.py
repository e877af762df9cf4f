"""``[sweep] exact = true``: exact expected metrics (``svtjax.exact``) beside the Monte Carlo
columns; empty columns and one log line for mechanisms without an exact law; validation; resume.
"""

import json

import numpy as np
import pytest

import svtjax
from svtjax import exact, sweep
from svtjax.sweep import exact as sweep_exact
from tests.stand_ins import no_kernels, run_cli

N, C, EPS, TRIALS = 50, 5, 1.0, 4000

TOML = f"""
[sweep]
name = "exact"
trials = {TRIALS}
seed = 5
datasets = [{{ name = "zipf", n = {N} }}]
metrics = ["ser", "ncr", "picks", "evaluated"]
shuffle = false                  # fixed order: half the compile time of a shuffled kernel
dtype = "float64"
exact = true

[grid]
epsilon = [{EPS}]
c = [{C}]

[[mechanisms]]
name = "svt-s"
monotonic = true
"""


def _toml(tmp_path, text=TOML, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _with_em_peeling(text=TOML):
    return text + '\n[[mechanisms]]\nname = "em-peeling"\n'


def _quiet():
    lines = []
    return lines, lines.append


def test_exact_ser_is_expected_metrics_and_agrees_with_monte_carlo(tmp_path):
    """exact_ser equals svtjax.exact.expected_metrics of the point to 1e-12, and the Monte Carlo
    mean of every metric of the point lies within 4 standard errors of its exact column (fixed
    seed; with a fresh seed each of the four checks fails with probability 6e-5)."""
    config = sweep.load_config(_toml(tmp_path))
    assert config.exact is True
    lines, log = _quiet()
    res = sweep.run(config, tmp_path / "out", progress=False, log=log)
    assert not [m for m in lines if "exact" in m]  # svt-s qualifies: nothing to say
    scores = svtjax.datasets.zipf(N).scores
    T = svtjax.datasets.lyu_threshold(scores, C)
    mech = svtjax.get("svt-s", epsilon=EPS, c=C, monotonic=True)
    want = exact.expected_metrics(mech, scores, T, shuffle=False, c=C)
    rows = {r["metric"]: r for r in res.rows}
    for m in ("ser", "ncr", "picks"):
        for r in res.rows:  # every row of the point carries the point's exact columns
            np.testing.assert_allclose(r[f"exact_{m}"], float(want[m]), rtol=0, atol=1e-12)
    # the sweep's "evaluated" is a fraction of the stream; exact's, positions read
    np.testing.assert_allclose(rows["evaluated"]["exact_evaluated"],
                               float(want["evaluated"]) / N, rtol=0, atol=1e-12)
    for m, r in rows.items():
        z = (r["mean"] - r[f"exact_{m}"]) / r["se"]
        assert abs(z) < 4, f"{m}: Monte Carlo {r['mean']} ± {r['se']} vs exact {r[f'exact_{m}']}"
    on_disk = sweep.read_results(tmp_path / "out")
    assert on_disk[0]["exact_ser"] == rows["ser"]["exact_ser"]
    side = json.loads((tmp_path / "out" / "results.json").read_text())
    assert side["exact"]["dtype"] == "float64" and "exact_ser" in side["exact"]["columns"]
    assert "(exact " in sweep.format_table(res.rows)


def test_unsupported_mechanism_gets_empty_columns_and_one_log_line(tmp_path, monkeypatch):
    raw = sweep.load_config(_toml(tmp_path, _with_em_peeling())).raw
    raw["grid"]["epsilon"] = [0.5, 1.0, 2.0]  # three em-peeling points, still one line
    lines, log = _quiet()
    with no_kernels(monkeypatch):
        res = sweep.run(raw, tmp_path / "out", progress=False, log=log)
    said = [m for m in lines if "exact" in m]
    assert len(said) == 1, said
    assert "em-peeling" in said[0] and "3 of 3 point(s)" in said[0]
    assert "no single-threshold law" in said[0] and "supported:" in said[0]
    for r in res.rows:
        filled = r["mechanism"] == "svt-s"
        assert all((r[f"exact_{m}"] is not None) == filled for m in ("ser", "ncr", "picks"))
    with open(tmp_path / "out" / "results.csv") as f:  # the tidy table: no exact columns
        assert not any(c.startswith("exact_") for c in f.readline().strip().split(","))
    with open(tmp_path / "out" / "exact.csv") as f:  # one row per point, empty where no law
        header = f.readline().strip().split(",")
        em = [line.strip().split(",") for line in f if ",em-peeling," in line]
    assert len(em) == 3 and all(row[header.index("exact_ser")] == "" for row in em)
    on_disk = sweep.read_results(tmp_path / "out")
    assert [r["exact_ser"] for r in on_disk] == [r["exact_ser"] for r in res.rows]
    side = json.loads((tmp_path / "out" / "results.json").read_text())
    assert list(side["exact"]["empty"]) == ["em-peeling"]


def test_random_order_with_resampling_and_per_trial_thresholds_say_why(tmp_path, monkeypatch):
    raw = sweep.load_config(_toml(tmp_path)).raw
    raw["sweep"]["shuffle"] = True
    raw["mechanisms"] = [{"name": "dpbook"}]  # resamples the threshold: fixed order only
    lines, log = _quiet()
    with no_kernels(monkeypatch):
        res = sweep.run(raw, progress=False, log=log)
    assert [m for m in lines if "exact" in m] == [
        "[sweep] exact: dpbook (dpbook), 1 of 1 point(s): exact columns empty: random order "
        "(shuffle = true) is not supported for a mechanism that resamples the threshold"]
    assert all(r["exact_ser"] is None for r in res.rows)
    raw["sweep"]["threshold"] = "ding"  # Ding et al.'s per-trial threshold: one line, all empty
    lines, log = _quiet()
    with no_kernels(monkeypatch):
        res = sweep.run(raw, progress=False, log=log)
    said = [m for m in lines if "exact" in m]
    assert len(said) == 1 and "per trial" in said[0]
    assert all(r["exact_ser"] is None for r in res.rows)


@pytest.mark.parametrize("value", ['"yes"', "1", "[true]"])
def test_a_bad_value_exits_2_with_one_line(tmp_path, monkeypatch, value):
    path = _toml(tmp_path, TOML.replace("exact = true", f"exact = {value}"))
    with no_kernels(monkeypatch):
        code, out, err = run_cli(["sweep", str(path), "--out", str(tmp_path / "o"), "--no-plot"])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "[sweep] exact must be true or false" in err, err
    assert not (tmp_path / "o" / "points").exists()


def test_exact_is_not_part_of_the_point_hash_and_resume_fills_or_drops_it(tmp_path,
                                                                          monkeypatch):
    """Monte Carlo numbers do not depend on ``exact``: toggling it reuses every point; the exact
    values are stored in the point records and computed for reused records that lack them."""
    raw = sweep.load_config(_toml(tmp_path, _with_em_peeling())).raw
    raw["sweep"]["exact"] = False
    out = tmp_path / "out"
    with no_kernels(monkeypatch):
        plain = sweep.run(raw, out, progress=False, log=lambda m: None)
        assert not any(k.startswith("exact_") for k in plain.rows[0])
        raw["sweep"]["exact"] = True
        lines, log = _quiet()
        filled = sweep.run(raw, out, progress=False, log=log)
        assert (filled.computed, filled.reused) == (0, 2)
        assert len([m for m in lines if "exact" in m]) == 1  # em-peeling, on resume too
        ser = {r["mechanism"]: r["exact_ser"] for r in filled.rows}
        assert ser["em-peeling"] is None and 0 < ser["svt-s"] < 1
        records = [json.loads(p.read_text()) for p in (out / "points").glob("*.json")]
        assert sorted("exact" in r for r in records) == [False, True]
        again = sweep.run(raw, out, progress=False, log=lambda m: None)
        assert again.computed == 0 and [r["exact_ser"] for r in again.rows] == \
            [r["exact_ser"] for r in filled.rows]
        raw["sweep"]["exact"] = False  # records with exact values, a sweep without: no columns
        dropped = sweep.run(raw, out, progress=False, log=lambda m: None)
    assert dropped.computed == 0 and not any(k.startswith("exact_") for k in dropped.rows[0])
    assert [{k: r[k] for k in r if k != "seconds"} for r in dropped.rows] == \
        [{k: r[k] for k in r if k != "seconds"} for r in plain.rows]


def test_points_sharing_dataset_c_and_law_structure_are_evaluated_in_one_call(tmp_path,
                                                                              monkeypatch):
    """Points of one (dataset, c, threshold, law structure) get their exact values from one
    ``expected_metrics_many`` call (one compilation per group, not per point), equal to each
    point's own ``expected_metrics``; a mechanism without a law still gets its one log line."""
    raw = sweep.load_config(_toml(tmp_path, _with_em_peeling())).raw
    raw["grid"] = {"epsilon": [0.5, 1.0, 2.0], "c": [3, 5]}
    raw["mechanisms"].insert(1, {"name": "svt-s", "label": "1:1", "allocation": "1:1"})
    calls = []
    many = exact.expected_metrics_many

    def spy(mechs, queries, thresholds, **kw):
        calls.append((len(mechs), kw["c"]))
        return many(mechs, queries, thresholds, **kw)

    monkeypatch.setattr(exact, "expected_metrics_many", spy)
    lines, log = _quiet()
    with no_kernels(monkeypatch):
        res = sweep.run(raw, tmp_path / "out", progress=False, log=log)
    assert sorted(calls) == [(6, 3), (6, 5)]  # 2 svt-s mechanisms x 3 ε per c
    calls.clear()
    monkeypatch.setattr(sweep_exact, "_EXACT_GROUP", 4)  # the cap on a call's points
    with no_kernels(monkeypatch):
        capped = sweep.run(raw, tmp_path / "capped", progress=False, log=lambda m: None)
    assert sorted(calls) == [(2, 3), (2, 5), (4, 3), (4, 5)]
    np.testing.assert_allclose(  # other groupings: the same values up to rounding
        [r["exact_ser"] or np.nan for r in capped.rows],
        [r["exact_ser"] or np.nan for r in res.rows], rtol=0, atol=1e-12)
    assert len([m for m in lines if "exact" in m]) == 1  # em-peeling
    scores = svtjax.datasets.zipf(N).scores
    for r in res.rows:
        if r["mechanism"] != "svt-s" or r["metric"] != "ser":
            continue
        params = {"allocation": "1:1"} if r["label"] == "1:1" else {"monotonic": True}
        mech = svtjax.get("svt-s", epsilon=r["epsilon"], c=r["c"], **params)
        want = exact.expected_metrics(mech, scores, svtjax.datasets.lyu_threshold(scores, r["c"]),
                                      c=r["c"])
        np.testing.assert_allclose(r["exact_ser"], float(want["ser"]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("entry, message", [
    ("exact_accuracy = { kink_tol = 0 }", "[sweep] exact_accuracy.kink_tol must be a number in "
                                          "(0, 1)"),
    ("exact_accuracy = { tol = 1.5 }", "[sweep] exact_accuracy.tol must be a number in (0, 1)"),
    ("exact_accuracy = { tol = true }", "[sweep] exact_accuracy.tol must be a number in (0, 1)"),
    ('exact_accuracy = { kink_tol = "1e-4" }', "exact_accuracy.kink_tol must be a number"),
    ("exact_accuracy = { kinktol = 1e-4 }", "unknown [sweep] exact_accuracy key 'kinktol' "
                                            "(did you mean 'kink_tol'?); valid: kink_tol, tol"),
    ("exact_accuracy = 1e-4", "[sweep] exact_accuracy must be a table of error targets"),
])
def test_a_bad_exact_accuracy_exits_2_with_one_line(tmp_path, monkeypatch, entry, message):
    path = _toml(tmp_path, TOML.replace("exact = true", f"exact = true\n{entry}"))
    with no_kernels(monkeypatch):
        code, out, err = run_cli(["sweep", str(path), "--out", str(tmp_path / "o"), "--no-plot"])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "o" / "points").exists()


def test_exact_accuracy_without_exact_is_refused(tmp_path):
    """Nothing is silently ignored: error targets for exact columns the sweep does not make."""
    text = TOML.replace("exact = true", "exact = false\nexact_accuracy = { kink_tol = 1e-4 }")
    with pytest.raises(sweep.SweepConfigError, match="exact_accuracy is set but exact is not"):
        sweep.load_config(_toml(tmp_path, text))


def test_exact_accuracy_sets_the_rule_and_a_change_recomputes_the_exact_values(tmp_path,
                                                                               monkeypatch):
    """``exact_accuracy`` reaches ``svtjax.exact.quadrature``: the exact columns equal
    ``expected_metrics`` on that rule (and differ from the default rule's), the targets are
    stored in the point record and results.json, and a resumed sweep with other targets reuses
    the Monte Carlo numbers but recomputes the exact ones."""
    coarse = {"tol": 1e-3, "kink_tol": 0.5}
    raw = sweep.load_config(_toml(tmp_path)).raw
    raw["sweep"]["exact_accuracy"] = dict(coarse)
    out = tmp_path / "out"
    with no_kernels(monkeypatch):
        res = sweep.run(raw, out, progress=False, log=lambda m: None)
    scores = svtjax.datasets.zipf(N).scores
    T = svtjax.datasets.lyu_threshold(scores, C)
    mech = svtjax.get("svt-s", epsilon=EPS, c=C, monotonic=True)
    rule = exact.quadrature(mech, scores, T, **coarse)
    want = float(exact.expected_metrics(mech, scores, T, c=C, rule=rule)["ser"])
    default = float(exact.expected_metrics(mech, scores, T, c=C)["ser"])
    assert abs(want - default) > 1e-9  # the coarse rule is told apart from the default one
    ser = next(r for r in res.rows if r["metric"] == "ser")
    np.testing.assert_allclose(ser["exact_ser"], want, rtol=0, atol=1e-13)
    (record,) = [json.loads(p.read_text()) for p in (out / "points").glob("*.json")]
    assert record["exact"]["accuracy"] == coarse
    assert json.loads((out / "results.json").read_text())["exact"]["accuracy"] == coarse
    del raw["sweep"]["exact_accuracy"]  # back to the default rule: recomputed, not reused
    with no_kernels(monkeypatch):
        again = sweep.run(raw, out, progress=False, log=lambda m: None)
    assert again.computed == 0
    ser = next(r for r in again.rows if r["metric"] == "ser")
    np.testing.assert_allclose(ser["exact_ser"], default, rtol=0, atol=1e-13)
    (record,) = [json.loads(p.read_text()) for p in (out / "points").glob("*.json")]
    assert "accuracy" not in record["exact"]
