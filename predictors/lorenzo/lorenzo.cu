// CUDA backend of the Lorenzo stage. Same tiles, same rules, same bytes as lorenzo_cpu.cc.
//
// Work decomposition: one 256-thread block owns one tile (2048 points in 1D and 3D, 1024 in
// 2D) at a time, grid-striding over tiles; a thread owns the points l = threadIdx.x + 256 k of
// the tile (x fastest, so a warp touches 32 consecutive values of a row: coalesced). The
// tile's pre-quantized values live in shared memory (8 KiB of int32), where neighbours are
// read from.
//
// Compression is two passes so that the outliers land in key order without atomics:
//   1. encode: read T, write u16 code per value, count escapes and exacts per tile and in
//      total (bytes per value: sizeof(T) read + 2 written). The host reads the totals.
//   2. only when there are outliers: scan the per-tile counts (varlen/scan.cuh), then `place_outliers`
//      revisits only the tiles that have outliers and writes them at their scanned offsets,
//      in key order (a block scan).
// In 3D a thread's eight points form one z-column (lane = x, warp = y), so the separable
// Lorenzo operator runs mostly in registers: z in a running difference or sum, x by warp
// shuffles, only y through shared memory. 1D and 2D tiles use a zero-bordered shared tile.
// Decompression is one pass: deltas (escapes patched in), prefix sums along each axis,
// x' = T(q * step) written, exact values written last (2 bytes read + sizeof(T) written per
// value).
// With fill values (the `Fill` instantiations) the encode starts from the field's data bits
// (DataBits, core/missing_values.hh: made beside the value range by the executor, or by the
// encoder), from which a single-pass scan gives every word of 32 points its first code (the
// codes of the points with data, in field order: each code is written where it goes, with no
// gather); the encode finds each tile's class from its words at the start of each run of tiles
// it claims. A tile all of the one fill value (inland) reads nothing and
// writes only its known mask runs (no barrier); a tile all data is coded as without fill values
// (in 1D and 2D through the bordered shared tile); other tiles find which symbols they hold
// (one barrier), and in a tile with both kinds of point the warps give each missing point its
// own prediction as q (predict_missing, mask.hh's rule, one anti-diagonal of rows at a time in
// 3D) before the deltas; its mask runs are found by a block scan over the symbols in shared
// memory. Runs go to a scratch slot per tile; one single-pass kernel then finds the tiles that
// repeat the layer before and each tile's place in the mask stream, and a compaction kernel
// packs the runs there once the host knows the total (read back with the outlier totals and
// the code count: no extra synchronization). Before a decode the codes are
// scattered back (code_order.cu: 0 at missing points, bits from the mask), and the decode
// writes the fill values of its tile's runs after the exact values.
#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cstring>
#include <memory>
#include <type_traits>

#include "core/error.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "predictors/lorenzo/mask.hh"
#include "predictors/lorenzo/quantizer.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/device_words.cuh"
#include "runtime/launch.cuh"
#include "runtime/timer.hh"
#include "varlen/lookback.cuh"
#include "varlen/scan.cuh"

namespace fzg::lorenzo {

namespace {

constexpr int block_threads = 256;
constexpr uint32_t no_uniform_symbol = ~0u;  // a tile's mask is not all one symbol

// The field's shape, and the tiles a launch works on: [first_tile, end_tile) of tile order,
// their codes in a window that holds point i's code at [i - codes_first]; a decode writes
// point i at [i - field_first] of its output.
struct Grid {
  uint64_t nx, ny, nz, tiles_x, tiles_y, tile_count;
  uint32_t first_tile, end_tile;
  uint64_t codes_first, field_first;
  bool tile_order;  // the codes in tile order (lorenzo.hh); the window's first is then a tile row's
};

// A tile's escape and exact counts in one word (a tile has at most 2048 of each), so that one
// sum adds both.
__host__ __device__ constexpr uint32_t pack_counts(uint32_t escapes, uint32_t exacts) { return escapes << 16 | exacts; }
__host__ __device__ constexpr OutlierCounts unpack_counts(uint32_t packed) { return {packed >> 16, packed & 0xffffu}; }

Grid device_grid(const TileGrid& g) {
  return {g.dims.x, g.dims.y, g.dims.z, g.tiles_x, g.tiles_y, g.tile_count(), 0, uint32_t(g.tile_count()), 0, 0, false};
}

// Where a tile starts and how much of it lies inside the field.
template <int TX, int TY, int TZ>
struct TilePlace {
  uint64_t x0, y0, z0, key0;
  uint32_t index, ex, ey, ez;

  __device__ TilePlace(const Grid& g, uint32_t tile) {
    const uint32_t row = tile / g.tiles_x, tx = tile - row * g.tiles_x;
    const uint32_t tz = row / g.tiles_y, ty = row - tz * g.tiles_y;
    *this = TilePlace(g, tile, tx, ty, tz);
  }
  __device__ TilePlace(const Grid& g, uint32_t tile, uint32_t tx, uint32_t ty, uint32_t tz) {
    x0 = uint64_t(tx) * TX, y0 = uint64_t(ty) * TY, z0 = uint64_t(tz) * TZ;
    index = tile;
    key0 = tile * uint64_t(TX * TY * TZ);
    ex = uint32_t(g.nx - x0 < TX ? g.nx - x0 : TX);
    ey = uint32_t(g.ny - y0 < TY ? g.ny - y0 : TY);
    ez = uint32_t(g.nz - z0 < TZ ? g.nz - z0 : TZ);
  }
  __device__ bool inside(uint32_t lx, uint32_t ly, uint32_t lz) const { return lx < ex && ly < ey && lz < ez; }
  __device__ bool whole() const { return ex == TX && ey == TY && ez == TZ; }
  __device__ uint64_t global(const Grid& g, uint32_t lx, uint32_t ly, uint32_t lz) const {
    return (x0 + lx) + g.nx * ((y0 + ly) + g.ny * (z0 + lz));
  }
};

// The tiles [tile, end) of a contiguous run, each tile's coordinates from the previous tile's
// by a carry instead of two integer divisions per tile. `body(place)` sees every tile of the
// run; the whole block calls it together.
template <int TX, int TY, int TZ, typename Body>
__device__ __forceinline__ void for_each_tile_of_run(const Grid& g, uint32_t tile, uint32_t end, Body body) {
  const uint32_t row = tile / g.tiles_x;
  uint32_t tx = tile - row * g.tiles_x, tz = row / g.tiles_y, ty = row - tz * g.tiles_y;
  for (; tile < end; ++tile) {
    body(TilePlace<TX, TY, TZ>(g, tile, tx, ty, tz));
    if (++tx == g.tiles_x) {
      tx = 0;
      if (++ty == g.tiles_y) ty = 0, ++tz;
    }
  }
}

// The tiles of this block: one contiguous run of the launch's tiles (an equal share).
template <int TX, int TY, int TZ, typename Body>
__device__ __forceinline__ void for_each_block_tile(const Grid& g, Body body) {
  const uint32_t tiles = g.end_tile - g.first_tile;
  const uint32_t per_block = (tiles + gridDim.x - 1) / gridDim.x;
  const uint32_t offset = blockIdx.x * per_block;
  if (offset >= tiles) return;
  const uint32_t first = g.first_tile + offset;
  for_each_tile_of_run<TX, TY, TZ>(g, first, first + (tiles - offset < per_block ? tiles - offset : per_block), body);
}

// The tiles first_tile + blockIdx.x + gridDim.x j of the launch, so that the blocks work side
// by side on neighbouring tiles (DRAM rows shared; equal contiguous shares spread the blocks
// over the whole field and decoded p25 5-8 % slower, H200). Each tile's coordinates come from
// the one before by adding the stride's own coordinates with carries: two integer divisions a
// block, not a tile. The whole block calls it.
template <int TX, int TY, int TZ, typename Body>
__device__ __forceinline__ void for_each_strided_tile(const Grid& g, Body body) {
  uint32_t tile = g.first_tile + blockIdx.x;
  if (tile >= g.end_tile) return;
  const uint32_t tiles_x = uint32_t(g.tiles_x), tiles_y = uint32_t(g.tiles_y);  // tile indices are u32
  const uint32_t step = gridDim.x;
  const uint32_t step_row = step / tiles_x, step_x = step - step_row * tiles_x;
  const uint32_t step_z = step_row / tiles_y, step_y = step_row - step_z * tiles_y;
  const uint32_t row = tile / tiles_x;
  uint32_t tx = tile - row * tiles_x, tz = row / tiles_y, ty = row - tz * tiles_y;
  for (;;) {
    body(TilePlace<TX, TY, TZ>(g, tile, tx, ty, tz));
    if (g.end_tile - tile <= step) return;
    tile += step;
    tx += step_x;
    const uint32_t carry_x = tx >= tiles_x;
    if (carry_x) tx -= tiles_x;
    ty += step_y + carry_x;
    const uint32_t carry_y = ty >= tiles_y;
    if (carry_y) ty -= tiles_y;
    tz += step_z + carry_y;
  }
}

// The launch's tiles in runs claimed by blocks from `*claim` (a count of claims, zeroed
// before the launch) until none is left: where tiles differ in cost (a masked field's inland
// tiles cost next to nothing, its coast's several times a tile of the sea), the blocks' static
// runs left SMs idle beside the slowest runs. Most tiles go in runs of `claimed_run`; the last
// `tail_runs` runs a block are of `tail_run` tiles, so that the blocks finish closer together
// (against runs of 32 to the end: +1 to +17 % masked compress in 10 of 12 cells of land masks of
// 40 and 52 %, H100). `body(place, run_first, run_end)`; `slot` is shared memory. The whole
// block calls it.
constexpr uint32_t claimed_run = 16, tail_run = 2, tail_runs = 4;
template <int TX, int TY, int TZ, typename Body>
__device__ __forceinline__ void for_each_claimed_run(const Grid& g, uint32_t* claim, uint32_t& slot, Body body) {
  const uint32_t tiles = g.end_tile - g.first_tile;
  const uint64_t tail_tiles = uint64_t(gridDim.x) * tail_runs * tail_run;
  const uint32_t head = tiles > tail_tiles ? uint32_t(tiles - tail_tiles) : 0u;  // tiles in long runs
  const uint32_t head_claims = (head + claimed_run - 1) / claimed_run;
  for (;;) {
    if (threadIdx.x == 0) slot = atomicAdd(claim, 1u);
    __syncthreads();
    const uint32_t c = slot;
    __syncthreads();  // read by every thread before thread 0 claims again
    uint64_t offset;
    uint32_t run;
    if (c < head_claims) {
      offset = uint64_t(c) * claimed_run, run = claimed_run;
      if (head - offset < run) run = uint32_t(head - offset);
    } else {
      offset = head + uint64_t(c - head_claims) * tail_run, run = tail_run;
      if (offset >= tiles) return;
      if (tiles - offset < run) run = uint32_t(tiles - offset);
    }
    const uint32_t first = g.first_tile + uint32_t(offset), end = first + run;
    for_each_tile_of_run<TX, TY, TZ>(g, first, end, [&](const TilePlace<TX, TY, TZ>& p) { body(p, first, end); });
  }
}

template <int TX, int TY>
__device__ void split(uint32_t l, uint32_t& lx, uint32_t& ly, uint32_t& lz) {
  lx = l % TX;
  ly = (l / TX) % TY;
  lz = l / (TX * TY);
}

// The tile's pre-quantized values in shared memory with a zero border on the low side of
// each axis it has: the Lorenzo stencil then reads its neighbours without a branch (a
// neighbour outside the tile is the border's 0, as on the CPU). The border is zeroed once per
// block; tiles only ever write the interior.
template <int TX, int TY, int TZ>
struct Halo {
  static constexpr int px = TX + 1, py = TY > 1 ? TY + 1 : 1, pz = TZ > 1 ? TZ + 1 : 1;
  static constexpr int size = px * py * pz, dy = px, dz = px * py;
  __device__ static int at(uint32_t lx, uint32_t ly, uint32_t lz) {
    return int(lx + 1) + dy * int(ly + (TY > 1)) + dz * int(lz + (TZ > 1));
  }
  __device__ static void clear(int32_t* h) {
    for (int i = threadIdx.x; i < size; i += block_threads) h[i] = 0;
    __syncthreads();
  }
  // (1 - X) q at cell c where x is one of `axes`, else q (wrapping 32-bit arithmetic).
  __device__ static uint32_t along_x(const int32_t* h, int c, uint32_t axes) {
    return (axes & axis_x) ? uint32_t(h[c]) - uint32_t(h[c - 1]) : uint32_t(h[c]);
  }
  // The stencil's terms from the rows and planes before cell c's: (1 - (1 - Y)(1 - Z)) (1 - X) q
  // over `axes` (the prediction less q(x - 1), x an axis; 0 with neither y nor z).
  __device__ static uint32_t rows_before(const int32_t* h, int c, uint32_t axes) {
    uint32_t r = 0;
    if constexpr (TY > 1)
      if (axes & axis_y) r += along_x(h, c - dy, axes);
    if constexpr (TZ > 1)
      if (axes & axis_z) {
        r += along_x(h, c - dz, axes);
        if (axes & axis_y) r -= along_x(h, c - dy - dz, axes);
      }
    return r;
  }
  // The same terms at cell c's own x: (1 - (1 - Y)(1 - Z)) q over `axes` (0 with neither y nor
  // z); where x is an axis, rows_before(c) = rows_part(c) - rows_part(c - 1).
  __device__ static uint32_t rows_part(const int32_t* h, int c, uint32_t axes) {
    uint32_t r = 0;
    if constexpr (TY > 1)
      if (axes & axis_y) r += uint32_t(h[c - dy]);
    if constexpr (TZ > 1)
      if (axes & axis_z) {
        r += uint32_t(h[c - dz]);
        if (axes & axis_y) r -= uint32_t(h[c - dy - dz]);
      }
    return r;
  }
  // The Lorenzo delta at cell c: the product of (1 - shift) over `axes` (lorenzo.hh; uniform
  // across the block), in wrapping 32-bit arithmetic (axes the tile lacks drop out).
  __device__ static int32_t delta(const int32_t* h, int c, uint32_t axes) {
    return int32_t(along_x(h, c, axes) - rows_before(h, c, axes));
  }
};

// The points one thread owns in a tile: l = threadIdx.x + block_threads * k. A step of k is a
// fixed step in the field (256 along x in 1D, 8 rows in 2D, one plane in 3D) and a compile-time
// step in the tile, and the points inside the field are exactly k < count: per point, the
// index work is one pointer increment and one compare.
template <int TX, int TY, int TZ>
struct Strip {
  static constexpr int per_thread = TX * TY * TZ / block_threads;
  static_assert(TY == 1 || block_threads % TX == 0, "rows of a 2D/3D tile split evenly over the block");
  static_assert(TZ == 1 || TX * TY == block_threads, "a 3D tile's plane is one block of threads");
  static constexpr uint32_t local_step = block_threads;
  static constexpr int cell_step = TY == 1 ? block_threads
                                   : TZ == 1 ? (block_threads / TX) * Halo<TX, TY, TZ>::dy
                                             : Halo<TX, TY, TZ>::dz;
  uint32_t lx, ly, lz, count;
  int cell0;  // the first point's cell in the bordered tile
  uint64_t global0, global_step;

