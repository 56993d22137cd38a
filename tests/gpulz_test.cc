// GPULZ on its own: every (chunk, window, symbol) combination, the matches the format must
// find (runs longer than the window, sources that overlap their match), raw chunks, odd
// lengths, the format's own bytes, damage and parameters. The GPU's bytes are compared with
// the CPU's wherever a device is present.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>

#include "core/error.hh"
#include "core/registry.hh"
#include "lossless/gpulz/gpulz.hh"
#include "lossless/gpulz/gpulz_parse.hh"
#include "lossless/gpulz/pair_equalities.hh"
#include "lossless/gpulz/plane_equalities.hh"
#include "test_util.hh"
#include "varlen/chunked_stream.hh"

namespace fzg {
namespace {

using nlohmann::json;

// The stage with these parameters on both backends (testing::byte_stage_round_trip).
std::vector<uint8_t> round_trip(const gpulz::Params& p, const std::vector<uint8_t>& input) {
  const auto stage = make_stage("gpulz", {{"chunk", p.chunk_bytes},
                                          {"window", p.window},
                                          {"symbol", p.symbol ? std::to_string(p.symbol) : "auto"},
                                          {"min_match", p.min_match},
                                          {"offset_bits", p.offset_bits}});
  return testing::byte_stage_round_trip(*stage, input);
}

// Lorenzo-like u16 codes: mostly near the centre code, runs of equal codes, rare outliers.
std::vector<uint8_t> codes_like(uint64_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(bytes);
  uint16_t run_code = 0;
  for (uint64_t i = 0; i + 1 < bytes; i += 2) {
    const uint64_t r = rng() % 100;
    uint16_t code = r < 40 ? run_code : r < 90 ? uint16_t(rng() % 7) : uint16_t(rng());
    if (r >= 95) run_code = uint16_t(rng() % 3);
    out[i] = uint8_t(code), out[i + 1] = uint8_t(code >> 8);
  }
  if (bytes % 2) out[bytes - 1] = 0x5a;
  return out;
}

std::vector<uint8_t> random_bytes(uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = uint8_t(rng());
  return out;
}

// Runs of a period of 1 to 300 bytes, each 5 to max_periods periods long: matches at the probe's
// cap and past it, their distance changing from run to run.
std::vector<uint8_t> periodic_runs(size_t bytes, size_t max_periods, std::mt19937_64& rng) {
  std::vector<uint8_t> out(bytes);
  for (size_t i = 0; i < out.size();) {
    const size_t period = 1 + rng() % 300, run = period * (5 + rng() % (max_periods - 4));
    for (size_t k = 0; k < run && i < out.size(); ++k, ++i) out[i] = uint8_t(k % period * 37 + period);
  }
  return out;
}

gpulz::Params params(uint32_t chunk, uint32_t window, uint32_t symbol, uint32_t min_match = 0,
                     uint32_t offset_bits = 8) {
  gpulz::Params p;
  p.chunk_bytes = chunk, p.window = window, p.symbol = symbol, p.min_match = min_match, p.offset_bits = offset_bits;
  return p;
}

gpulz::Params wide(gpulz::Params p) {
  p.offset_bits = 11;
  return p;
}

TEST(Gpulz, EveryChunkWindowAndSymbolRoundTripsAndShrinksCodes) {
  const std::vector<uint8_t> codes = codes_like(3 * 16384 + 1001, 5);  // odd: a ragged chunk and a tail
  for (uint32_t chunk : {2048u, 4096u, 8192u, 16384u})
    for (uint32_t window : {32u, 64u, 128u, 255u})
      for (uint32_t symbol : {1u, 2u, 4u, 0u})
        for (uint32_t offset_bits : {8u, 11u}) {
          SCOPED_TRACE("chunk " + std::to_string(chunk) + " window " + std::to_string(window) + " symbol " +
                       std::to_string(symbol) + " offset_bits " + std::to_string(offset_bits));
          const std::vector<uint8_t> stream = round_trip(params(chunk, window, symbol, 0, offset_bits), codes);
          EXPECT_LT(stream.size(), codes.size());
        }
}

// The largest chunk the stage accepts (32 KiB): its GPU decode stages two chunk-sized buffers a
// warp, so fewer warps a block fit in shared memory than for smaller chunks.
TEST(Gpulz, TheLargestChunkRoundTrips) {
  const std::vector<uint8_t> codes = codes_like(3 * 32768 + 777, 17);
  for (uint32_t symbol : {2u, 0u})
    for (uint32_t offset_bits : {8u, 11u})
      EXPECT_LT(round_trip(params(32768, 255, symbol, 0, offset_bits), codes).size(), codes.size())
          << "symbol " << symbol << " offset_bits " << offset_bits;
}

// The GPU keeps a position's distances as words of 32 bits and finds runs by doubling: windows
// that fill a word partly, exactly or spill into the next, every min_match, on inputs whose
// longest matches sit at the probe's cap, past it, across windows of 32 positions and at the
// chunk's end (the CPU and the GPU compared by round_trip where a device is present).
TEST(Gpulz, EveryWindowWidthAndMinimumMatchParsesAlike) {
  std::mt19937_64 rng(23);
  std::vector<std::vector<uint8_t>> inputs = {codes_like(2 * 4096 + 333, 31), std::vector<uint8_t>(4096 + 17, 0)};
  inputs.push_back(periodic_runs(3 * 4096, 40, rng));
  std::vector<uint8_t> sparse = random_bytes(2 * 4096, 41);  // short repeats over noise
  for (size_t i = 64; i + 16 < sparse.size(); i += 1 + rng() % 40)
    for (size_t k = 0, len = 2 + rng() % 20, d = 1 + rng() % 60; k < len && i + k < sparse.size(); ++k)
      sparse[i + k] = sparse[i + k - d];
  inputs.push_back(sparse);
  for (uint32_t window : {1u, 2u, 17u, 31u, 33u, 63u, 65u, 100u, 129u, 200u})
    for (uint32_t symbol : {1u, 2u, 4u, 0u})
      for (uint32_t min_match : {0u, 1u, 4u, 16u})
        for (size_t k = 0; k < inputs.size(); ++k) {
          SCOPED_TRACE("window " + std::to_string(window) + " symbol " + std::to_string(symbol) + " min_match " +
                       std::to_string(min_match) + " input " + std::to_string(k));
          round_trip(params(k == 1 ? 4096 : 2048, window, symbol, min_match), inputs[k]);
          round_trip(wide(params(k == 1 ? 4096 : 2048, window, symbol, min_match)), inputs[k]);
        }
}

// Chunks of 8 and 16 KiB are coded on the GPU by a block, each phase spread over its warps (a
// share of the windows each): runs of matches at the probe's cap whose length is carried from
// position to position across windows and shares, and whose distance changes inside a run;
// constant chunks (one explicit extension a run); walks that skip windows; far candidates from a
// counting sort; every window width, symbol and min_match (CPU = GPU where a device is present).
TEST(Gpulz, BlockCodedChunksParseAsTheWarpCodedOnes) {
  std::mt19937_64 rng(29);
  std::vector<std::vector<uint8_t>> inputs = {codes_like(3 * 16384 + 333, 37), std::vector<uint8_t>(2 * 16384 + 17, 0)};
  inputs.push_back(periodic_runs(3 * 16384, 80, rng));
  std::vector<uint8_t> sparse = random_bytes(2 * 16384 + 1, 43);  // repeats near and far over noise
  for (size_t i = 64; i + 300 < sparse.size(); i += 1 + rng() % 60)
    for (size_t k = 0, len = 2 + rng() % 40, d = 1 + rng() % (rng() % 2 ? 60 : 2000); k < len && k < i; ++k)
      sparse[i + k] = sparse[i + k - std::min(d, i)];
  inputs.push_back(sparse);
  for (uint32_t chunk : {8192u, 16384u})
    for (uint32_t window : {1u, 31u, 33u, 100u, 255u})
      for (uint32_t symbol : {1u, 2u, 4u, 0u})
        for (uint32_t min_match : {0u, 1u, 16u})
          for (size_t k = 0; k < inputs.size(); ++k) {
            SCOPED_TRACE("chunk " + std::to_string(chunk) + " window " + std::to_string(window) + " symbol " +
                         std::to_string(symbol) + " min_match " + std::to_string(min_match) + " input " +
                         std::to_string(k));
            round_trip(params(chunk, window, symbol, min_match), inputs[k]);
            round_trip(wide(params(chunk, window, symbol, min_match)), inputs[k]);
          }
}

// Wide chunks reach past the window: blocks of noise repeated 300 to 2000 symbols later are
// found (the far candidates), at every symbol width, through hash collisions (a table of 1024
// hashes over chunks of up to 16384 positions) and hashes that recur within a warp's 32
// positions (periods below 32); a narrow stream of the same bytes finds none of them.
TEST(Gpulz, WideMatchesReachPastTheWindow) {
  std::mt19937_64 rng(77);
  std::vector<uint8_t> echoes = random_bytes(4 * 16384, 78);
  for (size_t i = 2048; i + 64 < echoes.size(); i += 64 + rng() % 64)
    for (size_t k = 0, d = 300 + rng() % 1700, len = 16 + rng() % 40; k < len; ++k) echoes[i + k] = echoes[i + k - d];
  std::vector<uint8_t> short_periods(3 * 16384);
  for (size_t i = 0; i < short_periods.size();) {  // a period of 1 to 40 bytes, repeated 2 to 9 times, then noise
    const size_t period = 1 + rng() % 40, copies = 2 + rng() % 8;
    for (size_t k = 0; k < period * copies && i < short_periods.size(); ++k, ++i)
      short_periods[i] = uint8_t(k % period * 29 + period);
    for (size_t k = 0, noise = 1 + rng() % 60; k < noise && i < short_periods.size(); ++k, ++i)
      short_periods[i] = uint8_t(rng());
  }
  for (uint32_t chunk : {2048u, 16384u})
    for (uint32_t window : {1u, 32u, 255u})
      for (uint32_t symbol : {1u, 2u, 4u, 0u}) {
        SCOPED_TRACE("chunk " + std::to_string(chunk) + " window " + std::to_string(window) + " symbol " +
                     std::to_string(symbol));
        const uint64_t narrow = round_trip(params(chunk, window, symbol), echoes).size();
        const uint64_t far = round_trip(wide(params(chunk, window, symbol)), echoes).size();
        if (symbol == 1 && chunk == 16384) {
          EXPECT_LT(far, narrow * 4 / 5) << narrow;  // most sources in the chunk
        }
        EXPECT_LT(far, echoes.size());
        round_trip(wide(params(chunk, window, symbol)), short_periods);
      }
}

// A wide match is as long as min_match + 31 symbols: "ab" repeated, under a window of 1 (no
// narrow match: the chunk stays wide), is two literals, then matches of that length from two
// back and the rest.
TEST(Gpulz, WideMatchesStopAtTheirLongestLength) {
  std::vector<uint8_t> ab(4096);
  for (size_t i = 0; i < ab.size(); ++i) ab[i] = "ab"[i % 2];
  const std::vector<uint8_t> stream = round_trip(wide(params(4096, 1, 1)), ab);
  const uint32_t matches = (4096 - 2 + 33) / 34, tokens = 2 + matches;
  EXPECT_EQ(stream.size(), 4 + gpulz::header_bytes + 2 + 2 * matches + (tokens + 7) / 8);
  EXPECT_EQ(stream[4], 1 | gpulz::wide_flag);
}

// A wide stream codes a chunk narrow where that is smaller and its longest wide matches cover a
// quarter of it or more (gpulz::try_narrow): a chunk of zeros is coded as a narrow stream codes
// it; beside it, "ab" repeated under a window of 1 stays wide.
TEST(Gpulz, NearlyConstantChunksOfAWideStreamAreCodedNarrow) {
  const std::vector<uint8_t> zeros(4096, 0);
  EXPECT_EQ(round_trip(wide(params(4096, 32, 1)), zeros), round_trip(params(4096, 32, 1), zeros));
  std::vector<uint8_t> both(zeros);
  for (size_t i = 0; i < 4096; ++i) both.push_back("ab"[i % 2]);
  const std::vector<uint8_t> stream = round_trip(wide(params(4096, 1, 1)), both);
  const uint32_t first = stream[0] | stream[1] << 8;  // the table: two sizes, coded chunks
  ASSERT_LT(first, 4096u);
  EXPECT_EQ(stream[8], 1u);
  EXPECT_EQ(stream[8 + first], 1u | gpulz::wide_flag);
  const std::vector<uint8_t> ab(both.begin() + 4096, both.end());  // one chunk each, a table entry each
  EXPECT_EQ(stream.size(),
            round_trip(params(4096, 1, 1), zeros).size() + round_trip(wide(params(4096, 1, 1)), ab).size());
}

// A hash's four latest positions are its candidates, newest first: three that match 4 bytes,
// then one that matches 40, which the wide encoder takes (one candidate a hash would give the
// newest, 200 back).
TEST(Gpulz, WideCandidatesAreAHashsFourLatestPositions) {
  // A background of period 7 (bytes below 7: it compresses), a pattern of 40 bytes from 0x80 at
  // 100 and again at 1000, its first 4 bytes at 600, 700 and 800.
  std::vector<uint8_t> x(2048);
  for (size_t i = 0; i < x.size(); ++i) x[i] = uint8_t(i % 7);
  const std::vector<uint8_t> pattern = random_bytes(40, 91);
  for (size_t k = 0; k < 40; ++k) x[1000 + k] = x[100 + k] = uint8_t(pattern[k] | 0x80);
  for (size_t at : {600, 700, 800}) {
    for (size_t k = 0; k < 4; ++k) x[at + k] = x[100 + k];
    x[at + 4] = uint8_t(~x[104]);
  }
  // A window of 1: narrow matches cannot code the background, so the chunk stays wide.
  const std::vector<uint8_t> stream = round_trip(wide(params(2048, 1, 1)), x);
  ASSERT_EQ(stream[4], 1 | gpulz::wide_flag);  // one coded chunk after its size
  const uint32_t tokens = stream[5] | stream[6] << 8, min_match = 3;
  const uint8_t* flags = stream.data() + stream.size() - (tokens + 7) / 8;
  uint32_t at = 4 + gpulz::header_bytes, o = 0, found = 0;
  for (uint32_t t = 0; t < tokens; ++t) {
    if (!(flags[t / 8] >> (t % 8) & 1u)) {
      ++at, ++o;
      continue;
    }
    uint32_t extra, d;
    gpulz::get_match(stream.data() + at, true, extra, d);
    if (o == 1000) {
      EXPECT_EQ(d, 900u);
      EXPECT_EQ(extra + min_match, min_match + gpulz::wide_extra);  // the longest a token names
      ++found;
    }
    at += 2, o += extra + min_match;
  }
  EXPECT_EQ(found, 1u);
  EXPECT_EQ(o, 2048u);
}

// The encoders probe a distance at a time; `probe`, one position over every distance, is the
// definition they must agree with everywhere.
TEST(Gpulz, ProbingByDistanceAnswersAsTheDefinition) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t m = uint32_t(rng() % 400), window = std::vector<uint32_t>{1, 2, 7, 32, 64, 255}[rng() % 6];
    const uint32_t alphabet = std::vector<uint32_t>{2, 3, 5, 256}[rng() % 4];
    std::vector<uint16_t> x(m);
    for (auto& v : x) v = rng() % 4 == 0 ? uint16_t(rng() % alphabet) : uint16_t(rng() % 2);
    std::vector<uint32_t> best(m);
    gpulz::probe_by_distance(x.data(), m, window, best.data());
    for (uint32_t i = 0; i < m; ++i)
      ASSERT_EQ(gpulz::probe_of(best[i]), gpulz::probe(x.data(), i, m, window))
          << "m " << m << " window " << window << " position " << i;
  }
}

