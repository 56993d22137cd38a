// Fused bitshuffle + zero-block (block_words 1) on the GPU.
// Work decomposition: one warp per 32-word tile = one zero-block group, `tiles_per_pass`
// tiles loaded before any is shuffled.
// Encode is one pass over the input: a block takes the next chunk of 128 tiles, flags them,
// finds where its output goes by the shared decoupled look-back (varlen/lookback.cuh) over
// the chunks before it, and writes its flag words and blocks there. The blocks region
// starts after every flag word, a count known only at the end, so the blocks go to a fixed
// place in a scratch with room for the most flag words before them, and the flag words and
// group bits are copied in front once counted (a few MB): the stream is a slice of the
// scratch and the input is read once. The scratch has room for every block, so no input
// takes another path: one that held half the input's blocks sent codes of ratio below 2
// (a 100 M-value field at rel 1e-4) through a second, three-pass encode (flags, CUB scan,
// place) after the first, ~330 us of a ~1.1 ms call on an H100. Decode reads the stream and
// writes each word once.
#include <algorithm>
#include <cstring>
#include <memory>

#include "bitshuffle/bitshuffle.cuh"
#include "core/error.hh"
#include "fusions/shuffle_pack/shuffle_pack.hh"
#include "lossless/zeroblock/zeroblock_plan.cuh"
#include "runtime/cuda_check.cuh"
#include "runtime/device_words.cuh"
#include "runtime/launch.cuh"
#include "runtime/timer.hh"
#include "varlen/lookback.cuh"

