// Chunked execution and the chunk index: any chunk size gives the same reconstruction, each
// chunk codes (and stores raw) on its own, and a sub-box decodes from the chunks that hold it
// alone, reading nothing else of the file.
#include <set>

#include "core/checksum.hh"
#include "test_util.hh"

namespace fzg {
namespace {

Graph chunked(const Graph& graph, uint64_t chunk_values) {
  nlohmann::json config = graph.to_json();
  config["chunk_values"] = chunk_values;
  return Graph::from_json(config);
}

// The box cut out of a whole decoded field (x fastest).
std::vector<uint8_t> cut(const Buffer& field, const Dims& d, size_t value_bytes, const Box& b) {
  std::vector<uint8_t> out;
  for (uint64_t z = b.z0; z < b.z1; ++z)
    for (uint64_t y = b.y0; y < b.y1; ++y) {
      const uint8_t* row = field.data() + ((z * d.y + y) * d.x + b.x0) * value_bytes;
      out.insert(out.end(), row, row + (b.x1 - b.x0) * value_bytes);
    }
  return out;
}

Buffer compress_chunked(const Dims& d, uint64_t chunk_values, testing::Hazard hazard = testing::Hazard::spikes) {
  const Buffer field = testing::host_buffer(testing::make_values<float>(hazard, d.count()));
  CompressOptions options;
  options.bound = {ErrorMode::rel, 1e-3};
  return compress(chunked(Graph::default_fz(), chunk_values), {field.data(), Location::host, DType::f32, d}, options);
}

// Lorenzo tiles never cross a chunk, so chunks of any size code every tile as the whole
// field does: the reconstruction is the same bit for bit; only the container differs.
TEST(Chunks, AnyChunkSizeGivesTheSameReconstruction) {
  for (const auto& shape : std::vector<std::vector<uint64_t>>{{100003}, {333, 97}, {67, 33, 45}}) {
    const Dims d = Dims::make(shape);
    const Decompressed whole = decompress(compress_chunked(d, default_chunk_values), {});
    for (const uint64_t chunk : {uint64_t(1), uint64_t(5000), uint64_t(30000)}) {
      const Buffer file = compress_chunked(d, chunk);
      const Container c = inspect(file);
      EXPECT_GT(c.chunks.size(), 1u) << d.to_string() << ", chunk " << chunk;
      EXPECT_EQ(c.chunks.size(), chunk_count(d, c.header.chunk_rows));
      const Decompressed out = decompress(file, {});
      ASSERT_EQ(out.data.size(), whole.data.size());
      EXPECT_EQ(std::memcmp(out.data.data(), whole.data.data(), out.data.size()), 0) << d.to_string() << ", chunk " << chunk;
    }
  }
}

// A chunk is whole tile rows: one row of 3D tiles is 8 planes, of 2D tiles 32 rows, of 1D
// tiles 2048 values, whatever chunk_values asks below that.
TEST(Chunks, ChunksAreWholeTileRows) {
  EXPECT_EQ(inspect(compress_chunked(Dims::make({67, 33, 45}), 1)).header.chunk_rows, 8u);
  EXPECT_EQ(inspect(compress_chunked(Dims::make({333, 97}), 1)).header.chunk_rows, 32u);
  EXPECT_EQ(inspect(compress_chunked(Dims::make({100003}), 1)).header.chunk_rows, 2048u);
  EXPECT_EQ(inspect(compress_chunked(Dims::make({67, 33, 45}), 67 * 33 * 17)).header.chunk_rows, 16u);
}

// Each chunk decides on its own whether a coder's output beats its input: a u8 field whose
// first half is noise and second half zeros stores zero-block raw in the first chunks only.
TEST(Chunks, EachChunkStoresRawOnItsOwn) {
  const Dims d = Dims::make({64 * 1024});
  std::vector<uint8_t> v(d.count(), 0);
  std::mt19937 rng(3);
  for (size_t i = 0; i < v.size() / 2; ++i) v[i] = uint8_t(rng());
  const Buffer field = testing::host_buffer(v);
  CompressOptions options;
  options.bound = {ErrorMode::lossless, 0};
  const Buffer file = compress(chunked(Graph::default_fz(), 8192), {field.data(), Location::host, DType::u8, d}, options);
  const Container c = inspect(file);
  ASSERT_EQ(c.chunks.size(), 8u);
  const size_t pack = c.chunks[0].stages.size() - 1;
  EXPECT_TRUE(c.chunks.front().stages[pack].raw);
  EXPECT_FALSE(c.chunks.back().stages[pack].raw);
  const Decompressed out = decompress(file, {});
  ASSERT_EQ(out.data.size(), v.size());
  EXPECT_EQ(std::memcmp(out.data.data(), v.data(), v.size()), 0);
}

// Boxes inside one chunk, across chunk borders, touching the field's edges and the whole
// field, in 1D, 2D and 3D: each is the same values as the whole field's decode cut there.
TEST(Chunks, SubBoxesMatchTheWholeField) {
  struct Case {
    std::vector<uint64_t> shape;
    std::vector<Box> boxes;
  };
  const uint64_t all = ~uint64_t(0);
  const std::vector<Case> cases = {
      {{100003}, {{0, 1, 0, all, 0, all}, {4000, 9000, 0, all, 0, all}, {99000, 100003, 0, all, 0, all}, Box{}}},
      {{333, 97}, {{0, 333, 31, 33, 0, all}, {10, 20, 90, 97, 0, all}, {5, 6, 0, 97, 0, all}, Box{}}},
      {{67, 33, 45}, {{0, 67, 0, 33, 7, 9}, {3, 60, 4, 30, 15, 42}, {66, 67, 32, 33, 44, 45}, Box{}}}};
  for (const Case& k : cases) {
    const Dims d = Dims::make(k.shape);
    const Buffer file = compress_chunked(d, 2048);
    ASSERT_GT(inspect(file).chunks.size(), 2u);
    const Decompressed whole = decompress(file, {});
    for (Box b : k.boxes) {
      const Decompressed part = decompress_box(file, b, {});
      b.x1 = std::min(b.x1, d.x), b.y1 = std::min(b.y1, d.y), b.z1 = std::min(b.z1, d.z);
      const std::vector<uint8_t> expected = cut(whole.data, d, sizeof(float), b);
      ASSERT_EQ(part.data.size(), expected.size()) << d.to_string() << " " << b.to_string();
      EXPECT_EQ(std::memcmp(part.data.data(), expected.data(), expected.size()), 0) << d.to_string() << " " << b.to_string();
    }
  }
}

// The box's decode reads the metadata and the payload of the chunks that hold it, nothing
// else: damage anywhere else goes unseen, damage in its chunks is an error.
TEST(Chunks, SubBoxReadsOnlyItsChunks) {
  const Dims d = Dims::make({67, 33, 45});
  const Buffer file = compress_chunked(d, 67 * 33 * 8);  // a chunk per 8 planes: 6 chunks
  const Container c = inspect(file);
  ASSERT_EQ(c.chunks.size(), 6u);
  const Box box{0, 67, 0, 33, 17, 23};  // planes 17-22: chunk 2 alone
  std::set<std::pair<uint64_t, uint64_t>> reads;
  auto reader = [&](const Buffer& f) {
    return [&reads, &f](uint64_t offset, uint64_t size, void* into) {
      reads.insert({offset, offset + size});
      std::memcpy(into, f.data() + offset, size);
    };
  };
  const Decompressed part = decompress_box(reader(file), file.size(), box, {});
  const uint64_t chunk_begin = c.chunks[2].stream_offsets.front(), chunk_end = c.chunks[3].stream_offsets.front();
  for (const auto& [from, to] : reads)
    EXPECT_TRUE(to <= c.metadata_bytes || (from >= chunk_begin && to <= chunk_end)) << "read [" << from << ", " << to << ")";
  // A flipped byte in every other chunk's payload: the box still decodes, to the same values.
  Buffer damaged = Buffer::host(file.size());
  std::memcpy(damaged.data(), file.data(), file.size());
  for (uint64_t k = 0; k < c.chunks.size(); ++k)
    if (k != 2) damaged.data()[c.chunks[k].stream_offsets.front()] ^= 0x10;
  reads.clear();
  const Decompressed again = decompress_box(reader(damaged), damaged.size(), box, {});
  ASSERT_EQ(again.data.size(), part.data.size());
  EXPECT_EQ(std::memcmp(again.data.data(), part.data.data(), part.data.size()), 0);
  EXPECT_THROW(decompress(damaged, {}), Error);
  damaged.data()[chunk_begin] ^= 0x10;
  try {
    decompress_box(damaged, box, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::corrupt_data) << e.what();
  }
}

// A damaged metadata size (the fixed header's, which the header checksum covers only once the
// metadata is read) is refused after a few small reads, not a read of the whole file: the
// fixed header and the stage headers' sizes bound the metadata.
TEST(Chunks, DamagedMetadataSizeIsRefusedWithoutReadingTheFile) {
  const Dims d = Dims::make({67, 33, 45});
  const Buffer file = compress_chunked(d, 67 * 33 * 8);
  const uint64_t metadata = inspect(file).metadata_bytes;
  ASSERT_GT(file.size(), 64 * metadata);
  for (const uint64_t claimed : {metadata + 8, metadata + 4096, file.size() - 8, file.size(), ~uint64_t(0)}) {
    SCOPED_TRACE(claimed);
    Buffer damaged = Buffer::host(file.size());
    std::memcpy(damaged.data(), file.data(), file.size());
    for (int b = 0; b < 8; ++b) damaged.data()[72 + b] = uint8_t(claimed >> (8 * b));
    uint64_t read_bytes = 0;
    const FileReader read = [&](uint64_t offset, uint64_t size, void* into) {
      ASSERT_LE(offset + size, damaged.size());
      read_bytes += size;
      std::memcpy(into, damaged.data() + offset, size);
    };
    // Past the room the tables leave: refused from the fixed header and the stage headers' sizes.
    const uint64_t most = claimed >= file.size() - 8 ? 256 : 32 * metadata;
    testing::expect_error([&] { inspect(read, damaged.size()); }, ErrorCode::corrupt_data, "");
    EXPECT_LE(read_bytes, most);
    read_bytes = 0;
    testing::expect_error([&] { decompress_box(read, damaged.size(), Box{0, 67, 0, 33, 17, 23}, {}); },
                          ErrorCode::corrupt_data, "");
    EXPECT_LE(read_bytes, most);
    testing::expect_error([&] { inspect(damaged); }, ErrorCode::corrupt_data, "");
  }
}

TEST(Chunks, BoxOutsideTheFieldIsAnError) {
  const Dims d = Dims::make({67, 33, 45});
  const Buffer file = compress_chunked(d, 2048);
  for (const Box& b : {Box{67, 70, 0, 1, 0, 1}, Box{0, 1, 0, 1, 45, 46}}) {
    try {
      decompress_box(file, b, {});
      ADD_FAILURE() << "no error for " << b.to_string();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    }
  }
}

// The default chunk size splits fields past 64 M values; chunk_values is part of the
// canonical graph, so the file records how it was chunked.
TEST(Chunks, ChunkValuesTravelsInTheCanonicalGraph) {
  const Graph graph = chunked(Graph::default_fz(), 12345);
  EXPECT_EQ(graph.chunk_values(), 12345u);
  EXPECT_EQ(Graph::from_text(graph.canonical_text()).chunk_values(), 12345u);
  EXPECT_EQ(Graph::default_fz().chunk_values(), default_chunk_values);
  nlohmann::json signed_count = Graph::default_fz().to_json();
  signed_count["chunk_values"] = int64_t{16384};  // what json["chunk_values"] = 16384 makes in code
  EXPECT_EQ(Graph::from_json(signed_count).chunk_values(), 16384u);
  nlohmann::json bad = Graph::default_fz().to_json();
  for (const nlohmann::json& value : {nlohmann::json(0), nlohmann::json(-5), nlohmann::json("many"), nlohmann::json(1.5)}) {
    bad["chunk_values"] = value;
    EXPECT_THROW(Graph::from_json(bad), Error) << value.dump();
  }
}

}  // namespace
}  // namespace fzg
