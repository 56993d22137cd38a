// CPU reference of the Lorenzo stage: the executable specification of its bytes.
// OpenMP splits the tiles into contiguous ranges, one per thread, so the outlier lists of
// the threads concatenate in tile (key) order.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "core/error.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "predictors/lorenzo/mask.hh"
#include "predictors/lorenzo/quantizer.hh"
#include "varlen/scan.hh"

namespace fzg::lorenzo {

namespace {

struct TileBox {
  uint64_t x0, y0, z0;   // first point of the tile
  uint32_t ex, ey, ez;   // extents inside the field
};

TileBox tile_box(const TileGrid& g, uint64_t tile) {
  const uint64_t tx = tile % g.tiles_x, ty = (tile / g.tiles_x) % g.tiles_y, tz = tile / (g.tiles_x * g.tiles_y);
  TileBox b{tx * g.tile.x, ty * g.tile.y, tz * g.tile.z, 0, 0, 0};
  b.ex = uint32_t(std::min<uint64_t>(g.tile.x, g.dims.x - b.x0));
  b.ey = uint32_t(std::min<uint64_t>(g.tile.y, g.dims.y - b.y0));
  b.ez = uint32_t(std::min<uint64_t>(g.tile.z, g.dims.z - b.z0));
  return b;
}

// Where the code of the box's point (x, y, z) lies: field order, or tile order (lorenzo.hh).
uint64_t code_index(const TileGrid& g, const TileBox& b, bool tile_order, uint32_t x, uint32_t y, uint32_t z) {
  if (!tile_order) return (b.x0 + x) + g.dims.x * ((b.y0 + y) + g.dims.y * (b.z0 + z));
  return tile_order_first(g.dims.x, g.dims.y, b.x0, b.y0, b.z0, b.ey, b.ez) + x + b.ex * (y + uint64_t(b.ey) * z);
}

template <typename T>
struct Outliers {
  std::vector<uint64_t> escape_keys, exact_keys;
  std::vector<int32_t> escape_deltas;
  std::vector<T> exact_values;
  std::vector<uint16_t> mask_runs;  // with fill values: the tiles' runs, tile after tile
  std::vector<uint32_t> tile_runs;  // and how many each tile has
};

constexpr uint32_t max_tile_volume = 2048;

// Whether a stencil term that steps back along the axes (dx, dy, dz) is in the stencil of
// `axes`: the terms of (1 - X)(1 - Y)(1 - Z) along other axes drop out (lorenzo.hh).
bool in_stencil(Axes axes, int dx, int dy, int dz) {
  return !((dx && !(axes & axis_x)) || (dy && !(axes & axis_y)) || (dz && !(axes & axis_z)));
}

// The Lorenzo prediction of tile point (x, y, z) from its lower neighbours in `q` (0 outside
// the tile) along `axes`, in wrapping 32-bit arithmetic; 1D and 2D tiles have no y or z
// neighbours.
int32_t prediction(const TileShape& s, const int32_t* q, uint32_t x, uint32_t y, uint32_t z, Axes axes) {
  auto at = [&](int dx, int dy, int dz) -> int32_t {
    if ((dx && x == 0) || (dy && y == 0) || (dz && z == 0) || !in_stencil(axes, dx, dy, dz)) return 0;
    return q[(x - dx) + s.x * ((y - dy) + s.y * (z - dz))];
  };
  int32_t pred = wrapping_add(wrapping_add(at(1, 0, 0), at(0, 1, 0)), at(0, 0, 1));
  pred = wrapping_sub(pred, wrapping_add(wrapping_add(at(1, 1, 0), at(1, 0, 1)), at(0, 1, 1)));
  return wrapping_add(pred, at(1, 1, 1));
}

// Missing points take their own prediction, in raster order so that each sees its
// neighbours' final q (mask.hh): their delta is 0, and their codes are left out.
void predict_missing(const TileShape& s, const TileBox& b, const uint8_t* symbols, Axes axes, int32_t* q) {
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x) {
        const uint32_t l = x + s.x * (y + s.y * z);
        if (symbols[l]) q[l] = prediction(s, q, x, y, z, axes);
      }
}

// The tile's mask runs, in key order (see mask.hh). `symbols` holds every key's, 0 at the keys
// outside the field.
void append_runs(const TileShape& s, const uint8_t* symbols, std::vector<uint16_t>& runs) {
  const uint32_t slice = mask_slice_keys(s.x, s.y, s.z);
  auto difference_at = [&](uint32_t l) { return mask_difference(symbols[l], slice && l >= slice ? symbols[l - slice] : 0u); };
  uint32_t start = 0, difference = difference_at(0);
  for (uint32_t l = 1; l <= s.volume(); ++l) {
    const uint32_t next = l < s.volume() ? difference_at(l) : 0;
    if (l == s.volume() || next != difference) {
      runs.push_back(mask_run(l - start, difference));
      start = l, difference = next;
    }
  }
}

// With fill values, `holds_data` gets each point's flag (field order): 1 where it holds data.
template <typename T>
void encode_tile(const T* field, const TileGrid& g, uint64_t tile, const Quantization& quant,
                 const MissingValues& missing, Axes axes, bool tile_order, uint16_t* codes, uint8_t* holds_data,
                 Outliers<T>& out) {
  const TileShape s = g.tile;
  const TileBox b = tile_box(g, tile);
  const uint64_t key0 = tile * s.volume();
  const QuantConstants constants = constants_of(quant, sizeof(T) == 4);
  int32_t q[max_tile_volume];
  uint8_t symbols[max_tile_volume];
  if (!missing.empty()) std::fill_n(symbols, s.volume(), uint8_t(0));  // keys outside the field: 0
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x) {
        const uint32_t l = x + s.x * (y + s.y * z);
        const uint64_t i = (b.x0 + x) + g.dims.x * ((b.y0 + y) + g.dims.y * (b.z0 + z));
        const T value = field[i];
        if (!missing.empty()) {
          symbols[l] = uint8_t(missing.symbol_of(value));
          holds_data[i] = symbols[l] == 0;
          if (symbols[l]) continue;  // its q is its prediction (predict_missing, below)
        }
        if (prequantize(value, constants, &q[l])) {
          out.exact_keys.push_back(key0 + l);
          out.exact_values.push_back(value);
        }
      }
  bool all_missing = false;  // every key inside the field and missing: no q, no codes
  if (!missing.empty()) {
    const auto missing_keys = uint32_t(std::count_if(symbols, symbols + s.volume(), [](uint8_t m) { return m != 0; }));
    all_missing = missing_keys == s.volume();
    // A missing point's q is its prediction from the q before it; with no point of data
    // among them every one is 0 (left unset: nothing reads them).
    if (missing_keys > 0 && !all_missing) predict_missing(s, b, symbols, axes, q);
    const size_t before = out.mask_runs.size();
    append_runs(s, symbols, out.mask_runs);
    out.tile_runs.push_back(uint32_t(out.mask_runs.size() - before));
  }
  if (all_missing) return;  // the codes of missing points are never read (gather_data_codes_cpu)
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x) {
        const uint32_t l = x + s.x * (y + s.y * z);
        const int32_t delta = wrapping_sub(q[l], prediction(s, q, x, y, z, axes));
        uint16_t& code = codes[code_index(g, b, tile_order, x, y, z)];
        if (!encode_delta(delta, &code)) {
          out.escape_keys.push_back(key0 + l);
          out.escape_deltas.push_back(delta);
        }
      }
}

