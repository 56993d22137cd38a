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

// A decode's stored blocks, from `words`, and whether the stream failed its checks: an expand
// kernel then reads no block and writes zeros (the call fails at its end), so that no read
// leaves the stream whatever its flags claim. Checked once a kernel: a bound on each read kept
// the compiler from issuing a warp's block loads together (the expand took 10-25 % longer).
struct BlockWords {
  const uint32_t* words;
  bool failed;
  __device__ uint32_t at(uint64_t i) const { return words[i]; }
};

// Decode: a parsed stream, resolved to one flag word and one block offset per group so that
// expanding a group takes two independent loads, not a chain of four. Its checks run on the
// device: `placement` (device memory) says where the blocks start, and whether the stream
// failed them.
struct StreamView {
  const uint32_t* group_flags;  // per group: its block flags, 0 for an empty group
  const uint64_t* block_index;  // per group: its first block's slot
  const uint32_t* block_flags;  // the stream's flag words, its blocks after them
  const uint64_t* placement;    // [the blocks' first word after block_flags, 1 when the stream failed its checks]

  __device__ uint32_t flags_of(uint64_t g) const { return group_flags[g]; }
  __device__ uint64_t first_block(uint64_t g) const { return block_index[g]; }
  // Read once by a kernel: the same for every thread.
  __device__ BlockWords blocks() const { return {block_flags + placement[0], placement[1] != 0}; }
};

struct DecodePlan {
  Buffer scratch;
  StreamView view;
};
// Queues the plan without waiting for it; a stream that fails a check sets the check's
// DeviceChecks word and expands to zeros.
DecodePlan plan_decode(const uint32_t* input, uint64_t input_bytes, const Layout& layout, const Checks& checks,
                       cudaStream_t stream);

}  // namespace fzg::zeroblock