// The GPU's far pass reads a position's key as symbols and compares four symbols a step: the
// same hashes as the key's bytes, the same lengths as a symbol at a time, at every symbol width,
// position and cap, over symbols from two values (long common runs) to many, with a margin of
// other symbols past the chunk (capped off).
template <typename Sym>
void expect_far_reads_as_defined(std::mt19937_64& rng) {
  constexpr uint32_t S = sizeof(Sym);
  for (const uint32_t alphabet : {1u, 2u, 3u, 200u}) {
    const uint32_t m = 1 + uint32_t(rng() % 300);
    std::vector<Sym> x(m + 3);
    for (auto& v : x) v = Sym(rng() % alphabet * 0x01010101u);
    for (uint32_t k = m; k < m + 3; ++k) x[k] = Sym(rng());  // the margin
    const auto* bytes = reinterpret_cast<const uint8_t*>(x.data());
    for (uint32_t i = 0; i < gpulz::keyed_positions(m, S); ++i)
      ASSERT_EQ(gpulz::far_hash_of(x.data(), i), gpulz::far_hash(bytes + i * S)) << "S " << S << " position " << i;
    for (uint32_t i = 1; i < m; ++i)
      for (uint32_t j = 0; j < i; j += 1 + uint32_t(rng() % 5)) {
        const uint32_t cap = 1 + uint32_t(rng() % std::min(m - i, gpulz::probe_cap));
        uint32_t expected = 0;
        while (expected < cap && x[i + expected] == x[j + expected]) ++expected;
        ASSERT_EQ(gpulz::common_length_by4(x.data(), i, j, cap), expected)
            << "S " << S << " alphabet " << alphabet << " i " << i << " j " << j << " cap " << cap;
      }
  }
}

