"""Stress test of Ctrl-C: SIGINT to ``svtjax simulate`` at random times, under a CPU hog.

Starts the command ``--runs`` times, one after another, each time sends it SIGINT (as a
terminal's Ctrl-C does) at a time drawn uniformly from ``[--min, --max]`` seconds after its
start, and records its exit status, how long it took to end after the signal and its stderr.
Meanwhile ``--hogs`` processes (default: one per core) spin on the CPU, so the interrupts land
in the start-up imports, tracing, XLA compilation and the compiled chunks of a loaded machine,
where a lost interrupt was seen before (swallowed inside JAX's garbage-collector callback and
ended with exit status 0; a segmentation fault after "interrupted"; a traceback from the
imports).

A run passes when it exits with status 130 and its stderr is exactly one line ending in
"interrupted" (the command prints its table on stdout only after the work; progress lines go
to stderr only for a sweep). Every run also has to be signalled before it ends by itself: the
default command (every default mechanism and ε, 1,000 trials each) runs far longer than
``--max``.

The command is the ``svtjax`` console script when the one on ``PATH`` is this version's
(``svtjax._interrupt:console``), else ``python -m svtjax.cli`` (the same entry). The runs use
a fresh compilation cache directory, shared by the runs, so that interrupted runs never touch
the user's cache.

Usage::

    python benchmarks/stress_sigint.py                  # 20 runs, 0.5-10 s, hog on every core
    python benchmarks/stress_sigint.py --runs 5 --hogs 0 --no-record

Writes ``benchmarks/results/stress-sigint-<machine>-<time>.json`` (the one record format of
:mod:`benchmarks.machine`; unless ``--no-record``), prints
a summary (counts of exit statuses and of stderr line counts) and exits 0 only if every run
passed.
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_ARGS = ("simulate",)
"""``svtjax simulate`` with its defaults: 4 mechanisms x 3 ε x 1,000 trials on Zipf."""


def command() -> list[str]:
    """The ``svtjax`` console script if it is this version's, else ``python -m svtjax.cli``."""
    script = shutil.which("svtjax")
    if script is not None:
        try:
            text = pathlib.Path(script).read_text(errors="replace")
        except OSError:
            text = ""
        if "svtjax._interrupt" in text:
            return [script]
    return [sys.executable, "-m", "svtjax.cli"]


def _hog() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _sigint_default():
    # as from a terminal: a process started in the background by a non-interactive shell
    # inherits SIGINT ignored, and so would the command
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_run(cmd: list[str], delay: float, env: dict, timeout: float) -> dict:
    """Starts ``cmd``, sends it SIGINT ``delay`` seconds later; what happened."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                            preexec_fn=_sigint_default)
    ended_early = False
    try:
        proc.wait(timeout=max(0.0, start + delay - time.monotonic()))
        ended_early = True  # it ended before the signal
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
    signalled = time.monotonic()
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill()
        out, err = proc.communicate()
    lines = err.splitlines()
    ok = (not ended_early and not timed_out and proc.returncode == 130 and len(lines) == 1
          and lines[0].endswith("interrupted"))
    return {"delay_s": round(delay, 3), "returncode": proc.returncode,
            "stderr_lines": len(lines), "stdout_bytes": len(out),
            "stderr": err if len(err) <= 8000 else f"{err[:6000]}\n...\n{err[-2000:]}",
            "seconds_after_signal": round(time.monotonic() - signalled, 3),
            "ended_before_signal": ended_early, "timed_out": timed_out, "ok": ok}


def stress(runs: int = 20, low: float = 0.5, high: float = 10.0, hogs: int | None = None,
           seed: int = 0, args=DEFAULT_ARGS, timeout: float = 600.0,
           log=print) -> dict:
    """``runs`` interrupted runs of ``svtjax ARGS`` under ``hogs`` spinning processes (default:
    one per core); the per-run results and their summary."""
    rng = random.Random(seed)
    cmd = command() + list(args)
    hogs = (os.cpu_count() or 1) if hogs is None else hogs
    cache = tempfile.mkdtemp(prefix="svtjax-stress-sigint-cache-")
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"),
               SVTJAX_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    env.pop("SVTJAX_NO_CACHE", None)
    spinning = [_hog() for _ in range(hogs)]
    results = []
    t0 = time.monotonic()
    try:
        for i in range(runs):
            r = one_run(cmd, rng.uniform(low, high), env, timeout)
            results.append(r)
            log(f"run {i + 1:>2}/{runs}: SIGINT at {r['delay_s']:5.2f} s -> exit "
                f"{r['returncode']} after {r['seconds_after_signal']:.2f} s, "
                f"{r['stderr_lines']} stderr line(s){'' if r['ok'] else '  FAILED: '}"
                f"{'' if r['ok'] else repr(r['stderr'][-300:])}")
    finally:
        for hog in spinning:
            hog.kill()
            hog.wait()
        shutil.rmtree(cache, ignore_errors=True)
    summary = {
        "runs": runs, "passed": sum(r["ok"] for r in results),
        "exit_statuses": dict(collections.Counter(str(r["returncode"]) for r in results)),
        "stderr_line_counts": dict(collections.Counter(str(r["stderr_lines"])
                                                       for r in results)),
        "ended_before_signal": sum(r["ended_before_signal"] for r in results),
        "timed_out": sum(r["timed_out"] for r in results),
        "max_seconds_after_signal": max((r["seconds_after_signal"] for r in results),
                                        default=None),
        "wall_s": round(time.monotonic() - t0, 1)}
    return {"command": cmd, "delay_range_s": [low, high], "hogs": hogs, "seed": seed,
            "summary": summary, "results": results}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--min", type=float, default=0.5, help="earliest signal, seconds")
    p.add_argument("--max", type=float, default=10.0, help="latest signal, seconds")
    p.add_argument("--hogs", type=int, default=None,
                   help="spinning processes beside the runs (default: one per core)")
    p.add_argument("--seed", type=int, default=0, help="seed of the signal times")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds a run may take after its signal before it is killed")
    p.add_argument("--out", type=pathlib.Path, default=HERE / "results")
    p.add_argument("--no-record", action="store_true", help="write no JSON record")
    p.add_argument("args", nargs="*", help=f"svtjax arguments (default: {' '.join(DEFAULT_ARGS)})")
    a = p.parse_args(argv)
    if not 0 < a.min <= a.max:
        p.error("need 0 < --min <= --max")
    load_start = os.getloadavg()
    record = stress(a.runs, a.min, a.max, a.hogs, a.seed, tuple(a.args) or DEFAULT_ARGS,
                    a.timeout)
    s = record["summary"]
    print(f"{s['passed']} of {s['runs']} runs passed (exit 130, one stderr line); exit "
          f"statuses {s['exit_statuses']}; stderr line counts {s['stderr_line_counts']}; "
          f"ended before the signal {s['ended_before_signal']}; timed out {s['timed_out']}; "
          f"longest wait after the signal {s['max_seconds_after_signal']} s; {s['wall_s']} s")
    if not a.no_record:
        from benchmarks import machine

        config = {k: record.pop(k) for k in ("command", "delay_range_s", "hogs", "seed")}
        rec = machine.new_record("stress-sigint", config)
        rec["load_average"] = {"start": list(load_start), "end": machine.load()}
        rec.update(record, wall_s=record["summary"]["wall_s"])
        print(f"wrote {machine.save(rec, a.out)}")
    return 0 if s["passed"] == s["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
