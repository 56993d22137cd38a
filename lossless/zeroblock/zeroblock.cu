// CUDA backend of zero-block: the CPU's layout, placed by CUB scans instead of atomics.
//
// Encode: `group_flags_kernel` gives each group one warp, lane b owning block b: it reads the
// block's words, and a ballot forms the group's 32 block flags (reads the input once).
// Two exclusive scans over groups give each group's flag slot and first block slot; the
// totals decide the stream's size. `place_kernel` then writes the flag word and the non-zero
// blocks of every non-empty group (reads the non-zero part of the input again), and
// `group_bits_kernel` packs one bit per group.
// Decode mirrors it: scans over the group bits and block-flag popcounts, then one warp per
// group writes its blocks or zeros.
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "lossless/zeroblock/zeroblock.hh"
#include "pipeline/cuda_check.cuh"
#include "pipeline/error.hh"
#include "pipeline/launch.cuh"

namespace fzg::zeroblock {

namespace {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;

struct Shape {
  uint64_t bytes, words, blocks, groups;
  uint32_t block_words;
};

Shape shape_of(const Layout& L, uint64_t bytes) { return {bytes, L.words, L.blocks, L.groups, L.block_words}; }

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

#define FZG_FOR_EACH_GROUP(g, s)                                                                     \
  for (uint64_t g = blockIdx.x * uint64_t(warps_per_block) + threadIdx.x / 32; g < (s).groups; \
       g += uint64_t(gridDim.x) * warps_per_block)

__global__ void __launch_bounds__(block_threads) group_flags_kernel(const uint8_t* __restrict__ input, Shape s,
                                                                    uint32_t* __restrict__ flags) {
  const uint32_t lane = threadIdx.x % 32;
  FZG_FOR_EACH_GROUP(g, s) {
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
                                                              const uint64_t* __restrict__ flag_index,
                                                              const uint64_t* __restrict__ block_index,
                                                              uint32_t* __restrict__ block_flags,
                                                              uint32_t* __restrict__ blocks) {
  const uint32_t lane = threadIdx.x % 32;
  FZG_FOR_EACH_GROUP(g, s) {
    const uint32_t group = flags[g];
    if (group == 0) continue;
    if (lane == 0) block_flags[flag_index[g]] = group;
    if (!(group >> lane & 1u)) continue;
    const uint64_t slot = block_index[g] + __popc(group & ((1u << lane) - 1u));
    const uint64_t block = g * blocks_per_group + lane;
    for (uint32_t w = 0; w < s.block_words; ++w)
      blocks[slot * s.block_words + w] = load_word(input, s.bytes, block * s.block_words + w);
  }
}

__global__ void group_bits_kernel(const uint32_t* __restrict__ flags, uint64_t groups, uint32_t* __restrict__ bits,
                                  uint64_t bit_words) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < bit_words; i += uint64_t(gridDim.x) * blockDim.x) {
    uint32_t word = 0;
    for (uint32_t b = 0; b < 32 && 32 * i + b < groups; ++b) word |= uint32_t(flags[32 * i + b] != 0) << b;
    bits[i] = word;
  }
}

struct NonZero {
  const uint32_t* flags;
  __device__ uint64_t operator()(uint64_t g) const { return flags[g] != 0; }
};
struct PopCount {
  const uint32_t* flags;
  __device__ uint64_t operator()(uint64_t g) const { return __popc(flags[g]); }
};

// f(g) for g < groups, then a 0: an exclusive scan over groups + 1 terms ends with the total.
template <typename F>
struct Padded {
  F f;
  uint64_t groups;
  __device__ uint64_t operator()(uint64_t g) const { return g < groups ? f(g) : 0; }
};

// Exclusive scan over groups of f(g) into out[0, groups]; returns the total, out[groups].
template <typename F>
uint64_t scan_groups(F f, uint64_t groups, uint64_t* out, cudaStream_t stream) {
  auto values = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), Padded<F>{f, groups});
  size_t temp_bytes = 0;
  FZG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, values, out, groups + 1, stream));
  Buffer temp = Buffer::device(temp_bytes, stream);
  FZG_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), temp_bytes, values, out, groups + 1, stream));
  return read_back(out + groups, stream);
}

// Decode side: the flag word of group g, 0 when its group bit is clear.
struct GroupFlagsFromStream {
  const uint32_t* group_bits;
  const uint32_t* block_flags;
  const uint64_t* flag_index;
  __device__ uint32_t operator()(uint64_t g) const {
    return (group_bits[g / 32] >> (g % 32) & 1u) ? block_flags[flag_index[g]] : 0u;
  }
};
struct GroupBit {
  const uint32_t* group_bits;
  __device__ uint64_t operator()(uint64_t g) const { return group_bits[g / 32] >> (g % 32) & 1u; }
};
struct StreamPopCount {
  GroupFlagsFromStream f;
  __device__ uint64_t operator()(uint64_t g) const { return __popc(f(g)); }
};

