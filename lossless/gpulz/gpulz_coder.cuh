// GPULZ's CUDA encoder (its coder for the chunked-stream scaffold, varlen/chunked_stream.cuh):
// the CPU's probes and parse (gpulz_parse.hh), computed in parallel, a warp per chunk or, for
// large chunks, a block (DeviceCoder's Block).
//
// Probe. Lane p holds position i = s + p of a window of 32 and, as G words of bits, E(i): bit
// d - 1 set where x[i] == x[i - d] (d <= window, d <= i), from __match_any_sync where the window
// holds few symbols and otherwise from the symbols' bit planes (2-byte symbols, windows up to
// 64, where the chunk's symbols, as offsets from its first or as sign-magnitude codes, use few
// planes), two distances a 4-byte word (other 2-byte symbols) or a distance at a time
// (`equalities`). A match of length L at d from i is L positions with bit d - 1 set, so with
// A1 = E and A2k(i) = Ak(i) & Ak(i + k) the distances that match at least 16 are A16(i), and
// the longest L below 16 follows by binary lifting (L += k where some distance left also
// matches k more from i + L: A8, A4, A2, A1 at i + L); the nearest such distance is the lowest
// bit left. That is `probe`'s answer (longest, nearest on a tie) without following every
// distance's run. The warp takes the windows from the last, keeping the next window's E and
// A2-A8 for the positions up to 15 ahead.
// Parse. The warp walks the chunk a window at a time: from the window's first token start e,
// every lane's next start (one symbol on, a match's length on, or "leaves the window") and the
// starts it reaches are doubled by shuffles five times (pointer jumping), and e's lane holds
// the window's starts; where at most one lane from e on starts a match (most windows of codes
// that do not compress), the starts are the literals around it, without the doubling. A match
// of 16 (probe_cap) ends the walk in the window; its extension is found 32 symbols at a time.
// The walk gives each window its starts, matches and first token's place, so the tokens and
// flag bits are then written a window at a time. A chunk whose tokens outgrow it stops the walk
// (stored raw).
// Block (chunks of 8-16 KiB): the same probes, each warp a share of the windows; the far
// candidates from a sort rather than a table; the parse from each position's exit from its
// window, so that only the walk over windows is serial (code_block).
#pragma once
#include <cub/block/block_scan.cuh>
#include <type_traits>
#include <utility>

#include "lossless/gpulz/gpulz.hh"
#include "lossless/gpulz/gpulz_parse.hh"
#include "lossless/gpulz/pair_equalities.hh"
#include "lossless/gpulz/plane_equalities.hh"
#include "runtime/device_words.cuh"
#include "varlen/chunked_stream.cuh"

namespace fzg::gpulz::detail {

constexpr uint32_t all_lanes = 0xffffffffu;
constexpr uint32_t few_symbols = 4;  // in a window, for equalities_matched (its cost model)
// Lanes from the walk's start in a window that start a match, at most, for starts_by_matches: on
// an H200 1 and 3 measured alike, 0 no better (GPULZ's encode of p100's codes at rel 1e-4).
constexpr uint32_t few_matches = 1;

__host__ __device__ constexpr uint32_t align16(uint32_t n) { return (n + 15) / 16 * 16; }

// A probe (length | d << 8, as `probe` gives it) as the u16 shared memory keeps a position's:
// narrow, as it is (d <= 255); wide, the length (at most probe_cap) in bits 0-4 and d - 1 (below
// wide_reach) in bits 5-15. 0: none.
static_assert(probe_cap < 32 && wide_reach <= 2048, "a wide probe fits 16 bits");
template <bool Wide>
__device__ __forceinline__ uint16_t pack_probe(uint32_t probe) {
  if constexpr (Wide) return probe ? uint16_t((probe & 0xffu) | ((probe >> 8) - 1) << 5) : uint16_t(0);
  return uint16_t(probe);
}
template <bool Wide>
__device__ __forceinline__ uint32_t probe_length(uint32_t packed) { return Wide ? packed & 31u : packed & 0xffu; }
template <bool Wide>
__device__ __forceinline__ uint32_t probe_distance(uint32_t packed) { return Wide ? (packed >> 5) + 1 : packed >> 8; }

// One chunk's encode in shared memory: the symbols behind `front` bytes (x[i - d] is read for
// every d a lane's words hold, then masked), the probes, the walk's words a window and the flag
// words; sized for the widest symbols' count (m = C with S = 1 or auto).
struct EncodeLayout {
  uint32_t C, m, front;
  static constexpr uint32_t back = 128;  // the last window's lanes past the chunk
  __host__ __device__ uint32_t windows() const { return (m + 31) / 32; }
  __host__ __device__ uint32_t probes() const { return front + align16(C + back); }  // u16 a symbol
  __host__ __device__ uint32_t starts() const { return probes() + align16(2 * m); }  // u32 a window, and:
  __host__ __device__ uint32_t matches() const { return starts() + 4 * windows(); }
  __host__ __device__ uint32_t longs() const { return matches() + 4 * windows(); }
  __host__ __device__ uint32_t token_base() const { return longs() + 4 * windows(); }  // and the totals
  __host__ __device__ uint32_t byte_base() const { return token_base() + 4 * windows() + 4; }
  __host__ __device__ uint32_t flags() const { return byte_base() + 4 * windows() + 4; }  // u32 a 32 tokens
  __host__ __device__ uint32_t result() const { return flags() + 4 * windows(); }  // u32 size, u32 longest
  __host__ __device__ uint32_t trial() const { return align16(result() + 8); }
  __host__ __device__ uint32_t far_table(bool with_trial) const { return trial() + (with_trial ? align16(C) : 0); }
  __host__ __device__ uint32_t bytes(bool with_trial, bool wide) const {  // u16 an entry
    return far_table(with_trial) + (wide ? 2 * far_table_size : 0);
  }
};

// Chunks of block_chunk_min to block_chunk_max bytes are coded by a block of block_warps warps,
// every phase spread over them (DeviceCoder's Block): a warp a chunk held too few warps an SM
// at such chunks (docs/PERFORMANCE.md: each warp codes ~4 GB/s, and an SM held 2 at 16 KiB).
constexpr uint32_t block_warps = 8, block_chunk_min = 8192, block_chunk_max = 16384;
constexpr uint32_t no_entry = ~0u;  // a window no token starts in (a match spans it)
static_assert(block_chunk_max <= 65535, "a block-coded chunk's positions and counts are u16");
static_assert(probe_cap + max_extra < 512, "a token's length fits 9 bits (min_match <= probe_cap)");

// A block-coded chunk in shared memory: the symbols (as EncodeLayout), the probes, the work
// area (per position a u32: the token from it and where the walk from it leaves its window;
// before that, wide, the far candidates' counting sort: a u16 count per hash and warp, then the
// keyed positions by hash), and per window its starts, matches, entry, token and byte bases.
struct BlockLayout {
  uint32_t C, m, front;
  bool wide;
  static constexpr uint32_t back = EncodeLayout::back;
  static constexpr uint32_t counts = block_warps << far_hash_bits;  // u16 entries
  __host__ __device__ uint32_t windows() const { return (m + 31) / 32; }
  __host__ __device__ uint32_t probes() const { return front + align16(C + back); }
  __host__ __device__ uint32_t work() const { return probes() + align16(2 * m); }
  __host__ __device__ uint32_t work_bytes() const {
    const uint32_t sort = wide ? 2 * counts + 2 * m : 0;
    return align16(4 * m > sort ? 4 * m : sort);
  }
  __host__ __device__ uint32_t starts() const { return work() + work_bytes(); }  // u32 a window, and:
  __host__ __device__ uint32_t matches() const { return starts() + 4 * windows(); }
  __host__ __device__ uint32_t entries() const { return matches() + 4 * windows(); }
  __host__ __device__ uint32_t token_base() const { return entries() + 4 * windows(); }  // and the totals
  __host__ __device__ uint32_t byte_base() const { return token_base() + 4 * windows() + 4; }
  __host__ __device__ uint32_t flags() const { return byte_base() + 4 * windows() + 4; }  // u32 a 32 tokens
  // u32 size, longest (as EncodeLayout's), and the plane map's two width sums.
  __host__ __device__ uint32_t result() const { return flags() + 4 * windows(); }
  __host__ __device__ uint32_t trial() const { return align16(result() + 16); }
  __host__ __device__ uint32_t bytes(bool with_trial, bool) const { return trial() + (with_trial ? align16(C) : 0); }
};

// The value lane + k holds, of this window (`cur`) or, past lane 31, of the next (`next`).
__device__ __forceinline__ uint32_t ahead(uint32_t cur, uint32_t next, uint32_t lane, uint32_t k) {
  const uint32_t from = (lane + k) & 31u;
  const uint32_t a = __shfl_sync(all_lanes, cur, from), b = __shfl_sync(all_lanes, next, from);
  return lane + k < 32 ? a : b;
}

// The same for a k the whole warp shares, in one shuffle: lane j is read by lane j - k, which
// wants this window's value, where j >= k, and otherwise by lane j + 32 - k, which wants the
// next window's.
__device__ __forceinline__ uint32_t ahead_by(uint32_t cur, uint32_t next, uint32_t lane, uint32_t k) {
  return __shfl_sync(all_lanes, lane >= k ? cur : next, (lane + k) & 31u);
}

// A window's equality bits and their runs of 2, 4 and 8 (lane p: position s + p).
template <int G>
struct Runs {
  uint32_t e[G], a2[G], a4[G], a8[G];
};

template <int G>
__device__ __forceinline__ void clear(Runs<G>& r) {
#pragma unroll
  for (int g = 0; g < G; ++g) r.e[g] = r.a2[g] = r.a4[g] = r.a8[g] = 0;
}

// The 16 bits `v` into the distance words e at bit 16 c + l (l < 16): c is known when compiled.
template <int G, int c>
__device__ __forceinline__ void add_bits(uint32_t (&e)[G], uint32_t v, uint32_t l) {
  constexpr int j = c / 2;
  if constexpr (j < G) {
    if constexpr (c % 2 == 0) {
      e[j] |= v << l;
    } else {
      e[j] |= v << (16 + l);
      if constexpr (j + 1 < G) e[j + 1] |= v >> (16 - l);  // l = 0: v has 16 bits, nothing spills
    }
  }
}

// Block b back (b = 1, 2, ...) beside each half of the window, as `equalities` says.
template <typename Sym, int G, int b>
__device__ __forceinline__ void match_block(const Sym* back, uint32_t own, bool low, uint32_t l, uint32_t low_blocks,
                                            uint32_t high_blocks, uint32_t (&e)[G]) {
  if (b <= int(low_blocks)) {  // uniform across the warp
    const uint32_t v = low ? own : uint32_t(back[-16 * b]);
    const uint32_t r = __brev(__match_any_sync(all_lanes, v)) & 0xffffu;  // bit u: lane 31 - u
    if (low) add_bits<G, b - 1>(e, r, l);
  }
  if (b <= int(high_blocks)) {
    const uint32_t v = low ? uint32_t(back[-16 * b]) : own;
    const uint32_t r = __brev(__match_any_sync(all_lanes, v)) >> 16;  // bit u: lane 15 - u
    if (!low) add_bits<G, b>(e, r, l);
  }
}

template <typename Sym, int G, int... k>
__device__ __forceinline__ void match_blocks(std::integer_sequence<int, k...>, const Sym* back, uint32_t own, bool low,
                                             uint32_t l, uint32_t low_blocks, uint32_t high_blocks, uint32_t (&e)[G]) {
  (match_block<Sym, G, k + 1>(back, own, low, l, low_blocks, high_blocks, e), ...);
}

// The bits of position i past the chunk, the window and the chunk's start cleared.
template <int G>
__device__ __forceinline__ void keep_distances(uint32_t i, uint32_t m, uint32_t window, uint32_t (&e)[G]) {
  const uint32_t farthest = i < m ? (i < window ? i : window) : 0;  // distances 1 .. farthest exist
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const uint32_t bits = farthest > 32u * g ? farthest - 32u * g : 0u;
    e[g] &= bits >= 32 ? all_lanes : (1u << bits) - 1u;
  }
}

