// Fill values: missing points stay out of the value range and the bound, come back bit for bit,
// cost next to nothing in the mask stream, and the CPU and CUDA backends write the same bytes.
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <random>

#include "core/missing_values.hh"
#include "core/registry.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "predictors/lorenzo/mask.hh"
#include "test_util.hh"

namespace fzg {

namespace {

using testing::expect_error;

// A smooth field with a land mask (a disc of fill values and a coastline that moves from row
// to row) and, when `scattered`, isolated fill points too.
template <typename T>
std::vector<T> masked_field(const Dims& d, T fill, bool scattered, uint64_t seed = 3) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<T> v(d.count());
  for (uint64_t z = 0; z < d.z; ++z)
    for (uint64_t y = 0; y < d.y; ++y)
      for (uint64_t x = 0; x < d.x; ++x) {
        const uint64_t i = x + d.x * (y + d.y * z);
        const double cx = double(x) - 0.4 * double(d.x), cy = double(y) - 0.5 * double(d.y);
        const bool land = cx * cx + cy * cy < 0.08 * double(d.x * d.x) || double(x) > 0.8 * double(d.x) + 3 * std::sin(0.3 * double(y));
        v[i] = land ? fill : T(20 + 5 * std::sin(0.05 * double(x)) * std::cos(0.07 * double(y)) + 0.3 * double(z) + noise(rng));
        if (scattered && rng() % 97 == 0) v[i] = fill;
      }
  return v;
}

// Land that changes along the slowest axis only at `change` (a second island from there on):
// a 3D field's tile layers (8 planes) or a 2D field's (32 rows) below `change` have the same
// mask, and so have those above it, with a coastline inside every tile that holds land.
template <typename T>
std::vector<T> layered_land_field(const Dims& d, T fill, uint64_t change) {
  std::vector<T> v(d.count());
  const uint64_t slices = d.rank == 3 ? d.z : d.y, per_slice = d.count() / slices;
  for (uint64_t i = 0; i < v.size(); ++i) {
    const uint64_t slice = i / per_slice, x = i % d.x, y = d.rank == 3 ? (i / d.x) % d.y : 0;
    const bool land = (x + 2 * y) % 45 < 17 || (slice >= change && x % 40 > 30);
    v[i] = land ? fill : T(10 + 0.01 * double(x) + 0.02 * double(y) + 0.005 * double(slice));
  }
  return v;
}

// The repeat runs of a mask stream (mask.hh).
uint64_t repeat_runs(const std::vector<uint8_t>& mask) {
  uint64_t runs = 0, repeats = 0;
  std::memcpy(&runs, mask.data(), 8);
  for (uint64_t r = 0; r < runs; ++r) {
    uint16_t run;
    std::memcpy(&run, mask.data() + 8 + 2 * r, 2);
    repeats += lorenzo::is_mask_repeat(run);
  }
  return repeats;
}

template <typename T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

// Compresses with fill values at `bound`, decompresses, and checks every missing point bit for
// bit, every other point against the absolute bound of the valid range; returns the file.
template <typename T>
Buffer expect_round_trip(const std::vector<T>& v, const Dims& d, const std::vector<double>& fills, ErrorBound bound,
                         Device device = Device::cpu) {
  const MissingValues missing = missing_values_of(fills, dtype_of<T>());
  CompressOptions options;
  options.bound = bound;
  options.device = device;
  options.fill_values = fills;
  const Buffer file = compress(Graph::default_fz(), FieldRef{v.data(), Location::host, dtype_of<T>(), d}, options);
  DecompressOptions decode;
  decode.device = device;
  const Decompressed out = decompress(file, decode);
  const T* back = out.data.as<T>();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (T x : v)
    if (std::isfinite(double(x)) && missing.symbol_of(x) == 0) lo = std::min(lo, double(x)), hi = std::max(hi, double(x));
  const double eb = out.header.quant.error_bound;
  if (lo <= hi && bound.mode == ErrorMode::rel) {
    EXPECT_EQ(out.header.quant.min, lo);  // the range of the points with data
    EXPECT_EQ(out.header.quant.max, hi);
  }
  uint64_t over = 0, changed_fills = 0;
  for (uint64_t i = 0; i < v.size(); ++i) {
    if (missing.symbol_of(v[i])) changed_fills += bits_of(v[i]) != bits_of(back[i]);
    else if (!std::isfinite(double(v[i]))) over += bits_of(v[i]) != bits_of(back[i]);  // kept exactly
    else over += !(std::fabs(double(v[i]) - double(back[i])) <= eb);
  }
  EXPECT_EQ(changed_fills, 0u);
  EXPECT_EQ(over, 0u);
  return file;
}

std::vector<uint8_t> stream_named(const Buffer& file, const std::string& name) {
  const Container c = inspect(file);
  const Graph graph = Graph::from_text(c.graph_json);
  for (size_t s = 0; s < graph.stored().size(); ++s)
    if (graph.describe(graph.stored()[s]) == name) {
      std::vector<uint8_t> bytes;
      for (const auto& chunk : c.chunks) {
        const uint8_t* at = file.data() + chunk.stream_offsets.at(s);
        bytes.insert(bytes.end(), at, at + chunk.streams.at(s).size);
      }
      return bytes;
    }
  ADD_FAILURE() << "no stream " << name;
  return {};
}

// The lorenzo stage with fill value -5 over `v`: its header (rel 1e-3 of the valid range) and
// the streams it writes on the CPU. The header lives on the heap so that ctx stays valid when
// the whole is moved.
struct MaskedEncoding {
  std::unique_ptr<Stage> stage;
  std::shared_ptr<const std::vector<uint8_t>> header;
  StageContext ctx;
  std::vector<Buffer> outputs;
};

MaskedEncoding encode_with_fill(const Dims& d, const std::vector<float>& v) {
  MaskedEncoding e;
  e.stage = make_stage("lorenzo", {{"fill", {-5}}});
  e.ctx.dtype = DType::f32;
  e.ctx.field_dims = e.ctx.dims = d;
  FieldSummary summary;
  summary.bound = {ErrorMode::rel, 1e-3};
  const MissingValues missing = missing_values_of({-5}, DType::f32);
  finite_range(v.data(), DType::f32, v.size(), &summary.min, &summary.max, &missing);
  e.header = std::make_shared<const std::vector<uint8_t>>(e.stage->make_header(e.ctx, summary));
  e.ctx.header = e.header.get();
  e.outputs = e.stage->encode(e.ctx, {Buffer::view(const_cast<float*>(v.data()), 4 * v.size(), Location::host)});
  return e;
}

}  // namespace

