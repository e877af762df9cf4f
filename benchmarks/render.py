"""Text tables of a benchmark record, and ``benchmarks/RESULTS.md`` generated from the records.

RESULTS.md shows the latest full record per machine (for an accelerator without one, its latest
narrowed record), plus the latest records of ``bench_reproduce.py`` and ``bench_allocator.py``.
Records of schema ``svtjax-bench/1`` (before the headline moved to the researchers' workload)
are rendered as their raw rows, their ``fixed`` mode shown as ``sorted``: it was the Zipf
stream sorted by score.
"""

from __future__ import annotations

import glob
import json
import math
import os
import statistics
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["tables", "checks_text", "record_path", "load_records", "latest_per_machine",
           "render_results_md", "write_results_md", "fmt_rate", "SCHEMAS"]

SCHEMAS = ("svtjax-bench/1", "svtjax-bench/2")
GPU_TARGET = 0.25
"""Issue 19's GPU acceptance: at least this fraction of the physical limit at >= 10^5 trials."""


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
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(cells):
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths))

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _rows_v1(rec: dict) -> list:
    """A schema-1 record's rows with its ``fixed`` (sorted by score) mode named ``sorted``."""
    return [dict(r, mode="sorted" if r.get("mode") == "fixed" else r.get("mode"))
            for r in rec["results"]]


# -- tables ----------------------------------------------------------------------------------

def _headline_tables(rec: dict, markdown: bool) -> list:
    from benchmarks.harness import headline

    head = ["n", "trials", "mode", "reached", "svtjax q/s", "svtjax-f1 q/s", "numba q/s",
            "numba-pool q/s", "svtjax ÷ numba", "svtjax ÷ pool", "f1 ÷ numba", "f1 ÷ pool",
            "f1 ÷ svtjax", "RNG floor /s", "svtjax of limit", "f1 of limit"]
    count_head = ["n", "trials", "mode", "svtjax-count q/s", "numba-count q/s", "ratio",
                  "count of limit", "numpy-vec q/s", "svtjax ÷ numpy-vec", "of block-keyed limit"]
    rows, count_rows = [], []
    for h in headline(rec):  # recomputed from the rows, so every record renders alike
        t, ratio, lim = h["throughput_of"], h["ratio"], h["ratio_to_physical_limit"]
        key = [str(h["n"]), str(h["trials"]), h["mode"]]
        rows.append(key + [_pct(h["evaluated_fraction"]), fmt_rate(t["svtjax"]),
                           fmt_rate(t["svtjax-f1"]), fmt_rate(t["numba"]),
                           fmt_rate(t["numba-pool"]), _fmt(ratio["svtjax/numba"]),
                           _fmt(ratio["svtjax/numba-pool"]), _fmt(ratio["svtjax-f1/numba"]),
                           _fmt(ratio["svtjax-f1/numba-pool"]), _fmt(ratio["svtjax-f1/svtjax"]),
                           fmt_rate(h["rng_floor_rate"]), _pct(lim.get("svtjax")),
                           _pct(lim.get("svtjax-f1"))])
        count_rows.append(key + [fmt_rate(t["svtjax-count"]), fmt_rate(t["numba-count"]),
                                 _fmt(ratio["svtjax-count/numba-count"]),
                                 _pct(lim.get("svtjax-count")), fmt_rate(t["numpy-vectorized"]),
                                 _fmt(ratio["svtjax/numpy-vectorized"]),
                                 _pct(h["ratio_to_block_keyed_limit"].get("svtjax"))])
    if not rows:
        return []
    return [_table(head, rows, markdown), _table(count_head, count_rows, markdown)]


def _headline_table_v1(rec: dict, markdown: bool) -> Optional[str]:
    """A schema-1 record's headline, from the summary it stored (its sorted order as such)."""
    rows = []
    for h in rec.get("headline") or []:
        t, ratio = h.get("throughput_of", {}), h.get("ratio", {})
        rows.append([str(h["n"]), str(h["trials"]),
                     "sorted" if h["mode"] == "fixed" else h["mode"],
                     _pct(h.get("evaluated_fraction")), fmt_rate(h.get("throughput")),
                     fmt_rate(t.get("numba")), fmt_rate(t.get("numba-parallel")),
                     _fmt(ratio.get("numba")), _fmt(ratio.get("numba-parallel")),
                     fmt_rate(t.get("svtjax-reduce")), fmt_rate(t.get("numba-count")),
                     _fmt(h.get("reduce_ratio_to_numba_count")),
                     _pct(h.get("ratio_to_physical_limit"))])
    if not rows:
        return None
    return _table(["n", "trials", "mode", "reached", "svtjax q/s", "numba q/s",
                   "numba-parallel q/s", "svtjax ÷ numba", "svtjax ÷ numba-parallel",
                   "reduce= q/s", "numba-count q/s", "reduce= ÷ numba-count", "svtjax of limit"],
                  rows, markdown)


def _floor_table(rec: dict, markdown: bool) -> Optional[str]:
    floors = rec.get("rng_floors") or []
    if not floors:
        return None
    base = {(f["dist"], f["form"]): f["rate"] for f in floors
            if f.get("status") == "ok" and f["impl"] == "threefry2x32"}
    rows = []
    for f in floors:
        if f.get("status") != "ok":
            rows.append([f["impl"], f["dist"], f["form"], "skipped", f.get("reason", "")[:60],
                         ""])
            continue
        b = base.get((f["dist"], f["form"]))
        rows.append([f["impl"], f["dist"], f["form"], f"{f['draws']:,}", fmt_rate(f["rate"]),
                     _fmt(None if b is None else f["rate"] / b)])
    return _table(["generator", "distribution", "keying", "variates/call", "variates/s",
                   "÷ threefry"], rows, markdown)


def _rows_table(rows: list, markdown: bool) -> str:
    out = []
    for r in rows:
        key = [r.get("table", "-"), r["engine"], r["mechanism"], str(r["n"]), str(r["trials"]),
               r["mode"]]
        if r["status"] != "ok":
            out.append(key + ["skipped", r.get("reason", "")[:60]] + [""] * 7)
            continue
        out.append(key + [_fmt(r["median_s"], ".4g"), str(len(r.get("times_s", []))),
                          fmt_rate(r["throughput"]), fmt_rate(r.get("evaluated_rate")),
                          _pct(r.get("evaluated_fraction")), _fmt(r.get("f1_mean"), ".4f"),
                          _fmt(r.get("compile_s"), ".2f"), _fmt(r.get("load_1m"), ".2f"),
                          "yes" if r.get("extrapolated") else ""])
    return _table(["table", "engine", "mechanism", "n", "trials", "mode", "median s", "samples",
                   "q/s", "eval/s", "reached", "F1", "compile s", "load", "extrapolated"],
                  out, markdown)


def tables(rec: dict, markdown: bool = False) -> str:
    """The record's tables: headline, count-only, RNG floors, every row."""
    v1 = rec.get("schema") == "svtjax-bench/1"
    parts, titles = [], []
    if v1 and _headline_table_v1(rec, markdown):
        parts.append(_headline_table_v1(rec, markdown))
        titles.append("Headline as the record stored it: svt-s on the sorted stream (query "
                      "evaluations per second)")
    if not v1:
        heads = _headline_tables(rec, markdown)
        if heads:
            parts += heads
            titles += ["Headline: svt-s on the researchers' workload (query evaluations per "
                       "second)", "Without output arrays (count-only reducer vs the counting "
                       "numba loop), and the numpy baseline"]
        floor = _floor_table(rec, markdown)
        if floor:
            parts.append(floor)
            titles.append("RNG floor under each JAX generator")
    parts.append(_rows_table(_rows_v1(rec) if v1 else rec["results"], markdown))
    titles.append("All engines and mechanisms")
    if markdown:
        return "\n\n".join(f"#### {t}\n\n{p}" for t, p in zip(titles, parts))
    return "\n\n".join(f"{t}:\n{p}" for t, p in zip(titles, parts))


