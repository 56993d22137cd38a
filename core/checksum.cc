#include "core/checksum.hh"

#include <cstring>
#include <utility>

#include "core/error.hh"

namespace fzg {

#ifdef FZG_HAVE_CUDA
// The checksum terms (without the length term; checksum.cu) of the device buffers among
// `buffers` into sums[i] in device memory, zero for a host buffer, queued on `stream`.
void checksum_terms_device(const std::vector<Buffer>& buffers, uint64_t* sums, cudaStream_t stream);
#endif

namespace {

// The sum of the words' terms, without the length term.
uint64_t checksum_terms_host(const void* data, size_t size_bytes) {
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
  return sum;
}

}  // namespace

uint64_t checksum_host(const void* data, size_t size_bytes) {
  return checksum_terms_host(data, size_bytes) + checksum_mix(uint64_t(size_bytes));
}

PendingChecksums::PendingChecksums(const std::vector<Buffer>& buffers, cudaStream_t stream,
                                   std::vector<uint64_t> lengths)
    : sums_(buffers.size()), on_device_(buffers.size()), sizes_(std::move(lengths)), stream_(stream) {
  if (sizes_.empty())
    for (const Buffer& b : buffers) sizes_.push_back(b.size());
  if (sizes_.size() != buffers.size()) fail(ErrorCode::invalid_argument, "checksums: one length per buffer");
  bool any_on_device = false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    on_device_[i] = buffers[i].on_device();
    any_on_device = any_on_device || on_device_[i];
    if (!on_device_[i]) sums_[i] = checksum_terms_host(buffers[i].data(), buffers[i].size()) + checksum_mix(sizes_[i]);
  }
  if (!any_on_device) return;
#ifdef FZG_HAVE_CUDA
  partial_ = Buffer::device(buffers.size() * sizeof(uint64_t), stream);
  checksum_terms_device(buffers, partial_.as<uint64_t>(), stream);
#else
  fail(ErrorCode::unsupported, "device buffer in a build without CUDA");
#endif
}

std::vector<uint64_t> PendingChecksums::finish() {
  if (partial_.size() == 0) return sums_;
  std::vector<uint64_t> device_sums(sums_.size());
  copy_bytes(device_sums.data(), Location::host, partial_.data(), Location::device, partial_.size(), stream_);
  for (size_t i = 0; i < sums_.size(); ++i)
    if (on_device_[i]) sums_[i] = device_sums[i] + checksum_mix(uint64_t(sizes_[i]));
  partial_ = Buffer();
  return sums_;
}

}  // namespace fzg