TEST(MissingValues, FillValuesAreMatchedBitForBitInTheFieldsType) {
  const MissingValues f32 = missing_values_of({1e20}, DType::f32);
  EXPECT_EQ(f32.symbol_of(float(1e20)), 1u);
  EXPECT_EQ(f32.symbol_of(1e20), 0u);  // 1e20 as f64 is not the f32 fill value
  EXPECT_EQ(f32.symbol_of(std::nextafter(float(1e20), 0.f)), 0u);
  const MissingValues nan = missing_values_of({parse_fill_value("nan"), parse_fill_value("-nan")}, DType::f32);
  EXPECT_EQ(nan.symbol_of(std::numeric_limits<float>::quiet_NaN()), 1u);
  EXPECT_EQ(nan.symbol_of(-std::numeric_limits<float>::quiet_NaN()), 2u);
  uint32_t payload = 0x7fc00123;
  float other_nan;
  std::memcpy(&other_nan, &payload, 4);
  EXPECT_EQ(nan.symbol_of(other_nan), 0u);  // another NaN payload is data (an exact outlier)
}

TEST(MissingValues, BadFillValuesAreRefusedClearly) {
  expect_error([] { parse_fill_value("sea"); }, ErrorCode::invalid_argument, "bad fill value 'sea'");
  expect_error([] { missing_values_of({1, 2, 1}, DType::f64); }, ErrorCode::invalid_argument, "are the same f64");
  // 1e20 and 1.0000000000001e20 are one f32 value.
  expect_error([] { missing_values_of({1e20, 1.0000000000001e20}, DType::f32); }, ErrorCode::invalid_argument,
               "are the same f32");
  expect_error([] { missing_values_of(std::vector<double>(16, 0.0), DType::f32); }, ErrorCode::invalid_argument,
               "at most 15");
  expect_error([] { missing_values_of({1}, DType::u16); }, ErrorCode::invalid_argument, "f32 or f64");
  expect_error([] { make_stage("lorenzo", {{"fill", {"land"}}}); }, ErrorCode::invalid_config, "fill[0]");
  expect_error([] { make_stage("lorenzo", {{"fill", 1e20}}); }, ErrorCode::invalid_config, "list of fill values");
  expect_error([] { make_stage("lorenzo", {{"fill", {1.5, 1.5}}}); }, ErrorCode::invalid_argument, "the same");
  expect_error([] { Graph::default_fz().without_predictor().with_fill_values({1}); }, ErrorCode::invalid_config,
               "need a predictor");
}