def checks_text(rec: dict) -> str:
    """One line per subprocess check (compilation cache, peak memory)."""
    lines = []
    cc, mem = rec.get("compile_cache", {}), rec.get("memory", {})
    if cc.get("status") == "ok":
        lines.append(f"compile cache: cold first call {cc['cold_first_call_s']:.2f} s, cached "
                     f"first call {cc['cached_first_call_s']:.2f} s ({cc['speedup']:.2f}x), "
                     f"warm {cc['warm_call_s']:.3f} s")
    if mem.get("status") == "ok":
        for r in mem["chunks"]:
            if r["status"] == "ok":
                lines.append(f"memory: chunk {r['chunk']:>7}: peak RSS {r['peak_rss_mib']:.0f} "
                             f"MiB (one chunk {r['peak_after_one_chunk_mib']:.0f} MiB), "
                             f"{mem['trials']} trials in {r['run_s']:.1f} s")
    return "\n".join(lines)


# -- records ---------------------------------------------------------------------------------

def record_path(rec: dict, out_dir: Path) -> Path:
    stamp = rec["created"].replace(":", "").replace("+0000", "").replace("+00:00", "")
    suffix = "" if rec["config"]["suite"] == "full" else f"-{rec['config']['suite']}"
    return Path(out_dir) / f"{rec['machine']['machine_id']}-{stamp}{suffix}.json"


def load_records(results_dir: Path) -> list:
    records = []
    for path in sorted(glob.glob(str(Path(results_dir) / "*.json"))):
        try:
            with open(path) as f:
                rec = json.load(f)
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(rec, dict) and rec.get("schema") in SCHEMAS:
            rec["_path"] = path
            records.append(rec)
    return records


def latest_per_machine(records: list, suites: Sequence[str] = ("full",)) -> list:
    latest: dict = {}
    for rec in records:
        if rec["config"].get("suite") not in suites:
            continue
        mid = rec["machine"]["machine_id"]
        if mid not in latest or rec["created"] > latest[mid]["created"]:
            latest[mid] = rec
    return [latest[k] for k in sorted(latest)]


_METHOD_V2 = (
    "Workload: Zipf scores 10,000/i stored in one fixed random order (`fixed`; "
    "`np.random.RandomState(0).permutation(n)`, as the papers' published code prepares its "
    "data), or a fresh random order per trial (`shuffle`), or sorted by score (`sorted`); svt-s, "
    "monotonic, ε1:ε2 = 1:c^(2/3), ε = 0.5, c = 50, T = mean of the 50th and 51st scores; per "
    "trial the selected items and the halting position. Throughput = trials × n / median wall "
    "seconds; every engine of a case was sampled in interleaved rounds (one sample of each in "
    "turn, after one untimed warm-up round that compiles; a sample repeats calls shorter than "
    "50 ms and divides); every sample is in the JSON. `svtjax` = `simulate` with full Outcomes, "
    "then `svtjax.selected(out, c)` and the halting positions; `svtjax-f1` = `simulate(reduce=)` "
    "computing per-trial F1 and SER; `numba` = the papers' per-trial while-loop (one Laplace "
    "variate per item drawn inside the loop, stop at the c-th ⊤, per-trial Fisher–Yates over the "
    "positions reached), one thread, writing the picks and halting positions; `numba-pool` = "
    "that loop in a process pool over all cores, created and warmed before timing; "
    "`svtjax-count`/`numba-count` write nothing but counts. `reached` = evaluated positions ÷ "
    "(trials × n). `of limit` = evaluated positions per second ÷ the RNG floor (jitted, warm "
    "`jax.random.laplace`, float32, default generator, one big array), i.e. throughput ÷ "
    "(floor ÷ reached); `of block-keyed limit` uses the floor of svtjax's keying (fold_in per "
    "64-variate block) instead. Rows marked `extrapolated` timed a baseline on a subset of the "
    "trials and scaled linearly.")

_METHOD_V1 = (
    "Schema-1 record (before the headline moved to the researchers' workload): its `fixed` "
    "order was the Zipf stream sorted by score, shown here as `sorted`; its `svtjax` rows "
    "returned full Outcomes (no `selected`), `svtjax-reduce` a count-only reducer, `numba` wrote "
    "full answer/item arrays and `numba-parallel` used numba threads (prange).")


def _record_md(rec: dict, results_dir: Path) -> str:
    m, d, v, cfg = rec["machine"], rec["device"], rec["versions"], rec["config"]
    src = rec.get("source", {})
    load = rec["load_average"]
    rel = os.path.relpath(rec["_path"], Path(results_dir).parent) if "_path" in rec else "?"
    v1 = rec.get("schema") == "svtjax-bench/1"
    modes = ["sorted" if (v1 and x == "fixed") else x for x in cfg["modes"]]
    tuned = {True: "on", False: "off", None: "off or not recorded"}[rec.get("allocator_tuned")]
    pool = rec.get("pool", {})
    lines = [
        f"## {m['machine_id']}",
        "",
        f"Source: `{rel}` (run {rec['created']}, {rec['wall_s']:.0f} s wall, schema "
        f"`{rec['schema']}`).",
        "",
        f"- Machine: {m['cpu_model']}, {m['logical_cores']} logical cores "
        f"({m['usable_cores']} usable), {m['memory_gib']} GiB, {m['platform']}",
        f"- Device: {d['backend']} × {d['count']} ({d['kind']}); x64={d['x64']}",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- svtjax source: git {str(src.get('git_commit'))[:10]}"
        f"{' + uncommitted changes' if src.get('git_dirty') else ''}, package sha256 "
        f"{src.get('package_sha256')}",
        f"- Load average (1/5/15 min) at start {load.get('start')}, end {load.get('end')} "
        "(per-row 1-min load in the `load` column)",
        f"- glibc allocator tuning: {tuned}",
        f"- Config: ε={cfg['epsilon']}, c={cfg['c']}, repeats={cfg['repeats']} (median), "
        f"sizes (n × trials) {', '.join(f'{a}×{b}' for a, b in cfg['sizes'])}, "
        f"modes {', '.join(modes)}, seed {cfg['seed']}",
    ]
    if pool.get("status") == "ok":
        lines.append(f"- Process pool: {pool['workers']} workers ({pool['start_method']}), "
                     f"started and warm in {pool['startup_s']:.1f} s (untimed)")
    lines += ["", _METHOD_V1 if v1 else _METHOD_V2, "", tables(rec, markdown=True)]
    if not v1:
        lines += _history_md(rec, results_dir)
    params = {}
    for r in rec["results"]:
        if r["status"] == "ok" and r["engine"] in ("simulate", "svtjax"):
            params.setdefault(r["mechanism"], r.get("params"))
    if params:
        lines += ["", "Mechanism parameters: " + "; ".join(
            f"`{k}` " + ", ".join(f"{a}={b}" for a, b in (val or {}).items())
            for k, val in params.items()) + "."]
    lines += _checks_md(rec)
    return "\n".join(lines)


