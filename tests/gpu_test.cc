// The CUDA backend writes the CPU's bytes: every round-trip case compressed on both backends
// gives identical files, each decodes on the other, and the reconstructions are identical.
// Skipped cleanly where no CUDA device exists.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>

#include "bitshuffle/bitshuffle.hh"
#include "core/checksum.hh"
#include "core/container.hh"
#include "core/device_checks.hh"
#include "fusions/shuffle_pack/shuffle_pack.hh"
#include "lossless/zeroblock/zeroblock.hh"
#include "predictors/lorenzo/lorenzo.hh"
#include "test_util.hh"

#ifdef FZG_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace fzg {

namespace {

class GpuMatchesCpu : public ::testing::TestWithParam<testing::RoundTripCase> {};

void expect_identical_files_and_reconstructions(const Graph& graph, const testing::RoundTripCase& c) {
  const Buffer field_bytes = testing::case_field(c);
  const FieldRef field{field_bytes.data(), Location::host, c.dtype, Dims::make(c.dims)};
  CompressOptions on_cpu;
  on_cpu.bound = c.bound;
  testing::expect_the_gpu_writes_the_cpu_file(compress(graph, field, on_cpu), graph, field, on_cpu);
}

TEST_P(GpuMatchesCpu, IdenticalFilesAndReconstructions) {
  FZG_REQUIRE_GPU();
  expect_identical_files_and_reconstructions(Graph::default_fz(), GetParam());
}

// Prediction across the whole chunk: the GPU's bordered tiles read their neighbours' values,
// and its decode sums along each axis of the field.
TEST_P(GpuMatchesCpu, ChunkSpanIdenticalFilesAndReconstructions) {
  FZG_REQUIRE_GPU();
  expect_identical_files_and_reconstructions(testing::chunk_span_fz(), GetParam());
}

// With the axes chosen from the field: the GPU's sample counts the CPU's deltas, so both
// choose the same axes, and both code with them.
TEST_P(GpuMatchesCpu, AutoAxesIdenticalFilesAndReconstructions) {
  FZG_REQUIRE_GPU();
  expect_identical_files_and_reconstructions(testing::fz_with_lorenzo({{"axes", "auto"}}), GetParam());
  expect_identical_files_and_reconstructions(testing::fz_with_lorenzo({{"axes", "auto"}, {"span", "auto"}}),
                                             GetParam());
}

// Codes in tile order (lorenzo "code_order": "tile"): the GPU's tiles write and read their own
// runs of codes, as the CPU's.
TEST_P(GpuMatchesCpu, TileOrderIdenticalFilesAndReconstructions) {
  FZG_REQUIRE_GPU();
  expect_identical_files_and_reconstructions(testing::fz_with_lorenzo({{"code_order", "tile"}}), GetParam());
  expect_identical_files_and_reconstructions(testing::fz_with_lorenzo({{"code_order", "tile"}, {"axes", "auto"}}),
                                             GetParam());
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuMatchesCpu, ::testing::ValuesIn(testing::round_trip_cases()),
                         [](const auto& info) { return info.param.name; });

// A field of f32 subnormals at bounds of a few of their spacings: the device resolves the
// same acceptance threshold (FLT_MIN's binade) and writes the CPU's file.
TEST(Gpu, SubnormalFieldsWriteTheCpuFile) {
  FZG_REQUIRE_GPU();
  const Dims dims = Dims::make({33, 9, 9});
  std::vector<float> values(dims.count());
  for (uint64_t i = 0; i < dims.count(); ++i)
    values[i] = float((std::sin(0.05 * double(i)) + 0.5) * double(std::numeric_limits<float>::min()) * 0.1);
  for (double rel : {1e-3, 1e-5, 1e-6}) {
    SCOPED_TRACE(rel);
    const FieldRef field{values.data(), Location::host, DType::f32, dims};
    CompressOptions on_cpu;
    on_cpu.bound = {ErrorMode::rel, rel};
    testing::expect_the_gpu_writes_the_cpu_file(compress(Graph::default_fz(), field, on_cpu), Graph::default_fz(),
                                                field, on_cpu);
  }
}

// At the type's largest values the GPU writes the CPU's files too, and never turns a finite
// value into inf (q*step past FLT_MAX is an outlier on both backends).
template <typename T>
void expect_cpu_files_at_the_largest_values(DType type) {
  const Graph graph = Graph::default_fz();
  testing::for_each_extreme_case<T>(type, [&](const testing::ExtremeField& f, const Dims& dims, const ErrorBound& bound) {
    CompressOptions on_cpu, on_gpu;
    on_cpu.bound = on_gpu.bound = bound;
    on_gpu.device = Device::cuda;
    const FieldRef field{f.bytes.data(), Location::host, type, dims};
    const Buffer cpu_file = compress(graph, field, on_cpu);
    const Buffer gpu_file = compress(graph, field, on_gpu);
    ASSERT_EQ(cpu_file.size(), gpu_file.size());
    EXPECT_EQ(std::memcmp(cpu_file.data(), gpu_file.data(), cpu_file.size()), 0);
    DecompressOptions gpu_decode;
    gpu_decode.device = Device::cuda;
    testing::expect_requested_bound_held<T>(f, bound, decompress(gpu_file, gpu_decode));
  });
}

TEST(Gpu, ConcurrentCallsOnOneGraphGiveTheSequentialResults) {
  FZG_REQUIRE_GPU();
  testing::expect_concurrent_calls_match_sequential(Device::cuda);
}

TEST(Gpu, FloatMaxNeverComesBackAsInfinity) {
  FZG_REQUIRE_GPU();
  expect_cpu_files_at_the_largest_values<float>(DType::f32);
}

TEST(Gpu, DoubleMaxNeverComesBackAsInfinity) {
  FZG_REQUIRE_GPU();
  expect_cpu_files_at_the_largest_values<double>(DType::f64);
}

// The stages' own kernels (not only the fused default path) write the CPU's bytes: other
// block sizes, zero-block straight on the codes, every shipped config, and lossless mode on
// raw integers.
TEST(Gpu, OtherConfigsMatchTheCpuByteForByte) {
  FZG_REQUIRE_GPU();
  std::vector<Graph> graphs;
  for (int block_words : {1, 2, 4, 8})
    graphs.push_back(Graph::from_text(R"({"stages": [
      {"id": "p", "type": "lorenzo", "inputs": {"field": "input"}},
      {"id": "s", "type": "bitshuffle", "inputs": {"in": "p.codes"}},
      {"id": "z", "type": "zero-block", "inputs": {"in": "s.out"}, "params": {"block_words": )" +
                                      std::to_string(block_words) + R"(}}],
      "store": ["z.out", "p.outliers"]})"));
  graphs.push_back(Graph::from_text(R"({"stages": [
      {"id": "p", "type": "lorenzo", "inputs": {"field": "input"}},
      {"id": "z", "type": "zero-block", "inputs": {"in": "p.codes"}, "params": {"block_words": 2}}],
      "store": ["z.out", "p.outliers"]})"));
  // And every shipped config, whole.
  for (const auto& entry : std::filesystem::directory_iterator(testing::source_dir() + "/configs"))
    graphs.push_back(Graph::from_file(entry.path().string()));
  const std::vector<std::pair<std::vector<uint64_t>, testing::Hazard>> fields = {
      {{1023}, testing::Hazard::noise}, {{31, 33}, testing::Hazard::nan_inf}, {{67, 13, 17}, testing::Hazard::smooth}};
  for (const auto& graph : graphs)
    for (const auto& [shape, hazard] : fields)
      for (ErrorBound bound : {ErrorBound{ErrorMode::rel, 1e-3}, ErrorBound{ErrorMode::lossless, 0}}) {
        if (!graph.has_predictor() && bound.mode != ErrorMode::lossless) continue;  // lossless-only configs
        const Dims d = Dims::make(shape);
        const Buffer bytes = testing::host_buffer(testing::make_values<float>(hazard, d.count()));
        const FieldRef field{bytes.data(), Location::host, bound.mode == ErrorMode::lossless ? DType::u32 : DType::f32, d};
        CompressOptions cpu, gpu;
        cpu.bound = gpu.bound = bound;
        gpu.device = Device::cuda;
        const Buffer a = compress(graph, field, cpu), b = compress(graph, field, gpu);
        ASSERT_EQ(a.size(), b.size()) << graph.to_json().dump();
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << graph.to_json().dump();
        DecompressOptions on_gpu;
        on_gpu.device = Device::cuda;
        const Decompressed x = decompress(a, on_gpu), y = decompress(b, {});
        ASSERT_EQ(x.data.size(), y.data.size());
        EXPECT_EQ(std::memcmp(x.data.data(), y.data.data(), x.data.size()), 0);
      }
}

TEST(Gpu, DeviceResidentRoundTripOnACallersStream) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({96, 64, 40});
  const Buffer host = synthesize(SynthKind::turbulent, DType::f32, d);
  const Buffer device_field = to_device(host, nullptr);
  CompressOptions options;
  options.device = Device::cuda;
  options.output = Location::device;
  const Buffer file = compress(Graph::default_fz(), {device_field.data(), Location::device, DType::f32, d}, options);
  EXPECT_TRUE(file.on_device());
  DecompressOptions back;
  back.device = Device::cuda;
  back.output = Location::device;
  const Decompressed out = decompress(file, back);
  EXPECT_TRUE(out.data.on_device());
  const Buffer result = to_host(out.data, nullptr);
  EXPECT_EQ(testing::count_violations(host.as<float>(), result.as<float>(), d.count(), out.header.quant.error_bound), 0u);
}