// The mask stream from the tiles' runs (the threads' parts hold consecutive tiles): a tile of
// more than one run whose runs are those of the tile one layer before it takes a repeat run.
template <typename T>
Buffer mask_stream(const std::vector<Outliers<T>>& parts, const TileGrid& grid) {
  std::vector<const uint16_t*> at;  // each tile's runs
  std::vector<uint32_t> count;
  at.reserve(grid.tile_count()), count.reserve(grid.tile_count());
  for (const auto& part : parts) {
    const uint16_t* runs = part.mask_runs.data();
    for (const uint32_t n : part.tile_runs) at.push_back(runs), count.push_back(n), runs += n;
  }
  const uint64_t stride = mask_repeat_stride(grid.tile.y, grid.tile.z, grid.tiles_x, grid.tiles_y);
  std::vector<uint8_t> repeats(count.size());
  uint64_t total = 0;
  for (uint64_t t = 0; t < count.size(); ++t) {
    repeats[t] = t >= stride && count[t] > 1 && count[t] == count[t - stride] &&
                 std::equal(at[t], at[t] + count[t], at[t - stride]);
    total += repeats[t] ? 1 : count[t];
  }
  Buffer mask = Buffer::host(mask_stream_size(total));
  std::memcpy(mask.data(), &total, 8);
  uint8_t* out = mask.data() + 8;
  const uint16_t repeat = mask_repeat_run(grid.tile.volume());
  for (uint64_t t = 0; t < count.size(); ++t) {
    const bool r = repeats[t];
    std::memcpy(out, r ? &repeat : at[t], 2 * (r ? 1 : count[t]));
    out += 2 * (r ? 1 : count[t]);
  }
  return mask;
}

