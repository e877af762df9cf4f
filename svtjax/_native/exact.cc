// ---------------------------------------------------------------------------------------------
// 3. Poisson-binomial recursions of svtjax.exact's random order.
//
// svtjax.exact._random.random_chunk integrates, at each quadrature node (a value of the threshold
// noise), the law of the number of items that pass, truncated below S states: the forward
// recursion pre_{i+1}[a] = pre_i[a] q_i + pre_i[a - 1] p_i (a < S, pre[-1] = 0) over the items,
// and the backward value recursion V_i[a] = V_{i+1}[a] q_i + V_{i+1}[a + 1] p_i (V[S] = 0) with
// each item's expectation e_i[k] = sum_a pre_i[a] V_{i+1}[k][a] + ks[k] inv_i. XLA's CPU backend
// runs them as a loop of about a dozen small kernels per item, whose dispatch costs more than
// the item's S x G multiply-adds; here one call makes a whole pass. The operations are those of
// the JAX functions, item by item in the same order (the sums over states, and where the
// compiler contracts a multiply-add, may round differently: on the shipped datasets the laws
// moved by at most 1e-15; tests/test_native.py checks 1e-14).
//
// Nodes (columns) are independent, so the calling thread and XLA's intra-op pool take groups of
// kColumns columns in turn; G must be a multiple of kColumns (the caller falls back to the JAX
// functions otherwise), and the backward pass takes K <= 2 cut-offs (the mechanism's and the
// metric's).
//
// svtjax_pb_forward. Operands: pre0 f64[S, G] (the law before the first item), P and Q
// f64[n_pad, G] (each item's pass and fail probability at each node), attribute block (positions
// per checkpoint, dividing n_pad). Results: full f64[S, G] (the law after every item), starts
// f64[n_pad / block, S, G] (the law before each block: the checkpoints of the backward pass).
//
// svtjax_pb_backward. Operands: starts (as above), P, Q, inv f64[n_pad, G] (E[1 / (M_-i + 1)]
// of each item), terminal f64[K, S] (V after the last item), ks f64[K]; attributes block and
// evaluated_from_first (the mechanism has a cut-off: an item is evaluated with probability
// e[0]; otherwise always). Results: out f64[n_pad, 3, G] (per item and node: P(top) = p e_eval,
// P(in the answer set) = p e[K - 1], P(evaluated) = e_eval), V f64[K, S, G] (V before the first
// item, for the tie groups that precede the items).

#include "common.h"

