// The container: what it records, and what happens to damaged files: a clear error or a
// correct result, never a crash (these tests also run under ASan and UBSan in CI).
#include <random>

#include "pipeline/checksum.hh"
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

Buffer copy_of(const Buffer& b, size_t size) {
  Buffer c = Buffer::host(size);
  std::memcpy(c.data(), b.data(), std::min(size, b.size()));
  return c;
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

TEST(Container, HeaderRecordsTheRequest) {
  const Container c = inspect(sample_file());
  EXPECT_EQ(c.header.dtype, DType::f32);
  EXPECT_EQ(c.header.mode, ErrorMode::rel);
  EXPECT_EQ(c.header.dims.x, 40u);
  EXPECT_EQ(c.header.dims.z, 7u);
  EXPECT_EQ(c.header.requested_bound, 1e-3);
  EXPECT_EQ(c.streams.size(), 2u);
  EXPECT_EQ(c.stages.size(), 3u);
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
    const size_t s = trial % c.streams.size();
    if (c.streams[s].size == 0) continue;
    const uint64_t at = c.stream_offsets[s] + rng() % c.streams[s].size;
    bad.data()[at] ^= uint8_t(1u << (rng() % 8));
    Container patched = c;
    patched.streams[s].checksum = checksum_host(bad.data() + c.stream_offsets[s], c.streams[s].size);
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

// The bytes between a stream's end and the next 8-byte boundary are zero in every valid file;
// each of their bits flipped is a checksum mismatch, not a file accepted as it is.
TEST(Container, FlippedPaddingBitIsAnError) {
  const Buffer file = sample_file();
  const Container c = inspect(file);
  int padding_bits = 0;
  for (size_t s = 0; s < c.streams.size(); ++s)
    for (uint64_t at = c.stream_offsets[s] + c.streams[s].size; at < c.stream_offsets[s] + padded8(c.streams[s].size);
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
  for (size_t k = 0; k < c.streams.size(); ++k)
    streams.emplace_back(file.data() + c.stream_offsets[k], file.data() + c.stream_offsets[k] + c.streams[k].size);
  streams[s] = bytes;
  for (size_t k = 0; k < streams.size(); ++k) c.streams[k] = {streams[k].size(), checksum_host(streams[k].data(), streams[k].size())};
  const std::vector<uint8_t> metadata = write_metadata(c);
  Buffer out = Buffer::host(c.total_bytes);
  std::memset(out.data(), 0, out.size());
  std::memcpy(out.data(), metadata.data(), metadata.size());
  for (size_t k = 0; k < streams.size(); ++k)
    if (!streams[k].empty()) std::memcpy(out.data() + c.stream_offsets[k], streams[k].data(), streams[k].size());
  return out;
}

// An empty stream with a valid checksum (once a null pointer handed to memcpy) is a clear
// error for every stream of the file.
TEST(Container, EmptyStreamWithAValidChecksumIsAnError) {
  const Buffer file = sample_file();
  const size_t streams = inspect(file).streams.size();
  for (size_t s = 0; s < streams; ++s) {
    SCOPED_TRACE("stream " + std::to_string(s));
    expect_error([&] { decompress(with_stream(file, s, {}), {}); }, ErrorCode::corrupt_data, "");
  }
}

}  // namespace
}  // namespace fzg
