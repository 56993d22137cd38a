// CUDA backend of bitshuffle: one warp per 32-word tile (bitshuffle.cuh), 32 ballots.
// A warp loads `tiles_per_pass` tiles before it shuffles any, so several 128-byte rows are in
// flight per warp. Bytes per value: 4 read + 4 written per word, coalesced rows.
#include "bitshuffle/bitshuffle.cuh"
#include "runtime/cuda_check.cuh"

namespace fzg::bitshuffle {

namespace {

__global__ void __launch_bounds__(tile_block_threads) encode_kernel(const uint8_t* __restrict__ input,
                                                                    uint64_t input_bytes,
                                                                    uint32_t* __restrict__ output, uint64_t tiles) {
  for_each_tile<tiles_per_pass>(
      input_bytes / tile_bytes, tiles, [&](uint64_t t, bool whole) { return tile_word(input, input_bytes, t, whole); },
      [&](uint64_t t, uint32_t word, bool) { output[t * tile_words + threadIdx.x % 32] = shuffle_warp(word); });
}

__global__ void __launch_bounds__(tile_block_threads) decode_kernel(const uint32_t* __restrict__ input,
                                                                    uint8_t* __restrict__ output,
                                                                    uint64_t output_bytes, uint64_t tiles) {
  for_each_tile<tiles_per_pass>(
      output_bytes / tile_bytes, tiles, [&](uint64_t t, bool) { return input[t * tile_words + threadIdx.x % 32]; },
      [&](uint64_t t, uint32_t packed, bool whole) { store_unshuffled(output, output_bytes, t, packed, whole); });
}

}  // namespace

void encode_cuda(const uint8_t* input, uint64_t input_bytes, uint32_t* output, cudaStream_t stream) {
  const uint64_t tiles = shuffled_size(input_bytes) / tile_bytes;
  if (tiles == 0) return;
  encode_kernel<<<tile_grid(encode_kernel, tiles), tile_block_threads, 0, stream>>>(input, input_bytes, output, tiles);
  FZG_CUDA_CHECK_LAUNCH();
}

void decode_cuda(const uint32_t* input, uint8_t* output, uint64_t output_bytes, cudaStream_t stream) {
  const uint64_t tiles = shuffled_size(output_bytes) / tile_bytes;
  if (tiles == 0) return;
  decode_kernel<<<tile_grid(decode_kernel, tiles), tile_block_threads, 0, stream>>>(input, output, output_bytes, tiles);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::bitshuffle
