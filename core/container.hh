// The .fzg container: a fixed header, the graph (its JSON, coded: core/graph_code.hh), the
// stages' headers, a chunk index (each chunk's stage records and stream table) and the
// payload, chunk after chunk. Byte layout in docs/FORMAT.md; everything little-endian.
// Version 2 files (the graph's JSON as it is) and version 1 files (one chunk, the predictor's
// header inside the fixed header) are still read.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/field.hh"
#include "runtime/buffer.hh"

namespace fzg {

constexpr uint8_t container_magic[4] = {0x89, 'F', 'Z', 'G'};
constexpr uint16_t container_version = 4;       // 4: a mask may repeat a tile's runs (FORMAT.md)
constexpr uint32_t fixed_header_bytes = 96;     // versions 2 to 4
constexpr uint32_t fixed_header_bytes_v1 = 112;
// Fails (corrupt_data, "not an fzg file") unless `head` starts with the magic; with `whole`
// false, a head shorter than the magic need only agree with its start (the rest may follow).
void check_magic(const uint8_t* head, uint64_t available_bytes, bool whole);

// The most stages and stored streams a file holds (FORMAT.md): readers reject more, so graphs
// (Graph::from_json) and the writer refuse them too.
constexpr uint32_t max_stage_count = 4095;
constexpr uint32_t max_stream_count = 4095;

struct Header {
  DType dtype = DType::f32;
  ErrorMode mode = ErrorMode::rel;
  Dims dims;
  double requested_bound = 0;  // the number the user gave (-e)
  // The bound, step and value range the predictor quantized with, read from its header; all
  // zero when the file holds no predictor (lossless, or stored exactly).
  Quantization quant{0, 0, 0, 0};
  uint64_t chunk_rows = 0;     // slices of the slowest axis per chunk (the last may hold fewer)
  uint16_t version = container_version;
};

struct StageRecord {
  bool raw = false;                   // the stage's outputs are its inputs, stored as they are
  std::vector<uint64_t> input_sizes;  // byte size of each input port when encoded
};

struct StreamRecord {
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct ChunkRecord {
  std::vector<StageRecord> stages;   // one per graph node, in the graph's order
  std::vector<StreamRecord> streams; // one per stored port, in store order
  std::vector<uint64_t> stream_offsets;  // from the start of the file
};

struct Container {
  Header header;
  std::string graph_json;
  uint64_t graph_bytes = 0;  // the graph's size in the file (its code's, from version 3 on), unpadded
  std::vector<std::vector<uint8_t>> stage_headers;  // one per graph node (empty when none)
  std::vector<ChunkRecord> chunks;
  uint64_t metadata_bytes = 0;  // where the payload starts
  uint64_t total_bytes = 0;
  // Version 1 kept the predictor's header (the quantization) in its fixed header: these are
  // those 32 bytes, handed to the graph's predictor by the reader of the graph.
  std::vector<uint8_t> v1_predictor_header;
};

inline uint64_t padded8(uint64_t n) { return (n + 7) & ~uint64_t(7); }

// Slices of the slowest axis of `dims` (z in 3D, y in 2D, x in 1D).
uint64_t slowest_extent(const Dims& dims);
// Chunks of `chunk_rows` slices covering `dims` (at least one, even for an empty field).
uint64_t chunk_count(const Dims& dims, uint64_t chunk_rows);
// The dims of chunk k and its first value in field order.
Dims chunk_dims(const Dims& dims, uint64_t chunk_rows, uint64_t k);
uint64_t chunk_first_value(const Dims& dims, uint64_t chunk_rows, uint64_t k);

// Serializes everything before the payload (always the current version) and fills in
// stream offsets and sizes.
std::vector<uint8_t> write_metadata(Container& c);
// Byte offset of the header checksum in the metadata `write_metadata` makes.
constexpr uint64_t header_checksum_offset = 88;
// From the fixed header (its first fixed-header bytes): how many leading bytes of the file
// surely hold all the metadata. Throws on a foreign file or an unknown version.
uint64_t metadata_size_bound(const uint8_t* head, uint64_t available_bytes);
// The bytes to read for the metadata of a file read piece by piece, where a damaged metadata
// size must not make the reader take the whole file: version 1, metadata_size_bound's (no
// more than the file); from version 2 on, the header's metadata size, refused past the room
// the fixed header and the stage headers' sizes (each read by `read_u64(offset)`, 8 bytes
// little-endian) leave, at most 16 input sizes a stage record. Throws on a header that fails
// its own checks.
uint64_t metadata_bytes_to_read(const uint8_t* head, uint64_t head_bytes, uint64_t file_bytes,
                                const std::function<uint64_t(uint64_t)>& read_u64);
// Parses and checks the metadata from the file's first `available` bytes. Stream checksums
// are checked separately, where the streams live.
Container read_metadata(const uint8_t* head, uint64_t available, uint64_t file_bytes);

#ifdef FZG_HAVE_CUDA
// Puts `metadata` (from write_metadata, its stream checksums still zero) at the start of a
// device file and completes it on the device: stream s's checksum (in file order, all chunks)
// is stream_sums[s] (its summed terms, see checksum_copy_device) plus the length term, then
// the header checksum. Stream-ordered on `stream`; the host does not wait unless the metadata
// is too large to travel as a kernel argument.
void finish_metadata_device(const std::vector<uint8_t>& metadata, uint64_t streams, const uint64_t* stream_sums,
                            uint8_t* file, cudaStream_t stream);
// Both steps of a device file's assembly: each device stream copied to file + offsets[s] and
// summed (checksum_copy_device), then the metadata finished. One launch where the metadata
// travels as a kernel argument and the streams are at most eight (the kernel's last block
// finishes the metadata), else those two functions in turn.
void copy_streams_and_finish_device(const std::vector<uint8_t>& metadata, const std::vector<Buffer>& streams,
                                    const std::vector<uint64_t>& offsets, uint8_t* file, cudaStream_t stream);
#endif

}  // namespace fzg
