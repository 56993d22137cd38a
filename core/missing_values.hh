// Missing points: values a field uses to mark "no data" (fill values such as 1e20 on land in
// ocean models, NetCDF's 9.97e36, -1.07e9 in satellite products, or NaN). A point is missing
// when its bits equal a fill value's bits in the field's own type (1e20 as f32 is
// 100000002004087734272): a predictor leaves such points out of the value range and the
// bound, and a decoder gives them back bit for bit.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/field.hh"
#include "runtime/portable.hh"

namespace fzg {

struct MissingValues {
  // At most 15 fill values: a missing point's symbol (1..15) fits in four bits.
  static constexpr uint32_t capacity = 15;
  uint32_t count = 0;
  uint64_t bits[capacity] = {};  // the fill values' bit patterns (an f32's in the low 32 bits)

  bool empty() const { return count == 0; }
  // 0 for a point that holds data, i + 1 for a point equal (bit for bit) to fill value i.
  template <typename T>
  FZG_HOST_DEVICE uint32_t symbol_of(T value) const {
    const uint64_t pattern = bits_of(value);
    if (count == 1) return bits[0] == pattern;  // most fields: one compare, no loop
    uint32_t symbol = 0;
    // Unrolled over the capacity (constant indices keep `bits` in registers or the kernel's
    // parameters on the GPU), and left after `count` (most fields have one fill value).
    FZG_UNROLL
    for (uint32_t i = 0; i < capacity; ++i) {
      if (i >= count) break;
      if (bits[i] == pattern) symbol = i + 1;
    }
    return symbol;
  }
  // Fill value `symbol - 1` as a T.
  template <typename T>
  FZG_HOST_DEVICE T value_of(uint32_t symbol) const {
#if defined(__CUDA_ARCH__)
    // Selected with constant indices: a run-time index into a kernel parameter would copy
    // the whole struct to local memory.
    uint64_t pattern = 0;
#pragma unroll
    for (uint32_t i = 0; i < capacity; ++i)
      if (i + 1 == symbol) pattern = bits[i];
    if constexpr (sizeof(T) == 4) return __uint_as_float(uint32_t(pattern));
    else return __longlong_as_double((long long)pattern);
#else
    const uint64_t pattern = bits[symbol - 1];
    T value;
    if constexpr (sizeof(T) == 4) {
      const uint32_t word = uint32_t(pattern);
      std::memcpy(&value, &word, 4);
    } else {
      std::memcpy(&value, &pattern, 8);
    }
    return value;
#endif
  }

 private:
  template <typename T>
  FZG_HOST_DEVICE static uint64_t bits_of(T value) {
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(T) == 4) return __float_as_uint(value);
    else return uint64_t(__double_as_longlong(value));
#else
    if constexpr (sizeof(T) == 4) {
      uint32_t word;
      std::memcpy(&word, &value, 4);
      return word;
    } else {
      uint64_t pattern;
      std::memcpy(&pattern, &value, 8);
      return pattern;
    }
#endif
  }
};

// Which points of a field hold data (are not missing), for the GPU: a bit a point, by rows of
// the field (y + ny z; one row in 1D) of words_per_row() 32-bit words, bit j of a row's word w
// being its point x = 32 w + j (bits past nx are 0). A warp's 32 points of a row are one word
// (a predictor's tiles start at multiples of 32 in x), so kernels write and read a word where
// a byte a point took 32. One layout for the host and every kernel that writes or reads the
// bits; a chunk of whole rows is a contiguous run of the field's words.
struct DataBits {
  uint64_t nx, rows, per_row;  // per_row: words in a row
  explicit DataBits(const Dims& d) : nx(d.x), rows(d.count() / d.x), per_row((d.x + 31) / 32) {}
  FZG_HOST_DEVICE uint64_t words_per_row() const { return per_row; }
  FZG_HOST_DEVICE uint64_t words() const { return rows * per_row; }
  // The word of the 32 points of `row` (y + ny z; 0 in 1D) from x, a multiple of 32.
  FZG_HOST_DEVICE uint64_t word(uint64_t x, uint64_t row) const { return row * per_row + x / 32; }
  // Word w's first point (field order) and how many points it holds (32, fewer at a row's end).
  FZG_HOST_DEVICE void place(uint64_t w, uint64_t& first_point, uint32_t& points) const {
    const uint64_t row = w / per_row, x = (w - row * per_row) * 32;
    first_point = row * nx + x;
    points = uint32_t(nx - x < 32 ? nx - x : 32);
  }
};

// The fill values' patterns in a float type: each double converted to `type` (NaN stays NaN,
// its sign kept). Fails with invalid_argument on more than `capacity` values, on values that
// coincide in `type`, or on a type that is not f32 or f64.
MissingValues missing_values_of(const std::vector<double>& values, DType type);

// A fill value as a user writes it: a number, or nan, -nan, inf, -inf (invalid_argument
// otherwise). "nan" is the canonical quiet NaN of the field's type; other NaN payloads are
// not fill values (they are stored exactly, as any NaN is without fill values).
double parse_fill_value(const std::string& text);
// The form parse_fill_value reads back: shortest round-trip decimal, or nan / -nan / inf / -inf.
std::string fill_value_text(double value);

}  // namespace fzg
