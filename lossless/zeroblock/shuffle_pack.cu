// Fused bitshuffle + zero-block (block_words 1) on the GPU.
// Work decomposition: one warp per 32-word tile = one zero-block group, `tiles_per_pass`
// tiles loaded before any is shuffled. Encode reads the input twice (flags, then the
// non-zero tiles again to place them) and writes only the encoded stream: 2 x 4 bytes read
// per word instead of bitshuffle's 4 + 4 and zero-block's 4 + 4. Decode reads the stream
// and writes each word once.
#include "bitshuffle/bitshuffle.cuh"
#include "lossless/zeroblock/shuffle_pack.hh"
#include "lossless/zeroblock/zeroblock_plan.cuh"
#include "pipeline/cuda_check.cuh"
#include "pipeline/device_words.cuh"
#include "pipeline/error.hh"
#include "pipeline/launch.cuh"
#include "pipeline/timer.hh"

namespace fzg::shuffle_pack {

namespace {

using bitshuffle::tile_block_threads;
using bitshuffle::tile_words;
using bitshuffle::tiles_per_pass;

// The kernels walk tiles with for_each_tile (device_words.cuh): whole tiles in passes of
// `tiles_per_pass` through plain word pointers, the ragged rest through the byte-safe helpers.

__device__ __forceinline__ void flag_tile(uint64_t t, uint32_t word, uint32_t* flags) {
  // Plane b of the tile is non-zero when any word has bit b: one OR across the warp, no
  // transpose. Output position p holds plane plane_at(p).
  const uint32_t planes = __reduce_or_sync(0xffffffffu, word);
  const uint32_t nonzero = __ballot_sync(0xffffffffu, (planes >> bitshuffle::plane_at(threadIdx.x % 32)) & 1u);
  if (threadIdx.x % 32 == 0) flags[t] = nonzero;
}

__global__ void __launch_bounds__(tile_block_threads) flags_kernel(const uint8_t* __restrict__ input,
                                                                   uint64_t input_bytes, uint64_t tiles,
                                                                   uint32_t* __restrict__ flags) {
  for_each_tile<tiles_per_pass>(
      input_bytes / bitshuffle::tile_bytes, tiles,
      [&](uint64_t t, bool whole) { return bitshuffle::tile_word(input, input_bytes, t, whole); },
      [&](uint64_t t, uint32_t word, bool) { flag_tile(t, word, flags); });
}

__device__ __forceinline__ void place_tile(uint32_t group, uint32_t word, const zeroblock::GroupOffset& at,
                                           uint32_t* block_flags, uint32_t* blocks) {
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t shuffled = bitshuffle::shuffle_warp(word);
  if (lane == 0) block_flags[at.flag] = group;
  if (shuffled) blocks[at.block + __popc(group & ((1u << lane) - 1u))] = shuffled;
}

__global__ void __launch_bounds__(tile_block_threads) place_kernel(const uint8_t* __restrict__ input, uint64_t input_bytes,
                                                              uint64_t tiles, const uint32_t* __restrict__ flags,
                                                              const zeroblock::GroupOffset* __restrict__ offsets,
                                                              uint32_t* __restrict__ block_flags,
                                                              uint32_t* __restrict__ blocks) {
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t main_tiles = input_bytes / bitshuffle::tile_bytes / tiles_per_pass * tiles_per_pass;
  const auto* words = reinterpret_cast<const uint32_t*>(input);
  for (uint64_t base = global_warp() * tiles_per_pass; base < main_tiles; base += warp_count() * tiles_per_pass) {
    // Flags, offsets and words are independent loads, all issued before the first is used:
    // loading a tile's words only once its flag says it is non-zero would chain three
    // latencies per pass. An all-zero tile's words are read for nothing (the flags pass
    // read them too), the price of keeping the loads in flight together.
    const uint32_t* src = words + base * tile_words + lane;
    uint32_t group[tiles_per_pass], w[tiles_per_pass];
    zeroblock::GroupOffset at[tiles_per_pass];
#pragma unroll
    for (int k = 0; k < tiles_per_pass; ++k) group[k] = flags[base + k];
#pragma unroll
    for (int k = 0; k < tiles_per_pass; ++k) at[k] = offsets[base + k];
#pragma unroll
    for (int k = 0; k < tiles_per_pass; ++k) w[k] = src[k * tile_words];
#pragma unroll
    for (int k = 0; k < tiles_per_pass; ++k)
      if (group[k]) place_tile(group[k], w[k], at[k], block_flags, blocks);  // uniform per warp
  }
  for (uint64_t t = main_tiles + global_warp(); t < tiles; t += warp_count())
    if (flags[t]) place_tile(flags[t], load_word(input, input_bytes, t * tile_words + lane), offsets[t], block_flags, blocks);
}

__device__ __forceinline__ uint32_t stored_word(const zeroblock::StreamView& v, uint64_t t) {
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t group = v.flags_of(t);
  return (group >> lane & 1u) ? v.blocks[v.first_block(t) + __popc(group & ((1u << lane) - 1u))] : 0u;
}

__global__ void __launch_bounds__(tile_block_threads) expand_kernel(zeroblock::StreamView v, uint64_t tiles,
                                                                    uint8_t* __restrict__ output,
                                                                    uint64_t output_bytes) {
  for_each_tile<tiles_per_pass>(
      output_bytes / bitshuffle::tile_bytes, tiles, [&](uint64_t t, bool) { return stored_word(v, t); },
      [&](uint64_t t, uint32_t packed, bool whole) {
        bitshuffle::store_unshuffled(output, output_bytes, t, packed, whole);
      });
}

}  // namespace

Buffer encode_cuda(const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  const zeroblock::Layout L(bitshuffle::shuffled_size(input_bytes), 1);
  const uint64_t tiles = L.groups;
  if (tiles == 0) return Buffer::device(0, stream);
  Buffer scratch = Buffer::device((tiles + 1) * sizeof(zeroblock::GroupOffset) + tiles * sizeof(uint32_t), stream);
  auto* offsets = scratch.as<zeroblock::GroupOffset>();
  auto* flags = reinterpret_cast<uint32_t*>(offsets + tiles + 1);
  flags_kernel<<<bitshuffle::tile_grid(flags_kernel, tiles), tile_block_threads, 0, stream>>>(input, input_bytes,
                                                                                              tiles, flags);
  FZG_CUDA_CHECK_LAUNCH();
  trace::mark("shuffle-pack: flags queued");
  const zeroblock::GroupOffset total = zeroblock::plan_encode(flags, tiles, offsets, stream);
  trace::mark("shuffle-pack: totals read");
  Buffer out = Buffer::device(4 * (L.group_flag_words + total.flag + total.block), stream);
  uint32_t* block_flags = out.as<uint32_t>() + L.group_flag_words;
  trace::mark("shuffle-pack: output allocated");
  place_kernel<<<bitshuffle::tile_grid(place_kernel, tiles), tile_block_threads, 0, stream>>>(
      input, input_bytes, tiles, flags, offsets, block_flags, block_flags + total.flag);
  FZG_CUDA_CHECK_LAUNCH();
  trace::mark("shuffle-pack: place queued");
  zeroblock::write_group_bits(flags, tiles, out.as<uint32_t>(), stream);
  return out;
}

void decode_cuda(const uint32_t* input, uint64_t input_bytes, uint8_t* output, uint64_t output_bytes,
                 cudaStream_t stream) {
  const zeroblock::Layout L(bitshuffle::shuffled_size(output_bytes), 1);
  if (L.groups == 0) return require_data(input_bytes == 0, "zero-block stream size");
  const zeroblock::DecodePlan plan = zeroblock::plan_decode(input, input_bytes, L, stream);
  trace::mark("shuffle-pack: decode planned");
  expand_kernel<<<bitshuffle::tile_grid(expand_kernel, L.groups), tile_block_threads, 0, stream>>>(
      plan.view, L.groups, output, output_bytes);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::shuffle_pack
