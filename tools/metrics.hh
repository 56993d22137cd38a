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
};

Metrics compare_fields(const void* original, const void* reconstructed, DType type, uint64_t count,
                       double error_bound);

}  // namespace fzg
