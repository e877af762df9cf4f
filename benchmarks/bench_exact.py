"""svtjax.exact at the papers' scale: speed, quadrature accuracy, and Monte Carlo agreement.

``--part speed`` (issue 17's speed target): a 10-point ε curve (ε = 0.1 .. 1, geometric) of the
exact E[SER] of svt-s (Lyu'17 Algorithm 7, default split 1:(2c)^(2/3)) on Zipf n = 10^4, c = 50,
threshold = mean of the 50th and 51st scores, in random order (``shuffle=True``) and in fixed
order, each evaluated with ``svtjax.exact.expected_metrics_many`` (one compiled call for the ten
points). Records the wall time of the curve as the first JAX work of a new process (every
compilation included; ``--part first-call`` in a subprocess, imports not counted), of the first
call in this process after the other order's (shared compilations done), and of a
second call, the quadrature nodes, how much the doubled rule (same panels, twice the nodes)
changes every selection probability and E[SER], and the Monte Carlo time for the same standard
error 1e-4: ``svtjax.simulate`` (with a SER reducer) is timed on ``--mc-trials`` trials per
point after a warm-up, the per-trial standard deviation of SER gives the trials needed for a
standard error of 1e-4, and the time is scaled from the measured throughput (stated as an
extrapolation in the record).

``--part check`` (issue 17's Monte Carlo acceptance): for svt-s with two allocations
(1:(2c)^(2/3); monotonic 1:c^(2/3)), svt-exp (exponential noise, optimal correction with
k = ⌊n/c⌋) and generalized-svt with a Gaussian pair (SVT-Gau's calibration σ1 = sΔ/ε1,
σ2 = s·2cΔ/ε2, s = sqrt(2 ln(1.25 n)), ε1 : ε2 = 1 : (2c)^(2/3)) on Zipf n = 10^4, retail,
BMS-WebView-1 and T10I4D100K, c ∈ {25, 50, 100}, fixed and random order, ``--trials`` (10^5)
trials each: every E[SER] and E[|S|] must lie within 4 Monte Carlo standard errors of the
exact value (SER's standard error from the trials, |S|'s from its exact law, since every trial
may pick exactly c); and svt-s with its query noise 1.1× too large (allocation (ε1, ε2/1.1)) must be
rejected by the same rule for each (dataset, c, order). ``--quick`` restricts both parts.

``--part accuracy``: the default quadrature against a much finer one (every kink an edge, panels
one query-noise scale wide) and against the doubled rule, on Zipf, retail, T10I4D100K and
BMS-WebView-1 (c = 50, ε ∈ {0.1, 0.5}, fixed order): the largest error of any P(i ∈ S).

Writes one JSON record (schema ``svtjax-bench-exact/1``) to benchmarks/results/. Timings taken
while other processes share the CPU are not the machine's: the record stores the load average.

    python benchmarks/bench_exact.py [--part speed|check|accuracy|all] [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # a tool's choice: the exact laws recommend float64

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import svtjax  # noqa: E402
from svtjax import _native, exact  # noqa: E402
from svtjax.exact import _quadrature  # noqa: E402

SCHEMA = "svtjax-bench-exact/1"
Z = 4.0  # the acceptance rule: within 4 standard errors


def _git() -> str:
    try:
        return subprocess.check_output(["git", "-C", str(HERE.parent), "rev-parse", "--short",
                                        "HEAD"], text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _machine() -> dict:
    return {"host": socket.gethostname(), "cpu_model": _cpu_model(),
            "platform": platform.platform(),
            "python": platform.python_version(), "jax": jax.__version__,
            "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(), "commit": _git(),
            "native": _native.status()}


# -- Monte Carlo ---------------------------------------------------------------------------------


def _per_trial(k, scores, c, out):
    sel = svtjax.selected(out, k)
    ser = svtjax.metrics.ser(sel, scores, c)
    picks = jnp.sum(sel >= 0, axis=-1).astype(scores.dtype)
    return ser, ser ** 2, picks, picks ** 2


def monte_carlo(mech, q, t, c: int, *, trials: int, shuffle: bool, seed: int) -> dict:
    """Means and standard errors of SER and |S| over ``trials`` simulated runs."""
    import functools

    reducer = jax.tree_util.Partial(functools.partial(_per_trial, c), jnp.asarray(q), c)
    t0 = time.perf_counter()
    sums = svtjax.simulate(mech, q, t, trials=trials, seed=seed, shuffle=shuffle,
                           reduce=reducer)
    s1, s2, p1, p2 = (float(x) / trials for x in sums)
    seconds = time.perf_counter() - t0
    return {"ser": s1, "ser_sd": math.sqrt(max(s2 - s1 ** 2, 0.0)),
            "ser_se": math.sqrt(max(s2 - s1 ** 2, 0.0) / (trials - 1)),
            "picks": p1, "picks_se": math.sqrt(max(p2 - p1 ** 2, 0.0) / (trials - 1)),
            "trials": trials, "seconds": seconds}


# -- speed ---------------------------------------------------------------------------------------


def _speed_case(quick: bool):
    q = svtjax.datasets.load("zipf").scores
    c = 50
    return q, c, svtjax.datasets.lyu_threshold(q, c), np.geomspace(0.1, 1.0, 4 if quick else 10)


def _curve(shuffle: bool, quick: bool):
    """The timed work: the ten mechanisms, their rules and one expected_metrics_many call."""
    q, c, t, epsilons = _speed_case(quick)
    t0 = time.perf_counter()
    mechs = [svtjax.get("svt-s", epsilon=float(e), c=c) for e in epsilons]
    rules = [exact.quadrature(m, q, t) for m in mechs]
    t_rules = time.perf_counter() - t0
    first = exact.expected_metrics_many(mechs, q, t, shuffle=shuffle, rules=rules)
    ser = [float(m["ser"]) for m in first]
    return mechs, rules, ser, t_rules, time.perf_counter() - t0


def _first_call_in_new_process(shuffle: bool, quick: bool) -> float:
    """Seconds of :func:`_curve` as the first JAX work of a new Python process (imports not
    counted): what a user pays for the curve including every compilation."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--part", "first-call",
           "--order", "random" if shuffle else "fixed"] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["seconds"])


