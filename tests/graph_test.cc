// The graph loader: valid configs load, and every kind of mistake names what is wrong.
#include <cmath>
#include <cstring>

#include "core/container.hh"
#include "core/graph.hh"
#include "core/stage.hh"
#include "test_util.hh"

namespace fzg {
namespace {

std::string error_of(const std::string& config) {
  try {
    Graph::from_text(config);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_config) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << config;
  return "";
}

const char* const stages_ok = R"("stages": [
  {"id": "p", "type": "lorenzo", "inputs": {"field": "input"}},
  {"id": "s", "type": "bitshuffle", "inputs": {"in": "p.codes"}},
  {"id": "z", "type": "zero-block", "inputs": {"in": "s.out"}}])";

TEST(Graph, ShippedConfigEqualsTheBuiltInDefault) {
  const Graph shipped = Graph::from_file(testing::source_dir() + "/configs/fz.json");
  EXPECT_EQ(shipped.to_json(), Graph::default_fz().to_json());
  EXPECT_TRUE(shipped.has_predictor());
}

TEST(Graph, CanonicalJsonRoundTrips) {
  const Graph g = Graph::default_fz();
  EXPECT_EQ(Graph::from_json(g.to_json()).to_json(), g.to_json());
}

TEST(Graph, OrderIsTopologicalWhateverTheConfigOrder) {
  const Graph g = Graph::from_text(R"({"stages": [
    {"id": "z", "type": "zero-block", "inputs": {"in": "s.out"}},
    {"id": "s", "type": "bitshuffle", "inputs": {"in": "p.codes"}},
    {"id": "p", "type": "lorenzo", "inputs": {"field": "input"}}],
    "store": ["z.out", "p.outliers"]})");
  ASSERT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.nodes()[0].id, "p");
  EXPECT_EQ(g.nodes()[2].id, "z");
}

TEST(Graph, UnknownStageTypeIsNamed) {
  EXPECT_NE(error_of(R"({"stages": [{"id": "a", "type": "zstd-magic", "inputs": {}}], "store": ["a.out"]})")
                .find("zstd-magic"),
            std::string::npos);
}

TEST(Graph, UnknownTopLevelKeyIsNamed) {
  EXPECT_NE(error_of(std::string("{") + stages_ok + R"(, "store": ["z.out", "p.outliers"], "stroe": []})").find("stroe"),
            std::string::npos);
}

TEST(Graph, UnknownStageKeyAndParameterAreNamed) {
  EXPECT_NE(error_of(R"({"stages": [{"id": "p", "type": "lorenzo", "inputs": {"field": "input"}, "prams": {}}],
                       "store": ["p.codes", "p.outliers"]})")
                .find("prams"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"stages": [{"id": "p", "type": "lorenzo", "inputs": {"field": "input"}, "params": {"radius": 5}}],
                       "store": ["p.codes", "p.outliers"]})")
                .find("radius"),
            std::string::npos);
}

TEST(Graph, UnknownPortIsNamed) {
  EXPECT_NE(error_of(R"({"stages": [{"id": "p", "type": "lorenzo", "inputs": {"field": "input"}},
    {"id": "s", "type": "bitshuffle", "inputs": {"in": "p.quant"}}], "store": ["s.out", "p.outliers"]})")
                .find("quant"),
            std::string::npos);
}

TEST(Graph, PortTypeMismatchIsAnError) {
  // The predictor wants the field; a byte stream is not one.
  EXPECT_NE(error_of(R"({"stages": [{"id": "s", "type": "bitshuffle", "inputs": {"in": "input"}},
    {"id": "p", "type": "lorenzo", "inputs": {"field": "s.out"}}], "store": ["p.codes", "p.outliers"]})")
                .find("expects field"),
            std::string::npos);
}

TEST(Graph, CycleIsAnError) {
  EXPECT_NE(error_of(R"({"stages": [{"id": "a", "type": "bitshuffle", "inputs": {"in": "b.out"}},
    {"id": "b", "type": "bitshuffle", "inputs": {"in": "a.out"}}], "store": ["input"]})")
                .find("cycle"),
            std::string::npos);
}

TEST(Graph, UnstoredOutputIsNamed) {
  EXPECT_NE(error_of(std::string("{") + stages_ok + R"(, "store": ["z.out"]})").find("outliers"), std::string::npos);
}

