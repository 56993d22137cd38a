// Quality of a lossy round trip, computed in double over the finite points, as SZ and
// cuSZ users read it. NaN must come back NaN and +-Inf unchanged, else the point is a violation.
//
// Missing points (a fill value's mask: one byte per value, nonzero = missing; nullptr = none)
// are left out of every metric, as if the field did not have them.
#pragma once
#include <cstdint>

#include "core/field.hh"

namespace fzg {

struct Metrics {
  uint64_t count = 0;          // every point, missing ones included
  uint64_t missing_count = 0;  // points the mask leaves out
  uint64_t finite_count = 0;   // finite points that are not missing
  double value_range = 0;      // of the original's finite points that are not missing
  double max_abs_error = 0;
  double max_rel_error = 0;  // max_abs_error / value_range
  double mse = 0;
  double psnr = 0;           // dB; +inf for an exact result
  double nrmse = 0;
  uint64_t violations = 0;   // points with |x - x'| > error_bound (no slack) or a changed NaN/Inf
  double pearson = 1;        // correlation of x and x' over the finite points (1 when either is constant and equal)
  double error_autocorrelation = 0;  // lag-1 autocorrelation of x - x' in the field's order, over
                                     // neighbouring pairs that are both finite and not missing
};

Metrics compare_fields(const void* original, const void* reconstructed, DType type, uint64_t count,
                       double error_bound, const uint8_t* missing = nullptr);

// SSIM as the lossy-compression assessment tools (Z-checker, qcat) compute it: the mean over
// windows of `window` points per axis (fewer on a shorter axis), moved by `shift` along each
// axis, of luminance x contrast x structure, with c1 = (0.01 R)^2, c2 = (0.03 R)^2 and
// c3 = c2 / 2 from the window's own original range R (c's at least 1e-300, so a constant
// window that is kept is 1). Windows holding a non-finite or missing value are left out; NaN
// when no window is kept (nothing was measured: a field whose every window holds a missing
// point is not a perfect one). f32 and f64 only (1 otherwise). Host fields; `missing` as above.
double ssim(const void* original, const void* reconstructed, DType type, const Dims& dims, uint32_t window = 7,
            uint32_t shift = 2, const uint8_t* missing = nullptr);

// CUDA backend (defined in CUDA builds): ssim() of fields (and mask) on the device, computed
// on `stream`, waiting for the result. Every window's value is the CPU's bit for bit; the
// mean adds them in another (fixed) order, so the two agree to a relative 1e-9 and the GPU's
// is the same from run to run.
double ssim_cuda(const void* original, const void* reconstructed, DType type, const Dims& dims, uint32_t window,
                 uint32_t shift, const uint8_t* missing, cudaStream_t stream);

// ssim() on `device` of fields (and mask) at `where`: the CPU reads host fields; the GPU reads
// device fields where they are and uploads host ones first (a GPU SSIM of a 100 M-value field
// takes milliseconds where the CPU's takes seconds).
double ssim_on(Device device, Location where, const void* original, const void* reconstructed, DType type,
               const Dims& dims, uint32_t window = 7, uint32_t shift = 2, const uint8_t* missing = nullptr);

}  // namespace fzg
