// The Lorenzo codes in tile order (lorenzo "code_order": "tile"): the same codes as field order,
// moved to each tile's own run; the same reconstruction on every backend; the header records
// the order; the parameters that cannot go with it are refused.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "core/registry.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "predictors/lorenzo/quantization.hh"
#include "test_util.hh"

namespace fzg {
namespace {

// Smooth with noise, spikes past a code's 15 bits (escapes), NaN and inf (exact outliers).
template <typename T>
std::vector<T> test_field(const Dims& d) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> noise(-0.05, 0.05);
  std::vector<T> v(d.count());
  for (uint64_t i = 0; i < v.size(); ++i) {
    const uint64_t x = i % d.x, y = (i / d.x) % d.y, z = i / (d.x * d.y);
    v[i] = T(std::sin(0.11 * x) + 0.5 * std::cos(0.07 * y) + 0.03 * z + noise(rng));
    if (i % 211 == 17) v[i] += T(500);
    if (i % 503 == 41) v[i] = std::numeric_limits<T>::quiet_NaN();
    if (i % 701 == 3) v[i] = std::numeric_limits<T>::infinity();
  }
  return v;
}

// Where point (x, y, z) goes in tile order, written out from lorenzo.hh's description rather
// than from tile_order_first: the points of every tile before its tile, then its own place in
// its tile, x fastest within the tile's extents inside the field.
uint64_t tile_order_index(const Dims& d, uint64_t x, uint64_t y, uint64_t z) {
  const lorenzo::TileGrid g(d);
  const uint64_t tx = x / g.tile.x, ty = y / g.tile.y, tz = z / g.tile.z;
  auto extent = [](uint64_t n, uint64_t tile, uint64_t t) { return std::min<uint64_t>(tile, n - t * tile); };
  uint64_t before = 0;
  for (uint64_t k = 0; k < g.tiles_z; ++k)
    for (uint64_t j = 0; j < g.tiles_y; ++j)
      for (uint64_t i = 0; i < g.tiles_x; ++i) {
        if (std::make_tuple(k, j, i) >= std::make_tuple(tz, ty, tx)) continue;
        before += extent(d.x, g.tile.x, i) * extent(d.y, g.tile.y, j) * extent(d.z, g.tile.z, k);
      }
  const uint64_t w = extent(d.x, g.tile.x, tx), h = extent(d.y, g.tile.y, ty);
  return before + (x - tx * g.tile.x) + w * ((y - ty * g.tile.y) + h * (z - tz * g.tile.z));
}

std::vector<Dims> shapes() {
  return {Dims::make({5000}), Dims::make({70, 45}), Dims::make({33, 9, 17}), Dims::make({64, 16, 8}),
          Dims::make({1, 1, 9}), Dims::make({31, 1})};
}

template <typename T>
void expect_the_field_orders_codes_moved(DType type) {
  for (const Dims& d : shapes()) {
    SCOPED_TRACE(std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z));
    const std::vector<T> v = test_field<T>(d);
    const Quantization quant = lorenzo::resolve_quantization({ErrorMode::abs, 1e-3}, type, -2, 3);
    const uint64_t n = d.count();
    std::vector<uint16_t> field_codes(n), tile_codes(n);
    uint64_t count = 0;
    lorenzo::Prediction by_tiles;
    by_tiles.tile_order = true;
    const Buffer field_outliers = lorenzo::encode_cpu(v.data(), type, d, quant, field_codes.data(), &count);
    const Buffer tile_outliers = lorenzo::encode_cpu(v.data(), type, d, quant, tile_codes.data(), &count, {}, nullptr,
                                                     by_tiles);
    ASSERT_EQ(count, n);
    ASSERT_EQ(field_outliers.size(), tile_outliers.size());  // keys are by tile either way
    EXPECT_EQ(std::memcmp(field_outliers.data(), tile_outliers.data(), field_outliers.size()), 0);
    uint64_t moved = 0;
    for (uint64_t z = 0; z < d.z; ++z)
      for (uint64_t y = 0; y < d.y; ++y)
        for (uint64_t x = 0; x < d.x; ++x) {
          const uint64_t i = x + d.x * (y + d.y * z);
          ASSERT_EQ(tile_codes[tile_order_index(d, x, y, z)], field_codes[i]) << x << "," << y << "," << z;
          moved += tile_order_index(d, x, y, z) != i;
        }
    if (d.rank > 1 && d.x > 32) {
      EXPECT_GT(moved, 0u);  // a real permutation, not field order again
    }
    std::vector<T> a(n), b(n);
    lorenzo::decode_cpu(field_codes.data(), n, field_outliers.data(), field_outliers.size(), type, d, quant, a.data());
    lorenzo::decode_cpu(tile_codes.data(), n, tile_outliers.data(), tile_outliers.size(), type, d, quant, b.data(),
                        nullptr, 0, {}, true, by_tiles);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), n * sizeof(T)), 0);
  }
}

