// What-if model for #17 (not the product): the ratio GPULZ's wide chunks of u16 codes would
// reach if each chunk could also match into one static dictionary per stream, the stream's
// first D bytes, whose hash table (each hash's K latest dictionary positions) is built once.
// Near probes, the parse and the far rule are the product's (gpulz_parse.hh); with D = 0 it
// reproduces the wide stage's ratio (16384:32:2 on p256 at rel 1e-3: 1.341, as built). Costs:
// a literal 16 bits, a match within the chunk 16 + NEAR_EXTRA bits (the bit that tells it from
// a dictionary match), a dictionary match DICT_BITS; a flag bit a token, a 3-byte header and a
// 4-byte table entry a chunk, a chunk that does not shrink raw, the dictionary stored raw.
//   python3 scripts/lz-ratio.py --dump DIR ...        (the codes, one file a field and bound)
//   build/gpulz_dict_model CODES CHUNK WINDOW D K WITHIN DICT_BITS [NEAR_EXTRA [PARTS]]
// WITHIN 1 keeps the chunk's own far candidates (the product's table) beside the dictionary's.
// PARTS > 1 samples the dictionary: PARTS slices of D / PARTS bytes from the middles of PARTS
// equal parts of the stream (the chunks are then the rest of the stream, in order).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "lossless/gpulz/gpulz_parse.hh"

using namespace fzg::gpulz;
using Sym = uint16_t;

int main(int argc, char** argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: gpulz_dict_model CODES CHUNK WINDOW D K WITHIN DICT_BITS [NEAR_EXTRA [PARTS]]\n");
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (!f) return perror(argv[1]), 1;
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) bytes.insert(bytes.end(), buf, buf + n);
  fclose(f);
  const uint32_t C = atoi(argv[2]), W = atoi(argv[3]), D = atoi(argv[4]), K = atoi(argv[5]), within = atoi(argv[6]);
  const uint32_t dict_bits = atoi(argv[7]), near_extra = argc > 8 ? atoi(argv[8]) : 0;
  const uint32_t parts = argc > 9 ? atoi(argv[9]) : 1;
  if (parts > 1 && uint64_t(D) <= bytes.size()) {  // the sampled slices first, then the rest
    const uint64_t n = bytes.size(), piece = D / parts / 2 * 2;
    std::vector<uint8_t> dictionary, rest;
    uint64_t last = 0;
    for (uint32_t k = 0; k < parts; ++k) {
      const uint64_t start = std::max<uint64_t>(last, (2 * k + 1) * n / (2 * parts) / 2 * 2);
      const uint64_t end = std::min<uint64_t>(start + piece, n);
      dictionary.insert(dictionary.end(), bytes.begin() + start, bytes.begin() + end);
      rest.insert(rest.end(), bytes.begin() + last, bytes.begin() + start);
      last = end;
    }
    rest.insert(rest.end(), bytes.begin() + last, bytes.end());
    dictionary.insert(dictionary.end(), rest.begin(), rest.end());
    bytes.swap(dictionary);
  }
  const uint32_t min_match = 2, max_len = min_match + wide_extra;
  const uint64_t nsym = bytes.size() / 2;
  const Sym* x = reinterpret_cast<const Sym*>(bytes.data());
  const uint32_t nd = std::min<uint64_t>(D / 2, nsym), m_chunk = C / 2;
  constexpr uint32_t none = ~0u;
  auto hash_at = [&](uint64_t i) { return far_hash_of(x + i, 0u); };  // the stage's own hash of position i
  std::vector<uint32_t> dict_table(size_t(K) << far_hash_bits, none);
  for (uint32_t j = 0; j + 1 < nd; ++j) {
    uint32_t* b = &dict_table[size_t(hash_at(j)) * K];
    std::memmove(b + 1, b, (K - 1) * sizeof *b);
    b[0] = j;
  }
  uint64_t total = 2ull * nd, far_dict = 0, far_in = 0, matches = 0, literals = 0;
  uint64_t positions = 0, compares = 0, compared = 0;  // the far pass's work: candidates compared, symbols read
  std::vector<uint32_t> best(W + m_chunk), table(size_t(K) << far_hash_bits), probe(m_chunk);
  for (uint64_t c0 = nd; c0 < nsym; c0 += m_chunk) {
    const uint32_t m = uint32_t(std::min<uint64_t>(nsym - c0, m_chunk));
    const uint32_t before = nd ? uint32_t(std::min<uint64_t>(W, c0)) : 0;  // near probes reach the dictionary's tail
    probe_by_distance(x + c0 - before, before + m, W, best.data());
    std::fill(table.begin(), table.end(), none);
    for (uint32_t t = 0; t < m; ++t) {
      const uint32_t p = probe_of(best[before + t]), cap = std::min(m - t, probe_cap);
      uint32_t len = p & 0xffu, d = p >> 8;
      const uint64_t i = c0 + t;
      if (t + 1 < m) {
        const uint32_t h = hash_at(i);
        ++positions;
        auto consider = [&](uint64_t j, bool in_dictionary) {
          const uint64_t dist = i - j;
          if (dist <= W || (!in_dictionary && dist > wide_reach)) return;
          uint32_t l = 0;
          while (l < cap && x[i + l] == x[j + l]) ++l;
          ++compares, compared += l < cap ? l + 1 : l;
          const uint32_t cost = in_dictionary ? dict_bits : 16 + near_extra;
          if (l >= min_match && 16 * l > cost && l > len) len = l, d = uint32_t(dist);
        };
        uint32_t* b = &table[size_t(h) * K];
        // As best_far: no candidate is compared once a match reaches the probe's cap.
        if (within)
          for (uint32_t k = 0; k < K && len < cap && b[k] != none; ++k) consider(c0 + b[k], false);
        for (uint32_t k = 0; nd && k < K && len < cap && dict_table[size_t(h) * K + k] != none; ++k)
          consider(dict_table[size_t(h) * K + k], true);
        std::memmove(b + 1, b, (K - 1) * sizeof *b);
        b[0] = t;
      }
      probe[t] = len | d << 8;
    }
    uint64_t bits = 8 * header_bytes, tokens = 0;
    for (uint32_t t = 0; t < m; ++tokens) {  // write_chunk's parse
      uint32_t len = probe[t] & 0xffu;
      const uint32_t d = probe[t] >> 8;
      bool match = len >= min_match;
      if (match && len < probe_cap && t + 1 < m && (probe[t + 1] & 0xffu) > len) match = false;
      if (match) {
        if (len == probe_cap)
          while (len < max_len && t + len < m && x[c0 + t + len] == x[c0 + t + len - d]) ++len;
        const bool into_dictionary = d > t + before || d > wide_reach;  // past the chunk (and its window)
        bits += into_dictionary ? dict_bits : 16 + (nd ? near_extra : 0);
        far_dict += into_dictionary, far_in += !into_dictionary && d > W, ++matches;
        t += len;
      } else {
        bits += 16, ++literals, t += 1;
      }
    }
    const uint64_t coded = (bits + 7) / 8 + (tokens + 7) / 8;
    total += std::min<uint64_t>(coded, 2ull * m) + 4;
  }
  printf("%.3f  matches %llu (far in the chunk %llu, into the dictionary %llu), literals %llu; far compares "
         "%.2f a position, %.2f symbols each\n",
         double(bytes.size()) / double(total), (unsigned long long)matches, (unsigned long long)far_in,
         (unsigned long long)far_dict, (unsigned long long)literals, double(compares) / double(positions ? positions : 1),
         double(compared) / double(compares ? compares : 1));
}