  __device__ Strip(const Grid& g, const TilePlace<TX, TY, TZ>& p) {
    split<TX, TY>(threadIdx.x, lx, ly, lz);
    cell0 = Halo<TX, TY, TZ>::at(lx, ly, lz);
    global0 = p.global(g, lx, ly, lz);
    if constexpr (TY == 1) {
      global_step = block_threads;
      count = lx < p.ex ? (p.ex - lx + block_threads - 1) / block_threads : 0;
    } else if constexpr (TZ == 1) {
      constexpr uint32_t rows = block_threads / TX;
      global_step = uint64_t(rows) * g.nx;
      count = (lx < p.ex && ly < p.ey) ? (p.ey - ly + rows - 1) / rows : 0;
    } else {
      global_step = g.nx * g.ny;
      count = (lx < p.ex && ly < p.ey) ? p.ez : 0;
    }
  }
  __device__ bool inside(int k) const { return uint32_t(k) < count; }
  __device__ uint32_t local(int k) const { return threadIdx.x + local_step * k; }
  __device__ int cell(int k) const { return cell0 + cell_step * k; }
  // Coordinates of point k inside the tile.
  __device__ uint32_t x(int k) const { return TY == 1 ? lx + block_threads * k : lx; }
  __device__ uint32_t y(int k) const { return (TY > 1 && TZ == 1) ? ly + (block_threads / TX) * k : ly; }
  __device__ uint32_t z(int k) const { return TZ > 1 ? lz + k : lz; }
};

// Where this thread's codes lie in the window: point k's at [first + step * k], in field order
// or in tile order (lorenzo.hh), where a whole tile's 256 threads take 256 consecutive codes.
struct CodeRun {
  uint64_t first, step;
};
template <int TX, int TY, int TZ>
__device__ __forceinline__ CodeRun code_run(const Grid& g, const TilePlace<TX, TY, TZ>& p,
                                            const Strip<TX, TY, TZ>& strip) {
  if (!g.tile_order) return {strip.global0 - g.codes_first, strip.global_step};
  const uint64_t w = p.ex, h = p.ey;
  const uint64_t first = tile_order_first(g.nx, g.ny, p.x0, p.y0, p.z0, p.ey, p.ez) + strip.lx + w * (strip.ly + h * strip.lz);
  return {first - g.codes_first, TY == 1 ? uint64_t(block_threads) : TZ == 1 ? (block_threads / TX) * w : w * h};
}

// Pre-quantizes this thread's points into registers; returns how many of them are exact.
// `Whole`: the tile lies inside the field, so every point is (no per-point test). One point
// at a time, each behind its own branch: computing all of them branch-free lets the compiler
// interleave eight chains of double arithmetic, which doubles the registers and halves the
// resident blocks (measured slower, 298 -> 323 us).
// With `Fill`, missing points are not quantized (q 0 until predict_missing gives them their
// prediction), and their symbols (4 bits per k) go to `symbols`.
template <bool Whole, bool Fill, typename T, int TX, int TY, int TZ>
__device__ uint32_t prequantize_strip(const T* field, const Strip<TX, TY, TZ>& strip, const QuantConstants& c,
                                      const MissingValues& missing, int32_t (&q)[Strip<TX, TY, TZ>::per_thread],
                                      uint32_t& symbols) {
  constexpr int n = Strip<TX, TY, TZ>::per_thread;
  T values[n];
  const T* src = field + strip.global0;
#pragma unroll
  for (int k = 0; k < n; ++k, src += strip.global_step) values[k] = Whole || strip.inside(k) ? *src : T(0);
  uint32_t exacts = 0;
  symbols = 0;
#pragma unroll
  for (int k = 0; k < n; ++k) {
    q[k] = 0;
    uint32_t symbol = 0;
    if (Whole || strip.inside(k)) {
      if constexpr (Fill) symbol = missing.symbol_of(values[k]);
      if (!symbol) exacts += prequantize(values[k], c, &q[k]);
    }
    if constexpr (Fill) symbols |= symbol << (4 * k);
  }
  return exacts;
}

// Pre-quantizes the tile into the bordered shared tile; returns this thread's exact count.
template <bool Whole = false, bool Fill = false, typename T, int TX, int TY, int TZ>
__device__ uint32_t load_tile(const T* field, const Grid& g, const TilePlace<TX, TY, TZ>& p, const QuantConstants& c,
                              const MissingValues& missing, int32_t* halo, uint32_t& symbols) {
  const Strip<TX, TY, TZ> strip(g, p);
  int32_t q[Strip<TX, TY, TZ>::per_thread];
  const uint32_t exacts = prequantize_strip<Whole, Fill>(field, strip, c, missing, q, symbols);
#pragma unroll
  for (int k = 0; k < strip.per_thread; ++k) halo[strip.cell(k)] = q[k];
  return exacts;
}

// Span "chunk": the bordered tile's low border holds the pre-quantized values of the
// neighbouring tiles' points (0 outside the field), so the stencil reads across tile borders
// as the CPU's whole-chunk prediction does. The whole block calls it; the caller's barrier
// follows.
template <typename T, int TX, int TY, int TZ>
__device__ void load_border(const T* field, const Grid& g, const TilePlace<TX, TY, TZ>& p, const QuantConstants& c,
                            int32_t* halo) {
  using H = Halo<TX, TY, TZ>;
  for (int cell = threadIdx.x; cell < H::size; cell += block_threads) {
    const int hx = cell % H::px, hy = (cell / H::px) % H::py, hz = cell / (H::px * H::py);
    const bool border = hx == 0 || (TY > 1 && hy == 0) || (TZ > 1 && hz == 0);
    if (!border) continue;
    // The cell's point: one below the tile's first on each axis whose border it lies on.
    const int64_t x = int64_t(p.x0) + hx - 1, y = int64_t(p.y0) + hy - (TY > 1), z = int64_t(p.z0) + hz - (TZ > 1);
    int32_t q = 0;
    if (x >= 0 && y >= 0 && z >= 0 && uint64_t(x) < g.nx && uint64_t(y) < g.ny && uint64_t(z) < g.nz)
      prequantize(field[uint64_t(x) + g.nx * (uint64_t(y) + g.ny * uint64_t(z))], c, &q);
    halo[cell] = q;
  }
}

// 3D deltas of one thread's z-column without the bordered tile: the Lorenzo operator is
// (1 - Z)(1 - X)(1 - Y) q, so z differences in registers, x differences from the lane below
// (a shuffle), y differences from the warp below through `plane` (one value per point).
// Only the stencil's `axes` take part (uniform across the block).
template <int TX, int TY, int TZ>
__device__ void column_deltas(int32_t (&q)[Strip<TX, TY, TZ>::per_thread], const Strip<TX, TY, TZ>& strip,
                              int32_t* plane, uint32_t axes) {
  constexpr int n = Strip<TX, TY, TZ>::per_thread;
  const uint32_t lane = threadIdx.x % 32;
  if (axes & axis_z) {
#pragma unroll
    for (int k = n - 1; k > 0; --k) q[k] = wrapping_sub(q[k], q[k - 1]);
  }
  const bool along_x = axes & axis_x;
#pragma unroll
  for (int k = 0; k < n; ++k) {
    const int32_t below = __shfl_up_sync(0xffffffffu, q[k], 1);
    q[k] = wrapping_sub(q[k], lane == 0 || !along_x ? 0 : below);
    plane[strip.local(k)] = q[k];
  }
  __syncthreads();
  if (axes & axis_y) {
#pragma unroll
    for (int k = 0; k < n; ++k) q[k] = wrapping_sub(q[k], strip.ly == 0 ? 0 : plane[strip.local(k) - TX]);
  }
}

// One step of predict_missing: the points lx = 32 part + lane of row (ly, lz) of a tile, whose
// missing points take their own Lorenzo prediction as q, and whose points with data keep theirs.
// Where x is one of the stencil's `axes` the prediction is q(x - 1) + P(x) - P(x - 1), P being
// rows_part (the rows and planes before, final), so r = q - P is the same at a missing point as
// at the point before it: a missing point's q is its own P plus r at the nearest point with data
// to its left (`carry`, the r of the point before lane 0, where there is none in this step: 0 at
// a row's start, the tile's zero border). One ballot and one shuffle; the next step's carry is
// returned. (A segmented scan of the prediction's differences along the run, five levels of two
// shuffles, gave the same sums.) Where x is not an axis, a missing point's q is its prediction,
// rows_before itself. A warp calls it.
template <int TX, int TY, int TZ>
__device__ uint32_t predict_step(int32_t* h, const uint8_t* symbols, const TilePlace<TX, TY, TZ>& p, uint32_t part,
                                 uint32_t ly, uint32_t lz, uint32_t carry, uint32_t axes) {
  using H = Halo<TX, TY, TZ>;
  const uint32_t lane = threadIdx.x % 32, lx = part * 32 + lane;
  const int c = H::at(lx, ly, lz);
  const bool missing = p.inside(lx, ly, lz) && symbols[lx + TX * (ly + TY * lz)] != 0;
  if (!(axes & axis_x)) {  // uniform across the warp
    if (missing) h[c] = int32_t(H::rows_before(h, c, axes));
    return 0;
  }
  const uint32_t own = H::rows_part(h, c, axes), r = uint32_t(h[c]) - own;  // r: a point with data's
  const uint32_t left = __ballot_sync(0xffffffffu, !missing) & ((1u << lane) - 1);
  const uint32_t from_left = __shfl_sync(0xffffffffu, r, left ? 31 - __clz(left) : 0);
  const uint32_t kept = missing ? (left ? from_left : carry) : r;
  if (missing) h[c] = int32_t(own + kept);
  return __shfl_sync(0xffffffffu, kept, 31);
}

// The missing points of a tile that has points of both kinds take their own Lorenzo
// prediction as q (mask.hh), in raster order so that each sees its neighbours final. A row
// needs the rows before it in y and z final: in 3D the rows of one anti-diagonal y + z do not
// need each other, so warp y takes row (y, t - y) at step t (15 steps for 64 rows, each a
// barrier); in 2D and 1D warp 0 walks the rows (1D tiles are one row of 2048 points, 64 steps
// of 32 lanes, each carrying the last q of the step before). `symbols` by key (shared
// memory); the halo holds the tile's q. The whole block calls it.
template <int TX, int TY, int TZ>
__device__ void predict_missing(int32_t* h, const uint8_t* symbols, const TilePlace<TX, TY, TZ>& p, uint32_t axes) {
  constexpr uint32_t steps_per_row = TX / 32;
  static_assert(TX % 32 == 0, "rows of whole warps");
  if constexpr (TZ > 1) {
    static_assert(block_threads / 32 >= TY, "a warp for each row of a plane");
    const uint32_t y = threadIdx.x / 32;
    for (uint32_t t = 0; t < TY + TZ - 1; ++t) {
      if (y < TY && t >= y && t - y < TZ) {  // uniform across the warp
        uint32_t carry = 0;
        for (uint32_t part = 0; part < steps_per_row; ++part) {
          carry = predict_step(h, symbols, p, part, y, t - y, carry, axes);
          __syncwarp();
        }
      }
      __syncthreads();
    }
  } else {
    if (threadIdx.x < 32) {
      for (uint32_t row = 0; row < TY * TZ; ++row) {
        uint32_t carry = 0;
        for (uint32_t part = 0; part < steps_per_row; ++part) {
          carry = predict_step(h, symbols, p, part, row % TY, row / TY, carry, axes);
          __syncwarp();  // the next step reads this one's q
        }
      }
    }
    __syncthreads();
  }
}

// The symbols of a tile, as a word: bit s where a key holds symbol s (0 at keys outside the
// field), `holds_data` where a point inside holds data. Warps OR theirs into `warp_words`
// (shared, one a warp); the whole block calls it, and it ends at a barrier.
constexpr uint32_t holds_data = 1u << 16;
template <bool Whole, int TX, int TY, int TZ>
__device__ uint32_t tile_presence(const Strip<TX, TY, TZ>& strip, uint32_t symbols, uint32_t* warp_words) {
  uint32_t mine = 0;
#pragma unroll
  for (int k = 0; k < strip.per_thread; ++k) {
    const uint32_t symbol = symbols >> (4 * k) & 0xfu;
    mine |= 1u << symbol | ((Whole || strip.inside(k)) && symbol == 0 ? holds_data : 0u);
  }
  mine = __reduce_or_sync(0xffffffffu, mine);
  if (threadIdx.x % 32 == 0) warp_words[threadIdx.x / 32] = mine;
  __syncthreads();
  uint32_t all = 0;
#pragma unroll
  for (int w = 0; w < block_threads / 32; ++w) all |= warp_words[w];
  return all;
}
__device__ bool all_data(uint32_t presence) { return presence == (holds_data | 1u); }
// Every key one fill value's symbol (so every key lies inside the field): which, or 0.
__device__ uint32_t only_missing_symbol(uint32_t presence) {
  const uint32_t symbols = presence & 0xffffu;
  return (symbols & 1u) == 0 && (symbols & (symbols - 1)) == 0 ? __ffs(symbols) - 1 : 0u;
}
__device__ bool mixed(uint32_t presence) { return (presence & holds_data) && (presence & 0xfffeu); }

// Where the data bits (DataBits) of a row's 32 points from (x, y, z), x a multiple of 32, lie:
// `Word` const for a kernel that reads them, not for one that writes them.
template <typename Word>
struct BitsAt {
  Word* words;
  DataBits layout;
  __device__ uint64_t word(const Grid& g, uint64_t x, uint64_t y, uint64_t z) const {
    return layout.word(x, y + g.ny * z);
  }
};
using BitsTarget = BitsAt<uint32_t>;

// A masked encode's data bits (made beside the value range, or by the encoder) and where the
// codes of each word's points with data go: the codes of the points with data in field order,
// word w's first at first_code[w] (a scan of the words' counts).
struct BitsSource : BitsAt<const uint32_t> {
  const uint64_t* first_code;
};

// What a tile's data bits say of it (tile_class): every point inside holds data, the tile
// lies inside the field and every point is missing, or anything else (both kinds, or a tile
// across the field's edge with missing points).
enum TileClass : uint8_t { all_data_tile = 0, all_missing_tile = 1, other_tile = 2 };

// A tile's class, by a whole warp: its words (TX / 32 a row, TY TZ rows), each against the
// points of its row inside the field.
template <int TX, int TY, int TZ>
__device__ TileClass tile_class(const Grid& g, const BitsAt<const uint32_t>& bits, const TilePlace<TX, TY, TZ>& p) {
  constexpr uint32_t row_words = TX / 32, words = row_words * TY * TZ;
  bool data = false, missing = false;
  for (uint32_t j = threadIdx.x % 32; j < words; j += 32) {
    const uint32_t wx = j % row_words, row = j / row_words, ly = row % TY, lz = row / TY;
    const uint64_t x = p.x0 + 32 * wx;
    if (ly >= p.ey || lz >= p.ez || x >= g.nx) continue;  // no point of the field
    const uint32_t points = g.nx - x < 32 ? uint32_t(g.nx - x) : 32u;
    const uint32_t expected = points == 32 ? 0xffffffffu : (1u << points) - 1;
    const uint32_t word = bits.words[bits.word(g, x, p.y0 + ly, p.z0 + lz)];
    data |= word != 0, missing |= word != expected;
  }
  data = __any_sync(0xffffffffu, data), missing = __any_sync(0xffffffffu, missing);
  return !missing ? all_data_tile : !data && p.whole() ? all_missing_tile : other_tile;
}

// The classes of a run of tiles [first, end) into `classes` (shared, a byte a tile), a warp a
// tile, where a kernel of its own took 8-12 us a chunk of a 100 M field (two launches' worth of
// latency against a few loads a tile here, whose words the tile's encode reads again from L1).
// The whole block calls it; it ends at a barrier.
template <int TX, int TY, int TZ>
__device__ void run_classes(const Grid& g, const BitsAt<const uint32_t>& bits, uint32_t first, uint32_t end,
                            uint8_t* classes) {
  for (uint32_t t = first + threadIdx.x / 32; t < end; t += block_threads / 32) {
    const TileClass c = tile_class<TX, TY, TZ>(g, bits, TilePlace<TX, TY, TZ>(g, t));
    if (threadIdx.x % 32 == 0) classes[t - first] = c;
  }
  __syncthreads();
}

// Lane k < per_thread: the data bits of the warp's points at k (one word: a row's 32 points
// from a multiple of 32) and the word's first code, loaded beside the tile's values and
// shuffled to every lane at the codes' stores (a load a point there waited for the stores
// before it, which may alias it: 20 % slower masked encode on an H100).
struct WordPlace {
  uint32_t bits = 0;
  uint64_t first_code = 0;
};
template <bool Whole, int TX, int TY, int TZ>
__device__ WordPlace word_place(const Grid& g, const Strip<TX, TY, TZ>& strip, const TilePlace<TX, TY, TZ>& p,
                                const BitsSource& bits, bool dense) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t inside = 0;  // lane k: any lane's point at k inside the field (a row outside has no word)
#pragma unroll
  for (int k = 0; k < strip.per_thread; ++k) {
    const uint32_t any = Whole ? 1u : __ballot_sync(0xffffffffu, strip.inside(k));
    if (lane == uint32_t(k)) inside = any;
  }
  WordPlace mine;
  if (inside) {  // lanes below per_thread only
    const uint64_t w = bits.word(g, p.x0 + strip.x(lane), p.y0 + strip.y(lane), p.z0 + strip.z(lane));
    if (!dense) mine.bits = bits.words[w];  // a tile all data: every word its points' (unused)
    mine.first_code = bits.first_code[w];
  }
  return mine;
}

// With fill values, once the tile's q are in the halo: the symbols by key into
// `tile_symbols`, and in a tile with both kinds of point (`presence`, tile_presence) the
// missing points' q (predict_missing). The whole block calls it; it ends at a barrier, after
// which the halo's q are final.
template <int TX, int TY, int TZ>
__device__ void settle_missing(const Strip<TX, TY, TZ>& strip, const TilePlace<TX, TY, TZ>& p, uint32_t symbols,
                               uint32_t presence, int32_t* q, uint8_t* tile_symbols, uint32_t axes) {
#pragma unroll
  for (int k = 0; k < strip.per_thread; ++k) tile_symbols[strip.local(k)] = uint8_t(symbols >> (4 * k) & 0xfu);
  __syncthreads();
  if (mixed(presence)) predict_missing<TX, TY, TZ>(q, tile_symbols, p, axes);  // uniform across the block
}

// What a Fill encode keeps of a tile besides its codes: the points' data bits (read), the symbols'
// presence (warp words) and the symbols by key (for the mask runs of a tile that is not all one
// symbol), and `uniform`, the symbol of a tile all of one (no_uniform_symbol otherwise).
struct FillTile {
  BitsSource bits;
  uint32_t* warp_words;
  uint8_t* symbols;
  int32_t* plane;  // a 3D tile all data: column_deltas' buffer (shares memory with `symbols`)
  uint32_t uniform;
  uint32_t tile_class;  // TileClass
};

// One tile's codes; returns this thread's escape and exact counts, packed. A 3D tile keeps
// z and x in registers (column_deltas); 1D and 2D tiles, and with `Fill` every tile with
// missing points and data, go through the bordered shared tile. With `Fill`, a tile all
// missing writes no codes (and needs no q), a tile all data needs no symbols (in 3D it takes
// the register path, with a plane buffer of its own so that the bordered tile's zero border
// stays for the next tile of both kinds), and the others keep their symbols by key in
// `fill.symbols` (0 outside the field) and give their missing points q (settle_missing).
// `Across` (span "chunk", never with `Fill`): the bordered tile's border from the neighbours.
template <bool Whole, bool Fill, bool Across, typename T, int TX, int TY, int TZ>
__device__ __forceinline__ uint32_t encode_tile(const T* field, const Grid& g, const TilePlace<TX, TY, TZ>& p,
                                                const QuantConstants& c, const MissingValues& missing, uint16_t* codes,
                                                int32_t* q, FillTile& fill, uint32_t axes) {
  using H = Halo<TX, TY, TZ>;
  const Strip<TX, TY, TZ> strip(g, p);
  int32_t delta[Strip<TX, TY, TZ>::per_thread];
  uint32_t exacts, symbols;
  WordPlace place;  // with `Fill`
  if constexpr (Fill) {
    // (A tile all missing with one fill value never comes here: see encode_kernel.) A tile all
    // data needs no presence; in the others the last reads of the previous tile's halo and
    // symbols are behind tile_presence's barrier (a tile ends at one anyway).
    // A tile all data (its data bits say so) needs no symbol compare: its points are coded as
    // without fill values, and each code's rank in its word is its lane.
    const bool dense = fill.tile_class == all_data_tile;  // uniform across the block
    place = word_place<Whole>(g, strip, p, fill.bits, dense);
    exacts = dense ? prequantize_strip<Whole, false>(field, strip, c, missing, delta, symbols)
                   : prequantize_strip<Whole, true>(field, strip, c, missing, delta, symbols);
    const uint32_t presence =
        fill.tile_class == all_data_tile ? holds_data | 1u : tile_presence<Whole>(strip, symbols, fill.warp_words);
    if (const uint32_t symbol = only_missing_symbol(presence)) {
      fill.uniform = symbol;
      return 0;
    }
    bool in_registers = false;
    if constexpr (TZ > 1) {
      if (all_data(presence)) {  // sea, 3D: as without fill values
        fill.uniform = 0;
        column_deltas(delta, strip, fill.plane, axes);
        in_registers = true;
      }
    }
    if (!in_registers) {
#pragma unroll
      for (int k = 0; k < strip.per_thread; ++k) q[strip.cell(k)] = delta[k];
      if (all_data(presence)) {  // sea: all symbol 0
        fill.uniform = 0;
        __syncthreads();
      } else {
        fill.uniform = no_uniform_symbol;
        settle_missing(strip, p, symbols, presence, q, fill.symbols, axes);
      }
#pragma unroll
      for (int k = 0; k < strip.per_thread; ++k) delta[k] = H::delta(q, strip.cell(k), axes);
    }
  } else if constexpr (Across) {
    exacts = load_tile<Whole, Fill>(field, g, p, c, missing, q, symbols);
    load_border(field, g, p, c, q);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < strip.per_thread; ++k) delta[k] = H::delta(q, strip.cell(k), axes);
  } else if constexpr (TZ > 1) {
    exacts = prequantize_strip<Whole, Fill>(field, strip, c, missing, delta, symbols);
    column_deltas(delta, strip, q, axes);
  } else {
    exacts = load_tile<Whole, Fill>(field, g, p, c, missing, q, symbols);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < strip.per_thread; ++k) delta[k] = H::delta(q, strip.cell(k), axes);
  }
  uint32_t escapes = 0;
  if constexpr (Fill) {  // the codes of the points with data, each at its word's first plus its rank there
    const uint32_t lane = threadIdx.x % 32, below = (1u << lane) - 1;
    if (fill.tile_class == all_data_tile) {  // every point inside holds data: its rank is its lane
#pragma unroll
      for (int k = 0; k < strip.per_thread; ++k) {
        const uint64_t first = __shfl_sync(0xffffffffu, place.first_code, k);
        if (!Whole && !strip.inside(k)) continue;
        uint16_t code;
        escapes += !encode_delta(delta[k], &code);
        codes[first + lane] = code;
      }
    } else {
#pragma unroll
      for (int k = 0; k < strip.per_thread; ++k) {
        const uint32_t word = __shfl_sync(0xffffffffu, place.bits, k);
        const uint64_t first = __shfl_sync(0xffffffffu, place.first_code, k);
        if ((!Whole && !strip.inside(k)) || (symbols >> (4 * k) & 0xfu)) continue;  // outside, or missing
        uint16_t code;
        escapes += !encode_delta(delta[k], &code);
        codes[first + __popc(word & below)] = code;
      }
    }
  } else {
    const CodeRun run = code_run(g, p, strip);
    uint16_t* dst = codes + run.first;
#pragma unroll
    for (int k = 0; k < strip.per_thread; ++k, dst += run.step) {
      if (!Whole && !strip.inside(k)) continue;
      uint16_t code;
      escapes += !encode_delta(delta[k], &code);
      *dst = code;
    }
  }
  return pack_counts(escapes, exacts);
}