TEST(MissingValues, FillParametersRoundTripThroughTheStoredGraph) {
  const Graph graph = Graph::default_fz().with_fill_values({1e20, parse_fill_value("nan"), -999});
  const Graph again = Graph::from_text(graph.canonical_text());
  EXPECT_EQ(again.canonical_text(), graph.canonical_text());
  EXPECT_NE(graph.canonical_text().find("predict.mask"), std::string::npos);
  // Without fill values the graph is the one files have always stored.
  EXPECT_EQ(graph.with_fill_values({}).canonical_text(), Graph::default_fz().canonical_text());
}

TEST(MissingValues, RealFieldsWithFillValuesKeepThemAndTheBound) {
  const std::string dir = testing::shared_datasets();
  struct Real {
    const char* file;
    std::vector<uint64_t> dims;
    double fill;
  };
  for (const Real& r : {Real{"sst-nemo_360x330x1.f32", {360, 330}, 1e20}, Real{"sst-ostia_432x18x54.f32", {432, 18, 54}, 1e20},
                        Real{"tb-satellite_256x160x1.f32", {256, 160}, -1073741824.0}}) {
    std::ifstream in(dir + "/" + r.file, std::ios::binary);
    if (!in) GTEST_SKIP() << "no " << dir << "/" << r.file;
    const Dims d = Dims::make(r.dims);
    std::vector<float> v(d.count());
    in.read(reinterpret_cast<char*>(v.data()), std::streamsize(4 * v.size()));
    for (double rel : {1e-2, 1e-3, 1e-4}) {
      SCOPED_TRACE(std::string(r.file) + " rel " + std::to_string(rel));
      const Buffer file = expect_round_trip(v, d, {r.fill}, {ErrorMode::rel, rel});
      // Far smaller than the field: the fill points are no exact outliers (before fill values
      // each cost 12 bytes as one, and sst-nemo grew past its own size).
      EXPECT_GT(double(v.size() * 4) / double(file.size()), 2.5);
      const std::vector<uint8_t> outliers = stream_named(file, "predict.outliers");
      uint64_t exacts = 0;
      ASSERT_GE(outliers.size(), 16u);
      std::memcpy(&exacts, outliers.data() + 8, 8);
      EXPECT_EQ(exacts, 0u);
    }
  }
}

TEST(MissingValues, SyntheticMasksOfEveryShape) {
  const float fill = -999.f;
  for (const Dims& d : {Dims::make({5000}), Dims::make({67, 45}), Dims::make({33, 17, 9}), Dims::make({64, 64, 16})}) {
    SCOPED_TRACE(d.to_string());
    const uint64_t n = d.count();
    std::vector<std::vector<float>> cases;
    cases.push_back(masked_field<float>(d, fill, true));
    cases.push_back(std::vector<float>(n, fill));  // all missing
    std::vector<float> none = masked_field<float>(d, 1.f, false);
    for (float& x : none) x = x == 1.f ? 2.f : x;  // none missing
    cases.push_back(none);
    std::vector<float> one(n, fill);  // one valid point
    one[n / 2] = 3.25f;
    cases.push_back(one);
    std::vector<float> checkerboard(n);
    for (uint64_t i = 0; i < n; ++i) checkerboard[i] = (i + i / d.x) % 2 ? fill : float(std::sin(0.01 * double(i)));
    cases.push_back(checkerboard);
    for (const auto& v : cases)
      for (ErrorBound b : {ErrorBound{ErrorMode::rel, 1e-3}, ErrorBound{ErrorMode::abs, 1e-2}, ErrorBound{ErrorMode::psnr, 60}})
        expect_round_trip(v, d, {fill}, b);
  }
}

TEST(MissingValues, NanAsAFillValueAndSeveralFillValuesAtOnce) {
  const Dims d = Dims::make({70, 50, 6});
  std::vector<double> v = masked_field<double>(d, std::numeric_limits<double>::quiet_NaN(), true);
  for (uint64_t i = 0; i < v.size(); i += 53) v[i] = -1e30;
  for (uint64_t i = 5; i < v.size(); i += 71) v[i] = std::numeric_limits<double>::infinity();  // data: an exact outlier
  expect_round_trip(v, d, {parse_fill_value("nan"), -1e30}, {ErrorMode::rel, 1e-4});
}

TEST(MissingValues, AFillValueOfAnotherTypeIsData) {
  // 0.1 as f64 is a fill value of an f64 field; 0.1f widened to f64 is data there.
  const Dims d = Dims::make({40, 40});
  std::vector<double> v = masked_field<double>(d, 0.1, false);
  for (uint64_t i = 0; i < v.size(); i += 7) v[i] = double(0.1f);
  expect_round_trip(v, d, {0.1}, {ErrorMode::abs, 1e-6});
}

