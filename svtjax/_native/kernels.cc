// svtjax's compiled CPU kernels, as XLA FFI handlers: each computes what a pure-JAX function of
// the package computes (1 and 2 bit-identical results, 3 the same operations to rounding), in
// one call instead of a loop of small XLA kernels whose dispatch costs more than the work.
//
// 1. svtjax_fisher_yates: one block of the engine's lazy Fisher-Yates shuffle
//    (svtjax.mechanisms._engine.fisher_yates_block), and svtjax_fisher_yates_prefix: its first
//    positions for every trial at once (svtjax.mechanisms._engine.fisher_yates_prefix).
// 2. svtjax_first_tops: the first ⊤ of every row of an Outcome batch, read block by block only
//    as far as needed (svtjax._core._first_tops_blocks: svtjax.selected and the metrics of
//    shuffled Outcomes).
// 3. svtjax_pb_forward and svtjax_pb_backward: the Poisson-binomial recursions of svtjax.exact's
//    random order (svtjax.exact._laws._random_chunk), to rounding (not bit-identical: see 3.).
//
// ---------------------------------------------------------------------------------------------
// 1. Fisher-Yates block.
//
// The same swaps as svtjax.mechanisms._engine.fisher_yates_block, in the same order, on the same
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

#include <Python.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// Swap partners prefetched this many steps ahead. A partner lies anywhere in the row, and a
// batch's rows (20 MB at n = 10^4 x 1,000 trials) are far larger than the caches, so nearly
// every swap misses; the loop's own dependences let the processor overlap only a few misses,
// and the prefetches keep more in flight. 8 was the best of the distances 4, 8, 12 and 16 in
// interleaved A/Bs on the 2-core VM (2026-12-02; 12 and 16 no better). Against the block without
// prefetches, the threshold mechanisms ran 1.00-1.24x faster shuffled at n = 10^4 x 1,000
// trials (median 1.11x; `python benchmarks/bench_versions.py <worktree of 95d85b4> . --mode
// shuffle --repeats 7`, record versions-2026-12-02T053221.json); at n = 10^3, whose rows are
// 10x shorter, the A/Bs saw no change beyond the noise.
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

// Runs work(0) .. work(tasks - 1), each once, on the calling thread and on up to `helpers` tasks
// of XLA's intra-op thread pool, and returns when all have finished. The calling thread takes
// tasks too, so the call completes even when the pool never runs a helper (a busy or absent
// pool: Schedule then runs it inline); a helper that starts late finds no task left and touches
// nothing but the shared counters, which it co-owns.
template <typename F>
void ParallelFor(ffi::ThreadPool* pool, int64_t helpers, int64_t tasks, const F& work) {
  struct Shared {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> finished{0};
    std::mutex mu;
    std::condition_variable cv;
  };
  auto shared = std::make_shared<Shared>();
  const F* fn = &work;
  auto drain = [shared, fn, tasks]() {
    for (int64_t t; (t = shared->next.fetch_add(1)) < tasks;) {
      (*fn)(t);
      if (shared->finished.fetch_add(1) + 1 == tasks) {
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->cv.notify_all();
      }
    }
  };
  for (int64_t h = 0; pool != nullptr && h < helpers && h + 1 < tasks; ++h) {
    auto helper = drain;
    pool->Schedule(std::move(helper));
  }
  drain();
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->finished.load() == tasks; });
}

// Swaps at least this many positions per task before a block is split among threads.
constexpr int64_t kPositionsPerTask = 1 << 12;

// Rows prefetched this many rows ahead where a block only reads its items from the rows (the
// prefix kernel made them). Each row's block is a few cache lines a row length apart (20 KB at
// n = 10^4), out of the caches after the prefix kernel wrote the batch's rows, and the
// processor's prefetchers do not follow that stride: without prefetches every row's read
// waited for memory.
constexpr int64_t kRowPrefetch = 16;

// Swap partners of positions start .. start + width - 1 (multiples of 64) of a trial, drawn
// from its raw "order" key (k0, k1) as the prefix kernel draws them (1b).
void DrawPartners(uint32_t k0, uint32_t k1, int64_t start, int64_t width, int64_t n,
                  int32_t* partner);

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


// ---------------------------------------------------------------------------------------------
// 1b. Fisher-Yates prefix.
//
// The first `prefix` positions of every trial's lazy shuffle at once, trial by trial: exactly
// what the engine's blocks 0 .. prefix / 64 - 1 would do (the kernel above with write_items,
// starting from the identity), with the swap partners drawn here, the same numbers as
// svtjax.mechanisms._engine.fast_block_order: the Threefry-2x32 hash of JAX (Salmon et al.,
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

// Clones of a function for AVX-512 and AVX2, picked when the library loads (an ifunc: ELF
// targets with GNU-style attributes); elsewhere one baseline build.
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__)
#define SVTJAX_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SVTJAX_VECTOR_CLONES
#endif

constexpr uint32_t kParity = 0x1BD11BDA;
constexpr int kBlock = 64;  // svtjax.mechanisms.base.BLOCK: positions per random block