namespace fzg::shuffle_pack {

namespace {

using bitshuffle::tile_block_threads;
using bitshuffle::tile_words;
using bitshuffle::tiles_per_pass;

// The kernels walk tiles with for_each_tile (device_words.cuh): whole tiles in passes of
// `tiles_per_pass` through plain word pointers, the ragged rest through the byte-safe helpers.

// Single-pass encode. A chunk is 128 tiles (16 KiB of input): 16 per warp of a 256-thread
// block, all loaded before any is used. Chunks this large keep the look-back (one round trip
// through L2 per step) off the critical path: with 32-tile chunks the pass took 1.1 ms.
constexpr uint32_t chunk_warps = tile_block_threads / 32;
constexpr uint32_t warp_tiles = 16;
constexpr uint32_t chunk_tiles = chunk_warps * warp_tiles;
static_assert(warp_tiles == 16, "a warp's group bits are one little-endian u16 of the bitmap");

using LookBack = varlen::LookBack<2>;  // counts: flag words, blocks

struct PackTargets {
  uint16_t* group_bits;  // [chunks * chunk_warps]: each warp's 16 group bits
  uint32_t* flags;       // [tiles]: dense, in group order
  uint32_t* blocks;      // [blocks]: room for one a word of the input
};

// The chunks of an input of `tiles` tiles, `whole_tiles` of them entire, in the order
// blocks claim them.
__global__ void __launch_bounds__(tile_block_threads) pack_kernel(const uint8_t* __restrict__ input,
                                                                  uint64_t input_bytes, uint64_t whole_tiles,
                                                                  uint64_t tiles, uint64_t chunks, LookBack lb,
                                                                  PackTargets out) {
  __shared__ uint32_t warp_flag_words[chunk_warps], warp_blocks[chunk_warps];
  __shared__ uint32_t groups[chunk_warps][warp_tiles];  // here rather than in registers: occupancy
  __shared__ zeroblock::GroupOffset chunk_start;
  __shared__ uint64_t chunk;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const auto* words = reinterpret_cast<const uint32_t*>(input);
  for (;;) {
    if (threadIdx.x == 0) chunk = lb.claim(0);
    __syncthreads();
    const uint64_t c = chunk;
    if (c >= chunks) return;  // uniform across the block
    const uint64_t first = c * chunk_tiles + warp * warp_tiles;
    uint32_t w[warp_tiles];
    if (first + warp_tiles <= whole_tiles) {
      const uint32_t* src = words + first * tile_words + lane;
#pragma unroll
      for (uint32_t k = 0; k < warp_tiles; ++k) w[k] = src[k * tile_words];
    } else {
#pragma unroll
      for (uint32_t k = 0; k < warp_tiles; ++k)
        w[k] = first + k < tiles ? load_word(input, input_bytes, (first + k) * tile_words + lane) : 0u;
    }
    uint32_t flag_words = 0, blocks = 0, bits = 0;
#pragma unroll
    for (uint32_t k = 0; k < warp_tiles; ++k) {
      const uint32_t planes = __reduce_or_sync(0xffffffffu, w[k]);
      const uint32_t group = __ballot_sync(0xffffffffu, (planes >> bitshuffle::plane_at(lane)) & 1u);
      if (lane == k) groups[warp][k] = group;
      flag_words += group != 0;
      blocks += __popc(group);
      bits |= uint32_t(group != 0) << k;
    }
    if (lane == 0) {
      warp_flag_words[warp] = flag_words, warp_blocks[warp] = blocks;
      out.group_bits[c * chunk_warps + warp] = uint16_t(bits);
    }
    __syncthreads();
    if (warp == 0) {
      // Exclusive offsets of the warps within the chunk, and the chunk's totals.
      uint32_t f = lane < chunk_warps ? warp_flag_words[lane] : 0u, b = lane < chunk_warps ? warp_blocks[lane] : 0u;
#pragma unroll
      for (uint32_t d = 1; d < chunk_warps; d <<= 1) {
        const uint32_t fu = __shfl_up_sync(0xffffffffu, f, d), bu = __shfl_up_sync(0xffffffffu, b, d);
        if (lane >= d) f += fu, b += bu;
      }
      const uint32_t total_f = __shfl_sync(0xffffffffu, f, chunk_warps - 1);
      const uint32_t total_b = __shfl_sync(0xffffffffu, b, chunk_warps - 1);
      if (lane < chunk_warps) warp_flag_words[lane] = f - warp_flag_words[lane], warp_blocks[lane] = b - warp_blocks[lane];
      if (lane == 0 && c > 0) lb.publish_aggregate(c, {total_f, total_b});
      const varlen::Counts<2> before = lb.exclusive_prefix(c);
      if (lane == 0) {
        lb.publish_inclusive(c, {before.v[0] + total_f, before.v[1] + total_b});
        chunk_start = {before.v[0], before.v[1]};
      }
    }
    __syncthreads();
    uint64_t flag_at = chunk_start.flag + warp_flag_words[warp], block_at = chunk_start.block + warp_blocks[warp];
#pragma unroll
    for (uint32_t k = 0; k < warp_tiles; ++k) {
      const uint32_t group = groups[warp][k];
      if (!group) continue;  // uniform per warp
      const uint32_t shuffled = bitshuffle::shuffle_warp(w[k]);
      if (lane == 0) out.flags[flag_at] = group;
      const uint64_t at = block_at + __popc(group & ((1u << lane) - 1u));
      if (shuffled) out.blocks[at] = shuffled;
      flag_at += 1;
      block_at += __popc(group);
    }
    __syncthreads();  // `chunk` and the warp offsets are rewritten for the next chunk
  }
}

// The stream's head: group bits, then the flag words, copied in just before the blocks, where
// the totals (on the device, flag words + 1 first) say the flag words end. The copy never
// overlaps its sources: the blocks' fixed place leaves room for the most flag words there
// can be after the dense flag words.
__global__ void assemble_kernel(uint32_t* __restrict__ words, const unsigned long long* __restrict__ totals,
                                uint64_t bits_at, uint64_t flags_at, uint64_t blocks_at, uint64_t group_flag_words) {
  const uint64_t flag_words = totals[0] - 1;
  const uint64_t head = blocks_at - flag_words - group_flag_words;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < group_flag_words + flag_words;
       i += uint64_t(gridDim.x) * blockDim.x)
    words[head + i] = i < group_flag_words ? words[bits_at + i] : words[flags_at + i - group_flag_words];
}

__device__ __forceinline__ uint32_t stored_word(const zeroblock::StreamView& v, const zeroblock::BlockWords& blocks,
                                                uint64_t t) {
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t group = v.flags_of(t);
  return (group >> lane & 1u) ? blocks.at(v.first_block(t) + __popc(group & ((1u << lane) - 1u))) : 0u;
}

// The output's `tiles` tiles (output_bytes, `whole_tiles` of its tiles entire).
__global__ void __launch_bounds__(tile_block_threads) expand_kernel(zeroblock::StreamView v, uint64_t whole_tiles,
                                                                    uint64_t tiles, uint8_t* __restrict__ output,
                                                                    uint64_t output_bytes) {
  const zeroblock::BlockWords blocks = v.blocks();
  auto store = [&](uint64_t t, uint32_t packed, bool whole) {
    bitshuffle::store_unshuffled(output, output_bytes, t, packed, whole);
  };
  if (blocks.failed)  // zeros (the call fails at its end); checked once, not per word
    for_each_tile<tiles_per_pass>(whole_tiles, tiles, [&](uint64_t, bool) { return 0u; }, store);
  else
    for_each_tile<tiles_per_pass>(whole_tiles, tiles, [&](uint64_t t, bool) { return stored_word(v, blocks, t); }, store);
}

}  // namespace

