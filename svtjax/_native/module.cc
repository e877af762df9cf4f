// svtjax's compiled CPU kernels, as XLA FFI handlers: each computes what a pure-JAX function of
// the package computes (1 and 2 bit-identical results, 3 the same operations to rounding), in
// one call instead of a loop of small XLA kernels whose dispatch costs more than the work.
//
// 1. fisher_yates.cc: svtjax_fisher_yates, one block of the engine's lazy Fisher-Yates shuffle,
//    and svtjax_fisher_yates_prefix, its first positions for every trial at once (the engine's
//    shuffle module, svtjax.engine); the random bits as JAX draws them (threefry.h).
// 2. first_tops.cc: svtjax_first_tops, the first ⊤ of every row of an Outcome batch, read block
//    by block only as far as needed (svtjax._core._first_tops_blocks: svtjax.selected and the
//    metrics of shuffled Outcomes).
// 3. exact.cc: svtjax_pb_forward, svtjax_pb_backward, svtjax_log_products and
//    svtjax_inverse_sums, the Poisson-binomial recursions and inner integral of svtjax.exact's
//    random order, to rounding (not bit-identical: see exact.cc).
// common.h holds what they share (headers, vector clones, the thread-pool loop).
//
// This file: the Python module svtjax._native._kernels, whose functions return the handlers as
// capsules for jax.ffi.register_ffi_target, and the versions of the build.

#include <Python.h>

#include "xla/ffi/api/c_api.h"

extern "C" {
XLA_FFI_Error* SvtjaxFisherYates(XLA_FFI_CallFrame* call_frame);
XLA_FFI_Error* SvtjaxFisherYatesPrefix(XLA_FFI_CallFrame* call_frame);
XLA_FFI_Error* SvtjaxFirstTops(XLA_FFI_CallFrame* call_frame);
XLA_FFI_Error* SvtjaxPbForward(XLA_FFI_CallFrame* call_frame);
XLA_FFI_Error* SvtjaxPbBackward(XLA_FFI_CallFrame* call_frame);
XLA_FFI_Error* SvtjaxLogProducts(XLA_FFI_CallFrame* call_frame);
XLA_FFI_Error* SvtjaxInverseSums(XLA_FFI_CallFrame* call_frame);
}

// The Python module: each function returns a handler as a capsule for
// jax.ffi.register_ffi_target.
template <XLA_FFI_Error* (*H)(XLA_FFI_CallFrame*)>
PyObject* Handler(PyObject*, PyObject*) {
  return PyCapsule_New(reinterpret_cast<void*>(H), nullptr, nullptr);
}

static PyMethodDef kMethods[] = {
    {"fisher_yates", Handler<SvtjaxFisherYates>, METH_NOARGS,
     "The XLA FFI handler of one Fisher-Yates block (CPU)."},
    {"fisher_yates_prefix", Handler<SvtjaxFisherYatesPrefix>, METH_NOARGS,
     "The XLA FFI handler of the first positions of every trial's Fisher-Yates shuffle (CPU)."},
    {"first_tops", Handler<SvtjaxFirstTops>, METH_NOARGS,
     "The XLA FFI handler of the first tops of an Outcome batch (CPU)."},
    {"pb_forward", Handler<SvtjaxPbForward>, METH_NOARGS,
     "The XLA FFI handler of svtjax.exact's random-order forward recursion (CPU)."},
    {"pb_backward", Handler<SvtjaxPbBackward>, METH_NOARGS,
     "The XLA FFI handler of svtjax.exact's random-order backward recursion (CPU)."},
    {"log_products", Handler<SvtjaxLogProducts>, METH_NOARGS,
     "The XLA FFI handler of svtjax.exact's inner-integral log products (CPU)."},
    {"inverse_sums", Handler<SvtjaxInverseSums>, METH_NOARGS,
     "The XLA FFI handler of svtjax.exact's inner-integral sums E[1/(M+1)] (CPU)."},
    {nullptr, nullptr, 0, nullptr}};

static PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_kernels", nullptr, -1, kMethods,
                              nullptr, nullptr, nullptr, nullptr};

#ifndef SVTJAX_JAXLIB_VERSION
#define SVTJAX_JAXLIB_VERSION "unknown"
#endif

PyMODINIT_FUNC PyInit__kernels(void) {
  PyObject* module = PyModule_Create(&kModule);
  // The FFI API version of the headers this was compiled against (svtjax uses the handlers
  // under a jaxlib whose API has the same major and at least this minor version), and the
  // jaxlib that provided them (reported only).
  if (module != nullptr &&
      (PyModule_AddStringConstant(module, "jaxlib_version", SVTJAX_JAXLIB_VERSION) < 0 ||
       PyModule_AddIntConstant(module, "ffi_api_major", XLA_FFI_API_MAJOR) < 0 ||
       PyModule_AddIntConstant(module, "ffi_api_minor", XLA_FFI_API_MINOR) < 0)) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