// The mask runs of a tile all of one symbol, known without a scan (the same runs the general
// path finds). Thread 0 calls it.
template <int TX, int TY, int TZ>
__device__ void write_uniform_runs(uint32_t symbol, uint16_t* slot, uint32_t* runs) {
  constexpr uint32_t volume = TX * TY * TZ, slice = mask_slice_keys(TX, TY, TZ);
  uint32_t total = 1;
  if (symbol == 0) {
    slot[0] = mask_run(volume, 0);
  } else if (slice) {
    slot[0] = mask_run(slice, symbol + 1);
    slot[1] = mask_run(volume - slice, 0);
    total = 2;
  } else {
    slot[0] = mask_run(volume, symbol + 1);
  }
  *runs = total;
}

// The tile's mask runs from its symbols in shared memory (complete since settle_missing):
// a thread takes `per` consecutive keys, a block scan numbers the runs' starts, and the runs
// go to the tile's scratch slot, their count to `runs`. The whole block calls it.
template <int TX, int TY, int TZ, typename Scan>
__device__ void write_mask_runs(const uint8_t* tile_symbols, uint16_t* run_starts, typename Scan::TempStorage& storage,
                                uint16_t* slot, uint32_t* runs) {
  constexpr uint32_t volume = TX * TY * TZ, per = volume / block_threads, slice = mask_slice_keys(TX, TY, TZ);
  const uint32_t first = threadIdx.x * per;
  auto difference = [&](uint32_t l) {
    return mask_difference(tile_symbols[l], slice && l >= slice ? tile_symbols[l - slice] : 0u);
  };
  // Which of this thread's keys start a run, as bits (each key's difference computed once).
  static_assert(per <= 32, "a thread's keys fit a word of start bits");
  uint32_t start_bits = 0, previous = first == 0 ? 0u : difference(first - 1);
#pragma unroll
  for (uint32_t i = 0; i < per; ++i) {
    const uint32_t l = first + i, current = difference(l);
    start_bits |= uint32_t(l == 0 || current != previous) << i;
    previous = current;
  }
  uint32_t before, total;
  Scan(storage).ExclusiveSum(uint32_t(__popc(start_bits)), before, total);
#pragma unroll
  for (uint32_t i = 0; i < per; ++i)
    if (start_bits >> i & 1u) run_starts[before++] = uint16_t(first + i);
  __syncthreads();
  for (uint32_t r = threadIdx.x; r < total; r += block_threads) {
    const uint32_t begin = run_starts[r], end = r + 1 < total ? run_starts[r + 1] : volume;
    slot[r] = mask_run(end - begin, difference(begin));
  }
  if (threadIdx.x == 0) *runs = total;
  __syncthreads();  // the next tile writes the symbols and starts again
}

// Where a Fill encode puts its mask runs: a slot of `volume` runs per tile, and the counts.
struct MaskScratch {
  uint16_t* slots;
  uint32_t* tile_runs;
  BitsSource bits;
  uint32_t* claim;  // the launch's claims (for_each_claimed_run), zeroed before it
};

// totals: escapes, exacts. Five blocks an SM (at most 48 registers, no spills):
// the kernel waits on memory, and the 3D register path's 66 registers left three, 37 % of the
// threads an SM holds (100 M values, rel 1e-3, H100: 451 -> 499-506 GB/s compress).
template <typename T, int TX, int TY, int TZ, bool Fill, bool Across = false>
__global__ void __launch_bounds__(block_threads, 5) encode_kernel(const T* __restrict__ field, Grid g,
                                                               const QuantConstants* __restrict__ constants,
                                                               MissingValues missing,
                                                               uint16_t* __restrict__ codes,
                                                               uint32_t* __restrict__ tile_counts,
                                                               unsigned long long* __restrict__ totals,
                                                               MaskScratch mask, uint32_t axes) {
  using H = Halo<TX, TY, TZ>;
  constexpr uint32_t volume = TX * TY * TZ;
  using Scan = cub::BlockScan<uint32_t, block_threads>;
  // A tile of both kinds uses the symbols, the run starts and the scan; a 3D tile all data the
  // plane alone (each kind's last reads come before the barrier a tile ends with).
  struct MaskShared {
    union {
      struct {
        uint8_t symbols[volume];
        uint16_t run_starts[volume];
        typename Scan::TempStorage scan;
      } mixed;
      int32_t plane[TZ > 1 ? volume : 1];  // 1D and 2D tiles never take the register path
    };
    uint32_t warp_words[block_threads / 32];
  };
  __shared__ int32_t q[H::size];
  __shared__ uint32_t warp_counts[block_threads / 32];
  __shared__ std::conditional_t<Fill, MaskShared, char> mask_shared;
  __shared__ uint32_t claim_slot;
  const QuantConstants c = *constants;  // resolved on the device, or written there from the host
  H::clear(q);
  __shared__ uint8_t classes[Fill ? claimed_run : 1];  // Fill: the classes of the run's tiles
  static_assert(tail_run <= claimed_run, "a run's classes fit");
  auto code_tile = [&](const TilePlace<TX, TY, TZ>& p, uint32_t run_first, uint32_t run_end) {
    FillTile fill{mask.bits, nullptr, nullptr, nullptr, no_uniform_symbol, all_data_tile};
    if constexpr (Fill) {
      fill.warp_words = mask_shared.warp_words, fill.symbols = mask_shared.mixed.symbols, fill.plane = mask_shared.plane;
      // Rewritten only after the next claim's first barrier, which every thread reaches after
      // its last read of this run's classes.
      if (p.index == run_first) run_classes<TX, TY, TZ>(g, mask.bits, run_first, run_end, classes);
      fill.tile_class = classes[p.index - run_first];  // uniform across the block
      // A tile all of the one fill value (land): its mask runs, and no code, outlier or barrier.
      if (missing.count == 1 && fill.tile_class == all_missing_tile) {
        if (threadIdx.x == 0) {
          write_uniform_runs<TX, TY, TZ>(1, mask.slots + uint64_t(p.index - g.first_tile) * volume,
                                         mask.tile_runs + p.index);
          tile_counts[p.index] = 0;
        }
        return;
      }
    }
    // Interior tiles (most of a large field) skip every per-point bounds test.
    const uint32_t counts = p.whole() ? encode_tile<true, Fill, Across>(field, g, p, c, missing, codes, q, fill, axes)
                                      : encode_tile<false, Fill, Across>(field, g, p, c, missing, codes, q, fill, axes);
    if constexpr (Fill) {
      uint16_t* slot = mask.slots + uint64_t(p.index - g.first_tile) * volume;
      if (fill.uniform != no_uniform_symbol) {  // uniform across the block
        if (threadIdx.x == 0) write_uniform_runs<TX, TY, TZ>(fill.uniform, slot, mask.tile_runs + p.index);
      } else {
        write_mask_runs<TX, TY, TZ, Scan>(mask_shared.mixed.symbols, mask_shared.mixed.run_starts, mask_shared.mixed.scan, slot,
                                          mask.tile_runs + p.index);
      }
    }
    // Both counts in one sum (see pack_counts); warp sums meet in shared memory at the
    // barrier the tile ends with anyway (the next tile's writes to `q` wait for it).
    const uint32_t warp_sum = __reduce_add_sync(0xffffffffu, counts);
    if (threadIdx.x % 32 == 0) warp_counts[threadIdx.x / 32] = warp_sum;
    __syncthreads();
    if (threadIdx.x < 32) {
      const uint32_t sum = __reduce_add_sync(0xffffffffu, threadIdx.x < block_threads / 32 ? warp_counts[threadIdx.x] : 0u);
      if (threadIdx.x == 0) {
        tile_counts[p.index] = sum;
        // Field totals (integer sums, any order): the host reads these, and scans the tiles'
        // counts into offsets only when there is an outlier to place.
        if (sum) {
          const OutlierCounts both = unpack_counts(sum);
          atomicAdd(totals, static_cast<unsigned long long>(both.escapes));
          atomicAdd(totals + 1, static_cast<unsigned long long>(both.exacts));
        }
      }
    }
  };
  if constexpr (Fill) for_each_claimed_run<TX, TY, TZ>(g, mask.claim, claim_slot, code_tile);
  // Equal contiguous shares: strided as the decode's, p100 compressed 4-8 % slower (H200).
  else for_each_block_tile<TX, TY, TZ>(g, [&](const TilePlace<TX, TY, TZ>& p) { code_tile(p, 0, 0); });
}

