"""The case kinds (:mod:`benchmarks.cases`), run by :mod:`benchmarks.harness`: each returns the
rows of one record.

* ``throughput`` (:func:`headline_case`, :func:`mechanism_case`, :func:`rng_floor_table`) — the
  timed engines of the headline workload, every registered mechanism and the RNG floors (the
  harness's module docstring describes the engines; :func:`benchmarks.harness.run` runs them).

* ``platform`` (:func:`platform_rows`) — the engine's per-platform block width, compaction
  factor and chunk size on the headline workload; none of them changes a number.
* ``checkouts`` (:func:`checkouts_rows`) — every mechanism in several checkouts, same run: one
  worker process per checkout (``python benchmarks/kinds.py --worker ROOT``).
* ``command`` (:func:`command_rows`) — a shell command timed as a whole (the README's test
  command on a clean clone, ``svtjax reproduce all``), its output parsed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

if __package__ in (None, ""):  # run as a script (a worker): the checkout root goes on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import baselines, machine, workload  # noqa: E402

__all__ = ["HEADLINE_ENGINES", "SVTJAX_ENGINES", "headline_case", "mechanism_engine",
           "mechanism_case", "rng_floor_table", "engine_tables", "platform_rows",
           "readme_test_command", "parse_output", "command_rows", "checkouts_rows", "commit"]


HEADLINE = workload.HEADLINE
HEADLINE_ENGINES = ("svtjax", "svtjax-f1", "svtjax-count", "numba", "numba-count", "numba-pool",
                    "numpy-vectorized", "rng-floor")
"""The headline's engines (:mod:`benchmarks.harness` describes each)."""
SVTJAX_ENGINES = ("svtjax", "svtjax-f1", "svtjax-count")


# -- the throughput kind: rows ---------------------------------------------------------------
def _row(engine: str, mechanism: str, n: int, trials: int, mode: str, **fields) -> dict:
    row = {"engine": engine, "mechanism": mechanism, "n": n, "trials": trials, "mode": mode,
           "status": "ok", "load_1m": (machine.load() or [None])[0]}
    row.update(fields)
    if row["status"] == "ok" and "median_s" in row:
        med = row["median_s"]
        row["throughput"] = row.get("draws", n * trials) / med
        if row.get("evaluated") is not None:
            length = row.setdefault("stream_length", n)
            row["evaluated_fraction"] = row["evaluated"] / (length * trials)
            row["evaluated_rate"] = row["evaluated"] / med
    return row


def _skipped(engine, mechanism, n, trials, mode, reason) -> dict:
    return _row(engine, mechanism, n, trials, mode, status="skipped", reason=reason)


def _engine(call: Callable[[], Any], summarise: Callable[[Any], dict], scale: float = 1.0):
    """A timing function ``fn(repeats) -> row`` for :func:`benchmarks.machine.interleaved`.

    Its first call is untimed (compilation) and recorded as ``first_call_s``; ``summarise``
    turns the last output into row fields after the timed samples. ``scale`` multiplies the
    timed samples and the counts (a baseline timed on a subset of the trials).
    """
    state: dict = {}

    def fn(repeats: int) -> dict:
        if "first" not in state:
            t0 = time.perf_counter()
            call()
            state["first"] = time.perf_counter() - t0  # compiles: not scaled
            state["number"] = machine.calls_per_sample(call)
        times, out, number = machine.timed(call, repeats, number=state["number"])
        row = {"times_s": [t * scale for t in times], "first_call_s": state["first"],
               "calls_per_sample": number}
        row.update(summarise(out))
        if scale != 1.0 and row.get("evaluated") is not None:
            row["evaluated"] = int(round(row["evaluated"] * scale))
        return row

    return fn


def _picks_summary(picks, halts, scores, c, trials) -> dict:
    import numpy as np

    picks = np.asarray(picks)
    f1, ser = workload.selection_metrics(picks, scores, c)
    return {"evaluated": int(np.asarray(halts, np.int64).sum()),
            "tops_per_trial": float((picks >= 0).sum()) / trials, "f1_mean": f1,
            "ser_mean": ser}


# -- the headline ----------------------------------------------------------------------------

