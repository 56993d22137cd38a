// The .fzg container: a fixed header, the graph as JSON, a stage table, a stream table and
// the payload. Byte layout in docs/FORMAT.md; everything little-endian.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/buffer.hh"
#include "pipeline/field.hh"

namespace fzg {

constexpr uint8_t container_magic[4] = {0x89, 'F', 'Z', 'G'};
constexpr uint16_t container_version = 1;
constexpr uint32_t fixed_header_bytes = 112;

struct Header {
  DType dtype = DType::f32;
  ErrorMode mode = ErrorMode::rel;
  Dims dims;
  double requested_bound = 0;  // the number the user gave (-e)
  Quantization quant;          // absolute bound, step and value range actually used
};

struct StageRecord {
  bool raw = false;                   // the stage's output is its input, stored as is
  std::vector<uint64_t> input_sizes;  // byte size of each input port when encoded
};

struct StreamRecord {
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct Container {
  Header header;
  std::string graph_json;
  std::vector<StageRecord> stages;
  std::vector<StreamRecord> streams;
  std::vector<uint64_t> stream_offsets;  // from the start of the file
  uint64_t metadata_bytes = 0;           // where the payload starts
  uint64_t total_bytes = 0;
};

inline uint64_t padded8(uint64_t n) { return (n + 7) & ~uint64_t(7); }

// Serializes everything before the payload and fills in stream offsets and sizes.
std::vector<uint8_t> write_metadata(Container& c);
// From the fixed header (its first fixed_header_bytes): how many leading bytes of the file
// surely hold all the metadata. Throws on a foreign file or an unknown version.
uint64_t metadata_size_bound(const uint8_t* head, uint64_t available_bytes);
// Parses and checks the metadata from the file's first `available` bytes. Stream checksums
// are checked separately, where the streams live.
Container read_metadata(const uint8_t* head, uint64_t available, uint64_t file_bytes);

#ifdef FZG_HAVE_CUDA
// Puts `metadata` (from write_metadata, its stream checksums still zero) at the start of a
// device file and completes it on the device: stream s's checksum is stream_sums[s] (its
// summed terms, see checksum_copy_device) plus the length term, then the header checksum.
// Stream-ordered on `stream`; the host does not wait unless the metadata is too large to
// travel as a kernel argument.
void finish_metadata_device(const std::vector<uint8_t>& metadata, uint32_t streams, const uint64_t* stream_sums,
                            uint8_t* file, cudaStream_t stream);
#endif

}  // namespace fzg
