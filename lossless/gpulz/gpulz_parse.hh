// GPULZ's matching and parsing, written once for the CPU and the GPU (the format:
// gpulz.hh). Matching: for each position i, `probe` looks at every distance d in
// [1, min(window, i)] and takes the longest match up to probe_cap symbols, the smallest d among
// equals; the probes are independent, so the GPU computes them a thread per position. Parsing
// walks the chunk once: a probe of min_match or more is a match (extended past probe_cap from
// its distance), unless the next position's probe is longer (lazy by one symbol); otherwise a
// literal.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/portable.hh"

namespace fzg::gpulz {

constexpr uint32_t probe_cap = 16;     // symbols a probe compares at most
constexpr uint32_t max_extra = 255;    // a match is at most min_match + 255 symbols
constexpr uint32_t max_window = 255;
constexpr uint32_t header_bytes = 3;   // S, T

// Wide matches (offset_bits 11): a match token is a u16, L - min_match in bits 0-4 and d - 1
// in bits 5-15, so a match reaches 2048 symbols back at the cost of its length's range; the
// chunk's first byte carries wide_flag beside S.
constexpr uint32_t wide_flag = 0x80;
constexpr uint32_t wide_length_bits = 5;
constexpr uint32_t wide_reach = 2048;  // symbols
constexpr uint32_t wide_extra = (1u << wide_length_bits) - 1;
FZG_HOST_DEVICE constexpr uint32_t max_extra_of(bool wide) { return wide ? wide_extra : max_extra; }

// A match token's two bytes: its length past min_match and its distance.
FZG_HOST_DEVICE void put_match(uint8_t* at, uint32_t extra, uint32_t d, bool wide) {
  if (!wide) {
    at[0] = uint8_t(extra), at[1] = uint8_t(d - 1);
    return;
  }
  const uint32_t v = extra | (d - 1) << wide_length_bits;
  at[0] = uint8_t(v), at[1] = uint8_t(v >> 8);
}
FZG_HOST_DEVICE void get_match(const uint8_t* at, bool wide, uint32_t& extra, uint32_t& d) {
  const uint32_t v = uint32_t(at[0]) | uint32_t(at[1]) << 8;
  extra = wide ? v & wide_extra : v & 0xffu;
  d = (wide ? v >> wide_length_bits : v >> 8) + 1;
}

// Far candidates (wide chunks only), after LZ4's rule: each position with 4 bytes of symbols
// from it is hashed (its 4 bytes, little-endian, times Knuth's constant, the top far_hash_bits
// bits); its candidates are the far_ways latest earlier positions with the same hash, newest
// first (every keyed position is recorded in turn, whatever the parse). A candidate is taken
// when it lies past the window and within wide_reach and its match (up to probe_cap) is at
// least min_match and longer than the best before it, the near probe's first (a nearer match
// wins a tie). Four rather than one lift the ratio most on turbulent fields' codes (+7.6 % at
// rel 1e-4, docs/PERFORMANCE.md) in a table as large as one candidate's was.
constexpr uint32_t far_hash_bits = 10;
constexpr uint32_t far_ways = 4;
constexpr uint32_t far_table_size = far_ways << far_hash_bits;  // entries, a hash's newest first
FZG_HOST_DEVICE uint32_t far_hash_of_key(uint32_t key) { return (key * 2654435761u) >> (32 - far_hash_bits); }
FZG_HOST_DEVICE uint32_t far_hash(const uint8_t* at) {
  return far_hash_of_key(uint32_t(at[0]) | uint32_t(at[1]) << 8 | uint32_t(at[2]) << 16 | uint32_t(at[3]) << 24);
}
// far_hash of position i's key read as symbols (the same four bytes, little-endian): on the GPU
// one load for 4-byte symbols and two for 2-byte ones, where the bytes took four.
template <typename Sym>
FZG_HOST_DEVICE uint32_t far_hash_of(const Sym* x, uint32_t i) {
  if constexpr (sizeof(Sym) == 4) return far_hash_of_key(x[i]);
  else if constexpr (sizeof(Sym) == 2) return far_hash_of_key(uint32_t(x[i]) | uint32_t(x[i + 1]) << 16);
  else return far_hash(x + i);
}
// Positions of m symbols of S bytes that have a key.
FZG_HOST_DEVICE constexpr uint32_t keyed_positions(uint32_t m, uint32_t S) {
  return m * S >= 4 ? m - (4 + S - 1) / S + 1 : 0;
}
// The symbols x[i, i + cap) and x[j, j + cap) have in common from the start (1 <= cap), four
// compared a step, x readable 3 symbols past i + cap (what is there is capped off). The GPU's
// compare (common_length): four independent loads, whose shared-memory latency overlaps, and a
// quarter of the divergent steps of a symbol at a time (the far compares' loop was a third of
// the block coder's time, with 8 of 32 lanes active, docs/PERFORMANCE.md).
template <typename Sym>
FZG_HOST_DEVICE uint32_t common_length_by4(const Sym* x, uint32_t i, uint32_t j, uint32_t cap) {
  uint32_t len = 0;
  for (;;) {
    uint32_t equal = 0;
    FZG_UNROLL
    for (uint32_t t = 0; t < 4; ++t) equal |= uint32_t(uint32_t(x[i + len + t]) == uint32_t(x[j + len + t])) << t;
    if (equal != 15u) {
#if defined(__CUDA_ARCH__)
      len += uint32_t(__ffs(~equal)) - 1u;
#else
      len += uint32_t(__builtin_ctz(~equal));
#endif
      break;
    }
    len += 4;
    if (len >= cap) break;
  }
  return len < cap ? len : cap;
}
// The same a symbol at a time on the CPU, whose x ends at the chunk's end.
template <typename Sym>
FZG_HOST_DEVICE uint32_t common_length(const Sym* x, uint32_t i, uint32_t j, uint32_t cap) {
#if defined(__CUDA_ARCH__)
  return common_length_by4(x, i, j, cap);
#else
  uint32_t len = 0;
  while (len < cap && x[i + len] == x[j + len]) ++len;
  return len;
#endif
}

// The far candidate j's match from i, given as a probe (length | d << 8), or 0 where it is not taken.
template <typename Sym>
FZG_HOST_DEVICE uint32_t far_probe(const Sym* x, uint32_t i, uint32_t j, uint32_t m, uint32_t window,
                                   uint32_t near_len, uint32_t min_match) {
  if (j >= i || i - j <= window || i - j > wide_reach) return 0;
  const uint32_t cap = m - i < probe_cap ? m - i : probe_cap;
  const uint32_t len = common_length(x, i, j, cap);
  return len >= min_match && len > near_len ? len | (i - j) << 8 : 0;
}

// i's best far match over its candidates, newest first (`candidate(k, j)` gives the k-th in j,
// false past the last), as a probe, or 0 where none is taken.
template <typename Sym, typename Candidate>
FZG_HOST_DEVICE uint32_t best_far(const Sym* x, uint32_t i, uint32_t m, uint32_t window, uint32_t near_len,
                                  uint32_t min_match, Candidate&& candidate) {
  uint32_t best = 0, len = near_len, j = 0;
  for (uint32_t k = 0; k < far_ways && len < probe_cap && candidate(k, j); ++k)
    if (const uint32_t far = far_probe(x, i, j, m, window, len, min_match)) best = far, len = far & 0xffu;
  return best;
}

// A probe: its length (at most probe_cap) in bits 0-7, its distance in bits 8-15.
template <typename Sym>
FZG_HOST_DEVICE uint32_t probe(const Sym* x, uint32_t i, uint32_t m, uint32_t window) {
  const uint32_t cap = m - i < probe_cap ? m - i : probe_cap;
  const uint32_t farthest = window < i ? window : i;
  uint32_t best = 0, best_d = 0;
  for (uint32_t d = 1; d <= farthest; ++d) {
    uint32_t len = 0;
    while (len < cap && x[i + len] == x[i + len - d]) ++len;
    if (len > best) {
      best = len, best_d = d;
      if (len == cap) break;
    }
  }
  return best | best_d << 8;
}

// `probe` for every position of x[0, m) at once, a distance at a time: with
// L_d(i) = x[i] == x[i - d] ? min(probe_cap, 1 + L_d(i + 1)) : 0 taken from the end, each
// position keeps the greatest (L, -d), packed as L << 8 | (255 - d) in best[i] (0: nothing
// matches); probe_of unpacks it. The same answers as `probe` (longest, nearest on a tie) with
// one comparison per position and distance. The GPU finds the same answers from each
// position's equalities as bits over the distances (gpulz.cu).
FZG_HOST_DEVICE uint32_t probe_of(uint32_t packed) { return packed ? (packed >> 8) | (255 - (packed & 0xffu)) << 8 : 0; }

template <typename Sym>
inline void probe_by_distance(const Sym* x, uint32_t m, uint32_t window, uint32_t* best) {
  // Positions from the end, every distance's L in `run` (L_d of the position after). The
  // inner loop over distances has no dependence between iterations and reads the chunk
  // backwards from i, so it reads a reversed copy forwards: it vectorizes.
  uint32_t run[max_window + 1] = {};
  Sym reversed_storage[2048];
  std::vector<Sym> reversed_heap;
  Sym* reversed = reversed_storage;
  if (m > 2048) reversed_heap.resize(m), reversed = reversed_heap.data();
  for (uint32_t j = 0; j < m; ++j) reversed[j] = x[m - 1 - j];
  for (uint32_t i = m; i-- > 0;) {
    const uint32_t farthest = window < i ? window : i;
    const Sym xi = x[i];
    const Sym* __restrict before = reversed + (m - 1 - i);  // before[d] = x[i - d]
    uint32_t* __restrict lengths = run;
    uint32_t top = 0;
    for (int d = 1; d <= int(farthest); ++d) {
      // Branch-free: masks instead of conditions.
      const uint32_t next = lengths[d] < probe_cap ? lengths[d] + 1 : probe_cap;
      const uint32_t len = next & (0u - uint32_t(uint32_t(before[d]) == uint32_t(xi)));
      lengths[d] = len;
      const uint32_t packed = (len << 8 | uint32_t(255 - d)) & (0u - uint32_t(len != 0));
      top = packed > top ? packed : top;
    }
    best[i] = top;
  }
}

// A wide chunk is also coded narrow where its wide code fits and its matches of the longest
// length (min_match + wide_extra) cover at least a quarter of its symbols; the narrow code is
// kept where it is smaller. Such chunks are runs that narrow matches (up to min_match + 255)
// code in fewer tokens: nearly constant codes lost 4x to narrow GPULZ in wide chunks.
FZG_HOST_DEVICE constexpr bool try_narrow(uint32_t longest_symbols, uint32_t m) {
  return 4 * uint64_t(longest_symbols) >= m;
}

// The code of chunk x[0, m) (S = sizeof(Sym)) and its tail, from every position's probe
// (probe_at(i), as `probe` returns it), into out[0, capacity); `flags` has room for
// ceil(m / 8) bytes. Returns the size, or capacity + 1 when the code would not fit;
// *longest_symbols: the symbols its matches of the longest length cover.
template <typename Sym, typename ProbeAt>
FZG_HOST_DEVICE uint32_t write_chunk(const Sym* x, uint32_t m, ProbeAt probe_at, uint32_t min_match, bool wide,
                                     const uint8_t* tail, uint32_t tail_bytes, uint8_t* out, uint32_t capacity,
                                     uint8_t* flags, uint32_t* longest_symbols) {
  constexpr uint32_t S = sizeof(Sym);
  const uint32_t max_len = min_match + max_extra_of(wide);
  uint32_t pos = header_bytes, t = 0, bits = 0;  // bits: the flags of the current 8 tokens
  *longest_symbols = 0;
  for (uint32_t i = 0; i < m; ++t) {
    const uint32_t here = probe_at(i);
    uint32_t len = here & 0xffu;
    const uint32_t d = here >> 8;
    bool match = len >= min_match;
    if (match && len < probe_cap && i + 1 < m && (probe_at(i + 1) & 0xffu) > len) match = false;
    if (match) {
      if (len == probe_cap)
        while (len < max_len && i + len < m && x[i + len] == x[i + len - d]) ++len;
      if (pos + 2 > capacity) return capacity + 1;
      put_match(out + pos, len - min_match, d, wide);
      if (len == max_len) *longest_symbols += len;
      pos += 2;
      bits |= 1u << (t % 8);
      i += len;
    } else {
      if (pos + S > capacity) return capacity + 1;
      const Sym v = x[i];
      for (uint32_t b = 0; b < S; ++b) out[pos + b] = uint8_t(v >> (8 * b));
      pos += S;
      i += 1;
    }
    if (t % 8 == 7) flags[t / 8] = uint8_t(bits), bits = 0;
  }
  if (t % 8) flags[t / 8] = uint8_t(bits);
  const uint32_t flag_bytes = (t + 7) / 8;
  if (pos + flag_bytes + tail_bytes > capacity) return capacity + 1;
  out[0] = uint8_t(S | (wide ? wide_flag : 0));
  out[1] = uint8_t(t), out[2] = uint8_t(t >> 8);
  for (uint32_t b = 0; b < flag_bytes; ++b) out[pos + b] = flags[b];
  for (uint32_t b = 0; b < tail_bytes; ++b) out[pos + flag_bytes + b] = tail[b];
  return pos + flag_bytes + tail_bytes;
}

// A chunk's header, checked against its stored size: where its tokens end and its flags begin.
struct ChunkShape {
  uint32_t S, tokens, symbols, tail, tokens_end;
  bool wide;
};
FZG_HOST_DEVICE bool chunk_shape(const uint8_t* in, uint32_t size, uint32_t n, ChunkShape& s) {
  if (size < header_bytes) return false;
  s.S = in[0] & ~wide_flag;
  s.wide = (in[0] & wide_flag) != 0;
  if (s.S != 1 && s.S != 2 && s.S != 4) return false;
  s.tokens = uint32_t(in[1]) | uint32_t(in[2]) << 8;
  s.symbols = n / s.S, s.tail = n % s.S;
  const uint32_t flag_bytes = (s.tokens + 7) / 8;
  if (s.tokens > s.symbols || header_bytes + flag_bytes + s.tail > size) return false;
  s.tokens_end = size - s.tail - flag_bytes;
  // Flag bits past the last token are clear.
  return s.tokens % 8 == 0 || (in[s.tokens_end + flag_bytes - 1] >> (s.tokens % 8)) == 0;
}

}  // namespace fzg::gpulz
