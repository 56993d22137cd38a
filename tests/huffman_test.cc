// The Huffman stage on its own: the codebook (optimal where no limit binds, limited and
// escaped where one does), skewed, uniform, single-symbol and all-65536-symbol inputs, odd
// and prime lengths, the format written by hand, damage and parameters. The GPU's bytes are
// compared with the CPU's wherever a device is present.
#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.hh"
#include "core/registry.hh"
#include "lossless/huffman/codebook.hh"
#include "lossless/huffman/huffman.hh"
#include "lossless/huffman/stored_book.hh"
#include "test_util.hh"

namespace fzg {
namespace {

using nlohmann::json;

// The stage with these parameters on both backends (testing::byte_stage_round_trip).
std::vector<uint8_t> round_trip(const huffman::Params& p, const std::vector<uint8_t>& input) {
  const auto stage =
      make_stage("huffman", {{"symbol", p.symbol_bytes}, {"chunk", p.chunk_bytes}, {"max_length", p.max_length}});
  return testing::byte_stage_round_trip(*stage, input);
}

huffman::Params params(uint32_t symbol, uint32_t chunk = 16384, uint32_t max_length = 12) {
  huffman::Params p;
  p.symbol_bytes = symbol, p.chunk_bytes = chunk, p.max_length = max_length;
  return p;
}

// u16 symbols, geometric around 0 (like Lorenzo codes at a loose bound).
std::vector<uint8_t> skewed_u16(uint64_t count, double p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<int> g(p);
  std::vector<uint8_t> out(2 * count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint16_t v = uint16_t(std::min(g(rng), 65535));
    out[2 * i] = uint8_t(v), out[2 * i + 1] = uint8_t(v >> 8);
  }
  return out;
}

double entropy_bits(const std::vector<uint8_t>& bytes, uint32_t S) {
  std::vector<uint64_t> counts(size_t(1) << (8 * S), 0);
  const uint64_t m = bytes.size() / S;
  for (uint64_t j = 0; j < m; ++j) ++counts[S == 1 ? bytes[j] : bytes[2 * j] | bytes[2 * j + 1] << 8];
  double h = 0;
  for (uint64_t c : counts)
    if (c) h -= double(c) * std::log2(double(c) / double(m));
  return h;
}

TEST(HuffmanCodebook, UnlimitedCodesAreHuffmanAndCanonical) {
  // Counts 1, 1, 2, 4, 8: Huffman lengths 4, 4, 3, 2, 1.
  std::vector<uint64_t> counts(256, 0);
  counts['a'] = 1, counts['b'] = 1, counts['c'] = 2, counts['d'] = 4, counts['e'] = 8;
  const huffman::Codebook book = huffman::build_codebook(counts.data(), 1, 12);
  ASSERT_EQ(book.entries.size(), 5u);
  const uint32_t expected[] = {'a' | 4u << 24, 'b' | 4u << 24, 'c' | 3u << 24, 'd' | 2u << 24, 'e' | 1u << 24};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(book.entries[i], expected[i]);
  // Canonical, LSB first: e = 0, d = 10, c = 110, a = 1110, b = 1111 (read MSB first).
  EXPECT_EQ(book.encode['e'], 0u | uint64_t(1) << 32);
  EXPECT_EQ(book.encode['d'], 0b01u | uint64_t(2) << 32);
  EXPECT_EQ(book.encode['c'], 0b011u | uint64_t(3) << 32);
  EXPECT_EQ(book.encode['b'], 0b1111u | uint64_t(4) << 32);
}

TEST(HuffmanCodebook, TheLimitHoldsAndStaysAPrefixCode) {
  // Fibonacci counts make the deepest Huffman tree: 30 symbols would need 29 bits.
  std::vector<uint64_t> counts(256, 0);
  uint64_t a = 1, b = 1;
  for (int s = 0; s < 30; ++s) counts[s] = a, std::swap(a, b), b += a;
  for (uint32_t limit : {8u, 10u, 14u}) {
    const huffman::Codebook book = huffman::build_codebook(counts.data(), 1, limit);
    uint64_t kraft = 0;
    for (uint32_t e : book.entries) {
      EXPECT_LE(e >> 24, limit);
      kraft += uint64_t(1) << (limit - (e >> 24));
    }
    EXPECT_LE(kraft, uint64_t(1) << limit);
    EXPECT_EQ(book.entries.size(), 30u);
  }
}

TEST(HuffmanCodebook, MoreSymbolsThanCodesEscapeTheRarest) {
  std::vector<uint64_t> counts(65536, 0);
  for (uint32_t s = 0; s < 65536; ++s) counts[s] = 1 + (s < 100 ? 1000 : 0);
  const huffman::Codebook book = huffman::build_codebook(counts.data(), 2, 8);
  ASSERT_EQ(book.entries.size(), 256u);  // 255 symbols and the escape
  EXPECT_EQ(book.entries.back() & 0xffffffu, 65536u);
  EXPECT_NE(book.encode[50] >> 32, 0u);
  EXPECT_EQ(book.encode[60000] >> 32, uint64_t(book.encode[65536] >> 32) + 16);  // the escape, then 16 raw bits
}

TEST(Huffman, SkewedCodesComeWithinAPercentOfTheirEntropy) {
  const std::vector<uint8_t> codes = skewed_u16(200000, 0.3, 1);
  const std::vector<uint8_t> stream = round_trip(params(2), codes);
  const double bound = entropy_bits(codes, 2) / 8;
  EXPECT_LT(double(stream.size()), 1.03 * bound + 4096) << "entropy " << bound << " bytes";
}

TEST(Huffman, UniformBytesDoNotGrow) {
  std::mt19937_64 rng(2);
  std::vector<uint8_t> noise(100003);
  for (auto& b : noise) b = uint8_t(rng());
  const std::vector<uint8_t> stream = round_trip(params(1, 4096), noise);
  // Every chunk raw: the codebook and the chunk table are all that is added.
  EXPECT_LE(stream.size(), noise.size() + 4 + 4 * 256 + 4 * 25);
}

TEST(Huffman, OneSymbolCostsOneBitEach) {
  const std::vector<uint8_t> same(2 * 65536, 7);
  const std::vector<uint8_t> stream = round_trip(params(2), same);
  EXPECT_LT(stream.size(), 65536 / 8 + 8 * 100);
}

TEST(Huffman, AllSixtyFiveThousandSymbolsAndTheLengthLimit) {
  std::vector<uint8_t> all(2 * 65536 * 3);
  std::mt19937_64 rng(3);
  for (uint32_t i = 0; i < 3 * 65536; ++i) {
    const uint16_t v = i < 65536 ? uint16_t(i) : uint16_t(rng() % 64);  // every symbol once, then a skew
    all[2 * i] = uint8_t(v), all[2 * i + 1] = uint8_t(v >> 8);
  }
  for (uint32_t limit : {8u, 12u, 14u}) round_trip(params(2, 16384, limit), all);
}

TEST(Huffman, EmptyOddAndPrimeLengths) {
  for (uint64_t n : {0, 1, 2, 3, 7, 1021, 4093, 16383, 16385, 65537})
    for (uint32_t symbol : {1u, 2u}) {
      SCOPED_TRACE("n " + std::to_string(n) + " symbol " + std::to_string(symbol));
      std::vector<uint8_t> input = skewed_u16(n / 2 + 1, 0.2, n);
      input.resize(n);
      round_trip(params(symbol, 1024), input);
    }
}

// A stream written by hand from the format in huffman.hh decodes to what it says.
TEST(Huffman, TheFormatDecodesAsDocumented) {
  // Bytes: 32 x 'a' then 32 x 'b', then 'a' again 1000 times: a chunk of 1064 bytes (chunk
  // 1024 takes 1024 of them; the second chunk is 40 bytes).
  std::vector<uint8_t> input(1064, 'a');
  std::fill(input.begin() + 32, input.begin() + 64, uint8_t('b'));
  const huffman::Params p = params(1, 1024);
  const std::vector<uint8_t> stream = round_trip(p, input);
  // Codebook: 'a' (1022 of them) and 'b' (32): both one bit, a = 0, b = 1. Stored: 2
  // entries, 4 bytes of bits: gamma(97 + 1) = 111111 0 010001, gamma(2) = 10 0, then the
  // lengths: 1 in 4 bits (1000), then the same again (0); LSB first.
  const uint32_t head[] = {2u | 1u << 31, 4, 0x3Fu | 0x31u << 8 | 0x01u << 16};
  ASSERT_GE(stream.size(), 12u);
  EXPECT_EQ(0, std::memcmp(stream.data(), head, 12));
  // Chunk 0: each lane codes 32 symbols (lane l: symbols l, l + 32, ...): one word each; bit 1
  // of every lane's word is the 'b' at symbol 32 + l.
  uint32_t table0;
  std::memcpy(&table0, stream.data() + 12 + 8, 4);  // the chunked stream: 2 chunks, 8 bytes of table
  uint32_t entry0;
  std::memcpy(&entry0, stream.data() + 12, 4);
  EXPECT_EQ(entry0, 64u + 32 * 4);
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(stream[12 + 8 + 2 * l], 1) << l;
    uint32_t word;
    std::memcpy(&word, stream.data() + 12 + 8 + 64 + 4 * l, 4);
    EXPECT_EQ(word, 0b10u) << l;
  }
  (void)table0;
}

TEST(Huffman, DamageIsCorruptData) {
  const huffman::Params p = params(2, 1024);
  const std::vector<uint8_t> codes = skewed_u16(3000, 0.3, 5);
  const std::vector<uint8_t> good = round_trip(p, codes);
  auto rejects = [&](std::vector<uint8_t> bytes, const std::string& what = "huffman") {
    testing::expect_error(
        [&] {
          std::vector<uint8_t> out(codes.size());
          huffman::decode_cpu(p, bytes.data(), bytes.size(), out.data(), out.size());
        },
        ErrorCode::corrupt_data, what);
  };
  std::vector<uint8_t> bad = good;
  bad[0] ^= 1;  // one entry more or fewer than the bits hold
  rejects(bad, "huffman codebook");
  bad = good;
  bad[4] |= 2;  // a book size that is no multiple of 4
  rejects(bad, "huffman codebook size");
  bad = good;
  bad[6] = 0xff;  // a book larger than the stream
  rejects(bad, "huffman codebook size");
  bad = good;
  bad[8] ^= 0x80;  // the first run's gap: a different book, or one that runs past its bytes
  rejects(bad, "");
  bad = good;
  bad.resize(bad.size() - 1);
  rejects(bad, "chunked stream size");
}

// The stored book alone: any increasing symbols with lengths 1-15 come back as written, its
// size is where the chunks start, and only the writer's form is accepted; damage is
// corrupt_data.
TEST(HuffmanStoredBook, AnyBookComesBackAsWritten) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t S = 1 + trial % 2, escape = 1u << (8 * S);
    std::vector<uint32_t> entries;
    const double density = std::ldexp(1.0, -int(rng() % 12));
    uint32_t length = 1 + rng() % 15;
    for (uint32_t s = 0; s <= escape; ++s) {
      if (double(rng() % 1000000) >= density * 1e6 && !(trial % 7 == 0 && s == escape)) continue;
      if (rng() % 4 == 0) length = 1 + rng() % 15;
      else if (rng() % 3 == 0) length = std::clamp<uint32_t>(length + (rng() % 2 ? 1 : -1), 1, 15);
      entries.push_back(s | length << 24);
    }
    const std::vector<uint8_t> stored = huffman::write_book(entries);
    EXPECT_LE(stored.size(), huffman::max_book_bytes(entries.size(), S));
    EXPECT_EQ(stored.size() % 4, 0u);
    std::vector<uint8_t> stream = stored;
    stream.resize(stored.size() + 5, 0xA5);  // what follows the book is not read
    const huffman::StoredBook back = huffman::read_book(stream.data(), stream.size(), entries.size(), S);
    ASSERT_EQ(back.entries, entries) << "trial " << trial;
    EXPECT_EQ(back.bytes, stored.size());
    if (entries.empty()) continue;
    testing::expect_error([&] { huffman::read_book(stored.data(), stored.size(), entries.size() - 1, S); },
                          ErrorCode::corrupt_data, "codebook size");
    testing::expect_error([&] { huffman::read_book(stored.data(), stored.size() - 1, entries.size(), S); },
                          ErrorCode::corrupt_data, "codebook");
    // A spare zero word: the same entries, but not the writer's form.
    std::vector<uint8_t> padded = stored;
    padded.insert(padded.end(), 4, 0);
    const uint32_t bits_bytes = uint32_t(stored.size() - 8) + 4;
    std::memcpy(padded.data() + 4, &bits_bytes, 4);
    testing::expect_error([&] { huffman::read_book(padded.data(), padded.size(), entries.size(), S); },
                          ErrorCode::corrupt_data, "codebook size");
    // One entry more than written: the padding must not read as a run after the last.
    std::vector<uint8_t> more = stored;
    const uint32_t claimed = uint32_t(entries.size() + 1) | 1u << 31;
    std::memcpy(more.data(), &claimed, 4);
    testing::expect_error([&] { huffman::read_book(more.data(), more.size(), entries.size() + 1, S); },
                          ErrorCode::corrupt_data, "codebook");
  }
}