TEST(Gpulz, FarKeysAndCommonLengthsReadAsSymbolsAnswerAsTheBytes) {
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 20; ++trial) {
    expect_far_reads_as_defined<uint8_t>(rng);
    expect_far_reads_as_defined<uint16_t>(rng);
    expect_far_reads_as_defined<uint32_t>(rng);
  }
}

// The GPU probe's equality bits of 2-byte symbols, two distances a 4-byte word, against the
// definition: every position (even and odd), every distance up to 32 G, symbols from a few
// (most distances equal) to many; the front of 32 G symbols before x[0] is compared too.
template <int G>
void expect_pair_equalities_as_defined(std::mt19937_64& rng) {
  for (const uint32_t alphabet : {1u, 2u, 3u, 17u, 65536u}) {
    const uint32_t front = 32 * G, m = 300;
    std::vector<uint32_t> storage((front + m + 1) / 2 + 1);  // 4-byte aligned
    auto* all = reinterpret_cast<uint16_t*>(storage.data());
    for (uint32_t k = 0; k < front + m; ++k) all[k] = uint16_t(rng() % alphabet);
    const uint16_t* x = all + front;
    for (uint32_t i = 0; i < m; ++i) {
      uint32_t e[G];
      gpulz::pair_equalities<G>(x, i, e);
      for (uint32_t d = 1; d <= 32 * G; ++d)
        ASSERT_EQ((e[(d - 1) / 32] >> ((d - 1) % 32)) & 1u, uint32_t(all[front + i] == all[front + i - d]))
            << "G " << G << " alphabet " << alphabet << " position " << i << " distance " << d;
    }
  }
}