def speed(quick: bool, mc_trials: int) -> dict:
    q, c, t, epsilons = _speed_case(quick)
    out = {"dataset": "zipf", "n": int(q.size), "c": c, "threshold": t,
           "epsilons": epsilons.tolist(), "mechanism": "svt-s (default 1:(2c)^(2/3))"}
    for shuffle in (True, False):
        order = "random" if shuffle else "fixed"
        t_new_process = _first_call_in_new_process(shuffle, quick)
        mechs, rules, ser, t_rules, t_first = _curve(shuffle, quick)
        t1 = time.perf_counter()
        again = exact.expected_metrics_many(mechs, q, t, shuffle=shuffle, rules=rules)
        [float(m["ser"]) for m in again]
        t_second = time.perf_counter() - t1
        # Accuracy: the same panels with twice the nodes.
        fine = [_quadrature.doubled(r) for r in rules]
        laws = exact.selection_laws(mechs, q, t, shuffle=shuffle, c=c, rules=rules)
        laws2 = exact.selection_laws(mechs, q, t, shuffle=shuffle, c=c, rules=fine)
        ser2 = [float(m["ser"]) for m in exact.expected_metrics_many(mechs, q, t,
                                                                     shuffle=shuffle,
                                                                     rules=fine)]
        diff_member = max(float(np.max(np.abs(np.asarray(a.member) - np.asarray(b.member))))
                          for a, b in zip(laws, laws2))
        diff_ser = max(abs(a - b) for a, b in zip(ser, ser2))
        row = {"order": order, "seconds_first_call_new_process": t_new_process,
               "seconds_first_call_incl_compile": t_first, "seconds_rules": t_rules,
               "seconds_second_call": t_second,
               "nodes": [int(r.nodes.size) for r in rules], "ser": ser,
               "doubled_max_abs_change_member": diff_member,
               "doubled_max_abs_change_ser": diff_ser}
        # Monte Carlo for the same standard error 1e-4 (extrapolated from a measured run).
        mc_seconds, mc_needed = 0.0, []
        for k, m in enumerate(mechs):
            monte_carlo(m, q, t, c, trials=min(mc_trials, 2000), shuffle=shuffle, seed=k)
            run = monte_carlo(m, q, t, c, trials=mc_trials, shuffle=shuffle, seed=100 + k)
            needed = math.ceil((run["ser_sd"] / 1e-4) ** 2)
            mc_needed.append(needed)
            mc_seconds += run["seconds"] * needed / mc_trials
            row.setdefault("mc_check", []).append(
                {"epsilon": float(epsilons[k]), "mc_ser": run["ser"], "se": run["ser_se"],
                 "exact_ser": ser[k], "z": (run["ser"] - ser[k]) / max(run["ser_se"], 1e-300),
                 "trials": mc_trials, "seconds": run["seconds"]})
        row["mc_trials_for_se_1e-4"] = mc_needed
        row["mc_seconds_for_se_1e-4_extrapolated"] = mc_seconds
        print(f"[speed] {order}: first call in a new process {t_new_process:.2f} s, in this "
              f"one {t_first:.2f} s (incl. compile; rules "
              f"{t_rules:.2f} s), second {t_second:.2f} s, nodes/point "
              f"{np.mean(row['nodes']):.0f}, doubled rule changes member by "
              f"{diff_member:.1e}, SER by {diff_ser:.1e}; Monte Carlo for SE 1e-4: "
              f"{sum(mc_needed)} trials, ~{mc_seconds:.0f} s (extrapolated)", flush=True)
        out[order] = row
    return out


