#include "core/missing_values.hh"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/error.hh"

namespace fzg {

MissingValues missing_values_of(const std::vector<double>& values, DType type) {
  if (!is_float(type)) fail(ErrorCode::invalid_argument, "fill values need an f32 or f64 field, not " + to_string(type));
  if (values.size() > MissingValues::capacity)
    fail(ErrorCode::invalid_argument, "at most " + std::to_string(MissingValues::capacity) + " fill values, not " +
                                          std::to_string(values.size()));
  MissingValues missing;
  for (double v : values) {
    uint64_t pattern = 0;
    if (type == DType::f32) {
      const float f = float(v);  // NaN stays NaN (quiet, sign kept); 1e20 rounds as the field's values do
      uint32_t word;
      std::memcpy(&word, &f, 4);
      pattern = word;
    } else {
      std::memcpy(&pattern, &v, 8);
    }
    for (uint32_t i = 0; i < missing.count; ++i)
      if (missing.bits[i] == pattern)
        fail(ErrorCode::invalid_argument, "fill values " + fill_value_text(v) + " and " +
                                              fill_value_text(values[i]) + " are the same " + to_string(type));
    missing.bits[missing.count++] = pattern;
  }
  return missing;
}

double parse_fill_value(const std::string& text) {
  if (text == "nan" || text == "NaN" || text == "NAN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "-nan" || text == "-NaN" || text == "-NAN") return -std::numeric_limits<double>::quiet_NaN();
  if (text == "inf" || text == "+inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size() || std::isnan(v) || std::isinf(v) || errno == ERANGE)
    fail(ErrorCode::invalid_argument, "bad fill value '" + text + "' (expected a finite number, nan, -nan, inf or -inf)");
  return v;
}

std::string fill_value_text(double value) {
  if (std::isnan(value)) return std::signbit(value) ? "-nan" : "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  // The shortest of %.15g..%.17g that reads back exactly.
  for (int digits = 15; digits < 17; ++digits) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", digits, value);
    if (std::strtod(shorter, nullptr) == value) return shorter;
  }
  return text;
}

}  // namespace fzg
