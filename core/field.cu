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

// The range as the CPU reports it: [0, 0] when nothing is finite, never -0.
template <typename T>
__host__ __device__ void report(const Range<T>& r, double* min, double* max) {
  double lo = double(r.lo), hi = double(r.hi);
  if (lo > hi) lo = hi = 0;
  *min = lo + 0.0, *max = hi + 0.0;
}

// The blocks' ranges into *out where it is not null (one block), and reported as two f64
// (min, max) into `reported` where that is not null: what a stage resolving its quantization on the device reads.
template <typename T>
__global__ void __launch_bounds__(range_threads) range_total_kernel(const Range<T>* partial, unsigned blocks,
                                                                    Range<T>* out, double* reported) {
  Range<T> r = {T(INFINITY), T(-INFINITY)};
  const Widen<T> widen;
  for (unsigned b = threadIdx.x; b < blocks; b += range_threads) r = widen(r, partial[b]);
  using Reduce = cub::BlockReduce<Range<T>, range_threads>;
  __shared__ typename Reduce::TempStorage storage;
  const Range<T> total = Reduce(storage).Reduce(r, widen);
  if (threadIdx.x == 0) {
    if (out) *out = total;
    if (reported) report(total, reported, reported + 1);
  }
}

// The range's blocks: at most one wave of resident ones.
template <typename T, typename Functor>
unsigned range_blocks(uint64_t count) {
  return resident_grid(range_kernel<T, Functor>, range_threads, count, 4 * range_threads);
}

// The two launches, into `partial` (room for `blocks` ranges), then *out and/or `reported`.
template <typename T, typename Functor>
void launch_range(Functor to_range, const T* data, uint64_t count, unsigned blocks, Range<T>* partial, Range<T>* out,
                  double* reported, cudaStream_t stream) {
  range_kernel<<<blocks, range_threads, 0, stream>>>(data, count, to_range, partial);
  range_total_kernel<<<1, range_threads, 0, stream>>>(partial, blocks, out, reported);
  FZG_CUDA_CHECK_LAUNCH();
}

// Queues the range of data[0, count) into *out; `temp` grows to the blocks' partial ranges.
// Two launches of our own rather than CUB's device-wide reduction, whose dispatch (a scratch
// size query, occupancy queries, scratch) took ~25 us of host time per call on an H100: a
// 2D field's GPU compress call is ~160 us in all.
template <typename T, typename Functor>
void reduce_with(Functor to_range, const T* data, uint64_t count, Range<T>* out, Buffer& temp, cudaStream_t stream) {
  const unsigned blocks = range_blocks<T, Functor>(count);
  if (temp.size() < blocks * sizeof(Range<T>)) temp = Buffer::device(blocks * sizeof(Range<T>), stream);
  launch_range(to_range, data, count, blocks, temp.as<Range<T>>(), out, static_cast<double*>(nullptr), stream);
}

// Calls f with the functor that maps a point to its range: `missing` the fill values (host),
// `on_device` their device_copy (null without any).
template <typename T, typename F>
void with_range_functor(const MissingValues& missing, const MissingValues* on_device, F f) {
  if (missing.empty()) f(ToRange<T>{});
  else f(ToRangeWithout<T>{missing.value_of<T>(1), missing.count, on_device});
}

