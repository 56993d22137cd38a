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

__global__ void __launch_bounds__(block_threads) encode_kernel(const uint8_t* __restrict__ input, uint64_t input_bytes,
                                                               uint32_t* __restrict__ output, uint64_t tiles) {
  const uint32_t lane = threadIdx.x % 32;
  const auto* words = reinterpret_cast<const uint32_t*>(input);
  for_each_tile<tiles_per_pass>(
      input_bytes / tile_bytes, tiles,
      [&](uint64_t t, bool whole) {
        return whole ? words[t * tile_words + lane] : load_word(input, input_bytes, t * tile_words + lane);
      },
      [&](uint64_t t, uint32_t word, bool) { output[t * tile_words + lane] = shuffle_warp(word); });
}

__global__ void __launch_bounds__(block_threads) decode_kernel(const uint32_t* __restrict__ input,
                                                               uint8_t* __restrict__ output, uint64_t output_bytes,
                                                               uint64_t tiles) {
  const uint32_t lane = threadIdx.x % 32;
  auto* words = reinterpret_cast<uint32_t*>(output);
  for_each_tile<tiles_per_pass>(
      output_bytes / tile_bytes, tiles, [&](uint64_t t, bool) { return input[t * tile_words + lane]; },
      [&](uint64_t t, uint32_t packed, bool whole) {
        const uint32_t word = unshuffle_warp(packed);
        if (whole) words[t * tile_words + lane] = word;
        else store_word(output, output_bytes, t * tile_words + lane, word);
      });
}

template <typename Kernel>
unsigned blocks_for(Kernel kernel, uint64_t tiles) {
  return resident_grid(kernel, block_threads, tiles, uint64_t(warps_per_block) * tiles_per_pass);
}

}  // namespace

void encode_cuda(const uint8_t* input, uint64_t input_bytes, uint32_t* output, cudaStream_t stream) {
  const uint64_t tiles = shuffled_size(input_bytes) / tile_bytes;
  if (tiles == 0) return;
  encode_kernel<<<blocks_for(encode_kernel, tiles), block_threads, 0, stream>>>(input, input_bytes, output, tiles);
  FZG_CUDA_CHECK_LAUNCH();
}

void decode_cuda(const uint32_t* input, uint8_t* output, uint64_t output_bytes, cudaStream_t stream) {
  const uint64_t tiles = shuffled_size(output_bytes) / tile_bytes;
  if (tiles == 0) return;
  decode_kernel<<<blocks_for(decode_kernel, tiles), block_threads, 0, stream>>>(input, output, output_bytes, tiles);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::bitshuffle
