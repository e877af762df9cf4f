"""``svtjax.sweep``: config validation, one compile per structure, vmapped points, exact resume,
device and process invariance, and agreement with ``svtjax.simulate``."""

import csv
import importlib
import json
import math
import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

import svtjax
from svtjax import _driver, sweep
from svtjax.mechanisms.base import Footprint, Held, Mechanism
from svtjax.sweep import report, runner, store
from tests.conftest import subprocess_env

ROOT = pathlib.Path(__file__).resolve().parents[1]
N = 300  # a stream length no other test file uses
TRIALS = 120  # trials per point: one chunk, which never compacts (svtjax._loops.bucket_sizes)


def _config(**sweep_keys):
    """The tests' shared sweep: most tests run exactly these shapes, so the two group kernels
    (svt-s, dpbook) compile once per test process, and the command-line sweeps of the same
    shapes (test_two_processes_with_jax_distributed_split_the_points, tests/test_cli.py's
    ``SHARED``) load svt-s's from the tests' compilation cache."""
    raw = {
        "sweep": {"name": "t", "trials": TRIALS, "datasets": [{"name": "zipf", "n": N}],
                  "metrics": ["f1", "ser", "picks", "evaluated"], "dtype": "float64",
                  "seed": 3, "shuffle": False, **sweep_keys},
        "grid": {"epsilon": [0.5, 1.0, 2.0], "c": [3, 6]},
        "mechanisms": [{"name": "svt-s", "monotonic": True},
                       {"name": "dpbook", "label": "DPBook"}],
    }
    return raw