// Sizes and offsets are 64-bit: a field past 4 GiB (1.1 G f32 values) round-trips on the GPU
// within the bound. Skipped where the device has too little memory.
TEST(Gpu, FieldOver4GiBRoundTripsWithinTheBound) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({1100, 1000, 1000});
  const uint64_t bytes = d.count() * sizeof(float);
  if (device_free_bytes() < 3 * bytes) GTEST_SKIP() << "needs " << 3 * bytes / 1e9 << " GB of device memory";
  const Buffer host = synthesize(SynthKind::smooth, DType::f32, d);
  CompressOptions options;
  options.device = Device::cuda;
  options.bound = {ErrorMode::rel, 1e-3};
  const Buffer file = compress(Graph::default_fz(), {host.data(), Location::host, DType::f32, d}, options);
  DecompressOptions back;
  back.device = Device::cuda;
  const Decompressed out = decompress(file, back);
  ASSERT_EQ(out.data.size(), bytes);
  EXPECT_EQ(testing::count_violations(host.as<float>(), out.data.as<float>(), d.count(), out.header.quant.error_bound),
            0u);
}

TEST(Gpu, CorruptFilesAreErrorsOnTheGpuToo) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({40, 30, 7});
  const Buffer field = testing::host_buffer(testing::make_values<float>(testing::Hazard::nan_inf, d.count()));
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-3};
  const Buffer file = compress(Graph::default_fz(), {field.data(), Location::host, DType::f32, d}, options);
  DecompressOptions gpu;
  gpu.device = Device::cuda;
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 100; ++trial) {
    Buffer bad = Buffer::host(file.size());
    std::memcpy(bad.data(), file.data(), file.size());
    const uint64_t bit = rng() % (file.size() * 8);
    bad.data()[bit / 8] ^= uint8_t(1u << (bit % 8));
    // From the host (checked before decoding) and from device memory (checked while decoding).
    for (const Buffer& file_copy : {bad, to_device(bad, nullptr)}) {
      try {
        const Decompressed out = decompress(file_copy, gpu);
        EXPECT_EQ(out.data.size(), field.size());
        EXPECT_EQ(std::memcmp(out.data.data(), decompress(file, {}).data.data(), field.size()), 0);
      } catch (const Error& e) {
        EXPECT_TRUE(e.code() == ErrorCode::corrupt_data || e.code() == ErrorCode::unsupported) << e.what();
      }
    }
  }
}

// A flipped bit in every stream's bytes, or in its zero padding, that no decoder can notice (a
// coded value, a padding byte) is found by the stream checksums alone: from device memory they
// are summed on the GPU while the stages decode, and the call fails, naming the checksum.
TEST(Gpu, DamagedStreamBytesAreAChecksumMismatchFromDeviceMemory) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({300, 200});
  const Buffer field = testing::host_buffer(testing::make_values<float>(testing::Hazard::smooth, d.count()));
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-4};
  const Buffer file = compress(Graph::default_fz(), {field.data(), Location::host, DType::f32, d}, options);
  const Container c = read_metadata(file.data(), file.size(), file.size());
  DecompressOptions gpu;
  gpu.device = Device::cuda;
  gpu.output = Location::device;
  int damaged = 0;
  for (const StreamRecord& s : c.chunks.at(0).streams) {
    const uint64_t at = c.chunks[0].stream_offsets[damaged++];
    // The stream's last byte (its zero padding where its size is not a multiple of 8), and a
    // byte a little past its middle.
    for (const uint64_t byte : {at + ((s.size + 7) / 8) * 8 - 1, at + s.size / 2 + 1}) {
      if (s.size == 0) continue;
      Buffer bad = Buffer::host(file.size());
      std::memcpy(bad.data(), file.data(), file.size());
      bad.data()[byte] ^= 0x10;
      try {
        decompress(to_device(bad, nullptr), gpu);
        ADD_FAILURE() << "a damaged byte at " << byte << " was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::corrupt_data);
        EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_GT(damaged, 0);
}

// Checks left on the device: one word a kind, read back at the end, the first set one named.
TEST(Gpu, DeviceChecksNameTheFirstCheckThatFailed) {
  FZG_REQUIRE_GPU();
  DeviceChecks checks(nullptr);
  uint32_t* sizes = checks.word("stream size");
  uint32_t* keys = checks.word("keys");
  EXPECT_NE(sizes, keys);
  EXPECT_EQ(checks.word("stream size"), sizes);
  EXPECT_NO_THROW(checks.finish());
  const uint32_t one = 1;
  copy_bytes(keys, Location::device, &one, Location::host, sizeof one, nullptr);
  // A step that uses the call's checks leaves the verdict to the call; one on its own reads
  // back its own.
  StepChecks in_call(&checks, nullptr);
  EXPECT_EQ(in_call.word("keys"), keys);
  EXPECT_NO_THROW(in_call.finish());
  try {
    checks.finish();
    ADD_FAILURE() << "a set check did not fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::corrupt_data);
    EXPECT_NE(std::string(e.what()).find("keys"), std::string::npos) << e.what();
  }
  // Two set: the first kind asked for is named.
  copy_bytes(sizes, Location::device, &one, Location::host, sizeof one, nullptr);
  try {
    checks.finish();
    ADD_FAILURE() << "set checks did not fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stream size"), std::string::npos) << e.what();
  }
  StepChecks alone(nullptr, nullptr);
  copy_bytes(alone.word("keys"), Location::device, &one, Location::host, sizeof one, nullptr);
  EXPECT_THROW(alone.finish(), Error);
  // Read back beside another wait: the words as they were when queued.
  DeviceChecks later(nullptr);
  uint32_t* word = later.word("later");
  later.read_back_later();
  copy_bytes(word, Location::device, &one, Location::host, sizeof one, nullptr);
  EXPECT_NO_THROW(later.finish());
  later.read_back_later();
  EXPECT_THROW(later.finish(), Error);
}