// E of position s + lane, a distance at a time (x[s + lane - 32 G] readable: the layout's front).
template <typename Sym, int G>
__device__ __forceinline__ void equalities_each(const Sym* x, uint32_t s, uint32_t lane, uint32_t (&e)[G]) {
  const Sym* at = x + s + lane;
  const uint32_t own = *at;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    uint32_t word = 0;
#pragma unroll
    for (int j = 0; j < 32; ++j) word |= uint32_t(uint32_t(at[-(32 * g + j + 1)]) == own) << j;
    e[g] = word;
  }
}

// E of position s + lane by __match_any_sync, which compares 32 symbols at once: the window's
// own 32 give every distance inside it; a 16-symbol block k blocks before the window, beside
// either half of it, gives that half 16 distances more (one lane's 16 bits, reversed, shifted by
// its place): 8 calls for W = 64 where a distance at a time takes ~300 instructions. A call
// costs about 2 SM cycles per distinct symbol among its lanes (H200), so this pays only on
// windows of a few symbols. x[s - 32 G] must be readable (the layout's front).
template <typename Sym, int G>
__device__ __forceinline__ void equalities_matched(const Sym* x, uint32_t s, uint32_t lane, uint32_t window,
                                                   uint32_t (&e)[G]) {
  const uint32_t own = x[s + lane], l = lane % 16;
  const bool low = lane < 16;
  const uint32_t inside = __match_any_sync(all_lanes, own) & ((1u << lane) - 1u);  // lanes q < lane: d = lane - q
  e[0] = lane ? __brev(inside) >> (32 - lane) : 0u;
#pragma unroll
  for (int g = 1; g < G; ++g) e[g] = 0;
  // Block k back beside the low half: lane l's distances 16 k - 15 + l .. 16 k + l; beside the
  // high half (lanes 16 + l): 16 k + 1 + l .. 16 k + 16 + l. Only blocks within the window.
  const uint32_t low_blocks = (window + 15) / 16, high_blocks = (window - 1) / 16;
  match_blocks<Sym, G>(std::make_integer_sequence<int, 2 * G>{}, x + s + l, own, low, l, low_blocks, high_blocks, e);
}

// The plane symbols of the windows a probe of 2-byte symbols reads (plane_equalities.hh), a
// lane each, kept from window to window as the probe walks back (a load each), with the OR of
// each window's across the warp: the planes a window uses, taken by ballots where they are
// used (the planes themselves in registers would take ~50 more a thread, and with them most
// of the SM's warps). Windows up to 64 symbols: G + 1 windows.
template <int G>
struct PlaneSymbols {
  uint32_t z[G + 1], any[G + 1];
  PlaneMap map;
  uint32_t m, active;

