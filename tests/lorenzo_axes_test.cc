// The Lorenzo stencil's axes and span (lorenzo "axes", "span"): every subset codes within the
// bound on both backends, with and without fill values, by tiles and across the chunk; "auto"
// chooses from the field by counts both backends agree on; the header records the choice.
#include <cmath>
#include <cstring>
#include <random>

#include "core/registry.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "predictors/lorenzo/quantization.hh"
#include "test_util.hh"

namespace fzg {
namespace {

constexpr float land = 1e20f;

// A smooth field with noise and spikes (escapes: deltas past a code's 15 bits at the bounds
// used here), and with `fill` a blob of land (and a few lone land points).
std::vector<float> test_field(const Dims& d, bool fill) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> noise(-0.05f, 0.05f);
  std::vector<float> v(d.count());
  for (uint64_t z = 0; z < d.z; ++z)
    for (uint64_t y = 0; y < d.y; ++y)
      for (uint64_t x = 0; x < d.x; ++x) {
        const uint64_t i = x + d.x * (y + d.y * z);
        v[i] = std::sin(0.11f * x) + std::cos(0.07f * y) * 0.5f + 0.03f * z + noise(rng);
        if (i % 211 == 17) v[i] += 500.0f;
        const float dx = float(x) - 0.3f * d.x, dy = float(y) - 0.6f * d.y;
        if (fill && (dx * dx + dy * dy < 0.04f * d.x * d.y || i % 397 == 5)) v[i] = land;
      }
  return v;
}

std::vector<std::string> axes_of_rank(int rank) {
  if (rank == 1) return {"x", "xyz"};
  if (rank == 2) return {"x", "y", "xy"};
  return {"x", "y", "z", "xy", "xz", "yz", "xyz"};
}

Buffer compress_on(Device device, const Graph& graph, const std::vector<float>& v, const Dims& d, double bound) {
  CompressOptions options;
  options.device = device;
  options.bound = {ErrorMode::abs, bound};
  return compress(graph, {v.data(), Location::host, DType::f32, d}, options);
}

TEST(LorenzoAxes, EveryStencilHoldsTheBoundOnEveryBackend) {
  for (const Dims& d : {Dims::make({3000}), Dims::make({70, 45}), Dims::make({40, 20, 18})})
    for (bool fill : {false, true})
      for (const std::string span : {"tile", "chunk"})
        for (const std::string& axes : axes_of_rank(d.rank)) {
          SCOPED_TRACE(std::to_string(d.rank) + "D axes " + axes + " span " + span + (fill ? " fill" : ""));
          const std::vector<float> v = test_field(d, fill);
          Graph graph = testing::fz_with_lorenzo({{"axes", axes}, {"span", span}});
          if (fill) graph = graph.with_fill_values({double(land)});
          const double bound = 1e-3;
          const Buffer file = compress_on(Device::cpu, graph, v, d, bound);
          const Decompressed out = decompress(file, {});
          const float* back = out.data.as<float>();
          uint64_t over = 0;
          for (uint64_t i = 0; i < v.size(); ++i)
            over += v[i] == land ? std::memcmp(&v[i], &back[i], 4) != 0 : !(std::fabs(double(v[i]) - back[i]) <= bound);
          EXPECT_EQ(over, 0u);
          if (!cuda_available()) continue;
          CompressOptions options;
          options.bound = {ErrorMode::abs, bound};
          testing::expect_the_gpu_writes_the_cpu_file(file, graph, {v.data(), Location::host, DType::f32, d}, options);
        }
}

// The prediction "auto" records for a field, sampled where `device` says.
lorenzo::Prediction chosen(const std::vector<float>& v, const Dims& d, const nlohmann::json& params, Device device) {
  const auto stage = make_stage("lorenzo", params);
  StageContext ctx;
  ctx.device = device;
  ctx.dtype = DType::f32;
  ctx.field_dims = ctx.dims = d;
  FieldSummary summary;
  summary.bound = {ErrorMode::abs, 1e-3};
  finite_range(v.data(), DType::f32, v.size(), &summary.min, &summary.max);
  Buffer field = testing::host_buffer(v);
  if (device == Device::cuda) field = to_device(field, nullptr);
  summary.field = &field;
  Quantization quant;
  MissingValues missing;
  std::optional<lorenzo::Prediction> record;
  lorenzo::read_header(stage->make_header(ctx, summary), &quant, &missing, nullptr, &record);
  if (!record) ADD_FAILURE() << "no prediction record";
  return record.value_or(lorenzo::Prediction{});
}

// A field of independent values along x, constant along y and z: a stencil along x codes
// noise, one along y and z alone codes zeros except at its tiles' first rows.
TEST(LorenzoAxes, AutoChoosesTheAxesAlongWhichTheFieldIsConstant) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> noise(-1.0f, 1.0f);
  for (const Dims& d : {Dims::make({96, 40}), Dims::make({64, 24, 20})}) {
    std::vector<float> along_x(d.x), v(d.count());
    for (float& a : along_x) a = noise(rng);
    for (uint64_t i = 0; i < v.size(); ++i) v[i] = along_x[i % d.x];
    const lorenzo::Axes expected = d.rank == 2 ? lorenzo::axis_y : lorenzo::axis_y | lorenzo::axis_z;
    for (const std::string span : {"tile", "chunk"})
      for (Device device : {Device::cpu, Device::cuda}) {
        if (device == Device::cuda && !cuda_available()) continue;
        EXPECT_EQ(chosen(v, d, {{"axes", "auto"}, {"span", span}}, device).axes, expected) << span;
      }
    // A smooth field, large beside the bound, keeps every axis.
    std::vector<float> smooth(d.count());
    for (uint64_t i = 0; i < v.size(); ++i) {
      const uint64_t x = i % d.x, y = i / d.x % d.y, z = i / (d.x * d.y);
      smooth[i] = 100.0f * std::sin(0.05f * x + 0.03f * y + 0.04f * z);
    }
    const lorenzo::Prediction p = chosen(smooth, d, {{"axes", "auto"}, {"span", "auto"}}, Device::cpu);
    EXPECT_EQ(p.axes, lorenzo::all_axes(d.rank));
    // Its tiles' borders cost it far more than 3 %: across the chunk.
    EXPECT_EQ(p.span, lorenzo::Span::chunk);
  }
}

