// What a field is: element type, shape (fastest axis first) and the error-bound request.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/buffer.hh"

namespace fzg {

enum class DType : uint8_t { f32 = 1, f64 = 2, u8 = 3, u16 = 4, u32 = 5, i32 = 6 };
enum class ErrorMode : uint8_t { abs = 1, rel = 2, psnr = 3, lossless = 4 };
enum class Device { cpu, cuda };

size_t dtype_size(DType t);
template <typename T> constexpr DType dtype_of() { return sizeof(T) == 4 ? DType::f32 : DType::f64; }
bool is_float(DType t);
DType parse_dtype(const std::string& s);
std::string to_string(DType t);
ErrorMode parse_error_mode(const std::string& s);
std::string to_string(ErrorMode m);

// Shape with x fastest. Trailing extents of 1 are dropped: 360x330x1 is a 2D field.
struct Dims {
  uint64_t x = 1, y = 1, z = 1;
  int rank = 1;

  static Dims make(const std::vector<uint64_t>& fastest_first);
  uint64_t count() const { return x * y * z; }
  std::string to_string() const;
};

// Parses "500x500x100" (fastest first) or, with slowest_first, "100x500x500".
Dims parse_dims(const std::string& text, bool slowest_first = false);

// The error-bound request as the user gave it.
struct ErrorBound {
  ErrorMode mode = ErrorMode::rel;
  double value = 1e-3;
};

// What a predictor quantizes with, resolved from the request and the data (see
// predictors/lorenzo/quantization.hh); files report it in their Header.
struct Quantization {
  double error_bound = 0;  // absolute bound every point honours: |x - x'| <= error_bound
  double step = 1;         // quantization step, 2 * error_bound unless that is zero or not finite
  double min = 0, max = 0; // finite value range of the input (0, 0 when no finite value)
};

struct MissingValues;  // core/missing_values.hh

// Finite min and max of a host field (NaN and +-Inf left out, and the points `missing` marks
// when given), OpenMP-parallel.
void finite_range(const void* data, DType type, uint64_t count, double* min, double* max,
                  const MissingValues* missing = nullptr);
// A range the device holds as two f64 (min, max: DeviceRange::on_device, data_bits_device's
// `reported`), read back into *min and *max (waiting for `stream`).
void read_device_range(const double* range, cudaStream_t stream, double* min, double* max);
#ifdef FZG_HAVE_CUDA
// The same on device data, stream-ordered on `stream` (waits for the result).
void finite_range_device(const void* data, DType type, uint64_t count, double* min, double* max, cudaStream_t stream,
                         const MissingValues* missing = nullptr);

// A device field with fill values: every point's data bit (DataBits, core/missing_values.hh:
// 1 where it equals no fill value) into `bits` (device memory of DataBits(dims).words() words),
// queued on `stream`; with `reported` (device memory of two f64), in the same read of the
// field, the finite range of its points with data as finite_range_device gives it, min then
// max, queued too.
void data_bits_device(const void* data, DType type, const Dims& dims, const MissingValues& missing, uint32_t* bits,
                      cudaStream_t stream, double* reported = nullptr);
// The same with the range read back into `min` and `max` (waiting for it), where both are given.
void data_bits_device(const void* data, DType type, const Dims& dims, const MissingValues& missing, uint32_t* bits,
                      cudaStream_t stream, double* min, double* max);

// The finite range, queued on `stream` at construction: on_device() holds it (min, max as two
// f64, as finite_range_device gives them) in stream order, for work on the device that needs
// no host in between; result() waits for it and reads it back.
class DeviceRange {
 public:
  DeviceRange(const void* data, DType type, uint64_t count, cudaStream_t stream, const MissingValues* missing = nullptr);
  const double* on_device() const { return scratch_.as<double>(); }
  // on_device()'s bytes, for a caller that keeps them past this object.
  Buffer reported() const { return scratch_.slice(0, reported_bytes); }
  void result(double* min, double* max);

 private:
  static constexpr size_t reported_bytes = 2 * sizeof(double);
  cudaStream_t stream_;
  Buffer scratch_, missing_;  // the reported range, then the blocks' ranges; the fill values
};

// The same on device data that arrives in pieces on `stream` (an upload): add() reduces a
// piece on a stream of its own once the work queued on `stream` so far is done, so the
// reductions run beside the copies of the later pieces; result() waits for them all.
class ArrivingRange {
 public:
  ArrivingRange(DType type, cudaStream_t stream, const MissingValues* missing = nullptr);
  ~ArrivingRange();
  ArrivingRange(const ArrivingRange&) = delete;
  ArrivingRange& operator=(const ArrivingRange&) = delete;
  void add(const void* data, uint64_t count);
  void result(double* min, double* max);

 private:
  struct State;
  std::unique_ptr<State> state_;
};
#endif

}  // namespace fzg
