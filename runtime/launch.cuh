// Launch shapes from the device, not magic numbers: grid-stride kernels get enough blocks to
// fill every SM a few times over, and no more.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/buffer.hh"
#include "runtime/cuda_check.cuh"

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

// The most shared memory (static and dynamic) a block may have with the opt-in (227 KiB on sm_90).
inline uint32_t max_shared_bytes_per_block() {
  static const uint32_t bytes = [] {
    int device = 0, limit = 0;
    FZG_CUDA_CHECK(cudaGetDevice(&device));
    FZG_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return uint32_t(limit);
  }();
  return bytes;
}

// Blocks for `work_items` items of which one block takes `items_per_block` at a time.
inline unsigned grid_for(uint64_t work_items, uint64_t items_per_block, int blocks_per_sm = 16) {
  const uint64_t needed = (work_items + items_per_block - 1) / items_per_block;
  const uint64_t cap = uint64_t(multiprocessor_count()) * blocks_per_sm;
  return unsigned(std::max<uint64_t>(1, std::min(needed, cap)));
}

// How many blocks of `kernel` fit on one SM at once (queried once per kernel).
template <typename Kernel>
int resident_blocks_per_sm(Kernel kernel, int block_threads) {
  static std::mutex mutex;
  static std::unordered_map<const void*, int> known;
  const void* key = reinterpret_cast<const void*>(kernel);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  int blocks = 0;
  FZG_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block_threads, 0));
  return known[key] = std::max(blocks, 1);
}

// A grid-stride kernel's grid: at most one wave of resident blocks, so every block takes an
// equal share of the work and no partial second wave leaves SMs idle at the end.
template <typename Kernel>
unsigned resident_grid(Kernel kernel, int block_threads, uint64_t work_items, uint64_t items_per_block) {
  const uint64_t needed = (work_items + items_per_block - 1) / items_per_block;
  const uint64_t resident = uint64_t(multiprocessor_count()) * resident_blocks_per_sm(kernel, block_threads);
  return unsigned(std::max<uint64_t>(1, std::min(needed, resident)));
}

// The calling thread's own non-blocking streams for work beside the caller's stream (0, 1,
// ...), per device: made at first use on the current device and kept for the thread's life.
inline cudaStream_t thread_stream(size_t index) {
  static thread_local std::unordered_map<int, std::vector<cudaStream_t>> by_device;
  int device = 0;
  FZG_CUDA_CHECK(cudaGetDevice(&device));
  std::vector<cudaStream_t>& streams = by_device[device];
  while (streams.size() <= index) {
    cudaStream_t s = nullptr;
    FZG_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    streams.push_back(s);
  }
  return streams[index];
}

// Reads a device value back to the host (a synchronization point, used where a size decides
// the next allocation).
template <typename T>
T read_back(const T* device_value, cudaStream_t stream) {
  T value;
  copy_bytes(&value, Location::host, device_value, Location::device, sizeof(T), stream);
  return value;
}

}  // namespace fzg