TEST(MissingValues, LandMasksCostNextToNothing) {
  // A coastline that moves from row to row and a mask constant along z: the mask stream is
  // a small fraction of the field's bytes (a bitmap would be 1/32 of an f32 field).
  const Dims d = Dims::make({200, 150, 24});
  const std::vector<float> v = masked_field<float>(d, 1e20f, false);
  const Buffer file = expect_round_trip(v, d, {1e20}, {ErrorMode::rel, 1e-3});
  EXPECT_LT(double(stream_named(file, "predict.mask").size()), 0.01 * double(4 * v.size()));
}

TEST(MissingValues, TilesWhoseMaskRepeatsTheLayerBeforeCostOneRun) {
  // Tile layers 1 and 2 repeat layer 0, layer 3 changes and layer 4 repeats it (a repeat of a
  // repeat resolves to layer 3's runs, not layer 0's); the fill points come back exactly.
  for (const Dims& d : {Dims::make({100, 20, 40}), Dims::make({100, 160})}) {
    SCOPED_TRACE(d.to_string());
    const uint64_t layer = d.rank == 3 ? 8 : 32;
    const std::vector<float> v = layered_land_field<float>(d, 1e20f, 3 * layer);
    const Buffer file = expect_round_trip(v, d, {1e20}, {ErrorMode::rel, 1e-3});
    const std::vector<uint8_t> mask = stream_named(file, "predict.mask");
    const lorenzo::TileGrid grid(d);
    // Tiles of layers 1, 2 and 4 repeat (all have land), layer 3's mostly not.
    const uint64_t per_layer = grid.tile_count() / (d.rank == 3 ? grid.tiles_z : grid.tiles_y);
    EXPECT_GE(repeat_runs(mask), 3 * per_layer);
    EXPECT_LT(repeat_runs(mask), 4 * per_layer);
  }
}

TEST(MissingValues, MisplacedRepeatRunsAreCorruptData) {
  // A repeat run in the first tile layer (nothing to repeat) or covering less than its tile,
  // on each backend the build and machine have.
  const Dims d = Dims::make({64, 16, 24});
  const std::vector<float> v = layered_land_field<float>(d, -5.f, 24);
  const MaskedEncoding encoded = encode_with_fill(d, v);
  const auto& stage = encoded.stage;
  const StageContext& ctx = encoded.ctx;
  const std::vector<Buffer>& outputs = encoded.outputs;
  const std::vector<uint8_t> mask = testing::bytes_of(outputs[2]);
  ASSERT_GT(repeat_runs(mask), 0u);
  std::vector<std::vector<uint8_t>> damaged;
  const uint16_t repeat = lorenzo::mask_repeat_run(2048), shorter = lorenzo::mask_run(2047, lorenzo::mask_repeat_difference);
  {  // tile 0's runs replaced by a repeat run
    uint64_t runs, n = 0;
    std::memcpy(&runs, mask.data(), 8);
    for (uint32_t keys = 0; keys < 2048; ++n) {
      uint16_t run;
      std::memcpy(&run, mask.data() + 8 + 2 * n, 2);
      keys += lorenzo::mask_run_length(run);
    }
    std::vector<uint8_t> m(8 + 2 * (runs - n + 1));
    runs = runs - n + 1;
    std::memcpy(m.data(), &runs, 8);
    std::memcpy(m.data() + 8, &repeat, 2);
    std::memcpy(m.data() + 10, mask.data() + 8 + 2 * n, m.size() - 10);
    damaged.push_back(m);
  }
  for (uint64_t r = 0, runs = (mask.size() - 8) / 2; r < runs; ++r) {
    uint16_t run;
    std::memcpy(&run, mask.data() + 8 + 2 * r, 2);
    if (!lorenzo::is_mask_repeat(run)) continue;
    damaged.push_back(mask);
    std::memcpy(damaged.back().data() + 8 + 2 * r, &shorter, 2);  // a repeat of 2047 keys
    break;
  }
  ASSERT_EQ(damaged.size(), 2u);
  for (Device device : {Device::cpu, Device::cuda}) {
    if (device == Device::cuda && !cuda_available()) continue;
    StageContext on = ctx;
    on.device = device;
    const Location where = device == Device::cuda ? Location::device : Location::host;
    auto decode_with = [&](const std::vector<uint8_t>& m) {
      std::vector<Buffer> outs{outputs[0], outputs[1], Buffer::view(const_cast<uint8_t*>(m.data()), m.size(), Location::host)};
      for (Buffer& b : outs) b = where == Location::device ? to_device(b, nullptr) : b;
      std::vector<Buffer> inputs{where == Location::device ? Buffer::device(4 * v.size(), nullptr) : Buffer::host(4 * v.size())};
      stage->decode(on, outs, inputs);
      return testing::bytes_of(inputs[0]);
    };
    const std::vector<uint8_t> intact = decode_with(mask);
    std::vector<float> back(v.size());
    std::memcpy(back.data(), intact.data(), intact.size());
    for (uint64_t i = 0; i < v.size(); ++i)
      ASSERT_EQ(v[i] == -5.f, back[i] == -5.f) << "point " << i;  // the mask comes back, repeats resolved
    for (const auto& m : damaged) expect_error([&] { decode_with(m); }, ErrorCode::corrupt_data, "mask");
  }
}

