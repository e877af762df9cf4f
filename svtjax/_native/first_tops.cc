// ---------------------------------------------------------------------------------------------
// 2. First tops.
//
// Row by row, the loop of svtjax._core._first_tops_blocks: blocks of `width` positions (the last
// one starting at L - width, its slots before b * width already read), from the first block on
// until the row stops: with to_halt at its first -1 (counting every ⊤ before it), otherwise once
// `limit` ⊤ have been counted. Whole blocks are counted, as there: count is the number of ⊤ in
// the blocks read (it may pass limit), evaluated the positions with an answer >= 0 in them (with
// to_halt, up to the first -1). picks[i] is the item of the (i + 1)-th ⊤ for i < min(k, limit),
// -1 where there is none; the item at position p is items[p], or p mod n without items.
//
// Operands (leading dimensions G, from vmap, are independent problems):
//   answers int8[G, R, L]; items int16/int32[G, R, L] (read only with has_items); limit int32[G]
// Results: picks int32[G, R, k], count int32[G, R], evaluated int32[G, R].

#include "common.h"

namespace svtjax {
namespace {

// Set bits of a 16-bit mask (a table: the portable x86-64 baseline has no popcount
// instruction, and __builtin_popcount would be a library call).
inline int Count16(uint32_t mask) {
  static const auto kTable = [] {
    std::array<uint8_t, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = static_cast<uint8_t>((i & 1) + t[i >> 1]);
    return t;
  }();
  return kTable[mask & 0xFF] + kTable[(mask >> 8) & 0xFF];
}

// Reads positions [lo, hi) of one row: counts the ⊤ (into count, recording the item of each
// while count < wanted) and the answers >= 0 (into evaluated); with to_halt only up to the first
// -1, returning true when there is one. 16 positions at a time where SSE2 is available (the
// answers are bytes: one compare and one movemask give a mask of each kind).
template <typename I>
bool ReadRange(const int8_t* row, const I* items, int64_t lo, int64_t hi, int64_t n,
               int64_t wanted, bool to_halt, int32_t* out, int64_t& count, int64_t& evaluated) {
  auto record = [&](uint32_t tops, int64_t at) {
    while (tops != 0 && count < wanted) {
      const int64_t q = at + __builtin_ctz(tops);
      out[count++] = items != nullptr ? static_cast<int32_t>(items[q])
                                      : static_cast<int32_t>(q % n);
      tops &= tops - 1;
    }
    count += Count16(tops);
  };
  int64_t q = lo;
#ifdef __SSE2__
  const __m128i one = _mm_set1_epi8(1);
  for (; q + 16 <= hi; q += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + q));
    uint32_t neg = static_cast<uint32_t>(_mm_movemask_epi8(v));
    uint32_t tops = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, one)));
    if (to_halt && neg != 0) {
      const int first = __builtin_ctz(neg);
      record(tops & ((1u << first) - 1u), q);
      evaluated += first;
      return true;
    }
    evaluated += 16 - Count16(neg);
    record(tops, q);
  }
#endif
  for (; q < hi; ++q) {
    const int8_t a = row[q];
    if (a < 0) {
      if (to_halt) return true;
      continue;
    }
    ++evaluated;
    if (a == 1) record(1u, q);
  }
  return false;
}

// Rows prefetched this many rows ahead, their first kAheadBytes positions.
constexpr int64_t kRowsAhead = 8;
constexpr int64_t kAheadBytes = 256;

template <typename I>
void FirstTopsRows(const int8_t* answers, const I* items, int32_t limit, int64_t lo, int64_t hi,
                   int64_t length, int64_t width, int64_t k, int64_t n, bool to_halt,
                   int32_t* picks, int32_t* count_out, int32_t* evaluated_out) {
  const int64_t blocks = (length + width - 1) / width;
  const int64_t wanted = std::min<int64_t>(k, limit);
  for (int64_t r = lo; r < hi; ++r) {
    if (r + kRowsAhead < hi) {  // a later row's first positions, for reading (rows are far
      // apart and a top-c trial reads only its first few hundred positions: every row's
      // first read would wait for memory)
      const char* a = reinterpret_cast<const char*>(answers + (r + kRowsAhead) * length);
      for (int64_t byte = 0; byte < std::min<int64_t>(length, kAheadBytes); byte += 64) {
        __builtin_prefetch(a + byte, 0);
      }
      if (items != nullptr) {
        const char* it = reinterpret_cast<const char*>(items + (r + kRowsAhead) * length);
        const int64_t bytes = std::min<int64_t>(length, kAheadBytes) * sizeof(I);
        for (int64_t byte = 0; byte < bytes; byte += 64) __builtin_prefetch(it + byte, 0);
      }
    }
    int32_t* out = picks + r * k;
    std::fill(out, out + k, -1);
    int64_t count = 0, evaluated = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t base = std::min<int64_t>(b * width, length - width);
      // the block's fresh positions: b * width .. base + width - 1
      const bool halted = ReadRange<I>(answers + r * length,
                                       items == nullptr ? nullptr : items + r * length,
                                       b * width, base + width, n, wanted, to_halt, out, count,
                                       evaluated);
      if (to_halt ? halted : count >= limit) break;
    }
    count_out[r] = static_cast<int32_t>(count);
    evaluated_out[r] = static_cast<int32_t>(evaluated);
  }
}

