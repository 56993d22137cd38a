// Warp-level bitshuffle of one 32-word tile: the building block of the bitshuffle kernels
// and of fused kernels that shuffle on the fly. All 32 lanes must call these together.
#pragma once
#include <cstdint>

#include "bitshuffle/bitshuffle.hh"
#include "runtime/device_words.cuh"
#include "runtime/launch.cuh"

namespace fzg::bitshuffle {

// Transposes the warp's 32x32 bit matrix: lane i holds row i on entry; on return lane b holds
// column b (bit i = bit b of lane i's entry). Five butterfly stages swap off-diagonal blocks of
// 16, 8, 4, 2 and 1 bits. In each, the partner's moving half arrives by a rotation (left by j
// for the lower lane of a pair, right by j for the upper), so a stage is a shuffle, a funnel
// shift and one three-input logic op; the per-lane amounts and masks depend on the lane only
// and are hoisted out of the kernels' tile loops.
__device__ __forceinline__ uint32_t transpose_warp(uint32_t v) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t low_mask = 0x0000ffffu;
#pragma unroll
  for (uint32_t j = 16; j != 0; j >>= 1, low_mask ^= low_mask << j) {
    const bool upper = lane & j;
    const uint32_t partner = __shfl_xor_sync(0xffffffffu, v, j);
    const uint32_t moved = __funnelshift_l(partner, partner, upper ? 32 - j : j);
    const uint32_t keep = upper ? ~low_mask : low_mask;
    v = (v & keep) | (moved & ~keep);
  }
  return v;
}

// Which output position holds plane `plane` (the inverse of plane_at).
__device__ __forceinline__ uint32_t position_of(uint32_t plane) {
  if (plane == 15) return 0;
  if (plane == 31) return 1;
  return plane < 16 ? 2 + 2 * plane : 3 + 2 * (plane - 16);
}

// Lane i holds input word i; returns output word `lane` (bit i from word i's plane_at(lane)).
__device__ __forceinline__ uint32_t shuffle_warp(uint32_t word) {
  return __shfl_sync(0xffffffffu, transpose_warp(word), plane_at(threadIdx.x % 32));
}

// Lane p holds output word p; returns input word `lane`.
__device__ __forceinline__ uint32_t unshuffle_warp(uint32_t packed) {
  return transpose_warp(__shfl_sync(0xffffffffu, packed, position_of(threadIdx.x % 32)));
}

// The launch shape of kernels that walk tiles with for_each_tile: 8 warps a block, each
// issuing the loads of `tiles_per_pass` tiles before it works on any.
constexpr int tile_block_threads = 256;
constexpr int tiles_per_pass = 4;

template <typename Kernel>
unsigned tile_grid(Kernel kernel, uint64_t tiles) {
  return resident_grid(kernel, tile_block_threads, tiles, uint64_t(tile_block_threads / 32) * tiles_per_pass);
}

// This lane's word of tile t of a byte stream: a plain load for a whole tile, byte-safe else.
__device__ __forceinline__ uint32_t tile_word(const uint8_t* bytes, uint64_t size_bytes, uint64_t t, bool whole) {
  const uint64_t i = t * tile_words + threadIdx.x % 32;
  return whole ? reinterpret_cast<const uint32_t*>(bytes)[i] : load_word(bytes, size_bytes, i);
}

// Un-shuffles tile t (lane p holding its output word p) into a byte stream.
__device__ __forceinline__ void store_unshuffled(uint8_t* bytes, uint64_t size_bytes, uint64_t t, uint32_t packed,
                                                 bool whole) {
  const uint32_t word = unshuffle_warp(packed);
  const uint64_t i = t * tile_words + threadIdx.x % 32;
  if (whole) reinterpret_cast<uint32_t*>(bytes)[i] = word;
  else store_word(bytes, size_bytes, i, word);
}

}  // namespace fzg::bitshuffle
