// JAX's random bits as the engine draws a trial's swap partners (svtjax._rng, the pure-JAX
// version of the same numbers): the Threefry-2x32 hash (Salmon et al., SC 2011) with JAX's key
// schedule, fold_in and partitionable bits, and Lemire's multiply-and-reject method for a
// uniform partner on [p, n), a rejected word redrawn from fold_in(block key, r).
//
// Included by fisher_yates.cc only (the one user), inside its unnamed namespace: the vector
// clones below are then local to that file.

#ifndef SVTJAX_NATIVE_THREEFRY_H_
#define SVTJAX_NATIVE_THREEFRY_H_

#include "common.h"

namespace svtjax {
namespace {

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

}  // namespace
}  // namespace svtjax

#endif  // SVTJAX_NATIVE_THREEFRY_H_
