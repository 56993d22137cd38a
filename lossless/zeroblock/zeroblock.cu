// CUDA backend of zero-block: the CPU's layout, placed by the shared scan (varlen/) instead of
// atomics.
//
// Encode: `group_flags_kernel` gives each group one warp, lane b owning block b; a ballot
// forms the group's 32 block flags (reads the input once). One scan over groups of
// (flag word present, popcount) pairs places everything; `place_kernel` writes the flag word
// and non-zero blocks of each non-empty group (reads only the non-zero part again) and
// `group_bits_kernel` packs one bit per group.
// Decode: one pass (plan_kernel) finds each group's flag word and first block and checks the
// stream as the CPU does, on the device (core/device_checks.hh); one warp per group then
// writes its blocks or zeros.
#include <cub/block/block_scan.cuh>

#include "core/error.hh"
#include "lossless/zeroblock/zeroblock_plan.cuh"
#include "runtime/cuda_check.cuh"
#include "runtime/device_words.cuh"
#include "runtime/launch.cuh"
#include "varlen/lookback.cuh"
#include "varlen/scan.cuh"

namespace fzg::zeroblock {

namespace {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;

struct Shape {
  uint64_t bytes, words, blocks, groups;
  uint32_t block_words;
};

Shape shape_of(const Layout& L, uint64_t bytes) { return {bytes, L.words, L.blocks, L.groups, L.block_words}; }

__global__ void __launch_bounds__(block_threads) group_flags_kernel(const uint8_t* __restrict__ input, Shape s,
                                                                    uint32_t* __restrict__ flags) {
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t g = global_warp(); g < s.groups; g += warp_count()) {
    const uint64_t block = g * blocks_per_group + lane;
    bool nonzero = false;
    if (block < s.blocks)
      for (uint32_t w = 0; w < s.block_words; ++w) nonzero |= load_word(input, s.bytes, block * s.block_words + w) != 0;
    const uint32_t group = __ballot_sync(0xffffffffu, nonzero);
    if (lane == 0) flags[g] = group;
  }
}

__global__ void __launch_bounds__(block_threads) place_kernel(const uint8_t* __restrict__ input, Shape s,
                                                              const uint32_t* __restrict__ flags,
                                                              const GroupOffset* __restrict__ offsets,
                                                              uint32_t* __restrict__ block_flags,
                                                              uint32_t* __restrict__ blocks) {
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t g = global_warp(); g < s.groups; g += warp_count()) {
    const uint32_t group = flags[g];
    if (group == 0) continue;
    if (lane == 0) block_flags[offsets[g].flag] = group;
    if (!(group >> lane & 1u)) continue;
    const uint64_t slot = offsets[g].block + __popc(group & ((1u << lane) - 1u));
    const uint64_t block = g * blocks_per_group + lane;
    for (uint32_t w = 0; w < s.block_words; ++w)
      blocks[slot * s.block_words + w] = load_word(input, s.bytes, block * s.block_words + w);
  }
}

__global__ void group_bits_kernel(const uint32_t* __restrict__ flags, uint64_t groups, uint32_t* __restrict__ bits) {
  const uint64_t words = (groups + 31) / 32;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < words; i += uint64_t(gridDim.x) * blockDim.x) {
    uint32_t word = 0;
    for (uint32_t b = 0; b < 32 && 32 * i + b < groups; ++b) word |= uint32_t(flags[32 * i + b] != 0) << b;
    bits[i] = word;
  }
}

struct GroupTerm {
  const uint32_t* flags;
  uint64_t groups;
  __device__ GroupOffset operator()(uint64_t g) const {
    if (g >= groups) return {0, 0};
    return {flags[g] != 0, uint64_t(__popc(flags[g]))};
  }
};

