// GPULZ's equality bits of 2-byte symbols from bit planes: the GPU's probe (gpulz.cu) takes a
// plane of a window of 32 symbols with one ballot, and a lane's 32 distances of a plane with a
// funnel shift and a bitwise op, where a distance at a time costs a load, a compare and a
// select. The symbols are first mapped by a bijection of 16-bit values (equal symbols stay
// equal, unequal ones unequal) under which a predictor's codes use only the low planes, and the
// others are skipped: offset codes by their zigzagged difference from a reference,
// sign-magnitude ones by moving the sign to bit 0.
// The arithmetic is written here once, plainly enough to be checked on the host.
#pragma once
#include <cstdint>

#include "runtime/portable.hh"

namespace fzg::gpulz {

constexpr int symbol_planes = 16;

// The zigzagged 16-bit difference of x from ref: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ... (codes
// offset from a centre, as cuSZ's radius writes them).
FZG_HOST_DEVICE constexpr uint32_t plane_symbol(uint32_t x, uint32_t ref) {
  const uint32_t d = (x - ref) & 0xffffu;
  return ((d << 1) ^ (d & 0x8000u ? 0xffffu : 0u)) & 0xffffu;
}

// Sign-magnitude codes (bit 15 the sign, as fzg's Lorenzo writes them: +-m is m or 0x8000 | m)
// with the sign moved to bit 0, a rotation: +-m -> 2 m, 2 m + 1. The zigzagged difference
// would give every code of the other sign than the reference all 16 planes.
FZG_HOST_DEVICE constexpr uint32_t plane_symbol_sign_magnitude(uint32_t x) {
  return ((x << 1) | (x >> 15 & 1u)) & 0xffffu;
}

// The map a chunk's probe uses: the one whose symbols use fewer planes (a bijection either way).
struct PlaneMap {
  uint32_t ref = 0;
  bool sign_magnitude = false;
  FZG_HOST_DEVICE constexpr uint32_t operator()(uint32_t x) const {
    return sign_magnitude ? plane_symbol_sign_magnitude(x) : plane_symbol(x, ref);
  }
};

// Bits shift .. 31 of lo, then bits 0 .. shift - 1 of hi (shift < 32).
FZG_HOST_DEVICE uint32_t funnel_right(uint32_t lo, uint32_t hi, uint32_t shift) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(lo, hi, shift);
#else
  return shift ? lo >> shift | hi << (32 - shift) : lo;
#endif
}

// The index of v's highest set bit (v != 0).
FZG_HOST_DEVICE int highest_bit(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return 31 - __clz(v);
#else
  return 31 - __builtin_clz(v);
#endif
}

FZG_HOST_DEVICE uint32_t reverse_bits(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __brev(v);
#else
  uint32_t r = 0;
  for (int k = 0; k < 32; ++k) r |= (v >> k & 1u) << (31 - k);
  return r;
#endif
}

// The planes plane_equalities takes for `active`: from its highest set bit to its lowest.
FZG_HOST_DEVICE uint32_t planes_taken(uint32_t active) {
  return active ? uint32_t(highest_bit(active) - highest_bit(active & (0u - active))) + 1u : 0u;
}

// E(i) for i = 32 w + lane whose plane symbol is `own`: bit d - 1 of e[d / 32] (d counted from
// 0 there) set where the symbols at i and i - d are equal, 1 <= d <= 32 G. plane_of(k, bit) is
// the plane of `bit` (a single bit) of window w - k (k = 0 .. G; bit t: position 32 (w - k) + t);
// only planes from the highest to the lowest set in `active` are asked for, and a plane whose bit
// is clear there must be zero in all those windows and in `own`. Group g's distances 32 g + 1
// .. 32 g + 32 are the positions i - 32 g - 32 .. i - 32 g - 1, which windows w - g - 1 and w - g
// hold from bit `lane` on: a funnel shift gives them in position order, a plane at a time, where
// a bit equal to the own symbol's keeps them; one bit reversal puts them in distance order.
// Every plane between the highest and the lowest active one is taken: one that no symbol uses
// keeps every distance, and a predictor's codes use the low planes without gaps, so a step of
// one bit costs less than finding the next active plane (a find, a shift and a clear each).
template <int G, typename PlaneOf>
FZG_HOST_DEVICE void plane_equalities(PlaneOf plane_of, uint32_t active, uint32_t lane, uint32_t own,
                                      uint32_t (&e)[G]) {
  uint32_t keep[G];
  FZG_UNROLL
  for (int g = 0; g < G; ++g) keep[g] = ~0u;
  if (active) {  // uniform across the warp
    const uint32_t lowest = active & (0u - active);
    for (uint32_t bit = 1u << highest_bit(active); bit >= lowest; bit >>= 1) {
      uint32_t plane[G + 1];
      FZG_UNROLL
      for (int k = 0; k <= G; ++k) plane[k] = plane_of(k, bit);
      const uint32_t mine = own & bit ? ~0u : 0u;
      FZG_UNROLL
      for (int g = 0; g < G; ++g) keep[g] &= ~(funnel_right(plane[g + 1], plane[g], lane) ^ mine);
    }
  }
  FZG_UNROLL
  for (int g = 0; g < G; ++g) e[g] = reverse_bits(keep[g]);
}

}  // namespace fzg::gpulz