namespace svtjax {
namespace {

constexpr int64_t kColumns = 8;  // nodes per task: one AVX-512 vector of doubles

// The hot loops, on kColumns columns: pointers into [rows, G] operands at a task's first column
// (rows G apart), local state [S, kColumns]. Compiled as vector clones (section 1b).

// `count` forward steps on a [S, 8] law, in place (a descending).
SVTJAX_VECTOR_CLONES
void ForwardSteps(double* __restrict pre, const double* __restrict P,
                  const double* __restrict Q, int64_t G, int64_t count, int64_t S) {
  for (int64_t i = 0; i < count; ++i) {
    const double* p = P + i * G;
    const double* q = Q + i * G;
    for (int64_t a = S - 1; a >= 1; --a)
      for (int64_t g = 0; g < kColumns; ++g)
        pre[a * kColumns + g] = pre[a * kColumns + g] * q[g] + pre[(a - 1) * kColumns + g] * p[g];
    for (int64_t g = 0; g < kColumns; ++g) pre[g] *= q[g];
  }
}

// One block of the backward pass: laws[0] holds the block's checkpoint; the laws before its
// other positions are recomputed (out of place), then its positions are taken last to first.
SVTJAX_VECTOR_CLONES
void BackwardBlock(double* __restrict laws, double* __restrict V, const double* __restrict P,
                   const double* __restrict Q, const double* __restrict inv,
                   double* __restrict out, const double* __restrict ks, int64_t G,
                   int64_t block, int64_t S, int64_t K, bool evaluated_from_first) {
  constexpr int64_t w = kColumns;
  for (int64_t i = 0; i + 1 < block; ++i) {  // laws[i + 1] = step(laws[i], item i)
    const double* cur = laws + i * S * w;
    double* next = laws + (i + 1) * S * w;
    const double* p = P + i * G;
    const double* q = Q + i * G;
    for (int64_t g = 0; g < w; ++g) next[g] = cur[g] * q[g];
    for (int64_t a = 1; a < S; ++a)
      for (int64_t g = 0; g < w; ++g)
        next[a * w + g] = cur[a * w + g] * q[g] + cur[(a - 1) * w + g] * p[g];
  }
  double e[2 * kColumns];
  for (int64_t i = block - 1; i >= 0; --i) {
    const double* p = P + i * G;
    const double* q = Q + i * G;
    const double* iv = inv + i * G;
    const double* pre = laws + i * S * w;
    // e[k] = sum_a pre[a] V[k][a] + ks[k] inv, then V[k][a] = V[k][a] q + V[k][a + 1] p: one
    // pass over the states (a ascending: V[a + 1] is still the old value)
    for (int64_t k = 0; k < K; ++k) {
      double* ek = e + k * w;
      double* Vk = V + k * S * w;
      for (int64_t g = 0; g < w; ++g) ek[g] = 0.0;
      for (int64_t a = 0; a + 1 < S; ++a)
        for (int64_t g = 0; g < w; ++g) {
          const double v = Vk[a * w + g];
          ek[g] += pre[a * w + g] * v;
          Vk[a * w + g] = v * q[g] + Vk[(a + 1) * w + g] * p[g];
        }
      for (int64_t g = 0; g < w; ++g) {
        const double v = Vk[(S - 1) * w + g];
        ek[g] += pre[(S - 1) * w + g] * v;
        Vk[(S - 1) * w + g] = v * q[g];
        ek[g] += ks[k] * iv[g];
      }
    }
    double* row = out + i * 3 * G;
    const double* e_last = e + (K - 1) * w;
    for (int64_t g = 0; g < w; ++g) {
      const double evaluated = evaluated_from_first ? e[g] : 1.0;
      row[g] = p[g] * evaluated;
      row[G + g] = p[g] * e_last[g];
      row[2 * G + g] = evaluated;
    }
  }
}

// prod[t] *= q + p (1 - s_t) over `count` items, renormalised every kRenormalise items.
constexpr int64_t kRenormalise = 8;

SVTJAX_VECTOR_CLONES
void LogProductSteps(double* __restrict prod, int64_t* __restrict expo,
                     const double* __restrict oms, const double* __restrict P,
                     const double* __restrict Q, int64_t G, int64_t count, int64_t T) {
  constexpr int64_t w = kColumns;
  for (int64_t j = 0; j < count; ++j) {
    const double* p = P + j * G;
    const double* q = Q + j * G;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t g = 0; g < w; ++g) prod[t * w + g] *= q[g] + p[g] * oms[t * w + g];
    if ((j + 1) % kRenormalise == 0 || j + 1 == count) {
      for (int64_t k = 0; k < T * w; ++k) {  // the binary exponent into expo, prod into [1, 2)
        uint64_t bits;
        std::memcpy(&bits, prod + k, sizeof bits);
        expo[k] += static_cast<int64_t>((bits >> 52) & 0x7ff) - 1023;
        bits = (bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
        std::memcpy(prod + k, &bits, sizeof bits);
      }
    }
  }
}

SVTJAX_VECTOR_CLONES
void InverseSumSteps(double* __restrict inv, const double* __restrict oms,
                     const double* __restrict A, const double* __restrict P,
                     const double* __restrict Q, int64_t G, int64_t count, int64_t T) {
  constexpr int64_t w = kColumns;
  for (int64_t j = 0; j < count; ++j) {
    const double* p = P + j * G;
    const double* q = Q + j * G;
    double acc[w] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int64_t t = 0; t < T; ++t)
      for (int64_t g = 0; g < w; ++g) acc[g] += A[t * w + g] / (q[g] + p[g] * oms[t * w + g]);
    for (int64_t g = 0; g < w; ++g) inv[j * G + g] = acc[g];
  }
}

// Columns g0 .. g0 + 7 of a [rows, G] matrix into a [rows, 8] one, and back.
void Gather(const double* src, double* dst, int64_t rows, int64_t G, int64_t g0) {
  for (int64_t r = 0; r < rows; ++r)
    std::copy(src + r * G + g0, src + r * G + g0 + kColumns, dst + r * kColumns);
}

void Scatter(const double* src, double* dst, int64_t rows, int64_t G, int64_t g0) {
  for (int64_t r = 0; r < rows; ++r)
    std::copy(src + r * kColumns, src + (r + 1) * kColumns, dst + r * G + g0);
}

// work(g0) for every group of kColumns columns, on the calling thread and XLA's pool.
template <typename F>
void ByColumns(ffi::ThreadPool* pool, int64_t G, const F& work) {
  const int64_t tasks = G / kColumns;
  const int64_t threads = std::max<int64_t>(1, pool->num_threads());
  auto one = [&](int64_t t) { work(t * kColumns); };
  if (tasks == 1) {
    one(0);
  } else {
    ParallelFor(pool, std::min<int64_t>(threads, tasks) - 1, tasks, one);
  }
}

bool IsF64(const ffi::AnyBuffer& b, size_t rank) {
  return b.element_type() == ffi::DataType::F64 && b.dimensions().size() == rank;
}

bool Columns(int64_t G) { return G >= kColumns && G % kColumns == 0; }

ffi::Error PbForwardImpl(ffi::AnyBuffer pre0, ffi::AnyBuffer P, ffi::AnyBuffer Q, int64_t block,
                         ffi::ThreadPool pool, ffi::Result<ffi::AnyBuffer> full,
                         ffi::Result<ffi::AnyBuffer> starts) {
  if (!IsF64(pre0, 2) || !IsF64(P, 2) || !IsF64(Q, 2) || block < 1) {
    return ffi::Error::InvalidArgument("svtjax_pb_forward: unexpected operands");
  }
  const int64_t S = pre0.dimensions()[0], G = pre0.dimensions()[1];
  const int64_t n_pad = P.dimensions()[0];
  if (P.dimensions()[1] != G || Q.dimensions()[0] != n_pad || Q.dimensions()[1] != G ||
      n_pad % block != 0 || S < 1 || !Columns(G)) {
    return ffi::Error::InvalidArgument("svtjax_pb_forward: inconsistent shapes");
  }
  const int64_t nb = n_pad / block;
  const double* p_all = static_cast<const double*>(P.untyped_data());
  const double* q_all = static_cast<const double*>(Q.untyped_data());
  const double* init = static_cast<const double*>(pre0.untyped_data());
  double* out_full = static_cast<double*>(full->untyped_data());
  double* out_starts = static_cast<double*>(starts->untyped_data());
  ByColumns(&pool, G, [&](int64_t g0) {
    std::vector<double> pre(S * kColumns);
    Gather(init, pre.data(), S, G, g0);
    for (int64_t b = 0; b < nb; ++b) {
      Scatter(pre.data(), out_starts + b * S * G, S, G, g0);
      ForwardSteps(pre.data(), p_all + b * block * G + g0, q_all + b * block * G + g0, G, block,
                   S);
    }
    Scatter(pre.data(), out_full, S, G, g0);
  });
  return ffi::Error::Success();
}

ffi::Error PbBackwardImpl(ffi::AnyBuffer starts, ffi::AnyBuffer P, ffi::AnyBuffer Q,
                          ffi::AnyBuffer inv, ffi::AnyBuffer terminal, ffi::AnyBuffer ks,
                          int64_t block, bool evaluated_from_first, ffi::ThreadPool pool,
                          ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> v_out) {
  if (!IsF64(starts, 3) || !IsF64(P, 2) || !IsF64(Q, 2) || !IsF64(inv, 2) ||
      !IsF64(terminal, 2) || !IsF64(ks, 1) || block < 1) {
    return ffi::Error::InvalidArgument("svtjax_pb_backward: unexpected operands");
  }
  const int64_t nb = starts.dimensions()[0], S = starts.dimensions()[1];
  const int64_t G = starts.dimensions()[2], n_pad = P.dimensions()[0];
  const int64_t K = terminal.dimensions()[0];
  if (n_pad != nb * block || P.dimensions()[1] != G || Q.dimensions()[0] != n_pad ||
      Q.dimensions()[1] != G || inv.dimensions()[0] != n_pad || inv.dimensions()[1] != G ||
      terminal.dimensions()[1] != S || ks.dimensions()[0] != K || K < 1 || K > 2 || S < 1 ||
      !Columns(G)) {
    return ffi::Error::InvalidArgument("svtjax_pb_backward: inconsistent shapes");
  }
  const double* st = static_cast<const double*>(starts.untyped_data());
  const double* p_all = static_cast<const double*>(P.untyped_data());
  const double* q_all = static_cast<const double*>(Q.untyped_data());
  const double* inv_all = static_cast<const double*>(inv.untyped_data());
  const double* term = static_cast<const double*>(terminal.untyped_data());
  const double* kk = static_cast<const double*>(ks.untyped_data());
  double* o = static_cast<double*>(out->untyped_data());
  double* v_final = static_cast<double*>(v_out->untyped_data());
  ByColumns(&pool, G, [&](int64_t g0) {
    constexpr int64_t w = kColumns;
    std::vector<double> V(K * S * w), laws(block * S * w);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t a = 0; a < S; ++a)
        for (int64_t g = 0; g < w; ++g) V[(k * S + a) * w + g] = term[k * S + a];
    for (int64_t b = nb - 1; b >= 0; --b) {
      const int64_t first = b * block;
      Gather(st + b * S * G, laws.data(), S, G, g0);
      BackwardBlock(laws.data(), V.data(), p_all + first * G + g0, q_all + first * G + g0,
                    inv_all + first * G + g0, o + first * 3 * G + g0, kk, G, block, S, K,
                    evaluated_from_first);
    }
    for (int64_t k = 0; k < K; ++k) Scatter(V.data() + k * S * w, v_final + k * S * G, S, G, g0);
  });
  return ffi::Error::Success();
}

