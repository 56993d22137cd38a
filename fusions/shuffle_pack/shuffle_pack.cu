// Fused bitshuffle + zero-block (block_words 1) on the GPU.
// Work decomposition: one warp per 32-word tile = one zero-block group, `tiles_per_pass`
// tiles loaded before any is shuffled.
// Encode is one pass over the input: a block takes the next chunk of 128 tiles, flags them,
// finds where its output goes by the shared decoupled look-back (varlen/lookback.cuh) over
// the chunks before it, and writes its flag words and blocks there. The blocks region
// starts after every flag word, a count known only at the end, so the blocks go to a fixed
// place in a scratch with room for the most flag words before them, and the flag words and
// group bits are copied in front once counted (a few MB): the stream is a slice of the
// scratch and the input is read once. The blocks scratch holds half the input: data that
// compress less than that take the two-pass path (flags, CUB scan, place), which needs no
// scratch. Decode reads the stream and writes each word once.
#include <algorithm>

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
  uint32_t* blocks;      // [capacity]: blocks past capacity are counted, not written
  uint64_t capacity;
};

// The carry (less than a chunk) in 16-byte words, each thread's loads issued together (a
// chain of dependent round trips would hold the launch up), the ragged end as u16. `from` and
// `to` are 16-byte aligned; nothing past `to + bytes` is written (the next slab's codes are
// being written there).
__device__ __forceinline__ void copy_carry(const uint8_t* window, const Carry& carry) {
  constexpr uint32_t per_thread = Carry::max_bytes / 16 / tile_block_threads;
  const uint64_t words = carry.bytes / 16;
  const auto* src = reinterpret_cast<const uint4*>(window + carry.from);
  auto* dst = reinterpret_cast<uint4*>(carry.to);
  uint4 w[per_thread];
#pragma unroll
  for (uint32_t k = 0; k < per_thread; ++k) {
    const uint64_t i = threadIdx.x + k * tile_block_threads;
    if (i < words) w[k] = src[i];
  }
#pragma unroll
  for (uint32_t k = 0; k < per_thread; ++k) {
    const uint64_t i = threadIdx.x + k * tile_block_threads;
    if (i < words) dst[i] = w[k];
  }
  const uint64_t tail = words * 16 + 2 * threadIdx.x;
  if (tail < carry.bytes)
    *reinterpret_cast<uint16_t*>(carry.to + tail) = *reinterpret_cast<const uint16_t*>(window + carry.from + tail);
}

