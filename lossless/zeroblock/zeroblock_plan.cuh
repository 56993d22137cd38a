// The device-side placement plan of zero-block, shared by its own kernels and by the fused
// bitshuffle + zero-block path (shuffle_pack.cu): where each group's flag word and blocks go.
#pragma once
#include <cstdint>

#include "lossless/zeroblock/zeroblock.hh"

namespace fzg::zeroblock {

// Encode: from the groups' block-flag words, offsets[0..groups] (offsets[groups] holds the
// totals, returned). One synchronization.
GroupOffset plan_encode(const uint32_t* flags, uint64_t groups, GroupOffset* offsets, cudaStream_t stream);
// Encode: the first-level bitmap, one bit per group.
void write_group_bits(const uint32_t* flags, uint64_t groups, uint32_t* bits, cudaStream_t stream);

// Decode: a parsed, validated stream, resolved to one flag word and one block offset per
// group so that expanding a group takes two independent loads, not a chain of four.
struct StreamView {
  const uint32_t* group_flags;  // per group: its block flags, 0 for an empty group
  const uint64_t* block_index;  // per group: its first block's slot
  const uint32_t* blocks;

  __device__ uint32_t flags_of(uint64_t g) const { return group_flags[g]; }
  __device__ uint64_t first_block(uint64_t g) const { return block_index[g]; }
};

struct DecodePlan {
  Buffer scratch;
  StreamView view;
};
DecodePlan plan_decode(const uint32_t* input, uint64_t input_bytes, const Layout& layout, cudaStream_t stream);

}  // namespace fzg::zeroblock