// Whole-chunk prediction (span "chunk"): every point's q first, in tile order (the exact
// outliers in key order), then each tile's deltas from the q of the whole field (0 outside it).
template <typename T>
void quantize_tile(const T* field, const TileGrid& g, uint64_t tile, const Quantization& quant, int32_t* q,
                   Outliers<T>& out) {
  const TileShape s = g.tile;
  const TileBox b = tile_box(g, tile);
  const uint64_t key0 = tile * s.volume();
  const QuantConstants constants = constants_of(quant, sizeof(T) == 4);
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x) {
        const uint64_t i = (b.x0 + x) + g.dims.x * ((b.y0 + y) + g.dims.y * (b.z0 + z));
        if (prequantize(field[i], constants, &q[i])) {
          out.exact_keys.push_back(key0 + x + s.x * (y + s.y * z));
          out.exact_values.push_back(field[i]);
        }
      }
}

template <typename T>
void whole_deltas_tile(const TileGrid& g, uint64_t tile, const int32_t* q, Axes axes, uint16_t* codes,
                       Outliers<T>& out) {
  const TileShape s = g.tile;
  const TileBox b = tile_box(g, tile);
  const uint64_t key0 = tile * s.volume(), nx = g.dims.x, plane = g.dims.x * g.dims.y;
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x) {
        const uint64_t gx = b.x0 + x, gy = b.y0 + y, gz = b.z0 + z, i = gx + nx * gy + plane * gz;
        auto at = [&](int dx, int dy, int dz) -> int32_t {
          if ((dx && gx == 0) || (dy && gy == 0) || (dz && gz == 0) || !in_stencil(axes, dx, dy, dz)) return 0;
          return q[i - dx - nx * dy - plane * dz];
        };
        int32_t pred = wrapping_add(wrapping_add(at(1, 0, 0), at(0, 1, 0)), at(0, 0, 1));
        pred = wrapping_sub(pred, wrapping_add(wrapping_add(at(1, 1, 0), at(1, 0, 1)), at(0, 1, 1)));
        pred = wrapping_add(pred, at(1, 1, 1));
        const int32_t delta = wrapping_sub(q[i], pred);
        if (!encode_delta(delta, &codes[i])) {
          out.escape_keys.push_back(key0 + x + s.x * (y + s.y * z));
          out.escape_deltas.push_back(delta);
        }
      }
}

template <typename T>
Buffer encode_typed(const T* field, const Dims& dims, const Quantization& quant, const MissingValues& missing,
                    uint16_t* codes, uint8_t* holds_data, Buffer* mask, bool whole, Axes axes, bool tile_order) {
  const TileGrid grid(dims);
  const int threads = omp_get_max_threads();
  std::vector<Outliers<T>> parts(threads);
  std::vector<int32_t> q(whole ? dims.count() : 0);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const uint64_t first = grid.tile_count() * t / nt, last = grid.tile_count() * (t + 1) / nt;
    if (whole) {
      for (uint64_t tile = first; tile < last; ++tile) quantize_tile(field, grid, tile, quant, q.data(), parts[t]);
#pragma omp barrier
      for (uint64_t tile = first; tile < last; ++tile) whole_deltas_tile(grid, tile, q.data(), axes, codes, parts[t]);
    } else {
      for (uint64_t tile = first; tile < last; ++tile)
        encode_tile(field, grid, tile, quant, missing, axes, tile_order, codes, holds_data, parts[t]);
    }
  }
  if (mask) *mask = mask_stream(parts, grid);
  // Each thread's outliers go after those of the threads before it: the shared scan of their
  // counts, then the copies in parallel.
  std::vector<OutlierCounts> at(parts.size() + 1);
  const OutlierCounts counts = varlen::exclusive_scan(
      [&](uint64_t t) { return OutlierCounts{parts[t].escape_keys.size(), parts[t].exact_keys.size()}; },
      parts.size(), at.data());
  Buffer stream = Buffer::host(outlier_stream_size(counts, dtype_of<T>()));
  uint8_t* out = stream.data();
  std::memcpy(out, &counts.escapes, 8);
  std::memcpy(out + 8, &counts.exacts, 8);
  auto* escape_keys = reinterpret_cast<uint64_t*>(out + 16);
  uint64_t* exact_keys = escape_keys + counts.escapes;
  auto* exact_values = reinterpret_cast<T*>(exact_keys + counts.exacts);
  auto* escape_deltas = reinterpret_cast<int32_t*>(exact_values + counts.exacts);
  auto place = [](auto* dst, const auto& v) {
    if (!v.empty()) std::memcpy(dst, v.data(), v.size() * sizeof(v[0]));  // an empty vector's data() may be null
  };
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < int(parts.size()); ++t) {
    place(escape_keys + at[t].escapes, parts[t].escape_keys);
    place(escape_deltas + at[t].escapes, parts[t].escape_deltas);
    place(exact_keys + at[t].exacts, parts[t].exact_keys);
    place(exact_values + at[t].exacts, parts[t].exact_values);
  }
  return stream;
}

