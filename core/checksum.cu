// fzg64 on the GPU: one CUB transform-reduce over the stream's 8-byte words, or a copy that
// sums as it goes.
// Reads each byte of the stream once; the sum is exact integer arithmetic, so any
// reduction order gives the CPU's value.
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "core/checksum.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"

namespace fzg {

namespace {

constexpr int block_threads = 256;

// Word i of a stream (8 bytes little-endian, zero past the end). Streams are 4- or 8-byte
// aligned in fzg's allocations; stay byte-safe for any caller.
__device__ __forceinline__ uint64_t stream_word(const uint8_t* data, size_t size_bytes, uint64_t i) {
  uint64_t w = 0;
  const uint8_t* p = data + 8 * i;
  if (8 * i + 8 <= size_bytes) {
    const uintptr_t misalignment = reinterpret_cast<uintptr_t>(p) & 7;
    if (misalignment == 0) return *reinterpret_cast<const uint64_t*>(p);
    if (misalignment == 4) {  // a slice of a word array (shuffle-pack's stream)
      const auto* half = reinterpret_cast<const uint32_t*>(p);
      return uint64_t(half[0]) | uint64_t(half[1]) << 32;
    }
  }
  for (size_t b = 0; b < 8 && 8 * i + b < size_bytes; ++b) w |= uint64_t(p[b]) << (8 * b);
  return w;
}

struct WordTerm {
  const uint8_t* data;
  size_t size_bytes;
  __device__ uint64_t operator()(uint64_t i) const {
    return checksum_mix(stream_word(data, size_bytes, i) ^ (i * checksum_salt));
  }
};

// The integer sum is exact, so the order in which blocks add their parts does not matter.
__global__ void __launch_bounds__(block_threads) checksum_copy_kernel(const uint8_t* __restrict__ source,
                                                                      size_t size_bytes,
                                                                      uint64_t* __restrict__ destination,
                                                                      unsigned long long* sum) {
  using Reduce = cub::BlockReduce<uint64_t, block_threads>;
  __shared__ typename Reduce::TempStorage storage;
  const uint64_t words = (size_bytes + 7) / 8;
  uint64_t part = 0;
  for (uint64_t i = blockIdx.x * uint64_t(block_threads) + threadIdx.x; i < words;
       i += uint64_t(gridDim.x) * block_threads) {
    const uint64_t w = stream_word(source, size_bytes, i);
    destination[i] = w;
    part += checksum_mix(w ^ (i * checksum_salt));
  }
  const uint64_t block_sum = Reduce(storage).Sum(part);
  if (threadIdx.x == 0) atomicAdd(sum, static_cast<unsigned long long>(block_sum));
}

}  // namespace

void checksum_copy_device(const std::vector<Buffer>& streams, const std::vector<uint64_t>& offsets, uint8_t* file,
                          uint64_t* sums, cudaStream_t stream) {
  FZG_CUDA_CHECK(cudaMemsetAsync(sums, 0, streams.size() * sizeof(uint64_t), stream));
  for (size_t s = 0; s < streams.size(); ++s) {
    const uint64_t words = (streams[s].size() + 7) / 8;
    if (words == 0) continue;
    checksum_copy_kernel<<<resident_grid(checksum_copy_kernel, block_threads, words, block_threads), block_threads, 0,
                           stream>>>(streams[s].data(), streams[s].size(), reinterpret_cast<uint64_t*>(file + offsets[s]),
                                     reinterpret_cast<unsigned long long*>(sums + s));
    FZG_CUDA_CHECK_LAUNCH();
  }
}

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