TEST(Gpulz, PairEqualitiesAnswerAsTheDefinition) {
  std::mt19937_64 rng(23);
  expect_pair_equalities_as_defined<1>(rng);
  expect_pair_equalities_as_defined<2>(rng);
  expect_pair_equalities_as_defined<4>(rng);
  expect_pair_equalities_as_defined<8>(rng);
  for (uint32_t v = 0; v < (1u << 20); v += 7) {  // both halves, zero or not, through every carry
    const uint32_t w = v * 2654435761u;
    for (const uint32_t word : {w, w & 0xffffu, w & 0xffff0000u, 0x80008000u, 0x00018000u})
      ASSERT_EQ(gpulz::zero_halves(word), ((word & 0xffffu) == 0 ? 0x8000u : 0u) | ((word >> 16) == 0 ? 0x80000000u : 0u))
          << std::hex << word;
  }
}

// The same bits from the windows' bit planes (what the GPU's ballots give), under either map,
// for symbols the map makes small (few planes active) and anywhere (all of them).
template <int G>
void expect_plane_equalities_as_defined(std::mt19937_64& rng, bool sign_magnitude) {
  // A step of 16 leaves planes unused between used ones (the sign-magnitude map's 0 and 5 on).
  for (const auto& [spread, step] : {std::pair{1u, 1u}, {3u, 1u}, {40u, 1u}, {65536u, 1u}, {40u, 16u}, {600u, 16u}}) {
    const uint32_t windows = 6;
    const gpulz::PlaneMap map{uint32_t(rng() % 65536), sign_magnitude};
    std::vector<uint16_t> all(32 * (windows + G));  // windows -G .. windows - 1
    for (auto& v : all) {
      const int32_t delta = (int32_t(rng() % spread) - int32_t(spread / 2)) * int32_t(step);
      v = sign_magnitude ? uint16_t((delta < 0 ? 0x8000u : 0u) | uint32_t(std::abs(delta) & 0x7fff))
                         : uint16_t(map.ref + uint32_t(delta));
    }
    for (uint32_t w = 0; w < windows; ++w) {
      uint32_t planes[G + 1][gpulz::symbol_planes] = {}, active = 0;
      for (int k = 0; k <= G; ++k) {
        for (uint32_t t = 0; t < 32; ++t) {
          const uint32_t z = map(all[32 * (w + G - k) + t]);
          active |= z;
          for (int b = 0; b < gpulz::symbol_planes; ++b) planes[k][b] |= (z >> b & 1u) << t;
        }
      }
      if (spread <= 40 && step == 1) {  // the map keeps them small
        ASSERT_LE(__builtin_popcount(active), 7) << "spread " << spread;
      }
      uint32_t asked = 0;  // planes asked for, a window each
      const auto plane_of = [&](int k, uint32_t bit) {
        ++asked;
        EXPECT_EQ(__builtin_popcount(bit), 1);
        EXPECT_LE(bit, active) << "a plane above the highest active one";
        EXPECT_GE(bit, active & (0u - active)) << "a plane below the lowest active one";
        return planes[k][__builtin_ctz(bit)];
      };
      for (uint32_t lane = 0; lane < 32; ++lane) {
        const uint32_t i = 32 * (w + G) + lane;
        uint32_t e[G];
        asked = 0;
        gpulz::plane_equalities<G>(plane_of, active, lane, map(all[i]), e);
        ASSERT_EQ(asked, (G + 1) * gpulz::planes_taken(active)) << "the span the probe's cutoff counts";
        for (uint32_t d = 1; d <= 32 * G; ++d)
          ASSERT_EQ((e[(d - 1) / 32] >> ((d - 1) % 32)) & 1u, uint32_t(all[i] == all[i - d]))
              << "G " << G << " spread " << spread << " window " << w << " lane " << lane << " distance " << d;
      }
    }
  }
}