def _svtjax_engines(mech, q, threshold, trials, shuffle, seed, c) -> dict:
    import jax
    import jax.numpy as jnp

    import svtjax

    run = dict(trials=trials, seed=seed, shuffle=shuffle)

    post = workload.selected_and_halts(c)

    def outcome_selected():
        return jax.block_until_ready(post(svtjax.simulate(mech, q, threshold, **run)))

    f1_reduce = jax.tree_util.Partial(workload.MetricReducer(c), jnp.asarray(q))

    def metrics():
        return jax.block_until_ready(svtjax.simulate(mech, q, threshold, reduce=f1_reduce,
                                                     **run))

    def counts():
        return jax.block_until_ready(svtjax.simulate(mech, q, threshold,
                                                     reduce=workload.count_reduce, **run))

    def f1_summary(out):
        f1, ser, halts = (float(x) for x in out)
        return {"evaluated": int(halts), "f1_mean": f1 / trials, "ser_mean": ser / trials}

    def count_summary(out):
        evaluated, tops = (int(x) for x in out)
        return {"evaluated": evaluated, "tops_per_trial": tops / trials}

    return {
        "svtjax": _engine(outcome_selected,
                          lambda out: _picks_summary(out[0], out[1], q, c, trials)),
        "svtjax-f1": _engine(metrics, f1_summary),
        "svtjax-count": _engine(counts, count_summary),
    }


def _baseline_engines(cfg, q, threshold, trials, shuffle, pool) -> dict:
    rho_scale, nu_scale = workload.svt_s_scales(cfg.epsilon, cfg.c)
    c, seed = cfg.c, cfg.seed
    sub = trials if cfg.baseline_max_trials is None else min(trials, cfg.baseline_max_trials)
    scale = trials / sub
    args = (q, threshold, rho_scale, nu_scale, c, sub, shuffle, seed)
    engines: dict = {}
    try:
        baselines.numba_kernel()
    except ImportError as err:
        reason = f"numba is not importable ({err})"
        skip = lambda r: {"status": "skipped", "reason": reason}  # noqa: E731
        engines.update({"numba": skip, "numba-count": skip, "numba-pool": skip})
    else:
        engines["numba"] = _engine(lambda: baselines.run_numba(*args),
                                   lambda o: _picks_summary(o[0], o[1], q, c, sub), scale)
        engines["numba-count"] = _engine(lambda: baselines.run_numba(*args, store=False),
                                         lambda o: {"evaluated": o[2]}, scale)
        if pool is not None:
            engines["numba-pool"] = _engine(lambda: pool.run(*args),
                                            lambda o: dict(_picks_summary(o[0], o[1], q, c, sub),
                                                           workers=pool.workers), scale)
    if cfg.numpy:
        engines["numpy-vectorized"] = _engine(
            lambda: baselines.numpy_vectorized(*args),
            lambda o: _picks_summary(o[0], o[1], q, c, sub), scale)
    return engines


def _floor_engine(n, trials, cfg):
    t, b = workload.floor_shape(n, trials, cfg.floor_max_draws)
    fn = workload.floor_timer(workload.DEFAULT_IMPL, "laplace", "array", t, b, cfg.seed)

    def floor(repeats):
        row = fn(repeats)
        row["note"] = (f"jax.random.laplace(key, ({t}, {b * workload.BLOCK}), float32), "
                       f"{workload.DEFAULT_IMPL}")
        return row

    return floor


def headline_case(cfg, n: int, trials: int, mode: str, pool=None) -> list:
    """Every engine of one headline case, timed in interleaved rounds; one row per engine."""
    import svtjax

    order = "sorted" if mode == "sorted" else "fixed"
    shuffle = mode == "shuffle"
    q, threshold = workload.zipf_workload(n, cfg.c, order)
    params = workload.headline_params(cfg.epsilon, cfg.c)
    mech = svtjax.get(HEADLINE, **params)
    engines = _svtjax_engines(mech, q, threshold, trials, shuffle, cfg.seed, cfg.c)
    if cfg.baselines:
        engines.update(_baseline_engines(cfg, q, threshold, trials, shuffle, pool))
        engines["rng-floor"] = _floor_engine(n, trials, cfg)
    engines = {k: v for k, v in engines.items() if k in cfg.engines}
    rows = []
    for engine, row in machine.interleaved(engines, cfg.repeats).items():
        mech_name = "-" if engine == "rng-floor" else HEADLINE
        if row.get("status") == "skipped":
            rows.append(_skipped(engine, mech_name, n, trials, mode, row["reason"]))
            continue
        extra: dict = {"table": "headline"}
        if engine.startswith("svtjax"):
            extra["params"] = params
        if engine.startswith(("numba", "numpy")) and cfg.baseline_max_trials is not None:
            extra["extrapolated"] = {"timed_trials": min(trials, cfg.baseline_max_trials),
                                     "total_trials": trials,
                                     "note": "timed on the first trials, scaled linearly"}
        rows.append(_row(engine, mech_name, n, trials, mode, **extra, **row))
    return rows


