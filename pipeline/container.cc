#include "pipeline/container.hh"

#include <cstring>

#include "pipeline/checksum.hh"
#include "pipeline/error.hh"

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

constexpr uint64_t checksum_offset = 96;

}  // namespace

std::vector<uint8_t> write_metadata(Container& c) {
  Writer w;
  w.put_bytes(container_magic, 4);
  w.put<uint16_t>(container_version);
  w.put<uint16_t>(uint16_t(fixed_header_bytes));
  w.put<uint8_t>(uint8_t(c.header.dtype));
  w.put<uint8_t>(uint8_t(c.header.mode));
  w.put<uint8_t>(uint8_t(c.header.dims.rank));
  w.put<uint8_t>(0);
  w.put<uint32_t>(uint32_t(c.graph_json.size()));
  w.put<uint64_t>(c.header.dims.x);
  w.put<uint64_t>(c.header.dims.y);
  w.put<uint64_t>(c.header.dims.z);
  w.put<double>(c.header.requested_bound);
  w.put<double>(c.header.quant.error_bound);
  w.put<double>(c.header.quant.step);
  w.put<double>(c.header.quant.min);
  w.put<double>(c.header.quant.max);
  w.put<uint32_t>(uint32_t(c.stages.size()));
  w.put<uint32_t>(uint32_t(c.streams.size()));
  uint64_t payload = 0;
  for (const auto& s : c.streams) payload += padded8(s.size);
  w.put<uint64_t>(payload);
  w.put<uint64_t>(0);  // header checksum, filled below
  w.put<uint64_t>(0);  // reserved
  w.put_bytes(c.graph_json.data(), c.graph_json.size());
  w.pad8();
  for (const auto& st : c.stages) {
    w.put<uint32_t>(st.raw ? 1u : 0u);
    w.put<uint32_t>(uint32_t(st.input_sizes.size()));
    for (uint64_t s : st.input_sizes) w.put<uint64_t>(s);
  }
  for (const auto& s : c.streams) {
    w.put<uint64_t>(s.size);
    w.put<uint64_t>(s.checksum);
  }
  c.metadata_bytes = w.bytes.size();
  c.stream_offsets.clear();
  uint64_t offset = c.metadata_bytes;
  for (const auto& s : c.streams) {
    c.stream_offsets.push_back(offset);
    offset += padded8(s.size);
  }
  c.total_bytes = offset;
  const uint64_t sum = checksum_host(w.bytes.data(), w.bytes.size());
  std::memcpy(w.bytes.data() + checksum_offset, &sum, 8);
  return w.bytes;
}

uint64_t metadata_size_bound(const uint8_t* head, uint64_t available_bytes) {
  if (available_bytes < 4 || std::memcmp(head, container_magic, 4) != 0)
    fail(ErrorCode::corrupt_data, "not an fzg file (bad magic)");
  Reader r(head, available_bytes);
  r.seek(4);
  const uint16_t version = r.get<uint16_t>("header");
  if (version != container_version)
    fail(ErrorCode::unsupported, "fzg format version " + std::to_string(version) + " is not supported (this build reads " +
                                     std::to_string(container_version) + ")");
  require_data(r.get<uint16_t>("header") == fixed_header_bytes, "header size");
  r.seek(12);
  const uint64_t graph_bytes = r.get<uint32_t>("header");
  r.seek(80);
  const uint64_t stages = r.get<uint32_t>("header"), streams = r.get<uint32_t>("header");
  require_data(stages < 4096 && streams < 4096, "stage or stream count");
  // A stage record has at most 16 input sizes.
  return fixed_header_bytes + padded8(graph_bytes) + stages * (8 + 16 * 8) + streams * 16;
}

Container read_metadata(const uint8_t* data, uint64_t available, uint64_t file_bytes) {
  metadata_size_bound(data, available);
  require_data(available >= fixed_header_bytes, "file shorter than its header");
  Container c;
  Reader r(data, available);
  r.seek(8);
  c.header.dtype = DType(r.get<uint8_t>("header"));
  dtype_size(c.header.dtype);  // throws on an unknown code
  const uint8_t mode = r.get<uint8_t>("header");
  require_data(mode >= 1 && mode <= 4, "error mode");
  c.header.mode = ErrorMode(mode);
  const uint8_t rank = r.get<uint8_t>("header");
  require_data(r.get<uint8_t>("header") == 0, "reserved header byte");
  const uint32_t graph_bytes = r.get<uint32_t>("header");
  const uint64_t x = r.get<uint64_t>("dims"), y = r.get<uint64_t>("dims"), z = r.get<uint64_t>("dims");
  try {
    c.header.dims = Dims::make({x, y, z});
  } catch (const Error&) {
    require_data(false, "dims");
  }
  require_data(c.header.dims.rank <= rank && rank <= 3, "rank");
  c.header.dims.rank = rank;
  c.header.requested_bound = r.get<double>("header");
  c.header.quant.error_bound = r.get<double>("header");
  c.header.quant.step = r.get<double>("header");
  c.header.quant.min = r.get<double>("header");
  c.header.quant.max = r.get<double>("header");
  require_data(c.header.quant.step > 0 && c.header.quant.error_bound >= 0, "quantization");
  const uint32_t stage_count = r.get<uint32_t>("header"), stream_count = r.get<uint32_t>("header");
  const uint64_t payload = r.get<uint64_t>("header");
  const uint64_t stored_sum = r.get<uint64_t>("header");
  require_data(r.get<uint64_t>("header") == 0, "reserved header bytes");
  c.graph_json.assign(reinterpret_cast<const char*>(r.take(graph_bytes, "graph")), graph_bytes);
  const uint8_t* padding = r.take(padded8(graph_bytes) - graph_bytes, "graph");
  for (uint64_t i = 0; i < padded8(graph_bytes) - graph_bytes; ++i) require_data(padding[i] == 0, "graph padding");
  for (uint32_t i = 0; i < stage_count; ++i) {
    StageRecord st;
    const uint32_t flags = r.get<uint32_t>("stage table");
    require_data(flags <= 1, "stage flags");
    st.raw = flags & 1;
    const uint32_t inputs = r.get<uint32_t>("stage table");
    require_data(inputs <= 16, "stage input count");
    for (uint32_t k = 0; k < inputs; ++k) st.input_sizes.push_back(r.get<uint64_t>("stage table"));
    c.stages.push_back(st);
  }
  for (uint32_t i = 0; i < stream_count; ++i) {
    StreamRecord s;
    s.size = r.get<uint64_t>("stream table");
    s.checksum = r.get<uint64_t>("stream table");
    c.streams.push_back(s);
  }
  c.metadata_bytes = r.position();
  // Checksum of the metadata with its own field zeroed.
  std::vector<uint8_t> copy(data, data + c.metadata_bytes);
  std::memset(copy.data() + checksum_offset, 0, 8);
  require_data(checksum_host(copy.data(), copy.size()) == stored_sum, "header checksum mismatch");
  uint64_t offset = c.metadata_bytes, sum = 0;
  for (const auto& s : c.streams) {
    require_data(s.size <= file_bytes, "stream size");
    c.stream_offsets.push_back(offset);
    offset += padded8(s.size);
    sum += padded8(s.size);
  }
  require_data(sum == payload, "payload size");
  c.total_bytes = offset;
  require_data(c.total_bytes <= file_bytes, "file truncated");
  require_data(c.total_bytes == file_bytes, "trailing bytes after the payload");
  return c;
}

}  // namespace fzg
