"""Text tables of a benchmark record, and ``benchmarks/RESULTS.md`` generated from the records.

One renderer for the one record format (:mod:`benchmarks.machine`): RESULTS.md lists the
tuning decisions (:data:`benchmarks.cases.DECISIONS`), then per machine the latest record of
each case of :data:`benchmarks.cases.SHOWN`, each as the tables of its kind.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Optional, Sequence

from benchmarks import kinds, workload

__all__ = ["headline", "RATIOS", "tables", "load_records", "latest", "write_results_md",
           "render_results_md", "fmt_rate"]

GPU_TARGET = 0.25
"""Issue 19's GPU acceptance: at least this fraction of the physical limit at >= 10^5 trials."""


# -- the headline summary of a throughput record ----------------------------------------------

def _find(results, engine, n, trials, mode) -> Optional[dict]:
    for r in results:
        if (r["engine"], r["n"], r["trials"], r["mode"]) == (engine, n, trials, mode) and (
                r["status"] == "ok" and r.get("table", "headline") == "headline"):
            return r
    return None


def _ratio(a: Optional[dict], b: Optional[dict]) -> Optional[float]:
    return None if a is None or b is None else a["throughput"] / b["throughput"]


RATIOS = (("svtjax", "numba"), ("svtjax", "numba-pool"), ("svtjax-f1", "numba"),
          ("svtjax-f1", "numba-pool"), ("svtjax-f1", "svtjax"), ("svtjax-count", "numba-count"),
          ("svtjax", "numpy-vectorized"))


def headline(record: dict) -> list:
    """Per headline case: every engine's throughput, the ratios of :data:`RATIOS`, the RNG
    floor and each engine's fraction of the physical limit (evaluated rate / floor rate)."""
    results = record["results"]
    rows = []
    cases = []
    for r in results:
        key = (r["n"], r["trials"], r["mode"])
        if r.get("table") == "headline" and key not in cases:
            cases.append(key)
    floors = {(f["impl"], f["dist"], f["form"]): f for f in record.get("rng_floors", [])
              if f.get("status") == "ok"}
    block_floor = floors.get((workload.DEFAULT_IMPL, "laplace", "block"))
    for n, trials, mode in cases:
        found = {e: _find(results, e, n, trials, mode) for e in kinds.HEADLINE_ENGINES}
        # the fraction of the stream read, from the first svtjax engine that ran
        head = next((found[e] for e in kinds.SVTJAX_ENGINES if found[e] is not None), None)
        floor = found["rng-floor"]
        row = {"n": n, "trials": trials, "mode": mode,
               "evaluated_fraction": None if head is None else head.get("evaluated_fraction"),
               "throughput_of": {e: None if r is None else r["throughput"]
                                 for e, r in found.items() if e != "rng-floor"},
               "ratio": {f"{a}/{b}": _ratio(found[a], found[b]) for a, b in RATIOS},
               "rng_floor_rate": None if floor is None else floor["throughput"],
               "ratio_to_physical_limit": {}, "ratio_to_block_keyed_limit": {}}
        if head is not None and floor is not None and head.get("evaluated_fraction"):
            row["physical_limit"] = floor["throughput"] / head["evaluated_fraction"]
        for e, r in found.items():
            if r is None or e == "rng-floor" or r.get("evaluated_rate") is None:
                continue
            if floor is not None:
                row["ratio_to_physical_limit"][e] = r["evaluated_rate"] / floor["throughput"]
            if block_floor is not None:
                row["ratio_to_block_keyed_limit"][e] = r["evaluated_rate"] / block_floor["rate"]
        if found["svtjax"] is not None:
            row["compile_s"] = found["svtjax"].get("compile_s")
        rows.append(row)
    return rows


# -- formatting ------------------------------------------------------------------------------

def fmt_rate(x: Optional[float]) -> str:
    if x is None:
        return "—"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.3g}"


def _fmt(x: Optional[float], spec: str = ".3g") -> str:
    return "—" if x is None else format(x, spec)


def _pct(x: Optional[float]) -> str:
    return "—" if x is None else f"{100 * x:.2f}%"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool) -> str:
    rows = [[str(c) for c in r] for r in rows]
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(cells):
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths))

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


# -- the throughput kind ---------------------------------------------------------------------

