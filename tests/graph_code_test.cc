// The stored graph's code (format versions 3 and 4): every graph comes back exactly, the shipped
// configs' graphs cost a few bytes, and a damaged code is a clear error, never a crash.
#include <filesystem>
#include <random>

#include "core/graph_code.hh"
#include "test_util.hh"

namespace fzg {
namespace {

using testing::expect_error;

std::string round_trip(const std::string& text) {
  const std::vector<uint8_t> code = encode_graph_text(text);
  return decode_graph_text(code.data(), code.size());
}

// Every shipped config's stored graph: as it is, with fill values, and in lossless mode.
std::vector<std::string> shipped_graphs() {
  std::vector<std::string> graphs;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(FZG_SOURCE_DIR) + "/configs")) {
    const Graph graph = Graph::from_file(entry.path().string());
    graphs.push_back(graph.canonical_text());
    graphs.push_back(graph.without_predictor().canonical_text());
    if (graph.nodes().front().stage->spec().predictor)
      graphs.push_back(graph.with_fill_values({-1073741824.0, NAN}).canonical_text());
  }
  return graphs;
}

TEST(GraphCode, ShippedGraphsComeBackExactlyInAFewBytes) {
  for (const std::string& text : shipped_graphs()) {
    const std::vector<uint8_t> code = encode_graph_text(text);
    EXPECT_EQ(decode_graph_text(code.data(), code.size()), text);
    // Whole stretches of the dictionary: a match is 2-3 bytes for up to 131 of the text's
    // (parameters newer than the dictionary, such as ratio.json's "axes" and "span", cost a
    // few literal bytes more).
    EXPECT_LE(code.size(), 64u) << text;
    EXPECT_LT(code.size() * 6, text.size()) << text;
  }
}

TEST(GraphCode, AnyTextComesBackExactly) {
  EXPECT_EQ(round_trip(""), "");
  EXPECT_TRUE(encode_graph_text("").empty());
  EXPECT_EQ(round_trip("{"), "{");
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    // Bytes of every value, runs (overlapping matches) and pieces of real graphs.
    std::string text;
    const int pieces = int(rng() % 20);
    for (int p = 0; p < pieces; ++p) {
      switch (rng() % 3) {
        case 0: text.append(size_t(rng() % 300), char(rng())); break;
        case 1:
          for (size_t n = rng() % 200; n > 0; --n) text.push_back(char(rng()));
          break;
        default: text += "{\"id\":\"predict\",\"inputs\":{\"field\":\"input\"},\"params\":{\"fill\":[" +
                         std::to_string(rng()) + "]},\"type\":\"lorenzo\"}";
      }
    }
    ASSERT_EQ(round_trip(text), text) << "trial " << trial;
  }
}

// Past a text's first 64 KiB the match search takes fewer chain steps (a long config name took
// minutes): what it codes still comes back exactly, a long name of few distinct prefixes too.
TEST(GraphCode, LongTextsComeBackExactly) {
  std::mt19937 rng(11);
  std::string letters, graph;
  for (int i = 0; i < 300000; ++i) letters.push_back(char('a' + rng() % 4));
  for (int i = 0; i < 2000; ++i)
    graph += "{\"id\":\"s" + std::to_string(i) + "\",\"inputs\":{\"in\":\"s" + std::to_string(i - 1) +
             ".out\"},\"params\":{},\"type\":\"zero-block\"},";
  for (const std::string& text : {letters, graph}) {
    ASSERT_GT(text.size(), size_t(1) << 16);
    EXPECT_EQ(round_trip(text), text);
  }
}

TEST(GraphCode, DamagedCodesAreCorruptData) {
  const std::vector<uint8_t> code = encode_graph_text(Graph::default_fz().canonical_text());
  // Literals past the end, a match without its distance, a distance of 0, one before the
  // dictionary, and a distance of more than 3 bytes.
  const std::vector<std::vector<uint8_t>> bad = {
      {0x05, 'a', 'b'}, {0x80}, {0x80, 0x00}, {0x80, 0xFF, 0xFF, 0x7F}, {0x80, 0x81, 0x80, 0x80, 0x01}};
  for (const auto& b : bad) expect_error([&] { decode_graph_text(b.data(), b.size()); }, ErrorCode::corrupt_data, "graph code");
  // A text that grows past 16 MiB: the longest match from the first byte, over and over.
  std::vector<uint8_t> bomb = {0x00, 'x'};
  for (int k = 0; k < (17 << 20) / 131; ++k) bomb.insert(bomb.end(), {0xFF, 0x01});
  expect_error([&] { decode_graph_text(bomb.data(), bomb.size()); }, ErrorCode::corrupt_data, "16 MiB");
  // Every truncation of a valid code either decodes (to a prefix's text) or is an error.
  for (size_t n = 0; n < code.size(); ++n) {
    try {
      decode_graph_text(code.data(), n);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::corrupt_data);
    }
  }
}

// A file's graph as stored: the code, with its size in the fixed header, and the JSON a
// reader gets back is the writer's.
TEST(GraphCode, FilesStoreTheCodeAndReadersGetTheJson) {
  const Dims d = Dims::make({64, 48});
  const Buffer field = testing::host_buffer(testing::make_values<float>(testing::Hazard::nan_inf, d.count()));
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-3};
  const Graph graph = Graph::default_fz();
  const Buffer file = compress(graph, {field.data(), Location::host, DType::f32, d}, options);
  const Container c = inspect(file);
  EXPECT_EQ(c.header.version, 4);
  EXPECT_EQ(c.graph_json, graph.canonical_text());
  uint32_t stored = 0;
  std::memcpy(&stored, file.data() + 12, 4);
  EXPECT_EQ(stored, c.graph_bytes);
  EXPECT_EQ(c.graph_bytes, encode_graph_text(graph.canonical_text()).size());
}

}  // namespace
}  // namespace fzg