// Decode's plan, one pass (decoupled look-back, varlen/lookback.cuh): a block takes the next
// chunk of 64 group-bit words (2048 groups), a thread a word for the scan. Where the chunk's
// flag words start is the look-back over the set group bits before it; its warps then fetch
// each group's flag word into a dense per-group array (8 words a warp, a lane a group:
// coalesced; with 32 words a warp and 8192 groups a chunk the plan took ~12 us at any size,
// its warps' loops the latency, 13 blocks busy on a 2D field's 466 KB stream), with the checks the CPU
// makes (a set group bit past G, a flag word past the stream, an empty flag word, a flag past
// the last block); where its blocks start is a second look-back, over the flags' popcounts,
// and each group's first block follows. The last chunk checks the totals against the stream's
// size and says where the blocks lie (placement). Two launches (a memset and this) in place of
// two device-wide scans, a check kernel and a placement kernel, whose dispatches took ~50 us of
// host time in a 2D field's decompress call.
constexpr uint32_t plan_threads = 256, plan_warps = plan_threads / 32;
constexpr uint32_t plan_words = 64, warp_words = plan_words / plan_warps;  // a chunk's, a warp's
static_assert(plan_words <= plan_threads && plan_words % plan_warps == 0, "a chunk's words split over its warps");
enum Bad : uint32_t { bits_past_groups = 1, flag_past_stream = 2, empty_flags = 4 };
using PlanLookBack = varlen::LookBack<1>;

struct PlanTargets {
  PlanLookBack flags, blocks;  // look-backs over flag words and over blocks
  unsigned long long* bad;     // the kinds of check a chunk failed (Bad), before it publishes its blocks
  uint64_t* placement;         // StreamView::placement
  uint32_t* group_flags;
  uint64_t* block_index;
};

// Six blocks an SM (40 registers): left to itself ptxas also took 40 but spilled two lane
// masks across the flag loads.
__global__ void __launch_bounds__(plan_threads, 6) plan_kernel(const uint32_t* __restrict__ group_bits,
                                                               const uint32_t* __restrict__ block_flags,
                                                               uint64_t groups, uint64_t blocks, uint64_t available,
                                                               uint32_t block_words, uint64_t chunks, PlanTargets out,
                                                               Checks checks) {
  using Scan = cub::BlockScan<uint32_t, plan_threads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ uint64_t chunk_flags, chunk_blocks;  // where the chunk's flag words and blocks start
  __shared__ uint32_t warp_blocks[plan_warps];
  __shared__ uint32_t word_bits[plan_words], word_flags_before[plan_words];  // the chunk's words, their scan
  __shared__ uint64_t chunk;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint64_t words = (groups + 31) / 32;
  for (;;) {
    if (threadIdx.x == 0) chunk = out.flags.claim(0);
    __syncthreads();
    const uint64_t c = chunk;
    if (c >= chunks) return;  // uniform
    const uint64_t word = c * plan_words + threadIdx.x;
    uint32_t bits = threadIdx.x < plan_words && word < words ? group_bits[word] : 0u;
    uint32_t bad = 0;
    if (threadIdx.x < plan_words && word == words - 1 && groups % 32) {  // bits past the last group
      bad = (bits >> (groups % 32)) != 0 ? bits_past_groups : 0u;
      bits &= (1u << (groups % 32)) - 1u;
    }
    uint32_t flag_before, chunk_flag_words;
    Scan(scan).ExclusiveSum(uint32_t(__popc(bits)), flag_before, chunk_flag_words);
    if (threadIdx.x < plan_words) word_bits[threadIdx.x] = bits, word_flags_before[threadIdx.x] = flag_before;
    if (warp == 0) {
      if (lane == 0 && c > 0) out.flags.publish_aggregate(c, {chunk_flag_words});
      const uint64_t before = out.flags.exclusive_prefix(c).v[0];
      if (lane == 0) {
        out.flags.publish_inclusive(c, {before + chunk_flag_words});
        chunk_flags = before;
      }
    }
    __syncthreads();
    // Each group's flag word, a warp's words in turn, a lane a group; all the warp's loads
    // issued before the first is used (one at a time, each waited for, the plan took 35 us a
    // chunk of 65 M values on an H100), and kept for the first blocks below.
    const uint32_t* my_bits = word_bits + warp * warp_words;
    const uint32_t* my_flags_before = word_flags_before + warp * warp_words;
    const uint64_t group0 = (c * plan_words + warp * warp_words) * 32 + lane;  // this lane's group of word 0
    uint32_t flags[warp_words];
#pragma unroll
    for (uint32_t k = 0; k < warp_words; ++k) {
      const uint32_t w = my_bits[k];
      const uint64_t slot = chunk_flags + my_flags_before[k] + __popc(w & ((1u << lane) - 1u));
      const bool set = w >> lane & 1u;
      flags[k] = set && slot < available ? block_flags[slot] : 0u;
      if (set && slot >= available) bad |= flag_past_stream;
    }
    uint32_t blocks_here = 0;
#pragma unroll
    for (uint32_t k = 0; k < warp_words; ++k) {
      const uint64_t g = group0 + 32 * k;
      const bool set = my_bits[k] >> lane & 1u;
      const uint64_t valid = blocks - g * blocks_per_group;
      if (set && valid < blocks_per_group && (flags[k] >> valid) != 0) bad |= flag_past_stream;
      else if (set && flags[k] == 0) bad |= empty_flags;
      if (g < groups) out.group_flags[g] = flags[k];
      blocks_here += __popc(flags[k]);
    }
    blocks_here = __reduce_add_sync(0xffffffffu, blocks_here);
    bad = __reduce_or_sync(0xffffffffu, bad);
    if (bad && lane == 0) atomicOr(out.bad, static_cast<unsigned long long>(bad));
    if (lane == 0) warp_blocks[warp] = blocks_here;
    __threadfence();  // a chunk's `bad` before its blocks' counts (the last chunk reads both)
    __syncthreads();
    if (warp == 0) {
      uint32_t total;
      const uint32_t before_warp = warp_exclusive_sum(lane < plan_warps ? warp_blocks[lane] : 0u, total);
      if (lane < plan_warps) warp_blocks[lane] = before_warp;
      if (lane == 0 && c > 0) out.blocks.publish_aggregate(c, {total});
      const uint64_t before = out.blocks.exclusive_prefix(c).v[0];
      if (lane == 0) {
        // Fenced: the chunks before this one set their `bad` before publishing, and whoever
        // reads this inclusive count then reads `bad` too.
        __threadfence();
        out.blocks.publish_inclusive(c, {before + total});
        chunk_blocks = before;
        if (c == chunks - 1) {  // every chunk before has published its blocks, and its `bad` before them
          __threadfence();
          const uint64_t flag_words = chunk_flags + chunk_flag_words, stored = (before + total) * block_words;
          const unsigned long long failed = *reinterpret_cast<volatile unsigned long long*>(out.bad);
          const bool flags_ok = failed == 0 && flag_words <= available;
          const bool size_ok = flags_ok && available - flag_words == stored;
          out.placement[0] = size_ok ? flag_words : 0;
          out.placement[1] = !size_ok;
          // The CPU's message where it checks first: the group bits, then each group's flags.
          if (failed & bits_past_groups) *checks.group_flags = 1;
          else if (failed & flag_past_stream || flag_words > available) *checks.flags = 1;
          else if (failed & empty_flags) *checks.empty = 1;
          else if (!size_ok) *checks.size = 1;
        }
      }
    }
    __syncthreads();
    // Each group's first block.
    uint64_t next = chunk_blocks + warp_blocks[warp];
#pragma unroll
    for (uint32_t k = 0; k < warp_words; ++k) {
      const uint64_t g = group0 + 32 * k;
      uint32_t word_blocks;  // 0 past the last group (its bit is masked off)
      const uint32_t before = warp_exclusive_sum(__popc(flags[k]), word_blocks);
      if (g < groups) out.block_index[g] = next + before;
      next += word_blocks;
    }
    __syncthreads();  // `chunk` and the shared offsets are rewritten for the next chunk
  }
}

