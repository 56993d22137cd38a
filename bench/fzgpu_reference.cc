#include "bench/fzgpu_reference.hh"

#include <cstring>
#include <vector>

namespace fzg::bench {

uint64_t fzgpu_format_bytes(const uint16_t* codes, uint64_t count) {
  constexpr uint64_t chunk_codes = 2048, chunk_words = 1024;
  const uint64_t chunks = (count + chunk_codes - 1) / chunk_codes;
  uint64_t kept_blocks = 0;
#pragma omp parallel for reduction(+ : kept_blocks) schedule(static)
  for (int64_t c = 0; c < int64_t(chunks); ++c) {
    uint32_t words[chunk_words] = {};
    const uint64_t first = uint64_t(c) * chunk_codes;
    const uint64_t n = count - first < chunk_codes ? count - first : chunk_codes;
    std::memcpy(words, codes + first, n * sizeof(uint16_t));
    for (uint64_t row = 0; row < 32; ++row) {
      uint32_t planes[32] = {};
      for (uint32_t i = 0; i < 32; ++i)
        for (uint32_t b = 0; b < 32; ++b) planes[b] |= ((words[row * 32 + i] >> b) & 1u) << i;
      for (uint32_t block = 0; block < 8; ++block)
        kept_blocks += (planes[4 * block] | planes[4 * block + 1] | planes[4 * block + 2] | planes[4 * block + 3]) != 0;
    }
  }
  return kept_blocks * 16 + chunks * (32 + 4);
}

}  // namespace fzg::bench