#ifdef FZG_HAVE_CUDA
// A file compressed into device memory (streams copied into place with their checksums summed
// on the way) is the CPU's file byte for byte, also on a stream the caller made and for
// streams whose sizes are not whole 8-byte words.
TEST(Gpu, DeviceFilesOnACallersStreamMatchTheCpuFiles) {
  FZG_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (const auto& [shape, hazard] : std::vector<std::pair<std::vector<uint64_t>, testing::Hazard>>{
           {{1023}, testing::Hazard::nan_inf}, {{67, 13, 17}, testing::Hazard::spikes}, {{96, 64, 40}, testing::Hazard::smooth}}) {
    const Dims d = Dims::make(shape);
    const Buffer host = testing::host_buffer(testing::make_values<float>(hazard, d.count()));
    CompressOptions on_cpu;
    on_cpu.bound = {ErrorMode::rel, 1e-4};
    CompressOptions on_gpu = on_cpu;
    on_gpu.device = Device::cuda;
    on_gpu.output = Location::device;
    on_gpu.stream = stream;
    const Buffer device_field = to_device(host, stream);
    const Buffer cpu_file = compress(Graph::default_fz(), {host.data(), Location::host, DType::f32, d}, on_cpu);
    const Buffer gpu_file = compress(Graph::default_fz(), {device_field.data(), Location::device, DType::f32, d}, on_gpu);
    ASSERT_TRUE(gpu_file.on_device());
    const Buffer gpu_file_on_host = to_host(gpu_file, stream);
    ASSERT_EQ(gpu_file_on_host.size(), cpu_file.size());
    EXPECT_EQ(std::memcmp(gpu_file_on_host.data(), cpu_file.data(), cpu_file.size()), 0) << d.to_string();
  }
  cudaStreamDestroy(stream);
}

// The fused bitshuffle + zero-block encoder writes the CPU stages' bytes for any input: sparse
// and dense inputs alike (every word non-zero: a block for every word of the input, the most
// its scratch holds), the look-back across many chunks, ragged ends and empty tiles.
TEST(Gpu, ShufflePackEncodesAnyBytesLikeTheCpuStages) {
  FZG_REQUIRE_GPU();
  std::mt19937 rng(7);
  for (const uint64_t size : {uint64_t(2), uint64_t(130), uint64_t(4098), uint64_t(3) << 20, (uint64_t(1) << 22) + 6})
    for (const int density : {0, 1, 30, 100}) {  // percent of words that get random bits
      std::vector<uint8_t> bytes(size, 0);
      for (uint64_t w = 0; 4 * w < size; ++w)
        if (int(rng() % 100) < density)
          for (uint64_t b = 4 * w; b < std::min(size, 4 * w + 4); ++b) bytes[b] = uint8_t(rng() >> (density == 30 ? 28 : 0));
      std::vector<uint32_t> shuffled(bitshuffle::shuffled_size(size) / 4);
      bitshuffle::encode_cpu(bytes.data(), size, shuffled.data());
      const zeroblock::Layout layout(4 * shuffled.size(), 1);
      std::vector<uint32_t> expected(layout.max_encoded_bytes() / 4);
      expected.resize(zeroblock::encode_cpu(reinterpret_cast<const uint8_t*>(shuffled.data()), 4 * shuffled.size(), 1,
                                            expected.data()) / 4);
      const Buffer input = to_device(Buffer::view(bytes.data(), size, Location::host), nullptr);
      const Buffer encoded = to_host(shuffle_pack::encode_cuda(input.data(), size, nullptr), nullptr);
      ASSERT_EQ(encoded.size(), 4 * expected.size()) << size << " bytes, density " << density;
      EXPECT_EQ(std::memcmp(encoded.data(), expected.data(), encoded.size()), 0) << size << " bytes, density " << density;
    }
}

#ifdef FZG_HAVE_CUDA
// Stream checksums on the device are the CPU's for any number of streams (batches of eight a
// launch), empty ones among them, host and device buffers mixed, slices at odd offsets; and the
// container's checksum-and-copy puts each stream's bytes, zero-padded, where it is told.
TEST(Gpu, ChecksumsOfManyStreamsMatchTheCpu) {
  FZG_REQUIRE_GPU();
  std::mt19937 rng(23);
  const std::vector<size_t> sizes = {0, 1, 7, 8, 9, 4099, 0, 100000, 5, 64, 12345, 0, 3, 65536, 17, 2};
  std::vector<std::vector<uint8_t>> bytes;
  for (size_t n : sizes) {
    std::vector<uint8_t> b(n);
    for (uint8_t& v : b) v = uint8_t(rng());
    bytes.push_back(std::move(b));
  }
  std::vector<Buffer> buffers;
  std::vector<Buffer> whole;  // the device allocations the slices come from
  for (size_t k = 0; k < sizes.size(); ++k) {
    const Buffer host = Buffer::view(bytes[k].data(), bytes[k].size(), Location::host);
    if (k % 5 == 3) {
      buffers.push_back(host);
      continue;
    }
    const size_t offset = k % 3 == 1 ? 4 : k % 3 == 2 ? 1 : 0;  // shuffle-pack's streams start 4 bytes in
    std::vector<uint8_t> padded(offset + sizes[k], 0xee);
    std::copy(bytes[k].begin(), bytes[k].end(), padded.begin() + ptrdiff_t(offset));
    whole.push_back(to_device(Buffer::view(padded.data(), padded.size(), Location::host), nullptr));
    buffers.push_back(whole.back().slice(offset, sizes[k]));
  }
  const std::vector<uint64_t> sums = checksums(buffers, nullptr);
  ASSERT_EQ(sums.size(), sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k)
    EXPECT_EQ(sums[k], checksum_host(bytes[k].data(), bytes[k].size())) << "stream " << k << " of " << sizes[k];

  std::vector<Buffer> streams;
  std::vector<uint64_t> offsets;
  uint64_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k)
    if (buffers[k].on_device()) {
      streams.push_back(buffers[k]);
      offsets.push_back(at);
      at += (sizes[k] + 7) / 8 * 8;
    }
  std::vector<uint8_t> stale(at, 0x5a);  // every padding byte must be written
  Buffer file = to_device(Buffer::view(stale.data(), stale.size(), Location::host), nullptr);
  Buffer device_sums = Buffer::device(streams.size() * sizeof(uint64_t), nullptr);
  checksum_copy_device(streams, offsets, file.data(), device_sums.as<uint64_t>(), nullptr);
  const std::vector<uint8_t> copied = testing::bytes_of(file);
  const std::vector<uint8_t> summed = testing::bytes_of(device_sums);
  for (size_t s = 0, k = 0; k < sizes.size(); ++k) {
    if (!buffers[k].on_device()) continue;
    std::vector<uint8_t> expected((sizes[k] + 7) / 8 * 8, 0);
    std::copy(bytes[k].begin(), bytes[k].end(), expected.begin());
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), copied.begin() + ptrdiff_t(offsets[s]))) << "stream " << k;
    uint64_t terms;
    std::memcpy(&terms, summed.data() + 8 * s, 8);
    EXPECT_EQ(terms + checksum_mix(sizes[k]), checksum_host(bytes[k].data(), bytes[k].size())) << "stream " << k;
    ++s;
  }
}
#endif