TEST(Graph, OutputReadTwiceIsAnError) {
  EXPECT_NE(error_of(std::string("{") + stages_ok + R"(, "store": ["z.out", "p.outliers", "p.outliers"]})")
                .find("already read"),
            std::string::npos);
}

TEST(Graph, MalformedJsonIsAConfigError) { error_of("{\"stages\": ["); }

// A chain of `n` zero-block stages on the input's bytes, storing the last one's output.
std::string zero_block_chain(int n) {
  std::string stages = R"({"id": "s0", "type": "zero-block", "inputs": {"in": "input"}})";
  for (int i = 1; i < n; ++i)
    stages += R"(, {"id": "s)" + std::to_string(i) + R"(", "type": "zero-block", "inputs": {"in": "s)" +
              std::to_string(i - 1) + R"(.out"}})";
  return R"({"stages": [)" + stages + R"(], "store": ["s)" + std::to_string(n - 1) + R"(.out"]})";
}

// A file holds at most 4095 stages and stored streams (its readers refuse more): a graph of
// that many writes a file that reads back, and one more is a config error, not a file nobody
// can read.
TEST(Graph, AsManyStagesAsAFileHoldsAndNoMore) {
  const Graph longest = Graph::from_text(zero_block_chain(int(max_stage_count)));
  std::vector<uint8_t> bytes(1001);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 37 % 251);
  CompressOptions options;
  options.bound = {ErrorMode::lossless, 0};
  const Decompressed out =
      decompress(compress(longest, {bytes.data(), Location::host, DType::u8, Dims::make({1001})}, options), {});
  ASSERT_EQ(out.data.size(), bytes.size());
  EXPECT_EQ(std::memcmp(out.data.data(), bytes.data(), bytes.size()), 0);
  EXPECT_NE(error_of(zero_block_chain(int(max_stage_count) + 1)).find("at most 4095 stages"), std::string::npos);
  std::string store;
  for (uint32_t i = 0; i <= max_stream_count; ++i) store += std::string(i ? ", " : "") + "\"z.out\"";
  EXPECT_NE(error_of(std::string("{") + stages_ok + ", \"store\": [" + store + "]}").find("at most 4095 streams"),
            std::string::npos);
}

TEST(Graph, LosslessVariantFeedsTheInputToTheCodesConsumer) {
  const Graph g = Graph::default_fz().without_predictor();
  EXPECT_FALSE(g.has_predictor());
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_TRUE(g.nodes()[0].inputs[0].is_input());
  EXPECT_EQ(g.stored().size(), 1u);
}

TEST(Graph, LosslessVariantDropsTheStagesThatCodeTheOutliersAndTheMask) {
  // Outliers and the fill-value mask each through a coder of their own: without the predictor
  // those coders have nothing to code, and the exact fallback of compress() still works.
  const Graph g = Graph::from_text(R"({"name": "routed", "stages": [
      {"id": "predict", "type": "lorenzo", "inputs": {"field": "input"}, "params": {"fill": [1e20]}},
      {"id": "pack", "type": "zero-block", "inputs": {"in": "predict.codes"}},
      {"id": "outliers", "type": "huffman", "inputs": {"in": "predict.outliers"}, "params": {"symbol": 1}},
      {"id": "mask", "type": "gpulz", "inputs": {"in": "predict.mask"}},
      {"id": "again", "type": "zero-block", "inputs": {"in": "mask.out"}}],
    "store": ["pack.out", "outliers.out", "again.out"]})");
  const Graph lossless = g.without_predictor();
  ASSERT_EQ(lossless.nodes().size(), 1u);
  EXPECT_EQ(lossless.nodes()[0].id, "pack");
  EXPECT_TRUE(lossless.nodes()[0].inputs[0].is_input());
  ASSERT_EQ(lossless.stored().size(), 1u);
  // A bound no lossy file can meet below the field's size: stored exactly, through that graph.
  std::vector<float> v(3000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 7 ? float(std::sin(double(i))) : 1e20f;
  CompressOptions options;
  options.bound = {ErrorMode::abs, 1e-30};
  const Buffer file = compress(g, {v.data(), Location::host, DType::f32, Dims::make({3000})}, options);
  const Decompressed out = decompress(file, {});
  EXPECT_EQ(std::memcmp(out.data.data(), v.data(), 4 * v.size()), 0);
}

