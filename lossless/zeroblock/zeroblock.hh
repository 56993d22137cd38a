// Zero-block elimination (FZ-GPU) with two flag levels.
//
// The input is read as little-endian u32 words (the last zero-padded), cut into blocks of
// `block_words` words, and the blocks into groups of 32. Stream layout (all u32):
//
//   group_flags[ceil(G / 32)]   bit g%32 of word g/32: group g has a non-zero block
//   block_flags[nonzero groups] bit b: block b of that group is non-zero (one word per
//                               flagged group, in group order)
//   blocks[nonzero blocks]      each block_words words, in block order
//
// An all-zero group of 32 blocks costs one bit; a dense group costs 32 flag bits over
// 32 * block_words words. Offsets come from prefix sums over groups, so the layout is a pure
// function of the input on every backend. Unused flag bits are zero.
//
// Ports: in (bytes) -> out (bytes).
#pragma once
#include <cstdint>
#include <memory>

#include "core/device_checks.hh"
#include "core/stage.hh"

namespace fzg {

std::unique_ptr<Stage> make_zeroblock_stage(const nlohmann::json& params);

namespace zeroblock {

constexpr uint32_t blocks_per_group = 32;

struct Layout {
  uint64_t words, blocks, groups, group_flag_words;
  uint32_t block_words;
  Layout(uint64_t input_bytes, uint32_t block_words);
  uint64_t max_encoded_bytes() const { return 4 * (group_flag_words + groups + blocks * block_words); }
};

// Exclusive offsets of group g: its slot among flag words and its first slot among blocks.
struct GroupOffset {
  uint64_t flag, block;
  constexpr GroupOffset operator+(const GroupOffset& o) const { return {flag + o.flag, block + o.block}; }
};

// Returns the encoded size; `output` holds at least layout.max_encoded_bytes().
uint64_t encode_cpu(const uint8_t* input, uint64_t input_bytes, uint32_t block_words, uint32_t* output);
void decode_cpu(const uint32_t* input, uint64_t input_bytes, uint32_t block_words, uint8_t* output,
                uint64_t output_bytes);
// CUDA backend (defined in CUDA builds): the same bytes.
// Sizes the output exactly once the placement is known (no worst-case buffer on the device).
Buffer encode_cuda(const uint8_t* input, uint64_t input_bytes, uint32_t block_words, cudaStream_t stream);
// A GPU decode's checks of a stream (core/device_checks.hh), one word per message of the
// CPU's: a stream that fails one sets its word and decodes to zeros.
struct Checks {
  uint32_t* group_flags;  // a group bit set past the last group
  uint32_t* flags;        // a flag word past the stream, or a flag past the last block
  uint32_t* empty;        // a set group's flag word is 0
  uint32_t* size;         // the stream is not exactly its flag words and blocks
};
Checks device_checks(StepChecks& checks);
void decode_cuda(const uint32_t* input, uint64_t input_bytes, uint32_t block_words, uint8_t* output,
                 uint64_t output_bytes, const Checks& checks, cudaStream_t stream);

}  // namespace zeroblock
}  // namespace fzg
