// The lossy step's arithmetic: the request and the field's value range to a bound and a step.
#include "predictors/lorenzo/quantization.hh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.hh"

namespace fzg::lorenzo {

BoundTerms bound_terms(const ErrorBound& request) {
  if (!(std::isfinite(request.value) && request.value >= 0))
    fail(ErrorCode::invalid_argument, "the error bound must be a finite non-negative number");
  BoundTerms t;
  t.mode = request.mode, t.value = request.value;
  if (request.mode == ErrorMode::psnr) t.root3 = std::sqrt(3.0), t.fraction = std::pow(10.0, -request.value / 20.0);
  return t;
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
  // Writers give a finite step (the largest is clamped) and a finite range ([0, 0] where
  // nothing is finite); the bound may be inf (a range past DBL_MAX at a large rel bound).
  require_data(std::isfinite(q.step) && q.step > 0 && q.error_bound >= 0 && std::isfinite(q.min) &&
                   std::isfinite(q.max) && q.min <= q.max,
               "lorenzo quantization");
  return q;
}

}  // namespace fzg::lorenzo
