#include "tools/metrics.hh"

#include <cmath>
#include <cstring>
#include <limits>

namespace fzg {

namespace {
template <typename T>
Metrics compare_typed(const T* a, const T* b, uint64_t n, double error_bound) {
  Metrics m;
  m.count = n;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  finite_range(a, dtype_of<T>(), n, &lo, &hi);
  double max_error = 0, sum_sq = 0;
  uint64_t finite = 0, violations = 0;
#pragma omp parallel for reduction(max : max_error) reduction(+ : sum_sq, finite, violations) schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i) {
    const double x = double(a[i]), y = double(b[i]);
    if (std::isnan(x)) {
      violations += !std::isnan(y);
      continue;
    }
    if (std::isinf(x)) {
      violations += !(x == y);
      continue;
    }
    ++finite;
    const double e = std::fabs(x - y);
    if (!(e <= error_bound)) ++violations;
    if (e > max_error || std::isnan(e)) max_error = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
    sum_sq += e * e;
  }
  m.finite_count = finite;
  m.value_range = hi - lo;
  m.max_abs_error = max_error;
  m.max_rel_error = m.value_range > 0 ? max_error / m.value_range : 0;
  m.mse = finite ? sum_sq / double(finite) : 0;
  m.psnr = m.mse > 0 ? 20 * std::log10(m.value_range) - 10 * std::log10(m.mse) : std::numeric_limits<double>::infinity();
  m.nrmse = m.value_range > 0 ? std::sqrt(m.mse) / m.value_range : 0;
  m.violations = violations;
  return m;
}

Metrics compare_bytes(const uint8_t* a, const uint8_t* b, uint64_t bytes) {
  Metrics m;
  m.count = bytes;
  m.violations = std::memcmp(a, b, bytes) != 0;
  m.psnr = std::numeric_limits<double>::infinity();
  return m;
}
}  // namespace

Metrics compare_fields(const void* original, const void* reconstructed, DType type, uint64_t count,
                       double error_bound) {
  if (type == DType::f32)
    return compare_typed(static_cast<const float*>(original), static_cast<const float*>(reconstructed), count, error_bound);
  if (type == DType::f64)
    return compare_typed(static_cast<const double*>(original), static_cast<const double*>(reconstructed), count,
                         error_bound);
  return compare_bytes(static_cast<const uint8_t*>(original), static_cast<const uint8_t*>(reconstructed),
                       count * dtype_size(type));
}

}  // namespace fzg