# -- every mechanism -------------------------------------------------------------------------

def mechanism_engine(name: str, cfg, n: int, trials: int, mode: str):
    """``(params, fn)``: a registered mechanism with its example parameters, and a timing
    function (for :func:`benchmarks.machine.interleaved`) of ``simulate`` with full Outcomes.

    Raises:
      LookupError, TypeError, ValueError: the mechanism cannot run this workload.
    """
    import jax
    import numpy as np

    import svtjax

    order = "sorted" if mode == "sorted" else "fixed"
    q, threshold = workload.zipf_workload(n, cfg.c, order)
    params = workload.mechanism_params(name, epsilon=cfg.epsilon, c=cfg.c, n=n)
    mech = svtjax.get(name, **params)

    def call():
        return jax.block_until_ready(svtjax.simulate(mech, q, threshold, trials=trials,
                                                     seed=cfg.seed, shuffle=mode == "shuffle"))

    def summarise(out):
        answers = np.asarray(out.answers)
        return {"evaluated": int((answers >= 0).sum()), "stream_length": int(answers.shape[-1]),
                "tops_per_trial": float((answers == 1).sum()) / trials}

    return params, _engine(call, summarise)


def mechanism_case(name: str, cfg, n: int, trials: int, mode: str) -> dict:
    """``simulate`` with full Outcomes for one registered mechanism (its example parameters)."""
    try:
        params, fn = mechanism_engine(name, cfg, n, trials, mode)
    except (LookupError, TypeError, ValueError) as err:
        return _skipped("simulate", name, n, trials, mode, str(err))
    try:
        row = fn(cfg.repeats)
    except Exception as err:  # noqa: BLE001 - a failing mechanism must not stop the run
        return _skipped("simulate", name, n, trials, mode, f"failed: {type(err).__name__}: {err}")
    row["median_s"] = machine.median(row["times_s"])
    row["compile_s"] = max(row["first_call_s"] - row["median_s"], 0.0)
    return _row("simulate", name, n, trials, mode, table="mechanisms", params=params, **row)


# -- RNG floors ------------------------------------------------------------------------------

def rng_floor_table(cfg, n: int, trials: int) -> list:
    """Every generator × distribution × keying, interleaved; one row each (rate = draws / s)."""
    t, b = workload.floor_shape(n, trials, cfg.floor_max_draws)
    fns = {f"{impl}/{dist}/{form}": workload.floor_timer(impl, dist, form, t, b, cfg.seed)
           for impl in cfg.floor_impls for dist in workload.DISTS for form in workload.FORMS}
    rows = []
    for name, row in machine.interleaved(fns, cfg.repeats).items():
        impl, dist, form = name.split("/")
        if row.get("status") == "skipped":
            rows.append({"impl": impl, "dist": dist, "form": form, "status": "skipped",
                         "reason": row["reason"]})
            continue
        row = dict(row, status="ok", rate=row["draws"] / row["median_s"],
                   load_1m=(machine.load() or [None])[0])
        rows.append(row)
    return rows


# -- the platform kind -----------------------------------------------------------------------

def engine_tables():
    """``(module, [BLOCK_WIDTH, COMPACTION])``: the engine's per-platform tables (platform name
    -> positions per loop iteration, -> compaction factor), which the ``platform`` kind sets."""
    import importlib

    for name in ("svtjax.engine.platform", "svtjax.mechanisms._engine"):  # new and old homes
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        tables = [getattr(module, t, None) for t in ("BLOCK_WIDTH", "COMPACTION")]
        if all(isinstance(t, dict) for t in tables):
            return module, tables
    raise RuntimeError("the engine has no per-platform BLOCK_WIDTH and COMPACTION tables to set")