template <typename T>
struct OutlierTargets {
  uint64_t* escape_keys;
  int32_t* escape_deltas;
  uint64_t* exact_keys;
  T* exact_values;
};

template <typename T, int TX, int TY, int TZ, bool Fill, bool Across = false>
__global__ void __launch_bounds__(block_threads) place_outliers_kernel(
    const T* __restrict__ field, Grid g, const QuantConstants* __restrict__ constants, MissingValues missing,
    const uint32_t* __restrict__ tile_counts, const OutlierCounts* __restrict__ offsets, OutlierTargets<T> out,
    uint32_t axes) {
  const QuantConstants c = *constants;
  using H = Halo<TX, TY, TZ>;
  __shared__ int32_t q[H::size];
  using Scan = cub::BlockScan<uint32_t, block_threads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ uint8_t tile_symbols[Fill ? TX * TY * TZ : 1];
  __shared__ uint32_t warp_words[block_threads / 32];
  H::clear(q);
  for_each_block_tile<TX, TY, TZ>(g, [&](const TilePlace<TX, TY, TZ>& p) {
    if (tile_counts[p.index] == 0) return;  // uniform across the block
    uint32_t symbols;
    load_tile<false, Fill>(field, g, p, c, missing, q, symbols);
    if constexpr (Across) load_border(field, g, p, c, q);
    if constexpr (Fill) {  // the missing points' q as the encode gave them
      const Strip<TX, TY, TZ> strip(g, p);
      settle_missing(strip, p, symbols, tile_presence<false>(strip, symbols, warp_words), q, tile_symbols, axes);
    }
    __syncthreads();
    uint64_t next_escape = offsets[p.index].escapes, next_exact = offsets[p.index].exacts;
    for (uint32_t base = 0; base < TX * TY * TZ; base += block_threads) {
      const uint32_t l = base + threadIdx.x;
      uint32_t lx, ly, lz;
      split<TX, TY>(l, lx, ly, lz);
      bool is_exact = false, is_escape = false;
      int32_t delta = 0, unused;
      T value{};
      if (p.inside(lx, ly, lz)) {
        value = field[p.global(g, lx, ly, lz)];
        const bool is_missing = Fill && missing.symbol_of(value) != 0;
        is_exact = !is_missing && prequantize(value, c, &unused);
        delta = H::delta(q, H::at(lx, ly, lz), axes);
        uint16_t code;
        is_escape = !encode_delta(delta, &code);
      }
      uint32_t before, total;
      Scan(scan_storage).ExclusiveSum(uint32_t(is_exact) | (uint32_t(is_escape) << 16), before, total);
      if (is_exact) {
        const uint64_t at = next_exact + (before & 0xffff);
        out.exact_keys[at] = p.key0 + l;
        out.exact_values[at] = value;
      }
      if (is_escape) {
        const uint64_t at = next_escape + (before >> 16);
        out.escape_keys[at] = p.key0 + l;
        out.escape_deltas[at] = delta;
      }
      next_exact += total & 0xffff;
      next_escape += total >> 16;
      __syncthreads();
    }
  });
}

// First index in keys[0, count) not below `key`.
__device__ uint64_t lower_bound(const uint64_t* keys, uint64_t count, uint64_t key) {
  uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// A decode's outlier entries (OutlierSource::entries).
struct Outliers {
  const uint64_t* escape_keys;
  const int32_t* escape_deltas;
  uint64_t escapes;
  const uint64_t* exact_keys;
  const uint8_t* exact_values;
  uint64_t exacts;
  // Where `key` is among the escapes [begin, end) (one tile's), its delta into `delta`.
  __device__ void patch_escape(uint64_t begin, uint64_t end, uint64_t key, uint32_t& delta) const {
    const uint64_t e = begin + lower_bound(escape_keys + begin, end - begin, key);
    if (e < end && escape_keys[e] == key) delta = uint32_t(escape_deltas[e]);
  }
};

// Where a decode's kernels find the outliers (a kernel parameter): the stream, and the counts
// and each tile's first entries that check_outliers_kernel and outlier_starts_kernel found in
// it on the device, so that the host never waits for them. Whether to look for outliers at all
// is the host's to say (`present`: a stream longer than its counts); the counts, needed only
// for the entries' addresses, are loaded where a tile has some (held in registers for a whole
// kernel, or loaded before each tile, they cost the 3D decode a block an SM or its codes'
// loads ~10 % of its time at 100 M values).
struct OutlierSource {
  const uint8_t* stream;
  const OutlierCounts* checked;  // the stream's counts, none where they fail its checks
  const uint64_t* escape_start;  // [tiles + 1], with `present`: tile t's escapes are [escape_start[t], escape_start[t + 1])
  const uint64_t* exact_start;   // (empty ranges everywhere where the stream fails a check)
  uint32_t value_bytes;
  bool present;
  uint32_t* keys_failed;  // this decoder's own verdict on its keys (check_outliers_kernel's)

  __device__ OutlierCounts counts() const { return *checked; }
  // The entries, for a kernel's rare tiles with outliers: a call, so that the loads and
  // addresses live only there (inlined, they held registers across the 3D decode's tile).
  __device__ __noinline__ Outliers loaded_entries() const { return entries(counts()); }
  __device__ Outliers entries(const OutlierCounts& n) const {
    Outliers o;
    o.escape_keys = reinterpret_cast<const uint64_t*>(stream) + 2;
    o.escapes = n.escapes;
    o.exact_keys = o.escape_keys + n.escapes;
    o.exacts = n.exacts;
    o.exact_values = reinterpret_cast<const uint8_t*>(o.exact_keys + n.exacts);
    o.escape_deltas = reinterpret_cast<const int32_t*>(o.exact_values + value_bytes * n.exacts);
    return o;
  }
};


// Inclusive prefix sums along y of the tile in shared memory: a thread per (x, z) column.
// (Writing each point out as its sum is made, as the 2D tile does, decoded p100 5-10 % slower
// on an H200: a warp then writes a plane's rows while the warps beside it write other planes,
// where the strip's stores below have the block's warps write neighbouring rows of one plane.)
template <int TX, int TY, int TZ>
__device__ void prefix_along_y(int32_t* q) {
  for (uint32_t c = threadIdx.x; c < TX * TZ; c += block_threads) {
    const uint32_t lx = c % TX, lz = c / TX;
    uint32_t running = 0;
    for (uint32_t ly = 0; ly < TY; ++ly) {
      int32_t& cell = q[lx + TX * (ly + TY * lz)];
      running += uint32_t(cell);
      cell = int32_t(running);
    }
  }
  __syncthreads();
}

// The 2D tile's last step: inclusive prefix sums along y of the tile in shared memory (rows of
// TX, row-major), each point reconstructed and written as its sum is made, by every thread: a
// thread sums a segment of TY / (block_threads / TX) consecutive rows of one column, adds the
// totals of the column's segments above it (through shared memory) and writes its points (a
// warp a segment: rows of 32 values at once). In place of a thread a column walking all TY rows
// (7 of 8 warps idle through a 32-step chain of shared-memory round trips in every 2D tile),
// and of the sums stored back and read again. The caller's barrier orders these writes before
// the exact values (and every read of `totals` before the next tile's writes).
template <bool Whole, typename T, int TX, int TY>
__device__ void reconstruct_along_y_2d(const int32_t* q, const Grid& g, const TilePlace<TX, TY, 1>& p, double step,
                                       T* field) {
  constexpr uint32_t segments = block_threads / TX, rows = TY / segments;
  static_assert(block_threads % TX == 0 && TY % segments == 0, "a 2D tile's rows split evenly into segments");
  __shared__ uint32_t totals[segments * TX];
  const uint32_t lx = threadIdx.x % TX, segment = threadIdx.x / TX, ly0 = segment * rows;
  const int32_t* column = q + lx + TX * ly0;
  uint32_t v[rows], running = 0;
#pragma unroll
  for (uint32_t i = 0; i < rows; ++i) v[i] = running += uint32_t(column[TX * i]);
  totals[threadIdx.x] = running;
  __syncthreads();
  uint32_t carry = 0;
  for (uint32_t above = 0; above < segment; ++above) carry += totals[above * TX + lx];
  const bool column_inside = Whole || lx < p.ex;
  T* dst = field + (p.global(g, lx, ly0, 0) - g.field_first);
#pragma unroll
  for (uint32_t i = 0; i < rows; ++i, dst += g.nx)
    if (Whole || (column_inside && ly0 + i < p.ey)) *dst = reconstruct<T>(int32_t(v[i] + carry), step);
}

// Inclusive prefix sums of a 1D tile in shared memory (2D and 3D tiles keep x in registers:
// see decode_kernel). Ends with a barrier.
template <int TX>
__device__ void prefix_sums_1d(int32_t* q) {
  using Scan = cub::BlockScan<uint32_t, block_threads>;
  __shared__ typename Scan::TempStorage scan_storage;
  constexpr int per_thread = TX / block_threads;
  static_assert(TX % block_threads == 0, "1D tiles are whole multiples of the block");
  uint32_t v[per_thread], sum = 0;
#pragma unroll
  for (int i = 0; i < per_thread; ++i) v[i] = (sum += uint32_t(q[threadIdx.x * per_thread + i]));
  uint32_t before;
  Scan(scan_storage).ExclusiveSum(sum, before);
#pragma unroll
  for (int i = 0; i < per_thread; ++i) q[threadIdx.x * per_thread + i] = int32_t(v[i] + before);
  __syncthreads();
}

// The tile's deltas into shared memory, escapes patched in (keys checked: outlier_starts_kernel).
template <int TX, int TY, int TZ>
__device__ void load_deltas(const uint16_t* codes, CodeRun run, const Strip<TX, TY, TZ>& strip, const Outliers& o,
                            uint64_t escape_begin, uint64_t escape_end, uint64_t key0, int32_t* q) {
  const uint16_t* src = codes + run.first;
#pragma unroll
  for (int k = 0; k < strip.per_thread; ++k, src += run.step)
    q[strip.local(k)] = strip.inside(k) ? decode_delta(*src) : 0;
  __syncthreads();
  for (uint64_t i = escape_begin + threadIdx.x; i < escape_end; i += block_threads)
    q[o.escape_keys[i] - key0] = o.escape_deltas[i];
  __syncthreads();
}

// The mask runs of a decode (runs null without fill values): tile t's are
// [tile_first[s], tile_first[s + 1]) with s = tile_source[t] (the tile a repeat run takes its
// runs from, mask.hh), or s = t when the mask has no repeat run (tile_source null).
struct MaskSource {
  const uint16_t* runs;
  const uint64_t* tile_first;
  const uint64_t* tile_source;
  MissingValues missing;
  __device__ uint64_t first(uint32_t tile) const { return tile_first[tile_source ? tile_source[tile] : tile]; }
  __device__ uint64_t count(uint32_t tile) const {
    const uint64_t s = tile_source ? tile_source[tile] : tile;
    return tile_first[s + 1] - tile_first[s];
  }
};

// The one symbol of a tile whose runs say all its points have it (the runs write_mask_runs
// gives a uniform tile), else no_uniform_symbol. Uniform across the block.
template <int TX, int TY, int TZ>
__device__ uint32_t uniform_mask_symbol(const MaskSource& mask, uint32_t tile) {
  constexpr uint32_t volume = TX * TY * TZ, slice = mask_slice_keys(TX, TY, TZ);
  const uint64_t first = mask.first(tile), count = mask.count(tile);
  if (count == 1) {
    const uint32_t d = mask_run_difference(mask.runs[first]);
    return d ? d - 1 : 0;  // every key the same difference: d - 1 everywhere, or 0 from the start
  }
  if (count == 2 && slice) {
    const uint16_t a = mask.runs[first], b = mask.runs[first + 1];
    if (mask_run_length(a) == slice && mask_run_difference(b) == 0 && mask_run_length(b) == volume - slice)
      return mask_run_difference(a) ? mask_run_difference(a) - 1 : 0;  // the first slice sets it, the rest repeat it
  }
  return no_uniform_symbol;
}

// What expand_mask keeps in shared memory: the tile's runs' first keys and differences.
template <int TX, int TY, int TZ>
struct MaskRunsShared {
  using Scan = cub::BlockScan<uint32_t, block_threads>;
  static constexpr uint32_t volume = TX * TY * TZ, per = volume / block_threads;
  uint16_t starts[volume];
  uint8_t differences[volume];
  typename Scan::TempStorage scan;
};

// The tile's point symbols from its mask runs into `symbols` (one byte per key): the runs
// loaded at once (a thread takes `per` consecutive runs; a block scan of their lengths gives
// their first keys), each key's run found by a binary search, then each column along the
// slices resolved by a thread (mask.hh). A tile has at most `volume` runs (validated before
// launch). The whole block calls it; the symbols are complete when it returns.
template <int TX, int TY, int TZ>
__device__ void expand_mask(const MaskSource& mask, uint32_t tile, MaskRunsShared<TX, TY, TZ>& runs, uint8_t* symbols) {
  using S = MaskRunsShared<TX, TY, TZ>;
  constexpr uint32_t volume = S::volume, slice = mask_slice_keys(TX, TY, TZ);
  const uint64_t first = mask.first(tile);
  const uint32_t count = uint32_t(mask.count(tile));
  uint32_t lengths[S::per], sum = 0;
#pragma unroll
  for (uint32_t i = 0; i < S::per; ++i) {
    const uint32_t r = threadIdx.x * S::per + i;
    const uint16_t run = r < count ? mask.runs[first + r] : uint16_t(0);
    lengths[i] = r < count ? mask_run_length(run) : 0u;
    if (r < count) runs.differences[r] = uint8_t(mask_run_difference(run));
    sum += lengths[i];
  }
  uint32_t before;
  typename S::Scan(runs.scan).ExclusiveSum(sum, before);
#pragma unroll
  for (uint32_t i = 0; i < S::per; ++i) {
    const uint32_t r = threadIdx.x * S::per + i;
    if (r < count) runs.starts[r] = uint16_t(before);
    before += lengths[i];
  }
  __syncthreads();
  for (uint32_t k = threadIdx.x; k < volume; k += block_threads) {
    uint32_t lo = 0, hi = count;  // the last run starting at or before k
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (runs.starts[mid] <= k) lo = mid;
      else hi = mid;
    }
    symbols[k] = runs.differences[lo];
  }
  __syncthreads();
  constexpr uint32_t columns = slice ? slice : volume;
  for (uint32_t c = threadIdx.x; c < columns; c += block_threads) {
    uint32_t reference = 0;
    for (uint32_t k = c; k < volume; k += slice ? slice : volume) symbols[k] = uint8_t(reference = mask_symbol(symbols[k], reference));
  }
  __syncthreads();
}

