// Device helpers for reading and writing byte streams as little-endian u32 words, safe at a
// stream's ragged end (streams need not be whole words).
#pragma once
#include <cstdint>

namespace fzg {

__device__ __forceinline__ uint32_t load_word(const uint8_t* bytes, uint64_t size_bytes, uint64_t i) {
  if (4 * i + 4 <= size_bytes) return reinterpret_cast<const uint32_t*>(bytes)[i];
  uint32_t w = 0;
  for (uint64_t b = 4 * i; b < size_bytes && b < 4 * i + 4; ++b) w |= uint32_t(bytes[b]) << (8 * (b - 4 * i));
  return w;
}

__device__ __forceinline__ void store_word(uint8_t* bytes, uint64_t size_bytes, uint64_t i, uint32_t w) {
  if (4 * i + 4 <= size_bytes) {
    reinterpret_cast<uint32_t*>(bytes)[i] = w;
    return;
  }
  for (uint64_t b = 4 * i; b < size_bytes && b < 4 * i + 4; ++b) bytes[b] = uint8_t(w >> (8 * (b - 4 * i)));
}

// Global warp index and warp count of a grid-stride loop over warps.
__device__ __forceinline__ uint64_t global_warp() { return (blockIdx.x * uint64_t(blockDim.x) + threadIdx.x) / 32; }
__device__ __forceinline__ uint64_t warp_count() { return uint64_t(gridDim.x) * blockDim.x / 32; }

}  // namespace fzg