def platform_rows(spec: dict, log: Callable[[str], None] = print,
                  deadline: Optional[float] = None) -> list:
    """Rows of every (size, mode, width, factor) at ``chunks[0]``, then ``chunks[1:]`` at the
    platform's own width and factor, sampled in interleaved rounds per (size, mode); the
    engine's tables are restored afterwards. No (size, mode) starts after ``deadline``."""
    import jax

    module, tables = engine_tables()
    platform = jax.default_backend()
    saved = [dict(t) for t in tables]
    settings = [(w, spec["chunks"][0], f) for w in spec["widths"] for f in spec["factors"]]
    settings += [(tables[0].get(platform, 64), c, module.compaction_factor())
                 for c in spec["chunks"][1:]]
    try:
        return _platform_rows(spec, settings, tables, platform, log, deadline)
    finally:  # the platform's own choices again for whatever runs next in this process
        for table, before in zip(tables, saved):
            table.clear()
            table.update(before)


def _platform_rows(spec, settings, tables, platform, log, deadline) -> list:
    import jax

    import svtjax
    from benchmarks.harness import HEADLINE, _row

    mech = svtjax.get(HEADLINE, **workload.headline_params())
    rows = []
    for n, trials in spec["sizes"]:
        q, threshold = workload.zipf_workload(n)
        reducer = jax.tree_util.Partial(workload.MetricReducer(workload.C), jax.numpy.asarray(q))
        for mode in spec["modes"]:
            if deadline is not None and time.monotonic() > deadline:
                log(f"n={n} trials={trials} {mode}: skipped (out of time)")
                continue
            fns = {}
            for width, chunk, factor in settings:
                def one(repeats, width=width, chunk=chunk, factor=factor, mode=mode):
                    tables[0][platform], tables[1][platform] = width, factor
                    t0 = time.perf_counter()
                    out = jax.block_until_ready(svtjax.simulate(
                        mech, q, threshold, trials=trials, seed=0, shuffle=mode == "shuffle",
                        reduce=reducer, chunk_size=chunk or None))
                    return {"times_s": [time.perf_counter() - t0],
                            "f1_mean": float(out[0]) / trials, "evaluated": int(out[2])}
                fns[(width, chunk, factor)] = one
            for (width, chunk, factor), row in machine.interleaved(fns, spec["rounds"]).items():
                rows.append(_row("simulate", HEADLINE, n, trials, mode, width=width, chunk=chunk,
                                 factor=factor, **row))
                log(f"n={n} trials={trials} {mode} width={width} chunk={chunk or 'auto'} "
                    f"factor={factor}: {rows[-1].get('median_s', float('nan')) * 1e3:.2f} ms")
    return rows


# -- the command kind ------------------------------------------------------------------------

_SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed).*) in ([0-9.]+)s\b", re.M)
_EXIT = re.compile(r"^(?:== svtjax reproduce )?\s*(?:\[[^\]]*\]\s*)?(\S+)(?: [^:\n]*)?: exit "
                   r"(-?\d+) after ([0-9.]+) s", re.M)


def readme_test_command(root: Path = machine.ROOT) -> str:
    """The README's second quick-start command (the one that runs the test suite); raises
    ValueError unless ``.ci/run`` runs it, as a line of its own, so that what is timed is what
    CI runs."""
    text = (root / "README.md").read_text()
    start = text.index("## Quick start")
    block = text[text.index("```bash", start) + len("```bash"):]
    lines = [ln.strip() for ln in block[:block.index("```")].splitlines() if ln.strip()]
    if len(lines) != 2:
        raise ValueError(f"README's quick start should hold exactly 2 commands; found {lines}")
    ci = [ln.strip() for ln in (root / ".ci" / "run").read_text().splitlines()
          if ln.strip() and not ln.lstrip().startswith("#")]
    if lines[1] not in ci:
        raise ValueError(f".ci/run does not run the README's test command {lines[1]!r}")
    return lines[1]


