// Dual-quantization Lorenzo prediction (cuSZ), 1D/2D/3D, f32/f64, with a strict bound.
//
// The field is cut into tiles (1D 2048, 2D 32x32, 3D 32x8x8, x fastest); prediction and its
// inverse stay inside a tile (neighbours outside it count as 0), so every tile encodes and
// decodes independently on any backend.
//
// Ports: field -> codes (u16 per value, field order; with fill values only the points with
// data have one) + outliers (bytes, layout below), and with fill values (parameter "fill") +
// mask (bytes, layout in mask.hh): missing points are left out of the value range, never
// quantized, and given back bit for bit.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/device_checks.hh"
#include "core/missing_values.hh"
#include "core/stage.hh"
#include "predictors/lorenzo/quantization.hh"
#include "predictors/lorenzo/quantizer.hh"
#include "runtime/portable.hh"

namespace fzg {

std::unique_ptr<Stage> make_lorenzo_stage(const nlohmann::json& params);

namespace lorenzo {

struct TileShape {
  uint32_t x, y, z;
  uint32_t volume() const { return x * y * z; }
};
TileShape tile_shape(int rank);

// Tile-major key of a point: tile_index * tile_volume + index_within_tile. Outliers are kept
// in key order, so each tile's outliers are one contiguous run found by binary search.
struct TileGrid {
  Dims dims;
  TileShape tile;
  uint64_t tiles_x, tiles_y, tiles_z;
  explicit TileGrid(const Dims& d);
  uint64_t tile_count() const { return tiles_x * tiles_y * tiles_z; }
};

// How far prediction reaches: inside a tile (neighbours outside it count as 0; every tile
// decodes alone), or across the whole chunk (neighbours outside the field count as 0; decoded
// by prefix sums over the chunk). With fill values the stage predicts by tiles either way.
enum class Span { tile, chunk };

// The axes the Lorenzo stencil spans, as bits (x 1, y 2, z 4): the predictor is the product of
// (1 - shift) over them, so a point is predicted from its lower neighbours along those axes
// only and decoded by prefix sums along them only. Every axis of the field is cuSZ's Lorenzo;
// at loose bounds one or two axes often predict better (the quantized field is coarse, and
// each axis of the stencil adds its neighbours' rounding to the residual).
using Axes = uint32_t;
constexpr Axes axis_x = 1, axis_y = 2, axis_z = 4;
constexpr Axes all_axes(int rank) { return rank >= 3 ? 7u : rank == 2 ? 3u : 1u; }

// What the stage predicts with: its span and axes (0: every axis of the field), and the order
// of its codes (below).
struct Prediction {
  Span span = Span::tile;
  Axes axes = 0;
  bool tile_order = false;
  Axes axes_of(const Dims& dims) const { return axes ? axes & all_axes(dims.rank) : all_axes(dims.rank); }
};

// The codes port's order ("code_order"): field order, or tile order (span "tile" without fill
// values only): the tiles one after another in tile order, each tile's points inside the field
// together, x fastest within the tile's own extents (w x h x d). A tile row holds the same points
// in either order (so windows by tile rows are the same), and a 3D tile of w x 8 x 8 points is w
// whole bitshuffle tiles: a tile's codes are in one place, for a coder to take them from the
// predictor's own block. The first code of the tile at (x0, y0, z0), h x d inside the field, of a
// field nx x ny x nz; point (x0 + x, y0 + y, z0 + z)'s code is at that + x + w (y + h z).
FZG_HOST_DEVICE uint64_t tile_order_first(uint64_t nx, uint64_t ny, uint64_t x0, uint64_t y0, uint64_t z0,
                                          uint64_t h, uint64_t d) {
  return z0 * nx * ny + y0 * nx * d + x0 * h * d;
}
// Tile order goes with span "tile" and no fill values only (the stage refuses other
// parameters): both backends' entry points fail (invalid_argument) on anything else, rather
// than code in an order the gather of the points with data or the chunk decode does not read.
void check_code_order(const Prediction& prediction, const MissingValues& missing);

// The outlier stream:
//   u64 escape_count E | u64 exact_count X | u64 escape_keys[E] | u64 exact_keys[X]
//   | T exact_values[X] | i32 escape_deltas[E]
// Keys strictly increasing within each list.
struct OutlierCounts {
  uint64_t escapes = 0, exacts = 0;
  // Counts add up (the placement's scans, on the CPU and the GPU).
  FZG_HOST_DEVICE constexpr OutlierCounts operator+(const OutlierCounts& o) const {
    return {escapes + o.escapes, exacts + o.exacts};
  }
};
static_assert(sizeof(OutlierCounts) == 16, "the stream's first 16 bytes are the counts");
uint64_t outlier_stream_size(OutlierCounts counts, DType type);

struct OutlierView {
  OutlierCounts counts;
  const uint64_t* escape_keys;
  const uint64_t* exact_keys;
  const uint8_t* exact_values;
  const int32_t* escape_deltas;
};
// Checks counts against the stream's size (throws corrupt_data) and points into `stream`,
// which may be device memory: nothing is read through it.
OutlierView outlier_layout(OutlierCounts counts, const uint8_t* stream, uint64_t size_bytes, DType type);
// The same from a host stream, reading the counts from its first 16 bytes.
OutlierView parse_outliers(const uint8_t* stream, uint64_t size_bytes, DType type);
// Checks that keys increase and name points inside the field (host memory).
void validate_outlier_keys(const OutlierView& view, const TileGrid& grid);

// The stage header: the quantization (32 bytes), then with fill values u64 count, the fill
// values' u64 bit patterns in the field's type (an f32's in the low 32 bits) and u64 1: the
// codes are those of the points with data only (below). Headers without that last word
// (files of the ninth session) hold a code for every point, in field order. `data_only` may
// be null. Last, where the stage's "axes" are not every axis, its "span" is "auto" or its
// "code_order" is "tile", a u64 prediction record: the tag 0x73657861 ("axes") in bits 32-63,
// the axes in bits 0-2, 1 in bit 8 for span "chunk", 1 in bit 9 for codes in tile order
// (absent: every axis, the stage's "span", field order).
std::vector<uint8_t> write_header(const Quantization& quant, const MissingValues& missing,
                                  const std::optional<Prediction>& record = {});
void read_header(const std::vector<uint8_t>& header, Quantization* quant, MissingValues* missing,
                 bool* data_only = nullptr, std::optional<Prediction>* record = nullptr);

// With fill values, a missing point takes its own Lorenzo prediction as its q (mask.hh), so
// its delta is 0 by construction: the codes port holds the codes of the points with data
// only, in field order, and the decoder puts the zeros back where the mask says points are
// missing. (Coded among the data, each missing point cost a Huffman code at least a bit,
// skewed the code towards the zero delta and broke zero-block's words: 16-20 % of sst-nemo's
// codes, scripts/tile-edge-loss.py.)
// holds_data[i] is 1 where point i holds data, 0 where it is missing (one byte a point): the
// encoders write it as they find the points' symbols; the decoder's comes from the mask
// (checked: corrupt_data).
void mask_data_flags_cpu(const uint8_t* mask, uint64_t mask_size, const Dims& dims, const MissingValues& missing,
                         uint8_t* holds_data);
// The codes of the points with data, in order, into `out` (which may be `codes` itself);
// returns their count.
uint64_t gather_data_codes_cpu(const uint16_t* codes, const uint8_t* holds_data, uint64_t n, uint16_t* out);
// The inverse: n codes, 0 at the missing points; corrupt_data unless the flags name exactly
// `count` points with data.
void scatter_data_codes_cpu(const uint16_t* data_codes, uint64_t count, const uint8_t* holds_data, uint64_t n,
                            uint16_t* codes);

// Choosing from the data ("axes": "auto", "span": "auto"): the candidate axes are every
// non-empty set of the field's axes, all of them first (cuSZ's stencil wins ties), each by
// tiles and (span "auto", no fill values) across the chunk. A sample of whole tiles (every
// stride-th tile: about 256 of a large field, every one to every fourth of a small one; with
// fill values only tiles all data) is coded with each candidate as the encoder would, and
// each delta counted in one of
// `axes_histogram_bins` bins (its value from -128 to 127, else its magnitude's bit length);
// the candidate whose histogram costs the fewest bits (zero-order entropy, the bits below a
// large magnitude's leading one, an escape's stored delta) is chosen: another than the first
// only for a gain of 1 %, and across the chunk over by tiles only for 3 % (its decode is
// slower: plain prefix sums over the chunk). The counts are integers and the same on every
// backend, so the choice is too.
constexpr uint32_t axes_histogram_bins = 281;
FZG_HOST_DEVICE uint32_t axes_histogram_bin(int32_t delta) {
  if (delta >= -128 && delta < 128) return uint32_t(delta + 128);
  const uint32_t sign = uint32_t(delta) >> 31, magnitude = (uint32_t(delta) ^ (0u - sign)) + sign;
#if defined(__CUDA_ARCH__)
  uint32_t bits = 0;
  for (uint32_t m = magnitude; m; m >>= 1) ++bits;
#else
  const uint32_t bits = 32 - __builtin_clz(magnitude);  // magnitude >= 128: the same bit length
#endif
  return 256 + bits - 8;  // bit lengths 8..32
}
std::vector<Axes> axes_candidates(int rank);
uint64_t axes_sample_stride(uint64_t tiles);
// Counts: candidates x axes_histogram_bins, in the candidates' order.
Prediction choose_prediction(const std::vector<Prediction>& candidates, const std::vector<uint64_t>& counts);
// Throws unless `spans` is at most one of each, by tiles first (the order both backends count in).
void check_sample_spans(const std::vector<Span>& spans);
// The histograms of the sample, for each of `spans` (by tiles, across the chunk: at most one
// of each, in that order) and each candidate in turn. With fill values every span counts by
// tiles.
std::vector<uint64_t> axes_histograms_cpu(const void* field, DType type, const Dims& dims, const Quantization& quant,
                                          const MissingValues& missing, const std::vector<Span>& spans,
                                          const std::vector<Axes>& candidates);
std::vector<uint64_t> axes_histograms_cuda(const void* field, DType type, const Dims& dims, const Quantization& quant,
                                           const MissingValues& missing, const std::vector<Span>& spans,
                                           const std::vector<Axes>& candidates, cudaStream_t stream);

// CPU reference. `codes` has room for count() values; the outlier stream is returned, and the
// number of codes written to *code_count (count(), or with fill values the points with data).
// With fill values, `mask` receives the mask stream (and the decoder reads it, and
// `code_count` codes, or count() in field order where `data_only` is false).
Buffer encode_cpu(const void* field, DType type, const Dims& dims, const Quantization& quant, uint16_t* codes,
                  uint64_t* code_count, const MissingValues& missing = {}, Buffer* mask = nullptr,
                  const Prediction& prediction = {});
void decode_cpu(const uint16_t* codes, uint64_t code_count, const uint8_t* outliers, uint64_t outliers_size,
                DType type, const Dims& dims, const Quantization& quant, void* field, const uint8_t* mask = nullptr,
                uint64_t mask_size = 0, const MissingValues& missing = {}, bool data_only = true,
                const Prediction& prediction = {});

// CUDA backend (defined in CUDA builds): scatter_data_codes_cpu's result, the bits (DataBits,
// core/missing_values.hh) from the mask (DeviceDecoder::data_bits). A masked encode writes the
// codes of the points with data where they go (DeviceEncoder), with no gather.
void scatter_data_codes_cuda(const uint16_t* data_codes, uint64_t count, const uint32_t* data_bits, const Dims& dims,
                             uint16_t* codes, cudaStream_t stream);
// The quantization as a GPU encode reads it, in device memory: resolved there from the field's
// range, so that no host waits for the range between the reduction and the encode, or written
// there from a quantization the host holds.
struct DeviceQuantization {
  QuantConstants constants;
  Quantization quant;  // what the constants come from: the header's, bit for bit
};
// Queued on `stream`: quantization_of and constants_of (quantization.hh, quantizer.hh) on the
// device, from `range` (device memory: min and max as two f64, DeviceRange::on_device), the
// same bits as on the host. Returns a DeviceQuantization's buffer.
Buffer resolve_quantization_cuda(const BoundTerms& terms, DType type, const double* range, cudaStream_t stream);
// A quantization the host holds, written to a DeviceQuantization's buffer on `stream`.
Buffer quantization_to_device(const Quantization& quant, DType type, cudaStream_t stream);

// `quantization`: a DeviceQuantization's buffer (above). With fill values `codes` receives the
// codes of the points with data alone, and `data_bits` (device) gives the field's DataBits
// where the caller has them (null: the encoder makes its own, one more read of the field).
// The outlier stream and `mask` are deferred buffers (Buffer::deferred): made, after a
// read-back, when first used; the field must live until then.
Buffer encode_cuda(const void* field, DType type, const Dims& dims, const Buffer& quantization, uint16_t* codes,
                   uint64_t* code_count, cudaStream_t stream, const MissingValues& missing = {},
                   Buffer* mask = nullptr, const Prediction& prediction = {}, const uint32_t* data_bits = nullptr);
// A GPU decode's checks of its outlier stream, made on the device (core/device_checks.hh): a
// stream that fails one sets its word and decodes as far as is safe (no outliers when its
// counts fail; keys that name no point of their tile ignored).
struct OutlierChecks {
  uint32_t* counts;       // the CPU's "outlier counts"
  uint32_t* size;         // "outlier stream size"
  uint32_t* escape_keys;  // "escape outlier keys"
  uint32_t* exact_keys;   // "exact outlier keys"
};
OutlierChecks outlier_checks(StepChecks& checks);
void decode_cuda(const uint16_t* codes, uint64_t code_count, const uint8_t* outliers, uint64_t outliers_size,
                 DType type, const Dims& dims, const Quantization& quant, void* field, const OutlierChecks& checks,
                 cudaStream_t stream, const uint8_t* mask = nullptr, uint64_t mask_size = 0,
                 const MissingValues& missing = {}, bool data_only = true, const Prediction& prediction = {});

#ifdef FZG_HAVE_CUDA
// Device coding by tile rows (encode_cuda and decode_cuda run all rows of their field). A
// tile row is the run of tiles that share the slowest axis' tile index (8 planes in 3D, 32
// rows in 2D, one tile in 1D): its points are one contiguous run of field order, so the codes
// of rows [first, end) fill one window, the code of point i at window[i - window_first]. Rows
// encode and decode independently (tiles do). With fill values an encode writes the codes of
// the points with data alone, in field order, to its window (every row's, window_first 0), and
// a decode reads a code for every point (0 at missing ones): decode_cuda scatters them first.
struct TileRows {
  uint64_t count;           // tile rows in the field
  uint64_t values_per_row;  // points in a whole row (the last row may hold fewer)
};
TileRows tile_rows(const Dims& dims);

// Made before the quantization is known (its state is zeroed on the stream at once).
class DeviceEncoder {
 public:
  // Span::chunk (without fill values only): neighbours across tile borders. With fill values,
  // `data_bits` (device) are the field's DataBits where the caller has them; null: made here.
  DeviceEncoder(const void* field, DType type, const Dims& dims, cudaStream_t stream,
                const MissingValues& missing = {}, const Prediction& prediction = {},
                const uint32_t* data_bits = nullptr);
  // `constants`: device memory (DeviceQuantization::constants), read by the kernels.
  void encode_rows(const QuantConstants* constants, uint64_t first_row, uint64_t end_row, uint16_t* window,
                   uint64_t window_first);
  // Once every row is queued: finds the tiles whose mask runs repeat (mask.hh) and where each
  // tile's runs go in the mask stream (before the host waits for the totals, so that mask()
  // has only the stream's allocation and one launch left after the read-back).
  void finish();
  // Device address of the field's totals, complete once finish() is queued: u64 escapes,
  // exacts and mask runs, and the code count with fill values (0 without), so that one
  // read-back brings all four.
  uint64_t* totals() const;
  // The outlier stream, once the caller has read the totals back (with no outliers, a slice of
  // the encoder's own totals, whose first two words are the stream).
  Buffer outliers(const QuantConstants* constants, OutlierCounts totals);
  // The mask stream (with fill values), once the caller has read the run total back.
  Buffer mask(uint64_t runs);

