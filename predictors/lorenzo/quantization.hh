// The Lorenzo stage's lossy step: the bound and quantization step resolved from the request
// and the field's finite value range, and their place in the stage's header.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/field.hh"
#include "runtime/portable.hh"

namespace fzg::lorenzo {

// The request's part of the bound, worked out on the host once: what the range is multiplied
// by. The rest (quantization_of) is a few correctly rounded operations, so the host and the
// device resolve the same bits from a range (std::pow, which PSNR needs, is not correctly
// rounded everywhere: the device never evaluates it).
struct BoundTerms {
  ErrorMode mode = ErrorMode::abs;
  double value = 0;     // abs: the bound; rel: the fraction of the range
  double root3 = 0;     // psnr: sqrt(3) ...
  double fraction = 0;  // ... and 10^(-value / 20)
};
// Checks the request (invalid_argument unless its value is finite and non-negative).
BoundTerms bound_terms(const ErrorBound& request);

// (Constants as <cfloat> macros, not numeric_limits: its constexpr functions need nvcc's
// --expt-relaxed-constexpr in device code.)
// The absolute bound and step for a field of f32 (else f64) values whose finite values lie in
// [min, max]. The step leaves room for the rounding of x' = T(q * step) to T, so points do not
// fail the bound check by rounding alone. A zero bound (constant field in rel mode) asks for an
// exact result: every point must then reconstruct exactly or become an exact outlier.
FZG_HOST_DEVICE Quantization quantization_of(const BoundTerms& t, bool f32, double min, double max) {
  Quantization q;
  q.min = min, q.max = max;
  // max - min overflows for a field spanning [-DBL_MAX, DBL_MAX]: its bound is then taken as
  // the fraction of each end (every other field's bound keeps the bits of the usual product).
  const double range = max - min;
  const bool range_finite = std::isfinite(range);
  switch (t.mode) {
    case ErrorMode::abs: q.error_bound = t.value; break;
    case ErrorMode::rel: q.error_bound = range_finite ? t.value * range : t.value * max - t.value * min; break;
    case ErrorMode::psnr:
      // Errors uniform in [-eb, eb] have RMSE eb / sqrt(3): PSNR = 20 log10(range / RMSE).
      q.error_bound = range_finite ? t.root3 * range * t.fraction : t.root3 * t.fraction * max - t.root3 * t.fraction * min;
      break;
    case ErrorMode::lossless: q.error_bound = 0; break;
  }
  if (!(q.error_bound >= 0)) q.error_bound = 0;
  q.step = 2 * q.error_bound;
  // |x - q*step| <= step/2 holds before rounding to T; rounding adds at most half an ulp of the
  // largest magnitude. Shrink the step by that much when it is small beside the bound.
  const double a = std::fabs(min), b = std::fabs(max);
  const double largest = a < b ? b : a;
  if (largest > 0 && std::isfinite(largest) && std::isfinite(q.error_bound)) {
    const int mantissa_bits = f32 ? 24 : 53;
    const double half_ulp = std::ldexp(1.0, std::ilogb(largest) - mantissa_bits);
    if (half_ulp < q.error_bound / 2) q.step = 2 * (q.error_bound - half_ulp);
  }
  if (!(q.step > DBL_MIN && std::isfinite(q.step))) {
    // No usable step: pick one that reconstructs the extreme value exactly, so a constant
    // field costs nothing; every other point is checked against the bound like any other.
    q.step = (largest > 0 && std::isfinite(largest)) ? largest : 1.0;
    if (!std::isfinite(q.error_bound)) q.error_bound = HUGE_VAL;
  }
  return q;
}

// Both steps on the host.
inline Quantization resolve_quantization(const ErrorBound& request, DType type, double min, double max) {
  return quantization_of(bound_terms(request), type == DType::f32, min, max);
}

// The header: f64 error_bound, step, min, max (little-endian), 32 bytes.
constexpr uint64_t quantization_header_bytes = 32;
std::vector<uint8_t> write_quantization(const Quantization& q);
// Checks and reads a stored header (corrupt_data when it cannot be one).
Quantization read_quantization(const std::vector<uint8_t>& header);

}  // namespace fzg::lorenzo
