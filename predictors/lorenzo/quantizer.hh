// The dual-quantization rules shared bit for bit by the CPU and CUDA backends.
//
// Pre-quantization: q = rint(x * (1 / step)) in double (the reciprocal computed once a call,
// by constants_of below on the host or the device: the same number either way), kept when
// that product is within 2^30 and the reconstruction x' = T(double(q) * step) is within the
// bound. A point that fails (NaN, +-Inf, too large, or off by rounding) is an exact outlier:
// its value is stored as is. Its q still feeds its neighbours' predictions (0 when there is
// no usable q).
//
// Lorenzo deltas are taken in wrapping 32-bit arithmetic and inverted by wrapping prefix
// sums, so any int32 q round-trips. Codes are sign-magnitude u16: bit 15 the sign, bits 0-14
// the magnitude; a delta beyond +-32767 is an escape (code 0, delta in the outlier stream).
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/field.hh"
#include "runtime/portable.hh"

namespace fzg::lorenzo {

constexpr double max_quantized_magnitude = 1073741824.0;  // 2^30
constexpr int32_t max_code_magnitude = 32767;

#if defined(__CUDA_ARCH__)
// Integer <-> double without the conversion units (a quarter of the FP64 rate on the GPU):
// 1.5 * 2^52 + r, for |r| < 2^51, rounds r to an integer half to even (the same as rint) and
// leaves it in the low mantissa bits; 2^52 + 2^31 + q is built from its bits and is exact.
constexpr double rounding_magic = 6755399441055744.0;  // 1.5 * 2^52
__device__ __forceinline__ double int_to_double(int32_t q) {
  return __dsub_rn(__hiloint2double(0x43300000, int(uint32_t(q) ^ 0x80000000u)), 4503601774854144.0);  // 2^52 + 2^31
}
#endif

template <typename T>
FZG_HOST_DEVICE T reconstruct(int32_t q, double step) {
#if defined(__CUDA_ARCH__)
  return T(__dmul_rn(int_to_double(q), step));
#else
  return T(double(q) * step);
#endif
}

// Returns true when the point must be stored exactly; *q is what its neighbours predict from.
// `accept_below` is a shortcut that never changes the answer: when |x - q*step| <= accept_below,
// the rounding of q*step to T cannot take x' past the bound (see acceptance_threshold), so
// the final conversion and check are skipped. Pass a negative value to always check fully.
template <typename T>
FZG_HOST_DEVICE bool prequantize(T value, double inverse_step, double step, double error_bound, double accept_below,
                                 int32_t* q) {
  const double v = double(value);
#if defined(__CUDA_ARCH__)
  const double r = __dmul_rn(v, inverse_step);
#else
  const double r = v * inverse_step;
#endif
  if (!(std::fabs(r) <= max_quantized_magnitude)) {  // NaN fails here too
    *q = 0;
    return true;
  }
#if defined(__CUDA_ARCH__)
  const double shifted = __dadd_rn(r, rounding_magic);  // rint(r) in the low bits
  *q = __double2loint(shifted);
  const double unrounded = __dmul_rn(__dsub_rn(shifted, rounding_magic), step);
#else
  *q = int32_t(std::rint(r));
  const double unrounded = double(*q) * step;
#endif
  if (std::fabs(v - unrounded) <= accept_below) return false;
  const double error = std::fabs(v - double(T(unrounded)));
  return !(error <= error_bound);
}

// The shortcut for prequantize: for f64, x' = q*step exactly, so the bound itself (a product
// past DBL_MAX is inf, whose distance from x fails the shortcut); for f32, the bound less twice
// the largest rounding (half an f32 ulp at max|x| + eb, where every finite x and q*step lie;
// below FLT_MIN the ulp stays that of FLT_MIN's binade, 2^-149, so a field of subnormals and
// its bound, both below it, take that one), which also covers the double arithmetic's own
// rounding. Rounding is bounded only while no q*step can round past FLT_MAX to inf: a field
// reaching that far is always checked fully. -1 disables the shortcut.
FZG_HOST_DEVICE double acceptance_threshold(bool is_f32, double error_bound, double min, double max) {
  if (!is_f32) return error_bound;
  const double largest = std::fmax(std::fabs(min), std::fabs(max)) + error_bound;
  if (!(largest > 0) || !std::isfinite(largest)) return -1;
  if (largest > double(FLT_MAX)) return -1;
  const int exponent = std::ilogb(largest);  // FLT_MIN's binade at least (FLT_MIN_EXP - 1)
  const double half_ulp = std::ldexp(1.0, (exponent > FLT_MIN_EXP - 1 ? exponent : FLT_MIN_EXP - 1) - 24);
  const double threshold = error_bound - 2 * half_ulp;
  return threshold > 0 ? threshold : -1;
}

// What the encode reads for every point: the quantization's terms, worked out once a call
// (on the host, or on the device from a range it holds: the same bits either way).
struct QuantConstants {
  double inverse_step, step, error_bound, accept_below;
};
FZG_HOST_DEVICE QuantConstants constants_of(const Quantization& q, bool is_f32) {
  return {1.0 / q.step, q.step, q.error_bound, acceptance_threshold(is_f32, q.error_bound, q.min, q.max)};
}

// prequantize with a call's constants (the same numbers on either backend).
template <typename T>
FZG_HOST_DEVICE bool prequantize(T value, const QuantConstants& c, int32_t* q) {
  return prequantize(value, c.inverse_step, c.step, c.error_bound, c.accept_below, q);
}

FZG_HOST_DEVICE int32_t wrapping_sub(int32_t a, int32_t b) { return int32_t(uint32_t(a) - uint32_t(b)); }
FZG_HOST_DEVICE int32_t wrapping_add(int32_t a, int32_t b) { return int32_t(uint32_t(a) + uint32_t(b)); }

// Returns false (and code 0) when the delta needs an escape. Branch-free: the magnitude as
// unsigned (INT32_MIN's is 2^31, an escape like any beyond 32767) and the sign moved to bit 15.
FZG_HOST_DEVICE bool encode_delta(int32_t delta, uint16_t* code) {
  const uint32_t sign = uint32_t(delta) >> 31;
  const uint32_t magnitude = (uint32_t(delta) ^ (0u - sign)) + sign;
  const bool fits = magnitude <= uint32_t(max_code_magnitude);
  *code = uint16_t(fits ? magnitude | sign << 15 : 0u);
  return fits;
}

FZG_HOST_DEVICE int32_t decode_delta(uint16_t code) {
  const int32_t magnitude = code & 0x7fff;
  return (code & 0x8000) ? -magnitude : magnitude;
}

}  // namespace fzg::lorenzo