template <typename T>
void reduce_into(const T* data, uint64_t count, Range<T>* out, Buffer& temp, cudaStream_t stream,
                 const MissingValues& missing, const MissingValues* on_device) {
  with_range_functor<T>(missing, on_device, [&](auto to_range) { reduce_with(to_range, data, count, out, temp, stream); });
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

// A lane's V consecutive points of a row, loaded at once (16 bytes where V > 1).
template <typename T, int V>
struct Points {
  T v[V];
};
template <typename T, int V>
__device__ Points<T, V> load_points(const T* at) {
  Points<T, V> p;
  if constexpr (V == 1) {
    p.v[0] = *at;
  } else if constexpr (sizeof(T) == 4) {
    const float4 f = *reinterpret_cast<const float4*>(at);
    p.v[0] = f.x, p.v[1] = f.y, p.v[2] = f.z, p.v[3] = f.w;
  } else {
    const double2 d = *reinterpret_cast<const double2*>(at);
    p.v[0] = d.x, p.v[1] = d.y;
  }
  return p;
}

// The data bits (DataBits) of a field, and with `WithRange` each block's finite range of its
// points with data into partial[block]. A warp takes a segment of up to `segment` words of one
// row at a time (one division finds its place); a lane loads V consecutive points at once (16
// bytes where the rows allow: nx a multiple of V, data 16-byte aligned), so 32 / V lanes make a
// word (their bits ORed by shuffles; a ballot where V is 1), `unroll` loads in flight. A bit is
// set where the point equals no fill value; bits past the row's end are 0. (A division and a
// 4-byte load for every word made the kernel instruction-bound: 1.3 TB/s of f32 on an H100.)
template <typename T, int V, bool WithRange, bool OneFill>
__global__ void __launch_bounds__(range_threads) data_bits_kernel(const T* __restrict__ data, DataBits layout,
                                                                  uint64_t segments_per_row, MissingValues missing,
                                                                  uint32_t* __restrict__ bits, Range<T>* partial) {
  constexpr uint32_t segment = 64, unroll = 4, warps_a_block = range_threads / 32, lanes_a_word = 32 / V;
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t segments = layout.rows * segments_per_row, warps = uint64_t(gridDim.x) * warps_a_block;
  // Most fields have one fill value: one compare in the type's own bits (a kernel of its own:
  // a run-time choice kept the 15-value loop beside every point's compare).
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, unsigned long long>;
  const Bits fill = Bits(missing.bits[0]);
  T lo = T(INFINITY), hi = T(-INFINITY);
  for (uint64_t s = uint64_t(blockIdx.x) * warps_a_block + threadIdx.x / 32; s < segments; s += warps) {
    const uint64_t row = s / segments_per_row, first = (s - row * segments_per_row) * segment;
    const uint32_t words = uint32_t(layout.per_row - first < segment ? layout.per_row - first : segment);
    const uint64_t x0 = first * 32 + lane * V;  // this lane's first point in the segment's first words
    const T* src = data + row * layout.nx + x0;
    uint32_t* out = bits + row * layout.per_row + first + lane / lanes_a_word;
    for (uint32_t w = 0; w < words; w += V * unroll) {
      Points<T, V> p[unroll];
#pragma unroll
      for (uint32_t u = 0; u < unroll; ++u) {
        const bool inside = x0 + 32 * (w + u * V) < layout.nx;  // V points at once: nx is a multiple of V
        if (inside) p[u] = load_points<T, V>(src + 32 * (w + u * V));
        else
#pragma unroll
          for (int i = 0; i < V; ++i) p[u].v[i] = T(0);
      }
#pragma unroll
      for (uint32_t u = 0; u < unroll; ++u) {
        const bool inside = x0 + 32 * (w + u * V) < layout.nx;
        uint32_t mine = 0;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const T v = p[u].v[i];
          const bool has_data =
              inside && (OneFill ? *reinterpret_cast<const Bits*>(&v) != fill : missing.symbol_of(v) == 0);
          mine |= uint32_t(has_data) << i;
          if constexpr (WithRange) {
            const bool counts = has_data && isfinite(v);
            lo = fmin(lo, counts ? v : T(INFINITY)), hi = fmax(hi, counts ? v : T(-INFINITY));
          }
        }
        uint32_t word;
        if constexpr (V == 1) {
          word = __ballot_sync(0xffffffffu, mine);
        } else {
          word = mine << (V * (lane % lanes_a_word));
#pragma unroll
          for (uint32_t offset = 1; offset < lanes_a_word; offset <<= 1) word |= __shfl_xor_sync(0xffffffffu, word, offset);
        }
        const uint32_t at = w + u * V + lane / lanes_a_word;  // this lane's word in the segment
        if (lane % lanes_a_word == 0 && at < words) out[w + u * V] = word;
      }
    }
  }
  if constexpr (WithRange) {
    using Reduce = cub::BlockReduce<Range<T>, range_threads>;
    __shared__ typename Reduce::TempStorage storage;
    const Range<T> block = Reduce(storage).Reduce(Range<T>{lo, hi}, Widen<T>{});
    if (threadIdx.x == 0) partial[blockIdx.x] = block;
  }
}

