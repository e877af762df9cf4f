"""svtjax._malloc: glibc tuning applied on import, opt-out by environment variable."""

import os
import subprocess
import sys

import pytest

CODE = "import svtjax, svtjax._malloc as m; print(m.state())"


def _state(env_value):
    env = dict(os.environ)
    env.pop("SVTJAX_MALLOC_TUNING", None)
    if env_value is not None:
        env["SVTJAX_MALLOC_TUNING"] = env_value
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc tuning is Linux-only")
def test_import_tunes_the_allocator_unless_opted_out():
    import ctypes.util

    libc = ctypes.util.find_library("c") or ""
    glibc = "musl" not in libc
    assert _state(None) == ("True" if glibc else "False")
    assert _state("0") == "False"
    assert _state("off") == "False"
