// The assessment metrics against cases computed by hand: SSIM (qcat's windowed form),
// Pearson correlation and the error's lag-1 autocorrelation.
#include <cmath>

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

}  // namespace
}  // namespace fzg
