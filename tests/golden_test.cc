// Golden files pin the format: these inputs (built with exact arithmetic only, so every
// machine builds the same bytes) must compress to exactly the bytes in tests/golden/, and
// those files must decode to the same values as a fresh round trip. Regenerate deliberately,
// after a format change and a version bump: FZG_UPDATE_GOLDEN=1 ./fzg_tests --gtest_filter='Golden*'
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "test_util.hh"

namespace fzg {
namespace {

struct GoldenCase {
  std::string file;
  DType dtype;
  std::vector<uint64_t> dims;
  ErrorBound bound;
  std::string config;  // a shipped config in configs/, or empty for the default graph
  std::vector<double> fill = {};  // fill values (missing points), on the config's predictor
  bool land = false;  // land_field instead of exact_field
  nlohmann::json lorenzo = nullptr;  // the default graph's predictor's parameters, where given
};

Graph golden_graph(const GoldenCase& g) {
  const Graph graph = !g.config.empty() ? Graph::from_file(std::string(FZG_SOURCE_DIR) + "/configs/" + g.config)
                      : g.lorenzo.is_null() ? Graph::default_fz()
                                            : testing::fz_with_lorenzo(g.lorenzo);
  return g.fill.empty() ? graph : graph.with_fill_values(g.fill);
}

template <typename T>
Buffer exact_field(uint64_t n) {
  std::vector<T> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    v[i] = T(int64_t(i % 37) - 18) * T(0.125) + T(int64_t((i * 7) % 11)) * T(0.0078125) + T(300);
    if (i % 101 == 5) v[i] = std::numeric_limits<T>::quiet_NaN();
    if (i % 131 == 9) v[i] = T(1e30);
    if (i % 151 == 2) v[i] = -std::numeric_limits<T>::infinity();
  }
  return testing::host_buffer(v);
}

// Land (1e30) whose mask changes along the slowest axis only at slice 16, so that Lorenzo's
// mask repeats whole tiles from one tile layer to the next (the repeat runs).
template <typename T>
Buffer land_field(const Dims& d) {
  std::vector<T> v(d.count());
  const uint64_t slices = d.rank == 3 ? d.z : d.y, per_slice = d.count() / slices;
  for (uint64_t i = 0; i < v.size(); ++i) {
    const uint64_t slice = i / per_slice, x = i % d.x, y = d.rank == 3 ? (i / d.x) % d.y : 0;
    const bool land = (x + 2 * y) % 23 < 9 || (slice >= 16 && x % 19 > 15);
    v[i] = land ? T(1e30) : T(int64_t(x % 37) - 18) * T(0.125) + T(int64_t(y + slice)) * T(0.0078125) + T(300);
  }
  return testing::host_buffer(v);
}

Buffer golden_input(const GoldenCase& g) {
  const uint64_t n = Dims::make(g.dims).count();
  if (g.land) return g.dtype == DType::f32 ? land_field<float>(Dims::make(g.dims)) : land_field<double>(Dims::make(g.dims));
  if (g.dtype == DType::f32) return exact_field<float>(n);
  if (g.dtype == DType::f64) return exact_field<double>(n);
  Buffer b = Buffer::host(n * dtype_size(g.dtype));
  for (uint64_t i = 0; i < b.size(); ++i) b.data()[i] = uint8_t((i % 9 == 0) ? i * 13 : 0);
  return b;
}

const std::vector<GoldenCase>& golden_cases() {
  static const std::vector<GoldenCase> cases = {
      {"f32_3d_rel1e-3.fzg", DType::f32, {37, 19, 11}, {ErrorMode::rel, 1e-3}, ""},
      {"f64_2d_abs1e-2.fzg", DType::f64, {70, 45}, {ErrorMode::abs, 1e-2}, ""},
      {"f32_1d_psnr50.fzg", DType::f32, {5000}, {ErrorMode::psnr, 50}, ""},
      {"u16_1d_lossless.fzg", DType::u16, {3001}, {ErrorMode::lossless, 0}, ""},
      {"gpulz_f32_3d_rel1e-3.fzg", DType::f32, {37, 19, 11}, {ErrorMode::rel, 1e-3}, "gpulz.json"},
      {"fz-gpulz_f32_3d_rel1e-3.fzg", DType::f32, {37, 19, 11}, {ErrorMode::rel, 1e-3}, "fz-gpulz.json"},
      {"lossless-gpulz_u16_1d.fzg", DType::u16, {3001}, {ErrorMode::lossless, 0}, "lossless-gpulz.json"},
      {"cusz_f32_3d_rel1e-3.fzg", DType::f32, {37, 19, 11}, {ErrorMode::rel, 1e-3}, "cusz.json"},
      {"ratio_f64_2d_abs1e-2.fzg", DType::f64, {70, 45}, {ErrorMode::abs, 1e-2}, "ratio.json"},
      // Fill values: exact_field's 1e30 and NaN points are missing (the mask stream).
      {"fill_f32_3d_rel1e-3.fzg", DType::f32, {37, 19, 11}, {ErrorMode::rel, 1e-3}, "", {1e30, NAN}},
      {"fill_ratio_f64_2d_abs1e-2.fzg", DType::f64, {70, 45}, {ErrorMode::abs, 1e-2}, "ratio.json", {NAN, 1e30}},
      // Land whose mask repeats from tile layer to tile layer (the mask's repeat runs).
      {"land_f32_3d_rel1e-3.fzg", DType::f32, {37, 19, 30}, {ErrorMode::rel, 1e-3}, "", {1e30}, true},
      {"land_ratio_f64_2d_abs1e-2.fzg", DType::f64, {70, 100}, {ErrorMode::abs, 1e-2}, "ratio.json", {1e30}, true},
      // Lorenzo's codes in tile order (format version 4 on), partial tiles on every axis.
      {"tile-order_f32_3d_rel1e-3.fzg", DType::f32, {37, 19, 11}, {ErrorMode::rel, 1e-3}, "", {}, false,
       {{"code_order", "tile"}}},
      {"tile-order_f64_2d_abs1e-2.fzg", DType::f64, {70, 45}, {ErrorMode::abs, 1e-2}, "", {}, false,
       {{"code_order", "tile"}}},
  };
  return cases;
}

// The cases written before format version 2 (tests/golden/v1): the default graph's.
std::vector<GoldenCase> version_one_cases() {
  std::vector<GoldenCase> old;
  for (const GoldenCase& g : golden_cases())
    if (g.config.empty() && g.fill.empty() && g.lorenzo.is_null()) old.push_back(g);
  return old;
}

std::string golden_path(const std::string& file) { return std::string(FZG_TESTS_DIR) + "/golden/" + file; }

class Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Golden, CompressionWritesThePinnedBytes) {
  const GoldenCase& g = GetParam();
  const Buffer input = golden_input(g);
  CompressOptions options;
  options.bound = g.bound;
  const Buffer file = compress(golden_graph(g), {input.data(), Location::host, g.dtype, Dims::make(g.dims)}, options);
  const std::string path = golden_path(g.file);
  if (std::getenv("FZG_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path;
  const std::vector<uint8_t> pinned((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(pinned.size(), file.size());
  EXPECT_EQ(std::memcmp(pinned.data(), file.data(), file.size()), 0);

  Buffer pinned_buffer = Buffer::host(pinned.size());
  std::memcpy(pinned_buffer.data(), pinned.data(), pinned.size());
  const Decompressed from_pinned = decompress(pinned_buffer, {});
  const Decompressed fresh = decompress(file, {});
  ASSERT_EQ(from_pinned.data.size(), input.size());
  EXPECT_EQ(std::memcmp(from_pinned.data.data(), fresh.data.data(), input.size()), 0);
}

// Version 1 files (tests/golden/v1, written by fzg 0.1 before chunking) still decode, to the
// values a fresh round trip gives: one chunk, the same tiles, the same quantization.
class GoldenV1 : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenV1, VersionOneFilesStillDecode) {
  const GoldenCase& g = GetParam();
  std::ifstream in(std::string(FZG_TESTS_DIR) + "/golden/v1/" + g.file, std::ios::binary);
  ASSERT_TRUE(in) << "missing v1 golden file " << g.file;
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Buffer v1 = Buffer::host(bytes.size());
  std::memcpy(v1.data(), bytes.data(), bytes.size());
  const Container c = inspect(v1);
  EXPECT_EQ(c.header.version, 1);
  EXPECT_EQ(c.chunks.size(), 1u);
  const Buffer input = golden_input(g);
  CompressOptions options;
  options.bound = g.bound;
  const Decompressed fresh = decompress(
      compress(Graph::default_fz(), {input.data(), Location::host, g.dtype, Dims::make(g.dims)}, options), {});
  const Decompressed old = decompress(v1, {});
  EXPECT_EQ(old.header.quant.error_bound, fresh.header.quant.error_bound);
  ASSERT_EQ(old.data.size(), input.size());
  EXPECT_EQ(std::memcmp(old.data.data(), fresh.data.data(), input.size()), 0);
}

// Files of a shipped config as it was before a change to it or to a stage's stream (tests/
// golden/retired, named <old form>_<case>.fzg) still decode: to the values the config's
// current form gives, since the changes were to its lossless stages only.
class GoldenRetired : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenRetired, FilesOfAnEarlierFormOfAConfigStillDecode) {
  const GoldenCase& g = GetParam();
  std::ifstream in(golden_path("retired/" + g.file), std::ios::binary);
  ASSERT_TRUE(in) << "missing retired golden file " << g.file;
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Buffer old_file = Buffer::host(bytes.size());
  std::memcpy(old_file.data(), bytes.data(), bytes.size());
  const Buffer input = golden_input(g);
  CompressOptions options;
  options.bound = g.bound;
  const Buffer now = compress(golden_graph(g), {input.data(), Location::host, g.dtype, Dims::make(g.dims)}, options);
  const Decompressed fresh = decompress(now, {});
  EXPECT_FALSE(now.size() == old_file.size() && std::memcmp(now.data(), old_file.data(), now.size()) == 0)
      << "not an earlier form: the config writes these bytes today";
  const Decompressed old = decompress(old_file, {});
  ASSERT_EQ(old.data.size(), input.size());
  EXPECT_EQ(std::memcmp(old.data.data(), fresh.data.data(), input.size()), 0);
  // A file named for a format version is of that version.
  if (g.file[0] == 'v' && std::isdigit(static_cast<unsigned char>(g.file[1])) && g.file[2] == '_') {
    EXPECT_EQ(old.header.version, g.file[1] - '0') << g.file;
  }
}

std::vector<GoldenCase> retired_cases() {
  std::vector<GoldenCase> cases = {
    // ratio.json before zero-block followed its Huffman stage.
    {"ratio-huffman_f64_2d_abs1e-2.fzg", DType::f64, {70, 45}, {ErrorMode::abs, 1e-2}, "ratio.json"},
    // Huffman streams before the compact stored codebook (u32 entries).
    {"first-huffman-book_cusz_f32_3d_rel1e-3.fzg", DType::f32, {37, 19, 11}, {ErrorMode::rel, 1e-3}, "cusz.json"},
    {"first-huffman-book_ratio_f64_2d_abs1e-2.fzg", DType::f64, {70, 45}, {ErrorMode::abs, 1e-2}, "ratio.json"},
    {"first-huffman-book_fill_ratio_f64_2d_abs1e-2.fzg", DType::f64, {70, 45}, {ErrorMode::abs, 1e-2}, "ratio.json",
     {NAN, 1e30}},
    // ratio.json before its Lorenzo stage chose its axes and span from the field.
    {"fixed-prediction_ratio_f64_2d_abs1e-2.fzg", DType::f64, {70, 45}, {ErrorMode::abs, 1e-2}, "ratio.json"},
    {"fixed-prediction_fill_ratio_f64_2d_abs1e-2.fzg", DType::f64, {70, 45}, {ErrorMode::abs, 1e-2}, "ratio.json",
     {NAN, 1e30}},
    {"fixed-prediction_land_ratio_f64_2d_abs1e-2.fzg", DType::f64, {70, 100}, {ErrorMode::abs, 1e-2}, "ratio.json",
     {1e30}, true},
    // Lorenzo's codes in field order with fill values (before the data-first order).
    {"field-order-codes_fill_f32_3d_rel1e-3.fzg", DType::f32, {37, 19, 11}, {ErrorMode::rel, 1e-3}, "", {1e30, NAN}},
  };
  // Every case as format version 2 wrote it (the graph's JSON as it is), before version 3, and
  // as version 3 wrote it (the graph coded), before version 4 (a mask may repeat a tile's
  // runs; the land cases' version 3 files, from a development build, hold repeat runs).
  for (const char* version : {"v2_", "v3_"}) {
    for (GoldenCase g : golden_cases()) {
      if (g.land && version == std::string("v2_")) continue;  // cases added in version 3
      if (!g.lorenzo.is_null()) continue;                       // in version 4
      g.file = version + g.file;
      cases.push_back(g);
    }
  }
  return cases;
}

std::string golden_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string name = info.param.file.substr(0, info.param.file.size() - 4);
  for (auto& c : name)
    if (c == '-' || c == '.') c = '_';
  return name;
}
INSTANTIATE_TEST_SUITE_P(Files, Golden, ::testing::ValuesIn(golden_cases()), golden_name);
INSTANTIATE_TEST_SUITE_P(Files, GoldenV1, ::testing::ValuesIn(version_one_cases()), golden_name);
INSTANTIATE_TEST_SUITE_P(Files, GoldenRetired, ::testing::ValuesIn(retired_cases()), golden_name);

}  // namespace
}  // namespace fzg