__global__ void __launch_bounds__(block_threads) expand_kernel(StreamView v, Shape s, uint8_t* __restrict__ output) {
  const uint32_t lane = threadIdx.x % 32;
  const BlockWords stored_words = v.blocks();
  const bool failed = stored_words.failed;  // then zeros (the call fails at its end)
  for (uint64_t g = global_warp(); g < s.groups; g += warp_count()) {
    const uint64_t block = g * blocks_per_group + lane;
    if (block >= s.blocks) continue;
    const uint32_t group = failed ? 0u : v.flags_of(g);
    const bool stored = group >> lane & 1u;
    const uint64_t slot = stored ? v.first_block(g) + __popc(group & ((1u << lane) - 1u)) : 0;
    for (uint32_t w = 0; w < s.block_words; ++w) {
      const uint64_t word = block * s.block_words + w;
      if (word >= s.words) break;
      store_word(output, s.bytes, word, stored ? stored_words.at(slot * s.block_words + w) : 0u);
    }
  }
}

template <typename Kernel>
unsigned warps_grid(Kernel kernel, uint64_t groups) {
  return resident_grid(kernel, block_threads, groups, warps_per_block);
}

}  // namespace

GroupOffset plan_encode(const uint32_t* flags, uint64_t groups, GroupOffset* offsets, cudaStream_t stream) {
  varlen::exclusive_scan(GroupTerm{flags, groups}, groups, offsets, GroupOffset{0, 0}, varlen::Plus{}, stream);
  return read_back(offsets + groups, stream);
}