  // Window k's symbols into slot `slot` (k >= -G). Positions before the chunk or past its end
  // take plane symbol 0: they are no lane's own, and the distances that reach them are cleared
  // (keep_distances), so what shared memory holds there (the previous chunk's bytes) does not
  // add planes.
  template <int slot>
  __device__ __forceinline__ void take(const uint16_t* x, int32_t k, uint32_t lane) {
    const int32_t at = 32 * k + int32_t(lane);
    z[slot] = at >= 0 && uint32_t(at) < m ? map(x[at]) : 0u;
    any[slot] = __reduce_or_sync(all_lanes, z[slot]);
  }
  __device__ __forceinline__ void gather() {
    active = 0;
#pragma unroll
    for (int k = 0; k <= G; ++k) active |= any[k];
  }
  template <int... k>
  __device__ __forceinline__ void take_all(std::integer_sequence<int, k...>, const uint16_t* x, int32_t window,
                                           uint32_t lane) {
    (take<k>(x, window - k, lane), ...);
  }
  // The map is the chunk's: the one under which its symbols need fewer planes in all (a sum
  // of each symbol's width, which an outlier moves by at most 16, where an OR would take every
  // plane for it); the reference of the offset map is the chunk's first symbol (any would do).
  // widths: this thread's share of both sums (symbols thread, thread + threads, ...).
  __device__ __forceinline__ static void widths(const uint16_t* x, uint32_t symbols, uint32_t thread, uint32_t threads,
                                                uint32_t& offset_width, uint32_t& sign_width) {
    offset_width = sign_width = 0;
    for (uint32_t i = thread; i < symbols; i += threads) {
      offset_width += 32 - __clz(plane_symbol(x[i], x[0]));
      sign_width += 32 - __clz(plane_symbol_sign_magnitude(x[i]));
    }
  }
  // Windows `window` .. window - G of a chunk of m symbols, under the map the sums chose.
  __device__ __forceinline__ void begin(const uint16_t* x, uint32_t symbols, bool sign_magnitude, int32_t window,
                                        uint32_t lane) {
    m = symbols;
    map.ref = x[0], map.sign_magnitude = sign_magnitude;
    take_all(std::make_integer_sequence<int, G + 1>{}, x, window, lane);
    gather();
  }
  // The same with the sums taken by one warp.
  __device__ __forceinline__ void start(const uint16_t* x, uint32_t symbols, int32_t window, uint32_t lane) {
    uint32_t offset_width, sign_width;
    widths(x, symbols, lane, 32, offset_width, sign_width);
    begin(x, symbols, __reduce_add_sync(all_lanes, sign_width) < __reduce_add_sync(all_lanes, offset_width), window,
          lane);
  }
  // From window + 1's windows to window's: the slots move on, the oldest is taken.
  __device__ __forceinline__ void advance(const uint16_t* x, int32_t window, uint32_t lane) {
#pragma unroll
    for (int k = 0; k < G; ++k) z[k] = z[k + 1], any[k] = any[k + 1];
    take<G>(x, window - G, lane);
    gather();
  }
  // Under 20 SASS instructions a plane (G = 2; three ballots) against ~280 for the pairs from shared
  // memory (pair_equalities): a conservative cutoff on the planes plane_equalities takes (from
  // the highest to the lowest the G + 1 windows' mapped symbols use).
  __device__ __forceinline__ bool few_planes() const { return planes_taken(active) <= 12; }
  __device__ __forceinline__ void equalities(uint32_t lane, uint32_t (&e)[G]) const {
    const auto plane_of = [&](int k, uint32_t bit) { return __ballot_sync(all_lanes, (z[k] & bit) != 0); };
    plane_equalities<G>(plane_of, active, lane, z[0], e);
  }
};

// Other symbols and wider windows: equalities from shared memory alone.
struct NoPlanes {
  __device__ __forceinline__ bool few_planes() const { return false; }
  template <int G>
  __device__ __forceinline__ void equalities(uint32_t, uint32_t (&)[G]) const {}
  template <typename Sym>
  __device__ __forceinline__ static void widths(const Sym*, uint32_t, uint32_t, uint32_t, uint32_t& offset_width,
                                                uint32_t& sign_width) {
    offset_width = sign_width = 0;
  }
  template <typename Sym>
  __device__ __forceinline__ void begin(const Sym*, uint32_t, bool, int32_t, uint32_t) {}
  template <typename Sym>
  __device__ __forceinline__ void start(const Sym*, uint32_t, int32_t, uint32_t) {}
  template <typename Sym>
  __device__ __forceinline__ void advance(const Sym*, int32_t, uint32_t) {}
};

template <typename Sym, int G>
using PlanesFor = std::conditional_t<sizeof(Sym) == 2 && G <= 2, PlaneSymbols<G>, NoPlanes>;

// E of position s + lane: by __match_any_sync where the window holds few symbols (a bound: the
// lanes that equal none of the 4 before them), else from the bit planes where few are active
// (2-byte symbols, windows up to 64: PlaneSymbols), else a distance at a time (2-byte symbols:
// two distances a word, pair_equalities.hh).
template <typename Sym, int G, typename Planes>
__device__ __forceinline__ void equalities(const Sym* x, uint32_t s, uint32_t lane, uint32_t m, uint32_t window,
                                           const Planes& planes, uint32_t (&e)[G]) {
  const uint32_t own = x[s + lane];
  bool seen = false;
#pragma unroll
  for (uint32_t k = 1; k <= 4; ++k) {
    const uint32_t before = __shfl_up_sync(all_lanes, own, k);  // every lane takes part
    seen |= lane >= k && before == own;
  }
  if (__popc(__ballot_sync(all_lanes, !seen)) <= few_symbols)  // uniform across the warp
    equalities_matched<Sym, G>(x, s, lane, window, e);
  else if (planes.few_planes())  // uniform across the warp
    planes.equalities(lane, e);
  else if constexpr (sizeof(Sym) == 2)
    pair_equalities<G>(x, s + lane, e);  // x is 4-byte aligned: the layout's front is 32 G * 4 or 64 G bytes
  else
    equalities_each<Sym, G>(x, s, lane, e);
  keep_distances(s + lane, m, window, e);
}

template <typename Sym, int G, typename Planes>
__device__ __forceinline__ void runs_of(const Sym* x, uint32_t s, uint32_t m, uint32_t window, const Runs<G>& next,
                                        const Planes& planes, uint32_t lane, Runs<G>& r) {
  if (s >= m) return clear(r);  // uniform across the warp
  equalities<Sym, G>(x, s, lane, m, window, planes, r.e);
#pragma unroll
  for (int g = 0; g < G; ++g) r.a2[g] = r.e[g] & ahead_by(r.e[g], next.e[g], lane, 1);
#pragma unroll
  for (int g = 0; g < G; ++g) r.a4[g] = r.a2[g] & ahead_by(r.a2[g], next.a2[g], lane, 2);
#pragma unroll
  for (int g = 0; g < G; ++g) r.a8[g] = r.a4[g] & ahead_by(r.a4[g], next.a4[g], lane, 4);
}

// `probe`'s answer for each position of the window (length | distance << 8), 0 below min_match.
template <int G>
__device__ __forceinline__ uint32_t longest(const Runs<G>& r, const Runs<G>& next, uint32_t lane, uint32_t min_match) {
  uint32_t mask[G], len = 0;
  bool any16 = false;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    mask[g] = r.a8[g] & ahead_by(r.a8[g], next.a8[g], lane, 8);
    any16 |= mask[g] != 0;
  }
  if (any16) {
    len = probe_cap;
  } else {
#pragma unroll
    for (int g = 0; g < G; ++g) mask[g] = all_lanes;
  }
  // Binary lifting below 16 (a lane at probe_cap keeps its mask); every lane takes part in the
  // shuffles. A step of k takes A_k at i + len: len is 0 for the step of 8 (no shuffle), 0 or 8
  // for the step of 4 (one shared shift: one shuffle a word), any below 16 after.
  const auto lift = [&](const uint32_t (&at)[G], uint32_t k) {
    uint32_t t[G];
    bool any = false;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      t[g] = mask[g] & at[g];
      any |= t[g] != 0;
    }
    if (any && len < probe_cap) {
#pragma unroll
      for (int g = 0; g < G; ++g) mask[g] = t[g];
      len += k;
    }
  };
  lift(r.a8, 8);
  uint32_t at[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const uint32_t eight_on = ahead_by(r.a4[g], next.a4[g], lane, 8);
    at[g] = len == 8 ? eight_on : r.a4[g];
  }
  lift(at, 4);
