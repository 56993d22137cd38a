#include "tools/metrics.hh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hh"
#include "tools/ssim_window.hh"

namespace fzg {

namespace {
template <typename T>
Metrics compare_typed(const T* a, const T* b, uint64_t n, double error_bound, const uint8_t* missing) {
  const auto kept = [missing](int64_t i) { return !missing || !missing[i]; };
  Metrics m;
  m.count = n;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  double max_error = 0, sum_sq = 0;
  uint64_t finite = 0, violations = 0, left_out = 0;
#pragma omp parallel for reduction(min : lo) reduction(max : hi, max_error) \
    reduction(+ : sum_sq, finite, violations, left_out) schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i) {
    if (!kept(i)) {
      ++left_out;
      continue;
    }
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
    lo = std::min(lo, x), hi = std::max(hi, x);
    const double e = std::fabs(x - y);
    if (!(e <= error_bound)) ++violations;
    if (e > max_error || std::isnan(e)) max_error = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
    sum_sq += e * e;
  }
  if (finite == 0) lo = hi = 0;
  m.missing_count = left_out;
  m.finite_count = finite;
  m.value_range = hi - lo;
  m.max_abs_error = max_error;
  m.max_rel_error = m.value_range > 0 ? max_error / m.value_range : 0;
  m.mse = finite ? sum_sq / double(finite) : 0;
  m.psnr = m.mse > 0 ? 20 * std::log10(m.value_range) - 10 * std::log10(m.mse) : std::numeric_limits<double>::infinity();
  m.nrmse = m.value_range > 0 ? std::sqrt(m.mse) / m.value_range : 0;
  m.violations = violations;
  // Pearson and the error's lag-1 autocorrelation, around the means (a second pass keeps
  // them exact for fields far from zero), over the points kept whose x and x' are finite.
  const auto paired = [&](int64_t i) { return kept(i) && std::isfinite(double(a[i])) && std::isfinite(double(b[i])); };
  double sx = 0, sy = 0, se = 0;
  uint64_t pairs = 0;
#pragma omp parallel for reduction(+ : sx, sy, se, pairs) schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i)
    if (paired(i)) sx += double(a[i]), sy += double(b[i]), se += double(a[i]) - double(b[i]), ++pairs;
  if (pairs > 0) {
    const double mx = sx / double(pairs), my = sy / double(pairs), me = se / double(pairs);
    double cxx = 0, cyy = 0, cxy = 0, ee = 0, e1 = 0;
#pragma omp parallel for reduction(+ : cxx, cyy, cxy, ee, e1) schedule(static)
    for (int64_t i = 0; i < int64_t(n); ++i) {
      if (!paired(i)) continue;
      const double x = double(a[i]), y = double(b[i]);
      cxx += (x - mx) * (x - mx), cyy += (y - my) * (y - my), cxy += (x - mx) * (y - my);
      const double e = x - y - me;
      ee += e * e;
      if (i + 1 < int64_t(n) && paired(i + 1)) e1 += e * (double(a[i + 1]) - double(b[i + 1]) - me);
    }
    m.pearson = cxx > 0 && cyy > 0 ? cxy / std::sqrt(cxx * cyy) : (cxx == cyy ? 1.0 : 0.0);
    m.error_autocorrelation = ee > 0 ? e1 / ee : 0;
  }
  return m;
}

template <typename T>
double ssim_typed(const T* a, const T* b, const Dims& d, uint32_t window, uint32_t shift, const uint8_t* missing) {
  const uint32_t wx = uint32_t(std::min<uint64_t>(window, d.x)), wy = uint32_t(std::min<uint64_t>(window, d.y)),
                 wz = uint32_t(std::min<uint64_t>(window, d.z));
  const uint64_t nx = (d.x - wx) / shift + 1, ny = (d.y - wy) / shift + 1, nz = (d.z - wz) / shift + 1;
  double sum = 0;
  uint64_t windows = 0;
#pragma omp parallel for reduction(+ : sum, windows) schedule(static) collapse(2)
  for (int64_t k = 0; k < int64_t(nz); ++k)
    for (int64_t j = 0; j < int64_t(ny); ++j)
      for (uint64_t i = 0; i < nx; ++i) {
        const uint64_t origin = i * shift + d.x * (uint64_t(j) * shift + d.y * (uint64_t(k) * shift));
        const double w = ssim_window::window_ssim(wx, wy, wz, [&](uint32_t x, uint32_t y, uint32_t z) {
          const uint64_t at = origin + x + d.x * (y + d.y * z);
          const double nan = std::numeric_limits<double>::quiet_NaN();
          return ssim_window::Point{missing && missing[at] ? nan : double(a[at]), double(b[at])};
        });
        if (!std::isnan(w)) sum += w, ++windows;
      }
  return windows ? sum / double(windows) : 1.0;
}

// Integer fields must come back exact: one violation when a point kept differs.
Metrics compare_bytes(const uint8_t* a, const uint8_t* b, uint64_t count, size_t value_bytes, const uint8_t* missing) {
  Metrics m;
  m.count = count;
  m.psnr = std::numeric_limits<double>::infinity();
  if (!missing) {
    m.violations = std::memcmp(a, b, count * value_bytes) != 0;
    return m;
  }
  for (uint64_t i = 0; i < count; ++i) {
    if (missing[i]) {
      ++m.missing_count;
      continue;
    }
    if (std::memcmp(a + i * value_bytes, b + i * value_bytes, value_bytes) != 0) m.violations = 1;
  }
  return m;
}
}  // namespace

