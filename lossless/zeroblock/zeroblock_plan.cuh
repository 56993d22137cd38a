// The device-side placement plan of zero-block, shared by its own kernels and by the fused
// bitshuffle + zero-block path (shuffle_pack.cu): where each group's flag word and blocks go.
#pragma once
#include <cstdint>

#include "lossless/zeroblock/zeroblock.hh"

namespace fzg::zeroblock {

// Exclusive offsets of group g: its slot among flag words and its first slot among blocks.
struct GroupOffset {
  uint64_t flag, block;
};

// Encode: from the groups' block-flag words, offsets[0..groups] (offsets[groups] holds the
// totals, returned). One synchronization.
GroupOffset plan_encode(const uint32_t* flags, uint64_t groups, GroupOffset* offsets, cudaStream_t stream);
// Encode: the first-level bitmap, one bit per group.
void write_group_bits(const uint32_t* flags, uint64_t groups, uint32_t* bits, cudaStream_t stream);

// Decode: a parsed, validated stream (throws corrupt_data like the CPU decoder).
struct StreamView {
  const uint32_t* group_bits;
  const uint32_t* block_flags;
  const uint32_t* blocks;
  const uint64_t* flag_index;   // per group: which flag word (valid where its bit is set)
  const uint64_t* block_start;  // per flag word: its first block slot

  __device__ bool group_set(uint64_t g) const { return group_bits[g / 32] >> (g % 32) & 1u; }
  __device__ uint32_t flags_of(uint64_t g) const { return group_set(g) ? block_flags[flag_index[g]] : 0u; }
  __device__ uint64_t first_block(uint64_t g) const { return block_start[flag_index[g]]; }
};

struct DecodePlan {
  Buffer scratch;
  StreamView view;
};
DecodePlan plan_decode(const uint32_t* input, uint64_t input_bytes, const Layout& layout, cudaStream_t stream);

}  // namespace fzg::zeroblock
