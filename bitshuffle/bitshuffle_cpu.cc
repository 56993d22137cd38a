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

// Transposes a 32x32 bit matrix in place: afterwards bit i of a[j] is what bit j of a[i] was.
// Five rounds, each swapping the off-diagonal blocks of every 2j x 2j block (j = 16, 8, 4, 2,
// 1): ~500 word operations where a bit at a time took ~3000 (the bit loop was 40 % of a CPU
// compress of a 3D field on one core, `perf`).
void transpose32(uint32_t a[tile_words]) {
  uint32_t mask = 0x0000FFFFu;
  for (uint32_t j = 16; j != 0; j >>= 1, mask ^= mask << j)
    for (uint32_t k = 0; k < tile_words; k = (k + j + 1) & ~j) {
      const uint32_t t = ((a[k] >> j) ^ a[k + j]) & mask;
      a[k] ^= t << j;
      a[k + j] ^= t;
    }
}
}  // namespace

void encode_cpu(const uint8_t* input, uint64_t input_bytes, uint32_t* output) {
  const int64_t tiles = int64_t(shuffled_size(input_bytes) / tile_bytes);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tiles; ++t) {
    uint32_t words[tile_words];
    load_tile(input, input_bytes, uint64_t(t), words);
    transpose32(words);  // words[plane] now holds bit `plane` of the tile's 32 words
    for (uint32_t p = 0; p < tile_words; ++p) output[t * tile_words + p] = words[plane_at(p)];
  }
}

void decode_cpu(const uint32_t* input, uint8_t* output, uint64_t output_bytes) {
  const int64_t tiles = int64_t(shuffled_size(output_bytes) / tile_bytes);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tiles; ++t) {
    uint32_t words[tile_words];
    for (uint32_t p = 0; p < tile_words; ++p) words[plane_at(p)] = input[t * tile_words + p];
    transpose32(words);
    const uint64_t begin = uint64_t(t) * tile_bytes;
    const uint64_t available = output_bytes - begin < tile_bytes ? output_bytes - begin : tile_bytes;
    std::memcpy(output + begin, words, available);
  }
}

}  // namespace fzg::bitshuffle
