// The promise, on every shape and hazard: the bound holds at every point, NaN and Inf come
// back as they were, and no file exceeds max_compressed_size().
#include "test_util.hh"

namespace fzg {
namespace {

using testing::RoundTripCase;

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

void expect_bound_held_on_the_cpu(const Graph& graph, const RoundTripCase& c) {
  const Buffer field_bytes = testing::case_field(c);
  const FieldRef field{field_bytes.data(), Location::host, c.dtype, Dims::make(c.dims)};
  CompressOptions options;
  options.bound = c.bound;
  const Buffer file = compress(graph, field, options);
  EXPECT_LE(file.size(), max_compressed_size(graph, c.dtype, field.dims, c.bound.mode));

  const Decompressed out = decompress(file, {});
  ASSERT_EQ(out.data.size(), field_bytes.size());
  const double bound = out.header.quant.error_bound;
  EXPECT_GE(bound, 0.0);
  const uint64_t n = field.dims.count();
  const uint64_t violations =
      c.dtype == DType::f32
          ? testing::count_violations(field_bytes.as<float>(), out.data.as<float>(), n, bound)
          : testing::count_violations(field_bytes.as<double>(), out.data.as<double>(), n, bound);
  EXPECT_EQ(violations, 0u) << "bound " << bound;
}

TEST_P(RoundTrip, BoundHoldsAtEveryPointOnTheCpu) { expect_bound_held_on_the_cpu(Graph::default_fz(), GetParam()); }

// The same promise with prediction across the whole chunk (lorenzo "span": "chunk").
TEST_P(RoundTrip, ChunkSpanBoundHoldsAtEveryPointOnTheCpu) {
  expect_bound_held_on_the_cpu(testing::chunk_span_fz(), GetParam());
}

// And with the stencil's axes chosen from the field (lorenzo "axes": "auto"), by tiles and with
// the span chosen too.
TEST_P(RoundTrip, AutoAxesBoundHoldsAtEveryPointOnTheCpu) {
  expect_bound_held_on_the_cpu(testing::fz_with_lorenzo({{"axes", "auto"}}), GetParam());
  expect_bound_held_on_the_cpu(testing::fz_with_lorenzo({{"axes", "auto"}, {"span", "auto"}}), GetParam());
}

// And with the codes in tile order (lorenzo "code_order": "tile").
TEST_P(RoundTrip, TileOrderBoundHoldsAtEveryPointOnTheCpu) {
  expect_bound_held_on_the_cpu(testing::fz_with_lorenzo({{"code_order", "tile"}}), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Cases, RoundTrip, ::testing::ValuesIn(testing::round_trip_cases()),
                         [](const auto& info) { return info.param.name; });

// A field entirely below the type's smallest normal value, at relative bounds of a few
// subnormal spacings: the bound holds there too (f32 at rel 1e-5 once came back 33 points
// over, by a fraction of a spacing: the acceptance shortcut took the field's own binade's ulp).
TEST(RoundTripBound, SubnormalFieldsHoldTheBound) {
  for (const std::vector<uint64_t>& shape : {std::vector<uint64_t>{33, 9, 9}, {4099}, {31, 33}})
    for (double rel : {1e-3, 1e-5, 1e-6}) {
      const Dims dims = Dims::make(shape);
      std::vector<float> f32(dims.count());
      std::vector<double> f64(dims.count());
      for (uint64_t i = 0; i < dims.count(); ++i) {
        const double smooth = std::sin(0.05 * double(i)) + 0.5 * std::cos(0.013 * double(i));
        f32[i] = float(smooth * double(std::numeric_limits<float>::min()) * 0.1);
        f64[i] = smooth * std::numeric_limits<double>::min() * 0.1;
      }
      for (DType type : {DType::f32, DType::f64}) {
        SCOPED_TRACE(to_string(type) + " rel " + std::to_string(rel) + " of " + std::to_string(dims.count()));
        const void* data = type == DType::f32 ? static_cast<const void*>(f32.data()) : f64.data();
        CompressOptions options;
        options.bound = {ErrorMode::rel, rel};
        const Buffer file = compress(Graph::default_fz(), {data, Location::host, type, dims}, options);
        const Decompressed out = decompress(file, {});
        const double bound = out.header.quant.error_bound;  // 0 where no step that small exists: exact
        const uint64_t violations =
            type == DType::f32 ? testing::count_violations(f32.data(), out.data.as<float>(), dims.count(), bound)
                               : testing::count_violations(f64.data(), out.data.as<double>(), dims.count(), bound);
        EXPECT_EQ(violations, 0u) << "bound " << bound;
      }
    }
}

TEST(RoundTripBound, RelativeBoundIsTheFractionOfTheFiniteRange) {
  // Enough values that the lossy file is kept (a handful would be stored exactly).
  std::vector<float> v(4096);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 2.0f + float(i % 64) / 8.0f;  // within [2, 9.875]
  v[5] = 1.0f, v[77] = 11.0f, v[300] = std::numeric_limits<float>::quiet_NaN();
  v[301] = std::numeric_limits<float>::infinity();
  const Buffer b = testing::host_buffer(v);
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-2};
  const Buffer file =
      compress(Graph::default_fz(), {b.data(), Location::host, DType::f32, Dims::make({v.size()})}, options);
  const Decompressed out = decompress(file, {});
  EXPECT_DOUBLE_EQ(out.header.quant.error_bound, 1e-2 * 10.0);
  EXPECT_DOUBLE_EQ(out.header.quant.min, 1.0);
  EXPECT_DOUBLE_EQ(out.header.quant.max, 11.0);
}

TEST(RoundTripBound, PsnrTargetIsMetOnSmoothData) {
  const Dims d = Dims::make({64, 64, 16});
  const Buffer b = synthesize(SynthKind::smooth, DType::f32, d);
  CompressOptions options;
  options.bound = {ErrorMode::psnr, 70.0};
  const Buffer file = compress(Graph::default_fz(), {b.data(), Location::host, DType::f32, d}, options);
  const Decompressed out = decompress(file, {});
  const Metrics m = compare_fields(b.data(), out.data.data(), DType::f32, d.count(), out.header.quant.error_bound);
  EXPECT_GE(m.psnr, 70.0);
  EXPECT_EQ(m.violations, 0u);
}

TEST(RoundTripBound, ConstantFieldInRelModeIsExactAndTiny) {
  const Dims d = Dims::make({100, 100, 10});
  const Buffer b = testing::host_buffer(testing::make_values<float>(testing::Hazard::constant, d.count()));
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-3};
  const Buffer file = compress(Graph::default_fz(), {b.data(), Location::host, DType::f32, d}, options);
  const Decompressed out = decompress(file, {});
  EXPECT_EQ(std::memcmp(out.data.data(), b.data(), b.size()), 0);
  EXPECT_LT(file.size(), b.size() / 200);  // the flags of all-zero groups cost one bit each
}

TEST(RoundTripBound, LosslessModeAcceptsIntegerTypes) {
  for (DType t : {DType::u8, DType::u16, DType::u32, DType::i32}) {
    const uint64_t n = 1001;
    Buffer b = Buffer::host(n * dtype_size(t));
    for (uint64_t i = 0; i < b.size(); ++i) b.data()[i] = uint8_t((i * 7) % 13 == 0 ? i : 0);
    CompressOptions options;
    options.bound = {ErrorMode::lossless, 0};
    const Buffer file = compress(Graph::default_fz(), {b.data(), Location::host, t, Dims::make({n})}, options);
    const Decompressed out = decompress(file, {});
    ASSERT_EQ(out.data.size(), b.size());
    EXPECT_EQ(std::memcmp(out.data.data(), b.data(), b.size()), 0) << to_string(t);
    EXPECT_EQ(out.header.dtype, t);
  }
}

// At +-FLT_MAX, q*step may lie past the largest float and convert to inf: such points are
// outliers, never accepted by the shortcut that skips the final check.
template <typename T>
void expect_bound_at_the_largest_values(DType type) {
  const Graph graph = Graph::default_fz();
  testing::for_each_extreme_case<T>(type, [&](const testing::ExtremeField& f, const Dims& dims, const ErrorBound& bound) {
    CompressOptions options;
    options.bound = bound;
    const Buffer file = compress(graph, {f.bytes.data(), Location::host, type, dims}, options);
    testing::expect_requested_bound_held<T>(f, bound, decompress(file, {}));
  });
}

TEST(RoundTripBound, FloatMaxNeverComesBackAsInfinity) { expect_bound_at_the_largest_values<float>(DType::f32); }
TEST(RoundTripBound, DoubleMaxNeverComesBackAsInfinity) { expect_bound_at_the_largest_values<double>(DType::f64); }

// The smallest case: [FLT_MAX, -FLT_MAX] at rel 1e-6 once decoded to [+inf, -inf].
TEST(RoundTripBound, FloatMaxPairAtRel1em6IsExact) {
  const std::vector<float> v = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
  const Buffer b = testing::host_buffer(v);
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-6};
  const Decompressed out =
      decompress(compress(Graph::default_fz(), {b.data(), Location::host, DType::f32, Dims::make({2})}, options), {});
  EXPECT_EQ(out.data.as<float>()[0], v[0]);
  EXPECT_EQ(out.data.as<float>()[1], v[1]);
}

