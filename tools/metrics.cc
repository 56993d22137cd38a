#include "tools/metrics.hh"

#include <algorithm>
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
  // Pearson and the error's lag-1 autocorrelation, around the means (a second pass keeps
  // them exact for fields far from zero).
  double sx = 0, sy = 0, se = 0;
#pragma omp parallel for reduction(+ : sx, sy, se) schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i)
    if (std::isfinite(double(a[i])) && std::isfinite(double(b[i]))) sx += double(a[i]), sy += double(b[i]), se += double(a[i]) - double(b[i]);
  uint64_t pairs = 0;
#pragma omp parallel for reduction(+ : pairs) schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i) pairs += std::isfinite(double(a[i])) && std::isfinite(double(b[i]));
  if (pairs > 0) {
    const double mx = sx / double(pairs), my = sy / double(pairs), me = se / double(pairs);
    double cxx = 0, cyy = 0, cxy = 0, ee = 0, e1 = 0;
#pragma omp parallel for reduction(+ : cxx, cyy, cxy, ee, e1) schedule(static)
    for (int64_t i = 0; i < int64_t(n); ++i) {
      const double x = double(a[i]), y = double(b[i]);
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      cxx += (x - mx) * (x - mx), cyy += (y - my) * (y - my), cxy += (x - mx) * (y - my);
      const double e = x - y - me;
      ee += e * e;
      if (i + 1 < int64_t(n) && std::isfinite(double(a[i + 1])) && std::isfinite(double(b[i + 1])))
        e1 += e * (double(a[i + 1]) - double(b[i + 1]) - me);
    }
    m.pearson = cxx > 0 && cyy > 0 ? cxy / std::sqrt(cxx * cyy) : (cxx == cyy ? 1.0 : 0.0);
    m.error_autocorrelation = ee > 0 ? e1 / ee : 0;
  }
  return m;
}

// One window's SSIM (qcat's formula), over [x0, x0 + wx) x [y0, y0 + wy) x [z0, z0 + wz);
// NaN when the window holds a non-finite value.
template <typename T>
double window_ssim(const T* a, const T* b, const Dims& d, uint64_t x0, uint64_t y0, uint64_t z0, uint64_t wx,
                   uint64_t wy, uint64_t wz) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sx = 0, sy = 0;
  const double np = double(wx * wy * wz);
  for (uint64_t z = z0; z < z0 + wz; ++z)
    for (uint64_t y = y0; y < y0 + wy; ++y)
      for (uint64_t x = x0; x < x0 + wx; ++x) {
        const uint64_t i = x + d.x * (y + d.y * z);
        const double u = double(a[i]), v = double(b[i]);
        if (!std::isfinite(u) || !std::isfinite(v)) return std::numeric_limits<double>::quiet_NaN();
        lo = std::min(lo, u), hi = std::max(hi, u), sx += u, sy += v;
      }
  const double mx = sx / np, my = sy / np;
  double vx = 0, vy = 0, cov = 0;
  for (uint64_t z = z0; z < z0 + wz; ++z)
    for (uint64_t y = y0; y < y0 + wy; ++y)
      for (uint64_t x = x0; x < x0 + wx; ++x) {
        const uint64_t i = x + d.x * (y + d.y * z);
        const double u = double(a[i]) - mx, v = double(b[i]) - my;
        vx += u * u, vy += v * v, cov += u * v;
      }
  vx /= np, vy /= np, cov /= np;
  const double range2 = (hi - lo) * (hi - lo);
  const double c1 = std::max(1e-4 * range2, 1e-300), c2 = std::max(9e-4 * range2, 1e-300), c3 = c2 / 2;
  const double sigmas = std::sqrt(vx) * std::sqrt(vy);
  const double luminance = (2 * mx * my + c1) / (mx * mx + my * my + c1);
  const double contrast = (2 * sigmas + c2) / (vx + vy + c2);
  const double structure = (cov + c3) / (sigmas + c3);
  return luminance * contrast * structure;
}

template <typename T>
double ssim_typed(const T* a, const T* b, const Dims& d, uint32_t window, uint32_t shift) {
  const uint64_t wx = std::min<uint64_t>(window, d.x), wy = std::min<uint64_t>(window, d.y),
                 wz = std::min<uint64_t>(window, d.z);
  const uint64_t nx = (d.x - wx) / shift + 1, ny = (d.y - wy) / shift + 1, nz = (d.z - wz) / shift + 1;
  double sum = 0;
  uint64_t windows = 0;
#pragma omp parallel for reduction(+ : sum, windows) schedule(static) collapse(2)
  for (int64_t k = 0; k < int64_t(nz); ++k)
    for (int64_t j = 0; j < int64_t(ny); ++j)
      for (uint64_t i = 0; i < nx; ++i) {
        const double w = window_ssim(a, b, d, i * shift, uint64_t(j) * shift, uint64_t(k) * shift, wx, wy, wz);
        if (!std::isnan(w)) sum += w, ++windows;
      }
  return windows ? sum / double(windows) : 1.0;
}

Metrics compare_bytes(const uint8_t* a, const uint8_t* b, uint64_t bytes) {
  Metrics m;
  m.count = bytes;
  m.violations = std::memcmp(a, b, bytes) != 0;
  m.psnr = std::numeric_limits<double>::infinity();
  return m;
}
}  // namespace

double ssim(const void* original, const void* reconstructed, DType type, const Dims& dims, uint32_t window,
            uint32_t shift) {
  if (dims.count() == 0 || window == 0 || shift == 0) return 1.0;
  if (type == DType::f32)
    return ssim_typed(static_cast<const float*>(original), static_cast<const float*>(reconstructed), dims, window, shift);
  if (type == DType::f64)
    return ssim_typed(static_cast<const double*>(original), static_cast<const double*>(reconstructed), dims, window,
                      shift);
  return 1.0;
}

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