def _headline_tables(rec: dict, markdown: bool) -> list:
    from benchmarks.harness import headline

    rows, count_rows = [], []
    for h in headline(rec):  # recomputed from the rows, so every record renders alike
        t, ratio, lim = h["throughput_of"], h["ratio"], h["ratio_to_physical_limit"]
        key = [h["n"], h["trials"], h["mode"]]
        rows.append(key + [_pct(h["evaluated_fraction"]), fmt_rate(t["svtjax"]),
                           fmt_rate(t["svtjax-f1"]), fmt_rate(t["numba"]),
                           fmt_rate(t["numba-pool"]), _fmt(ratio["svtjax/numba"]),
                           _fmt(ratio["svtjax/numba-pool"]), _fmt(ratio["svtjax-f1/numba"]),
                           _fmt(ratio["svtjax-f1/numba-pool"]), fmt_rate(h["rng_floor_rate"]),
                           _pct(lim.get("svtjax")), _pct(lim.get("svtjax-f1"))])
        count_rows.append(key + [fmt_rate(t["svtjax-count"]), fmt_rate(t["numba-count"]),
                                 _fmt(ratio["svtjax-count/numba-count"]),
                                 fmt_rate(t["numpy-vectorized"]),
                                 _fmt(ratio["svtjax/numpy-vectorized"])])
    if not rows:
        return []
    return [("Headline: svt-s on the researchers' workload (query evaluations per second)",
             _table(["n", "trials", "mode", "reached", "svtjax q/s", "svtjax-f1 q/s",
                     "numba q/s", "numba-pool q/s", "svtjax ÷ numba", "svtjax ÷ pool",
                     "f1 ÷ numba", "f1 ÷ pool", "RNG floor /s", "svtjax of limit",
                     "f1 of limit"], rows, markdown)),
            ("Count-only reducer against the counting numba loop, and the numpy baseline",
             _table(["n", "trials", "mode", "svtjax-count q/s", "numba-count q/s", "ratio",
                     "numpy-vec q/s", "svtjax ÷ numpy-vec"], count_rows, markdown))]


def _mechanisms_table(rec: dict, markdown: bool) -> list:
    rows = [r for r in rec["results"] if r.get("table") == "mechanisms"]
    cols = list(dict.fromkeys((r["n"], r["trials"], r["mode"]) for r in rows))
    cells: dict = {}
    for r in rows:
        cells.setdefault(r["mechanism"], {})[(r["n"], r["trials"], r["mode"])] = (
            f"{fmt_rate(r['throughput'])} ({_pct(r.get('evaluated_fraction'))})"
            if r["status"] == "ok" else "skipped")
    if not rows:
        return []
    return [("Every mechanism: `simulate` with full Outcomes, query evaluations per second "
             "(fraction of the stream read)",
             _table(["mechanism"] + [f"{n}×{t} {m}" for n, t, m in cols],
                    [[name] + [row.get(c, "—") for c in cols] for name, row in cells.items()],
                    markdown))]


def _floor_table(rec: dict, markdown: bool) -> list:
    floors = rec.get("rng_floors") or []
    base = {(f["dist"], f["form"]): f["rate"] for f in floors
            if f.get("status") == "ok" and f["impl"] == "threefry2x32"}
    rows = []
    for f in floors:
        if f.get("status") != "ok":
            rows.append([f["impl"], f["dist"], f["form"], "skipped", ""])
            continue
        b = base.get((f["dist"], f["form"]))
        rows.append([f["impl"], f["dist"], f["form"], fmt_rate(f["rate"]),
                     _fmt(None if b is None else f["rate"] / b)])
    if not rows:
        return []
    return [("RNG floor under each JAX generator",
             _table(["generator", "distribution", "keying", "variates/s", "÷ threefry"], rows,
                    markdown))]


def _checks(rec: dict) -> list:
    lines = []
    cc, mem = rec.get("compile_cache") or {}, rec.get("memory") or {}
    if cc.get("status") == "ok":
        cold = cc.get("cold_first_call_s")
        lines.append(f"Compilation cache: first call {_fmt(cold, '.2f')} s cold, "
                     f"{cc['cached_first_call_s']:.2f} s from the persistent cache, warm call "
                     f"{cc['warm_call_s']:.3f} s.")
    if mem.get("status") == "ok":
        for r in mem["chunks"]:
            if r["status"] == "ok":
                lines.append(f"Peak memory, {mem['trials']:,} trials with `reduce=`, chunk "
                             f"{r['chunk']:,}: {r['peak_rss_mib']:.0f} MiB RSS.")
    return lines