// Tile t's mask runs: [first[s], first[s + 1]) of `runs` with s = source[t] (t itself, or the
// tile a repeat run takes its runs from).
struct MaskView {
  const uint16_t* runs = nullptr;
  std::vector<uint64_t> first, source;
};

// Tile t's symbols, one per key, from its runs (mask.hh).
void expand_tile_mask(const MaskView& mask, const TileGrid& g, uint64_t tile, uint8_t* symbols) {
  const uint32_t slice = mask_slice_keys(g.tile.x, g.tile.y, g.tile.z);
  uint32_t l = 0;
  const uint64_t source = mask.source[tile];
  for (uint64_t r = mask.first[source]; r < mask.first[source + 1]; ++r) {
    const uint32_t length = mask_run_length(mask.runs[r]), difference = mask_run_difference(mask.runs[r]);
    for (uint32_t k = l; k < l + length; ++k)
      symbols[k] = uint8_t(mask_symbol(difference, slice && k >= slice ? symbols[k - slice] : 0));
    l += length;
  }
}

// Writes the fill values of a whole tile whose points are all missing and returns true (such a
// tile has nothing to decode: no codes, no outliers); false otherwise.
template <typename T>
bool fill_missing_tile(const uint8_t* symbols, const MissingValues& missing, const TileGrid& g, const TileBox& b,
                       T* field) {
  if (uint64_t(b.ex) * b.ey * b.ez != g.tile.volume()) return false;
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y) {
      const uint64_t row = b.x0 + g.dims.x * ((b.y0 + y) + g.dims.y * (b.z0 + z));
      if (std::find(symbols + row, symbols + row + b.ex, uint8_t(0)) != symbols + row + b.ex) return false;
    }
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y) {
      const uint64_t row = b.x0 + g.dims.x * ((b.y0 + y) + g.dims.y * (b.z0 + z));
      for (uint32_t x = 0; x < b.ex; ++x) field[row + x] = missing.value_of<T>(symbols[row + x]);
    }
  return true;
}

// `symbols`: each point's mask symbol in field order (mask_symbols), null without fill values.
template <typename T>
void decode_tile(const uint16_t* codes, const OutlierView& o, const uint8_t* symbols, const MissingValues& missing,
                 const TileGrid& g, uint64_t tile, const Quantization& quant, Axes axes, bool tile_order, T* field) {
  const TileShape s = g.tile;
  const TileBox b = tile_box(g, tile);
  if (symbols && fill_missing_tile(symbols, missing, g, b, field)) return;
  const uint64_t key0 = tile * s.volume(), key1 = key0 + s.volume();
  int32_t q[max_tile_volume];
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x)
        q[x + s.x * (y + s.y * z)] = decode_delta(codes[code_index(g, b, tile_order, x, y, z)]);
  const uint64_t* escape_end = o.escape_keys + o.counts.escapes;
  for (const uint64_t* k = std::lower_bound(o.escape_keys, escape_end, key0); k != escape_end && *k < key1; ++k)
    q[*k - key0] = o.escape_deltas[k - o.escape_keys];
  // Inverse Lorenzo: wrapping prefix sums along x, then y, then z (the stencil's axes).
  for (uint32_t z = 0; z < b.ez && (axes & axis_x); ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 1; x < b.ex; ++x) {
        const uint32_t l = x + s.x * (y + s.y * z);
        q[l] = wrapping_add(q[l], q[l - 1]);
      }
  for (uint32_t z = 0; z < b.ez && (axes & axis_y); ++z)
    for (uint32_t y = 1; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x) {
        const uint32_t l = x + s.x * (y + s.y * z);
        q[l] = wrapping_add(q[l], q[l - s.x]);
      }
  for (uint32_t z = 1; z < b.ez && (axes & axis_z); ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x) {
        const uint32_t l = x + s.x * (y + s.y * z);
        q[l] = wrapping_add(q[l], q[l - s.x * s.y]);
      }
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x)
        field[(b.x0 + x) + g.dims.x * ((b.y0 + y) + g.dims.y * (b.z0 + z))] =
            reconstruct<T>(q[x + s.x * (y + s.y * z)], quant.step);
  const uint64_t* exact_end = o.exact_keys + o.counts.exacts;
  for (const uint64_t* k = std::lower_bound(o.exact_keys, exact_end, key0); k != exact_end && *k < key1; ++k) {
    const uint64_t l = *k - key0;
    const uint64_t x = l % s.x, y = (l / s.x) % s.y, z = l / (s.x * s.y);
    std::memcpy(&field[(b.x0 + x) + g.dims.x * ((b.y0 + y) + g.dims.y * (b.z0 + z))],
                o.exact_values + sizeof(T) * (k - o.exact_keys), sizeof(T));
  }
  if (!symbols) return;
  for (uint32_t z = 0; z < b.ez; ++z)
    for (uint32_t y = 0; y < b.ey; ++y)
      for (uint32_t x = 0; x < b.ex; ++x) {
        const uint64_t i = (b.x0 + x) + g.dims.x * ((b.y0 + y) + g.dims.y * (b.z0 + z));
        if (symbols[i]) field[i] = missing.value_of<T>(symbols[i]);
      }
}

