// CPU reference of the bitshuffle stage, OpenMP over tiles.
#include <cstring>

#include "bitshuffle/bitshuffle.hh"

namespace fzg::bitshuffle {

namespace {
// Loads tile `t`'s words, zero-filling past the end of the input.
void load_tile(const uint8_t* input, uint64_t input_bytes, uint64_t t, uint32_t words[tile_words]) {
  const uint64_t begin = t * tile_bytes;
  const uint64_t available = input_bytes - begin < tile_bytes ? input_bytes - begin : tile_bytes;
  std::memset(words, 0, tile_bytes);
  std::memcpy(words, input + begin, available);
}
}  // namespace

void encode_cpu(const uint8_t* input, uint64_t input_bytes, uint32_t* output) {
  const int64_t tiles = int64_t(shuffled_size(input_bytes) / tile_bytes);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tiles; ++t) {
    uint32_t words[tile_words];
    load_tile(input, input_bytes, uint64_t(t), words);
    for (uint32_t p = 0; p < tile_words; ++p) {
      const uint32_t plane = plane_at(p);
      uint32_t packed = 0;
      for (uint32_t i = 0; i < tile_words; ++i) packed |= ((words[i] >> plane) & 1u) << i;
      output[t * tile_words + p] = packed;
    }
  }
}

void decode_cpu(const uint32_t* input, uint8_t* output, uint64_t output_bytes) {
  const int64_t tiles = int64_t(shuffled_size(output_bytes) / tile_bytes);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tiles; ++t) {
    uint32_t words[tile_words] = {};
    for (uint32_t p = 0; p < tile_words; ++p) {
      const uint32_t plane = plane_at(p), packed = input[t * tile_words + p];
      for (uint32_t i = 0; i < tile_words; ++i) words[i] |= ((packed >> i) & 1u) << plane;
    }
    const uint64_t begin = uint64_t(t) * tile_bytes;
    const uint64_t available = output_bytes - begin < tile_bytes ? output_bytes - begin : tile_bytes;
    std::memcpy(output + begin, words, available);
  }
}

}  // namespace fzg::bitshuffle
