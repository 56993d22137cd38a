// Stage conformance: every registered stage, with a few parameter sets each, held to the
// stage contract of core/stage.hh on its own, outside any graph or executor:
//
//   - its parameters rebuild an identical stage through JSON;
//   - its spec is well formed and has ports this suite can drive;
//   - encode then decode gives the input back (bytes exactly; a predictor's field within the
//     bound its header resolves), and encoding is deterministic, whatever the CPU thread count;
//   - every output fits the size max_output_sizes promised before encode ran;
//   - the CUDA backend writes the CPU's bytes and decodes them back (skipped without a GPU);
//   - damaged outputs (truncated, extended, bits flipped) either throw corrupt_data or decode,
//     on the CPU and on the device, and never crash (CI runs this file under ASan too);
//   - each registered composite writes the bytes of its two stages run in turn.
//
// Adding a stage means adding a line to stage_cases(); ConformanceTable fails until one is.
// Stages whose inputs are bytes (or symbols) run over a byte corpus of awkward lengths and
// contents; stages that read the field (predictors) run over a field corpus of f32/f64 1D-3D
// fields with the hazards of test_util.hh.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.hh"
#include "core/registry.hh"
#include "fusions/composite.hh"
#include "test_util.hh"

namespace fzg {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// The stage table: one line per (stage type, parameters). Every registered stage needs at least
// one line (ConformanceTable.EveryRegisteredStageHasACase); give each parameter that changes
// the stream format a line per value worth covering.

struct StageCase {
  std::string type;
  json params;
};

std::vector<StageCase> stage_cases() {
  return {
      {"lorenzo", json::object()},
      {"lorenzo", {{"fill", {1e20, "nan"}}}},  // the fill_values hazard's land and the nan_inf hazard's NaNs
      {"bitshuffle", json::object()},
      {"zero-block", json::object()},  // the defaults, as a graph without "params" gets them
      {"zero-block", {{"block_words", 1}}},
      {"zero-block", {{"block_words", 2}}},
      {"zero-block", {{"block_words", 4}}},
      {"zero-block", {{"block_words", 8}}},
      {"gpulz", json::object()},
      {"gpulz", {{"chunk", 256}, {"window", 255}, {"symbol", "1"}}},
      {"gpulz", {{"chunk", 2048}, {"window", 32}, {"symbol", "4"}, {"min_match", 3}}},
      {"gpulz", {{"chunk", 1024}, {"window", 128}, {"symbol", "auto"}}},
      {"gpulz", {{"offset_bits", 11}}},  // wide chunks
      {"gpulz", {{"chunk", 4096}, {"window", 1}, {"symbol", "auto"}, {"offset_bits", 11}}},
      {"huffman", json::object()},
      {"huffman", {{"symbol", 1}, {"chunk", 1024}, {"max_length", 8}}},
      {"huffman", {{"symbol", 2}, {"chunk", 4096}, {"max_length", 14}}},
  };
}

// A gtest-safe name: "zero_block_block_words_4", "lorenzo_defaults".
std::string case_name(const StageCase& c) {
  std::string name = c.type;
  if (c.params.empty()) name += "_defaults";
  for (const auto& item : c.params.items()) name += "_" + item.key() + "_" + item.value().dump();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

void PrintTo(const StageCase& c, std::ostream* os) { *os << c.type << " " << c.params.dump(); }

// ---------------------------------------------------------------------------------------------
// Samples: one encode call's worth of context and input for a given stage.

struct Sample {
  std::string name;
  DType dtype = DType::u8;
  Dims dims;
  std::vector<uint8_t> header;              // made by the stage under test (empty when it has none)
  std::vector<std::vector<uint8_t>> inputs;  // one per input port, host bytes
  bool damaged = true;                       // also run by the damage tests (a subset keeps them quick)
};

// The stage sees the sample as one whole-field chunk, as a single-chunk file would show it.
// The context points at sample.header: samples live in a vector that is never resized once
// built, so the pointer stays valid.
StageContext context_of(const Sample& s, Device device, cudaStream_t stream = nullptr) {
  StageContext ctx;
  ctx.device = device;
  ctx.stream = stream;
  ctx.dtype = s.dtype;
  ctx.field_dims = s.dims;
  ctx.dims = s.dims;
  ctx.header = &s.header;
  return ctx;
}

// How the suite feeds a stage: the field (a predictor) or streams of bytes/symbols.
enum class Drive { field, streams, unsupported };

Drive drive_of(const StageSpec& spec) {
  if (spec.inputs.size() == 1 && spec.inputs[0].type.kind == PortKind::field) return Drive::field;
  if (spec.inputs.empty()) return Drive::unsupported;
  for (const PortSpec& p : spec.inputs)
    if (p.type.kind == PortKind::field || p.type.width == 0) return Drive::unsupported;
  return Drive::streams;
}

// The byte corpus: lengths that are empty, tiny, odd, prime and not multiples of any word or
// tile, and contents from all-zero to incompressible, so each stage's padding, flag and raw
// paths all run.
struct ByteEntry {
  std::string name;
  std::vector<uint8_t> bytes;
  bool damaged = true;  // false where a smaller entry already covers its damage
};

std::vector<ByteEntry> byte_corpus() {
  std::mt19937_64 rng(20240611);
  auto uniform = [&](uint64_t n) {
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = uint8_t(rng());
    return v;
  };
  auto periodic = [](uint64_t n, uint64_t period) {
    std::vector<uint8_t> v(n);
    for (uint64_t i = 0; i < n; ++i) v[i] = uint8_t(0x30 + (i % period) * 7);
    return v;
  };
  // Mostly zero u32 words, one in `every` non-zero: what a bitshuffled smooth field looks like.
  auto sparse_words = [&](uint64_t n, uint64_t every) {
    std::vector<uint8_t> v(n, 0);
    for (uint64_t w = 0; 4 * w < n; ++w)
      if (rng() % every == 0) v[4 * w + rng() % std::min<uint64_t>(4, n - 4 * w)] = uint8_t(1 + rng() % 255);
    return v;
  };
  // Little-endian u16 sign-magnitude codes of small deltas: a predictor's typical output.
  auto small_codes = [&](uint64_t values) {
    std::vector<uint8_t> v(2 * values);
    for (uint64_t i = 0; i < values; ++i) {
      const uint16_t magnitude = uint16_t(rng() % 5), sign = uint16_t(magnitude && (rng() & 1));
      const uint16_t code = uint16_t(sign << 15 | magnitude);
      std::memcpy(&v[2 * i], &code, 2);
    }
    return v;
  };
  // Low-entropy random bytes: random, yet compressible by anything byte-oriented.
  auto low_entropy = [&](uint64_t n) {
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = uint8_t(rng() % 4);
    return v;
  };
  std::vector<ByteEntry> corpus = {
      {"empty", {}},
      {"one_byte", {0xA5}},
      {"one_zero_byte", {0x00}},
      {"three_bytes", {0x01, 0x00, 0xFF}},
      {"random_127", uniform(127)},
      {"zeros_4099", std::vector<uint8_t>(4099, 0)},
      {"low_entropy_4099", low_entropy(4099)},
      {"period_5_4099", periodic(4099, 5)},
      {"sparse_4099", sparse_words(4099, 16)},
      {"codes_8192", small_codes(4096)},
      {"zeros_65537", std::vector<uint8_t>(65537, 0), false},  // damage as zeros_4099's
      {"period_3_65537", periodic(65537, 3), false},             // damage as period_5_4099's
      {"incompressible_65537", uniform(65537)},
      {"sparse_65537", sparse_words(65537, 64)},
  };
  // Non-zero only in the last, partial word: the zero padding of a ragged end must not
  // swallow it.
  std::vector<uint8_t> tail(131, 0);
  tail.back() = 0x80;
  corpus.push_back({"last_byte_only_131", tail});
  return corpus;
}

// The field corpus: small odd shapes of every rank (partial tiles everywhere) with each hazard.
struct FieldShape {
  std::string name;
  std::vector<uint64_t> dims;
};

const std::vector<FieldShape>& field_shapes() {
  static const std::vector<FieldShape> shapes = {{"1", {1}},         {"7", {7}},         {"4099", {4099}},
                                                 {"31x33", {31, 33}}, {"67x3", {67, 3}},  {"5x7x11", {5, 7, 11}},
                                                 {"33x9x9", {33, 9, 9}}};
  return shapes;
}

const std::vector<testing::Hazard>& field_hazards() {
  using testing::Hazard;
  static const std::vector<Hazard> hazards = {Hazard::smooth,   Hazard::noise,    Hazard::nan_inf,   Hazard::denormals,
                                              Hazard::spikes,   Hazard::constant, Hazard::near_1000, Hazard::steps,
                                              Hazard::fill_values, Hazard::zeros};
  return hazards;
}

// Hazards that give a predictor outliers (escapes and exact values), so that damage reaches a
// non-trivial outlier stream; the others only exercise the code stream's checks.
bool has_outliers(testing::Hazard h) {
  using testing::Hazard;
  return h == Hazard::nan_inf || h == Hazard::spikes || h == Hazard::fill_values || h == Hazard::steps;
}

template <typename T>
std::vector<uint8_t> field_bytes(testing::Hazard h, uint64_t n, uint64_t seed) {
  const std::vector<T> values = testing::make_values<T>(h, n, seed);
  std::vector<uint8_t> bytes(n * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// The samples a stage runs over. The header is the stage's own, made as the executor makes it:
// from the whole field's finite range where the stage asks for it, at rel 1e-3.
std::vector<Sample> samples_for(const Stage& stage) {
  const StageSpec& spec = stage.spec();
  std::vector<Sample> samples;
  switch (drive_of(spec)) {
    case Drive::field: {
      uint64_t seed = 1;
      for (DType t : {DType::f32, DType::f64})
        for (const FieldShape& shape : field_shapes())
          for (testing::Hazard h : field_hazards()) {
            Sample s;
            s.name = to_string(t) + "_" + shape.name + "_" + testing::to_string(h);
            s.dtype = t;
            s.dims = Dims::make(shape.dims);
            const uint64_t n = s.dims.count();
            s.inputs = {t == DType::f32 ? field_bytes<float>(h, n, seed) : field_bytes<double>(h, n, seed)};
            ++seed;
            FieldSummary summary;
            summary.bound = {ErrorMode::rel, 1e-3};
            const MissingValues missing = stage.missing_values(t);
            if (spec.needs_value_range) finite_range(s.inputs[0].data(), t, n, &summary.min, &summary.max, &missing);
            s.header = stage.make_header(context_of(s, Device::cpu), summary);
            s.damaged = has_outliers(h) && n > 1;
            samples.push_back(std::move(s));
          }
      break;
    }
    case Drive::streams: {
      for (const ByteEntry& e : byte_corpus()) {
        Sample s;
        s.name = e.name;
        s.damaged = e.damaged;
        // A bytes stage does not read the field's type or shape; give it a plausible one.
        s.dtype = DType::u8;
        s.dims = Dims::make({std::max<uint64_t>(e.bytes.size(), 1)});
        for (size_t p = 0; p < spec.inputs.size(); ++p) {
          // Ports past the first get the entry rotated, so that no two ports hold equal bytes;
          // symbols ports get whole symbols.
          std::vector<uint8_t> bytes = e.bytes;
          if (!bytes.empty()) std::rotate(bytes.begin(), bytes.begin() + (p * 17) % bytes.size(), bytes.end());
          bytes.resize(bytes.size() / spec.inputs[p].type.width * spec.inputs[p].type.width);
          s.inputs.push_back(std::move(bytes));
        }
        s.header = stage.make_header(context_of(s, Device::cpu), FieldSummary{});
        samples.push_back(std::move(s));
      }
      break;
    }
    case Drive::unsupported: break;
  }
  return samples;
}

// ---------------------------------------------------------------------------------------------
// Buffers and the executor's calling conventions.

// A host buffer of exactly these bytes: its own allocation, so ASan sees any read past its end
// (a shrunk or sliced buffer would hide one inside the larger allocation).
Buffer host_copy(const std::vector<uint8_t>& bytes) {
  Buffer b = Buffer::host(bytes.size());
  if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
  return b;
}

std::vector<uint8_t> bytes_of(const Buffer& b, cudaStream_t stream = nullptr) {
  const Buffer host = to_host(b, stream);
  return std::vector<uint8_t>(host.data(), host.data() + host.size());
}

std::vector<Buffer> inputs_of(const Sample& s, Device device, cudaStream_t stream = nullptr) {
  std::vector<Buffer> inputs;
  for (const auto& bytes : s.inputs) {
    Buffer b = host_copy(bytes);
    inputs.push_back(device == Device::cuda ? to_device(b, stream) : b);
  }
  return inputs;
}

std::vector<uint64_t> input_sizes_of(const Sample& s) {
  std::vector<uint64_t> sizes;
  for (const auto& bytes : s.inputs) sizes.push_back(bytes.size());
  return sizes;
}

// Decodes as the executor's decode_chunk does: outputs larger than their bound are rejected
// before the stage sees them, check_outputs runs before anything is allocated from the
// recorded sizes, then decode fills inputs allocated at those sizes where the stage computes.
std::vector<Buffer> decode_like_executor(const Stage& stage, const StageContext& ctx, const std::vector<Buffer>& outputs,
                                         const std::vector<uint64_t>& input_sizes, const std::vector<uint64_t>& bounds) {
  for (size_t p = 0; p < outputs.size(); ++p)
    require_data(outputs[p].size() <= bounds.at(p), "stream larger than its bound");
  stage.check_outputs(ctx, outputs, input_sizes);
  std::vector<Buffer> inputs;
  for (uint64_t size : input_sizes)
    inputs.push_back(ctx.device == Device::cuda ? Buffer::device(size, ctx.stream) : Buffer::host(size));
  stage.decode(ctx, outputs, inputs);
  synchronize(ctx.stream);
  return inputs;
}

// "" when `decoded` is an acceptable reconstruction of input port `port` of the sample: the
// same bytes, or for a predictor's field every finite point within the header's bound, NaN
// still NaN and inf still the same inf.
template <typename T>
uint64_t violations_of(const std::vector<uint8_t>& original, const std::vector<uint8_t>& decoded, double bound) {
  const uint64_t n = original.size() / sizeof(T);
  std::vector<T> a(n), b(n);
  std::memcpy(a.data(), original.data(), n * sizeof(T));
  std::memcpy(b.data(), decoded.data(), n * sizeof(T));
  return testing::count_violations(a.data(), b.data(), n, bound);
}

std::string reconstruction_error(const Stage& stage, const Sample& s, size_t port, const std::vector<uint8_t>& decoded) {
  const std::vector<uint8_t>& original = s.inputs[port];
  if (decoded.size() != original.size())
    return "decoded " + std::to_string(decoded.size()) + " bytes, expected " + std::to_string(original.size());
  if (stage.spec().predictor) {
    const double bound = stage.quantization(s.header).error_bound;
    const uint64_t bad = s.dtype == DType::f32 ? violations_of<float>(original, decoded, bound)
                                               : violations_of<double>(original, decoded, bound);
    return bad ? std::to_string(bad) + " points outside the bound " + std::to_string(bound) : "";
  }
  for (size_t i = 0; i < original.size(); ++i)
    if (decoded[i] != original[i]) return "first differing byte at " + std::to_string(i);
  return "";
}

// ---------------------------------------------------------------------------------------------
// Damage: truncations, extensions and bit flips of one output at a time.

// The lengths a truncation test tries: all of them for short outputs, else ~64 spread over the
// output with the edges (empty, one byte short, one word short) always included.
std::vector<uint64_t> truncation_lengths(uint64_t size, size_t spread) {
  std::set<uint64_t> lengths;
  if (size <= 256) {
    for (uint64_t n = 0; n < size; ++n) lengths.insert(n);
  } else {
    for (uint64_t n : {uint64_t(0), uint64_t(1), uint64_t(3), uint64_t(4), uint64_t(16), size / 2, size - 8,
                       size - 4, size - 3, size - 1})
      lengths.insert(n);
    for (size_t i = 0; lengths.size() < spread && i < spread; ++i) lengths.insert(size * i / spread);
  }
  return {lengths.begin(), lengths.end()};
}

// Calls visit(what, damaged_bytes) for each damaged variant of one output: truncations, a few
// bytes appended (a stream may not claim more than it holds, nor hold more than it claims),
// and random single-bit flips. One variant at a time: a 64 KiB output has hundreds.
void for_each_damage(const std::vector<uint8_t>& output, size_t truncations, size_t flips, std::mt19937_64& rng,
                     const std::function<void(const std::string&, const std::vector<uint8_t>&)>& visit) {
  const uint64_t size = output.size();
  for (uint64_t n : truncation_lengths(size, truncations))
    visit("truncated to " + std::to_string(n) + " of " + std::to_string(size) + " bytes",
          std::vector<uint8_t>(output.begin(), output.begin() + n));
  for (uint64_t extra : {1, 4, 8}) {
    std::vector<uint8_t> longer = output;
    longer.resize(size + extra, uint8_t(extra == 4 ? 0 : 0xFF));
    visit("extended by " + std::to_string(extra) + " bytes", longer);
  }
  std::vector<uint8_t> flipped = output;
  for (size_t i = 0; i < flips && size > 0; ++i) {
    const uint64_t byte = rng() % size;
    const int bit = int(rng() % 8);
    flipped[byte] ^= uint8_t(1u << bit);
    visit("bit " + std::to_string(bit) + " of byte " + std::to_string(byte) + " flipped", flipped);
    flipped[byte] ^= uint8_t(1u << bit);
  }
}

// Runs every damaged variant of every output of every damage sample through
// decode_like_executor on `device`: each must throw fzg::Error(corrupt_data) or return. A
// flip may give a valid different stream (a raw-copied byte, a code), so a result that
// differs from the input is no failure. On the device each must also meet the CPU's verdict:
// rejected there too, or decoded there to the same bytes.
void expect_damage_rejected_or_decoded(const Stage& stage, const std::vector<Sample>& samples, Device device,
                                       size_t truncations, size_t flips) {
  // Tens of thousands of small decodes, each an OpenMP parallel region: under ctest -j on two
  // cores every region can wait a scheduler slice for a descheduled worker (measured here with
  // other builds running: 140 s for this suite under ASan, 10 s with one thread). The checks that damage reaches are serial code, so one thread
  // loses nothing here; thread counts are exercised by EncodingIgnoresTheThreadCount.
  const testing::OpenMPThreads serial(1);
  std::mt19937_64 rng(99);
  size_t runs = 0, rejected = 0, failures = 0;
  for (const Sample& s : samples) {
    if (!s.damaged) continue;
    const StageContext cpu = context_of(s, Device::cpu);
    const StageContext ctx = context_of(s, device);
    const std::vector<uint64_t> input_sizes = input_sizes_of(s);
    const std::vector<uint64_t> bounds = stage.max_output_sizes(cpu, input_sizes);
    // The intact outputs, encoded on the CPU: the device decodes the same bytes.
    std::vector<std::vector<uint8_t>> outputs;
    for (const Buffer& b : stage.encode(cpu, inputs_of(s, Device::cpu))) outputs.push_back(bytes_of(b));
    for (size_t port = 0; port < outputs.size(); ++port)
      for_each_damage(outputs[port], truncations, flips, rng, [&](const std::string& what, const std::vector<uint8_t>& bytes) {
        std::vector<Buffer> damaged;
        for (size_t p = 0; p < outputs.size(); ++p) {
          Buffer b = host_copy(p == port ? bytes : outputs[p]);
          damaged.push_back(device == Device::cuda ? to_device(b, nullptr) : b);
        }
        ++runs;
        std::string failure;
        bool decoded = false;
        std::vector<std::vector<uint8_t>> inputs;
        try {
          for (const Buffer& b : decode_like_executor(stage, ctx, damaged, input_sizes, bounds))
            inputs.push_back(bytes_of(b));
          decoded = true;
        } catch (const Error& e) {
          if (e.code() == ErrorCode::corrupt_data) ++rejected;
          else failure = std::string("threw fzg::Error(") + to_string(e.code()) + "): " + e.what();
        } catch (const std::exception& e) {
          failure = std::string("threw a non-fzg exception: ") + e.what();
        }
        // The device decides as the CPU does (its checks run on the device and come back at
        // the end), and what both decode is the same.
        if (failure.empty() && device == Device::cuda) {
          std::vector<Buffer> on_host;
          for (size_t p = 0; p < outputs.size(); ++p) on_host.push_back(host_copy(p == port ? bytes : outputs[p]));
          std::vector<std::vector<uint8_t>> expected;
          bool cpu_decoded = false;
          try {
            for (const Buffer& b : decode_like_executor(stage, cpu, on_host, input_sizes, bounds))
              expected.push_back(bytes_of(b));
            cpu_decoded = true;
          } catch (const Error&) {
          }
          if (cpu_decoded != decoded)
            failure = std::string(decoded ? "decoded" : "was rejected") + " on the device, not on the CPU";
          else if (inputs != expected)
            failure = "decoded to other bytes than on the CPU";
        }
        if (!failure.empty() && ++failures <= 10)
          ADD_FAILURE() << s.name << ", output '" << stage.spec().outputs[port].name << "' " << what << ": "
                        << failure;
      });
  }
  EXPECT_EQ(failures, 0u) << "of " << runs << " damaged decodes";
  ::testing::Test::RecordProperty("damaged_decodes", int(runs));
  ::testing::Test::RecordProperty("rejected_as_corrupt", int(rejected));
}

// ---------------------------------------------------------------------------------------------
// The table's own checks.

TEST(ConformanceTable, EveryRegisteredStageHasACase) {
  std::set<std::string> listed;
  for (const StageCase& c : stage_cases()) listed.insert(c.type);
  for (const std::string& type : stage_types())
    EXPECT_TRUE(listed.count(type)) << "stage '" << type
                                    << "' is registered but has no line in stage_cases() (tests/conformance_test.cc)";
}

TEST(ConformanceTable, EveryCaseBuildsARegisteredStageUnderAUniqueName) {
  const std::vector<std::string> types = stage_types();
  std::set<std::string> names;
  for (const StageCase& c : stage_cases()) {
    EXPECT_NE(std::find(types.begin(), types.end(), c.type), types.end()) << "'" << c.type << "' is not registered";
    EXPECT_NO_THROW(make_stage(c.type, c.params)) << c.type << " " << c.params.dump();
    EXPECT_TRUE(names.insert(case_name(c)).second) << "two cases named " << case_name(c);
  }
}

// ---------------------------------------------------------------------------------------------
// The contract, per stage case.

// Each case's stage and samples, built once per process: the corpus and the headers cost about
// a second per test in a Debug ASan build, and every test of a case reads the same ones. A
// stage is const and shared by all its callers anyway (as a graph shares it).
struct CaseUnderTest {
  std::unique_ptr<Stage> stage;
  std::vector<Sample> samples;  // built on first use; never resized after (contexts point in)
  bool sampled = false;
};

CaseUnderTest& case_under_test(const StageCase& c) {
  static std::map<std::string, std::unique_ptr<CaseUnderTest>> cache;
  std::unique_ptr<CaseUnderTest>& slot = cache[case_name(c)];
  if (!slot) {
    slot = std::make_unique<CaseUnderTest>();
    slot->stage = make_stage(c.type, c.params);
  }
  return *slot;
}

class StageContract : public ::testing::TestWithParam<StageCase> {
 protected:
  const Stage& stage() const { return *case_under_test(GetParam()).stage; }
  const std::vector<Sample>& samples() const {
    CaseUnderTest& c = case_under_test(GetParam());
    if (!c.sampled) c.samples = samples_for(*c.stage), c.sampled = true;
    return c.samples;
  }
};

// params() is complete: a file's graph stores it as JSON text and rebuilds the stage from it.
TEST_P(StageContract, ParamsRoundTripThroughJson) {
  const json params = stage().params();
  ASSERT_TRUE(params.is_object()) << params.dump();
  const json reread = json::parse(params.dump());
  const std::unique_ptr<Stage> rebuilt = make_stage(GetParam().type, reread);
  EXPECT_EQ(rebuilt->params(), params);
  EXPECT_EQ(rebuilt->spec().type, stage().spec().type);
  EXPECT_EQ(rebuilt->fusion_role(), stage().fusion_role());
  // Given parameters come back as given (defaults filled in beside them, never changed).
  for (const auto& item : GetParam().params.items())
    EXPECT_EQ(params.value(item.key(), json()), item.value()) << item.key();
}

// The spec is consistent with itself and this suite can feed the stage (a new kind of port
// needs a new corpus here, not a silently skipped stage).
TEST_P(StageContract, SpecIsWellFormedAndDrivable) {
  const StageSpec& spec = stage().spec();
  EXPECT_EQ(spec.type, GetParam().type);
  EXPECT_FALSE(spec.inputs.empty());
  EXPECT_FALSE(spec.outputs.empty());
  std::set<std::string> names;
  for (const auto& p : spec.inputs) EXPECT_TRUE(names.insert("in:" + p.name).second) << "input " << p.name;
  for (const auto& p : spec.outputs) {
    EXPECT_TRUE(names.insert("out:" + p.name).second) << "output " << p.name;
    EXPECT_NE(p.type.kind, PortKind::field) << "output " << p.name << ": only the graph input is a field";
  }
  if (spec.predictor) {
    EXPECT_EQ(drive_of(spec), Drive::field) << "a predictor reads the field";
  }
  if (spec.stores_raw_when_larger) {
    EXPECT_GE(spec.outputs.size(), spec.inputs.size()) << "raw outputs hold the inputs";
  }
  ASSERT_NE(drive_of(spec), Drive::unsupported) << "no corpus in conformance_test.cc fits these input ports";
  EXPECT_FALSE(samples().empty());
}

// encode then decode (into inputs allocated at the sizes encode saw) gives the input back, and
// two encodes of one input give the same bytes (encoders get uninitialized buffers; a byte
// left unwritten would make files differ from run to run).
TEST_P(StageContract, RoundTrip) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.name);
    const StageContext ctx = context_of(s, Device::cpu);
    const std::vector<Buffer> outputs = stage().encode(ctx, inputs_of(s, Device::cpu));
    ASSERT_EQ(outputs.size(), stage().spec().outputs.size());
    for (const Buffer& b : outputs) EXPECT_FALSE(b.on_device());
    const std::vector<Buffer> again = stage().encode(ctx, inputs_of(s, Device::cpu));
    for (size_t p = 0; p < outputs.size(); ++p)
      EXPECT_EQ(bytes_of(outputs[p]), bytes_of(again[p])) << "output " << stage().spec().outputs[p].name;
    const std::vector<uint64_t> sizes = input_sizes_of(s);
    const std::vector<Buffer> decoded =
        decode_like_executor(stage(), ctx, outputs, sizes, stage().max_output_sizes(ctx, sizes));
    ASSERT_EQ(decoded.size(), s.inputs.size());
    for (size_t p = 0; p < decoded.size(); ++p)
      EXPECT_EQ(reconstruction_error(stage(), s, p, bytes_of(decoded[p])), "") << "input " << stage().spec().inputs[p].name;
  }
}

// The CPU backend splits its work among OpenMP threads (the Lorenzo encoder gathers outliers
// per thread, for one): the stream must be a function of the input alone, not of the machine's
// core count. One and three threads against the default.
TEST_P(StageContract, EncodingIgnoresTheThreadCount) {
  if (!testing::OpenMPThreads::available()) GTEST_SKIP() << "no OpenMP runtime linked";
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.name);
    const StageContext ctx = context_of(s, Device::cpu);
    std::vector<std::vector<uint8_t>> expected;
    for (const Buffer& b : stage().encode(ctx, inputs_of(s, Device::cpu))) expected.push_back(bytes_of(b));
    for (int threads : {1, 3}) {
      const testing::OpenMPThreads scope(threads);
      const std::vector<Buffer> outputs = stage().encode(ctx, inputs_of(s, Device::cpu));
      ASSERT_EQ(outputs.size(), expected.size());
      for (size_t p = 0; p < outputs.size(); ++p)
        EXPECT_EQ(bytes_of(outputs[p]), expected[p]) << threads << " threads, output " << stage().spec().outputs[p].name;
    }
  }
}