TEST(MissingValues, DamagedMaskStreamsAreCorruptDataNeverACrash) {
  const Dims d = Dims::make({67, 45});
  const std::vector<float> v = masked_field<float>(d, -5.f, true);
  // The stage alone: every truncation and many bit flips of its mask stream.
  const MaskedEncoding encoded = encode_with_fill(d, v);
  const auto& stage = encoded.stage;
  const StageContext& ctx = encoded.ctx;
  const std::vector<Buffer>& outputs = encoded.outputs;
  ASSERT_EQ(outputs.size(), 3u);
  const std::vector<uint8_t> mask = testing::bytes_of(outputs[2]);
  auto decode_with = [&](const std::vector<uint8_t>& damaged) {
    std::vector<Buffer> outs{outputs[0], outputs[1], Buffer::host(damaged.size())};
    if (!damaged.empty()) std::memcpy(outs[2].data(), damaged.data(), damaged.size());
    std::vector<Buffer> inputs{Buffer::host(4 * v.size())};
    stage->decode(ctx, outs, inputs);
  };
  decode_with(mask);  // intact
  for (uint64_t cut = 0; cut < mask.size(); cut += 1 + cut / 7) {
    std::vector<uint8_t> damaged(mask.begin(), mask.begin() + long(cut));
    expect_error([&] { decode_with(damaged); }, ErrorCode::corrupt_data, "mask");
  }
  std::mt19937 rng(5);
  uint64_t refused = 0;
  for (int flip = 0; flip < 400; ++flip) {
    std::vector<uint8_t> damaged = mask;
    damaged[rng() % damaged.size()] ^= uint8_t(1u << (rng() % 8));
    try {
      decode_with(damaged);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::corrupt_data) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(refused, 0u);
}

// With fill values the codes are those of the points with data only: a missing point takes
// its own prediction, so its delta is 0 and the decoder puts it back where the mask says.
// The decoder's flags from the mask are the field's, for every shape.
TEST(MissingValues, OnlyThePointsWithDataHaveCodesAndTheMaskSaysWhich) {
  for (const Dims& d : {Dims::make({5000}), Dims::make({67, 45}), Dims::make({33, 17, 9}), Dims::make({1, 1})}) {
    for (bool scattered : {false, true}) {
      SCOPED_TRACE(d.to_string() + (scattered ? " scattered" : ""));
      const std::vector<float> v = masked_field<float>(d, 1e20f, scattered);
      const MissingValues missing = missing_values_of({1e20}, DType::f32);
      const uint64_t n = d.count();
      std::vector<uint8_t> from_field(n), from_mask(n, 7);
      for (uint64_t i = 0; i < n; ++i) from_field[i] = missing.symbol_of(v[i]) == 0;
      Quantization quant;
      quant.error_bound = 0.01, quant.step = 0.02, quant.min = 0, quant.max = 40;
      std::vector<uint16_t> codes(n);
      uint64_t coded = 0;
      Buffer mask;
      const Buffer outliers = lorenzo::encode_cpu(v.data(), DType::f32, d, quant, codes.data(), &coded, missing, &mask);
      lorenzo::mask_data_flags_cpu(mask.data(), mask.size(), d, missing, from_mask.data());
      EXPECT_EQ(from_mask, from_field);
      uint64_t with_data = 0;
      for (uint8_t f : from_field) with_data += f;
      EXPECT_EQ(coded, with_data);
      if (n > 1) {
        EXPECT_LT(coded, n);  // every shape here has land
      }
      // Decoding the data codes gives back every point with data within the bound and every
      // missing point exactly.
      std::vector<float> back(n);
      lorenzo::decode_cpu(codes.data(), coded, outliers.data(), outliers.size(), DType::f32, d, quant, back.data(),
                          mask.data(), mask.size(), missing);
      for (uint64_t i = 0; i < n; ++i) {
        if (from_field[i]) {
          EXPECT_LE(std::fabs(double(back[i]) - double(v[i])), quant.error_bound) << i;
        } else {
          EXPECT_EQ(bits_of(back[i]), bits_of(v[i])) << i;
        }
      }
      // More or fewer codes than the mask's points with data are corrupt data, never a read
      // past them; so are data codes read as a ninth-session file's (a code every point).
      for (uint64_t wrong : {coded - 1, coded + 1}) {
        if (wrong > n || coded == 0) continue;
        expect_error([&] { lorenzo::decode_cpu(codes.data(), wrong, outliers.data(), outliers.size(), DType::f32,
                                               d, quant, back.data(), mask.data(), mask.size(), missing); },
                     ErrorCode::corrupt_data, "codes size");
      }
      if (coded < n)
        expect_error([&] { lorenzo::decode_cpu(codes.data(), coded, outliers.data(), outliers.size(), DType::f32, d,
                                               quant, back.data(), mask.data(), mask.size(), missing,
                                               /*data_only=*/false); },
                     ErrorCode::corrupt_data, "codes size");
    }
  }
}

TEST(MissingValues, GatheringAndScatteringCodesRoundTripsAnyFlags) {
  std::mt19937_64 rng(8);
  for (uint64_t n : {0, 1, 2, 31, 2047, 2048, 2049, 10007}) {
    std::vector<uint8_t> flags(n);
    std::vector<uint16_t> codes(n), data(n), back(n);
    for (uint64_t i = 0; i < n; ++i) flags[i] = rng() % 3 != 0, codes[i] = flags[i] ? uint16_t(rng()) : 0;
    const uint64_t count = lorenzo::gather_data_codes_cpu(codes.data(), flags.data(), n, data.data());
    uint64_t j = 0;
    for (uint64_t i = 0; i < n; ++i) {
      if (flags[i]) {
        EXPECT_EQ(data[j], codes[i]) << i;
        ++j;
      }
    }
    EXPECT_EQ(count, j);
    lorenzo::scatter_data_codes_cpu(data.data(), count, flags.data(), n, back.data());
    EXPECT_EQ(back, codes);
    if (n > 0) expect_error([&] { lorenzo::scatter_data_codes_cpu(data.data(), count + 1, flags.data(), n, back.data()); },
                            ErrorCode::corrupt_data, "codes size");
  }
}

TEST(MissingValues, AnUnknownCodeFormIsCorruptData) {
  const MissingValues missing = missing_values_of({1e20}, DType::f32);
  Quantization quant, q;
  quant.error_bound = 0.01, quant.step = 0.02, quant.min = 0, quant.max = 40;
  std::vector<uint8_t> header = lorenzo::write_header(quant, missing);
  MissingValues m;
  bool data_only = false;
  lorenzo::read_header(header, &q, &m, &data_only);
  EXPECT_TRUE(data_only);
  header.back() = 2;  // the form word's top byte
  expect_error([&] { lorenzo::read_header(header, &q, &m, &data_only); }, ErrorCode::corrupt_data, "code order");
  header.resize(header.size() - 8);  // the ninth session's form: every point's code
  lorenzo::read_header(header, &q, &m, &data_only);
  EXPECT_FALSE(data_only);
}

// The data bits (DataBits) of a field of `d` as a host loop finds them: a bit where has_data(i).
template <typename HasData>
std::vector<uint32_t> host_data_bits(const Dims& d, HasData has_data) {
  const DataBits layout(d);
  std::vector<uint32_t> words(layout.words(), 0);
  for (uint64_t i = 0; i < d.count(); ++i) {
    const uint64_t row = i / d.x, x = i % d.x;
    if (has_data(i)) words[layout.word(x, row)] |= 1u << (x % 32);
  }
  return words;
}

// The device's scatter is the CPU's (the bits from the mask are compared through whole files
// in GpuWritesTheCpuBytes).
TEST(MissingValues, GpuScattersCodesAsTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
#ifdef FZG_HAVE_CUDA
  std::mt19937_64 rng(12);
  // Rows of 32 points and of others (a partial last word per row), several segments of words,
  // random flags and whole words without data.
  for (const Dims& d : {Dims::make({1}), Dims::make({2047}), Dims::make({8192}), Dims::make({300001}),
                        Dims::make({33, 70}), Dims::make({64, 300}), Dims::make({37, 19, 23})}) {
    SCOPED_TRACE(d.to_string());
    const uint64_t n = d.count();
    std::vector<uint8_t> flags(n);
    std::vector<uint16_t> codes(n), data(n);
    for (uint64_t i = 0; i < n; ++i) {
      const bool empty_word = (i / 32) % 5 == 3;
      flags[i] = !empty_word && rng() % 4 != 0, codes[i] = flags[i] ? uint16_t(rng()) : 0;
    }
    const uint64_t count = lorenzo::gather_data_codes_cpu(codes.data(), flags.data(), n, data.data());
    // The flags as the GPU keeps them (DataBits): a bit a point, words by rows.
    std::vector<uint32_t> words = host_data_bits(d, [&](uint64_t i) { return flags[i] != 0; });
    Buffer bits = to_device(Buffer::view(words.data(), 4 * words.size(), Location::host), nullptr);
    Buffer gathered = to_device(Buffer::view(data.data(), 2 * n, Location::host), nullptr);
    Buffer scattered = Buffer::device(2 * n, nullptr);
    lorenzo::scatter_data_codes_cuda(gathered.as<uint16_t>(), count, bits.as<uint32_t>(), d,
                                     scattered.as<uint16_t>(), nullptr);
    EXPECT_EQ(testing::bytes_of(scattered), testing::bytes_of(Buffer::view(codes.data(), 2 * n, Location::host)));
    expect_error([&] { lorenzo::scatter_data_codes_cuda(gathered.as<uint16_t>(), count + 1, bits.as<uint32_t>(), d,
                                                        scattered.as<uint16_t>(), nullptr); },
                 ErrorCode::corrupt_data, "codes size");
  }
#endif
}

#ifdef FZG_HAVE_CUDA
// data_bits_device on one field: the bits a host loop finds, and the range finite_range gives.
template <typename T>
void expect_data_bits(const std::vector<T>& v, const Dims& d, const MissingValues& missing) {
  const DataBits layout(d);
  const std::vector<uint32_t> expected = host_data_bits(d, [&](uint64_t i) { return missing.symbol_of(v[i]) == 0; });
  Buffer field = to_device(Buffer::view(const_cast<T*>(v.data()), v.size() * sizeof(T), Location::host), nullptr);
  for (bool with_range : {false, true}) {
    std::vector<uint32_t> stale(layout.words(), 0xa5a5a5a5u);  // every word must be written
    Buffer bits = to_device(Buffer::view(stale.data(), 4 * stale.size(), Location::host), nullptr);
    double lo = -7, hi = -7, cpu_lo, cpu_hi;
    if (with_range) data_bits_device(field.data(), dtype_of<T>(), d, missing, bits.as<uint32_t>(), nullptr, &lo, &hi);
    else data_bits_device(field.data(), dtype_of<T>(), d, missing, bits.as<uint32_t>(), nullptr);
    const std::vector<uint8_t> got = testing::bytes_of(bits);
    ASSERT_EQ(got.size(), 4 * expected.size());
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
    if (!with_range) continue;
    finite_range(v.data(), dtype_of<T>(), v.size(), &cpu_lo, &cpu_hi, &missing);
    EXPECT_EQ(lo, cpu_lo);
    EXPECT_EQ(hi, cpu_hi);
  }
}
#endif

// The data bits made beside the value range (the executor's, for the encode) are the host's,
// with one fill value or several, NaN among them, in both types, with partial words and rows.
TEST(MissingValues, GpuDataBitsAndRangeAreTheHosts) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
#ifdef FZG_HAVE_CUDA
  // Rows of one word, of a partial word, of one segment of 64 words and of many (70000 and
  // 4096 take the 16-byte loads in both types; 70001 and 33 the 4-byte ones).
  for (const Dims& d : {Dims::make({1}), Dims::make({70001}), Dims::make({70000}), Dims::make({33, 70}),
                        Dims::make({64, 300}), Dims::make({4096, 3}), Dims::make({37, 19, 23}),
                        Dims::make({96, 40, 20})}) {
    for (bool scattered : {false, true}) {
      SCOPED_TRACE(d.to_string() + (scattered ? " scattered" : ""));
      std::vector<float> f32 = masked_field<float>(d, 1e20f, scattered);
      expect_data_bits(f32, d, missing_values_of({1e20}, DType::f32));
      // A second fill value (NaN) at every 7th point, and an infinity that holds data.
      for (uint64_t i = 0; i < f32.size(); i += 7) f32[i] = std::numeric_limits<float>::quiet_NaN();
      if (f32.size() > 3) f32[3] = std::numeric_limits<float>::infinity();
      expect_data_bits(f32, d, missing_values_of({1e20, parse_fill_value("nan")}, DType::f32));
      const std::vector<double> f64 = masked_field<double>(d, -1.07e9, scattered);
      expect_data_bits(f64, d, missing_values_of({-1.07e9}, DType::f64));
      // All missing: no bit, and the empty range.
      expect_data_bits(std::vector<double>(d.count(), -1.07e9), d, missing_values_of({-1.07e9}, DType::f64));
    }
  }
#endif
}