TEST(HuffmanStoredBook, ImpossibleBooksAreCorruptData) {
  auto rejects = [](const std::vector<uint32_t>& entries, uint32_t S, const std::string& what) {
    const std::vector<uint8_t> stored = huffman::write_book(entries);
    testing::expect_error([&] { huffman::read_book(stored.data(), stored.size(), 1u << 16, S); },
                          ErrorCode::corrupt_data, what);
  };
  rejects({5}, 2, "code length");                          // length 0
  rejects({257 | 3u << 24}, 1, "codebook symbols");        // past a byte coder's escape (256)
  rejects({65535 | 3u << 24, 65536 | 3u << 24, 65537 | 3u << 24}, 2, "codebook symbols");
  std::vector<uint8_t> stored = huffman::write_book({7 | 2u << 24});
  stored.back() = 0x80;  // a bit set past the last length
  testing::expect_error([&] { huffman::read_book(stored.data(), stored.size(), 16, 2); }, ErrorCode::corrupt_data,
                        "past its end");
}

// Streams written before the compact book (u32 E, then E u32 entries) still decode.
TEST(HuffmanStoredBook, TheFirstFormStillDecodes) {
  std::vector<uint8_t> input(1064, 'a');
  std::fill(input.begin() + 32, input.begin() + 64, uint8_t('b'));
  const huffman::Params p = params(1, 1024);
  std::vector<uint8_t> stream = round_trip(p, input);
  ASSERT_EQ(stream.size() > 12 && stream[0] == 2 && stream[4] == 4, true);  // 12 bytes of book in either form
  const uint32_t first_form[] = {2, 'a' | 1u << 24, 'b' | 1u << 24};
  std::memcpy(stream.data(), first_form, 12);
  std::vector<uint8_t> out(input.size());
  huffman::decode_cpu(p, stream.data(), stream.size(), out.data(), out.size());
  EXPECT_EQ(out, input);
}

