// fzg64 on the GPU: one CUB transform-reduce over the stream's 8-byte words.
// Reads each byte of the stream once; the sum is exact integer arithmetic, so any
// reduction order gives the CPU's value.
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "pipeline/checksum.hh"
#include "pipeline/cuda_check.cuh"

namespace fzg {

namespace {
struct WordTerm {
  const uint8_t* data;
  size_t size_bytes;
  __device__ uint64_t operator()(uint64_t i) const {
    uint64_t w = 0;
    if (8 * i + 8 <= size_bytes) {
      const uint8_t* p = data + 8 * i;
      // Streams are 8-byte aligned in fzg's allocations; stay byte-safe for any caller.
      if ((reinterpret_cast<uintptr_t>(p) & 7) == 0) {
        w = *reinterpret_cast<const uint64_t*>(p);
      } else {
        for (int b = 0; b < 8; ++b) w |= uint64_t(p[b]) << (8 * b);
      }
    } else {
      for (size_t b = 0; 8 * i + b < size_bytes; ++b) w |= uint64_t(data[8 * i + b]) << (8 * b);
    }
    return checksum_mix(w ^ (i * checksum_salt));
  }
};
}  // namespace

void checksum_terms_device(const uint8_t* data, size_t size_bytes, uint64_t* sum_on_device, cudaStream_t stream) {
  const uint64_t words = (size_bytes + 7) / 8;
  if (words == 0) {
    FZG_CUDA_CHECK(cudaMemsetAsync(sum_on_device, 0, sizeof(uint64_t), stream));
    return;
  }
  auto terms = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), WordTerm{data, size_bytes});
  size_t temp_bytes = 0;
  FZG_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, terms, sum_on_device, words, stream));
  Buffer temp = Buffer::device(temp_bytes, stream);
  FZG_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), temp_bytes, terms, sum_on_device, words, stream));
}

}  // namespace fzg