double ssim(const void* original, const void* reconstructed, DType type, const Dims& dims, uint32_t window,
            uint32_t shift, const uint8_t* missing) {
  if (dims.count() == 0 || window == 0 || shift == 0) return 1.0;
  if (type == DType::f32)
    return ssim_typed(static_cast<const float*>(original), static_cast<const float*>(reconstructed), dims, window,
                      shift, missing);
  if (type == DType::f64)
    return ssim_typed(static_cast<const double*>(original), static_cast<const double*>(reconstructed), dims, window,
                      shift, missing);
  return 1.0;
}

double ssim_on(Device device, Location where, const void* original, const void* reconstructed, DType type,
               const Dims& dims, uint32_t window, uint32_t shift, const uint8_t* missing) {
  if (device == Device::cpu) {
    if (where == Location::device) fail(ErrorCode::invalid_argument, "SSIM on the CPU: the fields are on the device");
    return ssim(original, reconstructed, type, dims, window, shift, missing);
  }
#ifdef FZG_HAVE_CUDA
  if (where == Location::device) return ssim_cuda(original, reconstructed, type, dims, window, shift, missing, nullptr);
  // Host fields go up first: the copies take a fraction of what the CPU's windows would.
  const uint64_t bytes = dims.count() * dtype_size(type);
  const auto upload = [&](const void* host, uint64_t size) {
    Buffer on_device = Buffer::device(size, nullptr);
    copy_bytes(on_device.data(), Location::device, host, Location::host, size, nullptr);
    return on_device;
  };
  const Buffer a = upload(original, bytes), b = upload(reconstructed, bytes);
  const Buffer mask = missing ? upload(missing, dims.count()) : Buffer();
  return ssim_cuda(a.data(), b.data(), type, dims, window, shift, missing ? mask.data() : nullptr, nullptr);
#else
  (void)where, (void)original, (void)reconstructed, (void)type, (void)dims, (void)window, (void)shift, (void)missing;
  fail(ErrorCode::unsupported, "SSIM on the GPU: this build has no CUDA backend");
#endif
}

Metrics compare_fields(const void* original, const void* reconstructed, DType type, uint64_t count,
                       double error_bound, const uint8_t* missing) {
  if (type == DType::f32)
    return compare_typed(static_cast<const float*>(original), static_cast<const float*>(reconstructed), count,
                         error_bound, missing);
  if (type == DType::f64)
    return compare_typed(static_cast<const double*>(original), static_cast<const double*>(reconstructed), count,
                         error_bound, missing);
  return compare_bytes(static_cast<const uint8_t*>(original), static_cast<const uint8_t*>(reconstructed), count,
                       dtype_size(type), missing);
}

}  // namespace fzg
