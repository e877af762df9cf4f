"""Checks that one build of svtjax's compiled kernels serves other jaxlib versions.

For each jaxlib wheel given (any version, downloaded beforehand, e.g. ``pip download
jaxlib==0.6.2 --no-deps -d wheels/``), the kernels (``svtjax/_native/*.cc``) are compiled with
``setup.py``'s flags against that wheel's XLA FFI headers into a copy of the package, and
``tests/test_native.py`` (the kernels against the pure-JAX functions, bit for bit where they
are bit-identical) runs on that copy under the jaxlib installed here. With no wheel, the
installed jaxlib's own headers are used. Writes a JSON record (one entry per build: the
headers' jaxlib and FFI API version, the runtime's, svtjax's native status, the tests' summary).

    python .ci/native_compat.py wheels/jaxlib-0.6.2-*.whl --out native-compat.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import setup as build_spec  # noqa: E402  (the repository's setup.py: sources and flags)


def _headers(wheel: str | None, into: pathlib.Path) -> tuple[pathlib.Path, str]:
    if wheel is None:
        import jaxlib
        import jaxlib.version

        return pathlib.Path(jaxlib.__file__).parent / "include", jaxlib.version.__version__
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.startswith("jaxlib/include/xla/ffi/")]
        z.extractall(into, names)
    return into / "jaxlib" / "include", pathlib.Path(wheel).name.split("-")[1]


def _compile(include: pathlib.Path, version: str, package: pathlib.Path) -> None:
    native = package / "_native"
    for old in native.glob("_kernels*.so"):
        old.unlink()
    out = native / ("_kernels" + sysconfig.get_config_var("EXT_SUFFIX"))
    ext = build_spec._extensions()[0]
    flags = [f for f in ext.extra_compile_args if f not in ("-isystem", ext.extra_compile_args[
        ext.extra_compile_args.index("-isystem") + 1])]
    cmd = (["c++", "-shared", "-fPIC", *flags, "-isystem", str(include),
            f"-I{sysconfig.get_paths()['include']}",
            f'-DSVTJAX_JAXLIB_VERSION="{version}"', "-o", str(out)]
           + [str(ROOT / s) for s in ext.sources])
    subprocess.run(cmd, check=True)


# Runs Python code on the copy: an editable install's import hook (a meta path finder) would
# otherwise find the checkout's package first.
_ON_COPY = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
            "type(f).__module__.lower()]; sys.path.insert(0, {copy!r}); ")


def _check(copy: pathlib.Path) -> dict:
    env_code = (_ON_COPY.format(copy=str(copy)) +
                "import svtjax, jaxlib.version; from svtjax import _native; "
                "print(svtjax.__file__); print(jaxlib.version.__version__); "
                "print(_native.runtime_api()); print(_native.status())")
    env = {"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"}
    info = subprocess.run([sys.executable, "-c", env_code], env=env, capture_output=True,
                          text=True, check=True).stdout.splitlines()
    assert info[0].startswith(str(copy)), f"imported {info[0]}, not the copy"
    run_tests = (_ON_COPY.format(copy=str(copy)) + "import pytest; sys.exit(pytest.main(["
                 "'tests/test_native.py', '-q', '-p', 'no:cacheprovider', '-x']))")
    tests = subprocess.run([sys.executable, "-c", run_tests], env=env, cwd=copy,
                           capture_output=True, text=True)
    last = tests.stdout.strip().splitlines()[-1] if tests.stdout.strip() else tests.stderr[-500:]
    return {"runtime_jaxlib": info[1], "runtime_ffi_api": info[2], "status": info[3],
            "tests": last, "tests_passed": tests.returncode == 0}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="*", help="jaxlib wheels whose FFI headers to build with")
    parser.add_argument("--out", required=True, help="the JSON record to write")
    args = parser.parse_args(argv)
    records = []
    for wheel in args.wheels or [None]:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            include, version = _headers(wheel, tmp / "headers")
            copy = tmp / "copy"
            shutil.copytree(ROOT / "svtjax", copy / "svtjax",
                            ignore=shutil.ignore_patterns("__pycache__", "*.so"))
            shutil.copytree(ROOT / "tests", copy / "tests",
                            ignore=shutil.ignore_patterns("__pycache__"))
            _compile(include, version, copy / "svtjax")
            api = open(include / "xla" / "ffi" / "api" / "c_api.h").read()
            from svtjax._native import _api_of

            entry = {"built_with_jaxlib": version, "built_ffi_api": list(_api_of(api)),
                     **_check(copy)}
            print(json.dumps(entry))
            records.append(entry)
    pathlib.Path(args.out).write_text(json.dumps({"builds": records}, indent=1) + "\n")
    return 0 if all(r["tests_passed"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