def _checks_md(rec: dict) -> list:
    cc = rec.get("compile_cache", {})
    lines = ["", "### Compilation"]
    if cc.get("status") == "ok":
        lines += ["", f"simulate on n={cc['n']} × {cc['trials']} trials, each in a new Python "
                  "process (first call = trace + compile + run):", "",
                  "| process | first call s |", "|---|---|",
                  f"| cold ({cc.get('cold_process', 'no cache')}) | "
                  f"{cc['cold_first_call_s']:.2f} |",
                  f"| persistent cache enabled, empty (populates) | "
                  f"{cc['populate_first_call_s']:.2f} |",
                  f"| persistent cache enabled, populated | {cc['cached_first_call_s']:.2f} |",
                  f"| (same process, warm second call) | {cc['warm_call_s']:.3f} |",
                  "", f"Cache entries written: {cc['cache_entries']}; cold ÷ cached first call "
                  f"= {cc['speedup']:.2f}×; `import jax, svtjax` took {cc['import_s']:.2f} s."]
    else:
        lines += ["", f"Persistent-cache check: {cc.get('status')} ({cc.get('reason', '')})."]
    mem = rec.get("memory", {})
    lines += ["", "### Peak memory with reduce="]
    if mem.get("status") == "ok":
        lines += ["", f"svt-s, n={mem['n']}, {mem['trials']:,} trials, `reduce=` per-trial "
                  f"counts; full Outcomes would take "
                  f"{mem['outcome_bytes_if_materialised'] / 2**20:,.0f} MiB. Peak RSS is the "
                  "subprocess's VmHWM (getrusage's ru_maxrss is also in the JSON; on Linux it "
                  "inherits the parent's RSS across fork+exec).", "",
                  "| chunk | peak RSS MiB | after one chunk MiB | after import MiB | "
                  "bounded by chunk | run s | q/s |", "|---|---|---|---|---|---|---|"]
        for r in mem["chunks"]:
            if r["status"] != "ok":
                lines.append(f"| {r['chunk']} | failed: {r.get('reason', '')[:80]} | | | | | |")
                continue
            lines.append(f"| {r['chunk']} | {r['peak_rss_mib']:.0f} | "
                         f"{r['peak_after_one_chunk_mib']:.0f} | {r['rss_after_import_mib']:.0f} | "
                         f"{'yes' if r['bounded_by_chunk'] else 'NO'} | {r['run_s']:.1f} | "
                         f"{fmt_rate(r['throughput'])} |")
    else:
        lines += ["", f"Memory check: {mem.get('status')} ({mem.get('reason', '')})."]
    return lines


def _gpu_md(gpu: list) -> list:
    from benchmarks.harness import headline

    out = ["## GPU", ""]
    if not gpu:
        return out + ["No GPU figures: no record below ran on a GPU. On a GPU machine, "
                      "`python benchmarks/gpu_suite.py OUTDIR` runs the suite in one call; copy "
                      "its JSON records into `benchmarks/results/` and regenerate this file.", ""]
    out.append("GPU records: " + ", ".join(f"`{r['machine']['machine_id']}` ({r['device']['kind']})"
                                           for r in gpu) + " (sections below).")
    for rec in gpu:
        if rec.get("schema") == "svtjax-bench/1":
            big = [row for row in rec["results"] if row.get("status") == "ok"
                   and row.get("throughput") and row["engine"].startswith("svtjax")
                   and row["trials"] >= 10**5]
            if big:
                row = max(big, key=lambda x: x["throughput"])
                out += ["", f"`{rec['machine']['machine_id']}` (schema 1): best throughput at "
                        f"≥ 10^5 trials {fmt_rate(row['throughput'])} query evaluations/s "
                        f"({row['mechanism']}, n = {row['n']}, {row['trials']} trials, "
                        f"{'sorted' if row['mode'] == 'fixed' else row['mode']} order)."]
            continue
        rows = [h for h in headline(rec) if h["trials"] >= 10**5]
        if rows:
            out += ["", f"`{rec['machine']['machine_id']}`: fraction of the physical limit at "
                    f"≥ 10^5 trials (issue 19's target: {GPU_TARGET:.0%}):", "",
                    "| n | trials | mode | svtjax q/s | of limit | svtjax-f1 of limit | "
                    "target met |", "|---|---|---|---|---|---|---|"]
            for h in rows:
                lim = h["ratio_to_physical_limit"]
                met = lim.get("svtjax")
                out.append(f"| {h['n']} | {h['trials']} | {h['mode']} | "
                           f"{fmt_rate(h['throughput_of']['svtjax'])} | {_pct(met)} | "
                           f"{_pct(lim.get('svtjax-f1'))} | "
                           f"{'—' if met is None else ('yes' if met >= GPU_TARGET else 'no')} |")
    return out + [""]


HISTORY = 12
"""Full records of a machine listed in its headline history, newest first."""


def _history_md(rec: dict, results_dir: Path) -> list:
    """The headline's acceptance ratios in every recent full record of ``rec``'s machine
    (schema 2, newest first): one run's medians drift with the VM, so a reader sees the spread
    of each figure, not only the latest run's."""
    from benchmarks.harness import headline

    mid = rec["machine"]["machine_id"]
    runs = [r for r in load_records(results_dir)
            if r["machine"]["machine_id"] == mid and r.get("schema") == "svtjax-bench/2"
            and r["config"].get("suite") == "full"]
    runs = sorted(runs, key=lambda r: r["created"], reverse=True)[:HISTORY]
    if len(runs) < 2:
        return []
    cases = [(h["n"], h["trials"], h["mode"]) for h in headline(rec)]
    head = ["record", "commit"] + [f"{n}×{t} {m}: × numba / × pool / of limit"
                                   for n, t, m in cases]
    rows = []
    for r in runs:
        found = {(h["n"], h["trials"], h["mode"]): h for h in headline(r)}
        cells = []
        for case in cases:
            h = found.get(case)
            if h is None:
                cells.append("—")
                continue
            ratio, lim = h["ratio"], h["ratio_to_physical_limit"]
            cells.append(f"{_fmt(ratio.get('svtjax/numba'))} / "
                         f"{_fmt(ratio.get('svtjax/numba-pool'))} / {_pct(lim.get('svtjax'))}")
        src = r.get("source", {})
        rows.append([f"`{os.path.basename(r.get('_path', '?'))}`",
                     str(src.get("git_commit"))[:7]
                     + (" + changes" if src.get("git_dirty") else "")] + cells)
    return ["", f"#### The headline in this machine's last {len(runs)} full runs",
            "", "svtjax with full Outcomes + `selected`, per case: ratio to the numba loop "
            "(one thread), to the process pool, and fraction of the physical limit; newest "
            "first (`python benchmarks/harness.py` writes a record).", "",
            _table(head, rows, True)]


def render_results_md(records: list, results_dir: Path) -> str:
    out = ["# Benchmark results", "",
           "<!-- Generated by benchmarks/update_results.py from benchmarks/results/*.json "
           "(latest full run per machine; for an accelerator without one, its latest narrowed "
           "run). Do not edit by hand. -->", "",
           "Regenerate with `python benchmarks/update_results.py`; produce a record with "
           "`svtjax bench` (or `python benchmarks/harness.py`) from a source checkout.", ""]
    if not records:
        out += ["No full benchmark records yet.", ""]
    gpu = [r for r in records if r.get("device", {}).get("backend") in ("gpu", "cuda", "rocm")]
    out += _gpu_md(gpu)
    for rec in records:
        out += [_record_md(rec, Path(results_dir)), ""]
    return "\n".join(out).rstrip() + "\n"


def _records(results_dir: Path, pattern: str, accept) -> list:
    """The readable JSON records matching ``pattern`` that ``accept`` takes, each with its
    ``_path``."""
    recs = []
    for path in sorted(Path(results_dir).glob(pattern)):
        try:
            rec = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(rec, dict) and accept(rec):
            rec["_path"] = path
            recs.append(rec)
    return recs


def _latest(results_dir: Path, pattern: str, schema: str, key=None,
            where=lambda rec: True) -> Optional[dict]:
    recs = _records(results_dir, pattern, lambda r: r.get("schema") == schema and where(r))
    if not recs:
        return None
    return max(recs, key=key or (lambda r: r["created"]))