TEST(LorenzoCodeOrder, TileOrderHoldsTheFieldOrdersCodesInEachTilesRun) {
  expect_the_field_orders_codes_moved<float>(DType::f32);
  expect_the_field_orders_codes_moved<double>(DType::f64);
}

// Below the stage, both backends' entry points refuse tile order where it does not go (fill
// values: the gather of the points with data reads field order; span "chunk").
TEST(LorenzoCodeOrder, EntryPointsRefuseTileOrderWithFillValuesOrAcrossTheChunk) {
  const Dims d = Dims::make({70, 45});
  const std::vector<float> v = test_field<float>(d);
  const Quantization quant = lorenzo::resolve_quantization({ErrorMode::abs, 1e-3}, DType::f32, -2, 3);
  std::vector<uint16_t> codes(d.count());
  uint64_t count = 0;
  const MissingValues fills = missing_values_of({1e20}, DType::f32);
  lorenzo::Prediction by_tiles, across;
  by_tiles.tile_order = across.tile_order = true;
  across.span = lorenzo::Span::chunk;
  testing::expect_error(
      [&] { lorenzo::encode_cpu(v.data(), DType::f32, d, quant, codes.data(), &count, fills, nullptr, by_tiles); },
      ErrorCode::invalid_argument, "tile order");
  testing::expect_error([&] { lorenzo::encode_cpu(v.data(), DType::f32, d, quant, codes.data(), &count, {}, nullptr, across); },
                        ErrorCode::invalid_argument, "tile order");
  const Buffer outliers = lorenzo::encode_cpu(v.data(), DType::f32, d, quant, codes.data(), &count, {}, nullptr, by_tiles);
  std::vector<float> back(d.count());
  testing::expect_error(
      [&] {
        lorenzo::decode_cpu(codes.data(), count, outliers.data(), outliers.size(), DType::f32, d, quant, back.data(),
                            nullptr, 0, {}, true, across);
      },
      ErrorCode::invalid_argument, "tile order");
}

CompressOptions on_the_cpu() {
  CompressOptions options;
  options.device = Device::cpu;
  options.bound = {ErrorMode::rel, 1e-2};
  return options;
}

