// Finite value range on the GPU: one CUB reduction of (min, max) pairs, NaN and +-Inf mapped
// to the identity. min and max are exact in any order, so the result equals the CPU's.
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <limits>

#include "pipeline/buffer.hh"
#include "pipeline/cuda_check.cuh"
#include "pipeline/field.hh"

namespace fzg {

namespace {
struct Range {
  double lo, hi;
};

template <typename T>
struct ToRange {
  __device__ Range operator()(T v) const {
    const double d = double(v);
    return isfinite(d) ? Range{d, d} : Range{INFINITY, -INFINITY};
  }
};

struct Widen {
  __device__ Range operator()(const Range& a, const Range& b) const { return {fmin(a.lo, b.lo), fmax(a.hi, b.hi)}; }
};

template <typename T>
void reduce_range(const T* data, uint64_t count, double* min, double* max, cudaStream_t stream) {
  auto ranges = thrust::make_transform_iterator(data, ToRange<T>{});
  const Range identity{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  Buffer result = Buffer::device(sizeof(Range), stream);
  size_t temp_bytes = 0;
  FZG_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, temp_bytes, ranges, result.as<Range>(), count, Widen{}, identity, stream));
  Buffer temp = Buffer::device(temp_bytes, stream);
  FZG_CUDA_CHECK(
      cub::DeviceReduce::Reduce(temp.data(), temp_bytes, ranges, result.as<Range>(), count, Widen{}, identity, stream));
  Range r;
  FZG_CUDA_CHECK(cudaMemcpyAsync(&r, result.data(), sizeof r, cudaMemcpyDeviceToHost, stream));
  FZG_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (r.lo > r.hi) r.lo = r.hi = 0;
  *min = r.lo + 0.0, *max = r.hi + 0.0;  // -0 becomes +0, as on the CPU
}
}  // namespace

void finite_range_device(const void* data, DType type, uint64_t count, double* min, double* max, cudaStream_t stream) {
  if (type == DType::f32) return reduce_range(static_cast<const float*>(data), count, min, max, stream);
  if (type == DType::f64) return reduce_range(static_cast<const double*>(data), count, min, max, stream);
  fail(ErrorCode::invalid_argument, "value range: f32 or f64 only");
}

}  // namespace fzg