def reproduce_md(results_dir: Path) -> list:
    """The "reproduce all" section: the latest record of benchmarks/bench_reproduce.py (paper
    mode preferred), or a line saying there is none."""
    rec = _latest(results_dir, "reproduce-*.json", "svtjax-reproduce/1",
                  key=lambda r: (r["mode"] == "paper", r["created"]),
                  where=lambda r: not r.get("tree"))
    out = ["## svtjax reproduce all", ""]
    if rec is None:
        return out + ["No record yet: run `python benchmarks/bench_reproduce.py`.", ""]
    m = rec["machine"]
    total = rec["total_seconds"]
    out += [f"Source: `{os.path.relpath(rec['_path'], Path(results_dir).parent)}` "
            f"(`python benchmarks/bench_reproduce.py --mode {rec['mode']}`, run "
            f"{rec['created']}) on `{m['machine_id']}` ({m['cpu_model']}, "
            f"{m['logical_cores']} logical cores); load average at start "
            f"{rec['load_average'].get('start')}, end {rec['load_average'].get('end')}.", "",
            f"Total wall time of every experiment in `--{rec['mode']}` mode"
            + (f" (`--jobs {rec['jobs']}`: {rec['jobs']} experiments at a time, each in its "
               "own process)" if rec.get("jobs", 1) > 1 else "")
            + f", {'warm' if rec.get('cache') == 'warm' else rec.get('cache') or 'user'} "
            f"compilation cache: **{total:.0f} s ({total / 60:.1f} min)**"
            + (f"; the same command with an empty cache (the warm-up pass): "
               f"**{rec['warmup_seconds']:.0f} s ({rec['warmup_seconds'] / 60:.1f} min)**"
               if rec.get("warmup_seconds") else "")
            + ("." if rec["all_succeeded"] else "; some experiments failed (exit status below)."),
            ""]
    # records since 2026-12-02 keep the warm-up pass's per-experiment times too
    cold = {r["experiment"]: r["seconds"] for r in rec.get("warmup_experiments") or []}
    if cold:
        out += ["| experiment | wall s | empty cache s | exit status |", "|---|---|---|---|"]
        out += [f"| {r['experiment']} | {r['seconds']:.0f} | "
                f"{cold.get(r['experiment'], math.nan):.0f} | {r['returncode']} |"
                for r in rec["experiments"]]
    else:
        out += ["| experiment | wall s | exit status |", "|---|---|---|"]
        out += [f"| {r['experiment']} | {r['seconds']:.0f} | {r['returncode']} |"
                for r in rec["experiments"]]
    return out + [""] + _earlier_runs_md(results_dir, rec) + _older_reproduce_md(results_dir, rec)


EARLIER_RUNS = 4
"""Earlier records of the same mode listed under the latest one: on a VM whose speed drifts by
a quarter, one run alone says little about a target it meets or misses by a few percent."""


def _earlier_runs_md(results_dir: Path, rec: dict) -> list:
    """One line naming the totals of the :data:`EARLIER_RUNS` records of ``rec``'s mode made
    before it (this checkout's, not ``--tree``), newest first; nothing when there are none."""
    recs = _records(results_dir, "reproduce-*.json",
                    lambda r: (r.get("schema") == "svtjax-reproduce/1" and not r.get("tree")
                               and r["mode"] == rec["mode"] and r["created"] < rec["created"]))
    recs = sorted(recs, key=lambda r: r["created"], reverse=True)[:EARLIER_RUNS]
    if not recs:
        return []
    runs = [f"`{Path(r['_path']).name}` ({(r.get('commit') or '?')[:7]}): "
            f"{r['total_seconds']:.0f} s"
            + (f", empty cache {r['warmup_seconds']:.0f} s" if r.get("warmup_seconds") else "")
            for r in recs]
    return ["Earlier runs of this mode, newest first: " + "; ".join(runs) + ".", ""]


def _older_reproduce_md(results_dir: Path, rec: dict) -> list:
    """The latest record of an older checkout (``bench_reproduce.py --tree``) in the same mode
    as ``rec``, with a compilation cache that held its programs too (``warm``, or ``user``
    after a first pass), beside it: the like-for-like comparison of issue 16."""
    warm = ("warm", "user")
    if rec.get("cache") not in warm:
        return []
    old = _latest(results_dir, "reproduce-*.json", "svtjax-reproduce/1",
                  where=lambda r: bool(r.get("tree")) and r["mode"] == rec["mode"]
                  and r.get("cache") in warm)
    if old is None:
        return []
    times = {r["experiment"]: r["seconds"] for r in rec["experiments"]}
    shared = [r for r in old["experiments"] if r["experiment"] in times]
    commit = (old.get("commit") or "?")[:7]
    old_total = sum(r["seconds"] for r in old["experiments"])
    out = [f"### Against commit {commit}", "",
           f"Source: `{os.path.relpath(old['_path'], Path(results_dir).parent)}` "
           f"(`python benchmarks/bench_reproduce.py --tree <worktree of {commit}> --cache "
           f"{old.get('cache')} --only ...`, run {old['created']}; compilation cache "
           f"{'warmed by a first pass' if old.get('cache') == 'warm' else 'the caller’s'}): "
           "that commit's experiments, each in its own process, one after "
           "another, whatever that commit's own `reproduce all` does. Per-experiment times above "
           "were measured with "
           f"{rec.get('jobs', 1)} experiments sharing the CPU, so only the totals compare "
           "like for like.", "",
           f"| experiment | {commit} s | exit | above s |", "|---|---|---|---|"]
    out += [f"| {r['experiment']} | {r['seconds']:.0f} | {r['returncode']} | "
            f"{times[r['experiment']]:.0f} |" for r in shared]
    out += ["", f"Total: {commit} **{old_total:.0f} s** for {len(old['experiments'])} "
            f"experiments; above **{rec['total_seconds']:.0f} s** for "
            f"{len(rec['experiments'])}.", ""]
    return out


def _latest_exact(results_dir: Path, part: str) -> Optional[dict]:
    """The latest full (not ``--quick``) bench_exact record holding ``part``."""
    return _latest(results_dir, "exact-*.json", "svtjax-bench-exact/1",
                   where=lambda r: part in r and not r.get("quick"))


def _source(rec: dict, results_dir: Path, command: str) -> str:
    m = rec["machine"]
    load = ", ".join(f"{x:.2f}" for x in m.get("loadavg_end") or ())
    return (f"Source: `{os.path.relpath(rec['_path'], Path(results_dir).parent)}` (`{command}`, "
            f"run {rec['created']} at commit {m.get('commit', '?')}, on `{m.get('host', '?')}`, "
            f"{m.get('cpu_model', 'CPU model not recorded')}, {m.get('cpus', '?')} CPUs, jax "
            f"{m.get('jax', '?')}; load average at the end "
            f"{load}).")


