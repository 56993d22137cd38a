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
// Reduced in the field's own type: min and max are exact in it, and f32 pairs move half the bytes.
template <typename T>
struct Range {
  T lo, hi;
};

template <typename T>
struct ToRange {
  __device__ Range<T> operator()(T v) const {
    return isfinite(v) ? Range<T>{v, v} : Range<T>{T(INFINITY), T(-INFINITY)};
  }
};

template <typename T>
struct Widen {
  __device__ Range<T> operator()(const Range<T>& a, const Range<T>& b) const {
    return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  }
};

template <typename T>
void reduce_range(const T* data, uint64_t count, double* min, double* max, cudaStream_t stream) {
  auto ranges = thrust::make_transform_iterator(data, ToRange<T>{});
  const Range<T> identity{std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity()};
  Buffer result = Buffer::device(sizeof(Range<T>), stream);
  size_t temp_bytes = 0;
  FZG_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, temp_bytes, ranges, result.as<Range<T>>(), count, Widen<T>{},
                                           identity, stream));
  Buffer temp = Buffer::device(temp_bytes, stream);
  FZG_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), temp_bytes, ranges, result.as<Range<T>>(), count, Widen<T>{},
                                           identity, stream));
  Range<T> r;
  FZG_CUDA_CHECK(cudaMemcpyAsync(&r, result.data(), sizeof r, cudaMemcpyDeviceToHost, stream));
  FZG_CUDA_CHECK(cudaStreamSynchronize(stream));
  double lo = double(r.lo), hi = double(r.hi);
  if (lo > hi) lo = hi = 0;
  *min = lo + 0.0, *max = hi + 0.0;  // -0 becomes +0, as on the CPU
}
}  // namespace

void finite_range_device(const void* data, DType type, uint64_t count, double* min, double* max, cudaStream_t stream) {
  if (type == DType::f32) return reduce_range(static_cast<const float*>(data), count, min, max, stream);
  if (type == DType::f64) return reduce_range(static_cast<const double*>(data), count, min, max, stream);
  fail(ErrorCode::invalid_argument, "value range: f32 or f64 only");
}

}  // namespace fzg