// svtjax_log_products and svtjax_inverse_sums: E[1 / (M_-i + 1)] = sum_t A_t / (1 - p_i s_t)
// of svtjax.exact._inverse.inverse_means, at T inner-integral nodes s_t per quadrature node.
//
// svtjax_log_products. Operands: P, Q f64[n_pad, G], oms f64[T, G] (1 - s_t). Result: logF
// f64[T, G] = sum_j log(q_j + p_j (1 - s_t)) = log prod_j (1 - p_j s_t). The JAX function sums
// one logarithm per 8 factors (each factor is at least 3e-18, so a product of 8 never
// underflows); here the running product is renormalised every 8 factors instead (its binary
// exponent moved to an integer count), and one logarithm per (t, node) ends the pass: the same
// product, rounded once per factor, without the logarithms' own rounding.
//
// svtjax_inverse_sums. Operands: P, Q f64[n_pad, G], oms f64[T, G], A f64[T, G]. Result: inv
// f64[n_pad, G] = sum_t A_t / (q_j + p_j (1 - s_t)), t ascending.

ffi::Error LogProductsImpl(ffi::AnyBuffer P, ffi::AnyBuffer Q, ffi::AnyBuffer oms,
                           ffi::ThreadPool pool, ffi::Result<ffi::AnyBuffer> log_f) {
  if (!IsF64(P, 2) || !IsF64(Q, 2) || !IsF64(oms, 2) ||
      P.dimensions()[1] != oms.dimensions()[1] || Q.dimensions()[0] != P.dimensions()[0] ||
      Q.dimensions()[1] != P.dimensions()[1] || !Columns(P.dimensions()[1])) {
    return ffi::Error::InvalidArgument("svtjax_log_products: unexpected operands");
  }
  const int64_t n = P.dimensions()[0], G = P.dimensions()[1], T = oms.dimensions()[0];
  const double* p_all = static_cast<const double*>(P.untyped_data());
  const double* q_all = static_cast<const double*>(Q.untyped_data());
  const double* om = static_cast<const double*>(oms.untyped_data());
  double* out = static_cast<double*>(log_f->untyped_data());
  ByColumns(&pool, G, [&](int64_t g0) {
    std::vector<double> o(T * kColumns), prod(T * kColumns, 1.0);
    std::vector<int64_t> expo(T * kColumns, 0);
    Gather(om, o.data(), T, G, g0);
    LogProductSteps(prod.data(), expo.data(), o.data(), p_all + g0, q_all + g0, G, n, T);
    const double ln2 = 0.69314718055994530942;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t g = 0; g < kColumns; ++g) {
        const int64_t k = t * kColumns + g;
        out[t * G + g0 + g] = std::log(prod[k]) + static_cast<double>(expo[k]) * ln2;
      }
  });
  return ffi::Error::Success();
}

