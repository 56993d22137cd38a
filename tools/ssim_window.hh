// One SSIM window (qcat's formula), written once for the CPU and the CUDA backends: the GPU
// reads its windows from shared-memory tiles, the CPU from the field, and both sum in the same
// order in double, so every window's value is the same bit for bit and the two SSIMs differ
// only by the order in which the windows' values are added up.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/portable.hh"

namespace fzg::ssim_window {

// A point of a window as double; a missing point comes as a NaN original.
struct Point {
  double original, reconstructed;
};

// The window's SSIM from read(x, y, z), x < wx, y < wy, z < wz, read in the CPU's order (z,
// then y, then x, ascending) twice: the sums and the original's range, then the moments about
// the means (two passes keep windows of fields far from zero exact, and a constant window's
// variance exactly 0). c1 = (0.01 R)^2, c2 = (0.03 R)^2, c3 = c2 / 2 from the original's range
// R, at least 1e-300 so that a kept constant window is 1. NaN when the window holds a
// non-finite or missing point: the sums are then non-finite (the CPU's early exit and the
// GPU's straight run give the same answer, and the same NaN for a sum that overflows).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <typename Read>
FZG_HOST_DEVICE double window_ssim(uint32_t wx, uint32_t wy, uint32_t wz, const Read& read) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sx = 0, sy = 0;
  for (uint32_t z = 0; z < wz; ++z)
    for (uint32_t y = 0; y < wy; ++y)
      for (uint32_t x = 0; x < wx; ++x) {
        const Point p = read(x, y, z);
        lo = p.original < lo ? p.original : lo;
        hi = p.original > hi ? p.original : hi;
        sx += p.original, sy += p.reconstructed;
      }
  if (!std::isfinite(sx) || !std::isfinite(sy)) return std::numeric_limits<double>::quiet_NaN();
  const double np = double(wx) * double(wy) * double(wz);
  const double mx = sx / np, my = sy / np;
  double vx = 0, vy = 0, cov = 0;
  for (uint32_t z = 0; z < wz; ++z)
    for (uint32_t y = 0; y < wy; ++y)
      for (uint32_t x = 0; x < wx; ++x) {
        const Point p = read(x, y, z);
        const double u = p.original - mx, v = p.reconstructed - my;
        vx += u * u, vy += v * v, cov += u * v;
      }
  vx /= np, vy /= np, cov /= np;
  const double range2 = (hi - lo) * (hi - lo);
  const double c1 = 1e-4 * range2 > 1e-300 ? 1e-4 * range2 : 1e-300;
  const double c2 = 9e-4 * range2 > 1e-300 ? 9e-4 * range2 : 1e-300, c3 = c2 / 2;
  const double sigmas = std::sqrt(vx) * std::sqrt(vy);
  const double luminance = (2 * mx * my + c1) / (mx * mx + my * my + c1);
  const double contrast = (2 * sigmas + c2) / (vx + vy + c2);
  const double structure = (cov + c3) / (sigmas + c3);
  return luminance * contrast * structure;
}

}  // namespace fzg::ssim_window