void write_group_bits(const uint32_t* flags, uint64_t groups, uint32_t* bits, cudaStream_t stream) {
  group_bits_kernel<<<grid_for((groups + 31) / 32, 256), 256, 0, stream>>>(flags, groups, bits);
  FZG_CUDA_CHECK_LAUNCH();
}

DecodePlan plan_decode(const uint32_t* input, uint64_t input_bytes, const Layout& L, const Checks& checks,
                       cudaStream_t stream) {
  require_data(input_bytes % 4 == 0 && input_bytes / 4 >= L.group_flag_words, "zero-block flags");
  const uint64_t available = input_bytes / 4 - L.group_flag_words;
  const uint64_t chunks = (L.group_flag_words + plan_words - 1) / plan_words;
  const uint64_t state = PlanLookBack::words(chunks);
  DecodePlan plan;
  // [flags look-back | blocks look-back | bad] (zeroed) | placement[2] | block_index[groups] | group_flags[groups]
  plan.scratch = Buffer::device((2 * state + 3 + L.groups) * sizeof(uint64_t) + L.groups * sizeof(uint32_t), stream);
  auto* words = plan.scratch.as<unsigned long long>();
  FZG_CUDA_CHECK(cudaMemsetAsync(words, 0, (2 * state + 1) * sizeof(uint64_t), stream));
  PlanTargets out;
  out.flags = PlanLookBack::at(words, chunks);
  out.blocks = PlanLookBack::at(words + state, chunks);
  out.bad = words + 2 * state;
  out.placement = reinterpret_cast<uint64_t*>(out.bad + 1);
  out.block_index = out.placement + 2;
  out.group_flags = reinterpret_cast<uint32_t*>(out.block_index + L.groups);
  plan_kernel<<<resident_grid(plan_kernel, plan_threads, chunks, 1), plan_threads, 0, stream>>>(
      input, input + L.group_flag_words, L.groups, L.blocks, available, L.block_words, chunks, out, checks);
  FZG_CUDA_CHECK_LAUNCH();
  plan.view = {out.group_flags, out.block_index, input + L.group_flag_words, out.placement};
  return plan;
}

Buffer encode_cuda(const uint8_t* input, uint64_t input_bytes, uint32_t block_words, cudaStream_t stream) {
  const Layout L(input_bytes, block_words);
  if (L.groups == 0) return Buffer::device(0, stream);
  const Shape s = shape_of(L, input_bytes);
  Buffer scratch = Buffer::device((L.groups + 1) * sizeof(GroupOffset) + L.groups * sizeof(uint32_t), stream);
  GroupOffset* offsets = scratch.as<GroupOffset>();
  uint32_t* flags = reinterpret_cast<uint32_t*>(offsets + L.groups + 1);
  group_flags_kernel<<<warps_grid(group_flags_kernel, L.groups), block_threads, 0, stream>>>(input, s, flags);
  FZG_CUDA_CHECK_LAUNCH();
  const GroupOffset total = plan_encode(flags, L.groups, offsets, stream);
  Buffer out = Buffer::device(4 * (L.group_flag_words + total.flag + total.block * block_words), stream);
  uint32_t* block_flags = out.as<uint32_t>() + L.group_flag_words;
  place_kernel<<<warps_grid(place_kernel, L.groups), block_threads, 0, stream>>>(input, s, flags, offsets, block_flags,
                                                                   block_flags + total.flag);
  FZG_CUDA_CHECK_LAUNCH();
  write_group_bits(flags, L.groups, out.as<uint32_t>(), stream);
  return out;
}

void decode_cuda(const uint32_t* input, uint64_t input_bytes, uint32_t block_words, uint8_t* output,
                 uint64_t output_bytes, const Checks& checks, cudaStream_t stream) {
  const Layout L(output_bytes, block_words);
  if (L.groups == 0) return require_data(input_bytes == 0, "zero-block stream size");
  const DecodePlan plan = plan_decode(input, input_bytes, L, checks, stream);
  expand_kernel<<<warps_grid(expand_kernel, L.groups), block_threads, 0, stream>>>(plan.view, shape_of(L, output_bytes), output);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::zeroblock
