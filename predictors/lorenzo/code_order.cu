// CUDA backend of the codes of the points with data (lorenzo.hh), the same bytes as
// gather_data_codes_cpu and scatter_data_codes_cpu: the field is cut into segments of 2048
// points; a first pass counts each segment's points with data, the shared scan
// (varlen/scan.cuh) gives every segment its first place, and a second pass moves the codes,
// a block per segment, each thread eight consecutive points placed by a block scan of the
// threads' counts. The total is read back: the gather's output size, the scatter's check.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "core/error.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"
#include "varlen/scan.cuh"

namespace fzg::lorenzo {

namespace {

constexpr int segment_threads = 256, segment_items = 8;
constexpr uint64_t segment_points = segment_threads * segment_items;

__global__ void __launch_bounds__(segment_threads) segment_counts_kernel(const uint8_t* __restrict__ holds_data,
                                                                         uint64_t n, uint64_t segments,
                                                                         uint32_t* __restrict__ counts) {
  using Reduce = cub::BlockReduce<uint32_t, segment_threads>;
  __shared__ typename Reduce::TempStorage temp;
  for (uint64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    uint32_t c = 0;
#pragma unroll
    for (int k = 0; k < segment_items; ++k) {
      const uint64_t i = s * segment_points + threadIdx.x + uint64_t(k) * segment_threads;
      if (i < n) c += holds_data[i];
    }
    const uint32_t total = Reduce(temp).Sum(c);
    if (threadIdx.x == 0) counts[s] = total;
    __syncthreads();
  }
}

// Point i with data is the (count of points with data before it)-th data code. Gather:
// data[j] = all[i] at those points; scatter: all[i] = data[j] there, 0 at missing points.
template <bool Gather>
__global__ void __launch_bounds__(segment_threads) move_kernel(const uint16_t* __restrict__ in,
                                                               const uint8_t* __restrict__ holds_data, uint64_t n,
                                                               uint64_t segments, const uint64_t* __restrict__ first,
                                                               uint16_t* __restrict__ out) {
  using Scan = cub::BlockScan<uint32_t, segment_threads>;
  __shared__ typename Scan::TempStorage temp;
  for (uint64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    const uint64_t i0 = s * segment_points + uint64_t(threadIdx.x) * segment_items;
    uint8_t flags[segment_items];
    uint32_t c = 0;
#pragma unroll
    for (int k = 0; k < segment_items; ++k) {
      flags[k] = i0 + k < n ? holds_data[i0 + k] : 0;
      c += flags[k];
    }
    uint32_t before;
    Scan(temp).ExclusiveSum(c, before);
    uint64_t j = first[s] + before;
#pragma unroll
    for (int k = 0; k < segment_items; ++k) {
      const uint64_t i = i0 + k;
      if (i >= n) break;
      if (Gather) {
        if (flags[k]) out[j++] = in[i];
      } else {
        out[i] = flags[k] ? in[j++] : uint16_t(0);
      }
    }
    __syncthreads();  // the scan's storage is reused by the next segment
  }
}

// Each segment's first data code, and the total (read back).
struct DataPlaces {
  uint64_t segments = 0, total = 0;
  Buffer first;
};

DataPlaces data_places(const uint8_t* holds_data, uint64_t n, cudaStream_t stream) {
  DataPlaces places;
  places.segments = (n + segment_points - 1) / segment_points;
  Buffer counts = Buffer::device(places.segments * sizeof(uint32_t), stream);
  places.first = Buffer::device((places.segments + 1) * sizeof(uint64_t), stream);
  segment_counts_kernel<<<grid_for(places.segments, 1), segment_threads, 0, stream>>>(holds_data, n, places.segments,
                                                                                    counts.as<uint32_t>());
  FZG_CUDA_CHECK_LAUNCH();
  varlen::exclusive_scan(varlen::CountTerms{counts.as<uint32_t>(), places.segments}, places.segments,
                         places.first.as<uint64_t>(), uint64_t(0), varlen::Plus{}, stream);
  copy_bytes(&places.total, Location::host, places.first.as<uint64_t>() + places.segments, Location::device,
             sizeof(uint64_t), stream);
  return places;
}

}  // namespace

uint64_t gather_data_codes_cuda(const uint16_t* codes, const uint8_t* holds_data, uint64_t n, uint16_t* out,
                                cudaStream_t stream) {
  if (n == 0) return 0;
  const DataPlaces places = data_places(holds_data, n, stream);
  move_kernel<true><<<grid_for(places.segments, 1), segment_threads, 0, stream>>>(
      codes, holds_data, n, places.segments, places.first.as<uint64_t>(), out);
  FZG_CUDA_CHECK_LAUNCH();
  return places.total;
}

void scatter_data_codes_cuda(const uint16_t* data_codes, uint64_t count, const uint8_t* holds_data, uint64_t n,
                             uint16_t* codes, cudaStream_t stream) {
  if (n == 0) return require_data(count == 0, "lorenzo codes size");
  const DataPlaces places = data_places(holds_data, n, stream);
  require_data(places.total == count, "lorenzo codes size");  // before any code past `count` is read
  move_kernel<false><<<grid_for(places.segments, 1), segment_threads, 0, stream>>>(
      data_codes, holds_data, n, places.segments, places.first.as<uint64_t>(), codes);
  FZG_CUDA_CHECK_LAUNCH();
}

}  // namespace fzg::lorenzo
