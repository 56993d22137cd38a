#include "pipeline/checksum.hh"

#include <cstring>

#include "pipeline/error.hh"

namespace fzg {

#ifdef FZG_HAVE_CUDA
uint64_t checksum_device(const uint8_t* data, size_t size_bytes, cudaStream_t stream);
#endif

uint64_t checksum_host(const void* data, size_t size_bytes) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const int64_t full_words = int64_t(size_bytes / 8);
  uint64_t sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static) if (full_words > (1 << 16))
  for (int64_t i = 0; i < full_words; ++i) {
    uint64_t w;
    std::memcpy(&w, bytes + 8 * i, 8);
    sum += checksum_mix(w ^ (uint64_t(i) * checksum_salt));
  }
  if (size_bytes % 8) {
    uint64_t w = 0;
    std::memcpy(&w, bytes + 8 * full_words, size_bytes % 8);
    sum += checksum_mix(w ^ (uint64_t(full_words) * checksum_salt));
  }
  return sum + checksum_mix(uint64_t(size_bytes));
}

uint64_t checksum(const Buffer& buffer, cudaStream_t stream) {
  if (!buffer.on_device()) return checksum_host(buffer.data(), buffer.size());
#ifdef FZG_HAVE_CUDA
  return checksum_device(buffer.data(), buffer.size(), stream);
#else
  (void)stream;
  fail(ErrorCode::unsupported, "device buffer in a build without CUDA");
#endif
}

}  // namespace fzg