def parse_output(kind: Optional[str], output: str) -> dict:
    """``pytest``: its summary line, own seconds, passed count and slowest tests (None and []
    where the output has none); ``reproduce``: each experiment's exit status and seconds."""
    if kind == "pytest":
        found = _SUMMARY.findall(output)
        summary, seconds = (found[-1][0], float(found[-1][1])) if found else (None, None)
        slowest = []
        if "slowest" in output:
            for line in output[output.index("slowest"):].splitlines()[1:]:
                if not re.match(r"^\s*[0-9.]+s (call|setup|teardown) ", line):
                    break
                slowest.append(line.strip())
        passed = re.search(r"(\d+) passed", summary or "")
        return {"summary": summary, "pytest_s": seconds, "slowest": slowest,
                "passed": int(passed.group(1)) if passed else None}
    if kind == "reproduce":
        return {"experiments": [{"experiment": name, "returncode": int(rc), "seconds": float(s)}
                                for name, rc, s in _EXIT.findall(output)]}
    return {}


def _clone(tmp: Path) -> tuple[Path, dict]:
    """A fresh clone of HEAD with a new virtual environment (pip upgraded, untimed), the
    checkout's sibling ``shared`` folder linked beside it when there is one (as CI lays it
    out); returns the clone and its environment."""
    root = machine.ROOT

    def git(*args):
        return subprocess.run(["git", *args], check=True, capture_output=True, text=True)

    commit = git("-C", str(root), "rev-parse", "HEAD").stdout.strip()
    clone = tmp / "main"
    git("clone", "-q", "--no-checkout", str(root), str(clone))
    git("-C", str(clone), "checkout", "-q", commit)
    if (root.parent / "shared").is_dir():
        (tmp / "shared").symlink_to(root.parent / "shared")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--upgrade",
                    "pip"], check=True)
    env = dict(os.environ, VIRTUAL_ENV=str(venv),
               PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYTHONHOME", None)
    return clone, env


def command_rows(spec: dict, log: Callable[[str], None] = print) -> list:
    """Runs a ``command`` case (:mod:`benchmarks.cases`) and returns one row per pass (two with
    ``cache = "warm"``: the empty cache, then the warm one): the command, wall seconds, exit
    status, load average at start and end, and what ``parse`` reads."""
    command = readme_test_command() if spec["command"] == "readme-tests" else spec["command"]
    with tempfile.TemporaryDirectory(prefix="svtjax-bench-") as tmp:
        cwd, env = _clone(Path(tmp)) if spec.get("clone") else (machine.ROOT, dict(os.environ))
        if spec.get("cache") in ("cold", "warm"):  # empty compilation caches of this run alone
            env["SVTJAX_CACHE_DIR"] = str(Path(tmp) / "xla")
            env["SVTJAX_TEST_CACHE_DIR"] = str(Path(tmp) / "xla-tests")
        passes = 2 if spec.get("cache") == "warm" else 1
        rows = []
        for k in range(passes):
            log(f"[bench] {command} (pass {k + 1} of {passes}, cache {spec.get('cache')})")
            load_start = machine.load()
            t0 = time.perf_counter()
            proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            wall = time.perf_counter() - t0
            row = {"engine": "command", "command": command, "cache": spec.get("cache"),
                   "pass": k + 1, "returncode": proc.returncode, "wall_s": round(wall, 1),
                   "status": "ok" if proc.returncode == 0 else "failed",
                   "load_average": {"start": load_start, "end": machine.load()},
                   **parse_output(spec.get("parse"), proc.stdout)}
            rows.append(row)
            log(f"[bench] exit {proc.returncode} after {wall:.1f} s")
    return rows


# -- the checkouts kind ----------------------------------------------------------------------

def _worker(root: str) -> None:
    """A checkout's worker (``harness.py --worker ROOT``): imports the svtjax of ``root`` and
    answers one JSON command per line on stdin (``prepare`` a case: compile and time its first
    call; ``time`` it once). Only the public API, so any checkout since the registry can run."""
    # an editable install's import hook (a meta path finder) would find its own checkout first
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()]
    sys.path.insert(0, root)
    import pickle

    import jax
    import numpy as np

    import svtjax

    assert Path(svtjax.__file__).resolve().is_relative_to(Path(root).resolve()), svtjax.__file__
    if hasattr(svtjax, "tune_allocator"):  # older checkouts set it on import
        svtjax.tune_allocator()

    def count(out):  # depends on every draw, so XLA keeps the whole kernel
        picked = jax.numpy.where(out.answers == 1, out.items, 0)
        return jax.numpy.sum(out.answers == 1, axis=-1), jax.numpy.sum(picked, axis=-1)

    prepared = {}
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "prepare":
            n, trials = cmd["n"], cmd["trials"]
            scores = 10000.0 / np.arange(1, n + 1)
            q = scores[np.random.default_rng(0).permutation(n)]
            t = float(svtjax.datasets.lyu_threshold(scores, cmd["c"]))
            try:
                mech = svtjax.get(cmd["name"], **pickle.loads(bytes.fromhex(cmd["params"])))
                call = lambda m=mech, s=cmd["shuffle"]: jax.block_until_ready(  # noqa: E731
                    svtjax.simulate(m, q, t, trials=trials, seed=0, shuffle=s, reduce=count,
                                    progress=False))
                t0 = time.perf_counter()
                call()
                prepared[cmd["id"]] = call
                reply = {"ok": True, "first_s": time.perf_counter() - t0}
            except Exception as e:  # noqa: BLE001 - a mechanism this checkout lacks
                reply = {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}
        else:
            t0 = time.perf_counter()
            prepared[cmd["id"]]()
            reply = {"ok": True, "s": time.perf_counter() - t0}
        print(json.dumps(reply), flush=True)