TEST(Gpulz, PlaneEqualitiesAnswerAsTheDefinition) {
  std::mt19937_64 rng(29);
  for (const bool sign_magnitude : {false, true}) {
    expect_plane_equalities_as_defined<1>(rng, sign_magnitude);
    expect_plane_equalities_as_defined<2>(rng, sign_magnitude);
  }
  for (const gpulz::PlaneMap map : {gpulz::PlaneMap{1000, false}, gpulz::PlaneMap{1000, true}}) {
    std::vector<uint8_t> seen(65536);
    for (uint32_t x = 0; x < 65536; ++x) {  // a bijection: every value once
      const uint32_t z = map(x);
      ASSERT_LT(z, 65536u);
      ASSERT_EQ(seen[z]++, 0) << x;
    }
  }
  EXPECT_EQ(gpulz::plane_symbol(1000, 1000), 0u);  // near ref low
  EXPECT_EQ(gpulz::plane_symbol(999, 1000), 1u);
  EXPECT_EQ(gpulz::plane_symbol(1001, 1000), 2u);
  EXPECT_EQ(gpulz::plane_symbol_sign_magnitude(0), 0u);  // +-m low
  EXPECT_EQ(gpulz::plane_symbol_sign_magnitude(3), 6u);
  EXPECT_EQ(gpulz::plane_symbol_sign_magnitude(0x8003), 7u);
}