#ifdef FZG_HAVE_CUDA
// A device file's assembly in one launch (streams copied and summed, the metadata finished by
// the last block) writes the bytes of the two-step path: streams of every size, empty ones
// among them, at odd source offsets, one to eight of them.
TEST(Gpu, OneLaunchAssemblyWritesTheTwoStepBytes) {
  FZG_REQUIRE_GPU();
  std::mt19937 rng(41);
  const std::vector<size_t> sizes = {100003, 0, 9, 4096, 1, 65539, 0, 777};
  for (size_t n = 1; n <= sizes.size(); ++n) {
    std::vector<Buffer> streams, whole;
    std::vector<uint64_t> offsets;
    const uint64_t metadata_words = 24 + 2 * n;  // a stream table (size, checksum) ends it
    std::vector<uint8_t> metadata(8 * metadata_words);
    for (uint8_t& b : metadata) b = uint8_t(rng());
    uint64_t at = 8 * metadata_words;
    for (size_t k = 0; k < n; ++k) {
      const size_t offset = k % 2 ? 4 : 0;
      std::vector<uint8_t> bytes(offset + sizes[k]);
      for (uint8_t& b : bytes) b = uint8_t(rng());
      whole.push_back(to_device(Buffer::view(bytes.data(), bytes.size(), Location::host), nullptr));
      streams.push_back(whole.back().slice(offset, sizes[k]));
      offsets.push_back(at);
      at += (sizes[k] + 7) / 8 * 8;
    }
    std::vector<uint8_t> stale(at, 0x3c);
    Buffer one = to_device(Buffer::view(stale.data(), stale.size(), Location::host), nullptr);
    Buffer two = to_device(Buffer::view(stale.data(), stale.size(), Location::host), nullptr);
    copy_streams_and_finish_device(metadata, streams, offsets, one.data(), nullptr);
    Buffer sums = Buffer::device(n * sizeof(uint64_t), nullptr);
    copy_bytes(two.data(), Location::device, metadata.data(), Location::host, metadata.size(), nullptr);
    checksum_copy_device(streams, offsets, two.data(), sums.as<uint64_t>(), nullptr);
    finish_metadata_device(metadata, n, sums.as<uint64_t>(), two.data(), nullptr);
    EXPECT_EQ(testing::bytes_of(one), testing::bytes_of(two)) << n << " streams";
  }
}
#endif

// The device value range is the CPU's for any length and any alignment of the data, with NaN,
// infinities and denormals in it.
TEST(Gpu, ValueRangeMatchesTheCpuAtAnyAlignment) {
  FZG_REQUIRE_GPU();
  std::mt19937 rng(11);
  std::vector<float> values(size_t(1) << 20);
  for (float& v : values) v = float(int(rng() % 20001) - 10000) * 0.37f;
  values[5] = std::numeric_limits<float>::quiet_NaN();
  values[77] = std::numeric_limits<float>::infinity();
  values[500000] = -std::numeric_limits<float>::infinity();
  values[1000] = 1e-42f;
  values[999999] = -123456.75f;  // the minimum, deep inside
  const Buffer device = to_device(Buffer::view(values.data(), 4 * values.size(), Location::host), nullptr);
  for (const uint64_t offset : {0, 1, 2, 3})
    for (const uint64_t count : {uint64_t(0), uint64_t(1), uint64_t(3), uint64_t(5), uint64_t(1001), uint64_t(1) << 19,
                                 values.size() - 4}) {
      double cpu_min, cpu_max, gpu_min, gpu_max;
      finite_range(values.data() + offset, DType::f32, count, &cpu_min, &cpu_max);
      finite_range_device(device.as<float>() + offset, DType::f32, count, &gpu_min, &gpu_max, nullptr);
      EXPECT_EQ(gpu_min, cpu_min) << offset << " + " << count;
      EXPECT_EQ(gpu_max, cpu_max) << offset << " + " << count;
    }
}

#ifdef FZG_HAVE_CUDA
// The quantization resolved on the device from a range there (what a GPU compress of a device
// field encodes with) has the host's bits for every mode, type and range, extreme ones too:
// empty, constant, denormal, spanning +-FLT_MAX or +-DBL_MAX, tiny enough that half an f64 ulp
// is subnormal, bounds that underflow the step or overflow to infinity.
TEST(Gpu, QuantizationResolvedOnTheDeviceIsTheHosts) {
  FZG_REQUIRE_GPU();
  const double flt = std::numeric_limits<float>::max(), dbl = std::numeric_limits<double>::max();
  const std::vector<std::pair<double, double>> ranges = {
      {0, 0},       {3.7, 3.7},   {-1, 1},          {287.3, 289.1},   {-2e-310, 3e-310}, {1e-45, 1.4e-45},
      {-flt, flt},  {-dbl, dbl},  {1e300, 1.7e308}, {-5e30, -4e30},   {-0.0, 1e-3},      {-123456.75, 7.5e8},
      {0, 1e-320},  {1, 1 + 1e-15},    {1e-300, 2e-300}, {-5e-308, 1e-307}, {-4e-308, 4e-308}};
  const std::vector<ErrorBound> bounds = {
      {ErrorMode::abs, 0},     {ErrorMode::abs, 1e-300}, {ErrorMode::abs, 1e-3},  {ErrorMode::abs, 1e300},
      {ErrorMode::abs, dbl},   {ErrorMode::rel, 0},      {ErrorMode::rel, 1e-2},  {ErrorMode::rel, 1e-4},
      {ErrorMode::rel, 1e-7},  {ErrorMode::rel, 1},      {ErrorMode::psnr, 20},   {ErrorMode::psnr, 60.5},
      {ErrorMode::psnr, 140},  {ErrorMode::psnr, 0},     {ErrorMode::psnr, 400}};
  Buffer range = Buffer::device(2 * sizeof(double), nullptr);
  for (DType type : {DType::f32, DType::f64})
    for (const auto& [lo, hi] : ranges) {
      const double both[2] = {lo, hi};
      copy_bytes(range.data(), Location::device, both, Location::host, sizeof both, nullptr);
      for (const ErrorBound& bound : bounds) {
        const Quantization q = lorenzo::resolve_quantization(bound, type, lo, hi);
        const lorenzo::DeviceQuantization host{lorenzo::constants_of(q, type == DType::f32), q};
        const Buffer resolved =
            lorenzo::resolve_quantization_cuda(lorenzo::bound_terms(bound), type, range.as<double>(), nullptr);
        ASSERT_EQ(resolved.size(), sizeof host);
        lorenzo::DeviceQuantization device;
        copy_bytes(&device, Location::host, resolved.data(), Location::device, sizeof device, nullptr);
        EXPECT_EQ(std::memcmp(&device, &host, sizeof host), 0)
            << to_string(type) << " [" << lo << ", " << hi << "] mode " << int(bound.mode) << " " << bound.value
            << ": step " << device.quant.step << " vs " << q.step << ", accept " << device.constants.accept_below
            << " vs " << host.constants.accept_below;
      }
    }
}

