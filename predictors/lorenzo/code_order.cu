// CUDA backend of the codes' data-first order (lorenzo.hh), the same bytes as
// order_codes_cpu: the field is cut into segments of 2048 points; a first pass counts each
// segment's points with data, the shared scan (varlen/scan.cuh) gives every segment its first
// place, and a second pass moves the codes, a block per segment, each thread eight
// consecutive points placed by a block scan of the threads' counts. The count of points with
// data is the scan's total, read on the device: no synchronization with the host.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "predictors/lorenzo/lorenzo.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"
#include "varlen/scan.cuh"

namespace fzg::lorenzo {

namespace {

constexpr int order_threads = 256, order_items = 8;
constexpr uint64_t segment_points = order_threads * order_items;

template <typename T>
__global__ void data_flags_kernel(const T* __restrict__ field, uint64_t n, MissingValues missing,
                                  uint8_t* __restrict__ holds_data) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    holds_data[i] = missing.symbol_of(field[i]) == 0;
}

__global__ void __launch_bounds__(order_threads) segment_counts_kernel(const uint8_t* __restrict__ holds_data,
                                                                       uint64_t n, uint64_t segments,
                                                                       uint32_t* __restrict__ counts) {
  using Reduce = cub::BlockReduce<uint32_t, order_threads>;
  __shared__ typename Reduce::TempStorage temp;
  for (uint64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    uint32_t c = 0;
#pragma unroll
    for (int k = 0; k < order_items; ++k) {
      const uint64_t i = s * segment_points + threadIdx.x + uint64_t(k) * order_threads;
      if (i < n) c += holds_data[i];
    }
    const uint32_t total = Reduce(temp).Sum(c);
    if (threadIdx.x == 0) counts[s] = total;
    __syncthreads();
  }
}

struct SegmentCounts {
  const uint32_t* counts;
  uint64_t segments;
  __device__ uint64_t operator()(uint64_t s) const { return s < segments ? counts[s] : 0; }
};

// Point i with data has its place at the count of points with data before it; a missing
// point at the count of all points with data plus that of missing points before it.
__global__ void __launch_bounds__(order_threads) order_kernel(const uint16_t* __restrict__ in,
                                                              const uint8_t* __restrict__ holds_data, uint64_t n,
                                                              uint64_t segments, const uint64_t* __restrict__ first,
                                                              bool to_data_first, uint16_t* __restrict__ out) {
  using Scan = cub::BlockScan<uint32_t, order_threads>;
  __shared__ typename Scan::TempStorage temp;
  const uint64_t with_data = first[segments];
  for (uint64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    const uint64_t i0 = s * segment_points + uint64_t(threadIdx.x) * order_items;
    uint8_t flags[order_items];
    uint32_t c = 0;
#pragma unroll
    for (int k = 0; k < order_items; ++k) {
      flags[k] = i0 + k < n ? holds_data[i0 + k] : 0;
      c += flags[k];
    }
    uint32_t before;
    Scan(temp).ExclusiveSum(c, before);
    uint64_t data_before = first[s] + before;
#pragma unroll
    for (int k = 0; k < order_items; ++k) {
      const uint64_t i = i0 + k;
      if (i >= n) break;
      const uint64_t j = flags[k] ? data_before++ : with_data + (i - data_before);
      if (to_data_first) out[j] = in[i];
      else out[i] = in[j];
    }
    __syncthreads();  // the scan's storage is reused by the next segment
  }
}

}  // namespace

void data_flags_cuda(const void* field, DType type, uint64_t n, const MissingValues& missing, uint8_t* holds_data,
                     cudaStream_t stream) {
  if (n == 0) return;
  if (type == DType::f32)
    data_flags_kernel<<<grid_for(n, 256), 256, 0, stream>>>(static_cast<const float*>(field), n, missing, holds_data);
  else
    data_flags_kernel<<<grid_for(n, 256), 256, 0, stream>>>(static_cast<const double*>(field), n, missing, holds_data);
  FZG_CUDA_CHECK_LAUNCH();
}

void order_codes_cuda(const uint16_t* in, const uint8_t* holds_data, uint64_t n, bool to_data_first, uint16_t* out,
                      cudaStream_t stream) {
  if (n == 0) return;
  const uint64_t segments = (n + segment_points - 1) / segment_points;
  Buffer counts = Buffer::device(segments * sizeof(uint32_t), stream);
  Buffer first = Buffer::device((segments + 1) * sizeof(uint64_t), stream);
  segment_counts_kernel<<<grid_for(segments, 1), order_threads, 0, stream>>>(holds_data, n, segments,
                                                                            counts.as<uint32_t>());
  FZG_CUDA_CHECK_LAUNCH();
  varlen::exclusive_scan(SegmentCounts{counts.as<uint32_t>(), segments}, segments, first.as<uint64_t>(), uint64_t(0),
                         varlen::Plus{}, stream);
  order_kernel<<<grid_for(segments, 1), order_threads, 0, stream>>>(in, holds_data, n, segments, first.as<uint64_t>(),
                                                                   to_data_first, out);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::lorenzo
