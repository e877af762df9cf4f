// ---------------------------------------------------------------------------------------------
// 1. Fisher-Yates block.
//
// The same swaps as svtjax.engine.shuffle.fisher_yates_block, in the same order, on the same
// state (so the results are bit-identical): XLA's CPU backend runs that block as a while loop of
// about six small kernels per position, whose dispatch costs more than the swaps themselves; here
// a block is one call. Durstenfeld's shuffle (Knuth, TAOCP Vol. 2, Algorithm 3.4.2P), drawn
// lazily: step p swaps perm[p] and perm[j_p], j_p uniform on [p, n). The write to perm[j_p] is
// deferred to the next step (the state carries it as (j, a)). With the attribute write_items,
// perm[p] (never read again when every partner lies at or after its position, as the engine
// draws them) is set to the item drawn at p, so that the row's first positions are the trial's
// order so far: the engine then reads a trial's items from its row once it has halted, rather
// than writing them to a buffer of its own block by block (the pure-JAX block does not write
// perm[p]; from position `start` on the two agree). Without it, the swaps are the pure-JAX
// block's for any partners (hand-made Draws).
//
// The permutations are stored one trial per row, perm[s, position], and a batch row b (after the
// engine's compaction has dropped halted trials) reads its permutation through slot[b]: the
// compaction never copies a permutation, and one trial's swaps stay within its own row.
//
// Rows are independent, so a large block (at least 2 x 2^12 swaps) is split into contiguous
// ranges of rows that the calling thread and XLA's intra-op thread pool (the FFI's ThreadPool
// context) take in turn; each row's swaps are the same whichever thread runs them, so the
// results do not depend on the number of threads.
//
// Operands (leading dimensions G, from vmap, are independent problems):
//   perm  int16/int32[G, S, n_pad]  the permutations (aliased to result 0)
//   slot  int32[G, batch]           row of perm of each batch row
//   j     int32[G, batch]           the pending write's position
//   a     int16/int32[G, batch]     the pending write's value
//   order int32[G, batch, W]        swap partners of positions start .. start + W - 1 (any
//                                   last dimension with draw)
//   start int32[G]                  the block's first position
//   done  pred[G, batch]            rows that have halted: skipped (items 0, no swap, a kept);
//                                   their evaluated prefix lies before `start`, which no later
//                                   swap of theirs can reach
//   keys  uint32[G, S, 2]           with draw: each permutation row's raw "order" key
// Attributes: write_items (above); made, the positions the prefix kernel (1b) made already: a
// block before it (start + W <= made) only reads its items from the rows (order not read, a
// kept), so that the engine's loop needs no conditional around this call (one would copy the
// rows at every block); draw: the partners are not given (order not read) but drawn here from
// keys, as the prefix kernel draws them (DrawPartners; W a multiple of 64), so that the
// engine's loop computes none (in XLA, a conditional, a hash and Lemire's redraw loop per
// block and compaction level).
// Results: perm (positions start .. start + W - 1 now hold their items), items int32[G, batch, W]
// (the item at each position; W is read from it), a (the new pending value), j int32[G, batch]
// (the new pending position: the last partner where the row swapped, else its j).
// Positions outside [0, n_pad) are never written and read as 0, as the JAX version does. A row
// may be shorter than the blocks reach (the engine keeps rows of the stream's length, so that
// they are the Outcome's items without a copy): the last block's positions past the row then
// store no item (their partners are themselves, past the row too).

//
// ---------------------------------------------------------------------------------------------
// 1b. Fisher-Yates prefix.
//
// The first `prefix` positions of every trial's lazy shuffle at once, trial by trial: exactly
// what the engine's blocks 0 .. prefix / 64 - 1 would do (the kernel above with write_items,
// starting from the identity), with the swap partners drawn here, the same numbers as
// svtjax.engine.draws.fast_block_order: the Threefry-2x32 hash of JAX (Salmon et al.,
// SC 2011, JAX's key schedule, fold_in and partitionable bits), Lemire's multiply-and-reject
// method on each position's word, a rejected word redrawn from fold_in(block key, r).
//
// Why: block by block, a batch's permutations (20 MB at n = 10^4 x 1,000 trials) are far
// larger than the caches and nearly every swap misses. Here one trial's row is written (the
// identity), shuffled while it sits in the first-level caches, and left behind; the blocks of
// the engine's loop then read a prefix position's item from the row (no draw, no swap). The
// cost: the partners and swaps of positions a trial never reaches (it may halt earlier), which
// are cheap here, and never change a result (a position past a trial's halt is not read).
//
// Operands: keys uint32[G, B, 2] (each trial's "order" stream key, raw Threefry key data).
// Attributes: prefix (positions, a multiple of 64, at most the row length).
// Results: perm int16/int32[G, B, n] (rows: positions < prefix hold their items, the rest the
// permutation's state), j int32[G, B] and a int16/int32[G, B] (the pending write, as the block
// kernel leaves it after position prefix - 1).