def _gpu_target(rec: dict, markdown: bool) -> list:
    from benchmarks.harness import headline

    rows = [[h["n"], h["trials"], h["mode"], _pct(h["ratio_to_physical_limit"].get("svtjax")),
             "yes" if (h["ratio_to_physical_limit"].get("svtjax") or 0) >= GPU_TARGET else "no"]
            for h in headline(rec) if h["trials"] >= 100_000]
    if not rows or rec["device"].get("backend") == "cpu":
        return []
    return [(f"Fraction of the physical limit at >= 10^5 trials (target {GPU_TARGET:.0%})",
             _table(["n", "trials", "mode", "svtjax of limit", "target met"], rows, markdown))]


# -- the other kinds -------------------------------------------------------------------------

def _platform_table(rec: dict, markdown: bool) -> list:
    ok = [r for r in rec["results"] if r.get("status") == "ok"]
    fastest: dict = {}
    for r in ok:
        key = (r["n"], r["trials"], r["mode"])
        fastest[key] = min(fastest.get(key, r["median_s"]), r["median_s"])
    rows = [[r["n"], r["trials"], r["mode"], r["width"], r["chunk"], r.get("factor", "—"),
             f"{1e3 * r['median_s']:.2f}",
             f"{r['median_s'] / fastest[(r['n'], r['trials'], r['mode'])]:.2f}"] for r in ok]
    return [("`simulate(reduce=)` (F1, SER) per engine setting; chunk 0: the default; factor "
             "2^30: no compaction", _table(["n", "trials", "mode", "width", "chunk", "factor",
                                            "ms", "÷ fastest"], rows, markdown))]


def _command_table(rec: dict, markdown: bool) -> list:
    out = []
    for r in rec["results"]:
        minutes = f"{int(r['wall_s'] // 60)} min {r['wall_s'] % 60:.0f} s"
        head = ["command", "cache", "pass", "wall", "exit"]
        row = [f"`{r['command']}`", r.get("cache") or "—", r.get("pass", 1), minutes,
               r["returncode"]]
        if r.get("empty_cache_wall_s") is not None:
            head.append("first pass (empty cache)")
            row.append(f"{int(r['empty_cache_wall_s'] // 60)} min "
                       f"{r['empty_cache_wall_s'] % 60:.0f} s")
        if r.get("summary") is not None or "pytest_s" in r:
            head += ["pytest s", "summary"]
            row += [_fmt(r.get("pytest_s"), ".1f"), r.get("summary") or "—"]
        out.append((f"The command, pass {r.get('pass', 1)}", _table(head, [row], markdown)))
        if r.get("experiments"):
            out.append((f"Each experiment, pass {r.get('pass', 1)}", _table(
                ["experiment", "wall s", "exit"],
                [[e["experiment"], f"{e['seconds']:.0f}", e["returncode"]]
                 for e in r["experiments"]], markdown)))
    return out


def _checkouts_table(rec: dict, markdown: bool) -> list:
    commits = list(dict.fromkeys(r["commit"] for r in rec["results"]))
    cells: dict = {}
    for r in rec["results"]:
        cells.setdefault((r["mechanism"], r["n"], r["trials"], r["mode"]), {})[r["commit"]] = (
            r["median_s"])
    rows = []
    for key, med in cells.items():
        base = med.get(commits[0])
        rows.append(list(key) + [_fmt(None if med.get(c) is None else 1e3 * med[c], ".1f")
                                 for c in commits]
                    + [_fmt(None if base is None or med.get(c) is None else base / med[c], ".2f")
                       for c in commits[1:]])
    return [("`simulate(reduce=)` ms per checkout, same run; ratio > 1: faster than the first",
             _table(["mechanism", "n", "trials", "mode"] + [f"{c} ms" for c in commits]
                    + [f"{c} ÷ {commits[0]}" for c in commits[1:]], rows, markdown))]


def _regression_table(rec: dict, markdown: bool) -> list:
    rows = [[name, _fmt(value), rec["bounds"].get(name, "—"),
             "ok" if value is not None and value >= rec["bounds"].get(name, 0) else "FAILED"]
            for name, value in rec.get("ratios", {}).items()]
    return [("Ratios in the same process against their bounds",
             _table(["ratio", "measured", "bound", ""], rows, markdown))]


def _summary_table(rec: dict, markdown: bool) -> list:
    summary = rec.get("summary") or {}
    rows = [[k, json.dumps(v) if isinstance(v, (dict, list)) else v] for k, v in summary.items()]
    return [("Summary", _table(["", "value"], rows, markdown))] if rows else []