// A bound so tight that nearly every point is an outlier would expand the field (abs 1e-300:
// 1.74 MB -> 5.22 MB); the field is then stored exactly, no larger than the lossless file,
// through the graph without its predictor, and the header still says what was asked.
TEST(RoundTripBound, HopelesslyTightBoundStoresTheFieldExactly) {
  const Dims d = Dims::make({64, 64, 16});
  const Buffer b = testing::host_buffer(testing::make_values<float>(testing::Hazard::noise, d.count()));
  const FieldRef field{b.data(), Location::host, DType::f32, d};
  CompressOptions tight, exact;
  tight.bound = {ErrorMode::abs, 1e-300};
  exact.bound = {ErrorMode::lossless, 0};
  const Buffer file = compress(Graph::default_fz(), field, tight);
  EXPECT_LE(file.size(), compress(Graph::default_fz(), field, exact).size());
  EXPECT_LT(file.size(), b.size() + 1024);
  EXPECT_EQ(inspect(file).graph_json.find("lorenzo"), std::string::npos);
  const Decompressed out = decompress(file, {});
  EXPECT_EQ(out.header.mode, ErrorMode::abs);
  EXPECT_EQ(out.header.requested_bound, 1e-300);
  EXPECT_EQ(std::memcmp(out.data.data(), b.data(), b.size()), 0);
}

