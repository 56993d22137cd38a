// Bit-plane transpose (FZ-GPU's bitshuffle) of 32x32-bit tiles.
//
// The input is read as little-endian u32 words, zero-padded to a whole tile of 32 words.
// Output word p of a tile collects bit plane_order[p] of the tile's 32 input words (bit i of
// the output word from input word i). The order puts the two sign planes of u16
// sign-magnitude codes first and then the magnitude planes low to high, interleaving the two
// codes of a word: planes that small codes leave empty end up adjacent, at the tile's end,
// where zero-block drops them.
//
// Ports: in (any bytes) -> out (bytes, size rounded up to 128).
#pragma once
#include <cstdint>
#include <memory>

#include "core/stage.hh"
#include "runtime/portable.hh"

namespace fzg {

std::unique_ptr<Stage> make_bitshuffle_stage(const nlohmann::json& params);

namespace bitshuffle {

constexpr uint32_t tile_words = 32;
constexpr uint32_t tile_bytes = 4 * tile_words;

// Bit plane stored at output position p: 15, 31, 0, 16, 1, 17, ..., 14, 30.
FZG_HOST_DEVICE uint32_t plane_at(uint32_t p) {
  if (p < 2) return p == 0 ? 15 : 31;
  const uint32_t k = p - 2;
  return (k >> 1) + ((k & 1) ? 16 : 0);
}

inline uint64_t shuffled_size(uint64_t input_bytes) { return (input_bytes + tile_bytes - 1) / tile_bytes * tile_bytes; }

void encode_cpu(const uint8_t* input, uint64_t input_bytes, uint32_t* output);
void decode_cpu(const uint32_t* input, uint8_t* output, uint64_t output_bytes);
// CUDA backend (defined in CUDA builds): the same bytes.
void encode_cuda(const uint8_t* input, uint64_t input_bytes, uint32_t* output, cudaStream_t stream);
void decode_cuda(const uint32_t* input, uint8_t* output, uint64_t output_bytes, cudaStream_t stream);

}  // namespace bitshuffle
}  // namespace fzg