ffi::Error InverseSumsImpl(ffi::AnyBuffer P, ffi::AnyBuffer Q, ffi::AnyBuffer oms,
                           ffi::AnyBuffer A, ffi::ThreadPool pool,
                           ffi::Result<ffi::AnyBuffer> inv) {
  if (!IsF64(P, 2) || !IsF64(Q, 2) || !IsF64(oms, 2) || !IsF64(A, 2) ||
      P.dimensions()[1] != oms.dimensions()[1] || Q.dimensions()[0] != P.dimensions()[0] ||
      Q.dimensions()[1] != P.dimensions()[1] || A.dimensions()[0] != oms.dimensions()[0] ||
      A.dimensions()[1] != oms.dimensions()[1] || !Columns(P.dimensions()[1])) {
    return ffi::Error::InvalidArgument("svtjax_inverse_sums: unexpected operands");
  }
  const int64_t n = P.dimensions()[0], G = P.dimensions()[1], T = oms.dimensions()[0];
  const double* p_all = static_cast<const double*>(P.untyped_data());
  const double* q_all = static_cast<const double*>(Q.untyped_data());
  const double* om = static_cast<const double*>(oms.untyped_data());
  const double* a_all = static_cast<const double*>(A.untyped_data());
  double* out = static_cast<double*>(inv->untyped_data());
  ByColumns(&pool, G, [&](int64_t g0) {
    std::vector<double> o(T * kColumns), a(T * kColumns);
    Gather(om, o.data(), T, G, g0);
    Gather(a_all, a.data(), T, G, g0);
    InverseSumSteps(out + g0, o.data(), a.data(), p_all + g0, q_all + g0, G, n, T);
  });
  return ffi::Error::Success();
}

}  // namespace
}  // namespace svtjax

using svtjax::InverseSumsImpl;
using svtjax::LogProductsImpl;
using svtjax::PbBackwardImpl;
using svtjax::PbForwardImpl;
namespace ffi = xla::ffi;

XLA_FFI_DEFINE_HANDLER_SYMBOL(SvtjaxPbForward, PbForwardImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Attr<int64_t>("block")
                                  .Ctx<ffi::ThreadPool>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SvtjaxPbBackward, PbBackwardImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Attr<int64_t>("block")
                                  .Attr<bool>("evaluated_from_first")
                                  .Ctx<ffi::ThreadPool>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SvtjaxLogProducts, LogProductsImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ctx<ffi::ThreadPool>()
                                  .Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SvtjaxInverseSums, InverseSumsImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ctx<ffi::ThreadPool>()
                                  .Ret<ffi::AnyBuffer>());