// A byte field's chunks start at odd bytes (333 columns, 7 rows a chunk): the stage's input
// and output may sit anywhere, for u16 symbols too. Both backends write the same file and
// read it back exactly.
TEST(Huffman, ChunksAtOddBytesOfAByteFieldOnEveryBackend) {
  const Dims d = Dims::make({333, 61});
  std::vector<uint8_t> values(d.count());
  std::mt19937_64 rng(9);
  for (auto& v : values) v = uint8_t(rng() % 5 == 0 ? rng() : 3);
  const Buffer field = testing::host_buffer(values);
  const Graph graph = Graph::from_json(json::parse(R"({"chunk_values": 2331, "stages": [
      {"id": "huff", "type": "huffman", "inputs": {"in": "input"}, "params": {"symbol": 2, "chunk": 1024}}],
      "store": ["huff.out"]})"));
  CompressOptions options;
  options.bound = {ErrorMode::lossless, 0};
  const Buffer file = compress(graph, {field.data(), Location::host, DType::u8, d}, options);
  EXPECT_GT(inspect(file).chunks.size(), 8u);
  const Decompressed back = decompress(file, {});
  ASSERT_EQ(back.data.size(), values.size());
  EXPECT_EQ(0, std::memcmp(back.data.data(), values.data(), values.size()));
  if (!cuda_available()) return;
  options.device = Device::cuda;
  const Buffer gpu_file = compress(graph, {field.data(), Location::host, DType::u8, d}, options);
  ASSERT_EQ(gpu_file.size(), file.size());
  EXPECT_EQ(0, std::memcmp(gpu_file.data(), file.data(), file.size()));
  DecompressOptions on_gpu;
  on_gpu.device = Device::cuda;
  const Decompressed gpu_back = decompress(file, on_gpu);
  EXPECT_EQ(0, std::memcmp(gpu_back.data.data(), values.data(), values.size()));
}

TEST(Huffman, ParametersAreValidated) {
  EXPECT_NO_THROW(make_stage("huffman", {{"symbol", 1}, {"chunk", 65536}, {"max_length", 14}}));
  for (const json& bad : {json{{"symbol", 4}}, json{{"chunk", 3000}}, json{{"chunk", 512}}, json{{"max_length", 7}},
                          json{{"max_length", 15}}, json{{"lanes", 8}}}) {
    SCOPED_TRACE(bad.dump());
    testing::expect_error([&] { make_stage("huffman", bad); }, ErrorCode::invalid_config, "stage 'huffman'");
  }
  EXPECT_EQ(make_stage("huffman", json::object())->params(),
            json({{"symbol", 2}, {"chunk", 16384}, {"max_length", 12}}));
}

}  // namespace
}  // namespace fzg
