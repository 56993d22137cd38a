// The container: what it records, and what happens to damaged files: a clear error or a
// correct result, never a crash (these tests also run under ASan and UBSan in CI).
#include <random>

#include "core/checksum.hh"
#include "test_util.hh"

namespace fzg {
namespace {

Buffer sample_file(DType t = DType::f32) {
  const Dims d = Dims::make({40, 30, 7});
  Buffer field = t == DType::f32 ? testing::host_buffer(testing::make_values<float>(testing::Hazard::nan_inf, d.count()))
                                 : testing::host_buffer(testing::make_values<double>(testing::Hazard::spikes, d.count()));
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-3};
  return compress(Graph::default_fz(), {field.data(), Location::host, t, d}, options);
}

using testing::expect_error;

Buffer copy_of(const Buffer& b, size_t size) {
  Buffer c = Buffer::host(size);
  std::memcpy(c.data(), b.data(), std::min(size, b.size()));
  return c;
}

TEST(Container, HeaderRecordsTheRequest) {
  const Container c = inspect(sample_file());
  EXPECT_EQ(c.header.dtype, DType::f32);
  EXPECT_EQ(c.header.mode, ErrorMode::rel);
  EXPECT_EQ(c.header.dims.x, 40u);
  EXPECT_EQ(c.header.dims.z, 7u);
  EXPECT_EQ(c.header.requested_bound, 1e-3);
  EXPECT_EQ(c.chunks[0].streams.size(), 2u);
  EXPECT_EQ(c.chunks[0].stages.size(), 3u);
}

TEST(Container, ForeignFileIsRejected) {
  Buffer b = copy_of(sample_file(), 200);
  b.data()[1] = 'X';
  expect_error([&] { inspect(b); }, ErrorCode::corrupt_data, "not an fzg file");
}

TEST(Container, UnknownVersionIsUnsupported) {
  const Buffer file = sample_file();
  Buffer b = copy_of(file, file.size());
  b.data()[4] = 99;
  expect_error([&] { decompress(b, {}); }, ErrorCode::unsupported, "version 99");
}

TEST(Container, EveryTruncationIsAnError) {
  const Buffer file = sample_file();
  for (size_t size = 0; size < file.size(); size += (size < 600 ? 1 : 97)) {
    EXPECT_THROW(decompress(copy_of(file, size), {}), Error) << size;
  }
}

TEST(Container, TrailingBytesAreAnError) {
  const Buffer file = sample_file();
  Buffer longer = copy_of(file, file.size() + 8);
  std::memset(longer.data() + file.size(), 0, 8);
  EXPECT_THROW(decompress(longer, {}), Error);
}

TEST(Container, RandomBitFlipsGiveAnErrorOrTheSameResult) {
  for (DType t : {DType::f32, DType::f64}) {
    const Buffer file = sample_file(t);
    const Decompressed good = decompress(file, {});
    std::mt19937_64 rng(17);
    int errors = 0;
    for (int trial = 0; trial < 400; ++trial) {
      Buffer bad = copy_of(file, file.size());
      const int flips = 1 + int(rng() % 3);
      for (int f = 0; f < flips; ++f) {
        const uint64_t bit = rng() % (file.size() * 8);
        bad.data()[bit / 8] ^= uint8_t(1u << (bit % 8));
      }
      try {
        const Decompressed out = decompress(bad, {});
        EXPECT_EQ(out.data.size(), good.data.size());
        EXPECT_EQ(std::memcmp(out.data.data(), good.data.data(), good.data.size()), 0);
      } catch (const Error& e) {
        ++errors;
        EXPECT_TRUE(e.code() == ErrorCode::corrupt_data || e.code() == ErrorCode::unsupported) << e.what();
      }
    }
    EXPECT_GT(errors, 390);  // the checksums catch nearly all; the rest must decode identically
  }
}

TEST(Container, DamageBehindAValidChecksumIsStillCaught) {
  // Rewrite a stream and its checksum consistently: the decoders' own checks must hold.
  const Buffer file = sample_file();
  Container c = inspect(file);
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 200; ++trial) {
    Buffer bad = copy_of(file, file.size());
    const size_t s = trial % c.chunks[0].streams.size();
    if (c.chunks[0].streams[s].size == 0) continue;
    const uint64_t at = c.chunks[0].stream_offsets[s] + rng() % c.chunks[0].streams[s].size;
    bad.data()[at] ^= uint8_t(1u << (rng() % 8));
    Container patched = c;
    patched.chunks[0].streams[s].checksum = checksum_host(bad.data() + c.chunks[0].stream_offsets[s], c.chunks[0].streams[s].size);
    const std::vector<uint8_t> metadata = write_metadata(patched);
    std::memcpy(bad.data(), metadata.data(), metadata.size());
    try {
      const Decompressed out = decompress(bad, {});
      EXPECT_EQ(out.data.size(), c.header.dims.count() * 4);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::corrupt_data) << e.what();
    }
  }
}