#include "common.h"
#include "threefry.h"

namespace svtjax {
namespace {

// Swap partners prefetched this many steps ahead. A partner lies anywhere in the row, and a
// batch's rows (20 MB at n = 10^4 x 1,000 trials) are far larger than the caches, so nearly
// every swap misses; the loop's own dependences let the processor overlap only a few misses,
// and the prefetches keep more in flight. 8 was the best of the distances 4, 8, 12 and 16 in
// interleaved A/Bs (12 and 16 no better), and faster than no prefetch shuffled at n = 10^4; at
// n = 10^3, whose rows are 10x shorter, the A/Bs saw no change beyond the noise (the numbers:
// benchmarks/RESULTS.md, Decisions).
constexpr int64_t kPrefetch = 8;

// One batch row's block: the swaps of positions start .. start + width - 1 of its permutation
// row, the item at each position into out, the pending value returned.
template <typename T>
T Row(T* row, const int32_t* partner, int64_t jp, T a, int32_t start, int32_t* out,
      int64_t n_pad, int64_t width, bool write_items) {
  auto prefetch = [&](int64_t k) {
    const int64_t q = partner[k];
    if (q >= 0 && q < n_pad) __builtin_prefetch(row + q, 1);  // for writing
  };
  for (int64_t k = 0; k < std::min(kPrefetch, width); ++k) prefetch(k);
  for (int64_t k = 0; k < width; ++k) {
    if (k + kPrefetch < width) prefetch(k + kPrefetch);
    if (jp >= 0 && jp < n_pad) row[jp] = a;  // the previous step's deferred write
    jp = partner[k];
    const T item = (jp >= 0 && jp < n_pad) ? row[jp] : T(0);
    out[k] = static_cast<int32_t>(item);
    // dynamic_slice's clamping, as in the JAX version, for the pending value; a row as long as
    // the stream (the engine's layout) ends before the last block does, and its positions past
    // the row (past the stream: partner p, never written) store no item
    const int64_t at = static_cast<int64_t>(start) + k;
    const int64_t p = at < 0 ? 0 : (at >= n_pad ? n_pad - 1 : at);
    a = row[p];
    // p is final (jp == p: the deferred write stores it again)
    if (write_items && at == p) row[p] = item;
  }
  return a;  // deferred to the next block
}


constexpr int64_t kPositionsPerTask = 1 << 12;

// Rows prefetched this many rows ahead where a block only reads its items from the rows (the
// prefix kernel made them). Each row's block is a few cache lines a row length apart (20 KB at
// n = 10^4), out of the caches after the prefix kernel wrote the batch's rows, and the
// processor's prefetchers do not follow that stride: without prefetches every row's read
// waited for memory.
constexpr int64_t kRowPrefetch = 16;

// A thread's scratch partners, at least `size` of them.
inline int32_t* PartnerScratch(int64_t size) {
  thread_local std::vector<int32_t> partners;
  if (static_cast<int64_t>(partners.size()) < size) partners.resize(size);
  return partners.data();
}

template <typename T>
void Block(T* perm, const int32_t* slot, const int32_t* j, const T* a_in, const int32_t* order,
           int32_t start, const bool* done, const uint32_t* keys, int32_t* items, T* a_out,
           int32_t* j_out, int64_t rows, int64_t n_pad, int64_t batch, int64_t width,
           bool write_items, int64_t made, bool draw, std::vector<int64_t>& first,
           ffi::ThreadPool* pool, int64_t threads) {
  // The engine's compaction pads a smaller batch with copies of a row (svtjax._loops): copies
  // share a slot and carry the same state and partners, so they get the first copy's results,
  // and the permutation is swapped once. Rows with their own slot swap their own permutation
  // row only, so they run in parallel; halted rows and copies are filled in after.
  std::vector<int64_t> own;
  own.reserve(batch);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t s = slot[b];
    if (s < 0 || s >= rows || done[b]) continue;  // halted, or (impossible) no permutation
    if (first[s] < 0) {
      first[s] = b;
      own.push_back(b);
    }
  }
  const int64_t count = static_cast<int64_t>(own.size());
  const bool prefix = start + width <= made;  // the prefix kernel made these positions
  auto rows_of = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t b = own[i];
      if (prefix) {
        if (i + kRowPrefetch < hi) {  // a later row's items, for reading
          const char* ahead = reinterpret_cast<const char*>(
              perm + slot[own[i + kRowPrefetch]] * n_pad + start);
          for (int64_t byte = 0; byte < width * static_cast<int64_t>(sizeof(T)); byte += 64) {
            __builtin_prefetch(ahead + byte, 0);
          }
        }
        const T* row = perm + slot[b] * n_pad + start;
        std::copy(row, row + width, items + b * width);
        a_out[b] = a_in[b];
        j_out[b] = j[b];
        continue;
      }
      const int32_t* partner = order + b * width;
      if (draw) {  // the partners from the trial's key, as the prefix kernel draws them
        int32_t* drawn = PartnerScratch(width);
        DrawPartners(keys[2 * slot[b]], keys[2 * slot[b] + 1], start, width, n_pad, drawn);
        partner = drawn;
      }
      a_out[b] = Row<T>(perm + slot[b] * n_pad, partner, j[b], a_in[b], start,
                        items + b * width, n_pad, width, write_items);
      j_out[b] = partner[width - 1];
    }
  };
  const int64_t tasks = prefix ? 1 : std::max<int64_t>(
      1, std::min<int64_t>({threads * 4, count, count * width / kPositionsPerTask}));
  if (tasks == 1) {
    rows_of(0, count);
  } else {
    ParallelFor(pool, threads - 1, tasks,
                [&](int64_t t) { rows_of(count * t / tasks, count * (t + 1) / tasks); });
  }
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t s = slot[b];
    int32_t* out = items + b * width;
    if (s < 0 || s >= rows || done[b]) {
      for (int64_t k = 0; k < width; ++k) out[k] = 0;
      a_out[b] = a_in[b];
      j_out[b] = j[b];
    } else if (first[s] != b) {
      std::copy(items + first[s] * width, items + (first[s] + 1) * width, out);
      a_out[b] = a_out[first[s]];
      j_out[b] = j_out[first[s]];
    }
  }
  for (int64_t b = 0; b < batch; ++b) {  // every entry -1 again, for the next group
    if (slot[b] >= 0 && slot[b] < rows) first[slot[b]] = -1;
  }
}

