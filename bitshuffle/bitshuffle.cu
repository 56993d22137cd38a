// CUDA backend of bitshuffle: one warp per 32-word tile, 32 ballots.
// Encode: lane i holds input word i; the ballot of bit plane_at(p) is output word p, kept by
// lane p. Decode: lane p first fetches the packed word of plane p (a shuffle undoes the plane
// order), then the ballot of bit i over lanes is input word i, kept by lane i.
// Bytes per value: 4 read + 4 written per word, coalesced 128-byte rows.
#include "bitshuffle/bitshuffle.hh"
#include "pipeline/cuda_check.cuh"
#include "pipeline/launch.cuh"

namespace fzg::bitshuffle {

namespace {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;

// Word `i` of the input, zero-filled past its end (the input need not be whole words).
__device__ uint32_t load_word(const uint8_t* input, uint64_t input_bytes, uint64_t i) {
  if (4 * i + 4 <= input_bytes) return reinterpret_cast<const uint32_t*>(input)[i];
  uint32_t w = 0;
  for (uint64_t b = 4 * i; b < input_bytes && b < 4 * i + 4; ++b) w |= uint32_t(input[b]) << (8 * (b - 4 * i));
  return w;
}

__device__ void store_word(uint8_t* output, uint64_t output_bytes, uint64_t i, uint32_t w) {
  if (4 * i + 4 <= output_bytes) {
    reinterpret_cast<uint32_t*>(output)[i] = w;
    return;
  }
  for (uint64_t b = 4 * i; b < output_bytes && b < 4 * i + 4; ++b) output[b] = uint8_t(w >> (8 * (b - 4 * i)));
}

// Which output position holds plane `plane` (the inverse of plane_at).
__device__ uint32_t position_of(uint32_t plane) {
  if (plane == 15) return 0;
  if (plane == 31) return 1;
  return plane < 16 ? 2 + 2 * plane : 3 + 2 * (plane - 16);
}

__global__ void __launch_bounds__(block_threads) encode_kernel(const uint8_t* __restrict__ input, uint64_t input_bytes,
                                                               uint32_t* __restrict__ output, uint64_t tiles) {
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t first = blockIdx.x * uint64_t(warps_per_block) + threadIdx.x / 32;
  for (uint64_t t = first; t < tiles; t += uint64_t(gridDim.x) * warps_per_block) {
    const uint32_t word = load_word(input, input_bytes, t * tile_words + lane);
    uint32_t mine = 0;
#pragma unroll
    for (uint32_t p = 0; p < tile_words; ++p) {
      const uint32_t packed = __ballot_sync(0xffffffffu, (word >> plane_at(p)) & 1u);
      if (lane == p) mine = packed;
    }
    output[t * tile_words + lane] = mine;
  }
}

__global__ void __launch_bounds__(block_threads) decode_kernel(const uint32_t* __restrict__ input,
                                                               uint8_t* __restrict__ output, uint64_t output_bytes,
                                                               uint64_t tiles) {
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t first = blockIdx.x * uint64_t(warps_per_block) + threadIdx.x / 32;
  for (uint64_t t = first; t < tiles; t += uint64_t(gridDim.x) * warps_per_block) {
    const uint32_t plane_word = __shfl_sync(0xffffffffu, input[t * tile_words + lane], position_of(lane));
    uint32_t mine = 0;
#pragma unroll
    for (uint32_t i = 0; i < tile_words; ++i) {
      const uint32_t word = __ballot_sync(0xffffffffu, (plane_word >> i) & 1u);
      if (lane == i) mine = word;
    }
    store_word(output, output_bytes, t * tile_words + lane, mine);
  }
}

}  // namespace

void encode_cuda(const uint8_t* input, uint64_t input_bytes, uint32_t* output, cudaStream_t stream) {
  const uint64_t tiles = shuffled_size(input_bytes) / tile_bytes;
  if (tiles == 0) return;
  encode_kernel<<<grid_for(tiles, warps_per_block), block_threads, 0, stream>>>(input, input_bytes, output, tiles);
  FZG_CUDA_CHECK_LAUNCH();
}

void decode_cuda(const uint32_t* input, uint8_t* output, uint64_t output_bytes, cudaStream_t stream) {
  const uint64_t tiles = shuffled_size(output_bytes) / tile_bytes;
  if (tiles == 0) return;
  decode_kernel<<<grid_for(tiles, warps_per_block), block_threads, 0, stream>>>(input, output, output_bytes, tiles);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::bitshuffle