// The writer refuses what its readers would: more stages than a file holds.
TEST(Container, WriterRefusesMoreStagesOrStreamsThanAFileHolds) {
  const Container sample = inspect(sample_file());
  for (const bool streams : {false, true}) {
    Container c = sample;
    if (streams) c.chunks[0].streams.resize(max_stream_count + 1);
    else c.stage_headers.resize(max_stage_count + 1);
    try {
      write_metadata(c);
      ADD_FAILURE() << "written, " << (streams ? "streams" : "stages");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    }
  }
}

// The bytes between a stream's end and the next 8-byte boundary are zero in every valid file;
// each of their bits flipped is a checksum mismatch, not a file accepted as it is.
TEST(Container, FlippedPaddingBitIsAnError) {
  const Buffer file = sample_file();
  const Container c = inspect(file);
  int padding_bits = 0;
  for (size_t s = 0; s < c.chunks[0].streams.size(); ++s)
    for (uint64_t at = c.chunks[0].stream_offsets[s] + c.chunks[0].streams[s].size; at < c.chunks[0].stream_offsets[s] + padded8(c.chunks[0].streams[s].size);
         ++at)
      for (int bit = 0; bit < 8; ++bit, ++padding_bits) {
        Buffer bad = copy_of(file, file.size());
        bad.data()[at] ^= uint8_t(1u << bit);
        expect_error([&] { decompress(bad, {}); }, ErrorCode::corrupt_data, "stream checksum");
      }
  EXPECT_GT(padding_bits, 0) << "the sample file has no padded stream";
}

// The file with stream s replaced by `bytes` and a consistent checksum and stream table.
Buffer with_stream(const Buffer& file, size_t s, const std::vector<uint8_t>& bytes) {
  Container c = inspect(file);
  std::vector<std::vector<uint8_t>> streams;
  for (size_t k = 0; k < c.chunks[0].streams.size(); ++k)
    streams.emplace_back(file.data() + c.chunks[0].stream_offsets[k], file.data() + c.chunks[0].stream_offsets[k] + c.chunks[0].streams[k].size);
  streams[s] = bytes;
  for (size_t k = 0; k < streams.size(); ++k) c.chunks[0].streams[k] = {streams[k].size(), checksum_host(streams[k].data(), streams[k].size())};
  const std::vector<uint8_t> metadata = write_metadata(c);
  Buffer out = Buffer::host(c.total_bytes);
  std::memset(out.data(), 0, out.size());
  std::memcpy(out.data(), metadata.data(), metadata.size());
  for (size_t k = 0; k < streams.size(); ++k)
    if (!streams[k].empty()) std::memcpy(out.data() + c.chunks[0].stream_offsets[k], streams[k].data(), streams[k].size());
  return out;
}

