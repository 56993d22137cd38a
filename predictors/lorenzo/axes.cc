// Choosing the Lorenzo stencil's axes and span from a sample of the field ("auto", lorenzo.hh):
// the candidates, the sample and the cost of a candidate's delta histogram, shared by both
// backends (each counts the sample's deltas; the choice is made here, on the host).
#include <cmath>

#include "core/error.hh"
#include "predictors/lorenzo/lorenzo.hh"

namespace fzg::lorenzo {

std::vector<Axes> axes_candidates(int rank) {
  switch (rank) {
    case 1: return {axis_x};
    case 2: return {axis_x | axis_y, axis_x, axis_y};
    default:
      return {axis_x | axis_y | axis_z, axis_x | axis_y, axis_x | axis_z, axis_y | axis_z, axis_x, axis_y, axis_z};
  }
}

// About 256 tiles (512 K points in 3D) of a large field: enough to tell the candidates apart,
// little beside coding the field (512 tiles, each span a launch, cost 13 % of ratio.json's
// compress of a 100 M field on an H200). A small field is sampled more densely (every tile
// below 64, every fourth from 128): a few tiles misjudge it (tb-satellite's 40 tiles, every
// fourth of them sampled, chose a stencil 0.8 % worse at rel 1e-2), and all of them cost the
// CPU more than coding it.
uint64_t axes_sample_stride(uint64_t tiles) {
  const uint64_t dense = tiles / 32 < 1 ? 1 : tiles / 32 > 4 ? 4 : tiles / 32;
  return tiles / 256 > dense ? tiles / 256 : dense;
}

void check_sample_spans(const std::vector<Span>& spans) {
  if (spans.size() > 2 || (spans.size() == 2 && !(spans[0] == Span::tile && spans[1] == Span::chunk)))
    fail(ErrorCode::invalid_argument, "lorenzo: the sample's spans are by tiles, then across the chunk");
}

namespace {
// log2 by IEEE basic operations only (exact scaling by 2 and correctly rounded squaring), so
// that every platform computes the same estimate and so the same choice, whatever its libm.
double portable_log2(double x) {
  int exponent = 0;
  double m = std::frexp(x, &exponent) * 2;  // [1, 2)
  double result = exponent - 1, bit = 1;
  for (int i = 0; i < 30; ++i) {
    m *= m;
    bit /= 2;
    if (m >= 2) m /= 2, result += bit;
  }
  return result;
}

// Bits a histogram costs: the zero-order entropy of its bins, the bits below the leading one
// of the magnitudes past the small bins, and an escape's stored delta (32 bits and a 64-bit
// key) for magnitudes past a code's 15 bits.
double histogram_bits(const uint64_t* counts) {
  uint64_t total = 0;
  for (uint32_t b = 0; b < axes_histogram_bins; ++b) total += counts[b];
  const double log2_total = portable_log2(double(total));
  double bits = 0;
  for (uint32_t b = 0; b < axes_histogram_bins; ++b) {
    if (!counts[b]) continue;
    const double n = double(counts[b]);
    bits += n * (log2_total - portable_log2(n));
    if (b >= 256) {
      const uint32_t length = b - 256 + 8;
      bits += n * (length - 1);
      if (length > 15) bits += n * 96;
    }
  }
  return bits;
}
}  // namespace

Prediction choose_prediction(const std::vector<Prediction>& candidates, const std::vector<uint64_t>& counts) {
  if (candidates.empty() || counts.size() != candidates.size() * axes_histogram_bins)
    fail(ErrorCode::invalid_argument, "lorenzo: prediction histograms of the wrong size");
  // The best of each span in turn: a later candidate only for a clear gain (1 %), since the
  // estimate is not the coder's size (a Huffman code's length limit and escapes, zero-block's
  // words move it by about 1 % at tight bounds) and a near tie should not hang on rounding.
  const Prediction* best[2] = {nullptr, nullptr};
  double best_bits[2] = {0, 0};
  for (size_t c = 0; c < candidates.size(); ++c) {
    const int span = candidates[c].span == Span::chunk;
    const double bits = histogram_bits(counts.data() + c * axes_histogram_bins);
    if (!best[span] || bits < best_bits[span] * 0.99) best[span] = &candidates[c], best_bits[span] = bits;
  }
  // Across the chunk only for 3 % over the best by tiles: it decodes at about half the speed.
  if (!best[0] || (best[1] && best_bits[1] < best_bits[0] * 0.97)) return *best[1];
  return *best[0];
}

}  // namespace fzg::lorenzo
