// Launch shapes from the device, not magic numbers: grid-stride kernels get enough blocks to
// fill every SM a few times over, and no more.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "pipeline/cuda_check.cuh"

namespace fzg {

inline int multiprocessor_count() {
  static const int count = [] {
    int device = 0, sms = 0;
    FZG_CUDA_CHECK(cudaGetDevice(&device));
    FZG_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
  }();
  return count;
}

// Blocks for `work_items` items of which one block takes `items_per_block` at a time.
inline unsigned grid_for(uint64_t work_items, uint64_t items_per_block, int blocks_per_sm = 16) {
  const uint64_t needed = (work_items + items_per_block - 1) / items_per_block;
  const uint64_t cap = uint64_t(multiprocessor_count()) * blocks_per_sm;
  return unsigned(std::max<uint64_t>(1, std::min(needed, cap)));
}

// Reads a device value back to the host (a synchronization point, used where a size decides
// the next allocation).
template <typename T>
T read_back(const T* device_value, cudaStream_t stream) {
  T value;
  FZG_CUDA_CHECK(cudaMemcpyAsync(&value, device_value, sizeof(T), cudaMemcpyDeviceToHost, stream));
  FZG_CUDA_CHECK(cudaStreamSynchronize(stream));
  return value;
}

}  // namespace fzg