// Checks a mask stream against the grid and finds each tile's runs (throws corrupt_data).
MaskView read_mask(const uint8_t* stream, uint64_t size_bytes, const TileGrid& grid, const MissingValues& missing) {
  MaskView view;
  view.first.assign(grid.tile_count() + 1, 0);
  view.source.resize(grid.tile_count());
  require_data(size_bytes >= 8, "mask stream shorter than its run count");
  uint64_t runs;
  std::memcpy(&runs, stream, 8);
  require_data(runs <= (size_bytes - 8) / 2 && mask_stream_size(runs) == size_bytes, "mask stream size");
  view.runs = reinterpret_cast<const uint16_t*>(stream + 8);
  const uint64_t volume = grid.tile.volume();
  const uint64_t stride = mask_repeat_stride(grid.tile.y, grid.tile.z, grid.tiles_x, grid.tiles_y);
  uint64_t tile = 0, filled = 0;  // keys of `tile` covered so far
  for (uint64_t r = 0; r < runs; ++r) {
    require_data(tile < grid.tile_count(), "mask runs past the field");
    if (filled == 0) view.first[tile] = r, view.source[tile] = tile;
    filled += mask_run_length(view.runs[r]);
    if (is_mask_repeat(view.runs[r])) {  // the whole tile, with a tile one layer before it
      require_data(filled == volume && mask_run_length(view.runs[r]) == volume && tile >= stride, "mask repeat run");
      view.source[tile] = view.source[tile - stride];
    }
    require_data(filled <= volume && (is_mask_repeat(view.runs[r]) || mask_run_difference(view.runs[r]) <= missing.count + 1),
                 "mask run");
    if (filled == volume) ++tile, filled = 0;
  }
  require_data(tile == grid.tile_count() && filled == 0, "mask runs do not cover the field");
  view.first[grid.tile_count()] = runs;
  return view;
}

// Whole-chunk prediction's inverse: every point's delta (escapes patched in), wrapping prefix
// sums along x, y and z over the whole field, the values, then the exact values.
template <typename T>
void decode_whole(const uint16_t* codes, const OutlierView& o, const Dims& dims, const Quantization& quant, Axes axes,
                  T* field) {
  const TileGrid g(dims);
  const uint64_t n = dims.count(), nx = dims.x, ny = dims.y, nz = dims.z, plane = nx * ny;
  std::vector<int32_t> q(n);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i) q[i] = decode_delta(codes[i]);
  auto point_of = [&](uint64_t key) {
    const uint64_t volume = g.tile.volume(), tile = key / volume, l = key % volume;
    const TileBox b = tile_box(g, tile);
    return (b.x0 + l % g.tile.x) + nx * ((b.y0 + (l / g.tile.x) % g.tile.y) + ny * (b.z0 + l / (g.tile.x * g.tile.y)));
  };
  for (uint64_t e = 0; e < o.counts.escapes; ++e) q[point_of(o.escape_keys[e])] = o.escape_deltas[e];
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < int64_t(axes & axis_x ? ny * nz : 0); ++row)
    for (uint64_t x = 1; x < nx; ++x) q[row * nx + x] = wrapping_add(q[row * nx + x], q[row * nx + x - 1]);
