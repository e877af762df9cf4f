"""The benchmark suite on a GPU machine in one call (at most 8 minutes), records under OUTDIR.

Prepared for the ``device`` tool's machines (one NVIDIA H100 or H200): their image already holds
jax 0.11.2 with its CUDA 13 plugin (``jax-cuda13-plugin``, ``jax-cuda13-pjrt``), numba, numpy,
scipy and chex (``/work/.library/device/KINDS.md``), so no wheel has to be carried, and svtjax
runs from the checkout through ``PYTHONPATH`` (no install, so pyproject's jax pin does not
apply). From the checkout root, as one device call (``timeout_s=540``)::

    PYTHONUNBUFFERED=1 PYTHONPATH=$PWD python3 benchmarks/gpu_suite.py $OUT --budget-s 420 \\
        2>&1 | tee $OUT/log.txt

Then copy ``$OUT/gpu-*.json`` into ``benchmarks/results/`` (removing that machine's older records
of the same cases) and run ``python benchmarks/harness.py --render``: RESULTS.md reports the
fraction of the physical limit at >= 10^5 trials against issue 19's 25% target.

The stages are the cases ``gpu-large``, ``gpu-platform``, ``gpu-default`` and
``gpu-mechanisms`` of :mod:`benchmarks.cases`, run by :mod:`benchmarks.harness`.

Stages, in order of priority; each writes its record after every case, so a stage that fails or
is cut short by the budget still leaves a partial record, and a failing stage does not stop the
next (each in try/except, recorded in ``suite.json``):

1. ``large`` — issue 19's GPU cases: 10^6 trials at n = 10^3 and 10^5 trials at n = 10^4, in
   the fixed random order and with a per-trial shuffle: svtjax (full Outcomes + ``selected``),
   ``reduce=`` with F1/SER, count-only, the numba loop (one thread, and a process pool over the
   machine's cores) timed on 2 × 10^4 trials and scaled linearly, and the RNG floor (2^28
   variates); then the RNG floor of every JAX generator (threefry2x32, rbg, unsafe_rbg;
   Laplace and bits; one array and per-block keyed).
2. ``platform`` — the engine's per-platform choices on the same large cases
   (:func:`benchmarks.kinds.platform_rows`, the F1/SER reducer): block widths 64, 256 and 1024
   positions per loop iteration, each with compaction factor 8 and without compaction, at
   ``simulate``'s default chunk size, and the default width and factor at chunks of 2^16
   trials. Its record (``gpu-platform-<machine>-<time>.json``) is what the accelerator entries
   of ``_engine.BLOCK_WIDTH`` and ``_engine.COMPACTION`` and the accelerator memory budget
   (``svtjax.simulate.ACCELERATOR_MEMORY_BUDGET``) should cite.
3. ``default`` — the CPU record's cases (n = 10^4 × 10^3, n = 10^3 × 10^4), every engine, and
   the persistent compilation-cache check.
4. ``mechanisms`` — every registered mechanism, ``simulate`` with full Outcomes, n = 10^4 ×
   10^3, fixed order and shuffled.

Writes at most 7 files into OUTDIR (the device tool returns 8): one record per stage
(``gpu-<stage>-gpu-<device>-<time>.json``), ``suite.json`` (each
stage's status and wall time) and ``RESULTS-gpu.md`` (the records rendered), plus the
``log.txt`` of the command above.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the checkout root goes on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import cases, harness, kinds, machine, render  # noqa: E402

MIN_STAGE_S = 30.0
"""A stage starts only with at least this much of the budget left."""


def stages() -> list:
    """(stage name, case name) of each stage, in order."""
    return [(name, f"gpu-{name}") for name in ("large", "platform", "default", "mechanisms")]


def smoke(case: str):
    """The stage's case definition at toy sizes (``--smoke``: checks the plumbing on a CPU in a
    minute); a harness Config for a throughput case, the definition for ``platform``."""
    spec = cases.CASES[case]
    if spec["kind"] == "platform":
        return dict(spec, sizes=[[1_000, 100]], modes=["fixed"], widths=[64, 128], factors=[8],
                    chunks=[0, 64], rounds=1)
    cfg = harness.case_config(case)
    return dataclasses.replace(cfg, sizes=((1_000, 100),), repeats=1, floor_max_draws=1 << 12,
                               baseline_max_trials=None if cfg.baseline_max_trials is None
                               else 50, floor_impls=("threefry2x32",), cache_check=False,
                               only=("svt-s", "dpbook"))


def platform_stage(spec: dict, out: Path, deadline: float, slug: str) -> Path:
    """Times ``spec``'s block widths, compaction factors and chunk sizes (the ``platform``
    stage) and writes a ``gpu-platform`` record into ``out``; returns its path."""
    log = lambda line: print(f"[gpu-suite] {line}", flush=True)  # noqa: E731
    record = machine.new_record("gpu-platform", spec)
    record["machine"]["machine_id"] = slug
    t0 = time.perf_counter()
    record["results"] = kinds.platform_rows(spec, log=log, deadline=deadline)
    record["load_average"]["end"] = machine.load()
    record["wall_s"] = time.perf_counter() - t0
    return machine.save(record, out)


def _device_slug() -> str:
    info = machine.device_info()
    kind = (info.get("kind") or info.get("backend") or "device").lower()
    return machine.safe_id(f"gpu-{kind}").replace("--", "-")[:40].strip("-")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="directory for the records (e.g. $OUT)")
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="wall seconds for all stages; no case starts after it (default 420)")
    p.add_argument("--only", action="append", choices=[s for s, _ in stages()],
                   help="run only this stage (repeatable)")
    p.add_argument("--smoke", action="store_true",
                   help="toy sizes, svt-s and dpbook only: a check of the script on a CPU")
    args = p.parse_args(argv)
    started = time.monotonic()
    deadline = started + args.budget_s
    args.out.mkdir(parents=True, exist_ok=True)
    import jax

    summary = {"schema": "svtjax-gpu-suite/1", "budget_s": args.budget_s,
               "backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()],
               "stages": []}
    if jax.default_backend() == "cpu":
        print("[gpu-suite] warning: JAX sees no accelerator; running on the CPU", flush=True)
    slug = _device_slug()
    for name, case in stages():
        if args.only and name not in args.only:
            continue
        spec = cases.CASES[case]
        if args.smoke:
            cfg = smoke(case)
        else:
            cfg = spec if spec["kind"] == "platform" else harness.case_config(case)
        entry = {"stage": name, "status": "skipped", "file": None}
        summary["stages"].append(entry)
        left = deadline - time.monotonic()
        if left < MIN_STAGE_S:
            entry["reason"] = f"budget spent ({left:.0f} s left)"
            continue
        t0 = time.monotonic()
        written: dict = {}

        def checkpoint(record, written=written):
            record["machine"]["machine_id"] = slug
            path = machine.record_path(record, args.out)
            path.write_text(json.dumps(record, indent=1, default=repr) + "\n")
            written["path"] = path.name

        print(f"[gpu-suite] stage {name} ({left:.0f} s of budget left)", flush=True)
        try:
            if spec["kind"] == "platform":
                written["path"] = platform_stage(cfg, args.out, deadline, slug).name
                entry["status"] = "ok"
            else:
                record = harness.run(cfg, argv=["gpu_suite", name], deadline=deadline,
                                     checkpoint=checkpoint, case=case)
                entry["status"] = "ok"
                entry["skipped_rows"] = sum(r["status"] != "ok" for r in record["results"])
        except Exception as err:  # noqa: BLE001 - the next stage still runs
            entry["status"] = "failed"
            entry["reason"] = f"{type(err).__name__}: {err}"
            traceback.print_exc()
        entry["wall_s"] = time.monotonic() - t0
        entry["file"] = written.get("path")
        (args.out / "suite.json").write_text(json.dumps(summary, indent=1) + "\n")
    summary["wall_s"] = time.monotonic() - started
    (args.out / "suite.json").write_text(json.dumps(summary, indent=1) + "\n")
    try:
        render.write_results_md(args.out, args.out / "RESULTS-gpu.md")
    except Exception:  # noqa: BLE001 - the records are what matters
        traceback.print_exc()
    for entry in summary["stages"]:
        print(f"[gpu-suite] {entry['stage']}: {entry['status']} "
              f"{entry.get('wall_s', 0):.0f} s {entry.get('file') or entry.get('reason', '')}",
              flush=True)
    print(f"[gpu-suite] done in {summary['wall_s']:.0f} s", flush=True)
    return 0 if all(e["status"] == "ok" for e in summary["stages"]) else 1


if __name__ == "__main__":
    sys.exit(main())