// Reduced a piece at a time as the pieces arrive, the range is still the CPU's: pieces of any
// length (empty ones too), the extremes and the NaN and infinities in different pieces, f64 as
// f32, and nothing finite at all.
TEST(Gpu, ArrivingRangeMatchesTheCpuWhateverThePieces) {
  FZG_REQUIRE_GPU();
  std::mt19937 rng(5);
  std::vector<double> values(300001);
  for (double& v : values) v = double(int(rng() % 20001) - 10000) * 0.37;
  values[3] = std::numeric_limits<double>::quiet_NaN();
  values[150000] = -std::numeric_limits<double>::infinity();
  values[299999] = 98765.5;  // the maximum, in the last piece
  values[0] = -4e-320;       // a denormal
  std::vector<double> non_finite(1000, std::numeric_limits<double>::quiet_NaN());
  for (const std::vector<double>* data : {&values, &non_finite}) {
    const Buffer device = to_device(Buffer::view(const_cast<double*>(data->data()), 8 * data->size(), Location::host), nullptr);
    double cpu_min, cpu_max;
    finite_range(data->data(), DType::f64, data->size(), &cpu_min, &cpu_max);
    for (const uint64_t piece : {uint64_t(1), uint64_t(7), uint64_t(4096), uint64_t(1) << 20}) {
      if (piece == 1 && data->size() > 5000) continue;  // a launch per value: too slow to be worth it
      ArrivingRange range(DType::f64, nullptr);
      range.add(device.as<double>(), 0);
      for (uint64_t at = 0; at < data->size(); at += piece)
        range.add(device.as<double>() + at, std::min<uint64_t>(piece, data->size() - at));
      double gpu_min, gpu_max;
      range.result(&gpu_min, &gpu_max);
      EXPECT_EQ(gpu_min, cpu_min) << "pieces of " << piece;
      EXPECT_EQ(gpu_max, cpu_max) << "pieces of " << piece;
      EXPECT_FALSE(std::signbit(gpu_min) && gpu_min == 0);
    }
  }
}
#endif

// A host field past the staging threshold (32 MB) is uploaded a 16 MB piece at a time, its
// range reduced beside the copies: the file is still the CPU's.
TEST(Gpu, HostFieldsUploadedInPiecesGiveTheCpuFile) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({9000001});
  std::vector<float> values = testing::make_values<float>(testing::Hazard::smooth, d.count());
  values[8999999] = 5e4f;   // the maximum, in the last piece
  values[4194304] = -5e4f;  // the minimum, first of the second piece
  values[12345] = std::numeric_limits<float>::quiet_NaN();
  values[5000000] = -std::numeric_limits<float>::infinity();
  const Buffer host = testing::host_buffer(values);
  CompressOptions on_cpu;
  on_cpu.bound = {ErrorMode::rel, 1e-4};
  CompressOptions on_gpu = on_cpu;
  on_gpu.device = Device::cuda;
  const FieldRef field{host.data(), Location::host, DType::f32, d};
  const Buffer cpu_file = compress(Graph::default_fz(), field, on_cpu);
  const Buffer gpu_file = compress(Graph::default_fz(), field, on_gpu);
  EXPECT_EQ(inspect(gpu_file).header.quant.max, 5e4);
  ASSERT_EQ(gpu_file.size(), cpu_file.size());
  EXPECT_EQ(std::memcmp(gpu_file.data(), cpu_file.data(), cpu_file.size()), 0);
}

// The default graph chunked at `chunk_values`.
Graph chunked_fz(uint64_t chunk_values) {
  nlohmann::json config = Graph::default_fz().to_json();
  config["chunk_values"] = chunk_values;
  return Graph::from_json(config);
}

// The CPU's file for a field (rel 1e-3) and its decode: what every GPU path must give.
struct CpuReference {
  Buffer file;
  Decompressed field;
};
CpuReference cpu_reference(const Graph& graph, const FieldRef& field) {
  CompressOptions on_cpu;
  on_cpu.bound = {ErrorMode::rel, 1e-3};
  CpuReference r;
  r.file = compress(graph, field, on_cpu);
  r.field = decompress(r.file, {});
  return r;
}

// Damage that checksums cannot see: `file` with `edit` applied to its bytes and every stream
// checksum (and so the header's) computed again, so that only the decoders' own checks stand
// between it and an output.
Buffer resealed(const Buffer& file, const std::function<void(uint8_t*)>& edit) {
  Container c = read_metadata(file.data(), file.size(), file.size());
  Buffer bad = Buffer::host(file.size());
  std::memcpy(bad.data(), file.data(), file.size());
  edit(bad.data());
  for (auto& chunk : c.chunks)
    for (size_t s = 0; s < chunk.streams.size(); ++s)
      chunk.streams[s].checksum = checksum_host(bad.data() + chunk.stream_offsets[s], chunk.streams[s].size);
  const std::vector<uint8_t> metadata = write_metadata(c);
  EXPECT_EQ(metadata.size(), c.metadata_bytes);
  std::memcpy(bad.data(), metadata.data(), metadata.size());
  return bad;
}

// "decoded" (the field in `decoded`), or the error's code and message.
std::string verdict(const Buffer& file, const DecompressOptions& options, std::vector<uint8_t>& decoded) {
  try {
    const Decompressed out = decompress(file, options);
    const Buffer host = to_host(out.data, nullptr);
    decoded.assign(host.data(), host.data() + host.size());
    return "decoded";
  } catch (const Error& e) {
    return std::string(to_string(e.code())) + ": " + e.what();
  }
}

// The GPU, which checks on the device and reads the verdict back at the call's end, rejects
// exactly what the CPU rejects, with the CPU's message, and decodes the rest to the CPU's
// bytes (from host and from device memory). Returns the CPU's verdict.
std::string expect_the_cpus_verdict(const Buffer& file) {
  DecompressOptions cpu, gpu;
  gpu.device = Device::cuda;
  std::vector<uint8_t> on_cpu, on_gpu, from_device;
  const std::string expected = verdict(file, cpu, on_cpu);
  EXPECT_EQ(verdict(file, gpu, on_gpu), expected);
  EXPECT_EQ(verdict(to_device(file, nullptr), gpu, from_device), expected);
  EXPECT_EQ(on_gpu, on_cpu);
  EXPECT_EQ(from_device, on_cpu);
  return expected;
}

void put_word(uint8_t* at, uint64_t value) { std::memcpy(at, &value, 8); }

