// The Lorenzo stage's lossy step: the bound and quantization step resolved from the request
// and the field's finite value range, and their place in the stage's header.
#pragma once
#include <cstdint>
#include <vector>

#include "core/field.hh"

namespace fzg::lorenzo {

// Derives the absolute bound and step for a field of `type` whose finite values lie in
// [min, max]. The step leaves room for the rounding of x' = T(q * step) to T, so points do not
// fail the bound check by rounding alone. A zero bound (constant field in rel mode) asks for an
// exact result: every point must then reconstruct exactly or become an exact outlier.
Quantization resolve_quantization(const ErrorBound& request, DType type, double min, double max);

// The header: f64 error_bound, step, min, max (little-endian), 32 bytes.
constexpr uint64_t quantization_header_bytes = 32;
std::vector<uint8_t> write_quantization(const Quantization& q);
// Checks and reads a stored header (corrupt_data when it cannot be one).
Quantization read_quantization(const std::vector<uint8_t>& header);

}  // namespace fzg::lorenzo
