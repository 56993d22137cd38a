// Warp-level bitshuffle of one 32-word tile: the building block of the bitshuffle kernels
// and of fused kernels that shuffle on the fly. All 32 lanes must call these together.
#pragma once
#include <cstdint>

#include "bitshuffle/bitshuffle.hh"

namespace fzg::bitshuffle {

// Lane i holds input word i; returns output word `lane` (bit i from word i's plane_at(lane)).
__device__ __forceinline__ uint32_t shuffle_warp(uint32_t word) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t mine = 0;
#pragma unroll
  for (uint32_t p = 0; p < tile_words; ++p) {
    const uint32_t packed = __ballot_sync(0xffffffffu, (word >> plane_at(p)) & 1u);
    if (lane == p) mine = packed;
  }
  return mine;
}

// Which output position holds plane `plane` (the inverse of plane_at).
__device__ __forceinline__ uint32_t position_of(uint32_t plane) {
  if (plane == 15) return 0;
  if (plane == 31) return 1;
  return plane < 16 ? 2 + 2 * plane : 3 + 2 * (plane - 16);
}

// Lane p holds output word p; returns input word `lane`.
__device__ __forceinline__ uint32_t unshuffle_warp(uint32_t packed) {
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t plane_word = __shfl_sync(0xffffffffu, packed, position_of(lane));
  uint32_t mine = 0;
#pragma unroll
  for (uint32_t i = 0; i < tile_words; ++i) {
    const uint32_t word = __ballot_sync(0xffffffffu, (plane_word >> i) & 1u);
    if (lane == i) mine = word;
  }
  return mine;
}

}  // namespace fzg::bitshuffle
