"""The ``svtjax`` command line.

Subcommands:
  list       mechanisms (with parameters and defaults) and datasets
  simulate   run mechanisms on a dataset and print a utility table (or JSON)
  bench      run the benchmark suite (``svtjax.bench``)

Errors in the user's input end the command with exit status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
from typing import Any, Optional, Sequence

DEFAULT_MECHANISMS = (
    "svt-s:monotonic=true",
    "svt-s:allocation=1:1,monotonic=true",
    "lyu-alg1",
    "dpbook",
)
DEFAULT_EPSILONS = (0.1, 0.5, 1.0)
REPORTED = ("f1", "precision", "recall", "ser", "ncr")


class UsageError(Exception):
    """A problem with the command's input: reported in one line, exit status 2."""


def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_mechanism(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name"`` or ``"name:key=value,key=value"`` -> (name, params)."""
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    if rest:
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key:
                raise UsageError(f"cannot parse mechanism option {item!r} in {spec!r}; write "
                                 "name:key=value,key=value")
            params[key.strip()] = _parse_value(value.strip())
    return name.strip(), params


def _label(name: str, params: dict[str, Any]) -> str:
    extra = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name}[{extra}]" if extra else name


def _metric_sums(c, scores, out):
    """Per-trial metrics and their squares (summed over trials by ``simulate``)."""
    import jax.numpy as jnp

    import svtjax
    from svtjax import metrics

    picks = svtjax.selected(out, c)
    every = metrics.evaluate(picks, scores, c)
    values = {m: every[m] for m in REPORTED}
    values["picks"] = jnp.sum(picks >= 0, axis=-1).astype(scores.dtype)
    values["evaluated"] = jnp.mean(out.answers >= 0, axis=-1).astype(scores.dtype)
    return {k: (v, v * v) for k, v in values.items()}


def _reducer(scores, c: int):
    import jax
    import jax.numpy as jnp

    # c fixes the shape of the picks, so it is bound statically (one function per c, cached);
    # the scores are a traced argument.
    return jax.tree_util.Partial(_metric_sums_for(int(c)), jnp.asarray(scores))


@functools.lru_cache(maxsize=None)
def _metric_sums_for(c: int):
    return functools.partial(_metric_sums, c)