 private:
  uint32_t* tile_counts() const;  // each tile's packed escape and exact counts
  uint32_t* tile_runs() const;    // each tile's mask runs
  uint32_t* tile_repeats() const; // each tile's flag: its runs are a repeat run
  uint32_t* claim() const;                    // with fill values: the encode's count of claimed runs of tiles
  unsigned long long* run_look_back() const;  // with fill values: the mask offsets' look-back state
  unsigned long long* code_look_back() const; // with fill values: the first codes' look-back state
  const void* field_;
  DType type_;
  TileGrid grid_;
  cudaStream_t stream_;
  MissingValues missing_;
  bool whole_ = false;  // Span::chunk
  Axes axes_;
  bool tile_order_ = false;  // codes in tile order
  uint64_t zeroed_words_ = 4;  // counts_' zeroed head: the totals, then with fill values claim() and the look-backs
  Buffer counts_;  // the zeroed head, the tiles' counts, then (with fill values) their run counts and repeat flags
  Buffer mask_slots_;  // with fill values: a tile's runs at [tile * volume]
  Buffer run_offsets_; // with fill values: each tile's first run in the mask stream (finish())
  const uint32_t* data_bits_ = nullptr;  // with fill values: DataBits (the caller's, or own_bits_)
  Buffer own_bits_;
  Buffer first_code_;  // with fill values: each word's first code, and the count at [words]
  bool encoded_ = false;   // with fill values: the one encode launch is queued
  bool finished_ = false;  // with fill values: the one launch of the mask offsets is queued
};

class DeviceDecoder {
 public:
  // Finds each tile's outliers in the (device) outlier stream and checks it there, without a
  // synchronization (`checks`). With fill values the mask is read and checked at once (two).
  DeviceDecoder(const uint8_t* outliers, uint64_t outliers_size, DType type, const Dims& dims,
                const Quantization& quant, const OutlierChecks& checks, cudaStream_t stream,
                const uint8_t* mask = nullptr, uint64_t mask_size = 0, const MissingValues& missing = {},
                Axes axes = 0, bool tile_order = false);
  // Writes point i at [i - field_first] of `field` (a window of the output, or all of it).
  void decode_rows(uint64_t first_row, uint64_t end_row, const uint16_t* window, uint64_t window_first, void* field,
                   uint64_t field_first = 0);
  // With fill values: the points' data bits (DataBits) from the mask.
  void data_bits(uint32_t* words) const;
  // Span::chunk: the whole field from its codes (one per point, in field order): deltas with
  // the escapes patched in, prefix sums along x, y and z over the field, the values, then the
  // exact values.
  void decode_whole(const uint16_t* codes, void* field) const;

 private:
  DType type_;
  TileGrid grid_;
  Quantization quant_;
  cudaStream_t stream_;
  Axes axes_;
  bool tile_order_;  // codes in tile order (never with fill values)
  void index_mask(const uint8_t* mask, uint64_t mask_size);
  MissingValues missing_;
  const uint8_t* outliers_ = nullptr;  // the outlier stream (device)
  uint64_t outliers_size_ = 0;         // 16: the stream holds its counts alone
  Buffer index_;       // its checked counts, with outliers per tile where its escapes, then its exacts, start; its keys' verdict
  Buffer mask_runs_;   // with fill values: the runs, aligned
  Buffer mask_index_;  // run starts, a check flag, the repeat runs' count, then each tile's first run
  Buffer mask_sources_;  // with repeat runs: the tile whose runs each tile reads
};
#endif

}  // namespace lorenzo
}  // namespace fzg