// A device field with fill values takes the executor's data bits (made beside the value range)
// into every chunk: the bytes of a host field on the CPU, in 1D, 2D and 3D, f32 and f64, with
// chunks of a few tile rows.
TEST(MissingValues, GpuDeviceFieldInChunksWritesTheCpuBytes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  for (const Dims& d : {Dims::make({100003}), Dims::make({333, 97}), Dims::make({67, 33, 45})}) {
    for (bool scattered : {false, true}) {
      SCOPED_TRACE(d.to_string() + (scattered ? " scattered" : ""));
      nlohmann::json config = Graph::default_fz().to_json();
      config["chunk_values"] = 16384;
      const Graph graph = Graph::from_json(config);
      auto same_bytes = [&](const auto& v, double fill) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        CompressOptions options;
        options.bound = {ErrorMode::rel, 1e-3};
        options.fill_values = {fill};
        const FieldRef host{v.data(), Location::host, dtype_of<T>(), d};
        const Buffer a = compress(graph, host, options);
        const Buffer field = to_device(Buffer::view(const_cast<T*>(v.data()), v.size() * sizeof(T), Location::host),
                                       nullptr);
        options.device = Device::cuda;
        const Buffer b = compress(graph, {field.data(), Location::device, dtype_of<T>(), d}, options);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0);
        EXPECT_GT(stream_named(a, "predict.mask").size(), 8u);  // a mask in every file
      };
      same_bytes(masked_field<float>(d, 1e20f, scattered), 1e20);
      same_bytes(masked_field<double>(d, std::numeric_limits<double>::quiet_NaN(), scattered), parse_fill_value("nan"));
    }
  }
}