// Rows per task before the rows are split among threads (a row reads a few hundred bytes).
constexpr int64_t kRowsPerTask = 1 << 11;

template <typename I>
void FirstTopsRun(ffi::AnyBuffer answers, ffi::AnyBuffer items, ffi::AnyBuffer limit, int64_t k,
                  int64_t n, int64_t width, bool to_halt, bool has_items, ffi::ThreadPool* pool,
                  ffi::Result<ffi::AnyBuffer> picks, ffi::Result<ffi::AnyBuffer> count,
                  ffi::Result<ffi::AnyBuffer> evaluated) {
  auto dims = answers.dimensions();
  const int64_t rank = dims.size();
  const int64_t rows = dims[rank - 2], length = dims[rank - 1];
  int64_t groups = 1;
  for (int64_t d = 0; d < rank - 2; ++d) groups *= dims[d];
  const int8_t* a = static_cast<const int8_t*>(answers.untyped_data());
  const I* it = static_cast<const I*>(items.untyped_data());
  const int32_t* lim = static_cast<const int32_t*>(limit.untyped_data());
  int32_t* p = static_cast<int32_t*>(picks->untyped_data());
  int32_t* c = static_cast<int32_t*>(count->untyped_data());
  int32_t* e = static_cast<int32_t*>(evaluated->untyped_data());
  const int64_t threads = std::max<int64_t>(1, pool->num_threads());
  for (int64_t g = 0; g < groups; ++g) {
    auto rows_of = [&](int64_t lo, int64_t hi) {
      FirstTopsRows<I>(a + g * rows * length, has_items ? it + g * rows * length : nullptr,
                       lim[g], lo, hi, length, width, k, n, to_halt, p + g * rows * k,
                       c + g * rows, e + g * rows);
    };
    const int64_t tasks =
        std::max<int64_t>(1, std::min<int64_t>(threads * 4, rows / kRowsPerTask));
    if (tasks == 1) {
      rows_of(0, rows);
    } else {
      ParallelFor(pool, threads - 1, tasks,
                  [&](int64_t t) { rows_of(rows * t / tasks, rows * (t + 1) / tasks); });
    }
  }
}

ffi::Error FirstTopsImpl(ffi::AnyBuffer answers, ffi::AnyBuffer items, ffi::AnyBuffer limit,
                         int64_t k, int64_t n, int64_t width, bool to_halt, bool has_items,
                         ffi::ThreadPool pool, ffi::Result<ffi::AnyBuffer> picks,
                         ffi::Result<ffi::AnyBuffer> count,
                         ffi::Result<ffi::AnyBuffer> evaluated) {
  const auto rank = answers.dimensions().size();
  const int64_t length = rank >= 2 ? answers.dimensions()[rank - 1] : 0;
  if (rank < 2 || answers.element_type() != ffi::DataType::S8 ||
      limit.element_type() != ffi::DataType::S32 || limit.dimensions().size() != rank - 2 ||
      k < 1 || n < 1 || width < 1 || width > length ||
      (has_items && items.dimensions().size() != rank)) {
    return ffi::Error::InvalidArgument("svtjax_first_tops: unexpected operands or attributes");
  }
  if (!has_items) {
    FirstTopsRun<int8_t>(answers, items, limit, k, n, width, to_halt, false, &pool, picks, count,
                         evaluated);
    return ffi::Error::Success();
  }
  switch (items.element_type()) {
    case ffi::DataType::S16:
      FirstTopsRun<int16_t>(answers, items, limit, k, n, width, to_halt, true, &pool, picks,
                            count, evaluated);
      return ffi::Error::Success();
    case ffi::DataType::S32:
      FirstTopsRun<int32_t>(answers, items, limit, k, n, width, to_halt, true, &pool, picks,
                            count, evaluated);
      return ffi::Error::Success();
    default:
      return ffi::Error::InvalidArgument("svtjax_first_tops: items must be int16 or int32");
  }
}

}  // namespace
}  // namespace svtjax

using svtjax::FirstTopsImpl;
namespace ffi = xla::ffi;

XLA_FFI_DEFINE_HANDLER_SYMBOL(SvtjaxFirstTops, FirstTopsImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Attr<int64_t>("k")
                                  .Attr<int64_t>("n")
                                  .Attr<int64_t>("width")
                                  .Attr<bool>("to_halt")
                                  .Attr<bool>("has_items")
                                  .Ctx<ffi::ThreadPool>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());