// Codes near a centre with no outliers (many symbols a window, few bit planes: the GPU probe's
// plane path), offset from 32768 or sign-magnitude near 0 (fzg's Lorenzo: the other plane
// map), with stretches of outliers (chunks that change path from window to window) and an odd
// length: every width of window around the planes' limit, both chunk sizes, fixed and
// automatic symbols round trip and shrink the codes (the GPU writing the CPU's bytes where a
// device is present).
TEST(Gpulz, CodesNearACentreRoundTripThroughEveryProbePath) {
  for (const bool sign_magnitude : {false, true}) {
    std::mt19937_64 rng(31);
    std::vector<uint16_t> values(40000);
    for (size_t i = 0; i < values.size();) {
      if (i >= 30 && rng() % 8 == 0) {  // 6 codes seen 1 to 30 back: matches inside every window
        const size_t from = i - 1 - rng() % 30;
        for (size_t k = 0; k < 6 && i < values.size(); ++k, ++i) values[i] = values[from + k];
        continue;
      }
      const int delta = int(rng() % 41) - 20;
      const uint16_t near =
          sign_magnitude ? uint16_t((delta < 0 ? 0x8000 : 0) | std::abs(delta)) : uint16_t(32768 + delta);
      values[i] = i % 5000 >= 4700 ? uint16_t(rng()) : near;  // outliers, or near
      ++i;
    }
    std::vector<uint8_t> codes(2 * values.size() + 1);
    std::memcpy(codes.data(), values.data(), 2 * values.size());
    codes.back() = 0x33;
    for (const uint32_t window : {32u, 33u, 64u})
      for (const uint32_t chunk : {256u, 2048u})
        for (const uint32_t symbol : {2u, 0u})
          EXPECT_LT(round_trip(params(chunk, window, symbol), codes).size(), codes.size())
              << "sign-magnitude " << sign_magnitude << " window " << window << " chunk " << chunk << " symbol "
              << symbol;
  }
}

// The GPU decodes chunks of 8 KiB and more straight into the output, symbols at a time, and
// falls back to staging them where the output's address does not suit its symbols.
TEST(Gpulz, LargeChunksDecodeOnTheGpuIntoAnyOutputAddress) {
  FZG_REQUIRE_GPU();
  const std::vector<uint8_t> codes = codes_like(3 * 8192 + 5, 61);
  for (uint32_t symbol : {4u, 2u}) {
    const auto stage = make_stage("gpulz", {{"chunk", 8192}, {"window", 64}, {"symbol", std::to_string(symbol)}});
    StageContext ctx;
    ctx.dtype = DType::u8;
    ctx.field_dims = ctx.dims = Dims::make({codes.size()});
    ctx.device = Device::cuda;
    const std::vector<Buffer> encoded = stage->encode(ctx, {to_device(testing::host_buffer(codes), nullptr)});
    for (size_t offset : {0u, 1u, 2u, 4u}) {
      const Buffer output = Buffer::device(codes.size() + 8, nullptr);
      std::vector<Buffer> back{output.slice(offset, codes.size())};
      stage->decode(ctx, encoded, back);
      const std::vector<uint8_t> all = testing::bytes_of(output);
      EXPECT_TRUE(std::equal(codes.begin(), codes.end(), all.begin() + offset))
          << "symbol " << symbol << " offset " << offset;
    }
  }
}