TEST(MissingValues, GpuWritesTheCpuBytes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  for (const Dims& d : {Dims::make({5000}), Dims::make({67, 45}), Dims::make({33, 17, 9}), Dims::make({128, 96, 40})}) {
    for (bool scattered : {false, true}) {
      SCOPED_TRACE(d.to_string() + (scattered ? " scattered" : ""));
      const std::vector<float> f32 = masked_field<float>(d, 1e20f, scattered);
      const std::vector<double> f64 = masked_field<double>(d, std::numeric_limits<double>::quiet_NaN(), scattered);
      for (double rel : {1e-2, 1e-4}) {
        const Buffer a = expect_round_trip(f32, d, {1e20}, {ErrorMode::rel, rel}, Device::cpu);
        const Buffer b = expect_round_trip(f32, d, {1e20}, {ErrorMode::rel, rel}, Device::cuda);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0);
        const Buffer c = expect_round_trip(f64, d, {parse_fill_value("nan")}, {ErrorMode::rel, rel}, Device::cpu);
        const Buffer e = expect_round_trip(f64, d, {parse_fill_value("nan")}, {ErrorMode::rel, rel}, Device::cuda);
        ASSERT_EQ(c.size(), e.size());
        EXPECT_EQ(std::memcmp(c.data(), e.data(), c.size()), 0);
        // Each file decodes on the other backend to the same values.
        DecompressOptions on_gpu;
        on_gpu.device = Device::cuda;
        const Decompressed x = decompress(a, on_gpu), y = decompress(b, DecompressOptions{});
        EXPECT_EQ(std::memcmp(x.data.data(), y.data.data(), x.data.size()), 0);
      }
    }
  }
  // Masks whose tiles repeat the layer before, chains of repeats and a layer that changes.
  for (const Dims& d : {Dims::make({100, 20, 40}), Dims::make({100, 160}), Dims::make({300, 70, 129})}) {
    SCOPED_TRACE(d.to_string() + " layered");
    const std::vector<float> v = layered_land_field<float>(d, 1e20f, d.rank == 3 ? 24 : 96);
    const Buffer a = expect_round_trip(v, d, {1e20}, {ErrorMode::rel, 1e-3}, Device::cpu);
    const Buffer b = expect_round_trip(v, d, {1e20}, {ErrorMode::rel, 1e-3}, Device::cuda);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0);
    EXPECT_GT(repeat_runs(stream_named(a, "predict.mask")), 0u);
  }
}

}  // namespace fzg