// The sample's counts, bin for bin, on both backends (with fill values: tiles all data only).
TEST(LorenzoAxes, SampleCountsAreTheSameOnBothBackends) {
  FZG_REQUIRE_GPU();
#ifdef FZG_HAVE_CUDA  // the CUDA entry points are defined in CUDA builds only
  for (const Dims& d : {Dims::make({5000}), Dims::make({130, 70}), Dims::make({70, 33, 41})})
    for (bool fill : {false, true})
      for (lorenzo::Span span : {lorenzo::Span::tile, lorenzo::Span::chunk}) {
        const std::vector<float> v = test_field(d, fill);
        double min = 0, max = 0;
        const MissingValues missing = fill ? missing_values_of({double(land)}, DType::f32) : MissingValues{};
        finite_range(v.data(), DType::f32, v.size(), &min, &max, &missing);
        const Quantization quant = lorenzo::resolve_quantization({ErrorMode::abs, 1e-3}, DType::f32, min, max);
        const auto candidates = lorenzo::axes_candidates(d.rank);
        const std::vector<lorenzo::Span> spans =
            span == lorenzo::Span::tile ? std::vector<lorenzo::Span>{span}
                                        : std::vector<lorenzo::Span>{lorenzo::Span::tile, lorenzo::Span::chunk};
        const auto cpu = lorenzo::axes_histograms_cpu(v.data(), DType::f32, d, quant, missing, spans, candidates);
        const Buffer on_device = to_device(testing::host_buffer(v), nullptr);
        const auto gpu =
            lorenzo::axes_histograms_cuda(on_device.data(), DType::f32, d, quant, missing, spans, candidates, nullptr);
        ASSERT_EQ(cpu.size(), gpu.size());
        for (size_t i = 0; i < cpu.size(); ++i)
          ASSERT_EQ(cpu[i], gpu[i]) << d.rank << "D" << (fill ? " fill" : "")
                                    << (span == lorenzo::Span::chunk ? " chunk" : "") << ": candidate "
                                    << i / lorenzo::axes_histogram_bins << " bin " << i % lorenzo::axes_histogram_bins;
        uint64_t total = 0;
        for (uint64_t c : cpu) total += c;
        // (A 1D tile of 2048 points always holds one of the lone land points.)
        if (d.rank > 1 || !fill) {
          EXPECT_GT(total, 0u);
        }
      }
#endif
}