template <typename T, int TX, int TY, int TZ>
__global__ void __launch_bounds__(block_threads) decode_kernel(const uint16_t* __restrict__ codes,
                                                               OutlierSource o, MaskSource mask, Grid g,
                                                               double step, T* __restrict__ field, uint32_t axes) {
  __shared__ int32_t q[TX * TY * TZ];
  __shared__ uint8_t mask_symbols[TX * TY * TZ];
  __shared__ MaskRunsShared<TX, TY, TZ> mask_runs;
  // Each tile's place carried from the block's tile before (placing every tile by two integer
  // divisions took a quarter of the 3D decode's instructions).
  for_each_strided_tile<TX, TY, TZ>(g, [&](const TilePlace<TX, TY, TZ>& p) {
    const uint32_t tile = p.index;
    // A tile all of one fill value (inland) is its fill value: its codes are not even read.
    const uint32_t uniform = mask.runs ? uniform_mask_symbol<TX, TY, TZ>(mask, tile) : 0u;
    if (uniform != 0 && uniform != no_uniform_symbol) {
      const T value = mask.missing.value_of<T>(uniform);
      const Strip<TX, TY, TZ> strip(g, p);
      T* dst = field + (strip.global0 - g.field_first);
#pragma unroll
      for (int k = 0; k < strip.per_thread; ++k, dst += strip.global_step)
        if (strip.inside(k)) *dst = value;
      return;  // uniform across the block, and no shared memory touched
    }
    const uint64_t escape_begin = o.present ? o.escape_start[tile] : 0, escape_end = o.present ? o.escape_start[tile + 1] : 0;
    const uint64_t exact_begin = o.present ? o.exact_start[tile] : 0, exact_end = o.present ? o.exact_start[tile + 1] : 0;
    // Interior tiles (most of a large field) skip every per-point bounds test.
    auto reconstruct_tile = [&](auto whole) {
      constexpr bool Whole = decltype(whole)::value;
      const Strip<TX, TY, TZ> strip(g, p);
      if constexpr (TY > 1) {
        // 2D and 3D: a thread's points are one column of the tile (lane = x; in 3D its
        // z-column, k = z and warp = y; in 2D rows ly + 8 k), so the z and x prefix sums run in
        // registers (a running sum, then warp shuffles, the points' chains side by side); only
        // y goes through shared memory (in 2D a segment of rows a thread). Escapes, rare, are
        // patched in through shared memory first.
        static_assert(TX == 32, "a tile's row is a warp");
        uint32_t v[Strip<TX, TY, TZ>::per_thread];  // point k of the strip, 0 outside the field
        if (escape_begin == escape_end) {  // uniform across the block
          const CodeRun run = code_run(g, p, strip);
          const uint16_t* src = codes + run.first;
#pragma unroll
          for (int k = 0; k < strip.per_thread; ++k, src += run.step)
            v[k] = Whole || strip.inside(k) ? uint32_t(decode_delta(*src)) : 0u;
        } else {
          load_deltas(codes, code_run(g, p, strip), strip, o.loaded_entries(), escape_begin, escape_end, p.key0, q);
#pragma unroll
          for (int k = 0; k < strip.per_thread; ++k) v[k] = uint32_t(q[strip.local(k)]);
        }
        if constexpr (TZ > 1)
          if (axes & axis_z) {
#pragma unroll
            for (int k = 1; k < strip.per_thread; ++k) v[k] += v[k - 1];
          }
        const bool along_x = axes & axis_x;
#pragma unroll
        for (int k = 0; k < strip.per_thread; ++k) q[strip.local(k)] = int32_t(along_x ? warp_inclusive_sum(v[k]) : v[k]);
        __syncthreads();
        if (axes & axis_y) {
          if constexpr (TZ > 1) {
            prefix_along_y<TX, TY, TZ>(q);
          } else {
            reconstruct_along_y_2d<Whole>(q, g, p, step, field);
            return;
          }
        }
      } else {
        load_deltas(codes, code_run(g, p, strip), strip, o.loaded_entries(), escape_begin, escape_end, p.key0, q);
        prefix_sums_1d<TX>(q);
      }
      T* dst = field + (strip.global0 - g.field_first);
#pragma unroll
      for (int k = 0; k < strip.per_thread; ++k, dst += strip.global_step)
        if (Whole || strip.inside(k)) *dst = reconstruct<T>(q[strip.local(k)], step);
    };
    if (p.whole()) reconstruct_tile(std::true_type{});
    else reconstruct_tile(std::false_type{});
    __syncthreads();  // orders the exact values after the reconstructions they replace
    for (uint64_t i = exact_begin + threadIdx.x; i < exact_end; i += block_threads) {
      const Outliers e = o.loaded_entries();
      uint32_t lx, ly, lz;
      split<TX, TY>(uint32_t(e.exact_keys[i] - p.key0), lx, ly, lz);
      field[p.global(g, lx, ly, lz) - g.field_first] = reinterpret_cast<const T*>(e.exact_values)[i];
    }
    if (mask.runs && uniform == no_uniform_symbol) {  // a coastal tile (all sea needs nothing)
      expand_mask<TX, TY, TZ>(mask, tile, mask_runs, mask_symbols);
      for (uint32_t k = threadIdx.x; k < TX * TY * TZ; k += block_threads) {
        uint32_t lx, ly, lz;
        split<TX, TY>(k, lx, ly, lz);
        if (mask_symbols[k] && p.inside(lx, ly, lz))
          field[p.global(g, lx, ly, lz) - g.field_first] = mask.missing.value_of<T>(mask_symbols[k]);
      }
    }
    __syncthreads();
  });
}

// The points' data bits from their tiles' masks (which points have codes). Key k and its
// lane's 31 neighbours are 32 points of a row, the first at a multiple of 32 in x.
template <int TX, int TY, int TZ>
__global__ void __launch_bounds__(block_threads) mask_bits_kernel(MaskSource mask, Grid g, BitsTarget bits) {
  __shared__ uint8_t mask_symbols[TX * TY * TZ];
  __shared__ MaskRunsShared<TX, TY, TZ> mask_runs;
  for (uint32_t tile = g.first_tile + blockIdx.x; tile < g.end_tile; tile += gridDim.x) {
    const TilePlace<TX, TY, TZ> p(g, tile);
    const uint32_t uniform = uniform_mask_symbol<TX, TY, TZ>(mask, tile);  // uniform across the block
    if (uniform == no_uniform_symbol) expand_mask<TX, TY, TZ>(mask, tile, mask_runs, mask_symbols);
    for (uint32_t k = threadIdx.x; k < TX * TY * TZ; k += block_threads) {
      uint32_t lx, ly, lz;
      split<TX, TY>(k, lx, ly, lz);
      const uint32_t symbol = uniform == no_uniform_symbol ? mask_symbols[k] : uniform;
      const bool inside = p.inside(lx, ly, lz);
      const uint32_t word = __ballot_sync(0xffffffffu, inside && symbol == 0);
      if (threadIdx.x % 32 == 0 && inside) bits.words[bits.word(g, p.x0 + lx, p.y0 + ly, p.z0 + lz)] = word;
    }
    __syncthreads();  // before the next tile's expansion overwrites the symbols
  }
}

// Whether an outlier key names a point inside the field (its tile's, inside the field's edge),
// and that point's index in field order.
template <int TX, int TY, int TZ>
__device__ bool point_of_key(const Grid& g, uint64_t key, uint64_t& point) {
  const uint64_t tile = key / (TX * TY * TZ);
  if (tile >= g.tile_count) return false;
  const TilePlace<TX, TY, TZ> p(g, uint32_t(tile));
  uint32_t lx, ly, lz;
  split<TX, TY>(uint32_t(key % (TX * TY * TZ)), lx, ly, lz);
  point = p.global(g, lx, ly, lz);
  return p.inside(lx, ly, lz);
}

// A decode's outlier stream checked on the device: its counts against its size as the CPU's
// outlier_layout does (counts that fail are taken as none, written to o.checked) and its keys
// as validate_outlier_keys does (in order, each naming a point of the field). Failures set
// `checks`' words; a stream of its counts alone takes one thread.
template <int TX, int TY, int TZ>
__global__ void check_outliers_kernel(OutlierSource source, uint64_t size_bytes, Grid g, OutlierChecks checks) {
  const auto* words = reinterpret_cast<const uint64_t*>(source.stream);
  OutlierCounts c{words[0], words[1]};
  const bool counts_ok = c.escapes <= size_bytes / 12 && c.exacts <= size_bytes / 12;
  const bool size_ok = counts_ok && 16 + 8 * c.escapes + 8 * c.exacts + source.value_bytes * c.exacts +
                                            4 * c.escapes ==
                                        size_bytes;
  if (!size_ok) c = {0, 0};
  const uint64_t first = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x, stride = uint64_t(gridDim.x) * blockDim.x;
  if (first == 0) {
    *const_cast<OutlierCounts*>(source.checked) = c;
    if (!counts_ok) *checks.counts = 1;
    else if (!size_ok) *checks.size = 1;
  }
  const Outliers o = source.entries(c);
  auto check_keys = [&](const uint64_t* keys, uint64_t count, uint32_t* failed) {
    for (uint64_t i = first; i < count; i += stride) {
      uint64_t point;
      if (!(point_of_key<TX, TY, TZ>(g, keys[i], point) && (i == 0 || keys[i] > keys[i - 1]))) {
        *failed = 1;
        *source.keys_failed = 1;
      }
    }
  };
  check_keys(o.escape_keys, c.escapes, checks.escape_keys);
  check_keys(o.exact_keys, c.exacts, checks.exact_keys);
}

// After check_outliers_kernel, where the stream has room for entries: each tile's first escape
// and exact (a thread a tile boundary), or empty ranges everywhere where one of this stream's
// keys failed its check (the decoder's own word, final here: the call's words may still be set
// by other chunks' kernels while this one runs, and a verdict read at different times by
// different threads left ranges that crossed tiles). The decode kernels then read only keys of
// their own tile, and need no bound on any read or write.
__global__ void outlier_starts_kernel(OutlierSource source, uint64_t tiles, uint64_t volume) {
  const bool keys_ok = *source.keys_failed == 0;
  const OutlierCounts c = keys_ok ? source.counts() : OutlierCounts{0, 0};
  const Outliers o = source.entries(c);
  auto* starts = const_cast<uint64_t*>(source.escape_start);
  for (uint64_t t = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; t <= tiles; t += uint64_t(gridDim.x) * blockDim.x) {
    starts[t] = lower_bound(o.escape_keys, c.escapes, t * volume);
    starts[tiles + 1 + t] = lower_bound(o.exact_keys, c.exacts, t * volume);
  }
}

// Span "chunk" decode (DeviceDecoder::decode_whole): a kernel a step, each as plain as it can
// be.
__global__ void whole_deltas_kernel(const uint16_t* __restrict__ codes, uint64_t n, int32_t* __restrict__ q) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    q[i] = decode_delta(codes[i]);
}

template <int TX, int TY, int TZ>
__global__ void whole_escapes_kernel(OutlierSource source, Grid g, int32_t* __restrict__ q) {
  const Outliers o = source.entries(source.counts());
  for (uint64_t e = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; e < o.escapes; e += uint64_t(gridDim.x) * blockDim.x) {
    uint64_t point;
    if (point_of_key<TX, TY, TZ>(g, o.escape_keys[e], point)) q[point] = o.escape_deltas[e];
  }
}

