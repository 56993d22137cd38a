#include "tools/metrics.hh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.hh"
#include "tools/ssim_window.hh"

namespace fzg {

namespace {

// Adds add(sums, i) over i in [0, n) in an order fixed by n alone: 1024 slices, each summed in
// turn by one thread, then the slices' sums in order. OpenMP's reduction clause adds the
// threads' sums in the order they finish, so eval's and compare's metrics of one
// reconstruction could differ in the last digits, and would depend on the thread count.
template <typename Sums, typename Add>
Sums sum_in_fixed_order(uint64_t n, const Add& add) {
  constexpr uint64_t slices = 1024;
  std::vector<Sums> partial(slices);
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < int64_t(slices); ++s) {
    Sums mine;
    for (uint64_t i = n * uint64_t(s) / slices; i < n * uint64_t(s + 1) / slices; ++i) add(mine, i);
    partial[s] = mine;
  }
  Sums total;
  for (const Sums& p : partial) total.merge(p);
  return total;
}

// compare_typed's passes: the errors and range, then the means of the pairs, then the moments
// about them.
struct ErrorSums {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, max_error = 0, sum_sq = 0;
  uint64_t finite = 0, violations = 0, missing = 0;
  void merge(const ErrorSums& o) {
    lo = std::min(lo, o.lo), hi = std::max(hi, o.hi), max_error = std::max(max_error, o.max_error);
    sum_sq += o.sum_sq, finite += o.finite, violations += o.violations, missing += o.missing;
  }
};
struct PairSums {
  double x = 0, y = 0, error = 0;
  uint64_t pairs = 0;
  void merge(const PairSums& o) { x += o.x, y += o.y, error += o.error, pairs += o.pairs; }
};
struct MomentSums {
  double xx = 0, yy = 0, xy = 0, ee = 0, e1 = 0;
  void merge(const MomentSums& o) { xx += o.xx, yy += o.yy, xy += o.xy, ee += o.ee, e1 += o.e1; }
};

template <typename T>
Metrics compare_typed(const T* a, const T* b, uint64_t n, double error_bound, const uint8_t* missing) {
  const auto kept = [missing](uint64_t i) { return !missing || !missing[i]; };
  const ErrorSums errors = sum_in_fixed_order<ErrorSums>(n, [&](ErrorSums& s, uint64_t i) {
    if (!kept(i)) {
      ++s.missing;
      return;
    }
    const double x = double(a[i]), y = double(b[i]);
    if (std::isnan(x)) {
      s.violations += !std::isnan(y);
      return;
    }
    if (std::isinf(x)) {
      s.violations += !(x == y);
      return;
    }
    ++s.finite;
    s.lo = std::min(s.lo, x), s.hi = std::max(s.hi, x);
    const double e = std::fabs(x - y);
    if (!(e <= error_bound)) ++s.violations;
    if (e > s.max_error || std::isnan(e)) s.max_error = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
    s.sum_sq += e * e;
  });
  Metrics m;
  m.count = n;
  m.missing_count = errors.missing;
  m.finite_count = errors.finite;
  m.value_range = errors.finite ? errors.hi - errors.lo : 0;
  m.max_abs_error = errors.max_error;
  m.max_rel_error = m.value_range > 0 ? m.max_abs_error / m.value_range : 0;
  m.mse = errors.finite ? errors.sum_sq / double(errors.finite) : 0;
  m.psnr = m.mse > 0 ? 20 * std::log10(m.value_range) - 10 * std::log10(m.mse) : std::numeric_limits<double>::infinity();
  m.nrmse = m.value_range > 0 ? std::sqrt(m.mse) / m.value_range : 0;
  m.violations = errors.violations;
  // Pearson and the error's lag-1 autocorrelation, around the means (a second pass keeps
  // them exact for fields far from zero), over the points kept whose x and x' are finite.
  const auto paired = [&](uint64_t i) { return kept(i) && std::isfinite(double(a[i])) && std::isfinite(double(b[i])); };
  const PairSums sums = sum_in_fixed_order<PairSums>(n, [&](PairSums& s, uint64_t i) {
    if (paired(i)) s.x += double(a[i]), s.y += double(b[i]), s.error += double(a[i]) - double(b[i]), ++s.pairs;
  });
  if (sums.pairs > 0) {
    const double pairs = double(sums.pairs), mx = sums.x / pairs, my = sums.y / pairs, me = sums.error / pairs;
    const MomentSums c = sum_in_fixed_order<MomentSums>(n, [&](MomentSums& s, uint64_t i) {
      if (!paired(i)) return;
      const double x = double(a[i]), y = double(b[i]);
      s.xx += (x - mx) * (x - mx), s.yy += (y - my) * (y - my), s.xy += (x - mx) * (y - my);
      const double e = x - y - me;
      s.ee += e * e;
      if (i + 1 < n && paired(i + 1)) s.e1 += e * (double(a[i + 1]) - double(b[i + 1]) - me);
    });
    m.pearson = c.xx > 0 && c.yy > 0 ? c.xy / std::sqrt(c.xx * c.yy) : (c.xx == c.yy ? 1.0 : 0.0);
    m.error_autocorrelation = c.ee > 0 ? c.e1 / c.ee : 0;
  }
  return m;
}

struct WindowSums {
  double ssim = 0;
  uint64_t windows = 0;
  void merge(const WindowSums& o) { ssim += o.ssim, windows += o.windows; }
};

// The windows row by row (a row: the windows along x at one y and z start).
template <typename T>
double ssim_typed(const T* a, const T* b, const Dims& d, uint32_t window, uint32_t shift, const uint8_t* missing) {
  const uint32_t wx = uint32_t(std::min<uint64_t>(window, d.x)), wy = uint32_t(std::min<uint64_t>(window, d.y)),
                 wz = uint32_t(std::min<uint64_t>(window, d.z));
  const uint64_t nx = (d.x - wx) / shift + 1, ny = (d.y - wy) / shift + 1, nz = (d.z - wz) / shift + 1;
  const WindowSums total = sum_in_fixed_order<WindowSums>(ny * nz, [&](WindowSums& s, uint64_t row) {
    const uint64_t j = row % ny, k = row / ny;
    for (uint64_t i = 0; i < nx; ++i) {
      const uint64_t origin = i * shift + d.x * (j * shift + d.y * (k * shift));
      const double w = ssim_window::window_ssim(wx, wy, wz, [&](uint32_t x, uint32_t y, uint32_t z) {
        const uint64_t at = origin + x + d.x * (y + d.y * z);
        const double nan = std::numeric_limits<double>::quiet_NaN();
        return ssim_window::Point{missing && missing[at] ? nan : double(a[at]), double(b[at])};
      });
      if (!std::isnan(w)) s.ssim += w, ++s.windows;
    }
  });
  return total.windows ? total.ssim / double(total.windows) : std::numeric_limits<double>::quiet_NaN();
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
  if (dims.count() == 0 || window == 0 || shift == 0) return std::numeric_limits<double>::quiet_NaN();
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
