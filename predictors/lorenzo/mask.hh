// Missing points in the Lorenzo stage: what a fill point predicts from, and the mask stream
// that gives fill points back. Shared bit for bit by the CPU and CUDA backends.
//
// A missing point (see core/missing_values.hh) is not quantized and never an outlier. Its q,
// which only its neighbours' predictions read, is its own Lorenzo prediction, taken in raster
// order inside its tile (each missing point sees its lower neighbours' final q; neighbours
// outside the tile count as 0): its delta is 0 by construction, so its code is left out of
// the codes (lorenzo.hh) and the decoder puts the 0 back. Inside land the q continue the
// coast's, and at a coastline a point with data is predicted from them as from any neighbour.
//
// The mask stream (present only when the stage has fill values):
//   u64 run_count R | u16 runs[R]
// A point's symbol is 0 when it holds data (or lies outside the field in an edge tile) and s
// when it equals fill value s - 1. What the runs code is each key's difference from the key
// one slice before in its tile (the row before in a 2D tile, the plane before in a 3D tile;
// symbol 0 before the first slice, and always in 1D): 0 where the symbols are equal, else the
// symbol + 1, so a land mask that repeats from row to row or plane to plane (a coastline, a
// mask constant in time) codes as long runs of 0. A run is `length - 1` in bits 0-10 and its
// difference in bits 11-15. Runs go in key order (tile after tile, tile-major keys as for
// outliers), never cross a tile boundary, and cover every key of every tile.
//
// A tile whose runs would be those of the tile one layer before it (the tile before it along
// the slowest tile axis in its chunk: one tile row of tiles_x * tiles_y in 3D, tiles_x in 2D,
// 1 in 1D), and which has more than one run, takes the single *repeat* run instead: the whole
// tile with difference 31, which no symbol can have (a stage has at most 15 fill values). Its
// runs are then those of that tile, itself maybe a repeat: a mask constant in time, or one
// that changes at a few depths, costs one run per tile above its first tile layer. Tiles of
// one run never repeat, so an all-data or all-missing tile always reads its own.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/field.hh"
#include "predictors/lorenzo/quantizer.hh"
#include "runtime/portable.hh"

namespace fzg::lorenzo {

// Keys from a point to the one a slice before it in its tile (0 for 1D tiles: no slices).
constexpr uint32_t mask_slice_keys(uint32_t tile_x, uint32_t tile_y, uint32_t tile_z) {
  return tile_z > 1 ? tile_x * tile_y : tile_y > 1 ? tile_x : 0;
}
FZG_HOST_DEVICE uint32_t mask_difference(uint32_t symbol, uint32_t reference) {
  return symbol == reference ? 0u : symbol + 1;
}
FZG_HOST_DEVICE uint32_t mask_symbol(uint32_t difference, uint32_t reference) {
  return difference ? difference - 1 : reference;
}

FZG_HOST_DEVICE uint16_t mask_run(uint32_t length, uint32_t difference) {
  return uint16_t((length - 1) | difference << 11);
}
FZG_HOST_DEVICE uint32_t mask_run_length(uint16_t run) { return (run & 0x7ffu) + 1; }
FZG_HOST_DEVICE uint32_t mask_run_difference(uint16_t run) { return run >> 11; }

inline uint64_t mask_stream_size(uint64_t runs) { return 8 + 2 * runs; }

constexpr uint32_t mask_repeat_difference = 31;
FZG_HOST_DEVICE uint16_t mask_repeat_run(uint32_t volume) { return mask_run(volume, mask_repeat_difference); }
FZG_HOST_DEVICE bool is_mask_repeat(uint16_t run) { return mask_run_difference(run) == mask_repeat_difference; }

// Tiles from a tile to the one a repeat run takes its runs from (see above).
FZG_HOST_DEVICE uint64_t mask_repeat_stride(uint32_t tile_y, uint32_t tile_z, uint64_t tiles_x, uint64_t tiles_y) {
  return tile_z > 1 ? tiles_x * tiles_y : tile_y > 1 ? tiles_x : 1;
}

}  // namespace fzg::lorenzo