TEST(Graph, FillMaskCoderCodesTheMaskOnlyWithFillValues) {
  const Graph g = Graph::from_file(testing::source_dir() + "/configs/ratio.json");
  EXPECT_EQ(g.canonical_text().find("fill_mask_coder"), std::string::npos);  // files of ratio.json unchanged
  const Graph filled = g.with_fill_values({1e20});
  int coders = 0;
  for (const auto& node : filled.nodes()) coders += node.id == "predict-mask" && node.type == "huffman";
  EXPECT_EQ(coders, 1);
  EXPECT_NE(filled.canonical_text().find("\"predict-mask.out\""), std::string::npos);
  EXPECT_EQ(filled.canonical_text().find("\"predict.mask\"]"), std::string::npos);  // not stored raw
  // Again with other values: one coder still; with none: the graph ratio.json always was.
  int again = 0;
  const Graph refilled = filled.with_fill_values({-999, 1e20});
  for (const auto& node : refilled.nodes()) again += node.id == "predict-mask";
  EXPECT_EQ(again, 1);
  EXPECT_EQ(filled.with_fill_values({}).canonical_text(), g.canonical_text());
  EXPECT_NE(error_of(R"({"stages": [{"id": "p", "type": "lorenzo", "inputs": {"field": "input"}}],
                         "store": ["p.codes", "p.outliers"], "fill_mask_coder": {"type": "lorenzo"}})")
                .find("fill_mask_coder"),
            std::string::npos);
}

// Every kind of parameter a stage may declare: the value when given, the fallback when not,
// and a one-line invalid_config naming the stage and key when the value is of another kind.
TEST(StageParamsReader, ReadsIntegersBooleansStringsChoicesAndLists) {
  StageParams p("demo", nlohmann::json::parse(
                            R"({"n": 4, "on": true, "name": "x", "mode": "fast", "widths": [1, 2, 4]})"));
  EXPECT_EQ(p.integer("n", 1, 1, 8), 4);
  EXPECT_EQ(p.boolean("on", false), true);
  EXPECT_EQ(p.text("name", ""), "x");
  EXPECT_EQ(p.choice("mode", "slow", {"slow", "fast"}), "fast");
  EXPECT_EQ(p.integers("widths", {}, 1, 8), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(p.integer("absent", 7, 1, 8), 7);
  EXPECT_EQ(p.choice("absent_mode", "slow", {"slow", "fast"}), "slow");
  EXPECT_EQ(p.integers("absent_list", {3}, 1, 8), (std::vector<int64_t>{3}));
  EXPECT_NO_THROW(p.finish());
}

TEST(StageParamsReader, WrongKindsAndRangesNameTheKey) {
  const auto message = [](const char* json, auto read) -> std::string {
    StageParams p("demo", nlohmann::json::parse(json));
    try {
      read(p);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_config);
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message(R"({"on": 1})", [](StageParams& p) { p.boolean("on", false); }).find("\"on\" must be true or false"),
            std::string::npos);
  EXPECT_NE(message(R"({"name": 3})", [](StageParams& p) { p.text("name", ""); }).find("\"name\" must be a string"),
            std::string::npos);
  EXPECT_NE(message(R"({"mode": "warp"})", [](StageParams& p) { p.choice("mode", "slow", {"slow", "fast"}); })
                .find("\"warp\" is not one of slow, fast"),
            std::string::npos);
  EXPECT_NE(message(R"({"widths": 4})", [](StageParams& p) { p.integers("widths", {}, 1, 8); }).find("list of integers"),
            std::string::npos);
  EXPECT_NE(message(R"({"widths": [1, 9]})", [](StageParams& p) { p.integers("widths", {}, 1, 8); })
                .find("\"widths[1]\" = 9 is out of range [1, 8]"),
            std::string::npos);
  EXPECT_NE(message(R"({"widths": [1, "2"]})", [](StageParams& p) { p.integers("widths", {}, 1, 8); })
                .find("\"widths[1]\" must be an integer"),
            std::string::npos);
}

}  // namespace
}  // namespace fzg
