"""Helpers for the command-line tests: run ``svtjax.cli.main`` in this process, with the
compiled chunk replaced by a stand-in when a test is about the command line, not the kernels."""

import contextlib
import importlib
import io

import numpy as np


def stand_in_chunk(mech, queries, thresholds, root, start, trials, reduce=None, extra=None, *,
                   plan):
    """What ``svtjax._driver.run_chunk`` returns to a sweep (per-trial metric values, all 0.5),
    without tracing or compiling anything."""
    del mech, queries, thresholds, root, start, trials, extra
    assert plan.mode == "values"
    metrics = reduce.func.args[1]  # svtjax.sweep.reduce._reducer_fn(k, metrics, own, rule)
    shape = ((len(metrics), plan.chunk) if plan.points == 0
             else (plan.points, len(metrics), plan.chunk))
    return np.full(shape, 0.5)


@contextlib.contextmanager
def no_kernels(monkeypatch):
    """Within the block, sweeps (and ``svtjax simulate``) run on :func:`stand_in_chunk`."""
    monkeypatch.setenv("SVTJAX_NO_CACHE", "1")
    monkeypatch.setattr(importlib.import_module("svtjax._driver"), "run_chunk", stand_in_chunk)
    yield


def run_cli(argv):
    """``(exit status, stdout, stderr)`` of ``svtjax.cli.main(argv)`` in this process."""
    from svtjax import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()
