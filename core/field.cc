#include "core/field.hh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "core/error.hh"
#include "core/missing_values.hh"

namespace fzg {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::u8: return 1;
    case DType::u16: return 2;
    case DType::u32: return 4;
    case DType::i32: return 4;
  }
  fail(ErrorCode::corrupt_data, "unknown dtype code " + std::to_string(int(t)));
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }

DType parse_dtype(const std::string& s) {
  if (s == "f32") return DType::f32;
  if (s == "f64") return DType::f64;
  if (s == "u8") return DType::u8;
  if (s == "u16") return DType::u16;
  if (s == "u32") return DType::u32;
  if (s == "i32") return DType::i32;
  fail(ErrorCode::invalid_argument, "unknown type '" + s + "' (expected f32, f64, u8, u16, u32 or i32)");
}

std::string to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
    case DType::i32: return "i32";
  }
  return "?";
}

ErrorMode parse_error_mode(const std::string& s) {
  if (s == "abs") return ErrorMode::abs;
  if (s == "rel" || s == "r2r") return ErrorMode::rel;
  if (s == "psnr") return ErrorMode::psnr;
  if (s == "lossless") return ErrorMode::lossless;
  fail(ErrorCode::invalid_argument, "unknown error mode '" + s + "' (expected abs, rel, psnr or lossless)");
}

std::string to_string(ErrorMode m) {
  switch (m) {
    case ErrorMode::abs: return "abs";
    case ErrorMode::rel: return "rel";
    case ErrorMode::psnr: return "psnr";
    case ErrorMode::lossless: return "lossless";
  }
  return "?";
}

Dims Dims::make(const std::vector<uint64_t>& fastest_first) {
  if (fastest_first.empty() || fastest_first.size() > 3)
    fail(ErrorCode::invalid_argument, "a field has 1 to 3 dimensions, got " + std::to_string(fastest_first.size()));
  Dims d;
  uint64_t extent[3] = {1, 1, 1};
  for (size_t i = 0; i < fastest_first.size(); ++i) {
    if (fastest_first[i] == 0) fail(ErrorCode::invalid_argument, "a dimension of 0 is not a field");
    extent[i] = fastest_first[i];
  }
  d.x = extent[0], d.y = extent[1], d.z = extent[2];
  d.rank = d.z > 1 ? 3 : d.y > 1 ? 2 : 1;
  // 2^56 values (288 PB of f32): every size derived from a field (bytes of any type, the
  // outlier stream's worst case of 28 bytes a value) stays far inside 64 bits.
  const uint64_t limit = uint64_t(1) << 56;
  if (d.x > limit / d.y || d.x * d.y > limit / d.z)
    fail(ErrorCode::invalid_argument, "field too large: " + std::to_string(d.x) + "x" + std::to_string(d.y) + "x" +
                                          std::to_string(d.z) + " is more than 2^56 values");
  return d;
}

std::string Dims::to_string() const {
  std::string s = std::to_string(x);
  if (rank >= 2) s += "x" + std::to_string(y);
  if (rank >= 3) s += "x" + std::to_string(z);
  return s;
}

Dims parse_dims(const std::string& text, bool slowest_first) {
  std::vector<uint64_t> extents;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 18)
      fail(ErrorCode::invalid_argument, "bad dimensions '" + text + "' (expected e.g. 500x500x100)");
    extents.push_back(std::stoull(part));
  }
  if (!text.empty() && text.back() == 'x')
    fail(ErrorCode::invalid_argument, "bad dimensions '" + text + "' (expected e.g. 500x500x100)");
  if (slowest_first) std::reverse(extents.begin(), extents.end());
  return Dims::make(extents);
}

template <typename T>
static void finite_range_of(const T* data, uint64_t count, double* min_out, double* max_out,
                            const MissingValues& missing) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
#pragma omp parallel for reduction(min : lo) reduction(max : hi) schedule(static)
  for (int64_t i = 0; i < int64_t(count); ++i) {
    const double v = double(data[i]);
    bool present = true;
    if constexpr (std::is_floating_point_v<T>) present = missing.empty() || missing.symbol_of(data[i]) == 0;
    if (std::isfinite(v) && present) {
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
  }
  if (lo > hi) lo = hi = 0;
  *min_out = lo + 0.0, *max_out = hi + 0.0;  // -0 becomes +0: every backend stores the same bits
}

void finite_range(const void* data, DType type, uint64_t count, double* min, double* max,
                  const MissingValues* missing_or_null) {
  const MissingValues missing = missing_or_null ? *missing_or_null : MissingValues{};
  switch (type) {
    case DType::f32: return finite_range_of(static_cast<const float*>(data), count, min, max, missing);
    case DType::f64: return finite_range_of(static_cast<const double*>(data), count, min, max, missing);
    case DType::u8: return finite_range_of(static_cast<const uint8_t*>(data), count, min, max, missing);
    case DType::u16: return finite_range_of(static_cast<const uint16_t*>(data), count, min, max, missing);
    case DType::u32: return finite_range_of(static_cast<const uint32_t*>(data), count, min, max, missing);
    case DType::i32: return finite_range_of(static_cast<const int32_t*>(data), count, min, max, missing);
  }
}

void read_device_range(const double* range, cudaStream_t stream, double* min, double* max) {
  double both[2];
  copy_bytes(both, Location::host, range, Location::device, sizeof both, stream);
  *min = both[0], *max = both[1];
}

}  // namespace fzg