def exact_md(results_dir: Path) -> list:
    """The svtjax.exact section: speed, quadrature accuracy and the Monte Carlo check, each from
    the latest full record of benchmarks/bench_exact.py that has it."""
    out = ["## svtjax.exact", ""]
    rec = _latest_exact(results_dir, "speed")
    if rec is None:
        out += ["No speed record yet: `python benchmarks/bench_exact.py --part speed`.", ""]
    else:
        sp = rec["speed"]
        out += [_source(rec, results_dir, "python benchmarks/bench_exact.py --part speed"), "",
                f"A {len(sp['epsilons'])}-point ε curve of exact E[SER], {sp['mechanism']}, "
                f"{sp['dataset']} n = {sp['n']}, c = {sp['c']}: seconds.", "",
                "| order | first call, new process (compilation included) | second call | "
                "Monte Carlo for SE 1e-4 (extrapolated) | doubled rule: max change of "
                "P(i ∈ S) |", "|---|---|---|---|---|"]
        for order in ("random", "fixed"):
            o = sp.get(order)
            if o:
                out.append(f"| {order} | {o['seconds_first_call_new_process']:.2f} | "
                           f"{o['seconds_second_call']:.2f} | "
                           f"{o['mc_seconds_for_se_1e-4_extrapolated']:.0f} | "
                           f"{o['doubled_max_abs_change_member']:.1e} |")
        out.append("")
    rec = _latest_exact(results_dir, "accuracy")
    if rec is None:
        out += ["No accuracy record yet: `python benchmarks/bench_exact.py --part accuracy`.",
                ""]
    else:
        rows = rec["accuracy"]["rows"]
        out += [_source(rec, results_dir, "python benchmarks/bench_exact.py --part accuracy"),
                "", "Default rule against a far finer one (fixed order, c = 50):", "",
                "| dataset | mechanism | ε | nodes | max abs error of P(i ∈ S) | doubled rule "
                "changes it by |", "|---|---|---|---|---|---|"]
        out += [f"| {r['dataset']} | {r['mechanism']} | {r['epsilon']:g} | {r['nodes']} | "
                f"{r['max_abs_error_vs_reference']:.1e} | {r['max_abs_change_doubled']:.1e} |"
                for r in rows]
        out.append("")
    rec = _latest_exact(results_dir, "check")
    if rec is None:
        out += ["No Monte Carlo check record yet: `python benchmarks/bench_exact.py --part "
                "check`.", ""]
    else:
        ch = rec["check"]
        rows = ch["rows"]
        claim = [r for r in rows if "rejected" not in r["mechanism"]]
        wrong = [r for r in rows if "rejected" in r["mechanism"]]
        zmax = max(max(abs(r["z_ser"]), abs(r["z_picks"])) for r in claim) if claim else 0.0
        zmin = min(max(abs(r["z_ser"]), abs(r["z_picks"])) for r in wrong) if wrong else 0.0
        out += [_source(rec, results_dir, "python benchmarks/bench_exact.py --part check"), "",
                f"Exact E[SER] and E[|S|] against {ch['trials']:,} simulated trials per case "
                f"(ε = {ch['epsilon']:g}; {len({r['dataset'] for r in rows})} datasets, "
                f"c ∈ {sorted({r['c'] for r in rows})}, fixed and random order): "
                f"{sum(r['ok'] for r in claim)} of {len(claim)} cases within {ch['z']:g} "
                f"standard errors (largest |z| {zmax:.2f}); the mis-scaled mechanism (query "
                f"noise × 1.1) rejected in {sum(r['ok'] for r in wrong)} of {len(wrong)} "
                f"(smallest |z| {zmin:.1f}). Failures: {ch['failures']}.", ""]
    return out


def ties_md(results_dir: Path) -> list:
    """The exact random-order law with tie groups against item by item: the latest record of
    benchmarks/bench_ties.py (none: no section)."""
    recs = _records(results_dir, "ties-*.json", lambda r: r.get("benchmark") == "ties")
    if not recs:
        return []
    rec = max(recs, key=lambda r: r["time"])
    m, src = rec["machine"], rec["source"]
    out = ["Source: `" + os.path.relpath(rec["_path"], Path(results_dir).parent) + "` "
           f"(`python benchmarks/bench_ties.py`, run {rec['time']} at commit "
           f"{src.get('git_commit', '?')[:7]}{' + changes' if src.get('git_dirty') else ''}, on "
           f"`{m['machine_id']}`, {m['cpu_model']}, {m['logical_cores']} logical cores; load "
           f"average at the end {rec['load']}).", "",
           "Random order, svt-s (monotonic, 1 : c^(2/3)), default rule: one law with the scores "
           "shared by at least c items as binomial groups against item by item "
           "(`selection_laws(..., ties=False)`), median of three warm calls.", "",
           "| dataset | n | distinct scores | c | ε | groups | items in groups | item by item s "
           "| groups s | speed-up | largest difference |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    out += [f"| {r['dataset']} | {r['n']} | {r['distinct']} | {r['c']} | {r['epsilon']:g} | "
            f"{r['groups']} | {r['items_in_groups']} | {r['seconds_item_by_item']:.2f} | "
            f"{r['seconds_groups']:.2f} | {r['speedup']:.2f}x | {r['max_abs_difference']:.1e} |"
            for r in rec["rows"]]
    return out + [""]


