// Helpers shared by the tests: fields with known hazards, the bound check (in double, no
// slack), and the list of round-trip cases that both backends must agree on.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/fzg.hh"
#include "core/stage.hh"
#include "tools/metrics.hh"
#include "tools/synth.hh"

// The OpenMP runtime the library links, reached without compiling this file with -fopenmp:
// weak, so both are null in a build where no runtime is linked in (the tests that need them
// then skip or run with the default thread count). The signatures are omp.h's.
extern "C" void omp_set_num_threads(int) noexcept __attribute__((weak));
extern "C" int omp_get_max_threads() noexcept __attribute__((weak));

// The device tests' guard: false in builds without CUDA and on machines without a device, so
// those tests skip rather than fail there.
#define FZG_REQUIRE_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device"

namespace fzg::testing {

// The CPU backend's OpenMP thread count for the calling thread, restored on scope exit (also when
// an assertion returns early), so that later tests in the same process see the default.
class OpenMPThreads {
 public:
  static bool available() { return omp_set_num_threads != nullptr && omp_get_max_threads != nullptr; }
  explicit OpenMPThreads(int threads) {
    if (!available()) return;
    previous_ = omp_get_max_threads();
    omp_set_num_threads(threads);
  }
  ~OpenMPThreads() {
    if (available()) omp_set_num_threads(previous_);
  }
  OpenMPThreads(const OpenMPThreads&) = delete;
  OpenMPThreads& operator=(const OpenMPThreads&) = delete;

