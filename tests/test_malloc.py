"""svtjax._malloc: ``import svtjax`` leaves the process's allocator alone; the tuning is the
explicit ``svtjax.tune_allocator()`` (and an environment variable opts out of it)."""

import subprocess
import sys

import pytest

from tests.conftest import subprocess_env

# Every mallopt call of the child process is recorded: ctypes.CDLL is wrapped before svtjax (and
# jax) are imported, so no library can reach glibc's mallopt around the record.
PROBE = """
import ctypes, json, sys
calls = []
class Libc:
    def __init__(self, *args, **kwargs):
        self._lib = ctypes.CDLL.__real__(*args, **kwargs)
    def __getattr__(self, name):
        attr = getattr(self._lib, name)
        if name != "mallopt":
            return attr
        class Mallopt:
            argtypes = restype = None
            def __call__(self, *args):
                calls.append(list(args))
                return attr(*args)
        return Mallopt()
real = ctypes.CDLL
ctypes.CDLL = Libc
ctypes.CDLL.__real__ = real
import numpy as np
import svtjax
mech = svtjax.get("svt-s", epsilon=1.0, c=2)
svtjax.simulate(mech, np.arange(10.0), 4.5, trials=20)
after_import = list(calls)
import os
from svtjax import _malloc
os.environ["SVTJAX_MALLOC_TUNING"] = "0"
opted_out = svtjax.tune_allocator()
after_opt_out = list(calls)
_malloc._STATE = None  # as in a fresh process, without the opt-out
del os.environ["SVTJAX_MALLOC_TUNING"]
tuned = svtjax.tune_allocator()
after_tune = list(calls)
again = svtjax.tune_allocator()
print(json.dumps({"after_import": after_import, "opted_out": opted_out,
                  "after_opt_out": after_opt_out, "tuned": tuned, "after_tune": after_tune,
                  "again": again, "calls": calls}))
"""


def _probe() -> dict:
    import json

    env = subprocess_env()  # the tests' compilation cache: the child loads its one program
    env.pop("SVTJAX_MALLOC_TUNING", None)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc tuning is Linux-only")
def test_import_and_simulate_leave_the_allocator_alone_tune_allocator_tunes():
    """One child process: ``import svtjax`` and a simulation call no mallopt; with
    ``SVTJAX_MALLOC_TUNING=0`` ``tune_allocator()`` calls none and says False; without it (the
    once-per-process state reset, as a fresh process has it) it makes the four calls and says
    True, and a second call makes none. The opt-out is set in ``os.environ`` before the call,
    which is where ``tune_allocator`` reads it, as it does a variable set at the process's
    start."""
    import ctypes.util

    glibc = "musl" not in (ctypes.util.find_library("c") or "")
    probe = _probe()
    assert probe["after_import"] == []  # import svtjax and simulate never call mallopt
    assert probe["opted_out"] is False and probe["after_opt_out"] == []
    if glibc:
        assert probe["tuned"] is True and probe["again"] is True
        assert len(probe["after_tune"]) == 4  # mmap and trim thresholds, top pad, one arena
        assert probe["calls"] == probe["after_tune"]  # once per process