// Wrapping prefix sums along x straight from the codes (rows of a 2D or 3D chunk, whose tiles
// are 32 points wide): a warp a row, eight segments of 32 points loaded before the first is
// summed (a segment a step, each waiting on its load, ran at a fraction of the bandwidth); a
// segment lies in one tile, so an escape is found by a binary search of its key among its
// tile's escapes (tiles without escapes, most, cost one lookup a segment). The sums go to `q`,
// or where x is the stencil's only axis (`field` not null), the values.
template <typename T, int TX, int TY, int TZ>
__global__ void whole_scan_x_kernel(const uint16_t* __restrict__ codes, OutlierSource o, Grid g,
                                    int32_t* __restrict__ q, T* __restrict__ field, double step) {
  const OutlierCounts n = o.counts();
  const bool escapes = o.present;
  static_assert(TX == 32, "a segment of 32 points is a tile's row");
  constexpr int batch = 8;
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t nx = g.nx, rows = g.ny * g.nz, warps = uint64_t(gridDim.x) * blockDim.x / 32;
  for (uint64_t row = (blockIdx.x * uint64_t(blockDim.x) + threadIdx.x) / 32; row < rows; row += warps) {
    const uint64_t y = row % g.ny, z = row / g.ny, first = row * nx;
    const uint64_t tile_row = g.tiles_x * (y / TY + g.tiles_y * (z / TZ));
    const uint64_t local_row = TX * (y % TY + TY * (z % TZ));
    uint32_t carry = 0;
    for (uint64_t x0 = 0; x0 < nx; x0 += 32 * batch) {
      uint32_t v[batch];
#pragma unroll
      for (int j = 0; j < batch; ++j) {
        const uint64_t x = x0 + 32 * j + lane;
        v[j] = x < nx ? uint32_t(decode_delta(codes[first + x])) : 0u;
      }
      if (escapes) {  // uniform
#pragma unroll
        for (int j = 0; j < batch; ++j) {
          const uint64_t x = x0 + 32 * j + lane, tile = tile_row + (x0 + 32 * j) / TX;
          if (x0 + 32 * j >= nx) break;  // uniform
          const uint64_t begin = o.escape_start[tile], end = o.escape_start[tile + 1];
          if (end <= begin || x >= nx) continue;  // (below only where the keys fail their checks)
          o.entries(n).patch_escape(begin, end, tile * (TX * TY * TZ) + local_row + lane, v[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < batch; ++j) {
        const uint64_t x = x0 + 32 * j + lane;
        v[j] = warp_inclusive_sum(v[j]) + carry;
        carry = __shfl_sync(0xffffffffu, v[j], 31);
        if (x >= nx) continue;
        if (field) field[first + x] = reconstruct<T>(int32_t(v[j]), step);
        else q[first + x] = int32_t(v[j]);
      }
    }
  }
}

// The deltas as u32 terms of the shared scan (one row: a 1D chunk), 0 at n.
struct DeltaTerms {
  const int32_t* q;
  uint64_t n;
  __device__ uint32_t operator()(uint64_t i) const { return i < n ? uint32_t(q[i]) : 0u; }
};

// Along y or z (`along_z`): a thread per line (adjacent threads, adjacent x), walking the line
// with its next four points loaded before the first is summed (one at a time, each load
// waited behind the store before it). The first pass of a chunk reads the codes (`codes` not
// null: an escape's delta found by its key among its tile's escapes, the tile's range looked
// up where the line enters it), a later one the sums in `q`; the sums go back to `q`, or in
// the last pass (`field` not null) the values.
template <typename T, int TX, int TY, int TZ>
__global__ void whole_scan_lines_kernel(const uint16_t* __restrict__ codes, OutlierSource o, int32_t* q, Grid g,
                                        bool along_z, T* __restrict__ field, double value_step) {
  const OutlierCounts n = o.counts();
  constexpr uint64_t ahead = 4, volume = TX * TY * TZ;
  const uint64_t nx = g.nx, ny = g.ny;
  const uint64_t lines = along_z ? nx * ny : nx * g.nz, length = along_z ? g.nz : ny, step = along_z ? nx * ny : nx;
  const uint64_t segment = along_z ? TZ : TY;  // points of a line in one tile
  const bool escapes = codes && o.present;
  for (uint64_t l = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; l < lines; l += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t x = l % nx, across = l / nx;  // y of a line along z, z of one along y
    const uint64_t first = along_z ? l : x + nx * ny * across;
    uint32_t sum = 0;
    uint64_t begin = 0, end = 0;  // the escapes of the tile the line is in
    for (uint64_t k = 0; k < length; k += ahead) {
      uint32_t v[ahead];
#pragma unroll
      for (uint64_t j = 0; j < ahead; ++j) {
        const uint64_t i = first + (k + j) * step;
        v[j] = k + j >= length ? 0u : codes ? uint32_t(decode_delta(codes[i])) : uint32_t(q[i]);
      }
      if (escapes) {
#pragma unroll
        for (uint64_t j = 0; j < ahead; ++j) {
          const uint64_t at = k + j, y = along_z ? across : at, z = along_z ? at : across;
          if (at >= length) break;
          const uint64_t tile = x / TX + g.tiles_x * (y / TY + g.tiles_y * (z / TZ));
          if (at % segment == 0) begin = o.escape_start[tile], end = o.escape_start[tile + 1];
          if (end <= begin) continue;  // (below only where the keys fail their checks)
          o.entries(n).patch_escape(begin, end, tile * volume + x % TX + TX * (y % TY + TY * (z % TZ)), v[j]);
        }
      }
#pragma unroll
      for (uint64_t j = 0; j < ahead; ++j) {
        if (k + j >= length) break;
        sum += v[j];
        const uint64_t i = first + (k + j) * step;
        if (field) field[i] = reconstruct<T>(int32_t(sum), value_step);
        else q[i] = int32_t(sum);
      }
    }
  }
}

template <typename T>
__global__ void whole_values_kernel(const int32_t* __restrict__ q, uint64_t n, double step, T* __restrict__ field) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    field[i] = reconstruct<T>(q[i], step);
}

template <typename T, int TX, int TY, int TZ>
__global__ void whole_exacts_kernel(OutlierSource source, Grid g, T* field) {
  const Outliers o = source.entries(source.counts());
  for (uint64_t e = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; e < o.exacts; e += uint64_t(gridDim.x) * blockDim.x) {
    T value;
    memcpy(&value, o.exact_values + sizeof(T) * e, sizeof(T));
    uint64_t point;
    if (point_of_key<TX, TY, TZ>(g, o.exact_keys[e], point)) field[point] = value;
  }
}

struct TileCounts {
  const uint32_t* packed;
  uint64_t tiles;
  __device__ OutlierCounts operator()(uint64_t t) const { return t < tiles ? unpack_counts(packed[t]) : OutlierCounts{0, 0}; }
};


__global__ void write_counts_kernel(uint64_t* stream, uint64_t escapes, uint64_t exacts) {
  stream[0] = escapes;
  stream[1] = exacts;
}

// The tiles that take a repeat run (mask.hh: more than one run, and the runs of the tile
// `stride` before), and where each tile's runs go in the mask stream (a repeat takes one):
// one pass, placed by decoupled look-back (varlen/lookback.cuh) over chunks of 256 tiles, a
// lane a tile. In place of a kernel for the repeats and a device-wide scan of the stored
// counts after it (three launches, ~18 us a chunk of a 100 M field on an H100, mostly their
// latency). offsets[tiles] and *run_total are the stream's run count.
constexpr uint32_t offsets_chunk_tiles = 256;
using RunLookBack = varlen::LookBack<1>;
uint64_t run_chunks(uint64_t tiles) { return (tiles + offsets_chunk_tiles - 1) / offsets_chunk_tiles; }
__global__ void __launch_bounds__(offsets_chunk_tiles) mask_run_offsets_kernel(
    const uint16_t* __restrict__ slots, const uint32_t* __restrict__ tile_runs, uint64_t tiles, uint64_t stride,
    uint32_t volume, uint64_t chunks, RunLookBack lb, uint32_t* __restrict__ repeats, uint64_t* __restrict__ offsets,
    unsigned long long* __restrict__ run_total) {
  constexpr uint32_t warps = offsets_chunk_tiles / 32;
  __shared__ uint32_t warp_first[warps];
  __shared__ uint64_t chunk, chunk_first;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (;;) {
    if (threadIdx.x == 0) chunk = lb.claim(0);
    __syncthreads();
    const uint64_t c = chunk;
    if (c >= chunks) return;  // uniform across the block
    const uint64_t t = c * offsets_chunk_tiles + threadIdx.x;
    const uint32_t n = t < tiles ? tile_runs[t] : 0u;
    bool same = t < tiles && t >= stride && n > 1 && n == tile_runs[t - stride];
    // A candidate's runs against the earlier tile's, by its own lane, 8 runs a 16-byte load
    // (a slot is `volume` runs, a multiple of 8, from a 16-byte aligned scratch; runs past n
    // are left out of the compare). A warp comparing one candidate at a time took 4x longer.
    if (same) {
      const uint4* mine = reinterpret_cast<const uint4*>(slots + t * volume);
      const uint4* theirs = reinterpret_cast<const uint4*>(slots + (t - stride) * volume);
      for (uint32_t i = 0; same && 8 * i < n; ++i) {
        const uint4 a = mine[i], b = theirs[i];
        const uint32_t left = n - 8 * i;  // runs of this load in the tile (all 8 when 8 or more)
        const uint64_t keep = left >= 8 ? ~uint64_t(0) : (uint64_t(1) << (16 * (left % 4))) - 1;
        const uint64_t lo = (uint64_t(a.y) << 32 | a.x) ^ (uint64_t(b.y) << 32 | b.x);
        const uint64_t hi = (uint64_t(a.w) << 32 | a.z) ^ (uint64_t(b.w) << 32 | b.z);
        const uint64_t lo_keep = left >= 4 ? ~uint64_t(0) : keep, hi_keep = left >= 8 ? ~uint64_t(0) : left > 4 ? keep : 0;
        same = (lo & lo_keep) == 0 && (hi & hi_keep) == 0;
      }
    }
    const uint32_t stored = same ? 1u : n;  // at most 256 x 2048 a chunk
    uint32_t warp_total;
    const uint32_t before_in_warp = warp_exclusive_sum(stored, warp_total);
    if (lane == 0) warp_first[warp] = warp_total;
    __syncthreads();
    if (warp == 0) {
      const uint32_t mine = lane < warps ? warp_first[lane] : 0u;
      uint32_t total;
      const uint32_t before = warp_exclusive_sum(mine, total);
      if (lane < warps) warp_first[lane] = before;
      if (lane == 0 && c > 0) lb.publish_aggregate(c, {total});
      const uint64_t prefix = lb.exclusive_prefix(c).v[0];
      if (lane == 0) {
        lb.publish_inclusive(c, {prefix + total});
        chunk_first = prefix;
        if (c == chunks - 1) offsets[tiles] = *run_total = prefix + total;
      }
    }
    __syncthreads();
    if (t < tiles) {
      repeats[t] = same;
      offsets[t] = chunk_first + warp_first[warp] + before_in_warp;
    }
    __syncthreads();  // `chunk`, `chunk_first` and the warp offsets are rewritten for the next chunk
  }
}

// The mask stream (mask.hh): its run count (a u64, little-endian: the stream starts 8-byte
// aligned), then each tile's mask runs from its scratch slot to its offset. A lane a tile
// (most tiles have one run: a warp a tile left 31 lanes idle, 14 us for the two chunks of a
// 100 M field on an H100); a tile of more than 32 runs is copied by the whole warp after.
constexpr uint32_t lane_copied_runs = 32;
__global__ void pack_mask_runs_kernel(const uint16_t* __restrict__ slots, const uint32_t* __restrict__ tile_runs,
                                      const uint32_t* __restrict__ repeats, const uint64_t* __restrict__ offsets,
                                      uint64_t tiles, uint32_t volume, uint8_t* __restrict__ stream) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<uint64_t*>(stream) = offsets[tiles];
  uint16_t* runs = reinterpret_cast<uint16_t*>(stream + 8);
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t threads = uint64_t(gridDim.x) * blockDim.x;
  // Every lane of a warp runs the same number of rounds (the warp's copies need all 32).
  for (uint64_t first = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x - lane; first < tiles; first += threads) {
    const uint64_t t = first + lane;
    const bool real = t < tiles;
    const uint64_t at = real ? offsets[t] : 0;
    const uint32_t n = real ? (repeats[t] ? 0u : tile_runs[t]) : 0u;  // 0: a repeat run, or no tile
    if (real && repeats[t]) runs[at] = mask_repeat_run(volume);
    if (n <= lane_copied_runs)
      for (uint32_t r = 0; r < n; ++r) runs[at + r] = slots[t * volume + r];
    for (uint32_t many = __ballot_sync(0xffffffffu, n > lane_copied_runs); many; many &= many - 1) {
      const uint32_t j = __ffs(many) - 1;
      const uint64_t tj = first + j, at_j = __shfl_sync(0xffffffffu, at, j);
      const uint32_t n_j = __shfl_sync(0xffffffffu, n, j);
      for (uint32_t r = lane; r < n_j; r += 32) runs[at_j + r] = slots[tj * volume + r];
    }
  }
}

__global__ void write_run_count_kernel(uint8_t* stream, uint64_t runs) {
  for (int b = 0; b < 8; ++b) stream[b] = uint8_t(runs >> (8 * b));
}

struct RunLengths {
  const uint16_t* runs;
  uint64_t count;
  __device__ uint64_t operator()(uint64_t i) const { return i < count ? mask_run_length(runs[i]) : 0; }
};

// Checks the runs against the tiles (none crosses a tile, symbols name fill values, a repeat
// run is a whole tile past the first layer) and marks where each tile's runs start; the caller
// checks that the lengths add up to the tiles. Counts the repeat runs.
__global__ void index_mask_runs_kernel(const uint16_t* runs, const uint64_t* starts, uint64_t count, uint64_t tiles,
                                       uint32_t volume, uint64_t stride, uint32_t symbols, uint64_t* tile_first,
                                       uint64_t* bad, unsigned long long* repeats) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t start = starts[i], within = start % volume, tile = start / volume;
    const bool repeat = is_mask_repeat(runs[i]);
    const bool fits = repeat ? within == 0 && mask_run_length(runs[i]) == volume && tile >= stride
                             : within + mask_run_length(runs[i]) <= volume && mask_run_difference(runs[i]) <= symbols + 1;
    if (!fits || tile >= tiles) {
      *bad = 1;
    } else if (within == 0) {
      tile_first[tile] = i;
      if (repeat) atomicAdd(repeats, 1ull);
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) tile_first[tiles] = count;
}

// Tiles in column order: position i = column * layers + layer, a column being the tiles one
// layer apart (mask.hh's repeat stride), so that a column's tiles are consecutive.
struct ColumnOrder {
  uint64_t stride, layers;
  __device__ uint64_t tile(uint64_t i) const { return i % layers * stride + i / layers; }
};

// The scan term of position i: i + 1 when its tile has runs of its own, 0 when it repeats. A
// running maximum gives each position the last tile at or before it, in its column, with
// runs of its own (a column's first tile never repeats, and its position exceeds every earlier
// column's).
struct OwnRuns {
  const uint16_t* runs;
  const uint64_t* tile_first;
  ColumnOrder order;
  uint64_t n;
  __device__ uint64_t operator()(uint64_t i) const {
    if (i >= n) return 0;
    const uint64_t tile = order.tile(i), first = tile_first[tile];
    return tile_first[tile + 1] - first == 1 && is_mask_repeat(runs[first]) ? 0 : i + 1;
  }
};

struct Max {
  __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a > b ? a : b; }
};

__global__ void mask_sources_kernel(OwnRuns own, const uint64_t* before, uint64_t* tile_source) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < own.n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t last = max(before[i], own(i));
    tile_source[own.order.tile(i)] = own.order.tile(last - 1);
  }
}

// The tile shape of a rank, as a type: kernels are instantiated per element type and shape.
template <int X, int Y, int Z>
struct Shape {
  static constexpr int x = X, y = Y, z = Z;
};

// Calls f(T{}, Shape<...>{}) for the field's element type and the tile shape of its rank.
template <typename F>
void with_shape(DType type, int rank, F f) {
  auto by_rank = [&](auto zero) {
    switch (rank) {
      case 1: return f(zero, Shape<2048, 1, 1>{});
      case 2: return f(zero, Shape<32, 32, 1>{});
      default: return f(zero, Shape<32, 8, 8>{});
    }
  };
  if (type == DType::f32) by_rank(float{});
  else by_rank(double{});
}

// Launches a kernel that walks the tiles of `g` (for_each_block_tile or a grid stride): one
// resident wave of blocks, each tile's work in one block.
template <typename Kernel, typename... Args>
void launch_on_tiles(Kernel kernel, const Grid& g, cudaStream_t stream, Args... args) {
  kernel<<<resident_grid(kernel, block_threads, g.end_tile - g.first_tile, 1), block_threads, 0, stream>>>(args...);
  FZG_CUDA_CHECK_LAUNCH();
}

// The launch's tiles: tile rows [first_row, end_row), codes in a window from `codes_first`.
Grid rows_grid(const TileGrid& grid, uint64_t first_row, uint64_t end_row, uint64_t codes_first) {
  Grid g = device_grid(grid);
  const uint64_t per_row = grid.tile_count() / tile_rows(grid.dims).count;
  g.first_tile = uint32_t(first_row * per_row);
  g.end_tile = uint32_t(end_row * per_row);
  g.codes_first = codes_first;
  return g;
}

uint64_t repeat_stride(const TileGrid& g) { return mask_repeat_stride(g.tile.y, g.tile.z, g.tiles_x, g.tiles_y); }

// The indexed mask as the kernels read it (runs null without fill values; see index_mask for
// the index's layout).
MaskSource mask_source(const Buffer& runs, const Buffer& index, const Buffer& sources, uint64_t tiles,
                       const MissingValues& missing) {
  if (missing.empty()) return {nullptr, nullptr, nullptr, missing};
  return {runs.as<uint16_t>(), index.as<uint64_t>() + (index.size() / sizeof(uint64_t) - (tiles + 1)),
          sources.size() ? sources.as<uint64_t>() : nullptr, missing};
}

// "auto" (lorenzo.hh): the deltas of every stride-th tile under each candidate, by tiles (a
// zero border) and across the chunk (the neighbours' q in the border) as `spans` asks (bit 0,
// bit 1), counted in the block's histograms in shared memory (a warp's lanes of one bin added
// at once), then into `counts`. A tile with a missing point is left out (as the CPU's
// axes_histograms_typed does, bin for bin).
struct AxesCandidates {
  uint32_t axes[7];
  uint32_t count;
};

template <typename T, int TX, int TY, int TZ>
__global__ void __launch_bounds__(block_threads) axes_histogram_kernel(const T* __restrict__ field, Grid g,
                                                                       QuantConstants c, MissingValues missing,
                                                                       uint64_t stride, AxesCandidates candidates,
                                                                       uint32_t spans, uint32_t* __restrict__ counts) {
  using H = Halo<TX, TY, TZ>;
  constexpr uint32_t bins = axes_histogram_bins;
  __shared__ int32_t q[H::size];
  __shared__ uint32_t histogram[2 * 7 * bins];
  for (uint32_t i = threadIdx.x; i < 2 * 7 * bins; i += block_threads) histogram[i] = 0;
  const uint64_t samples = (g.tile_count + stride - 1) / stride;
  const uint32_t lane = threadIdx.x % 32;
  auto count = [&](const Strip<TX, TY, TZ>& strip, uint32_t* into) {
#pragma unroll
    for (int k = 0; k < strip.per_thread; ++k) {
      const bool inside = strip.inside(k);
      const uint32_t active = __ballot_sync(0xffffffffu, inside);
      if (!inside) continue;
      for (uint32_t a = 0; a < candidates.count; ++a) {
        const uint32_t key = a * bins + axes_histogram_bin(H::delta(q, strip.cell(k), candidates.axes[a]));
        const uint32_t peers = __match_any_sync(active, key);
        if (lane == uint32_t(__ffs(peers) - 1)) atomicAdd(&into[key], uint32_t(__popc(peers)));
      }
    }
  };
  for (uint64_t s = blockIdx.x; s < samples; s += gridDim.x) {
    const TilePlace<TX, TY, TZ> p(g, uint32_t(s * stride));
    H::clear(q);  // a zero border by tiles (the span before may have filled it)
    uint32_t symbols;
    load_tile<false, true>(field, g, p, c, missing, q, symbols);
    if (__syncthreads_or(symbols != 0)) continue;  // uniform; nothing read the tile yet
    const Strip<TX, TY, TZ> strip(g, p);
    uint32_t* into = histogram;
    if (spans & 1u) {
      count(strip, into);
      into += candidates.count * bins;
    }
    if (spans & 2u) {
      __syncthreads();
      load_border(field, g, p, c, q);
      __syncthreads();
      count(strip, into);
    }
    __syncthreads();  // the next tile clears the bordered tile
  }
  __syncthreads();
  const uint32_t used = (spans & 1u ? 1 : 0) + (spans & 2u ? 1 : 0);
  for (uint32_t i = threadIdx.x; i < used * candidates.count * bins; i += block_threads)
    if (histogram[i]) atomicAdd(&counts[i], histogram[i]);
}

}  // namespace