def cost_md(results_dir: Path) -> list:
    """Where a headline run's time goes: every record of benchmarks/cost_breakdown.py, oldest
    first (so a kernel change shows as a before/after pair; none: no section)."""
    recs = _records(results_dir, "cost-*.json",
                    lambda r: r.get("benchmark") == "cost-breakdown")
    if not recs:
        return []
    out = ["## Cost breakdown of the headline engine", "",
           "`python benchmarks/cost_breakdown.py`: svt-s on the headline workload, medians of "
           "interleaved rounds in ms. `rng` = svtjax's own Threefry drawing exactly the blocks "
           "the run reaches (all draws of the run, nothing else); `engine` = `simulate(reduce=)` "
           "reading one number per trial (loop, draws, decisions, compaction, answer writes); "
           "`outcome+selected` = full Outcomes and `svtjax.selected` (the headline's svtjax "
           "row); `f1_ser` = the F1/SER reducer. `loop+decisions` = engine − rng. `no swaps` "
           "(shuffled cases, records from 2026-11-28 on) = the engine with its lazy "
           "Fisher–Yates block replaced by a probe that applies no swap (the shuffled run's "
           "groups, compaction and item gathers without the swaps); `swaps` = engine − no "
           "swaps: the swaps and, as the probe never reads them, possibly the draws of the swap "
           "partners (one uniform per position, as many as the noise draws in `rng`).", "",
           "| record (commit) | n | trials | mode | rng | engine | loop+decisions | no swaps | "
           "swaps | counts | f1_ser | outcome+selected | rng share of outcome+selected |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for rec in sorted(recs, key=lambda r: r["time"]):
        src = rec["source"]
        name = (f"`{Path(rec['_path']).name}` ({src.get('git_commit', '?')[:7]}"
                f"{' + changes' if src.get('git_dirty') else ''})")
        for c in rec["cases"]:
            m = {k: 1e3 * v for k, v in c["medians_s"].items() if v is not None}
            no_swaps = m.get("engine_no_swaps")
            swaps = "—" if no_swaps is None else f"{m['engine'] - no_swaps:.1f}"
            out.append(
                f"| {name} | {c['n']} | {c['trials']} | {c['mode']} | {m['rng']:.1f} | "
                f"{m['engine']:.1f} | {m['engine'] - m['rng']:.1f} | {_fmt(no_swaps, '.1f')} | "
                f"{swaps} | {m['counts']:.1f} | "
                f"{m['f1_ser']:.1f} | {m['outcome_selected']:.1f} | "
                f"{m['rng'] / m['outcome_selected']:.0%} |")
    return out + [""]


def _latest_benchmark(results_dir: Path, name: str) -> Optional[dict]:
    """The latest ``<name>-*.json`` record written by ``machine.write_record(name, ...)``."""
    recs = _records(results_dir, f"{name}-*.json", lambda r: r.get("benchmark") == name)
    return max(recs, key=lambda r: r["time"]) if recs else None


def _run_by(command: str, rec: dict) -> str:
    """"`command` (`record`, commit [+ changes], CPU)": where a section's figures come from."""
    src = rec["source"]
    return (f"`{command}` (`{Path(rec['_path']).name}`, {src.get('git_commit', '?')[:7]}"
            f"{' + changes' if src.get('git_dirty') else ''}, "
            f"{rec['machine'].get('cpu_model', '?')})")


def _opening(title: str, command: str, rec: dict, text: str) -> list:
    """A benchmark section's first lines: its title, then where its figures come from
    (:func:`_run_by`) followed by ``text`` (what was measured and how to read it)."""
    return [f"## {title}", "", f"{_run_by(command, rec)}: {text}", ""]


def _bench_section(results_dir: Path, name: str, title: str, text: str, header: list):
    """The latest record of ``benchmarks/bench_<name>.py`` (``name`` with hyphens) and its
    section's opening (:func:`_opening`) followed by the table's ``header`` lines; (None, [])
    without a record."""
    rec = _latest_benchmark(results_dir, name)
    if rec is None:
        return None, []
    command = f"python benchmarks/bench_{name.replace('-', '_')}.py"
    return rec, _opening(title, command, rec, text) + header


def shuffle_groups_md(results_dir: Path) -> list:
    """Reduced shuffled chunks run in trial groups: the latest record of
    benchmarks/bench_shuffle_groups.py (none: no section)."""
    rec, out = _bench_section(
        results_dir, "shuffle-groups", "Shuffled trials in groups",
        "the headline workload with a per-trial "
        "shuffle through `simulate(reduce=)` (reducers `f1`, `count`) or with full Outcomes "
        "and the top-c selection (`outcome`), the chunk's trials run in equal groups whose "
        "random-order state takes about the budget (`svtjax.simulate.SHUFFLE_GROUP_BYTES`; "
        "0: one group). Medians of interleaved rounds in ms; `same numbers`: the sums equal "
        "those of one group; `simulate uses`: the groups `simulate` picks by default (a chunk "
        "is grouped only within `svtjax.simulate.GROUP_TRIAL_BYTES` a trial).", [
            "| n | trials | reducer | budget MiB | groups | ms | ÷ one group | same numbers | "
            "simulate uses |",
            "|---|---|---|---|---|---|---|---|---|"])
    if rec is None:
        return []
    base = {(r["n"], r["reducer"]): r.get("median_s") for r in rec["rows"]
            if r.get("budget_mib") == 0}
    for r in rec["rows"]:
        ms, ref = r.get("median_s"), base.get((r["n"], r["reducer"]))
        speed = f"{ref / ms:.2f}x" if ms and ref else "—"
        out.append(f"| {r['n']} | {r['trials']} | {r['reducer']} | {r['budget_mib']:g} | "
                   f"{r['groups']} | {_fmt(None if ms is None else 1e3 * ms, '.1f')} | "
                   f"{speed} | {'yes' if r.get('same_numbers') else 'no'} | "
                   f"{r.get('default_groups', '—')} |")
    return out + [""]


def shuffle_prefix_md(results_dir: Path) -> list:
    """The shuffle's prefix made before the block loop: the latest record of
    benchmarks/bench_shuffle_prefix.py (none: no section)."""
    rec, out = _bench_section(
        results_dir, "shuffle-prefix", "The shuffle's prefix",
        "the headline workload with a per-trial shuffle through `simulate(reduce=)` computing "
        "F1 and SER, with the first positions of every trial's shuffle made before the block "
        "loop by the compiled prefix kernel, trial by trial (`svtjax.mechanisms._engine."
        "SHUFFLE_PREFIX`, at most half the stream: `uses`; 0: the lazy blocks alone). Medians "
        "of interleaved rounds in ms; `same numbers`: every prefix gives the same F1, SER and "
        "halts.", ["| n | trials | prefix | uses | ms | ÷ no prefix | same numbers |",
                   "|---|---|---|---|---|---|---|"])
    if rec is None:
        return []
    for r in rec["rows"]:
        med = r["median_s"]
        base = med.get("0")
        for p in r["prefixes"]:
            ms = med.get(str(p))
            speed = f"{base / ms:.2f}x" if ms and base else "—"
            default = " (default)" if p == r.get("default") else ""
            out.append(f"| {r['n']} | {r['trials']} | {p}{default} | {r['used'][str(p)]} | "
                       f"{_fmt(None if ms is None else 1e3 * ms, '.2f')} | {speed} | "
                       f"{'yes' if r.get('same_numbers') else 'no'} |")
    return out + [""]


def block_width_md(results_dir: Path) -> list:
    """The engine's per-platform choices (block width, chunk size, compaction factor): every
    record of benchmarks/bench_block_width.py and of the GPU suite's ``platform`` stage,
    newest first (none: no section)."""
    recs = sorted(_records(results_dir, "block-width-*.json",
                           lambda r: r.get("benchmark") == "block-width"),
                  key=lambda r: r["time"], reverse=True)
    if not recs:
        return []
    out = ["## Block width, chunk size and compaction factor per platform", "",
           "`python benchmarks/bench_block_width.py` (on a GPU: `benchmarks/gpu_suite.py`'s "
           "`platform` stage): the headline workload through `simulate(reduce=)` computing F1 "
           "and SER, per engine setting: positions per loop iteration (`svtjax.mechanisms."
           "_engine.BLOCK_WIDTH`), trials per chunk (0: `simulate`'s default) and compaction "
           "factor (`_engine.COMPACTION`; 2^30: none). None of them changes a number. Medians "
           "of interleaved rounds in ms; `÷ fastest`: the time over the fastest setting of the "
           "same case. Every record, newest first.", ""]
    for rec in recs:
        platform = rec.get("device", {}).get("backend", "?")
        out += [f"{_run_by('python benchmarks/bench_block_width.py', rec)}, {platform}:", "",
                "| n | trials | mode | width | chunk | factor | ms | ÷ fastest |",
                "|---|---|---|---|---|---|---|---|"]
        best = {}
        for r in rec["rows"]:
            if r.get("median_s"):
                key = (r["n"], r["trials"], r["mode"])
                best[key] = min(best.get(key, float("inf")), r["median_s"])
        for r in rec["rows"]:
            ms = r.get("median_s")
            fastest = best.get((r["n"], r["trials"], r["mode"]))
            factor = r.get("factor")
            out.append(f"| {r['n']} | {r['trials']} | {r['mode']} | {r['width']} | "
                       f"{r['chunk']} | {'—' if factor is None else factor} | "
                       f"{_fmt(None if ms is None else 1e3 * ms, '.2f')} | "
                       f"{f'{ms / fastest:.2f}' if ms and fastest else '—'} |")
        out.append("")
    return out


def fisher_yates_md(results_dir: Path) -> list:
    """The lazy Fisher–Yates swaps alone, per swap: the latest record of
    benchmarks/bench_fisher_yates.py (none: no section)."""
    rec = _latest_benchmark(results_dir, "fisher-yates")
    if rec is None:
        return []
    rows = [r for r in rec["rows"] if r.get("ns_per_swap") is not None]
    cpus = sorted({r["cpus"] for r in rows}, reverse=True)
    out = _opening(
        "Where a shuffled run's extra time goes: the swaps",
        "python benchmarks/bench_fisher_yates.py", rec,
        "the engine's `fisher_yates_block` alone, compiled in a loop over "
        f"{rows[0]['blocks'] if rows else '?'} consecutive blocks of W positions for a "
        "batch of trials (the widths of the compaction levels), and a probe with the same "
        "loop and no swap (its contiguous row read and row write only). ns per swap = "
        "median seconds ÷ (blocks × W × batch); each case in a process with every CPU and "
        "in one started on a single CPU (XLA splits the loop's scatter across threads by "
        "the size of the whole permutation; the single-CPU column shows what that split "
        "costs).") + [
        "| n | batch (trials) | " + " | ".join(
            f"{v}, {c} CPU{'s' if c > 1 else ''}" for c in cpus
            for v in ("ns per swap", "no swap")) + " |",
        "|---|---|" + "---|" * (2 * len(cpus))]
    table: dict = {}
    for r in rows:
        table.setdefault((r["n"], r["batch"]), {})[(r["variant"], r["cpus"])] = r["ns_per_swap"]
    for (n, batch), cells in table.items():
        out.append(f"| {n} | {batch} | " + " | ".join(
            _fmt(cells.get((v, c)), ".1f") for c in cpus for v in ("swaps", "no swap"))
            + " |")
    return out + [""]


def thunks_md(results_dir: Path, top: int = 12) -> list:
    """A compiled chunk kernel by kernel: the latest record of benchmarks/profile_thunks.py
    (none: no section)."""
    rec = _latest_benchmark(results_dir, "thunk-profile")
    if rec is None:
        return []
    out = _opening(
        "Kernels of a compiled chunk", "python benchmarks/profile_thunks.py", rec,
        "one warm `simulate(reduce=)` of the headline workload (count-only reducer) under JAX's "
        "profiler with XLA's per-thunk trace events; every executed kernel summed by name. "
        "A kernel run W = 64 times per block is in the lazy Fisher–Yates loop, one run once "
        "per block in the block loop; a `while` row includes the kernels it runs. The "
        "profiler slows every kernel run (by (profiled − warm) ÷ kernel runs on average, "
        "given per case), so small kernels look dearer than they are: the costs are those "
        "of `benchmarks/cost_breakdown.py`.")
    for case in rec["cases"]:
        out += [f"n = {case['n']}, {case['trials']} trials, {case['mode']}: warm "
                f"{1e3 * case['warm_s']:.1f} ms, profiled {1e3 * case['profiled_s']:.1f} ms, "
                f"{case['kernel_events']} kernel runs (the profiler's "
                f"{1e6 * (case['profiled_s'] - case['warm_s']) / case['kernel_events']:.2f} µs "
                "per run).", "",
                "| kernel | runs | total ms | µs per run |", "|---|---|---|---|"]
        out += [f"| `{k['name']}` | {k['count']} | {k['total_us'] / 1e3:.2f} | "
                f"{k['mean_us']:.2f} |" for k in case["kernels"][:top]]
        out.append("")
    return out


def draw_once_md(results_dir: Path) -> list:
    """Block draws hashed once: the latest record of benchmarks/bench_draw_once.py (none: no
    section)."""
    rec = _latest_benchmark(results_dir, "draw-once")
    if rec is None:
        return []
    out = _opening(
        "Block draws hashed once", "python benchmarks/bench_draw_once.py --mechanisms", rec,
        "the engine's compiled chunk with a block's "
        "draws made inside a conditional (`svtjax.mechanisms._engine.DRAW_ONCE`, `once`) and "
        "without (`per consumer`: XLA's fusion recomputes the Threefry hash in every fusion "
        "that reads the draws). `hash copies`: fusions of the compiled program holding a "
        "block's hash. Medians of interleaved rounds in ms; `same numbers`: both programs "
        "return identical outputs.") + [
        "| case | hash copies, per consumer | once | ms, per consumer | ms, once | speed-up | "
        "same numbers |", "|---|---|---|---|---|---|---|"]
    cases: dict = {}
    for r in rec["rows"]:
        cases.setdefault(r["case"], {})[r["draws"]] = r
    for case, pair in cases.items():
        per, one = pair.get("per consumer", {}), pair.get("once", {})
        a, b = per.get("median_s"), one.get("median_s")
        speed = f"{a / b:.2f}x" if a and b else "—"
        out.append(f"| {case} | {per.get('threefry_copies', '—')} | "
                   f"{one.get('threefry_copies', '—')} | "
                   f"{_fmt(None if a is None else 1e3 * a, '.2f')} | "
                   f"{_fmt(None if b is None else 1e3 * b, '.2f')} | {speed} | "
                   f"{'yes' if one.get('same_numbers') else 'no'} |")
    return out + [""]


def short_streams_md(results_dir: Path) -> list:
    """Short streams: the latest record of benchmarks/bench_short_streams.py (none: no
    section)."""
    recs = _records(results_dir, "short-streams-*.json",
                    lambda r: r.get("benchmark") == "short-streams"
                    and all("widths" in c for c in r["cases"] if "ns_per_trial" in c))
    if not recs:
        return []
    rec = max(recs, key=lambda r: r["time"])
    cases = [c for c in rec["cases"] if "ns_per_trial" in c]
    keys = list(cases[0]["ns_per_trial"])
    out = ["## Short streams", "",
           f"{_run_by(_short_streams_command(rec, keys), rec)}: `svtjax.simulate(reduce=)` "
           "(count of ⊤) of each mechanism at its audit parameters (ε = 1) on a stream of n "
           f"queries, {cases[0]['trials']:,} trials. `default`: the engine's width for the "
           "stream (one block of n rounded up to a multiple of 8, "
           "`svtjax.mechanisms._engine.NARROW`); `64`: one whole block, as every stream shorter "
           "than 64 ran before (both with the block's draws made once: the conditional of "
           "`_engine._once`, which XLA had removed for a one-block stream, folding its "
           "predicate, until it read the block index through an optimization barrier). "
           "Medians of interleaved rounds, ns per trial; `same numbers`: both widths give the "
           "same sums. The selection mechanisms (report-noisy-max, em-peeling, "
           "noisy-top-k-gap) do not run on the threshold engine: their rows show the "
           "measurement's noise.", "",
           "| mechanism | n | width | " + " | ".join(f"ns, {k}" for k in keys)
           + " | 64 ÷ default | same numbers |",
           "|---|---|---|" + "---|" * len(keys) + "---|---|"]
    for c in cases:
        ns = c["ns_per_trial"]
        ratio = (f"{ns['64'] / ns['default']:.2f}x" if ns.get("64") and ns.get("default")
                 else "—")
        out.append(f"| {c['mechanism']} | {c['n']} | {c['widths'].get('default') or '—'} | "
                   + " | ".join(_fmt(ns[k], '.0f') for k in keys)
                   + f" | {ratio} | {'yes' if c['same_numbers'] else 'no'} |")
    return out + [""]


def _short_streams_command(rec: dict, widths: list) -> str:
    """The bench_short_streams.py command that wrote ``rec`` (its arguments, from its cases)."""
    import svtjax

    cases = [c for c in rec["cases"] if "timings" in c]
    names = list(dict.fromkeys(c["mechanism"] for c in rec["cases"]))
    lengths = sorted({c["n"] for c in rec["cases"]})
    args = [] if set(names) >= set(svtjax.names()) else ["--mechanisms", *names]
    args += ["--lengths", *map(str, lengths), "--trials", str(cases[0]["trials"]),
             "--rounds", str(len(cases[0]["timings"][widths[0]]["times_s"])),
             "--widths", *widths]
    return "python benchmarks/bench_short_streams.py " + " ".join(args)


def allocator_md(results_dir: Path) -> list:
    """The allocator section: the latest record of benchmarks/bench_allocator.py."""
    rec = _latest(results_dir, "allocator-*.json", "svtjax-allocator/1")
    out = ["## glibc allocator tuning", ""]
    if rec is None:
        return out + ["No record yet: run `python benchmarks/bench_allocator.py`.", ""]
    m, runs = rec["machine"], rec["runs"]
    labels = [k for k in ("default", "thresholds", "tuned") if k in runs]
    out += [f"Source: `{os.path.relpath(rec['_path'], Path(results_dir).parent)}` "
            f"(`python benchmarks/bench_allocator.py`, run {rec['created']}) on "
            f"`{m['machine_id']}` ({m['cpu_model']}, {m['logical_cores']} logical cores); "
            f"load average at start {rec['load_average'].get('start')}, end "
            f"{rec['load_average'].get('end')}. Median of {rec['repeats']} warm calls, each "
            "column in its own process: `default` = glibc's defaults "
            "(`SVTJAX_MALLOC_TUNING=0`); `thresholds` (records since the arena change) = only "
            "the mmap and trim thresholds raised, svtjax's setting before commit a28c2ee; "
            "`tuned` = svtjax's setting at the record's commit (since a28c2ee also one malloc "
            "arena and a top pad). `faults` = minor page faults per call, where recorded.", "",
            "| timing | " + " | ".join(f"{k} ms" for k in labels) + " | speed-up | "
            + " | ".join(f"{k} faults" for k in labels) + " |",
            "|---|" + "---|" * (2 * len(labels) + 1)]

    def row(name, get_s, get_faults):
        first, last = get_s(runs[labels[0]]), get_s(runs[labels[-1]])
        faults = [get_faults(runs[k]) for k in labels]
        return (f"| {name} | " + " | ".join(f"{get_s(runs[k]) * 1e3:.2f}" for k in labels)
                + f" | {first / last:.2f}x | "
                + " | ".join("—" if f is None else f"{f:,.0f}" for f in faults) + " |")

    out.append(row("jitted fill of int32[1000, 10000] (40 MB)", lambda r: r["fill_40mb_s"],
                   lambda r: r.get("fill_40mb_faults")))
    for i, case in enumerate(runs[labels[0]]["cases"]):
        for kind, label in (("full", "full Outcomes"), ("reduce", "reduce=")):
            # the allocator benchmark runs the sorted stream ("fixed" in records before the
            # headline moved to the fixed random order)
            mode = "sorted" if case["mode"] == "fixed" else case["mode"]
            out.append(row(f"svt-s n={case['n']} x {case['trials']} trials, {mode}, {label}",
                           lambda r: r["cases"][i][f"{kind}_s"],
                           lambda r: r["cases"][i].get(f"{kind}_faults")))
    return out + [""]


def suite_md(results_dir: Path) -> list:
    """The test-suite section: every record of benchmarks/bench_suite.py, newest first (the
    machine's speed drifts, so one run alone says little about a target met or missed by a few
    percent)."""
    recs = _records(results_dir, "suite-*.json", lambda r: r.get("benchmark") == "suite")
    out = ["## The README's test command", ""]
    if not recs:
        return out + ["No record yet: run `python benchmarks/bench_suite.py`.", ""]
    recs.sort(key=lambda r: r["time"], reverse=True)
    out += ["`python benchmarks/bench_suite.py`: the README's second quick-start command "
            f"(`{recs[0]['command']}`, a line of `.ci/run`) on a clean clone of the "
            "commit, in a new virtual environment (pip upgraded first, untimed), with the "
            "tests' compilation cache as the machine had it; `wall` = the whole command, "
            "install included; `pytest` = pytest's own time. Issue 20's target: under 4 "
            "minutes on the 2-core machine when idle.", "",
            "| record | commit | wall | pytest s | summary | exit | load at start → end | CPU |",
            "|---|---|---|---|---|---|---|---|"]
    for rec in recs:
        wall = round(rec["wall_s"])
        la = rec.get("load_average") or {}
        start, end = (", ".join(f"{x:.2f}" for x in la.get(k) or ()) for k in ("start", "end"))
        pytest_s = "—" if rec.get("pytest_s") is None else f"{rec['pytest_s']:.1f}"
        out.append(f"| `{Path(rec['_path']).name}` | {rec['commit'][:7]} | "
                   f"{wall // 60} min {wall % 60} s | {pytest_s} | "
                   f"{rec.get('summary') or '—'} | {rec['returncode']} | [{start}] → [{end}] | "
                   f"{rec['machine'].get('cpu_model', '?')} |")
    return out + [""]


def _versions_table(rec: dict, results_dir: Path) -> list:
    commits = [r["commit"] for r in rec["roots"]]
    out = [f"Source: `{os.path.relpath(rec['_path'], Path(results_dir).parent)}` "
           f"(`python benchmarks/bench_versions.py`, run {rec['date']}, "
           f"{rec['cpu_count']} logical cores, load average at start "
           f"{[round(x, 2) for x in rec['load']['start']]}, end "
           f"{[round(x, 2) for x in rec['load']['end']]}). Each checkout in its own "
           f"long-lived process, sampled in {rec['repeats']} interleaved rounds; median ms of "
           f"`simulate(reduce=)` on n = {rec['n']:,} × {rec['trials']:,} trials (Zipf in one "
           f"fixed random order, or shuffled per trial), ε = {rec['epsilon']}, c = {rec['c']}; "
           "the ratio is the first checkout's time over the later one's (> 1: faster now).",
           "", "| mechanism | mode | " + " | ".join(f"{c} ms" for c in commits) + " | "
           + " | ".join(f"{c} ÷ {commits[0]}" for c in commits[1:]) + " |",
           "|---|---|" + "---|" * (2 * len(commits) - 1)]
    for row in rec["rows"]:
        ms = ["n/a" if m is None else f"{1e3 * m:.1f}" for m in row["median_s"]]
        ratio = ["n/a" if x is None else f"{x:.2f}x" for x in row["speedup_vs_first"]]
        out.append(f"| {row['mechanism']} | {row['mode']} | " + " | ".join(ms + ratio) + " |")
    spreads = sorted(max(s) / min(s) - 1 for row in rec["rows"]
                     for s in row.get("samples") or [] if s and min(s) > 0)
    if spreads:
        p90 = spreads[int(0.9 * (len(spreads) - 1))]
        out += ["", f"Spread of the rounds: the slowest of a (mechanism, mode, checkout)'s "
                f"{rec['repeats']} rounds was {100 * statistics.median(spreads):.0f}% above its "
                f"fastest on median (90th percentile {100 * p90:.0f}%), so a ratio within "
                "about ±10% of 1.00x is not a measured difference."]
    return out + [""]


def versions_md(results_dir: Path) -> list:
    """The "before and after" section: the latest record of benchmarks/bench_versions.py over
    every mechanism, then any later record narrowed with ``--only`` (a rerun of the mechanisms
    a change touched)."""
    recs = _records(results_dir, "versions-*.json", lambda r: r.get("benchmark") == "versions")
    out = ["## Every mechanism, several checkouts", ""]
    if not recs:
        return out + ["No record yet: run `python benchmarks/bench_versions.py OLD NEW`.", ""]
    narrowed = [r for r in recs if "--only" in r.get("command", "")]
    full = [r for r in recs if r not in narrowed]
    latest = max(full or recs, key=lambda r: r["date"])
    out += _versions_table(latest, results_dir)
    for rec in sorted((r for r in narrowed if r["date"] > latest["date"]),
                      key=lambda r: r["date"]):
        names = sorted({row["mechanism"] for row in rec["rows"]})
        out += [f"Later rerun of {', '.join(names)} only:", ""]
        out += _versions_table(rec, results_dir)
    return out


def write_results_md(results_dir: Path, output: Path, suites: Sequence[str] = ("full",)) -> Path:
    """Regenerates ``output`` (RESULTS.md) from the latest record per machine in ``results_dir``."""
    every = load_records(results_dir)
    records = latest_per_machine(every, suites)
    # A GPU is lent only briefly, so its runs are usually narrowed (--only/--size): keep the
    # latest such record of every accelerator without a full one.
    shown = {r["machine"]["machine_id"] for r in records}
    records += [r for r in latest_per_machine(every, ("custom",))
                if r["machine"]["machine_id"] not in shown and r["device"]["backend"] != "cpu"]
    text = render_results_md(records, Path(results_dir))
    head, sep, rest = text.partition("\n## GPU")
    text = (head + "\n" + "\n".join(reproduce_md(Path(results_dir)) + exact_md(
        Path(results_dir)) + ties_md(Path(results_dir)) + cost_md(Path(results_dir))
        + shuffle_groups_md(Path(results_dir)) + shuffle_prefix_md(Path(results_dir))
        + fisher_yates_md(Path(results_dir))
        + block_width_md(Path(results_dir))
        + thunks_md(Path(results_dir))
        + draw_once_md(Path(results_dir))
        + short_streams_md(Path(results_dir))
        + allocator_md(Path(results_dir))
        + suite_md(Path(results_dir))
        + versions_md(Path(results_dir)))
        + sep + rest)
    Path(output).write_text(text)
    return Path(output)