// Every output fits the size promised before encode ran: the executor allocates and checks
// files against these bounds.
TEST_P(StageContract, OutputSizesWithinMaxOutputSizes) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.name);
    const StageContext ctx = context_of(s, Device::cpu);
    const std::vector<uint64_t> bounds = stage().max_output_sizes(ctx, input_sizes_of(s));
    const std::vector<Buffer> outputs = stage().encode(ctx, inputs_of(s, Device::cpu));
    ASSERT_EQ(bounds.size(), stage().spec().outputs.size());
    ASSERT_EQ(outputs.size(), bounds.size());
    for (size_t p = 0; p < outputs.size(); ++p)
      EXPECT_LE(outputs[p].size(), bounds[p]) << "output " << stage().spec().outputs[p].name;
  }
}

// The CUDA backend writes the CPU's bytes, keeps its outputs on the device, and decodes them
// back to the CPU's reconstruction.
TEST_P(StageContract, CudaMatchesCpuBytes) {
  FZG_REQUIRE_GPU();
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.name);
    const StageContext cpu = context_of(s, Device::cpu), gpu = context_of(s, Device::cuda);
    const std::vector<uint64_t> sizes = input_sizes_of(s);
    const std::vector<uint64_t> bounds = stage().max_output_sizes(cpu, sizes);
    const std::vector<Buffer> expected = stage().encode(cpu, inputs_of(s, Device::cpu));
    const std::vector<Buffer> outputs = stage().encode(gpu, inputs_of(s, Device::cuda));
    synchronize(nullptr);
    ASSERT_EQ(outputs.size(), expected.size());
    for (size_t p = 0; p < outputs.size(); ++p) {
      EXPECT_TRUE(outputs[p].size() == 0 || outputs[p].on_device()) << "output " << p << " left on the host";
      EXPECT_EQ(bytes_of(outputs[p]), bytes_of(expected[p])) << "output " << stage().spec().outputs[p].name;
    }
    const std::vector<Buffer> on_cpu = decode_like_executor(stage(), cpu, expected, sizes, bounds);
    const std::vector<Buffer> on_gpu = decode_like_executor(stage(), gpu, outputs, sizes, bounds);
    for (size_t p = 0; p < on_gpu.size(); ++p) {
      const std::vector<uint8_t> decoded = bytes_of(on_gpu[p]);
      EXPECT_EQ(reconstruction_error(stage(), s, p, decoded), "") << "input " << p << " decoded on the device";
      EXPECT_EQ(decoded, bytes_of(on_cpu[p])) << "input " << p << ": the backends reconstruct differently";
    }
  }
}