#pragma omp parallel for schedule(static)
  for (int64_t z = 0; z < int64_t(axes & axis_y ? nz : 0); ++z)
    for (uint64_t y = 1; y < ny; ++y)
      for (uint64_t x = 0; x < nx; ++x) {
        const uint64_t i = z * plane + y * nx + x;
        q[i] = wrapping_add(q[i], q[i - nx]);
      }
  for (uint64_t z = 1; z < nz && (axes & axis_z); ++z)
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < int64_t(plane); ++j) q[z * plane + j] = wrapping_add(q[z * plane + j], q[(z - 1) * plane + j]);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(n); ++i) field[i] = reconstruct<T>(q[i], quant.step);
  for (uint64_t e = 0; e < o.counts.exacts; ++e)
    std::memcpy(&field[point_of(o.exact_keys[e])], o.exact_values + sizeof(T) * e, sizeof(T));
}

template <typename T>
void decode_typed(const uint16_t* codes, const OutlierView& view, const uint8_t* symbols, const MissingValues& missing,
                  const Dims& dims, const Quantization& quant, Axes axes, bool tile_order, T* field) {
  const TileGrid grid(dims);
  const int64_t tiles = int64_t(grid.tile_count());
#pragma omp parallel for schedule(static)
  for (int64_t tile = 0; tile < tiles; ++tile)
    decode_tile(codes, view, symbols, missing, grid, uint64_t(tile), quant, axes, tile_order, field);
}

// A mask stream's runs, aligned (a stored stream may start at any byte) and indexed.
struct AlignedMask {
  std::vector<uint16_t> bytes;
  MaskView view;
  AlignedMask(const uint8_t* mask, uint64_t mask_size, const Dims& dims, const MissingValues& missing)
      : bytes((mask_size + 1) / 2) {
    if (mask_size > 0) std::memcpy(bytes.data(), mask, mask_size);
    view = read_mask(reinterpret_cast<const uint8_t*>(bytes.data()), mask_size, TileGrid(dims), missing);
  }
};

// Each point's symbol from an indexed mask, in field order (0 where it holds data): the
// tiles' runs expanded once for both the codes' scatter and the fill values.
std::vector<uint8_t> mask_symbols(const MaskView& mask, const TileGrid& g) {
  const TileShape s = g.tile;
  std::vector<uint8_t> out(g.dims.count());
#pragma omp parallel for schedule(static)
  for (int64_t tile = 0; tile < int64_t(g.tile_count()); ++tile) {
    uint8_t symbols[max_tile_volume];
    expand_tile_mask(mask, g, uint64_t(tile), symbols);
    const TileBox b = tile_box(g, uint64_t(tile));
    for (uint32_t z = 0; z < b.ez; ++z)
      for (uint32_t y = 0; y < b.ey; ++y)
        for (uint32_t x = 0; x < b.ex; ++x)
          out[(b.x0 + x) + g.dims.x * ((b.y0 + y) + g.dims.y * (b.z0 + z))] = symbols[x + s.x * (y + s.y * z)];
  }
  return out;
}

std::vector<uint8_t> data_flags(const std::vector<uint8_t>& symbols) {
  std::vector<uint8_t> holds_data(symbols.size());
  for (size_t i = 0; i < symbols.size(); ++i) holds_data[i] = symbols[i] == 0;
  return holds_data;
}