template <typename T>
void Run(ffi::AnyBuffer perm_in, ffi::AnyBuffer slot, ffi::AnyBuffer j, ffi::AnyBuffer a,
         ffi::AnyBuffer order, ffi::AnyBuffer start, ffi::AnyBuffer done, ffi::AnyBuffer keys,
         bool write_items, int64_t made, bool draw, ffi::ThreadPool* pool,
         ffi::Result<ffi::AnyBuffer> perm_out, ffi::Result<ffi::AnyBuffer> items,
         ffi::Result<ffi::AnyBuffer> a_out, ffi::Result<ffi::AnyBuffer> j_out) {
  auto dims = perm_in.dimensions();
  const int64_t rank = dims.size();
  const int64_t rows = dims[rank - 2], n_pad = dims[rank - 1];
  const int64_t batch = slot.dimensions()[rank - 2];
  const int64_t width = items->dimensions()[rank - 1];
  const int64_t order_width = order.dimensions()[rank - 1];
  int64_t groups = 1;
  for (int64_t d = 0; d < rank - 2; ++d) groups *= dims[d];
  T* perm = static_cast<T*>(perm_out->untyped_data());
  if (perm != perm_in.untyped_data()) {  // not aliased: start from a copy
    const T* src = static_cast<const T*>(perm_in.untyped_data());
    std::copy(src, src + groups * rows * n_pad, perm);
  }
  std::vector<int64_t> first(rows, -1);
  const int64_t threads = std::max<int64_t>(1, pool->num_threads());
  for (int64_t g = 0; g < groups; ++g) {
    Block<T>(perm + g * rows * n_pad, static_cast<const int32_t*>(slot.untyped_data()) + g * batch,
             static_cast<const int32_t*>(j.untyped_data()) + g * batch,
             static_cast<const T*>(a.untyped_data()) + g * batch,
             static_cast<const int32_t*>(order.untyped_data()) + g * batch * order_width,
             static_cast<const int32_t*>(start.untyped_data())[g],
             static_cast<const bool*>(done.untyped_data()) + g * batch,
             draw ? static_cast<const uint32_t*>(keys.untyped_data()) + g * rows * 2 : nullptr,
             static_cast<int32_t*>(items->untyped_data()) + g * batch * width,
             static_cast<T*>(a_out->untyped_data()) + g * batch,
             static_cast<int32_t*>(j_out->untyped_data()) + g * batch, rows, n_pad, batch,
             width, write_items, made, draw, first, pool, threads);
  }
}