// Outlier streams: counts that do not fit the stream, keys out of order or past the field.
TEST(Gpu, DamagedOutlierStreamsGetTheCpusVerdict) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({70, 33, 9});
  std::vector<float> values = testing::make_values<float>(testing::Hazard::spikes, d.count());
  for (uint64_t i = 0; i < values.size(); i += 997) values[i] = std::numeric_limits<float>::quiet_NaN();
  const Buffer field = testing::host_buffer(values);
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-6};  // spikes beyond the codes' reach: escapes
  const Buffer file = compress(Graph::default_fz(), {field.data(), Location::host, DType::f32, d}, options);
  const Container c = read_metadata(file.data(), file.size(), file.size());
  ASSERT_EQ(c.chunks.size(), 1u);
  ASSERT_EQ(c.chunks[0].streams.size(), 2u);  // pack.out, predict.outliers
  const uint64_t at = c.chunks[0].stream_offsets[1];
  uint64_t escapes = 0, exacts = 0;
  std::memcpy(&escapes, file.data() + at, 8);
  std::memcpy(&exacts, file.data() + at + 8, 8);
  ASSERT_GE(escapes, 2u);
  ASSERT_GE(exacts, 1u);
  const uint64_t escape_keys = at + 16, exact_keys = escape_keys + 8 * escapes;
  const std::vector<std::pair<std::string, std::function<void(uint8_t*)>>> edits = {
      {"one escape more than the stream holds", [&](uint8_t* f) { put_word(f + at, escapes + 1); }},
      {"a count no stream could hold", [&](uint8_t* f) { put_word(f + at + 8, uint64_t(1) << 60); }},
      {"escape keys out of order",
       [&](uint8_t* f) {
         uint64_t first, second;
         std::memcpy(&first, f + escape_keys, 8);
         std::memcpy(&second, f + escape_keys + 8, 8);
         put_word(f + escape_keys, second), put_word(f + escape_keys + 8, first);
       }},
      {"an exact key past the field", [&](uint8_t* f) { put_word(f + exact_keys + 8 * (exacts - 1), d.count() * 4); }},
  };
  EXPECT_EQ(expect_the_cpus_verdict(resealed(file, [](uint8_t*) {})), "decoded");
  for (const auto& [what, edit] : edits) {
    SCOPED_TRACE(what);
    EXPECT_NE(expect_the_cpus_verdict(resealed(file, edit)), "decoded");
  }
}

// Zero-block streams (the shuffle-pack composite's): group bits and flag words that do not
// match the stream.
TEST(Gpu, DamagedZeroBlockStreamsGetTheCpusVerdict) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({500, 300, 2});
  const Buffer field = testing::host_buffer(testing::make_values<float>(testing::Hazard::smooth, d.count()));
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-3};
  const Buffer file = compress(Graph::default_fz(), {field.data(), Location::host, DType::f32, d}, options);
  const Container c = read_metadata(file.data(), file.size(), file.size());
  ASSERT_EQ(c.chunks.size(), 1u);
  ASSERT_FALSE(c.chunks[0].stages.at(2).raw);  // coded: its flags mean something
  const uint64_t at = c.chunks[0].stream_offsets[0];
  const zeroblock::Layout layout(c.chunks[0].stages.at(2).input_sizes.at(0), 1);
  ASSERT_GE(layout.groups, 64u);
  const uint64_t flags_at = at + 4 * layout.group_flag_words;
  const std::vector<std::pair<std::string, std::function<void(uint8_t*)>>> edits = {
      {"a group bit cleared", [&](uint8_t* f) { f[at] ^= 1; }},
      {"group 31's bit toggled", [&](uint8_t* f) { f[at + 3] ^= 0x80; }},
      {"a group bit past the last group",
       [&](uint8_t* f) { f[at + 4 * layout.group_flag_words - 1] |= 0x80; }},
      {"a flag word cleared", [&](uint8_t* f) { std::memset(f + flags_at, 0, 4); }},
      {"two flag words swapped",
       [&](uint8_t* f) {
         uint32_t a, b;
         std::memcpy(&a, f + flags_at, 4), std::memcpy(&b, f + flags_at + 4, 4);
         std::memcpy(f + flags_at, &b, 4), std::memcpy(f + flags_at + 4, &a, 4);
       }},
  };
  EXPECT_EQ(expect_the_cpus_verdict(resealed(file, [](uint8_t*) {})), "decoded");
  for (const auto& [what, edit] : edits) {
    SCOPED_TRACE(what);
    const std::string v = expect_the_cpus_verdict(resealed(file, edit));
    if (what != "two flag words swapped") {  // (a swap may still add up)
      EXPECT_NE(v, "decoded");
    }
  }
}

// Many chunks decoded in lanes, one chunk's outlier keys damaged: each chunk's kernels act on
// their own stream's verdict, never on another lane's, and the call gives the CPU's error.
TEST(Gpu, OneChunksDamagedKeysFailTheCallAsOnTheCpu) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({64, 64, 64});
  std::vector<float> values = testing::make_values<float>(testing::Hazard::spikes, d.count());
  const Buffer field = testing::host_buffer(values);
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-6};
  const Buffer file = compress(chunked_fz(64 * 64 * 8), {field.data(), Location::host, DType::f32, d}, options);
  const Container c = read_metadata(file.data(), file.size(), file.size());
  ASSERT_GE(c.chunks.size(), 4u);
  for (uint64_t damaged : {uint64_t(0), uint64_t(c.chunks.size() / 2), uint64_t(c.chunks.size() - 1)}) {
    SCOPED_TRACE("chunk " + std::to_string(damaged));
    const uint64_t at = c.chunks[damaged].stream_offsets[1];
    uint64_t escapes = 0;
    std::memcpy(&escapes, file.data() + at, 8);
    ASSERT_GE(escapes, 2u);
    const std::string v = expect_the_cpus_verdict(resealed(file, [&](uint8_t* f) {
      put_word(f + at + 16, uint64_t(1) << 40);  // the first escape's key past the field
    }));
    EXPECT_NE(v.find("escape outlier keys"), std::string::npos) << v;
  }
}

CompressOptions gpu_rel_1em3() {
  CompressOptions on_gpu;
  on_gpu.bound = {ErrorMode::rel, 1e-3};
  on_gpu.device = Device::cuda;
  return on_gpu;
}

