// SSIM on the GPU: the CPU's windows (tools/ssim_window.hh, the same code), read from
// shared-memory tiles instead of the field.
//
// Work decomposition: a block owns a tile of up to 32 x 4 x 4 windows (one thread per window,
// 32 consecutive windows along x to a warp) and first copies the points they cover, about
// (2*32+5) x (2*4+5) x (2*4+5) for windows of 7 moved by 2, into shared memory; a thread then
// runs its window's two passes from there. A window's 343 points are read twice from shared
// memory and each field point about 3 times from global memory (the tiles' overlap): 4 or 8
// bytes per value and field, plus the mask's byte.
//
// Shared memory holds each row of a tile split by phase (x mod shift): a warp's 32 windows
// start `shift` points apart, so at every step of their loops they read 32 consecutive
// elements of one phase: no bank conflicts.
//
// The mean is deterministic: each block adds its windows in a fixed order (CUB's warp
// reduction, then the warps in turn), and CUB's device reduction adds the blocks' totals
// without atomics.
#include <cub/device/device_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hh"
#include "runtime/buffer.hh"
#include "runtime/cuda_check.cuh"
#include "runtime/launch.cuh"
#include "tools/metrics.hh"
#include "tools/ssim_window.hh"

namespace fzg {

namespace {

constexpr uint32_t max_tile_threads = 512;
constexpr uint32_t warp_threads = 32;
// Two blocks' tiles fit in an H100 SM's 228 KB: while one block loads, another computes.
constexpr size_t tile_bytes_budget = 110 * 1024;

// The kept windows' SSIM total and count.
struct WindowTotal {
  double ssim;
  unsigned long long windows;
};

struct AddTotals {
  __host__ __device__ WindowTotal operator()(const WindowTotal& a, const WindowTotal& b) const {
    return {a.ssim + b.ssim, a.windows + b.windows};
  }
};

// Where the windows lie: their extent per axis (the window, or a shorter axis), the shift,
// and how many there are per axis; the field's extents.
struct WindowGrid {
  uint64_t dx, dy, dz;
  uint32_t wx, wy, wz, shift;
  uint64_t nx, ny, nz;
};

// Bytes of shared memory a tile of tx x ty x tz windows takes: both fields' points, each row
// `shift` phases of ceil(points / shift) elements, and the table of x offsets. In double, as
// a huge shift or window could overflow an integer before the budget turns it down.
double tile_bytes(const WindowGrid& g, uint32_t tx, uint32_t ty, uint32_t tz, size_t value_bytes) {
  const double px = double(tx - 1) * g.shift + g.wx, py = double(ty - 1) * g.shift + g.wy,
               pz = double(tz - 1) * g.shift + g.wz;
  const double columns = std::ceil(px / g.shift);
  // The offsets' table is padded to whole 16-byte groups: the compiler reads it in pairs
  // (an 8-byte load at an odd window width's last offset), which compute-sanitizer reported
  // as a read past the block's shared memory.
  return 2.0 * double(value_bytes) * pz * py * g.shift * columns + double(sizeof(uint32_t)) * ((g.wx + 3) / 4 * 4);
}

// A block's windows per axis, the points they cover, and the shared-memory layout of those
// points: rows of `shift` phases of `columns` elements each. Made once tile_bytes() fits.
struct TileShape {
  uint32_t x, y, z;
  uint32_t px, py, pz;
  uint32_t columns;

