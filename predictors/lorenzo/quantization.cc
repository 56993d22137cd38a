// The lossy step's arithmetic: the request and the field's value range to a bound and a step.
#include "predictors/lorenzo/quantization.hh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hh"

namespace fzg::lorenzo {

Quantization resolve_quantization(const ErrorBound& request, DType type, double min, double max) {
  if (!(std::isfinite(request.value) && request.value >= 0))
    fail(ErrorCode::invalid_argument, "the error bound must be a finite non-negative number");
  Quantization q;
  q.min = min, q.max = max;
  // max - min overflows for a field spanning [-DBL_MAX, DBL_MAX]: its bound is then taken as
  // the fraction of each end (every other field's bound keeps the bits of the usual product).
  const double range = max - min;
  const bool range_finite = std::isfinite(range);
  switch (request.mode) {
    case ErrorMode::abs: q.error_bound = request.value; break;
    case ErrorMode::rel:
      q.error_bound = range_finite ? request.value * range : request.value * max - request.value * min;
      break;
    case ErrorMode::psnr: {
      // Errors uniform in [-eb, eb] have RMSE eb / sqrt(3): PSNR = 20 log10(range / RMSE).
      const double fraction = std::pow(10.0, -request.value / 20.0);
      q.error_bound = range_finite ? std::sqrt(3.0) * range * fraction
                                   : std::sqrt(3.0) * fraction * max - std::sqrt(3.0) * fraction * min;
      break;
    }
    case ErrorMode::lossless: q.error_bound = 0; break;
  }
  if (!(q.error_bound >= 0)) q.error_bound = 0;
  q.step = 2 * q.error_bound;
  // |x - q*step| <= step/2 holds before rounding to T; rounding adds at most half an ulp of the
  // largest magnitude. Shrink the step by that much when it is small beside the bound.
  const double largest = std::max(std::fabs(min), std::fabs(max));
  if (largest > 0 && std::isfinite(largest) && std::isfinite(q.error_bound)) {
    const int mantissa_bits = type == DType::f32 ? 24 : 53;
    const double half_ulp = std::ldexp(1.0, std::ilogb(largest) - mantissa_bits);
    if (half_ulp < q.error_bound / 2) q.step = 2 * (q.error_bound - half_ulp);
  }
  if (!(q.step > std::numeric_limits<double>::min() && std::isfinite(q.step))) {
    // No usable step: pick one that reconstructs the extreme value exactly, so a constant
    // field costs nothing; every other point is checked against the bound like any other.
    q.step = (largest > 0 && std::isfinite(largest)) ? largest : 1.0;
    if (!std::isfinite(q.error_bound)) q.error_bound = std::numeric_limits<double>::infinity();
  }
  return q;
}

std::vector<uint8_t> write_quantization(const Quantization& q) {
  std::vector<uint8_t> bytes(quantization_header_bytes);
  const double values[4] = {q.error_bound, q.step, q.min, q.max};
  std::memcpy(bytes.data(), values, sizeof(values));
  return bytes;
}

Quantization read_quantization(const std::vector<uint8_t>& header) {
  require_data(header.size() == quantization_header_bytes, "lorenzo header size");
  double values[4];
  std::memcpy(values, header.data(), sizeof(values));
  Quantization q{values[0], values[1], values[2], values[3]};
  require_data(q.step > 0 && q.error_bound >= 0 && !(q.min > q.max), "lorenzo quantization");
  return q;
}

}  // namespace fzg::lorenzo
