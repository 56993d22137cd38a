// CUDA backend of bitshuffle: one warp per 32-word tile (bitshuffle.cuh), 32 ballots.
// A warp loads `tiles_per_pass` tiles before it shuffles any, so several 128-byte rows are in
// flight per warp. Bytes per value: 4 read + 4 written per word, coalesced rows.
#include "bitshuffle/bitshuffle.cuh"
#include "pipeline/cuda_check.cuh"
#include "pipeline/device_words.cuh"
#include "pipeline/launch.cuh"

namespace fzg::bitshuffle {

namespace {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;
constexpr int tiles_per_pass = 4;

// Whole tiles go in passes through plain word pointers; the tiles left over, including a
// ragged last one, one at a time through the byte-safe helpers.
__global__ void __launch_bounds__(block_threads) encode_kernel(const uint8_t* __restrict__ input, uint64_t input_bytes,
                                                               uint32_t* __restrict__ output, uint64_t tiles) {
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t main_tiles = input_bytes / tile_bytes / tiles_per_pass * tiles_per_pass;
  const auto* words = reinterpret_cast<const uint32_t*>(input);
  for (uint64_t base = global_warp() * tiles_per_pass; base < main_tiles; base += warp_count() * tiles_per_pass) {
    const uint32_t* src = words + base * tile_words + lane;
    uint32_t w[tiles_per_pass];
#pragma unroll
    for (int k = 0; k < tiles_per_pass; ++k) w[k] = src[k * tile_words];
    uint32_t* dst = output + base * tile_words + lane;
#pragma unroll
    for (int k = 0; k < tiles_per_pass; ++k) dst[k * tile_words] = shuffle_warp(w[k]);
  }
  for (uint64_t t = main_tiles + global_warp(); t < tiles; t += warp_count())
    output[t * tile_words + lane] = shuffle_warp(load_word(input, input_bytes, t * tile_words + lane));
}

__global__ void __launch_bounds__(block_threads) decode_kernel(const uint32_t* __restrict__ input,
                                                               uint8_t* __restrict__ output, uint64_t output_bytes,
                                                               uint64_t tiles) {
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t main_tiles = output_bytes / tile_bytes / tiles_per_pass * tiles_per_pass;
  auto* words = reinterpret_cast<uint32_t*>(output);
  for (uint64_t base = global_warp() * tiles_per_pass; base < main_tiles; base += warp_count() * tiles_per_pass) {
    const uint32_t* src = input + base * tile_words + lane;
    uint32_t packed[tiles_per_pass];
#pragma unroll
    for (int k = 0; k < tiles_per_pass; ++k) packed[k] = src[k * tile_words];
    uint32_t* dst = words + base * tile_words + lane;
#pragma unroll
    for (int k = 0; k < tiles_per_pass; ++k) dst[k * tile_words] = unshuffle_warp(packed[k]);
  }
  for (uint64_t t = main_tiles + global_warp(); t < tiles; t += warp_count())
    store_word(output, output_bytes, t * tile_words + lane, unshuffle_warp(input[t * tile_words + lane]));
}

unsigned blocks_for(uint64_t tiles) { return grid_for(tiles, uint64_t(warps_per_block) * tiles_per_pass); }

}  // namespace

void encode_cuda(const uint8_t* input, uint64_t input_bytes, uint32_t* output, cudaStream_t stream) {
  const uint64_t tiles = shuffled_size(input_bytes) / tile_bytes;
  if (tiles == 0) return;
  encode_kernel<<<blocks_for(tiles), block_threads, 0, stream>>>(input, input_bytes, output, tiles);
  FZG_CUDA_CHECK_LAUNCH();
}

void decode_cuda(const uint32_t* input, uint8_t* output, uint64_t output_bytes, cudaStream_t stream) {
  const uint64_t tiles = shuffled_size(output_bytes) / tile_bytes;
  if (tiles == 0) return;
  decode_kernel<<<blocks_for(tiles), block_threads, 0, stream>>>(input, output, output_bytes, tiles);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::bitshuffle