// Launches data_bits_kernel with 16-byte loads where the field allows them.
template <typename T, bool WithRange>
void launch_data_bits(const T* data, const DataBits& layout, const MissingValues& missing, uint32_t* bits,
                      Buffer* partial, unsigned* blocks, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const uint64_t segments_per_row = (layout.per_row + 63) / 64, segments = layout.rows * segments_per_row;
  const bool wide = layout.nx % V == 0 && reinterpret_cast<uintptr_t>(data) % 16 == 0;
  auto launch = [&](auto kernel) {
    *blocks = resident_grid(kernel, range_threads, segments, range_threads / 32);
    if (WithRange) *partial = Buffer::device(*blocks * sizeof(Range<T>), stream);
    kernel<<<*blocks, range_threads, 0, stream>>>(data, layout, segments_per_row, missing, bits,
                                                  WithRange ? partial->as<Range<T>>() : nullptr);
    FZG_CUDA_CHECK_LAUNCH();
  };
  const bool one_fill = missing.count == 1;
  if (wide && one_fill) launch(data_bits_kernel<T, V, WithRange, true>);
  else if (wide) launch(data_bits_kernel<T, V, WithRange, false>);
  else if (one_fill) launch(data_bits_kernel<T, 1, WithRange, true>);
  else launch(data_bits_kernel<T, 1, WithRange, false>);
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
    : stream_(stream) {
  typed(type, [&](auto zero) {
    using T = decltype(zero);
    const MissingValues fills = missing ? *missing : MissingValues{};
    missing_ = device_copy(fills, stream);
    with_range_functor<T>(fills, missing_.as<MissingValues>(), [&](auto to_range) {
      const unsigned blocks = range_blocks<T, decltype(to_range)>(count);
      // One allocation (each costs the call a stream wait, and its release an event): the
      // reported range first, then the blocks' ranges.
      scratch_ = Buffer::device(reported_bytes + blocks * sizeof(Range<T>), stream);
      launch_range(to_range, static_cast<const T*>(data), count, blocks,
                   reinterpret_cast<Range<T>*>(scratch_.data() + reported_bytes), static_cast<Range<T>*>(nullptr),
                   scratch_.as<double>(), stream);
    });
  });
}

void DeviceRange::result(double* min, double* max) { read_device_range(on_device(), stream_, min, max); }

void finite_range_device(const void* data, DType type, uint64_t count, double* min, double* max, cudaStream_t stream,
                         const MissingValues* missing) {
  DeviceRange(data, type, count, stream, missing).result(min, max);
}

void data_bits_device(const void* data, DType type, const Dims& dims, const MissingValues& missing, uint32_t* bits,
                      cudaStream_t stream, double* reported) {
  const DataBits layout(dims);
  if (layout.words() == 0) {
    if (reported) FZG_CUDA_CHECK(cudaMemsetAsync(reported, 0, 2 * sizeof(double), stream));  // [0, 0]: +0.0 twice
    return;
  }
  typed(type, [&](auto zero) {
    using T = decltype(zero);
    Buffer partial;
    unsigned blocks = 0;
    if (!reported) return launch_data_bits<T, false>(static_cast<const T*>(data), layout, missing, bits, &partial,
                                                      &blocks, stream);
    launch_data_bits<T, true>(static_cast<const T*>(data), layout, missing, bits, &partial, &blocks, stream);
    range_total_kernel<<<1, range_threads, 0, stream>>>(partial.as<Range<T>>(), blocks, static_cast<Range<T>*>(nullptr),
                                                        reported);
    FZG_CUDA_CHECK_LAUNCH();
  });
}

void data_bits_device(const void* data, DType type, const Dims& dims, const MissingValues& missing, uint32_t* bits,
                      cudaStream_t stream, double* min, double* max) {
  if (!min || !max) return data_bits_device(data, type, dims, missing, bits, stream);
  Buffer reported = Buffer::device(2 * sizeof(double), stream);
  data_bits_device(data, type, dims, missing, bits, stream, reported.as<double>());
  read_device_range(reported.as<double>(), stream, min, max);
}

}  // namespace fzg