// Scratch, in words: [look-back state | group bits | flag words, dense | room for the
// stream's head | blocks]. The blocks land at a fixed place, after room for the most flag
// words there can be; once their count is known the flag words and group bits are copied in
// just before them (a few MB), and the stream is that slice of the scratch.
Buffer encode_cuda(const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  const zeroblock::Layout L(bitshuffle::shuffled_size(input_bytes), 1);
  const uint64_t tiles = L.groups;
  if (tiles == 0) return Buffer::device(0, stream);
  const uint64_t chunks = (tiles + chunk_tiles - 1) / chunk_tiles;
  const uint64_t state_words = 2 * LookBack::words(chunks);
  const uint64_t bits_at = state_words, flags_at = bits_at + chunks * chunk_tiles / 32;
  const uint64_t blocks_at = flags_at + tiles + L.group_flag_words + tiles;
  Buffer scratch = Buffer::device(4 * (blocks_at + L.words), stream);
  FZG_CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0, 4 * state_words, stream));
  uint32_t* words = scratch.as<uint32_t>();
  PackTargets targets;
  targets.group_bits = reinterpret_cast<uint16_t*>(words + bits_at);
  targets.flags = words + flags_at;
  targets.blocks = words + blocks_at;
  pack_kernel<<<resident_grid(pack_kernel, tile_block_threads, chunks, 1), tile_block_threads, 0, stream>>>(
      input, input_bytes, input_bytes / bitshuffle::tile_bytes, tiles, chunks,
      LookBack::at(scratch.as<unsigned long long>(), chunks), targets);
  FZG_CUDA_CHECK_LAUNCH();
  // The head's copy is queued before the totals' read-back (so the host's wait takes its few
  // us too): a stream made from the totals is then final, whichever stream reads it.
  const unsigned long long* totals_at = scratch.as<unsigned long long>() + LookBack::inclusive_word(chunks, chunks - 1);
  assemble_kernel<<<grid_for(tiles + L.group_flag_words, tile_block_threads, 4), tile_block_threads, 0, stream>>>(
      words, totals_at, bits_at, flags_at, blocks_at, L.group_flag_words);
  FZG_CUDA_CHECK_LAUNCH();
  // The totals (flag words + 1, blocks + 1) are waited for when the stream is first asked for
  // (Buffer::deferred): the executor first makes the pending streams of the steps before this
  // one, whose read-backs were queued first (core/executor.cc, encode_chunk).
  auto totals = std::make_shared<QueuedReadBack>(totals_at, 2 * sizeof(unsigned long long), stream);
  return Buffer::deferred([scratch, totals, blocks_at, group_flag_words = L.group_flag_words] {
    unsigned long long t[2];
    std::memcpy(t, totals->wait(), sizeof t);
    trace::mark("shuffle-pack: totals read");
    const uint64_t flag_words = t[0] - 1, blocks = t[1] - 1;
    const uint64_t head = blocks_at - flag_words - group_flag_words;
    return scratch.slice(4 * head, 4 * (group_flag_words + flag_words + blocks));
  });
}

void decode_cuda(const uint32_t* input, uint64_t input_bytes, uint8_t* output, uint64_t output_bytes,
                 const zeroblock::Checks& checks, cudaStream_t stream) {
  const zeroblock::Layout L(bitshuffle::shuffled_size(output_bytes), 1);
  const uint64_t tiles = L.groups;
  if (tiles == 0) {
    require_data(input_bytes == 0, "zero-block stream size");
    return;
  }
  const zeroblock::DecodePlan plan = zeroblock::plan_decode(input, input_bytes, L, checks, stream);
  trace::mark("shuffle-pack: decode planned");
  expand_kernel<<<bitshuffle::tile_grid(expand_kernel, tiles), tile_block_threads, 0, stream>>>(
      plan.view, output_bytes / bitshuffle::tile_bytes, tiles, output, output_bytes);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::shuffle_pack