 private:
  int previous_ = 1;
};

// Raw bytes of a field of type T.
template <typename T>
Buffer host_buffer(const std::vector<T>& values) {
  Buffer b = Buffer::host(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(b.data(), values.data(), b.size());
  return b;
}

// `call` must throw fzg's Error with `code` and a message that names `fragment`.
template <typename Call>
void expect_error(Call call, ErrorCode code, const std::string& fragment) {
  try {
    call();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// A buffer's bytes, wherever it lives.
inline std::vector<uint8_t> bytes_of(const Buffer& b) {
  const Buffer host = b.location() == Location::device ? to_host(b, nullptr) : b;
  return std::vector<uint8_t>(host.data(), host.data() + host.size());
}

// A byte coder (one input port, one output port) on its own, through the stage contract:
// encodes on the CPU within the declared bound and decodes back exactly; with a device, the
// GPU writes the same bytes and decodes them back too. Returns the stream.
inline std::vector<uint8_t> byte_stage_round_trip(const Stage& stage, const std::vector<uint8_t>& input) {
  StageContext ctx;
  ctx.dtype = DType::u8;
  ctx.field_dims = ctx.dims = Dims::make({std::max<uint64_t>(1, input.size())});
  const Buffer in = host_buffer(input);
  const std::vector<Buffer> encoded = stage.encode(ctx, {in});
  EXPECT_LE(encoded.at(0).size(), stage.max_output_sizes(ctx, {in.size()}).at(0));
  std::vector<Buffer> back{Buffer::host(input.size())};
  stage.decode(ctx, encoded, back);
  EXPECT_EQ(bytes_of(back[0]), input);
  const std::vector<uint8_t> stream = bytes_of(encoded[0]);
  if (cuda_available()) {
    ctx.device = Device::cuda;
    const std::vector<Buffer> on_device = stage.encode(ctx, {to_device(in, nullptr)});
    EXPECT_EQ(bytes_of(on_device.at(0)), stream) << "CPU and GPU streams differ";
    std::vector<Buffer> device_back{Buffer::device(input.size(), nullptr)};
    stage.decode(ctx, on_device, device_back);
    EXPECT_EQ(bytes_of(device_back[0]), input) << "GPU decode";
  }
  return stream;
}

enum class Hazard { smooth, noise, nan_inf, denormals, spikes, constant, near_1000, steps, fill_values, zeros };

inline std::string to_string(Hazard h) {
  switch (h) {
    case Hazard::smooth: return "smooth";
    case Hazard::noise: return "noise";
    case Hazard::nan_inf: return "nan_inf";
    case Hazard::denormals: return "denormals";
    case Hazard::spikes: return "spikes";
    case Hazard::constant: return "constant";
    case Hazard::near_1000: return "near_1000";
    case Hazard::steps: return "steps";
    case Hazard::fill_values: return "fill_values";
    case Hazard::zeros: return "zeros";
  }
  return "?";
}

// A field of n values of type T with the given hazard, deterministic for the seed.
template <typename T>
std::vector<T> make_values(Hazard h, uint64_t n, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<T> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    const double t = double(i);
    double x = 280.0 + 5.0 * std::sin(t * 0.01) + 2.0 * std::cos(t * 0.037);
    switch (h) {
      case Hazard::smooth: break;
      case Hazard::noise: x = unit(rng) * 100.0 - 50.0; break;
      case Hazard::nan_inf: {
        const double r = unit(rng);
        if (r < 0.03) x = std::numeric_limits<double>::quiet_NaN();
        else if (r < 0.05) x = std::numeric_limits<double>::infinity();
        else if (r < 0.07) x = -std::numeric_limits<double>::infinity();
        break;
      }
      case Hazard::denormals:
        x = (unit(rng) - 0.5) * double(std::numeric_limits<T>::denorm_min()) * 1000.0;
        if (i % 5 == 0) x = 1.0;
        break;
      case Hazard::spikes: if (i % 97 == 3) x = (i % 2 ? 1e30 : -1e30); break;
      case Hazard::constant: x = 3.7; break;
      case Hazard::near_1000: x = 1000.0 + (unit(rng) * 2.0 - 1.0); break;
      case Hazard::steps: x = (i / 37) % 2 ? 1e6 : -1e6; break;
      case Hazard::fill_values: if (unit(rng) < 0.3) x = 1e20; break;
      case Hazard::zeros: x = (i % 3 == 0) ? -0.0 : 0.0; break;
    }
    v[i] = T(x);
  }
  return v;
}

// Points over the bound (double arithmetic, no slack); NaN must stay NaN, Inf stay equal.
template <typename T>
uint64_t count_violations(const T* a, const T* b, uint64_t n, double bound) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const double x = double(a[i]), y = double(b[i]);
    if (std::isnan(x)) bad += !std::isnan(y);
    else if (std::isinf(x)) bad += !(x == y);
    else bad += !(std::fabs(x - y) <= bound);
  }
  return bad;
}

struct RoundTripCase {
  std::string name;
  DType dtype;
  std::vector<uint64_t> dims;
  Hazard hazard;
  ErrorBound bound;
};

inline std::vector<RoundTripCase> round_trip_cases() {
  std::vector<RoundTripCase> cases;
  const std::vector<std::vector<uint64_t>> shapes = {{1},         {7},           {1023},        {4099},     {2048 * 3 + 5},
                                                     {7, 3},      {31, 33},      {64, 65},      {1, 9, 1},  {33, 9, 9},
                                                     {5, 7, 11},  {32, 8, 8},    {67, 13, 17}};
  const std::vector<Hazard> hazards = {Hazard::smooth,   Hazard::noise,     Hazard::nan_inf,     Hazard::denormals,
                                       Hazard::spikes,   Hazard::constant,  Hazard::near_1000,   Hazard::steps,
                                       Hazard::fill_values, Hazard::zeros};
  const std::vector<ErrorBound> bounds = {{ErrorMode::abs, 1e-2}, {ErrorMode::rel, 1e-3}, {ErrorMode::rel, 1e-5},
                                          {ErrorMode::psnr, 60.0}};
  size_t k = 0;
  for (DType t : {DType::f32, DType::f64})
    for (const auto& shape : shapes)
      for (Hazard h : hazards) {
        // Every (shape, hazard) pair once, cycling through the bounds so all combinations appear.
        const ErrorBound b = bounds[k++ % bounds.size()];
        std::string name = to_string(t) + "_";
        for (size_t i = 0; i < shape.size(); ++i) name += (i ? "x" : "") + std::to_string(shape[i]);
        name += "_" + to_string(h) + "_" + fzg::to_string(b.mode) + std::to_string(int(std::log10(b.value) * 10));
        for (auto& c : name)
          if (c == '-' || c == '.') c = 'm';
        cases.push_back({name, t, shape, h, b});
      }
  return cases;
}

// Fields at the edge of the type's range, where x' = q*step can round past the largest finite
// value to inf: +-max as values and as fill values (a 360x180 SST-like field whose 3,600 land
// points hold it), and values uniform in [max/2, max].
struct ExtremeField {
  std::string name;
  std::vector<uint64_t> dims;
  Buffer bytes;
};

template <typename T>
std::vector<ExtremeField> extreme_fields() {
  const T largest = std::numeric_limits<T>::max();
  std::vector<ExtremeField> fields;
  fields.push_back({"max_and_lowest", {2}, host_buffer(std::vector<T>{largest, -largest})});
  for (const T fill : {largest, -largest}) {
    std::vector<T> sst(360 * 180);
    for (uint64_t y = 0; y < 180; ++y)
      for (uint64_t x = 0; x < 360; ++x) {
        const bool land = (x >= 100 && x < 160 && y >= 40 && y < 100);  // 60 x 60 = 3,600 points
        sst[x + 360 * y] = land ? fill : T(271.0 + 30.0 * std::cos((double(y) - 90.0) / 60.0) + 0.3 * std::sin(x * 0.05));
      }
    fields.push_back({fill > 0 ? "sst_land_at_max" : "sst_land_at_lowest", {360, 180}, host_buffer(sst)});
  }
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> upper(double(largest) / 2, double(largest));
  std::vector<T> top(4099);
  for (auto& v : top) v = T(upper(rng));
  top[17] = largest;
  fields.push_back({"upper_half_of_range", {4099}, host_buffer(top)});
  return fields;
}

// The bounds that once broke those fields: 81 rel bounds from 1e-1 to 1e-9, absolute bounds
// near the type's largest values, and PSNR targets.
inline std::vector<ErrorBound> extreme_bounds(DType type) {
  std::vector<ErrorBound> bounds;
  for (int k = 0; k <= 80; ++k) bounds.push_back({ErrorMode::rel, std::pow(10.0, -1.0 - k / 10.0)});
  const std::vector<double> absolute = type == DType::f32 ? std::vector<double>{1e35, 1e30, 1e37, 3e38}
                                                          : std::vector<double>{1e300, 1e305, 1e290, 1e307};
  for (double a : absolute) bounds.push_back({ErrorMode::abs, a});
  for (double p : {20.0, 60.0, 120.0}) bounds.push_back({ErrorMode::psnr, p});
  return bounds;
}

// The bound a request means for these values, computed apart from the library: a rel bound
// in long double, where the range of [-DBL_MAX, DBL_MAX] does not overflow.
template <typename T>
double requested_bound(const ErrorBound& b, const T* values, uint64_t n, double stored_bound) {
  if (b.mode == ErrorMode::abs) return b.value;
  if (b.mode != ErrorMode::rel) return stored_bound;
  long double lo = INFINITY, hi = -INFINITY;
  for (uint64_t i = 0; i < n; ++i)
    if (std::isfinite(values[i])) lo = std::min<long double>(lo, values[i]), hi = std::max<long double>(hi, values[i]);
  return double(b.value * (hi - lo));
}

// Points whose value was finite and came back as +-inf or NaN.
template <typename T>
uint64_t count_lost_finites(const T* a, const T* b, uint64_t n) {
  uint64_t lost = 0;
  for (uint64_t i = 0; i < n; ++i) lost += std::isfinite(a[i]) && !std::isfinite(b[i]);
  return lost;
}

// check(field, dims, bound) for every extreme field of T at every extreme bound, traced.
template <typename T, typename Check>
void for_each_extreme_case(DType type, Check check) {
  for (const ExtremeField& f : extreme_fields<T>())
    for (const ErrorBound& bound : extreme_bounds(type)) {
      SCOPED_TRACE(f.name + " " + fzg::to_string(bound.mode) + " " + std::to_string(bound.value));
      check(f, Dims::make(f.dims), bound);
    }
}

// The decoded field holds the bound the request means (computed apart from the library) at
// every point, and no finite value came back as +-inf or NaN.
template <typename T>
void expect_requested_bound_held(const ExtremeField& f, const ErrorBound& bound, const Decompressed& out) {
  ASSERT_EQ(out.data.size(), f.bytes.size());
  const uint64_t n = f.bytes.size() / sizeof(T);
  const T* in = f.bytes.as<T>();
  const double eb = requested_bound(bound, in, n, out.header.quant.error_bound);
  EXPECT_LE(out.header.quant.error_bound, std::nextafter(eb, INFINITY));  // the same product, maybe rounded apart
  EXPECT_EQ(count_lost_finites(in, out.data.as<T>(), n), 0u);
  EXPECT_EQ(count_violations(in, out.data.as<T>(), n, eb), 0u) << "bound " << eb;
}

// One graph, its stages shared, used by several threads at once: each thread's files and
// fields are those it gets alone (stages are const; each call's state is its own).
inline void expect_concurrent_calls_match_sequential(Device device) {
  const Graph graph = Graph::default_fz();
  const std::vector<Hazard> hazards = {Hazard::smooth, Hazard::noise, Hazard::nan_inf, Hazard::spikes,
                                       Hazard::near_1000, Hazard::steps, Hazard::fill_values, Hazard::denormals};
  const std::vector<std::vector<uint64_t>> shapes = {{67, 13, 17}, {300, 41}, {100003}, {33, 9, 9}};
  struct Work {
    Buffer field;
    FieldRef ref;
    Buffer file, decoded;
  };
  std::vector<Work> work(hazards.size());
  CompressOptions copt;
  copt.bound = {ErrorMode::rel, 1e-4};
  copt.device = device;
  DecompressOptions dopt;
  dopt.device = device;
  for (size_t i = 0; i < work.size(); ++i) {
    const Dims dims = Dims::make(shapes[i % shapes.size()]);
    work[i].field = i % 2 ? host_buffer(make_values<double>(hazards[i], dims.count(), i))
                          : host_buffer(make_values<float>(hazards[i], dims.count(), i));
    work[i].ref = {work[i].field.data(), Location::host, i % 2 ? DType::f64 : DType::f32, dims};
    work[i].file = compress(graph, work[i].ref, copt);
    work[i].decoded = decompress(work[i].file, dopt).data;
  }
  std::vector<std::string> failures(work.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < work.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        for (int round = 0; round < 4; ++round) {
          const Buffer file = compress(graph, work[i].ref, copt);
          const Buffer decoded = decompress(file, dopt).data;
          if (file.size() != work[i].file.size() || std::memcmp(file.data(), work[i].file.data(), file.size()) != 0)
            failures[i] = "file differs in round " + std::to_string(round);
          else if (std::memcmp(decoded.data(), work[i].decoded.data(), decoded.size()) != 0)
            failures[i] = "field differs in round " + std::to_string(round);
        }
      } catch (const std::exception& e) {
        failures[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < work.size(); ++i) EXPECT_EQ(failures[i], "") << "thread " << i << " (" << to_string(hazards[i]) << ")";
}

// The default graph with these Lorenzo parameters added (e.g. "span": "chunk", "axes": "auto").
inline Graph fz_with_lorenzo(const nlohmann::json& params) {
  nlohmann::json config = Graph::default_fz().to_json();
  for (auto& stage : config["stages"])
    if (stage["type"] == "lorenzo") stage["params"].update(params);
  return Graph::from_json(config);
}

// On a GPU (the caller checks there is one): `graph` compresses `field` there to `cpu_file`, the
// CPU's file with `options`, and each backend decodes the other's file to the same values.
inline void expect_the_gpu_writes_the_cpu_file(const Buffer& cpu_file, const Graph& graph, const FieldRef& field,
                                               CompressOptions options) {
  options.device = Device::cuda;
  const Buffer gpu_file = compress(graph, field, options);
  ASSERT_EQ(cpu_file.size(), gpu_file.size());
  EXPECT_EQ(std::memcmp(cpu_file.data(), gpu_file.data(), cpu_file.size()), 0);
  if (field.where == Location::host && field.size_bytes() > 0) {
    // From the field already on the device too: the range stays there and the predictor
    // resolves its quantization there (Stage::resolve_on_device), where a host field's range
    // is read back while it is uploaded.
    const Buffer resident =
        to_device(Buffer::view(const_cast<void*>(field.data), field.size_bytes(), Location::host), nullptr);
    FieldRef on_device = field;
    on_device.data = resident.data(), on_device.where = Location::device;
    const Buffer resident_file = compress(graph, on_device, options);
    ASSERT_EQ(cpu_file.size(), resident_file.size());
    EXPECT_EQ(std::memcmp(cpu_file.data(), resident_file.data(), cpu_file.size()), 0) << "from a device field";
    // And into a device file: streams copied, summed and the metadata finished on the device
    // (assemble_on_device), where a host file takes them back first.
    CompressOptions to_device_file = options;
    to_device_file.output = Location::device;
    const Buffer device_file = compress(graph, on_device, to_device_file);
    EXPECT_TRUE(device_file.on_device());
    EXPECT_EQ(bytes_of(device_file), bytes_of(cpu_file)) << "from a device field into a device file";
  }
  DecompressOptions cpu_decode, gpu_decode;
  gpu_decode.device = Device::cuda;
  const Decompressed a = decompress(gpu_file, cpu_decode);  // GPU file on the CPU
  const Decompressed b = decompress(cpu_file, gpu_decode);  // CPU file on the GPU
  ASSERT_EQ(a.data.size(), field.size_bytes());
  ASSERT_EQ(b.data.size(), field.size_bytes());
  EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0);
}

// The default graph with prediction across the whole chunk (lorenzo "span": "chunk").
inline Graph chunk_span_fz() { return fz_with_lorenzo({{"span", "chunk"}}); }

// The field bytes of a case.
inline Buffer case_field(const RoundTripCase& c) {
  Dims d = Dims::make(c.dims);
  return c.dtype == DType::f32 ? host_buffer(make_values<float>(c.hazard, d.count()))
                               : host_buffer(make_values<double>(c.hazard, d.count()));
}

// ../shared/datasets beside the repository, or $FZG_DATASETS (the device machine's copy).
inline std::string shared_datasets() {
  const char* override_dir = std::getenv("FZG_DATASETS");
  return override_dir ? override_dir : FZG_SHARED_DATASETS;
}
inline std::string source_dir() { return FZG_SOURCE_DIR; }

}  // namespace fzg::testing

namespace fzg::testing {
// Readable parameter names in gtest output instead of byte dumps.
inline void PrintTo(const RoundTripCase& c, std::ostream* os) { *os << c.name; }
}  // namespace fzg::testing
