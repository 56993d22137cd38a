// Quality of a lossy round trip, computed in double over the finite points, as SZ and
// cuSZ users read it. NaN must come back NaN and +-Inf unchanged, else the point is a violation.
#pragma once
#include <cstdint>

#include "core/field.hh"

namespace fzg {

struct Metrics {
  uint64_t count = 0;
  uint64_t finite_count = 0;
  double value_range = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;  // max_abs_error / value_range
  double mse = 0;
  double psnr = 0;           // dB; +inf for an exact result
  double nrmse = 0;
  uint64_t violations = 0;   // points with |x - x'| > error_bound (no slack) or a changed NaN/Inf
  double pearson = 1;        // correlation of x and x' over the finite points (1 when either is constant and equal)
  double error_autocorrelation = 0;  // lag-1 autocorrelation of x - x' in the field's order
};

Metrics compare_fields(const void* original, const void* reconstructed, DType type, uint64_t count,
                       double error_bound);

// SSIM as the lossy-compression assessment tools (Z-checker, qcat) compute it: the mean over
// windows of `window` points per axis (fewer on a shorter axis), moved by `shift` along each
// axis, of luminance x contrast x structure, with c1 = (0.01 R)^2, c2 = (0.03 R)^2 and
// c3 = c2 / 2 from the window's own original range R (c's at least 1e-300, so a constant
// window that is kept is 1). Windows holding a non-finite value are left out; f32 and f64
// only (1 otherwise).
double ssim(const void* original, const void* reconstructed, DType type, const Dims& dims, uint32_t window = 7,
            uint32_t shift = 2);

}  // namespace fzg
