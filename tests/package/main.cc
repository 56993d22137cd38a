// Compresses and decompresses a small f32 field through fzg's public API and checks the
// bound at every point; exits non-zero on any failure. Built against an installed fzg only
// (tests/package/check.sh), so it also checks that the installed headers are complete.
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "core/fzg.hh"

int main() {
  try {
    const uint64_t nx = 64, ny = 48, nz = 8;
    std::vector<float> data(nx * ny * nz);
    for (uint64_t i = 0; i < data.size(); ++i)
      data[i] = 280.0f + 5.0f * std::sin(0.01f * float(i)) + 2.0f * std::cos(0.037f * float(i));
    data[100] = NAN;  // stored exactly, as every point the quantizer cannot honour

    const fzg::Graph graph = fzg::Graph::default_fz();
    fzg::CompressOptions options;  // the CPU backend
    options.bound = {fzg::ErrorMode::abs, 1e-2};
    const fzg::FieldRef field{data.data(), fzg::Location::host, fzg::DType::f32,
                              fzg::Dims::make({nx, ny, nz})};
    const fzg::Buffer file = fzg::compress(graph, field, options);
    const fzg::Decompressed out = fzg::decompress(file, {});

    if (out.header.dtype != fzg::DType::f32 || out.data.size() != data.size() * sizeof(float)) {
      std::fprintf(stderr, "fzg package check: wrong type or size after the round trip\n");
      return 1;
    }
    const float* back = out.data.as<float>();
    uint64_t over = 0;
    double worst = 0;
    for (uint64_t i = 0; i < data.size(); ++i) {
      if (std::isnan(data[i])) {
        over += !std::isnan(back[i]);
        continue;
      }
      const double err = std::fabs(double(data[i]) - double(back[i]));
      if (!(err <= options.bound.value)) ++over;
      if (err > worst) worst = err;
    }
    std::printf("fzg package check: %zu values, %zu bytes (ratio %.2f), max error %.3g <= %.3g: %s\n",
                data.size(), file.size(), double(data.size() * sizeof(float)) / double(file.size()),
                worst, options.bound.value, over == 0 ? "ok" : "FAILED");
    if (over != 0) {
      std::fprintf(stderr, "fzg package check: %llu points over the bound\n", (unsigned long long)over);
      return 1;
    }
    if (fzg::max_compressed_size(graph, fzg::DType::f32, field.dims, fzg::ErrorMode::abs) < file.size()) {
      std::fprintf(stderr, "fzg package check: file larger than max_compressed_size\n");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fzg package check: %s\n", e.what());
    return 1;
  }
}
