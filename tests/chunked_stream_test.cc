// The chunked-stream scaffold (varlen/chunked_stream.hh) with a toy coder: a chunk of one
// repeated byte codes to that byte, anything else does not fit and is stored raw.
#include "core/error.hh"
#include "test_util.hh"
#include "varlen/chunked_stream.hh"
#include "varlen/scan.hh"

namespace fzg {
namespace {

class RepeatCoder final : public chunked::ChunkCoder {
 public:
  uint32_t chunk_bytes() const override { return 8; }
  uint64_t encode_chunk(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t capacity) const override {
    for (uint32_t i = 1; i < n; ++i)
      if (in[i] != in[0]) return uint64_t(capacity) + 1;
    out[0] = in[0];
    return 1;
  }
  void decode_chunk(const uint8_t* in, uint32_t size, uint8_t* out, uint32_t n) const override {
    require_data(size == 1, "repeat chunk");
    std::fill(out, out + n, in[0]);
  }
};

uint32_t entry(const Buffer& stream, uint64_t k) {
  uint32_t e;
  std::memcpy(&e, stream.data() + 4 * k, 4);
  return e;
}

TEST(ChunkedStream, ChunksThatDoNotShrinkAreStoredRawAndTheRestPacked) {
  // Chunks: 8 x 'a' (codes), "abcdefgh" (raw), 8 x 'z' (codes), a ragged 3 x 'q' (codes), so
  // the table says 1 | raw 8 | 1 | 1 and the payload is "a" "abcdefgh" "z" "q".
  std::string text = "aaaaaaaaabcdefghzzzzzzzzqqq";
  const Buffer in = testing::host_buffer(std::vector<uint8_t>(text.begin(), text.end()));
  const RepeatCoder coder;
  const Buffer stream = chunked::encode_cpu(coder, in.data(), in.size());
  ASSERT_EQ(stream.size(), 16u + 11u);
  EXPECT_EQ(entry(stream, 0), 1u);
  EXPECT_EQ(entry(stream, 1), chunked::raw_flag | 8u);
  EXPECT_EQ(entry(stream, 2), 1u);
  EXPECT_EQ(entry(stream, 3), 1u);
  EXPECT_EQ(std::string(stream.data() + 16, stream.data() + stream.size()), "aabcdefghzq");
  std::vector<uint8_t> back(in.size());
  chunked::decode_cpu(coder, stream.data(), stream.size(), back.data(), back.size());
  EXPECT_EQ(std::string(back.begin(), back.end()), text);
}

TEST(ChunkedStream, EmptyInputIsAnEmptyStreamAndOneByteIsRaw) {
  const RepeatCoder coder;
  EXPECT_EQ(chunked::encode_cpu(coder, nullptr, 0).size(), 0u);
  chunked::decode_cpu(coder, nullptr, 0, nullptr, 0);
  const uint8_t one = 42;
  const Buffer stream = chunked::encode_cpu(coder, &one, 1);
  ASSERT_EQ(stream.size(), 5u);
  EXPECT_EQ(entry(stream, 0), chunked::raw_flag | 1u);
}

TEST(ChunkedStream, InconsistentTablesAreCorruptData) {
  const RepeatCoder coder;
  std::string text(16, 'a');
  text[9] = 'b';
  const Buffer in = testing::host_buffer(std::vector<uint8_t>(text.begin(), text.end()));
  const Buffer good = chunked::encode_cpu(coder, in.data(), in.size());  // 1 | raw 8, then 9 bytes
  // Decodes the stream after `damage`.
  auto decode = [&](auto damage) {
    return [&good, &in, &coder, damage] {
      std::vector<uint8_t> bytes(good.data(), good.data() + good.size());
      damage(bytes);
      std::vector<uint8_t> out(in.size());
      chunked::decode_cpu(coder, bytes.data(), bytes.size(), out.data(), out.size());
    };
  };
  auto rejects = [&](auto damage) { testing::expect_error(decode(damage), ErrorCode::corrupt_data, ""); };
  EXPECT_NO_THROW(decode([](std::vector<uint8_t>&) {})());
  auto set = [](std::vector<uint8_t>& b, int k, uint32_t v) { std::memcpy(b.data() + 4 * k, &v, 4); };
  rejects([&](std::vector<uint8_t>& b) { set(b, 1, chunked::raw_flag | 7); });  // raw, not whole
  rejects([&](std::vector<uint8_t>& b) { set(b, 0, 8); });    // coded, not smaller
  rejects([&](std::vector<uint8_t>& b) { set(b, 0, 0); });    // coded, empty
  rejects([&](std::vector<uint8_t>& b) { set(b, 0, 2); });    // sizes past the stream
  rejects([&](std::vector<uint8_t>& b) { b.push_back(0); });  // bytes after the chunks
  rejects([&](std::vector<uint8_t>& b) { b.resize(6); });     // a cut table
  rejects([&](std::vector<uint8_t>& b) {                      // the coder's own check
    set(b, 0, 2), set(b, 1, chunked::raw_flag | 8), b.insert(b.begin() + 8, 0);
  });
}

TEST(VarlenScan, ExclusiveScanWritesTheTotalLast) {
  std::vector<uint64_t> out(5);
  const uint64_t counts[] = {3, 0, 5, 1};
  EXPECT_EQ(varlen::exclusive_scan([&](uint64_t i) { return counts[i]; }, 4, out.data()), 9u);
  EXPECT_EQ(out, (std::vector<uint64_t>{0, 3, 3, 8, 9}));
}

}  // namespace
}  // namespace fzg
