// Exclusive scan with total on the device (CUB): the numbers varlen/scan.hh computes on the
// CPU. Counts stay on the device; the caller reads the total back only when an allocation
// depends on it.
#pragma once
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <map>
#include <mutex>
#include <utility>

#include "runtime/buffer.hh"
#include "runtime/cuda_check.cuh"

namespace fzg::varlen {

// out[i] = term(0) op ... op term(i - 1) for i in [0, n], so out[n] is the total. `term` is a
// device functor of the index, called for i in [0, n] (it returns `zero` at n).
// CUB's scratch size depends on the scan's types, its length and the device alone: it is asked
// once per (device, length), as each asking is a whole dispatch, occupancy queries included
// (~10 us of host time on an H100).
template <typename T, typename Term, typename Op>
void exclusive_scan(Term term, uint64_t n, T* out, T zero, Op op, cudaStream_t stream) {
  auto values = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0), term);
  static std::mutex mutex;
  static std::map<std::pair<int, uint64_t>, size_t> scratch_bytes;
  int device = 0;
  FZG_CUDA_CHECK(cudaGetDevice(&device));
  const std::pair<int, uint64_t> key{device, n};
  size_t temp_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = scratch_bytes.find(key);
    if (it != scratch_bytes.end()) temp_bytes = it->second;
  }
  if (temp_bytes == 0) {
    FZG_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(nullptr, temp_bytes, values, out, op, zero, n + 1, stream));
    std::lock_guard<std::mutex> lock(mutex);
    if (scratch_bytes.size() >= 256) scratch_bytes.clear();
    scratch_bytes[key] = temp_bytes;
  }
  Buffer temp = Buffer::device(temp_bytes, stream);
  FZG_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(temp.data(), temp_bytes, values, out, op, zero, n + 1, stream));
}

// The term of a scan over u32 counts (per tile, per segment, ...): count i, 0 at n.
struct CountTerms {
  const uint32_t* counts;
  uint64_t n;
  __device__ uint64_t operator()(uint64_t i) const { return i < n ? counts[i] : 0; }
};

struct Plus {
  template <typename T>
  __device__ T operator()(const T& a, const T& b) const { return a + b; }
};

}  // namespace fzg::varlen