// Damaged outputs throw corrupt_data or decode; never another error, never a crash. Every
// truncation of short outputs (~64 of long ones) and 200 bit flips per output.
TEST_P(StageContract, DamagedOutputsAreRejectedOrDecoded) {
  expect_damage_rejected_or_decoded(stage(), samples(), Device::cpu, 64, 200);
}

// The same on the device, fewer per output: each decode there synchronizes, and a stray
// access would surface as a CUDA error rather than a crash.
TEST_P(StageContract, DamagedOutputsAreRejectedOrDecodedOnTheDevice) {
  FZG_REQUIRE_GPU();
  expect_damage_rejected_or_decoded(stage(), samples(), Device::cuda, 16, 32);
}

INSTANTIATE_TEST_SUITE_P(Conformance, StageContract, ::testing::ValuesIn(stage_cases()),
                         [](const auto& info) { return case_name(info.param); });

// ---------------------------------------------------------------------------------------------
// Composites: wherever two listed stages' fusion roles meet a composite on the device, it
// writes the bytes of the two stages run in turn on the CPU and decodes them back, with the
// second stage's check_outputs first, as decode_chunk runs it.

TEST(ConformanceComposites, EachMatchesItsTwoStagesRunInTurn) {
  FZG_REQUIRE_GPU();
  size_t pairs = 0;
  for (const StageCase& a : stage_cases())
    for (const StageCase& b : stage_cases()) {
      const auto first = make_stage(a.type, a.params), second = make_stage(b.type, b.params);
      const Composite* composite = find_composite(first->fusion_role(), second->fusion_role(), Device::cuda);
      if (!composite) continue;
      ++pairs;
      SCOPED_TRACE(std::string(composite->name()) + ": " + case_name(a) + " -> " + case_name(b));
      // A composite joins the first stage's only output to the second's only input.
      ASSERT_EQ(first->spec().inputs.size(), 1u);
      ASSERT_EQ(first->spec().outputs.size(), 1u);
      ASSERT_EQ(second->spec().inputs.size(), 1u);
      ASSERT_EQ(second->spec().outputs.size(), 1u);
      ASSERT_TRUE(accepts(second->spec().inputs[0].type, first->spec().outputs[0].type));
      for (const Sample& s : samples_for(*first)) {
        SCOPED_TRACE(s.name);
        const StageContext cpu = context_of(s, Device::cpu), gpu = context_of(s, Device::cuda);
        const Buffer middle = first->encode(cpu, inputs_of(s, Device::cpu)).at(0);
        EXPECT_EQ(composite->intermediate_size(s.inputs[0].size()), middle.size());
        const std::vector<Buffer> expected = second->encode(cpu, {middle});
        const Buffer encoded = composite->encode(gpu, to_device(host_copy(s.inputs[0]), nullptr));
        synchronize(nullptr);
        EXPECT_EQ(bytes_of(encoded), bytes_of(expected.at(0)));
        second->check_outputs(gpu, {encoded}, {middle.size()});
        Buffer decoded = Buffer::device(s.inputs[0].size(), nullptr);
        composite->decode(gpu, encoded, decoded);
        synchronize(nullptr);
        EXPECT_EQ(bytes_of(decoded), s.inputs[0]);
      }
    }
  if (pairs == 0) GTEST_SKIP() << "no composite joins two listed stages on this build";
}

}  // namespace
}  // namespace fzg
