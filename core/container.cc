#include "core/container.hh"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/checksum.hh"
#include "core/error.hh"
#include "core/graph_code.hh"

namespace fzg {

namespace {

class Writer {
 public:
  template <typename T> void put(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + n);
  }
  void pad8() { bytes.resize(padded8(bytes.size()), 0); }
  std::vector<uint8_t> bytes;
};

class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  template <typename T> T get(const char* what) {
    require_data(pos_ + sizeof(T) <= size_, what);
    T value;
    std::memcpy(&value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  const uint8_t* take(uint64_t n, const char* what) {
    require_data(pos_ <= size_ && n <= size_ - pos_, what);
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  void seek(uint64_t pos) {
    require_data(pos <= size_, "metadata");
    pos_ = pos;
  }
  uint64_t position() const { return pos_; }

 private:
  const uint8_t* data_;
  uint64_t size_, pos_ = 0;
};

constexpr uint64_t checksum_offset_v1 = 96;

Dims read_dims(Reader& r, uint8_t rank) {
  const uint64_t x = r.get<uint64_t>("dims"), y = r.get<uint64_t>("dims"), z = r.get<uint64_t>("dims");
  Dims dims;
  try {
    dims = Dims::make({x, y, z});
  } catch (const Error&) {
    require_data(false, "dims");
  }
  require_data(dims.rank <= rank && rank <= 3, "rank");
  dims.rank = rank;
  return dims;
}

// The fields both versions share, offsets 8 to 48: type, mode, rank, graph size, dims and the
// requested bound. Returns the graph's size.
uint32_t read_common_header(Reader& r, Header& h) {
  r.seek(8);
  h.dtype = DType(r.get<uint8_t>("header"));
  dtype_size(h.dtype);  // throws on an unknown code
  const uint8_t mode = r.get<uint8_t>("header");
  require_data(mode >= 1 && mode <= 4, "error mode");
  h.mode = ErrorMode(mode);
  const uint8_t rank = r.get<uint8_t>("header");
  require_data(r.get<uint8_t>("header") == 0, "reserved header byte");
  const uint32_t graph_bytes = r.get<uint32_t>("header");
  h.dims = read_dims(r, rank);
  h.requested_bound = r.get<double>("header");
  // Writers store the finite, non-negative bound they were given (0 when lossless).
  require_data(std::isfinite(h.requested_bound) && h.requested_bound >= 0, "requested bound");
  return graph_bytes;
}

// The graph's JSON: as it is before version 3, coded from version 3 on.
std::string read_graph(Reader& r, uint32_t graph_bytes, uint16_t version) {
  const uint8_t* bytes = r.take(graph_bytes, "graph");
  const uint8_t* padding = r.take(padded8(graph_bytes) - graph_bytes, "graph");
  for (uint64_t i = 0; i < padded8(graph_bytes) - graph_bytes; ++i) require_data(padding[i] == 0, "graph padding");
  if (version >= 3) return decode_graph_text(bytes, graph_bytes);
  return std::string(reinterpret_cast<const char*>(bytes), graph_bytes);
}

StageRecord read_stage_record(Reader& r) {
  StageRecord st;
  const uint32_t flags = r.get<uint32_t>("stage table");
  require_data(flags <= 1, "stage flags");
  st.raw = flags & 1;
  const uint32_t inputs = r.get<uint32_t>("stage table");
  require_data(inputs <= 16, "stage input count");
  for (uint32_t k = 0; k < inputs; ++k) st.input_sizes.push_back(r.get<uint64_t>("stage table"));
  return st;
}

// The checksum of the metadata with its own 8 bytes at `at` (a word of the sum: a multiple
// of 8) taken as zero: that word's term swapped for a zero word's, rather than the metadata
// copied (which doubled the memory a large metadata takes).
void check_header_checksum(const uint8_t* data, uint64_t metadata_bytes, uint64_t at, uint64_t stored_sum) {
  require_data(at % 8 == 0 && at + 8 <= metadata_bytes, "metadata size");
  uint64_t word;
  std::memcpy(&word, data + at, 8);
  const uint64_t salt = at / 8 * checksum_salt;
  const uint64_t sum = checksum_host(data, metadata_bytes) - checksum_mix(word ^ salt) + checksum_mix(salt);
  require_data(sum == stored_sum, "header checksum mismatch");
}

// Stream offsets from the sizes, and the payload's and file's sizes checked against them.
void place_streams(Container& c, uint64_t payload, uint64_t file_bytes) {
  uint64_t offset = c.metadata_bytes, sum = 0;
  for (auto& chunk : c.chunks) {
    chunk.stream_offsets.clear();
    for (const auto& s : chunk.streams) {
      require_data(s.size <= file_bytes, "stream size");
      chunk.stream_offsets.push_back(offset);
      offset += padded8(s.size);
      sum += padded8(s.size);
      require_data(sum <= file_bytes, "payload size");
    }
  }
  require_data(sum == payload, "payload size");
  c.total_bytes = offset;
  require_data(c.total_bytes <= file_bytes, "file truncated");
  require_data(c.total_bytes == file_bytes, "trailing bytes after the payload");
}

// Version 1: one chunk; the quantization in the fixed header, the stage and stream tables
// after the graph.
Container read_metadata_v1(const uint8_t* data, uint64_t available, uint64_t file_bytes) {
  require_data(available >= fixed_header_bytes_v1, "file shorter than its header");
  Container c;
  c.header.version = 1;
  Reader r(data, available);
  const uint32_t graph_bytes = read_common_header(r, c.header);
  c.header.chunk_rows = std::max<uint64_t>(1, slowest_extent(c.header.dims));
  const uint8_t* quantization = r.take(32, "header");
  c.v1_predictor_header.assign(quantization, quantization + 32);
  const uint32_t stage_count = r.get<uint32_t>("header"), stream_count = r.get<uint32_t>("header");
  const uint64_t payload = r.get<uint64_t>("header");
  const uint64_t stored_sum = r.get<uint64_t>("header");
  require_data(r.get<uint64_t>("header") == 0, "reserved header bytes");
  c.graph_json = read_graph(r, graph_bytes, 1);
  c.graph_bytes = graph_bytes;
  ChunkRecord chunk;
  for (uint32_t i = 0; i < stage_count; ++i) chunk.stages.push_back(read_stage_record(r));
  for (uint32_t i = 0; i < stream_count; ++i) {
    StreamRecord s;
    s.size = r.get<uint64_t>("stream table");
    s.checksum = r.get<uint64_t>("stream table");
    chunk.streams.push_back(s);
  }
  c.chunks.push_back(std::move(chunk));
  c.stage_headers.assign(stage_count, {});
  c.metadata_bytes = r.position();
  check_header_checksum(data, c.metadata_bytes, checksum_offset_v1, stored_sum);
  place_streams(c, payload, file_bytes);
  return c;
}

}  // namespace

uint64_t slowest_extent(const Dims& dims) { return dims.rank == 1 ? dims.x : dims.rank == 2 ? dims.y : dims.z; }

uint64_t chunk_count(const Dims& dims, uint64_t chunk_rows) {
  const uint64_t extent = slowest_extent(dims);
  return extent == 0 ? 1 : extent / chunk_rows + (extent % chunk_rows != 0);  // no wrap for any chunk_rows
}

Dims chunk_dims(const Dims& dims, uint64_t chunk_rows, uint64_t k) {
  Dims d = dims;
  const uint64_t extent = slowest_extent(dims);
  const uint64_t first = std::min(extent, k * chunk_rows), rows = std::min(chunk_rows, extent - first);
  (dims.rank == 1 ? d.x : dims.rank == 2 ? d.y : d.z) = rows;
  return d;
}

uint64_t chunk_first_value(const Dims& dims, uint64_t chunk_rows, uint64_t k) {
  const uint64_t per_row = dims.rank == 1 ? 1 : dims.rank == 2 ? dims.x : dims.x * dims.y;
  return std::min(slowest_extent(dims), k * chunk_rows) * per_row;
}

std::vector<uint8_t> write_metadata(Container& c) {
  const uint64_t streams = c.chunks.empty() ? 0 : c.chunks[0].streams.size();
  if (c.stage_headers.size() > max_stage_count || streams > max_stream_count)
    fail(ErrorCode::invalid_argument, "a file holds at most " + std::to_string(max_stage_count) + " stages and " +
                                          std::to_string(max_stream_count) + " stored streams");
  const std::vector<uint8_t> graph = encode_graph_text(c.graph_json);
  c.graph_bytes = graph.size();
  Writer w;
  w.put_bytes(container_magic, 4);
  w.put<uint16_t>(container_version);
  w.put<uint16_t>(uint16_t(fixed_header_bytes));
  w.put<uint8_t>(uint8_t(c.header.dtype));
  w.put<uint8_t>(uint8_t(c.header.mode));
  w.put<uint8_t>(uint8_t(c.header.dims.rank));
  w.put<uint8_t>(0);
  w.put<uint32_t>(uint32_t(graph.size()));
  w.put<uint64_t>(c.header.dims.x);
  w.put<uint64_t>(c.header.dims.y);
  w.put<uint64_t>(c.header.dims.z);
  w.put<double>(c.header.requested_bound);
  w.put<uint64_t>(c.header.chunk_rows);
  w.put<uint32_t>(uint32_t(c.stage_headers.size()));
  w.put<uint32_t>(uint32_t(streams));
  w.put<uint64_t>(c.chunks.size());
  const size_t metadata_at = w.bytes.size();
  w.put<uint64_t>(0);  // metadata size, filled below
  uint64_t payload = 0;
  for (const auto& chunk : c.chunks)
    for (const auto& s : chunk.streams) payload += padded8(s.size);
  w.put<uint64_t>(payload);
  w.put<uint64_t>(0);  // header checksum, filled below
  w.put_bytes(graph.data(), graph.size());
  w.pad8();
  for (const auto& h : c.stage_headers) {
    w.put<uint64_t>(h.size());
    w.put_bytes(h.data(), h.size());
    w.pad8();
  }
  for (const auto& chunk : c.chunks)
    for (const auto& st : chunk.stages) {
      w.put<uint32_t>(st.raw ? 1u : 0u);
      w.put<uint32_t>(uint32_t(st.input_sizes.size()));
      for (uint64_t s : st.input_sizes) w.put<uint64_t>(s);
    }
  for (const auto& chunk : c.chunks)
    for (const auto& s : chunk.streams) {
      w.put<uint64_t>(s.size);
      w.put<uint64_t>(s.checksum);
    }
  c.metadata_bytes = w.bytes.size();
  std::memcpy(w.bytes.data() + metadata_at, &c.metadata_bytes, 8);
  uint64_t offset = c.metadata_bytes;
  for (auto& chunk : c.chunks) {
    chunk.stream_offsets.clear();
    for (const auto& s : chunk.streams) {
      chunk.stream_offsets.push_back(offset);
      offset += padded8(s.size);
    }
  }
  c.total_bytes = offset;
  const uint64_t sum = checksum_host(w.bytes.data(), w.bytes.size());
  std::memcpy(w.bytes.data() + header_checksum_offset, &sum, 8);
  return w.bytes;
}

void check_magic(const uint8_t* head, uint64_t available_bytes, bool whole) {
  if ((whole && available_bytes < 4) || std::memcmp(head, container_magic, std::min<uint64_t>(available_bytes, 4)) != 0)
    fail(ErrorCode::corrupt_data, "not an fzg file (bad magic)");
}

namespace {
uint16_t read_version(const uint8_t* head, uint64_t available_bytes) {
  check_magic(head, available_bytes, true);
  Reader r(head, available_bytes);
  r.seek(4);
  const uint16_t version = r.get<uint16_t>("header");
  if (version < 1 || version > container_version)
    fail(ErrorCode::unsupported, "fzg format version " + std::to_string(version) +
                                     " is not supported (this build reads 1 to " + std::to_string(container_version) + ")");
  require_data(r.get<uint16_t>("header") == (version == 1 ? fixed_header_bytes_v1 : fixed_header_bytes), "header size");
  return version;
}
}  // namespace

uint64_t metadata_size_bound(const uint8_t* head, uint64_t available_bytes) {
  const uint16_t version = read_version(head, available_bytes);
  Reader r(head, available_bytes);
  if (version >= 2) {
    r.seek(72);
    const uint64_t metadata = r.get<uint64_t>("header");
    require_data(metadata >= fixed_header_bytes, "metadata size");
    return metadata;
  }
  r.seek(12);
  const uint64_t graph_bytes = r.get<uint32_t>("header");
  r.seek(80);
  const uint64_t stages = r.get<uint32_t>("header"), streams = r.get<uint32_t>("header");
  require_data(stages <= max_stage_count && streams <= max_stream_count, "stage or stream count");
  // A stage record has at most 16 input sizes.
  return fixed_header_bytes_v1 + padded8(graph_bytes) + stages * (8 + 16 * 8) + streams * 16;
}

namespace {

// A version 2+ file's fixed header (its first fixed_header_bytes), checked against itself.
struct FixedHeader {
  uint32_t graph_bytes, stage_count, stream_count;
  uint64_t chunks, metadata, payload, stored_sum;
};
FixedHeader read_fixed_header(const uint8_t* data, uint64_t available, uint64_t file_bytes, Header& header) {
  require_data(available >= fixed_header_bytes, "file shorter than its header");
  Reader r(data, fixed_header_bytes);
  FixedHeader f;
  f.graph_bytes = read_common_header(r, header);
  header.chunk_rows = r.get<uint64_t>("header");
  // Writers never chunk past the field's slowest extent.
  require_data(header.chunk_rows >= 1 && header.chunk_rows <= std::max<uint64_t>(1, slowest_extent(header.dims)),
               "chunk rows");
  f.stage_count = r.get<uint32_t>("header"), f.stream_count = r.get<uint32_t>("header");
  f.chunks = r.get<uint64_t>("header");
  // Every graph stores at least one stream.
  require_data(f.stage_count <= max_stage_count && f.stream_count >= 1 && f.stream_count <= max_stream_count,
               "stage or stream count");
  require_data(f.chunks == chunk_count(header.dims, header.chunk_rows), "chunk count");
  f.metadata = r.get<uint64_t>("header");
  require_data(f.metadata >= fixed_header_bytes && f.metadata <= file_bytes, "metadata size");
  // Every chunk takes at least 8 bytes per stage and 16 per stream of the metadata.
  require_data(f.chunks <= f.metadata / (8 * uint64_t(f.stage_count) + 16 * uint64_t(f.stream_count) + 1),
               "chunk count");
  f.payload = r.get<uint64_t>("header");
  f.stored_sum = r.get<uint64_t>("header");
  return f;
}

}  // namespace

uint64_t metadata_bytes_to_read(const uint8_t* head, uint64_t head_bytes, uint64_t file_bytes,
                                const std::function<uint64_t(uint64_t)>& read_u64) {
  if (read_version(head, head_bytes) == 1) return std::min(metadata_size_bound(head, head_bytes), file_bytes);
  Header header;
  const FixedHeader f = read_fixed_header(head, head_bytes, file_bytes, header);
  uint64_t at = fixed_header_bytes + padded8(f.graph_bytes);
  for (uint32_t i = 0; i < f.stage_count; ++i) {
    require_data(at <= f.metadata && f.metadata - at >= 8, "metadata size");
    const uint64_t size = read_u64(at);
    require_data(size <= f.metadata - at - 8, "stage header");
    at += 8 + padded8(size);
  }
  // A stage record holds at most 16 input sizes; the fixed header checked the chunk count.
  const uint64_t per_chunk = uint64_t(f.stage_count) * (8 + 16 * 8) + uint64_t(f.stream_count) * 16;
  require_data(f.metadata <= at + f.chunks * per_chunk, "metadata size");  // refused before the metadata is read
  return f.metadata;
}

Container read_metadata(const uint8_t* data, uint64_t available, uint64_t file_bytes) {
  const uint16_t version = read_version(data, available);
  if (version == 1) return read_metadata_v1(data, available, file_bytes);
  Container c;
  c.header.version = version;
  const FixedHeader f = read_fixed_header(data, available, file_bytes, c.header);
  const uint32_t graph_bytes = f.graph_bytes, stage_count = f.stage_count, stream_count = f.stream_count;
  const uint64_t chunks = f.chunks, metadata = f.metadata, payload = f.payload;
  require_data(metadata <= available, "metadata size");
  // The checksum first: nothing is allocated from tables it has not vouched for.
  check_header_checksum(data, metadata, header_checksum_offset, f.stored_sum);
  Reader m(data, metadata);
  m.seek(fixed_header_bytes);
  c.graph_json = read_graph(m, graph_bytes, version);
  c.graph_bytes = graph_bytes;
  for (uint32_t i = 0; i < stage_count; ++i) {
    const uint64_t size = m.get<uint64_t>("stage header");
    const uint8_t* bytes = m.take(size, "stage header");
    c.stage_headers.emplace_back(bytes, bytes + size);
    const uint8_t* padding = m.take(padded8(size) - size, "stage header");
    for (uint64_t k = 0; k < padded8(size) - size; ++k) require_data(padding[k] == 0, "stage header padding");
  }
  c.chunks.resize(chunks);
  for (auto& chunk : c.chunks)
    for (uint32_t i = 0; i < stage_count; ++i) chunk.stages.push_back(read_stage_record(m));
  for (auto& chunk : c.chunks)
    for (uint32_t i = 0; i < stream_count; ++i) {
      StreamRecord s;
      s.size = m.get<uint64_t>("stream table");
      s.checksum = m.get<uint64_t>("stream table");
      chunk.streams.push_back(s);
    }
  require_data(m.position() == metadata, "metadata size");
  c.metadata_bytes = metadata;
  place_streams(c, payload, file_bytes);
  return c;
}

}  // namespace fzg