TEST(Gpulz, AutoSymbolIsNeverWorseThanAFixedOne) {
  const std::vector<uint8_t> codes = codes_like(40000, 9);
  const uint64_t automatic = round_trip(params(4096, 64, 0), codes).size();
  for (uint32_t symbol : {1u, 2u, 4u}) EXPECT_LE(automatic, round_trip(params(4096, 64, symbol), codes).size());
}

TEST(Gpulz, RunsLongerThanTheWindowCostAFewBytesPerChunk) {
  const std::vector<uint8_t> zeros(8 * 4096, 0);
  for (uint32_t symbol : {1u, 2u, 4u}) {
    const std::vector<uint8_t> stream = round_trip(params(4096, 32, symbol), zeros);
    // Per chunk: a literal, then matches of min_match + 255 symbols from one symbol back.
    EXPECT_LT(stream.size(), 8 * 64u) << "symbol " << symbol;
  }
}

TEST(Gpulz, MatchesOverlappingTheirSourceRepeatAPeriod) {
  // A period of 3 symbols: after the first period, one match per 258 symbols from 3 back.
  std::vector<uint8_t> periodic(4096);
  for (size_t i = 0; i < periodic.size(); ++i) periodic[i] = uint8_t("xyz"[i % 3]);
  const std::vector<uint8_t> stream = round_trip(params(4096, 64, 1), periodic);
  EXPECT_LT(stream.size(), 60u);
}

TEST(Gpulz, IncompressibleChunksAreStoredRawBehindTheTable) {
  const std::vector<uint8_t> noise = random_bytes(5 * 2048 + 77, 3);
  const std::vector<uint8_t> stream = round_trip(params(2048, 255, 0), noise);
  ASSERT_EQ(stream.size(), chunked::max_encoded_size(noise.size(), 2048));
  for (uint64_t k = 0; k < 6; ++k) {
    uint32_t entry;
    std::memcpy(&entry, stream.data() + 4 * k, 4);
    EXPECT_EQ(entry, chunked::raw_flag | chunked::chunk_size(noise.size(), 2048, k));
  }
  EXPECT_EQ(0, std::memcmp(stream.data() + 24, noise.data(), noise.size()));
}

TEST(Gpulz, OddLengthsRoundTrip) {
  for (uint64_t n : {0, 1, 2, 3, 5, 7, 255, 256, 257, 4095, 4097, 8191})
    for (uint32_t symbol : {1u, 2u, 4u, 0u}) {
      SCOPED_TRACE("n " + std::to_string(n) + " symbol " + std::to_string(symbol));
      std::vector<uint8_t> input = codes_like(n, n);
      round_trip(params(256, 64, symbol), input);
      std::fill(input.begin(), input.end(), uint8_t(7));
      round_trip(params(256, 64, symbol), input);
    }
}

// A chunk written by hand from the format in gpulz.hh decodes to what the format says.
TEST(Gpulz, TheFormatDecodesAsDocumented) {
  // 21 bytes, S = 2: symbols "ab" "cd", then a match of 8 symbols from 2 back (overlapping
  // its source: "abcd" four times), tail "z". Tokens: literal, literal, match; min_match
  // auto = 2.
  const std::vector<uint8_t> chunk = {2, 3, 0, 'a', 'b', 'c', 'd', 8 - 2, 2 - 1, 0b100, 'z'};
  std::vector<uint8_t> stream = {uint8_t(chunk.size()), 0, 0, 0};
  stream.insert(stream.end(), chunk.begin(), chunk.end());
  std::vector<uint8_t> out(21);
  const gpulz::Params p = params(256, 64, 2);
  gpulz::decode_cpu(p, stream.data(), stream.size(), out.data(), out.size());
  EXPECT_EQ(std::string(out.begin(), out.end()), "abcdabcdabcdabcdabcdz");
  // The CPU's own code of these bytes is exactly this chunk.
  EXPECT_EQ(round_trip(p, out), stream);
}