def _csv_without_seconds(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r.pop("seconds")
    return rows


def _stats(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def _env(**extra):
    env = subprocess_env(**extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


# -- configuration -------------------------------------------------------------------------------

@pytest.mark.parametrize("change,needle", [
    (lambda r: r["mechanisms"].append({"name": "nope"}), "unknown mechanism 'nope'"),
    (lambda r: r["mechanisms"][0].update(epsilonx=1), "does not take parameter 'epsilonx'"),
    (lambda r: r["sweep"].update(metrics=["f2"]), "unknown metric 'f2'"),
    (lambda r: r["sweep"].update(datasets=["nodata"]), "unknown dataset 'nodata'"),
    (lambda r: r["grid"].update(rho=[1]), "axis 'rho' is not a parameter"),
    (lambda r: r["grid"].update(epsilon=[-1.0]), "epsilon must be a positive number"),
    (lambda r: r["sweep"].update(trials=0), "trials must be an integer from 1 to"),
    (lambda r: r["sweep"].update(typo=1), "unknown [sweep] key(s) ['typo']"),
    (lambda r: r.update(mechanisms=[]), "at least one [[mechanisms]]"),
])
def test_bad_config_names_the_problem(change, needle):
    raw = _config()
    change(raw)
    with pytest.raises(sweep.SweepConfigError) as err:
        sweep.load_config(raw)
    assert needle in str(err.value)


def test_toml_file_and_builtin_default(tmp_path):
    cfg = sweep.load_config("default")
    assert cfg.name == "default" and len(sweep.expand(cfg)) >= 40
    path = tmp_path / "s.toml"
    path.write_text('[sweep]\ntrials = 5\n[grid]\nepsilon = [0.5, 1.0]\nc = [4]\n'
                    '[[mechanisms]]\nname = "lyu-alg1"\nsensitivity = [1.0, 2.0]\n')
    points = sweep.expand(sweep.load_config(path))
    assert len(points) == 4
    assert {dict(p.axes)["sensitivity"] for p in points} == {1.0, 2.0}
    path.write_text("[sweep\n")
    with pytest.raises(sweep.SweepConfigError, match="invalid TOML"):
        sweep.load_config(path)
    with pytest.raises(sweep.SweepConfigError, match="no such sweep config"):
        sweep.load_config(tmp_path / "missing.toml")


def test_point_seeds_depend_only_on_the_point():
    cfg = sweep.load_config(_config())
    bigger = _config()
    bigger["grid"]["epsilon"].append(3.0)
    bigger["mechanisms"].append({"name": "lyu-alg1"})
    seeds = {(p.mechanism, p.params): p.seed(cfg) for p in sweep.expand(cfg)}
    cfg2 = sweep.load_config(bigger)
    seeds2 = {(p.mechanism, p.params): p.seed(cfg2) for p in sweep.expand(cfg2)}
    assert len(seeds) == 12 and len(seeds2) == 8 * 3
    assert all(seeds2[k] == v for k, v in seeds.items())
    assert len(set(seeds2.values())) == len(seeds2)


class _Sized(Mechanism):
    """A mechanism as the planner sees it: 1,000 bytes a trial at n = 100 (its Footprint), no
    CPU cap."""

    footprint = Footprint(held=(Held("ten bytes an item", bytes=10),))

    def stream_length(self, n):
        return 0


def _sweep_plan(trials, budget, max_points=1):
    """(points per batch, chunk) a sweep plans for trials of :class:`_Sized`."""
    plan = _driver.plan(_Sized(), 100, trials, shuffle=False, mode="values", budget=budget,
                        block=sweep.BLOCK_TRIALS, max_points=max_points)
    return max(plan.points, 1), plan.chunk


def test_plan_respects_the_memory_budget():
    for trials in (1, 100, 256, 257, 1000, 10**6):
        for budget in (1e5, 1e7, 1e9):
            pb, chunk = _sweep_plan(trials, budget, max_points=8)
            assert chunk >= min(trials, sweep.BLOCK_TRIALS)
            if trials > sweep.BLOCK_TRIALS:
                assert chunk % sweep.BLOCK_TRIALS == 0
            if chunk > sweep.BLOCK_TRIALS:
                assert pb * chunk * 1000 <= budget
            assert 1 <= pb <= 8


# -- numbers ----------------------------------------------------------------------------------

def test_point_equals_simulate_with_the_point_seed():
    # svt-s (monotonic, TRIALS trials): the simulate program of
    # test_registered_metric_prepare_and_quantiles
    cfg = sweep.load_config(_config())
    res = sweep.run(cfg, progress=False, log=lambda m: None)
    point = [p for p in sweep.expand(cfg) if p.mechanism == "svt-s" and p.c == 6][1]
    scores = svtjax.datasets.zipf(N).scores
    T = svtjax.datasets.lyu_threshold(scores, 6)
    out = svtjax.simulate(point.build(), scores, T, trials=TRIALS, seed=point.seed(cfg))
    f1 = np.asarray(svtjax.metrics.f1(svtjax.selected(out, 6), scores, 6))
    row = next(r for r in res.rows if r["point_id"] == point.point_id(cfg)
               and r["metric"] == "f1")
    np.testing.assert_allclose(row["mean"], f1.mean(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(row["std"], f1.std(ddof=1), rtol=1e-9)
    assert row["trials"] == TRIALS and row["ci_low"] < row["mean"] < row["ci_high"]


def _by_id(rows):
    return {(r["point_id"], r["metric"]): r for r in rows}


def test_20_epsilons_by_2_mechanisms_compile_each_mechanism_once():
    raw = _config(points_per_batch=8)
    eps = sorted({0.5, 1.0, 2.0} | {round(float(e), 3) for e in np.linspace(0.2, 4.0, 17)})
    raw["grid"] = {"epsilon": eps, "c": [3, 6]}
    assert len(eps) == 20
    batched = sweep.run(raw, progress=False, log=lambda m: None)
    assert batched.computed == 80
    # 80 points in batches of 8 (vmapped over stacked mechanisms): one trace per mechanism
    assert batched.compiles == {"svt-s": 1, "dpbook": 1}
    # the points of the shared sweep, computed one at a time, agree (vmapping may change the
    # last bit of a float reduction inside a per-trial metric, nothing else)
    single = _by_id(sweep.run(_config(), progress=False, log=lambda m: None).rows)
    many = _by_id(batched.rows)
    assert set(single) <= set(many)
    for key, row in single.items():
        other = many[key]
        assert (row["trials"], row["seed"]) == (other["trials"], other["seed"])
        np.testing.assert_allclose([row["mean"], row["std"]], [other["mean"], other["std"]],
                                   rtol=1e-12, atol=1e-15)


def test_chunk_size_does_not_change_numbers():
    """300 shuffled trials, more than one block of 256: the default chunk is 512 (one chunk per
    point, compacting at 512/64), a budget for 256 trials runs chunks of 256 (two per point, the
    second mostly padding; compacting at 256/32), the program of
    test_shuffled_trial_groups_give_identical_results_files. Shuffled only: a fixed order's
    Outcomes do not depend on the chunking (tests/test_simulate.py's
    test_chunk_size_does_not_change_outcomes) and the per-trial metrics computed from them are
    the same code in both orders."""
    raw = _config(shuffle=True, trials=300)
    raw["mechanisms"] = raw["mechanisms"][:1]
    big = sweep.run(raw, progress=False, log=lambda m: None)
    per_trial = runner._bytes_per_trial(sweep.expand(sweep.load_config(raw))[0].build(), N, 8,
                                        raw["sweep"].get("shuffle", True), 6, 4)
    budget = 300 * per_trial  # room for 256 trials, not 512: chunks of 256, two per point
    raw["sweep"]["memory_budget_mb"] = budget / 2**20
    mech = sweep.expand(sweep.load_config(raw))[0].build()
    assert _driver.plan(mech, N, 300, shuffle=raw["sweep"].get("shuffle", True), mode="values",
                        itemsize=8, budget=budget, extra_bytes=runner._extra_bytes(6, 4),
                        block=sweep.BLOCK_TRIALS).chunk == sweep.BLOCK_TRIALS
    small = sweep.run(raw, progress=False, log=lambda m: None)
    assert _stats(small.rows) == _stats(big.rows)


def test_interrupted_sweep_resumes_only_unfinished_points(tmp_path):
    raw = _config()
    full = sweep.run(raw, tmp_path / "full", progress=False, log=lambda m: None)
    assert full.computed == 12 and full.reused == 0
    out = tmp_path / "cut"
    written = []

    def stop_after_five(path, obj, _write=store._write_json):
        _write(path, obj)
        written.append(path)
        if len(written) == 5:
            raise KeyboardInterrupt("interrupted by the test after 5 points")

    with pytest.MonkeyPatch.context() as mp, pytest.raises(KeyboardInterrupt):
        mp.setattr(runner, "_write_json", stop_after_five)
        sweep.run(raw, out, progress=False, log=lambda m: None)
    assert len(list((out / "points").glob("*.json"))) == 5
    assert not (out / "results.csv").exists()
    again = sweep.run(raw, out, progress=False, log=lambda m: None)
    assert (again.computed, again.reused) == (7, 5)
    assert _csv_without_seconds(out / "results.csv") == \
        _csv_without_seconds(tmp_path / "full" / "results.csv")
    # a finished sweep recomputes nothing; changing trials changes every point's hash
    assert sweep.run(raw, out, progress=False, log=lambda m: None).computed == 0
    raw["sweep"]["trials"] = TRIALS - 1  # the chunk of TRIALS, its last trial padding
    assert sweep.run(raw, out, progress=False, log=lambda m: None).reused == 0
    side = json.loads((out / "results.json").read_text())
    assert side["config"]["sweep"]["trials"] == TRIALS - 1 and "jax" in side["versions"]
    assert side["versions"]["native_kernels"] == svtjax._native.status()


def test_shuffled_trial_groups_give_identical_results_files(tmp_path, monkeypatch):
    """A shuffled sweep whose chunks run in trial groups (``_driver.shuffle_groups``, forced
    here with a 1-byte budget: groups of the 128-trial minimum) writes the same results as one
    group per chunk."""
    raw = _config(shuffle=True, trials=256)
    raw["mechanisms"] = raw["mechanisms"][:1]
    raw["grid"] = {"epsilon": [1.0], "c": [3, 6]}
    sweep.run(raw, tmp_path / "one", num_devices=1, progress=False, log=lambda m: None)
    monkeypatch.setattr(_driver, "SHUFFLE_GROUP_BYTES", 1)
    mech = svtjax.get("svt-s", epsilon=1.0, c=3, monotonic=True)
    assert _driver.shuffle_groups(mech, N, 256, points=2) == 2
    sweep.run(raw, tmp_path / "groups", num_devices=1, progress=False, log=lambda m: None)
    assert _csv_without_seconds(tmp_path / "groups" / "results.csv") == \
        _csv_without_seconds(tmp_path / "one" / "results.csv")


def test_four_cpu_devices_give_identical_results_files(tmp_path):
    raw = _config()
    raw["mechanisms"] = raw["mechanisms"][:1]  # one compilation in the subprocess
    sweep.run(raw, tmp_path / "one", num_devices=1, progress=False, log=lambda m: None)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(raw))
    code = ("import json, jax, sys; jax.config.update('jax_enable_x64', True)\n"
            "from svtjax import sweep\n"
            "assert len(jax.devices()) == 4\n"
            f"r = sweep.run(json.load(open({str(cfg)!r})), {str(tmp_path / 'four')!r}, "
            "progress=False, log=lambda m: None)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=600, env=_env(
        XLA_FLAGS="--xla_force_host_platform_device_count=4"))
    side = json.loads((tmp_path / "four" / "results.json").read_text())
    assert len(side["devices"]) == 4
    assert _csv_without_seconds(tmp_path / "four" / "results.csv") == \
        _csv_without_seconds(tmp_path / "one" / "results.csv")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_with_jax_distributed_split_the_points(tmp_path):
    raw = _config()
    raw["mechanisms"] = raw["mechanisms"][:1]  # one compilation per process
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(
        f'[sweep]\nname = "t"\ntrials = {TRIALS}\ndatasets = [{{ name = "zipf", n = 300 }}]\n'
        'metrics = ["f1", "ser", "picks", "evaluated"]\ndtype = "float64"\nseed = 3\n'
        'shuffle = false\n'
        '[grid]\nepsilon = [0.5, 1.0, 2.0]\nc = [3, 6]\n'
        '[[mechanisms]]\nname = "svt-s"\nmonotonic = true\n')
    assert sweep.load_config(cfg).raw["sweep"] == raw["sweep"]
    port = _free_port()
    procs = [subprocess.Popen(
        [sys.executable, "-m", "svtjax.cli", "sweep", str(cfg), "--out", str(tmp_path / "dist"),
         "--no-plot", "--no-progress", "--coordinator", f"127.0.0.1:{port}",
         "--num-processes", "2", "--process-id", str(i)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        for i in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, e) in zip(procs, outs):
        assert p.returncode == 0, e
    assert "process 1: computed 3 point(s)" in outs[1][0]
    side = json.loads((tmp_path / "dist" / "results.json").read_text())
    assert side["processes"] == 2 and side["computed"] == 3 and side["points"] == 6
    sweep.run(raw, tmp_path / "one", progress=False, log=lambda m: None)
    assert _csv_without_seconds(tmp_path / "dist" / "results.csv") == \
        _csv_without_seconds(tmp_path / "one" / "results.csv")


# -- outputs ---------------------------------------------------------------------------------

def test_results_files_and_plot(tmp_path):
    raw = _config()
    res = sweep.run(raw, tmp_path, progress=False, log=lambda m: None)
    rows = sweep.read_results(tmp_path)
    assert len(rows) == 12 * 4 == len(res.rows)
    assert set(rows[0]) >= {"dataset", "label", "epsilon", "c", "metric", "mean", "std", "se",
                            "ci_low", "ci_high", "trials", "seconds", "point_id"}
    picks = [r for r in rows if r["metric"] == "picks"]
    assert all(0 <= r["mean"] <= r["c"] for r in picks)
    from svtjax import plot

    png = tmp_path / "f1.png"
    plot.utility_curves(tmp_path / "results.csv", png, x="epsilon", y="f1")
    assert png.stat().st_size > 1000
    with pytest.raises(ValueError, match="metric 'ncr' is not in the results"):
        plot.utility_curves(rows, None, y="ncr")
    assert "DPBook" in sweep.format_table(res.rows)


def test_parquet_when_pyarrow_is_installed(tmp_path):
    pytest.importorskip("pyarrow")
    sweep.run(_config(), tmp_path, progress=False, log=lambda m: None)
    rows = sweep.read_results(tmp_path / "results.parquet")
    assert rows == sweep.read_results(tmp_path / "results.csv")


# -- extension points ----------------------------------------------------------------------------

def _count_evaluated(out, scores, c, ctx):
    import jax.numpy as jnp

    del scores, c, ctx
    return jnp.sum(out.answers >= 0, axis=-1)


def _count_evaluated_again(out, scores, c, ctx):
    import jax.numpy as jnp

    del scores, c, ctx
    return jnp.sum(out.answers >= 0, axis=-1)


def _eps_times_c(out, scores, c, ctx):
    del scores, c
    return ctx.prepared["t_epsc"]["value"] + 0 * out.answers[:, 0]


def _thresholds(out, scores, c, ctx):
    del out, scores, c
    return ctx.thresholds


def test_registered_metric_prepare_and_quantiles(tmp_path):
    from svtjax.noise import Laplace

    own = [sweep.Metric("t_count", _count_evaluated, "positions evaluated"),
           sweep.Metric("t_epsc", _eps_times_c, "epsilon times c",
                        prepare=lambda mech, c: {"value": float(mech.epsilon or 0.0) * c})]
    with pytest.raises(ValueError, match="built-in"):
        sweep.Metric("f1", _count_evaluated, "no")
    raw = {"sweep": {"name": "ext", "trials": TRIALS, "datasets": [{"name": "zipf", "n": N}],
                     "metrics": ["t_count", "t_epsc", "evaluated"], "quantiles": [0.5, 0.9],
                     "dtype": "float64", "seed": 5, "shuffle": False},
           "grid": {"c": [3]},
           "mechanisms": [{"name": "svt-s", "monotonic": True, "epsilon": [0.5, 2.0]},
                          {"name": "generalized-svt", "label": "gen", "resample": True,
                           "threshold_noise": Laplace(2.0), "query_noise": Laplace(4.0)}]}
    with pytest.raises(sweep.SweepConfigError, match="unknown metric 't_count'"):
        sweep.load_config(raw)  # nothing is registered globally
    cfg = sweep.load_config(raw, metrics=own)
    res = sweep.run(cfg, tmp_path, progress=False, log=lambda m: None)
    scores = svtjax.datasets.zipf(N).scores
    T = svtjax.datasets.lyu_threshold(scores, 3)
    rows = _by_id(res.rows)
    for point in sweep.expand(cfg):
        pid = point.point_id(cfg)
        mech = point.build()
        out = svtjax.simulate(mech, scores, T, trials=TRIALS, seed=point.seed(cfg))
        count = np.sum(np.asarray(out.answers) >= 0, axis=1)
        row = rows[(pid, "t_count")]
        np.testing.assert_allclose([row["mean"], row["std"]], [count.mean(), count.std(ddof=1)],
                                   rtol=1e-12)
        np.testing.assert_allclose([row["q0.5"], row["q0.9"]], np.quantile(count, [0.5, 0.9]))
        np.testing.assert_allclose(rows[(pid, "evaluated")]["q0.5"], np.median(count) / N)
        eps = float(mech.epsilon or 0.0)  # generalized-svt: no ε (its noises are given)
        assert rows[(pid, "t_epsc")]["mean"] == pytest.approx(eps * 3, rel=1e-12, abs=0)
    # two points vmapped per call (the accelerator default): prepared values are stacked
    raw["sweep"]["points_per_batch"] = 2
    batched = _by_id(sweep.run(raw, progress=False, log=lambda m: None, metrics=own).rows)
    for key, row in rows.items():
        np.testing.assert_allclose(batched[key]["mean"], row["mean"], rtol=1e-12)
    side = json.loads((tmp_path / "results.json").read_text())
    assert "Laplace(scale=2.0)" in json.dumps(side["config"])
    assert side["metric_definitions"]["t_count"] == "positions evaluated"
    assert "q0.5" in sweep.read_results(tmp_path)[0]
    # the id of a point follows the code of its registered metrics: resume never reuses stale
    # numbers, and existing configs (built-in metrics only) keep their ids
    before = sweep.expand(cfg)[0].point_id(cfg)
    edited = sweep.load_config(raw, metrics=[
        sweep.Metric("t_count", _count_evaluated_again, "positions evaluated"), own[1]])
    assert sweep.expand(edited)[0].point_id(edited) != before
    again = sweep.load_config(raw, metrics=own)
    assert sweep.expand(again)[0].point_id(again) == before


def test_per_trial_threshold_rule_equals_one_trial_calls():
    import jax

    own = [sweep.Metric("t_count", _count_evaluated, "positions evaluated"),
           sweep.Metric("t_thr", _thresholds, "the trial's threshold")]
    raw = {"sweep": {"name": "ding", "trials": TRIALS, "datasets": [{"name": "zipf", "n": N}],
                     "metrics": ["t_thr", "t_count", "picks"], "dtype": "float64", "seed": 2,
                     "shuffle": False, "threshold": "ding"},
           "grid": {"epsilon": [1.0], "c": [3, 6]},
           "mechanisms": [{"name": "svt-s", "monotonic": True}]}
    cfg = sweep.load_config(raw, metrics=own)
    rows = _by_id(sweep.run(cfg, progress=False, log=lambda m: None).rows)
    scores = np.asarray(svtjax.datasets.zipf(N).scores)
    desc = np.sort(scores)[::-1]
    ts = np.arange(TRIALS)
    # each trial's index draw, vmapped in one program for both points (c is traced): outside
    # jit every operation would be a program of its own
    draw_index = jax.jit(jax.vmap(lambda t, a, lo: jax.random.randint(
        jax.random.fold_in(jax.random.fold_in(a, t), 0), (), lo, 4 * lo, dtype=np.int32),
        in_axes=(0, None, None)))
    for point in sweep.expand(cfg):
        c, mech = point.c, point.build()
        root = jax.random.key(point.seed(cfg))
        aux = jax.random.fold_in(root, 2**32 - 1)
        idx = np.asarray(draw_index(ts, aux, 2 * c))
        assert idx.min() >= 2 * c and idx.max() <= 8 * c - 1
        thr = (desc[idx] + desc[idx + 1]) / 2  # svtjax.datasets.ding_threshold's rule
        # trial t's one-trial call (key fold_in(root, t), its own threshold) is row t of a
        # simulate run at that threshold (tests/test_simulate.py's
        # test_trial_t_uses_fold_in_of_seed): one run per threshold drawn, all of them the
        # simulate program of test_point_equals_simulate_with_the_point_seed
        answers = np.empty((TRIALS, N), np.int8)
        for th in np.unique(thr):
            drawn = thr == th
            out = svtjax.simulate(mech, scores, th, trials=TRIALS, seed=point.seed(cfg))
            answers[drawn] = np.asarray(out.answers)[drawn]
        count = np.sum(answers >= 0, axis=1)
        picks = np.minimum(np.sum(answers == 1, axis=1), c)
        pid = point.point_id(cfg)
        for name, values in (("t_thr", thr), ("t_count", count), ("picks", picks)):
            np.testing.assert_allclose(rows[(pid, name)]["mean"], values.mean(), rtol=1e-12)
            np.testing.assert_allclose(rows[(pid, name)]["std"], values.std(ddof=1), rtol=1e-9)
        assert math.isnan(rows[(pid, "picks")]["threshold"])
    raw["sweep"]["points_per_batch"] = 2  # the two c values vmapped in one call
    batched = _by_id(sweep.run(raw, progress=False, log=lambda m: None, metrics=own).rows)
    for key, row in rows.items():
        np.testing.assert_allclose(batched[key]["mean"], row["mean"], rtol=1e-12)
    raw["grid"]["c"] = [40]  # 8c + 1 = 321 items needed, zipf has 300
    with pytest.raises(sweep.SweepConfigError, match="needs at least 8c"):
        sweep.run(raw, progress=False, log=lambda m: None, metrics=own)
    raw["sweep"]["threshold"] = "nope"
    with pytest.raises(sweep.SweepConfigError, match="per-trial rule"):
        sweep.load_config(raw, metrics=own)


def test_table_c_for_k_mechanisms_and_a_permuted_dataset():
    raw = {"sweep": {"name": "perm", "trials": TRIALS, "dtype": "float64", "seed": 4,
                     "datasets": [{"name": "zipf", "n": N, "permute": 7}], "metrics": ["f1"],
                     "shuffle": False},
           "grid": {"epsilon": [1.0]},
           "mechanisms": [{"name": "report-noisy-max", "label": "rnm", "k": 6, "c": [2, 3],
                           "monotonic": True}]}
    cfg = sweep.load_config(raw)
    points = sweep.expand(cfg)
    assert [(p.c, dict(p.params)["k"]) for p in points] == [(2, 6), (3, 6)]
    assert points[0].dataset == "zipf[n=300,permute=7]"
    rows = _by_id(sweep.run(cfg, progress=False, log=lambda m: None).rows)
    scores = svtjax.datasets.zipf(N).scores[np.random.default_rng(7).permutation(N)]
    for p in points:
        T = svtjax.datasets.lyu_threshold(scores, p.c)
        out = svtjax.simulate(p.build(), scores, T, trials=TRIALS, seed=p.seed(cfg))
        # 6 picks: the f1 program of test_point_equals_simulate_with_the_point_seed (f1 counts
        # the first c distinct picks, so any width >= c gives the same number)
        f1 = np.asarray(svtjax.metrics.f1(svtjax.selected(out, 6), scores, p.c))
        np.testing.assert_allclose(rows[(p.point_id(cfg), "f1")]["mean"], f1.mean(), rtol=1e-12)
    unpermuted = dict(raw, sweep=dict(raw["sweep"], datasets=[{"name": "zipf", "n": N}]))
    cfg2 = sweep.load_config(unpermuted)
    assert {p.seed(cfg2) for p in sweep.expand(cfg2)}.isdisjoint({p.seed(cfg) for p in points})
    bad = dict(raw, sweep=dict(raw["sweep"], datasets=[{"name": "zipf", "permute": -1}]))
    with pytest.raises(sweep.SweepConfigError, match="permute must be"):
        sweep.load_config(bad)


def test_plugins_bring_metrics_and_threshold_rules(tmp_path):
    """A TOML's ``plugins`` are imported before it is checked; their SWEEP_METRICS and
    SWEEP_THRESHOLD_RULES are known by name, and nothing leaks into other configs."""
    (tmp_path / "myplugin.py").write_text(
        "import jax.numpy as jnp\n"
        "from svtjax import sweep\n"
        "from svtjax.datasets import ThresholdRule\n"
        "def _tops(out, scores, c, ctx):\n"
        "    return jnp.sum(out.answers == 1, axis=-1)\n"
        "SWEEP_METRICS = [sweep.Metric('plugin_tops', _tops, 'number of tops')]\n"
        "SWEEP_THRESHOLD_RULES = [ThresholdRule('top', lambda key, s, c: s[0], 'largest')]\n")
    (tmp_path / "cfg.toml").write_text(
        '[sweep]\nname = "plug"\ntrials = 40\nplugins = ["myplugin.py"]\nshuffle = false\n'
        f'datasets = [{{ name = "zipf", n = {N} }}]\nmetrics = ["plugin_tops", "picks"]\n'
        'threshold = "top"\n[grid]\nc = [3]\nepsilon = [1.0]\n'
        '[[mechanisms]]\nname = "svt-s"\nmonotonic = true\n')
    res = sweep.run(str(tmp_path / "cfg.toml"), progress=False, log=lambda m: None)
    tops = {r["metric"]: r["mean"] for r in res.rows}
    assert 0 <= tops["plugin_tops"] <= 3 and tops["picks"] == tops["plugin_tops"]
    with pytest.raises(sweep.SweepConfigError, match="unknown metric 'plugin_tops'"):
        sweep.load_config({"sweep": {"metrics": ["plugin_tops"]},
                           "mechanisms": [{"name": "svt-s"}]})
    (tmp_path / "bad.toml").write_text('[sweep]\nplugins = ["nope_no_such_module"]\n'
                                       '[[mechanisms]]\nname = "svt-s"\n')
    with pytest.raises(sweep.SweepConfigError, match="plugin 'nope_no_such_module' cannot"):
        sweep.load_config(str(tmp_path / "bad.toml"))


# -- issue 20: one live sweep per directory, atomic writes, checks before running ----------------

def _stand_in_run(monkeypatch):
    """Sweeps in these tests run on the stand-in chunk: they are about files, not numbers."""
    from tests.stand_ins import stand_in_chunk

    monkeypatch.setattr(importlib.import_module("svtjax._driver"), "run_chunk", stand_in_chunk)


def test_a_second_live_sweep_on_the_same_out_is_refused(tmp_path, monkeypatch):
    """Issue 20, item 5, with two processes: while another process's sweep holds ``out`` a
    sweep there is refused in one line naming the holder (it used to compute every point a
    second time); once that process is killed (SIGKILL: no cleanup runs) the lock is free."""
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom svtjax.sweep import store\n"
         "store._OutputLock(sys.argv[1]).acquire()\nprint('locked', flush=True)\n"
         "time.sleep(120)\n", str(out)],
        stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert holder.stdout.readline().strip() == "locked"
        _stand_in_run(monkeypatch)
        with pytest.raises(sweep.SweepLockedError) as err:
            sweep.run(_config(), out, progress=False, log=lambda m: None)
        text = str(err.value)
        assert f"pid {holder.pid} on host {socket.gethostname()}" in text and "\n" not in text
        assert "another sweep" in text and str(out) in text
        assert not (out / "points").exists()
        from tests.stand_ins import run_cli

        code, stdout, stderr = run_cli(["sweep", "default", "--out", str(out), "--no-plot"])
        assert code == 2 and "another sweep (pid" in stderr and stderr.count("\n") == 1
    finally:
        holder.kill()
        holder.wait(timeout=60)
    res = sweep.run(_config(), out, progress=False, log=lambda m: None)
    assert res.computed == 12 and (out / "results.csv").exists()
    record = json.loads((out / sweep.LOCK_FILE).read_text())
    assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()


def test_only_process_0_locks_and_writes_the_results(tmp_path, monkeypatch):
    """Issue 20, item 5: with several processes (``--distributed``) the designated writer,
    process 0, holds the lock and writes the results; another process writes only its points,
    even while process 0 holds the lock."""
    _stand_in_run(monkeypatch)
    out = tmp_path / "out"
    out.mkdir()
    lock = store._OutputLock(out)
    lock.acquire()  # process 0 of the same sweep, elsewhere
    try:
        res = sweep.run(_config(), out, progress=False, log=lambda m: None, process_index=1,
                        process_count=2)
        assert res.computed == 6 and res.files == []
        assert len(list((out / "points").glob("*.json"))) == 6
        assert not any((out / f).exists() for f in ("results.csv", "results.json"))
        with pytest.raises(sweep.SweepLockedError):
            sweep.run(_config(), out, progress=False, log=lambda m: None, process_index=0,
                      process_count=2, wait_timeout=0)
    finally:
        lock.release()


def test_a_stale_lock_never_blocks(tmp_path, monkeypatch):
    """A lock file left by a dead process does not block (flock is released by the kernel); where
    flock is missing, the lock file's pid and host are checked: a dead pid on this host is
    stale, a live one or one from another host is reported."""
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = {"pid": dead.pid, "host": socket.gethostname(), "started": "earlier"}
    (out / sweep.LOCK_FILE).write_text(json.dumps(stale))
    lock = store._OutputLock(out)
    lock.acquire()
    lock.release()
    # without flock (no fcntl): the pid file
    monkeypatch.setitem(sys.modules, "fcntl", None)
    pidfile = out / (sweep.LOCK_FILE + ".pid")
    pidfile.write_text(json.dumps(stale))
    lock = store._OutputLock(out)
    lock.acquire()
    assert json.loads(pidfile.read_text())["pid"] == os.getpid()
    with pytest.raises(sweep.SweepLockedError, match=f"pid {os.getpid()} on host"):
        store._OutputLock(out).acquire()  # a live holder
    lock.release()
    assert not pidfile.exists()
    pidfile.write_text(json.dumps({**stale, "host": "another-host"}))
    with pytest.raises(sweep.SweepLockedError, match=f"pid {dead.pid} on host another-host"):
        store._OutputLock(out).acquire()


def test_concurrent_writers_never_share_a_temporary_file(tmp_path):
    """Issue 20, item 5: every file a sweep writes goes through a temporary file of its own
    (the results writer used the fixed name ``.results.csv.tmp``: two writers finishing
    together hit FileNotFoundError or mixed their contents). 8 threads rewrite the same
    results and point files at once: no error, each file is whole, no temporary file is
    left."""
    import threading

    config = sweep.load_config(_config())
    rows = [[{"dataset": "d", "mechanism": "m", "label": f"writer{w}", "metric": "f1",
              "mean": float(w), "seconds": 0.0}] * 50 for w in range(8)]
    errors = []

    def write(w):
        try:
            for _ in range(15):
                report._write_outputs(config, rows[w], tmp_path, {"writer": w})
                store._write_json(tmp_path / "points" / "p.json", {"point_id": "p", "w": w})
        except Exception as err:  # noqa: BLE001 - collected and reported below
            errors.append(repr(err))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    final = sweep.read_results(tmp_path)
    assert len(final) == 50 and len({r["label"] for r in final}) == 1
    assert json.loads((tmp_path / "results.json").read_text())["writer"] in range(8)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")) == []


def test_out_that_cannot_be_used_is_refused_before_running(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("should not run")

    monkeypatch.setattr(importlib.import_module("svtjax._driver"), "run_chunk", refuse)
    afile = tmp_path / "file"
    afile.write_text("x")
    for out, needle in ((afile, "is an existing file, not a directory"),
                        ("/proc/forbidden/x", "cannot create the output directory"),
                        (5, "out must be a directory path")):
        with pytest.raises(sweep.SweepConfigError, match=needle):
            sweep.run(_config(), out, progress=False, log=lambda m: None)


@pytest.mark.parametrize("change,needle", [
    (lambda r: r["grid"].update(epsilon=[0.5, 0.5]), "[grid] epsilon lists 0.5 more than once"),
    (lambda r: r["grid"].update(c=[3, 3]), "[grid] c lists 3 more than once"),
    (lambda r: r["grid"].update(epsilon=[1, 1.0]), "[grid] epsilon lists 1.0 more than once"),
    (lambda r: r["mechanisms"][0].update(allocation=["1:1", "1:1"]),
     "svt-s: allocation lists '1:1' more than once"),
    (lambda r: r["sweep"].update(metrics=["f1", "f1"]), "[sweep] metrics lists 'f1' more"),
    (lambda r: r["sweep"].update(seed=2**64), "seed must be an integer in [0, 2**64)"),
    (lambda r: r["sweep"].update(seed=-1), "seed must be an integer in [0, 2**64)"),
    (lambda r: r.update(plot={"x": "epsilonn"}), "the plot's x 'epsilonn' is not a parameter"),
    (lambda r: r.update(plot={"y": "ncr"}), "the plot's y 'ncr' is not a metric of this sweep"),
    (lambda r: r.update(plot={"z": 1}), "unknown [plot] key 'z'"),
    (lambda r: r["mechanisms"].append({"name": "svt_s", "label": "x"}),
     "unknown mechanism 'svt_s' (did you mean 'svt-s'?)"),
    (lambda r: r["mechanisms"][0].update(monotonc=True), "(did you mean 'monotonic'?)"),
    (lambda r: r["sweep"].update(metrics=["F1"]), "unknown metric 'F1' (did you mean 'f1'?)"),
    (lambda r: r["sweep"].update(datasets=["Zipff"]), "(did you mean 'zipf'?)"),
    (lambda r: r["sweep"].update(datasets=[{"name": "zipf", "n": 0}]), "n must be an integer"),
    (lambda r: r["sweep"].update(datasets=[{"name": "zipf", "n": 5}]),
     "c=6 must be smaller than the 5 items"),
    (lambda r: r["grid"].update(epsilonn=[1.0]), "axis 'epsilonn' is not a parameter of any "
                                                 "mechanism in the sweep (did you mean 'epsilon'"),
    (lambda r: r["sweep"].update(trails=3), "unknown [sweep] key(s) ['trails'] (did you mean "
                                            "'trials'?)"),
])
def test_config_checks_issue_20(change, needle):
    """Issue 20, items 7, 8 and 9: duplicates refused, seeds in [0, 2**64), plot axes, did you
    mean, datasets checked when the config is loaded (not when the sweep runs)."""
    raw = _config()
    change(raw)
    with pytest.raises(sweep.SweepConfigError) as err:
        sweep.load_config(raw)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_largest_seed_and_plot_axes():
    raw = _config(seed=2**64 - 1)
    raw["plot"] = {"x": "c", "y": "ser"}
    config = sweep.load_config(raw)
    assert sweep.plot_axes(config) == ("c", "ser")
    assert sweep.plot_axes(config, "epsilon", "picks") == ("epsilon", "picks")
    assert len({p.seed(config) for p in sweep.expand(config)}) == 12


def test_parquet_is_written_through_a_temporary_file(tmp_path, monkeypatch):
    """results.parquet (with pyarrow) goes through a unique temporary path and a rename like the
    other files; a stand-in pyarrow records the path it is asked to write."""
    import types

    written = []
    pa = types.ModuleType("pyarrow")
    pa.Table = types.SimpleNamespace(from_pylist=lambda rows: rows)
    pq = types.ModuleType("pyarrow.parquet")

    def write_table(table, where):
        written.append(pathlib.Path(where))
        pathlib.Path(where).write_text(json.dumps(table))

    pq.write_table = write_table
    pa.parquet = pq
    monkeypatch.setitem(sys.modules, "pyarrow", pa)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", pq)
    config = sweep.load_config(_config())
    rows = [{"dataset": "d", "label": "x", "metric": "f1", "mean": 0.5}]
    files = report._write_outputs(config, rows, tmp_path, {})
    assert str(tmp_path / "results.parquet") in files
    assert written[0].parent == tmp_path and written[0].name.startswith(".results.parquet.")
    assert written[0].name.endswith(".tmp") and not written[0].exists()
    assert json.loads((tmp_path / "results.parquet").read_text()) == rows