// An empty stream with a valid checksum (once a null pointer handed to memcpy) is a clear
// error for every stream of the file.
TEST(Container, EmptyStreamWithAValidChecksumIsAnError) {
  const Buffer file = sample_file();
  const size_t streams = inspect(file).chunks[0].streams.size();
  for (size_t s = 0; s < streams; ++s) {
    SCOPED_TRACE("stream " + std::to_string(s));
    expect_error([&] { decompress(with_stream(file, s, {}), {}); }, ErrorCode::corrupt_data, "");
  }
}

// The file with its metadata byte `at` set to `value` and the header checksum made good again.
// `metadata_bytes` is the metadata's length (the file's own when not given).
Buffer with_metadata_byte(const Buffer& file, uint64_t at, uint8_t value, uint64_t metadata_bytes = 0) {
  if (metadata_bytes == 0) metadata_bytes = inspect(file).metadata_bytes;
  Buffer bad = copy_of(file, file.size());
  bad.data()[at] = value;
  std::memset(bad.data() + header_checksum_offset, 0, 8);
  const uint64_t sum = checksum_host(bad.data(), metadata_bytes);
  std::memcpy(bad.data() + header_checksum_offset, &sum, 8);
  return bad;
}

// The requested bound (bytes 40-47, an f64: 1e-3 here) is finite and non-negative in every
// file a writer makes: a negative or NaN one is an error, not a line of `fzg info`.
TEST(Container, NegativeOrNanRequestedBoundIsAnError) {
  const Buffer file = sample_file();
  EXPECT_NO_THROW(inspect(with_metadata_byte(file, 47, file.data()[47])));
  expect_error([&] { inspect(with_metadata_byte(file, 47, 0xbf)); }, ErrorCode::corrupt_data, "requested bound");
  expect_error([&] { inspect(with_metadata_byte(file, 47, 0xff)); }, ErrorCode::corrupt_data, "requested bound");
}

// The reserved header byte (11), the graph's padding and the stage headers' padding are zero
// in every valid file.
TEST(Container, NonZeroReservedOrPaddingBytesAreErrors) {
  const Buffer file = sample_file();
  const Container c = inspect(file);
  EXPECT_NO_THROW(decompress(with_metadata_byte(file, 11, 0), {}));  // the helper alone changes nothing
  expect_error([&] { decompress(with_metadata_byte(file, 11, 1), {}); }, ErrorCode::corrupt_data, "reserved");
  const uint64_t graph_end = fixed_header_bytes + c.graph_bytes;
  ASSERT_LT(graph_end, fixed_header_bytes + padded8(c.graph_bytes)) << "the sample graph has no padding";
  expect_error([&] { decompress(with_metadata_byte(file, graph_end, ' '), {}); }, ErrorCode::corrupt_data, "graph padding");
  // The first stage header (Lorenzo's 32 bytes) has no padding; an odd size would. Its size
  // field is what follows the graph.
  const uint64_t header_size_at = fixed_header_bytes + padded8(c.graph_bytes);
  ASSERT_EQ(c.stage_headers.at(0).size(), 32u);
  expect_error([&] { decompress(with_metadata_byte(file, header_size_at, 31), {}); }, ErrorCode::corrupt_data, "");
}

// A file claiming more than 2^56 values (whose byte size would wrap past 64 bits for f64) is
// damage, not an 8-byte field.
TEST(Container, DimsPastTheLimitAreAnError) {
  const Buffer file = sample_file(DType::f64);
  Buffer bad = copy_of(file, file.size());
  const uint64_t x = (uint64_t(1) << 61) + 1, one = 1;
  std::memcpy(bad.data() + 16, &x, 8);
  std::memcpy(bad.data() + 24, &one, 8);
  std::memcpy(bad.data() + 32, &one, 8);
  bad.data()[10] = 1;
  bad = with_metadata_byte(bad, 11, 0, inspect(file).metadata_bytes);
  expect_error([&] { decompress(bad, {}); }, ErrorCode::corrupt_data, "dims");
}