// The same for a wide chunk: "abc" then a match of 34 symbols (the longest: min_match 3 + 31)
// from 3 back, the token (34 - 3) | (3 - 1) << 5.
TEST(Gpulz, TheWideFormatDecodesAsDocumented) {
  const std::vector<uint8_t> chunk = {0x81, 4, 0, 'a', 'b', 'c', 31 | 2 << 5, 0, 0b1000};
  std::vector<uint8_t> stream = {uint8_t(chunk.size()), 0, 0, 0};
  stream.insert(stream.end(), chunk.begin(), chunk.end());
  std::vector<uint8_t> out(37);
  gpulz::decode_cpu(params(256, 64, 1), stream.data(), stream.size(), out.data(), out.size());
  std::string expected;
  for (int k = 0; k < 37; ++k) expected += "abc"[k % 3];
  EXPECT_EQ(std::string(out.begin(), out.end()), expected);
  EXPECT_EQ(round_trip(wide(params(256, 64, 1)), out), stream);  // the CPU's own code of these bytes
  // A distance of 2048 symbols is the farthest a wide match names; its token reads back so.
  uint8_t token[2];
  uint32_t extra, d;
  gpulz::put_match(token, 31, 2048, true);
  gpulz::get_match(token, true, extra, d);
  EXPECT_EQ(extra, 31u);
  EXPECT_EQ(d, 2048u);
}

TEST(Gpulz, DamageIsCorruptData) {
  const gpulz::Params p = params(256, 64, 2);
  // A chunked stream of one coded chunk of 22 bytes.
  auto decode = [&](std::vector<uint8_t> chunk) {
    return [&p, chunk] {
      std::vector<uint8_t> stream = {uint8_t(chunk.size()), 0, 0, 0};
      stream.insert(stream.end(), chunk.begin(), chunk.end());
      std::vector<uint8_t> out(22);
      gpulz::decode_cpu(p, stream.data(), stream.size(), out.data(), out.size());
    };
  };
  const ErrorCode corrupt = ErrorCode::corrupt_data;
  // Valid: "ab", then a match of 10 symbols from 1 back.
  EXPECT_NO_THROW(decode({2, 2, 0, 'a', 'b', 8, 0, 0b10})());
  testing::expect_error(decode({2, 2, 0, 'a', 'b', 8, 1, 0b10}), corrupt, "");   // source before the chunk
  testing::expect_error(decode({2, 2, 0, 'a', 'b', 9, 0, 0b10}), corrupt, "");   // past the chunk's end
  testing::expect_error(decode({2, 2, 0, 'a', 'b', 7, 0, 0b10}), corrupt, "");   // short of the chunk's end
  testing::expect_error(decode({3, 2, 0, 'a', 'b', 8, 0, 0b10}), corrupt, "");   // no such symbol width
  testing::expect_error(decode({2, 3, 0, 'a', 'b', 8, 0, 0b10}), corrupt, "");   // a token too many
  testing::expect_error(decode({2, 2, 0, 'a', 'b', 8, 0, 0b110}), corrupt, "");  // a flag past the tokens
  testing::expect_error(decode({2, 1, 0, 'a', 'b', 8, 0, 0b0}), corrupt, "");    // bytes left over
  // Wide: "ab", then a match of 10 symbols from 1 back, or from 2 back past the chunk's start.
  EXPECT_NO_THROW(decode({0x82, 2, 0, 'a', 'b', 8, 0, 0b10})());
  testing::expect_error(decode({0x82, 2, 0, 'a', 'b', 8 | 1 << 5, 0, 0b10}), corrupt, "");
  testing::expect_error(decode({0xc2, 2, 0, 'a', 'b', 8, 0, 0b10}), corrupt, "");  // no such flag
}

TEST(Gpulz, ParametersAreValidated) {
  EXPECT_NO_THROW(make_stage("gpulz", {{"chunk", 8192}, {"window", 255}, {"symbol", 4}, {"min_match", 16}}));
  EXPECT_NO_THROW(make_stage("gpulz", {{"symbol", "auto"}}));
  for (const json& bad : {json{{"chunk", 3000}}, json{{"chunk", 128}}, json{{"chunk", 65536}}, json{{"window", 0}},
                          json{{"window", 256}}, json{{"symbol", 3}}, json{{"symbol", "wide"}},
                          json{{"min_match", 17}}, json{{"level", 2}}, json{{"offset_bits", 9}},
                          json{{"offset_bits", 12}}, json{{"offset_bits", 16}}}) {
    SCOPED_TRACE(bad.dump());
    testing::expect_error([&] { make_stage("gpulz", bad); }, ErrorCode::invalid_config, "stage 'gpulz'");
  }
  EXPECT_EQ(make_stage("gpulz", json::object())->params(),
            json({{"chunk", 2048}, {"window", 64}, {"symbol", "2"}, {"min_match", 0}}));
  // offset_bits is named only where it is not GPULZ's own 8: older graphs keep their bytes.
  EXPECT_EQ(make_stage("gpulz", {{"offset_bits", 8}})->params(), make_stage("gpulz", json::object())->params());
  EXPECT_EQ(make_stage("gpulz", {{"offset_bits", 11}})->params().at("offset_bits"), 11);
}

}  // namespace
}  // namespace fzg
