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
state = svtjax.tune_allocator() if sys.argv[1] == "tune" else None
print(json.dumps({"after_import": after_import, "calls": calls, "state": state}))
"""


def _probe(mode: str, env_value=None) -> dict:
    import json

    env = subprocess_env()  # the tests' compilation cache: the child loads its one program
    env.pop("SVTJAX_MALLOC_TUNING", None)
    if env_value is not None:
        env["SVTJAX_MALLOC_TUNING"] = env_value
    out = subprocess.run([sys.executable, "-c", PROBE, mode], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc tuning is Linux-only")
def test_import_and_simulate_leave_the_allocator_alone_tune_allocator_tunes():
    import ctypes.util

    glibc = "musl" not in (ctypes.util.find_library("c") or "")
    plain = _probe("none")
    assert plain["calls"] == []  # import svtjax and simulate never call mallopt
    tuned = _probe("tune")
    assert tuned["after_import"] == []
    if glibc:
        assert tuned["state"] is True
        assert len(tuned["calls"]) == 4  # mmap and trim thresholds, top pad, one arena
    opted_out = _probe("tune", "0")
    assert opted_out["calls"] == [] and opted_out["state"] is False