// The exact pass's steps are timed apart from the lossy pass's (which ran the same coders on
// the codes): "exact pass: <id> encode" beside "<id> encode"; a field that codes above ratio 2
// has no exact pass.
TEST(RoundTripBound, TheExactPassIsTimedApart) {
  const Dims d = Dims::make({64, 64, 16});
  const auto exact_steps = [&](testing::Hazard kind, double bound, std::vector<StageTime>& times) {
    const Buffer b = testing::host_buffer(testing::make_values<float>(kind, d.count()));
    CompressOptions options;
    options.bound = {ErrorMode::abs, bound};
    options.stage_times = &times;
    (void)compress(Graph::default_fz(), {b.data(), Location::host, DType::f32, d}, options);
    int exact = 0;
    for (const StageTime& t : times) exact += t.stage.rfind(exact_pass_label, 0) == 0;
    return exact;
  };
  const auto has = [](const std::vector<StageTime>& times, const std::string& name) {
    for (const StageTime& t : times)
      if (t.stage == name) return true;
    return false;
  };
  std::vector<StageTime> tight, smooth;
  EXPECT_GT(exact_steps(testing::Hazard::noise, 1e-300, tight), 0);
  EXPECT_TRUE(has(tight, "predict encode"));
  EXPECT_TRUE(has(tight, "pack encode"));
  EXPECT_TRUE(has(tight, std::string(exact_pass_label) + "pack encode"));
  EXPECT_FALSE(has(tight, std::string(exact_pass_label) + "predict encode"));  // no predictor in the exact pass
  EXPECT_EQ(exact_steps(testing::Hazard::smooth, 1e-2, smooth), 0);
  EXPECT_TRUE(has(smooth, "predict encode"));
}

TEST(RoundTripBound, ConcurrentCallsOnOneGraphGiveTheSequentialResults) {
  testing::expect_concurrent_calls_match_sequential(Device::cpu);
}

TEST(RoundTripBound, LossyModeRejectsIntegerTypes) {
  Buffer b = Buffer::host(16);
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-3};
  EXPECT_THROW(compress(Graph::default_fz(), {b.data(), Location::host, DType::u32, Dims::make({4})}, options), Error);
}

TEST(RoundTripBound, IncompressibleInputStaysWithinMaxCompressedSize) {
  const uint64_t n = 100000;
  std::mt19937_64 rng(3);
  std::vector<uint32_t> words(n);
  for (auto& w : words) w = uint32_t(rng());
  const Buffer b = testing::host_buffer(words);
  CompressOptions options;
  options.bound = {ErrorMode::lossless, 0};
  const Graph graph = Graph::default_fz();
  const Buffer file = compress(graph, {b.data(), Location::host, DType::u32, Dims::make({n})}, options);
  EXPECT_LE(file.size(), max_compressed_size(graph, DType::u32, Dims::make({n}), ErrorMode::lossless));
  EXPECT_LE(file.size(), b.size() + 1024);  // stored raw: a small bounded overhead
}

// Into caller memory: the same bytes as decompress() gives, the rest of a larger array left
// alone; an array too small, or none, is a clear invalid_argument before anything is written.
TEST(RoundTripBound, DecompressIntoCallerMemoryGivesTheSameField) {
  const Dims d = Dims::make({67, 13, 17});
  const Buffer b = testing::host_buffer(testing::make_values<float>(testing::Hazard::spikes, d.count()));
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-3};
  const Buffer file = compress(Graph::default_fz(), {b.data(), Location::host, DType::f32, d}, options);
  const Decompressed expected = decompress(file, {});
  std::vector<float> out(d.count() + 5, -1.0f);
  const Header header = decompress_into(file, out.data(), out.size() * sizeof(float), {});
  EXPECT_EQ(header.dims.count(), d.count());
  EXPECT_EQ(std::memcmp(out.data(), expected.data.data(), expected.data.size()), 0);
  EXPECT_EQ(out.back(), -1.0f);
  std::vector<float> small(d.count() - 1, -1.0f);
  try {
    decompress_into(file, small.data(), small.size() * sizeof(float), {});
    ADD_FAILURE() << "an array one value short was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("the field needs"), std::string::npos) << e.what();
  }
  EXPECT_EQ(small.front(), -1.0f);
  EXPECT_THROW(decompress_into(file, nullptr, 1 << 20, {}), Error);
}

}  // namespace
}  // namespace fzg
