// The assessment metrics against cases computed by hand: SSIM (qcat's windowed form),
// Pearson correlation and the error's lag-1 autocorrelation, with and without a mask of
// missing points; and the GPU's SSIM against the CPU's (skipped without a device).
#include <cmath>
#include <random>

#include "test_util.hh"

namespace fzg {
namespace {

TEST(Metrics, SsimOfOneWindowIsQcatsFormula) {
  // 1D, 7 values 0..6, reconstruction shifted by +1: one window; means 3 and 4, variances 4
  // and 4, covariance 4, range 6: c1 = (0.06)^2, c2 = (0.18)^2, c3 = c2 / 2. Contrast and
  // structure are 1; luminance is (24 + c1) / (25 + c1).
  const std::vector<double> x = {0, 1, 2, 3, 4, 5, 6}, y = {1, 2, 3, 4, 5, 6, 7};
  const double c1 = 0.06 * 0.06;
  EXPECT_NEAR(ssim(x.data(), y.data(), DType::f64, Dims::make({7})), (24 + c1) / (25 + c1), 1e-12);
}

TEST(Metrics, SsimIsOneForAnExactCopyAndFallsWithNoise) {
  const Dims d = Dims::make({40, 30, 9});
  std::vector<float> x(d.count());
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * float(i % 40)) + 0.01f * float(i / 1200);
  EXPECT_DOUBLE_EQ(ssim(x.data(), x.data(), DType::f32, d), 1.0);
  std::vector<float> noisy = x, noisier = x;
  for (size_t i = 0; i < x.size(); ++i) {
    const float r = float((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    noisy[i] += 0.01f * r, noisier[i] += 0.2f * r;
  }
  const double a = ssim(x.data(), noisy.data(), DType::f32, d), b = ssim(x.data(), noisier.data(), DType::f32, d);
  EXPECT_LT(a, 1.0);
  EXPECT_LT(b, a);
  EXPECT_GT(b, -1.0);
}

TEST(Metrics, SsimLeavesOutWindowsWithNonFiniteValues) {
  // 14 values, windows of 7 moved by 2 start at 0, 2, 4 and 6. The first holds a NaN at 0
  // and the only changed value, at 1: left out, every window kept is exact.
  std::vector<double> x(14), y(14);
  for (int i = 0; i < 14; ++i) x[i] = y[i] = i;
  x[0] = y[0] = std::nan("");
  y[1] = 100;
  EXPECT_DOUBLE_EQ(ssim(x.data(), y.data(), DType::f64, Dims::make({14})), 1.0);
  y[2] = 100;  // now inside the window at 2 too
  EXPECT_LT(ssim(x.data(), y.data(), DType::f64, Dims::make({14})), 1.0);
}

TEST(Metrics, PearsonAndErrorAutocorrelationByHand) {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6}, twice = {2, 4, 6, 8, 10, 12}, reversed = {6, 5, 4, 3, 2, 1};
  EXPECT_NEAR(compare_fields(x.data(), twice.data(), DType::f64, 6, 100).pearson, 1.0, 1e-15);
  EXPECT_NEAR(compare_fields(x.data(), reversed.data(), DType::f64, 6, 100).pearson, -1.0, 1e-15);
  // Errors +1, -1, +1, -1, +1, -1: mean 0, sum of e_i e_(i+1) = -5, sum of e_i^2 = 6.
  const std::vector<double> alternating = {0, 3, 2, 5, 4, 7};
  EXPECT_NEAR(compare_fields(x.data(), alternating.data(), DType::f64, 6, 100).error_autocorrelation, -5.0 / 6.0,
              1e-15);
  // A constant error has no variation: autocorrelation 0 by convention.
  EXPECT_EQ(compare_fields(x.data(), twice.data(), DType::f64, 1, 100).error_autocorrelation, 0.0);
}

// x = 1 2 30 4 5 and x' = 0 3 -70 5 4: errors x - x' = 1 -1 100 -1 1. The point of 30 is
// missing: what is left is x = 1 2 4 5, x' = 0 3 5 4, errors 1 -1 -1 1.
struct MaskedCase {
  std::vector<double> original = {1, 2, 30, 4, 5}, reconstructed = {0, 3, -70, 5, 4};
  std::vector<uint8_t> missing = {0, 0, 1, 0, 0};
};

TEST(Metrics, MissingPointsAreLeftOutOfRangeErrorsAndPsnr) {
  const MaskedCase c;
  const Metrics all = compare_fields(c.original.data(), c.reconstructed.data(), DType::f64, 5, 1.0);
  EXPECT_EQ(all.missing_count, 0u);
  EXPECT_EQ(all.value_range, 29.0);
  EXPECT_EQ(all.max_abs_error, 100.0);
  EXPECT_EQ(all.violations, 1u);
  const Metrics kept = compare_fields(c.original.data(), c.reconstructed.data(), DType::f64, 5, 1.0, c.missing.data());
  EXPECT_EQ(kept.count, 5u);
  EXPECT_EQ(kept.missing_count, 1u);
  EXPECT_EQ(kept.finite_count, 4u);
  EXPECT_EQ(kept.value_range, 4.0);  // 1 .. 5
  EXPECT_EQ(kept.max_abs_error, 1.0);
  EXPECT_EQ(kept.max_rel_error, 0.25);
  EXPECT_EQ(kept.violations, 0u);
  EXPECT_EQ(kept.mse, 1.0);
  EXPECT_NEAR(kept.psnr, 20 * std::log10(4.0), 1e-12);  // mse 1
  EXPECT_EQ(kept.nrmse, 0.25);
}

TEST(Metrics, MissingPointsAreLeftOutOfPearsonAndAutocorrelation) {
  const MaskedCase c;
  const Metrics kept = compare_fields(c.original.data(), c.reconstructed.data(), DType::f64, 5, 1.0, c.missing.data());
  // Means 3 and 3; deviations -2 -1 1 2 and -3 0 2 1: sum of products 10, squares 10 and 14.
  EXPECT_NEAR(kept.pearson, 10 / std::sqrt(10.0 * 14.0), 1e-15);
  // Errors 1 -1 . -1 1 (mean 0, squares 4): the neighbouring pairs both kept are (1, -1) and
  // (-1, 1); the pair across the missing point is not one. -2 / 4.
  EXPECT_NEAR(kept.error_autocorrelation, -0.5, 1e-15);
  const Metrics all = compare_fields(c.original.data(), c.reconstructed.data(), DType::f64, 5, 1.0);
  EXPECT_LT(all.pearson, 0.0);  // the missing point's -70 dominates otherwise
}

TEST(Metrics, MissingIntegerPointsMayDiffer) {
  const std::vector<uint16_t> x = {1, 2, 3}, y = {1, 9, 3};
  const std::vector<uint8_t> missing = {0, 1, 0};
  EXPECT_EQ(compare_fields(x.data(), y.data(), DType::u16, 3, 0).violations, 1u);
  const Metrics kept = compare_fields(x.data(), y.data(), DType::u16, 3, 0, missing.data());
  EXPECT_EQ(kept.violations, 0u);
  EXPECT_EQ(kept.missing_count, 1u);
}

// 14 values x = 0..13 and x' = x + 1: windows of 7 start at 0, 2, 4 and 6, and the window at
// s has means s + 3 and s + 4, equal variances and covariance, range 6: its SSIM is the
// luminance (2 (s+3)(s+4) + c1) / ((s+3)^2 + (s+4)^2 + c1), c1 = 0.06^2.
double shifted_window_ssim(double s) {
  const double c1 = 0.06 * 0.06;
  return (2 * (s + 3) * (s + 4) + c1) / ((s + 3) * (s + 3) + (s + 4) * (s + 4) + c1);
}

TEST(Metrics, SsimLeavesOutExactlyTheWindowsHoldingAMissingPoint) {
  std::vector<double> x(14), y(14);
  for (int i = 0; i < 14; ++i) x[i] = i, y[i] = i + 1;
  const Dims d = Dims::make({14});
  const double all = (shifted_window_ssim(0) + shifted_window_ssim(2) + shifted_window_ssim(4) + shifted_window_ssim(6)) / 4;
  EXPECT_NEAR(ssim(x.data(), y.data(), DType::f64, d), all, 1e-15);
  std::vector<uint8_t> missing(14, 0);
  missing[1] = 1;  // in the window at 0 alone
  EXPECT_NEAR(ssim(x.data(), y.data(), DType::f64, d, 7, 2, missing.data()),
              (shifted_window_ssim(2) + shifted_window_ssim(4) + shifted_window_ssim(6)) / 3, 1e-15);
  missing[1] = 0, missing[8] = 1;  // in the windows at 2, 4 and 6
  EXPECT_NEAR(ssim(x.data(), y.data(), DType::f64, d, 7, 2, missing.data()), shifted_window_ssim(0), 1e-15);
  missing[0] = missing[13] = 1;  // now in every window: none is kept, nothing is measured
  EXPECT_TRUE(std::isnan(ssim(x.data(), y.data(), DType::f64, d, 7, 2, missing.data())));
}

// The sums run in an order fixed by the field alone: eval's and compare's metrics of one
// reconstruction are equal to the last bit, on a machine of any core count.
TEST(Metrics, SumsDoNotDependOnTheThreadCount) {
  if (!testing::OpenMPThreads::available()) GTEST_SKIP() << "no OpenMP runtime linked";
  const Dims d = Dims::make({97, 61, 35});
  std::mt19937 random(3);
  std::uniform_real_distribution<double> value(-1, 1);
  std::vector<double> x(d.count()), y(d.count());
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1e3 + value(random), y[i] = x[i] + 1e-3 * value(random);
  const auto metrics_with = [&](int threads) {
    const testing::OpenMPThreads scope(threads);
    return std::make_pair(compare_fields(x.data(), y.data(), DType::f64, d.count(), 1.0),
                          ssim(x.data(), y.data(), DType::f64, d));
  };
  const auto [one, one_ssim] = metrics_with(1);
  for (int threads : {2, 3, 7}) {
    const auto [many, many_ssim] = metrics_with(threads);
    EXPECT_EQ(many.mse, one.mse) << threads;
    EXPECT_EQ(many.pearson, one.pearson) << threads;
    EXPECT_EQ(many.error_autocorrelation, one.error_autocorrelation) << threads;
    EXPECT_EQ(many_ssim, one_ssim) << threads;
  }
}

// ---------------------------------------------------------------------------------------------
// The GPU's SSIM. Its windows are the CPU's bit for bit (tools/ssim_window.hh); only the order
// in which their values are added differs, so the means agree to far better than the relative
// 1e-9 asked here (the rounding of a sum of n values in two orders differs by at most about
// n * 2^-53 of it, 1e-9 for the 12 M windows of a 100 M-value field).

struct SsimCase {
  const char* name;
  std::vector<uint64_t> dims;
  uint32_t window = 7, shift = 2;
};

// A smooth field with noise, its reconstruction within 0.01, and the hazards: a box where both
// are constant (windows of SSIM 1), a box where the original alone is constant (range 0: the
// c's are 1e-300, SSIM about 0), a NaN, a +Inf and a reconstruction's -Inf, and a mask of
// three missing points (fields of 1000 values and more). f64 fields sit far from zero, where one-pass moments would lose digits.
template <typename T>
struct SsimFields {
  std::vector<T> original, reconstructed;
  std::vector<uint8_t> missing;
};

template <typename T>
SsimFields<T> ssim_fields(const Dims& d, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> noise(-1, 1);
  const uint64_t n = d.count();
  const double offset = sizeof(T) == 8 ? 1e6 : 0;
  SsimFields<T> f{std::vector<T>(n), std::vector<T>(n), std::vector<uint8_t>(n, 0)};
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t x = i % d.x, y = i / d.x % d.y, z = i / d.x / d.y;
    f.original[i] = T(offset + std::sin(0.3 * double(x)) * std::cos(0.2 * double(y)) + 0.1 * double(z) + 0.05 * noise(random));
    f.reconstructed[i] = T(double(f.original[i]) + 0.01 * noise(random));
    if (n < 1000) continue;  // small fields test axes shorter than a window, noise alone
    const bool corner = x < 9 && y < 9 && z < 9, far_corner = x + 9 >= d.x && y + 9 >= d.y && z + 9 >= d.z;
    if (corner) f.original[i] = f.reconstructed[i] = T(offset + 3);
    else if (far_corner) f.original[i] = T(offset - 2);
  }
  if (n < 1000) return f;
  const auto at = [&](double fraction) { return uint64_t(fraction * double(n - 1)); };
  f.original[at(0.3)] = std::numeric_limits<T>::quiet_NaN();
  f.original[at(0.5)] = std::numeric_limits<T>::infinity();
  f.reconstructed[at(0.7)] = -std::numeric_limits<T>::infinity();
  f.missing[at(0.2)] = f.missing[at(0.45)] = f.missing[at(0.6)] = 1;
  return f;
}

void PrintTo(const SsimCase& c, std::ostream* out) { *out << c.name; }

const std::vector<SsimCase>& ssim_cases() {
  static const std::vector<SsimCase> cases = {
      {"line", {3001}},
      {"short_line", {5}},
      {"plane", {203, 151}},
      {"narrow_plane", {9, 40}},
      {"volume", {101, 37, 21}},
      {"thin_volume", {64, 3, 30}},
      {"small_volume", {8, 9, 7}},
      {"window_5_shift_3", {47, 33, 19}, 5, 3},
      {"window_7_shift_1", {40, 20, 12}, 7, 1},
      {"window_4_shift_7", {60, 30}, 4, 7},
  };
  return cases;
}

class GpuSsim : public ::testing::TestWithParam<SsimCase> {};

template <typename T>
void expect_gpu_ssim_is_cpus(const SsimCase& c, DType type) {
  const Dims d = Dims::make(c.dims);
  const SsimFields<T> f = ssim_fields<T>(d, uint32_t(d.count()));
  for (const uint8_t* missing : {static_cast<const uint8_t*>(nullptr), f.missing.data()}) {
    SCOPED_TRACE(missing ? "with missing points" : "without a mask");
    const double cpu = ssim(f.original.data(), f.reconstructed.data(), type, d, c.window, c.shift, missing);
    const double gpu = ssim_on(Device::cuda, Location::host, f.original.data(), f.reconstructed.data(), type, d,
                               c.window, c.shift, missing);
    EXPECT_NEAR(gpu, cpu, 1e-9 * std::fabs(cpu));
    EXPECT_LT(cpu, 1.0);  // the noise and the far corner are seen: not a field of exact windows
  }
}

TEST_P(GpuSsim, MatchesTheCpusF32) {
  FZG_REQUIRE_GPU();
  expect_gpu_ssim_is_cpus<float>(GetParam(), DType::f32);
}

TEST_P(GpuSsim, MatchesTheCpusF64FarFromZero) {
  FZG_REQUIRE_GPU();
  expect_gpu_ssim_is_cpus<double>(GetParam(), DType::f64);
}

INSTANTIATE_TEST_SUITE_P(Fields, GpuSsim, ::testing::ValuesIn(ssim_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GpuSsimHazards, ConstantWindowsAreOneAndOriginalOnlyConstantOnesAboutZero) {
  FZG_REQUIRE_GPU();
  // 9 x 9 x 9, all windows (at 0 and 2 per axis) constant in the original.
  const Dims d = Dims::make({9, 9, 9});
  std::vector<float> x(d.count(), 3.0f), y = x;
  EXPECT_EQ(ssim_on(Device::cuda, Location::host, x.data(), y.data(), DType::f32, d), 1.0);
  for (size_t i = 0; i < y.size(); ++i) y[i] += 1e-3f * float(i % 5);
  EXPECT_LT(ssim_on(Device::cuda, Location::host, x.data(), y.data(), DType::f32, d), 1e-6);
}

TEST(GpuSsimHazards, EveryWindowLeftOutGivesNan) {
  FZG_REQUIRE_GPU();
  std::vector<double> x(14, 1.0), y(14, 2.0);
  x[6] = std::nan("");  // in every window of 7 moved by 2 over 14 values: nothing is measured
  EXPECT_TRUE(std::isnan(ssim_on(Device::cuda, Location::host, x.data(), y.data(), DType::f64, Dims::make({14}))));
}

TEST(GpuSsimHazards, DeviceFieldsGiveTheSameResultEveryRun) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({130, 70, 40});
  const SsimFields<float> f = ssim_fields<float>(d, 7);
  const Buffer a = to_device(testing::host_buffer(f.original), nullptr);
  const Buffer b = to_device(testing::host_buffer(f.reconstructed), nullptr);
  const double first = ssim_on(Device::cuda, Location::device, a.data(), b.data(), DType::f32, d);
  for (int run = 0; run < 3; ++run)
    EXPECT_EQ(ssim_on(Device::cuda, Location::device, a.data(), b.data(), DType::f32, d), first);
  EXPECT_NEAR(first, ssim(f.original.data(), f.reconstructed.data(), DType::f32, d), 1e-9 * first);
}

TEST(Metrics, SsimOnTheCpuRefusesDeviceFields) {
  std::vector<float> x(8, 1.0f);
  testing::expect_error(
      [&] { ssim_on(Device::cpu, Location::device, x.data(), x.data(), DType::f32, Dims::make({8})); },
      ErrorCode::invalid_argument, "on the device");
}

}  // namespace
}  // namespace fzg