// The sample's delta histograms for "auto" (lorenzo.hh): each sampled tile's q in a box
// bordered on every axis, then each point's delta under every candidate for each span: by
// tiles with a zero border, across the chunk with the low neighbours' q in it (with fill
// values by tiles, whatever the span). A tile with a missing point is left out.
template <typename T>
void axes_histograms_typed(const T* field, const Dims& dims, const Quantization& quant, const MissingValues& missing,
                           const std::vector<Span>& spans, const std::vector<Axes>& candidates, uint64_t* counts) {
  const TileGrid g(dims);
  const TileShape s = g.tile;
  const uint64_t stride = axes_sample_stride(g.tile_count());
  const QuantConstants constants = constants_of(quant, sizeof(T) == 4);
  const int64_t px = s.x + 1, py = s.y + 1;
  // The stencil's seven lower neighbours, as terms of q - (1 - X)(1 - Y)(1 - Z) q with their
  // signs; a candidate keeps the terms that step back along its axes only (in_stencil).
  constexpr int steps[7][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};
  int64_t offset[7];
  std::vector<std::array<uint32_t, 7>> weight(candidates.size());
  for (int t = 0; t < 7; ++t) {
    const auto [dx, dy, dz] = steps[t];
    offset[t] = dx + px * (dy + py * dz);
    for (size_t c = 0; c < candidates.size(); ++c)
      weight[c][t] = in_stencil(candidates[c], dx, dy, dz) ? (dx + dy + dz) % 2 ? 1u : ~0u : 0u;
  }
  auto cell_of = [&](int64_t x, int64_t y, int64_t z) { return uint64_t((x + 1) + px * ((y + 1) + py * (z + 1))); };
  const uint64_t per_span = candidates.size() * axes_histogram_bins, samples = (g.tile_count() + stride - 1) / stride;
  // The sampled tiles split over the threads, each with its own box and counts (integer sums:
  // any split gives the same histograms).
#pragma omp parallel
  {
    std::vector<int32_t> box(uint64_t(px) * py * (s.z + 1));
    std::vector<uint64_t> mine(spans.size() * per_span);
#pragma omp for schedule(static)
    for (int64_t sample = 0; sample < int64_t(samples); ++sample) {
      const uint64_t tile = uint64_t(sample) * stride;
      const TileBox b = tile_box(g, tile);
      bool has_missing = false;
      for (uint32_t z = 0; z < b.ez; ++z)
        for (uint32_t y = 0; y < b.ey; ++y)
          for (uint32_t x = 0; x < b.ex; ++x) {
            const T value = field[(b.x0 + x) + dims.x * ((b.y0 + y) + dims.y * (b.z0 + z))];
            has_missing |= missing.symbol_of(value) != 0;
            prequantize(value, constants, &box[cell_of(x, y, z)]);
          }
      if (has_missing) continue;
      for (size_t sp = 0; sp < spans.size(); ++sp) {
        const bool across = spans[sp] == Span::chunk && missing.empty();
        // The border: the low neighbours' q across the chunk (0 outside the field), else 0.
        for (int64_t z = -1; z < int64_t(s.z); ++z)
          for (int64_t y = -1; y < int64_t(s.y); ++y)
            for (int64_t x = -1; x < int64_t(s.x); ++x) {
              if (x >= 0 && y >= 0 && z >= 0) continue;
              const int64_t gx = int64_t(b.x0) + x, gy = int64_t(b.y0) + y, gz = int64_t(b.z0) + z;
              int32_t& q = box[cell_of(x, y, z)];
              q = 0;
              if (across && gx >= 0 && gy >= 0 && gz >= 0 && uint64_t(gx) < dims.x && uint64_t(gy) < dims.y &&
                  uint64_t(gz) < dims.z)
                prequantize(field[uint64_t(gx) + dims.x * (uint64_t(gy) + dims.y * uint64_t(gz))], constants, &q);
            }
        uint64_t* out = mine.data() + sp * per_span;
        for (uint32_t z = 0; z < b.ez; ++z)
          for (uint32_t y = 0; y < b.ey; ++y)
            for (uint32_t x = 0; x < b.ex; ++x) {
              const uint64_t cell = cell_of(x, y, z);
              uint32_t lower[7];
              for (int t = 0; t < 7; ++t) lower[t] = uint32_t(box[cell - offset[t]]);
              for (size_t c = 0; c < candidates.size(); ++c) {
                uint32_t pred = 0;
                for (int t = 0; t < 7; ++t) pred += weight[c][t] * lower[t];
                ++out[c * axes_histogram_bins + axes_histogram_bin(int32_t(uint32_t(box[cell]) - pred))];
              }
            }
      }
    }
#pragma omp critical
    for (size_t i = 0; i < mine.size(); ++i) counts[i] += mine[i];
  }
}

}  // namespace

std::vector<uint64_t> axes_histograms_cpu(const void* field, DType type, const Dims& dims, const Quantization& quant,
                                          const MissingValues& missing, const std::vector<Span>& spans,
                                          const std::vector<Axes>& candidates) {
  check_sample_spans(spans);
  std::vector<uint64_t> counts(spans.size() * candidates.size() * axes_histogram_bins);
  if (type == DType::f32)
    axes_histograms_typed(static_cast<const float*>(field), dims, quant, missing, spans, candidates, counts.data());
  else
    axes_histograms_typed(static_cast<const double*>(field), dims, quant, missing, spans, candidates, counts.data());
  return counts;
}