// Chunks of any size write the CPU's file on the GPU: one tile row per chunk, rows whose
// codes end inside a shuffle-pack chunk or a shuffle tile, several chunks, the whole field;
// 1D, 2D and 3D, with and without outliers. The files decode on the device to the CPU's
// reconstruction, whether the field stays on the device or goes to the host.
TEST(Gpu, ChunksOfAnySizeWriteTheCpuFile) {
  FZG_REQUIRE_GPU();
  const std::vector<std::pair<std::vector<uint64_t>, testing::Hazard>> fields = {
      {{100003}, testing::Hazard::spikes},   {{1000, 70}, testing::Hazard::smooth},
      {{333, 97}, testing::Hazard::nan_inf}, {{67, 13, 17}, testing::Hazard::fill_values},
      {{100, 50, 40}, testing::Hazard::smooth}, {{33, 65, 70}, testing::Hazard::spikes}};
  for (const auto& [shape, hazard] : fields) {
    const Dims d = Dims::make(shape);
    const Buffer host = testing::host_buffer(testing::make_values<float>(hazard, d.count()));
    const FieldRef field{host.data(), Location::host, DType::f32, d};
    for (const uint64_t chunk : {uint64_t(1), uint64_t(9000), uint64_t(50000), default_chunk_values}) {
      const Graph graph = chunked_fz(chunk);
      const CpuReference cpu = cpu_reference(graph, field);
      const Buffer& cpu_file = cpu.file;
      const Decompressed& expected = cpu.field;
      const Buffer gpu_file = compress(graph, field, gpu_rel_1em3());
      ASSERT_EQ(gpu_file.size(), cpu_file.size()) << d.to_string() << ", chunk " << chunk;
      EXPECT_EQ(std::memcmp(gpu_file.data(), cpu_file.data(), cpu_file.size()), 0) << d.to_string() << ", chunk " << chunk;
      DecompressOptions back;
      back.device = Device::cuda;
      const Decompressed out = decompress(cpu_file, back);
      ASSERT_EQ(out.data.size(), expected.data.size());
      EXPECT_EQ(std::memcmp(out.data.data(), expected.data.data(), out.data.size()), 0) << d.to_string() << ", chunk " << chunk;
      back.output = Location::device;
      const Buffer on_device = to_host(decompress(cpu_file, back).data, nullptr);
      ASSERT_EQ(on_device.size(), expected.data.size());
      EXPECT_EQ(std::memcmp(on_device.data(), expected.data.data(), on_device.size()), 0) << d.to_string() << ", chunk " << chunk;
    }
  }
}

// Noise under a tight bound (codes too dense to pack: zero-block stores them raw) and under a
// loose one (a third of the codes' words kept): the composite step and the stages give the
// CPU's file, and the GPU decodes it to the CPU's reconstruction.
TEST(Gpu, NoiseAtTightAndLooseBoundsGivesTheCpuFile) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({96, 64, 40});
  const Buffer host = testing::host_buffer(testing::make_values<float>(testing::Hazard::noise, d.count()));
  const FieldRef field{host.data(), Location::host, DType::f32, d};
  for (const double rel : {1e-4, 1e-1}) {
    CompressOptions on_cpu;
    on_cpu.bound = {ErrorMode::rel, rel};
    CompressOptions on_gpu = on_cpu;
    on_gpu.device = Device::cuda;
    const Buffer cpu_file = compress(Graph::default_fz(), field, on_cpu);
    const Buffer gpu_file = compress(Graph::default_fz(), field, on_gpu);
    ASSERT_EQ(gpu_file.size(), cpu_file.size()) << rel;
    EXPECT_EQ(std::memcmp(gpu_file.data(), cpu_file.data(), cpu_file.size()), 0) << rel;
    DecompressOptions back;
    back.device = Device::cuda;
    const Decompressed a = decompress(gpu_file, back), b = decompress(cpu_file, {});
    ASSERT_EQ(a.data.size(), b.data.size());
    EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0) << rel;
  }
}

// Chunked, the device holds the field, the streams and the intermediates of the chunks in
// flight (at most 4, each under twice its field bytes) when compressing a device field; the
// field and those chunks when decompressing to the device; the file and those chunks when
// decompressing to the host (1 MB chunks: 10.4 MB with a 4.5 MB file). With 40 chunks the finished chunks' streams must be held at
// their own size (a stream kept as a slice of its coder's scratch, room for a block a word,
// held ~21 MB here against a 4.5 MB file).
class ChunkedMemory : public ::testing::TestWithParam<uint64_t> {};
TEST_P(ChunkedMemory, StaysNearInputPlusOutput) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({256, 256, 160});
  const uint64_t field_bytes = d.count() * sizeof(float);
  const uint64_t chunk_values = GetParam(), chunk_bytes = chunk_values * sizeof(float);
  const Graph graph = chunked_fz(chunk_values);
  const Buffer field = to_device(synthesize(SynthKind::turbulent, DType::f32, d), nullptr);
  CompressOptions options;
  options.device = Device::cuda;
  options.output = Location::device;
  synchronize(nullptr);
  reset_device_memory_peak();
  const size_t before = device_memory_stats().current_bytes;
  const Buffer file = compress(graph, {field.data(), Location::device, DType::f32, d}, options);
  synchronize(nullptr);
  const size_t compress_peak = device_memory_stats().peak_bytes - before;
  EXPECT_LT(compress_peak, 2 * file.size() + 8 * chunk_bytes) << "file " << file.size();
  std::cout << "compress peak " << compress_peak << " of a " << field_bytes << "-byte field, file " << file.size() << "\n";
  DecompressOptions back;
  back.device = Device::cuda;
  back.output = Location::device;
  reset_device_memory_peak();
  const size_t before_decode = device_memory_stats().current_bytes;
  const Decompressed out = decompress(file, back);
  synchronize(nullptr);
  const size_t decompress_peak = device_memory_stats().peak_bytes - before_decode;
  EXPECT_LT(decompress_peak, field_bytes + 8 * chunk_bytes);
  EXPECT_GE(decompress_peak, field_bytes);
  std::cout << "decompress peak " << decompress_peak << "\n";
  back.output = Location::host;
  const Buffer host_file = to_host(file, nullptr);
  reset_device_memory_peak();
  const size_t before_host = device_memory_stats().current_bytes;
  const Decompressed on_host = decompress(host_file, back);
  const size_t host_peak = device_memory_stats().peak_bytes - before_host;
  EXPECT_LT(host_peak, file.size() + 8 * chunk_bytes);
  std::cout << "decompress to the host: peak " << host_peak << "\n";
  ASSERT_EQ(on_host.data.size(), field_bytes);
  const Buffer from_device = to_host(out.data, nullptr);
  EXPECT_EQ(std::memcmp(on_host.data.data(), from_device.data(), field_bytes), 0);
}
INSTANTIATE_TEST_SUITE_P(Gpu, ChunkedMemory, ::testing::Values(uint64_t(1) << 20, uint64_t(1) << 18));

// A device-memory budget below the field: the host field is compressed a chunk at a time
// (its range reduced on the host, each chunk uploaded and its streams brought back by its
// lane) and decompressed to the host the same way. The device never holds more than the
// budget, and the files and fields are the CPU's.
TEST(Gpu, FieldsPastTheBudgetGoThroughAChunkAtATime) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({256, 256, 160});
  const uint64_t field_bytes = d.count() * sizeof(float);
  const Graph graph = chunked_fz(uint64_t(1) << 20);  // 4 MB chunks
  const Buffer host = synthesize(SynthKind::turbulent, DType::f32, d);
  const FieldRef field{host.data(), Location::host, DType::f32, d};
  const CpuReference cpu = cpu_reference(graph, field);
  const Buffer& cpu_file = cpu.file;
  const Decompressed& expected = cpu.field;
  CompressOptions on_gpu = gpu_rel_1em3();
  on_gpu.device_memory_budget = field_bytes / 3;
  synchronize(nullptr);
  reset_device_memory_peak();
  const size_t before = device_memory_stats().current_bytes;
  const Buffer gpu_file = compress(graph, field, on_gpu);
  const size_t compress_peak = device_memory_stats().peak_bytes - before;
  EXPECT_LE(compress_peak, on_gpu.device_memory_budget);
  ASSERT_EQ(gpu_file.size(), cpu_file.size());
  EXPECT_EQ(std::memcmp(gpu_file.data(), cpu_file.data(), cpu_file.size()), 0);
  DecompressOptions back;
  back.device = Device::cuda;
  back.device_memory_budget = field_bytes / 3;
  reset_device_memory_peak();
  const Decompressed out = decompress(cpu_file, back);
  EXPECT_LE(device_memory_stats().peak_bytes - before, back.device_memory_budget);
  ASSERT_EQ(out.data.size(), expected.data.size());
  EXPECT_EQ(std::memcmp(out.data.data(), expected.data.data(), out.data.size()), 0);
  std::cout << "peak with a " << field_bytes / 3 << "-byte budget: compress " << compress_peak << "\n";
  // The field itself on the device does not fit; nor does one chunk in a tiny budget.
  back.output = Location::device;
  EXPECT_THROW(decompress(cpu_file, back), Error);
  on_gpu.device_memory_budget = uint64_t(1) << 20;
  EXPECT_THROW(compress(graph, field, on_gpu), Error);
}