  TileShape(const WindowGrid& g, uint32_t tx, uint32_t ty, uint32_t tz)
      : x(tx), y(ty), z(tz), px((tx - 1) * g.shift + g.wx), py((ty - 1) * g.shift + g.wy),
        pz((tz - 1) * g.shift + g.wz), columns((px + g.shift - 1) / g.shift) {}
  __host__ __device__ uint32_t row_elements(uint32_t shift) const { return shift * columns; }
  __host__ __device__ uint32_t elements(uint32_t shift) const { return pz * py * row_elements(shift); }
  uint32_t threads() const { return (x * y * z + warp_threads - 1) / warp_threads * warp_threads; }
};

uint32_t next_power_of_two(uint64_t n) {
  uint32_t p = 1;
  while (p < n && p < max_tile_threads) p *= 2;
  return p;
}

// The largest tile of at most 32 x 4 x 4 windows (512 x 1 x 1 on a line, 32 x 16 x 1 on a
// plane), no larger than the field's window counts, whose points fit the budget (z halves
// first, then y, then x); one window per tile when even that is over it. Fails when a single
// window's points do not fit in a block's shared memory.
TileShape choose_tile(const WindowGrid& g, size_t value_bytes) {
  uint32_t tx = warp_threads, ty = 4, tz = 4;
  if (g.ny == 1 && g.nz == 1) tx = max_tile_threads, ty = tz = 1;
  else if (g.nz == 1) ty = max_tile_threads / warp_threads, tz = 1;
  tx = std::min(tx, next_power_of_two(g.nx)), ty = std::min(ty, next_power_of_two(g.ny)),
  tz = std::min(tz, next_power_of_two(g.nz));
  while (tile_bytes(g, tx, ty, tz, value_bytes) > double(tile_bytes_budget) && tx * ty * tz > 1) {
    if (tz > 1 && tz >= ty) tz /= 2;
    else if (ty > 1) ty /= 2;
    else tx /= 2;
  }
  if (tile_bytes(g, tx, ty, tz, value_bytes) > double(max_shared_bytes_per_block()))
    fail(ErrorCode::unsupported, "SSIM on the GPU: a window of " + std::to_string(g.wx) + "x" + std::to_string(g.wy) +
                                     "x" + std::to_string(g.wz) + " points moved by " + std::to_string(g.shift) +
                                     " does not fit in shared memory");
  return TileShape(g, tx, ty, tz);
}

// One block per tile: the tile's points into shared memory (a missing point as a NaN
// original, so that its windows are left out like a non-finite one's), then one window per
// thread, then the block's total of its kept windows into totals[blockIdx.x].
template <typename T>
__global__ void __launch_bounds__(max_tile_threads, 2)
    tile_ssim_kernel(const T* __restrict__ original, const T* __restrict__ reconstructed,
                     const uint8_t* __restrict__ missing, WindowGrid g, TileShape t, WindowTotal* totals) {
  extern __shared__ __align__(16) unsigned char shared[];
  const uint32_t tile_elements = t.elements(g.shift);
  T* tile_a = reinterpret_cast<T*>(shared);
  T* tile_b = tile_a + tile_elements;
  uint32_t* column_of = reinterpret_cast<uint32_t*>(tile_b + tile_elements);
  const uint32_t row = t.row_elements(g.shift);

  const uint64_t tiles_x = (g.nx + t.x - 1) / t.x, tiles_y = (g.ny + t.y - 1) / t.y;
  const uint64_t bx = blockIdx.x % tiles_x, by = blockIdx.x / tiles_x % tiles_y, bz = blockIdx.x / tiles_x / tiles_y;
  const uint64_t ox = bx * t.x * g.shift, oy = by * t.y * g.shift, oz = bz * t.z * g.shift;
  // The tile's points inside the field: every kept window lies inside it.
  const uint32_t px = uint32_t(std::min<uint64_t>(t.px, g.dx - ox)), py = uint32_t(std::min<uint64_t>(t.py, g.dy - oy)),
                 pz = uint32_t(std::min<uint64_t>(t.pz, g.dz - oz));
  for (uint32_t k = threadIdx.x; k < px * py * pz; k += blockDim.x) {
    const uint32_t x = k % px, y = k / px % py, z = k / px / py;
    const uint64_t i = (ox + x) + g.dx * ((oy + y) + g.dy * (oz + z));
    const uint32_t at = (z * t.py + y) * row + x % g.shift * t.columns + x / g.shift;
    tile_a[at] = missing && missing[i] ? std::numeric_limits<T>::quiet_NaN() : original[i];
    tile_b[at] = reconstructed[i];
  }
  for (uint32_t x = threadIdx.x; x < g.wx; x += blockDim.x) column_of[x] = x % g.shift * t.columns + x / g.shift;
  __syncthreads();

  WindowTotal mine{0, 0};
  const uint32_t tx = threadIdx.x % t.x, ty = threadIdx.x / t.x % t.y, tz = threadIdx.x / t.x / t.y;
  if (tz < t.z && bx * t.x + tx < g.nx && by * t.y + ty < g.ny && bz * t.z + tz < g.nz) {
    const T* a = tile_a + (tz * g.shift * t.py + ty * g.shift) * row + tx;
    const T* b = tile_b + (tz * g.shift * t.py + ty * g.shift) * row + tx;
    const double w = ssim_window::window_ssim(g.wx, g.wy, g.wz, [&](uint32_t x, uint32_t y, uint32_t z) {
      const uint32_t at = (z * t.py + y) * row + column_of[x];
      return ssim_window::Point{double(a[at]), double(b[at])};
    });
    if (!isnan(w)) mine = {w, 1};
  }

  using WarpReduce = cub::WarpReduce<WindowTotal>;
  __shared__ typename WarpReduce::TempStorage warp_storage[max_tile_threads / warp_threads];
  __shared__ WindowTotal warp_totals[max_tile_threads / warp_threads];
  const uint32_t warp = threadIdx.x / warp_threads;
  const WindowTotal warp_total = WarpReduce(warp_storage[warp]).Reduce(mine, AddTotals{});
  if (threadIdx.x % warp_threads == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  if (threadIdx.x == 0) {
    WindowTotal block_total{0, 0};
    for (uint32_t w = 0; w < blockDim.x / warp_threads; ++w) block_total = AddTotals{}(block_total, warp_totals[w]);
    totals[blockIdx.x] = block_total;
  }
}

template <typename T>
double ssim_typed(const T* original, const T* reconstructed, const uint8_t* missing, const WindowGrid& g,
                  cudaStream_t stream) {
  const TileShape tile = choose_tile(g, sizeof(T));
  const size_t shared_bytes = size_t(tile_bytes(g, tile.x, tile.y, tile.z, sizeof(T)));
  const uint64_t tiles = (g.nx + tile.x - 1) / tile.x * ((g.ny + tile.y - 1) / tile.y) * ((g.nz + tile.z - 1) / tile.z);
  if (tiles > uint64_t(std::numeric_limits<int>::max()))
    fail(ErrorCode::unsupported, "SSIM on the GPU: too many windows for one grid");

  Buffer totals = Buffer::device(tiles * sizeof(WindowTotal), stream);
  FZG_CUDA_CHECK(cudaFuncSetAttribute(tile_ssim_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(shared_bytes)));
  tile_ssim_kernel<T><<<unsigned(tiles), tile.threads(), shared_bytes, stream>>>(original, reconstructed, missing, g,
                                                                                   tile, totals.as<WindowTotal>());
  FZG_CUDA_CHECK_LAUNCH();

  Buffer total = Buffer::device(sizeof(WindowTotal), stream), temp;
  size_t temp_bytes = 0;
  const WindowTotal none{0, 0};
  FZG_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, temp_bytes, totals.as<WindowTotal>(), total.as<WindowTotal>(),
                                           tiles, AddTotals{}, none, stream));
  temp = Buffer::device(temp_bytes, stream);
  FZG_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), temp_bytes, totals.as<WindowTotal>(), total.as<WindowTotal>(),
                                           tiles, AddTotals{}, none, stream));
  const WindowTotal sum = read_back(total.as<WindowTotal>(), stream);
  return sum.windows ? sum.ssim / double(sum.windows) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

double ssim_cuda(const void* original, const void* reconstructed, DType type, const Dims& dims, uint32_t window,
                 uint32_t shift, const uint8_t* missing, cudaStream_t stream) {
  // As the CPU's: nothing to measure is NaN; an integer field is 1.
  if (dims.count() == 0 || window == 0 || shift == 0) return std::numeric_limits<double>::quiet_NaN();
  if (!is_float(type)) return 1.0;
  WindowGrid g{dims.x, dims.y, dims.z, uint32_t(std::min<uint64_t>(window, dims.x)),
               uint32_t(std::min<uint64_t>(window, dims.y)), uint32_t(std::min<uint64_t>(window, dims.z)), shift, 0, 0, 0};
  g.nx = (g.dx - g.wx) / shift + 1, g.ny = (g.dy - g.wy) / shift + 1, g.nz = (g.dz - g.wz) / shift + 1;
  if (type == DType::f32)
    return ssim_typed(static_cast<const float*>(original), static_cast<const float*>(reconstructed), missing, g, stream);
  return ssim_typed(static_cast<const double*>(original), static_cast<const double*>(reconstructed), missing, g, stream);
}

}  // namespace fzg