// Chunks [first_chunk, end_chunk) of an input of `tiles` tiles, `whole_tiles` of them entire;
// `window` holds the input from chunk first_chunk on (window_bytes of it, to the input's end
// at most). Chunks of earlier launches count in the look-back like those of this one.
// The first block also copies `carry` (input past the launch's last chunk) out of the window.
__global__ void __launch_bounds__(tile_block_threads) pack_kernel(const uint8_t* __restrict__ window,
                                                                  uint64_t window_bytes, uint64_t whole_tiles,
                                                                  uint64_t tiles, uint64_t first_chunk,
                                                                  uint64_t end_chunk, LookBack lb, PackTargets out,
                                                                  Carry carry) {
  __shared__ uint32_t warp_flag_words[chunk_warps], warp_blocks[chunk_warps];
  __shared__ uint32_t groups[chunk_warps][warp_tiles];  // here rather than in registers: occupancy
  __shared__ zeroblock::GroupOffset chunk_start;
  __shared__ uint64_t chunk;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint64_t window_tile = first_chunk * chunk_tiles;
  const auto* words = reinterpret_cast<const uint32_t*>(window);
  if (blockIdx.x == 0) copy_carry(window, carry);
  for (;;) {
    if (threadIdx.x == 0) chunk = lb.claim(first_chunk);
    __syncthreads();
    const uint64_t c = chunk;
    if (c >= end_chunk) return;  // uniform across the block
    const uint64_t first = c * chunk_tiles + warp * warp_tiles, local = first - window_tile;
    uint32_t w[warp_tiles];
    if (first + warp_tiles <= whole_tiles) {
      const uint32_t* src = words + local * tile_words + lane;
#pragma unroll
      for (uint32_t k = 0; k < warp_tiles; ++k) w[k] = src[k * tile_words];
    } else {
#pragma unroll
      for (uint32_t k = 0; k < warp_tiles; ++k)
        w[k] = first + k < tiles ? load_word(window, window_bytes, (local + k) * tile_words + lane) : 0u;
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
      if (shuffled && at < out.capacity) out.blocks[at] = shuffled;
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

__device__ __forceinline__ uint32_t stored_word(const zeroblock::StreamView& v, uint64_t t) {
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t group = v.flags_of(t);
  return (group >> lane & 1u) ? v.blocks[v.first_block(t) + __popc(group & ((1u << lane) - 1u))] : 0u;
}

// Tiles [first_tile, first_tile + tiles) of the output into `window` (window_bytes of the
// output from tile first_tile on, `whole_tiles` of its tiles entire).
__global__ void __launch_bounds__(tile_block_threads) expand_kernel(zeroblock::StreamView v, uint64_t first_tile,
                                                                    uint64_t whole_tiles, uint64_t tiles,
                                                                    uint8_t* __restrict__ window,
                                                                    uint64_t window_bytes) {
  for_each_tile<tiles_per_pass>(
      whole_tiles, tiles, [&](uint64_t t, bool) { return stored_word(v, first_tile + t); },
      [&](uint64_t t, uint32_t packed, bool whole) {
        bitshuffle::store_unshuffled(window, window_bytes, t, packed, whole);
      });
}

// Two-pass encode (flags, CUB scan, place): no scratch for the blocks, for data whose blocks
// outgrow the single pass's.
Buffer encode_two_pass(const uint8_t* input, uint64_t input_bytes, const zeroblock::Layout& L, cudaStream_t stream) {
  const uint64_t tiles = L.groups;
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

}  // namespace

// Scratch, in words: [look-back state | group bits | flag words, dense | room for the
// stream's head | blocks]. The blocks land at a fixed place, after room for the most flag
// words there can be; once their count is known the flag words and group bits are copied in
// just before them (a few MB), and the stream is that slice of the scratch.
uint64_t DeviceEncoder::max_capacity(uint64_t input_bytes) {
  return zeroblock::Layout(bitshuffle::shuffled_size(input_bytes), 1).words / 2;
}

DeviceEncoder::DeviceEncoder(uint64_t input_bytes, cudaStream_t stream, uint64_t capacity)
    : input_bytes_(input_bytes), layout_(bitshuffle::shuffled_size(input_bytes), 1), stream_(stream) {
  const uint64_t tiles = layout_.groups;
  chunks_ = (tiles + chunk_tiles - 1) / chunk_tiles;
  capacity_ = std::min(capacity, layout_.words / 2);
  const uint64_t state_words = 2 * LookBack::words(chunks_);
  bits_at_ = state_words;
  flags_at_ = bits_at_ + chunks_ * chunk_tiles / 32;
  blocks_at_ = flags_at_ + tiles + layout_.group_flag_words + tiles;
  scratch_ = Buffer::device(4 * (blocks_at_ + capacity_), stream);
  FZG_CUDA_CHECK(cudaMemsetAsync(scratch_.data(), 0, 4 * state_words, stream));
}

const unsigned long long* DeviceEncoder::totals() const {
  return chunks_ ? scratch_.as<unsigned long long>() + LookBack::inclusive_word(chunks_, chunks_ - 1) : nullptr;
}

void DeviceEncoder::encode_chunks(uint64_t first, uint64_t end, const uint8_t* window, Carry carry,
                                  cudaStream_t stream) {
  if (first >= end) return;
  uint32_t* words = scratch_.as<uint32_t>();
  const LookBack lb = LookBack::at(scratch_.as<unsigned long long>(), chunks_);
  PackTargets targets;
  targets.group_bits = reinterpret_cast<uint16_t*>(words + bits_at_);
  targets.flags = words + flags_at_;
  targets.blocks = words + blocks_at_;
  targets.capacity = capacity_;
  const uint64_t window_bytes = input_bytes_ - first * chunk_bytes;
  pack_kernel<<<resident_grid(pack_kernel, tile_block_threads, end - first, 1), tile_block_threads, 0,
                stream ? stream : stream_>>>(window, window_bytes, input_bytes_ / bitshuffle::tile_bytes,
                                             layout_.groups, first, end, lb, targets, carry);
  FZG_CUDA_CHECK_LAUNCH();
  trace::mark("shuffle-pack: chunks queued");
}

void DeviceEncoder::assemble() {
  if (assembled_ || chunks_ == 0) return;
  assembled_ = true;
  assemble_kernel<<<grid_for(layout_.groups + layout_.group_flag_words, tile_block_threads, 4), tile_block_threads, 0,
                    stream_>>>(scratch_.as<uint32_t>(), totals(), bits_at_, flags_at_, blocks_at_,
                               layout_.group_flag_words);
  FZG_CUDA_CHECK_LAUNCH();
}

Buffer DeviceEncoder::finish(const unsigned long long totals[2]) {
  const uint64_t flag_words = totals[0] - 1;
  if (blocks(totals) > capacity_) return Buffer();
  assemble();  // already queued by a caller that overlapped it with reading the totals
  const uint64_t head = blocks_at_ - flag_words - layout_.group_flag_words;
  return scratch_.slice(4 * head, 4 * (layout_.group_flag_words + flag_words + blocks(totals)));
}

DeviceDecoder::DeviceDecoder(const uint32_t* input, uint64_t input_bytes, uint64_t output_bytes, cudaStream_t stream)
    : output_bytes_(output_bytes), stream_(stream) {
  const zeroblock::Layout L(bitshuffle::shuffled_size(output_bytes), 1);
  tiles_ = L.groups;
  if (tiles_ == 0) {
    require_data(input_bytes == 0, "zero-block stream size");
    return;
  }
  zeroblock::DecodePlan plan = zeroblock::plan_decode(input, input_bytes, L, stream);
  scratch_ = plan.scratch;
  group_flags_ = plan.view.group_flags, block_index_ = plan.view.block_index, blocks_ = plan.view.blocks;
  trace::mark("shuffle-pack: decode planned");
}

void DeviceDecoder::decode_tiles(uint64_t first, uint64_t end, uint8_t* window, cudaStream_t stream) {
  end = std::min(end, tiles_);
  if (first >= end) return;
  const uint64_t whole = output_bytes_ / bitshuffle::tile_bytes;
  const uint64_t window_bytes = std::min(end * bitshuffle::tile_bytes, output_bytes_) - first * bitshuffle::tile_bytes;
  expand_kernel<<<bitshuffle::tile_grid(expand_kernel, end - first), tile_block_threads, 0,
                  stream ? stream : stream_>>>(
      zeroblock::StreamView{group_flags_, block_index_, blocks_}, first, whole > first ? std::min(whole, end) - first : 0, end - first, window, window_bytes);
  FZG_CUDA_CHECK_LAUNCH();
}

Buffer encode_cuda(const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  const zeroblock::Layout L(bitshuffle::shuffled_size(input_bytes), 1);
  if (L.groups == 0) return Buffer::device(0, stream);
  DeviceEncoder encoder(input_bytes, stream);
  encoder.encode_chunks(0, encoder.chunks(), input);
  encoder.assemble();
  unsigned long long totals[2];
  copy_bytes(totals, Location::host, encoder.totals(), Location::device, sizeof totals, stream);
  trace::mark("shuffle-pack: totals read");
  Buffer single = encoder.finish(totals);
  return single.size() > 0 ? single : encode_two_pass(input, input_bytes, L, stream);
}

void decode_cuda(const uint32_t* input, uint64_t input_bytes, uint8_t* output, uint64_t output_bytes,
                 cudaStream_t stream) {
  DeviceDecoder decoder(input, input_bytes, output_bytes, stream);
  decoder.decode_tiles(0, decoder.tiles(), output);
}

}  // namespace fzg::shuffle_pack
