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

// Prefix sums across the calling warp's 32 lanes (every lane takes part): this lane's value
// plus the values of the lanes below it, or without its own, with the warp's total.
// Each step is a shuffle and an add predicated on the shuffle's own "source lane exists" bit:
// __shfl_up_sync drops that bit, so a lane test and a select cost a third more a step.
__device__ __forceinline__ uint32_t warp_inclusive_sum(uint32_t v) {
#pragma unroll
  for (uint32_t k = 1; k < 32; k *= 2)
    asm volatile("{\n\t.reg .pred p;\n\t.reg .u32 u;\n\t"
        "shfl.sync.up.b32 u|p, %0, %1, 0, 0xffffffff;\n\t"
        "@p add.u32 %0, %0, u;\n\t}"
        : "+r"(v)
        : "r"(k));
  return v;
}
__device__ __forceinline__ uint32_t warp_exclusive_sum(uint32_t v, uint32_t& total) {
  const uint32_t inclusive = warp_inclusive_sum(v);
  total = __shfl_sync(0xffffffffu, inclusive, 31);
  return inclusive - v;
}

// Global warp index and warp count of a grid-stride loop over warps.
__device__ __forceinline__ uint64_t global_warp() { return (blockIdx.x * uint64_t(blockDim.x) + threadIdx.x) / 32; }
__device__ __forceinline__ uint64_t warp_count() { return uint64_t(gridDim.x) * blockDim.x / 32; }

// Walks the calling warp over tiles of 32 words, grid-stride: tiles below `whole_tiles` in
// passes of N, all N loads issued before any tile is processed; the tiles after them (a
// ragged last one included) one at a time. load(t, whole) returns this lane's word of tile t;
// process(t, word, whole) consumes it. `whole` says the tile lies entirely inside the buffer,
// so the plain-pointer paths can be taken.
template <int N, typename Load, typename Process>
__device__ __forceinline__ void for_each_tile(uint64_t whole_tiles, uint64_t tiles, Load load, Process process) {
  const uint64_t in_passes = whole_tiles / N * N;
  for (uint64_t base = global_warp() * N; base < in_passes; base += warp_count() * N) {
    uint32_t words[N];
#pragma unroll
    for (int k = 0; k < N; ++k) words[k] = load(base + k, true);
#pragma unroll
    for (int k = 0; k < N; ++k) process(base + k, words[k], true);
  }
  for (uint64_t t = in_passes + global_warp(); t < tiles; t += warp_count()) process(t, load(t, t < whole_tiles), t < whole_tiles);
}

}  // namespace fzg