TEST(LorenzoAxes, HeaderRecordsThePredictionAndReadsHeadersWithout) {
  Quantization quant;
  quant.error_bound = 0.5, quant.step = 1, quant.min = -3, quant.max = 4;
  const MissingValues fills = missing_values_of({1e20, -9999}, DType::f32);
  for (const MissingValues& missing : {MissingValues{}, fills})
    for (lorenzo::Axes axes : {0u, 1u, 3u, 6u, 7u})
      for (lorenzo::Span span : {lorenzo::Span::tile, lorenzo::Span::chunk}) {
        std::optional<lorenzo::Prediction> record;
        if (axes) record = lorenzo::Prediction{span, axes};
        const std::vector<uint8_t> header = lorenzo::write_header(quant, missing, record);
        Quantization q;
        MissingValues m;
        bool data_only = false;
        std::optional<lorenzo::Prediction> read = lorenzo::Prediction{};
        lorenzo::read_header(header, &q, &m, &data_only, &read);
        ASSERT_EQ(read.has_value(), axes != 0);
        if (axes) {
          EXPECT_EQ(read->axes, axes);
          EXPECT_EQ(read->span, span);
        }
        EXPECT_EQ(m.count, missing.count);
        EXPECT_EQ(data_only, !missing.empty());
        EXPECT_EQ(q.step, quant.step);
        if (!axes) continue;
        std::vector<uint8_t> damaged = header;
        damaged[damaged.size() - 8] = 0;  // no axis
        testing::expect_error([&] { lorenzo::read_header(damaged, &q, &m, &data_only, &read); },
                              ErrorCode::corrupt_data, "lorenzo");
        damaged = header;
        damaged.back() ^= 0x40;  // the tag
        testing::expect_error([&] { lorenzo::read_header(damaged, &q, &m, &data_only, &read); },
                              ErrorCode::corrupt_data, "lorenzo");
      }
}

// A record naming an axis the field lacks, or missing where the parameters ask for one, is
// corrupt (masked to no axis, the two backends once decoded it differently).
TEST(LorenzoAxes, RecordsThatDoNotFitTheFieldOrTheParametersAreCorrupt) {
  Quantization quant;
  quant.error_bound = 0.5, quant.step = 1, quant.min = -3, quant.max = 4;
  StageContext ctx;
  ctx.dtype = DType::f32;
  ctx.field_dims = ctx.dims = Dims::make({70, 45});
  const auto stage = make_stage("lorenzo", {{"axes", "auto"}});
  for (lorenzo::Axes axes : {4u, 5u, 7u}) {
    const auto header = lorenzo::write_header(quant, {}, lorenzo::Prediction{lorenzo::Span::tile, axes});
    testing::expect_error([&] { stage->describe_header(ctx, header); }, ErrorCode::corrupt_data,
                          "an axis the field lacks");
  }
  EXPECT_NO_THROW(stage->describe_header(ctx, lorenzo::write_header(quant, {}, lorenzo::Prediction{{}, 3u})));
  testing::expect_error([&] { stage->describe_header(ctx, lorenzo::write_header(quant, {})); },
                        ErrorCode::corrupt_data, "without its prediction record");
  testing::expect_error([] { lorenzo::check_sample_spans({lorenzo::Span::chunk, lorenzo::Span::tile}); },
                        ErrorCode::invalid_argument, "by tiles, then");
}

TEST(LorenzoAxes, ParametersAreValidatedAndStoredOnlyWhenNotEveryAxis) {
  testing::expect_error([] { make_stage("lorenzo", {{"axes", "w"}}); }, ErrorCode::invalid_config, "axes");
  testing::expect_error([] { make_stage("lorenzo", {{"axes", 3}}); }, ErrorCode::invalid_config, "axes");
  EXPECT_FALSE(make_stage("lorenzo", {{"axes", "xyz"}})->params().contains("axes"));
  EXPECT_EQ(make_stage("lorenzo", {{"axes", "auto"}})->params()["axes"], "auto");
  const Dims d = Dims::make({70, 45});
  const std::vector<float> v = test_field(d, false);
  testing::expect_error(
      [&] {
        compress_on(Device::cpu, testing::fz_with_lorenzo({{"axes", "z"}}), v, d, 1e-3);
      },
      ErrorCode::invalid_argument, "no axis of a 2D field");
}

}  // namespace
}  // namespace fzg