#pragma unroll
  for (int g = 0; g < G; ++g) at[g] = ahead(r.a2[g], next.a2[g], lane, len & 15u);
  lift(at, 2);
#pragma unroll
  for (int g = 0; g < G; ++g) at[g] = ahead(r.e[g], next.e[g], lane, len & 15u);
  lift(at, 1);
  if (len < min_match) return 0;
  uint32_t d = 0;
#pragma unroll
  for (int g = G - 1; g >= 0; --g)
    if (mask[g]) d = 32u * g + __ffs(mask[g]);
  return len | d << 8;
}

// Where each window's tokens go, as the walk leaves them: starts, matches and matches longer
// than probe_cap (bit p: position 32 w + p), the tokens and token bytes before the window.
struct Walk {
  uint32_t *starts, *matches, *longs, *token_base, *byte_base;
};

// Wide (offset_bits 11) is a parameter of the type, not a branch: its far pass would otherwise
// take registers from GPULZ's own encode (80 -> 96 at G = 2). So is Block (a block a chunk).
template <int G, bool Wide, bool Block = false>
struct DeviceCoder {
  Params p;

  // A warp a chunk at small chunks: the walk is one warp's, and a block of more would leave the
  // others waiting for it at a barrier; the SM interleaves many chunks' warps instead. Large
  // chunks (Block): a block, each phase spread over its warps but a walk of one lookup a window.
  static constexpr int encode_threads = Block ? 32 * block_warps : 32;
  static constexpr bool encode_defers = true;  // a chunk's walk follows its tokens
  __host__ __device__ uint32_t chunk_bytes() const { return p.chunk_bytes; }
  using Layout = std::conditional_t<Block, BlockLayout, EncodeLayout>;
  __host__ __device__ Layout layout() const {
    const uint32_t widest = p.symbol ? p.symbol : 4, narrowest = p.symbol ? p.symbol : 1;
    // blocks back: at most 2 G
    if constexpr (Block) return {p.chunk_bytes, p.chunk_bytes / narrowest, 32u * G * widest, Wide};
    else return {p.chunk_bytes, p.chunk_bytes / narrowest, 32u * G * widest};
  }
  __host__ __device__ uint32_t encode_shared_bytes() const { return layout().bytes(p.symbol == 0, Wide); }

  __device__ uint32_t encode_chunk(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity,
                                   uint8_t* shared) const {
    chunked::copy_bytes(shared + layout().front, in, n, threadIdx.x, blockDim.x);
    __syncthreads();
    if (p.symbol) return encode_with(p.symbol, n, out, capacity, shared);
    uint8_t* trial = shared + layout().trial();
    uint32_t best = capacity + 1;
    for (uint32_t S = 1; S <= 4; S *= 2) {
      const uint32_t size = encode_with(S, n, trial, capacity, shared);
      if (size < best) {
        best = size;
        chunked::copy_bytes(out, trial, size, threadIdx.x, blockDim.x);
        __syncthreads();
      }
    }
    return best;
  }

  __device__ uint32_t encode_with(uint32_t S, uint32_t n, uint8_t* out, uint32_t capacity, uint8_t* shared) const {
    if (n < S) return capacity + 1;
    switch (S) {
      case 1: return encode_as<uint8_t>(n, out, capacity, shared);
      case 2: return encode_as<uint16_t>(n, out, capacity, shared);
      default: return encode_as<uint32_t>(n, out, capacity, shared);
    }
  }

  // A wide chunk, and where try_narrow says so the narrow code too (its size first, then its
  // bytes where it is smaller: a second output buffer would take shared memory from every chunk).
  template <typename Sym>
  __device__ uint32_t encode_as(uint32_t n, uint8_t* out, uint32_t capacity, uint8_t* shared) const {
    if (!Wide) return code_as<false, Sym>(n, out, capacity, shared, true);
    const uint32_t size = code_as<Wide, Sym>(n, out, capacity, shared, true);
    const uint32_t longest = reinterpret_cast<const uint32_t*>(shared + layout().result())[1];
    if (size > capacity || !try_narrow(longest, n / sizeof(Sym))) return size;
    if (code_as<false, Sym>(n, out, capacity, shared, false) >= size) return size;
    return code_as<false, Sym>(n, out, capacity, shared, true);
  }

  // The chunk's code into `out` (W: wide), or with `emit` false its size alone.
  template <bool W, typename Sym>
  __device__ uint32_t code_as(uint32_t n, uint8_t* out, uint32_t capacity, uint8_t* shared, bool emit) const {
    if constexpr (Block) return code_block<W, Sym>(n, out, capacity, shared, emit);
    else return code_warp<W, Sym>(n, out, capacity, shared, emit);
  }

  template <bool W, typename Sym>
  __device__ uint32_t code_warp(uint32_t n, uint8_t* out, uint32_t capacity, uint8_t* shared, bool emit) const {
    constexpr uint32_t S = sizeof(Sym);
    const EncodeLayout l = layout();
    const uint32_t m = n / S, windows = (m + 31) / 32, min_match = min_match_of(p, S);
    const uint8_t* bytes = shared + l.front;
    const auto* x = reinterpret_cast<const Sym*>(bytes);
    auto* probes = reinterpret_cast<uint16_t*>(shared + l.probes());
    auto* flags = reinterpret_cast<uint32_t*>(shared + l.flags());
    auto* result = reinterpret_cast<uint32_t*>(shared + l.result());
    auto words = [&](uint32_t at) { return reinterpret_cast<uint32_t*>(shared + at); };
    const Walk walk{words(l.starts()), words(l.matches()), words(l.longs()), words(l.token_base()),
                    words(l.byte_base())};
    probe_windows<W>(x, m, min_match, probes);
    if constexpr (W) {
      __syncthreads();
      far_candidates(x, m, min_match, probes, reinterpret_cast<uint16_t*>(shared + l.far_table(p.symbol == 0)));
    }
    for (uint32_t k = threadIdx.x; k < windows; k += blockDim.x) flags[k] = 0;
    __syncthreads();
    if (threadIdx.x < 32) walk_tokens<W>(x, m, min_match, capacity, n % S, probes, walk, result);
    __syncthreads();
    const uint32_t size = *result;
    if (emit && size <= capacity) write_tokens<W, Sym>(bytes, m, min_match, windows, probes, walk, flags, out);
    __syncthreads();
    if (emit && size <= capacity)
      finish<W, Sym>(bytes, m, n, walk.token_base[windows], walk.byte_base[windows], flags, out);
    __syncthreads();  // the result, probes and walk are rewritten by the next width or chunk
    return size;
  }