ffi::Error FisherYatesImpl(ffi::AnyBuffer perm_in, ffi::AnyBuffer slot, ffi::AnyBuffer j,
                           ffi::AnyBuffer a,
                           ffi::AnyBuffer order, ffi::AnyBuffer start, ffi::AnyBuffer done,
                           ffi::AnyBuffer keys, bool write_items, int64_t made, bool draw,
                           ffi::ThreadPool pool, ffi::Result<ffi::AnyBuffer> perm_out,
                           ffi::Result<ffi::AnyBuffer> items, ffi::Result<ffi::AnyBuffer> a_out,
                           ffi::Result<ffi::AnyBuffer> j_out) {
  const auto rank = perm_in.dimensions().size();
  if (rank < 2 || slot.element_type() != ffi::DataType::S32 ||
      j.element_type() != ffi::DataType::S32 ||
      order.element_type() != ffi::DataType::S32 || start.element_type() != ffi::DataType::S32 ||
      done.element_type() != ffi::DataType::PRED || done.dimensions().size() != rank - 1 ||
      a.element_type() != perm_in.element_type() ||
      slot.dimensions().size() != rank - 1 || j.dimensions().size() != rank - 1 ||
      order.dimensions().size() != rank || start.dimensions().size() != rank - 2 ||
      items->dimensions().size() != rank || j_out->element_type() != ffi::DataType::S32 ||
      (!draw && order.dimensions()[rank - 1] != items->dimensions()[rank - 1]) ||
      (draw && (keys.element_type() != ffi::DataType::U32 || keys.dimensions().size() != rank ||
                keys.dimensions()[rank - 2] != perm_in.dimensions()[rank - 2] ||
                keys.dimensions()[rank - 1] != 2 || items->dimensions()[rank - 1] % 64 != 0))) {
    return ffi::Error::InvalidArgument("svtjax_fisher_yates: unexpected operand types or ranks");
  }
  switch (perm_in.element_type()) {
    case ffi::DataType::S16:
      Run<int16_t>(perm_in, slot, j, a, order, start, done, keys, write_items, made, draw, &pool,
                   perm_out, items, a_out, j_out);
      return ffi::Error::Success();
    case ffi::DataType::S32:
      Run<int32_t>(perm_in, slot, j, a, order, start, done, keys, write_items, made, draw, &pool,
                   perm_out, items, a_out, j_out);
      return ffi::Error::Success();
    default:
      return ffi::Error::InvalidArgument("svtjax_fisher_yates: perm must be int16 or int32");
  }
}



// A thread's scratch vector `which`, at least `size` long.
inline std::vector<uint32_t>& Scratch(int which, int64_t size) {
  thread_local std::vector<uint32_t> scratch[2];
  if (static_cast<int64_t>(scratch[which].size()) < size) scratch[which].resize(size);
  return scratch[which];
}

