// The dual-quantization rules shared bit for bit by the CPU and CUDA backends.
//
// Pre-quantization: q = rint(x * (1 / step)) in double (the reciprocal computed once, on the
// host, so every backend multiplies by the same number), kept when that product is within 2^30 and the
// reconstruction x' = T(double(q) * step) is within the bound. A point that fails (NaN, +-Inf,
// too large, or off by rounding) is an exact outlier: its value is stored as is. Its q still
// feeds its neighbours' predictions (0 when there is no usable q).
//
// Lorenzo deltas are taken in wrapping 32-bit arithmetic and inverted by wrapping prefix
// sums, so any int32 q round-trips. Codes are sign-magnitude u16: bit 15 the sign, bits 0-14
// the magnitude; a delta beyond +-32767 is an escape (code 0, delta in the outlier stream).
#pragma once
#include <cmath>
#include <cstdint>

#include "pipeline/portable.hh"

namespace fzg::lorenzo {

constexpr double max_quantized_magnitude = 1073741824.0;  // 2^30
constexpr int32_t max_code_magnitude = 32767;

template <typename T>
FZG_HOST_DEVICE T reconstruct(int32_t q, double step) {
#if defined(__CUDA_ARCH__)
  return T(__dmul_rn(double(q), step));
#else
  return T(double(q) * step);
#endif
}

// Returns true when the point must be stored exactly; *q is what its neighbours predict from.
template <typename T>
FZG_HOST_DEVICE bool prequantize(T value, double inverse_step, double step, double error_bound, int32_t* q) {
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
  *q = int32_t(std::rint(r));
  const double error = std::fabs(v - double(reconstruct<T>(*q, step)));
  return !(error <= error_bound);
}

FZG_HOST_DEVICE int32_t wrapping_sub(int32_t a, int32_t b) { return int32_t(uint32_t(a) - uint32_t(b)); }
FZG_HOST_DEVICE int32_t wrapping_add(int32_t a, int32_t b) { return int32_t(uint32_t(a) + uint32_t(b)); }

// Returns false (and code 0) when the delta needs an escape.
FZG_HOST_DEVICE bool encode_delta(int32_t delta, uint16_t* code) {
  if (delta < -max_code_magnitude || delta > max_code_magnitude) {
    *code = 0;
    return false;
  }
  *code = delta < 0 ? uint16_t(0x8000u | uint32_t(-delta)) : uint16_t(delta);
  return true;
}

FZG_HOST_DEVICE int32_t decode_delta(uint16_t code) {
  const int32_t magnitude = code & 0x7fff;
  return (code & 0x8000) ? -magnitude : magnitude;
}

}  // namespace fzg::lorenzo