def checkouts_rows(spec: dict, roots: Sequence[str], only: Optional[Sequence[str]] = None,
                   log: Callable[[str], None] = print) -> list:
    """Every registered mechanism (or ``only``) in each checkout of ``roots`` (the first is the
    baseline), same run: one long-lived worker process per checkout compiles every case once,
    then the workers are asked for timed calls in interleaved rounds (alternating their order),
    so load changes hit every checkout alike. Workload: Zipf 10,000/i in one fixed random order,
    the Lyu et al. threshold, ε = 0.5, c = 50 (the last checkout's ``example_params``), each mode
    of ``spec``; the reducer returns the ⊤ count and the sum of the selected items per trial."""
    import pickle

    import svtjax

    reg = svtjax.mechanisms.registry()
    names = list(only or svtjax.names())
    todo = []
    for n, trials in spec["sizes"]:
        for name in names:
            params = pickle.dumps(reg[name].example_params(epsilon=workload.EPSILON,
                                                           c=workload.C, n=n)).hex()
            for mode in spec["modes"]:
                todo.append({"id": len(todo), "name": name, "params": params, "n": n,
                             "trials": trials, "c": workload.C, "shuffle": mode == "shuffle"})
    workers = [subprocess.Popen([sys.executable, __file__, "--worker", r], cwd=r,
                                env=dict(os.environ, PYTHONPATH=r), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True) for r in roots]

    def ask(k, **cmd):
        workers[k].stdin.write(json.dumps(cmd) + "\n")
        workers[k].stdin.flush()
        line = workers[k].stdout.readline()
        if not line:
            raise RuntimeError(f"the worker of {roots[k]} died")
        return json.loads(line)

    try:
        ready = {c["id"]: [ask(k, op="prepare", **c) for k in range(len(roots))] for c in todo}
        times = {(c["id"], k): [] for c in todo for k in range(len(roots))}
        for rnd in range(spec["rounds"]):
            log(f"[bench] round {rnd + 1} of {spec['rounds']}")
            for c in todo:
                for k in (range(len(roots)) if rnd % 2 == 0 else reversed(range(len(roots)))):
                    if ready[c["id"]][k]["ok"]:
                        times[c["id"], k].append(ask(k, op="time", id=c["id"])["s"])
    finally:
        for w in workers:
            w.stdin.close()
            w.wait()
    labels = [commit(r) for r in roots]
    labels = [f"{x} ({k + 1})" if labels.count(x) > 1 else x for k, x in enumerate(labels)]
    rows = []
    for c in todo:
        for k, root in enumerate(roots):
            samples = times[c["id"], k]
            rows.append({"engine": "simulate", "mechanism": c["name"], "n": c["n"],
                         "trials": c["trials"], "mode": "shuffle" if c["shuffle"] else "fixed",
                         "checkout": root, "commit": labels[k], "times_s": samples,
                         "status": "ok" if samples else "skipped",
                         "reason": ready[c["id"]][k].get("error"),
                         "median_s": machine.median(samples) if samples else None})
    return rows


def commit(root: str) -> str:
    """The checkout's short commit, with ``+dirty`` when its package has uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", "svtjax")
        return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        _worker(sys.argv[2])
    else:
        sys.exit("usage: python benchmarks/kinds.py --worker ROOT (started by the checkouts case)")