# -- Monte Carlo cross-check -------------------------------------------------------------------


def _mechanisms(n: int, c: int, eps: float) -> list[tuple[str, object]]:
    w = (2 * c) ** (2 / 3)
    eps1, eps2 = eps / (1 + w), eps * w / (1 + w)
    s = math.sqrt(2 * math.log(1.25 * n))  # δ = 1/n
    return [
        ("svt-s 1:(2c)^(2/3)", svtjax.get("svt-s", epsilon=eps, c=c)),
        ("svt-s monotonic 1:c^(2/3)", svtjax.get("svt-s", epsilon=eps, c=c, monotonic=True)),
        ("svt-exp optimal", svtjax.get("svt-exp", epsilon=eps, c=c, correction_k=n // c)),
        ("generalized-svt gaussian", svtjax.get(
            "generalized-svt", c=c, threshold_noise=svtjax.noise.Gaussian(s / eps1),
            query_noise=svtjax.noise.Gaussian(s * 2 * c / eps2))),
    ]


def check(quick: bool, trials: int, eps: float, partial: Optional[Path] = None) -> dict:
    """``partial``: a JSON-lines file of finished rows; rows already there (same trials and ε)
    are reused and new ones appended, so an interrupted check resumes (each case's seed is its
    index, whatever ran before)."""
    datasets = ("bms-webview-1",) if quick else ("zipf", "retail", "bms-webview-1",
                                                 "t10i4d100k")
    cs = (25,) if quick else (25, 50, 100)
    rows, failures = [], 0
    done = {}
    if partial is not None and partial.exists():
        for line in partial.read_text().splitlines():
            r = json.loads(line)
            if r["mc"]["trials"] == trials and r["epsilon"] == eps:
                done[(r["dataset"], r["c"], r["order"], r["mechanism"])] = r
    seed = 0
    for name in datasets:
        q = svtjax.datasets.load(name).scores
        for c in cs:
            t = svtjax.datasets.lyu_threshold(q, c)
            # every (dataset, c) compiles its own kernels: drop them, or a long check runs
            # into the process's memory-map limit (LLVM "Cannot allocate memory")
            jax.clear_caches()
            for shuffle in (False, True):
                order = "random" if shuffle else "fixed"
                cases = _mechanisms(q.size, c, eps)
                eps1, eps2, _ = (float(x) for x in cases[0][1].budgets())
                wrong = svtjax.get("svt-s", epsilon=eps1 + eps2 / 1.1, c=c,
                                   allocation=(eps1, eps2 / 1.1))
                for label, mech in cases + [("svt-s query noise x1.1 (must be rejected)",
                                             wrong)]:
                    seed += 1
                    old = done.get((name, c, order, label))
                    if old is not None:
                        rows.append(old)
                        failures += not old["ok"]
                        print(f"[check] {name} c={c} {order} {label}: reused -> "
                              f"{old['verdict']}", flush=True)
                        continue
                    t0 = time.perf_counter()
                    m = exact.expected_metrics(mech, q, t, shuffle=shuffle)
                    t_exact = time.perf_counter() - t0
                    mc = monte_carlo(mech, q, t, c, trials=trials, shuffle=shuffle, seed=seed)
                    reference = mech
                    if label.startswith("svt-s query noise"):  # tested against the claim
                        reference = cases[0][1]
                        m = exact.expected_metrics(reference, q, t, shuffle=shuffle)
                    # |S|'s standard error from its exact law (the Monte Carlo one is 0 when
                    # every trial picks c); SER's from the trials.
                    law = exact.selection_law(reference, q, t, shuffle=shuffle)
                    k = np.arange(law.count.shape[0], dtype=float)
                    pk = np.asarray(law.count)
                    var = max(float(pk @ k ** 2 - (pk @ k) ** 2), 0.0)
                    picks_se = math.sqrt(var / trials)
                    z_ser = (mc["ser"] - float(m["ser"])) / max(mc["ser_se"], 1e-12)
                    z_picks = (mc["picks"] - float(m["picks"])) / max(picks_se, 1e-12)
                    mc["picks_se_exact"] = picks_se
                    if reference is not mech:
                        ok = abs(z_ser) > Z or abs(z_picks) > Z
                        verdict = "rejected" if ok else "NOT REJECTED"
                    else:
                        ok = abs(z_ser) < Z and abs(z_picks) < Z
                        verdict = "agrees" if ok else "DISAGREES"
                    failures += not ok
                    row = {"dataset": name, "n": int(q.size), "c": c, "order": order,
                           "epsilon": eps, "mechanism": label, "exact_ser": float(m["ser"]),
                           "exact_picks": float(m["picks"]), "mc": mc, "z_ser": z_ser,
                           "z_picks": z_picks, "ok": bool(ok), "verdict": verdict,
                           "seconds_exact": t_exact}
                    rows.append(row)
                    if partial is not None:
                        with open(partial, "a", encoding="utf-8") as f:
                            f.write(json.dumps(row) + "\n")
                    print(f"[check] {name} c={c} {order} {label}: SER exact "
                          f"{float(m['ser']):.5f} mc {mc['ser']:.5f}±{mc['ser_se']:.5f} "
                          f"(z={z_ser:+.2f}), |S| exact {float(m['picks']):.3f} mc "
                          f"{mc['picks']:.3f} (z={z_picks:+.2f}) -> {verdict}", flush=True)
    return {"epsilon": eps, "trials": trials, "z": Z, "rows": rows, "failures": failures}


# -- quadrature accuracy against a much finer rule -------------------------------------------


def accuracy(quick: bool) -> dict:
    """Default rule vs a reference with every kink up to 1e-12 an edge and panels at most one
    query-noise scale wide, and vs the doubled rule, fixed order, c = 50."""
    cases = [("zipf", "svt-s"), ("retail", "svt-s"), ("retail", "svt-exp"),
             ("t10i4d100k", "svt-exp"), ("bms-webview-1", "svt-exp")]
    rows = []
    for dataset, name in cases[:2] if quick else cases:
        q = svtjax.datasets.load(dataset).scores
        c = 50
        t = svtjax.datasets.lyu_threshold(q, c)
        for eps in (0.1, 0.5):
            params = {"correction_k": q.size // c} if name == "svt-exp" else {}
            mech = svtjax.get(name, epsilon=eps, c=c, **params)
            rule = exact.quadrature(mech, q, t)
            ref_rule = exact.quadrature(mech, q, t, kink_tol=1e-12, refine=1.0)
            member = np.asarray(exact.selection_law(mech, q, t, rule=rule).member)
            ref = np.asarray(exact.selection_law(mech, q, t, rule=ref_rule).member)
            dbl = np.asarray(exact.selection_law(mech, q, t,
                                                 rule=_quadrature.doubled(rule)).member)
            row = {"dataset": dataset, "mechanism": name, "c": c, "epsilon": eps,
                   "nodes": int(rule.nodes.size), "reference_nodes": int(ref_rule.nodes.size),
                   "max_abs_error_vs_reference": float(np.max(np.abs(member - ref))),
                   "max_abs_change_doubled": float(np.max(np.abs(member - dbl)))}
            rows.append(row)
            print(f"[accuracy] {dataset} {name} ε={eps}: {row['nodes']} nodes, max |P(i in S) "
                  f"- reference| = {row['max_abs_error_vs_reference']:.1e} "
                  f"({row['reference_nodes']} nodes), doubled changes it by "
                  f"{row['max_abs_change_doubled']:.1e}", flush=True)
    return {"rows": rows}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("speed", "check", "accuracy", "all", "first-call"),
                   default="speed", help="first-call: time one curve in this process, print "
                   "JSON (what --part speed runs in a new process)")
    p.add_argument("--order", choices=("fixed", "random"), default="fixed",
                   help="the order of --part first-call")
    p.add_argument("--quick", action="store_true", help="a small subset (smoke run)")
    p.add_argument("--trials", type=int, default=100_000, help="Monte Carlo trials (check)")
    p.add_argument("--mc-trials", type=int, default=20_000,
                   help="trials timed per ε point for the Monte Carlo comparison (speed)")
    p.add_argument("--epsilon", type=float, default=0.5, help="ε of the check part")
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    for flag, value in (("--trials", args.trials), ("--mc-trials", args.mc_trials)):
        if value < 2:
            p.error(f"{flag} must be >= 2; got {value}")
    if not args.epsilon > 0:
        p.error(f"--epsilon must be positive; got {args.epsilon}")
    # No persistent compilation cache: the speed part times the first call with compilation.
    if args.part == "first-call":
        seconds = _curve(args.order == "random", args.quick)[-1]
        print(json.dumps({"order": args.order, "seconds": seconds}))
        return 0
    now = _dt.datetime.now(_dt.timezone.utc)
    record = {"schema": SCHEMA, "created": now.isoformat(timespec="seconds"),
              "machine": _machine(), "quick": args.quick,
              "note": "timings on a shared CPU are not the machine's: see loadavg_*"}
    if args.part in ("speed", "all"):
        record["speed"] = speed(args.quick, args.mc_trials)
    if args.part in ("accuracy", "all"):
        record["accuracy"] = accuracy(args.quick)
    if args.part in ("check", "all"):
        args.out.mkdir(parents=True, exist_ok=True)
        record["check"] = check(args.quick, args.trials, args.epsilon,
                                args.out / f"exact-check-partial-{args.trials}.jsonl")
    record["machine"]["loadavg_end"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"exact-{socket.gethostname()}-{now:%Y-%m-%dT%H%M%S}.json"
    path.write_text(json.dumps(record, indent=2))
    print(f"wrote {path}")
    if "check" in record:  # the finished check is in the record: its resume file goes
        (args.out / f"exact-check-partial-{args.trials}.jsonl").unlink(missing_ok=True)
    return 1 if record.get("check", {}).get("failures") else 0


if __name__ == "__main__":
    sys.exit(main())