TileRows tile_rows(const Dims& dims) {
  const TileGrid grid(dims);
  switch (dims.rank) {
    case 1: return {grid.tiles_x, grid.tile.x};
    case 2: return {grid.tiles_y, dims.x * grid.tile.y};
    default: return {grid.tiles_z, dims.x * dims.y * grid.tile.z};
  }
}

namespace {

// Each data-bit word's first code (the points with data before it) and, at first[n] and
// *total, the code count: an exclusive scan of the words' counts in one pass, placed by
// decoupled look-back over chunks of 2048 words (a block's 8 words a thread), in place of a
// device-wide CUB scan (its init kernel and scan, and a copy of the total after them).
constexpr uint32_t code_scan_items = 8, code_scan_chunk = block_threads * code_scan_items;
using CodeLookBack = varlen::LookBack<1>;
uint64_t code_chunks(uint64_t words) { return (words + code_scan_chunk - 1) / code_scan_chunk; }
__global__ void __launch_bounds__(block_threads) first_codes_kernel(const uint32_t* __restrict__ words, uint64_t n,
                                                                    uint64_t chunks, CodeLookBack lb,
                                                                    uint64_t* __restrict__ first,
                                                                    unsigned long long* __restrict__ total) {
  using Load = cub::BlockLoad<uint32_t, block_threads, code_scan_items, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<uint64_t, block_threads, code_scan_items, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using Scan = cub::BlockScan<uint32_t, block_threads>;
  __shared__ union {
    typename Load::TempStorage load;
    typename Scan::TempStorage scan;
    typename Store::TempStorage store;
  } temp;
  __shared__ uint64_t chunk, chunk_first;
  for (;;) {
    if (threadIdx.x == 0) chunk = lb.claim(0);
    __syncthreads();
    const uint64_t c = chunk;
    if (c >= chunks) return;  // uniform across the block
    const uint64_t base = c * code_scan_chunk;
    const int valid = int(n - base < code_scan_chunk ? n - base : code_scan_chunk);
    uint32_t counts[code_scan_items];
    Load(temp.load).Load(words + base, counts, valid, 0u);
#pragma unroll
    for (uint32_t k = 0; k < code_scan_items; ++k) counts[k] = __popc(counts[k]);
    __syncthreads();  // the load's storage is the scan's
    uint32_t chunk_total;  // at most 2048 x 32
    Scan(temp.scan).ExclusiveSum(counts, counts, chunk_total);
    if (threadIdx.x < 32) {
      if (threadIdx.x == 0 && c > 0) lb.publish_aggregate(c, {chunk_total});
      const uint64_t prefix = lb.exclusive_prefix(c).v[0];
      if (threadIdx.x == 0) {
        lb.publish_inclusive(c, {prefix + chunk_total});
        chunk_first = prefix;
        if (c == chunks - 1) first[n] = *total = prefix + chunk_total;
      }
    }
    __syncthreads();  // chunk_first; the scan's storage is the store's
    uint64_t out[code_scan_items];
#pragma unroll
    for (uint32_t k = 0; k < code_scan_items; ++k) out[k] = chunk_first + counts[k];
    Store(temp.store).Store(first + base, out, valid);
    __syncthreads();  // `chunk`, `chunk_first` and the storage are rewritten for the next chunk
  }
}

}  // namespace

DeviceEncoder::DeviceEncoder(const void* field, DType type, const Dims& dims, cudaStream_t stream,
                             const MissingValues& missing, const Prediction& prediction, const uint32_t* data_bits)
    : field_(field), type_(type), grid_(dims), stream_(stream), missing_(missing),
      whole_(prediction.span == Span::chunk && missing.empty()), axes_(prediction.axes_of(dims)),
      tile_order_(prediction.tile_order && prediction.span == Span::tile && missing.empty()) {
  // Tile indices are u32; a masked encode's claim counter (u32) counts at most a claim a tile
  // and one more a block.
  const uint64_t tiles = grid_.tile_count();
  if (tiles >= (uint64_t(1) << 32) - (missing.empty() ? 0 : uint64_t(1) << 24))
    fail(ErrorCode::invalid_argument, "field has too many tiles");
  // Zeroed at once: the totals, and with fill values the encode's claim counter and the
  // look-back states of the first codes and of the mask offsets (one memset).
  const uint64_t words = DataBits(dims).words();
  if (!missing.empty())
    zeroed_words_ += 1 + RunLookBack::words(run_chunks(tiles)) + CodeLookBack::words(code_chunks(words));
  counts_ = Buffer::device(zeroed_words_ * sizeof(uint64_t) + (missing.empty() ? 1 : 3) * tiles * sizeof(uint32_t),
                           stream);
  FZG_CUDA_CHECK(cudaMemsetAsync(counts_.data(), 0, zeroed_words_ * sizeof(uint64_t), stream));
  if (missing.empty()) return;
  mask_slots_ = Buffer::device(tiles * grid_.tile.volume() * sizeof(uint16_t), stream);
  data_bits_ = data_bits;
  if (!data_bits_) {  // one more read of the field: the executor made none beside the value range
    own_bits_ = Buffer::device(words * sizeof(uint32_t), stream);
    data_bits_device(field, type, dims, missing, own_bits_.as<uint32_t>(), stream);
    data_bits_ = own_bits_.as<uint32_t>();
  }
  first_code_ = Buffer::device((words + 1) * sizeof(uint64_t), stream);
  // The code count goes to the fourth total too: one read-back brings it with the others.
  const uint64_t chunks = code_chunks(words);
  if (chunks == 0) {
    FZG_CUDA_CHECK(cudaMemsetAsync(first_code_.data(), 0, sizeof(uint64_t), stream));
    return;
  }
  first_codes_kernel<<<resident_grid(first_codes_kernel, block_threads, chunks, 1), block_threads, 0, stream>>>(
      data_bits_, words, chunks, CodeLookBack::at(code_look_back(), chunks), first_code_.as<uint64_t>(),
      reinterpret_cast<unsigned long long*>(totals() + 3));
  FZG_CUDA_CHECK_LAUNCH();
}

uint64_t* DeviceEncoder::totals() const { return const_cast<uint64_t*>(counts_.as<uint64_t>()); }

uint32_t* DeviceEncoder::tile_counts() const {
  return reinterpret_cast<uint32_t*>(const_cast<uint8_t*>(counts_.data()) + zeroed_words_ * sizeof(uint64_t));
}

uint32_t* DeviceEncoder::claim() const { return reinterpret_cast<uint32_t*>(totals() + 4); }

unsigned long long* DeviceEncoder::run_look_back() const {
  return reinterpret_cast<unsigned long long*>(totals() + 5);
}

unsigned long long* DeviceEncoder::code_look_back() const {
  return run_look_back() + RunLookBack::words(run_chunks(grid_.tile_count()));
}

uint32_t* DeviceEncoder::tile_runs() const { return tile_counts() + grid_.tile_count(); }

uint32_t* DeviceEncoder::tile_repeats() const { return tile_runs() + grid_.tile_count(); }

void DeviceEncoder::finish() {
  if (missing_.empty()) return;
  // The look-back state was zeroed with the totals: the mask offsets are one launch.
  if (finished_) fail(ErrorCode::invalid_argument, "lorenzo: a masked DeviceEncoder finishes once");
  finished_ = true;
  const uint64_t tiles = grid_.tile_count();
  const uint64_t chunks = run_chunks(tiles);
  run_offsets_ = Buffer::device((tiles + 1) * sizeof(uint64_t), stream_);
  if (tiles == 0) return;  // no run: the total stays the zero it was set to
  mask_run_offsets_kernel<<<resident_grid(mask_run_offsets_kernel, offsets_chunk_tiles, chunks, 1),
                            offsets_chunk_tiles, 0, stream_>>>(
      mask_slots_.as<uint16_t>(), tile_runs(), tiles, repeat_stride(grid_), grid_.tile.volume(), chunks,
      RunLookBack::at(run_look_back(), chunks), tile_repeats(), run_offsets_.as<uint64_t>(),
      counts_.as<unsigned long long>() + 2);
  FZG_CUDA_CHECK_LAUNCH();
}

void DeviceEncoder::encode_rows(const QuantConstants* constants, uint64_t first_row, uint64_t end_row, uint16_t* window,
                                uint64_t window_first) {
  if (first_row >= end_row) return;
  // With fill values the codes' places count from the field's first point with data.
  if (!missing_.empty() && (first_row != 0 || end_row != tile_rows(grid_.dims).count || window_first != 0))
    fail(ErrorCode::invalid_argument, "lorenzo: a masked encode codes every tile row into one window");
  auto* totals = counts_.as<unsigned long long>();
  Grid g = rows_grid(grid_, first_row, end_row, window_first);
  g.tile_order = tile_order_;
  MaskScratch scratch{nullptr, nullptr, {{nullptr, DataBits(grid_.dims)}, nullptr}, nullptr};
  if (!missing_.empty()) {
    // The claim counter was zeroed with the totals: a masked encode is one launch.
    if (encoded_) fail(ErrorCode::invalid_argument, "lorenzo: a masked DeviceEncoder encodes once");
    encoded_ = true;
    scratch = {mask_slots_.as<uint16_t>() + g.first_tile * uint64_t(grid_.tile.volume()), tile_runs(),
               {{data_bits_, DataBits(grid_.dims)}, first_code_.as<uint64_t>()}, claim()};
  }
  with_shape(type_, grid_.dims.rank, [&](auto zero, auto shape) {
    using T = decltype(zero);
    using S = decltype(shape);
    if (whole_)
      launch_on_tiles(encode_kernel<T, S::x, S::y, S::z, false, true>, g, stream_, static_cast<const T*>(field_), g,
                      constants, missing_, window, tile_counts(), totals, scratch, axes_);
    else if (missing_.empty())
      launch_on_tiles(encode_kernel<T, S::x, S::y, S::z, false>, g, stream_, static_cast<const T*>(field_), g,
                      constants, missing_, window, tile_counts(), totals, scratch, axes_);
    else
      launch_on_tiles(encode_kernel<T, S::x, S::y, S::z, true>, g, stream_, static_cast<const T*>(field_), g,
                      constants, missing_, window, tile_counts(), totals, scratch, axes_);
  });
  trace::mark("lorenzo: encode queued");
}

Buffer DeviceEncoder::outliers(const QuantConstants* constants, OutlierCounts total) {
  // No outliers (most calls): the stream is its two counts, which the totals' first two words
  // already are on the device (final once the encode is done): no allocation, no launch.
  if (total.escapes + total.exacts == 0) return counts_.slice(0, outlier_stream_size(total, type_));
  Buffer stream_buffer = Buffer::device(outlier_stream_size(total, type_), stream_);
  write_counts_kernel<<<1, 1, 0, stream_>>>(stream_buffer.as<uint64_t>(), total.escapes, total.exacts);
  FZG_CUDA_CHECK_LAUNCH();
  const uint64_t tiles = grid_.tile_count();
  Buffer offsets = Buffer::device((tiles + 1) * sizeof(OutlierCounts), stream_);
  // Where each tile's outliers go: the shared scan of the per-tile counts.
  varlen::exclusive_scan(TileCounts{tile_counts(), tiles}, tiles, offsets.as<OutlierCounts>(), OutlierCounts{0, 0},
                         varlen::Plus{}, stream_);
  with_shape(type_, grid_.dims.rank, [&](auto zero, auto shape) {
    using T = decltype(zero);
    using S = decltype(shape);
    uint8_t* base = stream_buffer.data() + 16;
    OutlierTargets<T> out;
    out.escape_keys = reinterpret_cast<uint64_t*>(base);
    out.exact_keys = out.escape_keys + total.escapes;
    out.exact_values = reinterpret_cast<T*>(out.exact_keys + total.exacts);
    out.escape_deltas = reinterpret_cast<int32_t*>(out.exact_values + total.exacts);
    const Grid g = device_grid(grid_);
    if (whole_)
      launch_on_tiles(place_outliers_kernel<T, S::x, S::y, S::z, false, true>, g, stream_, static_cast<const T*>(field_),
                      g, constants, missing_, tile_counts(), offsets.as<OutlierCounts>(), out, axes_);
    else if (missing_.empty())
      launch_on_tiles(place_outliers_kernel<T, S::x, S::y, S::z, false>, g, stream_, static_cast<const T*>(field_), g,
                      constants, missing_, tile_counts(), offsets.as<OutlierCounts>(), out, axes_);
    else
      launch_on_tiles(place_outliers_kernel<T, S::x, S::y, S::z, true>, g, stream_, static_cast<const T*>(field_), g,
                      constants, missing_, tile_counts(), offsets.as<OutlierCounts>(), out, axes_);
  });
  return stream_buffer;
}

Buffer DeviceEncoder::mask(uint64_t runs) {
  Buffer stream_buffer = Buffer::device(mask_stream_size(runs), stream_);
  const uint64_t tiles = grid_.tile_count();
  if (runs == 0) {  // no tile
    write_run_count_kernel<<<1, 1, 0, stream_>>>(stream_buffer.data(), runs);
    FZG_CUDA_CHECK_LAUNCH();
    return stream_buffer;
  }
  pack_mask_runs_kernel<<<grid_for(tiles, 256), 256, 0, stream_>>>(mask_slots_.as<uint16_t>(), tile_runs(),
                                                                        tile_repeats(), run_offsets_.as<uint64_t>(),
                                                                        tiles, grid_.tile.volume(), stream_buffer.data());
  FZG_CUDA_CHECK_LAUNCH();
  return stream_buffer;
}

namespace {
// A DeviceDecoder's outliers as its kernels take them: `index` holds the checked counts, then
// with outliers (a stream longer than its counts) each tile's first escape and exact.
OutlierSource outlier_source(const uint8_t* stream, uint64_t stream_size, const Buffer& index, uint64_t tiles,
                             DType type) {
  OutlierSource o;
  o.stream = stream;
  o.checked = index.as<OutlierCounts>();
  o.present = stream_size > 16;
  o.escape_start = o.present ? reinterpret_cast<const uint64_t*>(o.checked + 1) : nullptr;
  o.exact_start = o.present ? o.escape_start + tiles + 1 : nullptr;
  o.value_bytes = uint32_t(dtype_size(type));
  o.keys_failed = reinterpret_cast<uint32_t*>(const_cast<uint8_t*>(index.data()) + index.size() - 8);
  return o;
}
}  // namespace

DeviceDecoder::DeviceDecoder(const uint8_t* outliers, uint64_t outliers_size, DType type, const Dims& dims,
                             const Quantization& quant, const OutlierChecks& checks, cudaStream_t stream,
                             const uint8_t* mask, uint64_t mask_size, const MissingValues& missing, Axes axes,
                             bool tile_order)
    : type_(type), grid_(dims), quant_(quant), stream_(stream), axes_(axes ? axes : all_axes(dims.rank)),
      tile_order_(tile_order && missing.empty()),
      missing_(missing) {
  require_data(outliers_size >= 16, "outlier stream shorter than its counts");
  require_data(grid_.tile_count() < (uint64_t(1) << 32), "field has too many tiles");
  if (!missing.empty()) index_mask(mask, mask_size);
  // The stream is checked and indexed on the device: a stream of its two counts alone (most
  // fields at most bounds) costs one small launch and no wait.
  outliers_ = outliers;
  outliers_size_ = outliers_size;
  const bool present = outliers_size > 16;
  const uint64_t tiles = grid_.tile_count();
  index_ = Buffer::device(sizeof(OutlierCounts) + (present ? 2 * (tiles + 1) * sizeof(uint64_t) : 0) + 8, stream);
  FZG_CUDA_CHECK(cudaMemsetAsync(index_.data() + index_.size() - 8, 0, 8, stream));  // keys_failed
  const OutlierSource source = outlier_source(outliers_, outliers_size_, index_, tiles, type);
  const Grid g = device_grid(grid_);
  with_shape(type, dims.rank, [&](auto, auto shape) {
    using S = decltype(shape);
    check_outliers_kernel<S::x, S::y, S::z>
        <<<present ? grid_for(outliers_size / 12, 256) : 1, present ? 256 : 32, 0, stream>>>(source, outliers_size, g,
                                                                                               checks);
    FZG_CUDA_CHECK_LAUNCH();
  });
  if (!present) return;
  outlier_starts_kernel<<<grid_for(tiles + 1, 256), 256, 0, stream>>>(source, tiles, grid_.tile.volume());
  FZG_CUDA_CHECK_LAUNCH();
}

