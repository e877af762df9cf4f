"""Builds svtjax's optional compiled kernels, XLA FFI handlers for the CPU
(``svtjax/_native/kernels.cc``: the lazy Fisher–Yates block and the first ⊤ of Outcome rows).
Everything else is in pyproject.toml.

The extension is compiled against the FFI headers of the jaxlib in the build environment and
records that jaxlib's version; at run time svtjax uses it only under the same jaxlib, and falls
back to the pure-JAX functions (bit-identical) when it is missing, when the versions differ, or
with ``SVTJAX_NATIVE=0``. A machine without a C++ compiler still installs svtjax (the extension is
optional)."""

import os

from setuptools import Extension, setup


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
        "svtjax._native._kernels", ["svtjax/_native/kernels.cc"],
        include_dirs=[include], language="c++", optional=True,
        define_macros=[("SVTJAX_JAXLIB_VERSION", f'"{jaxlib.version.__version__}"')],
        # -g0: no debug info (~1.5 s less of the install, the same machine code)
        extra_compile_args=["-std=c++17", "-O3", "-w", "-g0"])]


setup(ext_modules=_extensions())
