"""``svtjax simulate``: mechanisms on a dataset, a utility table (or JSON rows). The command is
a sweep without an output directory (:func:`simulation_config`)."""

from __future__ import annotations

import json
from typing import Any, Sequence

from svtjax.cli.errors import UsageError, _count, _once, _seed, user_input
from svtjax.cli.parser import DEFAULT_EPSILONS, DEFAULT_MECHANISMS, _label, parse_mechanism

REPORTED = ("f1", "precision", "recall", "ser", "ncr")
SIMULATE_METRICS = REPORTED + ("picks", "evaluated")


def simulation_config(mechanisms: Sequence[str], dataset: str, epsilons: Sequence[float],
                      c: int, trials: int, seed: int, shuffle: bool) -> dict[str, Any]:
    """The sweep config ``svtjax simulate`` runs: one ``[[mechanisms]]`` table per spec, ε as a
    grid axis, top-``c`` with Lyu's threshold. The command is a sweep without an output
    directory, so it runs on the same compiled chunk and the same statistics as ``svtjax
    sweep`` and ``svtjax.simulate`` (one driver)."""
    tables = []
    for spec in mechanisms:
        name, params = parse_mechanism(spec)
        for key, flag in (("epsilon", "--epsilon/-e"), ("c", "--c")):
            if key in params:  # one value per row: the row's label must be what was computed
                raise UsageError(f"mechanism spec {spec!r} sets {key}, which svtjax simulate "
                                 f"takes from {flag} for every mechanism (a row is labelled "
                                 f"with it); give it there, or use svtjax sweep for "
                                 "per-mechanism values")
        tables.append({"name": name, "label": _label(name, params), **params})
    return {"sweep": {"name": "simulate", "trials": trials, "seed": seed, "shuffle": shuffle,
                      "datasets": [dataset], "metrics": list(SIMULATE_METRICS),
                      "threshold": "lyu"},
            "grid": {"epsilon": [float(e) for e in epsilons], "c": [int(c)]},
            "mechanisms": tables}


def run_simulation(mechanisms: Sequence[str], dataset: str, epsilons: Sequence[float], c: int,
                   trials: int, seed: int, shuffle: bool) -> list[dict[str, Any]]:
    """Runs each mechanism at each ε; returns one row per (mechanism, ε)."""
    from svtjax import sweep

    config = sweep.load_config(simulation_config(mechanisms, dataset, epsilons, c, trials, seed,
                                                 shuffle))
    result = sweep.run(config, None, progress=False, log=lambda msg: None)
    privacy = {(p.label, dict(p.axes).get("epsilon", "")): str(p.build().privacy())
               for p in sweep.expand(config)}
    rows: dict[tuple, dict[str, Any]] = {}
    for r in result.rows:
        key = (r["label"], r.get("epsilon", ""))
        row = rows.setdefault(key, {
            "mechanism": r["label"], "dataset": dataset, "epsilon": key[1], "c": c,
            "trials": r["trials"], "threshold": r["threshold"], "seconds": r["seconds"],
            "privacy": privacy.get(key, "")})
        row[r["metric"]] = r["mean"]
        row[f"{r['metric']}_se"] = r["se"]
        row[f"{r['metric']}_ci"] = [r["ci_low"], r["ci_high"]]
    return list(rows.values())


def format_table(rows: list[dict[str, Any]]) -> str:
    """The utility table of ``svtjax simulate``: one line per (mechanism, ε), F1 with its 95%
    interval (the sweep's rule and renderer, ``svtjax.sweep.report``)."""
    from svtjax.sweep.report import mean_pm, render

    header = ["mechanism", "eps", "F1", "precision", "SER", "NCR", "picks", "evaluated", "sec"]
    lines = []
    for r in rows:
        eps = r["epsilon"]
        lines.append([r["mechanism"], f"{eps:g}" if isinstance(eps, float) else str(eps),
                      mean_pm(r["f1"], *r["f1_ci"]), f"{r['precision']:.3f}",
                      f"{r['ser']:.3f}", f"{r['ncr']:.3f}", f"{r['picks']:.1f}",
                      f"{100 * r['evaluated']:.1f}%", f"{r['seconds']:.2f}"])
    return render(header, lines)


def command(args) -> int:
    from svtjax import sweep

    with user_input():  # a bad value raised here is the input's fault: one line
        epsilons = args.epsilon or list(DEFAULT_EPSILONS)
        mechanisms = args.mechanism or list(DEFAULT_MECHANISMS)
        _count("--trials", args.trials)
        _count("--c", args.c)
        _seed(args.seed)
        _once("--epsilon", epsilons)
        _once("--mechanism", mechanisms)
        # every check (mechanisms, parameters, dataset, what float32 can hold) before the header
        sweep.load_config(simulation_config(mechanisms, args.dataset, epsilons, args.c, args.trials,
                                            args.seed, args.shuffle))
    if not args.json:
        order = "random item order per trial" if args.shuffle else "fixed item order"
        print(f"svtjax simulate: top-{args.c} selection on {args.dataset}, {args.trials} trials "
              f"per row, {order}, threshold = mean of the scores ranked {args.c} and {args.c + 1} "
              "(Lyu'17 Sec. 5); sec includes compilation on a structure's first row", flush=True)
    rows = run_simulation(mechanisms, args.dataset, epsilons, args.c, args.trials, args.seed,
                          args.shuffle)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        from svtjax.accounting import SCOPE

        print(format_table(rows))
        print("F1 is shown with its 95% interval (Student t, as svtjax sweep); 'evaluated' is the "
              f"fraction of the stream read before halting. The privacy column of --json is "
              f"{SCOPE}.")
    return 0