def _sections(rec: dict, markdown: bool) -> list:
    kind = rec.get("case", "")
    if kind == "regression":
        return _regression_table(rec, markdown)
    if kind == "stress-sigint":
        return _summary_table(rec, markdown)
    rows = rec.get("results") or []
    if kind == "checkouts":
        return _checkouts_table(rec, markdown)
    if rows and rows[0].get("engine") == "command":
        return _command_table(rec, markdown)
    if rows and "width" in rows[0]:
        return _platform_table(rec, markdown)
    return (_headline_tables(rec, markdown) + _gpu_target(rec, markdown)
            + _mechanisms_table(rec, markdown) + _floor_table(rec, markdown))


def tables(rec: dict, markdown: bool = False) -> str:
    """The record's tables, by its kind, and its subprocess checks' lines."""
    parts = [f"#### {t}\n\n{p}" if markdown else f"{t}:\n{p}" for t, p in _sections(rec, markdown)]
    checks = _checks(rec)
    if checks:
        parts.append(("\n" if markdown else "\n").join(checks))
    return "\n\n".join(parts)


# -- RESULTS.md ------------------------------------------------------------------------------

def load_records(results_dir: Path) -> list:
    """Every record of the one format in ``results_dir``, each with its file as ``_path``."""
    from benchmarks.machine import SCHEMA

    records = []
    for path in sorted(glob.glob(str(Path(results_dir) / "*.json"))):
        try:
            with open(path) as f:
                rec = json.load(f)
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(rec, dict) and rec.get("schema") == SCHEMA:
            rec["_path"] = path
            records.append(rec)
    return records


def latest(records: list, shown: Sequence[str]) -> dict:
    """``{machine: {case: record}}``: the latest record of each shown case per machine."""
    out: dict = {}
    for rec in records:
        if rec.get("case") not in shown:
            continue
        mine = out.setdefault(rec["machine"]["machine_id"], {})
        if rec["case"] not in mine or rec["created"] > mine[rec["case"]]["created"]:
            mine[rec["case"]] = rec
    return out


def _machine_line(rec: dict) -> str:
    m, d = rec["machine"], rec["device"]
    device = "" if d.get("backend") == "cpu" else f"; {d.get('count')} × {d.get('kind')}"
    return (f"{m.get('cpu_model') or 'CPU not recorded'}, {m.get('logical_cores')} logical cores"
            f"{device}.")


def _record_md(rec: dict) -> list:
    src, v, load = rec.get("source") or {}, rec.get("versions") or {}, rec["load_average"]
    commit = (src.get("git_commit") or "")[:7] or "commit not recorded"
    dirty = " + changes" if src.get("git_dirty") else ""
    out = [f"### {rec['case']}", "",
           f"`results/{Path(rec['_path']).name}`: {rec['created'][:16].replace('T', ' ')} UTC, "
           f"{commit}{dirty}, jax {v.get('jax', '—')}; load average {load.get('start') or '—'} → "
           f"{load.get('end') or '—'}.", ""]
    return out + [tables(rec, markdown=True), ""]


def render_results_md(records: list, shown: Optional[Sequence[str]] = None) -> str:
    from benchmarks import cases

    head = ["# Benchmark results", "",
            "<!-- Generated by `python benchmarks/harness.py --render` from "
            "benchmarks/results/*.json. Do not edit by hand. -->", "",
            "The latest record of each case per machine (older records are in the git history of "
            "`benchmarks/results/`). Cases are defined in `benchmarks/cases.py` and run by "
            "`python benchmarks/harness.py --case NAME` (`svtjax bench` runs `default`); the "
            "workload and engines are described in `benchmarks/harness.py`.", "",
            "## Decisions", "",
            "Each tuning constant of the package, the value chosen, what was measured against it "
            "and the record that measured it (in `benchmarks/results/` or its git history).", "",
            _table(["constant", "value", "measured alternatives", "record"],
                   [[c, v, alt, f"`{r}`"] for c, v, alt, r in cases.DECISIONS], True), ""]
    by_machine = latest(records, shown or cases.SHOWN)
    if not by_machine:
        head += ["No benchmark records yet.", ""]
    order = {c: i for i, c in enumerate(shown or cases.SHOWN)}
    for mid in sorted(by_machine):
        recs = sorted(by_machine[mid].values(), key=lambda r: order[r["case"]])
        head += [f"## {mid}", "", _machine_line(recs[0]), ""]
        for rec in recs:
            head += _record_md(rec)
    return "\n".join(head).rstrip() + "\n"


def write_results_md(results_dir: Path, output: Path,
                     shown: Optional[Sequence[str]] = None) -> Path:
    """Writes RESULTS.md from the records in ``results_dir`` (``shown``: the cases listed;
    default :data:`benchmarks.cases.SHOWN`)."""
    output = Path(output)
    output.write_text(render_results_md(load_records(results_dir), shown))
    return output