// A graph that stores the field itself (a predictor alone, in lossless mode) returns memory of
// its own, never a view into the file (or into the aligned copy of an unaligned file, freed on
// return: a use after free that ASan reports).
TEST(Container, FieldStoredAsAStreamOutlivesTheFile) {
  const Graph graph = Graph::from_text(
      R"({"name": "lorenzo-only", "stages": [{"id": "predict", "type": "lorenzo", "inputs": {"field": "input"}}],)"
      R"( "store": ["predict.codes", "predict.outliers"]})");
  const Dims d = Dims::make({33, 9, 9});
  const Buffer field = testing::host_buffer(testing::make_values<float>(testing::Hazard::smooth, d.count()));
  CompressOptions options;
  options.bound = {ErrorMode::lossless, 0};
  const Buffer file = compress(graph, {field.data(), Location::host, DType::f32, d}, options);
  for (uint64_t shift : {0, 3}) {
    Buffer holder = Buffer::host(file.size() + 8);
    std::memcpy(holder.data() + shift, file.data(), file.size());
    Decompressed out = decompress(holder.slice(shift, file.size()), {});
    std::memset(holder.data(), 0xff, holder.size());  // the caller reuses its file buffer
    holder = Buffer();
    ASSERT_EQ(out.data.size(), field.size());
    EXPECT_EQ(std::memcmp(out.data.data(), field.data(), field.size()), 0) << "shift " << shift;
  }
}

// A zero-block stream too short for the group flags of the size it claims is damage, found
// before the claimed output (here 2^51 bytes) is allocated.
TEST(Container, ZeroBlockClaimingAHugeOutputIsAnErrorNotAnAllocation) {
  const Buffer file = sample_file();
  const Container c = inspect(file);
  Container patched = c;
  const size_t pack = c.chunks[0].stages.size() - 1;  // the default graph's last stage: zero-block
  patched.chunks[0].stages[pack].input_sizes = {uint64_t(1) << 51};
  patched.header.dims = Dims::make({uint64_t(1) << 50});
  patched.header.chunk_rows = uint64_t(1) << 50;  // one chunk
  const std::vector<uint8_t> metadata = write_metadata(patched);
  ASSERT_EQ(metadata.size(), c.metadata_bytes);
  ASSERT_EQ(inspect(file).chunks.size(), 1u);
  Buffer bad = copy_of(file, file.size());
  std::memcpy(bad.data(), metadata.data(), metadata.size());
  try {
    decompress(bad, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::corrupt_data) << e.what();
  }
}

// Header fields a reader must bound before it uses them: a chunk size past the field (whose
// chunk count once wrapped to 0, leaving the field undecoded), no stored stream, a chunk
// count that disagrees with the geometry.
TEST(Container, ImpossibleChunkGeometryIsAnError) {
  const Buffer file = sample_file();
  auto with_u64 = [&](uint64_t at, uint64_t value) {
    Buffer bad = copy_of(file, file.size());
    std::memcpy(bad.data() + at, &value, 8);
    return with_metadata_byte(bad, at, bad.data()[at]);  // the same byte: just the checksum made good
  };
  for (const uint64_t rows : {uint64_t(0), uint64_t(8), ~uint64_t(0) - 1, ~uint64_t(0)})
    expect_error([&] { decompress(with_u64(48, rows), {}); }, ErrorCode::corrupt_data, "");
  expect_error([&] { decompress(with_u64(64, 2), {}); }, ErrorCode::corrupt_data, "chunk count");
  Buffer no_streams = copy_of(file, file.size());
  const uint32_t zero = 0;
  std::memcpy(no_streams.data() + 60, &zero, 4);
  expect_error([&] { decompress(with_metadata_byte(no_streams, 60, 0), {}); }, ErrorCode::corrupt_data, "");
}

}  // namespace
}  // namespace fzg
