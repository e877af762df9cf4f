"""Times the README's test command on a clean clone, as CI runs it (issue 20: under 4 minutes
on the 2-core machine when idle).

A fresh clone of a commit (default ``HEAD``; uncommitted changes are not in it) in a temporary
directory, with the checkout's sibling ``shared`` folder linked beside it when there is one
(as CI lays it out); a new virtual
environment with pip upgraded (not timed: ``.ci/run`` does it before the command); then the
README's second quick-start command, run by ``bash`` in the clone with the environment
activated, is timed as a whole. The pytest summary line, pytest's own time and the slowest
tests it lists are read from its output. The command is taken from README.md, and must be a
line of ``.ci/run``, so that what is timed is what CI runs. The tests' compilation cache
is the user's (``~/.cache/svtjax/xla-tests``), as for CI on this machine: time a warm cache by
running twice. Writes ``benchmarks/results/suite-<machine>-<time>.json`` and exits with the
command's exit status.

    python benchmarks/bench_suite.py [--rev REV] [--out DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import load, write_record  # noqa: E402

_SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed).*) in ([0-9.]+)s\b", re.M)


def readme_test_command(root: Path = ROOT) -> str:
    """The README's second quick-start command (the one that runs the test suite); raises
    ValueError unless ``.ci/run`` runs it, as a line of its own (CI then runs the speed
    regression check after it, which is not part of the README's command and is not timed)."""
    text = (root / "README.md").read_text()
    start = text.index("## Quick start")
    block = text[text.index("```bash", start) + len("```bash"):]
    lines = [ln.strip() for ln in block[:block.index("```")].splitlines() if ln.strip()]
    if len(lines) != 2:
        raise ValueError(f"README's quick start should hold exactly 2 commands; found {lines}")
    command = lines[1]
    ci = [ln.strip() for ln in (root / ".ci" / "run").read_text().splitlines()
          if ln.strip() and not ln.lstrip().startswith("#")]
    if command not in ci:
        raise ValueError(f".ci/run does not run the README's test command {command!r}")
    return command


def parse_pytest(output: str) -> dict:
    """pytest's summary line, its own seconds and the lines of its slowest durations (None and
    [] where the output has none)."""
    found = _SUMMARY.findall(output)
    summary, seconds = (found[-1][0], float(found[-1][1])) if found else (None, None)
    slowest = []
    if "slowest" in output:
        block = output[output.index("slowest"):].splitlines()[1:]
        for line in block:
            if not re.match(r"^\s*[0-9.]+s (call|setup|teardown) ", line):
                break
            slowest.append(line.strip())
    passed = re.search(r"(\d+) passed", summary or "")
    return {"summary": summary, "pytest_s": seconds, "slowest": slowest,
            "passed": int(passed.group(1)) if passed else None}


def _git(*args) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rev", default="HEAD", help="the commit to clone (default: HEAD)")
    p.add_argument("--out", type=Path, default=HERE / "results",
                   help="directory for the JSON record (default: benchmarks/results)")
    p.add_argument("--keep", action="store_true", help="keep the clone, venv and log")
    args = p.parse_args(argv)
    try:
        command = readme_test_command()
        commit = _git("rev-parse", "--verify", f"{args.rev}^{{commit}}")
    except (ValueError, OSError, subprocess.CalledProcessError) as e:
        print(f"bench_suite: {e}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="svtjax-suite-"))
    try:
        clone = tmp / "main"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(clone)],
                       check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", commit], check=True)
        if (ROOT.parent / "shared").is_dir():
            (tmp / "shared").symlink_to(ROOT.parent / "shared")
        venv = tmp / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        "--upgrade", "pip"], check=True)
        env = dict(os.environ, VIRTUAL_ENV=str(venv),
                   PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
        env.pop("PYTHONHOME", None)
        print(f"[suite] {commit[:10]}: {command}", flush=True)
        load_start = load()
        t0 = time.perf_counter()
        run = subprocess.run(["bash", "-c", command], cwd=clone, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        wall = time.perf_counter() - t0
        load_end = load()
        (tmp / "output.log").write_text(run.stdout)
        parsed = parse_pytest(run.stdout)
        print(f"[suite] exit {run.returncode} after {wall:.1f} s; {parsed['summary']}",
              flush=True)
        write_record("suite", "suite", args.out, command=command, commit=commit,
                     returncode=run.returncode, wall_s=round(wall, 1),
                     load_average={"start": load_start, "end": load_end}, **parsed)
        if args.keep:
            print(f"[suite] kept {tmp}")
        return run.returncode
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