  // The chunk's flags, tail and header behind its tokens (the block's threads).
  template <bool W, typename Sym>
  __device__ static void finish(const uint8_t* bytes, uint32_t m, uint32_t n, uint32_t tokens, uint32_t token_bytes,
                                const uint32_t* flags, uint8_t* out) {
    constexpr uint32_t S = sizeof(Sym);
    const uint32_t end = header_bytes + token_bytes, flag_bytes = (tokens + 7) / 8, tail = n % S;
    for (uint32_t b = threadIdx.x; b < flag_bytes + tail; b += blockDim.x)
      out[end + b] = b < flag_bytes ? uint8_t(flags[b / 4] >> (8 * (b % 4))) : bytes[m * S + b - flag_bytes];
    if (threadIdx.x == 0)
      out[0] = uint8_t(S | (W ? wide_flag : 0)), out[1] = uint8_t(tokens), out[2] = uint8_t(tokens >> 8);
  }

  // Every position's probe into probes[0, m), the windows from the last (past it: no equalities).
  template <bool W, typename Sym>
  __device__ void probe_windows(const Sym* x, uint32_t m, uint32_t min_match, uint16_t* probes) const {
    PlanesFor<Sym, G> planes;
    const uint32_t windows = (m + 31) / 32;
    if (windows) planes.start(x, m, int32_t(windows) - 1, threadIdx.x % 32);
    probe_range<W>(x, m, min_match, 0, windows, planes, probes);
  }

  // The probes of windows [first, end), from the last, with `planes` begun at the first window
  // computed: `end` itself where it is a window of the chunk (its runs are needed for the
  // positions up to 15 ahead of window end - 1, and its own positions up to 15 are exact without
  // the window after it), else end - 1. A warp calls it.
  template <bool W, typename Sym, typename Planes>
  __device__ void probe_range(const Sym* x, uint32_t m, uint32_t min_match, uint32_t first, uint32_t end,
                              Planes& planes, uint16_t* probes) const {
    const uint32_t lane = threadIdx.x % 32, windows = (m + 31) / 32;
    const auto window = [&](uint32_t w, const Runs<G>& next, Runs<G>& cur) {
      runs_of(x, 32 * w, m, p.window, next, planes, lane, cur);
      const uint32_t probe = longest(cur, next, lane, min_match);
      if (32 * w + lane < m) probes[32 * w + lane] = pack_probe<W>(probe);
      if (w) planes.advance(x, int32_t(w) - 1, lane);
    };
    // Two windows a turn, the runs' registers swapping roles (no copy of the 4 G words).
    Runs<G> a, b;
    clear(a);
    if (end < windows) {  // uniform across the warp
      clear(b);
      runs_of(x, 32 * end, m, p.window, b, planes, lane, a);
      planes.advance(x, int32_t(end) - 1, lane);
    }
    uint32_t w = end;
    for (; w >= first + 2; w -= 2) {
      window(w - 1, a, b);
      window(w - 2, b, a);
    }
    if (w > first) window(w - 1, a, b);
  }

  // Wide chunks: each keyed position's best far candidate in place of its probe where one is
  // taken (gpulz_parse.hh), 32 positions a step: a lane's latest earlier positions of the same
  // hash are the lanes below it with that hash (__match_any_sync), nearest first, then the
  // bucket's entries from the steps before (its far_ways u16, newest first, read as 8 bytes);
  // the step's last lane of each hash then writes the bucket anew: the step's positions of the
  // hash, newest first, then the old entries that still fit. The CPU's table, kept position by
  // position, holds the same entries at every position.
  template <typename Sym>
  __device__ void far_candidates(const Sym* x, uint32_t m, uint32_t min_match, uint16_t* probes,
                                 uint16_t* latest) const {
    static_assert(far_ways == 4, "a bucket is 8 bytes");
    constexpr uint16_t none = 0xffff;  // m < 65535
    const uint32_t lane = threadIdx.x % 32, below = (1u << lane) - 1u, keyed = keyed_positions(m, sizeof(Sym));
    for (uint32_t k = lane; k < far_table_size; k += 32) latest[k] = none;
    __syncwarp();
    auto* buckets = reinterpret_cast<uint2*>(latest);  // the layout aligns the table to 16 bytes
    for (uint32_t s = 0; s < keyed; s += 32) {  // uniform across the warp
      const uint32_t i = s + lane;
      const bool keyed_here = i < keyed;
      const uint32_t h = keyed_here ? far_hash_of(x, i) : (1u << far_hash_bits) + lane;  // no two alike
      const uint32_t peers = __match_any_sync(all_lanes, h);
      const uint2 old = keyed_here ? buckets[h] : make_uint2(0xffffffffu, 0xffffffffu);
      const auto old_entry = [&](uint32_t k) {  // a select, not an indexed array (local memory)
        const uint32_t word = k < 2 ? old.x : old.y;
        return k & 1u ? word >> 16 : word & 0xffffu;
      };
      __syncwarp();  // every lane has read the table
      if (keyed_here && (peers >> lane) == 1u) {
        uint32_t entry[far_ways], left = peers, n = 0;
#pragma unroll
        for (uint32_t k = 0; k < far_ways; ++k) {
          if (left) {
            const uint32_t q = 31 - __clz(left);
            left &= ~(1u << q), ++n;
            entry[k] = s + q;
          } else {
            entry[k] = old_entry(k - n);
          }
        }
        buckets[h] = make_uint2(entry[0] | entry[1] << 16, entry[2] | entry[3] << 16);
      }
      if (keyed_here) {
        const uint32_t step = __popc(peers & below);
        uint32_t earlier = peers & below;
        const uint32_t far = best_far(x, i, m, p.window, probe_length<Wide>(probes[i]), min_match,
                                      [&](uint32_t k, uint32_t& j) {
                                        if (earlier) {
                                          const uint32_t q = 31 - __clz(earlier);
                                          earlier &= ~(1u << q);
                                          j = s + q;
                                          return true;
                                        }
                                        j = old_entry(k - step);
                                        return j != none;
                                      });
        if (far) probes[i] = pack_probe<Wide>(far);
      }
      __syncwarp();
    }
  }