// One trial: its row from the identity through positions 0 .. prefix - 1. A plain swap per
// position (item = row[j]; row[j] = row[p]; row[p] = item) is the block kernel's step with
// write_items, its deferred write done at once; the pending write returned (j of the last
// position, the value moved there) is what that kernel leaves, and writing it again, as the
// next block does first, changes nothing.
template <typename T>
void PrefixRow(uint32_t k0, uint32_t k1, T* row, int64_t n, int64_t prefix, int32_t* j_out,
               T* a_out) {
  T value = 0;
  for (int64_t p = 0; p < n; ++p, ++value) row[p] = value;
  alignas(64) int32_t partner[kBlock];
  const int64_t blocks = prefix / kBlock;
  std::vector<uint32_t>& key0 = Scratch(0, blocks);
  std::vector<uint32_t>& key1 = Scratch(1, blocks);
  BlockKeys(k0, k1, blocks, key0.data(), key1.data());
  T a = 0;
  int32_t jp = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    BlockPartners(key0[b], key1[b], b, n, partner);
    T* at = row + b * kBlock;
    for (int i = 0; i < kBlock; ++i) {  // partner[i] in [p, n): inside the row
      jp = partner[i];
      a = at[i];
      at[i] = row[jp];
      row[jp] = a;
    }
  }
  *j_out = jp;
  *a_out = a;
}

template <typename T>
void PrefixRun(ffi::AnyBuffer keys, int64_t prefix, ffi::ThreadPool* pool,
               ffi::Result<ffi::AnyBuffer> perm, ffi::Result<ffi::AnyBuffer> j,
               ffi::Result<ffi::AnyBuffer> a) {
  auto dims = perm->dimensions();
  const int64_t n = dims[dims.size() - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d) rows *= dims[d];
  const uint32_t* k = static_cast<const uint32_t*>(keys.untyped_data());
  T* out = static_cast<T*>(perm->untyped_data());
  int32_t* j_out = static_cast<int32_t*>(j->untyped_data());
  T* a_out = static_cast<T*>(a->untyped_data());
  auto rows_of = [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      PrefixRow<T>(k[2 * r], k[2 * r + 1], out + r * n, n, prefix, j_out + r, a_out + r);
    }
  };
  const int64_t threads = std::max<int64_t>(1, pool->num_threads());
  const int64_t tasks = std::max<int64_t>(
      1, std::min<int64_t>({threads * 4, rows, rows * prefix / kPositionsPerTask}));
  if (tasks == 1) {
    rows_of(0, rows);
  } else {
    ParallelFor(pool, threads - 1, tasks,
                [&](int64_t t) { rows_of(rows * t / tasks, rows * (t + 1) / tasks); });
  }
}

ffi::Error FisherYatesPrefixImpl(ffi::AnyBuffer keys, int64_t prefix, ffi::ThreadPool pool,
                                 ffi::Result<ffi::AnyBuffer> perm, ffi::Result<ffi::AnyBuffer> j,
                                 ffi::Result<ffi::AnyBuffer> a) {
  auto dims = perm->dimensions();
  const auto rank = dims.size();
  auto kdims = keys.dimensions();
  bool ok = rank >= 1 && keys.element_type() == ffi::DataType::U32 && kdims.size() == rank &&
            kdims[rank - 1] == 2 && j->element_type() == ffi::DataType::S32 &&
            a->element_type() == perm->element_type() && prefix > 0 &&
            prefix % kBlock == 0 && prefix <= dims[rank - 1];
  for (size_t d = 0; ok && d + 1 < rank; ++d) ok = kdims[d] == dims[d];
  if (!ok) {
    return ffi::Error::InvalidArgument(
        "svtjax_fisher_yates_prefix: unexpected operand types, shapes or prefix");
  }
  switch (perm->element_type()) {
    case ffi::DataType::S16:
      PrefixRun<int16_t>(keys, prefix, &pool, perm, j, a);
      return ffi::Error::Success();
    case ffi::DataType::S32:
      PrefixRun<int32_t>(keys, prefix, &pool, perm, j, a);
      return ffi::Error::Success();
    default:
      return ffi::Error::InvalidArgument(
          "svtjax_fisher_yates_prefix: perm must be int16 or int32");
  }
}

}  // namespace
}  // namespace svtjax

using svtjax::FisherYatesImpl;
using svtjax::FisherYatesPrefixImpl;
namespace ffi = xla::ffi;

XLA_FFI_DEFINE_HANDLER_SYMBOL(SvtjaxFisherYates, FisherYatesImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Attr<bool>("write_items")
                                  .Attr<int64_t>("made")
                                  .Attr<bool>("draw")
                                  .Ctx<ffi::ThreadPool>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SvtjaxFisherYatesPrefix, FisherYatesPrefixImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Attr<int64_t>("prefix")
                                  .Ctx<ffi::ThreadPool>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());
