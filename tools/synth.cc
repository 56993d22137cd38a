#include "tools/synth.hh"

#include <cmath>
#include <random>
#include <vector>

#include "core/error.hh"

namespace fzg {

SynthKind parse_synth_kind(const std::string& name) {
  if (name == "smooth") return SynthKind::smooth;
  if (name == "turbulent") return SynthKind::turbulent;
  if (name == "noisy") return SynthKind::noisy;
  if (name == "constant") return SynthKind::constant;
  fail(ErrorCode::invalid_argument, "unknown field kind '" + name + "' (expected smooth, turbulent, noisy or constant)");
}

namespace {

// One separable wave: a * sin(kx x + px) * sin(ky y + py) * sin(kz z + pz), tabulated per axis.
struct Waves {
  std::vector<std::vector<float>> along_x, along_y, along_z;
  std::vector<double> amplitude;
};

Waves make_waves(int count, double min_k, double max_k, double exponent, const Dims& d, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Waves w;
  auto table = [&](uint64_t n, double k, double phase) {
    std::vector<float> t(n);
    for (uint64_t i = 0; i < n; ++i) t[i] = float(std::sin(k * double(i) + phase));
    return t;
  };
  for (int i = 0; i < count; ++i) {
    const double k = min_k * std::pow(max_k / min_k, unit(rng));  // log-uniform wave numbers
    w.amplitude.push_back(std::pow(k / min_k, exponent));
    auto axis = [&](uint64_t n) { return n > 1 ? table(n, k * (0.5 + unit(rng)), 6.283 * unit(rng)) : std::vector<float>(1, 1.0f); };
    w.along_x.push_back(axis(d.x));
    w.along_y.push_back(axis(d.y));
    w.along_z.push_back(axis(d.z));
  }
  return w;
}

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <typename T>
void fill(T* out, SynthKind kind, const Dims& d, uint64_t seed) {
  const int64_t n = int64_t(d.count());
  if (kind == SynthKind::constant) {
    for (int64_t i = 0; i < n; ++i) out[i] = T(1.5);
    return;
  }
  std::mt19937_64 rng(seed);
  const bool turbulent = kind == SynthKind::turbulent;
  const Waves w = turbulent ? make_waves(12, 0.01, 0.6, -5.0 / 6.0, d, rng) : make_waves(4, 0.005, 0.05, -1.0, d, rng);
  const double noise = kind == SynthKind::noisy ? 0.2 : turbulent ? 0.002 : 0.0;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t x = uint64_t(i) % d.x, y = (uint64_t(i) / d.x) % d.y, z = uint64_t(i) / (d.x * d.y);
    double v = 0;
    for (size_t k = 0; k < w.amplitude.size(); ++k)
      v += w.amplitude[k] * w.along_x[k][x] * w.along_y[k][y] * w.along_z[k][z];
    if (noise > 0) v += noise * (double(mix(seed ^ uint64_t(i)) >> 11) * 0x1.0p-53 - 0.5);
    out[i] = T(280.0 + 10.0 * v);  // a temperature-like offset: the rounding of x' matters
  }
}

}  // namespace

Buffer synthesize(SynthKind kind, DType type, const Dims& dims, uint64_t seed) {
  if (!is_float(type)) fail(ErrorCode::invalid_argument, "fzg gen makes f32 or f64 fields");
  Buffer b = Buffer::host(dims.count() * dtype_size(type));
  if (type == DType::f32) fill(b.as<float>(), kind, dims, seed);
  else fill(b.as<double>(), kind, dims, seed);
  return b;
}

}  // namespace fzg
