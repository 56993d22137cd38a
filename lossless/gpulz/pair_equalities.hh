// GPULZ's equality bits of 2-byte symbols, two distances a 4-byte word: written for the GPU's
// probe (gpulz.cu, where a distance at a time costs a 2-byte load, a compare and a select
// each), and plain enough to be checked on the host against the definition.
#pragma once
#include <cstdint>
#include <cstring>

#include "runtime/portable.hh"

namespace fzg::gpulz {

// The halves of v that are zero, as bits 15 and 31 (exact: the low half's sum carries nothing
// into the high half).
FZG_HOST_DEVICE constexpr uint32_t zero_halves(uint32_t v) {
  return ~(((v & 0x7fff7fffu) + 0x7fff7fffu) | v) & 0x80008000u;
}

// The 4 bytes at `at` (4-byte aligned) as a little-endian word: x[0] in the low half.
FZG_HOST_DEVICE uint32_t load_pair(const uint16_t* at) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint32_t*>(at);
#else
  uint32_t w;  // the host reads the 2-byte symbols' bytes, not through a 4-byte type
  std::memcpy(&w, at, sizeof w);
  return w;
#endif
}

// Bit j of the low half to bit 2 j, bit j of the high half to bit 2 j + 1 (Hacker's Delight's
// outer perfect shuffle: four swaps of bit groups).
FZG_HOST_DEVICE constexpr uint32_t interleave_halves(uint32_t x) {
  uint32_t t = (x ^ (x >> 8)) & 0x0000ff00u;
  x ^= t ^ (t << 8);
  t = (x ^ (x >> 4)) & 0x00f000f0u;
  x ^= t ^ (t << 4);
  t = (x ^ (x >> 2)) & 0x0c0c0c0cu;
  x ^= t ^ (t << 2);
  t = (x ^ (x >> 1)) & 0x22222222u;
  x ^= t ^ (t << 1);
  return x;
}

// E(i) as G words: bit d - 1 of e[d / 32] (d counted from 0 there) set where x[i] == x[i - d],
// 1 <= d <= 32 G, for every d (the caller clears the distances past the window or the chunk's
// start). x is 4-byte aligned and x[-32 G] readable. The aligned words below i hold the pairs
// (2k + 2, 2k + 1) back where i is even and (2k + 1, 2k) where it is odd (low half first); an
// odd i reads one word more, for its distance 32 G. Each word's equal halves go to bits j and
// 16 + j of a group's accumulator (a shift and an OR), which one interleave turns into
// distances.
template <int G>
FZG_HOST_DEVICE void pair_equalities(const uint16_t* x, uint32_t i, uint32_t (&e)[G]) {
  const uint32_t own = x[i], twice = own | own << 16;
  const bool odd = i & 1u;
  const uint16_t* word = x + (int64_t(i) - 1 - (odd ? 0 : 1));  // pairs at word - 2 k
  uint32_t acc[G + 1];
FZG_UNROLL
  for (int g = 0; g < G; ++g) {
    uint32_t a = 0;
FZG_UNROLL
    for (int j = 0; j < 16; ++j) a |= zero_halves(load_pair(word - 2 * (16 * g + j)) ^ twice) >> (15 - j);
    acc[g] = a;
  }
  acc[G] = odd ? zero_halves(load_pair(word - 32 * G) ^ twice) >> 15 : 0u;
FZG_UNROLL
  for (int g = 0; g < G; ++g) {
    // Even i: the high halves (distances 2k + 1) to the even bits. Odd i: the low halves (2k + 1)
    // to the even bits, the high halves one word on (2k + 2) to the odd ones.
    const uint32_t x_even = acc[g] << 16 | acc[g] >> 16;
    const uint32_t x_odd = (acc[g] & 0xffffu) | ((acc[g] >> 1) & 0x7fff0000u) | ((acc[g + 1] << 15) & 0x80000000u);
    e[g] = interleave_halves(odd ? x_odd : x_even);
  }
}

}  // namespace fzg::gpulz