  // Warp 0: the tokens' starts, window by window (the walk in the file comment); result[0]: the
  // chunk's size, or capacity + 1 once its tokens outgrow it; result[1]: the symbols its matches
  // of the longest length cover (try_narrow).
  template <bool W, typename Sym>
  __device__ void walk_tokens(const Sym* x, uint32_t m, uint32_t min_match, uint32_t capacity, uint32_t tail,
                              uint16_t* probes, const Walk& walk, uint32_t* result) const {
    constexpr uint32_t S = sizeof(Sym);
    const uint32_t lane = threadIdx.x, max_len = min_match + max_extra_of(W), windows = (m + 31) / 32;
    uint32_t e = 0, tokens = 0, token_bytes = 0, open = 0, starts = 0, matches = 0, longs = 0, longest = 0;
    bool fits = true;
    // The open window is done; the windows up to `to` start where the walk is (those before it
    // hold no start: a match spans them), a lane each.
    static_assert(probe_cap + max_extra < 32 * 31, "a match spans fewer than 32 windows");
    auto close_window = [&](uint32_t to) {
      if (lane == 0) walk.starts[open] = starts, walk.matches[open] = matches, walk.longs[open] = longs;
      const uint32_t v = open + 1 + lane;
      if (v <= to) {
        walk.token_base[v] = tokens, walk.byte_base[v] = token_bytes;
        if (v < to) walk.starts[v] = walk.matches[v] = walk.longs[v] = 0;
      }
      open = to, starts = matches = longs = 0;
    };
    if (lane == 0) walk.token_base[0] = 0, walk.byte_base[0] = 0;
    while (e < m) {
      const uint32_t w = e / 32, s = 32 * w, i = s + lane;
      if (w != open) close_window(w);
      const uint32_t here = i < m ? probes[i] : 0u, len_here = probe_length<W>(here);
      const uint32_t len_next = i + 1 < m ? probe_length<W>(probes[i + 1]) : 0u;
      // Lazy by one symbol, as write_chunk (probes below min_match are 0 here).
      const bool match = len_here >= min_match && !(len_here < probe_cap && len_next > len_here);
      const bool extends = match && len_here == probe_cap;
      const uint32_t len = match ? len_here : 1u;
      const uint32_t from = e - s, matchers = __ballot_sync(all_lanes, match);
      const uint32_t set = __popc(matchers >> from) <= few_matches
                               ? starts_by_matches(from, matchers, __ballot_sync(all_lanes, extends), len, m - s)
                               : starts_by_doubling(from, lane, i, m, len, extends);
      const uint32_t new_matches = set & matchers;
      starts |= set, matches |= new_matches;
      tokens += __popc(set);
      token_bytes += 2 * __popc(new_matches) + S * (__popc(set) - __popc(new_matches));
      const uint32_t last = 31 - __clz(set);
      const uint32_t last_len = __shfl_sync(all_lanes, len, last);
      e = s + last + last_len;
      if (__shfl_sync(all_lanes, uint32_t(extends), last)) {
        const uint32_t at = s + last, d = __shfl_sync(all_lanes, probe_distance<W>(here), last);
        uint32_t total = probe_cap;
        for (;;) {  // as write_chunk, 32 symbols a step
          const uint32_t k = total + lane;
          const bool equal = k < max_len && at + k < m && x[at + k] == x[at + k - d];
          const uint32_t ones = __ballot_sync(all_lanes, equal);
          const uint32_t run = ones == all_lanes ? 32u : __ffs(~ones) - 1u;
          total += run;
          if (run < 32) break;
        }
        // The match's length past min_match, for the writer: narrow, in the probe's length byte;
        // wide (5 bits there), where no token starts, at its second symbol (a match to extend is
        // probe_cap long).
        __syncwarp();  // every lane has read this window's probes
        if (lane == 0) {
          if constexpr (W) probes[at + 1] = uint16_t(total - min_match);
          else probes[at] = uint16_t((total - min_match) | d << 8);
        }
        __syncwarp();  // and reads them again
        longs |= 1u << last;
        if (total == max_len) longest += total;
        e = at + total;
      }
      if (header_bytes + token_bytes > capacity) {
        fits = false;
        break;
      }
    }
    if (fits) close_window(windows);  // the totals at index `windows`
    const uint32_t size = header_bytes + token_bytes + (tokens + 7) / 8 + tail;
    if (lane == 0) result[0] = fits && size <= capacity ? size : capacity + 1, result[1] = longest;
  }

  // The window's token starts from lane `from` where few lanes start a match: the literals up to
  // each match the walk takes, then the match (`len` its length, by shuffle), until the window,
  // the chunk (`inside` lanes of the window) or a match to extend ends them. On a window of
  // literals (a chunk that does not compress) that is a ballot and a shift, where the doubling
  // takes five rounds of two shuffles; the two give the same starts.
  __device__ __forceinline__ static uint32_t starts_by_matches(uint32_t from, uint32_t matchers, uint32_t extenders,
                                                               uint32_t len, uint32_t inside) {
    const uint32_t valid = inside >= 32 ? all_lanes : (1u << inside) - 1u;
    uint32_t set = 0;
    for (uint32_t at = from; at < 32;) {  // uniform across the warp
      const uint32_t ahead = matchers & (all_lanes << at);
      if (!ahead) {
        set |= (all_lanes << at) & valid;
        break;
      }
      const uint32_t p = __ffs(ahead) - 1u;
      set |= ((1u << p) - (1u << at)) | 1u << p;  // the literals at .. p - 1, the match at p
      if (extenders >> p & 1u) break;
      at = p + __shfl_sync(all_lanes, len, p);
    }
    return set;
  }

  // The same for any window: every lane's path (the starts its tokens reach in the window) by
  // pointer doubling: after round r, `path` holds the starts up to 2^(r+1) tokens on and `next`
  // the one 2^(r+1) on. A round's two shuffles are independent; following the start at `from`
  // alone took five ORs across the warp, each waiting for the one before.
  __device__ __forceinline__ static uint32_t starts_by_doubling(uint32_t from, uint32_t lane, uint32_t i, uint32_t m,
                                                                uint32_t len, bool extends) {
    // The next start: a lane of this window, 32 (past it) or 33 (a match to extend, or past the chunk).
    uint32_t next = i >= m || extends ? 33u : lane + len < 32 && i + len < m ? lane + len : 32u;
    uint32_t path = 1u << lane | (next < 32 ? 1u << next : 0u);
#pragma unroll
    for (int r = 0; r < 5; ++r) {
      const uint32_t far_path = __shfl_sync(all_lanes, path, next & 31u);
      const uint32_t far_next = __shfl_sync(all_lanes, next, next & 31u);
      if (next < 32) path |= far_path, next = far_next;
    }
    return __shfl_sync(all_lanes, path, from);
  }

  // A window at a time: its tokens' bytes at their places, their flag bits ORed into `flags` (a
  // word may hold two windows' bits).
  template <bool W, typename Sym>
  __device__ void write_tokens(const uint8_t* bytes, uint32_t m, uint32_t min_match, uint32_t windows,
                               const uint16_t* probes, const Walk& walk, uint32_t* flags, uint8_t* out) const {
    const auto match_at = [&](uint32_t w, uint32_t i, uint32_t lane, uint32_t& extra, uint32_t& d) {
      const uint32_t probe = probes[i], length = probe_length<W>(probe);
      extra = !(walk.longs[w] >> lane & 1u) ? length - min_match : W ? probes[i + 1] : length;
      d = probe_distance<W>(probe);
    };
    for (uint32_t w = 0; w < windows; ++w) write_window<W, Sym>(bytes, w, walk, match_at, flags, out);
  }

  // One window's tokens at their places (match_at(w, i, lane, extra, d) gives a match's fields),
  // their flag bits ORed into `flags` (a word may hold two windows' bits). A warp calls it.
  template <bool W, typename Sym, typename MatchAt>
  __device__ static void write_window(const uint8_t* bytes, uint32_t w, const Walk& walk, MatchAt&& match_at,
                                      uint32_t* flags, uint8_t* out) {
    constexpr uint32_t S = sizeof(Sym);
    const uint32_t starts = walk.starts[w], matches = walk.matches[w];
    if (!starts) return;  // uniform across the warp
    const uint32_t lane = threadIdx.x % 32, below = (1u << lane) - 1u, i = 32 * w + lane;
    const bool start = starts >> lane & 1u, match = matches >> lane & 1u;
    const uint32_t at = header_bytes + walk.byte_base[w] + 2 * __popc(matches & below) +
                        S * __popc(starts & ~matches & below);
    if (start && match) {
      uint32_t extra, d;
      match_at(w, i, lane, extra, d);
      put_match(out + at, extra, d, W);
    } else if (start) {
#pragma unroll
      for (uint32_t b = 0; b < S; ++b) out[at + b] = bytes[i * S + b];
    }
    const uint32_t bits = __reduce_or_sync(all_lanes, start && match ? 1u << __popc(starts & below) : 0u);
    if (lane == 0 && bits) {
      const uint32_t t = walk.token_base[w], shift = t % 32;
      atomicOr(flags + t / 32, bits << shift);
      if (shift && shift + __popc(starts) > 32) atomicOr(flags + t / 32 + 1, bits >> (32 - shift));
    }
  }