#ifdef FZG_HAVE_CUDA
// Ranges copied off the device through the staging, one after another, each of a size that
// ends somewhere else in a staging chunk; the device source is rewritten as soon as add()
// returns, so a range read late would show the next range's bytes.
TEST(Gpu, StagedDownloadsCopyEveryRangeAsItWasWhenAdded) {
  FZG_REQUIRE_GPU();
  const size_t chunk = size_t(16) << 20;
  const std::vector<size_t> sizes = {1, 0, chunk - 1, chunk + 1, 3 * chunk + 5, 4096, 2 * chunk};
  size_t total = 0;
  for (size_t n : sizes) total += n;
  Buffer source = Buffer::device(3 * chunk + 5, nullptr);
  Buffer host = Buffer::host(total);
  {
    StagedDownload download(nullptr);
    size_t at = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      ASSERT_EQ(cudaMemsetAsync(source.data(), int(0x10 + k), source.size(), nullptr), cudaSuccess);
      download.add(host.data() + at, source.data(), sizes[k]);
      at += sizes[k];
    }
    download.finish();
  }
  size_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const auto* first_wrong = std::find_if(host.data() + at, host.data() + at + sizes[k],
                                           [&](uint8_t b) { return b != uint8_t(0x10 + k); });
    EXPECT_EQ(first_wrong, host.data() + at + sizes[k]) << "range " << k << " of " << sizes[k] << " bytes";
    at += sizes[k];
  }
}
#endif

// Decompressing into caller memory on the GPU, the chain writes straight into it (device
// memory for in-situ use, a host array a slab at a time), and the stages' way copies into it
// at the end: every way gives the CPU's reconstruction.
TEST(Gpu, DecompressIntoCallerMemoryMatchesTheCpu) {
  FZG_REQUIRE_GPU();
  const Dims d = Dims::make({96, 64, 40});
  for (const testing::Hazard hazard : {testing::Hazard::smooth, testing::Hazard::noise}) {
    const Buffer host = testing::host_buffer(testing::make_values<float>(hazard, d.count()));
    CompressOptions options;
    options.bound = {ErrorMode::rel, hazard == testing::Hazard::noise ? 1e-4 : 1e-3};  // noise: the stages
    const Buffer file = compress(Graph::default_fz(), {host.data(), Location::host, DType::f32, d}, options);
    const Decompressed expected = decompress(file, {});
    DecompressOptions on_gpu;
    on_gpu.device = Device::cuda;
    std::vector<float> out(d.count());
    decompress_into(file, out.data(), out.size() * sizeof(float), on_gpu);
    EXPECT_EQ(std::memcmp(out.data(), expected.data.data(), expected.data.size()), 0) << testing::to_string(hazard);
    on_gpu.output = Location::device;
    Buffer device_out = Buffer::device(expected.data.size(), nullptr);
    decompress_into(file, device_out.data(), device_out.size(), on_gpu);
    const Buffer back = to_host(device_out, nullptr);
    EXPECT_EQ(std::memcmp(back.data(), expected.data.data(), expected.data.size()), 0) << testing::to_string(hazard);
  }
}

// A graph whose stored text is too long to travel as a kernel argument takes the other way
// onto the device (a copy the host waits for); the file is still the CPU's, byte for byte.
TEST(Gpu, DeviceFilesWithLargeMetadataMatchTheCpuFiles) {
  FZG_REQUIRE_GPU();
  nlohmann::json config = Graph::default_fz().to_json();
  config["name"] = std::string(6000, 'n');
  const Graph graph = Graph::from_json(config);
  const Dims d = Dims::make({67, 13, 17});
  const Buffer host = testing::host_buffer(testing::make_values<float>(testing::Hazard::spikes, d.count()));
  CompressOptions on_cpu;
  on_cpu.bound = {ErrorMode::abs, 1e-3};
  CompressOptions on_gpu = on_cpu;
  on_gpu.device = Device::cuda;
  on_gpu.output = Location::device;
  const Buffer cpu_file = compress(graph, {host.data(), Location::host, DType::f32, d}, on_cpu);
  ASSERT_GT(cpu_file.size(), 6000u);
  const Buffer gpu_file = to_host(compress(graph, {host.data(), Location::host, DType::f32, d}, on_gpu), nullptr);
  ASSERT_EQ(gpu_file.size(), cpu_file.size());
  EXPECT_EQ(std::memcmp(gpu_file.data(), cpu_file.data(), cpu_file.size()), 0);
}

// Freed device blocks are kept and handed out again: the same block comes back for the same
// size, the accounting follows what is held, and a block reused on another stream waits for
// the work queued on it before it was freed.
TEST(Gpu, FreedBlocksAreReusedInStreamOrder) {
  FZG_REQUIRE_GPU();
  const size_t bytes = size_t(256) << 20;
  reset_device_memory_peak();
  const size_t before = device_memory_stats().current_bytes;
  cudaStream_t first = nullptr, second = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking), cudaSuccess);
  const uint8_t* address = nullptr;
  {
    Buffer a = Buffer::device(bytes, first);
    address = a.data();
    EXPECT_GE(device_memory_stats().current_bytes, before + bytes);
    for (int i = 0; i < 8; ++i) ASSERT_EQ(cudaMemsetAsync(a.data(), 0x11, bytes, first), cudaSuccess);
  }  // freed while the memsets may still run
  EXPECT_EQ(device_memory_stats().current_bytes, before);
  EXPECT_GE(device_memory_stats().peak_bytes, before + bytes);
  {
    Buffer b = Buffer::device(bytes, second);
    EXPECT_EQ(b.data(), address);
    ASSERT_EQ(cudaMemsetAsync(b.data(), 0x22, bytes, second), cudaSuccess);
    const Buffer back = to_host(b, second);
    EXPECT_EQ(std::count(back.data(), back.data() + back.size(), uint8_t(0x22)), ptrdiff_t(bytes));
  }  // device buffers go back before their stream does, as with cudaFreeAsync
  ASSERT_EQ(cudaStreamSynchronize(second), cudaSuccess);
  cudaStreamDestroy(first);
  cudaStreamDestroy(second);
}
#endif

}  // namespace
}  // namespace fzg