void mask_data_flags_cpu(const uint8_t* mask, uint64_t mask_size, const Dims& dims, const MissingValues& missing,
                         uint8_t* holds_data) {
  const std::vector<uint8_t> flags = data_flags(mask_symbols(AlignedMask(mask, mask_size, dims, missing).view, TileGrid(dims)));
  std::copy(flags.begin(), flags.end(), holds_data);
}

uint64_t gather_data_codes_cpu(const uint16_t* codes, const uint8_t* holds_data, uint64_t n, uint16_t* out) {
  uint64_t count = 0;
  for (uint64_t i = 0; i < n; ++i)
    if (holds_data[i]) out[count++] = codes[i];
  return count;
}

void scatter_data_codes_cpu(const uint16_t* data_codes, uint64_t count, const uint8_t* holds_data, uint64_t n,
                            uint16_t* codes) {
  uint64_t with_data = 0;
  for (uint64_t i = 0; i < n; ++i) with_data += holds_data[i];
  require_data(with_data == count, "lorenzo codes size");
  uint64_t j = 0;
  for (uint64_t i = 0; i < n; ++i) codes[i] = holds_data[i] ? data_codes[j++] : uint16_t(0);
}

Buffer encode_cpu(const void* field, DType type, const Dims& dims, const Quantization& quant, uint16_t* codes,
                  uint64_t* code_count, const MissingValues& missing, Buffer* mask, const Prediction& prediction) {
  check_code_order(prediction, missing);
  const uint64_t n = dims.count();
  std::vector<uint8_t> holds_data(missing.empty() ? 0 : n);
  const bool whole = prediction.span == Span::chunk && missing.empty();
  const Axes axes = prediction.axes_of(dims);
  Buffer outliers = type == DType::f32 ? encode_typed(static_cast<const float*>(field), dims, quant, missing, codes,
                                                      holds_data.data(), mask, whole, axes, prediction.tile_order)
                                       : encode_typed(static_cast<const double*>(field), dims, quant, missing, codes,
                                                      holds_data.data(), mask, whole, axes, prediction.tile_order);
  // With fill values, the points with data only (the others' deltas are 0), in place.
  *code_count = missing.empty() ? n : gather_data_codes_cpu(codes, holds_data.data(), n, codes);
  return outliers;
}

void decode_cpu(const uint16_t* codes, uint64_t code_count, const uint8_t* outliers, uint64_t outliers_size,
                DType type, const Dims& dims, const Quantization& quant, void* field, const uint8_t* mask,
                uint64_t mask_size, const MissingValues& missing, bool data_only, const Prediction& prediction) {
  check_code_order(prediction, missing);
  const uint64_t n = dims.count();
  require_data(code_count == n || (!missing.empty() && data_only && code_count < n), "lorenzo codes size");
  // The stream is copied so that its arrays are aligned whatever the container's offsets.
  std::vector<uint64_t> aligned((outliers_size + 7) / 8);
  if (outliers_size > 0) std::memcpy(aligned.data(), outliers, outliers_size);  // an empty stream has no data pointer
  const OutlierView view = parse_outliers(reinterpret_cast<const uint8_t*>(aligned.data()), outliers_size, type);
  validate_outlier_keys(view, TileGrid(dims));
  std::vector<uint8_t> symbols;
  std::vector<uint16_t> all;
  if (!missing.empty()) {
    symbols = mask_symbols(AlignedMask(mask, mask_size, dims, missing).view, TileGrid(dims));
    if (data_only) {  // a code for every point: zeros at the missing ones
      all.resize(n);
      scatter_data_codes_cpu(codes, code_count, data_flags(symbols).data(), n, all.data());
      codes = all.data();
    }
  }
  const Axes axes = prediction.axes_of(dims);
  if (prediction.span == Span::chunk && missing.empty()) {
    if (type == DType::f32) return decode_whole(codes, view, dims, quant, axes, static_cast<float*>(field));
    return decode_whole(codes, view, dims, quant, axes, static_cast<double*>(field));
  }
  const uint8_t* at = missing.empty() ? nullptr : symbols.data();
  const bool order = prediction.tile_order;
  if (type == DType::f32) return decode_typed(codes, view, at, missing, dims, quant, axes, order, static_cast<float*>(field));
  decode_typed(codes, view, at, missing, dims, quant, axes, order, static_cast<double*>(field));
}

}  // namespace fzg::lorenzo