  // Block: a chunk of block_chunk_min .. block_chunk_max bytes by a block of block_warps warps,
  // the same bytes as the warp's phases. Each phase is spread over the warps, a barrier between
  // them: (1) the probes, each warp the windows of its share (probe_range); (2) wide, the far
  // candidates from a counting sort of the keyed positions by hash (far_by_sort); (3) each
  // position's token (the parse's rule, a match of probe_cap extended) and the first token start
  // past its window that the walk from it reaches (pointer doubling over the window's lanes), each
  // warp its share (token_exits); (4) the walk itself, one thread, one lookup a window it enters;
  // (5) each entered window's starts from its entry, block scans of their tokens and bytes; (6)
  // the tokens written, a warp a window.
  template <bool W, typename Sym>
  __device__ uint32_t code_block(uint32_t n, uint8_t* out, uint32_t capacity, uint8_t* shared, bool emit) const {
    using Scan = cub::BlockScan<uint32_t, encode_threads>;
    __shared__ typename Scan::TempStorage scan;
    constexpr uint32_t S = sizeof(Sym);
    const BlockLayout l = layout();
    const uint32_t m = n / S, windows = (m + 31) / 32, min_match = min_match_of(p, S);
    const uint32_t max_len = min_match + max_extra_of(W), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint8_t* bytes = shared + l.front;
    const auto* x = reinterpret_cast<const Sym*>(bytes);
    auto* probes = reinterpret_cast<uint16_t*>(shared + l.probes());
    auto* work = reinterpret_cast<uint32_t*>(shared + l.work());
    const auto words = [&](uint32_t at) { return reinterpret_cast<uint32_t*>(shared + at); };
    uint32_t *starts = words(l.starts()), *matches = words(l.matches()), *entries = words(l.entries());
    uint32_t *token_base = words(l.token_base()), *byte_base = words(l.byte_base()), *flags = words(l.flags());
    uint32_t* result = words(l.result());
    const uint32_t share = (windows + block_warps - 1) / block_warps;
    const uint32_t first = min(windows, warp * share), end = min(windows, first + share);

    // (1) The plane map's sums over the whole chunk, then each warp's windows.
    PlanesFor<Sym, G> planes;
    if constexpr (std::is_same_v<PlanesFor<Sym, G>, PlaneSymbols<G>>) {
      if (threadIdx.x == 0) result[2] = result[3] = 0;
      __syncthreads();
      uint32_t offset_width, sign_width;
      planes.widths(x, m, threadIdx.x, blockDim.x, offset_width, sign_width);
      offset_width = __reduce_add_sync(all_lanes, offset_width), sign_width = __reduce_add_sync(all_lanes, sign_width);
      if (lane == 0) atomicAdd(result + 2, offset_width), atomicAdd(result + 3, sign_width);
      __syncthreads();
      if (first < end) planes.begin(x, m, result[3] < result[2], int32_t(end < windows ? end : end - 1), lane);
    }
    if (first < end) probe_range<W>(x, m, min_match, first, end, planes, probes);
    __syncthreads();
    // (2)
    if constexpr (W) {
      far_by_sort(x, m, min_match, probes, reinterpret_cast<uint16_t*>(work), scan);
      __syncthreads();
    }
    // (3), (4)
    if (first < end) token_exits<W>(x, m, min_match, probes, work, first, end);
    for (uint32_t k = threadIdx.x; k < windows; k += blockDim.x) entries[k] = no_entry, flags[k] = 0;
    if (threadIdx.x == 0) result[1] = 0;
    __syncthreads();
    if (threadIdx.x == 0)
      for (uint32_t e = 0; e < m; e += work[e] >> 16) entries[e / 32] = e % 32;
    __syncthreads();
    // (5) Starts, matches and their counts a window (token_base, byte_base hold the counts until
    // the scans), and the symbols the matches of the longest length cover (result[1]).
    for (uint32_t w = warp; w < windows; w += block_warps) {
      const uint32_t entry = entries[w], s = 32 * w, i = s + lane;
      uint32_t set = 0, matchers = 0, longest = 0;
      if (entry != no_entry) {  // uniform across the warp
        const uint32_t v = i < m ? work[i] : 0u, len = v & 0x1ffu;
        const bool match = v >> 15 & 1u;
        matchers = __ballot_sync(all_lanes, match);
        set = __popc(matchers >> entry) <= few_matches ? starts_by_matches(entry, matchers, 0u, len, m - s)
                                                       : starts_by_doubling(entry, lane, i, m, len, false);
        longest = __reduce_add_sync(all_lanes, (set >> lane & 1u) && match && len == max_len ? len : 0u);
      }
      if (lane == 0) {
        starts[w] = set, matches[w] = set & matchers;
        token_base[w] = __popc(set), byte_base[w] = 2 * __popc(set & matchers) + S * __popc(set & ~matchers);
        if (longest) atomicAdd(result + 1, longest);
      }
    }
    __syncthreads();
    const uint32_t per = (windows + blockDim.x - 1) / blockDim.x;
    const uint32_t w0 = min(windows, threadIdx.x * per), w1 = min(windows, w0 + per);
    uint32_t token_count = 0, byte_count = 0;
    for (uint32_t w = w0; w < w1; ++w) token_count += token_base[w], byte_count += byte_base[w];
    uint32_t tokens_before, tokens, bytes_before, token_bytes;
    Scan(scan).ExclusiveSum(token_count, tokens_before, tokens);
    __syncthreads();
    Scan(scan).ExclusiveSum(byte_count, bytes_before, token_bytes);
    for (uint32_t w = w0; w < w1; ++w) {
      const uint32_t t = token_base[w], b = byte_base[w];
      token_base[w] = tokens_before, byte_base[w] = bytes_before;
      tokens_before += t, bytes_before += b;
    }
    const uint32_t size = header_bytes + token_bytes + (tokens + 7) / 8 + n % S;
    const bool fits = size <= capacity;
    if (threadIdx.x == 0) result[0] = fits ? size : capacity + 1;
    __syncthreads();
    // (6)
    if (emit && fits) {
      const Walk walk{starts, matches, nullptr, token_base, byte_base};
      const auto match_at = [&](uint32_t, uint32_t i, uint32_t, uint32_t& extra, uint32_t& d) {
        extra = (work[i] & 0x1ffu) - min_match;
        d = probe_distance<W>(probes[i]);
      };
      for (uint32_t w = warp; w < windows; w += block_warps) write_window<W, Sym>(bytes, w, walk, match_at, flags, out);
    }
    __syncthreads();
    if (emit && fits) finish<W, Sym>(bytes, m, n, tokens, token_bytes, flags, out);
    __syncthreads();  // the result, probes and work are rewritten by the next width or chunk
    return fits ? size : capacity + 1;
  }