// Corrupt-input checks the CPU makes too: empty flagged groups, flags past the last block.
__global__ void check_flags_kernel(GroupFlagsFromStream f, Shape s, int* bad) {
  for (uint64_t g = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; g < s.groups; g += uint64_t(gridDim.x) * blockDim.x) {
    if (!(f.group_bits[g / 32] >> (g % 32) & 1u)) continue;
    const uint32_t flags = f(g);
    const uint64_t valid = s.blocks - g * blocks_per_group;
    if (flags == 0 || (valid < blocks_per_group && (flags >> valid) != 0)) *bad = 1;
  }
}

__global__ void __launch_bounds__(block_threads) expand_kernel(GroupFlagsFromStream f, const uint64_t* block_index,
                                                               const uint32_t* __restrict__ blocks, Shape s,
                                                               uint8_t* __restrict__ output) {
  const uint32_t lane = threadIdx.x % 32;
  FZG_FOR_EACH_GROUP(g, s) {
    const uint64_t block = g * blocks_per_group + lane;
    if (block >= s.blocks) continue;
    const uint32_t group = f(g);
    const bool stored = group >> lane & 1u;
    const uint64_t slot = stored ? block_index[g] + __popc(group & ((1u << lane) - 1u)) : 0;
    for (uint32_t w = 0; w < s.block_words; ++w) {
      const uint64_t word = block * s.block_words + w;
      if (word >= s.words) break;
      store_word(output, s.bytes, word, stored ? blocks[slot * s.block_words + w] : 0u);
    }
  }
}

}  // namespace

uint64_t encode_cuda(const uint8_t* input, uint64_t input_bytes, uint32_t block_words, uint32_t* output,
                     cudaStream_t stream) {
  const Layout L(input_bytes, block_words);
  if (L.groups == 0) return 0;
  const Shape s = shape_of(L, input_bytes);
  Buffer scratch = Buffer::device((L.groups + 1) * (sizeof(uint32_t) + 2 * sizeof(uint64_t)), stream);
  uint64_t* flag_index = scratch.as<uint64_t>();
  uint64_t* block_index = flag_index + L.groups + 1;
  uint32_t* flags = reinterpret_cast<uint32_t*>(block_index + L.groups + 1);
  const unsigned blocks = grid_for(L.groups, warps_per_block);
  group_flags_kernel<<<blocks, block_threads, 0, stream>>>(input, s, flags);
  FZG_CUDA_CHECK_LAUNCH();
  const uint64_t nonzero_groups = scan_groups(NonZero{flags}, L.groups, flag_index, stream);
  const uint64_t nonzero_blocks = scan_groups(PopCount{flags}, L.groups, block_index, stream);
  uint32_t* block_flags = output + L.group_flag_words;
  place_kernel<<<blocks, block_threads, 0, stream>>>(input, s, flags, flag_index, block_index, block_flags,
                                                     block_flags + nonzero_groups);
  group_bits_kernel<<<grid_for(L.group_flag_words, 256), 256, 0, stream>>>(flags, L.groups, output, L.group_flag_words);
  FZG_CUDA_CHECK_LAUNCH();
  return 4 * (L.group_flag_words + nonzero_groups + nonzero_blocks * block_words);
}

void decode_cuda(const uint32_t* input, uint64_t input_bytes, uint32_t block_words, uint8_t* output,
                 uint64_t output_bytes, cudaStream_t stream) {
  const Layout L(output_bytes, block_words);
  if (L.groups == 0) return;
  require_data(input_bytes % 4 == 0 && input_bytes / 4 >= L.group_flag_words, "zero-block flags");
  const uint64_t available = input_bytes / 4 - L.group_flag_words;
  const Shape s = shape_of(L, output_bytes);
  if (L.groups % 32) {
    const uint32_t last = read_back(input + L.group_flag_words - 1, stream);
    require_data((last >> (L.groups % 32)) == 0, "zero-block group flags");
  }
  Buffer scratch = Buffer::device(2 * (L.groups + 1) * sizeof(uint64_t), stream);
  uint64_t* flag_index = scratch.as<uint64_t>();
  uint64_t* block_index = flag_index + L.groups + 1;
  const uint64_t nonzero_groups = scan_groups(GroupBit{input}, L.groups, flag_index, stream);
  require_data(nonzero_groups <= available, "zero-block block flags");
  const GroupFlagsFromStream f{input, input + L.group_flag_words, flag_index};
  Buffer bad = Buffer::device(sizeof(int), stream);
  FZG_CUDA_CHECK(cudaMemsetAsync(bad.data(), 0, sizeof(int), stream));
  check_flags_kernel<<<grid_for(L.groups, 256), 256, 0, stream>>>(f, s, bad.as<int>());
  FZG_CUDA_CHECK_LAUNCH();
  require_data(read_back(bad.as<int>(), stream) == 0, "zero-block block flags");
  const uint64_t nonzero_blocks = scan_groups(StreamPopCount{f}, L.groups, block_index, stream);
  require_data(available == nonzero_groups + nonzero_blocks * block_words, "zero-block stream size");
  expand_kernel<<<grid_for(L.groups, warps_per_block), block_threads, 0, stream>>>(
      f, block_index, input + L.group_flag_words + nonzero_groups, s, output);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::zeroblock
