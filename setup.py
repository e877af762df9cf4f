"""Builds svtjax's optional compiled kernels, XLA FFI handlers for the CPU (``svtjax/_native/``:
``fisher_yates.cc``, ``first_tops.cc``, ``exact.cc``, made a Python module by ``module.cc``).
Everything else is in pyproject.toml.

The extension is compiled against the FFI headers of the jaxlib in the build environment and
records the FFI API version (major, minor) of those headers. XLA keeps older FFI API versions
working (its ``c_api.h``: "XLA runtime guarantees that old API version are supported for at
least 12 months"), so at run time svtjax uses the kernels under any jaxlib whose FFI API has the
same major version and at least the build's minor version, and falls back to the pure-JAX
functions (bit-identical) otherwise, when XLA refuses to register them, or with
``SVTJAX_NATIVE=0`` — saying why once on stderr when a built extension is not used. A machine
without a C++ compiler still installs svtjax (the extension is optional)."""

import os

from setuptools import Extension, setup

SOURCES = ["fisher_yates.cc", "first_tops.cc", "exact.cc", "module.cc"]


def _extensions():
    try:
        import jaxlib
        import jaxlib.version
    except ImportError:  # no jaxlib in the build environment: pure JAX only
        return []
    include = os.path.join(os.path.dirname(jaxlib.__file__), "include")
    if not os.path.exists(os.path.join(include, "xla", "ffi", "api", "ffi.h")):
        return []
    return [Extension(
        "svtjax._native._kernels", [f"svtjax/_native/{name}" for name in SOURCES],
        depends=["svtjax/_native/common.h", "svtjax/_native/threefry.h"],
        language="c++", optional=True,
        define_macros=[("SVTJAX_JAXLIB_VERSION", f'"{jaxlib.version.__version__}"')],
        # the FFI headers as system headers: their own warnings are not ours to fix; ours are
        # on (-Wall -Wextra). -g0: no debug info (a faster install, the same machine code)
        extra_compile_args=["-std=c++17", "-O3", "-Wall", "-Wextra", "-g0", "-isystem",
                            include])]


if __name__ == "__main__":  # how pip and setuptools run it; .ci/native_compat.py imports it
    setup(ext_modules=_extensions())