  // (2) Each keyed position's best far candidate in place of its probe where one is taken, as
  // far_candidates: its hash's latest earlier positions are its neighbours before it in the
  // keyed positions sorted by hash, stably (a counting sort: each warp counts the hashes of a
  // share of the positions, a scan over (hash, warp) places them, each warp scatters its share).
  template <typename Sym>
  __device__ void far_by_sort(const Sym* x, uint32_t m, uint32_t min_match, uint16_t* probes,
                              uint16_t* area,
                              typename cub::BlockScan<uint32_t, encode_threads>::TempStorage& scan) const {
    constexpr uint32_t S = sizeof(Sym), hashes = 1u << far_hash_bits, counts_per = BlockLayout::counts / encode_threads;
    static_assert(BlockLayout::counts % encode_threads == 0, "the counts split evenly over the threads");
    uint16_t *counts = area, *sorted = area + BlockLayout::counts;  // counts[hash * block_warps + warp]
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32, below = (1u << lane) - 1u;
    const uint32_t keyed = keyed_positions(m, S), share = ((keyed + block_warps - 1) / block_warps + 31) / 32 * 32;
    const uint32_t first = min(keyed, warp * share), end = min(keyed, first + share);
    for (uint32_t k = threadIdx.x; k < BlockLayout::counts; k += blockDim.x) counts[k] = 0;
    __syncthreads();
    const auto each_step = [&](auto&& body) {  // the warp's share, 32 positions a step, in order
      for (uint32_t s = first; s < end; s += 32) {  // uniform across the warp
        const uint32_t i = s + lane;
        const bool in = i < end;
        const uint32_t h = in ? far_hash_of(x, i) : hashes + lane;  // no two alike
        const uint32_t peers = __match_any_sync(all_lanes, h);
        body(i, in, h * block_warps + warp, peers);
        __syncwarp();
      }
    };
    each_step([&](uint32_t, bool in, uint32_t slot, uint32_t peers) {
      if (in && (peers >> lane) == 1u) counts[slot] = uint16_t(counts[slot] + __popc(peers));
    });
    __syncthreads();
    uint32_t sum = 0;
    for (uint32_t k = 0; k < counts_per; ++k) sum += counts[threadIdx.x * counts_per + k];
    uint32_t before;
    cub::BlockScan<uint32_t, encode_threads>(scan).ExclusiveSum(sum, before);
    for (uint32_t k = 0; k < counts_per; ++k) {
      const uint32_t c = counts[threadIdx.x * counts_per + k];
      counts[threadIdx.x * counts_per + k] = uint16_t(before);
      before += c;
    }
    __syncthreads();
    each_step([&](uint32_t i, bool in, uint32_t slot, uint32_t peers) {
      const uint32_t base = in ? counts[slot] : 0u;
      __syncwarp();  // every lane has read its hash's place
      if (in) sorted[base + __popc(peers & below)] = uint16_t(i);
      if (in && (peers >> lane) == 1u) counts[slot] = uint16_t(base + __popc(peers));
    });
    __syncthreads();
    // Each slot's count is now where its entries end, so a hash's entries start where the hash
    // before it ends: an entry's candidates are the entries before it back to there (not a
    // hash of each to compare).
    for (uint32_t k = threadIdx.x; k < keyed; k += blockDim.x) {
      const uint32_t i = sorted[k], h = far_hash_of(x, i), before = k - (h ? counts[h * block_warps - 1] : 0u);
      const uint32_t far = best_far(x, i, m, p.window, probe_length<Wide>(probes[i]), min_match,
                                    [&](uint32_t c, uint32_t& j) {
                                      if (c >= before) return false;
                                      j = sorted[k - 1 - c];
                                      return true;
                                    });
      if (far) probes[i] = pack_probe<Wide>(far);
    }
  }

  // (3) For windows [first, end), from the last: each position's token (bits 0-8: its length in
  // symbols, bit 15: a match) and, in bits 16-31, how far on the walk from it leaves its window
  // (its first token start past the window, or the chunk's end). A match of probe_cap is extended
  // as write_chunk does: where the next position is also one at the same distance, its length is
  // one more than the next's (capped), so only the last of such a run compares symbols (on a
  // constant chunk one lane a window, not every lane up to 255 symbols). A warp calls it.
  template <bool W, typename Sym>
  __device__ void token_exits(const Sym* x, uint32_t m, uint32_t min_match, const uint16_t* probes, uint32_t* work,
                              uint32_t first, uint32_t end) const {
    const uint32_t lane = threadIdx.x % 32, max_len = min_match + max_extra_of(W);
    bool carry_cap = false;  // lane 0 of the window after, where this warp coded it
    uint32_t carry_d = 0, carry_run = 0;
    for (uint32_t w = end; w-- > first;) {
      const uint32_t s = 32 * w, i = s + lane;
      const bool valid = i < m;
      const uint32_t here = valid ? probes[i] : 0u, len_here = probe_length<W>(here), d = probe_distance<W>(here);
      const uint32_t len_next = i + 1 < m ? probe_length<W>(probes[i + 1]) : 0u;
      // Lazy by one symbol, as write_chunk (probes below min_match are 0 here).
      const bool match = len_here >= min_match && !(len_here < probe_cap && len_next > len_here);
      const bool cap = match && len_here == probe_cap;
      const bool next_cap = __shfl_down_sync(all_lanes, uint32_t(cap), 1);
      const uint32_t next_d = __shfl_down_sync(all_lanes, d, 1);
      const bool chain = cap && (lane < 31 ? next_cap && next_d == d : carry_cap && carry_d == d);
      uint32_t run = 0;
      if (cap && !chain) {
        run = probe_cap;
        while (run < max_len && i + run < m && x[i + run] == x[i + run - d]) ++run;
      }
      const uint32_t ends = __ballot_sync(all_lanes, !chain) & (all_lanes << lane);
      const uint32_t t = ends ? __ffs(ends) - 1u : lane, run_t = __shfl_sync(all_lanes, run, t);
      if (chain) {
        const uint32_t r = ends ? t - lane + run_t : 32 - lane + carry_run;
        run = r < max_len ? r : max_len;
      }
      const uint32_t len = match ? (cap ? run : len_here) : 1u;
      uint32_t next = valid ? i + len : m;  // the next start, then 2, 4, 8, 16, 32 tokens on
#pragma unroll
      for (int r = 0; r < 5; ++r) {
        const uint32_t further = __shfl_sync(all_lanes, next, (next - s) & 31u);
        if (next < s + 32 && next < m) next = further;
      }
      if (valid) work[i] = len | uint32_t(match) << 15 | (next - i) << 16;
      carry_cap = __shfl_sync(all_lanes, uint32_t(cap), 0), carry_d = __shfl_sync(all_lanes, d, 0);
      carry_run = __shfl_sync(all_lanes, run, 0);
    }
  }
};


// The encode's registers grow with the window (G words of distance bits a position).
template <bool Wide, bool Block, typename F>
auto with_groups(uint32_t window, F f) {
  if (window <= 32) return f(DeviceCoder<1, Wide, Block>{});
  if (window <= 64) return f(DeviceCoder<2, Wide, Block>{});
  if (window <= 128) return f(DeviceCoder<4, Wide, Block>{});
  return f(DeviceCoder<8, Wide, Block>{});
}

// The encode by the coders of one kind: narrow or wide, a warp or a block a chunk. Each kind is
// instantiated in a unit of its own (gpulz_warp_narrow.cu, ..., gpulz_block_wide.cu), so that
// the four build side by side: in one unit they were the build's longest step.
template <bool Wide, bool Block>
Buffer encode_coded(const Params& p, const uint8_t* input, uint64_t input_bytes, cudaStream_t stream) {
  return with_groups<Wide, Block>(p.window, [&](auto coder) {
    coder.p = p;
    return chunked::encode_cuda(coder, input, input_bytes, stream);
  });
}
#define FZG_GPULZ_ENCODE_CODED(prefix, wide, block)                                                         \
  prefix template Buffer encode_coded<wide, block>(const Params&, const uint8_t*, uint64_t, cudaStream_t)
FZG_GPULZ_ENCODE_CODED(extern, false, false);
FZG_GPULZ_ENCODE_CODED(extern, true, false);
FZG_GPULZ_ENCODE_CODED(extern, false, true);
FZG_GPULZ_ENCODE_CODED(extern, true, true);

}  // namespace fzg::gpulz::detail
