// CUDA backend of zero-block: the CPU's layout, placed by the shared scan (varlen/) instead of
// atomics.
//
// Encode: `group_flags_kernel` gives each group one warp, lane b owning block b; a ballot
// forms the group's 32 block flags (reads the input once). One scan over groups of
// (flag word present, popcount) pairs places everything; `place_kernel` writes the flag word
// and non-zero blocks of each non-empty group (reads only the non-zero part again) and
// `group_bits_kernel` packs one bit per group.
// Decode: a scan over the group bits finds each group's flag word, `resolve_groups_kernel`
// copies it into a dense per-group array (checking it), a scan over the popcounts gives each
// group's first block, and a one-thread kernel checks the totals against the stream's size
// (on the device: see core/device_checks.hh); one warp per group then writes its blocks or zeros.
#include "core/error.hh"
#include "lossless/zeroblock/zeroblock_plan.cuh"
#include "runtime/cuda_check.cuh"
#include "runtime/device_words.cuh"
#include "runtime/launch.cuh"
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

struct GroupBit {
  const uint32_t* bits;
  uint64_t groups;
  __device__ uint64_t operator()(uint64_t g) const { return g < groups ? (bits[g / 32] >> (g % 32) & 1u) : 0u; }
};

struct DensePopCount {
  const uint32_t* group_flags;
  uint64_t groups;
  __device__ uint64_t operator()(uint64_t g) const { return g < groups ? __popc(group_flags[g]) : 0u; }
};

// Decode step 2: each group's flag word, fetched once into a dense array, with the checks the
// CPU makes too (a set group bit past G, a flag word past the stream, an empty flag word, a flag
// past the last block). Thread 0 also copies the count of set groups beside the totals.
__global__ void resolve_groups_kernel(const uint32_t* group_bits, const uint32_t* block_flags,
                                      const uint64_t* flag_index, uint64_t groups, uint64_t blocks, uint64_t available,
                                      uint32_t* group_flags, uint64_t* totals) {
  const uint64_t first = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  if (first == 0) {
    totals[2] = flag_index[groups];
    if (groups % 32 && (group_bits[(groups - 1) / 32] >> (groups % 32)) != 0) totals[1] = 1;
  }
  for (uint64_t g = first; g < groups; g += uint64_t(gridDim.x) * blockDim.x) {
    uint32_t flags = 0;
    if (group_bits[g / 32] >> (g % 32) & 1u) {
      const uint64_t slot = flag_index[g];
      flags = slot < available ? block_flags[slot] : 0u;
      const uint64_t valid = blocks - g * blocks_per_group;
      if (flags == 0 || (valid < blocks_per_group && (flags >> valid) != 0)) totals[1] = 1;
    }
    group_flags[g] = flags;
  }
}

// Decode step 4, the checks the CPU makes of the totals (flags as the groups say, the stream
// exactly flags + blocks), and where the blocks lie (see BlockWords).
__global__ void place_blocks_kernel(const uint64_t* totals, uint64_t group_flag_words, uint64_t available,
                                    uint32_t block_words, uint64_t* placement, Checks checks) {
  const uint64_t blocks = totals[0], bad = totals[1], flag_words = totals[2];
  const bool flags_ok = bad == 0 && flag_words <= available;
  const bool size_ok = flags_ok && available - flag_words == blocks * block_words;
  placement[0] = size_ok ? group_flag_words + flag_words : 0;
  placement[1] = !size_ok;
  if (!flags_ok) *checks.flags = 1;
  else if (!size_ok) *checks.size = 1;
}

__global__ void __launch_bounds__(block_threads) expand_kernel(StreamView v, Shape s, uint8_t* __restrict__ output) {
  const uint32_t lane = threadIdx.x % 32;
  const BlockWords stored_words = v.blocks();
  if (stored_words.failed) return;
  for (uint64_t g = global_warp(); g < s.groups; g += warp_count()) {
    const uint64_t block = g * blocks_per_group + lane;
    if (block >= s.blocks) continue;
    const uint32_t group = v.flags_of(g);
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
  const uint32_t* block_flags = input + L.group_flag_words;
  DecodePlan plan;
  // flag_index[groups + 1] | block_index[groups + 1] | bad | set groups | placement[2] | group_flags[groups]
  plan.scratch = Buffer::device((2 * (L.groups + 1) + 4) * sizeof(uint64_t) + L.groups * sizeof(uint32_t), stream);
  uint64_t* flag_index = plan.scratch.as<uint64_t>();
  uint64_t* block_index = flag_index + L.groups + 1;
  uint64_t* totals = block_index + L.groups;  // [0] blocks (the scan's total), [1] bad, [2] set groups
  uint64_t* placement = totals + 3;
  auto* group_flags = reinterpret_cast<uint32_t*>(placement + 2);
  varlen::exclusive_scan(GroupBit{input, L.groups}, L.groups, flag_index, uint64_t(0), varlen::Plus{}, stream);
  FZG_CUDA_CHECK(cudaMemsetAsync(totals + 1, 0, sizeof(uint64_t), stream));
  resolve_groups_kernel<<<grid_for(L.groups, 256), 256, 0, stream>>>(input, block_flags, flag_index, L.groups, L.blocks,
                                                                      available, group_flags, totals);
  FZG_CUDA_CHECK_LAUNCH();
  varlen::exclusive_scan(DensePopCount{group_flags, L.groups}, L.groups, block_index, uint64_t(0), varlen::Plus{}, stream);
  place_blocks_kernel<<<1, 1, 0, stream>>>(totals, L.group_flag_words, available, L.block_words, placement, checks);
  FZG_CUDA_CHECK_LAUNCH();
  plan.view = {group_flags, block_index, input, placement};
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