// Files in tile order decode to the field-order files' values, in chunks too, and say their
// order; on a GPU both backends write the same file.
TEST(LorenzoCodeOrder, FilesDecodeToTheFieldOrderFilesValues) {
  const Graph by_tiles = testing::fz_with_lorenzo({{"code_order", "tile"}});
  nlohmann::json chunked = by_tiles.to_json();
  chunked["chunk_values"] = 4000;
  int predicted = 0;
  for (const Graph& graph : {by_tiles, Graph::from_json(chunked)})
    for (const Dims& d : shapes()) {
      const std::vector<float> v = test_field<float>(d);
      const FieldRef values{v.data(), Location::host, DType::f32, d};
      const Buffer tiles = compress(graph, values, on_the_cpu());
      const Buffer field = compress(Graph::default_fz(), values, on_the_cpu());
      const Decompressed a = decompress(tiles, {}), b = decompress(field, {});
      ASSERT_EQ(a.data.size(), b.data.size());
      EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0);
      // (A field that codes below ratio 2 is stored exactly, without the predictor.)
      const nlohmann::json described = describe_stage_headers(inspect(tiles));
      if (described.contains("predict")) {
        ++predicted;
        EXPECT_EQ(described["predict"]["code_order"], "tile");
        EXPECT_EQ(describe_stage_headers(inspect(field))["predict"]["code_order"], "field");
      }
      if (!cuda_available()) continue;
      testing::expect_the_gpu_writes_the_cpu_file(tiles, graph, values, on_the_cpu());
    }
  EXPECT_GE(predicted, 4);
}

TEST(LorenzoCodeOrder, ParametersAndRecordsAreChecked) {
  testing::expect_error([] { make_stage("lorenzo", {{"code_order", "rows"}}); }, ErrorCode::invalid_config,
                        "code_order");
  testing::expect_error([] { make_stage("lorenzo", {{"code_order", "tile"}, {"span", "chunk"}}); },
                        ErrorCode::invalid_config, "\"span\": \"tile\"");
  testing::expect_error([] { make_stage("lorenzo", {{"code_order", "tile"}, {"span", "auto"}}); },
                        ErrorCode::invalid_config, "\"span\": \"tile\"");
  testing::expect_error([] { make_stage("lorenzo", {{"code_order", "tile"}, {"fill", {1e20}}}); },
                        ErrorCode::invalid_config, "no fill values");
  EXPECT_FALSE(make_stage("lorenzo", {{"code_order", "field"}})->params().contains("code_order"));
  EXPECT_EQ(make_stage("lorenzo", {{"code_order", "tile"}})->params()["code_order"], "tile");

  Quantization quant;
  quant.error_bound = 0.5, quant.step = 1, quant.min = -3, quant.max = 4;
  StageContext ctx;
  ctx.dtype = DType::f32;
  ctx.field_dims = ctx.dims = Dims::make({70, 45});
  const auto by_tiles = make_stage("lorenzo", {{"code_order", "tile"}});
  const auto by_field = make_stage("lorenzo", nlohmann::json::object());
  const auto tile_record = lorenzo::write_header(quant, {}, lorenzo::Prediction{lorenzo::Span::tile, 3u, true});
  const auto field_record = lorenzo::write_header(quant, {}, lorenzo::Prediction{lorenzo::Span::tile, 3u, false});
  EXPECT_EQ(by_tiles->describe_header(ctx, tile_record)["code_order"], "tile");
  testing::expect_error([&] { by_tiles->describe_header(ctx, field_record); }, ErrorCode::corrupt_data, "code order");
  testing::expect_error([&] { by_tiles->describe_header(ctx, lorenzo::write_header(quant, {})); },
                        ErrorCode::corrupt_data, "without its prediction record");
  testing::expect_error([&] { by_field->describe_header(ctx, tile_record); }, ErrorCode::corrupt_data, "code order");
  // Tile order by tiles only: a record of both is not one a writer makes.
  std::vector<uint8_t> both = tile_record;
  both[both.size() - 7] |= 1;  // bit 8: span "chunk"
  Quantization q;
  MissingValues m;
  std::optional<lorenzo::Prediction> read;
  testing::expect_error([&] { lorenzo::read_header(both, &q, &m, nullptr, &read); }, ErrorCode::corrupt_data,
                        "prediction record");
  lorenzo::read_header(tile_record, &q, &m, nullptr, &read);
  ASSERT_TRUE(read.has_value());
  EXPECT_TRUE(read->tile_order);
  EXPECT_EQ(read->axes, 3u);
}

}  // namespace
}  // namespace fzg