// Copies the mask runs to aligned memory (a stored stream may start at any byte), checks
// them and finds each tile's first run, and with repeat runs each tile's source: one
// synchronization for the count, one for the checks.
void DeviceDecoder::index_mask(const uint8_t* mask, uint64_t mask_size) {
  require_data(mask_size >= 8, "mask stream shorter than its run count");
  uint64_t runs = 0;
  copy_bytes(&runs, Location::host, mask, Location::device, 8, stream_);
  require_data(runs <= (mask_size - 8) / 2 && mask_stream_size(runs) == mask_size, "mask stream size");
  const uint64_t tiles = grid_.tile_count(), stride = repeat_stride(grid_);
  mask_runs_ = Buffer::device(2 * runs, stream_);
  if (runs) copy_bytes_async(mask_runs_.data(), Location::device, mask + 8, Location::device, 2 * runs, stream_);
  // [starts: runs + 1][bad][repeat runs][tile_first: tiles + 1]
  mask_index_ = Buffer::device((runs + 3 + tiles + 1) * sizeof(uint64_t), stream_);
  uint64_t* starts = mask_index_.as<uint64_t>();
  uint64_t* bad = starts + runs + 1;
  uint64_t* tile_first = bad + 2;
  FZG_CUDA_CHECK(cudaMemsetAsync(bad, 0, 2 * sizeof(uint64_t), stream_));
  varlen::exclusive_scan(RunLengths{mask_runs_.as<uint16_t>(), runs}, runs, starts, uint64_t(0), varlen::Plus{},
                         stream_);
  index_mask_runs_kernel<<<grid_for(runs + 1, 256), 256, 0, stream_>>>(
      mask_runs_.as<uint16_t>(), starts, runs, tiles, grid_.tile.volume(), stride, missing_.count, tile_first, bad,
      reinterpret_cast<unsigned long long*>(bad + 1));
  FZG_CUDA_CHECK_LAUNCH();
  uint64_t check[3];
  copy_bytes(check, Location::host, starts + runs, Location::device, sizeof check, stream_);
  require_data(check[1] == 0 && check[0] == tiles * grid_.tile.volume(), "mask runs do not cover the field");
  if (check[2] == 0) return;  // every tile reads its own runs
  const OwnRuns own{mask_runs_.as<uint16_t>(), tile_first, {stride, tiles / stride}, tiles};
  Buffer before = Buffer::device((tiles + 1) * sizeof(uint64_t), stream_);
  varlen::exclusive_scan(own, tiles, before.as<uint64_t>(), uint64_t(0), Max{}, stream_);
  mask_sources_ = Buffer::device(tiles * sizeof(uint64_t), stream_);
  mask_sources_kernel<<<grid_for(tiles, 256), 256, 0, stream_>>>(own, before.as<uint64_t>(),
                                                                mask_sources_.as<uint64_t>());
  FZG_CUDA_CHECK_LAUNCH();
}

void DeviceDecoder::data_bits(uint32_t* words) const {
  const MaskSource mask = mask_source(mask_runs_, mask_index_, mask_sources_, grid_.tile_count(), missing_);
  const Grid g = device_grid(grid_);
  with_shape(type_, grid_.dims.rank, [&](auto, auto shape) {
    using S = decltype(shape);
    launch_on_tiles(mask_bits_kernel<S::x, S::y, S::z>, g, stream_, mask, g,
                    BitsTarget{words, DataBits(grid_.dims)});
  });
}

void DeviceDecoder::decode_whole(const uint16_t* codes, void* field) const {
  const Dims& d = grid_.dims;
  const uint64_t n = d.count(), nx = d.x, ny = d.y, nz = d.z;
  if (n == 0) return;
  const Grid g = device_grid(grid_);
  const OutlierSource o = outlier_source(outliers_, outliers_size_, index_, grid_.tile_count(), type_);
  // Grid-stride kernels over the outliers, whose counts only the device knows: at most one an
  // entry of 12 bytes of the stream.
  const uint64_t most_outliers = outliers_size_ > 16 ? outliers_size_ / 12 : 0;
  // The first pass reads the codes, each pass after it the sums, and the last writes the values.
  const bool along_x = axes_ & axis_x, along_y = ny > 1 && (axes_ & axis_y), along_z = nz > 1 && (axes_ & axis_z);
  const bool rows = along_x && ny * nz > 1;  // x from the codes, a warp a row (2D and 3D chunks)
  const bool lines = !rows && (along_y || along_z);  // y, or z, from the codes
  Buffer q;
  if (!(rows || lines) || int(along_x) + int(along_y) + int(along_z) > 1) q = Buffer::device(n * sizeof(int32_t), stream_);
  int32_t* at = q.as<int32_t>();
  with_shape(type_, d.rank, [&](auto zero, auto shape) {
    using T = decltype(zero);
    using S = decltype(shape);
    T* values = static_cast<T*>(field);
    auto scan_lines = [&](bool along, const uint16_t* from, bool last) {
      whole_scan_lines_kernel<T, S::x, S::y, S::z><<<grid_for(along ? nx * ny : nx * nz, 256), 256, 0, stream_>>>(
          from, o, at, g, along, last ? values : nullptr, quant_.step);
    };
    if constexpr (S::x == 32) {
      if (rows)
        whole_scan_x_kernel<T, S::x, S::y, S::z><<<grid_for(ny * nz * 32, 256), 256, 0, stream_>>>(
            codes, o, g, at, along_y || along_z ? nullptr : values, quant_.step);
    }
    if (lines) {
      scan_lines(/*along z*/ !along_y, codes, !(along_y && along_z));
      if (along_y && along_z) scan_lines(true, nullptr, true);
    } else if (rows) {
      if (along_y) scan_lines(false, nullptr, !along_z);
      if (along_z) scan_lines(true, nullptr, true);
    } else {  // one row or no axis with more than one point: the deltas, escapes patched in
      whole_deltas_kernel<<<grid_for(n, 256), 256, 0, stream_>>>(codes, n, at);
      if (most_outliers)
        whole_escapes_kernel<S::x, S::y, S::z><<<grid_for(most_outliers, 256), 256, 0, stream_>>>(o, g, at);
      if (along_x) {  // the shared scan (a warp walking 2^26 values took ~1 s); q[i] = sums[i + 1]
        Buffer sums = Buffer::device((n + 1) * sizeof(uint32_t), stream_);
        varlen::exclusive_scan(DeltaTerms{at, n}, n, sums.as<uint32_t>(), 0u, varlen::Plus{}, stream_);
        copy_bytes_async(at, Location::device, sums.as<uint32_t>() + 1, Location::device, n * sizeof(int32_t), stream_);
      }
      whole_values_kernel<T><<<grid_for(n, 256), 256, 0, stream_>>>(at, n, quant_.step, values);
    }
    if (most_outliers)
      whole_exacts_kernel<T, S::x, S::y, S::z><<<grid_for(most_outliers, 256), 256, 0, stream_>>>(o, g,
                                                                                                 static_cast<T*>(field));
  });
  FZG_CUDA_CHECK_LAUNCH();
}

void DeviceDecoder::decode_rows(uint64_t first_row, uint64_t end_row, const uint16_t* window, uint64_t window_first,
                                void* field, uint64_t field_first) {
  if (first_row >= end_row) return;
  const uint64_t tiles = grid_.tile_count();
  const OutlierSource o = outlier_source(outliers_, outliers_size_, index_, tiles, type_);
  Grid g = rows_grid(grid_, first_row, end_row, window_first);
  g.field_first = field_first;
  g.tile_order = tile_order_;
  const MaskSource mask = mask_source(mask_runs_, mask_index_, mask_sources_, tiles, missing_);
  with_shape(type_, grid_.dims.rank, [&](auto zero, auto shape) {
    using T = decltype(zero);
    using S = decltype(shape);
    launch_on_tiles(decode_kernel<T, S::x, S::y, S::z>, g, stream_, window, o, mask, g, quant_.step,
                    static_cast<T*>(field), axes_);
  });
}

std::vector<uint64_t> axes_histograms_cuda(const void* field, DType type, const Dims& dims, const Quantization& quant,
                                           const MissingValues& missing, const std::vector<Span>& spans,
                                           const std::vector<Axes>& candidates, cudaStream_t stream) {
  const TileGrid grid(dims);
  const uint32_t bins = axes_histogram_bins;
  std::vector<uint64_t> counts(spans.size() * candidates.size() * bins);
  if (grid.tile_count() == 0 || counts.empty()) return counts;
  // With fill values every span counts by tiles (the CPU's rule): a second tile span then
  // repeats the first's counts.
  uint32_t span_bits = 0;
  for (Span span : spans) span_bits |= span == Span::chunk && missing.empty() ? 2u : 1u;
  const bool repeat = spans.size() == 2 && span_bits == 1u;
  check_sample_spans(spans);
  if (candidates.size() > 7 || grid.tile_count() >= (uint64_t(1) << 32))
    fail(ErrorCode::invalid_argument, "lorenzo: axes sample of an unexpected shape");
  AxesCandidates list{};
  list.count = uint32_t(candidates.size());
  std::copy(candidates.begin(), candidates.end(), list.axes);
  const uint64_t stride = axes_sample_stride(grid.tile_count()), samples = (grid.tile_count() + stride - 1) / stride;
  const uint64_t counted = repeat ? counts.size() / 2 : counts.size();
  Buffer device_counts = Buffer::device(counted * sizeof(uint32_t), stream);
  FZG_CUDA_CHECK(cudaMemsetAsync(device_counts.data(), 0, device_counts.size(), stream));
  const Grid g = device_grid(grid);
  with_shape(type, dims.rank, [&](auto zero, auto shape) {
    using T = decltype(zero);
    using S = decltype(shape);
    auto kernel = axes_histogram_kernel<T, S::x, S::y, S::z>;
    kernel<<<resident_grid(kernel, block_threads, samples, 1), block_threads, 0, stream>>>(
        static_cast<const T*>(field), g, constants_of(quant, sizeof(T) == 4), missing, stride, list, span_bits,
        device_counts.as<uint32_t>());
    FZG_CUDA_CHECK_LAUNCH();
  });
  std::vector<uint32_t> narrow(counted);
  copy_bytes(narrow.data(), Location::host, device_counts.data(), Location::device, counted * sizeof(uint32_t), stream);
  std::copy(narrow.begin(), narrow.end(), counts.begin());
  if (repeat) std::copy(narrow.begin(), narrow.end(), counts.begin() + counted);
  return counts;
}

namespace {

__global__ void resolve_kernel(BoundTerms terms, bool f32, const double* __restrict__ range,
                               DeviceQuantization* __restrict__ out) {
  const Quantization q = quantization_of(terms, f32, range[0], range[1]);
  *out = {constants_of(q, f32), q};
}

__global__ void write_quantization_kernel(DeviceQuantization resolved, DeviceQuantization* __restrict__ out) {
  *out = resolved;
}

}  // namespace

Buffer resolve_quantization_cuda(const BoundTerms& terms, DType type, const double* range, cudaStream_t stream) {
  Buffer out = Buffer::device(sizeof(DeviceQuantization), stream);
  resolve_kernel<<<1, 1, 0, stream>>>(terms, type == DType::f32, range, out.as<DeviceQuantization>());
  FZG_CUDA_CHECK_LAUNCH();
  return out;
}

Buffer quantization_to_device(const Quantization& quant, DType type, cudaStream_t stream) {
  Buffer out = Buffer::device(sizeof(DeviceQuantization), stream);
  // A launch with the bytes as its argument: queued like the work around it, and no copy
  // from pageable memory to wait for.
  write_quantization_kernel<<<1, 1, 0, stream>>>({constants_of(quant, type == DType::f32), quant},
                                                 out.as<DeviceQuantization>());
  FZG_CUDA_CHECK_LAUNCH();
  return out;
}

Buffer encode_cuda(const void* field, DType type, const Dims& dims, const Buffer& quantization, uint16_t* codes,
                   uint64_t* code_count, cudaStream_t stream, const MissingValues& missing, Buffer* mask,
                   const Prediction& prediction, const uint32_t* data_bits) {
  check_code_order(prediction, missing);
  if (quantization.size() != sizeof(DeviceQuantization) || !quantization.on_device())
    fail(ErrorCode::invalid_argument, "lorenzo: the encode's quantization is not a DeviceQuantization on the device");
  const QuantConstants* constants = &quantization.as<DeviceQuantization>()->constants;
  auto encoder = std::make_shared<DeviceEncoder>(field, type, dims, stream, missing, prediction, data_bits);
  // With fill values the code count is known before the encode (the scan of the data bits'
  // counts): read back beside it, so that the host waits for the scan alone.
  std::unique_ptr<QueuedReadBack> codes_total;
  if (!missing.empty()) codes_total = std::make_unique<QueuedReadBack>(encoder->totals() + 3, sizeof(uint64_t), stream);
  encoder->encode_rows(constants, 0, tile_rows(dims).count, codes, 0);
  encoder->finish();
  *code_count = dims.count();
  if (codes_total) std::memcpy(code_count, codes_total->wait(), sizeof(uint64_t));
  // The outlier and mask streams are sized by the encode's totals: read back once the next
  // stage's work is queued too, when the streams are first asked for (Buffer::deferred).
  auto totals = std::make_shared<QueuedReadBack>(encoder->totals(), 3 * sizeof(uint64_t), stream);
  auto total = [totals](int i) {
    uint64_t value;
    std::memcpy(&value, static_cast<const uint8_t*>(totals->wait()) + i * sizeof(uint64_t), sizeof value);
    return value;
  };
  if (mask) *mask = Buffer::deferred([encoder, total] { return encoder->mask(total(2)); });
  // `quantization` kept: it owns `constants` where the host's were written to the device (a
  // view of StageContext::resolved is owned by the executor, past the chunk's steps).
  return Buffer::deferred([encoder, total, quantization, constants] {
    const OutlierCounts counts{total(0), total(1)};
    trace::mark("lorenzo: outlier totals read");
    return encoder->outliers(constants, counts);
  });
}

void decode_cuda(const uint16_t* codes, uint64_t code_count, const uint8_t* outliers, uint64_t outliers_size,
                 DType type, const Dims& dims, const Quantization& quant, void* field, const OutlierChecks& checks,
                 cudaStream_t stream, const uint8_t* mask, uint64_t mask_size, const MissingValues& missing,
                 bool data_only, const Prediction& prediction) {
  check_code_order(prediction, missing);
  const uint64_t n = dims.count();
  require_data(code_count == n || (!missing.empty() && data_only && code_count < n), "lorenzo codes size");
  DeviceDecoder decoder(outliers, outliers_size, type, dims, quant, checks, stream, mask, mask_size, missing,
                        prediction.axes_of(dims), prediction.tile_order);
  if (prediction.span == Span::chunk && missing.empty()) return decoder.decode_whole(codes, field);
  if (missing.empty() || !data_only) return decoder.decode_rows(0, tile_rows(dims).count, codes, 0, field);
  Buffer bits = Buffer::device(DataBits(dims).words() * sizeof(uint32_t), stream), all = Buffer::device(2 * n, stream);
  decoder.data_bits(bits.as<uint32_t>());
  scatter_data_codes_cuda(codes, code_count, bits.as<uint32_t>(), dims, all.as<uint16_t>(), stream);
  decoder.decode_rows(0, tile_rows(dims).count, all.as<uint16_t>(), 0, field);
}

}  // namespace fzg::lorenzo
