"""``svtjax list``: mechanisms (with parameters and defaults), datasets, metrics, sweep
configs, the compiled kernels' status and the checkout's experiments."""

from __future__ import annotations

import json

from svtjax.cli._tools import EXPERIMENTS_MISSING, find_experiments, import_experiments


def command(args) -> int:
    from svtjax import _listing, sweep

    def plain(v):
        return v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)

    folder = find_experiments()
    exps = ({} if folder is None else
            {name: {"path": str(folder / f"{name}.py"), "description": summary}
             for name, summary in _experiment_summaries(folder).items()})
    mechs, data = _listing.mechanisms(), _listing.datasets()
    if args.json:
        print(json.dumps({
            "mechanisms": {n: {k: plain(v) for k, v in m["parameters"].items()}
                           for n, m in mechs.items()},
            "mechanism_details": {n: {"summary": m["summary"], "none_means": m["defaults"]}
                                  for n, m in mechs.items()},
            "datasets": data,
            "metrics": sweep.metric_names(),
            "sweep_configs": {k: str(v) for k, v in sorted(sweep.builtin_configs().items())},
            "experiments": exps,
            "experiments_folder": None if folder is None else str(folder),
            "native_kernels": _listing.native(),
            **({"experiments_note": EXPERIMENTS_MISSING} if folder is None else {})},
            indent=2))
        return 0
    width = max(len(n) for n in mechs) + 2
    pad = " " * (width + 2)
    print(f"mechanisms ({len(mechs)}; svtjax.get(NAME, ...), -m NAME:key=value):")
    for n, m in mechs.items():
        params = ", ".join(f"{k}={v}" for k, v in m["parameters"].items())
        print(f"  {n:<{width}}{m['summary']}\n{pad}parameters: {params}")
        for k, meaning in m["defaults"].items():
            print(f"{pad}{k}=None: {meaning}")
    print(f"datasets ({len(data)}; items = distinct items, the default size of a synthetic one; "
          "'download' = not shipped: svtjax.datasets.fetch(NAME) first):")
    dwidth = max(len(n) for n in data) + 2
    for n, d in data.items():
        items = "" if d["items"] is None else f"{d['items']:,} items"
        where = d["kind"] if d["shipped"] else "real, download"
        print(f"  {n:<{dwidth}}{items:<16} {where:<15} {d['title']}")
    metrics = sweep.metric_names()
    print(f"metrics ({len(metrics)}):\n  " + " ".join(metrics))
    configs = sorted(sweep.builtin_configs())
    print(f"sweep configs ({len(configs)}; svtjax sweep NAME):\n  " + " ".join(configs))
    print(f"compiled kernels: {_listing.native()}")
    if folder is None:
        print(f"experiments (svtjax reproduce NAME):\n  none found: {EXPERIMENTS_MISSING}")
        return 0
    print(f"experiments ({len(exps)}; svtjax reproduce NAME; from {folder}):")
    for name, summary in exps.items():
        print(f"  {name:<{width}}{summary['description']}")
    return 0


def _experiment_summaries(folder) -> dict[str, str]:
    """name -> first docstring line of each experiment module in ``folder`` (read with ``ast``,
    nothing imported), in the package's run order."""
    import ast

    from svtjax import _listing

    package = import_experiments(folder)
    out = {}
    for name in package.names():
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        out[name] = _listing.summary(ast.get_docstring(tree))
    return out