inline uint32_t Rotl(uint32_t x, int d) { return (x << d) | (x >> (32 - d)); }

// Threefry-2x32, 20 rounds (svtjax._rng.threefry2x32).
inline void Threefry(uint32_t k0, uint32_t k1, uint32_t& x0, uint32_t& x1) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ kParity};
  x0 += ks[0];
  x1 += ks[1];
#pragma GCC unroll 5
  for (int i = 0; i < 5; ++i) {
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = x0 ^ Rotl(x1, kRot[i % 2][r]);
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + static_cast<uint32_t>(i + 1);
  }
}

// The keys of blocks 0 .. blocks - 1 of a trial's order key, fold_in(key, b), one lane each.
SVTJAX_VECTOR_CLONES
void BlockKeys(uint32_t k0, uint32_t k1, int64_t blocks, uint32_t* key0, uint32_t* key1) {
  for (int64_t b = 0; b < blocks; ++b) {
    uint32_t x0 = 0, x1 = static_cast<uint32_t>(b);
    Threefry(k0, k1, x0, x1);
    key0[b] = x0;
    key1[b] = x1;
  }
}

// Swap partners of the 64 positions of block b, whose key is (b0, b1) = fold_in(order key, b):
// j_p uniform on [p, n) (fast_block_order). The words are jax.random.bits((b0, b1), (64,)):
// word i is hash_0 ^ hash_1 of counter (0, i). Independent lanes, so the compiler vectorises the hashes
// and the products; a clone for each vector extension, picked at run time, so the build needs
// no -march flag. A word is rejected (probability below n / 2^32) only where its product's low
// word is below span; those are redrawn one by one.
SVTJAX_VECTOR_CLONES
void BlockPartners(uint32_t b0, uint32_t b1, int64_t b, int64_t n, int32_t* partner) {
  const int64_t first = b * kBlock;
  uint32_t bits[kBlock];
  for (int i = 0; i < kBlock; ++i) {
    uint32_t x0 = 0, x1 = static_cast<uint32_t>(i);
    Threefry(b0, b1, x0, x1);
    bits[i] = x0 ^ x1;
  }
  uint32_t small = 0;
  for (int i = 0; i < kBlock; ++i) {
    const int64_t left = n - (first + i);
    const uint32_t span = static_cast<uint32_t>(left < 1 ? 1 : left);
    const uint64_t product = static_cast<uint64_t>(bits[i]) * span;
    partner[i] = static_cast<int32_t>(first + i + static_cast<int64_t>(product >> 32));
    small |= static_cast<uint32_t>(static_cast<uint32_t>(product) < span);
  }
  if (small == 0) return;
  for (int i = 0; i < kBlock; ++i) {  // Lemire's rejection, for the rare low words
    const int64_t left = n - (first + i);
    const uint32_t span = static_cast<uint32_t>(left < 1 ? 1 : left);
    uint64_t product = static_cast<uint64_t>(bits[i]) * span;
    if (static_cast<uint32_t>(product) >= span) continue;
    const uint32_t floor = (0u - span) % span;  // 2^32 mod span
    for (uint32_t r = 1; static_cast<uint32_t>(product) < floor; ++r) {
      uint32_t r0 = 0, r1 = r;  // fold_in(block key, r), then that key's word i
      Threefry(b0, b1, r0, r1);
      uint32_t x0 = 0, x1 = static_cast<uint32_t>(i);
      Threefry(r0, r1, x0, x1);
      product = static_cast<uint64_t>(x0 ^ x1) * span;
    }
    partner[i] = static_cast<int32_t>(first + i + static_cast<int64_t>(product >> 32));
  }
}

void DrawPartners(uint32_t k0, uint32_t k1, int64_t start, int64_t width, int64_t n,
                  int32_t* partner) {
  for (int64_t s = 0; s < width; s += kBlock) {
    const int64_t b = (start + s) / kBlock;
    uint32_t b0 = 0, b1 = static_cast<uint32_t>(b);  // fold_in(key, b)
    Threefry(k0, k1, b0, b1);
    BlockPartners(b0, b1, b, n, partner + s);
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

// ---------------------------------------------------------------------------------------------
// 3. Poisson-binomial recursions of svtjax.exact's random order.
//
// svtjax.exact._laws._random_chunk integrates, at each quadrature node (a value of the threshold
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
// of svtjax.exact._laws._inverse_means, at T inner-integral nodes s_t per quadrature node.
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

static PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_kernels", nullptr, -1, kMethods};

#ifndef SVTJAX_JAXLIB_VERSION
#define SVTJAX_JAXLIB_VERSION "unknown"
#endif

PyMODINIT_FUNC PyInit__kernels(void) {
  PyObject* module = PyModule_Create(&kModule);
  // The jaxlib whose FFI headers this was compiled against: svtjax uses the handlers only
  // under that jaxlib (the FFI's binary interface is versioned with it).
  if (module != nullptr &&
      PyModule_AddStringConstant(module, "jaxlib_version", SVTJAX_JAXLIB_VERSION) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
