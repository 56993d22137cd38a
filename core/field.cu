// Finite value range on the GPU: a reduction of (min, max) pairs, NaN and +-Inf mapped to the
// identity. min and max are exact in any order, so the result equals the CPU's.
#include <cub/block/block_reduce.cuh>

#include <limits>
#include <type_traits>
#include <memory>

#include "core/field.hh"
#include "core/missing_values.hh"
#include "runtime/buffer.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"

namespace fzg {

namespace {
// Reduced in the field's own type: min and max are exact in it, and f32 pairs move half the bytes.
template <typename T>
struct Range {
  T lo, hi;
};

// A point's range: empty when it is not finite.
template <typename T>
struct ToRange {
  __device__ Range<T> operator()(T v) const {
    return isfinite(v) ? Range<T>{v, v} : Range<T>{T(INFINITY), T(-INFINITY)};
  }
};

// The same, and empty at a fill value. The functor stays small (a functor as large as
// MissingValues made CUB's reduction five times slower on the H100): the first fill value
// inline, the others, rare, in device memory.
template <typename T>
struct ToRangeWithout {
  T first;
  uint32_t count;
  const MissingValues* all;
  __device__ Range<T> operator()(T v) const {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, unsigned long long>;
    const bool missing = *reinterpret_cast<const Bits*>(&v) == *reinterpret_cast<const Bits*>(&first) ||
                         (count > 1 && all->symbol_of(v) != 0);
    return isfinite(v) && !missing ? Range<T>{v, v} : Range<T>{T(INFINITY), T(-INFINITY)};
  }
};

// The fill values in device memory, for ToRangeWithout (empty without fill values).
Buffer device_copy(const MissingValues& missing, cudaStream_t stream) {
  if (missing.empty()) return Buffer();
  Buffer copy = Buffer::device(sizeof(MissingValues), stream);
  copy_bytes(copy.data(), Location::device, &missing, Location::host, sizeof(MissingValues), stream);
  return copy;
}

template <typename T>
struct Widen {
  __device__ Range<T> operator()(const Range<T>& a, const Range<T>& b) const {
    return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  }
};

template <typename T>
Range<T> empty_range() {
  return {std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity()};
}

constexpr int range_threads = 256;

// Each block's range of its grid-stride share of data[0, count) into partial[block]: four
// loads in flight per thread before they are combined.
template <typename T, typename Functor>
__global__ void __launch_bounds__(range_threads) range_kernel(const T* __restrict__ data, uint64_t count,
                                                              Functor to_range, Range<T>* partial) {
  const uint64_t stride = uint64_t(gridDim.x) * range_threads;
  uint64_t i = uint64_t(blockIdx.x) * range_threads + threadIdx.x;
  Range<T> r = {T(INFINITY), T(-INFINITY)};
  const Widen<T> widen;
  for (; i + 3 * stride < count; i += 4 * stride) {
    const T a = data[i], b = data[i + stride], c = data[i + 2 * stride], d = data[i + 3 * stride];
    r = widen(widen(r, to_range(a)), widen(to_range(b), widen(to_range(c), to_range(d))));
  }
  for (; i < count; i += stride) r = widen(r, to_range(data[i]));
  using Reduce = cub::BlockReduce<Range<T>, range_threads>;
  __shared__ typename Reduce::TempStorage storage;
  const Range<T> block = Reduce(storage).Reduce(r, widen);
  if (threadIdx.x == 0) partial[blockIdx.x] = block;
}

// The blocks' ranges into *out (one block).
template <typename T>
__global__ void __launch_bounds__(range_threads) range_total_kernel(const Range<T>* partial, unsigned blocks,
                                                                    Range<T>* out) {
  Range<T> r = {T(INFINITY), T(-INFINITY)};
  const Widen<T> widen;
  for (unsigned b = threadIdx.x; b < blocks; b += range_threads) r = widen(r, partial[b]);
  using Reduce = cub::BlockReduce<Range<T>, range_threads>;
  __shared__ typename Reduce::TempStorage storage;
  const Range<T> total = Reduce(storage).Reduce(r, widen);
  if (threadIdx.x == 0) *out = total;
}

// Queues the range of data[0, count) into *out; `temp` grows to the blocks' partial ranges.
// Two launches of our own rather than CUB's device-wide reduction, whose dispatch (a scratch
// size query, occupancy queries, scratch) took ~25 us of host time per call on an H100: a
// 2D field's GPU compress call is ~160 us in all.
template <typename T, typename Functor>
void reduce_with(Functor to_range, const T* data, uint64_t count, Range<T>* out, Buffer& temp, cudaStream_t stream) {
  const unsigned blocks = resident_grid(range_kernel<T, Functor>, range_threads, count, 4 * range_threads);
  if (temp.size() < blocks * sizeof(Range<T>)) temp = Buffer::device(blocks * sizeof(Range<T>), stream);
  range_kernel<<<blocks, range_threads, 0, stream>>>(data, count, to_range, temp.as<Range<T>>());
  range_total_kernel<<<1, range_threads, 0, stream>>>(temp.as<Range<T>>(), blocks, out);
  FZG_CUDA_CHECK_LAUNCH();
}

// `missing`: the fill values (host), `on_device` their device_copy (null without any).
template <typename T>
void reduce_into(const T* data, uint64_t count, Range<T>* out, Buffer& temp, cudaStream_t stream,
                 const MissingValues& missing, const MissingValues* on_device) {
  if (missing.empty()) reduce_with(ToRange<T>{}, data, count, out, temp, stream);
  else reduce_with(ToRangeWithout<T>{missing.value_of<T>(1), missing.count, on_device}, data, count, out, temp, stream);
}

// The range as the CPU reports it: [0, 0] when nothing is finite, never -0.
template <typename T>
void report(const Range<T>& r, double* min, double* max) {
  double lo = double(r.lo), hi = double(r.hi);
  if (lo > hi) lo = hi = 0;
  *min = lo + 0.0, *max = hi + 0.0;
}

// Calls f(T{}) for a floating-point type.
template <typename F>
void typed(DType type, F f) {
  if (type == DType::f32) f(float{});
  else if (type == DType::f64) f(double{});
  else fail(ErrorCode::invalid_argument, "value range: f32 or f64 only");
}

// The range the device holds at `range` (a Range of the type's elements), read back.
void read_range(DType type, const Buffer& range, cudaStream_t stream, double* min, double* max) {
  typed(type, [&](auto zero) {
    Range<decltype(zero)> r;
    copy_bytes(&r, Location::host, range.data(), Location::device, sizeof r, stream);
    report(r, min, max);
  });
}

template <typename T>
__global__ void widen_kernel(Range<T>* total, const Range<T>* piece) {
  *total = Widen<T>{}(*total, *piece);
}

}  // namespace

// Both element types' state: the running total and the piece just reduced, side by side.
struct ArrivingRange::State {
  DType type;
  cudaStream_t arrivals, reductions = thread_stream(0);
  cudaEvent_t arrived = nullptr;
  Buffer ranges = Buffer::device(2 * sizeof(Range<double>), reductions), temp;
  MissingValues missing;
  Buffer missing_on_device;
  State(DType t, cudaStream_t s, const MissingValues* m)
      : type(t), arrivals(s), missing(m ? *m : MissingValues{}), missing_on_device(device_copy(missing, reductions)) {
    FZG_CUDA_CHECK(cudaEventCreateWithFlags(&arrived, cudaEventDisableTiming));
  }
  ~State() {
    cudaStreamSynchronize(reductions);  // nothing of ours may still run when the buffers go
    cudaEventDestroy(arrived);
  }
};

ArrivingRange::ArrivingRange(DType type, cudaStream_t stream, const MissingValues* missing)
    : state_(std::make_unique<State>(type, stream, missing)) {
  typed(type, [&](auto zero) {
    using T = decltype(zero);
    const Range<T> empty = empty_range<T>();
    FZG_CUDA_CHECK(cudaMemcpyAsync(state_->ranges.data(), &empty, sizeof empty, cudaMemcpyHostToDevice,
                                   state_->reductions));
    FZG_CUDA_CHECK(cudaStreamSynchronize(state_->reductions));  // `empty` lives on this stack
  });
}

ArrivingRange::~ArrivingRange() = default;

void ArrivingRange::add(const void* data, uint64_t count) {
  State& s = *state_;
  if (count == 0) return;
  FZG_CUDA_CHECK(cudaEventRecord(s.arrived, s.arrivals));
  FZG_CUDA_CHECK(cudaStreamWaitEvent(s.reductions, s.arrived, 0));
  typed(s.type, [&](auto zero) {
    using T = decltype(zero);
    auto* total = s.ranges.as<Range<T>>();
    reduce_into(static_cast<const T*>(data), count, total + 1, s.temp, s.reductions, s.missing,
                s.missing_on_device.as<MissingValues>());
    widen_kernel<<<1, 1, 0, s.reductions>>>(total, total + 1);
    FZG_CUDA_CHECK_LAUNCH();
  });
}

void ArrivingRange::result(double* min, double* max) {
  read_range(state_->type, state_->ranges, state_->reductions, min, max);
}

DeviceRange::DeviceRange(const void* data, DType type, uint64_t count, cudaStream_t stream,
                         const MissingValues* missing)
    : type_(type), stream_(stream) {
  typed(type, [&](auto zero) {
    using T = decltype(zero);
    range_ = Buffer::device(sizeof(Range<T>), stream);
    const MissingValues fills = missing ? *missing : MissingValues{};
    missing_ = device_copy(fills, stream);
    reduce_into(static_cast<const T*>(data), count, range_.as<Range<T>>(), temp_, stream, fills,
                missing_.as<MissingValues>());
  });
}

void DeviceRange::result(double* min, double* max) { read_range(type_, range_, stream_, min, max); }

void finite_range_device(const void* data, DType type, uint64_t count, double* min, double* max, cudaStream_t stream,
                         const MissingValues* missing) {
  DeviceRange(data, type, count, stream, missing).result(min, max);
}

}  // namespace fzg