def run_simulation(mechanisms: Sequence[str], dataset: str, epsilons: Sequence[float], c: int,
                   trials: int, seed: int, shuffle: bool) -> list[dict[str, Any]]:
    """Runs each mechanism at each ε; returns one row per (mechanism, ε)."""
    import jax

    import svtjax
    from svtjax import datasets

    data = datasets.load(dataset)
    threshold = datasets.lyu_threshold(data.scores, c)
    reduce = _reducer(data.scores, c)
    rows = []
    for spec in mechanisms:
        name, params = parse_mechanism(spec)
        for eps in epsilons:
            kwargs = {"epsilon": eps, **params}
            if name in svtjax.names() and "c" in svtjax.mechanisms.parameters(name):
                kwargs.setdefault("c", c)
            mech = svtjax.get(name, **kwargs)
            start = time.perf_counter()
            sums = jax.block_until_ready(svtjax.simulate(
                mech, data.scores, threshold, trials=trials, seed=seed, shuffle=shuffle,
                reduce=reduce))
            seconds = time.perf_counter() - start
            row = {"mechanism": _label(name, params), "dataset": dataset, "epsilon": eps,
                   "c": c, "trials": trials, "threshold": threshold, "seconds": seconds,
                   "privacy": str(mech.privacy())}
            for metric, (s1, s2) in sums.items():
                mean = float(s1) / trials
                var = max(float(s2) / trials - mean * mean, 0.0) * trials / max(trials - 1, 1)
                row[metric] = mean
                row[f"{metric}_se"] = math.sqrt(var / trials)
            rows.append(row)
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    header = ["mechanism", "eps", "F1", "precision", "SER", "NCR", "picks", "evaluated", "sec"]
    lines = []
    for r in rows:
        lines.append([r["mechanism"], f"{r['epsilon']:g}",
                      f"{r['f1']:.3f} ± {1.96 * r['f1_se']:.3f}", f"{r['precision']:.3f}",
                      f"{r['ser']:.3f}", f"{r['ncr']:.3f}", f"{r['picks']:.1f}",
                      f"{100 * r['evaluated']:.1f}%", f"{r['seconds']:.2f}"])
    widths = [max(len(h), *(len(x[i]) for x in lines)) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    out = [fmt(header), fmt(["-" * w for w in widths])]
    out += [fmt(x) for x in lines]
    return "\n".join(out)


def _cmd_list(args) -> int:
    import svtjax
    from svtjax import datasets

    if args.json:
        print(json.dumps({
            "mechanisms": {n: {k: (v if isinstance(v, (int, float, str, bool, type(None)))
                                   else repr(v))
                               for k, v in svtjax.mechanisms.parameters(n).items()}
                           for n in svtjax.names()},
            "datasets": datasets.names()}, indent=2))
        return 0
    print("mechanisms:")
    for n in svtjax.names():
        params = ", ".join(f"{k}={v}" for k, v in svtjax.mechanisms.parameters(n).items())
        doc = (svtjax.mechanisms.registry()[n].__doc__ or "").strip().splitlines()[0]
        print(f"  {n:<14} {doc}\n  {'':<14} parameters: {params}")
    print("datasets:")
    for n in datasets.names():
        print(f"  {n}")
    return 0


def _cmd_simulate(args) -> int:
    epsilons = args.epsilon or list(DEFAULT_EPSILONS)
    mechanisms = args.mechanism or list(DEFAULT_MECHANISMS)
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
        print(format_table(rows))
        print("F1 is shown with a 95% interval (±1.96 standard errors); 'evaluated' is the "
              "fraction of the stream read before halting.")
    return 0


def _cmd_bench(args, rest: list[str]) -> int:
    from svtjax import bench

    return int(bench.main(rest) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="svtjax", description="Monte Carlo simulation of the sparse vector technique.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list mechanisms and datasets")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("simulate", help="run mechanisms on a dataset and print a utility table",
                       description="Runs each mechanism at each ε for top-c selection and prints "
                                   "F1, precision, SER, NCR with 95%% intervals. Mechanisms are "
                                   "given as name or name:key=value,key=value.")
    p.add_argument("--mechanism", "-m", action="append",
                   help=f"mechanism spec (repeatable; default: {' '.join(DEFAULT_MECHANISMS)})")
    p.add_argument("--dataset", "-d", default="zipf", help="dataset name (default: zipf)")
    p.add_argument("--epsilon", "-e", type=float, action="append",
                   help="total privacy budget (repeatable; default: 0.1 0.5 1.0)")
    p.add_argument("--c", type=int, default=50, help="number of items to select (default 50)")
    p.add_argument("--trials", "-n", type=int, default=1000, help="trials per row (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                   help="fresh random item order per trial (default: on, as in Lyu'17 Sec. 5)")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")

    sub.add_parser("bench", help="run the benchmark suite (options: svtjax bench --help)",
                   add_help=False)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if os.environ.get("SVTJAX_NO_CACHE") != "1":
        from svtjax import enable_compilation_cache

        try:
            enable_compilation_cache()
        except OSError as err:  # an unwritable cache only costs compile time
            print(f"svtjax: compilation cache disabled ({err})", file=sys.stderr)
    parser = build_parser()
    if argv and argv[0] == "bench":
        try:
            return _cmd_bench(None, argv[1:])
        except (UsageError, ValueError, TypeError) as err:
            print(f"svtjax bench: error: {err}", file=sys.stderr)
            return 2
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "simulate":
            return _cmd_simulate(args)
    except (UsageError, ValueError, TypeError) as err:
        print(f"svtjax {args.command}: error: {err}", file=sys.stderr)
        return 2
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
